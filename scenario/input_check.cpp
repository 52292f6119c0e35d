#include "scenario/input_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <vector>

#include "scenario/loader.hpp"
#include "sim/text.hpp"

namespace scenario {
namespace {

std::string too_many_parts() {
  return fmt::format("found a key of more than {} dotted parts; allowed: at most {} parts in a key or table header",
                     kMaxKeyParts, kMaxKeyParts);
}

std::string too_long_key() {
  return fmt::format("found a key of more than {} bytes; allowed: keys of at most {} bytes", kMaxKeyBytes,
                     kMaxKeyBytes);
}

// The offset of the first byte that does not belong to a well-formed UTF-8 sequence (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF), or npos.
std::size_t first_invalid_utf8(std::string_view text) {
  std::size_t at = 0;
  while (at < text.size()) {
    const auto lead = static_cast<unsigned char>(text[at]);
    std::size_t length = lead < 0x80 ? 1 : lead >= 0xC2 && lead <= 0xDF ? 2 : lead >= 0xE0 && lead <= 0xEF ? 3
                                      : lead >= 0xF0 && lead <= 0xF4   ? 4
                                                                       : 0;
    if (length == 0 || at + length > text.size()) return at;
    // The second byte's range depends on the first byte (this is where overlong forms and surrogates are excluded).
    unsigned char low = 0x80;
    unsigned char high = 0xBF;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
    for (std::size_t i = 1; i < length; ++i) {
      const auto byte = static_cast<unsigned char>(text[at + i]);
      if (byte < (i == 1 ? low : 0x80) || byte > (i == 1 ? high : 0xBF)) return at;
    }
    at += length;
  }
  return std::string_view::npos;
}

// Outside strings and comments TOML 1.0 allows only ASCII; the scan refuses anything else there with its
// byte offset, a clearer message than the parser's. Strings and comments keep any text.
bool is_ascii(char c) { return (static_cast<unsigned char>(c) & 0x80) == 0; }

// One pass over the text. Where the scan is: at the start of a line, in a key (of a key/value pair, a table
// header or an inline table), or in a value.
class Scanner {
 public:
  explicit Scanner(std::string_view text) : text_(text) {}

  std::optional<InputProblem> run() {
    if (text_.size() > kMaxScenarioBytes) {
      return problem(0, fmt::format("found {} bytes of scenario text; allowed: at most {} bytes", text_.size(),
                                    kMaxScenarioBytes));
    }
    if (std::size_t bad = first_invalid_utf8(text_); bad != std::string_view::npos) {
      for (at_ = 0; at_ < bad; ++at_) {
        if (text_[at_] == '\n') count_newline(at_);
      }
      return problem(bad, fmt::format("found byte 0x{:02X} at byte offset {}, which is not UTF-8; allowed: UTF-8 "
                                      "text (TOML 1.0)",
                                      static_cast<unsigned char>(text_[bad]), bad),
                     "toml", InputProblem::Kind::NotUtf8);
    }
    // TOML 1.0 allows no control character but tab and line breaks anywhere, and toml++ 3.3.0 assumes
    // (undefined behaviour otherwise) that a table header holds none: refuse them before it looks.
    for (std::size_t i = 0; i < text_.size(); ++i) {
      const auto byte = static_cast<unsigned char>(text_[i]);
      if (text_[i] == '\n') count_newline(i);
      if ((byte < 0x20 && byte != '\t' && byte != '\n' && byte != '\r') || byte == 0x7F) {
        return problem(i, fmt::format("found control character U+{:04X} at byte offset {}; allowed: no control "
                                      "character but tab and line breaks (TOML 1.0)",
                                      byte, i),
                       "toml", InputProblem::Kind::NotUtf8);
      }
    }
    line_ = 1;
    line_start_ = 0;
    if (text_.substr(0, 3) == "\xEF\xBB\xBF") at_ = 3;  // a byte order mark, which toml++ skips
    while (at_ < text_.size() && !found_) step();
    return found_;
  }

 private:
  enum class Mode { LineStart, Key, Header, Value };

