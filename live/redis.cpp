#include "live/redis.hpp"

#include <hiredis/hiredis.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <fmt/format.h>
#include <functional>
#include <stdexcept>

#include "live/credentials.hpp"

namespace live {

namespace {

using lethe::Assign;
using lethe::Item;
using lethe::Op;
using lethe::OpKind;
using lethe::Reply;

enum class RedisVariant { Lua, Watch, GetThenSet };

RedisVariant parse_redis_variant(const std::string& name) {
  if (name == "lua") return RedisVariant::Lua;
  if (name == "watch") return RedisVariant::Watch;
  if (name == "get-then-set") return RedisVariant::GetThenSet;
  throw std::invalid_argument("redis store: unknown variant \"" + name + "\"");
}

// How often the watch variant tries again after EXEC was aborted by a concurrent write.
constexpr int kMaxWatchRetries = 1000;

// The conditional upsert, atomically (see the header). KEYS[1]: the key. ARGV: 1 require_absent, 2
// require_present, 3 absent_or_expired_at, 4 started_at_equals, 5 owner_equals, 6 require_not_completed,
// 7 replace_expired_at ('' = unset, '1' = set for flags); then mode ('k' keep, 's' set, 'i' set if absent,
// 'r' remove) and value of 8-9 started_at, 10-11 completed_at, 12-13 expires_on, 14-15 memoized, 16-17 owner;
// 18 counter_add. Returns {applied (0/1), previous value ('' = absent)}.
constexpr const char* kUpsertScript = R"lua(
local function split(s)
  local out, start = {}, 1
  while true do
    local bar = string.find(s, '|', start, true)
    if bar == nil then
      out[#out + 1] = string.sub(s, start)
      return out
    end
    out[#out + 1] = string.sub(s, start, bar - 1)
    start = bar + 1
  end
end
local function le(a, b)
  local na, nb = string.sub(a, 1, 1) == '-', string.sub(b, 1, 1) == '-'
  if na ~= nb then return na end
  if na then a, b = string.sub(b, 2), string.sub(a, 2) end
  if #a ~= #b then return #a < #b end
  return a <= b
end
local function expired(item, t) return item[3] ~= '' and le(item[3], t) end
local raw = redis.call('GET', KEYS[1])
local cur = false
if raw then cur = split(raw) end
local ok = true
if ARGV[1] == '1' and cur then ok = false end
if ARGV[2] == '1' and not cur then ok = false end
if ARGV[3] ~= '' and cur and not expired(cur, ARGV[3]) then ok = false end
if ARGV[4] ~= '' and (not cur or cur[1] ~= ARGV[4]) then ok = false end
if ARGV[5] ~= '' and (not cur or cur[4] ~= ARGV[5]) then ok = false end
if ARGV[6] == '1' and cur and cur[2] ~= '' then ok = false end
local previous = raw or ''
if not ok then return {0, previous} end
local item = cur
if item and ARGV[7] ~= '' and expired(item, ARGV[7]) then item = false end
local created = not item
if created then item = {'', '', '', '0', '', '0'} end
local function assign(index, mode, value)
  if mode == 's' then item[index] = value
  elseif mode == 'i' then if item[index] == '' then item[index] = value end
  elseif mode == 'r' then item[index] = '' end
end
assign(1, ARGV[8], ARGV[9])
assign(2, ARGV[10], ARGV[11])
assign(3, ARGV[12], ARGV[13])
assign(5, ARGV[14], ARGV[15])
if ARGV[16] == 's' then item[4] = ARGV[17]
elseif ARGV[16] == 'i' then if created or item[4] == '0' then item[4] = ARGV[17] end
elseif ARGV[16] == 'r' then item[4] = '0' end
if ARGV[18] ~= '0' then item[6] = string.format('%d', tonumber(item[6]) + tonumber(ARGV[18])) end
redis.call('SET', KEYS[1], table.concat(item, '|'))
return {1, previous}
)lua";

// Keeps the server busy for ARGV[1] microseconds (a store stall: every other command waits).
constexpr const char* kStallScript = R"lua(
local t = redis.call('TIME')
local start = tonumber(t[1]) * 1000000 + tonumber(t[2])
local limit = tonumber(ARGV[1])
while true do
  local now = redis.call('TIME')
  if tonumber(now[1]) * 1000000 + tonumber(now[2]) - start >= limit then break end
end
return 1
)lua";

std::string optional_text(const lethe::MaybeTime& value) {
  return value.has_value() ? std::to_string(*value) : std::string();
}

const char* mode_text(Assign mode) {
  switch (mode) {
    case Assign::Keep: return "k";
    case Assign::Set: return "s";
    case Assign::SetIfAbsent: return "i";
    case Assign::Remove: return "r";
  }
  return "k";
}

template <class T>
bool parse_integer(std::string_view text, T& value) {
  if (text.empty()) return false;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size();
}

struct Target {
  std::string url;  // as given: printed only through mask_target / mask_message
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string unix_path;
  std::string user;  // a Redis 6 ACL user: AUTH user password
  std::string password;
  int database = 0;
};

// "user:password", ":password" or "password" (a user info without ':' is the password, as redis-cli reads it).
void parse_credentials(const std::string& credentials, Target& target) {
  const auto colon = credentials.find(':');
  if (colon == std::string::npos) {
    target.password = credentials;
  } else {
    target.user = credentials.substr(0, colon);
    target.password = credentials.substr(colon + 1);
  }
}

// unix://[[user]:password@]/path[?password=P&user=U&db=N] (or unix:/path): the socket path alone is the path.
Target parse_unix_target(const std::string& url, const std::function<std::invalid_argument(const char*)>& bad) {
  Target target;
  target.url = url;
  std::string rest = url.substr(url.rfind("unix://", 0) == 0 ? 7 : 5);
  const auto query = rest.find('?');
  const std::string parameters = query == std::string::npos ? "" : rest.substr(query + 1);
  rest = rest.substr(0, query);
  if (const auto at = rest.rfind('@'); at != std::string::npos) {
    parse_credentials(rest.substr(0, at), target);
    rest = rest.substr(at + 1);
  }
  target.unix_path = rest;
  if (target.unix_path.empty()) throw bad("no socket path");
  for (std::size_t begin = 0; begin < parameters.size();) {
    const std::size_t end = std::min(parameters.find('&', begin), parameters.size());
    const std::string parameter = parameters.substr(begin, end - begin);
    const std::size_t equals = parameter.find('=');
    const std::string name = parameter.substr(0, equals);
    const std::string value = equals == std::string::npos ? "" : parameter.substr(equals + 1);
    if (name == "password") {
      target.password = value;
    } else if (name == "user" || name == "username") {
      target.user = value;
    } else if (name == "db" || name == "database") {
      if (!parse_integer(value, target.database)) throw bad("the database is not a number");
    } else {
      throw bad("unknown parameter (allowed: password, user, db)");
    }
    begin = end + 1;
  }
  return target;
}

Target parse_target(const std::string& url) {
  Target target;
  target.url = url;
  auto bad = [&url](const char* why) {
    return std::invalid_argument(fmt::format("redis store: bad target \"{}\": {} (expected "
                                             "redis://[[user]:password@]host[:port][/db] or "
                                             "unix://[[user]:password@]/path[?password=...&db=N])",
                                             mask_target(url), why));
  };
  if (url.rfind("unix:", 0) == 0) return parse_unix_target(url, bad);
  if (url.rfind("redis://", 0) != 0) throw bad("unknown scheme");
  std::string rest = url.substr(8);
  const auto at = rest.rfind('@');
  if (at != std::string::npos) {
    parse_credentials(rest.substr(0, at), target);
    rest = rest.substr(at + 1);
  }
  const auto slash = rest.find('/');
  if (slash != std::string::npos) {
    const std::string db = rest.substr(slash + 1);
    if (!db.empty() && !parse_integer(db, target.database)) throw bad("the database is not a number");
    rest = rest.substr(0, slash);
  }
  const auto colon = rest.rfind(':');
  if (colon != std::string::npos) {
    if (!parse_integer(std::string_view(rest).substr(colon + 1), target.port)) throw bad("the port is not a number");
    rest = rest.substr(0, colon);
  }
  if (!rest.empty()) target.host = rest;
  return target;
}

timeval to_timeval(sim::Duration duration) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(duration / sim::kSecond);
  tv.tv_usec = static_cast<suseconds_t>((duration % sim::kSecond) / sim::kMicrosecond);
  if (tv.tv_sec == 0 && tv.tv_usec == 0) tv.tv_usec = 1;
  return tv;
}

using ReplyPtr = std::unique_ptr<redisReply, decltype(&freeReplyObject)>;

void close_context(redisContext* context, bool abrupt) {
  if (context == nullptr) return;
  if (abrupt && context->fd >= 0) ::shutdown(context->fd, SHUT_RDWR);
  redisFree(context);
}

// A blocking command on an admin connection; throws on any failure.
ReplyPtr admin_command(redisContext* context, const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  for (const auto& a : args) {
    argv.push_back(a.c_str());
    lengths.push_back(a.size());
  }
  auto* raw = static_cast<redisReply*>(
      redisCommandArgv(context, static_cast<int>(argv.size()), argv.data(), lengths.data()));
  if (raw == nullptr) throw std::runtime_error(fmt::format("redis store: {}: {}", args.front(), context->errstr));
  ReplyPtr reply(raw, &freeReplyObject);
  if (raw->type == REDIS_REPLY_ERROR) {
    throw std::runtime_error(fmt::format("redis store: {}: {}", args.front(), std::string(raw->str, raw->len)));
  }
  return reply;
}

redisContext* open_context(const Target& target, sim::Duration command_timeout,
                           sim::Duration connect_within = kAdminConnectTimeout) {
  const timeval connect_timeout = to_timeval(connect_within);
  redisContext* context = target.unix_path.empty()
                              ? redisConnectWithTimeout(target.host.c_str(), target.port, connect_timeout)
                              : redisConnectUnixWithTimeout(target.unix_path.c_str(), connect_timeout);
  if (context == nullptr) throw std::runtime_error("redis store: out of memory");
  if (context->err != 0) {
    const std::string message = context->errstr;
    redisFree(context);
    throw std::runtime_error(mask_message(
        fmt::format("redis store: cannot connect to {}: {}",
                    target.unix_path.empty() ? fmt::format("{}:{}", target.host, target.port) : target.unix_path,
                    message),
        target.url));
  }
  try {
    if (!target.user.empty()) {
      admin_command(context, {"AUTH", target.user, target.password});
    } else if (!target.password.empty()) {
      admin_command(context, {"AUTH", target.password});
    }
    if (target.database != 0) admin_command(context, {"SELECT", std::to_string(target.database)});
  } catch (const std::runtime_error& e) {
    redisFree(context);
    throw std::runtime_error(mask_message(e.what(), target.url));  // the server's words about our credentials
  } catch (...) {
    redisFree(context);
    throw;
  }
  redisSetTimeout(context, to_timeval(command_timeout));
  return context;
}

class RedisConnection final : public Connection {
 public:
  RedisConnection(redisContext* context, RedisVariant variant, std::string prefix, Counters& counters)
      : context_(context), variant_(variant), prefix_(std::move(prefix)), counters_(counters) {}
  ~RedisConnection() override { close_context(context_, false); }

