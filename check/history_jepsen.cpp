// Jepsen histories: EDN, log lines and history.txt (check/history.hpp).
#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <set>

#include "check/history.hpp"
#include "check/history_edn.hpp"

namespace lethe::history {

using edn::Value;

Error::Error(const std::string& file, std::size_t line, const std::string& what)
    : std::runtime_error(line == 0 ? fmt::format("{}: {}", file, what) : fmt::format("{}:{}: {}", file, line, what)),
      file_(file),
      line_(line) {}

Error::Error(const std::string& file, std::size_t line, std::size_t column, const std::string& what)
    : std::runtime_error(fmt::format("{}:{}:{}: {}", file, line, column, what)), file_(file), line_(line) {}

std::string_view to_string(Format format) {
  switch (format) {
    case Format::Auto: return "auto";
    case Format::Lethe: return "lethe";
    case Format::JepsenEdn: return "jepsen-edn";
    case Format::JepsenLog: return "jepsen-log";
    case Format::JepsenTxt: return "jepsen-txt";
  }
  return "?";
}

std::string_view to_string(ModelKind model) {
  switch (model) {
    case ModelKind::Auto: return "auto";
    case ModelKind::Store: return "store";
    case ModelKind::Register: return "register";
    case ModelKind::CasRegister: return "cas-register";
    case ModelKind::EtcdRegister: return "etcd-register";
    case ModelKind::Kv: return "kv";
    case ModelKind::MultiRegister: return "multi-register";
    case ModelKind::Mutex: return "mutex";
    case ModelKind::Set: return "set";
    case ModelKind::UnorderedQueue: return "unordered-queue";
    case ModelKind::FifoQueue: return "fifo-queue";
    case ModelKind::TotalQueue: return "total-queue";
  }
  return "?";
}

namespace {

// ---------------------------------------------------------------- text

std::string_view without_bom(std::string_view text) {
  return text.substr(0, 3) == "\xEF\xBB\xBF" ? text.substr(3) : text;
}

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(begin, end - begin);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    if (end == text.size()) break;
    begin = end + 1;
  }
  return lines;
}

bool blank(std::string_view line) {
  return std::all_of(line.begin(), line.end(), [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; });
}

// "3\t:invoke\t..." — a history.txt line.
bool txt_line(std::string_view line) {
  std::size_t index = 0;
  if (index < line.size() && line[index] == '-') ++index;
  const std::size_t digits = index;
  while (index < line.size() && std::isdigit(static_cast<unsigned char>(line[index])) != 0) ++index;
  if (index == digits) {  // a keyword process (:nemesis)
    if (line.empty() || line[0] != ':') return false;
    index = line.find('\t');
    if (index == std::string_view::npos) return false;
  }
  return line.substr(index, 2) == "\t:";
}

// ---------------------------------------------------------------- events, whichever the format

enum class EventType { Invoke, Ok, Fail, Info };

std::string_view name_of(EventType type) {
  switch (type) {
    case EventType::Invoke: return "invoke";
    case EventType::Ok: return "ok";
    case EventType::Fail: return "fail";
    case EventType::Info: return "info";
  }
  return "?";
}

struct Event {
  std::size_t line = 0;
  std::int64_t process = 0;
  EventType type = EventType::Invoke;
  std::string f;
  std::size_t f_line = 0;    // where :f's value is written (an EDN map may span lines)
  std::size_t f_column = 0;
  Value value;
  std::optional<std::string> key;
  std::optional<std::int64_t> time;
};

struct Events {
  std::vector<Event> client;
  std::size_t skipped = 0;  // nemesis and other non-client ops
};

EventType event_type(const edn::Reader& reader, const Value& value) {
  if (value.type == Value::Type::Keyword) {
    if (value.text == "invoke") return EventType::Invoke;
    if (value.text == "ok") return EventType::Ok;
    if (value.text == "fail") return EventType::Fail;
    if (value.text == "info") return EventType::Info;
  }
  reader.fail_at(value.line, value.column, fmt::format(":type is {}; allowed: :invoke, :ok, :fail, :info", edn::show(value)));
}

// A key as EDN prints it, so that the string "1", the integer 1 and the keyword :1 stay three keys and are named
// as written.
std::string key_text(const edn::Reader& reader, const Value& value) {
  if (value.type == Value::Type::String || value.type == Value::Type::Keyword || value.type == Value::Type::Int) {
    return edn::canonical(value);
  }
  reader.fail_at(value.line, value.column, fmt::format(":key is {}; expected a string, keyword or integer", edn::show(value)));
}

