// lethe's JSON-lines store history (check/history.hpp; docs/formats.md "Store histories").
#include <fmt/format.h>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>

#include "check/history.hpp"
#include "check/store_json.hpp"

namespace lethe::history {

namespace {

using Json = nlohmann::json;

// ---------------------------------------------------------------- writing

void put_time(Json& object, const char* name, const MaybeTime& value) {
  if (value.has_value()) object[name] = *value;
}

Json item_json(const Item& item) {
  Json object = Json::object();
  put_time(object, "started_at", item.started_at);
  put_time(object, "completed_at", item.completed_at);
  put_time(object, "expires_on", item.expires_on);
  if (item.owner != 0) object["owner"] = item.owner;
  if (item.memoized.has_value()) object["memoized"] = *item.memoized;
  if (item.counter != 0) object["counter"] = item.counter;
  if (item.payload.has_value()) object["payload"] = *item.payload;
  return object;
}

Json optional_item_json(const std::optional<Item>& item) { return item ? item_json(*item) : Json(nullptr); }

Json condition_json(const Condition& condition) {
  Json object = Json::object();
  if (condition.require_absent) object["require_absent"] = true;
  if (condition.require_present) object["require_present"] = true;
  if (condition.absent_or_expired_at) object["absent_or_expired_at"] = *condition.absent_or_expired_at;
  if (condition.started_at_equals) object["started_at_equals"] = *condition.started_at_equals;
  if (condition.owner_equals) object["owner_equals"] = *condition.owner_equals;
  if (condition.require_not_completed) object["require_not_completed"] = true;
  return object;
}

template <class Value>
void put_assign(Json& object, const char* name, Assign mode, Value value) {
  switch (mode) {
    case Assign::Keep: return;
    case Assign::Set: object[name] = Json{{"set", value}}; return;
    case Assign::SetIfAbsent: object[name] = Json{{"set_if_absent", value}}; return;
    case Assign::Remove: object[name] = "remove"; return;
  }
}

Json update_json(const Update& update) {
  Json object = Json::object();
  put_assign(object, "started_at", update.started_at_mode, update.started_at);
  put_assign(object, "owner", update.owner_mode, update.owner);
  put_assign(object, "completed_at", update.completed_at_mode, update.completed_at);
  put_assign(object, "expires_on", update.expires_on_mode, update.expires_on);
  put_assign(object, "memoized", update.memoized_mode, update.memoized);
  put_assign(object, "payload", update.payload_mode, update.payload);
  if (update.counter_add != 0) object["counter_add"] = update.counter_add;
  if (update.replace_expired_at) object["replace_expired_at"] = *update.replace_expired_at;
  return object;
}

const char* kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::Get: return "get";
    case OpKind::Put: return "put";
    case OpKind::Delete: return "delete";
    case OpKind::Upsert: return "upsert";
    case OpKind::Transaction: return "transaction";
    case OpKind::Evict: return "evict";
  }
  return "?";
}

Json op_json(const Op& op) {
  Json object{{"kind", kind_name(op.kind)}};
  if (op.kind != OpKind::Transaction) object["key"] = op.key;
  if (op.kind == OpKind::Put) object["item"] = item_json(op.item);
  if (op.kind == OpKind::Upsert) {
    object["condition"] = condition_json(op.condition);
    object["update"] = update_json(op.update);
  }
  if (op.kind == OpKind::Delete && !(op.condition == Condition{})) object["condition"] = condition_json(op.condition);
  if (op.kind == OpKind::Transaction) {
    Json parts = Json::array();
    for (const TransactionPart& part : op.parts) {
      parts.push_back(Json{{"key", part.key}, {"condition", condition_json(part.condition)},
                           {"update", update_json(part.update)}});
    }
    object["parts"] = std::move(parts);
  }
  if (op.kind == OpKind::Evict) object["at"] = op.at;
  return object;
}

Json reply_json(const Reply& reply, bool transaction) {
  Json object{{"applied", reply.applied}};
  if (transaction) {
    Json parts = Json::array();
    for (const auto& item : reply.previous_parts) parts.push_back(optional_item_json(item));
    object["previous_parts"] = std::move(parts);
  } else {
    object["previous"] = optional_item_json(reply.previous);
  }
  return object;
}

// ---------------------------------------------------------------- reading

