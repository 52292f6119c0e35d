#include "check/kv_model.hpp"

#include "sim/random.hpp"

#include <fmt/format.h>

namespace lethe {

std::pair<KvModel::State, KvOutput> KvModel::step(const State& state, const KvInput& input) {
  switch (input.kind) {
    case KvOpKind::Get: return {state, KvOutput{true, state}};
    case KvOpKind::Put: return {input.value, KvOutput{}};
    case KvOpKind::Append: return {state + input.value, KvOutput{}};
  }
  return {state, KvOutput{}};
}

std::uint64_t KvModel::hash(const State& state) { return sim::hash_name(state); }

std::string KvModel::describe_state(const State& state) { return fmt::format("'{}'", state); }

std::string KvModel::describe(const KvInput& input, const KvOutput& output) {
  switch (input.kind) {
    case KvOpKind::Get:
      return output.observed ? fmt::format("get() -> '{}'", output.value) : "get() -> ?";
    case KvOpKind::Put: return fmt::format("put('{}')", input.value);
    case KvOpKind::Append: return fmt::format("append('{}')", input.value);
  }
  return "?";
}

}  // namespace lethe
