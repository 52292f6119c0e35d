// protocol/mnemosyne.cpp — strategy "mnemosyne": the two-phase record with the decision table
// (protocol/decision.hpp) and the memoized result.
//
// Step by step:
//   0. local_cache (protocol/local_cache.hpp, off by default): a completed record this consumer cached (its own
//      completion, or one it read completed), still trusted, is decided on at once: Skip on Completed with its
//      memoized value (a payload_check refusal on another payload), no store call. Released keys leave the cache.
//   1. Start write: an Upsert that returns the previous item (ALL_OLD) and sets started_at = now and owner =
//      attempt only if absent (if_not_exists); expires_on = now + ttl (if absent) when expires_on = "at-start";
//      Update::replace_expired_at = now when the precedence is expired-first (expired_wins; an expired record is
//      replaced as if evicted). Under completed-first nothing is replaced: a completed expired record is
//      skipped, an expired in-flight one is taken over by the fenced takeover write (basis StaleTakeover).
//      The previous item is decided with decide_with_basis() at the same `now` the write carried.
//   2. Process on Absent / ExpiredCompleted: our write created the record; we own it.
//      Skip on Completed: return the memoized value (nullopt when memoize = false).
//      Process on StaleTakeover: takeover = "conditional": a fenced Upsert (started_at_equals the stale
//        started_at, not completed) sets started_at = now, owner = attempt (and expires_on when at-start): one
//        waiter wins; a loser re-decides on the item the rejected write returned (Wait -> Basis::TakeoverLost,
//        Skip, another takeover, or, if the record vanished, a new start write). takeover = "if-not-exists":
//        nothing is written (started_at is never refreshed); every attempt that finds the stale record runs the
//        effect without owning it.
//      Wait on InFlightRecent: sleep a poll interval (protocol.poll: a Distribution sample, or
//        backoff(base, factor, cap) restarting at base for each protect() call), re-read the record
//        (StoreClient::read_eventual when poll_read = eventual, a consistent get otherwise) and re-decide at the
//        local clock after the read. poll_with = "start-write" polls as both real libraries do: the start write
//        again (poll_read does not apply: it is a write to the primary), decided like the first one; on a
//        store that evicted the record it re-creates it, owned by this waiter, which then runs the effect as
//        its owner instead of without a claim. Each read's decision is acted upon as the table says — including
//        Process on "absent": a waiter that reads no record runs the effect without a claim. With consistent reads that
//        only happens after TTL eviction; an eventual read from a lagging replica can show "absent" while the
//        owner is still at work (the duplicate poll_read = eventual reproduces). The last sleep is shortened so
//        that the wait ends exactly max_wait after the first Wait decision; a Wait decision at or after that
//        instant ends the wait: on_max_wait = "error" -> Failed (MaxWaitError), "process" -> run the effect
//        without a claim (MaxWaitProcess, the Rust port's behaviour), "skip" -> Skipped with nothing handed back,
//        the message acknowledged as a duplicate on its InFlightRecent decision (Camel's in-flight duplicate).
//        max_wait = 0 refuses at once: no wait begins and none is counted (waited = false).
//   3. Run: hooks.crash_point(AfterStartBeforeEffect), the effect, hooks.crash_point(AfterEffectBeforeComplete).
//      A failed effect (nullopt: a non-retryable error, a refused call, retries exhausted) fails for good:
//        - memoize_failures = true: the failure is the record's result. A completion write under the same fence as
//          a successful one (below) sets completed_at and expires_on and removes any memoized value; later
//          deliveries skip the completed record and are handed the failure (ProtectResult::memoized_failure).
//          The attempt itself returns Failed (its effect failed).
//        - else on_failure = "keep" (default): the in-flight record stays as it is (the effect may have
//          half-happened, like a crash): the redelivery waits until the record is stale, then takes over.
//        - else on_failure = "release": an owner deletes its record, conditionally: only while it is still its own
//          (owner_equals(attempt)) and not completed. A takeover that landed first (the owner was slow) or a
//          completion by another attempt makes the delete a no-op, so a release never removes a record that is no
//          longer the failing attempt's. A non-owner (if-not-exists takeover, max-wait "process", a waiter that
//          read "absent") has no record of its own and releases nothing. An unanswered delete is retried like
//          every step; if every try is unknown the record stays (as with "keep").
//        hooks.released(applied) reports a release write (landed or not).
//   4. Complete: an Upsert setting completed_at = now, memoized = value (when memoize), expires_on = now + ttl
//      (also with "at-start"; completion refreshes it), and started_at / owner if absent (so a completion can
//      recreate an evicted record). complete = "blind": unconditional (a timed-out owner overwrites completed_at
//      and the memoized value). complete = "fenced": only a completion that still matches what the attempt
//      decided on lands, and never over a completed record:
//        - an owner (our start write or our fenced takeover): owner_equals(attempt) and not completed;
//        - a non-owner that decided on a present record (if-not-exists takeover, max-wait "process"):
//          started_at_equals(that record's started_at), present and not completed — so exactly one of a herd
//          completes, and a late owner never overwrites an earlier completion;
//        - a non-owner that read "absent": only if there is still no record (or an expired one, when
//          expired_wins; then it is replaced).
//      hooks.completed(applied) reports whether the write landed. The result is Executed with the effect's own
//      value whether or not the completion landed (the effect did happen) — unless on_completion_failure = "fail"
//      and the completion got no answer at all (every try unknown): then the attempt fails (Failed) and the
//      message is delivered again, as a library that raises on a failed save does. A completion the store
//      answered by rejecting it (another attempt took the record over or completed it) is not a failed write:
//      the attempt returns Executed either way.
//   Payloads (payload_check = "fingerprint", as Powertools' payload_validation_jmespath): every write that claims
//   or completes the record also stores the fingerprint of the delivery's payload (the start write only when it
//   creates the record; a takeover and a completion set it). A delivery that would skip or wait on a live record
//   stored for another payload of its id is refused unprocessed instead (ProtectResult::payload_mismatch,
//   hooks.payload_refused; the decision it would have taken is still reported): the record is left as it is and
//   the message is acknowledged, as a 422 answers a client. A record that may be replaced (absent, expired, stale:
//   taken over) is not compared, as Powertools overwrites an expired record without validating it, nor is one
//   that holds no fingerprint. "off" (default): no fingerprint is written or read.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <utility>

