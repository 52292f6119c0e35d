// runner/explore.hpp — `lethe explore`: run seeds, each drawing its configuration from [explore], until an
// expectation fails; then shrink the failing configuration and print the one command that replays it.
//
//   lethe explore FILE [--seeds N | --for DURATION] [-j N] [--out DIR] [--campaign C] [--no-steer]
//                      [--set KEY=VALUE]... [--max-runs N]
//
// Determinism: the campaign's n-th seed is (C - 1) * 10^9 + n, and seeds run in batches of kExploreBatch in
// seed order. Its draw depends only on (file, seed) and, when steering, on the weights computed from the
// seeds of the batches before its own, in seed order. The first failure is the failing seed of lowest n, so
// -j1 and -jN report the same seed, the same draw and the same shrunk scenario. --for only decides how many
// batches run (checked between batches); what a batch finds does not depend on it.
//
// Steering: every completed seed adds the coverage keys it reached (each "coverage.*" fault point and
// decision basis with a count above 0, each "duplicates.<cause>" that occurred) to the campaign's counts. A
// seed is rare when it reached a key that fewer than 1 in 20 of the seeds before it had reached (or none). A
// bin of an [explore] entry (scenario/explore.hpp) weighs 1 + 15 * (rare seeds + 1) / (seeds + 2) of those
// that drew it: bins that produced rare coverage are drawn more. The swarm's switches are not steered.
//
// Outputs in DIR: drawn.toml (the failing seed's configuration as drawn) and shrunk.toml (lethe shrink's
// search over it, which also tries run.schedule = "fifo"). Exit codes: 1 a failure was found (and written),
// 0 the budget ended without one, 2 bad input, 3 lethe broke on a seed.
//
// Does not: resume a campaign, or steer the schedule policy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "runner/command.hpp"

namespace runner {

inline constexpr std::size_t kExploreBatch = 16;
inline constexpr std::uint64_t kCampaignSeeds = 1'000'000'000;  // seeds per campaign number

// The coverage keys a result reached (count above 0), sorted; every key it knows of goes to `known`.
std::vector<std::string> reached_coverage(const lethe::RunResult& result, std::vector<std::string>& known);

ExtraCommand register_explore(CLI::App& app);

}  // namespace runner
