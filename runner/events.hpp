// runner/events.hpp — a simulated run's dedupe events (check/events.hpp), for `lethe run --events` and
// `lethe replay --events`.
//
// Two ways. From a run's whole record (replay, tests: run the seed with a WorldRecord and
// WorldOptions::keep_trace): deliveries from the trace's attempt records, the decisions, waits, outcomes,
// completions, the provider's executions, evictions and memo overwrites from the ledger, acknowledgments,
// crashes, restarts, pauses and clock skews from the trace. Or streamed (`lethe run --events`): stream_events()
// sets a run's options so that its trace records and its ledger's records reach an EventSpool as they happen
// and the ledger folds as in a run without events; write_streamed_event_file() then adds what the record still
// holds. Both write the same text for the same run.
// Does not: run anything, or write the file (write_*event_file do, through reports/output_file.hpp).
#pragma once

#include <string>

#include "core/config.hpp"
#include "check/event_spool.hpp"
#include "check/events.hpp"
#include "world/world.hpp"

namespace runner {

lethe::events::EventLog event_log_of(const lethe::ScenarioConfig& config, const lethe::WorldRecord& record,
                                     const lethe::RunResult& result);

// Writes the run's events to `path`, line by line through a temporary file; "" when written, else why not (the
// caller exits 2). Moves the record's ledger into the log (its trace and node names stay).
std::string write_event_file(const std::string& path, const lethe::ScenarioConfig& config, lethe::WorldRecord& record,
                             const lethe::RunResult& result);

// Sets `options` so that the run streams its events into `spool` (which outlives the run). Keeps the options'
// trace kinds when it keeps every kind (keep_trace for --dot).
void stream_events(lethe::events::EventSpool& spool, lethe::WorldOptions& options);
// Writes the events of a run streamed into `spool`, with what `record` (the run's, folded) still holds; as
// write_event_file (and, as it, moves the record's ledger into the log). A temporary file that could not be used is
// said on `warnings` (the log is still written).
std::string write_streamed_event_file(const std::string& path, const lethe::ScenarioConfig& config,
                                      lethe::WorldRecord& record, const lethe::RunResult& result,
                                      lethe::events::EventSpool& spool, std::ostream& warnings);

}  // namespace runner
