#include "protocol/strategies.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace lethe {

const char* to_string(Outcome outcome) {
  switch (outcome) {
    case Outcome::Executed: return "executed";
    case Outcome::Skipped: return "skipped";
    case Outcome::Failed: return "failed";
  }
  return "?";
}

namespace {

// The reply of a write step and how many tries it took (a reply after more than one try may show the effect of
// an earlier try whose outcome was unknown).
struct StepReply {
  std::optional<Reply> reply;
  int tries = 0;
};

// time + duration (REQUIRES duration >= 0), capped at kTimeMax: a huge ttl or max_wait never wraps around.
sim::Time saturating_add(sim::Time time, sim::Duration duration) {
  return time > sim::kTimeMax - duration ? sim::kTimeMax : time + duration;
}

StepReply execute_step(StoreClient& store, const Op& op) {
  StepReply step;
  while (step.tries < kStoreAttemptsPerStep) {
    ++step.tries;
    step.reply = store.execute(op);
    if (step.reply.has_value()) return step;
  }
  return step;
}

// The identity of one protect() call, and what it reports through the hooks.
struct Call {
  MessageId id = 0;
  ProcessorId processor = 0;
  AttemptId attempt = 0;
  Key key = 0;
  ProtectResult result;
  bool waiting = false;
  sim::Time wait_began = 0;  // local time of the first Wait decision
};

class Reporter {
 public:
  Reporter(ProtocolHooks& hooks, Clock& clock) : hooks_(hooks), clock_(clock) {}

  void note(const Call& call, Basis basis, const std::optional<Item>& seen, sim::Time local_time) {
    DecisionNote note;
    note.id = call.id;
    note.processor = call.processor;
    note.attempt = call.attempt;
    note.basis = basis;
    note.seen = seen;
    note.local_time = local_time;
    hooks_.decided(note);
  }

  void begin_wait(Call& call, sim::Time local_time) {
    if (call.waiting) return;
    call.waiting = true;
    call.wait_began = local_time;
    call.result.waited = true;
  }

  // Leaves the wait for good (once per call): records the wait time and reports it.
  void finish_wait(Call& call) {
    if (!call.waiting) return;
    call.waiting = false;
    call.result.wait_time = std::max<sim::Duration>(clock_.now() - call.wait_began, 0);
    hooks_.waited(call.id, call.processor, call.attempt, call.result.wait_time);
  }

  ProtectResult failed(Call& call) {
    finish_wait(call);
    call.result.outcome = Outcome::Failed;
    call.result.value.reset();
    return call.result;
  }

  ProtectResult skipped(Call& call, std::optional<std::uint64_t> value) {
    finish_wait(call);
    call.result.outcome = Outcome::Skipped;
    call.result.value = value;
    return call.result;
  }

  ProtocolHooks& hooks() { return hooks_; }

 private:
  ProtocolHooks& hooks_;
  Clock& clock_;
};

sim::Duration required(const std::optional<sim::Duration>& value, const char* key, ProtocolKind kind) {
  if (!value.has_value() || *value <= 0) {
    throw std::invalid_argument(std::string("make_strategy: protocol.") + key + " must be set and positive for \"" +
                                to_string(kind) + "\"");
  }
  return *value;
}

// ---------------------------------------------------------------- none

class NoneStrategy final : public Strategy {
 public:
  NoneStrategy(Clock& clock, ProtocolHooks& hooks) : clock_(clock), reporter_(hooks, clock) {}

  ProtectResult protect(MessageId id, ProcessorId processor, AttemptId attempt, const Effect& effect) override {
    Call call{id, processor, attempt, make_key(Table::Dedupe, processor, id), {}, false, 0};
    reporter_.note(call, Basis::Unprotected, std::nullopt, clock_.now());
    reporter_.hooks().crash_point(CrashPoint::AfterStartBeforeEffect, id, attempt);
    const std::optional<std::uint64_t> value = effect();
    if (!value.has_value()) return reporter_.failed(call);
    reporter_.hooks().crash_point(CrashPoint::AfterEffectBeforeComplete, id, attempt);
    call.result.outcome = Outcome::Executed;
    call.result.value = value;
    return call.result;
  }

