// check/linearizability.hpp — a linearizability checker, generic over a sequential specification.
//
// What it verifies: that a recorded client-visible history of operations (invocation time, response time, input,
// observed output) could have been produced by some atomic object obeying the sequential specification `Model`:
// there is one total order of the operations that (a) respects real time (an operation that returned before another
// was invoked comes first) and (b) replayed through Model::step from Model::initial() gives every observed output.
//
// Algorithm: Wing & Gong's backtracking search over "which pending operation takes effect next", with Lowe's
// memoization of visited configurations (set of linearized operations, model state), checked one key partition at a
// time (linearizability is compositional: a history is linearizable iff each independent object's sub-history is).
//
// Contract:
// - Partitions: keys connected through one operation (a multi-key transaction lists several keys) form one
//   partition (union-find over keys). Each partition is checked from Model::initial(), so Model::State must describe
//   every key of a partition (for example a sorted vector or std::map from key to per-key state); Model::step gets
//   the whole partition state and reads the keys it needs from its Input. Partitions are checked in increasing order
//   of their smallest key; checking stops at the first one that is not linearizable or that exhausts the budget.
// - Real time: op A precedes op B iff A.returned_at < B.invoked_at. Equal times count as concurrent (a response and
//   an invocation at the same virtual instant may be ordered either way), which is the lenient reading.
// - An operation with returned_at == kNever (lost response, crashed caller) may take effect at any instant after its
//   invocation, or never; its output is not checked. (Because Model::step is total and deterministic, "never" and
//   "after every other operation" are indistinguishable to the other operations.)
// - Determinism: the verdict, the step count, the offending window and the explanation depend only on the history
//   and the budget; no unordered container is iterated, no pointer value or clock is used.
// - Budget: one "step" is one call of Model::step. The verdict search of all partitions together may use at most
//   `step_budget` steps; when it runs out the verdict is Unknown (never a guess). Shrinking the offending window of
//   a failing partition gets its own allowance of `step_budget` steps; if that runs out, the window reported is
//   still proven non-linearizable but may not be the smallest, and the explanation says so. Result::steps counts
//   both.
// - Offending window (when NotLinearizable): order the failing partition's operations by invocation time (ties by
//   index in the history). prefix(k) is the partition history in which the first k operations keep their responses
//   and every later-invoked operation is treated as if its response had been lost (it may or may not have taken
//   effect). prefix(k) being non-linearizable implies prefix(k+1) is, so the smallest such k is found by bisection.
//   offending_ops lists the indices (into `history`) of those k operations in invocation order; the last of them
//   is the first operation whose response cannot be explained.
// - Malformed input (an operation with no key, or returned_at < invoked_at) throws std::invalid_argument.
//
// What it does not do: it does not check liveness, it does not say which order the system used, and it cannot
// detect a violation that no recorded response reveals (the output of an operation whose response was lost is
// never checked; only its possible effect on others is). Search cost is exponential in the number of mutually
// concurrent operations of one partition in the worst case; memoization keeps it near linear for histories with a
// few concurrent operations per key. Unanswered operations stay concurrent with everything after their invocation:
// read-only ones and blind writes cost little (see the pruning rules below), but many unanswered operations whose
// effects accumulate (increments, appends) on one key still multiply the search.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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

// Visited configurations (linearized set, model state): Lowe's memoization, exact match. `hash` must be a hash of
// both the set and the state; the set is compared word by word, the state with operator==.
template <class State>
class VisitedSet {
 public:
  void reset(std::size_t words_per_set, std::size_t expected_entries) {
    words_ = words_per_set;
    bits_.clear();
    entries_.clear();
    std::size_t slots = 64;
    while (slots < 2 * expected_entries) slots *= 2;
    slots_.assign(slots, 0);
  }

  static constexpr std::size_t kFound = SIZE_MAX;

  // kFound if (bits, state) is stored, else the free slot where insert() will put it.
  std::size_t find(const std::uint64_t* bits, std::uint64_t hash, const State& state) const {
    const std::size_t mask = slots_.size() - 1;
    const std::uint64_t tag = hash >> 32;
    std::size_t slot = static_cast<std::size_t>(hash) & mask;
    for (; slots_[slot] != 0; slot = (slot + 1) & mask) {
      if ((slots_[slot] >> 32) != tag) continue;  // most mismatches end here, without touching the entry
      const Entry& entry = entries_[(slots_[slot] & 0xffffffffULL) - 1];
      if (entry.hash == hash && same_bits(entry.bits_offset, bits) && entry.state == state) return kFound;
    }
    return slot;
  }

  // Stores (bits, state) at `slot`, the answer of find() for them with no insert in between.
  void insert(std::size_t slot, const std::uint64_t* bits, std::uint64_t hash, const State& state) {
    if (entries_.size() >= 0xffffffffULL) throw std::length_error("linearizability: visited set is full");
    const std::size_t offset = bits_.size();
    bits_.insert(bits_.end(), bits, bits + words_);
    entries_.push_back(Entry{hash, offset, state});
    slots_[slot] = slot_value(entries_.size() - 1);
    if (2 * entries_.size() > slots_.size()) grow();
  }

 private:
  struct Entry {
    std::uint64_t hash;
    std::size_t bits_offset;
    State state;
  };

  bool same_bits(std::size_t offset, const std::uint64_t* bits) const {
    const std::uint64_t* stored = bits_.data() + offset;
    for (std::size_t word = 0; word < words_; ++word) {
      if (stored[word] != bits[word]) return false;
    }
    return true;
  }

  // A slot holds the entry's index + 1 (0 = empty) in its low half and the top half of its hash in the high half.
  std::uint64_t slot_value(std::size_t index) const {
    return (entries_[index].hash & 0xffffffff00000000ULL) | static_cast<std::uint64_t>(index + 1);
  }

  void grow() {  // open addressing, linear probing
    slots_.assign(slots_.size() * 2, 0);
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t index = 0; index < entries_.size(); ++index) {
      std::size_t slot = static_cast<std::size_t>(entries_[index].hash) & mask;
      while (slots_[slot] != 0) slot = (slot + 1) & mask;
      slots_[slot] = slot_value(index);
    }
  }

  std::size_t words_ = 1;
  std::vector<std::uint64_t> bits_;   // words_ words per entry
  std::vector<Entry> entries_;
  std::vector<std::uint64_t> slots_;  // see slot_value()
};

