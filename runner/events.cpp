#include "runner/events.hpp"

#include <fmt/format.h>
#include <ostream>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "reports/output_file.hpp"

namespace runner {

namespace {

namespace events = lethe::events;

// The trace's deliveries, acknowledgements and node events (check/event_spool.hpp, trace_facts).
void read_trace(const std::vector<sim::TraceRecord>& trace, events::EventLog& log) {
  for (const sim::TraceRecord& r : trace) {
    const events::TraceFacts facts = events::trace_facts(r);
    if (facts.delivered) log.delivered_at[facts.delivered->first] = facts.delivered->second;
    if (facts.ack) log.acks.push_back(*facts.ack);
    if (facts.node) log.node_events.push_back(*facts.node);
  }
}

// The run line's fields and the node names.
events::EventLog run_fields(const lethe::ScenarioConfig& config, const lethe::WorldRecord& record,
                            const lethe::RunResult& result) {
  events::EventLog log;
  log.protocol = config.protocol.kind;
  log.processors = config.topology.processors;
  log.saga_steps = config.saga.steps;
  if (config.sink.idempotent && config.sink.idempotency_window != lethe::kTtlNone) {
    log.provider_key_window = config.sink.idempotency_window;
  }
  log.provider_calls = result.sink_calls;
  log.scenario = result.scenario;
  log.seed = result.seed;
  log.nodes = record.node_names;
  return log;
}

// Everything but the ledger.
events::EventLog log_without_ledger(const lethe::ScenarioConfig& config, const lethe::WorldRecord& record,
                                    const lethe::RunResult& result) {
  events::EventLog log = run_fields(config, record, result);
  read_trace(record.trace, log);
  return log;
}

}  // namespace

events::EventLog event_log_of(const lethe::ScenarioConfig& config, const lethe::WorldRecord& record,
                              const lethe::RunResult& result) {
  events::EventLog log = log_without_ledger(config, record, result);
  log.ledger = record.ledger;
  return log;
}

std::string write_event_file(const std::string& path, const lethe::ScenarioConfig& config,
                             lethe::WorldRecord& record, const lethe::RunResult& result) {
  events::EventLog log = log_without_ledger(config, record, result);
  log.ledger = std::move(record.ledger);
  return reports::write_file_with(path, [&log](std::ostream& out) { events::write_events(out, log); });
}

void stream_events(events::EventSpool& spool, lethe::WorldOptions& options) {
  if (!options.keep_trace || !options.keep_trace_kinds.empty()) options.keep_trace_kinds = events::event_trace_kinds();
  options.on_trace_record = [&spool](const sim::TraceRecord& r) { spool.trace_record(r); };
  options.ledger_observer = &spool;
}

std::string write_streamed_event_file(const std::string& path, const lethe::ScenarioConfig& config,
                                      lethe::WorldRecord& record, const lethe::RunResult& result,
                                      events::EventSpool& spool, std::ostream& warnings) {
  events::EventLog log = run_fields(config, record, result);  // with the folded ledger: the rest was streamed
  log.ledger = std::move(record.ledger);
  std::string error;
  try {
    error = reports::write_file_with(path, [&](std::ostream& out) { spool.write_rest(out, log); });
  } catch (const std::runtime_error& e) {
    return fmt::format("cannot write {}: {}", path, e.what());
  }
  if (!spool.spill_error().empty()) {
    warnings << fmt::format("lethe: --events {}: {}; the log was sorted in memory\n", path, spool.spill_error());
  }
  return error;
}

}  // namespace runner
