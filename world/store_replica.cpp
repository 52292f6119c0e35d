#include "world/store_replica.hpp"

#include <algorithm>
#include <iterator>
#include <limits>

namespace lethe {

namespace {
constexpr sim::Time kBeforeAnything = std::numeric_limits<sim::Time>::min();
}  // namespace

ReplicaVersions::ReplicaVersions(sim::Distribution lag, bool eventual, sim::Rng rng)
    : lag_(std::move(lag)), rng_(std::move(rng)) {
  if (!eventual) return;
  sim::Duration horizon = lag_.quantile(1.0);
  if (horizon == sim::kTimeMax) horizon = lag_.quantile(1.0 - 1e-9);
  horizon_ = std::max<sim::Duration>(0, horizon);
}

std::size_t ReplicaVersions::versions() const {
  std::size_t total = 0;
  for (const auto& [key, log] : versions_) total += log.size();
  return total;
}

void ReplicaVersions::record(Key key, const std::optional<Item>& before, const std::optional<Item>& after,
                             sim::Time now) {
  std::deque<Version>& log = versions_[key];
  if (log.empty()) log.push_back(Version{kBeforeAnything, before});
  log.push_back(Version{now, after});
  writes_.emplace_back(now, key);
  prune(now);
}

void ReplicaVersions::prune(sim::Time now) {
  const sim::Time cutoff = now - horizon_;
  while (!writes_.empty() && writes_.front().first <= cutoff) {
    const Key key = writes_.front().second;
    writes_.pop_front();
    auto found = versions_.find(key);
    if (found == versions_.end()) continue;
    std::deque<Version>& log = found->second;
    // Keep the newest version at or before the cutoff (the replica may still be asked for it).
    while (log.size() >= 2 && log[1].at <= cutoff) log.pop_front();
    // A single version at or before the cutoff is the current state: nothing to remember.
    if (log.size() == 1) versions_.erase(found);
  }
}

sim::Duration ReplicaVersions::draw_lag() {
  return std::clamp<sim::Duration>(lag_.sample(rng_), 0, horizon_);
}

std::optional<Item> ReplicaVersions::item_at(Key key, sim::Time at, const StoreState& state) const {
  auto found = versions_.find(key);
  if (found == versions_.end()) {
    auto current = state.find(key);
    if (current == state.end()) return std::nullopt;
    return current->second;
  }
  const std::deque<Version>& log = found->second;
  auto after = std::upper_bound(log.begin(), log.end(), at,
                                [](sim::Time wanted, const Version& version) { return wanted < version.at; });
  if (after == log.begin()) return log.front().item;  // unreachable: the base version is at kBeforeAnything
  return std::prev(after)->item;
}

}  // namespace lethe