  std::optional<Reply> execute(const Op& op, const DropPlan& drop) override;
  bool broken() const override { return context_ == nullptr; }

 private:
  // Sends one command and reads its reply; nullopt (the connection closed) on a drop, a timeout, a broken socket
  // or an error reply.
  std::optional<ReplyPtr> command(const std::vector<std::string>& args);
  void fail(const std::string& counter) {
    counters_.add(counter);
    close_context(context_, true);
    context_ = nullptr;
  }
  std::string key_text(lethe::Key key) const { return prefix_ + std::to_string(key); }
  // The item in a GET-style reply (nil = absent); nullopt after fail() on a malformed value.
  std::optional<std::optional<Item>> item_of(const redisReply& reply);

  std::optional<Reply> get(lethe::Key key);
  std::optional<Reply> lua_upsert(const Op& op);
  std::optional<Reply> lua_put(const Op& op);
  std::optional<Reply> watch(const Op& op);
  std::optional<Reply> get_then_set(const Op& op);

  redisContext* context_;
  RedisVariant variant_;
  std::string prefix_;
  Counters& counters_;
  DropPlan drop_;
  int requests_ = 0;
};

std::optional<ReplyPtr> RedisConnection::command(const std::vector<std::string>& args) {
  if (context_ == nullptr) return std::nullopt;
  ++requests_;
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  for (const auto& a : args) {
    argv.push_back(a.c_str());
    lengths.push_back(a.size());
  }
  if (redisAppendCommandArgv(context_, static_cast<int>(argv.size()), argv.data(), lengths.data()) != REDIS_OK) {
    fail("store.connection_errors");
    return std::nullopt;
  }
  int done = 0;
  while (done == 0) {
    if (redisBufferWrite(context_, &done) != REDIS_OK) {
      fail("store.connection_errors");
      return std::nullopt;
    }
  }
  if (drop_.after_request == requests_) {
    close_context(context_, true);
    context_ = nullptr;
    return std::nullopt;
  }
  void* raw = nullptr;
  if (redisGetReply(context_, &raw) != REDIS_OK || raw == nullptr) {
    const bool timed_out = context_->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK);
    fail(timed_out ? "store.client_timeouts" : "store.connection_errors");
    return std::nullopt;
  }
  ReplyPtr reply(static_cast<redisReply*>(raw), &freeReplyObject);
  if (reply->type == REDIS_REPLY_ERROR) {
    fail("store.errors.redis");
    return std::nullopt;
  }
  return std::optional<ReplyPtr>(std::move(reply));
}

