// protocol/saga_state.cpp — strategy "saga-state": the saga's state is one store record, advanced by conditional
// writes; whoever holds its lease drives the saga, and a step is sent at most once.
//
// The record make_key(Table::Dedupe, kSagaStateProcessor, saga): owner = the attempt holding the lease,
// started_at = the holder's local time at its last write (the lease runs max_processing_time from it),
// memoized = the position (forward or backward, the next action, whether it was sent), completed_at = over.
// Every write is conditional on the owner and started_at last seen (a write whose reply is unknown is retried as
// the same operation and recognised when an earlier try landed).
//
// One delivery: read the record. Completed: done. Held by another attempt whose lease is fresh: give up
// (InFlightRecent; the message is redelivered). Otherwise claim the next action (Absent: a new saga or the
// holder's own next action; StaleTakeover: a stale lease taken over), do its work, mark it sent, call the
// provider, record the outcome. A forward step found sent by an earlier holder (its outcome unknown) is never sent
// again: the saga goes backward, compensating that step too. A compensation found sent is sent again (a
// compensation cannot be skipped; docs/sagas.md says what that costs). A forward call that fails (outcome
// unknown) sends the saga backward the same way; a compensation call that fails fails the delivery.
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>

#include "protocol/builtin_strategies.hpp"
#include "protocol/saga.hpp"
#include "protocol/strategy_support.hpp"

namespace lethe {

namespace {

constexpr ProcessorId kSagaStateProcessor = 0x100;  // beside every step and compensation processor id

// The saga's position, packed into the record's memoized value.
struct Position {
  bool backward = false;  // compensating
  int undo = 0;           // backward: the steps to compensate (undo - 1 down to 0)
  int action = 0;         // forward: the next step; backward: how many compensations are done
  bool sent = false;      // the next action's call went out (its outcome unknown to whoever reads this)

  std::uint64_t pack() const {
    return static_cast<std::uint64_t>(sent) | (static_cast<std::uint64_t>(action) << 1) |
           (static_cast<std::uint64_t>(backward) << 9) | (static_cast<std::uint64_t>(undo) << 10);
  }
  static Position unpack(std::uint64_t word) {
    Position p;
    p.sent = (word & 1u) != 0;
    p.action = static_cast<int>((word >> 1) & 0xffu);
    p.backward = ((word >> 9) & 1u) != 0;
    p.undo = static_cast<int>((word >> 10) & 0xffu);
    return p;
  }
  // The processor of the next action.
  ProcessorId processor() const {
    return backward ? compensation_processor(undo - 1 - action) : step_processor(action);
  }
  bool over(int steps) const { return backward ? action >= undo : action >= steps; }
  Position going_back(int steps_to_undo) const { return Position{true, steps_to_undo, 0, false}; }
};

enum class Write { Applied, Lost, Unknown };

class SagaStateOrchestrator final : public SagaOrchestrator {
 public:
  SagaStateOrchestrator(const ProtocolSection& settings, StoreClient& store, Clock& clock, ProtocolHooks& hooks)
      : max_processing_time_(settings.settings.get<sim::Duration>("max_processing_time")),
        store_(store),
        clock_(clock),
        reporter_(hooks, clock) {}

  SagaOutcome run(MessageId saga, SagaCalls& calls) override {
    steps_ = calls.steps();
    const Key key = make_key(Table::Dedupe, kSagaStateProcessor, saga);
    const StepReply read = execute_step(store_, get_op(key));
    if (!read.reply.has_value()) return SagaOutcome::Failed;
    Lease lease{key, read.reply->previous, false};
    while (true) {
      if (lease.seen && lease.seen->completed_at) {
        return position_of(lease.seen).backward ? SagaOutcome::Compensated : SagaOutcome::Completed;
      }
      const Position position = position_of(lease.seen);
      const ProcessorId processor = position.processor();
      const AttemptId attempt = calls.begin(saga, processor);
      Call call{saga, processor, attempt, key, {}, false, 0};
      const std::optional<SagaOutcome> outcome = act(call, position, lease, calls);
      if (outcome.has_value()) return *outcome;
    }
  }

