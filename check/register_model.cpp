#include "check/register_model.hpp"

#include <fmt/format.h>

namespace lethe {

std::pair<RegisterModel::State, RegisterOutput> RegisterModel::step(const State& state, const RegisterInput& input) {
  switch (input.kind) {
    case RegisterOpKind::Read: return {state, RegisterOutput{true, state, true}};
    case RegisterOpKind::Write: return {input.value, RegisterOutput{}};
    case RegisterOpKind::Cas: {
      const bool ok = state.has_value() && *state == input.value;
      return {ok ? State(input.to) : state, RegisterOutput{true, std::nullopt, ok}};
    }
  }
  return {state, RegisterOutput{}};
}

std::uint64_t RegisterModel::hash(const State& state) {
  return state.has_value() ? lin::detail::mix64(static_cast<std::uint64_t>(*state) ^ 0x5bd1e995ULL)
                           : 0x2545f4914f6cdd1dULL;
}

std::string RegisterModel::describe_state(const State& state) {
  return state.has_value() ? std::to_string(*state) : "nil";
}

std::string RegisterModel::describe(const RegisterInput& input, const RegisterOutput& output) {
  // An output not observed is "?".
  switch (input.kind) {
    case RegisterOpKind::Read: return fmt::format("read() -> {}", output.observed ? describe_state(output.value) : "?");
    case RegisterOpKind::Write: return fmt::format("write({})", input.value);
    case RegisterOpKind::Cas:
      return fmt::format("cas({}, {}) -> {}", input.value, input.to, !output.observed ? "?" : output.ok ? "ok" : "fail");
  }
  return "?";
}

}  // namespace lethe
