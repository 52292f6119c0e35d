#include "protocol/store_ops.hpp"

#include <algorithm>
#include <stdexcept>
#include <fmt/format.h>

#include "protocol/key_text.hpp"

namespace lethe {

bool Condition::holds(const std::optional<Item>& current) const {
  if (require_absent && current.has_value()) return false;
  if (require_present && !current.has_value()) return false;
  if (absent_or_expired_at.has_value() && current.has_value() && !current->expired_at(*absent_or_expired_at)) {
    return false;
  }
  if (started_at_equals.has_value() && (!current.has_value() || current->started_at != started_at_equals)) {
    return false;
  }
  if (owner_equals.has_value() && (!current.has_value() || current->owner != *owner_equals)) return false;
  if (require_not_completed && current.has_value() && current->completed_at.has_value()) return false;
  return true;
}

namespace {
template <class Field, class T>  // Field: std::optional<T> or MaybeTime
void assign(Assign mode, Field& field, T value) {
  switch (mode) {
    case Assign::Keep: break;
    case Assign::Set: field = value; break;
    case Assign::SetIfAbsent:
      if (!field.has_value()) field = value;
      break;
    case Assign::Remove: field.reset(); break;
  }
}
}  // namespace

void Update::apply_to(std::optional<Item>& item) const {
  if (replace_expired_at.has_value() && item.has_value() && item->expired_at(*replace_expired_at)) item.reset();
  const bool created = !item.has_value();
  if (created) item.emplace();
  Item& it = *item;
  assign(started_at_mode, it.started_at, started_at);
  assign(completed_at_mode, it.completed_at, completed_at);
  assign(expires_on_mode, it.expires_on, expires_on);
  assign(memoized_mode, it.memoized, memoized);
  assign(payload_mode, it.payload, payload);
  switch (owner_mode) {
    case Assign::Keep: break;
    case Assign::Set: it.owner = owner; break;
    case Assign::SetIfAbsent:
      if (created || it.owner == 0) it.owner = owner;
      break;
    case Assign::Remove: it.owner = 0; break;
  }
  it.counter += counter_add;
}

std::vector<Key> Op::keys() const {
  if (kind != OpKind::Transaction) return {key};
  std::vector<Key> result;
  result.reserve(parts.size());
  for (const auto& part : parts) result.push_back(part.key);
  std::sort(result.begin(), result.end());
  result.erase(std::unique(result.begin(), result.end()), result.end());
  return result;
}

namespace {
// Where `key` is in `state`, or where it would go: found by one descent, read and written without another.
struct Slot {
  StoreState::iterator at;
  bool found = false;
};
Slot find_slot(StoreState& state, Key key) {
  const auto at = state.lower_bound(key);
  return Slot{at, at != state.end() && at->first == key};
}
std::optional<Item> read(const Slot& slot) {
  if (!slot.found) return std::nullopt;
  return slot.at->second;
}
// Leaves `item` at the slot's key (absent: erased). The slot is not valid afterwards.
void write(StoreState& state, const Slot& slot, Key key, const std::optional<Item>& item) {
  if (item.has_value()) {
    if (slot.found) {
      slot.at->second = *item;
    } else {
      state.emplace_hint(slot.at, key, *item);
    }
  } else if (slot.found) {
    state.erase(slot.at);
  }
}
}  // namespace

Reply apply(StoreState& state, const Op& op, std::optional<Item>* after) {
  std::optional<Item> unused;
  std::optional<Item>& now = after != nullptr ? *after : unused;  // the item after the op (single-key ops)
  if (op.kind == OpKind::Transaction) {
    Reply reply;
    reply.previous_parts.reserve(op.parts.size());
    for (const auto& part : op.parts) reply.previous_parts.push_back(read(find_slot(state, part.key)));
    for (std::size_t i = 0; i < op.parts.size(); ++i) {
      if (!op.parts[i].condition.holds(reply.previous_parts[i])) {
        reply.applied = false;
        return reply;
      }
    }
    for (const auto& part : op.parts) {
      const Slot slot = find_slot(state, part.key);  // again: an earlier part may have written the same key
      std::optional<Item> current = read(slot);
      part.update.apply_to(current);
      write(state, slot, part.key, current);
    }
    return reply;
  }
  const Slot slot = find_slot(state, op.key);
  now = read(slot);
  Reply reply = apply_to_item(now, op);
  if (reply.applied && op.kind != OpKind::Get) write(state, slot, op.key, now);
  return reply;
}

Reply apply_to_item(std::optional<Item>& item, const Op& op) {
  Reply reply;
  reply.previous = item;
  switch (op.kind) {
    case OpKind::Get:
      return reply;
    case OpKind::Put:
      item = op.item;
      return reply;
    case OpKind::Delete:
      if (!op.condition.holds(item)) {  // a default condition always holds: an unconditional delete
        reply.applied = false;
        return reply;
      }
      item.reset();
      return reply;
    case OpKind::Upsert:
      if (!op.condition.holds(item)) {
        reply.applied = false;
        return reply;
      }
      op.update.apply_to(item);
      return reply;
    case OpKind::Evict:
      if (!item.has_value() || !item->expired_at(op.at)) {
        reply.applied = false;
        return reply;
      }
      item.reset();
      return reply;
    case OpKind::Transaction:
      break;
  }
  throw std::invalid_argument("apply_to_item: a transaction touches more than one item");
}

std::string describe(const std::optional<Item>& item) {
  if (!item.has_value()) return "absent";
  const Item& it = *item;
  std::string text = "{";
  auto field = [&text](const char* name, const MaybeTime& value) {
    if (value.has_value()) text += fmt::format("{}={} ", name, *value);
  };
  field("started_at", it.started_at);
  field("completed_at", it.completed_at);
  field("expires_on", it.expires_on);
  if (it.owner != 0) text += fmt::format("owner={} ", it.owner);
  if (it.memoized.has_value()) text += fmt::format("memoized={} ", *it.memoized);
  if (it.counter != 0) text += fmt::format("counter={} ", it.counter);
  if (it.payload.has_value()) text += fmt::format("payload={:#x} ", *it.payload);
  if (text.size() > 1) text.pop_back();
  return text + "}";
}

std::string key_text(Key key) {
  static const char* const tables[] = {"", "", "inbox ", "domain ", "outbox "};
  const auto table = static_cast<std::size_t>(key_table(key));
  if (table < 1 || table > 4) return fmt::format("{:#x}", key);
  const ProcessorId processor = key_processor(key);
  return fmt::format("{}message {}{}", tables[table], key_message(key),
                     processor == 0 ? std::string() : fmt::format(" of processor {}", processor));
}

std::string describe(const Op& op) {
  const std::string key = key_text(op.key);
  switch (op.kind) {
    case OpKind::Get: return fmt::format("get({})", key);
    case OpKind::Put: return fmt::format("put({}, {})", key, describe(std::optional<Item>(op.item)));
    case OpKind::Delete:
      return op.condition == Condition{} ? fmt::format("delete({})", key) : fmt::format("delete({}, conditional)", key);
    case OpKind::Upsert: return fmt::format("upsert({})", key);
    case OpKind::Evict: return fmt::format("evict({}, at={})", key, op.at);
    case OpKind::Transaction: {
      std::string text = "transaction(";
      for (const auto& part : op.parts) text += key_text(part.key) + ", ";
      if (!op.parts.empty()) text.resize(text.size() - 2);
      return text + ")";
    }
  }
  return "?";
}

// Always names the previous record ("applied, previous absent"): a reply that hid it could not be told apart
// from one that found the record, and it is what a linearizability failure of the store turns on.
std::string describe(const Reply& reply) {
  std::string text = reply.applied ? "applied" : "rejected";
  text += ", previous " + describe(reply.previous);
  for (const auto& part : reply.previous_parts) text += ", " + describe(part);
  return text;
}

Op get_op(Key key) {
  Op op;
  op.kind = OpKind::Get;
  op.key = key;
  return op;
}
Op put_op(Key key, const Item& item) {
  Op op;
  op.kind = OpKind::Put;
  op.key = key;
  op.item = item;
  return op;
}
Op delete_op(Key key) {
  Op op;
  op.kind = OpKind::Delete;
  op.key = key;
  return op;
}
Op delete_op(Key key, const Condition& condition) {
  Op op = delete_op(key);
  op.condition = condition;
  return op;
}
Op upsert_op(Key key, const Condition& condition, const Update& update) {
  Op op;
  op.kind = OpKind::Upsert;
  op.key = key;
  op.condition = condition;
  op.update = update;
  return op;
}
Op evict_op(Key key, sim::Time at) {
  Op op;
  op.kind = OpKind::Evict;
  op.key = key;
  op.at = at;
  return op;
}
Op transaction_op(std::vector<TransactionPart> parts) {
  Op op;
  op.kind = OpKind::Transaction;
  op.parts = std::move(parts);
  return op;
}

}  // namespace lethe
