#include "live/postgres.hpp"

#include <libpq-fe.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <fmt/format.h>
#include <map>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include "live/credentials.hpp"

namespace live {

namespace {

using lethe::Assign;
using lethe::Item;
using lethe::Op;
using lethe::OpKind;
using lethe::Reply;

enum class Variant { CteInsertRetry, AdvisoryLock, CteUpsert, ReadThenUpsert };

Variant parse_variant(const std::string& name) {
  if (name == "cte-insert-retry") return Variant::CteInsertRetry;
  if (name == "advisory-lock") return Variant::AdvisoryLock;
  if (name == "cte-upsert") return Variant::CteUpsert;
  if (name == "read-then-upsert") return Variant::ReadThenUpsert;
  throw std::invalid_argument("postgres store: unknown variant \"" + name + "\"");
}

constexpr const char* kColumns = "started_at, completed_at, expires_on, owner, memoized, counter";
// The table live mode creates, and the columns an existing one must have (the nullable ones are the Item's
// optional fields).
constexpr const char* kTableSchema =
    "(key bigint PRIMARY KEY, started_at bigint, completed_at bigint, expires_on bigint, owner bigint NOT NULL "
    "DEFAULT 0, memoized bigint, counter bigint NOT NULL DEFAULT 0)";
constexpr int kColumnCount = 6;
// How often cte-insert-retry runs its statement again after losing the insert race before giving up (unknown).
constexpr int kMaxRaceRetries = 100;

using ResultPtr = std::unique_ptr<PGresult, decltype(&PQclear)>;

std::string literal(std::int64_t value) { return std::to_string(value); }
std::string literal(const lethe::MaybeTime& value) {
  return value.has_value() ? std::to_string(*value) : std::string("NULL");
}
std::string literal_id(std::uint64_t value) { return std::to_string(static_cast<std::int64_t>(value)); }

// The column values of an item, in kColumns order.
std::string item_literals(const Item& item) {
  return fmt::format("{}, {}, {}, {}, {}, {}", literal(item.started_at), literal(item.completed_at),
                     literal(item.expires_on), literal_id(item.owner),
                     item.memoized ? literal_id(*item.memoized) : std::string("NULL"), literal(item.counter));
}

// --- SQL for an op applied to an EXISTING row `r` (lethe::Condition::holds and lethe::Update::apply_to). ---

std::string condition_on_row(const lethe::Condition& c, const std::string& r) {
  std::vector<std::string> clauses;
  if (c.require_absent) clauses.push_back("false");
  if (c.absent_or_expired_at) {
    clauses.push_back(fmt::format("({0}.expires_on IS NOT NULL AND {0}.expires_on <= {1})", r,
                                  *c.absent_or_expired_at));
  }
  if (c.started_at_equals) {
    clauses.push_back(fmt::format("({0}.started_at IS NOT NULL AND {0}.started_at = {1})", r, *c.started_at_equals));
  }
  if (c.owner_equals) clauses.push_back(fmt::format("{}.owner = {}", r, literal_id(*c.owner_equals)));
  if (c.require_not_completed) clauses.push_back(fmt::format("{}.completed_at IS NULL", r));
  if (clauses.empty()) return "true";
  std::string text = clauses.front();
  for (std::size_t i = 1; i < clauses.size(); ++i) text += " AND " + clauses[i];
  return text;
}

// The SET list (column = expression over r) of an Upsert's update, or of a Put (the item's values).
std::string set_list(const Op& op, const std::string& r) {
  std::vector<std::string> values;
  if (op.kind == OpKind::Put) {
    const Item& item = op.item;
    values = {literal(item.started_at), literal(item.completed_at), literal(item.expires_on), literal_id(item.owner),
              item.memoized ? literal_id(*item.memoized) : std::string("NULL"), literal(item.counter)};
  } else {
    const lethe::Update& u = op.update;
    // An expired row that the update replaces counts as absent: its fields read as unset.
    const std::string replaced =
        u.replace_expired_at
            ? fmt::format("({0}.expires_on IS NOT NULL AND {0}.expires_on <= {1})", r, *u.replace_expired_at)
            : std::string();
    auto current = [&](const char* column, const char* unset) {
      if (replaced.empty()) return fmt::format("{}.{}", r, column);
      return fmt::format("(CASE WHEN {} THEN {} ELSE {}.{} END)", replaced, unset, r, column);
    };
    auto field = [&](Assign mode, const char* column, std::int64_t value) {
      switch (mode) {
        case Assign::Keep: return current(column, "NULL");
        case Assign::Set: return literal(value);
        case Assign::SetIfAbsent: return fmt::format("COALESCE({}, {})", current(column, "NULL"), value);
        case Assign::Remove: return std::string("NULL");
      }
      return std::string("NULL");
    };
    std::string owner;
    switch (u.owner_mode) {
      case Assign::Keep: owner = current("owner", "0"); break;
      case Assign::Set: owner = literal_id(u.owner); break;
      case Assign::SetIfAbsent:
        owner = fmt::format("(CASE WHEN {} = 0 THEN {} ELSE {}.owner END)", current("owner", "0"), literal_id(u.owner), r);
        break;
      case Assign::Remove: owner = "0"; break;
    }
    values = {field(u.started_at_mode, "started_at", u.started_at),
              field(u.completed_at_mode, "completed_at", u.completed_at),
              field(u.expires_on_mode, "expires_on", u.expires_on),
              owner,
              field(u.memoized_mode, "memoized", static_cast<std::int64_t>(u.memoized)),
              fmt::format("{} + {}", current("counter", "0"), u.counter_add)};
  }
  static const char* const kNames[kColumnCount] = {"started_at", "completed_at", "expires_on",
                                                   "owner",      "memoized",     "counter"};
  std::string text;
  for (int i = 0; i < kColumnCount; ++i) {
    if (i > 0) text += ", ";
    text += fmt::format("{} = {}", kNames[i], values[static_cast<std::size_t>(i)]);
  }
  return text;
}

const lethe::Condition& condition_of(const Op& op) {
  static const lethe::Condition kAlways;
  return op.kind == OpKind::Upsert ? op.condition : kAlways;
}

std::optional<std::int64_t> int_field(const PGresult* result, int row, int column) {
  if (PQgetisnull(result, row, column)) return std::nullopt;
  const char* text = PQgetvalue(result, row, column);
  std::int64_t value = 0;
  const char* end = text + std::char_traits<char>::length(text);
  if (std::from_chars(text, end, value).ec != std::errc()) {
    throw std::runtime_error(fmt::format("postgres store: not an integer: \"{}\"", text));
  }
  return value;
}

// The item in columns [first, first + 6) of `row` (kColumns order).
Item item_at(const PGresult* result, int row, int first) {
  Item item;
  item.started_at = int_field(result, row, first);
  item.completed_at = int_field(result, row, first + 1);
  item.expires_on = int_field(result, row, first + 2);
  item.owner = static_cast<lethe::AttemptId>(int_field(result, row, first + 3).value_or(0));
  const auto memoized = int_field(result, row, first + 4);
  if (memoized) item.memoized = static_cast<std::uint64_t>(*memoized);
  item.counter = int_field(result, row, first + 5).value_or(0);
  return item;
}

std::int64_t milliseconds_ceil(sim::Duration duration) {
  return std::max<std::int64_t>(1, (duration + sim::kMillisecond - 1) / sim::kMillisecond);
}

// --- a connection ---

class PgConnection final : public Connection {
 public:
  PgConnection(PGconn* conn, Variant variant, std::string table, sim::Duration timeout, Counters& counters)
      : conn_(conn), variant_(variant), table_(std::move(table)), timeout_(timeout), counters_(counters) {}
  ~PgConnection() override { close(false); }