 private:
  Clock& clock_;
  Reporter reporter_;
};

// ---------------------------------------------------------------- check-then-insert and record-after

// Both read first and write a completed record after the effect; they differ in that write:
// check-then-insert overwrites (Put), record-after inserts only if there is no record (conditional upsert).
class ReadThenRecordStrategy final : public Strategy {
 public:
  enum class Write { Overwrite, InsertIfAbsent };

  ReadThenRecordStrategy(const ProtocolSection& settings, Write write, StoreClient& store, Clock& clock,
                         ProtocolHooks& hooks)
      : write_(write),
        ttl_(required(settings.ttl, "ttl", settings.kind)),
        memoize_(settings.memoize),
        expired_wins_(settings.expired_wins),
        store_(store),
        clock_(clock),
        reporter_(hooks, clock) {}

  ProtectResult protect(MessageId id, ProcessorId processor, AttemptId attempt, const Effect& effect) override {
    Call call{id, processor, attempt, make_key(Table::Dedupe, processor, id), {}, false, 0};
    const sim::Time read_at = clock_.now();
    const StepReply read = execute_step(store_, get_op(call.key));
    if (!read.reply.has_value()) {
      reporter_.note(call, Basis::StoreUnavailable, std::nullopt, read_at);
      return reporter_.failed(call);
    }
    const std::optional<Item>& seen = read.reply->previous;
    const bool expired = seen.has_value() && expired_wins_ && seen->expired_at(read_at);
    if (seen.has_value() && seen->completed_at.has_value() && !expired) {
      reporter_.note(call, Basis::Completed, seen, read_at);
      return reporter_.skipped(call, memoize_ ? seen->memoized : std::nullopt);
    }
    // No record, an expired one (expired_wins), or one that is not completed: these strategies do not wait.
    const Basis basis = seen.has_value() && seen->completed_at.has_value() ? Basis::ExpiredCompleted : Basis::Absent;
    reporter_.note(call, basis, seen, read_at);
    reporter_.hooks().crash_point(CrashPoint::AfterStartBeforeEffect, id, attempt);
    const std::optional<std::uint64_t> value = effect();
    if (!value.has_value()) return reporter_.failed(call);
    reporter_.hooks().crash_point(CrashPoint::AfterEffectBeforeComplete, id, attempt);
    const bool applied = record(call, read_at, *value);
    reporter_.hooks().completed(id, processor, attempt, applied);
    call.result.outcome = Outcome::Executed;
    call.result.value = value;
    return call.result;
  }

 private:
  bool record(const Call& call, sim::Time read_at, std::uint64_t value) {
    const sim::Time now = clock_.now();
    if (write_ == Write::Overwrite) {
      Item item;
      item.started_at = read_at;
      item.completed_at = now;
      item.expires_on = saturating_add(now, ttl_);
      item.owner = call.attempt;
      if (memoize_) item.memoized = value;
      return execute_step(store_, put_op(call.key, item)).reply.has_value();
    }
    Condition condition;
    Update update;
    if (expired_wins_) {
      condition.absent_or_expired_at = now;
      update.replace_expired_at = now;
    } else {
      condition.require_absent = true;
    }
    update.started_at_mode = Assign::Set;
    update.started_at = read_at;
    update.owner_mode = Assign::Set;
    update.owner = call.attempt;
    update.completed_at_mode = Assign::Set;
    update.completed_at = now;
    update.expires_on_mode = Assign::Set;
    update.expires_on = saturating_add(now, ttl_);
    if (memoize_) {
      update.memoized_mode = Assign::Set;
      update.memoized = value;
    }
    const StepReply step = execute_step(store_, upsert_op(call.key, condition, update));
    if (!step.reply.has_value()) return false;
    if (step.reply->applied) return true;
    // Rejected: a record exists. Ours only if an earlier try of this step landed.
    return step.tries > 1 && step.reply->previous.has_value() && step.reply->previous->owner == call.attempt;
  }

