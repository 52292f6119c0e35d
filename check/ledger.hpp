// check/ledger.hpp — the world's record of what happened, for the oracle.
//
// The world (sources, workers, sinks, the store, fault injection) writes here;
// the oracle (check/oracle.hpp) reads it after the run and classifies every
// duplicate. Nothing here decides anything during the run: recording never
// changes what happens (it draws no random numbers and schedules nothing).
//
// Ground truth of effects is the provider's own log (Sink::executions), or the
// store's committed domain writes for the inbox strategy; the world copies
// them here as Execution entries.
//
// Memory: the world folds every settled group (one clean execution, every other attempt a plain skip; see
// SettledGroup) into a 48-byte summary and keeps attempts and executions whole only for the groups where
// something happened (a duplicate, a crash, a takeover, a failure, a memo mismatch) and for the attempts still
// running. Decisions are not kept one by one: the oracle reads only the decision on which each attempt ran its
// effect (its last process-type decision), so that one is folded into the attempt's record (Ledger::decided);
// times that may be absent are MaybeTime (8 bytes, not std::optional's 16). An attempt with its decision takes
// 80 bytes; what a decision saw of an existing record goes to a side table (Ledger::seen).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/btree.hpp"
#include "protocol/env.hpp"
#include "protocol/store_ops.hpp"
#include "sim/time.hpp"

namespace lethe {

// The decision bases on which an attempt runs its effect.
inline bool is_process_basis(Basis basis) {
  switch (basis) {
    case Basis::Unprotected:
    case Basis::Absent:
    case Basis::ExpiredCompleted:
    case Basis::StaleTakeover:
    case Basis::MaxWaitProcess:
    case Basis::WeakStore:
      return true;
    case Basis::Completed:
    case Basis::InFlightRecent:
    case Basis::TakeoverLost:
    case Basis::MaxWaitError:
    case Basis::StoreUnavailable:
    case Basis::InboxDuplicate:
      return false;
  }
  return false;
}

// The last process-type decision of an attempt, with what it saw of the record (owner, started_at, expires_on:
// all the oracle asks of it). Assembled by Ledger::process_decision from the attempt's record and, when the
// decision saw a record, the ledger's side table of seen records.
struct ProcessDecision {
  Basis basis = Basis::Absent;
  bool seen = false;             // a record was there
  sim::Time at = 0;              // virtual time of the decision
  sim::Time local_time = 0;      // the deciding node's clock
  AttemptId seen_owner = 0;
  MaybeTime seen_started_at;
  MaybeTime seen_expires_on;
};

// What a process-type decision saw of the record: kept apart (Ledger::seen), since most attempts decide on an
// absent record (every first delivery) and would carry these 24 bytes empty.
struct SeenRecord {
  AttemptId owner = 0;
  MaybeTime started_at;
  MaybeTime expires_on;
};

// One attempt: 80 bytes (136 with the decision embedded whole, a 16-byte optional value and two fields no one
// read). The small fields share one 8-byte word.
struct AttemptRecord {
  AttemptId attempt = 0;
  MessageId id = 0;
  ProcessorId processor = 0;
  std::uint32_t node = 0;            // sim node id of the worker
  std::int8_t outcome = -1;          // static_cast<std::int8_t>(Outcome) once ended
  bool executed = false;             // this attempt's effect reached the provider at least once
  bool completion_applied = false;   // its completion write landed
  bool decided_to_process = false;   // decided_* hold its last process-type decision
  Basis decided_basis = Basis::Absent;
  bool decided_seen = false;         // that decision saw a record (in Ledger::seen)
  bool has_returned_value = false;
  bool completion_failed = false;    // a completion write of it was sent and did not land (lost or rejected)
  MaybeTime ended_at;                // protect() returned (absent: crashed or still running at the end)
  MaybeTime crashed_at;              // the node crashed while the attempt was in progress
  MaybeTime completed_at;            // virtual time the completion landed
  std::uint64_t returned = 0;        // what protect() handed to its caller, if has_returned_value
  sim::Time decided_at = 0;          // virtual time of that decision
  sim::Time decided_local_time = 0;  // the deciding node's clock

  // Begun and neither ended nor crashed: at work (or waiting) now, or when the run ended.
  bool at_work() const { return !ended_at && !crashed_at; }

  std::optional<std::uint64_t> returned_value() const {
    return has_returned_value ? std::optional<std::uint64_t>(returned) : std::nullopt;
  }
  void set_returned_value(std::uint64_t value) {
    returned = value;
    has_returned_value = true;
  }
};

// One execution of the effect: the provider's log entry (Sink::executions, world/sink.hpp), or an inbox
// transaction's committed domain write.
struct ExecutionRecord {
  MessageId id = 0;
  ProcessorId processor = 0;
  AttemptId attempt = 0;
  std::uint32_t call_number = 1;   // 1: first provider call of the attempt; >1: a retry of that attempt
  std::uint32_t node = 0;          // the node that made the call (the attempt's worker)
  sim::Time at = 0;                // virtual time the provider executed it
  std::uint64_t value = 0;         // the result the provider produced

