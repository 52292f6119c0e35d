// world/store_sweeper.hpp — the store's TTL sweeper (docs/scenarios.md store.ttl_eviction), a part of Store
// (world/store_server.hpp): when an item with an expiry is written, arm() schedules its eviction, and at that
// instant the sweeper calls `evict(key)` (the Store executes evict_op there).
//
// When: at `expires_on` (exact) or at `expires_on + uniform[0, lazy_max]` (lazy: expired items linger and stay
// readable until the sweeper deletes them, as DynamoDB's TTL does), never before now. At most one pending
// eviction per key: a new one is scheduled only if no pending eviction is due for an earlier-or-equal expiry
// (that one runs no later than this one needs; the Store re-arms when it finds the item refreshed).
//
// How: one entry per armed eviction, popped in (at, token) order, and ONE kernel timer (simulation.at), for the
// earliest entry (a kernel timer and its callback per record cost about 120 bytes per record within TTL).
// Entries armed in non-decreasing `at` order (a constant TTL: the common case) queue in a fifo at O(1); an entry
// earlier than the fifo's back goes to a min-heap. Memory: one pending entry per key with an armed eviction.
//
// Draws: a lazy delay per armed eviction, from the Rng it was given, nothing else.
// Lifetime: must outlive every run of `simulation` (its timer points at it); `evict` may call arm() (it runs
// while the sweeper is between entries). Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "core/btree.hpp"
#include "core/config.hpp"
#include "protocol/store_ops.hpp"
#include "sim/random.hpp"
#include "sim/simulation.hpp"
#include "sim/time.hpp"

namespace lethe {

class Sweeper {
 public:
  using Evict = std::function<void(Key)>;

  // REQUIRES: lazy_max >= 0.
  Sweeper(sim::Simulation& simulation, TtlEvictionKind kind, sim::Duration lazy_max, sim::Rng rng, Evict evict);
  Sweeper(const Sweeper&) = delete;
  Sweeper& operator=(const Sweeper&) = delete;

  // The item at `key` now expires on `expires_on`: its eviction, unless one is pending for an earlier-or-equal
  // expiry or it never expires (kTimeMax). Returns whether an eviction was scheduled.
  bool arm(Key key, sim::Time expires_on);
  // Keys with a pending eviction (memory checks).
  std::size_t pending() const { return pending_.size(); }

 private:
  struct Pending {                 // (when the sweeper runs is in its Sweep entry)
    sim::Time for_expires_on = 0;  // the expiry it was armed for
    std::uint64_t token = 0;       // a timer whose token is not the pending one is stale
  };
  struct Sweep {
    sim::Time at = 0;
    std::uint64_t token = 0;
    Key key = 0;
  };
  struct SweepLater {
    bool operator()(const Sweep& x, const Sweep& y) const { return x.at != y.at ? x.at > y.at : x.token > y.token; }
  };

  void schedule(const Sweep& sweep);
  bool heap_first() const;            // the earliest entry is the heap's (not the fifo's)
  bool next(Sweep& out) const;        // the earliest entry, if any
  void pop();                         // REQUIRES: next() found one
  void arm_timer();
  void run_due();
  void run(const Sweep& sweep);       // evicts unless superseded

  sim::Simulation& simulation_;
  TtlEvictionKind kind_;
  sim::Duration lazy_max_;
  sim::Rng rng_;
  Evict evict_;
  BTreeMap<Key, Pending> pending_;  // 27 B per key (heaptrack; a std::map node took 64)
  std::uint64_t next_token_ = 1;
  std::deque<Sweep> fifo_;
  std::vector<Sweep> heap_;
  sim::Time timer_at_ = sim::kTimeMax;  // the live kernel timer's instant (kTimeMax: none)
  std::uint64_t timer_generation_ = 0;  // a kernel timer of an older generation is stale
  bool sweeping_ = false;               // in run_due (it re-arms the timer once, at its end)
};

}  // namespace lethe
