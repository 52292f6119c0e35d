// world/world.hpp — one simulated run of a scenario: builds the world, runs it, judges it.
//
// The world is a composition of parts, each in its own file under world/, built in this order:
//   faults.hpp          the fault injector: swarm switches first (the links depend on them), injectors later;
//   topology.hpp        links and partitions, then the nodes, the store server (store_server.hpp), the sink
//                       (sink.hpp, its provider by sink.kind), the workers and the source (source.hpp, by
//                       topology.source);
//   check/ledger_folding.hpp  the ledger's writes (the store's and sink's hooks feed it), folding settled groups;
//   worker.hpp          what each worker incarnation runs: strategies, the protocol's hooks, attempts;
//   producer.hpp        the producer (direct, dual-write, outbox and its relay), unless the source makes its
//                       own requests;
//   judge.hpp           at the end: the oracle, the linearizability check, the coverage (and, for sagas, the
//                       saga oracle: check/saga_oracle.hpp).
// run() runs the workload until it is done (every message acknowledged everywhere) or run.duration has passed,
// then, with run.drain, heals every fault and lets in-flight work settle (at most max(duration, 1 h) more).
//
// Determinism: everything is derived from (scenario, seed); the result,
// including trace_hash, is a pure function of them. One World per thread at a
// time (it owns a sim::Simulation). Sources and sinks registered at runtime
// must be registered before any run.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.hpp"
#include "check/ledger.hpp"
#include "check/store_model.hpp"
#include "core/result.hpp"
#include "sim/simulation.hpp"
#include "sim/trace.hpp"
#include "world/counterfactual.hpp"
#include "world/external_shared.hpp"

namespace lethe {

// The phases of one run, for timing by the runner (model code reads no clock): Built once the nodes exist,
// Ran when the simulation loop (workload and drain) is over, Judged when the oracle (and the linearizability
// check, when on) has finished.
enum class WorldPhase { Built, Ran, Judged };

struct WorldOptions {
  bool keep_trace = false;            // keep every trace record (replay --message, --explain, --dot)
  std::vector<std::string_view> keep_trace_kinds;  // with keep_trace or on_trace_record: only these kinds (empty: all)
  std::ostream* trace_out = nullptr;  // write the trace as JSON lines
  // Set: each trace record of keep_trace_kinds (every kind when empty) as it is recorded, whether kept or not
  // (`lethe run --events` streams its kinds). Must not touch the world.
  std::function<void(const sim::TraceRecord&)> on_trace_record;
  // Set: told of the ledger's records as they are written and folded away (check/ledger.hpp); the ledger then
  // folds even when a WorldRecord is asked for, and the record's ledger holds what was not folded. Must outlive
  // the run.
  LedgerObserver* ledger_observer = nullptr;
  bool check_linearizability = true;
  std::uint64_t linearizability_budget = 20'000'000;
  std::function<void(WorldPhase)> on_phase;  // called at the end of each phase; must not touch the world
  // Fold every settled group into a summary as it settles (check/ledger.hpp): the ledger then grows with the
  // groups where something happened, not with every attempt. Never changes a result (tests compare both);
  // off when a WorldRecord is asked for (replay and reports read the whole ledger) unless ledger_observer is set.
  bool fold_settled_groups = true;
  // Duplicate explanations kept in the result (the first of each cause always is): replay asks for all of them.
  std::size_t max_explanations = 1000;
  // Set: each operation of the store's history (check/store_model.hpp) as it ends, in that order (`lethe run
  // --history` writes each as a line at once: the history is never held whole); nothing the run does or decides
  // changes. Needs check_linearizability (the history is recorded then).
  std::function<void(const StoreOperation&)> on_store_operation;
  // Set (protocol.kind = "external"): every line exchanged with the nodes, in order (`lethe run
  // --check-determinism` compares two runs' lines). Nothing the run does changes.
  std::vector<ExternalLine>* external_lines = nullptr;
  // Set: a counterfactual replay (world/counterfactual.hpp): one cause's window closed for one message, applied
  // where the world opens it. Unset (a normal run): nothing of it is built, nothing changes.
  std::optional<Counterfactual> counterfactual;
  // Set with `counterfactual`: the intervened (message, processor) pair's fate when the run ended.
  PairFate* counterfactual_fate = nullptr;
};

// Everything a run leaves behind for replay, explanation and reports.
struct WorldRecord {
  std::vector<sim::TraceRecord> trace;
  std::vector<std::string> node_names;
  Ledger ledger;
  std::vector<std::string> processors;
  std::uint64_t schedule_steps = 0;  // fibers the kernel resumed: the run's work, whatever its trace records
};

// Runs one seed of a scenario. Throws sim::InternalError on a broken invariant of lethe itself.
// run.schedule picks the kernel's schedule policy. For "pct(depth=D)" with D > 1 the change points are drawn
// among the scheduling steps of a first, FIFO run of the same scenario and seed (workload and drain only,
// nothing judged, nothing written): k is then an estimate of the PCT run's own step count, and a PCT seed costs
// about two runs.
RunResult run_world(const ScenarioConfig& config, std::uint64_t seed, const WorldOptions& options = {},
                    WorldRecord* record = nullptr);

}  // namespace lethe