  bool operator==(const ExecutionRecord&) const = default;
};

struct WaitRecord {
  MessageId id = 0;
  ProcessorId processor = 0;
  AttemptId attempt = 0;
  sim::Duration waited = 0;
};

struct EvictionRecord {
  static constexpr std::uint64_t kUnknown = UINT64_MAX;
  Key key = 0;
  sim::Time at = 0;
  // Evictions for room (Ledger::capacity_evictions) only, when known: the record's last write before it, and the
  // writes of other records since, which made it the least recently written (an event log may leave them out).
  MaybeTime written_at;
  std::uint64_t writes_since = kUnknown;
};

// The (message id, processor) pairs the system owes an execution: each owed id for processors 0..processors-1,
// in the order they were added (an id added twice is owed twice). Consecutive ids are one run: a workload of
// sequential ids costs a few bytes instead of 16 per pair.
class ExpectedIds {
 public:
  void add(MessageId id, ProcessorId processors) {
    if (!runs_.empty() && runs_.back().processors == processors && runs_.back().first + runs_.back().count == id) {
      ++runs_.back().count;
    } else {
      runs_.push_back(Run{id, 1, processors});
    }
  }
  // f(id, processor) for every owed pair, in order.
  template <class F>
  void for_each(F&& f) const {
    for (const Run& run : runs_) {
      for (std::uint64_t i = 0; i < run.count; ++i) {
        for (ProcessorId p = 0; p < run.processors; ++p) f(run.first + i, p);
      }
    }
  }

 private:
  struct Run {
    MessageId first = 0;
    std::uint64_t count = 0;
    ProcessorId processors = 0;
  };
  std::vector<Run> runs_;
};

// The attempts the ledger holds, by id (ids are issued 1, 2, 3, ... and never reused). Attempts of a settled
// group are folded into its summary and erased (Ledger::settled), so the ids held have gaps.
class AttemptLog {
 public:
  // Holds `record` under the next id, which it returns (and stores in record.attempt).
  AttemptId add(AttemptRecord record) {
    record.attempt = next_++;
    const AttemptId id = record.attempt;
    records_.emplace_hint(records_.end(), id, record);
    return id;
  }
  // Holds `record` under the id `id` that a recorded log gave it (ids given out later follow it).
  // REQUIRES: id > issued() (ids only grow).
  void add_with_id(AttemptId id, AttemptRecord record) {
    record.attempt = id;
    records_.emplace_hint(records_.end(), id, record);
    next_ = id + 1;
  }
  bool contains(AttemptId id) const { return records_.contains(id); }
  AttemptRecord& at(AttemptId id) { return records_.at(id); }
  const AttemptRecord& at(AttemptId id) const { return records_.at(id); }
  void erase(AttemptId id) { records_.erase(id); }
  std::size_t size() const { return records_.size(); }  // held, not issued
  AttemptId issued() const { return next_ - 1; }
  // f(record) for every held attempt, in id order.
  template <class F>
  void for_each(F&& f) const {
    for (const auto& entry : records_) f(entry.second);
  }
  template <class F>
  void for_each(F&& f) {
    for (auto& entry : records_) f(entry.second);
  }

