// Setting a live store up refuses what it cannot use, before anything runs or is created: a Redis key prefix
// with keys anywhere in a large keyspace; a Postgres table name that leads to a system catalog, a view, a table
// with rows or a table live mode cannot write (other columns, no unique key, a constraint that refuses its rows).
// A table that stops being usable during a run ends the run as a set-up error, never as a verdict on the store.
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>
#include <libpq-fe.h>
#include <unistd.h>

#include <fmt/format.h>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "live/store.hpp"
#include "live_support.hpp"

namespace setup_test {

// A plain client of the test server (LETHE_REDIS_URL of the form redis://host:port[/db]).
class RedisClient {
 public:
  explicit RedisClient(const std::string& url) {
    std::string rest = url.substr(url.rfind("redis://", 0) == 0 ? 8 : 0);
    int database = 0;
    if (const auto slash = rest.find('/'); slash != std::string::npos) {
      if (slash + 1 < rest.size()) database = std::stoi(rest.substr(slash + 1));
      rest = rest.substr(0, slash);
    }
    const auto colon = rest.rfind(':');
    const std::string host = colon == std::string::npos ? rest : rest.substr(0, colon);
    const int port = colon == std::string::npos ? 6379 : std::stoi(rest.substr(colon + 1));
    context_.reset(redisConnect(host.c_str(), port));
    if (context_ == nullptr || context_->err != 0) throw std::runtime_error("cannot reach the Redis test server");
    if (database != 0) command({"SELECT", std::to_string(database)});
  }
  long long command(const std::vector<std::string>& args) {
    std::vector<const char*> argv;
    std::vector<std::size_t> lengths;
    for (const auto& a : args) {
      argv.push_back(a.c_str());
      lengths.push_back(a.size());
    }
    auto* reply = static_cast<redisReply*>(
        redisCommandArgv(context_.get(), static_cast<int>(argv.size()), argv.data(), lengths.data()));
    if (reply == nullptr || reply->type == REDIS_REPLY_ERROR) {
      const std::string why = reply == nullptr ? context_->errstr : std::string(reply->str, reply->len);
      if (reply != nullptr) freeReplyObject(reply);
      throw std::runtime_error("redis: " + args.front() + ": " + why);
    }
    const long long value = reply->type == REDIS_REPLY_INTEGER ? reply->integer : 0;
    freeReplyObject(reply);
    return value;
  }

