#include "scenario/input_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "scenario/loader.hpp"

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
    while (at_ < text_.size() && !found_) step();
    return found_;
  }

 private:
  enum class Mode { LineStart, Key, Header, Value };

  void step() {
    const char c = text_[at_];
    if (c == '#') return skip_comment();
    if (c == '"' || c == '\'') return skip_string(c);
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
    if ((mode_ == Mode::Key && c == '=') || (mode_ == Mode::Header && c == ']')) mode_ = Mode::Value;
    if (mode_ == Mode::Key && c == '}' && !nesting_.empty()) {  // an empty inline table
      nesting_.pop_back();
      mode_ = Mode::Value;
    }
    ++at_;
  }

  void in_value(char c) {
    if (c == '{' || c == '[') {
      nesting_.push_back(c);
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
    if (c == ',' && !nesting_.empty() && nesting_.back() == '{') {
      ++at_;
      start_key(Mode::Key);
      return;
    }
    ++at_;
  }

  void skip_comment() {
    while (at_ < text_.size() && text_[at_] != '\n') ++at_;
  }

  // A string of either quote, single- or multi-line (which may end in up to two extra quotes); in a key it
  // counts towards the key's length like any other byte.
  void skip_string(char quote) {
    if (mode_ == Mode::LineStart) start_key(Mode::Key);
    if (key_start_ == std::string_view::npos && mode_ != Mode::Value) key_start_ = at_;
    const std::string_view triple = quote == '"' ? "\"\"\"" : "'''";
    const bool multi_line = text_.substr(at_, 3) == triple;
    at_ += multi_line ? 3 : 1;
    while (at_ < text_.size()) {
      const char c = text_[at_];
      if (c == '\\' && quote == '"') {
        if (at_ + 1 < text_.size()) count_newline(at_ + 1);
        at_ += 2;
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

  void count_newline(std::size_t offset) {
    if (text_[offset] != '\n') return;
    ++line_;
    line_start_ = offset + 1;
  }

  InputProblem problem(std::size_t offset, std::string text) const {
    // Columns count characters, as toml++'s do: every byte but UTF-8 continuation bytes.
    std::size_t start = std::min(line_start_, offset);
    auto column = 1 + std::count_if(text_.begin() + static_cast<std::ptrdiff_t>(start),
                                    text_.begin() + static_cast<std::ptrdiff_t>(offset),
                                    [](char byte) { return (static_cast<unsigned char>(byte) & 0xC0) != 0x80; });
    return InputProblem{line_, static_cast<int>(column), offset, "scenario", std::move(text)};
  }

  std::string_view text_;
  std::size_t at_ = 0;
  int line_ = 1;
  std::size_t line_start_ = 0;
  Mode mode_ = Mode::LineStart;
  std::size_t parts_ = 1;
  std::size_t key_start_ = std::string_view::npos;
  std::vector<char> nesting_;  // '{' or '[' of the values open around the scan
  std::optional<InputProblem> found_;
};

}  // namespace

std::optional<InputProblem> check_scenario_input(std::string_view text) { return Scanner(text).run(); }

std::optional<std::string> check_override_key(std::string_view key) {
  if (key.size() > kMaxKeyBytes) return too_long_key();
  if (static_cast<std::size_t>(std::count(key.begin(), key.end(), '.')) + 1 > kMaxKeyParts) return too_many_parts();
  return std::nullopt;
}

}  // namespace scenario