struct SearchOutcome {
  Verdict verdict = Verdict::Unknown;
  std::uint64_t steps = 0;
};

// The Wing & Gong search over one partition. Operations are numbered locally in invocation order.
//
// Events (invocations, and responses of answered operations) sit in a doubly linked list in time order. A
// configuration is (linearized set, model state); from it, the candidates to take effect next are the operations
// invoked before the earliest response still in the list. Taking one (if the model's output matches the observed
// one) removes its events and descends; when every candidate is exhausted the search backtracks. It succeeds once
// every answered operation is linearized (unanswered ones left over simply never took effect).
//
// Pruning. Configuration A makes B redundant when both have the same state and the same answered operations
// linearized, and A's unanswered linearized operations are a subset of B's: any way to finish from B finishes from A
// too, leaving the extra unanswered operations out. A configuration is dropped only when one that makes it redundant
// has been or will be explored, so no linearization is missed:
// - it is in the visited set (Lowe's memoization, exact match);
// - it was reached by an unanswered operation that left the state unchanged (as a read whose response was lost):
//   the configuration it was reached from makes it redundant;
// - the frame was entered by unanswered x, and taking y directly instead of x leads to the same state (x's effect
//   was overwritten or absorbed by y): that sibling (y is a candidate there too) makes it redundant.
// Without the last rule a run of unanswered blind writes would make the search try every subset of them.
template <class Model, class Input, class Output>
class PartitionSearch {
 public:
  using State = typename Model::State;

  PartitionSearch(const std::vector<Operation<Input, Output>>& history, const std::vector<std::size_t>& ops)
      : history_(history), ops_(ops) {
    if (ops_.size() >= static_cast<std::size_t>(UINT32_MAX / 2)) {
      throw std::invalid_argument("linearizability: too many operations in one partition");
    }
  }

  // Searches for a linearization in which only the first `answered_prefix` operations (in invocation order) keep
  // their responses; later ones are treated as unanswered. Uses at most `budget` steps.
  SearchOutcome run(std::size_t answered_prefix, std::uint64_t budget) {
    prepare(answered_prefix);
    steps_ = 0;
    budget_ = budget;
    if (unlinearized_answered_ == 0) return SearchOutcome{Verdict::Linearizable, 0};
    state_ = Model::initial();
    bits_hash_ = 0;
    const std::uint64_t root_hash = config_hash(bits_hash_, state_);
    visited_.insert(visited_.find(bits_.data(), root_hash, state_), bits_.data(), root_hash, state_);
    push_frame(kNoOp);
    while (true) {
      Frame& frame = frames_.back();
      if (frame.next_candidate == frame.candidates_end) {
        if (frame.op == kNoOp) return SearchOutcome{Verdict::NotLinearizable, steps_};
        backtrack();
        continue;
      }
      const std::uint32_t op = candidates_[frame.next_candidate++];
      const Attempt attempt = try_candidate(op, frame.op);
      if (attempt == Attempt::OutOfBudget) return SearchOutcome{Verdict::Unknown, steps_};
      if (attempt == Attempt::Descended && unlinearized_answered_ == 0) {
        return SearchOutcome{Verdict::Linearizable, steps_};
      }
    }
  }

 private:
  struct Event {
    Time time;
    std::uint32_t op;
    bool is_return;
  };
  struct Frame {
    std::uint32_t op;  // the operation linearized to enter this frame (kNoOp for the root)
    std::size_t candidates_begin;
    std::size_t candidates_end;
    std::size_t next_candidate;
  };

  enum class Attempt { Pruned, Descended, OutOfBudget };

  // Tries to linearize candidate `op` next, in the frame entered by `entered_by`; descends on success.
  Attempt try_candidate(std::uint32_t op, std::uint32_t entered_by) {
    if (steps_ >= budget_) return Attempt::OutOfBudget;
    ++steps_;
    const auto& operation = history_[ops_[op]];
    auto [next_state, output] = Model::step(state_, operation.input);
    if (answered_[op] ? !Model::output_matches(output, operation.output) : next_state == state_) {
      return Attempt::Pruned;  // a wrong answer, or an unanswered operation without effect
    }
    if (entered_by != kNoOp && !answered_[entered_by]) {
      // Checked before the visited set: a model step is cheaper than a likely cache miss there.
      if (steps_ >= budget_) return Attempt::OutOfBudget;
      ++steps_;
      auto [sibling_state, sibling_output] = Model::step(saved_states_.back(), operation.input);
      const bool sibling_valid = !answered_[op] || Model::output_matches(sibling_output, operation.output);
      if (sibling_valid && sibling_state == next_state) return Attempt::Pruned;
    }
    set_bit(op);
    const std::uint64_t next_bits_hash = bits_hash_ ^ op_hash(op);
    const std::uint64_t hash = config_hash(next_bits_hash, next_state);
    const std::size_t slot = visited_.find(bits_.data(), hash, next_state);
    if (slot == VisitedSet<State>::kFound) {
      clear_bit(op);
      return Attempt::Pruned;
    }
    visited_.insert(slot, bits_.data(), hash, next_state);
    lift(op);
    if (answered_[op]) --unlinearized_answered_;
    saved_states_.push_back(std::move(state_));
    state_ = std::move(next_state);
    bits_hash_ = next_bits_hash;
    push_frame(op);
    return Attempt::Descended;
  }

  // Undoes the operation that entered the top frame, and drops the frame.
  void backtrack() {
    const std::uint32_t op = frames_.back().op;
    candidates_.resize(frames_.back().candidates_begin);
    frames_.pop_back();
    state_ = std::move(saved_states_.back());
    saved_states_.pop_back();
    clear_bit(op);
    unlift(op);
    bits_hash_ ^= op_hash(op);
    if (answered_[op]) ++unlinearized_answered_;
  }

  static std::uint64_t op_hash(std::uint32_t op) { return mix64(0x9e3779b97f4a7c15ULL * (op + 1ULL)); }
  static std::uint64_t config_hash(std::uint64_t bits_hash, const State& state) {
    return mix64(bits_hash ^ (static_cast<std::uint64_t>(Model::hash(state)) * 0xc2b2ae3d27d4eb4fULL));
  }

