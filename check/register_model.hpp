// check/register_model.hpp — a read/write/compare-and-set register, for the linearizability checker.
//
// The object of Jepsen's cas-register tests (and of Porcupine's etcd histories): one value per key, absent until
// the first write. read() returns the value (or absent), write(v) sets it, cas(from, to) sets `to` only if the
// value is `from` and says whether it did. Ops touch one key each, so a partition is one key and State is that
// key's value.
//
// "Not observed": an output with observed == false matches every output (a response that carried nothing the
// checker can compare, as a timed-out read that still returned); its operation's effect is still searched for.
//
// Does not: model a register of strings or a multi-key transaction (see check/kv_model.hpp for strings).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "check/linearizability_core.hpp"

namespace lethe {

enum class RegisterOpKind : std::uint8_t { Read, Write, Cas };

struct RegisterInput {
  RegisterOpKind kind = RegisterOpKind::Read;
  std::int64_t value = 0;  // Write: the value; Cas: the expected value
  std::int64_t to = 0;     // Cas: the new value
  bool operator==(const RegisterInput&) const = default;
};

struct RegisterOutput {
  bool observed = true;              // false: nothing of the response is compared
  std::optional<std::int64_t> value;  // Read: what it returned (nullopt: absent); empty for Write and Cas
  bool ok = true;                     // Cas: whether it set the value; true for Read and Write
  bool operator==(const RegisterOutput&) const = default;
};

struct RegisterModel {
  using State = std::optional<std::int64_t>;
  static State initial() { return std::nullopt; }
  static std::pair<State, RegisterOutput> step(const State& state, const RegisterInput& input);
  static std::uint64_t hash(const State& state);
  static bool output_matches(const RegisterOutput& a, const RegisterOutput& b) {
    return !a.observed || !b.observed || (a.value == b.value && a.ok == b.ok);
  }
  static std::string describe(const RegisterInput& input, const RegisterOutput& output);
  static std::string describe_state(const State& state);
  static bool read_only(const RegisterInput& input) { return input.kind == RegisterOpKind::Read; }
};

using RegisterOperation = lin::Operation<RegisterInput, RegisterOutput>;

}  // namespace lethe
