// core/result.hpp — the result of one simulated run (one scenario, one seed), and the table of its fields.
//
// Field names follow docs/results.md exactly. result_fields() is the one list of them: name, kind, whether
// [expect] may name it, a one-line description and the member that holds it. The loader takes the names and
// kinds [expect] allows from it, RunResult::field() looks names up in it, reports/json.cpp writes and reads
// the JSON document by walking it, and docs/result-fields.md is generated from it. A new result field is one
// row here plus the code that computes it. Times are integer virtual nanoseconds.
//
// Does not: compute anything (world/ fills the struct) or render anything (reports/ does).
#pragma once

#include <array>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace lethe {

// ---------------------------------------------------------------- the table of duplicate causes
//
// A cause is one enumerator and one row of kCauses, in the same order (the order docs/results.md lists them).
// The row is everything lethe says of the cause: its name, a one-line meaning, what opens its window, which
// clause broke, what to change, and the intervention that closes the window for one message. The
// static_asserts below refuse a missing, misplaced or empty row; docs/results.md's cause sections are generated
// from the rows (tests/check/cause_docs_test.cpp). The oracle (check/oracle.cpp) decides which applies.
enum class Cause : std::uint8_t {
  Unprotected,
  TakeoverWhileAlive,
  MaxWaitExceeded,
  HerdTakeover,
  CrashAfterEffect,
  CompletionLost,
  Expired,
  CapacityEvicted,
  SinkRetry,
  ProviderKeyExpired,
  MemberRemoved,
  WeakStore,
  NotAttributable,
  Count,  // not a cause: the number of causes
};
inline constexpr std::size_t kCauseCount = static_cast<std::size_t>(Cause::Count);

// What closes a cause's window for one message, so that replaying the seed with it applied to that one message
// (or attempt) must remove the duplicate: the proof that the cause named is the window that opened.
enum class Intervention : std::uint8_t {
  RecordSeen,         // the duplicate's attempt decides on the first executor's record (it is there, in flight)
  OwnerNeverStale,    // the record of that message is never considered stale while its owner works
  WaitOutlastsOwner,  // an attempt of that message that finds its record in flight waits until the owner ends
  TakeoverFenced,     // that takeover is conditional on the started_at the taker saw: one taker wins
  NoCrash,            // the first executor does not crash (nor give up) between its effect and its completion
  CompletionArrives,  // the first executor's completion write lands
  NeverExpires,       // that message's record never expires and is never evicted
  NeverEvicted,       // that message's record is not evicted for room (store.capacity)
  ProviderDedupes,    // the provider executes that message's key once
  ProviderKeyKept,    // the provider keeps that message's idempotency key for the whole run
  MemberKept,         // the consumer group does not remove the member holding that message (kafka)
  KvLinearizable,     // the pair's seq-kv and lww-kv operations are answered as lin-kv answers them (external)
  None,               // no intervention: lethe does not know which clause broke (nothing to verify)
};

struct CauseRow {
  Cause cause;                    // the enumerator this row describes (its index in kCauses)
  std::string_view name;          // the key under "duplicates" (JSON, [expect], CSV, --cause)
  std::string_view description;   // one line, for the generated reference and summaries
  std::string_view opens;         // what happened: what opens the window (docs/results.md, "What happened")
  std::string_view clause;        // the clause of the protocol that broke
  std::string_view change;        // what to change in the system so the window closes
  Intervention intervention;      // what closes the window for one message (counterfactual replay)
  std::string_view intervention_text;  // that intervention in words
};