#include "protocol/builtin_strategies.hpp"
#include "protocol/decision.hpp"
#include "protocol/local_cache.hpp"
#include "protocol/strategy_support.hpp"

namespace lethe {

namespace {

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

// Its [protocol] keys (mnemosyne_keys() below), typed.
struct MnemosyneSettings {
  sim::Duration max_processing_time = 0;
  sim::Duration ttl = 0;
  Poll poll;
  sim::Duration max_wait = 0;
  OnMaxWait on_max_wait = OnMaxWait::Error;
  bool memoize = true;
  Takeover takeover = Takeover::Conditional;
  Complete complete = Complete::Fenced;
  PollRead poll_read;
  PollWith poll_with = PollWith::Read;
  ExpiresOn expires_on = ExpiresOn::AtComplete;
  Precedence precedence = Precedence::ExpiredFirst;  // effective: never ExpiredWins
  bool release_on_failure = false;      // on_failure = "release"
  bool fail_on_lost_completion = false;  // on_completion_failure = "fail"
  bool memoize_failures = false;
  bool payload_check = false;  // payload_check = "fingerprint"
  LocalCache local_cache;      // size 0: off
};

constexpr const char* kOnFailureKeep = "keep";
constexpr const char* kOnFailureRelease = "release";
constexpr const char* kOnCompletionFailureAck = "ack";
constexpr const char* kOnCompletionFailureFail = "fail";
constexpr const char* kPayloadCheckOff = "off";
constexpr const char* kPayloadCheckFingerprint = "fingerprint";

MnemosyneSettings read_settings(const StrategySettings& s) {
  MnemosyneSettings m;
  m.max_processing_time = s.get<sim::Duration>("max_processing_time");
  m.ttl = s.get<sim::Duration>("ttl");
  m.poll = s.get<Poll>("poll");
  m.max_wait = s.get<sim::Duration>("max_wait");
  m.on_max_wait = word_setting(s, "on_max_wait", {OnMaxWait::Error, OnMaxWait::Process, OnMaxWait::Skip});
  m.memoize = s.get<bool>("memoize");
  m.takeover = word_setting(s, "takeover", {Takeover::Conditional, Takeover::IfNotExists});
  m.complete = word_setting(s, "complete", {Complete::Fenced, Complete::Blind});
  m.poll_read = s.get<PollRead>("poll_read");
  m.poll_with = word_setting(s, "poll_with", {PollWith::Read, PollWith::StartWrite});
  m.expires_on = word_setting(s, "expires_on", {ExpiresOn::AtComplete, ExpiresOn::AtStart});
  m.precedence = precedence_setting(s);
  m.release_on_failure = s.get<std::string>("on_failure") == kOnFailureRelease;
  m.fail_on_lost_completion = s.get<std::string>("on_completion_failure") == kOnCompletionFailureFail;
  m.memoize_failures = s.get<bool>("memoize_failures");
  m.payload_check = s.get<std::string>("payload_check") == kPayloadCheckFingerprint;
  m.local_cache = s.get<LocalCache>("local_cache");
  return m;
}

class MnemosyneStrategy final : public Strategy {
 public:
  MnemosyneStrategy(const ProtocolSection& settings, StoreClient& store, Clock& clock, ProtocolHooks& hooks,
                    sim::Rng rng)
      : settings_(read_settings(settings.settings)),
        max_processing_time_(settings_.max_processing_time),
        ttl_(settings_.ttl),
        expired_first_(settings_.precedence == Precedence::ExpiredFirst),
        store_(store),
        clock_(clock),
        reporter_(hooks, clock),
        rng_(std::move(rng)),
        cache_(settings_.local_cache) {}