  std::optional<Reply> execute(const Op& op, const DropPlan& drop) override;
  bool broken() const override { return conn_ == nullptr; }

 private:
  // Sends `sql` (one or more statements) and returns the last result; nullopt (and the connection closed) on a
  // drop, an error result, a client-side timeout or a broken socket.
  std::optional<ResultPtr> request(const std::string& sql);
  void close(bool abrupt);
  void fail(const std::string& counter) {
    counters_.add(counter);
    close(true);
  }
  // The server answered with an error (a statement timeout, ...): the statement did not take effect (the caller
  // still treats the outcome as unknown). The connection stays usable, as a real client's does: a transaction
  // left open (advisory-lock) is rolled back first; if even that fails, the connection is closed.
  // Class 42 (an undefined table or column, a missing privilege, no unique index for ON CONFLICT) is no
  // transient failure: the table stopped being one live mode can use (dropped or altered during the run), and
  // every later statement would fail the same way. It ends the run as a set-up error (std::runtime_error), never
  // as unknown outcomes that would be judged as the store's behaviour.
  void server_error(const std::string& sqlstate, const std::string& message) {
    if (sqlstate.rfind("42", 0) == 0) {
      throw std::runtime_error(fmt::format("postgres store: table {} is no longer usable: {} (SQLSTATE {})", table_,
                                           message, sqlstate));
    }
    counters_.add(sqlstate == "57014" ? "store.statement_timeouts" : "store.errors." + sqlstate);
    if (PQstatus(conn_) != CONNECTION_OK) {
      close(true);
      return;
    }
    if (PQtransactionStatus(conn_) != PQTRANS_IDLE) {
      ResultPtr rollback(PQexec(conn_, "ROLLBACK"), &PQclear);
      if (PQresultStatus(rollback.get()) != PGRES_COMMAND_OK || PQtransactionStatus(conn_) != PQTRANS_IDLE) {
        close(true);
      }
    }
  }

