// scenario/loader.hpp — scenario files (TOML) to lethe::ScenarioConfig, and back.
//
// load_scenario parses a scenario file with toml++, applies `--set KEY=VALUE`
// overrides, and validates every key and value against the table of keys
// (scenario/schema.hpp, listed in docs/scenario-reference.md): types, ranges,
// enum words, the duration / rate / distribution languages, the required keys,
// the cross-field rules and the [expect] entries. It throws
// nothing and never falls back silently: either every key is valid and the
// config is returned, or the list of every error found (sorted by position;
// a TOML syntax error stops at the first) is returned.
//
// Error messages have one shape, so editors and CI logs can jump to them:
//     FILE:LINE:COL: KEY: what was found; what is allowed
// e.g. `s.toml:12:23: protocol.kind: found "mnemosine"; allowed: "none",
// ...` (the registered strategies). An unknown key suggests the nearest valid one
// ("did you mean `max_processing_time`?"). An error in a value given with
// --set starts with `--set KEY=VALUE: KEY:` instead of the file position. A
// TOML syntax error uses the pseudo-key `toml`.
//
// --set: KEY is a dotted key ("protocol.ttl", "network.partition[0].at",
// "expect.duplicates.expired"); VALUE is typed by the key's schema: numbers and
// booleans as in TOML, strings verbatim (quotes optional), string arrays as
// "a,b" or a TOML array "[\"a\", \"b\"]". An override goes through the same
// validation as the file. `network.partition[N]` / `sink.outage[N]` may name an
// existing entry, or N == the number of entries to add one.
//
// render_scenario_toml writes every field of a config as canonical TOML that
// load_scenario_text accepts back and that yields an equal config (positions,
// expectation lines and source_name aside). Empirical distributions are written
// as sim::Distribution::to_string() gives them.
//
// Does not: run anything, or read files other than the scenario and the
// `empirical(file=...)` files it names.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/config.hpp"

namespace scenario {

struct LoadError {
  std::string message;  // "FILE:LINE:COL: key: what was found; what is allowed"
};

using LoadResult = std::variant<lethe::ScenarioConfig, std::vector<LoadError>>;

// The largest scenario file (or text) loaded: 4 MiB, a thousand times the largest scenario of the library.
inline constexpr std::uintmax_t kMaxScenarioBytes = std::uintmax_t{4} << 20;

// Reads FILE (relative `empirical` paths resolve against its folder) and loads it. FILE must be a regular
// file (not a device or FIFO: it is never waited on) of at most kMaxScenarioBytes, checked before reading.
// The display name in messages is `file` as given.
// `check_explore` false skips checking each value [explore] can give (scenario/explore.hpp's load_drawn: the
// file was checked once already).
LoadResult load_scenario(const std::filesystem::path& file, const std::vector<std::string>& overrides,
                         bool check_explore = true);

// Loads TOML text; `display_name` prefixes messages, `base_dir` resolves `empirical` paths.
LoadResult load_scenario_text(std::string_view toml_text, const std::string& display_name,
                              const std::filesystem::path& base_dir, const std::vector<std::string>& overrides,
                              bool check_explore = true);

// Canonical TOML for a config (every key, defaults included; optional keys that are off are left out).
std::string render_scenario_toml(const lethe::ScenarioConfig& config);

// The result fields an [expect] entry may name (lethe::expectation_field_names(), docs/result-fields.md).
const std::vector<std::string>& expectation_keys();

}  // namespace scenario