// One op map; false when it is not a client's (a nemesis op).
bool event_of(const edn::Reader& reader, const Value& op, Event& event) {
  if (op.type != Value::Type::Map) {
    reader.fail_at(op.line, op.column, fmt::format("{} is not an op map; expected {{:type ... :f ... :process ...}}", edn::show(op, 80)));
  }
  const Value* type = op.get("type");
  const Value* f = op.get("f");
  const Value* process = op.get("process");
  if (type == nullptr) reader.fail_at(op.line, op.column, "the op map has no :type; expected :invoke, :ok, :fail or :info");
  if (process == nullptr) reader.fail_at(op.line, op.column, "the op map has no :process");
  if (process->type != Value::Type::Int) {
    if (process->type == Value::Type::Keyword || process->type == Value::Type::Nil) return false;
    reader.fail_at(process->line, process->column, fmt::format(":process is {}; expected an integer", edn::show(*process)));
  }
  if (f == nullptr) reader.fail_at(op.line, op.column, "the op map has no :f (the operation)");
  if (f->type != Value::Type::Keyword && f->type != Value::Type::String) {
    reader.fail_at(f->line, f->column, fmt::format(":f is {}; expected a keyword such as :read", edn::show(*f)));
  }
  event.line = op.line;
  event.process = process->integer;
  event.type = event_type(reader, *type);
  event.f = f->text;
  event.f_line = f->line;
  event.f_column = f->column;
  if (const Value* value = op.get("value")) event.value = *value;
  if (const Value* key = op.get("key")) event.key = key_text(reader, *key);
  if (const Value* time = op.get("time")) {
    if (time->type != Value::Type::Int) {
      reader.fail_at(time->line, time->column, fmt::format(":time is {}; expected nanoseconds", edn::show(*time)));
    }
    event.time = time->integer;
  }
  return true;
}

// Op maps one after another, or inside one vector or list; any layout over lines.
Events edn_events(const std::string& file, std::string_view text) {
  Events events;
  edn::Reader reader(file, text);
  std::optional<std::pair<std::size_t, std::size_t>> outer;  // where the enclosing [ or ( opened
  char outer_close = 0;
  while (true) {
    if (reader.at_end()) {
      if (outer) reader.fail_at(outer->first, outer->second, fmt::format("unclosed '{}': the text ends before its closing '{}'",
                                                                        outer_close == ']' ? '[' : '(', outer_close));
      return events;
    }
    const char c = reader.peek();
    if (!outer && (c == '[' || c == '(')) {
      outer.emplace(reader.line(), reader.column());
      outer_close = c == '[' ? ']' : ')';
      reader.advance();
      continue;
    }
    if (outer && c == outer_close) {
      outer.reset();
      reader.advance();
      continue;
    }
    const Value op = reader.read();
    Event event;
    if (event_of(reader, op, event)) {
      events.client.push_back(std::move(event));
    } else {
      ++events.skipped;
    }
  }
}

// "PROCESS :TYPE :F VALUE" after `prefix_end` on a line; text after a tab following the value is Jepsen's error.
bool tab_event(const std::string& file, std::size_t number, std::string_view line, Event& event) {
  edn::Reader reader(file, line, number);
  const std::string_view form = "; expected \"PROCESS :TYPE :F VALUE\"";
  if (reader.at_end()) reader.fail(fmt::format("an empty op line{}", form));
  const Value process = reader.read();
  if (process.type == Value::Type::Keyword) return false;  // :nemesis
  if (process.type != Value::Type::Int) reader.fail_at(process.line, process.column, fmt::format("the process is {}{}", edn::show(process), form));
  if (reader.at_end()) reader.fail(fmt::format("truncated: :TYPE :F VALUE missing after the process{}", form));
  const Value type = reader.read();
  if (reader.at_end()) reader.fail(fmt::format("truncated: :F VALUE missing after the type{}", form));
  const Value f = reader.read();
  if (f.type != Value::Type::Keyword) reader.fail_at(f.line, f.column, fmt::format("the operation is {}; expected a keyword such as :read", edn::show(f)));
  if (reader.at_end()) reader.fail("truncated: expected a VALUE after the operation (nil when it has none)");
  event.line = number;
  event.process = process.integer;
  event.type = event_type(reader, type);
  event.f = f.text;
  event.f_line = f.line;
  event.f_column = f.column;
  event.value = reader.read();
  const std::string_view rest = reader.rest();
  if (!rest.empty() && rest.front() != '\t' && !blank(rest)) {
    reader.fail(fmt::format("text after the value: \"{}\"; expected a tab before Jepsen's error field",
                            std::string(rest.substr(0, 80))));
  }
  return true;
}