inline constexpr CauseRow kCauses[] = {
    {Cause::Unprotected, "unprotected", "no guarantee, or a read-then-write race",
     "the effect ran again and nothing in the protocol was even meant to stop it: the strategy is `none`, or it has "
     "a race by construction. With `check-then-insert`, two callers both read \"absent\" before either wrote its "
     "record; with `record-after`, nothing marks the work as in flight, so a concurrent caller (or a redelivery "
     "after a crash) finds no record. Under mnemosyne it means an attempt decided on a record that was not the "
     "store's current one: a lagging replica (`poll_read = \"eventual(...)\"`: the waiter reads \"absent\" from a "
     "replica that has not seen the start write yet), or, in live mode, a conditional write that was not atomic "
     "(look at `linearizable`).",
     "\"only one caller may find the record absent\" (the read and the write were separate operations).",
     "a conditional start write (mnemosyne) or an inbox row in the same transaction as the effect (inbox); "
     "decisions on consistent reads (`poll_read = \"consistent\"`). In live mode, a statement variant that is "
     "atomic (not one of the UNSAFE ones of `lethe live --list`).",
     Intervention::RecordSeen, "the duplicate's attempt finds the first executor's record in flight"},
    {Cause::TakeoverWhileAlive, "takeover_while_alive",
     "taken over while the owner was alive (processing time above max_processing_time, a pause, clock skew)",
     "an attempt found an in-flight record older than `max_processing_time` and took it over, but the owner was "
     "alive and ran the effect too. The owner was slow (processing time above `max_processing_time`), paused (a "
     "GC or VM pause longer than it), or its clock and the taker's clock disagreed (clock skew).",
     "\"an in-flight record older than max_processing_time belongs to a dead owner\".",
     "raise `protocol.max_processing_time` above the slowest legitimate run (pauses and skew included); `lethe "
     "tune` computes it from the processing time's distribution and the duplicate rate you accept, and `lethe "
     "sweep --vary protocol.max_processing_time=...` measures it. Bound the work itself (a timeout inside the "
     "effect shorter than `max_processing_time`).",
     Intervention::OwnerNeverStale, "that message's record is never considered stale while its owner works"},
    {Cause::MaxWaitExceeded, "max_wait_exceeded",
     "a waiter went ahead after max_wait while the owner was still at work (on_max_wait = \"process\")",
     "an attempt found the record in flight and waited for it; `protocol.max_wait` ran out while the owner was "
     "still at work (slow work, a pause, retries in place), and with `on_max_wait = \"process\"` the waiter ran "
     "the effect itself. The record was not stale: `max_processing_time` plays no part, so raising it changes "
     "nothing.",
     "\"a caller that finds the work in flight does not run it\" (the wait had a deadline, and going ahead at it "
     "assumed the owner was gone).",
     "`on_max_wait = \"error\"`: the waiter fails and the message comes back later, when the owner has finished "
     "(or its record is stale); or a `max_wait` above the slowest legitimate run, pauses included. Bound the "
     "work itself (a timeout inside the effect shorter than `max_wait`).",
     Intervention::WaitOutlastsOwner, "an attempt of that message that finds its record in flight waits until the "
     "owner ends"},
    {Cause::HerdTakeover, "herd_takeover", "several callers took over the same stale record",
     "several waiters found the same stale record (the same `started_at` and owner) and each took it over and "
     "ran the effect. This is `takeover = \"if-not-exists\"`: the takeover never refreshes `started_at`, so the "
     "record stays stale for everyone.",
     "\"a takeover is won by one caller\" (the takeover write was not fenced on the old `started_at`).",
     "`takeover = \"conditional\"`: the takeover is a conditional write on the `started_at` the taker saw, so one "
     "waiter wins and the others wait on the new owner.",
     Intervention::TakeoverFenced, "that takeover is fenced on the started_at the taker saw"},
    {Cause::CrashAfterEffect, "crash_after_effect", "the owner died between the effect and its completion record",
     "the owner ran the effect and died (or gave up, its provider call never answered) before its completion "
     "record landed. The record stayed in flight, aged to `max_processing_time`, and the next attempt took it "
     "over and ran the effect again; or the record was released and the next attempt found none. This is the "
     "window between the effect and the completion write, which no dedupe record can close on its own.",
     "none of the protocol's: the effect and the record are two systems, and the crash fell between them.",
     "make the effect idempotent at the provider (`sink.idempotent = true`: an idempotency key of the message "
     "id), or put the effect and the record in one transaction (`inbox`, when the effect is a change in your own "
     "database). Shorter processing narrows the window but never closes it. Expect these in scenarios with "
     "`faults.crash_points.after_effect_before_complete` or random crashes.",
     Intervention::NoCrash, "the first executor does not crash or give up between its effect and its completion"},
    {Cause::CompletionLost, "completion_lost",
     "the owner finished, but its completion write never landed: the record stayed in flight",
     "the owner ran the effect, stayed alive and wrote its completion record, but the write never landed (its "
     "RPC timed out or was dropped every time it was sent); the owner acknowledged the message anyway, the record "
     "stayed in flight, and a later delivery found it stale and took it over. Raising `max_processing_time` only "
     "delays this duplicate: the owner was not slow, its write was lost.",
     "\"a finished owner's completion record lands\" (the completion write was not retried until it landed).",
     "in the consumer, retry the completion write until it lands and do not acknowledge the message before it "
     "has (a store reachable again within `network.rpc_timeout`'s retries is what closes it in a scenario); an "
     "idempotent provider (`sink.idempotent = true`) makes the takeover's execution harmless.",
     Intervention::CompletionArrives, "the first executor's completion write lands"},
    {Cause::Expired, "expired", "the record was gone (TTL)",
     "the attempt found no record (TTL had evicted it) or an expired one (`expired_wins = true` treats it as "
     "absent, and lazy eviction replaces it), and ran a message whose first execution had begun long before. A "
     "redelivery, a replay from an old offset or a late producer copy arrived after `protocol.ttl`. With "
     "`expires_on = \"at-start\"` the record can also expire while its owner still works: a waiting caller finds "
     "nothing (or an expired record it replaces) and runs the effect, and the owner's own execution may be the "
     "one classed `expired` (`scenarios/poll-read-after-eviction.toml`).",
     "\"a redelivery arrives within the TTL\".",
     "a `protocol.ttl` longer than the latest redelivery the system can produce (the queue's retention, the "
     "longest consumer lag, the producer's retry horizon); `lethe tune --redelivery-window` suggests twice that "
     "window. With lazy eviction, `expired_wins = false` keeps honoring an expired completed record until it is "
     "really gone; `expires_on = \"at-complete\"` keeps an in-flight record from expiring under its owner.",
     Intervention::NeverExpires, "that message's record never expires"},
    {Cause::CapacityEvicted, "capacity_evicted",
     "the record was gone (evicted for room: store.capacity)",
     "the store holds at most `store.capacity` dedupe records and evicts the least recently written one for "
     "each new record past that (Apache Camel's `MemoryIdempotentRepository` keeps 1000 in an LRU map; a read "
     "does not make a record recent there, only a write does). A redelivery came after more than `capacity` "
     "other ids had been recorded since the message's record was last written: the record had been evicted for "
     "room, the attempt found no record and ran the effect again. It also opens while an owner works, if enough "
     "other ids are recorded meanwhile to push its in-flight record out.",
     "\"a redelivery finds the record of the processing it repeats\" (the repository forgot it for room).",
     "a `store.capacity` above the number of distinct ids the system records within its redelivery window (the "
     "queue's retention, the longest consumer lag, the producer's retry horizon, times the message rate), or a "
     "repository bounded by time (`protocol.ttl`) rather than by count, or a persistent repository without a "
     "bound.",
     Intervention::NeverEvicted, "that message's record is not evicted for room"},
    {Cause::SinkRetry, "sink_retry", "the same attempt retried a sink call whose ACK was lost",
     "the same attempt called the provider again after a call whose response was lost (a lost ACK, a timeout), "
     "and a provider without idempotency executed both calls. The dedupe record cannot help: it sits around the "
     "attempt, and the retry is inside it.",
     "\"a retried call is the same call\" (the provider did not dedupe it).",
     "an idempotent provider (`sink.idempotent = true`: Stripe's Idempotency-Key and its equivalents, keyed by "
     "message id), or no blind retries of non-idempotent calls (`sink.retries = 0`: a failed call fails the "
     "attempt, and the message is redelivered and decided again by the record).",
     Intervention::ProviderDedupes, "the provider dedupes that message's key"},
    {Cause::ProviderKeyExpired, "provider_key_expired",
     "the provider had pruned the idempotency key (sink.idempotency_window): a later call started a new request",
     "the provider is idempotent (`sink.idempotent = true`) but keeps its keys only for "
     "`sink.idempotency_window`; a call came that long or longer after the execution that stored its key, found "
     "it pruned, and started a new request: the effect ran again, whatever the strategy had decided.",
     "\"the provider remembers the key for as long as a retry can come\".",
     "a dedupe record of one's own that outlives the latest redelivery (`protocol.ttl`), since the provider's "
     "retention is its policy, not the caller's; or no retries and replays older than the provider's published "
     "window.",
     Intervention::ProviderKeyKept, "the provider keeps that message's key"},
    {Cause::MemberRemoved, "member_removed",
     "the consumer group removed a live member (session timeout, max poll interval) and its records were replayed",
     "a Kafka consumer group removed a member whose process was alive: it sent no heartbeat for "
     "`topology.session_timeout` (a GC or VM pause) or did not poll again within `topology.max_poll_interval` "
     "(slow work, retries in place). Its partitions moved, and their new owner replayed every record past the "
     "group's last committed offset, including the one the old member was still processing (or had finished and "
     "not yet committed); the old member ran it too, and its offset commit then failed (`commit_failed`). The "
     "strategy checks nothing (`none`), so the replay ran the effect again.",
     "\"a member that holds a record stays in the group until it commits it\" (the group declared a live member "
     "dead).",
     "a dedupe record around the effect (mnemosyne with `max_processing_time` above the longest pause and the "
     "slowest work: the replay then waits on the in-flight record); keep pauses below `topology.session_timeout` "
     "(GC tuning, smaller heaps) and work below `topology.max_poll_interval` (smaller batches, a bounded effect, "
     "no retries in place past it); commit before long work only if a lost message is acceptable.",
     Intervention::MemberKept, "the group keeps the member that holds that message"},
    {Cause::WeakStore, "weak_store",
     "an external node claimed the message on a store that is not linearizable (Maelstrom's seq-kv or lww-kv)",
     "an external node ([external.md](external.md)) kept its claim on one of Maelstrom's key-value services that "
     "do not promise linearizability, and ran the effect again. `lww-kv` answers each request from one of three "
     "replicas, and a write reaches the others up to 500 ms later: two `cas` from the same value on two replicas "
     "both hold. `seq-kv` answers a read from an earlier point of its one order of writes: a check before a write "
     "finds the key absent after another node wrote it. Each attempt found the message unclaimed, and both ran "
     "the effect. lethe does not know which key is the message's: the attempt is read as deciding on the service "
     "when, while its delivery was open, its node sent no `lethe-store` operation and `seq-kv` or `lww-kv` gave it "
     "a stale answer (one that `lin-kv`, holding the same writes, would not have given).",
     "\"only one caller may find the record absent\" (each claim was checked against a copy of the store that had "
     "not seen the other).",
     "keep the claim on a linearizable store: Maelstrom's `lin-kv`, or a conditional write of `lethe-store`. On "
     "`seq-kv` a `cas` compares the latest value, so a claim made by `cas` alone holds there; a read followed by "
     "a write does not, on any store.",
     Intervention::KvLinearizable, "the pair's seq-kv and lww-kv operations are answered as lin-kv answers them"},
    {Cause::NotAttributable, "not_attributable",
     "an external node ran the effect and what lethe observed of it (its store traffic) does not tell which "
     "clause broke",
     "an external node ([external.md](external.md)) ran the effect again, and what lethe observed of the attempt "
     "does not say on what it decided: it kept its record where lethe does not look (another table, a key that is "
     "not the delivery's record) or touched the delivery's record with no write lethe recognises as a start write "
     "(an applied write setting `owner` or `started_at` on the delivery's `dedupe` or `inbox` record) and not "
     "after a read that found the record absent. lethe does not know the node's code, so it does not guess a "
     "clause.",
     "unknown from the observations alone.",
     "nothing in the scenario; to get a cause, let the node's start write set `owner` (the delivery's `attempt`) "
     "or `started_at` on the record of the delivery's (message, processor), as the examples do, and lethe then "
     "infers its decision like a built-in strategy's.",
     Intervention::None, "none: the clause is unknown, so there is no window to close"},
};