  void set_bit(std::uint32_t op) { bits_[op / 64] |= std::uint64_t{1} << (op % 64); }
  void clear_bit(std::uint32_t op) { bits_[op / 64] &= ~(std::uint64_t{1} << (op % 64)); }

  void prepare(std::size_t answered_prefix) {
    const auto count = static_cast<std::uint32_t>(ops_.size());
    const std::size_t words = (ops_.size() + 63) / 64;
    answered_.assign(count, false);
    bits_.assign(words, 0);
    unlinearized_answered_ = 0;
    events_.clear();
    for (std::uint32_t op = 0; op < count; ++op) {
      const auto& operation = history_[ops_[op]];
      answered_[op] = op < answered_prefix && operation.returned_at != kNever;
      events_.push_back(Event{operation.invoked_at, op, false});
      if (answered_[op]) {
        ++unlinearized_answered_;
        events_.push_back(Event{operation.returned_at, op, true});
      }
    }
    std::sort(events_.begin(), events_.end(), [](const Event& left, const Event& right) {
      if (left.time != right.time) return left.time < right.time;
      if (left.is_return != right.is_return) return !left.is_return;  // equal times: concurrent
      return left.op < right.op;
    });
    // Doubly linked list over events: node 0 is the head sentinel, node i + 1 is events_[i], the last is the tail.
    const std::size_t nodes = events_.size() + 2;
    next_.assign(nodes, 0);
    previous_.assign(nodes, 0);
    for (std::size_t node = 0; node + 1 < nodes; ++node) {
      next_[node] = static_cast<std::uint32_t>(node + 1);
      previous_[node + 1] = static_cast<std::uint32_t>(node);
    }
    call_node_.assign(count, 0);
    return_node_.assign(count, 0);
    for (std::size_t index = 0; index < events_.size(); ++index) {
      auto& slot = events_[index].is_return ? return_node_ : call_node_;
      slot[events_[index].op] = static_cast<std::uint32_t>(index + 1);
    }
    tail_ = static_cast<std::uint32_t>(nodes - 1);
    visited_.reset(words, ops_.size());
    frames_.clear();
    candidates_.clear();
    saved_states_.clear();
  }

  void unlink(std::uint32_t node) {
    next_[previous_[node]] = next_[node];
    previous_[next_[node]] = previous_[node];
  }
  void relink(std::uint32_t node) {
    next_[previous_[node]] = node;
    previous_[next_[node]] = node;
  }
  void lift(std::uint32_t op) {
    unlink(call_node_[op]);
    if (answered_[op]) unlink(return_node_[op]);
  }
  void unlift(std::uint32_t op) {  // exact reverse of lift (dancing links)
    if (answered_[op]) relink(return_node_[op]);
    relink(call_node_[op]);
  }

  // Candidates to take effect next: every operation invoked before the earliest response still outstanding.
  // Answered ones are tried first (each in invocation order): an unanswered operation matters only when some
  // response needs its effect, so trying it only after the answered ones fail finds linearizations sooner.
  void push_frame(std::uint32_t op) {
    const std::size_t begin = candidates_.size();
    for (int pass = 0; pass < 2; ++pass) {
      const bool want_answered = pass == 0;
      for (std::uint32_t node = next_[0]; node != tail_; node = next_[node]) {
        const Event& event = events_[node - 1];
        if (event.is_return) break;
        if (answered_[event.op] == want_answered) candidates_.push_back(event.op);
      }
    }
    frames_.push_back(Frame{op, begin, candidates_.size(), begin});
  }

  const std::vector<Operation<Input, Output>>& history_;
  const std::vector<std::size_t>& ops_;
  std::vector<bool> answered_;
  std::vector<std::uint64_t> bits_;  // linearized operations
  std::size_t unlinearized_answered_ = 0;
  State state_ = Model::initial();
  std::uint64_t bits_hash_ = 0;  // XOR of op_hash over the linearized operations
  std::uint64_t steps_ = 0;
  std::uint64_t budget_ = 0;
  std::vector<Event> events_;
  std::vector<std::uint32_t> next_;
  std::vector<std::uint32_t> previous_;
  std::vector<std::uint32_t> call_node_;
  std::vector<std::uint32_t> return_node_;
  std::uint32_t tail_ = 0;
  VisitedSet<State> visited_;
  std::vector<Frame> frames_;
  std::vector<std::uint32_t> candidates_;
  std::vector<State> saved_states_;
};

inline std::string format_time(Time time) { return time == kNever ? "never" : std::to_string(time) + " ns"; }

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

template <class Model, class Input, class Output>
std::string describe_operation(const std::vector<Operation<Input, Output>>& history, std::size_t index) {
  const auto& op = history[index];
  std::string text = "#" + std::to_string(index) + " client " + std::to_string(op.client) + " [" +
                     format_time(op.invoked_at) + ", " + format_time(op.returned_at) + "] " +
                     Model::describe(op.input, op.output);
  if (op.returned_at == kNever) text += " (no response: output ignored)";
  return text;
}

}  // namespace detail

template <class Model, class Input, class Output>
  requires SequentialModel<Model, Input, Output>