// jepsen-log: lines of other loggers are skipped; jepsen-txt: every line that is not blank is an op.
Events tab_events(const std::string& file, std::string_view text, bool log) {
  Events events;
  const auto lines = lines_of(text);
  constexpr std::string_view kMarker = "jepsen.util - ";
  for (std::size_t index = 0; index < lines.size(); ++index) {
    std::string_view line = lines[index];
    if (log) {
      const std::size_t marker = line.find(kMarker);
      if (marker == std::string_view::npos) continue;
      line.remove_prefix(marker + kMarker.size());
    } else if (blank(line) || line.front() == ';') {
      continue;
    }
    Event event;
    if (tab_event(file, index + 1, line, event)) {
      events.client.push_back(std::move(event));
    } else {
      ++events.skipped;
    }
  }
  return events;
}

bool scalar(const Value& value) {
  return value.type != Value::Type::List && value.type != Value::Type::Vector && value.type != Value::Type::Set &&
         value.type != Value::Type::Map && value.type != Value::Type::Nil;
}

// Jepsen's independent tuples: when every client op's value is [K V] with K a scalar (and a cas's V is itself
// [FROM TO]; transactions are never tuples), K becomes the key and V the value.
void split_independent(std::vector<Event>& events, Independent independent) {
  if (independent == Independent::No || events.empty()) return;
  const bool tuples = std::all_of(events.begin(), events.end(), [](const Event& event) {
    if (event.key || event.f == "txn" || event.value.type != Value::Type::Vector || event.value.items.size() != 2) {
      return false;
    }
    const Value& inner = event.value.items[1];
    return scalar(event.value.items[0]) && (event.f != "cas" || (inner.sequential() && inner.items.size() == 2));
  });
  if (!tuples) return;
  for (Event& event : events) {
    event.key = edn::canonical(event.value.items[0]);
    Value inner = std::move(event.value.items[1]);
    event.value = std::move(inner);
  }
}

// ---------------------------------------------------------------- pairing invocations with completions

struct Paired {
  const Event* invoke = nullptr;
  const Event* completion = nullptr;  // nullptr: no response before the end of the file
  lin::Time invoked_at = 0;
  lin::Time completed_at = lin::kNever;
};

struct PairedHistory {
  std::vector<Paired> ops;  // in invocation order
  bool timed = false;
};

[[noreturn]] void fail_line(const std::string& file, std::size_t line, const std::string& what) {
  throw Error(file, line, what);
}

PairedHistory pair(const std::string& file, const std::vector<Event>& events) {
  PairedHistory history;
  history.timed = !events.empty() && std::all_of(events.begin(), events.end(), [](const Event& e) { return e.time.has_value(); });
  std::map<std::int64_t, std::size_t> in_flight;  // process -> index into ops
  for (const Event& event : events) {
    const lin::Time at = history.timed ? *event.time : static_cast<lin::Time>(event.line);
    const auto found = in_flight.find(event.process);
    if (event.type == EventType::Invoke) {
      if (found != in_flight.end()) {
        fail_line(file, event.line, fmt::format("process {} invokes :{} while its invocation on line {} has no response "
                                                "yet; expected :ok, :fail or :info for it first",
                                                event.process, event.f, history.ops[found->second].invoke->line));
      }
      in_flight.emplace(event.process, history.ops.size());
      history.ops.push_back(Paired{&event, nullptr, at, lin::kNever});
      continue;
    }
    if (found == in_flight.end()) {
      if (event.type == EventType::Info) continue;  // Jepsen logs an :info with no invocation for a crashed worker
      fail_line(file, event.line, fmt::format("a response (:{} :{}) of process {} without an invocation; expected an "
                                              ":invoke of that process before it", name_of(event.type), event.f, event.process));
    }
    Paired& paired = history.ops[found->second];
    in_flight.erase(found);
    if (event.f != paired.invoke->f) {
      fail_line(file, event.line, fmt::format("a response :{} to the invocation :{} on line {}; expected :{}", event.f,
                                              paired.invoke->f, paired.invoke->line, paired.invoke->f));
    }
    if (event.key.has_value() && event.key != paired.invoke->key) {
      fail_line(file, event.line, fmt::format("the response names key \"{}\", its invocation on line {} key \"{}\"",
                                              *event.key, paired.invoke->line, paired.invoke->key.value_or("")));
    }
    if (at < paired.invoked_at) {
      fail_line(file, event.line, fmt::format(":time {} is before its invocation's ({}, line {})", at, paired.invoked_at,
                                              paired.invoke->line));
    }
    paired.completion = &event;
    paired.completed_at = at;
  }
  return history;
}