  ProtectResult protect(MessageId id, ProcessorId processor, AttemptId attempt, const Effect& effect) override {
    return protect_payload(id, processor, attempt, payload_fingerprint(id, 0), effect);
  }
  ProtectResult protect_payload(MessageId id, ProcessorId processor, AttemptId attempt, PayloadFingerprint payload,
                                const Effect& effect) override {
    Call call{id, processor, attempt, make_key(Table::Dedupe, processor, id), {}, false, 0, payload};
    if (std::optional<ProtectResult> cached = from_cache(call)) return *cached;
    return protect(call, effect);
  }

 private:
  ProtectResult protect(Call& call, const Effect& effect);
  // What entitles an attempt that runs the effect to complete (see "Complete" in the header).
  enum class Claim { Owner, SeenRecord, NoRecord };
  // Where the record being decided on came from.
  enum class Source { StartWrite, TakeoverReply, PollRead };

  Op start_write(const Call& call, sim::Time now) const;
  Op takeover_write(const Call& call, const Item& stale, sim::Time now) const;
  // value nullopt: the effect failed and the failure is memoized (no memoized value, the record completed).
  Op completion(const Call& call, Claim claim, const std::optional<Item>& seen, sim::Time decided_at,
                sim::Time now, std::optional<std::uint64_t> value) const;
  ProtectResult run(Call& call, const Effect& effect, Claim claim, const std::optional<Item>& seen,
                    sim::Time decided_at);
  // What became of a completion write.
  enum class Landed { Yes, Rejected, Unanswered };
  Landed complete(const Call& call, Claim claim, const std::optional<Item>& seen, sim::Time decided_at,
                  std::optional<std::uint64_t> value);
  ProtectResult effect_failed(Call& call, Claim claim, const std::optional<Item>& seen, sim::Time decided_at);
  // Skip on a completed record read from the store: cached (local_cache), then handed back.
  ProtectResult skip(Call& call, const std::optional<Item>& record);
  // The skipped result of `record`: its memoized value, or its memoized failure.
  ProtectResult hand_back(Call& call, const std::optional<Item>& record);
  // max_wait ran out at `now` on `seen`, still in flight: on_max_wait decides.
  ProtectResult waited_out(Call& call, const Effect& effect, const std::optional<Item>& seen, sim::Time now);
  // payload_check: the delivery would skip or wait on a record kept for another payload.
  bool refuses_payload(const Call& call, const DecisionAndBasis& verdict, const std::optional<Item>& seen) const;
  ProtectResult refuse_payload(Call& call, const DecisionAndBasis& verdict, bool lost_takeover,
                               const std::optional<Item>& seen, sim::Time decided_at);
  void stamp_payload(Update& update, const Call& call, Assign mode) const {
    if (!settings_.payload_check) return;
    update.payload_mode = mode;
    update.payload = call.payload;
  }
  std::optional<Reply> poll_read(Key key);
  // local_cache: a completed record this consumer has cached skips the delivery without a store call.
  std::optional<ProtectResult> from_cache(Call& call);
  void cache_completion(const Call& call, sim::Time decided_at, std::optional<std::uint64_t> value);
  std::optional<std::uint64_t> memo(const std::optional<Item>& record) const {
    return settings_.memoize && record.has_value() ? record->memoized : std::nullopt;
  }

