// check/event_spool.hpp — an event log (check/events.hpp) written in write_events' order without holding it
// whole: each line is an entry (its place in the order and the few fields it is rendered from), entries are
// buffered, spilled as sorted runs to a temporary file when the buffer fills, and merged as the log is written.
//
// Contract:
// - Order: every entry has a key (time, kind, sequence) unique in the log, and the log is written in key order,
//   so the text is the same however the entries were split into runs and whichever way they arrived. Kinds rank
//   as write_events says; the sequence of a delivery, decision, completion or outcome line is its attempt id, of
//   any other line its place among the lines of its kind in the order they were added (an EventLog's collection
//   order, which is the order the run recorded them).
// - Two ways in. write_whole(log): the log holds everything (replay, live, tests). Or streamed from a run: the
//   run tells the spool each trace record of event_trace_kinds() (trace_record) and each ledger record as it is
//   written or folded away (LedgerObserver), then write_rest(log) adds what the run's ledger still holds (the
//   attempts not folded, evictions for room, memo overwrites, member removals, refusals, copies due after the
//   end, the published ids) and writes. Either way gives the same text for the same run.
// - Memory: at most kBufferEntries entries (or the constructor's count) (72 bytes each) between spills, the delivery time of each attempt the
//   run has not folded, and a read block per spilled run while writing. The temporary file is made in $TMPDIR
//   (else /tmp) and unlinked at once, so nothing is left behind, whatever happens to the process.
// - A temporary file that cannot be made or written is not an error of the log: the entries are then kept in
//   memory, and spill_error() says why (the caller tells the user).
// - Determinism: the text depends only on the entries (no clock, no unordered iteration, no pointer values).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "check/events.hpp"
#include "check/ledger.hpp"
#include "core/btree.hpp"
#include "sim/trace.hpp"

namespace lethe::events {

// The trace kinds a streamed log reads (EventSpool::trace_record): deliveries' times, acks, crashes, restarts,
// pauses, skews.
std::vector<std::string_view> event_trace_kinds();

// What one trace record of those kinds says of the run: a delivery's time, an acknowledgement or a node event
// (each set only for its kind; nothing for any other kind). The one reading of the trace for events.
struct TraceFacts {
  std::optional<std::pair<AttemptId, sim::Time>> delivered;
  std::optional<AckEvent> ack;
  std::optional<NodeEvent> node;
};
TraceFacts trace_facts(const sim::TraceRecord& record);

class EventSpool final : public LedgerObserver {
 public:
  static constexpr std::size_t kBufferEntries = std::size_t{1} << 18;

  // `buffer_entries`: entries held before a spill (tests make it small to spill often).
  explicit EventSpool(std::size_t buffer_entries = kBufferEntries) : buffer_entries_(buffer_entries) {}
  ~EventSpool() override;
  EventSpool(const EventSpool&) = delete;
  EventSpool& operator=(const EventSpool&) = delete;

  // A run's trace record; kinds other than event_trace_kinds() are ignored.
  void trace_record(const sim::TraceRecord& record);
  void attempt_folded(const AttemptRecord& record, const std::optional<ProcessDecision>& decision) override;
  void execution(const ExecutionRecord& execution) override;
  void eviction(const EvictionRecord& eviction) override;
  void wait(const WaitRecord& wait) override;

  // Writes the run line of `log`, then every entry. REQUIRES: nothing was streamed into this spool.
  void write_whole(std::ostream& out, const EventLog& log);
  // Writes the run line of `log`, then every entry streamed and what `log` still holds. `log` gives the run
  // line's fields, the node names and the ledger as the run left it; its delivered_at, acks and node events and
  // its ledger's executions, evictions and waits are not read (they were streamed).
  void write_rest(std::ostream& out, const EventLog& log);

  // Why entries were kept in memory instead of a temporary file; "" when every spill was written.
  const std::string& spill_error() const { return spill_error_; }

 private:
  // A line's key and the fields it is rendered from (their meaning depends on the kind: event_spool.cpp).
  struct Entry {
    sim::Time at = 0;
    std::uint64_t seq = 0;
    std::uint64_t u[5] = {};
    std::uint32_t node = 0;
    std::uint32_t processor = 0;
    std::uint8_t kind = 0;
    std::uint8_t flags = 0;
  };
  struct Run {
    std::uint64_t offset = 0;  // in entries
    std::uint64_t count = 0;
  };
  class Merge;

  static Entry make(sim::Time at, std::uint8_t kind, std::uint64_t seq, std::initializer_list<std::uint64_t> fields,
                    std::uint32_t node = 0, std::uint32_t processor = 0, std::uint8_t flags = 0);
  void add(const Entry& entry);
  void add_ack(const AckEvent& ack);
  void add_node_event(const NodeEvent& event);
  void add_wait(const WaitRecord& wait, sim::Time delivered_at);
  void spill();
  void add_attempt(const AttemptRecord& record, const std::optional<ProcessDecision>& decision,
                   sim::Time delivered_at);
  void add_whole_ledger_rest(const EventLog& log, bool streamed);
  void write(std::ostream& out, const EventLog& log);
  static bool before(const Entry& x, const Entry& y);

  std::size_t buffer_entries_;
  std::vector<Entry> buffer_;
  std::vector<Run> runs_;
  int fd_ = -1;               // the temporary file of spilled runs (unlinked)
  std::uint64_t spilled_ = 0;  // entries in it
  std::string spill_error_;
  BTreeMap<AttemptId, sim::Time> delivered_;  // attempts delivered and not folded: their delivery time
  std::uint64_t executions_ = 0, evictions_ = 0, waits_ = 0, acks_ = 0, node_events_ = 0;  // sequences
};

}  // namespace lethe::events