std::optional<std::optional<Item>> RedisConnection::item_of(const redisReply& reply) {
  if (reply.type == REDIS_REPLY_NIL) return std::optional<Item>();
  if (reply.type != REDIS_REPLY_STRING) {
    fail("store.errors.unexpected_reply");
    return std::nullopt;
  }
  const std::string text(reply.str, reply.len);
  if (text.empty()) return std::optional<Item>();
  auto item = decode_item(text);
  if (!item) {
    fail("store.errors.malformed_value");
    return std::nullopt;
  }
  return std::optional<Item>(*item);
}

std::optional<Reply> RedisConnection::execute(const Op& op, const DropPlan& drop) {
  require_supported(op, "redis");
  drop_ = drop;
  requests_ = 0;
  if (drop.before_send) {
    close_context(context_, true);
    context_ = nullptr;
    return std::nullopt;
  }
  if (op.kind == OpKind::Get) return get(op.key);
  switch (variant_) {
    case RedisVariant::Lua: return op.kind == OpKind::Put ? lua_put(op) : lua_upsert(op);
    case RedisVariant::Watch: return watch(op);
    case RedisVariant::GetThenSet: return get_then_set(op);
  }
  return std::nullopt;
}

std::optional<Reply> RedisConnection::get(lethe::Key key) {
  auto reply = command({"GET", key_text(key)});
  if (!reply) return std::nullopt;
  auto item = item_of(**reply);
  if (!item) return std::nullopt;
  Reply result;
  result.previous = *item;
  return result;
}

