// check/events.hpp — a consumer's dedupe events as JSON lines (docs/formats.md "Event logs"), read into the
// Ledger the oracle judges, and written from one.
//
// One JSON object per line; `event` names its kind: run (first line: the strategy, the processors, the
// provider's settings), publish, delivery (one attempt of one processor on one node), decision, wait, outcome,
// completion, effect (the worker's side of a provider call), execution (the provider's own log: the ground truth
// of duplicates), evict, memo_overwrite, ack, due, crash, restart, pause, skew. Times are integer nanoseconds on one
// clock shared by every line (a Unix-epoch clock for a real system, virtual time for lethe run); durations are
// integer nanoseconds. Processors and nodes are named; message ids and attempt ids are unsigned integers.
//
// Contract:
// - read_events() takes the text of one or more files (lines of all files together form one log; the first
//   non-empty line of the first file is the run line, and every other file may repeat it identically) and
//   builds the Ledger as the world would have: every attempt held whole (nothing folded), its process-type
//   decision, its end, its completion; executions in the order of the lines; a crash marks every attempt of its
//   node that was delivered at or before it and has no outcome. Without execution lines the effect lines stand
//   in for the provider's log (EventLog::provider_log is then false).
// - Read folding (`fold`), a log whose lines are in time order (every "at" at or after the one before, attempt
//   ids growing from one delivery line to the next: as `lethe run --events` writes it) is replayed through a
//   LedgerFolding (check/ledger_folding.hpp), which folds each settled group into its summary as a run does:
//   memory then grows with the groups that did not settle cleanly, not with the log. The oracle's verdict is the
//   same as from the whole ledger. A log not in time order, or with a line the folding cannot take (one naming
//   an attempt already folded or not yet delivered, a second end of an attempt), is read whole.
// - Bad input (not JSON, an unknown kind, a missing or mistyped field, an unknown processor, an attempt never
//   delivered, a second delivery of one attempt id) throws history::Error naming the file, the line, the field
//   and what was expected.
// - write_events() writes what read_events() reads back to the same EventLog; judge_events() runs the oracle
//   (check/oracle.hpp) and, when the run line names saga steps, the saga oracle, on the log.
// - Determinism: everything depends only on the text (no clock, no unordered iteration).
//
// Does not: judge the store's linearizability (that is a store history: lethe check FILE), check the
// [expect] lines of a scenario, count deliveries to a worker apart from the attempts they caused, or know the
// trace (RunResult's trace_hash, trace_events, sim_time, coverage stay empty).
#pragma once

#include <array>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.hpp"
#include "check/history.hpp"
#include "check/ledger.hpp"
#include "core/result.hpp"
#include "sim/regular_file.hpp"

namespace lethe::events {

// What happened to a node as a whole: crash, restart, pause (amount: its length), skew (amount: the offset its
// clock took on).
enum class NodeEventKind : std::uint8_t { Crash, Restart, Pause, Skew };
std::string_view to_string(NodeEventKind kind);

struct NodeEvent {
  NodeEventKind kind = NodeEventKind::Crash;
  sim::Time at = 0;
  std::uint32_t node = 0;
  sim::Duration amount = 0;
};

// A worker acknowledged (accepted) or rejected a delivery to its source.
struct AckEvent {
  sim::Time at = 0;
  MessageId id = 0;
  ProcessorId processor = 0;
  std::uint32_t node = 0;
  bool accepted = true;
};

struct EventLog {
  // The run line.
  std::string protocol;                 // the registered strategy (its duplicate windows bound the causes)
  std::vector<std::string> processors;  // name of each owed processor, by id (every published id owes each)
  int saga_steps = 0;                   // > 0: processor names are the saga's calls (protocol/saga.hpp)
  std::optional<sim::Duration> provider_key_window;  // an idempotent provider pruning its keys after this
  std::optional<std::uint64_t> provider_calls;       // the provider's count of calls, when it keeps one
  std::string scenario;                 // names the result (optional)
  std::uint64_t seed = 0;               // names the result (optional)
  // What the lines gave.
  std::vector<std::string> nodes;       // node names, numbered by first appearance (the ledger's node ids)
  Ledger ledger;
  BTreeMap<AttemptId, sim::Time> delivered_at;  // each attempt's delivery
  std::vector<NodeEvent> node_events;   // in the order of the lines
  std::vector<AckEvent> acks;
  std::uint64_t effect_lines = 0;       // effect lines (the workers' provider calls)
  std::uint64_t execution_lines = 0;    // execution lines (read folding, most are folded away)
  std::uint64_t decision_lines = 0;     // decision lines of any basis
  std::uint64_t evict_lines = 0;        // evict lines of either reason (read folding, a TTL one may be folded)
  bool provider_log = false;            // execution lines were given (else effect lines stood in)
  // Read folding: the earliest delivery and the latest end, completion, crash or execution of the attempts
  // folded away (their delivered_at entries are erased).
  sim::Time folded_first = INT64_MAX;
  sim::Time folded_last = INT64_MIN;
};

// The result fields an event log cannot give (RunResult's table, core/result.cpp), with why; judge_events leaves
// them at their defaults but deliveries (the attempts). Every other field of the table comes from the events.
inline constexpr std::array<std::string_view, 23> kFieldsNotFromEvents = {
    "trace_hash", "trace_events", "sim_time", "coverage", "swarm", "schedule",  // the simulator's trace and faults
    "deliveries",                     // hand-overs to a worker: the events count attempts (one per processor)
    "store_peak_records",             // the store's size: not an event
    "linearizable", "linearizable_unknown",  // the store's history, checked by lethe check FILE
    "expectations", "ok", "defaults_replaced",  // the scenario's [expect] lines
    "store_errors", "store_error_first",  // external nodes' malformed store operations: not written as events
    "drawn", "not_reproducible",      // how the scenario was run: its [explore] draw, its external nodes
    "undelivered", "undelivered_latest",  // the producer's copies still due when the run ended: not events
    "commit_failed",                  // the broker's refusals of offset commits: an ack line says only accepted
    "payload_ignored",                // payloads: an event line names the id, not its payload
    "kv_consistent", "kv_checks",     // external nodes' seq-kv and lww-kv histories: not events
};

// A file's name and its text, or the file itself, read a line at a time (then `text` is not read): a log larger
// than memory is never held whole.
struct EventFile {
  std::string name;
  std::string_view text;
  const sim::LineFile* lines = nullptr;
};

// Reads the files as one log, in two passes over each file's lines (each line parsed when it is read and dropped
// after), folding settled groups when `fold` (see the contract above). Throws history::Error on bad input.
EventLog read_events(const std::vector<EventFile>& files, bool fold = false);

// Writes `log` as JSON lines: the run line, then every event ordered by time (ties: the kinds in the order
// publish, delivery, decision, wait, execution, effect, completion, memo_overwrite, outcome, evict, ack, crash,
// restart, pause, skew; within a kind, the ledger's order).
void write_events(std::ostream& out, const EventLog& log);

// The processor's name as events name it ("processor7" when the run line does not name it).
std::string processor_name(const EventLog& log, ProcessorId processor);

// The result fields the oracle computes from the log (effects .. recovery_latency, memo_overwrites, the
// explanations; the saga fields when saga_steps > 0), with scenario and seed from the run line.
// Throws StrategyContractError when a duplicate's cause is one the strategy does not declare.
RunResult judge_events(const EventLog& log);

// Sentences naming what this log cannot tell apart (causes and fields), for the output and the page.
std::vector<std::string> limits_of(const EventLog& log, const RunResult& result);

}  // namespace lethe::events