// A row for every cause, each at its enumerator's index, none of its texts empty.
static_assert(std::size(kCauses) == kCauseCount, "kCauses needs exactly one row per Cause");
inline constexpr bool causes_complete() {
  for (std::size_t i = 0; i < kCauseCount; ++i) {
    const CauseRow& row = kCauses[i];
    if (static_cast<std::size_t>(row.cause) != i) return false;
    if (row.name.empty() || row.description.empty() || row.opens.empty() || row.clause.empty() ||
        row.change.empty() || row.intervention_text.empty()) {
      return false;
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (kCauses[j].name == row.name) return false;
    }
  }
  return true;
}
static_assert(causes_complete(), "each kCauses row sits at its Cause's index, names a unique cause, and is complete");

inline constexpr std::array<std::string_view, kCauseCount> kCauseNames = [] {
  std::array<std::string_view, kCauseCount> names{};
  for (std::size_t i = 0; i < kCauseCount; ++i) names[i] = kCauses[i].name;
  return names;
}();
inline constexpr const CauseRow& cause_row(Cause cause) { return kCauses[static_cast<std::size_t>(cause)]; }
inline std::string_view to_string(Cause cause) { return kCauseNames[static_cast<std::size_t>(cause)]; }

struct Quantiles {
  std::int64_t p50 = 0;
  std::int64_t p99 = 0;
  std::int64_t max = 0;
  std::uint64_t count = 0;
};