class LineReader {
 public:
  LineReader(const std::string& file, std::size_t line) : file_(file), line_(line) {}
  [[noreturn]] void fail(const std::string& what) const { throw Error(file_, line_, what); }

  void only(const Json& object, std::string_view where, std::initializer_list<std::string_view> allowed) const {
    if (!object.is_object()) fail(fmt::format("{} is {}; expected a JSON object", where, object.dump()));
    for (const auto& [name, value] : object.items()) {
      bool known = false;
      for (std::string_view candidate : allowed) known = known || candidate == name;
      if (!known) fail(fmt::format("unknown field \"{}\" in {}; allowed: {}", name, where, fmt::join(allowed, ", ")));
    }
  }
  std::int64_t integer(const Json& value, std::string_view what) const {
    if (!value.is_number_integer()) fail(fmt::format("{} is {}; expected an integer", what, value.dump()));
    return value.get<std::int64_t>();
  }
  std::uint64_t unsigned_integer(const Json& value, std::string_view what) const {
    if (value.is_number_unsigned()) return value.get<std::uint64_t>();
    fail(fmt::format("{} is {}; expected an integer >= 0", what, value.dump()));
  }
  bool boolean(const Json& value, std::string_view what) const {
    if (!value.is_boolean()) fail(fmt::format("{} is {}; expected true or false", what, value.dump()));
    return value.get<bool>();
  }

  Item item(const Json& object, std::string_view where) const {
    only(object, where, {"started_at", "completed_at", "expires_on", "owner", "memoized", "counter", "payload"});
    Item item;
    if (object.contains("started_at")) item.started_at = integer(object["started_at"], "started_at");
    if (object.contains("completed_at")) item.completed_at = integer(object["completed_at"], "completed_at");
    if (object.contains("expires_on")) item.expires_on = integer(object["expires_on"], "expires_on");
    if (object.contains("owner")) item.owner = unsigned_integer(object["owner"], "owner");
    if (object.contains("memoized")) item.memoized = unsigned_integer(object["memoized"], "memoized");
    if (object.contains("counter")) item.counter = integer(object["counter"], "counter");
    if (object.contains("payload")) item.payload = unsigned_integer(object["payload"], "payload");
    return item;
  }
  std::optional<Item> optional_item(const Json& value, std::string_view where) const {
    if (value.is_null()) return std::nullopt;
    return item(value, where);
  }

  Condition condition(const Json& object) const {
    only(object, "condition", {"require_absent", "require_present", "absent_or_expired_at", "started_at_equals",
                               "owner_equals", "require_not_completed"});
    Condition condition;
    if (object.contains("require_absent")) condition.require_absent = boolean(object["require_absent"], "require_absent");
    if (object.contains("require_present")) condition.require_present = boolean(object["require_present"], "require_present");
    if (object.contains("absent_or_expired_at")) {
      condition.absent_or_expired_at = integer(object["absent_or_expired_at"], "absent_or_expired_at");
    }
    if (object.contains("started_at_equals")) condition.started_at_equals = integer(object["started_at_equals"], "started_at_equals");
    if (object.contains("owner_equals")) condition.owner_equals = unsigned_integer(object["owner_equals"], "owner_equals");
    if (object.contains("require_not_completed")) {
      condition.require_not_completed = boolean(object["require_not_completed"], "require_not_completed");
    }
    return condition;
  }

  template <class Value>
  void assign(const Json& object, const char* name, Assign& mode, Value& value) const {
    if (!object.contains(name)) return;
    const Json& field = object[name];
    if (field == "remove") {
      mode = Assign::Remove;
      return;
    }
    if (!field.is_object() || field.size() != 1 || (!field.contains("set") && !field.contains("set_if_absent"))) {
      fail(fmt::format("update {} is {}; expected {{\"set\": V}}, {{\"set_if_absent\": V}} or \"remove\"", name, field.dump()));
    }
    mode = field.contains("set") ? Assign::Set : Assign::SetIfAbsent;
    const Json& given = field.contains("set") ? field["set"] : field["set_if_absent"];
    if constexpr (std::is_signed_v<Value>) {
      value = integer(given, name);
    } else {
      value = unsigned_integer(given, name);
    }
  }

