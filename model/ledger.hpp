// model/ledger.hpp — the world's record of what happened, for the oracle.
//
// The world (sources, workers, sinks, the store, fault injection) writes here;
// the oracle (model/oracle.hpp) reads it after the run and classifies every
// duplicate. Nothing here decides anything during the run: recording never
// changes what happens (it draws no random numbers and schedules nothing).
//
// Ground truth of effects is the provider's own log (Sink::executions), or the
// store's committed domain writes for the inbox strategy; the world copies
// them here as Execution entries.
//
// Memory: one entry per attempt, execution and decision; a run of N messages
// keeps O(N) entries (the oracle needs them all at the end).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "model/env.hpp"
#include "model/store_ops.hpp"
#include "sim/time.hpp"

namespace model {

struct AttemptRecord {
  AttemptId attempt = 0;
  MessageId id = 0;
  ProcessorId processor = 0;
  std::uint32_t node = 0;            // sim node id of the worker
  std::uint32_t incarnation = 0;     // of that node
  sim::Time began_at = 0;            // virtual time
  std::optional<sim::Time> ended_at; // protect() returned (absent: crashed or still running at the end)
  std::optional<sim::Time> crashed_at;  // the node crashed while the attempt was in progress
  bool executed = false;             // this attempt's effect reached the provider at least once
  bool completion_applied = false;   // its completion write landed
  std::optional<sim::Time> completed_at;  // virtual time the completion landed
  int outcome = -1;                  // static_cast<int>(Outcome) once ended
  std::optional<std::uint64_t> returned_value;  // what protect() handed to its caller
};

struct ExecutionRecord {
  MessageId id = 0;
  ProcessorId processor = 0;
  AttemptId attempt = 0;
  std::uint32_t call_number = 1;   // 1: first provider call of the attempt; >1: a retry of that attempt
  std::uint32_t node = 0;
  sim::Time at = 0;                // virtual time the provider executed it
  std::uint64_t value = 0;         // the result the provider produced
};

struct DecisionRecord {
  DecisionNote note;
  sim::Time at = 0;                // virtual time
  std::uint32_t node = 0;
};

struct WaitRecord {
  MessageId id = 0;
  ProcessorId processor = 0;
  AttemptId attempt = 0;
  sim::Duration waited = 0;
};

struct EvictionRecord {
  Key key = 0;
  sim::Time at = 0;
};

struct Ledger {
  // Deques, not vectors: they grow in fixed blocks, so a long run never holds a full copy of its history
  // while a vector reallocates (vector growth tripled the ledger's peak memory at a million messages).
  std::deque<AttemptRecord> attempts;  // indexed by attempt id - 1 (attempt ids start at 1)
  std::deque<ExecutionRecord> executions;
  std::deque<DecisionRecord> decisions;
  std::vector<WaitRecord> waits;
  std::vector<EvictionRecord> evictions;
  // (message id, processor) pairs that the system owes an execution (published by the producer).
  std::vector<std::pair<MessageId, ProcessorId>> expected;
  std::uint64_t deliveries = 0;        // deliveries of messages to workers, copies and replays included
  std::uint64_t messages = 0;          // distinct message ids published

  AttemptRecord& attempt(AttemptId id) { return attempts.at(id - 1); }
  const AttemptRecord& attempt(AttemptId id) const { return attempts.at(id - 1); }
};

}  // namespace model
