// sim/scheduler.hpp — which ready fiber runs next: the schedule policy, its random streams and its Pct state.
//
// Contract: one Scheduler per sim::Simulation. It decides only the order among fibers ready at the same virtual
// instant, never when anything happens. Fifo draws nothing; Random and Pct draw only from their own streams
// ("kernel.schedule"; "kernel.pct.priority" and "kernel.pct.change"), so no other stream of the run shifts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/random.hpp"

namespace sim {

// Which ready fiber runs next. Each decision is one scheduling step (Scheduler::steps()).
//   Fifo    the one that became ready first;
//   Random  one drawn uniformly among the ready ones (stream "kernel.schedule");
//   Pct     probabilistic concurrency testing (Burckhardt et al., ASPLOS 2010) over the kernel's one thread:
//           every fiber draws a random priority when it is spawned (its first readiness; stream
//           "kernel.pct.priority"), the ready fiber of highest priority runs, and pct_depth - 1 change points
//           are drawn once, distinct and uniform among the steps 1..pct_steps (stream "kernel.pct.change"):
//           the fiber picked at the i-th change point then drops to priority i, below every drawn priority
//           (and below the fibers demoted at earlier change points: later demotions rank above earlier ones,
//           as in the paper). A bug that needs d ordering constraints among n fibers in k steps is hit with
//           probability at least 1 / (n k^(d-1)) per run when pct_steps is about k.
enum class SchedulePolicy { Fifo, Random, Pct };

class Scheduler {
 public:
  // REQUIRES for Pct: pct_depth >= 1, and pct_steps >= 1 when pct_depth > 1 (a broken one is a failed
  // LETHE_ASSERT). Draws the Pct change points.
  Scheduler(std::uint64_t seed, SchedulePolicy policy, int pct_depth, std::uint64_t pct_steps);

  SchedulePolicy policy() const { return policy_; }
  // The priority of a fiber spawned now: Pct draws one above every demoted priority (1 .. d - 1); the other
  // policies draw nothing and give 0.
  std::uint64_t spawn_priority() {
    if (policy_ != SchedulePolicy::Pct) return 0;
    return static_cast<std::uint64_t>(pct_depth_) + (priority_rng_.next() >> 8);
  }
  // One scheduling step: the index, among `count` >= 1 ready fibers in the order they became ready, of the one
  // to run. priority_of(i) is a reference to the i-th ready fiber's priority (Pct reads them and lowers the
  // chosen one's at a change point).
  template <class PriorityOf>
  std::size_t choose(std::size_t count, PriorityOf&& priority_of) {
    ++steps_;
    switch (policy_) {
      case SchedulePolicy::Fifo: return 0;
      case SchedulePolicy::Random: return count == 1 ? 0 : static_cast<std::size_t>(random_rng_.below(count));
      case SchedulePolicy::Pct: return choose_by_priority(count, priority_of);
    }
    return 0;
  }
  // Scheduling decisions so far.
  std::uint64_t steps() const { return steps_; }
  // Pct: the steps the change points were drawn at, ascending (empty for the other policies).
  const std::vector<std::uint64_t>& change_points() const { return change_points_; }

 private:
  template <class PriorityOf>
  std::size_t choose_by_priority(std::size_t count, PriorityOf& priority_of) {
    // The highest priority wins; a tie (two equal 64-bit draws) goes to the one ready first.
    std::size_t chosen = 0;
    for (std::size_t i = 1; i < count; ++i) {
      if (priority_of(i) > priority_of(chosen)) chosen = i;
    }
    if (next_change_ < change_points_.size() && change_points_[next_change_] == steps_) {
      // The fiber that runs this step ends it below every drawn priority: i for the i-th change point (1-based).
      ++next_change_;
      priority_of(chosen) = next_change_;
    }
    return chosen;
  }

  SchedulePolicy policy_;
  int pct_depth_;
  Rng random_rng_;
  Rng priority_rng_;
  std::uint64_t steps_ = 0;
  std::vector<std::uint64_t> change_points_;  // Pct, ascending
  std::size_t next_change_ = 0;               // the first change point not reached yet
};

}  // namespace sim