  std::optional<Reply> get(lethe::Key key);
  std::optional<Reply> cte_insert_retry(const Op& op);
  std::optional<Reply> cte_upsert(const Op& op);
  std::optional<Reply> read_then_upsert(const Op& op);
  std::optional<Reply> advisory_lock(const Op& op);
  std::string write_statement(lethe::Key key, const Item& item) const;
  std::string select_statement(lethe::Key key) const {
    return fmt::format("SELECT {} FROM {} WHERE key = {}", kColumns, table_, literal_id(key));
  }

  PGconn* conn_;
  Variant variant_;
  std::string table_;
  sim::Duration timeout_;
  Counters& counters_;
  DropPlan drop_;
  int requests_ = 0;  // requests sent for the current operation
};

void PgConnection::close(bool abrupt) {
  if (conn_ == nullptr) return;
  // Abrupt: the socket is shut down first, so the server gets no goodbye (as when a process dies).
  if (abrupt && PQsocket(conn_) >= 0) ::shutdown(PQsocket(conn_), SHUT_RDWR);
  PQfinish(conn_);
  conn_ = nullptr;
}

std::optional<ResultPtr> PgConnection::request(const std::string& sql) {
  if (conn_ == nullptr) return std::nullopt;
  ++requests_;
  if (PQsendQuery(conn_, sql.c_str()) == 0) {
    fail("store.connection_errors");
    return std::nullopt;
  }
  if (drop_.after_request == requests_) {
    close(true);
    return std::nullopt;
  }
  // The client's own deadline is a backstop: the server's statement_timeout normally answers first.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(2 * timeout_) +
                        std::chrono::milliseconds(100);
  ResultPtr last(nullptr, &PQclear);
  bool failed = false;
  std::string sqlstate;
  std::string message;
  for (;;) {
    if (PQconsumeInput(conn_) == 0) {
      fail("store.connection_errors");
      return std::nullopt;
    }
    while (PQisBusy(conn_) == 0) {
      PGresult* raw = PQgetResult(conn_);
      if (raw == nullptr) {
        if (failed) {
          server_error(sqlstate, message);
          return std::nullopt;
        }
        return std::optional<ResultPtr>(std::move(last));
      }
      ResultPtr result(raw, &PQclear);
      const ExecStatusType status = PQresultStatus(raw);
      if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
        failed = true;
        const char* state = PQresultErrorField(raw, PG_DIAG_SQLSTATE);
        sqlstate = state != nullptr ? state : "unknown";
        const char* primary = PQresultErrorField(raw, PG_DIAG_MESSAGE_PRIMARY);
        message = primary != nullptr ? primary : "";
      }
      last = std::move(result);
    }
    const auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (remaining.count() <= 0) {
      fail("store.client_timeouts");
      return std::nullopt;
    }
    pollfd descriptor{PQsocket(conn_), POLLIN, 0};
    const int ready = ::poll(&descriptor, 1, static_cast<int>(remaining.count()));
    if (ready < 0 && errno != EINTR) {
      fail("store.connection_errors");
      return std::nullopt;
    }
  }
}

std::optional<Reply> PgConnection::execute(const Op& op, const DropPlan& drop) {
  require_supported(op, "postgres");
  drop_ = drop;
  requests_ = 0;
  if (drop.before_send) {
    close(true);
    return std::nullopt;
  }
  if (op.kind == OpKind::Get) return get(op.key);
  switch (variant_) {
    case Variant::CteInsertRetry: return cte_insert_retry(op);
    case Variant::CteUpsert: return cte_upsert(op);
    case Variant::ReadThenUpsert: return read_then_upsert(op);
    case Variant::AdvisoryLock: return advisory_lock(op);
  }
  return std::nullopt;
}

std::optional<Reply> PgConnection::get(lethe::Key key) {
  auto result = request(select_statement(key));
  if (!result) return std::nullopt;
  Reply reply;
  if (PQntuples(result->get()) > 0) reply.previous = item_at(result->get(), 0, 0);
  return reply;
}

std::string PgConnection::write_statement(lethe::Key key, const Item& item) const {
  return fmt::format(
      "INSERT INTO {0} (key, {1}) VALUES ({2}, {3}) ON CONFLICT (key) DO UPDATE SET started_at = "
      "EXCLUDED.started_at, completed_at = EXCLUDED.completed_at, expires_on = EXCLUDED.expires_on, owner = "
      "EXCLUDED.owner, memoized = EXCLUDED.memoized, counter = EXCLUDED.counter",
      table_, kColumns, literal_id(key), item_literals(item));
}

std::optional<Reply> PgConnection::cte_insert_retry(const Op& op) {
  const lethe::Condition& condition = condition_of(op);
  // On the insert path the row is absent: the new item is known here (lethe::apply on "absent").
  const LocalStep on_absent = apply_locally(op, std::nullopt);
  const bool insert_if_absent = on_absent.reply.applied;
  const std::string statement = fmt::format(
      "WITH old AS MATERIALIZED (SELECT key, {cols} FROM {t} WHERE key = {k} FOR UPDATE), "
      "upd AS (UPDATE {t} AS d SET {set} FROM old WHERE d.key = {k} AND {cond} RETURNING 1), "
      "ins AS (INSERT INTO {t} (key, {cols}) SELECT {k}, {values} WHERE {insert} AND NOT EXISTS (SELECT 1 FROM old) "
      "ON CONFLICT (key) DO NOTHING RETURNING 1) "
      "SELECT (SELECT count(*) FROM old), (SELECT count(*) FROM upd), (SELECT count(*) FROM ins), "
      "o.started_at, o.completed_at, o.expires_on, o.owner, o.memoized, o.counter "
      "FROM (SELECT 1) AS one LEFT JOIN old AS o ON true",
      fmt::arg("cols", kColumns), fmt::arg("t", table_), fmt::arg("k", literal_id(op.key)),
      fmt::arg("set", set_list(op, "old")), fmt::arg("cond", condition_on_row(condition, "old")),
      fmt::arg("values", on_absent.after ? item_literals(*on_absent.after) : item_literals(Item{})),
      fmt::arg("insert", insert_if_absent ? "true" : "false"));
  for (int round = 0; round < kMaxRaceRetries; ++round) {
    auto result = request(statement);
    if (!result) return std::nullopt;
    const PGresult* r = result->get();
    const bool had_row = int_field(r, 0, 0).value_or(0) > 0;
    const bool updated = int_field(r, 0, 1).value_or(0) > 0;
    const bool inserted = int_field(r, 0, 2).value_or(0) > 0;
    Reply reply;
    if (had_row) {
      reply.previous = item_at(r, 0, 3);
      reply.applied = updated;
      return reply;
    }
    if (inserted || !insert_if_absent) {
      reply.applied = inserted;
      return reply;
    }
    // Lost the insert race: a row committed after our snapshot. Nothing changed; run it again.
    counters_.add("store.insert_race_retries");
  }
  fail("store.insert_race_gave_up");
  return std::nullopt;
}

std::optional<Reply> PgConnection::cte_upsert(const Op& op) {
  const LocalStep on_absent = apply_locally(op, std::nullopt);
  if (!on_absent.reply.applied) return cte_insert_retry(op);  // nothing to insert: the UPDATE form (no race)
  const lethe::Condition& condition = condition_of(op);
  const std::string statement = fmt::format(
      "WITH old AS MATERIALIZED (SELECT key, {cols} FROM {t} WHERE key = {k} FOR UPDATE), "
      "up AS (INSERT INTO {t} AS d (key, {cols}) VALUES ({k}, {values}) "
      "ON CONFLICT (key) DO UPDATE SET {set} WHERE {cond} RETURNING 1) "
      "SELECT (SELECT count(*) FROM old), (SELECT count(*) FROM up), "
      "o.started_at, o.completed_at, o.expires_on, o.owner, o.memoized, o.counter "
      "FROM (SELECT 1) AS one LEFT JOIN old AS o ON true",
      fmt::arg("cols", kColumns), fmt::arg("t", table_), fmt::arg("k", literal_id(op.key)),
      fmt::arg("values", item_literals(*on_absent.after)), fmt::arg("set", set_list(op, "d")),
      fmt::arg("cond", condition_on_row(condition, "d")));
  auto result = request(statement);
  if (!result) return std::nullopt;
  const PGresult* r = result->get();
  Reply reply;
  if (int_field(r, 0, 0).value_or(0) > 0) reply.previous = item_at(r, 0, 2);
  reply.applied = int_field(r, 0, 1).value_or(0) > 0;
  return reply;
}

std::optional<Reply> PgConnection::read_then_upsert(const Op& op) {
  auto read = get(op.key);
  if (!read) return std::nullopt;
  const LocalStep step = apply_locally(op, read->previous);
  if (step.changed) {
    if (!request(write_statement(op.key, *step.after))) return std::nullopt;
  }
  return step.reply;
}

std::optional<Reply> PgConnection::advisory_lock(const Op& op) {
  auto read = request(fmt::format("BEGIN; SELECT pg_advisory_xact_lock({}); {}", literal_id(op.key),
                                  select_statement(op.key)));
  if (!read) return std::nullopt;
  std::optional<Item> current;
  if (PQntuples(read->get()) > 0) current = item_at(read->get(), 0, 0);
  const LocalStep step = apply_locally(op, current);
  const std::string finish = step.changed ? write_statement(op.key, *step.after) + "; COMMIT" : std::string("COMMIT");
  if (!request(finish)) return std::nullopt;
  return step.reply;
}

// --- the store ---

// libpq's multi-line message as one line (its hint on an indented line of its own).
std::string one_line(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\n' || c == '\t') {
      if (!out.empty() && out.back() != ' ') out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// `statement_timeout` (0 = none) is set with the connection's startup options (no extra round trip).
PGconn* open_connection(const std::string& target, sim::Duration statement_timeout = 0,
                        sim::Duration connect_timeout = kAdminConnectTimeout) {
  const std::string connect_seconds = std::to_string(connect_timeout / sim::kSecond);
  const std::string options =
      statement_timeout > 0 ? fmt::format("-c statement_timeout={}", milliseconds_ceil(statement_timeout)) : "";
  const char* keywords[] = {"dbname", "connect_timeout", "application_name", "options", nullptr};
  const char* values[] = {target.c_str(), connect_seconds.c_str(), "lethe-live", options.c_str(), nullptr};
  PGconn* conn = PQconnectdbParams(keywords, values, 1);
  if (conn == nullptr) throw std::runtime_error("postgres store: out of memory");
  if (PQstatus(conn) != CONNECTION_OK) {
    const std::string message = one_line(PQerrorMessage(conn));
    PQfinish(conn);
    throw std::runtime_error(fmt::format("postgres store: cannot connect to \"{}\": {}", mask_target(target),
                                         mask_message(message, target)));
  }
  // What the server says on its own (a notice, "terminating connection" when it goes down) is not printed: the
  // run counts the failures it causes.
  PQsetNoticeProcessor(conn, [](void*, const char*) {}, nullptr);
  return conn;
}

ResultPtr run_admin(PGconn* conn, const std::string& sql) {
  ResultPtr result(PQexec(conn, sql.c_str()), &PQclear);
  const ExecStatusType status = PQresultStatus(result.get());
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    std::string message = PQresultErrorMessage(result.get());
    while (!message.empty() && message.back() == '\n') message.pop_back();
    throw std::runtime_error(fmt::format("postgres store: {}: {}", sql, message));
  }
  return result;
}

// The relation an unqualified table name leads to, as every statement would read it (search_path, with the
// system catalogs first): nullopt when there is none.
struct Relation {
  std::string qualified;  // schema.name, quoted where needed
  std::string schema;
  char kind = 'r';        // pg_class.relkind: 'r' table, 'p' partitioned table, 'v' view, ...
  std::string oid;
};

std::optional<Relation> resolve_relation(PGconn* conn, const std::string& name) {
  // (The name is lower-case letters, digits and '_': valid_table_name; safe as a literal.)
  const ResultPtr found = run_admin(
      conn, fmt::format("SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname), n.nspname, c.relkind, c.oid "
                        "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                        "WHERE c.oid = to_regclass('{}')",
                        name));
  if (PQntuples(found.get()) == 0) return std::nullopt;
  return Relation{PQgetvalue(found.get(), 0, 0), PQgetvalue(found.get(), 0, 1), PQgetvalue(found.get(), 0, 2)[0],
                  PQgetvalue(found.get(), 0, 3)};
}

bool system_schema(const std::string& schema) {
  return schema.rfind("pg_", 0) == 0 || schema == "information_schema";
}

[[noreturn]] void refuse_columns(const Relation& relation, const std::string& why) {
  throw std::runtime_error(fmt::format("postgres store: table {} is not one live mode can use ({}); expected {} "
                                       "(name another table, or none and lethe creates a fresh one)",
                                       relation.qualified, why, kTableSchema));
}

// Exactly the columns of kTableSchema, each bigint, the Item's optional fields nullable, and a unique index on
// key alone (what ON CONFLICT (key) needs).
void require_columns(PGconn* conn, const Relation& relation) {
  const ResultPtr columns = run_admin(
      conn, fmt::format("SELECT attname, format_type(atttypid, atttypmod), attnotnull FROM pg_attribute "
                        "WHERE attrelid = {} AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
                        relation.oid));
  std::map<std::string, std::pair<std::string, bool>> found;  // name -> (type, NOT NULL)
  for (int row = 0; row < PQntuples(columns.get()); ++row) {
    found[PQgetvalue(columns.get(), row, 0)] = {PQgetvalue(columns.get(), row, 1),
                                                std::string_view(PQgetvalue(columns.get(), row, 2)) == "t"};
  }
  const std::vector<std::pair<std::string, bool>> expected = {  // name, nullable
      {"key", false},      {"started_at", true}, {"completed_at", true}, {"expires_on", true},
      {"owner", false},    {"memoized", true},   {"counter", false}};
  for (const auto& [name, nullable] : expected) {
    const auto it = found.find(name);
    if (it == found.end()) refuse_columns(relation, "no column " + name);
    if (it->second.first != "bigint") refuse_columns(relation, fmt::format("{} is {}", name, it->second.first));
    if (nullable && it->second.second) refuse_columns(relation, name + " is NOT NULL");
    found.erase(it);
  }
  if (!found.empty()) refuse_columns(relation, "an extra column " + found.begin()->first);
  const ResultPtr unique = run_admin(
      conn, fmt::format("SELECT EXISTS (SELECT 1 FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
                        "AND a.attnum = i.indkey[0] WHERE i.indrelid = {} AND i.indisunique AND i.indnkeyatts = 1 "
                        "AND i.indpred IS NULL AND i.indexprs IS NULL AND a.attname = 'key')",
                        relation.oid));
  if (std::string_view(PQgetvalue(unique.get(), 0, 0)) != "t") refuse_columns(relation, "no unique index on key");
}

// One write and read of the kind the run makes, rolled back: a missing privilege, a constraint, a trigger or a
// policy that refuses them is refused here, not discovered as failing operations during the run.
void probe_writes(PGconn* conn, const Relation& relation) {
  const std::string key = "-9223372036854775807";
  const std::string sql = fmt::format(
      "BEGIN; INSERT INTO {0} AS t (key, {1}) VALUES ({2}, 1, NULL, 9223372036854775807, 1, -9223372036854775807, "
      "0) ON CONFLICT (key) DO UPDATE SET counter = t.counter + 1; SELECT {1} FROM {0} WHERE key = {2} FOR UPDATE",
      relation.qualified, kColumns, key);
  ResultPtr result(PQexec(conn, sql.c_str()), &PQclear);
  const ExecStatusType status = PQresultStatus(result.get());
  std::string message = status == PGRES_TUPLES_OK ? "" : PQresultErrorMessage(result.get());
  ResultPtr rollback(PQexec(conn, "ROLLBACK"), &PQclear);
  if (!message.empty() || status != PGRES_TUPLES_OK) {
    while (!message.empty() && message.back() == '\n') message.pop_back();
    refuse_columns(relation, "a trial write, rolled back, failed: " + message);
  }
}

// Refuses an existing relation live mode cannot use as its table, before anything is created or written.
void require_usable(PGconn* conn, const std::string& name, const Relation& relation) {
  if (system_schema(relation.schema)) {
    throw std::runtime_error(fmt::format("postgres store: table name {} names {}, a system catalog (choose another "
                                         "name)",
                                         name, relation.qualified));
  }
  if (relation.kind != 'r' && relation.kind != 'p') {
    throw std::runtime_error(
        fmt::format("postgres store: {} is not a table (pg_class.relkind '{}')", relation.qualified, relation.kind));
  }
  require_columns(conn, relation);
  probe_writes(conn, relation);
  const ResultPtr rows = run_admin(conn, fmt::format("SELECT EXISTS (SELECT 1 FROM {})", relation.qualified));
  if (std::string_view(PQgetvalue(rows.get(), 0, 0)) != "f") {
    throw std::runtime_error(
        fmt::format("postgres store: table {} is not empty (live mode needs a fresh one)", relation.qualified));
  }
}

// The schema CREATE TABLE would create an unqualified name in (the first existing one of search_path), quoted.
std::string creation_schema(PGconn* conn) {
  const ResultPtr schema = run_admin(conn, "SELECT quote_ident(current_schema())");
  if (PQgetisnull(schema.get(), 0, 0)) {
    throw std::runtime_error("postgres store: no schema to create the table in (search_path names none that exists)");
  }
  return PQgetvalue(schema.get(), 0, 0);
}

bool valid_table_name(const std::string& name) {
  if (name.empty() || name.size() > 60) return false;
  if (!(std::islower(static_cast<unsigned char>(name[0])) || name[0] == '_')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_';
  });
}