Result check(const std::vector<Operation<Input, Output>>& history, std::uint64_t step_budget = 10'000'000) {
  const std::vector<detail::Partition> partitions = detail::partition_by_key(history);
  Result result;
  result.partitions = partitions.size();
  std::uint64_t budget_left = step_budget;

  for (std::size_t number = 0; number < partitions.size(); ++number) {
    const detail::Partition& partition = partitions[number];
    detail::PartitionSearch<Model, Input, Output> search(history, partition.ops);
    const detail::SearchOutcome outcome = search.run(partition.ops.size(), budget_left);
    result.steps += outcome.steps;
    budget_left -= outcome.steps;
    if (outcome.verdict == Verdict::Linearizable) continue;

    const std::string where = "partition " + std::to_string(number + 1) + " of " +
                              std::to_string(partitions.size()) + ", keys " + detail::describe_keys(partition.keys) +
                              " (" + std::to_string(partition.ops.size()) + " ops)";
    if (outcome.verdict == Verdict::Unknown) {
      result.verdict = Verdict::Unknown;
      result.explanation = "unknown: the step budget of " + std::to_string(step_budget) +
                           " steps ran out while checking " + where + "; earlier partitions are linearizable";
      return result;
    }

    // Bisect for the shortest failing prefix: prefix(lower) is not proven failing, prefix(upper) is proven failing.
    std::size_t lower = 0;
    std::size_t upper = partition.ops.size();
    std::uint64_t shrink_budget_left = step_budget;
    bool minimal = true;
    while (upper - lower > 1) {
      const std::size_t middle = lower + (upper - lower) / 2;
      const detail::SearchOutcome probe = search.run(middle, shrink_budget_left);
      result.steps += probe.steps;
      shrink_budget_left -= probe.steps;
      if (probe.verdict == Verdict::NotLinearizable) {
        upper = middle;
      } else {
        if (probe.verdict == Verdict::Unknown) minimal = false;
        lower = middle;
      }
    }

    result.verdict = Verdict::NotLinearizable;
    result.offending_ops.assign(partition.ops.begin(), partition.ops.begin() + static_cast<std::ptrdiff_t>(upper));
    std::string text = "not linearizable: " + where + ". Shortest failing prefix by invocation time: " +
                       std::to_string(upper) +
                       " ops (ops of the partition invoked later count as unanswered: they may or may not have "
                       "taken effect):\n";
    // Long windows list their first and last operations (offending_ops has them all).
    constexpr std::size_t kShownFirst = 16;
    constexpr std::size_t kShownLast = 48;
    for (std::size_t rank = 0; rank < upper; ++rank) {
      if (upper > kShownFirst + kShownLast && rank == kShownFirst) {
        text += "  ... " + std::to_string(upper - kShownFirst - kShownLast) + " ops omitted ...\n";
        rank = upper - kShownLast - 1;
        continue;
      }
      text += "  " + detail::describe_operation<Model>(history, result.offending_ops[rank]) + "\n";
    }
    text += "No order of these operations that respects real time explains every response.";
    if (minimal) {
      text += " Without the response of the last one (#" + std::to_string(result.offending_ops.back()) +
              ") they can be explained.";
    } else {
      text += " (Not proven shortest: the step allowance for shrinking ran out.)";
    }
    result.explanation = std::move(text);
    return result;
  }
  return result;
}

// ---------------------------------------------------------------- incremental checking
//
// IncrementalChecker checks the same property as check() while the history is being recorded, so that what it keeps
// follows what is in flight, not the length of the history. It is fed events (invoke, respond, abandon, instant) in
// non-decreasing time order, except that events may be held back: advance(watermark) promises that no event earlier
// than `watermark` will come, and only events before it are processed. finish() processes the rest and gives the
// verdict.
//
// Algorithm: Lowe's just-in-time linearization, breadth first. Each key group (keys joined by a multi-key
// operation) keeps the set of configurations it may be in: the model state, the in-flight operations already
// linearized (with the output the model gave them) and the unanswered operations already linearized. An operation
// is linearized only when a response needs it: at the response of o, each configuration is extended by every
// sequence of pending operations that change the state, then o. An operation that leaves the state unchanged where
// it is linearized (a read, a conditional write whose condition failed) is never linearized ahead of its response:
// each configuration keeps the states it went through since the oldest in-flight operation was invoked (its path),
// and at the response such an operation is matched against the path states it may have seen. That keeps many
// concurrent readers from multiplying configurations. A group with no operation in flight keeps only its possible
// states (and the unanswered operations still able to take effect); a single-key group with one possible state and
// nothing pending keeps only that state, and none when it is Model::initial(). Same pruning as check() for
// unanswered operations (no effect: dropped; overwritten by a sibling: dropped), plus dominance between
// configurations (same state, same in-flight part, fewer unanswered operations used), and unanswered operations with
// the same input taken in one order only (they are interchangeable).
//
// Contract:
// - The verdict equals check()'s on the same history whenever both decide (Linearizable or NotLinearizable), with
//   the same real-time rule (equal instants are concurrent) and the same meaning of an unanswered operation.
// - Model needs, beyond SequentialModel: merge(State&, const State&) (the union of two groups' states over disjoint
//   keys). Optionally read_only(Input): true if the operation never changes any state (it is then dropped when
//   unanswered; nothing else depends on it).
// - Budget: `steps_per_response` Model::step calls for the search at one response, and `states` configurations
//   alive at once (kept by every group, plus the visited set of the search under way). Either running out makes the
//   verdict Unknown with the reason in Result::explanation; checking stops there and frees what it kept.
// - After the verdict is NotLinearizable or Unknown, further events are ignored. Result::offending_ops stays empty
//   (the window is not recorded); the explanation names the response that could not be explained.
// - Determinism: only ordered containers are iterated; the verdict and steps depend only on the events.
// - Memory: O(configurations x path length) per group with operations in flight, one state per single-key group
//   whose state is not initial, plus each unanswered operation that changes state (it stays a candidate forever).

struct IncrementalBudget {
  std::uint64_t steps_per_response = 20'000'000;
  std::uint64_t states = 100'000;  // about 1-3 KB each for the store model: a few hundred MB at most
};

namespace detail {
template <class M, class Input>
constexpr bool read_only_input(const Input& input) {
  if constexpr (requires { { M::read_only(input) } -> std::convertible_to<bool>; }) {
    return M::read_only(input);
  } else {
    return false;
  }
}
}  // namespace detail

template <class Model, class Input, class Output>
  requires SequentialModel<Model, Input, Output> &&
           requires(typename Model::State& into, const typename Model::State& from) { Model::merge(into, from); }
class IncrementalChecker {
 public:
  using State = typename Model::State;
  using OpId = std::uint64_t;

  explicit IncrementalChecker(IncrementalBudget budget = {}) : budget_(budget) {}

