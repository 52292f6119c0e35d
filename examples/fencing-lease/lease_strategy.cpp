#include "lease_strategy.hpp"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

#include <lethe/protocol/registry.hpp>
#include <lethe/protocol/strategy_support.hpp>

namespace fencing {
namespace {

using lethe::Basis;
using lethe::Item;

// What the start write or a takeover gave: the token of a lease we now hold, or what we saw instead.
struct Claim {
  bool store_answered = true;
  lethe::FencingToken token = lethe::kNoFencingToken;  // non-zero: we hold the lease
  std::optional<Item> seen;                            // the record when we do not

  static Claim unanswered() { return Claim{false, lethe::kNoFencingToken, std::nullopt}; }
  static Claim held(lethe::FencingToken token) { return Claim{true, token, std::nullopt}; }
  static Claim saw(const std::optional<Item>& record) { return Claim{true, lethe::kNoFencingToken, record}; }
};

class FencedLease final : public lethe::Strategy {
 public:
  FencedLease(const lethe::ProtocolSection& settings, lethe::StoreClient& store, lethe::Clock& clock,
              lethe::ProtocolHooks& hooks, sim::Rng rng)
      : lease_(settings.settings.get<sim::Duration>("lease")),
        ttl_(settings.settings.get<sim::Duration>("ttl")),
        max_wait_(settings.settings.get<sim::Duration>("max_wait")),
        poll_(settings.settings.get<lethe::Poll>("poll")),
        store_(store),
        clock_(clock),
        reporter_(hooks, clock),
        rng_(rng) {}

  lethe::ProtectResult protect(lethe::MessageId id, lethe::ProcessorId processor, lethe::AttemptId attempt,
                               const lethe::Effect& effect) override {
    lethe::Call call{id, processor, attempt, lethe::make_key(lethe::Table::Dedupe, processor, id), {}, false, 0};
    const std::optional<lethe::FencingToken> token = acquire(call);
    if (!token.has_value()) return call.result;
    reporter_.finish_wait(call);
    return run(call, *token, effect);
  }

 private:
  // Takes the lease, or ends the call (skipped, or failed: store down, max_wait spent). nullopt: the call ended.
  std::optional<lethe::FencingToken> acquire(lethe::Call& call) {
    Claim claim = start(call);
    sim::Time wait_ends = 0;
    while (true) {
      if (!claim.store_answered) return give_up(call, Basis::StoreUnavailable, std::nullopt);
      if (claim.token != lethe::kNoFencingToken) return claim.token;
      const sim::Time now = clock_.now();
      if (!claim.seen.has_value()) {
        claim = start(call);  // the record vanished (evicted): start afresh
        continue;
      }
      if (claim.seen->completed_at.has_value()) {
        reporter_.note(call, Basis::Completed, claim.seen, now);
        reporter_.skipped(call, claim.seen->memoized);
        return std::nullopt;
      }
      if (*claim.seen->started_at + lease_ <= now) {
        claim = take_over(call, *claim.seen, now);
        continue;
      }
      if (!call.waiting) wait_ends = now + max_wait_;
      if (now >= wait_ends) return give_up(call, Basis::MaxWaitError, claim.seen);
      reporter_.note(call, Basis::InFlightRecent, claim.seen, now);
      reporter_.begin_wait(call, now);
      clock_.sleep(std::min(poll_interval(), wait_ends - now));
      claim = look(call, claim.seen);
    }
  }

  // The outcome of one lease write: whether the store answered, whether the lease is ours (a retry after an
  // unknown outcome recognises our own earlier write by its owner), and the record before the write.
  struct LeaseWrite {
    bool answered = false;
    bool ours = false;
    std::optional<Item> previous;
  };

  // Takes the lease for `call` under `condition`: started_at = now, owner = attempt, one more lease generation.
  LeaseWrite write_lease(const lethe::Call& call, const lethe::Condition& condition, sim::Time now) {
    lethe::Update lease;
    lease.started_at_mode = lethe::Assign::Set;
    lease.started_at = now;
    lease.owner_mode = lethe::Assign::Set;
    lease.owner = call.attempt;
    lease.counter_add = 1;
    const lethe::StepReply step = lethe::execute_step(store_, lethe::upsert_op(call.key, condition, lease));
    if (!step.reply.has_value()) return LeaseWrite{};
    const std::optional<Item>& previous = step.reply->previous;
    const bool ours =
        step.reply->applied || (step.tries > 1 && previous.has_value() && previous->owner == call.attempt);
    return LeaseWrite{true, ours, previous};
  }

  Claim start(lethe::Call& call) {
    const sim::Time now = clock_.now();
    lethe::Condition absent;
    absent.require_absent = true;
    const LeaseWrite write = write_lease(call, absent, now);
    if (!write.answered) return Claim::unanswered();
    if (!write.ours) return Claim::saw(write.previous);
    reporter_.note(call, Basis::Absent, std::nullopt, now);
    return Claim::held(1);
  }

  Claim take_over(lethe::Call& call, const Item& stale, sim::Time now) {
    lethe::Condition holder;
    holder.started_at_equals = *stale.started_at;
    holder.owner_equals = stale.owner;
    holder.require_not_completed = true;
    const LeaseWrite write = write_lease(call, holder, now);
    if (!write.answered) return Claim::unanswered();
    if (!write.ours) {
      reporter_.note(call, Basis::TakeoverLost, write.previous, now);
      return Claim::saw(write.previous);
    }
    reporter_.note(call, Basis::StaleTakeover, stale, now);
    return Claim::held(static_cast<lethe::FencingToken>(stale.counter) + 1);
  }

