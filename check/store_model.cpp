#include "check/store_model.hpp"

#include "check/linearizability_batch.hpp"
#include "protocol/key_text.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace lethe {

template class lin::IncrementalChecker<StoreModel, Op, Reply>;

namespace {

std::uint64_t mix(std::uint64_t hash, std::uint64_t value) {
  hash ^= value + 0x9e3779b97f4a7c15ULL + (hash << 6) + (hash >> 2);
  hash ^= hash >> 31;
  hash *= 0xbf58476d1ce4e5b9ULL;
  hash ^= hash >> 29;
  return hash;
}

std::uint64_t mix_optional_time(std::uint64_t hash, const MaybeTime& value) {
  hash = mix(hash, value.has_value() ? 1 : 0);
  return value.has_value() ? mix(hash, static_cast<std::uint64_t>(*value)) : hash;
}

const char* assign_word(Assign mode) {
  switch (mode) {
    case Assign::Keep: return "keep";
    case Assign::Set: return "=";
    case Assign::SetIfAbsent: return "=if_not_exists";
    case Assign::Remove: return "remove";
  }
  return "?";
}

std::string describe_condition(const Condition& condition) {
  std::string text;
  auto clause = [&text](const std::string& part) { text += (text.empty() ? "" : " and ") + part; };
  if (condition.require_absent) clause("absent");
  if (condition.require_present) clause("present");
  if (condition.absent_or_expired_at) clause(fmt::format("absent_or_expired_at({})", *condition.absent_or_expired_at));
  if (condition.started_at_equals) clause(fmt::format("started_at=={}", *condition.started_at_equals));
  if (condition.owner_equals) clause(fmt::format("owner=={}", *condition.owner_equals));
  if (condition.require_not_completed) clause("not_completed");
  return text.empty() ? "always" : text;
}

std::string describe_update(const Update& update) {
  std::string text;
  auto field = [&text](const char* name, Assign mode, std::uint64_t value, bool is_signed) {
    if (mode == Assign::Keep) return;
    text += text.empty() ? "" : " ";
    text += name;
    text += assign_word(mode);
    if (mode != Assign::Remove) {
      text += is_signed ? std::to_string(static_cast<std::int64_t>(value)) : std::to_string(value);
    }
  };
  field("started_at", update.started_at_mode, static_cast<std::uint64_t>(update.started_at), true);
  field("owner", update.owner_mode, update.owner, false);
  field("completed_at", update.completed_at_mode, static_cast<std::uint64_t>(update.completed_at), true);
  field("expires_on", update.expires_on_mode, static_cast<std::uint64_t>(update.expires_on), true);
  field("memoized", update.memoized_mode, update.memoized, false);
  field("payload", update.payload_mode, update.payload, false);
  if (update.counter_add != 0) text += fmt::format("{}counter+={}", text.empty() ? "" : " ", update.counter_add);
  if (update.replace_expired_at) {
    text += fmt::format("{}replace_expired_at({})", text.empty() ? "" : " ", *update.replace_expired_at);
  }
  return text.empty() ? "nothing" : text;
}

}  // namespace

std::pair<StoreState, Reply> StoreModel::step(const StoreState& state, const Op& op) {
  StoreState next = state;
  Reply reply = apply(next, op);
  return {std::move(next), std::move(reply)};
}

StoreModel::Settled StoreModel::settle(std::uint64_t key, StoreState&& state) {
  if (state.size() != 1 || state.begin()->first != key) {
    throw std::logic_error("StoreModel::settle: a settled state holds its own key's item alone");
  }
  return state.begin()->second;
}

StoreState StoreModel::unsettle(std::uint64_t key, Settled&& settled) {
  StoreState state;
  state.emplace(key, settled);
  return state;
}

bool StoreModel::step_settled(std::uint64_t key, std::optional<Item>& item, const Op& op, const Reply& observed) {
  if (op.kind == OpKind::Transaction) {  // of one key (several parts on it)
    StoreState state;
    if (item.has_value()) state.emplace(key, *item);
    auto [next, reply] = step(state, op);
    if (!output_matches(reply, observed)) return false;
    item = next.empty() ? std::nullopt : std::optional<Item>(next.begin()->second);
    return true;
  }
  Reply reply = apply_to_item(item, op);
  if (output_matches(reply, observed)) return true;
  item = std::move(reply.previous);
  return false;
}

std::uint64_t StoreModel::hash(const StoreState& state) {
  std::uint64_t hash = 0x51ed270b27f1d3a5ULL;
  for (const auto& [key, item] : state) {
    hash = mix(hash, key);
    hash = mix_optional_time(hash, item.started_at);
    hash = mix_optional_time(hash, item.completed_at);
    hash = mix_optional_time(hash, item.expires_on);
    hash = mix(hash, item.owner);
    hash = mix(hash, item.memoized.has_value() ? 1 : 0);
    hash = mix(hash, item.memoized.value_or(0));
    hash = mix(hash, static_cast<std::uint64_t>(item.counter));
    if (item.payload.has_value()) hash = mix(hash, *item.payload);  // only when kept: hashes without one unchanged
  }
  return hash;
}

std::string StoreModel::describe(const Op& op, const Reply& reply) {
  std::string text = lethe::describe(op);
  if (op.kind == OpKind::Upsert) {
    text.pop_back();  // ')'
    text += fmt::format(" if {} set {})", describe_condition(op.condition), describe_update(op.update));
  } else if (op.kind == OpKind::Transaction) {
    text += " [";
    for (std::size_t index = 0; index < op.parts.size(); ++index) {
      const TransactionPart& part = op.parts[index];
      text += fmt::format("{}{}: if {} set {}", index == 0 ? "" : "; ", lethe::key_text(part.key), describe_condition(part.condition),
                          describe_update(part.update));
    }
    text += "]";
  }
  return text + " -> " + lethe::describe(reply);
}

std::string ObservedStoreModel::describe(const Op& op, const ObservedReply& reply) {
  if (reply.applied_observed && reply.previous_observed) return StoreModel::describe(op, reply.reply);
  std::string text = StoreModel::describe(op, reply.reply);
  const std::size_t arrow = text.rfind(" -> ");
  if (arrow != std::string::npos) text.resize(arrow);
  std::string seen;
  if (reply.applied_observed) seen = reply.reply.applied ? "applied" : "not applied";
  if (reply.previous_observed) {
    seen += (seen.empty() ? "" : ", ") + std::string("previous ") + lethe::describe(reply.reply.previous);
  }
  return text + " -> " + (seen.empty() ? "?" : seen + ", the rest not observed");
}

lin::Result check_store_history(const std::vector<StoreOperation>& history, std::uint64_t budget) {
  return lin::check<StoreModel, Op, Reply>(history, budget);
}

}  // namespace lethe
