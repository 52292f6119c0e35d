// runner/execute.hpp — running seeds of scenarios, alone or in parallel, and checking expectations.
//
// Seeds run in parallel on a pool of threads, one simulation per thread at a
// time (each thread has its own fiber scheduler). A seed's result depends only
// on (scenario, seed): never on the number of threads or the order they run in.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.hpp"
#include "core/result.hpp"
#include "world/world.hpp"

namespace runner {

// Runs one seed and checks the scenario's [expect] lines. An internal error of
// lethe (sim::InternalError or any other exception) is returned in `error`.
struct SeedRun {
  lethe::RunResult result;
  std::string error;  // non-empty: lethe's own invariant broke (exit code 3), memory ran out, or bad_input
  bool bad_input = false;  // the error is a bad external node (lethe::ExternalNodeError): exit code 2
  // Memory ran out (exit code 5): the error starts with "out of memory:" (sim::InternalError's and
  // out_of_memory_text()'s contract), which survives a sweep's results.jsonl.
  bool out_of_memory() const { return !bad_input && is_out_of_memory(error); }
  static bool is_out_of_memory(const std::string& error) { return error.rfind("out of memory:", 0) == 0; }
  // What to print before `error`: "resources exhausted: " when memory ran out, else nothing.
  const char* prefix() const { return out_of_memory() ? "resources exhausted: " : ""; }
};
SeedRun run_seed(const lethe::ScenarioConfig& config, std::uint64_t seed, const lethe::WorldOptions& options = {},
                 lethe::WorldRecord* record = nullptr);

// "out of memory: an allocation failed (std::bad_alloc ...)", with the address-space limit when one is set.
std::string out_of_memory_text();

// Fills result.expectations and result.ok.
// Fills result.expectations (each [expect] entry, then each default invariant no entry replaces),
// result.defaults_replaced and result.ok.
void check_expectations(const lethe::ScenarioConfig& config, lethe::RunResult& result);

// What a scenario shows, read from its [expect] entries and the default invariants alone (no run): each
// violation (a default invariant's field, a part of duplicate_effects, or one of kViolationsBeyondDefaults) an
// entry names is either required (a run without it fails the entry: "duplicates.expired >= 1"), allowed (the
// smallest violation holds the entry as well: "duplicate_effects <= 2"; a percentage is of workload.messages) or
// held at its clean value ("== 0"); a default invariant holds it clean.
enum class Story : std::uint8_t {
  Failure,     // an entry requires a violation: the scenario demonstrates a failure (ok means it showed)
  BoundedFix,  // none is required but an entry allows some: a fix that tolerates a bounded remainder
  Fix,         // every violation named or defaulted is held clean: the scenario shows a fix
  Unchecked,   // [expect] defaults = false and no entry names a violation
};
Story scenario_story(const lethe::ScenarioConfig& config);
std::string_view to_string(Story story);  // "failure", "bounded fix", "fix", "unchecked"

// Runs f(i) for i in [0, count) on `threads` threads (>= 1); blocks until all finished.
void parallel_for(std::size_t count, unsigned threads, const std::function<void(std::size_t)>& f);

// Number of threads to use for -j 0: the CPUs this process may run on (its affinity mask, as `taskset` and
// container cpusets set it), at least 1.
unsigned default_jobs();

}  // namespace runner
