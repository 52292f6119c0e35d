// check/linearizability_batch.hpp — the batch linearizability checker, generic over a sequential specification.
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


#include "check/linearizability_core.hpp"

namespace lethe::lin {

namespace detail {

// Visited configurations (linearized set, model state): Lowe's memoization, exact match. `hash` must be a hash of
// both the set and the state; the set is compared word by word, the state with operator==. A set is stored as its
// span: the words after its leading all-ones words up to its last non-zero word (the operations linearized so far
// are mostly a prefix), so a sequential history of n operations keeps O(n) words, not n^2 / 64.
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
      if (entry.hash == hash && same_bits(entry, bits) && entry.state == state) return kFound;
    }
    return slot;
  }

  // Stores (bits, state) at `slot`, the answer of find() for them with no insert in between.
  void insert(std::size_t slot, const std::uint64_t* bits, std::uint64_t hash, const State& state) {
    if (entries_.size() >= 0xffffffffULL) throw std::length_error("linearizability: visited set is full");
    const Span span = span_of(bits);
    const std::size_t offset = bits_.size();
    bits_.insert(bits_.end(), bits + span.first, bits + span.first + span.count);
    entries_.push_back(Entry{hash, offset, span, state});
    slots_[slot] = slot_value(entries_.size() - 1);
    if (2 * entries_.size() > slots_.size()) grow();
  }

 private:
  struct Span {
    std::size_t first = 0;  // leading all-ones words
    std::size_t count = 0;  // stored words: from `first` through the last non-zero word
    bool operator==(const Span&) const = default;
  };

  struct Entry {
    std::uint64_t hash;
    std::size_t bits_offset;
    Span span;
    State state;
  };

  Span span_of(const std::uint64_t* bits) const {
    Span span;
    while (span.first < words_ && bits[span.first] == ~std::uint64_t{0}) ++span.first;
    std::size_t last = words_;
    while (last > span.first && bits[last - 1] == 0) --last;
    span.count = last - span.first;
    return span;
  }

  bool same_bits(const Entry& entry, const std::uint64_t* bits) const {
    if (!(entry.span == span_of(bits))) return false;
    const std::uint64_t* stored = bits_.data() + entry.bits_offset;
    for (std::size_t word = 0; word < entry.span.count; ++word) {
      if (stored[word] != bits[entry.span.first + word]) return false;
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
  std::vector<std::uint64_t> bits_;   // each entry's span
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

}  // namespace lethe::lin
