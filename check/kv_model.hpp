// check/kv_model.hpp — a key-value map of strings (get / put / append), for the linearizability checker.
//
// The object of Porcupine's kv histories and of Jepsen's append tests: each key holds a string, "" until written.
// get() returns it, put(v) replaces it, append(v) adds v at its end. Ops touch one key each, so a partition is one
// key and State is that key's string.
//
// "Not observed": an output with observed == false matches every output (the response carried no value).
//
// Does not: model deletion (a deleted key reads ""), or multi-key transactions.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "check/linearizability_core.hpp"

namespace lethe {

enum class KvOpKind : std::uint8_t { Get, Put, Append };

struct KvInput {
  KvOpKind kind = KvOpKind::Get;
  std::string value;  // Put, Append
  bool operator==(const KvInput&) const = default;
};

struct KvOutput {
  bool observed = true;  // false: nothing of the response is compared
  std::string value;     // Get: what it returned; "" for Put and Append
  bool operator==(const KvOutput&) const = default;
};

struct KvModel {
  using State = std::string;
  static State initial() { return {}; }
  static std::pair<State, KvOutput> step(const State& state, const KvInput& input);
  static std::uint64_t hash(const State& state);
  static bool output_matches(const KvOutput& a, const KvOutput& b) {
    return !a.observed || !b.observed || a.value == b.value;
  }
  static std::string describe(const KvInput& input, const KvOutput& output);
  static std::string describe_state(const State& state);
  static bool read_only(const KvInput& input) { return input.kind == KvOpKind::Get; }
};

using KvOperation = lin::Operation<KvInput, KvOutput>;

}  // namespace lethe
