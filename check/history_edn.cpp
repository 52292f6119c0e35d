// The EDN reader (check/history_edn.hpp).
#include "check/history_edn.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>
#include <optional>

#include "check/history.hpp"

namespace lethe::history::edn {

const Value* Value::get(std::string_view keyword) const {
  if (type != Type::Map) return nullptr;
  for (std::size_t index = 0; index + 1 < items.size(); index += 2) {
    if (items[index].type == Type::Keyword && items[index].text == keyword) return &items[index + 1];
  }
  return nullptr;
}

namespace {

std::string edn_quoted(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string atom_text(const Value& value) {
  switch (value.type) {
    case Value::Type::Nil: return "nil";
    case Value::Type::Bool: return value.boolean ? "true" : "false";
    case Value::Type::Int: return std::to_string(value.integer);
    case Value::Type::BigInt:
    case Value::Type::Float:
    case Value::Type::Symbol: return value.text;
    case Value::Type::String: return edn_quoted(value.text);
    case Value::Type::Char: return "\\" + value.text;
    case Value::Type::Keyword: return ":" + value.text;
    default: return "";
  }
}

std::string_view opener(Value::Type type) {
  switch (type) {
    case Value::Type::List: return "(";
    case Value::Type::Vector: return "[";
    case Value::Type::Set: return "#{";
    default: return "{";
  }
}

char closer(Value::Type type) {
  switch (type) {
    case Value::Type::List: return ')';
    case Value::Type::Vector: return ']';
    default: return '}';
  }
}

bool collection(const Value& value) {
  return value.type == Value::Type::List || value.type == Value::Type::Vector || value.type == Value::Type::Set ||
         value.type == Value::Type::Map;
}

// Appends `value` to `out` with an explicit stack; stops once `out` passes `limit` bytes.
void print(const Value& value, std::string& out, std::size_t limit, bool sort_sets) {
  struct Item {
    const Value* value;
    std::size_t next;  // next child to print
    std::vector<std::string> sorted;
  };
  std::vector<Item> stack;
  auto open = [&](const Value& v) {
    if (!v.tag.empty()) out += "#" + v.tag + " ";
    if (!collection(v)) {
      out += atom_text(v);
      return;
    }
    out += opener(v.type);
    Item item{&v, 0, {}};
    if (sort_sets && v.type == Value::Type::Set) {
      for (const Value& element : v.items) item.sorted.push_back(canonical(element));
      std::sort(item.sorted.begin(), item.sorted.end());
    }
    stack.push_back(std::move(item));
  };
  open(value);
  while (!stack.empty() && out.size() <= limit) {
    Item& top = stack.back();
    if (top.next == top.value->items.size()) {
      out += closer(top.value->type);
      stack.pop_back();
      continue;
    }
    if (top.next > 0) out += top.value->type == Value::Type::Map && top.next % 2 == 0 ? ", " : " ";
    const std::size_t index = top.next++;
    if (!top.sorted.empty()) {
      out += top.sorted[index];
      continue;
    }
    open(top.value->items[index]);
  }
}

}  // namespace

std::string show(const Value& value, std::size_t limit) {
  std::string out;
  print(value, out, limit, false);
  if (out.size() > limit) {
    std::size_t cut = limit;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
    out.resize(cut);
    out += "...";
  }
  return out;
}

std::string canonical(const Value& value) {
  std::string out;
  print(value, out, SIZE_MAX - 1, true);
  return out;
}

// ---------------------------------------------------------------- the reader

struct Reader::Frame {
  Value value;      // the collection being read (Type::Nil for a pending tag or discard)
  char close = 0;   // its closing bracket; 0: a tag or discard waiting for its one form
  bool discard = false;
  std::string tag;  // a tag waiting for its form
};

Reader::Reader(const std::string& file, std::string_view text, std::size_t first_line)
    : file_(file), text_(text), line_(first_line) {}

void Reader::fail(const std::string& what) const { fail_at(line_, column(), what); }

void Reader::fail_at(std::size_t line, std::size_t column, const std::string& what) const {
  throw Error(file_, line, column, what);
}

void Reader::advance() {
  if (text_[pos_] == '\n') {
    ++line_;
    line_start_ = pos_ + 1;
  }
  ++pos_;
}

void Reader::skip_blank() {
  while (pos_ < text_.size()) {
    const char c = text_[pos_];
    if (c == ';') {
      while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      continue;
    }
    if (c != ',' && c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v') return;
    advance();
  }
}

bool Reader::at_end() {
  while (true) {
    skip_blank();
    if (pos_ + 1 < text_.size() && text_[pos_] == '#' && text_[pos_ + 1] == '_') {
      advance();
      advance();
      skip_blank();
      if (pos_ >= text_.size()) fail("the text ends after #_; expected a form to discard");
      if (discarding_ >= kMaxDepth) fail(fmt::format("#_ discards nested deeper than {} levels", kMaxDepth));
      ++discarding_;
      (void)read();
      --discarding_;  // not restored when read() throws: the reader is done then
      continue;
    }
    return pos_ >= text_.size();
  }
}

std::string_view Reader::read_token() {
  const std::size_t begin = pos_;
  while (pos_ < text_.size()) {
    const char c = text_[pos_];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == '{' || c == '}' || c == '[' || c == ']' ||
        c == '(' || c == ')' || c == '"' || c == ';') {
      break;
    }
    ++pos_;
  }
  return text_.substr(begin, pos_ - begin);
}

namespace {

void append_utf8(std::string& out, std::uint32_t code) {
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else if (code < 0x800) {
    out += static_cast<char>(0xC0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else {
    out += static_cast<char>(0xE0 | (code >> 12));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  }
}

}  // namespace

Value Reader::read_string() {
  Value value;
  value.type = Value::Type::String;
  const std::size_t line = line_;
  const std::size_t col = column();
  advance();
  while (true) {
    if (pos_ >= text_.size()) fail_at(line, col, "unclosed string: the text ends before its closing '\"'");
    const char c = text_[pos_];
    advance();
    if (c == '"') return value;
    if (c != '\\') {
      value.text += c;
      continue;
    }
    if (pos_ >= text_.size()) fail_at(line, col, "unclosed string: the text ends inside an escape");
    const char escaped = text_[pos_];
    advance();
    switch (escaped) {
      case 'n': value.text += '\n'; break;
      case 't': value.text += '\t'; break;
      case 'r': value.text += '\r'; break;
      case 'b': value.text += '\b'; break;
      case 'f': value.text += '\f'; break;
      case '"': value.text += '"'; break;
      case '\\': value.text += '\\'; break;
      case 'u': {
        std::uint32_t code = 0;
        const auto [end, error] = std::from_chars(text_.data() + pos_, text_.data() + std::min(pos_ + 4, text_.size()), code, 16);
        if (error != std::errc() || end != text_.data() + pos_ + 4) fail("\\u in a string; expected four hex digits");
        for (int i = 0; i < 4; ++i) advance();
        append_utf8(value.text, code);
        break;
      }
      default: fail(fmt::format("unknown string escape \\{}; allowed: \\n \\t \\r \\b \\f \\\" \\\\ \\uXXXX", escaped));
    }
  }
}

Value Reader::read_char() {
  Value value;
  value.type = Value::Type::Char;
  advance();  // the backslash
  if (pos_ >= text_.size()) fail("the text ends after \\; expected a character");
  const std::size_t begin = pos_;
  advance();
  (void)read_token();
  value.text = std::string(text_.substr(begin, pos_ - begin));
  return value;
}

Value Reader::read_number_or_symbol(std::string_view token, std::size_t line, std::size_t col) {
  Value value;
  if (token == "nil") return value;
  if (token == "true" || token == "false") {
    value.type = Value::Type::Bool;
    value.boolean = token == "true";
    return value;
  }
  const bool numeric = std::isdigit(static_cast<unsigned char>(token[0])) != 0 ||
                       ((token[0] == '-' || token[0] == '+') && token.size() > 1 &&
                        std::isdigit(static_cast<unsigned char>(token[1])) != 0);
  if (!numeric) {
    value.type = Value::Type::Symbol;
    value.text = std::string(token);
    return value;
  }
  std::string_view digits = token;
  if (digits.front() == '+') digits.remove_prefix(1);
  const bool big = digits.back() == 'N';
  if (big) digits.remove_suffix(1);
  std::int64_t integer = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), integer);
  if (end == digits.data() + digits.size()) {
    if (error == std::errc()) {
      value.type = Value::Type::Int;
      value.integer = integer;
      return value;
    }
    if (!big) fail_at(line, col, fmt::format("the integer {} is beyond 64 bits; write it with an N suffix for a big integer", token));
    value.type = Value::Type::BigInt;
    value.text = std::string(token);
    return value;
  }
  if (token.find('/') != std::string_view::npos) {  // a ratio: kept as written
    value.type = Value::Type::Symbol;
    value.text = std::string(token);
    return value;
  }
  std::string_view number = token;
  if (number.back() == 'M') number.remove_suffix(1);
  const std::string copy(number);
  char* parsed_end = nullptr;
  errno = 0;
  const double parsed = std::strtod(copy.c_str(), &parsed_end);
  if (parsed_end != copy.c_str() + copy.size()) fail_at(line, col, fmt::format("\"{}\" is not a number", std::string(token.substr(0, 64))));
  if (errno == ERANGE && std::isinf(parsed)) {
    fail_at(line, col, fmt::format("the number {} is beyond the range of a 64-bit float", std::string(token.substr(0, 64))));
  }
  value.type = Value::Type::Float;
  value.text = std::string(token);
  return value;
}

Value Reader::read_atom() {
  const char c = text_[pos_];
  if (c == '"') return read_string();
  if (c == '\\') return read_char();
  if (c == ':') {
    advance();
    Value value;
    value.type = Value::Type::Keyword;
    value.text = std::string(read_token());
    if (value.text.empty()) fail("an empty keyword: ':' must be followed by a name");
    return value;
  }
  const std::size_t line = line_;
  const std::size_t col = column();
  const std::string_view token = read_token();
  if (token.empty()) fail(fmt::format("an unexpected '{}'", c));
  return read_number_or_symbol(token, line, col);
}

void Reader::finish(Frame& frame) {
  if (frame.value.type == Value::Type::Map && frame.value.items.size() % 2 != 0) {
    fail_at(frame.value.line, frame.value.column, "a map with a key and no value");
  }
}

Value Reader::read() {
  std::vector<Frame> stack;
  while (true) {
    if (at_end()) {
      if (stack.empty()) fail("the text ends where a value was expected");
      const Frame& open = stack.back();
      if (open.close == 0) fail(fmt::format("the text ends after the tag #{}; expected its value", open.tag));
      fail_at(open.value.line, open.value.column,
              fmt::format("unclosed '{}': the text ends before its closing '{}'", opener(open.value.type), open.close));
    }
    const std::size_t line = line_;
    const std::size_t col = column();
    const char c = text_[pos_];
    std::optional<Value> done;
    if (c == ')' || c == ']' || c == '}') {
      if (stack.empty() || stack.back().close == 0) fail(fmt::format("an unexpected '{}'", c));
      if (stack.back().close != c) {
        const Frame& open = stack.back();
        fail(fmt::format("'{}' closes the '{}' opened at {}:{}; expected '{}'", c, opener(open.value.type),
                         open.value.line, open.value.column, open.close));
      }
      advance();
      finish(stack.back());
      done = std::move(stack.back().value);
      stack.pop_back();
    } else if (c == '(' || c == '[' || c == '{' || (c == '#' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '{')) {
      if (stack.size() >= kMaxDepth) fail(fmt::format("values nested deeper than {} levels", kMaxDepth));
      Frame frame;
      frame.value.type = c == '(' ? Value::Type::List : c == '[' ? Value::Type::Vector : c == '{' ? Value::Type::Map : Value::Type::Set;
      frame.value.line = line;
      frame.value.column = col;
      frame.close = c == '(' ? ')' : c == '[' ? ']' : '}';
      if (c == '#') advance();
      advance();
      stack.push_back(std::move(frame));
      continue;
    } else if (c == '#' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '#') {
      advance();
      advance();
      Value value;
      value.type = Value::Type::Float;
      value.text = "##" + std::string(read_token());
      if (value.text != "##Inf" && value.text != "##-Inf" && value.text != "##NaN") {
        fail(fmt::format("unknown symbolic value {}; allowed: ##Inf, ##-Inf, ##NaN", value.text.substr(0, 64)));
      }
      done = std::move(value);
    } else if (c == '#') {
      advance();
      const std::string_view tag = read_token();
      if (tag.empty() || std::isalpha(static_cast<unsigned char>(tag[0])) == 0) {
        fail("'#' must start a set #{...}, a tag #name, ##Inf or a discard #_");
      }
      if (stack.size() >= kMaxDepth) fail(fmt::format("values nested deeper than {} levels", kMaxDepth));
      Frame frame;
      frame.tag = std::string(tag);
      stack.push_back(std::move(frame));
      continue;
    } else {
      done = read_atom();
    }
    if (c != ')' && c != ']' && c != '}') {  // a collection keeps where it opened
      done->line = line;
      done->column = col;
    }
    // Hand the finished value to the frames waiting for it.
    while (true) {
      if (stack.empty()) return std::move(*done);
      Frame& top = stack.back();
      if (top.close != 0) {
        top.value.items.push_back(std::move(*done));
        break;
      }
      done->tag = std::move(top.tag);
      stack.pop_back();
    }
  }
}

}  // namespace lethe::history::edn
