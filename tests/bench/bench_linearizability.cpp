// Benchmarks of check/linearizability.hpp on histories of a correct atomic register (every history is
// linearizable, so the checker must find a full linearization of each partition).
//
// - BM_ManyKeys/keys/lost_per_mille: 10,000 operations by 50 clients spread over `keys` keys (so a few operations
//   per key are concurrent), a fraction of them with lost responses. Items are operations.
// - BM_OneKey/ops: 8 clients hammering one key: every operation overlaps up to 7 others, the case where the search
//   is exponential without memoization.
#include "check/linearizability.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

using lethe::lin::kNever;
using lethe::lin::Time;

enum class Kind { Read, Write, Upsert };

struct Input {
  Kind kind = Kind::Read;
  std::uint64_t key = 0;
  std::int64_t value = 0;
};

struct Output {
  std::optional<std::int64_t> value;  // Read: current, Upsert: previous
  bool operator==(const Output&) const = default;
};

struct Register {
  using State = std::vector<std::pair<std::uint64_t, std::int64_t>>;  // sorted by key

  static State initial() { return {}; }
  static std::pair<State, Output> step(const State& state, const Input& input) {
    auto found = std::lower_bound(state.begin(), state.end(), input.key,
                                  [](const auto& entry, std::uint64_t key) { return entry.first < key; });
    const bool present = found != state.end() && found->first == input.key;
    Output output;
    if (input.kind != Kind::Write && present) output.value = found->second;
    if (input.kind == Kind::Read) return {state, output};
    State next = state;
    auto position = next.begin() + (found - state.begin());
    if (present) {
      position->second = input.value;
    } else {
      next.insert(position, {input.key, input.value});
    }
    return {std::move(next), output};
  }
  static std::uint64_t hash(const State& state) {
    std::uint64_t hash = 1469598103934665603ULL;
    for (const auto& [key, value] : state) {
      hash = (hash ^ key) * 1099511628211ULL;
      hash = (hash ^ static_cast<std::uint64_t>(value)) * 1099511628211ULL;
    }
    return hash;
  }
  static bool output_matches(const Output& expected, const Output& observed) { return expected == observed; }
  static std::string describe(const Input& input, const Output& output) {
    return std::to_string(static_cast<int>(input.kind)) + "(k" + std::to_string(input.key) + ", " +
           std::to_string(input.value) + ") -> " + (output.value ? std::to_string(*output.value) : "absent");
  }
};

using Op = lethe::lin::Operation<Input, Output>;

// splitmix64: a small deterministic generator for the benchmark's histories.
struct Draw {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t value = (state += 0x9e3779b97f4a7c15ULL);
    value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ULL;
    value = (value ^ (value >> 27)) * 0x94d049bb133111ebULL;
    return value ^ (value >> 31);
  }
  std::int64_t below(std::int64_t bound) { return static_cast<std::int64_t>(next() % static_cast<std::uint64_t>(bound)); }
};

// Clients run operations back to back; each takes effect at a random instant inside its interval (or, for a lost
// response, at a random instant after its invocation or never). Outputs come from replaying effects in order.
std::vector<Op> make_history(int clients, int operations, int keys, int lost_per_mille, std::uint64_t seed) {
  Draw draw{seed};
  std::vector<Op> history;
  std::vector<Time> effect_at;
  std::vector<Time> free_at(static_cast<std::size_t>(clients), 0);
  for (int index = 0; index < operations; ++index) {
    const auto client = static_cast<std::size_t>(draw.below(clients));
    const Time invoked = free_at[client] + draw.below(50);
    const Time duration = 1 + draw.below(100);
    Time returned = invoked + duration;
    Time effect = invoked + draw.below(duration + 1);
    if (draw.below(1000) < lost_per_mille) {
      returned = kNever;
      effect = draw.below(2) == 0 ? kNever : invoked + draw.below(1000);
    }
    free_at[client] = invoked + duration;
    const auto kind = static_cast<Kind>(draw.below(3));
    const auto key = static_cast<std::uint64_t>(draw.below(keys));
    history.push_back(Op{static_cast<std::uint32_t>(client), {key}, invoked, returned, Input{kind, key, index + 1}, {}});
    effect_at.push_back(effect);
  }
  std::vector<std::size_t> order;
  for (std::size_t index = 0; index < history.size(); ++index) {
    if (effect_at[index] != kNever) order.push_back(index);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&effect_at](std::size_t left, std::size_t right) { return effect_at[left] < effect_at[right]; });
  Register::State state = Register::initial();
  for (std::size_t index : order) {
    auto [next, output] = Register::step(state, history[index].input);
    history[index].output = output;
    state = std::move(next);
  }
  return history;
}

void run(benchmark::State& state, const std::vector<Op>& history) {
  lethe::lin::Result result;
  for (auto _ : state) {
    result = lethe::lin::check<Register>(history);
    benchmark::DoNotOptimize(result.steps);
  }
  if (result.verdict != lethe::lin::Verdict::Linearizable) {
    state.SkipWithError(("checker did not find a linearization: " + result.explanation).c_str());
    return;
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(history.size()));
  state.counters["steps"] = static_cast<double>(result.steps);
  state.counters["partitions"] = static_cast<double>(result.partitions);
}

void BM_ManyKeys(benchmark::State& state) {
  const auto history = make_history(50, 10'000, static_cast<int>(state.range(0)), static_cast<int>(state.range(1)), 42);
  run(state, history);
}
BENCHMARK(BM_ManyKeys)
    ->ArgNames({"keys", "lost_per_mille"})
    ->Args({16, 0})
    ->Args({16, 10})
    ->Args({256, 0})
    ->Args({256, 10})
    ->Args({1000, 10})
    ->Unit(benchmark::kMillisecond);

void BM_OneKey(benchmark::State& state) {
  const auto history = make_history(8, static_cast<int>(state.range(0)), 1, 0, 7);
  run(state, history);
}
BENCHMARK(BM_OneKey)->ArgName("ops")->Arg(200)->Arg(1600)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
