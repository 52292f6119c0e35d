// runner/events.hpp — a simulated run's dedupe events (check/events.hpp), for `lethe run --events` and
// `lethe replay --events`.
//
// The event log is read off the run's record (the whole ledger and trace: run the seed with a WorldRecord and
// WorldOptions::keep_trace): deliveries from the trace's attempt records, the decisions, waits, outcomes,
// completions, the provider's executions, evictions and memo overwrites from the ledger, acknowledgments,
// crashes, restarts, pauses and clock skews from the trace.
// Does not: run anything, or write the file (write_event_file does, through reports/output_file.hpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/config.hpp"
#include "check/events.hpp"
#include "world/world.hpp"

namespace runner {

lethe::events::EventLog event_log_of(const lethe::ScenarioConfig& config, const lethe::WorldRecord& record,
                                     const lethe::RunResult& result);

// The trace kinds event_log_of reads: a run for its events keeps only these (WorldOptions::keep_trace_kinds).
std::vector<std::string_view> event_trace_kinds();

// Writes the run's events to `path`, line by line through a temporary file; "" when written, else why not (the
// caller exits 2). Moves the record's ledger into the log (its trace and node names stay).
std::string write_event_file(const std::string& path, const lethe::ScenarioConfig& config, lethe::WorldRecord& record,
                             const lethe::RunResult& result);

}  // namespace runner