std::optional<Reply> RedisConnection::lua_upsert(const Op& op) {
  const lethe::Condition& c = op.condition;
  const lethe::Update& u = op.update;
  auto flag = [](bool on) { return std::string(on ? "1" : "0"); };
  auto optional_time = [](const std::optional<sim::Time>& t) { return t ? std::to_string(*t) : std::string(); };
  const std::vector<std::string> args = {
      "EVAL", kUpsertScript, "1", key_text(op.key),
      flag(c.require_absent), flag(c.require_present), optional_time(c.absent_or_expired_at),
      optional_time(c.started_at_equals), c.owner_equals ? std::to_string(*c.owner_equals) : std::string(),
      flag(c.require_not_completed), optional_time(u.replace_expired_at),
      mode_text(u.started_at_mode), std::to_string(u.started_at),
      mode_text(u.completed_at_mode), std::to_string(u.completed_at),
      mode_text(u.expires_on_mode), std::to_string(u.expires_on),
      mode_text(u.memoized_mode), std::to_string(u.memoized),
      mode_text(u.owner_mode), std::to_string(u.owner),
      std::to_string(u.counter_add)};
  auto reply = command(args);
  if (!reply) return std::nullopt;
  const redisReply& r = **reply;
  if (r.type != REDIS_REPLY_ARRAY || r.elements != 2 || r.element[0]->type != REDIS_REPLY_INTEGER) {
    fail("store.errors.unexpected_reply");
    return std::nullopt;
  }
  auto previous = item_of(*r.element[1]);
  if (!previous) return std::nullopt;
  Reply result;
  result.applied = r.element[0]->integer == 1;
  result.previous = *previous;
  return result;
}