  // An invocation at `at`. The id names the operation in respond()/abandon().
  OpId invoke(std::uint32_t client, std::vector<std::uint64_t> keys, Time at, Input input) {
    const OpId id = next_op_++;
    if (stopped()) return id;
    if (keys.empty()) throw std::invalid_argument("linearizability: an operation touches no key");
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    OpRecord record;
    record.client = client;
    record.keys = std::move(keys);
    record.invoked_at = at;
    record.read_only = detail::read_only_input<Model>(input);
    record.input = std::move(input);
    ops_.emplace(id, std::move(record));
    push(Event{at, 0, id, EventKind::Invoke});
    return id;
  }
  // Its response, observed at `at` (>= its invocation).
  void respond(OpId id, Time at, Output output) {
    if (stopped()) return;
    auto found = ops_.find(id);
    if (found == ops_.end()) throw std::logic_error("linearizability: response of an unknown operation");
    if (at < found->second.invoked_at) throw std::invalid_argument("linearizability: a response before its invocation");
    found->second.output = std::move(output);
    push(Event{at, 1, id, EventKind::Return});
  }
  // No response will come: the operation may or may not take effect, at any time after its invocation.
  void abandon(OpId id, Time at) {
    if (stopped()) return;
    if (ops_.find(id) == ops_.end()) throw std::logic_error("linearizability: abandon of an unknown operation");
    push(Event{at, 1, id, EventKind::Abandon});
  }
  // An operation invoked and answered at one instant (executed by the server, observed by no client).
  void instant(std::uint32_t client, std::vector<std::uint64_t> keys, Time at, Input input, Output output) {
    const OpId id = invoke(client, std::move(keys), at, std::move(input));
    respond(id, at, std::move(output));
  }

  // Processes every event earlier than `watermark`; no later call may bring an event earlier than it.
  void advance(Time watermark) {
    if (stopped()) return;
    if (watermark < watermark_) throw std::logic_error("linearizability: the watermark went back");
    watermark_ = watermark;
    while (!stopped() && !events_.empty() && events_.front().at < watermark) {
      const Event event = events_.front();
      events_.pop_front();
      process(event);
    }
  }

  // Processes everything; operations still without a response count as unanswered.
  Result finish() {
    if (finished_) return result_;
    advance(kNever);
    while (!stopped() && !events_.empty()) {  // events at kNever itself
      const Event event = events_.front();
      events_.pop_front();
      process(event);
    }
    if (result_.verdict == Verdict::Linearizable) result_.partitions = groups_created_;
    finished_ = true;
    release();
    return result_;
  }

  const Result& result() const { return result_; }
  // True once the verdict is final: not linearizable, unknown, or finish() was called. Later events are ignored.
  bool stopped() const { return finished_ || result_.verdict != Verdict::Linearizable; }
  // What is kept (memory checks): live operations, groups with operations in flight or several possible states,
  // single-key groups settled in one state, queued events, configurations.
  std::size_t live_operations() const { return ops_.size(); }
  std::size_t open_groups() const { return groups_.size(); }
  std::size_t settled_keys() const { return settled_.size(); }
  std::size_t queued_events() const { return events_.size(); }
  std::uint64_t configurations() const { return configurations_; }
  std::uint64_t max_steps_per_response() const { return max_steps_; }

 private:
  enum class EventKind : std::uint8_t { Invoke, Return, Abandon };
  struct Event {
    Time at;
    int order;  // invocations (0) before responses and abandons (1) at one instant: equal instants are concurrent
    OpId op;
    EventKind kind;
  };
  enum class Status : std::uint8_t { Queued, InFlight, Unanswered };
  struct OpRecord {
    std::uint32_t client = 0;
    std::vector<std::uint64_t> keys;
    Time invoked_at = 0;
    Input input{};
    Output output{};
    std::uint64_t seq = 0;  // invocation number, once processed
    bool read_only = false;
    bool abandoned = false;  // the abandon was processed (or came before the invocation was processed)
    Status status = Status::Queued;
  };
  struct PathEntry {
    State state;
    std::uint64_t until = kOpen;  // invocations processed when another state followed it (kOpen: current)
  };
  static constexpr std::uint64_t kOpen = UINT64_MAX;
  static constexpr OpId kNoOp = UINT64_MAX;
  struct Config {
    std::vector<PathEntry> path;                 // back(): the current state
    std::vector<std::pair<OpId, Output>> done;   // in-flight operations linearized, with the model's output; sorted
    std::vector<OpId> used;                      // unanswered operations linearized; sorted
    const State& state() const { return path.back().state; }
  };
  struct Group {
    std::vector<std::uint64_t> keys;  // sorted
    std::vector<Config> configs;
    std::vector<OpId> inflight;       // invoked (processed), response not yet processed; sorted
    std::vector<OpId> carried;        // unanswered, may change state: candidates forever; sorted
  };

  void push(const Event& event) {
    if (event.at < watermark_) throw std::logic_error("linearizability: an event before the watermark");
    auto before = [](const Event& x, const Event& y) { return x.at != y.at ? x.at < y.at : x.order < y.order; };
    // Events come nearly in order: search from the back.
    auto position = events_.end();
    while (position != events_.begin() && before(event, *std::prev(position))) --position;
    events_.insert(position, event);
  }

  void process(const Event& event) {
    switch (event.kind) {
      case EventKind::Invoke: on_invoke(event.op); break;
      case EventKind::Return: on_return(event.op, event.at); break;
      case EventKind::Abandon: on_abandon(event.op); break;
    }
  }

  static void insert_sorted(std::vector<OpId>& ids, OpId id) { ids.insert(std::lower_bound(ids.begin(), ids.end(), id), id); }
  static void erase_sorted(std::vector<OpId>& ids, OpId id) {
    auto found = std::lower_bound(ids.begin(), ids.end(), id);
    if (found != ids.end() && *found == id) ids.erase(found);
  }
  static bool contains(const std::vector<OpId>& ids, OpId id) { return std::binary_search(ids.begin(), ids.end(), id); }
  static const std::pair<OpId, Output>* find_done(const Config& config, OpId id) {
    auto found = std::lower_bound(config.done.begin(), config.done.end(), id,
                                  [](const auto& entry, OpId wanted) { return entry.first < wanted; });
    return found != config.done.end() && found->first == id ? &*found : nullptr;
  }

  // The group holding `key`, creating a single-key one (from its settled state, or the initial one) if needed.
  std::uint64_t group_for(std::uint64_t key) {
    auto found = group_of_.find(key);
    if (found != group_of_.end()) return found->second;
    const std::uint64_t id = next_group_++;
    ++groups_created_;
    Group group;
    group.keys = {key};
    Config config;
    auto settled = settled_.find(key);
    if (settled != settled_.end()) {
      config.path.push_back(PathEntry{std::move(settled->second), kOpen});
      settled_.erase(settled);
    } else {
      config.path.push_back(PathEntry{Model::initial(), kOpen});
    }
    group.configs.push_back(std::move(config));
    ++configurations_;
    groups_.emplace(id, std::move(group));
    group_of_.emplace(key, id);
    return id;
  }