// The parts of a Quantiles value, in JSON order. [expect] may name the time parts (NAME.p50, ...), not count.
struct QuantilePart {
  std::string_view name;
  std::variant<std::int64_t Quantiles::*, std::uint64_t Quantiles::*> member;
  bool expectable;
};
inline constexpr std::array<QuantilePart, 4> kQuantileParts = {{
    {"p50", &Quantiles::p50, true},
    {"p99", &Quantiles::p99, true},
    {"max", &Quantiles::max, true},
    {"count", &Quantiles::count, false},  // extension: how many samples the quantiles are over
}};

struct ExpectationResult {
  std::string key;
  std::string op;      // "==", "<=", ...
  std::string want;    // as written ("0", "5%", "3"), for people
  double got = 0.0;    // NaN: the value could not be had (linearizable when unchecked)
  bool ok = false;
  int line = 0;        // in the scenario file
  double threshold = 0.0;  // the number `got` was compared with: `want`, a percent resolved against `messages`
  bool by_default = false;  // a default invariant (kDefaultExpectations), not written in [expect]
};

// lethe's default invariants, checked when no [expect] entry names the field (or, for duplicate_effects, one of
// its parts) and [expect] defaults is not false: a run is OK only if nothing went wrong that lethe can see.
struct DefaultExpectation {
  std::string_view key;       // the result field
  std::string_view op;        // "==" (the only one a default uses)
  double want;
  std::string_view overridden_by;  // a prefix of [expect] keys that replace it as well ("" for none)
};
inline constexpr DefaultExpectation kDefaultExpectations[] = {
    {"duplicate_effects", "==", 0, "duplicates."},
    {"lost_messages", "==", 0, ""},
    {"linearizable", "==", 1, ""},  // checked only when the history was checked (null: not checked)
    {"saga_stuck", "==", 0, ""},
    {"saga_duplicate_compensations", "==", 0, ""},
    {"undelivered", "==", 0, ""},
    {"unanswered", "==", 0, ""},
    {"kv_consistent", "==", 1, ""},  // only when an external node used seq-kv or lww-kv (null otherwise)
};