// ---------------------------------------------------------------- the model, from the ops' names

struct Family {
  ModelKind model;
  std::set<std::string_view> names;
};

ModelKind model_from_ops(const std::string& file, const std::vector<Event>& events, Format format) {
  const ModelKind registers = format == Format::JepsenLog ? ModelKind::EtcdRegister : ModelKind::CasRegister;
  static const std::vector<Family> kFamilies{
      {ModelKind::MultiRegister, {"txn"}},
      {ModelKind::Mutex, {"acquire", "release"}},
      {ModelKind::TotalQueue, {"enqueue", "dequeue", "drain"}},
      {ModelKind::Set, {"add"}},
      {ModelKind::Kv, {"get", "put", "append"}},
      {ModelKind::CasRegister, {"read", "write", "cas"}},
  };
  std::set<std::string_view> names;
  for (const Event& event : events) names.insert(event.f);
  for (const Family& family : kFamilies) {
    const bool uses = std::any_of(family.names.begin(), family.names.end(), [&](std::string_view name) { return names.count(name) != 0; });
    if (!uses) continue;
    const bool read_ok = family.model == ModelKind::Set || family.model == ModelKind::CasRegister;
    for (const Event& event : events) {
      if (family.names.count(event.f) == 0 && !(read_ok && event.f == "read")) {
        fail_line(file, event.line, fmt::format("the op :{} does not belong to the {} ops seen (:{}); one file holds one "
                                                "model's ops: name the model with --model", event.f,
                                                to_string(family.model == ModelKind::CasRegister ? registers : family.model),
                                                *family.names.begin()));
      }
    }
    return family.model == ModelKind::CasRegister ? registers : family.model;
  }
  // No op of any model: guessing one would name only its ops, so every model's are listed.
  if (!events.empty()) {
    const Event& first = events.front();
    throw Error(file, first.f_line, first.f_column,
                fmt::format("unknown operation :{}; allowed: :read, :write, :cas (register), :get, :put, :append (kv), "
                            ":txn (multi-register), :acquire, :release (mutex), :add (set), :enqueue, :dequeue, "
                            ":drain (queues); or name the model with --model", first.f));
  }
  return registers;  // no client ops
}

// ---------------------------------------------------------------- converting paired ops per model

struct Where {
  const std::string& file;
  std::size_t line;
  [[noreturn]] void fail(const Value& value, const std::string& what) const {
    if (line != 0 && value.line != 0) throw Error(file, value.line, value.column, what);
    throw Error(file, line, what);
  }
};

std::int64_t integer(const Where& where, const Value& value, std::string_view what) {
  if (value.type != Value::Type::Int) {
    where.fail(value, fmt::format("{} is {}; expected an integer (register models hold 64-bit integers)", what, edn::show(value)));
  }
  return value.integer;
}

template <class Input, class Output>
struct Converted {
  lin::Operation<Input, Output> op;
  OpOrigin origin;
  std::vector<std::string> keys;  // key names; ids are given once every name is known
};

template <class Input, class Output>
Converted<Input, Output> converted(const Paired& paired) {
  Converted<Input, Output> out;
  out.op.client = static_cast<std::uint32_t>(paired.invoke->process);
  out.op.invoked_at = paired.invoked_at;
  out.origin.invoke_line = paired.invoke->line;
  if (paired.completion != nullptr) out.origin.return_line = paired.completion->line;
  out.keys = {paired.invoke->key.value_or("")};
  return out;
}

bool answered(const Paired& paired) { return paired.completion != nullptr && paired.completion->type == EventType::Ok; }
bool failed(const Paired& paired) { return paired.completion != nullptr && paired.completion->type == EventType::Fail; }

