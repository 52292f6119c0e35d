// Jepsen EDN histories and Jepsen log lines (check/history.hpp).
#include <algorithm>
#include <charconv>
#include <fmt/format.h>
#include <map>
#include <memory>
#include <set>

#include "check/history.hpp"

namespace lethe::history {

Error::Error(const std::string& file, std::size_t line, const std::string& what)
    : std::runtime_error(line == 0 ? fmt::format("{}: {}", file, what) : fmt::format("{}:{}: {}", file, line, what)),
      file_(file),
      line_(line) {}

std::string_view to_string(Format format) {
  switch (format) {
    case Format::Auto: return "auto";
    case Format::Lethe: return "lethe";
    case Format::JepsenEdn: return "jepsen-edn";
    case Format::JepsenLog: return "jepsen-log";
  }
  return "?";
}

std::string_view to_string(ModelKind model) {
  switch (model) {
    case ModelKind::Auto: return "auto";
    case ModelKind::Store: return "store";
    case ModelKind::Register: return "register";
    case ModelKind::Kv: return "kv";
  }
  return "?";
}

namespace {

// ---------------------------------------------------------------- a small EDN reader (one form at a time)

struct Edn {
  enum class Type { Nil, Bool, Int, String, Keyword, Symbol, Vector, Map };
  Type type = Type::Nil;
  bool boolean = false;
  std::int64_t integer = 0;
  std::string text;         // String, Keyword (without ':'), Symbol
  std::vector<Edn> items;   // Vector; Map: key, value, key, value, ...

  static Edn of(Type type) {
    Edn value;
    value.type = type;
    return value;
  }
  const Edn* get(std::string_view keyword) const {
    for (std::size_t index = 0; index + 1 < items.size(); index += 2) {
      if (items[index].type == Type::Keyword && items[index].text == keyword) return &items[index + 1];
    }
    return nullptr;
  }
};

std::string show(const Edn& value) {
  switch (value.type) {
    case Edn::Type::Nil: return "nil";
    case Edn::Type::Bool: return value.boolean ? "true" : "false";
    case Edn::Type::Int: return std::to_string(value.integer);
    case Edn::Type::String: return "\"" + value.text + "\"";
    case Edn::Type::Keyword: return ":" + value.text;
    case Edn::Type::Symbol: return value.text;
    case Edn::Type::Vector:
    case Edn::Type::Map: {
      std::string text = value.type == Edn::Type::Vector ? "[" : "{";
      for (std::size_t index = 0; index < value.items.size(); ++index) {
        text += (index == 0 ? "" : " ") + show(value.items[index]);
      }
      return text + (value.type == Edn::Type::Vector ? "]" : "}");
    }
  }
  return "?";
}

class EdnReader {
 public:
  EdnReader(const std::string& file, std::size_t line, std::string_view text) : file_(file), line_(line), text_(text) {}

  Edn read() {
    skip();
    if (at_end()) fail("the line ends where a value was expected");
    const char c = text_[pos_];
    if (c == '{' || c == '[') return read_collection(c);
    if (c == '"') return read_string();
    if (c == ':') {
      ++pos_;
      Edn value = Edn::of(Edn::Type::Keyword);
      value.text = read_token();
      if (value.text.empty()) fail("an empty keyword");
      return value;
    }
    if (c == '#') {  // a tagged literal (#jepsen.history.Op{...}): the tag is dropped
      ++pos_;
      read_token();
      return read();
    }
    if (c == '}' || c == ']' || c == ')') fail(fmt::format("an unexpected '{}'", c));
    const std::string token = read_token();
    if (token.empty()) fail(fmt::format("an unexpected '{}'", c));
    if (token == "nil") return Edn{};
    if (token == "true" || token == "false") {
      Edn value = Edn::of(Edn::Type::Bool);
      value.boolean = token == "true";
      return value;
    }
    if (std::isdigit(static_cast<unsigned char>(token[0])) != 0 ||
        ((token[0] == '-' || token[0] == '+') && token.size() > 1)) {
      Edn value = Edn::of(Edn::Type::Int);
      std::string_view digits = token;
      if (digits.front() == '+') digits.remove_prefix(1);
      if (!digits.empty() && digits.back() == 'N') digits.remove_suffix(1);  // EDN big-int suffix
      const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value.integer);
      if (error != std::errc() || end != digits.data() + digits.size()) {
        fail(fmt::format("\"{}\" is not an integer in range (floats and ratios are not op values here)", token));
      }
      return value;
    }
    Edn value = Edn::of(Edn::Type::Symbol);
    value.text = token;
    return value;
  }

