#include "world/judge.hpp"

#include <fmt/format.h>

#include "check/oracle.hpp"
#include "protocol/registry.hpp"
#include "protocol/saga.hpp"

namespace lethe {
namespace {

// The ledger's executions, complete, and every executed attempt marked.
void close_ledger(const JudgeInput& in) {
  const ScenarioConfig& config = in.config;
  Ledger& ledger = in.ledger;
  in.ledger_folding.flush();
  if (!strategy_info(config.protocol.kind).effect_in_store_transaction && !in.ledger_folding.folding()) {
    ledger.executions = in.topology.sink().take_executions();  // only inbox runs record executions in the store hook
  }
  for (const auto& e : ledger.executions) {
    if (ledger.has_attempt(e.attempt)) ledger.attempt(e.attempt).executed = true;
  }
}

void check_linearizability(const JudgeInput& in, RunResult& result) {
  if (!in.options.check_linearizability) return;
  const auto verdict = in.topology.store().check_history(in.options.linearizability_budget);
  if (verdict.verdict == lin::Verdict::Linearizable) result.linearizable = true;
  if (verdict.verdict == lin::Verdict::NotLinearizable) result.linearizable = false;
  if (verdict.verdict == lin::Verdict::Unknown) result.linearizable_unknown = {verdict.explanation};
}

void fill_coverage(const JudgeInput& in) {
  auto& counters = in.observations.counters();
  // Coverage of every fault point, including the ones that never fired (a silent green is visible).
  for (const char* point : {"after_start_before_effect", "after_effect_before_complete", "after_complete_before_ack"}) {
    counters.try_emplace(fmt::format("crash_point.{}.reached", point), 0);
    counters.try_emplace(fmt::format("crash_point.{}.fired", point), 0);
  }
  for (const char* key : {"crash", "restart", "pause", "partition.scheduled", "redelivery.copy", "producer.retry"}) {
    counters.try_emplace(key, 0);
  }
  const auto& net = in.network.stats();
  counters["network.lost"] = net.lost;
  counters["network.ack_lost"] = net.ack_lost;
  counters["network.duplicated"] = net.duplicated;
  counters["network.partitioned"] = net.partitioned;
  counters["network.rpc_timeouts"] = net.rpc_timeouts;
  counters["store.evictions"] = in.topology.store().evictions();
  counters["sink.rejected"] = in.topology.sink().rejected();
  // Only a provider that can refuse (none of the built-ins) adds this counter: results of the others keep their
  // fields.
  if (in.topology.sink().refused() > 0) counters["sink.refused"] = in.topology.sink().refused();
  if (in.topology.sink().failed() > 0) counters["sink.failed"] = in.topology.sink().failed();
  if (in.topology.sink().conflicts() > 0) counters["sink.conflicts"] = in.topology.sink().conflicts();
  if (in.topology.sink().mismatches() > 0) counters["sink.mismatches"] = in.topology.sink().mismatches();
  if (in.topology.sink().keys_expired() > 0) counters["sink.keys_expired"] = in.topology.sink().keys_expired();
}

// The crash points the scenario gave a non-zero probability, unless the seed's swarm switched them off.
std::vector<std::string> armed_fault_points(const JudgeInput& in) {
  std::vector<std::string> armed;
  if (!in.faults.switches().crash_points) return armed;
  const CrashPointsSection& points = in.config.faults.crash_points;
  const std::pair<const char*, double> probabilities[] = {
      {"after_start_before_effect", points.after_start_before_effect},
      {"after_effect_before_complete", points.after_effect_before_complete},
      {"after_complete_before_ack", points.after_complete_before_ack}};
  for (const auto& [point, probability] : probabilities) {
    if (probability > 0.0) armed.push_back(fmt::format("crash_point.{}.fired", point));
  }
  return armed;
}

}  // namespace

RunResult judge_run(const JudgeInput& in) {
  const ScenarioConfig& config = in.config;
  sim::Simulation& sim = in.simulation;
  in.observations.merge_counted();
  close_ledger(in);
  RunResult result;
  result.scenario = config.scenario.name;
  result.seed = in.seed;
  OracleInput input{in.ledger, config.protocol.kind, in.topology.sink().calls(),
                    [&sim](std::uint32_t node) { return sim.node(node).name(); },
                    [&config](ProcessorId p) {
                      if (config.saga.steps > 0) return saga_call_name(p);  // a saga's calls (protocol/saga.hpp)
                      return p < config.topology.processors.size() ? config.topology.processors[p]
                                                                   : fmt::format("processor{}", p);
                    }};
  input.max_explanations = in.options.max_explanations;
  if (config.sink.idempotent && config.sink.idempotency_window != kTtlNone) {
    input.provider_key_window = config.sink.idempotency_window;
  }
  judge(input, result);
  check_linearizability(in, result);
  fill_coverage(in);
  result.coverage = in.observations.counters();
  result.armed_fault_points = armed_fault_points(in);
  result.swarm = in.faults.swarm_on();
  result.sim_time = in.observations.last_activity();
  result.trace_hash = sim.trace().hash();
  result.trace_events = sim.trace().count();
  result.store_peak_records = in.topology.store().peak_records();
  result.store_errors = in.ledger.store_errors;
  if (!in.ledger.first_store_error.empty()) result.store_error_first = {in.ledger.first_store_error};
  result.undelivered = in.ledger.undelivered;
  result.undelivered_latest = in.ledger.undelivered_latest;
  result.commit_failed = in.ledger.commit_failed;
  result.payload_mismatches = in.ledger.payload_refusals.size();
  result.payload_ignored = in.ledger.payload_ignored;
  return result;
}

}  // namespace lethe