  MnemosyneSettings settings_;
  sim::Duration max_processing_time_;
  sim::Duration ttl_;
  bool expired_first_;  // an expired record is replaced as if absent (precedence expired-first)
  StoreClient& store_;
  Clock& clock_;
  Reporter reporter_;
  sim::Rng rng_;
  LocalRecordCache cache_;
};

Op MnemosyneStrategy::start_write(const Call& call, sim::Time now) const {
  Update update;
  update.started_at_mode = Assign::SetIfAbsent;
  update.started_at = now;
  update.owner_mode = Assign::SetIfAbsent;
  update.owner = call.attempt;
  stamp_payload(update, call, Assign::SetIfAbsent);
  if (settings_.expires_on == ExpiresOn::AtStart) {
    update.expires_on_mode = Assign::SetIfAbsent;
    update.expires_on = saturating_add(now, ttl_);
  }
  if (expired_first_) update.replace_expired_at = now;
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
  stamp_payload(update, call, Assign::Set);
  if (settings_.expires_on == ExpiresOn::AtStart) {
    update.expires_on_mode = Assign::Set;
    update.expires_on = saturating_add(now, ttl_);
  }
  return upsert_op(call.key, condition, update);
}

Op MnemosyneStrategy::completion(const Call& call, Claim claim, const std::optional<Item>& seen,
                                 sim::Time decided_at, sim::Time now, std::optional<std::uint64_t> value) const {
  Update update;
  update.completed_at_mode = Assign::Set;
  update.completed_at = now;
  update.expires_on_mode = Assign::Set;
  update.expires_on = saturating_add(now, ttl_);
  if (!value.has_value()) {
    update.memoized_mode = Assign::Remove;  // the failure is the result: no value to hand back
  } else if (settings_.memoize) {
    update.memoized_mode = Assign::Set;
    update.memoized = *value;
  }
  update.started_at_mode = Assign::SetIfAbsent;  // only when the completion (re)creates the record
  update.started_at = decided_at;
  update.owner_mode = Assign::SetIfAbsent;
  update.owner = call.attempt;
  stamp_payload(update, call, Assign::Set);
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
        if (expired_first_) {
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

std::optional<ProtectResult> MnemosyneStrategy::from_cache(Call& call) {
  if (!cache_.enabled()) return std::nullopt;
  const sim::Time now = clock_.now();
  const std::optional<Item> cached = cache_.find(call.key, now);
  if (!cached) return std::nullopt;
  const DecisionAndBasis verdict{Decision::Skip, Basis::Completed};
  if (refuses_payload(call, verdict, cached)) return refuse_payload(call, verdict, false, cached, now);
  reporter_.note(call, Basis::Completed, cached, now);
  return hand_back(call, cached);  // not cached again: its trust runs from when it was cached
}

void MnemosyneStrategy::cache_completion(const Call& call, sim::Time decided_at, std::optional<std::uint64_t> value) {
  if (!cache_.enabled()) return;
  const sim::Time now = clock_.now();
  Item record;
  record.started_at = decided_at;
  record.owner = call.attempt;
  record.completed_at = now;
  record.expires_on = saturating_add(now, ttl_);
  if (settings_.memoize) record.memoized = value;
  if (settings_.payload_check) record.payload = call.payload;
  cache_.put(call.key, record, now);
}

ProtectResult MnemosyneStrategy::protect(Call& call, const Effect& effect) {
  PollSchedule poll(settings_.poll);
  for (;;) {  // one start write per iteration
    const sim::Time start_at = clock_.now();
    const StepReply start = execute_step(store_, start_write(call, start_at));
    if (!start.reply.has_value()) {
      reporter_.note(call, Basis::StoreUnavailable, std::nullopt, start_at);
      return reporter_.failed(call);
    }
    if (start.tries > 1 && start.reply->previous.has_value() && start.reply->previous->owner == call.attempt) {
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
          decide_with_precedence(seen, decided_at, max_processing_time_, settings_.precedence);
      if (refuses_payload(call, verdict, seen)) return refuse_payload(call, verdict, lost_takeover, seen, decided_at);
      if (verdict.decision == Decision::Skip) {
        reporter_.note(call, verdict.basis, seen, decided_at);
        return skip(call, seen);
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
        if (takeover.reply->applied || (takeover.tries > 1 && now_there.has_value() && now_there->owner == call.attempt)) {
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
      // max_wait = 0 refuses at once: no wait begins, so none is counted (nor the start write's round trip).
      if (settings_.max_wait > 0) reporter_.begin_wait(call, decided_at);
      const sim::Time deadline =
          settings_.max_wait > 0 ? saturating_add(call.wait_began, settings_.max_wait) : decided_at;
      std::optional<Reply> read;
      while (!read.has_value()) {
        const sim::Time now = clock_.now();
        if (now >= deadline) {
          return waited_out(call, effect, seen, now);
        }
        clock_.sleep(std::min(poll.next(rng_), deadline - now));
        if (settings_.poll_with == PollWith::StartWrite) {
          const sim::Time again_at = clock_.now();
          const StepReply again = execute_step(store_, start_write(call, again_at));
          if (!again.reply.has_value()) continue;  // no answer: keep waiting, as after a lost read
          if (again.tries > 1 && again.reply->previous.has_value() && again.reply->previous->owner == call.attempt) {
            reporter_.note(call, Basis::Absent, std::nullopt, again_at);  // an earlier try of it created our record
            return run(call, effect, Claim::Owner, std::nullopt, again_at);
          }
          read = again.reply;
          decided_at = again_at;
          source = Source::StartWrite;
          continue;
        }
        read = poll_read(call.key);
        if (!read.has_value()) continue;
        decided_at = clock_.now();
        source = Source::PollRead;
      }
      seen = read->previous;
    }
  }
}

ProtectResult MnemosyneStrategy::run(Call& call, const Effect& effect, Claim claim, const std::optional<Item>& seen,
                                     sim::Time decided_at) {
  reporter_.finish_wait(call);
  reporter_.hooks().crash_point(CrashPoint::AfterStartBeforeEffect, call.id, call.attempt);
  const std::optional<std::uint64_t> value = effect(kNoFencingToken);
  if (!value.has_value()) return effect_failed(call, claim, seen, decided_at);
  reporter_.hooks().crash_point(CrashPoint::AfterEffectBeforeComplete, call.id, call.attempt);
  const Landed landed = complete(call, claim, seen, decided_at, value);
  reporter_.hooks().completed(call.id, call.processor, call.attempt, landed == Landed::Yes);
  if (landed == Landed::Yes) cache_completion(call, decided_at, value);
  if (landed == Landed::Unanswered && settings_.fail_on_lost_completion) return reporter_.failed(call);
  call.result.outcome = Outcome::Executed;
  call.result.value = value;
  return call.result;
}

ProtectResult MnemosyneStrategy::effect_failed(Call& call, Claim claim, const std::optional<Item>& seen,
                                               sim::Time decided_at) {
  if (settings_.memoize_failures) {
    const Landed landed = complete(call, claim, seen, decided_at, std::nullopt);
    reporter_.hooks().completed(call.id, call.processor, call.attempt, landed == Landed::Yes);
    if (landed == Landed::Yes) cache_completion(call, decided_at, std::nullopt);
  } else if (settings_.release_on_failure && claim == Claim::Owner) {
    Condition still_ours;
    still_ours.owner_equals = call.attempt;
    still_ours.require_not_completed = true;
    const StepReply step = execute_step(store_, delete_op(call.key, still_ours));
    // After a lost reply, a rejected retry finding no record means an earlier try of this delete landed.
    const bool applied = step.reply.has_value() &&
                         (step.reply->applied || (step.tries > 1 && !step.reply->previous.has_value()));
    reporter_.hooks().released(call.id, call.processor, call.attempt, applied);
    cache_.erase(call.key);
  }
  return reporter_.failed(call);
}

ProtectResult MnemosyneStrategy::waited_out(Call& call, const Effect& effect, const std::optional<Item>& seen,
                                            sim::Time now) {
  switch (settings_.on_max_wait) {
    case OnMaxWait::Error:
      reporter_.note(call, Basis::MaxWaitError, seen, now);
      return reporter_.failed(call);
    case OnMaxWait::Skip:
      return reporter_.skipped(call, std::nullopt);  // on its InFlightRecent decision: a duplicate, acknowledged
    case OnMaxWait::Process:
      break;
  }
  reporter_.note(call, Basis::MaxWaitProcess, seen, now);
  return run(call, effect, Claim::SeenRecord, seen, now);
}

ProtectResult MnemosyneStrategy::skip(Call& call, const std::optional<Item>& record) {
  if (record.has_value() && record->completed_at.has_value()) cache_.put(call.key, *record, clock_.now());
  return hand_back(call, record);
}

ProtectResult MnemosyneStrategy::hand_back(Call& call, const std::optional<Item>& record) {
  // A completed record without a value under memoize holds a memoized failure (nothing else completes it so).
  const bool failure = settings_.memoize_failures && settings_.memoize && record.has_value() &&
                       record->completed_at.has_value() && !record->memoized.has_value();
  ProtectResult result = reporter_.skipped(call, memo(record));
  result.memoized_failure = failure;
  return result;
}

bool MnemosyneStrategy::refuses_payload(const Call& call, const DecisionAndBasis& verdict,
                                        const std::optional<Item>& seen) const {
  return settings_.payload_check && verdict.decision != Decision::Process && seen.has_value() &&
         seen->payload.has_value() && *seen->payload != call.payload;
}

ProtectResult MnemosyneStrategy::refuse_payload(Call& call, const DecisionAndBasis& verdict, bool lost_takeover,
                                                const std::optional<Item>& seen, sim::Time decided_at) {
  const bool waits = verdict.decision == Decision::Wait;
  reporter_.note(call, waits ? (lost_takeover ? Basis::TakeoverLost : Basis::InFlightRecent) : verdict.basis, seen,
                 decided_at);
  reporter_.hooks().payload_refused(call.id, call.processor, call.attempt);
  ProtectResult result = reporter_.skipped(call, std::nullopt);
  result.payload_mismatch = true;
  return result;
}

MnemosyneStrategy::Landed MnemosyneStrategy::complete(const Call& call, Claim claim, const std::optional<Item>& seen,
                                                      sim::Time decided_at, std::optional<std::uint64_t> value) {
  const sim::Time now = clock_.now();
  const StepReply step = execute_step(store_, completion(call, claim, seen, decided_at, now, value));
  if (!step.reply.has_value()) return Landed::Unanswered;
  if (step.reply->applied) return Landed::Yes;
  // Rejected. After a lost reply, the record may show that an earlier try of this same write landed.
  const std::optional<Item>& there = step.reply->previous;
  const bool ours = step.tries > 1 && there.has_value() && there->completed_at == now &&
                    (value.has_value() ? !settings_.memoize || there->memoized == value : !there->memoized.has_value());
  return ours ? Landed::Yes : Landed::Rejected;
}

std::vector<SettingKey> mnemosyne_keys() {
  const auto word = [](std::string name, std::string value, std::vector<std::string> words, std::string description) {
    return SettingKey{std::move(name), SettingLanguage::Word, SettingValue{std::move(value)}, std::move(description),
                      std::move(words), 0, false};
  };
  return {
      max_processing_time_key(),
      ttl_key(),
      poll_key(),
      max_wait_key(),
      word("on_max_wait", to_string(OnMaxWait::Error),
           words_of_values({OnMaxWait::Error, OnMaxWait::Process, OnMaxWait::Skip}),
           "after max_wait: fail the call (redelivered later), process anyway, or skip it as a duplicate "
           "(acknowledged, nothing handed back)"),
      memoize_key(),
      word("takeover", to_string(Takeover::Conditional),
           words_of_values({Takeover::Conditional, Takeover::IfNotExists}),
           "conditional: one waiter wins a stale record; if-not-exists: every waiter runs"),
      word("complete", to_string(Complete::Fenced), words_of_values({Complete::Fenced, Complete::Blind}),
           "fenced: only the current owner's completion lands; blind: any may overwrite"),
      SettingKey{"poll_read", SettingLanguage::PollRead, SettingValue{PollRead{}},
                 "waiting callers read the primary, or a replica that lags", {}, 0, false},
      word("poll_with", to_string(PollWith::Read), words_of_values({PollWith::Read, PollWith::StartWrite}),
           "read: waiting callers re-read the record; start-write: they run the start write again"),
      word("expires_on", to_string(ExpiresOn::AtComplete),
           words_of_values({ExpiresOn::AtComplete, ExpiresOn::AtStart}),
           "at-complete: in-flight records never expire; at-start: the TTL runs from the start"),
      expired_wins_key(),
      precedence_key(),
      word("on_failure", kOnFailureKeep, {kOnFailureKeep, kOnFailureRelease},
           "after an effect fails for good: keep the in-flight record, or release (delete) it if still its own"),
      word("on_completion_failure", kOnCompletionFailureAck, {kOnCompletionFailureAck, kOnCompletionFailureFail},
           "a completion write with no answer: acknowledge the message anyway, or fail it (delivered again)"),
      SettingKey{"memoize_failures", SettingLanguage::Boolean, SettingValue{false},
                 "an effect that fails for good completes the record with the failure, handed to later deliveries",
                 {}, 0, false},
      word("payload_check", kPayloadCheckOff, {kPayloadCheckOff, kPayloadCheckFingerprint},
           "fingerprint: records keep the payload's fingerprint; a delivery of the id with another payload is "
           "refused unprocessed"),
      SettingKey{"local_cache", SettingLanguage::LocalCache, SettingValue{LocalCache{}},
                 "off, or lru(size=N, ttl=DURATION): each consumer's cache of the records it saw completed, "
                 "consulted before the store (trusted until its ttl or the record's expires_on)",
                 {}, 0, false},
  };
}

}  // namespace

StrategyInfo mnemosyne_strategy() {
  StrategyInfo info;
  info.name = "mnemosyne";
  info.description = "claim an in-flight record, wait for or take over a stale one, complete it with the result";
  info.keys = mnemosyne_keys();
  info.factory = [](const ProtocolSection& settings, StoreClient& store, Clock& clock, ProtocolHooks& hooks,
                    sim::Rng rng) -> std::unique_ptr<Strategy> {
    return std::make_unique<MnemosyneStrategy>(settings, store, clock, hooks, std::move(rng));
  };
  info.bases = {Basis::Absent,        Basis::Completed,      Basis::ExpiredCompleted,
                Basis::InFlightRecent, Basis::StaleTakeover,  Basis::TakeoverLost,
                Basis::MaxWaitProcess, Basis::MaxWaitError,   Basis::StoreUnavailable};
  const auto eventual_reads = [](const ProtocolSection& s) {
    return s.settings.get<PollRead>("poll_read").kind == PollReadKind::Eventual;
  };
  const auto if_not_exists = [](const ProtocolSection& s) {
    return s.settings.get<std::string>("takeover") == to_string(Takeover::IfNotExists);
  };
  const auto max_wait_process = [](const ProtocolSection& s) {
    return s.settings.get<std::string>("on_max_wait") == to_string(OnMaxWait::Process);
  };
  info.windows = {
      {Cause::CrashAfterEffect, WindowOpens::Always, {},
       "the owner died, or gave up, between its effect and its completion: a later attempt takes the record over"},
      {Cause::CompletionLost, WindowOpens::Always, {},
       "the owner finished but its completion write never landed: a later attempt takes the in-flight record over"},
      {Cause::Expired, WindowOpens::Always, {}, "the record expired (ttl) or was evicted before a late redelivery"},
      {Cause::CapacityEvicted, WindowOpens::Always, {},
       "a bounded store (store.capacity) evicted the record for room before a late redelivery, or under its owner"},
      {Cause::MaxWaitExceeded, WindowOpens::WithSettings, max_wait_process,
       "on_max_wait = \"process\": a waiter goes ahead after max_wait while the owner is at work"},
      {Cause::TakeoverWhileAlive, WindowOpens::WithSlowOwner, {},
       "the owner was alive but held its record for max_processing_time or more (slow work, a pause, clock skew)"},
      {Cause::HerdTakeover, WindowOpens::WithSettings, if_not_exists,
       "takeover = \"if-not-exists\": started_at is never refreshed, so every waiter finding it stale runs the effect"},
      {Cause::HerdTakeover, WindowOpens::BrokenStore, {}, "two fenced takeovers of one record both landed"},
      {Cause::Unprotected, WindowOpens::WithSettings, eventual_reads,
       "poll_read = \"eventual\": a lagging replica shows no record while the owner is at work"},
      {Cause::Unprotected, WindowOpens::BrokenStore, {},
       "two attempts both found no record: the store's conditional start write did not hold"},
  };
  return info;
}

}  // namespace lethe