  void skip() {
    while (!at_end() && (std::isspace(static_cast<unsigned char>(text_[pos_])) != 0 || text_[pos_] == ',')) ++pos_;
  }
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return text_[pos_]; }
  void advance() { ++pos_; }
  std::string_view rest() const { return text_.substr(pos_); }

  [[noreturn]] void fail(const std::string& what) const { throw Error(file_, line_, what); }

 private:
  Edn read_collection(char open) {
    const char close = open == '{' ? '}' : ']';
    ++pos_;
    Edn value = Edn::of(open == '{' ? Edn::Type::Map : Edn::Type::Vector);
    while (true) {
      skip();
      if (at_end()) fail(fmt::format("truncated: the line ends before the closing '{}'", close));
      if (text_[pos_] == close) {
        ++pos_;
        break;
      }
      value.items.push_back(read());
    }
    if (value.type == Edn::Type::Map && value.items.size() % 2 != 0) fail("a map with a key and no value");
    return value;
  }

  Edn read_string() {
    ++pos_;
    Edn value = Edn::of(Edn::Type::String);
    while (true) {
      if (at_end()) fail("truncated: the line ends inside a string (expected a closing '\"')");
      const char c = text_[pos_++];
      if (c == '"') break;
      if (c == '\\') {
        if (at_end()) fail("truncated: the line ends inside a string escape");
        const char escaped = text_[pos_++];
        value.text += escaped == 'n' ? '\n' : escaped == 't' ? '\t' : escaped == 'r' ? '\r' : escaped;
        continue;
      }
      value.text += c;
    }
    return value;
  }

  std::string read_token() {
    const std::size_t begin = pos_;
    while (!at_end()) {
      const char c = text_[pos_];
      if (std::isspace(static_cast<unsigned char>(c)) != 0 || c == ',' || c == '{' || c == '}' || c == '[' ||
          c == ']' || c == '(' || c == ')' || c == '"') {
        break;
      }
      ++pos_;
    }
    return std::string(text_.substr(begin, pos_ - begin));
  }

  const std::string& file_;
  std::size_t line_;
  std::string_view text_;
  std::size_t pos_ = 0;
};

// ---------------------------------------------------------------- events, whichever the format

enum class EventType { Invoke, Ok, Fail, Info };

struct Event {
  std::size_t line = 0;
  std::int64_t process = 0;
  EventType type = EventType::Invoke;
  std::string f;
  Edn value;
  std::optional<std::string> key;
  std::optional<std::int64_t> time;
};

EventType event_type(const EdnReader& reader, const Edn& value) {
  if (value.type == Edn::Type::Keyword) {
    if (value.text == "invoke") return EventType::Invoke;
    if (value.text == "ok") return EventType::Ok;
    if (value.text == "fail") return EventType::Fail;
    if (value.text == "info") return EventType::Info;
  }
  reader.fail(fmt::format(":type is {}; allowed: :invoke, :ok, :fail, :info", show(value)));
}