  Write write_;
  sim::Duration ttl_;
  bool memoize_;
  bool expired_wins_;
  StoreClient& store_;
  Clock& clock_;
  Reporter reporter_;
};

// ---------------------------------------------------------------- inbox

class InboxStrategy final : public Strategy {
 public:
  InboxStrategy(const ProtocolSection& settings, StoreClient& store, Clock& clock, ProtocolHooks& hooks)
      : ttl_(required(settings.ttl, "ttl", settings.kind)),
        memoize_(settings.memoize),
        expired_wins_(settings.expired_wins),
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

// ---------------------------------------------------------------- mnemosyne

// Poll intervals of one wait: a distribution sample each time, or base, base*factor, ... capped.
class PollSchedule {
 public:
  explicit PollSchedule(const Poll& poll) : poll_(poll), next_backoff_(poll.backoff_base) {}

  sim::Duration next(sim::Rng& rng) {
    if (poll_.kind == PollKind::Distribution) return std::max<sim::Duration>(poll_.interval.sample(rng), 0);
    const sim::Duration current = std::min(next_backoff_, poll_.backoff_cap);
    const double grown = static_cast<double>(current) * poll_.backoff_factor;
    next_backoff_ = grown >= static_cast<double>(poll_.backoff_cap) ? poll_.backoff_cap
                                                                    : static_cast<sim::Duration>(grown);
    return current;
  }

 private:
  const Poll& poll_;
  sim::Duration next_backoff_;
};

class MnemosyneStrategy final : public Strategy {
 public:
  MnemosyneStrategy(const ProtocolSection& settings, StoreClient& store, Clock& clock, ProtocolHooks& hooks,
                    sim::Rng rng)
      : settings_(settings),
        max_processing_time_(required(settings.max_processing_time, "max_processing_time", settings.kind)),
        ttl_(required(settings.ttl, "ttl", settings.kind)),
        store_(store),
        clock_(clock),
        reporter_(hooks, clock),
        rng_(std::move(rng)) {
    if (settings.max_wait < 0) throw std::invalid_argument("make_strategy: protocol.max_wait must be >= 0");
  }

  ProtectResult protect(MessageId id, ProcessorId processor, AttemptId attempt, const Effect& effect) override;

 private:
  // What entitles an attempt that runs the effect to complete (see "Complete" in the header).
  enum class Claim { Owner, SeenRecord, NoRecord };
  // Where the record being decided on came from.
  enum class Source { StartWrite, TakeoverReply, PollRead };

  Op start_write(const Call& call, sim::Time now) const;
  Op takeover_write(const Call& call, const Item& stale, sim::Time now) const;
  Op completion(const Call& call, Claim claim, const std::optional<Item>& seen, sim::Time decided_at,
                sim::Time now, std::uint64_t value) const;
  ProtectResult run(Call& call, const Effect& effect, Claim claim, const std::optional<Item>& seen,
                    sim::Time decided_at);
  bool complete(const Call& call, Claim claim, const std::optional<Item>& seen, sim::Time decided_at,
                std::uint64_t value);
  std::optional<Reply> poll_read(Key key);
  std::optional<std::uint64_t> memo(const std::optional<Item>& record) const {
    return settings_.memoize && record.has_value() ? record->memoized : std::nullopt;
  }