  void step() {
    const char c = text_[at_];
    if (c == '#') return skip_comment();
    if (mode_ == Mode::Value && !nesting_.empty() && c != ' ' && c != '\t' && c != '\r' && c != '\n' && c != ']' &&
        c != '}' && c != ',' && !count_entry()) {
      return;
    }
    if ((c == '"' || c == '\'') && opens_string()) return skip_string(c);
    if (!is_ascii(c)) {
      found_ = non_ascii(at_, "outside a string or comment; allowed: ASCII outside strings and comments (TOML 1.0)");
      return;
    }
    if (c != ' ' && c != '\t' && c != '\r') last_ = c;
    if (c == '\n') {
      ++at_;
      ++line_;
      line_start_ = at_;
      if (nesting_.empty()) mode_ = Mode::LineStart;
      return;
    }
    switch (mode_) {
      case Mode::LineStart: return at_line_start(c);
      case Mode::Key:
      case Mode::Header: return in_key(c);
      case Mode::Value: return in_value(c);
    }
  }

  void at_line_start(char c) {
    if (c == ' ' || c == '\t' || c == '\r') {
      ++at_;
      return;
    }
    if (c == '[') {
      ++at_;
      if (at_ < text_.size() && text_[at_] == '[') ++at_;
      start_key(Mode::Header);
      return;
    }
    start_key(Mode::Key);
  }

  void start_key(Mode mode) {
    mode_ = mode;
    parts_ = 1;
    key_start_ = std::string_view::npos;
    name_start_ = at_;
  }

  // A key (before its '=') or a table header (before its ']') ends: remember its text for messages, and
  // count the [[tables]] of each name.
  void end_key() {
    std::string name(lethe::text::trim(text_.substr(name_start_, at_ - name_start_)));
    if (mode_ == Mode::Header) {
      const bool array_of_tables = name_start_ >= 2 && text_.substr(name_start_ - 2, 2) == "[[";
      table_ = name;
      if (array_of_tables && ++tables_of_name_[name] > kMaxListEntries) {
        found_ = problem(name_start_ - 2, too_many_list_entries(), name);
      }
      return;
    }
    if (nesting_.empty()) key_ = table_.empty() ? name : table_ + "." + name;
  }

  void in_key(char c) {
    if (key_start_ == std::string_view::npos && c != ' ' && c != '\t') key_start_ = at_;
    if (c == '.' && ++parts_ > kMaxKeyParts) {
      found_ = problem(at_, too_many_parts());
      return;
    }
    if (key_start_ != std::string_view::npos && at_ - key_start_ >= kMaxKeyBytes) {
      found_ = problem(key_start_, too_long_key());
      return;
    }
    if ((mode_ == Mode::Key && c == '=') || (mode_ == Mode::Header && c == ']')) {
      end_key();
      if (found_) return;
      mode_ = Mode::Value;
    }
    if (mode_ == Mode::Key && c == '}' && !nesting_.empty()) {  // an empty inline table
      nesting_.pop_back();
      mode_ = Mode::Value;
    }
    ++at_;
  }

  void in_value(char c) {
    if (c == '{' || c == '[') {
      nesting_.push_back({c, 0, true, at_, line_, line_start_});
      if (nesting_.size() > kMaxValueNesting) {
        found_ = problem(at_, fmt::format("found arrays or inline tables nested more than {} deep; allowed: at "
                                          "most {} levels",
                                          kMaxValueNesting, kMaxValueNesting));
        return;
      }
      ++at_;
      if (c == '{') start_key(Mode::Key);
      return;
    }
    if ((c == ']' || c == '}') && !nesting_.empty()) nesting_.pop_back();
    if (c == ',' && !nesting_.empty() && nesting_.back().open == '{') {
      ++at_;
      start_key(Mode::Key);
      return;
    }
    if (c == ',' && !nesting_.empty()) nesting_.back().expecting = true;
    ++at_;
  }

  // At the first character of a value inside an array: one more entry (a trailing comma starts none). An array
  // over the limit is reported where it starts, which may be lines above.
  bool count_entry() {
    Open& list = nesting_.back();
    if (list.open != '[' || !list.expecting) return true;
    list.expecting = false;
    if (++list.entries <= kMaxListEntries) return true;
    line_ = list.line;
    line_start_ = list.line_start;
    found_ = problem(list.offset, too_many_list_entries(), key_);
    return false;
  }

  // A quote begins a string only where TOML has one: a key part (at a line's start, after '.', '[', '{' or ',')
  // or a value (after '=', '[' or ','). Elsewhere (`-"x"`, `a"b"`) toml++ reads it as part of a bare word, so
  // the scan keeps treating what follows as outside a string.
  bool opens_string() const { return std::string_view("\n=[{,.").find(last_) != std::string_view::npos; }