// Results that count something going wrong that the default invariants do not check (a run is not failed for
// them unless [expect] says so), each clean at 0. With kDefaultExpectations (clean at each one's `want`) they are
// the violations a scenario's [expect] can require: runner::scenario_story() calls a scenario that requires one
// (away from its clean value) a demonstration of a failure.
inline constexpr std::string_view kViolationsBeyondDefaults[] = {
    "memo_mismatches", "memo_overwrites", "payload_ignored", "saga_duplicate_steps", "saga_orphan_compensations",
    "saga_late_steps",
};

// One explained duplicate: which execution, why, and the evidence.
struct DuplicateExplanation {
  std::uint64_t id = 0;
  std::uint32_t processor = 0;
  Cause cause = Cause::Unprotected;
  std::uint64_t attempt = 0;          // the attempt whose execution was the duplicate
  std::uint64_t first_attempt = 0;    // the attempt that executed first
  std::int64_t at = 0;                // virtual time of the duplicate execution
  std::string because;                // plain words: which clause broke, when, on which nodes
  bool read_nothing = false;          // the attempt decided without reading a record (the strategy checks
                                      // nothing): no read exists for RecordSeen to act on
};

// Why a caller was handed a value other than the first execution's (a memo mismatch), in plain words.
struct MemoMismatchExplanation {
  std::uint64_t id = 0;
  std::uint32_t processor = 0;
  std::uint64_t attempt = 0;  // the attempt that handed its caller the other value
  std::int64_t at = 0;        // virtual time it returned
  std::string because;        // who got which value, from which execution, and why it differs from the first
};

