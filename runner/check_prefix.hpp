// runner/check_prefix.hpp — the longest linearizable prefix of a failing window, drawn by `lethe check --html`.
//
// The longest sequence of the window's operations that respects real time and replays through the model with
// every answered output matching (unanswered operations only where they change the state): what a search gets
// through before it cannot go on. Depth-first on an explicit stack (no recursion as deep as the window), memoized
// on (linearized set, state), bounded by a step budget that counts every operation looked at, so its cost does not
// grow with the window's length beyond the work done.
//
// REQUIRES: ops in invocation order (the window as the checker gives it); Model has initial(), step(state, input)
// -> (state, output), output_matches(output, expected) and a State with ==.
// Guarantees: the same ops give the same prefix (nothing depends on addresses or the clock); memory per visited
// set is the span of operations linearized out of invocation order, so a sequential window of n operations costs
// O(n) in all.
#pragma once

#include <algorithm>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <fmt/format.h>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "check/linearizability_core.hpp"

namespace runner::prefix {

// The operations linearized so far: every one before `low` and those whose bit is set in `above` (bit b is the
// operation low + b; bit 0 is never set, and there are no trailing zero words).
struct Linearized {
  std::size_t low = 0;
  std::vector<std::uint64_t> above;

  bool has(std::size_t i) const {
    if (i < low) return true;
    const std::size_t bit = i - low;
    return bit / 64 < above.size() && ((above[bit / 64] >> (bit % 64)) & 1U) != 0;
  }

  Linearized with(std::size_t i) const {
    Linearized next = *this;
    const std::size_t bit = i - low;
    if (bit / 64 >= next.above.size()) next.above.resize(bit / 64 + 1, 0);
    next.above[bit / 64] |= std::uint64_t{1} << (bit % 64);
    next.advance();
    return next;
  }

  auto operator<=>(const Linearized&) const = default;

 private:
  // Moves low past the run of set bits at its start.
  void advance() {
    std::size_t ones = 0;
    std::size_t word = 0;
    while (word < above.size() && above[word] == ~std::uint64_t{0}) ++word;
    ones = word * 64;
    if (word < above.size()) ones += static_cast<std::size_t>(__builtin_ctzll(~above[word]));
    low += ones;
    const std::size_t words = ones / 64;
    const std::size_t bits = ones % 64;
    std::vector<std::uint64_t> shifted;
    for (std::size_t w = words; w < above.size(); ++w) {
      std::uint64_t value = above[w] >> bits;
      if (bits != 0 && w + 1 < above.size()) value |= above[w + 1] << (64 - bits);
      shifted.push_back(value);
    }
    while (!shifted.empty() && shifted.back() == 0) shifted.pop_back();
    above = std::move(shifted);
  }
};

// The operations that may go next: not linearized, and invoked before every other pending answered operation
// returned. Counts each operation looked at in `steps`. Only operations invoked before the second earliest pending
// response can be among the two earliest responses, so the scan stops there.
template <class Op>
std::vector<std::size_t> candidates(const std::vector<const Op*>& ops, const Linearized& done, std::uint64_t& steps) {
  lethe::lin::Time first = lethe::lin::kNever;
  lethe::lin::Time second = lethe::lin::kNever;
  std::size_t earliest = ops.size();
  std::size_t end = done.low;
  for (; end < ops.size() && ops[end]->invoked_at <= second; ++end) {
    ++steps;
    if (done.has(end) || ops[end]->returned_at >= second) continue;
    if (ops[end]->returned_at < first) {
      second = first;
      first = ops[end]->returned_at;
      earliest = end;
    } else {
      second = ops[end]->returned_at;
    }
  }
  std::vector<std::size_t> out;
  for (std::size_t i = done.low; i < end; ++i) {
    if (!done.has(i) && ops[i]->invoked_at <= (i == earliest ? second : first)) out.push_back(i);
  }
  return out;
}

template <class State>
struct Prefix {
  std::vector<std::pair<std::size_t, State>> steps;  // (index into the window, state after it)
  std::string note;                                   // why it may not be the longest; "" if it is
};

template <class Model, class Op>
Prefix<typename Model::State> longest_prefix(const std::vector<const Op*>& ops, std::uint64_t budget) {
  using State = typename Model::State;
  struct Frame {
    Linearized done;
    State state;
    std::vector<std::size_t> next;
    std::size_t tried = 0;
  };
  Prefix<State> best;
  std::vector<std::pair<std::size_t, State>> path;  // path[k] took stack[k] to stack[k + 1]
  std::map<Linearized, std::vector<State>> seen;
  std::uint64_t steps = 0;
  std::vector<Frame> stack;
  stack.push_back(Frame{Linearized{}, Model::initial(), candidates(ops, Linearized{}, steps), 0});
  while (!stack.empty() && steps < budget) {
    Frame& top = stack.back();
    if (top.tried == top.next.size()) {
      if (path.size() > best.steps.size()) best.steps = path;  // only at a dead end: O(length) copies, not O(length²)
      if (!path.empty()) path.pop_back();
      stack.pop_back();
      continue;
    }
    const std::size_t i = top.next[top.tried++];
    ++steps;
    auto [state, output] = Model::step(top.state, ops[i]->input);
    const bool answered = ops[i]->returned_at != lethe::lin::kNever;
    if (answered ? !Model::output_matches(output, ops[i]->output) : state == top.state) continue;
    Linearized done = top.done.with(i);
    std::vector<State>& states = seen[done];
    if (std::find(states.begin(), states.end(), state) != states.end()) continue;
    states.push_back(state);
    path.emplace_back(i, state);
    std::vector<std::size_t> next = candidates(ops, done, steps);
    stack.push_back(Frame{std::move(done), std::move(state), std::move(next), 0});  // top is invalid from here
  }
  if (path.size() > best.steps.size()) best.steps = path;
  if (steps >= budget) {
    best.note = fmt::format("The prefix search stopped at its budget of {} steps: the prefix drawn may not be the "
                            "longest.", budget);
  }
  return best;
}

}  // namespace runner::prefix
