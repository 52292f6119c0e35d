// world/store_replica.hpp — the versions a read replica of the store answers from (protocol.poll_read =
// "eventual(lag=DIST)"), a part of Store (world/store_server.hpp).
//
// A per-key version log of (instant, item after) keeps only what a replica read can still ask for: versions newer
// than now - horizon plus one base version per key, where horizon is the largest lag the distribution gives (its
// 1 - 1e-9 quantile when unbounded; larger draws are clamped to it). Keys whose only remaining version is older
// than the horizon are dropped (their current state is the answer).
//
// Guarantees: item_at(key, now - lag, state) is the item as it was at that instant for every lag draw_lag() can
// give, provided record() saw every change of the state at its instant, in time order.
// Draws: draw_lag() takes one sample from the Rng it was given, nothing else draws.
// Not thread-safe (one simulation per thread).
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <optional>
#include <utility>

#include "protocol/store_ops.hpp"
#include "sim/distribution.hpp"
#include "sim/random.hpp"
#include "sim/time.hpp"

namespace lethe {

class ReplicaVersions {
 public:
  // `eventual` false: no replica (horizon 0, nothing is recorded by a Store that has none).
  ReplicaVersions(sim::Distribution lag, bool eventual, sim::Rng rng);

  // The item at `key` changed from `before` to `after` at `now`. REQUIRES: `now` >= every earlier call's.
  void record(Key key, const std::optional<Item>& before, const std::optional<Item>& after, sim::Time now);
  // Forgets the versions no read can ask for any more (older than now - horizon).
  void prune(sim::Time now);
  // One lag, in [0, horizon()].
  sim::Duration draw_lag();
  // The item at `key` as it was at `at`; `state` is the current state (the answer for a key with no log).
  std::optional<Item> item_at(Key key, sim::Time at, const StoreState& state) const;

  sim::Duration horizon() const { return horizon_; }
  std::size_t versions() const;  // versions kept, every key (memory checks)

 private:
  struct Version {
    sim::Time at = 0;
    std::optional<Item> item;
  };

  sim::Distribution lag_;
  sim::Rng rng_;
  sim::Duration horizon_ = 0;
  std::map<Key, std::deque<Version>> versions_;
  std::deque<std::pair<sim::Time, Key>> writes_;  // FIFO of version instants, for pruning
};

}  // namespace lethe