 private:
  BTreeMap<AttemptId, AttemptRecord> records_;
  AttemptId next_ = 1;
};

// A (message id, processor) group as one sortable number: (id, processor) order.
inline std::uint64_t group_key(MessageId id, ProcessorId processor) { return (id << 16) | processor; }
inline MessageId group_message(std::uint64_t key) { return key >> 16; }
inline ProcessorId group_processor(std::uint64_t key) { return static_cast<ProcessorId>(key & 0xffffu); }

// A settled group: its only execution, by an attempt that decided on its own (not a takeover), ran it once,
// landed its completion, returned the provider's value and ended alive, while every other attempt of the group
// skipped and returned that same value. Nothing in such a group can be a duplicate, a loss, a memo mismatch or
// a recovery, so the oracle needs only this of it (to count it, and to explain a later duplicate in the same
// group: who ran the first effect, when, with what value, when its completion landed, and whether TTL evicted
// its record since). 48 bytes instead of an attempt (80), an execution (48) and the oracle's sort keys (48).
struct SettledGroup {
  AttemptId attempt = 0;        // the attempt that ran the effect (its execution's call number was 1)
  sim::Time executed_at = 0;
  sim::Time completed_at = 0;
  std::uint64_t value = 0;
  MaybeTime evicted_at;         // the earliest TTL eviction of the group's record after it settled
  std::uint32_t node = 0;       // the attempt's worker
};

// A completion that landed on a live record whose memoized result was different: the blind-completion failure,
// as the store's own reply to the write shows it. Only what the definition says counts: the write landed, it
// writes a memoized result (an Upsert setting `memoized`, or a Put of an item with one), and the item it found
// was completed with another memoized value and was not replaced by it (an expired item that the write's
// replace_expired_at starts afresh is gone, as if evicted). So a rerun after eviction, a completion with
// memoize = false and a fenced completion (which never lands on a completed record) are never overwrites.
struct MemoOverwrite {
  MessageId id = 0;
  ProcessorId processor = 0;
  AttemptId attempt = 0;     // the writer's owner token (the completing attempt)
  sim::Time at = 0;          // virtual time the store applied it
  std::uint64_t replaced = 0;
  std::uint64_t written = 0;
};
inline std::optional<MemoOverwrite> memo_overwrite(const Op& op, const Reply& reply, sim::Time at) {
  if (!reply.applied || !reply.previous.has_value()) return std::nullopt;
  const Item& before = *reply.previous;
  if (!before.completed_at.has_value() || !before.memoized.has_value()) return std::nullopt;
  std::uint64_t written = 0;
  AttemptId writer = 0;
  if (op.kind == OpKind::Upsert) {
    if (op.update.memoized_mode != Assign::Set) return std::nullopt;
    if (op.update.replace_expired_at.has_value() && before.expired_at(*op.update.replace_expired_at)) {
      return std::nullopt;
    }
    written = op.update.memoized;
    writer = op.update.owner;
  } else if (op.kind == OpKind::Put) {
    if (!op.item.memoized.has_value()) return std::nullopt;
    written = *op.item.memoized;
    writer = op.item.owner;
  } else {
    return std::nullopt;
  }
  if (written == *before.memoized) return std::nullopt;
  return MemoOverwrite{key_message(op.key), key_processor(op.key), writer, at, *before.memoized, written};
}

// Why a consumer group removed a live member (topology.session_timeout, topology.max_poll_interval).
enum class RemovalReason : std::uint8_t {
  SessionTimeout,   // no heartbeat for session_timeout: its process was paused
  MaxPollInterval,  // it did not poll again within max_poll_interval: its work was slow
};

// A consumer group removed a member whose process was alive, or that member joined again. Either is an eager
// rebalance: every partition's owner in the new generation replays every record past the group's committed
// offset, so each record a member held then (handed out, finished or not, and not committed) runs again; the
// holder's own commit of it fails.
struct MemberRemoval {
  ProcessorId processor = 0;    // the group's processor
  std::uint32_t node = 0;       // the removed member's worker node
  RemovalReason reason = RemovalReason::SessionTimeout;
  bool rejoin = false;          // false: the removal; true: the removed member joining again
  sim::Time at = 0;             // when the group removed it (or it rejoined)
  sim::Time since = 0;          // its last heartbeat (the pause began) or its last poll before the removal
  std::vector<MessageId> held;  // the ids the group's live members held uncommitted then, ascending
};

struct Ledger {
  // Deques, not vectors: they grow in fixed blocks, so a long run never holds a full copy of its history
  // while a vector reallocates (vector growth tripled the ledger's peak memory at a million messages).
  AttemptLog attempts;                    // every attempt not folded into a settled group
  std::deque<ExecutionRecord> executions;  // every execution not folded into a settled group
  BTreeMap<std::uint64_t, SettledGroup> settled;  // by group_key
  std::uint64_t folded_attempts = 0;      // attempts folded into settled groups (each erased from `attempts`)
  std::vector<WaitRecord> waits;
  std::vector<EvictionRecord> evictions;  // TTL evictions not folded into a settled group's evicted_at
  std::vector<EvictionRecord> capacity_evictions;  // every eviction for room (store.capacity): never folded
  std::vector<MemoOverwrite> memo_overwrites;  // every one, from the store's replies (rare: none when fenced)
  // (message id, processor) pairs that the system owes an execution (published by the producer).
  ExpectedIds expected;
  std::uint64_t deliveries = 0;        // deliveries of messages to workers, copies and replays included
  std::uint64_t messages = 0;          // distinct message ids published
  std::uint64_t store_errors = 0;      // external nodes' store operations rejected as malformed
  std::string first_store_error;       // the first one's error text
  std::uint64_t undelivered = 0;       // copies due after the run ended (never delivered), set at its end
  sim::Time undelivered_latest = 0;    // the latest due time of those
  // (message id, processor) pairs with a copy the source hands out only after the run ended, with the latest such
  // copy's due time (set at its end): a pair not done that has one is undelivered, not lost.
  std::map<std::pair<MessageId, ProcessorId>, sim::Time> due_after_end;
  std::vector<MemberRemoval> member_removals;  // live members removed from their group, in time order
  std::uint64_t commit_failed = 0;     // offset commits the group refused (a member removed, or a rebalance)
  // Deliveries refused unprocessed, the record kept for another payload (payload_mismatches): when, which attempt.
  std::vector<std::pair<sim::Time, AttemptId>> payload_refusals;
  std::uint64_t payload_ignored = 0;     // deliveries skipped as duplicates whose payload was not the one run
  // workload.redelivery.payload = "changed" only: the payload version of each pair's first successful effect.
  std::map<std::pair<MessageId, ProcessorId>, std::uint32_t> effect_payloads;