 private:
  // What this delivery knows of the record, and whether it holds the lease.
  struct Lease {
    Key key = 0;
    std::optional<Item> seen;  // the record as last read or written
    bool held = false;
  };

  static Position position_of(const std::optional<Item>& item) {
    return item && item->memoized ? Position::unpack(*item->memoized) : Position{};
  }

  // One action of the saga by the call begun as `call.attempt`: nullopt = go on with the next action.
  std::optional<SagaOutcome> act(Call& call, Position position, Lease& lease, SagaCalls& calls) {
    if (!claim(call, position, lease, calls)) return SagaOutcome::Failed;
    if (position.sent && !position.backward) {
      // An earlier holder sent this step and its outcome is unknown: never send it twice, undo it instead.
      calls.end(call.attempt, reporter_.skipped(call, std::nullopt));
      return write_or_give_up(call, position.going_back(position.action + 1), lease, calls, true);
    }
    // The work first, then "sent" just before the provider call: a holder that lost its lease while it worked
    // (a pause, slow work) finds out here and sends nothing.
    calls.work(call.id, call.processor, call.attempt);
    reporter_.hooks().crash_point(CrashPoint::AfterStartBeforeEffect, call.id, call.attempt);
    position.sent = true;
    if (const std::optional<SagaOutcome> lost = write_or_give_up(call, position, lease, calls, false)) return lost;
    const std::optional<std::uint64_t> value = calls.call(call.id, call.processor, call.attempt, call.attempt);
    if (!value.has_value() && position.backward) {
      calls.end(call.attempt, reporter_.failed(call));  // the compensation is sent again by a later delivery
      return SagaOutcome::Failed;
    }
    reporter_.hooks().crash_point(CrashPoint::AfterEffectBeforeComplete, call.id, call.attempt);
    call.result.outcome = value.has_value() ? Outcome::Executed : Outcome::Failed;
    call.result.value = value;
    calls.end(call.attempt, call.result);
    if (!value.has_value()) return write_or_give_up(call, position.going_back(position.action + 1), lease, calls, true);
    if (!position.backward && *value == kDeclined) {
      return write_or_give_up(call, position.going_back(position.action), lease, calls, true);
    }
    Position next = position;
    next.sent = false;
    ++next.action;
    return write_or_give_up(call, next, lease, calls, true);
  }

  // Takes the lease for this action (or keeps it). False: the call is ended, the delivery gives up.
  bool claim(Call& call, const Position& position, Lease& lease, SagaCalls& calls) {
    const sim::Time now = clock_.now();
    Basis basis = Basis::Absent;
    if (!lease.held && lease.seen.has_value()) {
      if (now - lease.seen->started_at.value_or(now) < max_processing_time_) {
        reporter_.note(call, Basis::InFlightRecent, lease.seen, now);
        calls.end(call.attempt, reporter_.failed(call));
        return false;
      }
      basis = Basis::StaleTakeover;
    }
    const std::optional<Item> seen = lease.seen;
    const Write write = conditional_write(call, position, lease, now, false);
    if (write != Write::Applied) {
      reporter_.note(call, write == Write::Lost ? Basis::TakeoverLost : Basis::StoreUnavailable, seen, now);
      calls.end(call.attempt, reporter_.failed(call));
      return false;
    }
    reporter_.note(call, basis, seen, now);
    lease.held = true;
    return true;
  }

  // Records `position` (the saga's end when it is over); on a lost lease or an unknown outcome the delivery gives
  // up (Failed). `ended`: the call is already ended.
  std::optional<SagaOutcome> write_or_give_up(Call& call, const Position& position, Lease& lease, SagaCalls& calls,
                                              bool ended) {
    const Write write = conditional_write(call, position, lease, clock_.now(), true);
    if (write == Write::Applied) {
      if (lease.seen->completed_at) return position.backward ? SagaOutcome::Compensated : SagaOutcome::Completed;
      return std::nullopt;
    }
    if (!ended) calls.end(call.attempt, reporter_.failed(call));
    return SagaOutcome::Failed;
  }