std::string key_text(const EdnReader& reader, const Edn& value) {
  if (value.type == Edn::Type::String || value.type == Edn::Type::Keyword) return value.text;
  if (value.type == Edn::Type::Int) return std::to_string(value.integer);
  reader.fail(fmt::format(":key is {}; expected a string or an integer", show(value)));
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

// One op map per line; a history written as one EDN vector ("[{...}\n {...}]") is read the same way.
std::vector<Event> edn_events(const std::string& file, std::string_view text) {
  std::vector<Event> events;
  const auto lines = lines_of(text);
  for (std::size_t index = 0; index < lines.size(); ++index) {
    const std::size_t number = index + 1;
    EdnReader reader(file, number, lines[index]);
    reader.skip();
    while (!reader.at_end() && (reader.peek() == '[' || reader.peek() == ']')) {
      reader.advance();
      reader.skip();
    }
    if (reader.at_end() || reader.peek() == ';') continue;  // blank, the vector's brackets, or a comment
    if (reader.peek() != '{') reader.fail("expected an op map {:type ... :f ... :process ...}");
    const Edn op = reader.read();
    reader.skip();
    while (!reader.at_end() && reader.peek() == ']') {
      reader.advance();
      reader.skip();
    }
    if (!reader.at_end()) reader.fail(fmt::format("text after the op map: \"{}\"; expected one map per line",
                                                  std::string(reader.rest())));
    const Edn* type = op.get("type");
    const Edn* f = op.get("f");
    const Edn* process = op.get("process");
    if (type == nullptr) reader.fail("the op map has no :type; expected :invoke, :ok, :fail or :info");
    if (f == nullptr) reader.fail("the op map has no :f (the operation)");
    if (process == nullptr) reader.fail("the op map has no :process");
    if (process->type == Edn::Type::Keyword) continue;  // :nemesis and other non-client processes
    if (process->type != Edn::Type::Int) reader.fail(fmt::format(":process is {}; expected an integer", show(*process)));
    if (f->type != Edn::Type::Keyword && f->type != Edn::Type::String) {
      reader.fail(fmt::format(":f is {}; expected a keyword such as :read", show(*f)));
    }
    Event event;
    event.line = number;
    event.process = process->integer;
    event.type = event_type(reader, *type);
    event.f = f->text;
    if (const Edn* value = op.get("value")) event.value = *value;
    if (const Edn* key = op.get("key")) event.key = key_text(reader, *key);
    if (const Edn* time = op.get("time")) {
      if (time->type != Edn::Type::Int) reader.fail(fmt::format(":time is {}; expected nanoseconds", show(*time)));
      event.time = time->integer;
    }
    events.push_back(std::move(event));
  }
  return events;
}

// "INFO  jepsen.util - 3\t:invoke\t:cas\t[1 2]": lines of other loggers are skipped.
std::vector<Event> log_events(const std::string& file, std::string_view text) {
  std::vector<Event> events;
  const auto lines = lines_of(text);
  constexpr std::string_view kMarker = "jepsen.util - ";
  for (std::size_t index = 0; index < lines.size(); ++index) {
    const std::size_t number = index + 1;
    const std::size_t marker = lines[index].find(kMarker);
    if (marker == std::string_view::npos) continue;
    EdnReader reader(file, number, lines[index].substr(marker + kMarker.size()));
    const Edn process = reader.read();
    if (process.type == Edn::Type::Keyword) continue;  // :nemesis
    if (process.type != Edn::Type::Int) {
      reader.fail(fmt::format("the process is {}; expected an integer (\"jepsen.util - PROCESS :TYPE :F VALUE\")",
                              show(process)));
    }
    reader.skip();
    if (reader.at_end()) reader.fail("truncated: expected :TYPE :F VALUE after the process");
    const Edn type = reader.read();
    reader.skip();
    if (reader.at_end()) reader.fail("truncated: expected :F VALUE after the type");
    const Edn f = reader.read();
    if (f.type != Edn::Type::Keyword) reader.fail(fmt::format("the operation is {}; expected a keyword such as :read", show(f)));
    reader.skip();
    if (reader.at_end()) reader.fail("truncated: expected a VALUE after the operation (nil when it has none)");
    Event event;
    event.line = number;
    event.process = process.integer;
    event.type = event_type(reader, type);
    event.f = f.text;
    event.value = reader.read();
    reader.skip();
    if (!reader.at_end()) reader.fail(fmt::format("text after the value: \"{}\"", std::string(reader.rest())));
    events.push_back(std::move(event));
  }
  return events;
}

std::vector<Event> events_of(const std::string& file, std::string_view text, Format format) {
  if (format == Format::JepsenEdn) return edn_events(file, text);
  if (format == Format::JepsenLog) return log_events(file, text);
  throw std::logic_error("history: not a Jepsen format");
}

// ---------------------------------------------------------------- pairing invocations with responses

template <class Input, class Output>
struct Converter {
  // The op's input from its invocation; throws Error (via reader.fail) on a value of the wrong shape.
  virtual Input input(const EdnReader& reader, const Event& invoke) const = 0;
  virtual Output output(const EdnReader& reader, const Event& response, const Input& input) const = 0;
  // A :fail response: the output it stands for, or nullopt when the op is dropped (it did not apply).
  virtual std::optional<Output> failed(const Input& input) const = 0;
  virtual ~Converter() = default;
};

template <class Input, class Output>
History<Input, Output> pair_events(const std::string& file, const std::vector<Event>& events,
                                   const Converter<Input, Output>& converter) {
  struct Pending {
    lin::Operation<Input, Output> op;
    OpOrigin origin;
    std::string key;
    bool dropped = false;
  };
  const bool timed = !events.empty() && std::all_of(events.begin(), events.end(), [](const Event& e) { return e.time.has_value(); });
  std::vector<Pending> ops;
  std::map<std::int64_t, std::size_t> in_flight;  // process -> index into ops
  for (const Event& event : events) {
    const EdnReader reader(file, event.line, "");
    const lin::Time at = timed ? *event.time : static_cast<lin::Time>(event.line);
    auto found = in_flight.find(event.process);
    if (event.type == EventType::Invoke) {
      if (found != in_flight.end()) {
        reader.fail(fmt::format("process {} invokes :{} while its invocation on line {} has no response yet; "
                                "expected :ok, :fail or :info for it first",
                                event.process, event.f, ops[found->second].origin.invoke_line));
      }
      Pending pending;
      pending.op.client = static_cast<std::uint32_t>(event.process);
      pending.op.invoked_at = at;
      pending.op.input = converter.input(reader, event);
      pending.origin.invoke_line = event.line;
      pending.key = event.key.value_or("");
      in_flight.emplace(event.process, ops.size());
      ops.push_back(std::move(pending));
      continue;
    }
    if (found == in_flight.end()) {
      reader.fail(fmt::format("a response (:{} :{}) of process {} without an invocation; expected an :invoke of "
                              "that process before it", event.type == EventType::Ok ? "ok" : event.type == EventType::Fail ? "fail" : "info",
                              event.f, event.process));
    }
    Pending& pending = ops[found->second];
    in_flight.erase(found);
    pending.origin.return_line = event.line;
    if (event.key.has_value() && *event.key != pending.key) {
      reader.fail(fmt::format("the response names key \"{}\", its invocation on line {} key \"{}\"", *event.key,
                              pending.origin.invoke_line, pending.key));
    }
    if (at < pending.op.invoked_at) {
      reader.fail(fmt::format(":time {} is before its invocation's ({}, line {})", at, pending.op.invoked_at,
                              pending.origin.invoke_line));
    }
    if (event.type == EventType::Info) continue;  // unknown outcome: returned_at stays kNever
    if (event.type == EventType::Fail) {
      auto output = converter.failed(pending.op.input);
      if (!output) {
        pending.dropped = true;
        continue;
      }
      pending.op.output = std::move(*output);
    } else {
      pending.op.output = converter.output(reader, event, pending.op.input);
    }
    pending.op.returned_at = at;
  }

  History<Input, Output> history;
  history.timed = timed;
  std::set<std::string> names;
  for (const Pending& pending : ops) names.insert(pending.key);
  history.key_names.assign(names.begin(), names.end());
  for (Pending& pending : ops) {
    if (pending.dropped) continue;
    const auto id = static_cast<std::uint64_t>(
        std::lower_bound(history.key_names.begin(), history.key_names.end(), pending.key) - history.key_names.begin());
    pending.op.keys = {id};
    history.ops.push_back(std::move(pending.op));
    history.origins.push_back(pending.origin);
  }
  return history;
}

std::int64_t integer(const EdnReader& reader, const Edn& value, std::string_view what) {
  if (value.type != Edn::Type::Int) reader.fail(fmt::format("{} is {}; expected an integer", what, show(value)));
  return value.integer;
}

// read / write / cas; the response's :f must be the invocation's.
class RegisterConverter final : public Converter<RegisterInput, RegisterOutput> {
 public:
  RegisterInput input(const EdnReader& reader, const Event& invoke) const override {
    RegisterInput input;
    if (invoke.f == "read") {
      input.kind = RegisterOpKind::Read;
    } else if (invoke.f == "write") {
      input.kind = RegisterOpKind::Write;
      input.value = integer(reader, invoke.value, "the value of a write");
    } else if (invoke.f == "cas") {
      input.kind = RegisterOpKind::Cas;
      if (invoke.value.type != Edn::Type::Vector || invoke.value.items.size() != 2) {
        reader.fail(fmt::format("the value of a cas is {}; expected [FROM TO]", show(invoke.value)));
      }
      input.value = integer(reader, invoke.value.items[0], "FROM of a cas");
      input.to = integer(reader, invoke.value.items[1], "TO of a cas");
    } else {
      reader.fail(fmt::format("unknown operation :{} for the register model; allowed: :read, :write, :cas", invoke.f));
    }
    return input;
  }
  RegisterOutput output(const EdnReader& reader, const Event& response, const RegisterInput& input) const override {
    check_f(reader, response.f, input.kind);
    if (input.kind != RegisterOpKind::Read) return RegisterOutput{};
    RegisterOutput output;
    if (response.value.type != Edn::Type::Nil) output.value = integer(reader, response.value, "the value a read returned");
    return output;
  }
  std::optional<RegisterOutput> failed(const RegisterInput& input) const override {
    if (input.kind != RegisterOpKind::Cas) return std::nullopt;
    return RegisterOutput{true, std::nullopt, false};
  }

 private:
  static void check_f(const EdnReader& reader, const std::string& f, RegisterOpKind kind) {
    const char* expected = kind == RegisterOpKind::Read ? "read" : kind == RegisterOpKind::Write ? "write" : "cas";
    if (f != expected) reader.fail(fmt::format("a response :{} to an invocation :{}", f, expected));
  }
};

class KvConverter final : public Converter<KvInput, KvOutput> {
 public:
  KvInput input(const EdnReader& reader, const Event& invoke) const override {
    if (!invoke.key.has_value()) reader.fail("a key-value op without :key");
    KvInput input;
    if (invoke.f == "get") {
      input.kind = KvOpKind::Get;
    } else if (invoke.f == "put" || invoke.f == "append") {
      input.kind = invoke.f == "put" ? KvOpKind::Put : KvOpKind::Append;
      input.value = string(reader, invoke.value, "the value of a " + invoke.f);
    } else {
      reader.fail(fmt::format("unknown operation :{} for the key-value model; allowed: :get, :put, :append", invoke.f));
    }
    return input;
  }
  KvOutput output(const EdnReader& reader, const Event& response, const KvInput& input) const override {
    const char* expected = input.kind == KvOpKind::Get ? "get" : input.kind == KvOpKind::Put ? "put" : "append";
    if (response.f != expected) reader.fail(fmt::format("a response :{} to an invocation :{}", response.f, expected));
    if (input.kind != KvOpKind::Get) return KvOutput{};
    return KvOutput{true, response.value.type == Edn::Type::Nil ? "" : string(reader, response.value, "the value a get returned")};
  }
  std::optional<KvOutput> failed(const KvInput&) const override { return std::nullopt; }

 private:
  static std::string string(const EdnReader& reader, const Edn& value, const std::string& what) {
    if (value.type == Edn::Type::String) return value.text;
    if (value.type == Edn::Type::Int) return std::to_string(value.integer);
    reader.fail(fmt::format("{} is {}; expected a string", what, show(value)));
  }
};

}  // namespace