std::optional<Reply> RedisConnection::lua_put(const Op& op) {
  auto reply = command({"SET", key_text(op.key), encode_item(op.item), "GET"});
  if (!reply) return std::nullopt;
  auto previous = item_of(**reply);
  if (!previous) return std::nullopt;
  Reply result;
  result.previous = *previous;
  return result;
}

std::optional<Reply> RedisConnection::watch(const Op& op) {
  const std::string key = key_text(op.key);
  for (int round = 0; round < kMaxWatchRetries; ++round) {
    if (!command({"WATCH", key})) return std::nullopt;
    auto read = command({"GET", key});
    if (!read) return std::nullopt;
    auto current = item_of(**read);
    if (!current) return std::nullopt;
    const LocalStep step = apply_locally(op, *current);
    if (!step.changed) {
      if (!command({"UNWATCH"})) return std::nullopt;
      return step.reply;
    }
    if (!command({"MULTI"})) return std::nullopt;
    if (!command({"SET", key, encode_item(*step.after)})) return std::nullopt;
    auto exec = command({"EXEC"});
    if (!exec) return std::nullopt;
    if ((*exec)->type == REDIS_REPLY_ARRAY) return step.reply;
    counters_.add("store.watch_conflicts");  // nil: the key changed after WATCH; nothing was written
  }
  fail("store.watch_gave_up");
  return std::nullopt;
}

std::optional<Reply> RedisConnection::get_then_set(const Op& op) {
  auto read = get(op.key);
  if (!read) return std::nullopt;
  const LocalStep step = apply_locally(op, read->previous);
  if (step.changed) {
    if (!command({"SET", key_text(op.key), encode_item(*step.after)})) return std::nullopt;
  }
  return step.reply;
}

bool valid_prefix(const std::string& prefix) {
  return !prefix.empty() && prefix.size() <= 100 &&
         prefix.find_first_of(" *?[]\\\r\n") == std::string::npos;
}

std::string fresh_prefix() {
  static std::atomic<std::uint64_t> counter{0};
  const auto ticks = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return fmt::format("lethe:live:{}:{}:{:x}:", ::getpid(), ++counter, ticks & 0xffffffu);
}

// Calls `batch` with every key that matches `prefix`*, a SCAN batch at a time, over the WHOLE keyspace (the
// cursor is followed back to 0: one SCAN looks at a few buckets only), until `batch` returns false.
template <class Batch>
void scan_prefix(redisContext* context, const std::string& prefix, Batch batch) {
  std::string cursor = "0";
  do {
    const ReplyPtr scan = admin_command(context, {"SCAN", cursor, "MATCH", prefix + "*", "COUNT", "1000"});
    if (scan->type != REDIS_REPLY_ARRAY || scan->elements != 2 || scan->element[0]->type != REDIS_REPLY_STRING ||
        scan->element[1]->type != REDIS_REPLY_ARRAY) {
      throw std::runtime_error("redis store: SCAN gave an unexpected reply");
    }
    cursor.assign(scan->element[0]->str, scan->element[0]->len);
    const redisReply* keys = scan->element[1];
    std::vector<std::string> names;
    for (std::size_t i = 0; i < keys->elements; ++i) names.emplace_back(keys->element[i]->str, keys->element[i]->len);
    if (!names.empty() && !batch(names)) return;
  } while (cursor != "0");
}

// An admin connection that closes itself however its scope ends.
using ContextPtr = std::unique_ptr<redisContext, decltype(&redisFree)>;
ContextPtr admin_context(const Target& target, sim::Duration command_timeout) {
  return ContextPtr(open_context(target, command_timeout), &redisFree);
}

