// check/ledger_folding.hpp — writes about attempts and effects into the Ledger, in the order they happen, folding
// each settled group into its summary as it settles (check/ledger.hpp, SettledGroup). The world writes through it
// during a run; the event log reader (check/events.hpp) replays a log in time order through it.
//
// Every attempt is begun here (its record, the node it runs on) and ended here (outcome, value), or marked
// crashed with every other attempt running on its node. Effects (the provider's executions, or the inbox's
// domain writes) and evictions of dedupe and inbox records are recorded here too. With folding on, a group
// (message id, processor) is open while it has an attempt begun since it was last closed; when its last such
// attempt is over it is closed: folded into a SettledGroup if it settled cleanly (one execution by an attempt
// that decided on its own, completed and returned the provider's value; every other attempt skipped with that
// value), otherwise its records are kept whole for good. Groups still open when the run ends are kept whole
// (flush). With folding off every record is kept.
//
// Recording never changes what happens: nothing here draws a random number, schedules or traces anything.
// REQUIRES: every attempt begun is ended or crashed at most once; flush() once, at the end of the run.
// Does not: decide anything, or read the trace.
#pragma once

#include <cstdint>
#include <vector>

#include <absl/container/btree_map.h>
#include <absl/container/btree_set.h>
#include <absl/container/inlined_vector.h>

#include "core/config.hpp"
#include "check/ledger.hpp"
#include "protocol/strategies.hpp"
#include "sim/time.hpp"

namespace lethe {

class LedgerFolding {
 public:
  explicit LedgerFolding(Ledger& ledger) : ledger_(ledger) {}
  LedgerFolding(const LedgerFolding&) = delete;
  LedgerFolding& operator=(const LedgerFolding&) = delete;

  // On: fold settled groups (check/ledger.hpp). Set before the first attempt.
  void set_folding(bool on) { folding_ = on; }
  bool folding() const { return folding_; }
  // Told of every record as it is written or folded away (check/ledger.hpp); null: none. Set before the first
  // attempt; the observer outlives the run.
  void set_observer(LedgerObserver* observer) { observer_ = observer; }

  // A new attempt of (id, processor) on node `node`: its record, active on the node. Returns its id.
  AttemptId begin(MessageId id, ProcessorId processor, std::uint32_t node);
  // The same for an attempt whose id a recorded log gave. REQUIRES: `attempt` above every id held or issued.
  void begin_recorded(AttemptId attempt, MessageId id, ProcessorId processor, std::uint32_t node);
  // The attempt returned `result` at `now`. Returns a copy of its record (folding may erase the record).
  AttemptRecord end(AttemptId attempt, const ProtectResult& result, sim::Time now);
  // The caller set the active attempt's end (ended_at, outcome, value) in its record: it is no longer active,
  // and its group may close (the record may be erased). REQUIRES: the attempt is active (begun, not over).
  void ended(AttemptId attempt);
  // Node `node` crashed at `now`: every attempt active on it is marked crashed.
  void node_crashed(std::uint32_t node, sim::Time now);
  // The attempt of (id, processor) active on node `node` (begun, not ended nor crashed), or 0 if none.
  AttemptId running(std::uint32_t node, MessageId id, ProcessorId processor) const;

  // One execution of an effect (the provider's, or an inbox domain write).
  void record_execution(const ExecutionRecord& execution);
  // An applied eviction of `key` at `at`.
  void record_eviction(Key key, sim::Time at);
  // An attempt waited for another's record (InFlightRecent) for `wait.waited` before deciding again.
  void record_wait(const WaitRecord& wait);
  // An eviction for room (store.capacity), into Ledger::capacity_evictions, never folded: its facts (the last
  // write, the writes since) are what explains a capacity_evicted duplicate.
  void record_capacity_eviction(const EvictionRecord& eviction);
  // The run is over: groups still open are kept whole.
  void flush();

 private:
  // Folds an eviction of a settled group's record into its summary (the earliest one counts); false: not folded.
  bool fold_eviction(Key key, sim::Time at);
  // Groups with an attempt begun since they were last closed: folded or kept when their last attempt is over.
  struct OpenGroup {
    std::uint32_t running = 0;  // attempts begun and not over
    // Inline room for the common group (one attempt and its execution, or a skip): no allocation per message.
    absl::InlinedVector<AttemptId, 2> attempts;          // begun since the group opened
    absl::InlinedVector<ExecutionRecord, 1> executions;  // the provider's executions while open
  };

  static AttemptRecord fresh(MessageId id, ProcessorId processor, std::uint32_t node);
  void opened(AttemptId attempt, const AttemptRecord& record);
  void attempt_over(const AttemptRecord& record);  // it ended, or its node crashed
  void close_group(std::uint64_t key, OpenGroup& group);
  std::vector<AttemptId>& active_on(std::uint32_t node);

  Ledger& ledger_;
  bool folding_ = false;
  LedgerObserver* observer_ = nullptr;
  std::vector<std::vector<AttemptId>> active_attempts_;    // per node id (grown as nodes run attempts)
  absl::btree_map<std::uint64_t, OpenGroup> open_groups_;  // by group_key
  absl::btree_set<std::uint64_t> kept_groups_;             // groups whose records are kept whole from now on
};

}  // namespace lethe
