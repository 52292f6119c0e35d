// world/coverage.hpp — the run's coverage counters: how often each fault point, retry and rebalance happened.
//
// Every part of the world counts here by key ("crash", "producer.retry", "rebalance.session_timeout", ...); the
// judge adds the keys that never fired (as zeros, so a silent green is visible) and hands the counters to the
// result. Counting never changes what happens (it draws nothing and schedules nothing).
//
// Does not: format per-attempt keys (the world keeps those as numbers and merges them at the end).
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace lethe {

class Coverage {
 public:
  void add(const std::string& key, std::uint64_t n = 1) { counters_[key] += n; }
  std::map<std::string, std::uint64_t>& counters() { return counters_; }
  const std::map<std::string, std::uint64_t>& counters() const { return counters_; }

 private:
  std::map<std::string, std::uint64_t> counters_;
};

}  // namespace lethe