class RedisStore final : public LiveStore {
 public:
  explicit RedisStore(const StoreOptions& options)
      : target_(parse_target(options.target)), variant_(parse_redis_variant(options.variant)), timeout_(options.timeout),
        owns_prefix_(options.key_prefix.empty()),
        prefix_(options.key_prefix.empty() ? fresh_prefix() : options.key_prefix) {
    if (!valid_prefix(prefix_)) {
      throw std::invalid_argument("redis store: key prefix \"" + prefix_ +
                                  "\" must be 1-100 characters without spaces or glob characters");
    }
    const ContextPtr owner = admin_context(target_, 5 * sim::kSecond);
    redisContext* context = owner.get();
    if (variant_ == RedisVariant::Lua) {
      // SET .. GET (Put) needs Redis 6.2 or later.
      const ReplyPtr info = admin_command(context, {"INFO", "server"});
      const std::string text(info->str, info->len);
      const auto at = text.find("redis_version:");
      int major = 0;
      int minor = 0;
      if (at != std::string::npos) std::sscanf(text.c_str() + at, "redis_version:%d.%d", &major, &minor);
      if (major < 6 || (major == 6 && minor < 2)) {
        throw std::runtime_error("redis store: variant lua needs Redis 6.2 or later (SET .. GET)");
      }
    }
    bool taken = false;
    scan_prefix(context, prefix_, [&taken](const std::vector<std::string>&) {
      taken = true;
      return false;
    });
    if (taken) {
      throw std::runtime_error("redis store: keys with prefix \"" + prefix_ + "\" exist (live mode needs fresh ones)");
    }
  }

  std::unique_ptr<Connection> connect() override {
    return std::make_unique<RedisConnection>(open_context(target_, timeout_, kWorkerConnectTimeout), variant_, prefix_,
                                             counters_);
  }

  bool stall(sim::Duration duration) override {
    const ContextPtr context = admin_context(target_, duration + 10 * sim::kSecond);
    admin_command(context.get(), {"EVAL", kStallScript, "0", std::to_string(duration / sim::kMicrosecond)});
    return true;
  }

  void teardown() override {
    if (!owns_prefix_) return;
    const ContextPtr owner = admin_context(target_, 5 * sim::kSecond);
    redisContext* context = owner.get();
    scan_prefix(context, prefix_, [context](const std::vector<std::string>& keys) {
      std::vector<std::string> args = {"DEL"};
      args.insert(args.end(), keys.begin(), keys.end());
      admin_command(context, args);
      return true;
    });
  }

  std::string location() const override { return "keys " + prefix_ + "*"; }

 private:
  Target target_;
  RedisVariant variant_;
  sim::Duration timeout_;
  bool owns_prefix_;
  std::string prefix_;
};

}  // namespace

std::string encode_item(const Item& item) {
  return fmt::format("{}|{}|{}|{}|{}|{}", optional_text(item.started_at), optional_text(item.completed_at),
                     optional_text(item.expires_on), item.owner,
                     item.memoized ? std::to_string(*item.memoized) : std::string(), item.counter);
}

std::optional<Item> decode_item(const std::string& text) {
  std::vector<std::string_view> fields;
  std::size_t start = 0;
  for (;;) {
    const auto bar = text.find('|', start);
    fields.push_back(std::string_view(text).substr(start, bar == std::string::npos ? std::string::npos : bar - start));
    if (bar == std::string::npos) break;
    start = bar + 1;
  }
  if (fields.size() != 6) return std::nullopt;
  Item item;
  auto optional_field = [](std::string_view field, lethe::MaybeTime& out) {
    if (field.empty()) return true;
    std::int64_t value = 0;
    if (!parse_integer(field, value)) return false;
    out = value;
    return true;
  };
  if (!optional_field(fields[0], item.started_at) || !optional_field(fields[1], item.completed_at) ||
      !optional_field(fields[2], item.expires_on)) {
    return std::nullopt;
  }
  if (!parse_integer(fields[3], item.owner)) return std::nullopt;
  if (!fields[4].empty()) {
    std::uint64_t memoized = 0;
    if (!parse_integer(fields[4], memoized)) return std::nullopt;
    item.memoized = memoized;
  }
  if (!parse_integer(fields[5], item.counter)) return std::nullopt;
  return item;
}

std::unique_ptr<LiveStore> open_redis_store(const StoreOptions& options) {
  return std::make_unique<RedisStore>(options);
}

}  // namespace live