 private:
  std::unique_ptr<redisContext, decltype(&redisFree)> context_{nullptr, &redisFree};
};

// Creates (or deletes) `count` keys `prefix`1..`prefix`count in one server-side loop.
constexpr const char* kFillScript =
    "for i = 1, tonumber(ARGV[2]) do redis.call('SET', ARGV[1] .. i, '1') end return 1";
constexpr const char* kDrainScript =
    "for i = 1, tonumber(ARGV[2]) do redis.call('DEL', ARGV[1] .. i) end return 1";

live::StoreOptions redis_options(const std::string& key_prefix) {
  live::StoreOptions options;
  options.target = live_test::server_target("redis");
  options.variant = "lua";
  options.key_prefix = key_prefix;
  return options;
}

// One key with the prefix among 60,000 others: a single SCAN of COUNT 1000 sees about 1/60 of the keyspace and
// misses it almost always; the check must walk the cursor to its end.
TEST(LiveRedisSetup, APrefixWithOneKeyAmongManyOthersIsRefused) {
  LIVE_REQUIRE_SERVER("redis");
  RedisClient redis(live_test::server_target("redis"));
  const std::string filler = fmt::format("lethe:test:filler:{}:", ::getpid());
  const std::string taken = fmt::format("lethe:test:taken:{}:", ::getpid());
  constexpr int kFillers = 60'000;
  redis.command({"EVAL", kFillScript, "0", filler, std::to_string(kFillers)});
  redis.command({"SET", taken + "7", "|||0||0"});
  std::string error;
  try {
    live::open_store("redis", redis_options(taken));
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  redis.command({"DEL", taken + "7"});
  redis.command({"EVAL", kDrainScript, "0", filler, std::to_string(kFillers)});
  EXPECT_NE(error.find("keys with prefix \"" + taken + "\" exist"), std::string::npos) << error;
  // The same prefix, now empty, is accepted (and, being the user's, kept: nothing to remove).
  EXPECT_NO_THROW(live::open_store("redis", redis_options(taken))->teardown());
}

// A plain client of the PostgreSQL test server (LETHE_PG_DSN).
class PgClient {
 public:
  PgClient() : conn_(PQconnectdb(live_test::server_target("postgres").c_str()), &PQfinish) {
    if (PQstatus(conn_.get()) != CONNECTION_OK) throw std::runtime_error("cannot reach the PostgreSQL test server");
  }
  // The first column of the first row ("" when there is none); throws on an error.
  std::string query(const std::string& sql) {
    std::unique_ptr<PGresult, decltype(&PQclear)> result(PQexec(conn_.get(), sql.c_str()), &PQclear);
    const ExecStatusType status = PQresultStatus(result.get());
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
      throw std::runtime_error(sql + ": " + PQresultErrorMessage(result.get()));
    }
    return status == PGRES_TUPLES_OK && PQntuples(result.get()) > 0 ? PQgetvalue(result.get(), 0, 0) : "";
  }
  std::string tables_named(const std::string& name) {
    return query("SELECT count(*) FROM pg_class WHERE relname = '" + name + "'");
  }

 private:
  std::unique_ptr<PGconn, decltype(&PQfinish)> conn_;
};

live::StoreOptions postgres_options(const std::string& table) {
  live::StoreOptions options;
  options.target = live_test::server_target("postgres");
  options.variant = "cte-insert-retry";
  options.table = table;
  return options;
}

std::string open_postgres_error(const std::string& table) {
  try {
    live::open_store("postgres", postgres_options(table))->teardown();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(accepted)";
}

// pg_class: unqualified, every statement reads pg_catalog.pg_class; CREATE TABLE IF NOT EXISTS would have made
// an empty public.pg_class beside it.
TEST(LivePostgresSetup, ATableNameThatLeadsToASystemCatalogIsRefusedAndNothingIsCreated) {
  LIVE_REQUIRE_SERVER("postgres");
  PgClient pg;
  pg.query("DROP TABLE IF EXISTS public.pg_class");
  const std::string error = open_postgres_error("pg_class");
  EXPECT_NE(error.find("pg_catalog.pg_class, a system catalog"), std::string::npos) << error;
  EXPECT_EQ(pg.tables_named("pg_class"), "1");  // the catalog alone
  pg.query("DROP TABLE IF EXISTS public.pg_class");
}

TEST(LivePostgresSetup, AViewOrATableWithRowsIsRefusedAndLeftAsItWas) {
  LIVE_REQUIRE_SERVER("postgres");
  PgClient pg;
  const std::string view = fmt::format("lethe_test_view_{}", ::getpid());
  const std::string full = fmt::format("lethe_test_full_{}", ::getpid());
  pg.query("CREATE VIEW " + view + " AS SELECT 1 AS key");
  pg.query("CREATE TABLE " + full + " (key bigint PRIMARY KEY, started_at bigint, completed_at bigint, expires_on "
           "bigint, owner bigint NOT NULL DEFAULT 0, memoized bigint, counter bigint NOT NULL DEFAULT 0)");
  pg.query("INSERT INTO " + full + " (key) VALUES (1)");
  const std::string view_error = open_postgres_error(view);
  const std::string full_error = open_postgres_error(full);
  EXPECT_NE(view_error.find("is not a table"), std::string::npos) << view_error;
  EXPECT_NE(full_error.find("is not empty"), std::string::npos) << full_error;
  EXPECT_EQ(pg.query("SELECT count(*) FROM " + full), "1");
  pg.query("DROP VIEW " + view);
  pg.query("DROP TABLE " + full);
}

// A name that leads nowhere is created where CREATE TABLE puts it, named with its schema, and kept.
TEST(LivePostgresSetup, ANamedTableThatDoesNotExistIsCreatedWithItsSchemaAndKept) {
  LIVE_REQUIRE_SERVER("postgres");
  PgClient pg;
  const std::string name = fmt::format("lethe_test_named_{}", ::getpid());
  auto store = live::open_store("postgres", postgres_options(name));
  EXPECT_EQ(store->location(), "table public." + name);
  store->teardown();
  EXPECT_EQ(pg.tables_named(name), "1");
  pg.query("DROP TABLE " + name);
}

constexpr const char* kLiveColumns =
    "(key bigint PRIMARY KEY, started_at bigint, completed_at bigint, expires_on bigint, owner bigint NOT NULL "
    "DEFAULT 0, memoized bigint, counter bigint NOT NULL DEFAULT 0)";

// An empty table with other columns: every operation would fail and the run would read "CAUGHT" (exit 1). It is
// refused at set-up, naming the expected columns, and left as it was.
TEST(LivePostgresSetup, AnEmptyTableWithOtherColumnsIsRefusedNamingTheExpectedSchema) {
  LIVE_REQUIRE_SERVER("postgres");
  PgClient pg;
  const std::string name = fmt::format("lethe_test_wrong_{}", ::getpid());
  pg.query("CREATE TABLE " + name + " (id integer PRIMARY KEY, payload text)");
  live::LiveSettings s = live_test::quiet_settings("postgres", "cte-insert-retry");
  s.store_options.table = name;
  s.messages = 20;
  std::string error = "(no error: a verdict)";
  try {
    live::run_live(s);
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("is not one live mode can use (no column key); expected " + std::string(kLiveColumns)),
            std::string::npos)
      << error;
  EXPECT_EQ(pg.query("SELECT count(*) FROM " + name), "0");
  EXPECT_EQ(pg.query("SELECT count(*) FROM pg_attribute WHERE attrelid = '" + name + "'::regclass AND attnum > 0"),
            "2");
  pg.query("DROP TABLE " + name);
}

TEST(LivePostgresSetup, ATableWithoutAUniqueKeyOrThatRefusesLiveRowsIsRefused) {
  LIVE_REQUIRE_SERVER("postgres");
  PgClient pg;
  const std::string columns = kLiveColumns;
  const std::string no_key = fmt::format("lethe_test_nokey_{}", ::getpid());
  const std::string narrow = fmt::format("lethe_test_int_{}", ::getpid());
  const std::string checked = fmt::format("lethe_test_check_{}", ::getpid());
  pg.query("CREATE TABLE " + no_key + " (key bigint, started_at bigint, completed_at bigint, expires_on bigint, "
           "owner bigint, memoized bigint, counter bigint)");
  pg.query("CREATE TABLE " + narrow + " (key bigint PRIMARY KEY, started_at integer, completed_at bigint, "
           "expires_on bigint, owner bigint, memoized bigint, counter bigint)");
  pg.query("CREATE TABLE " + checked + " " + columns.substr(0, columns.size() - 1) + ", CHECK (counter > 100))");
  EXPECT_NE(open_postgres_error(no_key).find("(no unique index on key)"), std::string::npos)
      << open_postgres_error(no_key);
  EXPECT_NE(open_postgres_error(narrow).find("(started_at is integer)"), std::string::npos)
      << open_postgres_error(narrow);
  EXPECT_NE(open_postgres_error(checked).find("a trial write, rolled back, failed"), std::string::npos)
      << open_postgres_error(checked);
  for (const auto& name : {no_key, narrow, checked}) {
    EXPECT_EQ(pg.query("SELECT count(*) FROM " + name), "0") << name;
    pg.query("DROP TABLE " + name);
  }
}

// The table dropped under an open connection: the next operation ends the run with the server's error (exit 2
// on the command line), instead of an unknown outcome that the run would judge.
TEST(LivePostgresSetup, ATableDroppedDuringARunIsASetUpErrorNotAnUnknownOutcome) {
  LIVE_REQUIRE_SERVER("postgres");
  PgClient pg;
  const std::string name = fmt::format("lethe_test_dropped_{}", ::getpid());
  auto store = live::open_store("postgres", postgres_options(name));
  auto connection = store->connect();
  const lethe::Op get = lethe::get_op(lethe::make_key(lethe::Table::Dedupe, 0, 1));
  ASSERT_TRUE(connection->execute(get, live::DropPlan{}).has_value());
  pg.query("DROP TABLE " + name);
  try {
    connection->execute(get, live::DropPlan{});
    ADD_FAILURE() << "an operation on a dropped table did not end the run";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("is no longer usable"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("42P01"), std::string::npos) << e.what();
  }
}

}  // namespace setup_test
