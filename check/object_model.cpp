#include "check/object_model.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace lethe {

namespace {

using Step = std::pair<ObjectState, ObjectOutput>;

Step inconsistent(const ObjectState& state) { return {state, ObjectOutput{false}}; }

Step dequeue(const ObjectState& state, const ObjectInput& input) {
  if (!input.known || state.items.empty()) return inconsistent(state);
  ObjectState next = state;
  if (input.fifo) {
    if (next.items.front() != input.value) return inconsistent(state);
    next.items.erase(next.items.begin());
    return {std::move(next), ObjectOutput{}};
  }
  const auto found = std::lower_bound(next.items.begin(), next.items.end(), input.value);
  if (found == next.items.end() || *found != input.value) return inconsistent(state);
  next.items.erase(found);
  return {std::move(next), ObjectOutput{}};
}

Step transact(const ObjectState& state, const ObjectInput& input) {
  ObjectState next = state;
  for (const ObjectMicroOp& micro : input.txn) {
    const auto at = std::lower_bound(next.keys.begin(), next.keys.end(), micro.key);
    const auto index = static_cast<std::size_t>(at - next.keys.begin());
    const bool present = at != next.keys.end() && *at == micro.key;
    if (!micro.write) {
      if (!micro.any && (!present || next.values[index] != micro.value)) return inconsistent(state);
      continue;
    }
    if (present) {
      next.values[index] = micro.value;
    } else {
      next.keys.insert(at, micro.key);
      next.values.insert(next.values.begin() + static_cast<std::ptrdiff_t>(index), micro.value);
    }
  }
  return {std::move(next), ObjectOutput{}};
}

std::uint64_t fnv(std::uint64_t hash, const std::string& text) {
  for (char c : text) hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return (hash ^ 0xff) * 0x100000001b3ULL;
}

std::string joined(const std::vector<std::string>& items, std::string_view open, std::string_view close) {
  std::string text(open);
  for (std::size_t index = 0; index < items.size(); ++index) text += (index == 0 ? "" : " ") + items[index];
  return text + std::string(close);
}

}  // namespace

std::pair<ObjectState, ObjectOutput> ObjectModel::step(const State& state, const ObjectInput& input) {
  switch (input.kind) {
    case ObjectOpKind::Acquire:
      if (!state.items.empty()) return inconsistent(state);
      return {State{{"held"}, {}, {}}, ObjectOutput{}};
    case ObjectOpKind::Release:
      if (state.items.empty()) return inconsistent(state);
      return {State{}, ObjectOutput{}};
    case ObjectOpKind::Add: {
      State next = state;
      const auto at = std::lower_bound(next.items.begin(), next.items.end(), input.value);
      if (at == next.items.end() || *at != input.value) next.items.insert(at, input.value);
      return {std::move(next), ObjectOutput{}};
    }
    case ObjectOpKind::ReadSet: return {state, ObjectOutput{state.items == input.elements}};
    case ObjectOpKind::Enqueue: {
      State next = state;
      next.items.insert(input.fifo ? next.items.end() : std::upper_bound(next.items.begin(), next.items.end(), input.value),
                        input.value);
      return {std::move(next), ObjectOutput{}};
    }
    case ObjectOpKind::Dequeue: return dequeue(state, input);
    case ObjectOpKind::Txn: return transact(state, input);
  }
  return inconsistent(state);
}

std::uint64_t ObjectModel::hash(const State& state) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (const std::string& item : state.items) hash = fnv(hash, item);
  for (std::size_t index = 0; index < state.keys.size(); ++index) {
    hash = lin::detail::mix64(hash ^ state.keys[index]);
    hash = fnv(hash, state.values[index]);
  }
  return hash;
}

bool ObjectModel::read_only(const ObjectInput& input) {
  if (input.kind == ObjectOpKind::ReadSet) return true;
  if (input.kind != ObjectOpKind::Txn) return false;
  return std::none_of(input.txn.begin(), input.txn.end(), [](const ObjectMicroOp& micro) { return micro.write; });
}

std::string ObjectModel::describe(const ObjectInput& input, const ObjectOutput& output) {
  const std::string verdict = output.ok ? "" : " (inconsistent)";
  switch (input.kind) {
    case ObjectOpKind::Acquire: return "acquire()" + verdict;
    case ObjectOpKind::Release: return "release()" + verdict;
    case ObjectOpKind::Add: return fmt::format("add({}){}", input.value, verdict);
    case ObjectOpKind::ReadSet: return fmt::format("read() -> {}{}", joined(input.elements, "#{", "}"), verdict);
    case ObjectOpKind::Enqueue: return fmt::format("enqueue({}){}", input.value, verdict);
    case ObjectOpKind::Dequeue:
      return fmt::format("dequeue() -> {}{}", input.known ? input.value : std::string("?"), verdict);
    case ObjectOpKind::Txn: {
      std::vector<std::string> parts;
      for (const ObjectMicroOp& micro : input.txn) {
        parts.push_back(fmt::format("[{} {} {}]", micro.write ? ":write" : ":read", micro.key_name,
                                    micro.any ? std::string("nil") : micro.value));
      }
      return "txn " + joined(parts, "[", "]") + verdict;
    }
  }
  return "?";
}

std::string ObjectModel::describe_state(const State& state) {
  if (state.keys.empty()) return joined(state.items, "[", "]");
  std::vector<std::string> parts;
  for (std::size_t index = 0; index < state.keys.size(); ++index) {
    parts.push_back(fmt::format("key#{} {}", state.keys[index], state.values[index]));
  }
  return joined(parts, "{", "}");
}

}  // namespace lethe