  Update update(const Json& object) const {
    only(object, "update", {"started_at", "owner", "completed_at", "expires_on", "memoized", "payload", "counter_add",
                            "replace_expired_at"});
    Update update;
    assign(object, "started_at", update.started_at_mode, update.started_at);
    assign(object, "owner", update.owner_mode, update.owner);
    assign(object, "completed_at", update.completed_at_mode, update.completed_at);
    assign(object, "expires_on", update.expires_on_mode, update.expires_on);
    assign(object, "memoized", update.memoized_mode, update.memoized);
    assign(object, "payload", update.payload_mode, update.payload);
    if (object.contains("counter_add")) update.counter_add = integer(object["counter_add"], "counter_add");
    if (object.contains("replace_expired_at")) update.replace_expired_at = integer(object["replace_expired_at"], "replace_expired_at");
    return update;
  }

  Op op(const Json& object) const {
    if (!object.is_object() || !object.contains("kind") || !object["kind"].is_string()) {
      fail("\"op\" needs a \"kind\": get, put, delete, upsert, transaction or evict");
    }
    static const std::map<std::string, OpKind> kKinds{{"get", OpKind::Get},       {"put", OpKind::Put},
                                                      {"delete", OpKind::Delete}, {"upsert", OpKind::Upsert},
                                                      {"transaction", OpKind::Transaction}, {"evict", OpKind::Evict}};
    const auto kind = kKinds.find(object["kind"].get<std::string>());
    if (kind == kKinds.end()) {
      fail(fmt::format("unknown op kind {}; allowed: get, put, delete, upsert, transaction, evict", object["kind"].dump()));
    }
    Op op;
    op.kind = kind->second;
    switch (op.kind) {
      case OpKind::Get: only(object, "op", {"kind", "key"}); break;
      case OpKind::Delete: only(object, "op", {"kind", "key", "condition"}); break;
      case OpKind::Put: only(object, "op", {"kind", "key", "item"}); break;
      case OpKind::Upsert: only(object, "op", {"kind", "key", "condition", "update"}); break;
      case OpKind::Transaction: only(object, "op", {"kind", "parts"}); break;
      case OpKind::Evict: only(object, "op", {"kind", "key", "at"}); break;
    }
    if (op.kind != OpKind::Transaction) {
      if (!object.contains("key")) fail(fmt::format("a {} op without \"key\"", kind->first));
      op.key = unsigned_integer(object["key"], "key");
    }
    if (op.kind == OpKind::Put) op.item = item(object.value("item", Json::object()), "item");
    if (op.kind == OpKind::Delete && object.contains("condition")) op.condition = condition(object["condition"]);
    if (op.kind == OpKind::Upsert) {
      op.condition = condition(object.value("condition", Json::object()));
      op.update = update(object.value("update", Json::object()));
    }
    if (op.kind == OpKind::Evict) {
      if (!object.contains("at")) fail("an evict op without \"at\" (the sweeper's instant)");
      op.at = integer(object["at"], "at");
    }
    if (op.kind == OpKind::Transaction) {
      if (!object.contains("parts") || !object["parts"].is_array() || object["parts"].empty()) {
        fail("a transaction needs \"parts\": a non-empty array of {\"key\", \"condition\", \"update\"}");
      }
      for (const Json& part : object["parts"]) {
        only(part, "a transaction part", {"key", "condition", "update"});
        if (!part.contains("key")) fail("a transaction part without \"key\"");
        op.parts.push_back(TransactionPart{unsigned_integer(part["key"], "key"),
                                           condition(part.value("condition", Json::object())),
                                           update(part.value("update", Json::object()))});
      }
    }
    return op;
  }

  ObservedReply reply(const Json& object, const Op& op) const {
    only(object, "reply", {"applied", "previous", "previous_parts"});
    ObservedReply reply;
    reply.applied_observed = object.contains("applied");
    if (reply.applied_observed) reply.reply.applied = boolean(object["applied"], "applied");
    const bool transaction = op.kind == OpKind::Transaction;
    if (transaction && object.contains("previous")) fail("a transaction's reply has \"previous_parts\", not \"previous\"");
    if (!transaction && object.contains("previous_parts")) fail("only a transaction's reply has \"previous_parts\"");
    reply.previous_observed = object.contains(transaction ? "previous_parts" : "previous");
    if (reply.previous_observed && transaction) {
      const Json& parts = object["previous_parts"];
      if (!parts.is_array() || parts.size() != op.parts.size()) {
        fail(fmt::format("\"previous_parts\" needs one item (or null) per part: {} here", op.parts.size()));
      }
      for (const Json& part : parts) reply.reply.previous_parts.push_back(optional_item(part, "a previous part"));
    } else if (reply.previous_observed) {
      reply.reply.previous = optional_item(object["previous"], "previous");
    }
    return reply;
  }