  // Joins group `from` into `into`: every pair of configurations, states merged (their keys are disjoint).
  void merge_groups(std::uint64_t into_id, std::uint64_t from_id) {
    Group& into = groups_.at(into_id);
    Group from = std::move(groups_.at(from_id));
    groups_.erase(from_id);
    std::vector<Config> merged;
    for (const Config& a : into.configs) {
      for (const Config& b : from.configs) {
        Config config;
        for (std::size_t index = 0; index + 1 < a.path.size(); ++index) {
          PathEntry entry = a.path[index];
          Model::merge(entry.state, b.state());
          config.path.push_back(std::move(entry));
        }
        for (std::size_t index = 0; index + 1 < b.path.size(); ++index) {
          PathEntry entry{a.state(), b.path[index].until};
          Model::merge(entry.state, b.path[index].state);
          config.path.push_back(std::move(entry));
        }
        PathEntry current{a.state(), kOpen};
        Model::merge(current.state, b.state());
        config.path.push_back(std::move(current));
        config.done = a.done;
        config.done.insert(config.done.end(), b.done.begin(), b.done.end());
        std::sort(config.done.begin(), config.done.end(),
                  [](const auto& x, const auto& y) { return x.first < y.first; });
        config.used = a.used;
        config.used.insert(config.used.end(), b.used.begin(), b.used.end());
        std::sort(config.used.begin(), config.used.end());
        merged.push_back(std::move(config));
      }
    }
    configurations_ -= into.configs.size() + from.configs.size();
    configurations_ += merged.size();
    into.configs = std::move(merged);
    for (std::uint64_t key : from.keys) group_of_[key] = into_id;
    into.keys.insert(into.keys.end(), from.keys.begin(), from.keys.end());
    std::sort(into.keys.begin(), into.keys.end());
    into.inflight.insert(into.inflight.end(), from.inflight.begin(), from.inflight.end());
    std::sort(into.inflight.begin(), into.inflight.end());
    into.carried.insert(into.carried.end(), from.carried.begin(), from.carried.end());
    std::sort(into.carried.begin(), into.carried.end());
    check_states_budget(0, into);
  }

  void on_invoke(OpId id) {
    OpRecord& op = ops_.at(id);
    op.seq = ++invocations_;
    if (op.abandoned && op.read_only) {  // an unanswered read: it explains nothing and changes nothing
      ops_.erase(id);
      return;
    }
    std::uint64_t group_id = group_for(op.keys.front());
    for (std::size_t index = 1; index < op.keys.size() && !stopped(); ++index) {
      const std::uint64_t other = group_for(op.keys[index]);
      if (other != group_id) merge_groups(std::min(group_id, other), std::max(group_id, other));
      group_id = std::min(group_id, other);
    }
    if (stopped()) return;
    Group& group = groups_.at(group_id);
    if (op.abandoned) {
      op.status = Status::Unanswered;
      insert_sorted(group.carried, id);
    } else {
      op.status = Status::InFlight;
      insert_sorted(group.inflight, id);
    }
  }

  void on_abandon(OpId id) {
    OpRecord& op = ops_.at(id);
    op.abandoned = true;
    if (op.status == Status::Queued) return;  // its invocation comes first
    if (op.status != Status::InFlight) return;
    const std::uint64_t group_id = group_of_.at(op.keys.front());
    Group& group = groups_.at(group_id);
    erase_sorted(group.inflight, id);
    if (op.read_only) {
      ops_.erase(id);
    } else {
      op.status = Status::Unanswered;
      insert_sorted(group.carried, id);
      for (Config& config : group.configs) {
        auto found = std::lower_bound(config.done.begin(), config.done.end(), id,
                                      [](const auto& entry, OpId wanted) { return entry.first < wanted; });
        if (found != config.done.end() && found->first == id) {
          config.done.erase(found);
          insert_sorted(config.used, id);
        }
      }
    }
    tidy(group);
    settle(group_id);
  }

  // --- the search at one response

  struct Search {
    OpId op;
    std::vector<Config> out;
    std::map<std::uint64_t, std::vector<std::size_t>> out_index;  // hash -> indices into `out`
    std::map<std::uint64_t, std::vector<Config>> visited;          // hash -> configurations expanded
    std::size_t visited_count = 0;
    std::uint64_t steps = 0;
    bool out_of_steps = false;
    bool out_of_states = false;
  };

  std::pair<State, Output> step(Search& search, const State& state, const Input& input) {
    ++search.steps;
    if (search.steps > budget_.steps_per_response) search.out_of_steps = true;
    return Model::step(state, input);
  }

  static std::uint64_t hash_config(const Config& config) {
    std::uint64_t hash = 0x8f1bbcdcca62c1d6ULL;
    for (const PathEntry& entry : config.path) {
      hash = detail::mix64(hash ^ Model::hash(entry.state));
      hash = detail::mix64(hash ^ entry.until);
    }
    for (const auto& [id, output] : config.done) hash = detail::mix64(hash ^ (id * 0x9e3779b97f4a7c15ULL));
    for (OpId id : config.used) hash = detail::mix64(hash ^ (id * 0xc2b2ae3d27d4eb4fULL) ^ 1);
    return hash;
  }
  static bool same_path_and_done(const Config& x, const Config& y) {
    if (x.path.size() != y.path.size() || x.done.size() != y.done.size()) return false;
    for (std::size_t index = 0; index < x.path.size(); ++index) {
      const PathEntry& a = x.path[index];
      const PathEntry& b = y.path[index];
      if (a.until != b.until || !(a.state == b.state)) return false;
    }
    for (std::size_t index = 0; index < x.done.size(); ++index) {
      if (x.done[index].first != y.done[index].first ||
          !Model::output_matches(x.done[index].second, y.done[index].second)) {
        return false;
      }
    }
    return true;
  }
  static bool same_config(const Config& x, const Config& y) { return x.used == y.used && same_path_and_done(x, y); }