struct RunResult {
  std::string scenario;
  std::uint64_t seed = 0;
  std::uint64_t trace_hash = 0;
  std::int64_t sim_time = 0;
  std::uint64_t messages = 0;
  std::uint64_t deliveries = 0;
  std::uint64_t effects = 0;
  std::uint64_t duplicate_effects = 0;
  std::array<std::uint64_t, kCauseCount> duplicates{};
  std::uint64_t lost_messages = 0;
  std::uint64_t memo_mismatches = 0;
  std::uint64_t waits = 0;
  Quantiles wait_time;
  std::uint64_t sink_calls = 0;
  double calls_per_success = 0.0;
  Quantiles recovery_latency;
  std::optional<bool> linearizable;
  std::vector<ExpectationResult> expectations;
  bool ok = true;

  // Beyond the contract (extensions, documented in the README):
  std::map<std::string, std::uint64_t> coverage;   // fault point / crash point -> times it fired
  std::vector<std::string> swarm;                  // fault kinds switched on for this seed (swarm mode)
  std::vector<std::string> schedule;               // run.schedule when it is not "fifo" (one word), empty for fifo
  std::uint64_t memo_overwrites = 0;               // completions that landed on a live record with another memoized result
  std::uint64_t store_peak_records = 0;            // the most items the store held at once (every table)
  std::vector<DuplicateExplanation> explanations;  // one per duplicate (capped)
  std::vector<MemoMismatchExplanation> memo_explanations;  // one per memo mismatch (same cap)
  std::uint64_t trace_events = 0;
  std::vector<std::string> linearizable_unknown;   // why linearizable is null although checked (empty otherwise)
  // Sagas ([saga] steps > 0; check/saga_oracle.hpp), all 0 for plain messages.
  std::uint64_t saga_completed = 0;                // every step ran once, nothing compensated
  std::uint64_t saga_compensated = 0;              // every step that ran was undone afterwards
  std::uint64_t saga_stuck = 0;                    // left half-done, no late step to blame
  std::uint64_t saga_duplicate_steps = 0;          // step executions beyond the first
  std::uint64_t saga_duplicate_compensations = 0;  // compensation executions beyond the first
  std::uint64_t saga_orphan_compensations = 0;     // compensations of a step that never ran
  std::uint64_t saga_late_steps = 0;               // step executions after that step's compensation
  std::vector<std::string> saga_violations;        // one line per violation, cause first (capped)
  std::vector<std::string> drawn;                  // [explore]: the seed's drawn values, KEY=VALUE (empty without)
  std::vector<std::string> not_reproducible;       // why a seed may not repeat (external nodes without turns)
  std::vector<std::string> defaults_replaced;      // default invariants an [expect] entry replaces (by field)
  std::vector<std::string> lost_examples;          // the first lost pairs, "message ID (PROCESSOR)" (capped)
  std::uint64_t store_errors = 0;                  // an external node's store operations lethe rejected
  std::vector<std::string> store_error_first;      // the first such rejection's text (empty without)
  std::uint64_t undelivered = 0;                   // copies due after the run ended, never delivered
  std::int64_t undelivered_latest = 0;             // the latest due time of those (0 without)
  std::uint64_t unanswered = 0;                    // deliveries still held unanswered when the run ended
  std::vector<std::string> unanswered_examples;    // the first of those (capped)
  std::uint64_t commit_failed = 0;                 // kafka: offset commits the consumer group refused
  std::uint64_t payload_mismatches = 0;            // deliveries refused: the record was kept for another payload
  std::uint64_t payload_ignored = 0;               // changed payloads skipped as duplicates of another payload
  std::optional<bool> kv_consistent;               // seq-kv and lww-kv held their own models (null: not used)
  std::vector<std::string> kv_checks;              // one line per kv service used: its models' verdicts
  // Not in the JSON (like explanations): the coverage keys (".fired") of the fault points the run armed, a
  // configured non-zero probability switched on for the seed; the summary's "never fired" names only these.
  std::vector<std::string> armed_fault_points;

