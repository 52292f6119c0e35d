#include "sim/scheduler.hpp"

#include <algorithm>

#include "sim/assert.hpp"

namespace sim {

Scheduler::Scheduler(std::uint64_t seed, SchedulePolicy policy, int pct_depth, std::uint64_t pct_steps)
    : policy_(policy),
      pct_depth_(pct_depth),
      random_rng_(Rng::derive(seed, "kernel.schedule")),
      priority_rng_(Rng::derive(seed, "kernel.pct.priority")) {
  if (policy != SchedulePolicy::Pct) return;
  LETHE_ASSERT(pct_depth >= 1, "Simulation: pct_depth must be at least 1");
  const auto changes = static_cast<std::uint64_t>(pct_depth - 1);
  LETHE_ASSERT(changes == 0 || pct_steps > 0, "Simulation: pct_steps must be at least 1 when pct_depth is above 1");
  // d - 1 distinct steps, uniform in 1..k (all of them when k < d - 1): rejection keeps each uniform.
  Rng change_rng = Rng::derive(seed, "kernel.pct.change");
  while (change_points_.size() < std::min(changes, pct_steps)) {
    const auto step = static_cast<std::uint64_t>(change_rng.between(1, static_cast<std::int64_t>(pct_steps)));
    if (std::find(change_points_.begin(), change_points_.end(), step) == change_points_.end()) {
      change_points_.push_back(step);
    }
  }
  std::sort(change_points_.begin(), change_points_.end());
}

}  // namespace sim
