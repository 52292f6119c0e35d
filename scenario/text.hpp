// scenario/text.hpp — the small text languages of scenario values.
//
// Pure functions used by the scenario loader and renderer: rates ("50/s"),
// numbers, the call syntax of compound values ("lazy(max=48h)",
// "backoff(base=50ms, factor=1.5, cap=5s)"), key suggestions by edit distance,
// and quoting. Each parser takes the whole text and accepts nothing less:
// trailing garbage is an error. None of them throws.
//
// Does not: parse durations or distributions (sim/time.hpp, sim/distribution.hpp).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace scenario::text {

// A finite decimal number ("3", "-0.5", "1e-3"), the whole text; nullopt otherwise.
std::optional<double> parse_number(std::string_view text);

// A rate "N/UNIT" with N a finite non-negative number and UNIT one of ns us ms s m h d,
// as events per second; nullopt otherwise ("0/s" is 0).
std::optional<double> parse_rate_per_second(std::string_view text);

// `name(arg, key=value, ...)`. Arguments split at top-level commas (values may
// hold nested parentheses, e.g. "eventual(lag=uniform(1ms, 5ms))"); an
// argument without `=` at its top level is positional (empty key).
struct CallArgument {
  std::string key;  // "" for a positional argument
  std::string value;
};
struct Call {
  std::string name;
  std::vector<CallArgument> arguments;
};
std::optional<Call> parse_call(std::string_view text);

// Binds a call's arguments to `parameters` (all required): positional ones in
// order first, then named ones. On failure returns nullopt and says why in `problem`.
std::optional<std::vector<std::string>> bind_arguments(const Call& call, const std::vector<std::string>& parameters,
                                                       std::string& problem);

// Optimal-string-alignment edit distance (insert, delete, substitute, swap adjacent).
std::size_t edit_distance(std::string_view a, std::string_view b);

// Words longer than this get no suggestion: no scenario key or word is half as long, and the edit
// distance costs the product of the lengths (a huge unknown key would make loading quadratic).
inline constexpr std::size_t kMaxSuggestedWordLength = 64;

// The candidate nearest to `word` if it is near enough to be a likely typo; "" otherwise (always "" for a
// word longer than kMaxSuggestedWordLength). Candidates whose length differs by more than the edits allowed
// are skipped unmeasured, so the cost is linear in the number of candidates.
std::string nearest(std::string_view word, const std::vector<std::string>& candidates);

// A double written so that parse_number gives it back exactly (shortest form).
std::string format_number(double value);

// A TOML basic string, quotes included, with every character that needs it escaped.
std::string toml_quote(std::string_view text);

// Joins with `separator`.
std::string join(const std::vector<std::string>& parts, std::string_view separator);

}  // namespace scenario::text