  void emit(Search& search, Config config) {
    const std::uint64_t hash = hash_config(config);
    auto& bucket = search.out_index[hash];
    for (std::size_t index : bucket) {
      if (same_config(search.out[index], config)) return;
    }
    bucket.push_back(search.out.size());
    search.out.push_back(std::move(config));
    if (search.out.size() + search.visited_count + configurations_ > budget_.states) search.out_of_states = true;
  }

  // Appends `next` as the current state of `config` (the previous one is left at the current invocation count),
  // then drops the earlier states no pending operation could leave unchanged (other than `returning`, matched
  // against them at the root of its search): configurations that differ only there are then one.
  void advance_path(Config& config, State next, const Group& group, OpId returning, std::uint64_t& steps) const {
    config.path.back().until = invocations_;
    config.path.push_back(PathEntry{std::move(next), kOpen});
    prune_path(config, group, returning, steps);
  }
  void prune_path(Config& config, const Group& group, OpId returning, std::uint64_t& steps) const {
    if (config.path.size() <= 1) return;
    std::vector<PathEntry> kept;
    for (std::size_t index = 0; index + 1 < config.path.size(); ++index) {
      PathEntry& entry = config.path[index];
      bool useful = false;
      for (OpId id : group.inflight) {
        if (id == returning || find_done(config, id) != nullptr) continue;
        const OpRecord& pending = ops_.at(id);
        if (entry.until < pending.seq) continue;
        if (pending.read_only) {
          useful = true;
        } else {
          ++steps;
          useful = Model::step(entry.state, pending.input).first == entry.state;
        }
        if (useful) break;
      }
      if (useful) kept.push_back(std::move(entry));
    }
    kept.push_back(std::move(config.path.back()));
    config.path = std::move(kept);
  }

  // Every configuration reachable from `from` by pending state-changing operations, then the answered `o`.
  void expand(Search& search, const Group& group, const Config& from, const OpRecord& o) {
    struct Frame {
      Config config;
      OpId entered_by;      // kNone for the root
      bool entered_unanswered;
      std::vector<OpId> candidates;
      std::size_t next = 0;
    };
    constexpr OpId kNone = UINT64_MAX;
    std::vector<Frame> frames;
    auto candidates_of = [&](const Config& config) {
      std::vector<OpId> ids;
      for (OpId id : group.inflight) {
        if (id != search.op && !ops_.at(id).read_only && find_done(config, id) == nullptr) ids.push_back(id);
      }
      for (std::size_t index = 0; index < group.carried.size(); ++index) {
        const OpId id = group.carried[index];
        if (contains(config.used, id)) continue;
        // Unanswered operations with the same input are interchangeable (each may take effect at any time, its
        // output unseen): of those this configuration has not used, only the first is a candidate.
        bool twin_first = false;
        if constexpr (std::equality_comparable<Input>) {
          const OpRecord& op = ops_.at(id);
          for (std::size_t earlier = 0; earlier < index && !twin_first; ++earlier) {
            const OpId other = group.carried[earlier];
            twin_first = !contains(config.used, other) && ops_.at(other).keys == op.keys &&
                         ops_.at(other).input == op.input;
          }
        }
        if (!twin_first) ids.push_back(id);
      }
      return ids;
    };
    auto place_o = [&](const Config& config, bool root) {
      // o now: taking effect, or without effect at the current state.
      auto [next, output] = step(search, config.state(), o.input);
      const bool matches = Model::output_matches(output, o.output);
      bool matched = matches && next == config.state();
      if (matches && !matched) {
        Config placed = config;
        advance_path(placed, std::move(next), group, search.op, search.steps);
        emit(search, std::move(placed));
      }
      // o without effect at an earlier state of the path it may have seen (below the root they were tried there).
      for (std::size_t index = 0; root && !matched && index + 1 < config.path.size(); ++index) {
        const PathEntry& entry = config.path[index];
        if (entry.until < o.seq) continue;
        auto [earlier, earlier_output] = step(search, entry.state, o.input);
        matched = earlier == entry.state && Model::output_matches(earlier_output, o.output);
      }
      if (matched) emit(search, config);
    };
    auto visit = [&](const Config& config) {  // true if not seen before in this search
      const std::uint64_t hash = hash_config(config);
      auto& bucket = search.visited[hash];
      for (const Config& seen : bucket) {
        if (same_config(seen, config)) return false;
      }
      bucket.push_back(config);
      ++search.visited_count;
      if (search.out.size() + search.visited_count + configurations_ > budget_.states) search.out_of_states = true;
      return true;
    };

    place_o(from, true);
    std::vector<OpId> root_candidates = candidates_of(from);
    if (root_candidates.empty() || !visit(from)) return;  // (the common case: nothing else pending)
    frames.push_back(Frame{from, kNone, false, std::move(root_candidates), 0});
    while (!frames.empty() && !search.out_of_steps && !search.out_of_states) {
      Frame& frame = frames.back();
      if (frame.next == frame.candidates.size()) {
        frames.pop_back();
        continue;
      }
      const OpId x = frame.candidates[frame.next++];
      const OpRecord& candidate = ops_.at(x);
      const bool unanswered = candidate.status == Status::Unanswered;
      auto [next, output] = step(search, frame.config.state(), candidate.input);
      if (next == frame.config.state()) continue;  // no effect here: matched at its response if it needs to be
      if (frame.entered_unanswered && frames.size() >= 2) {
        // Taking x instead of the unanswered operation that entered this frame gives the same: that sibling covers it.
        const Config& parent = frames[frames.size() - 2].config;
        auto [sibling, sibling_output] = step(search, parent.state(), candidate.input);
        if (sibling == next && (unanswered || Model::output_matches(sibling_output, output))) continue;
      }
      Config child = frame.config;
      advance_path(child, std::move(next), group, search.op, search.steps);
      if (unanswered) {
        insert_sorted(child.used, x);
      } else {
        auto at = std::lower_bound(child.done.begin(), child.done.end(), x,
                                   [](const auto& entry, OpId wanted) { return entry.first < wanted; });
        child.done.insert(at, {x, std::move(output)});
      }
      if (!visit(child)) continue;
      place_o(child, false);
      std::vector<OpId> next_candidates = candidates_of(child);
      frames.push_back(Frame{std::move(child), x, unanswered, std::move(next_candidates), 0});
    }
  }

