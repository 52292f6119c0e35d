#include "world/store_bugs.hpp"

#include <stdexcept>

namespace lethe {

namespace {
std::optional<Item> find_item(const StoreState& state, Key key) {
  auto found = state.find(key);
  if (found == state.end()) return std::nullopt;
  return found->second;
}
}  // namespace

const char* to_string(StoreBug bug) {
  switch (bug) {
    case StoreBug::None: return "none";
    case StoreBug::StaleRead: return "stale-read";
    case StoreBug::LostWrite: return "lost-write";
    case StoreBug::NonAtomicUpsert: return "non-atomic-upsert";
  }
  return "?";
}

void StoreBugs::set(StoreBug bug, double probability) {
  if (!(probability >= 0.0 && probability <= 1.0)) throw std::invalid_argument("Store::set_bug: probability");
  bug_ = bug;
  probability_ = probability;
  before_last_write_.clear();
}

std::optional<std::optional<Item>> StoreBugs::snapshot(const Op& op, const StoreState& state) {
  if (bug_ != StoreBug::NonAtomicUpsert || op.kind != OpKind::Upsert) return std::nullopt;
  if (!rng_.bernoulli(probability_)) return std::nullopt;
  return std::optional<std::optional<Item>>(find_item(state, op.key));
}

Reply StoreBugs::apply(StoreState& state, const Op& op, const std::optional<std::optional<Item>>& snapshot,
                       bool& fired) {
  fired = false;
  switch (bug_) {
    case StoreBug::None: break;
    case StoreBug::StaleRead: return stale_read(state, op, fired);
    case StoreBug::LostWrite: return lost_write(state, op, fired);
    case StoreBug::NonAtomicUpsert:
      if (op.kind != OpKind::Upsert || !snapshot.has_value()) break;
      fired = true;
      return non_atomic_upsert(state, op, *snapshot);
  }
  return lethe::apply(state, op);
}

Reply StoreBugs::stale_read(StoreState& state, const Op& op, bool& fired) {
  if (op.kind != OpKind::Get || !rng_.bernoulli(probability_)) return lethe::apply(state, op);
  auto found = before_last_write_.find(op.key);
  if (found == before_last_write_.end() || found->second == find_item(state, op.key)) return lethe::apply(state, op);
  fired = true;
  Reply reply;
  reply.previous = found->second;
  return reply;
}

Reply StoreBugs::lost_write(StoreState& state, const Op& op, bool& fired) {
  if ((op.kind != OpKind::Put && op.kind != OpKind::Upsert) || !rng_.bernoulli(probability_)) {
    return lethe::apply(state, op);
  }
  StoreState scratch;
  if (auto current = find_item(state, op.key)) scratch.emplace(op.key, *current);
  Reply reply = lethe::apply(scratch, op);  // what applying it would answer; the durable state is left alone
  fired = reply.applied;
  return reply;
}

// Read at invocation (`read`, the snapshot), write now: a read-modify-write that is not atomic.
Reply StoreBugs::non_atomic_upsert(StoreState& state, const Op& op, const std::optional<Item>& read) {
  std::optional<Item> item = read;
  Reply reply;
  reply.previous = item;
  if (!op.condition.holds(item)) {
    reply.applied = false;
    return reply;
  }
  op.update.apply_to(item);
  if (item.has_value()) {
    state[op.key] = *item;
  } else {
    state.erase(op.key);
  }
  return reply;
}

}  // namespace lethe