namespace detail {

ModelKind jepsen_model(const std::string& file, std::string_view text, Format format) {
  static const std::set<std::string> kRegister{"read", "write", "cas"};
  static const std::set<std::string> kKv{"get", "put", "append"};
  std::optional<std::pair<ModelKind, std::size_t>> seen;
  for (const Event& event : events_of(file, text, format)) {
    ModelKind kind = ModelKind::Auto;
    if (kRegister.count(event.f) != 0) kind = ModelKind::Register;
    if (kKv.count(event.f) != 0) kind = ModelKind::Kv;
    if (kind == ModelKind::Auto) {
      throw Error(file, event.line, fmt::format("unknown operation :{}; allowed: :read, :write, :cas (register), "
                                                ":get, :put, :append (kv)", event.f));
    }
    if (!seen) {
      seen.emplace(kind, event.line);
    } else if (seen->first != kind) {
      throw Error(file, event.line,
                  fmt::format("a {} op (:{}) after {} ops (line {}); one file holds one model's ops", to_string(kind),
                              event.f, to_string(seen->first), seen->second));
    }
  }
  if (!seen) throw Error(file, 0, "no operations found; expected Jepsen op lines");
  return seen->first;
}

RegisterHistory read_jepsen_register(const std::string& file, std::string_view text, Format format) {
  return pair_events(file, events_of(file, text, format), RegisterConverter{});
}

KvHistory read_jepsen_kv(const std::string& file, std::string_view text, Format format) {
  return pair_events(file, events_of(file, text, format), KvConverter{});
}

}  // namespace detail

