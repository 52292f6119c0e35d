// runner/tune_scenario.hpp — `lethe tune --scenario FILE`: the user's own scenario as the confirmation world.
//
// The file is loaded as `lethe run` loads it (every error FILE:LINE:COL: KEY: ...), and refused (exit 2) when its
// strategy reads no max_processing_time, or, when a ttl is recommended, no ttl: a sweep of a key the strategy
// does not read would confirm nothing. The confirmation then runs the file as written (its source, consumers,
// workload and faults) with protocol.max_processing_time varied and protocol.ttl set by the same --set
// mechanism `lethe sweep` has (TuneScenario::sets, for SweepSpec::sets).
//
// Does not: change anything else in the file, or check that its processing time is the one tune was given
// (the analytic figures come from --processing-time / --samples, the measured ones from the file).
#pragma once

#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "sim/time.hpp"

namespace runner {

struct TuneScenario {
  std::filesystem::path file;     // as given
  std::string text;               // the file's TOML
  lethe::ScenarioConfig config;   // loaded without overrides
  std::vector<std::string> sets;  // "protocol.ttl=6d" when a ttl is recommended; every cell gets them
  // What brings a crashed attempt's message back in this world, in words ("its queue redelivers ... after
  // visibility_timeout 30s"): with the wait for the record to age, it bounds recovery.
  std::string redelivery;
};

// Loads FILE for the confirmation; nullopt after printing every error on `err` (FILE:LINE:COL: KEY: what was
// found; allowed: ...). `ttl`: the recommended ttl, if any (set in every cell; the strategy must read it).
std::optional<TuneScenario> load_tune_scenario(const std::string& file, std::optional<sim::Duration> ttl,
                                               std::ostream& err);

}  // namespace runner
