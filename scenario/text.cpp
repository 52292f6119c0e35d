#include "scenario/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>

#include "sim/text.hpp"

namespace scenario::text {

using lethe::text::trim;

std::optional<double> parse_number(std::string_view text) {
  if (text.empty()) return std::nullopt;
  // from_chars takes no leading '+', and would accept "inf"/"nan": keep to plain decimals.
  std::string_view digits = text;
  if (digits.front() == '+') digits.remove_prefix(1);
  if (digits.empty()) return std::nullopt;
  std::size_t start = digits.front() == '-' ? 1 : 0;
  if (start >= digits.size() || !(std::isdigit(static_cast<unsigned char>(digits[start])) || digits[start] == '.')) {
    return std::nullopt;
  }
  double value = 0.0;
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (error != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  if (!std::isfinite(value)) return std::nullopt;
  return value;
}

std::optional<double> parse_rate_per_second(std::string_view text) {
  std::size_t slash = text.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  std::optional<double> count = parse_number(trim(text.substr(0, slash)));
  if (!count || *count < 0) return std::nullopt;
  const std::string_view unit = trim(text.substr(slash + 1));
  double seconds_per_unit = 0.0;
  if (unit == "ns")
    seconds_per_unit = 1e-9;
  else if (unit == "us")
    seconds_per_unit = 1e-6;
  else if (unit == "ms")
    seconds_per_unit = 1e-3;
  else if (unit == "s")
    seconds_per_unit = 1.0;
  else if (unit == "m")
    seconds_per_unit = 60.0;
  else if (unit == "h")
    seconds_per_unit = 3600.0;
  else if (unit == "d")
    seconds_per_unit = 86400.0;
  else
    return std::nullopt;
  double per_second = *count / seconds_per_unit;
  if (!std::isfinite(per_second)) return std::nullopt;
  return per_second;
}

namespace {

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; }

}  // namespace

std::optional<Call> parse_call(std::string_view text) {
  const std::string whole(trim(text));
  std::size_t open = whole.find('(');
  if (open == std::string::npos || whole.empty() || whole.back() != ')') return std::nullopt;
  Call call;
  call.name = trim(std::string_view(whole).substr(0, open));
  if (call.name.empty() || !std::all_of(call.name.begin(), call.name.end(), is_name_char)) return std::nullopt;
  std::string_view inside = std::string_view(whole).substr(open + 1, whole.size() - open - 2);
  if (trim(inside).empty()) return call;
  std::optional<std::vector<std::string>> parts = lethe::text::split_top_level(inside);
  if (!parts) return std::nullopt;
  for (const std::string& part : *parts) {
    if (part.empty()) return std::nullopt;
    CallArgument argument;
    std::size_t equals = std::string::npos;
    int depth = 0;
    for (std::size_t i = 0; i < part.size() && equals == std::string::npos; ++i) {
      if (part[i] == '(') ++depth;
      if (part[i] == ')') --depth;
      if (part[i] == '=' && depth == 0) equals = i;
    }
    if (equals == std::string::npos) {
      argument.value = part;
    } else {
      argument.key = trim(std::string_view(part).substr(0, equals));
      argument.value = trim(std::string_view(part).substr(equals + 1));
      if (argument.key.empty() || argument.value.empty()) return std::nullopt;
    }
    call.arguments.push_back(std::move(argument));
  }
  return call;
}

std::optional<std::vector<std::string>> bind_arguments(const Call& call, const std::vector<std::string>& parameters,
                                                       std::string& problem) {
  std::vector<std::optional<std::string>> bound(parameters.size());
  std::size_t next_positional = 0;
  bool seen_named = false;
  for (const CallArgument& argument : call.arguments) {
    if (argument.key.empty()) {
      if (seen_named) {
        problem = fmt::format("positional argument `{}` after a named one", argument.value);
        return std::nullopt;
      }
      if (next_positional >= parameters.size()) {
        problem = fmt::format("too many arguments to {}()", call.name);
        return std::nullopt;
      }
      bound[next_positional++] = argument.value;
      continue;
    }
    seen_named = true;
    auto found = std::find(parameters.begin(), parameters.end(), argument.key);
    if (found == parameters.end()) {
      problem = fmt::format("{}() has no argument `{}`", call.name, argument.key);
      return std::nullopt;
    }
    std::size_t index = static_cast<std::size_t>(found - parameters.begin());
    if (bound[index]) {
      problem = fmt::format("argument `{}` given twice", argument.key);
      return std::nullopt;
    }
    bound[index] = argument.value;
  }
  std::vector<std::string> values;
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    if (!bound[i]) {
      problem = fmt::format("{}() needs `{}`", call.name, parameters[i]);
      return std::nullopt;
    }
    values.push_back(*bound[i]);
  }
  return values;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  // Three rows: the row before last is needed for adjacent swaps.
  std::vector<std::size_t> two_back(b.size() + 1), previous(b.size() + 1), current(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        current[j] = std::min(current[j], two_back[j - 2] + 1);
      }
    }
    two_back.swap(previous);
    previous.swap(current);
  }
  return previous[b.size()];
}

std::string nearest(std::string_view word, const std::vector<std::string>& candidates) {
  if (word.size() > kMaxSuggestedWordLength) return "";
  // A typo: at most a third of the word wrong, and never more than 3 edits (2 for short words).
  std::size_t allowed = std::clamp<std::size_t>(word.size() / 3, 2, 3);
  std::string best;
  std::size_t best_distance = SIZE_MAX;
  for (const std::string& candidate : candidates) {
    // The distance is at least the difference in length; such a candidate could never be chosen.
    if (candidate.size() > word.size() + allowed || word.size() > candidate.size() + allowed) continue;
    std::size_t distance = edit_distance(word, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  if (best_distance == 0 || best_distance > allowed || best_distance >= word.size()) return "";
  return best;
}

std::string format_number(double value) {
  std::string text = fmt::format("{}", value);
  bool plain_integer = std::all_of(text.begin(), text.end(),
                                   [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '-'; });
  if (plain_integer) text += ".0";
  return text;
}

std::string toml_quote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\t': out += "\\t"; break;
      case '\n': out += "\\n"; break;
      case '\f': out += "\\f"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          out += fmt::format("\\u{:04X}", static_cast<unsigned>(static_cast<unsigned char>(c)));
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += separator;
    out += parts[i];
  }
  return out;
}

}  // namespace scenario::text