std::optional<Converted<RegisterInput, RegisterOutput>> register_op(const std::string& file, const Paired& paired, ModelKind model) {
  const Event& invoke = *paired.invoke;
  const Where where{file, invoke.line};
  auto out = converted<RegisterInput, RegisterOutput>(paired);
  RegisterInput& input = out.op.input;
  const bool cas_allowed = model != ModelKind::Register;
  if (invoke.f == "read") {
    input.kind = RegisterOpKind::Read;
  } else if (invoke.f == "write") {
    input.kind = RegisterOpKind::Write;
    input.value = integer(where, invoke.value, "the value of a write");
  } else if (invoke.f == "cas" && cas_allowed) {
    input.kind = RegisterOpKind::Cas;
    if (!invoke.value.sequential() || invoke.value.items.size() != 2) {
      where.fail(invoke.value, fmt::format("the value of a cas is {}; expected [FROM TO]", edn::show(invoke.value)));
    }
    input.value = integer(where, invoke.value.items[0], "FROM of a cas");
    input.to = integer(where, invoke.value.items[1], "TO of a cas");
  } else {
    throw Error(file, invoke.line, fmt::format("unknown operation :{} for the {} model; allowed: :read, :write{}", invoke.f,
                                               to_string(model), cas_allowed ? ", :cas" : " (:cas needs cas-register)"));
  }
  if (failed(paired)) {
    // Porcupine's etcd reading: the compare found another value. Knossos's: it did not happen.
    if (model != ModelKind::EtcdRegister || input.kind != RegisterOpKind::Cas) return std::nullopt;
    out.op.output = RegisterOutput{true, std::nullopt, false};
    out.op.returned_at = paired.completed_at;
    return out;
  }
  if (!answered(paired)) return out;  // :info or no response: unknown outcome
  out.op.returned_at = paired.completed_at;
  if (input.kind == RegisterOpKind::Read) {
    const Value& read = paired.completion->value;
    const Where at{file, paired.completion->line};
    if (read.type == Value::Type::Nil) {
      out.op.output = model == ModelKind::EtcdRegister ? RegisterOutput{true, std::nullopt, true} : RegisterOutput{false, std::nullopt, true};
    } else {
      out.op.output.value = integer(at, read, "the value a read returned");
    }
  }
  return out;
}

std::optional<Converted<KvInput, KvOutput>> kv_op(const std::string& file, const Paired& paired) {
  const Event& invoke = *paired.invoke;
  const Where where{file, invoke.line};
  auto string = [](const Where& at, const Value& value, const std::string& what) {
    if (value.type == Value::Type::String) return value.text;
    if (value.type == Value::Type::Int) return std::to_string(value.integer);
    at.fail(value, fmt::format("{} is {}; expected a string", what, edn::show(value)));
  };
  if (!invoke.key.has_value()) throw Error(file, invoke.line, "a key-value op without :key");
  auto out = converted<KvInput, KvOutput>(paired);
  if (invoke.f == "get") {
    out.op.input.kind = KvOpKind::Get;
  } else if (invoke.f == "put" || invoke.f == "append") {
    out.op.input.kind = invoke.f == "put" ? KvOpKind::Put : KvOpKind::Append;
    out.op.input.value = string(where, invoke.value, "the value of a " + invoke.f);
  } else {
    throw Error(file, invoke.line, fmt::format("unknown operation :{} for the kv model; allowed: :get, :put, :append", invoke.f));
  }
  if (failed(paired)) return std::nullopt;
  if (!answered(paired)) return out;
  out.op.returned_at = paired.completed_at;
  if (out.op.input.kind == KvOpKind::Get) {
    const Value& got = paired.completion->value;
    out.op.output = KvOutput{true, got.type == Value::Type::Nil ? "" : string(Where{file, paired.completion->line}, got, "the value a get returned")};
  }
  return out;
}

// The value that completes an op: the :ok response's, else the invocation's.
const Value& completed_value(const Paired& paired) {
  return answered(paired) ? paired.completion->value : paired.invoke->value;
}

void object_txn(const std::string& file, const Paired& paired, Converted<ObjectInput, ObjectOutput>& out) {
  const Value& txn = completed_value(paired);
  const Where where{file, answered(paired) ? paired.completion->line : paired.invoke->line};
  if (!txn.sequential()) where.fail(txn, fmt::format("the value of a txn is {}; expected [[:read K V] [:write K V] ...]", edn::show(txn)));
  out.keys.clear();
  for (const Value& micro : txn.items) {
    if (!micro.sequential() || micro.items.size() != 3 || micro.items[0].type != Value::Type::Keyword ||
        (micro.items[0].text != "read" && micro.items[0].text != "write")) {
      where.fail(micro, fmt::format("a txn step is {}; expected [:read K V] or [:write K V]", edn::show(micro)));
    }
    ObjectMicroOp step;
    step.write = micro.items[0].text == "write";
    step.key_name = edn::canonical(micro.items[1]);
    step.any = !step.write && micro.items[2].type == Value::Type::Nil;
    step.value = edn::canonical(micro.items[2]);
    out.keys.push_back(step.key_name);
    out.op.input.txn.push_back(std::move(step));
  }
  if (out.keys.empty()) where.fail(txn, "an empty txn; expected at least one [:read K V] or [:write K V]");
}

