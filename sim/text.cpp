#include "sim/text.hpp"

namespace lethe::text {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

char closing_of(char open) { return open == '(' ? ')' : open == '[' ? ']' : '}'; }

}  // namespace

std::string_view trim(std::string_view text) {
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

std::optional<std::vector<std::string>> split_top_level(std::string_view text) {
  std::vector<std::string> parts;
  std::string open;  // the closing brackets awaited, innermost last
  char quote = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '(' || c == '[' || c == '{') {
      open += closing_of(c);
    } else if (c == ')' || c == ']' || c == '}') {
      if (open.empty() || open.back() != c) return std::nullopt;
      open.pop_back();
    } else if (c == ',' && open.empty()) {
      parts.emplace_back(trim(text.substr(start, i - start)));
      start = i + 1;
    }
  }
  if (quote != 0 || !open.empty()) return std::nullopt;
  parts.emplace_back(trim(text.substr(start)));
  return parts;
}

}  // namespace lethe::text