  // A poll read. Its outcome unknown: what we saw before still stands (the wait goes on, bounded by max_wait).
  Claim look(const lethe::Call& call, const std::optional<Item>& before) {
    const std::optional<lethe::Reply> reply = store_.execute(lethe::get_op(call.key));
    return Claim::saw(reply.has_value() ? reply->previous : before);
  }

  lethe::ProtectResult run(lethe::Call& call, lethe::FencingToken token, const lethe::Effect& effect) {
    lethe::ProtocolHooks& hooks = reporter_.hooks();
    hooks.crash_point(lethe::CrashPoint::AfterStartBeforeEffect, call.id, call.attempt);
    const std::optional<std::uint64_t> value = effect(token);
    if (!value.has_value()) return reporter_.failed(call);  // refused or failed: the lease runs out
    hooks.crash_point(lethe::CrashPoint::AfterEffectBeforeComplete, call.id, call.attempt);
    hooks.completed(call.id, call.processor, call.attempt, complete(call, *value));
    call.result.outcome = lethe::Outcome::Executed;
    call.result.value = value;
    return call.result;
  }

  bool complete(const lethe::Call& call, std::uint64_t value) {
    const sim::Time now = clock_.now();
    lethe::Condition holder;
    holder.owner_equals = call.attempt;
    holder.require_not_completed = true;
    lethe::Update done;
    done.completed_at_mode = lethe::Assign::Set;
    done.completed_at = now;
    done.memoized_mode = lethe::Assign::Set;
    done.memoized = value;
    done.expires_on_mode = lethe::Assign::Set;
    done.expires_on = lethe::saturating_add(now, ttl_);
    const lethe::StepReply step = lethe::execute_step(store_, lethe::upsert_op(call.key, holder, done));
    if (!step.reply.has_value()) return false;
    if (step.reply->applied) return true;
    // A retry after an unknown outcome sees our own completion as the previous item.
    const std::optional<Item>& previous = step.reply->previous;
    return step.tries > 1 && previous.has_value() && previous->owner == call.attempt &&
           previous->completed_at == lethe::MaybeTime(now) && previous->memoized == value;
  }

  std::nullopt_t give_up(lethe::Call& call, Basis basis, const std::optional<Item>& seen) {
    reporter_.note(call, basis, seen, clock_.now());
    reporter_.failed(call);
    return std::nullopt;
  }

  sim::Duration poll_interval() {
    const lethe::Poll& poll = poll_;
    if (poll.kind == lethe::PollKind::Backoff) return poll.backoff_base;
    return std::max<sim::Duration>(poll.interval.sample(rng_), 1);
  }

  sim::Duration lease_;
  sim::Duration ttl_;
  sim::Duration max_wait_;
  lethe::Poll poll_;
  lethe::StoreClient& store_;
  lethe::Clock& clock_;
  lethe::Reporter reporter_;
  sim::Rng rng_;
};

}  // namespace

void register_lease_strategy() {
  lethe::StrategyInfo info;
  info.name = "fenced-lease";
  info.description = "a lease with a fencing token: a takeover bumps the token and the provider refuses older ones";
  // Its own key, declared like a built-in's: the loader validates it and docs list it under "fenced-lease".
  info.keys = {
      {"lease", lethe::SettingLanguage::Duration, std::nullopt,
       "how long a holder keeps its lease; an in-flight record older than this may be taken over", {}, 1, false},
      lethe::ttl_key(),
      lethe::poll_key(),
      lethe::max_wait_key(),
  };
  info.slow_owner_key = "lease";  // a holder past its lease is the slow owner its takeover window names
  info.factory = [](const lethe::ProtocolSection& settings, lethe::StoreClient& store, lethe::Clock& clock,
                    lethe::ProtocolHooks& hooks, sim::Rng rng) -> std::unique_ptr<lethe::Strategy> {
    return std::make_unique<FencedLease>(settings, store, clock, hooks, rng);
  };
  info.bases = {Basis::Absent,        Basis::Completed,    Basis::InFlightRecent,  Basis::StaleTakeover,
                Basis::TakeoverLost,  Basis::MaxWaitError, Basis::StoreUnavailable};
  using lethe::Cause;
  using lethe::WindowOpens;
  info.windows = {
      {Cause::CrashAfterEffect, WindowOpens::Always, {},
       "the holder died between the effect and the completion; the next lease runs the effect again"},
      {Cause::CompletionLost, WindowOpens::Always, {},
       "the holder finished but its completion write never landed; the next lease runs the effect again"},
      {Cause::TakeoverWhileAlive, WindowOpens::WithSlowOwner, {},
       "the holder ran the effect, then stalled past its lease before completing: the fence cannot undo it"},
      {Cause::Expired, WindowOpens::Always, {}, "a redelivery after the ttl evicted the completed record"},
      {Cause::CapacityEvicted, WindowOpens::Always, {}, "a bounded store (store.capacity) evicted the record for room"},
  };
  lethe::register_strategy(std::move(info));
}

}  // namespace fencing