std::optional<Converted<ObjectInput, ObjectOutput>> object_op(const std::string& file, const Paired& paired, ModelKind model) {
  const Event& invoke = *paired.invoke;
  if (failed(paired)) return std::nullopt;
  auto out = converted<ObjectInput, ObjectOutput>(paired);
  if (answered(paired)) out.op.returned_at = paired.completed_at;
  ObjectInput& input = out.op.input;
  const std::string& f = invoke.f;
  const Value& value = completed_value(paired);
  auto allowed = [&](std::string_view names) {
    return Error(file, invoke.line, fmt::format("unknown operation :{} for the {} model; allowed: {}", f, to_string(model), names));
  };
  switch (model) {
    case ModelKind::Mutex:
      if (f != "acquire" && f != "release") throw allowed(":acquire, :release");
      input.kind = f == "acquire" ? ObjectOpKind::Acquire : ObjectOpKind::Release;
      break;
    case ModelKind::Set:
      if (f == "add") {
        input.kind = ObjectOpKind::Add;
        input.value = edn::canonical(invoke.value);
      } else if (f == "read") {
        input.kind = ObjectOpKind::ReadSet;
        if (answered(paired)) {
          if (value.type != Value::Type::Set && !value.sequential()) {
            Where{file, paired.completion->line}.fail(value, fmt::format("a set read returned {}; expected #{{...}}", edn::show(value)));
          }
          for (const Value& element : value.items) input.elements.push_back(edn::canonical(element));
          std::sort(input.elements.begin(), input.elements.end());
          input.elements.erase(std::unique(input.elements.begin(), input.elements.end()), input.elements.end());
        }
      } else {
        throw allowed(":add, :read");
      }
      break;
    case ModelKind::UnorderedQueue:
    case ModelKind::FifoQueue:
      input.fifo = model == ModelKind::FifoQueue;
      if (f == "enqueue") {
        input.kind = ObjectOpKind::Enqueue;
        input.value = edn::canonical(invoke.value);
      } else if (f == "dequeue") {
        input.kind = ObjectOpKind::Dequeue;
        input.known = value.type != Value::Type::Nil;
        input.value = edn::canonical(value);
      } else {
        throw allowed(":enqueue, :dequeue");
      }
      break;
    case ModelKind::MultiRegister:
      if (f != "txn") throw allowed(":txn");
      input.kind = ObjectOpKind::Txn;
      object_txn(file, paired, out);
      break;
    default: throw std::logic_error("object_op: not an object model");
  }
  return out;
}

// ---------------------------------------------------------------- assembling a history

// Gives key ids in sorted order of names and adds the initial writes (one per key, before every operation).
template <class Input, class Output, class MakeInitial>
History<Input, Output> assemble(std::vector<Converted<Input, Output>> ops, bool timed, const MakeInitial& initial) {
  History<Input, Output> history;
  history.timed = timed;
  std::set<std::string> names;
  lin::Time first = lin::kNever;
  for (const auto& op : ops) {
    names.insert(op.keys.begin(), op.keys.end());
    first = std::min(first, op.op.invoked_at);
  }
  history.key_names.assign(names.begin(), names.end());
  auto id_of = [&history](const std::string& name) {
    return static_cast<std::uint64_t>(std::lower_bound(history.key_names.begin(), history.key_names.end(), name) -
                                      history.key_names.begin());
  };
  for (std::size_t id = 0; id < history.key_names.size(); ++id) {
    std::optional<lin::Operation<Input, Output>> write = initial(history.key_names[id], id);
    if (!write) break;
    write->keys = {id};
    write->invoked_at = write->returned_at = first == lin::kNever ? 0 : first - 1;
    history.ops.push_back(std::move(*write));
    history.origins.push_back(OpOrigin{});
  }
  for (auto& op : ops) {
    std::vector<std::uint64_t> ids;
    for (const std::string& name : op.keys) ids.push_back(id_of(name));
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    op.op.keys = std::move(ids);
    if constexpr (std::is_same_v<Input, ObjectInput>) {
      for (ObjectMicroOp& micro : op.op.input.txn) micro.key = id_of(micro.key_name);
    }
    history.ops.push_back(std::move(op.op));
    history.origins.push_back(op.origin);
  }
  return history;
}

std::optional<Value> initial_value(const std::string& file, const Options& options) {
  if (!options.initial) return std::nullopt;
  const std::string where = "--initial";
  edn::Reader reader(where, *options.initial);
  if (reader.at_end()) throw Error(file, 0, "--initial is empty; expected an EDN value such as 0 or nil");
  Value value = reader.read();
  if (!reader.at_end()) throw Error(file, 0, fmt::format("--initial {}: one EDN value expected", *options.initial));
  return value;
}