 private:
  const std::string& file_;
  std::size_t line_;
};

}  // namespace

Json store_op_to_json(const Op& op) { return op_json(op); }
Json store_reply_to_json(const Reply& reply, bool transaction) { return reply_json(reply, transaction); }
Op store_op_from_json(const Json& object) {
  static const std::string kWhere = "op";
  return LineReader(kWhere, 0).op(object);
}

void write_store_operation(std::ostream& out, const StoreOperation& operation) {
  Json line{{"client", operation.client}, {"invoked_at", operation.invoked_at}};
  if (operation.returned_at != lin::kNever) line["returned_at"] = operation.returned_at;
  line["op"] = op_json(operation.input);
  if (operation.returned_at != lin::kNever) {
    line["reply"] = reply_json(operation.output, operation.input.kind == OpKind::Transaction);
  }
  out << line.dump() << '\n';
}

void write_store_history(std::ostream& out, const std::vector<StoreOperation>& history) {
  for (const StoreOperation& operation : history) write_store_operation(out, operation);
}

namespace detail {

StoreHistory read_lethe(const std::string& file, std::string_view text) {
  StoreHistory history;
  history.timed = true;
  history.model = ModelKind::Store;
  std::size_t number = 0;
  std::size_t begin = 0;
  while (begin < text.size()) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(begin, end - begin);
    begin = end + 1;
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const LineReader reader(file, number);
    Json object;
    try {
      object = parse_bounded_json(line);
    } catch (const std::exception& e) {  // parse_error, out_of_range (1e400), JsonTooDeep
      reader.fail(fmt::format("not a JSON object ({}); expected one operation per line: {{\"client\", "
                              "\"invoked_at\", \"returned_at\", \"op\", \"reply\"}}", json_error_reason(e)));
    }
    reader.only(object, "the operation", {"client", "invoked_at", "returned_at", "op", "reply"});
    for (const char* required : {"client", "invoked_at", "op"}) {
      if (!object.contains(required)) reader.fail(fmt::format("no \"{}\"; every operation has client, invoked_at and op", required));
    }
    StoreHistory::OpType op;
    const std::uint64_t client = reader.unsigned_integer(object["client"], "client");
    if (client > UINT32_MAX) reader.fail("client is above 4294967295");
    op.client = static_cast<std::uint32_t>(client);
    op.invoked_at = reader.integer(object["invoked_at"], "invoked_at");
    op.input = reader.op(object["op"]);
    const bool answered = object.contains("returned_at") && !object["returned_at"].is_null();
    if (answered) {
      op.returned_at = reader.integer(object["returned_at"], "returned_at");
      if (op.returned_at < op.invoked_at) reader.fail("returned_at is before invoked_at");
      if (op.returned_at == lin::kNever) reader.fail("returned_at is the largest integer (reserved for no response)");
      if (!object.contains("reply")) reader.fail("an answered operation (returned_at set) without \"reply\"; {} if nothing of it was observed");
      op.output = reader.reply(object["reply"], op.input);
    } else if (object.contains("reply")) {
      reader.fail("a \"reply\" without \"returned_at\"; an operation without a response has neither");
    }
    op.keys = op.input.keys();
    history.ops.push_back(std::move(op));
    history.origins.push_back(OpOrigin{number, answered ? number : 0});
  }
  if (history.ops.empty()) throw Error(file, 0, "no operations found; expected one JSON object per line");
  // Stable by invocation: the checker numbers ops in that order.
  std::vector<std::size_t> order(history.ops.size());
  for (std::size_t index = 0; index < order.size(); ++index) order[index] = index;
  std::stable_sort(order.begin(), order.end(), [&history](std::size_t a, std::size_t b) {
    return history.ops[a].invoked_at < history.ops[b].invoked_at;
  });
  StoreHistory sorted;
  sorted.timed = true;
  sorted.model = history.model;
  for (std::size_t index : order) {
    sorted.ops.push_back(std::move(history.ops[index]));
    sorted.origins.push_back(history.origins[index]);
  }
  sorted.raw_keys = true;
  return sorted;
}

}  // namespace detail

}  // namespace lethe::history
