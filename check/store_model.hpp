// check/store_model.hpp — the store's sequential specification, for the linearizability checker.
//
// StoreModel states what one key partition of the store does, operation by operation: lethe::apply
// (protocol/store_ops.hpp) on a copy of the state. check_store_history runs lethe::lin::check with it over a
// recorded history: the simulated store's (world/store_server.hpp) or one that live mode recorded against a real
// server. StoreChecker checks the same while the history is recorded (the simulated store's default in a world). An operation whose response never came has returned_at == lin::kNever (it may or may not have landed).
//
// Does not: record histories, or know where one came from.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "check/linearizability.hpp"
#include "protocol/store_ops.hpp"

namespace lethe {

using StoreOperation = lin::Operation<Op, Reply>;

// The store's sequential specification for lethe::lin::check. State: the items of one key partition.
struct StoreModel {
  using State = StoreState;
  static State initial() { return {}; }
  static std::pair<State, Reply> step(const State& state, const Op& op);
  static std::uint64_t hash(const State& state);
  static bool output_matches(const Reply& observed, const Reply& expected) { return observed == expected; }
  static std::string describe(const Op& op, const Reply& reply);
  // For lin::IncrementalChecker: a Get never changes the state; two groups' states over disjoint keys join.
  static bool read_only(const Op& op) { return op.kind == OpKind::Get; }
  static void merge(State& into, const State& from) { into.insert(from.begin(), from.end()); }
};

using StoreChecker = lin::IncrementalChecker<StoreModel, Op, Reply>;

lin::Result check_store_history(const std::vector<StoreOperation>& history, std::uint64_t budget = 10'000'000);

}  // namespace lethe