RegisterHistory register_history(const std::string& file, const PairedHistory& paired, ModelKind model, const Options& options) {
  std::vector<Converted<RegisterInput, RegisterOutput>> ops;
  for (const Paired& op : paired.ops) {
    if (auto converted_op = register_op(file, op, model)) ops.push_back(std::move(*converted_op));
  }
  const std::optional<Value> initial = initial_value(file, options);
  std::optional<std::int64_t> start;
  if (initial && initial->type != Value::Type::Nil) start = integer(Where{file, 0}, *initial, "--initial");
  return assemble(std::move(ops), paired.timed, [&](const std::string&, std::uint64_t) -> std::optional<RegisterOperation> {
    if (!start) return std::nullopt;
    RegisterOperation write;
    write.input = RegisterInput{RegisterOpKind::Write, *start, 0};
    return write;
  });
}

KvHistory kv_history(const std::string& file, const PairedHistory& paired, const Options& options) {
  if (options.initial) throw Error(file, 0, "--initial: the kv model starts every key empty; allowed with --initial: register, cas-register, etcd-register, multi-register");
  std::vector<Converted<KvInput, KvOutput>> ops;
  for (const Paired& op : paired.ops) {
    if (auto converted_op = kv_op(file, op)) ops.push_back(std::move(*converted_op));
  }
  return assemble(std::move(ops), paired.timed, [](const std::string&, std::uint64_t) -> std::optional<KvOperation> { return std::nullopt; });
}

ObjectHistory object_history(const std::string& file, const PairedHistory& paired, ModelKind model, const Options& options) {
  const std::optional<Value> initial = initial_value(file, options);
  if (initial && model != ModelKind::MultiRegister) {
    throw Error(file, 0, fmt::format("--initial: the {} model starts empty; allowed with --initial: register, cas-register, "
                                     "etcd-register, multi-register", to_string(model)));
  }
  std::vector<Converted<ObjectInput, ObjectOutput>> ops;
  for (const Paired& op : paired.ops) {
    if (auto converted_op = object_op(file, op, model)) ops.push_back(std::move(*converted_op));
  }
  const std::string start = initial && initial->type != Value::Type::Nil ? edn::canonical(*initial) : "";
  return assemble(std::move(ops), paired.timed, [&](const std::string& name, std::uint64_t id) -> std::optional<ObjectOperation> {
    if (start.empty()) return std::nullopt;
    ObjectOperation write;
    write.input.kind = ObjectOpKind::Txn;
    write.input.txn.push_back(ObjectMicroOp{true, id, name, false, start});
    return write;
  });
}

QueueHistory queue_history(const std::string& file, const PairedHistory& paired, const Options& options) {
  if (options.initial) throw Error(file, 0, "--initial: the total-queue model starts empty");
  QueueHistory queue;
  for (const Paired& op : paired.ops) {
    const Event& invoke = *op.invoke;
    if (invoke.f != "enqueue" && invoke.f != "dequeue" && invoke.f != "drain") {
      throw Error(file, invoke.line, fmt::format("unknown operation :{} for the total-queue model; allowed: :enqueue, :dequeue, :drain", invoke.f));
    }
    if (invoke.f == "enqueue") queue.attempted.push_back({edn::canonical(invoke.value), invoke.line});
    if (!answered(op)) continue;
    const Event& done = *op.completion;
    if (invoke.f == "enqueue") {
      queue.enqueued.push_back({edn::canonical(invoke.value), done.line});
    } else if (invoke.f == "dequeue") {
      if (done.value.type != Value::Type::Nil) queue.dequeued.push_back({edn::canonical(done.value), done.line});
    } else {
      if (done.value.type != Value::Type::Nil && done.value.type != Value::Type::Set && !done.value.sequential()) {
        Where{file, done.line}.fail(done.value, fmt::format("a drain returned {}; expected a collection of values", edn::show(done.value)));
      }
      for (const Value& element : done.value.items) queue.dequeued.push_back({edn::canonical(element), done.line});
    }
  }
  return queue;
}

Events events_of(const std::string& file, std::string_view text, Format format) {
  if (format == Format::JepsenEdn) return edn_events(file, text);
  if (format == Format::JepsenLog || format == Format::JepsenTxt) return tab_events(file, text, format == Format::JepsenLog);
  throw std::logic_error("history: not a Jepsen format");
}

AnyHistory read_model(const std::string& file, const PairedHistory& paired, ModelKind model, const Options& options) {
  switch (model) {
    case ModelKind::Register:
    case ModelKind::CasRegister:
    case ModelKind::EtcdRegister: return register_history(file, paired, model, options);
    case ModelKind::Kv: return kv_history(file, paired, options);
    case ModelKind::TotalQueue: return queue_history(file, paired, options);
    case ModelKind::MultiRegister:
    case ModelKind::Mutex:
    case ModelKind::Set:
    case ModelKind::UnorderedQueue:
    case ModelKind::FifoQueue: return object_history(file, paired, model, options);
    default: throw std::logic_error("read_jepsen: not a Jepsen model");
  }
}

}  // namespace