  // A numeric result field by its dotted name ("duplicates.expired", "wait_time.p99", "ok"); nullopt if the
  // name is not a numeric field of result_fields() or (linearizable) the value is absent.
  std::optional<double> field(std::string_view dotted) const;
};

// ---------------------------------------------------------------- the table of result fields

// What a field holds. Count, Time, Ratio and Boolean are single numbers; the others have parts.
enum class FieldKind : std::uint8_t {
  Count,         // how many (std::uint64_t)
  Time,          // virtual nanoseconds (std::int64_t); [expect] also takes a duration ("< 5s")
  Ratio,         // a real number (double)
  Boolean,       // true/false (bool), or also null (std::optional<bool>: not checked)
  Quantiles,     // NAME.p50, NAME.p99, NAME.max: Time parts (kQuantileParts)
  PerCause,      // NAME.<cause>: one Count per duplicate cause (kCauses)
  CountMap,      // NAME.<anything>: a Count, 0 when the name never occurred
  Text,          // a string
  Hash,          // a std::uint64_t written as 16 hex digits
  Words,         // a list of strings, left out of the JSON when empty
  Expectations,  // the verdict of each [expect] entry
};

using ResultMember =
    std::variant<std::string RunResult::*, std::uint64_t RunResult::*, std::int64_t RunResult::*, double RunResult::*,
                 bool RunResult::*, std::optional<bool> RunResult::*, Quantiles RunResult::*,
                 std::array<std::uint64_t, kCauseCount> RunResult::*, std::map<std::string, std::uint64_t> RunResult::*,
                 std::vector<std::string> RunResult::*, std::vector<ExpectationResult> RunResult::*>;

struct ResultField {
  std::string_view name;         // the JSON key; [expect] names it, or NAME.PART for kinds with parts
  FieldKind kind;
  bool expectable;               // [expect] may name it (its parts, for kinds with parts)
  bool extension;                // beyond docs/results.md: the JSON lists extensions after every other field
  std::string_view description;  // one line, for the generated reference
  ResultMember member;
};

// Every field of RunResult that the JSON result carries. The JSON document (and docs/result-fields.md) is the
// non-extension rows in table order, then the extension rows in table order; [expect]'s "allowed" list is in
// table order, which is why memo_overwrites sits beside memo_mismatches and coverage, swarm come early.
std::span<const ResultField> result_fields();

// The kind [expect] compares a dotted name as (Count, Time, Ratio or Boolean); nullopt if [expect] may not
// name it. A CountMap field takes any non-empty part ("coverage.pause").
std::optional<FieldKind> expectation_kind(std::string_view dotted);

// Every dotted name [expect] may name, in table order (the open-ended CountMap parts aside).
const std::vector<std::string>& expectation_field_names();

}  // namespace lethe
