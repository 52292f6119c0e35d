// check/linearizability_core.hpp — what the linearizability checkers share: operations, the model concept,
// verdicts, and the partition of a history by key. Cheap to include: no search code (that is in
// check/linearizability_batch.hpp and check/linearizability_incremental.hpp).
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/time.hpp"

namespace lethe::lin {

using Time = std::int64_t;                // virtual nanoseconds, same as sim::Time
inline constexpr Time kNever = INT64_MAX;  // response time of an operation whose response was never seen

template <class Input, class Output>
struct Operation {
  std::uint32_t client = 0;          // who invoked it
  std::vector<std::uint64_t> keys;   // keys it touches (usually 1; a multi-key transaction lists several)
  Time invoked_at = 0;
  Time returned_at = kNever;         // kNever: it may or may not have taken effect, at any time after invocation
  Input input{};
  Output output{};                   // ignored when returned_at == kNever
};

// The sequential specification of ONE partition's state (see the contract above).
template <class M, class Input, class Output>
concept SequentialModel =
    std::copyable<typename M::State> &&
    requires(const typename M::State& state, const Input& input, const Output& output) {
      { M::initial() } -> std::convertible_to<typename M::State>;
      { M::step(state, input) } -> std::convertible_to<std::pair<typename M::State, Output>>;
      { M::hash(state) } -> std::convertible_to<std::uint64_t>;
      { M::output_matches(output, output) } -> std::convertible_to<bool>;
      { M::describe(input, output) } -> std::convertible_to<std::string>;
      { state == state } -> std::convertible_to<bool>;
    };

enum class Verdict { Linearizable, NotLinearizable, Unknown };

inline std::string_view to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::Linearizable: return "linearizable";
    case Verdict::NotLinearizable: return "not linearizable";
    case Verdict::Unknown: return "unknown";
  }
  return "?";
}

struct Result {
  Verdict verdict = Verdict::Linearizable;
  std::uint64_t steps = 0;      // search steps (Model::step calls) used in total
  std::size_t partitions = 0;   // number of key partitions in the history
  // When NotLinearizable: indices into the history of the shortest failing prefix of the first failing partition,
  // in invocation order (see the contract). Empty otherwise.
  std::vector<std::size_t> offending_ops;
  // NotLinearizable: the partition's keys and each op of the window (client, times, input, output).
  // Unknown: where the budget ran out. Linearizable: empty.
  std::string explanation;
};

namespace detail {

inline constexpr std::uint32_t kNoOp = UINT32_MAX;

// splitmix64's finalizer: a cheap, well-mixing bijection on 64-bit values.
inline std::uint64_t mix64(std::uint64_t value) {
  value ^= value >> 30;
  value *= 0xbf58476d1ce4e5b9ULL;
  value ^= value >> 27;
  value *= 0x94d049bb133111ebULL;
  value ^= value >> 31;
  return value;
}

struct Partition {
  std::vector<std::uint64_t> keys;  // sorted
  std::vector<std::size_t> ops;     // indices into the history, in invocation order (ties by index)
};

// Groups keys connected through an operation; partitions come out ordered by their smallest key.
template <class Input, class Output>
std::vector<Partition> partition_by_key(const std::vector<Operation<Input, Output>>& history) {
  std::vector<std::uint64_t> keys;
  for (std::size_t index = 0; index < history.size(); ++index) {
    const auto& op = history[index];
    if (op.keys.empty()) {
      throw std::invalid_argument("linearizability: operation #" + std::to_string(index) + " touches no key");
    }
    if (op.returned_at < op.invoked_at) {
      throw std::invalid_argument("linearizability: operation #" + std::to_string(index) +
                                  " returned before it was invoked");
    }
    keys.insert(keys.end(), op.keys.begin(), op.keys.end());
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  auto key_index = [&keys](std::uint64_t key) {
    return static_cast<std::size_t>(std::lower_bound(keys.begin(), keys.end(), key) - keys.begin());
  };

  std::vector<std::size_t> parent(keys.size());
  for (std::size_t index = 0; index < parent.size(); ++index) parent[index] = index;
  auto find = [&parent](std::size_t node) {
    while (parent[node] != node) {
      parent[node] = parent[parent[node]];
      node = parent[node];
    }
    return node;
  };
  for (const auto& op : history) {
    const std::size_t first = find(key_index(op.keys.front()));
    for (std::size_t other = 1; other < op.keys.size(); ++other) {
      const std::size_t root = find(key_index(op.keys[other]));
      if (root != first) parent[std::max(root, first)] = std::min(root, first);  // root = smallest key index
    }
  }

  // Keys are visited in increasing order, so partitions are numbered by their smallest key.
  std::vector<std::size_t> partition_of_root(keys.size(), SIZE_MAX);
  std::vector<Partition> partitions;
  for (std::size_t index = 0; index < keys.size(); ++index) {
    const std::size_t root = find(index);
    if (partition_of_root[root] == SIZE_MAX) {
      partition_of_root[root] = partitions.size();
      partitions.emplace_back();
    }
    partitions[partition_of_root[root]].keys.push_back(keys[index]);
  }
  for (std::size_t index = 0; index < history.size(); ++index) {
    partitions[partition_of_root[find(key_index(history[index].keys.front()))]].ops.push_back(index);
  }
  for (auto& partition : partitions) {
    std::stable_sort(partition.ops.begin(), partition.ops.end(), [&history](std::size_t left, std::size_t right) {
      return history[left].invoked_at < history[right].invoked_at;
    });
  }
  return partitions;
}

// An instant of an explanation, read by a person: rounded, one unit (sim::format_human, as every human text).
inline std::string format_time(Time time) { return time == kNever ? "never" : sim::format_human(time); }

inline std::string describe_keys(const std::vector<std::uint64_t>& keys) {
  std::string text = "{";
  const std::size_t shown = std::min<std::size_t>(keys.size(), 16);
  for (std::size_t index = 0; index < shown; ++index) {
    if (index > 0) text += ", ";
    text += std::to_string(keys[index]);
  }
  if (shown < keys.size()) text += ", ... (" + std::to_string(keys.size()) + " keys)";
  return text + "}";
}

}  // namespace detail

}  // namespace lethe::lin
