// protocol/strategies.hpp — the dedupe strategies, compared side by side (docs/scenarios.md [protocol]).
//
// A Strategy wraps an effect: protect(id, processor, attempt, effect) runs the effect at most as often as the
// strategy can guarantee and hands back its result. Strategies are generic over protocol/env.hpp: they read time
// from a Clock, reach the store through a StoreClient, report through ProtocolHooks, and never ask whether they
// are simulated (the same code runs against a real store in live mode).
//
// The strategies (ProtocolSection::kind):
//   none               run the effect, always (Basis::Unprotected).
//   check-then-insert  read the record; if there is none, run the effect, then Put a completed record (a blind
//                      overwrite, as naive code against a key-value store does). The read-then-write race is the
//                      point: two concurrent callers both read "absent" and both run the effect.
//   record-after       one phase: read (to skip completed records); if none, run the effect, then insert a
//                      completed record only if there is none (conditional upsert). Nothing marks the work as in
//                      flight, so a crash after the effect, or a concurrent caller, runs it again.
//                      Both skip only a completed record (not an expired one when expired_wins) and never wait: a
//                      present record that is not completed does not stop them.
//   mnemosyne          the two-phase record with the decision table (protocol/decision.hpp) and the memoized result.
//   inbox              one store transaction: insert the inbox row make_key(Table::Inbox, ...) if it is absent
//                      (or expired, when expired_wins) with expires_on = now + ttl, AND add 1 to the domain row
//                      make_key(Table::Domain, processor, id). The domain mutation IS the effect: `effect` is never
//                      called. Rejected transaction = duplicate = Skipped. Unknown outcome = Failed (the
//                      redelivery finds the inbox row if the transaction landed). Its result value is the domain
//                      row's counter after the increment; a duplicate gets the counter it saw (memoize), so every
//                      caller of a message processed once gets 1.
//
// mnemosyne, step by step:
//   1. Start write: an Upsert that returns the previous item (ALL_OLD) and sets started_at = now and owner =
//      attempt only if absent (if_not_exists); expires_on = now + ttl (if absent) when expires_on = "at-start";
//      Update::replace_expired_at = now when expired_wins (an expired record is replaced as if evicted).
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
//        local clock after the read. Each read's decision is acted upon as the table says — including Process on
//        "absent": a waiter that reads no record runs the effect without a claim. With consistent reads that
//        only happens after TTL eviction; an eventual read from a lagging replica can show "absent" while the
//        owner is still at work (the duplicate poll_read = eventual reproduces). The last sleep is shortened so
//        that the wait ends exactly max_wait after the first Wait decision; a Wait decision at or after that
//        instant ends the wait: on_max_wait = "error" -> Failed (MaxWaitError), "process" -> run the effect
//        without a claim (MaxWaitProcess, the Rust port's behaviour). max_wait = 0 ends the wait at once.
//   3. Run: hooks.crash_point(AfterStartBeforeEffect), the effect, hooks.crash_point(AfterEffectBeforeComplete).
//      A failed effect (nullopt) returns Failed and leaves the in-flight record as it is (the effect may have
//      half-happened, like a crash): the redelivery waits until the record is stale, then takes over.
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
//      value whether or not the completion landed (the effect did happen).
//
// Reporting: every decision goes to hooks.decided (several per attempt when it waits), with the record the
// decision was based on (seen) and the local time it was taken; a finished wait goes to hooks.waited once per
// protect() call (wait_time = local time from the first Wait decision to leaving the wait; ProtectResult.waited
// says an in-flight record was found); a completion write goes to hooks.completed. Crash points (which may throw
// sim::Crash or any other exception through the hooks) are called by none, check-then-insert, record-after and
// mnemosyne around the effect, at the same places, so the same fault schedule hits every strategy; the inbox has
// no window between its record and its effect and calls neither point (AfterCompleteBeforeAck is the caller's).
//
// Unknown store outcomes (StoreClient::execute returned nullopt): every write step is safe to repeat, so it is
// retried as the same operation up to kStoreAttemptsPerStep times in all (no extra delay: the unknown outcome
// already cost the client's timeout). A retry recognises that an earlier try of the same step landed: a start
// write or takeover whose reply shows owner == attempt, a completion whose reply shows the completed_at and
// memoized value it wrote. When every try is unknown: before the effect -> Failed (Basis::StoreUnavailable) and
// the effect is not run; a completion -> Executed with hooks.completed(applied = false) (the record stays in
// flight and a later attempt takes it over when stale). A poll read with an unknown outcome is not retried: the
// waiter waits another poll interval (still bounded by max_wait). The inbox transaction is not retried (Failed).
//
// Does not: retry the effect, ack messages, sleep outside Clock::sleep, or draw randomness outside the Rng given
// to make_strategy (used for poll intervals only). A Strategy may be shared by several fibers of one node: the
// per-call state lives in protect()'s frame.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "core/config.hpp"
#include "protocol/decision.hpp"
#include "protocol/env.hpp"
#include "protocol/store_ops.hpp"
#include "sim/random.hpp"
#include "sim/time.hpp"

namespace lethe {

// Runs the side effect and returns its result; nullopt = it failed.
using Effect = std::function<std::optional<std::uint64_t>()>;

// Failed: the attempt gave up; the message must be redelivered later.
enum class Outcome { Executed, Skipped, Failed };
const char* to_string(Outcome outcome);

struct ProtectResult {
  Outcome outcome = Outcome::Failed;
  std::optional<std::uint64_t> value;  // Executed: the effect's; Skipped: the memoized one (nullopt without memo)
  bool waited = false;                 // a Wait decision was taken (an in-flight record was found)
  sim::Duration wait_time = 0;         // local time spent waiting (0 when !waited)
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  // REQUIRES: `attempt` is unique per call (it is the fencing token) and nonzero.
  virtual ProtectResult protect(MessageId id, ProcessorId processor, AttemptId attempt, const Effect& effect) = 0;
};

// How many times a write step is tried when its outcome is unknown (first try included).
inline constexpr int kStoreAttemptsPerStep = 3;

// REQUIRES (the scenario loader guarantees them; a violation throws std::invalid_argument):
// max_processing_time > 0 for mnemosyne; ttl > 0 for every kind but none; max_wait >= 0.
// `store`, `clock` and `hooks` must outlive the strategy.
std::unique_ptr<Strategy> make_strategy(const ProtocolSection& settings, StoreClient& store, Clock& clock,
                                        ProtocolHooks& hooks, sim::Rng rng);

}  // namespace lethe