  // workload.redelivery.payload = "changed": one attempt of (id, processor) that carried payload version `payload`
  // ran its effect (executed) or was skipped as a duplicate (skipped); a skip whose payload differs from the one
  // the pair's first effect ran with is an ignored payload (a skip before any effect compares with version 0).
  void note_payload(MessageId id, ProcessorId processor, std::uint32_t payload, bool executed, bool skipped) {
    const auto pair = std::pair{id, processor};
    if (executed) effect_payloads.emplace(pair, payload);
    if (!skipped) return;
    const auto first = effect_payloads.find(pair);
    if ((first == effect_payloads.end() ? 0U : first->second) != payload) ++payload_ignored;
  }

  AttemptRecord& attempt(AttemptId id) { return attempts.at(id); }
  const AttemptRecord& attempt(AttemptId id) const { return attempts.at(id); }
  bool has_attempt(AttemptId id) const { return attempts.contains(id); }

  // Erases a held attempt (folded into a settled group), with what its decision saw.
  void fold_attempt(AttemptId id) {
    if (attempts.at(id).decided_seen) seen.erase(id);
    attempts.erase(id);
    ++folded_attempts;
  }

  // What the decisions that let an attempt run its effect saw of the record, for those that saw one.
  BTreeMap<AttemptId, SeenRecord> seen;

  // A decision of an attempt, at virtual time `at`: a process-type one replaces the attempt's recorded decision;
  // the others (skip, wait, give up) are counted by the caller, not kept.
  void decided(const DecisionNote& note, sim::Time at) {
    if (!is_process_basis(note.basis) || !has_attempt(note.attempt)) return;
    AttemptRecord& record = attempt(note.attempt);
    record.decided_to_process = true;
    record.decided_basis = note.basis;
    record.decided_at = at;
    record.decided_local_time = note.local_time;
    record.decided_seen = note.seen.has_value();
    if (note.seen) {
      seen[note.attempt] = SeenRecord{note.seen->owner, MaybeTime(note.seen->started_at),
                                      MaybeTime(note.seen->expires_on)};
    }
  }

  // The decision on which the attempt ran its effect (its last process-type one), if it made one.
  std::optional<ProcessDecision> process_decision(const AttemptRecord& record) const {
    if (!record.decided_to_process) return std::nullopt;
    ProcessDecision d;
    d.basis = record.decided_basis;
    d.seen = record.decided_seen;
    d.at = record.decided_at;
    d.local_time = record.decided_local_time;
    if (record.decided_seen) {
      const SeenRecord& s = seen.at(record.attempt);
      d.seen_owner = s.owner;
      d.seen_started_at = s.started_at;
      d.seen_expires_on = s.expires_on;
    }
    return d;
  }
  std::optional<ProcessDecision> process_decision(AttemptId id) const {
    return has_attempt(id) ? process_decision(attempt(id)) : std::nullopt;
  }
};

// Told of the ledger's records as the world writes them and as folding lets them go (check/ledger_folding.hpp),
// so that a log of the whole run can be written while the ledger keeps only what the oracle needs (`lethe run
// --events`). Each attempt folded away reaches attempt_folded once, in its final state; every execution, TTL
// eviction and wait reaches its hook once, in the order the world records them, folded or not. What the ledger
// still holds when the run ends (attempts not folded, evictions for room, memo overwrites, ...) is not told:
// the observer reads it from the ledger then. An observer never changes what happens.
class LedgerObserver {
 public:
  virtual ~LedgerObserver() = default;
  // An attempt about to be erased from the ledger, with the decision on which it ran its effect, if any.
  virtual void attempt_folded(const AttemptRecord& record, const std::optional<ProcessDecision>& decision) = 0;
  virtual void execution(const ExecutionRecord& execution) = 0;
  virtual void eviction(const EvictionRecord& eviction) = 0;  // a TTL eviction (not one for room)
  virtual void wait(const WaitRecord& wait) = 0;
};

}  // namespace lethe
