// protocol/inbox.cpp — strategy "inbox": one store transaction: insert the inbox row make_key(Table::Inbox, ...)
// if it is absent (or expired, when expired_wins) with expires_on = now + ttl, AND add 1 to the domain row
// make_key(Table::Domain, processor, id). The domain mutation IS the effect: `effect` is never called
// (StrategyInfo::effect_in_store_transaction). Rejected transaction = duplicate = Skipped (Basis::InboxDuplicate).
// Unknown outcome = Failed, not retried (the redelivery finds the inbox row if the transaction landed). Its result
// value is the domain row's counter after the increment; a duplicate gets the counter it saw (memoize), so every
// caller of a message processed once gets 1. No crash point: nothing lies between its record and its effect.
#include <cstdint>
#include <memory>
#include <optional>

#include "protocol/builtin_strategies.hpp"
#include "protocol/strategy_support.hpp"

namespace lethe {

namespace {

class InboxStrategy final : public Strategy {
 public:
  InboxStrategy(const ProtocolSection& settings, StoreClient& store, Clock& clock, ProtocolHooks& hooks)
      : ttl_(settings.settings.get<sim::Duration>("ttl")),
        memoize_(settings.settings.get<bool>("memoize")),
        expired_wins_(precedence_setting(settings.settings) == Precedence::ExpiredFirst),  // completed rows only
        store_(store),
        clock_(clock),
        reporter_(hooks, clock) {}

  // `effect` is not called: the domain row's increment, in the same transaction as the inbox row, is the effect.
  ProtectResult protect(MessageId id, ProcessorId processor, AttemptId attempt, const Effect& /*effect*/) override {
    Call call{id, processor, attempt, make_key(Table::Inbox, processor, id), {}, false, 0};
    const sim::Time now = clock_.now();
    TransactionPart inbox;
    inbox.key = call.key;
    if (expired_wins_) {
      inbox.condition.absent_or_expired_at = now;
      inbox.update.replace_expired_at = now;
    } else {
      inbox.condition.require_absent = true;
    }
    inbox.update.started_at_mode = Assign::Set;
    inbox.update.started_at = now;
    inbox.update.completed_at_mode = Assign::Set;
    inbox.update.completed_at = now;
    inbox.update.expires_on_mode = Assign::Set;
    inbox.update.expires_on = saturating_add(now, ttl_);
    inbox.update.owner_mode = Assign::Set;
    inbox.update.owner = attempt;
    TransactionPart domain;
    domain.key = make_key(Table::Domain, processor, id);
    domain.update.counter_add = 1;

    const std::optional<Reply> reply = store_.execute(transaction_op({inbox, domain}));
    if (!reply.has_value()) {
      reporter_.note(call, Basis::StoreUnavailable, std::nullopt, now);
      return reporter_.failed(call);
    }
    const std::optional<Item> seen_inbox = reply->previous_parts.empty() ? std::nullopt : reply->previous_parts[0];
    const std::optional<Item> seen_domain =
        reply->previous_parts.size() < 2 ? std::nullopt : reply->previous_parts[1];
    const std::int64_t counter = seen_domain.has_value() ? seen_domain->counter : 0;
    if (!reply->applied) {
      reporter_.note(call, Basis::InboxDuplicate, seen_inbox, now);
      return reporter_.skipped(call, memoize_ ? std::optional<std::uint64_t>(static_cast<std::uint64_t>(counter))
                                              : std::nullopt);
    }
    reporter_.note(call, seen_inbox.has_value() ? Basis::ExpiredCompleted : Basis::Absent, seen_inbox, now);
    reporter_.hooks().completed(id, processor, attempt, true);
    call.result.outcome = Outcome::Executed;
    call.result.value = static_cast<std::uint64_t>(counter + 1);
    return call.result;
  }

 private:
  sim::Duration ttl_;
  bool memoize_;
  bool expired_wins_;
  StoreClient& store_;
  Clock& clock_;
  Reporter reporter_;
};

}  // namespace

StrategyInfo inbox_strategy() {
  StrategyInfo info;
  info.name = "inbox";
  info.description = "insert an inbox row and apply the domain change in one store transaction";
  info.keys = {ttl_key(), memoize_key(), expired_wins_key(), precedence_key()};
  info.factory = [](const ProtocolSection& settings, StoreClient& store, Clock& clock, ProtocolHooks& hooks,
                    sim::Rng /*rng*/) -> std::unique_ptr<Strategy> {
    return std::make_unique<InboxStrategy>(settings, store, clock, hooks);
  };
  info.bases = {Basis::Absent, Basis::ExpiredCompleted, Basis::InboxDuplicate, Basis::StoreUnavailable};
  info.windows = {
      {Cause::CapacityEvicted, WindowOpens::Always, {},
       "a bounded store (store.capacity) evicted the inbox row for room before a late redelivery"},
      {Cause::Expired, WindowOpens::Always, {},
       "the inbox row expired (ttl) or was evicted before a late redelivery: its transaction inserts it again"},
      // The oracle can then not name the expiry: the attempt that landed recorded no decision.
      {Cause::Unprotected, WindowOpens::Always, {},
       "a transaction that replaced an expired or evicted row lost its reply (or its caller died): no decision"},
  };
  info.effect_in_store_transaction = true;
  return info;
}

}  // namespace lethe
