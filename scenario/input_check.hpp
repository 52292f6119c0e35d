// scenario/input_check.hpp — limits on scenario text, checked before toml++ parses it.
//
// toml++ recurses once per part of a dotted key or table header and per nested inline table or array, so
// a key of 40,000 parts overflows the stack. check_scenario_input scans the text once, linearly, with a
// small lexer that knows only where comments, strings, keys and values are (it does not validate TOML:
// that is toml++'s job afterwards), and refuses what lethe's scenarios never need:
//   - more than kMaxScenarioBytes of text (loader.hpp),
//   - a key or table header of more than kMaxKeyParts dotted parts, or of more than kMaxKeyBytes bytes,
//   - arrays and inline tables nested more than kMaxValueNesting deep,
//   - text that is not well-formed UTF-8, and non-ASCII characters where toml++ 3.3.0 has undefined
//     behaviour (outside strings and comments, where TOML 1.0 allows none anyway, and in a basic string
//     right after a backslash or first after a line-ending backslash).
// The limits bound toml++'s recursion to about kMaxKeyParts * (kMaxValueNesting + 2) levels.
//
// Guarantees: returns the first problem in file order (its line, column and byte offset, the pseudo-key
// for the message, and the message text "found ...; allowed: ..."), or nullopt. Throws nothing but
// std::bad_alloc. Does not: check anything toml++ checks itself, or the meaning of keys and values.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace scenario {

inline constexpr std::size_t kMaxKeyParts = 32;      // "a.b.c" has 3; lethe's deepest key has 3
inline constexpr std::size_t kMaxKeyBytes = 256;     // lethe's longest key path is under 40 bytes
inline constexpr std::size_t kMaxValueNesting = 32;  // lethe's values nest at most 2 deep

struct InputProblem {
  // Limit: over a limit above; NotUtf8: a byte outside well-formed UTF-8; Misplaced: a non-ASCII character
  // where toml++ 3.3.0 would test it for whitespace (see input_check.cpp).
  enum class Kind { Limit, NotUtf8, Misplaced };
  Kind kind = Kind::Limit;
  int line = 1;
  int column = 1;
  std::size_t byte_offset = 0;
  std::string key;   // "scenario": a lethe limit; "toml": text that is not TOML
  std::string text;  // "found ...; allowed: ..."
};

std::optional<InputProblem> check_scenario_input(std::string_view text);

// The key of a --set KEY=VALUE: its parts (split at '.') and its length within the same limits.
std::optional<std::string> check_override_key(std::string_view key);

}  // namespace scenario
