// protocol/env.hpp — what the systems under test need from the world, as small interfaces.
//
// Protocols (protocol/strategies.hpp) never ask whether they are simulated: they
// read time from a Clock, reach the store through a StoreClient, and report
// what they decide through ProtocolHooks. The simulated world implements these
// over the kernel (virtual time, the simulated network and store); the live
// mode implements them over real threads, a real clock and a real database.
//
// Failure model of StoreClient::execute: std::nullopt means the outcome is
// unknown (a timeout or a dropped connection): the operation may or may not
// have taken effect. Callers must treat it like real clients do.
#pragma once

#include <cstdint>
#include <optional>

#include "protocol/store_ops.hpp"
#include "sim/time.hpp"

namespace lethe {

class Clock {
 public:
  virtual ~Clock() = default;
  // The local clock of the calling process (possibly skewed), in ns.
  virtual sim::Time now() = 0;
  // Blocks the calling activity for `duration` of local time.
  virtual void sleep(sim::Duration duration) = 0;
};

class StoreClient {
 public:
  virtual ~StoreClient() = default;
  // A strongly consistent operation. nullopt: outcome unknown.
  virtual std::optional<Reply> execute(const Op& op) = 0;
  // A read that may be served by a lagging replica (poll_read = eventual). Default: consistent.
  virtual std::optional<Reply> read_eventual(Key key) { return execute(get_op(key)); }
};

// Named points where a worker may die (docs/scenarios.md [faults.crash_points]).
enum class CrashPoint : std::uint8_t {
  AfterStartBeforeEffect,
  AfterEffectBeforeComplete,
  AfterCompleteBeforeAck,
};
inline constexpr int kCrashPointCount = 3;
const char* to_string(CrashPoint point);

// Why an attempt ran the effect (or did not): what it saw when it decided.
enum class Basis : std::uint8_t {
  Unprotected,        // strategy "none": no check at all
  Absent,             // no record (never seen, or evicted)
  Completed,          // completed record: skip, memoized result returned
  ExpiredCompleted,   // completed but expired, not yet evicted; expired_wins=true treats it as absent
  InFlightRecent,     // in flight and recent: wait
  StaleTakeover,      // in flight and older than max_processing_time: took over
  TakeoverLost,       // tried to take over, another attempt won the fenced write: wait again
  MaxWaitProcess,     // waited max_wait and on_max_wait = "process": went ahead
  MaxWaitError,       // waited max_wait and on_max_wait = "error": gave up (message redelivered later)
  StoreUnavailable,   // the store did not answer: gave up
  InboxDuplicate,     // inbox row already there: transaction rejected
  WeakStore,          // an external node's claim after a stale seq-kv or lww-kv answer (the last basis)
};
const char* to_string(Basis basis);

enum class Decision : std::uint8_t { Process, Skip, Wait };
const char* to_string(Decision decision);

struct DecisionNote {
  MessageId id = 0;
  ProcessorId processor = 0;
  AttemptId attempt = 0;
  Basis basis = Basis::Absent;
  std::optional<Item> seen;      // the record the decision was based on
  sim::Time local_time = 0;      // the deciding node's clock
};

class ProtocolHooks {
 public:
  virtual ~ProtocolHooks() = default;
  // Called at each named crash point; the world may crash the caller here (throws).
  virtual void crash_point(CrashPoint point, MessageId id, AttemptId attempt) = 0;
  // Every decision an attempt takes (several per attempt when it waits).
  virtual void decided(const DecisionNote& note) = 0;
  // The attempt finished waiting on an in-flight record after `waited` local time.
  virtual void waited(MessageId id, ProcessorId processor, AttemptId attempt, sim::Duration waited) = 0;
  // The attempt wrote its completion (applied says whether the write landed).
  virtual void completed(MessageId id, ProcessorId processor, AttemptId attempt, bool applied) = 0;
  // The attempt, whose effect failed for good, deleted its own in-flight record (applied: the delete landed; false:
  // the record was no longer its own, or the store never answered). Default: nothing is recorded.
  virtual void released(MessageId /*id*/, ProcessorId /*processor*/, AttemptId /*attempt*/, bool /*applied*/) {}
  // The attempt found a record written for another payload of its id and refused the delivery unprocessed
  // (payload_check). Default: nothing is recorded.
  virtual void payload_refused(MessageId /*id*/, ProcessorId /*processor*/, AttemptId /*attempt*/) {}
};

}  // namespace lethe
