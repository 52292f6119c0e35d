// check/object_model.hpp — Knossos's models other than the registers, for the linearizability checker: a mutex,
// a set, an unordered and a FIFO queue, and a multi-register of transactions.
//
// Values are canonical EDN text (history::edn::canonical), so any value Jepsen writes compares as Knossos
// compares it. Every operation carries its completed value (a dequeue the value it took, a read the set it saw,
// a transaction its read values), as Knossos completes an invocation with its :ok response; the model's only
// output is whether the operation was consistent with the state (Knossos's "inconsistent").
//
// Meanings (Knossos's knossos.model):
// - mutex: acquire when held, or release when free, is inconsistent;
// - set: add(v) inserts; read(S) must see exactly S;
// - unordered-queue: enqueue(v) adds; dequeue(v) must find v pending; fifo-queue: dequeue(v) must find v first;
//   a dequeue with no value (nil: its response was lost) is inconsistent, so it is never linearized;
// - multi-register: txn [[:read k v] [:write k v] ...] applied in order; a read of nil matches any value; an absent
//   key reads as nil only when read with nil (so an initial value is given as an initial write).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "check/linearizability_core.hpp"

namespace lethe {

enum class ObjectOpKind : std::uint8_t { Acquire, Release, Add, ReadSet, Enqueue, Dequeue, Txn };

struct ObjectMicroOp {
  bool write = false;
  std::uint64_t key = 0;     // a key id (the partition key)
  std::string key_name;      // as written, for describing
  bool any = false;          // a read of nil: matches any value
  std::string value;         // canonical EDN
  bool operator==(const ObjectMicroOp&) const = default;
};

struct ObjectInput {
  ObjectOpKind kind = ObjectOpKind::Acquire;
  bool fifo = false;                   // Enqueue / Dequeue: the FIFO queue
  bool known = true;                   // Dequeue: false when no value is known (never consistent)
  std::string value;                   // Add, Enqueue, Dequeue
  std::vector<std::string> elements;   // ReadSet: sorted, distinct
  std::vector<ObjectMicroOp> txn;      // Txn
  bool operator==(const ObjectInput&) const = default;
};

struct ObjectOutput {
  bool ok = true;  // consistent with the state
  bool operator==(const ObjectOutput&) const = default;
};

struct ObjectState {
  std::vector<std::string> items;   // mutex: {"held"} or {}; set / unordered queue: sorted; FIFO queue: in order
  std::vector<std::uint64_t> keys;  // multi-register: sorted key ids, values[i] the value of keys[i]
  std::vector<std::string> values;
  bool operator==(const ObjectState&) const = default;
};

struct ObjectModel {
  using State = ObjectState;
  static State initial() { return State{}; }
  static std::pair<State, ObjectOutput> step(const State& state, const ObjectInput& input);
  static std::uint64_t hash(const State& state);
  static bool output_matches(const ObjectOutput& a, const ObjectOutput& b) { return a.ok == b.ok; }
  static std::string describe(const ObjectInput& input, const ObjectOutput& output);
  static std::string describe_state(const State& state);
  static bool read_only(const ObjectInput& input);
};

using ObjectOperation = lin::Operation<ObjectInput, ObjectOutput>;

}  // namespace lethe