  void skip_comment() {
    while (at_ < text_.size() && text_[at_] != '\n') ++at_;
  }

  // A string of either quote, single- or multi-line (which may end in up to two extra quotes); in a key it
  // counts towards the key's length like any other byte.
  void skip_string(char quote) {
    last_ = quote;
    if (mode_ == Mode::LineStart) start_key(Mode::Key);
    if (key_start_ == std::string_view::npos && mode_ != Mode::Value) key_start_ = at_;
    const std::string_view triple = quote == '"' ? "\"\"\"" : "'''";
    const bool multi_line = text_.substr(at_, 3) == triple;
    at_ += multi_line ? 3 : 1;
    while (at_ < text_.size()) {
      const char c = text_[at_];
      if (c == '\\' && quote == '"') {
        skip_escape();
        continue;
      }
      if (c == '\n') {
        if (!multi_line) return;  // unterminated: toml++ reports it
        count_newline(at_);
      }
      if (!multi_line && c == quote) {
        ++at_;
        return;
      }
      if (multi_line && text_.substr(at_, 3) == triple) {
        at_ += 3;
        for (int extra = 0; extra < 2 && at_ < text_.size() && text_[at_] == quote; ++extra) ++at_;
        return;
      }
      ++at_;
    }
  }

  // At a backslash in a basic string: moves past it and the character it escapes (an escaped quote does not
  // end the string), counting a line break there.
  void skip_escape() {
    const std::size_t next = at_ + 1;
    if (next < text_.size()) count_newline(next);
    at_ = std::min(next + 1, text_.size());
  }

  InputProblem non_ascii(std::size_t offset, std::string_view where) const {
    return problem(offset, fmt::format("found a non-ASCII character at byte offset {} {}", offset, where), "toml",
                   InputProblem::Kind::Misplaced);
  }

  void count_newline(std::size_t offset) {
    if (text_[offset] != '\n') return;
    ++line_;
    line_start_ = offset + 1;
  }

  InputProblem problem(std::size_t offset, std::string text, std::string key = "scenario",
                       InputProblem::Kind kind = InputProblem::Kind::Limit) const {
    // Columns count characters, as toml++'s do: every byte but UTF-8 continuation bytes.
    std::size_t start = std::min(line_start_, offset);
    auto column = 1 + std::count_if(text_.begin() + static_cast<std::ptrdiff_t>(start),
                                    text_.begin() + static_cast<std::ptrdiff_t>(offset),
                                    [](char byte) { return (static_cast<unsigned char>(byte) & 0xC0) != 0x80; });
    InputProblem found{kind, line_, static_cast<int>(column), offset, std::move(key), std::move(text)};
    return found;
  }

  std::string_view text_;
  std::size_t at_ = 0;
  int line_ = 1;
  std::size_t line_start_ = 0;
  Mode mode_ = Mode::LineStart;
  std::size_t parts_ = 1;
  std::size_t key_start_ = std::string_view::npos;
  struct Open {
    char open;           // '{' or '['
    std::size_t entries;  // of an array, so far
    bool expecting;       // after '[' or ',': the next value is one more entry
    std::size_t offset;  // of the bracket
    int line;            // and its line
    std::size_t line_start;
  };
  std::vector<Open> nesting_;  // the values open around the scan
  std::size_t name_start_ = 0;  // where the current key or header's text starts
  char last_ = '\n';            // the last character scanned that is not a space, tab or '\r' (a string: its quote)
  std::string table_;           // the last table header's text
  std::string key_;             // the last top-level key's path, as written
  std::map<std::string, std::size_t> tables_of_name_;  // [[NAME]] headers seen
  std::optional<InputProblem> found_;
};

}  // namespace

std::string too_many_list_entries() {
  return fmt::format("found more than {} entries in a list; allowed: at most {} entries", kMaxListEntries,
                     kMaxListEntries);
}

std::optional<InputProblem> check_scenario_input(std::string_view text) { return Scanner(text).run(); }

std::optional<std::string> check_override_key(std::string_view key) {
  if (key.size() > kMaxKeyBytes) return too_long_key();
  if (static_cast<std::size_t>(std::count(key.begin(), key.end(), '.')) + 1 > kMaxKeyParts) return too_many_parts();
  return std::nullopt;
}

}  // namespace scenario