void check_utf8(const std::string& file, std::string_view text) {
  std::size_t line = 1;
  std::size_t line_start = 0;
  for (std::size_t index = 0; index < text.size();) {
    const auto byte = static_cast<unsigned char>(text[index]);
    if (byte == '\n') {
      ++line;
      line_start = index + 1;
    }
    std::size_t length = byte < 0x80 ? 1 : (byte >> 5) == 0x6 ? 2 : (byte >> 4) == 0xE ? 3 : (byte >> 3) == 0x1E ? 4 : 0;
    bool valid = length != 0 && index + length <= text.size() && byte != 0xC0 && byte != 0xC1 && byte <= 0xF4;
    for (std::size_t next = 1; valid && next < length; ++next) valid = (static_cast<unsigned char>(text[index + next]) >> 6) == 0x2;
    if (!valid) {
      throw Error(file, line, index - line_start + 1, fmt::format("byte 0x{:02X} is not valid UTF-8; expected UTF-8 text", byte));
    }
    index += length;
  }
}

namespace detail {

AnyHistory read_jepsen(const std::string& file, std::string_view text, const Options& options) {
  Events events = events_of(file, text, options.format);
  if (events.client.empty() && events.skipped == 0) throw Error(file, 0, "no operations found; expected Jepsen op lines");
  split_independent(events.client, options.independent);
  ModelKind model = options.model == ModelKind::Auto ? model_from_ops(file, events.client, options.format) : options.model;
  const PairedHistory paired = pair(file, events.client);
  AnyHistory history = read_model(file, paired, model, options);
  std::visit([model](auto& h) { h.model = model; }, history);
  return history;
}

}  // namespace detail

Format detect_format(const std::string& file, std::string_view text) {
  text = without_bom(text);
  if (blank(text)) throw Error(file, 0, "the file is empty; expected a history (one operation or event per line)");
  const auto lines = lines_of(text);
  for (std::string_view line : lines) {
    const std::size_t first = line.find_first_not_of(" \t\r\f\v,");
    if (first == std::string_view::npos || line[first] == ';') continue;
    line.remove_prefix(first);
    if (line.substr(0, 2) == "{\"") return Format::Lethe;
    if (line[0] == '{' || line[0] == '[' || line[0] == '(' || line[0] == '#') return Format::JepsenEdn;
    if (line.find("jepsen.util - ") != std::string_view::npos) return Format::JepsenLog;
    if (txt_line(line)) return Format::JepsenTxt;
    break;
  }
  for (std::string_view line : lines) {  // a log may open with other loggers' lines
    if (line.find("jepsen.util - ") != std::string_view::npos) return Format::JepsenLog;
  }
  throw Error(file, 0, "cannot tell the format: expected lethe JSON lines ({\"client\": ...}), Jepsen EDN op maps "
                       "({:type ...}), Jepsen log lines (jepsen.util - ...) or Jepsen's history.txt "
                       "(PROCESS<TAB>:TYPE<TAB>:F<TAB>VALUE); name it with --format");
}

ModelKind model_of(const AnyHistory& history) {
  return std::visit([](const auto& h) { return h.model; }, history);
}

AnyHistory read_history(const std::string& file, std::string_view text, const Options& options) {
  check_utf8(file, text);
  text = without_bom(text);
  Options resolved = options;
  if (resolved.format == Format::Auto) resolved.format = detect_format(file, text);
  if (resolved.format == Format::Lethe) {
    if (resolved.model != ModelKind::Auto && resolved.model != ModelKind::Store) {
      throw Error(file, 0, fmt::format("the lethe format holds store operations; --model {} needs a Jepsen history "
                                       "(allowed with this file: store)", to_string(resolved.model)));
    }
    if (resolved.initial) throw Error(file, 0, "--initial: the store model starts empty (allowed with Jepsen histories)");
    return detail::read_lethe(file, text);
  }
  if (resolved.model == ModelKind::Store) {
    throw Error(file, 0, fmt::format("the store model reads the lethe format, this file is {}; allowed models: register, "
                                     "cas-register, etcd-register, kv, multi-register, mutex, set, unordered-queue, "
                                     "fifo-queue, total-queue", to_string(resolved.format)));
  }
  return detail::read_jepsen(file, text, resolved);
}

}  // namespace lethe::history
