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

#include "core/config.hpp"
#include "check/events.hpp"
#include "world/world.hpp"

namespace runner {

lethe::events::EventLog event_log_of(const lethe::ScenarioConfig& config, const lethe::WorldRecord& record,
                                     const lethe::RunResult& result);

// Writes the run's events to `path`; "" when written, else why not (the caller exits 2).
std::string write_event_file(const std::string& path, const lethe::ScenarioConfig& config,
                             const lethe::WorldRecord& record, const lethe::RunResult& result);

}  // namespace runner