  ProtocolSection settings_;
  sim::Duration max_processing_time_;
  sim::Duration ttl_;
  StoreClient& store_;
  Clock& clock_;
  Reporter reporter_;
  sim::Rng rng_;
};

Op MnemosyneStrategy::start_write(const Call& call, sim::Time now) const {
  Update update;
  update.started_at_mode = Assign::SetIfAbsent;
  update.started_at = now;
  update.owner_mode = Assign::SetIfAbsent;
  update.owner = call.attempt;
  if (settings_.expires_on == ExpiresOn::AtStart) {
    update.expires_on_mode = Assign::SetIfAbsent;
    update.expires_on = saturating_add(now, ttl_);
  }
  if (settings_.expired_wins) update.replace_expired_at = now;
  return upsert_op(call.key, Condition{}, update);
}

Op MnemosyneStrategy::takeover_write(const Call& call, const Item& stale, sim::Time now) const {
  Condition condition;
  condition.require_present = true;
  condition.started_at_equals = stale.started_at.optional();
  condition.require_not_completed = true;
  Update update;
  update.started_at_mode = Assign::Set;
  update.started_at = now;
  update.owner_mode = Assign::Set;
  update.owner = call.attempt;
  if (settings_.expires_on == ExpiresOn::AtStart) {
    update.expires_on_mode = Assign::Set;
    update.expires_on = saturating_add(now, ttl_);
  }
  return upsert_op(call.key, condition, update);
}

Op MnemosyneStrategy::completion(const Call& call, Claim claim, const std::optional<Item>& seen,
                                 sim::Time decided_at, sim::Time now, std::uint64_t value) const {
  Update update;
  update.completed_at_mode = Assign::Set;
  update.completed_at = now;
  update.expires_on_mode = Assign::Set;
  update.expires_on = saturating_add(now, ttl_);
  if (settings_.memoize) {
    update.memoized_mode = Assign::Set;
    update.memoized = value;
  }
  update.started_at_mode = Assign::SetIfAbsent;  // only when the completion (re)creates the record
  update.started_at = decided_at;
  update.owner_mode = Assign::SetIfAbsent;
  update.owner = call.attempt;
  Condition condition;
  if (settings_.complete == Complete::Fenced) {
    switch (claim) {
      case Claim::Owner:
        condition.owner_equals = call.attempt;
        condition.require_not_completed = true;
        break;
      case Claim::SeenRecord:
        condition.require_present = true;
        if (seen.has_value()) condition.started_at_equals = seen->started_at.optional();
        condition.require_not_completed = true;
        break;
      case Claim::NoRecord:
        if (settings_.expired_wins) {
          condition.absent_or_expired_at = now;
          update.replace_expired_at = now;
        } else {
          condition.require_absent = true;
        }
        break;
    }
  }
  return upsert_op(call.key, condition, update);
}

std::optional<Reply> MnemosyneStrategy::poll_read(Key key) {
  if (settings_.poll_read.kind == PollReadKind::Eventual) return store_.read_eventual(key);
  return store_.execute(get_op(key));
}

ProtectResult MnemosyneStrategy::protect(MessageId id, ProcessorId processor, AttemptId attempt,
                                         const Effect& effect) {
  Call call{id, processor, attempt, make_key(Table::Dedupe, processor, id), {}, false, 0};
  PollSchedule poll(settings_.poll);
  for (;;) {  // one start write per iteration
    const sim::Time start_at = clock_.now();
    const StepReply start = execute_step(store_, start_write(call, start_at));
    if (!start.reply.has_value()) {
      reporter_.note(call, Basis::StoreUnavailable, std::nullopt, start_at);
      return reporter_.failed(call);
    }
    if (start.tries > 1 && start.reply->previous.has_value() && start.reply->previous->owner == attempt) {
      // An earlier try whose reply was lost created our record; what it found before is unknown (it was absent).
      reporter_.note(call, Basis::Absent, std::nullopt, start_at);
      return run(call, effect, Claim::Owner, std::nullopt, start_at);
    }
    std::optional<Item> seen = start.reply->previous;
    sim::Time decided_at = start_at;
    Source source = Source::StartWrite;
    bool lost_takeover = false;
    for (;;) {  // decide on `seen`, act, and re-decide after each wait or lost takeover
      const DecisionAndBasis verdict =
          decide_with_basis(seen, decided_at, max_processing_time_, settings_.expired_wins);
      if (verdict.decision == Decision::Skip) {
        reporter_.note(call, verdict.basis, seen, decided_at);
        return reporter_.skipped(call, memo(seen));
      }
      if (verdict.decision == Decision::Process && verdict.basis == Basis::StaleTakeover) {
        if (settings_.takeover == Takeover::IfNotExists) {
          reporter_.note(call, Basis::StaleTakeover, seen, decided_at);
          return run(call, effect, Claim::SeenRecord, seen, decided_at);
        }
        const sim::Time takeover_at = clock_.now();
        const StepReply takeover = execute_step(store_, takeover_write(call, *seen, takeover_at));
        if (!takeover.reply.has_value()) {
          reporter_.note(call, Basis::StoreUnavailable, seen, takeover_at);
          return reporter_.failed(call);
        }
        const std::optional<Item>& now_there = takeover.reply->previous;
        if (takeover.reply->applied || (takeover.tries > 1 && now_there.has_value() && now_there->owner == attempt)) {
          reporter_.note(call, Basis::StaleTakeover, seen, decided_at);
          return run(call, effect, Claim::Owner, seen, takeover_at);
        }
        seen = now_there;  // another attempt won the fenced write, completed it, or the record vanished
        decided_at = takeover_at;
        source = Source::TakeoverReply;
        lost_takeover = true;
        continue;
      }
      if (verdict.decision == Decision::Process) {  // Absent or ExpiredCompleted
        if (source == Source::StartWrite) {
          reporter_.note(call, verdict.basis, seen, decided_at);
          return run(call, effect, Claim::Owner, seen, decided_at);
        }
        if (source == Source::TakeoverReply) break;  // the record vanished under a consistent write: start again
        reporter_.note(call, verdict.basis, seen, decided_at);  // a poll read showed no (live) record
        return run(call, effect, Claim::NoRecord, seen, decided_at);
      }
      // Wait.
      reporter_.note(call, lost_takeover ? Basis::TakeoverLost : Basis::InFlightRecent, seen, decided_at);
      lost_takeover = false;
      reporter_.begin_wait(call, decided_at);
      const sim::Time deadline = saturating_add(call.wait_began, settings_.max_wait);
      std::optional<Reply> read;
      while (!read.has_value()) {
        const sim::Time now = clock_.now();
        if (now >= deadline) {
          if (settings_.on_max_wait == OnMaxWait::Error) {
            reporter_.note(call, Basis::MaxWaitError, seen, now);
            return reporter_.failed(call);
          }
          reporter_.note(call, Basis::MaxWaitProcess, seen, now);
          return run(call, effect, Claim::SeenRecord, seen, now);
        }
        clock_.sleep(std::min(poll.next(rng_), deadline - now));
        read = poll_read(call.key);
      }
      seen = read->previous;
      decided_at = clock_.now();
      source = Source::PollRead;
    }
  }
}

ProtectResult MnemosyneStrategy::run(Call& call, const Effect& effect, Claim claim, const std::optional<Item>& seen,
                                     sim::Time decided_at) {
  reporter_.finish_wait(call);
  reporter_.hooks().crash_point(CrashPoint::AfterStartBeforeEffect, call.id, call.attempt);
  const std::optional<std::uint64_t> value = effect();
  if (!value.has_value()) return reporter_.failed(call);
  reporter_.hooks().crash_point(CrashPoint::AfterEffectBeforeComplete, call.id, call.attempt);
  const bool applied = complete(call, claim, seen, decided_at, *value);
  reporter_.hooks().completed(call.id, call.processor, call.attempt, applied);
  call.result.outcome = Outcome::Executed;
  call.result.value = value;
  return call.result;
}

bool MnemosyneStrategy::complete(const Call& call, Claim claim, const std::optional<Item>& seen,
                                 sim::Time decided_at, std::uint64_t value) {
  const sim::Time now = clock_.now();
  const StepReply step = execute_step(store_, completion(call, claim, seen, decided_at, now, value));
  if (!step.reply.has_value()) return false;
  if (step.reply->applied) return true;
  // Rejected. After a lost reply, the record may show that an earlier try of this same write landed.
  const std::optional<Item>& there = step.reply->previous;
  return step.tries > 1 && there.has_value() && there->completed_at == now &&
         (!settings_.memoize || there->memoized == value);
}

}  // namespace

std::unique_ptr<Strategy> make_strategy(const ProtocolSection& settings, StoreClient& store, Clock& clock,
                                        ProtocolHooks& hooks, sim::Rng rng) {
  switch (settings.kind) {
    case ProtocolKind::None:
      return std::make_unique<NoneStrategy>(clock, hooks);
    case ProtocolKind::CheckThenInsert:
      return std::make_unique<ReadThenRecordStrategy>(settings, ReadThenRecordStrategy::Write::Overwrite, store,
                                                      clock, hooks);
    case ProtocolKind::RecordAfter:
      return std::make_unique<ReadThenRecordStrategy>(settings, ReadThenRecordStrategy::Write::InsertIfAbsent, store,
                                                      clock, hooks);
    case ProtocolKind::Mnemosyne:
      return std::make_unique<MnemosyneStrategy>(settings, store, clock, hooks, std::move(rng));
    case ProtocolKind::Inbox:
      return std::make_unique<InboxStrategy>(settings, store, clock, hooks);
  }
  throw std::invalid_argument("make_strategy: unknown protocol kind");
}

}  // namespace lethe
