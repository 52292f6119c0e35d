// runner/shrink.hpp — `lethe shrink`: a smaller scenario that fails the same way at the same seed.
//
//   lethe shrink FILE --seed N [--set KEY=VALUE]... [--expect KEY] [--max-runs N] [--out FILE.toml]
//
// Given a scenario and a seed at which one of its [expect] lines fails, searches greedily (delta-debugging
// style) for a smaller configuration that still fails THE SAME expectation (same key; the first failing one
// unless --expect names another) at the same seed, and writes it with scenario::render_scenario_toml() under a comment
// header naming the seed, the original file and the failing expectation.
//
// The search, repeated until a whole round changes nothing (or the run budget is spent):
//   run.schedule: "fifo" instead of "random" or "pct(depth=N)";
//   workload.messages, topology.consumers, topology.clients, topology.partitions: halve while it still fails,
//     then try smaller cuts (n - n/4, n - n/8, ..., n - 1);
//   topology.processors: drop one at a time;
//   each fault kind switched off one at a time: crash_every, pause_every, clock_skew, rebalance_every, swarm,
//     each crash point, network loss / ack_loss / duplicate, each network partition, each sink outage, the
//     producer's crash between commit and publish, producer-side redeliveries (a probability that must stay
//     above 0 is halved instead while it still fails, down to a tenth of its value);
//   run.duration: halve while it still fails (not below 1s);
//   workload.redelivery.copies: reduce like the counts above.
// A candidate counts only if its run completes without an internal error and the target expectation fails.
// Every step is one deterministic run of the seed, so the result is a pure function of (scenario, seed).
//
// Exit codes: 0 a failing reproduction was written (possibly the original when nothing could be removed);
// 2 bad input, or the seed does not fail to begin with (or not the --expect key); 3 lethe broke on the
// original run.
//
// Does not: change the protocol or its settings (they are usually the point of the scenario), or try
// combinations of removals (greedy: one at a time, keeping what still fails).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/result.hpp"
#include "runner/command.hpp"

namespace runner {

struct ShrinkOptions {
  std::uint64_t seed = 1;
  std::optional<std::string> expectation_key;  // default: the first failing expectation
  std::size_t max_runs = 300;                  // budget of simulation runs (the original run included)
  std::function<void(const std::string&)> progress;  // called after each accepted step (may be empty)
};

struct ShrinkResult {
  bool original_fails = false;        // false: nothing to shrink (see `why`)
  std::string why;                    // when original_fails is false or the original run broke
  bool original_broke = false;        // the original run did not finish: `why` says why, `broke_exit` how
  int broke_exit = 0;                 // then kExitBadInput (a bad node), kExitResources or kExitInternal
  lethe::ExpectationResult original;  // the target expectation on the original run
  lethe::ExpectationResult final;     // ... and on the shrunk scenario
  lethe::ScenarioConfig shrunk;       // the smallest failing configuration found
  std::vector<std::string> steps;     // accepted reductions, in order ("workload.messages 400 -> 200")
  std::size_t runs = 0;               // simulation runs spent
  bool budget_exhausted = false;
};

ShrinkResult shrink_scenario(const lethe::ScenarioConfig& config, const ShrinkOptions& options);

// The file lethe shrink writes: a comment header, then scenario::render_scenario_toml(result.shrunk).
std::string shrunk_scenario_text(const ShrinkResult& result, const std::string& original_file, std::uint64_t seed,
                                 const std::vector<std::string>& sets);

// scenario::render_scenario_toml(config) with its relative `empirical(file=...)` paths made absolute against
// the folder of `original_file` (the text may be saved anywhere).
std::string scenario_file_text(const lethe::ScenarioConfig& config, const std::string& original_file);

ExtraCommand register_shrink(CLI::App& app);

}  // namespace runner