Format detect_format(const std::string& file, std::string_view text) {
  if (blank(text)) throw Error(file, 0, "the file is empty; expected a history (one operation or event per line)");
  for (std::string_view line : lines_of(text)) {
    if (blank(line)) continue;
    const std::size_t first = line.find_first_not_of(" \t");
    if (line.substr(first, 2) == "{\"") return Format::Lethe;
    if (line[first] == '{' || line[first] == '[') return Format::JepsenEdn;
    if (line.find("jepsen.util - ") != std::string_view::npos) return Format::JepsenLog;
    break;
  }
  for (std::string_view line : lines_of(text)) {  // a log may open with other loggers' lines
    if (line.find("jepsen.util - ") != std::string_view::npos) return Format::JepsenLog;
  }
  throw Error(file, 0, "cannot tell the format: expected lethe JSON lines ({\"client\": ...}), Jepsen EDN op maps "
                       "({:type ...}) or Jepsen log lines (jepsen.util - ...); name it with --format");
}

AnyHistory read_history(const std::string& file, std::string_view text, Format format, ModelKind model) {
  if (format == Format::Auto) format = detect_format(file, text);
  if (format == Format::Lethe) {
    if (model != ModelKind::Auto && model != ModelKind::Store) {
      throw Error(file, 0, fmt::format("the lethe format holds store operations; --model {} needs a Jepsen history "
                                       "(allowed with this file: store)", to_string(model)));
    }
    return detail::read_lethe(file, text);
  }
  if (model == ModelKind::Store) {
    throw Error(file, 0, fmt::format("the store model reads the lethe format, this file is {}; allowed models: "
                                     "register, kv", to_string(format)));
  }
  if (model == ModelKind::Auto) model = detail::jepsen_model(file, text, format);
  if (model == ModelKind::Register) return detail::read_jepsen_register(file, text, format);
  return detail::read_jepsen_kv(file, text, format);
}

}  // namespace lethe::history
