// world/observations.hpp — what a run notes as it goes, for its result: coverage counters and the last activity.
//
// Every part of the world counts here by key ("crash", "producer.retry", "rebalance.session_timeout", ...);
// the per-attempt counters (crash points reached and fired, decisions by basis) are kept as numbers, because
// formatting a key per attempt cost more than the attempt's store calls, and become keys in merge_counted().
// The last activity (an attempt ending, an acknowledgement, a publish) is the result's sim_time. Noting never
// changes what happens (it draws nothing and schedules nothing).
//
// Does not: add the keys that never fired (the judge does, as zeros, so a silent green is visible).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>

#include "protocol/env.hpp"
#include "sim/time.hpp"

namespace lethe {

class Observations {
 public:
  void cover(const std::string& key, std::uint64_t n = 1) { counters_[key] += n; }
  std::map<std::string, std::uint64_t>& counters() { return counters_; }
  const std::map<std::string, std::uint64_t>& counters() const { return counters_; }

  void crash_point_reached(CrashPoint point) { ++crash_points_reached_[static_cast<std::size_t>(point)]; }
  void crash_point_fired(CrashPoint point) { ++crash_points_fired_[static_cast<std::size_t>(point)]; }
  void decided(Basis basis) { ++decisions_by_basis_[static_cast<std::size_t>(basis)]; }
  // Adds the per-attempt counters that are not zero as keys ("crash_point.<point>.reached", ".fired",
  // "decision.<basis>"). Once, at the end of the run.
  void merge_counted();

  void active(sim::Time now) { last_activity_ = now; }
  sim::Time last_activity() const { return last_activity_; }

 private:
  std::map<std::string, std::uint64_t> counters_;
  std::array<std::uint64_t, kCrashPointCount> crash_points_reached_{};
  std::array<std::uint64_t, kCrashPointCount> crash_points_fired_{};
  std::array<std::uint64_t, static_cast<std::size_t>(Basis::WeakStore) + 1> decisions_by_basis_{};
  sim::Time last_activity_ = 0;
};

}  // namespace lethe
