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
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "check/linearizability_incremental.hpp"
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
  // For lin::IncrementalChecker's settled keys (one per key the store holds): a single-key state kept as the key's
  // item alone in the settled entry, without a map (and the map's own node) around it.
  using Settled = Item;
  static Settled settle(std::uint64_t key, State&& state);  // REQUIRES: `state` holds `key`'s item and nothing else
  static State unsettle(std::uint64_t key, Settled&& settled);
  // The checker's step on a settled form (lin::detail::SettledForm's contract): `op` (touching `key` alone) applied
  // to the key's item in place (nullopt: absent, the initial state) if its reply is `observed`, and true; otherwise
  // the item is put back from the reply's `previous` (the item before it), and false.
  static bool step_settled(std::uint64_t key, std::optional<Settled>& item, const Op& op, const Reply& observed);
  // For lin::IncrementalChecker: a Get never changes the state; two groups' states over disjoint keys join.
  static bool read_only(const Op& op) { return op.kind == OpKind::Get; }
  static void merge(State& into, const State& from) { into.insert(from.begin(), from.end()); }
};

using StoreChecker = lin::IncrementalChecker<StoreModel, Op, Reply>;
// Instantiated once, in store_model.cpp: the objects that include this header do not compile the checker again.
extern template class lin::IncrementalChecker<StoreModel, Op, Reply>;

// A reply of which a recorded history may have seen only part: a system whose write does not return the previous
// item leaves previous_observed false, one that does not say whether a condition held leaves applied_observed
// false. A part not observed matches whatever the model gives; the operation's effect is still searched for.
struct ObservedReply {
  Reply reply;
  bool applied_observed = true;
  bool previous_observed = true;  // reply.previous and reply.previous_parts
  bool operator==(const ObservedReply&) const = default;
};

// StoreModel for recorded histories whose replies may be partly unobserved (ObservedReply).
struct ObservedStoreModel {
  using State = StoreState;
  static State initial() { return {}; }
  static std::pair<State, ObservedReply> step(const State& state, const Op& op) {
    auto [next, reply] = StoreModel::step(state, op);
    return {std::move(next), ObservedReply{std::move(reply), true, true}};
  }
  static std::uint64_t hash(const State& state) { return StoreModel::hash(state); }
  static bool output_matches(const ObservedReply& a, const ObservedReply& b) {
    if (a.applied_observed && b.applied_observed && a.reply.applied != b.reply.applied) return false;
    if (!a.previous_observed || !b.previous_observed) return true;
    return a.reply.previous == b.reply.previous && a.reply.previous_parts == b.reply.previous_parts;
  }
  static std::string describe(const Op& op, const ObservedReply& reply);
  static bool read_only(const Op& op) { return StoreModel::read_only(op); }
  static void merge(State& into, const State& from) { StoreModel::merge(into, from); }
};

using ObservedStoreOperation = lin::Operation<Op, ObservedReply>;

lin::Result check_store_history(const std::vector<StoreOperation>& history, std::uint64_t budget = 10'000'000);

}  // namespace lethe