  // The conditional write of `position` by `call.attempt`, on the record as `lease` last saw it. `finish`: the
  // saga is over when the position says so (completed_at is set). On success, lease.seen is the written item.
  Write conditional_write(const Call& call, const Position& position, Lease& lease, sim::Time now, bool finish) {
    Condition condition;
    if (!lease.seen.has_value()) {
      condition.require_absent = true;
    } else {
      condition.owner_equals = lease.seen->owner;
      if (lease.seen->started_at) condition.started_at_equals = *lease.seen->started_at;
    }
    Item written = lease.seen.value_or(Item{});
    written.owner = call.attempt;
    written.started_at = now;
    written.memoized = position.pack();
    const bool over = finish && saga_over(position);
    if (over) written.completed_at = now;
    Update update;
    update.owner_mode = Assign::Set;
    update.owner = written.owner;
    update.started_at_mode = Assign::Set;
    update.started_at = now;
    update.memoized_mode = Assign::Set;
    update.memoized = *written.memoized;
    if (over) {
      update.completed_at_mode = Assign::Set;
      update.completed_at = now;
    }
    const StepReply step = execute_step(store_, upsert_op(lease.key, condition, update));
    if (!step.reply.has_value()) return Write::Unknown;
    const std::optional<Item>& previous = step.reply->previous;
    // An earlier try of this same write landed: the record shows exactly what it wrote.
    const bool earlier_try_landed = !step.reply->applied && step.tries > 1 && previous.has_value() &&
                                    previous->owner == written.owner && previous->started_at == written.started_at &&
                                    previous->memoized == written.memoized;
    if (!step.reply->applied && !earlier_try_landed) {
      lease.seen = previous;
      lease.held = false;
      return Write::Lost;
    }
    lease.seen = written;
    return Write::Applied;
  }

  bool saga_over(const Position& position) const { return position.over(steps_); }

  sim::Duration max_processing_time_;
  StoreClient& store_;
  Clock& clock_;
  Reporter reporter_;
  int steps_ = 0;  // calls.steps(): the same for every saga of a run, so fibers sharing this orchestrator agree
};

// Plain messages are not sagas: the loader refuses protocol.kind = "saga-state" without saga.steps.
class NotASaga final : public Strategy {
 public:
  ProtectResult protect(MessageId, ProcessorId, AttemptId, const Effect&) override {
    throw std::invalid_argument("protocol.kind \"saga-state\" drives sagas only: set saga.steps");
  }
};

}  // namespace

StrategyInfo saga_state_strategy() {
  StrategyInfo info;
  info.name = "saga-state";
  info.description = "sagas: the saga's state in one store record, advanced by conditional writes under a lease";
  info.keys = {max_processing_time_key()};
  info.message_record_processor = kSagaStateProcessor;
  info.factory = [](const ProtocolSection&, StoreClient&, Clock&, ProtocolHooks&,
                    sim::Rng) -> std::unique_ptr<Strategy> { return std::make_unique<NotASaga>(); };
  info.saga = [](const ProtocolSection& settings, StoreClient& store, Clock& clock, ProtocolHooks& hooks,
                 sim::Rng /*rng*/) -> std::unique_ptr<SagaOrchestrator> {
    return std::make_unique<SagaStateOrchestrator>(settings, store, clock, hooks);
  };
  info.bases = {Basis::Absent, Basis::StaleTakeover, Basis::InFlightRecent, Basis::TakeoverLost,
                Basis::StoreUnavailable};
  info.windows = {
      {Cause::CrashAfterEffect, WindowOpens::Always, {},
       "a compensation's sender died before recording it: the next holder sends the compensation again"},
      {Cause::CompletionLost, WindowOpens::Always, {},
       "a compensation's sender finished but its record write never landed: the next holder sends it again"},
      {Cause::TakeoverWhileAlive, WindowOpens::Always, {},
       "a compensation's sender was alive but slower than its lease: the next holder sends it again"},
      {Cause::HerdTakeover, WindowOpens::Always, {},
       "a compensation re-sent by two holders in turn, each after a stale lease"},
  };
  return info;
}

}  // namespace lethe
