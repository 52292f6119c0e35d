// scenario/input_check.hpp — limits on scenario text, checked before toml++ parses it.
//
// toml++ recurses once per part of a dotted key or table header and per nested inline table or array, so
// a key of 40,000 parts overflows the stack. check_scenario_input scans the text once, linearly, with a
// small lexer that knows only where comments, strings, keys and values are (it does not validate TOML:
// that is toml++'s job afterwards), and refuses what lethe's scenarios never need:
//   - more than kMaxScenarioBytes of text (loader.hpp),
//   - a key or table header of more than kMaxKeyParts dotted parts, or of more than kMaxKeyBytes bytes,
//   - arrays and inline tables nested more than kMaxValueNesting deep,
//   - an array of more than kMaxListEntries entries, or more than kMaxListEntries [[tables]] of one name
//     (toml++ and the loader would hold every entry; 4 MiB of "a," is two million of them),
//   - text that is not well-formed UTF-8, control characters but tab and line breaks, and non-ASCII
//     characters outside strings and comments (TOML 1.0 allows none there).
// The limits bound toml++'s recursion to about kMaxKeyParts * (kMaxValueNesting + 2) levels.
//
// Guarantees: returns the first problem in file order (its line, column and byte offset, the pseudo-key
// for the message, and the message text "found ...; allowed: ..."), or nullopt. A list over kMaxListEntries
// is reported at its start ('[' or its [[header]] line) under its key as written (the table's header text,
// a dot, the key's text: "topology.processors"), the other limits under the pseudo-key "scenario". Throws nothing but
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
inline constexpr std::size_t kMaxListEntries = 10'000;  // processors, tags, [[network.partition]], ...

// "found more than 10000 entries in a list; allowed: at most 10000 entries": the loader's message for a list
// over kMaxListEntries, whichever way it was written (a TOML array, [[tables]], a --set "a,b,...").
std::string too_many_list_entries();

struct InputProblem {
  // Limit: over a limit above; NotUtf8: a byte outside well-formed UTF-8 or a control character; Misplaced: a
  // non-ASCII character outside strings and comments.
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
