#include "runner/events.hpp"

#include <string_view>
#include <utility>

#include "reports/output_file.hpp"

namespace runner {

namespace {

namespace events = lethe::events;

// The trace's node-wide records and attempts, by kind name (sim/trace.hpp, world/worker.cpp, world/faults.cpp).
void read_trace(const std::vector<sim::TraceRecord>& trace, events::EventLog& log) {
  for (const sim::TraceRecord& r : trace) {
    const std::string_view kind = r.kind_name;
    if (kind == "attempt") {
      log.delivered_at[r.c] = r.time;
    } else if (kind == "ack") {
      log.acks.push_back(events::AckEvent{r.time, r.a, static_cast<lethe::ProcessorId>(r.b), r.node, r.c != 0});
    } else if (kind == "crash") {
      log.node_events.push_back(events::NodeEvent{events::NodeEventKind::Crash, r.time, r.node, 0});
    } else if (kind == "restart") {
      log.node_events.push_back(events::NodeEvent{events::NodeEventKind::Restart, r.time, r.node, 0});
    } else if (kind == "pause") {
      log.node_events.push_back(
          events::NodeEvent{events::NodeEventKind::Pause, r.time, r.node, static_cast<sim::Duration>(r.a)});
    } else if (kind == "skew") {
      log.node_events.push_back(events::NodeEvent{events::NodeEventKind::Skew, r.time,
                                                  static_cast<std::uint32_t>(r.a), static_cast<sim::Duration>(r.b)});
    }
  }
}

// Everything but the ledger.
events::EventLog log_without_ledger(const lethe::ScenarioConfig& config, const lethe::WorldRecord& record,
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
  read_trace(record.trace, log);
  return log;
}

}  // namespace

std::vector<std::string_view> event_trace_kinds() { return {"attempt", "ack", "crash", "restart", "pause", "skew"}; }

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

}  // namespace runner