  void on_return(OpId id, Time at) {
    OpRecord& o = ops_.at(id);
    if (o.status != Status::InFlight) {
      throw std::logic_error("linearizability: a response of an operation that is not in flight");
    }
    const std::uint64_t group_id = group_of_.at(o.keys.front());
    Group& group = groups_.at(group_id);
    Search search;
    search.op = id;
    for (const Config& config : group.configs) {
      if (const auto* done = find_done(config, id)) {
        if (!Model::output_matches(done->second, o.output)) continue;
        Config kept = config;
        kept.done.erase(kept.done.begin() + (done - config.done.data()));
        emit(search, std::move(kept));
        continue;
      }
      expand(search, group, config, o);
      if (search.out_of_steps || search.out_of_states) break;
    }
    result_.steps += search.steps;
    max_steps_ = std::max(max_steps_, search.steps);
    if (search.out_of_steps || search.out_of_states) {
      const std::string what = search.out_of_steps
                                   ? "the step budget of " + std::to_string(budget_.steps_per_response) +
                                         " steps for the search at one response"
                                   : "the memory budget of " + std::to_string(budget_.states) + " search states";
      stop(Verdict::Unknown, "unknown: " + what + " ran out at the response of " + describe(id, at) + " (keys " +
                                 detail::describe_keys(group.keys) + ", " + std::to_string(group.inflight.size()) +
                                 " operations in flight, " + std::to_string(group.carried.size()) +
                                 " unanswered); everything before was linearizable");
      return;
    }
    if (search.out.empty()) {
      stop(Verdict::NotLinearizable,
           "not linearizable: no order of the operations before it that respects real time explains the response "
           "of " + describe(id, at) + " (keys " + detail::describe_keys(group.keys) + ", " +
               std::to_string(group.inflight.size() - 1) + " other operations in flight, " +
               std::to_string(group.carried.size()) + " unanswered)");
      return;
    }
    configurations_ -= group.configs.size();
    group.configs = std::move(search.out);
    configurations_ += group.configs.size();
    erase_sorted(group.inflight, id);
    ops_.erase(id);
    tidy(group);
    settle(group_id);
  }

  std::string describe(OpId id, Time at) const {
    const OpRecord& op = ops_.at(id);
    return "client " + std::to_string(op.client) + " [" + detail::format_time(op.invoked_at) + ", " + detail::format_time(at) + "] " +
           Model::describe(op.input, op.output);
  }

  // Drops path states no in-flight operation may have seen, then repeated and dominated configurations.
  void tidy(Group& group) {
    for (Config& config : group.configs) prune_path(config, group, kNoOp, result_.steps);
    const std::size_t before = group.configs.size();
    std::vector<Config> kept;
    kept.reserve(group.configs.size());
    // Exact repeats were merged by the search; here configurations that another makes redundant (same path and
    // in-flight part, a subset of its unanswered operations used) go, for small sets (the pairwise test is square).
    if (group.configs.size() <= 256) {
      std::stable_sort(group.configs.begin(), group.configs.end(),
                       [](const Config& x, const Config& y) { return x.used.size() < y.used.size(); });
      for (Config& config : group.configs) {
        bool dominated = false;
        for (const Config& other : kept) {
          if (other.used.size() <= config.used.size() &&
              std::includes(config.used.begin(), config.used.end(), other.used.begin(), other.used.end()) &&
              same_path_and_done(other, config)) {
            dominated = true;
            break;
          }
        }
        if (!dominated) kept.push_back(std::move(config));
      }
      group.configs = std::move(kept);
    }
    configurations_ -= before;
    configurations_ += group.configs.size();
    // Unanswered operations every configuration used are no candidates any more.
    std::vector<OpId> carried;
    for (OpId id : group.carried) {
      bool everywhere = true;
      for (const Config& config : group.configs) everywhere = everywhere && contains(config.used, id);
      if (!everywhere) {
        carried.push_back(id);
        continue;
      }
      for (Config& config : group.configs) erase_sorted(config.used, id);
      ops_.erase(id);
    }
    group.carried = std::move(carried);
  }

  // A single-key group with nothing pending and one possible state keeps only that state (none if initial).
  void settle(std::uint64_t group_id) {
    Group& group = groups_.at(group_id);
    if (!group.inflight.empty() || !group.carried.empty() || group.configs.size() != 1) return;
    Config& config = group.configs.front();
    if (!config.done.empty() || !config.used.empty() || config.path.size() != 1) return;
    const bool initial = config.state() == Model::initial();
    if (!initial && group.keys.size() != 1) return;
    for (std::uint64_t key : group.keys) group_of_.erase(key);
    if (!initial) settled_.emplace(group.keys.front(), std::move(config.path.front().state));
    configurations_ -= 1;
    groups_.erase(group_id);
  }

  void check_states_budget(std::uint64_t extra, const Group& group) {
    if (configurations_ + extra <= budget_.states) return;
    stop(Verdict::Unknown, "unknown: the memory budget of " + std::to_string(budget_.states) +
                               " search states ran out joining the keys " + detail::describe_keys(group.keys) +
                               "; everything before was linearizable");
  }

  void stop(Verdict verdict, std::string why) {
    result_.verdict = verdict;
    result_.explanation = std::move(why);
    result_.partitions = groups_created_;
    release();
  }

  // Frees everything the search holds; only the result stays.
  void release() {
    ops_.clear();
    events_.clear();
    groups_.clear();
    group_of_.clear();
    settled_.clear();
    configurations_ = 0;
  }

  IncrementalBudget budget_;
  Result result_;
  bool finished_ = false;
  OpId next_op_ = 0;
  std::uint64_t next_group_ = 0;
  std::uint64_t groups_created_ = 0;
  std::uint64_t invocations_ = 0;
  std::uint64_t configurations_ = 0;
  std::uint64_t max_steps_ = 0;
  Time watermark_ = INT64_MIN;
  std::map<OpId, OpRecord> ops_;
  std::deque<Event> events_;
  std::map<std::uint64_t, Group> groups_;
  std::map<std::uint64_t, std::uint64_t> group_of_;  // key -> group, for keys of open groups
  std::map<std::uint64_t, State> settled_;           // key -> its one possible state (single-key, nothing pending)
};

}  // namespace lethe::lin
