// world/store_bugs.hpp — the deliberate bugs of the simulated store (Store::set_bug, world/store_server.hpp), a part
// of Store: they show that the linearizability checker catches a store that breaks its contract.
//
// Each fires with the given probability per eligible operation, drawn from the Rng it was given (the store's own
// stream, so that a bug changes no other draw of the run):
//   StaleRead        a Get answers the item as it was before the key's last write;
//   LostWrite        a Put/Upsert is acknowledged (the reply says what applying it gives) but not applied;
//   NonAtomicUpsert  an Upsert reads the item when the client sends the request (snapshot()) and writes at the
//                    service instant (apply()), so two concurrent upserts can both see "absent" (a lost update).
//                    (Network::call has no arrival hook, so the read instant is the invocation, not the arrival:
//                    both lie inside the operation's interval, which is all the bug needs.)
//
// Guarantees: with kind() == None nothing draws and apply() is lethe::apply. Not thread-safe.
#pragma once

#include <map>
#include <optional>

#include "protocol/store_ops.hpp"
#include "sim/random.hpp"

namespace lethe {

enum class StoreBug { None, StaleRead, LostWrite, NonAtomicUpsert };
const char* to_string(StoreBug bug);

class StoreBugs {
 public:
  explicit StoreBugs(sim::Rng rng) : rng_(std::move(rng)) {}

  // REQUIRES: probability in [0, 1] (else std::invalid_argument). Forgets what StaleRead remembered.
  void set(StoreBug bug, double probability);
  StoreBug kind() const { return bug_; }
  bool active() const { return bug_ != StoreBug::None; }

  // At a client's invocation of `op`: NonAtomicUpsert's read (the item now), when it fires for this upsert.
  std::optional<std::optional<Item>> snapshot(const Op& op, const StoreState& state);
  // Every change of an item, at its instant (StaleRead remembers the item before the key's last write).
  void saw_write(Key key, const std::optional<Item>& before) {
    if (bug_ == StoreBug::StaleRead) before_last_write_[key] = before;
  }
  // `op` executed on `state`, altered by the bug when it fires (`fired` says so); else lethe::apply.
  // `snapshot`: what snapshot() gave at the op's invocation.
  Reply apply(StoreState& state, const Op& op, const std::optional<std::optional<Item>>& snapshot, bool& fired);

 private:
  Reply stale_read(StoreState& state, const Op& op, bool& fired);
  Reply lost_write(StoreState& state, const Op& op, bool& fired);
  static Reply non_atomic_upsert(StoreState& state, const Op& op, const std::optional<Item>& read);

  StoreBug bug_ = StoreBug::None;
  double probability_ = 0.0;
  sim::Rng rng_;
  std::map<Key, std::optional<Item>> before_last_write_;  // StaleRead only
};

}  // namespace lethe