std::string fresh_table_name() {
  static std::atomic<std::uint64_t> counter{0};
  const auto ticks = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return fmt::format("lethe_live_{}_{}_{:x}", ::getpid(), ++counter, ticks & 0xffffffu);
}

// An admin connection that closes itself however its scope ends.
using ConnPtr = std::unique_ptr<PGconn, decltype(&PQfinish)>;
ConnPtr admin_connection(const std::string& target) { return ConnPtr(open_connection(target), &PQfinish); }

class PgStore final : public LiveStore {
 public:
  explicit PgStore(const StoreOptions& options)
      : target_(options.target), variant_(parse_variant(options.variant)), timeout_(options.timeout),
        owns_table_(options.table.empty()) {
    const std::string name = options.table.empty() ? fresh_table_name() : options.table;
    if (!valid_table_name(name)) {
      throw std::invalid_argument("postgres store: table name \"" + name +
                                  "\" must be lower-case letters, digits and '_' (at most 60)");
    }
    const ConnPtr owner = admin_connection(target_);
    PGconn* conn = owner.get();
    run_admin(conn, "SET client_min_messages = warning");
    // Every check comes before anything is created; from here on every statement names the table with its
    // schema, so it reads exactly the table checked or created here.
    if (const std::optional<Relation> existing = resolve_relation(conn, name)) {
      if (owns_table_) {
        throw std::runtime_error(fmt::format("postgres store: the fresh table name {} is taken", existing->qualified));
      }
      require_usable(conn, name, *existing);
      table_ = existing->qualified;
    } else {
      table_ = creation_schema(conn) + "." + name;
      run_admin(conn, fmt::format("CREATE TABLE {} {}", table_, kTableSchema));
    }
  }

  std::unique_ptr<Connection> connect() override {
    return std::make_unique<PgConnection>(open_connection(target_, timeout_, kWorkerConnectTimeout), variant_, table_,
                                          timeout_, counters_);
  }

  bool stall(sim::Duration duration) override {
    const ConnPtr conn = admin_connection(target_);
    run_admin(conn.get(), fmt::format("BEGIN; LOCK TABLE {} IN EXCLUSIVE MODE; SELECT pg_sleep({}); COMMIT", table_,
                                      static_cast<double>(duration) / 1e9));
    return true;
  }

  void teardown() override {
    if (!owns_table_) return;
    const ConnPtr conn = admin_connection(target_);
    run_admin(conn.get(), fmt::format("DROP TABLE IF EXISTS {}", table_));
  }

  std::string location() const override { return "table " + table_; }

 private:
  std::string target_;
  Variant variant_;
  sim::Duration timeout_;
  bool owns_table_;
  std::string table_;
};

}  // namespace

std::unique_ptr<LiveStore> open_postgres_store(const StoreOptions& options) {
  return std::make_unique<PgStore>(options);
}

}  // namespace live
