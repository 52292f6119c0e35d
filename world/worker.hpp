// world/worker.hpp — the workers: what each incarnation of a worker node runs.
//
// main(i) is the main of worker i's current incarnation (the world sets it on the node). It connects to the
// store, opens a SinkClient (stream "sink-client:<node>:<incarnation>"), builds one strategy per processor it
// serves (streams "protocol:<node>:<incarnation>:<k>"; Shared workers serve every processor, the others their
// own), and hands itself to the source's consumer loop (MessageSource::consume) as a SourceWorker: handling a
// message is one attempt per strategy, in processor order. An attempt is begun and ended in the ledger and
// traced ("attempt", "outcome"); its effect sleeps workload.processing_time (stream "work:<node>:<incarnation>")
// and calls the sink. The protocol's hooks record its decisions, waits and completions in the ledger and reach
// the fault injector at every crash point; the source's acknowledgements are traced ("ack").
// With [saga] steps > 0 a message is a saga: the orchestrator of protocol.kind (protocol/saga.hpp, stream
// "saga:<node>:<incarnation>") drives it, each step and compensation call an attempt (world/saga.hpp).
//
// Lifetime: everything passed in outlives the workers, which outlive every run of the simulation.
// Does not: decide when a worker crashes or restarts (the fault injector), or what a failure means at the
// source (the source).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include "core/config.hpp"
#include "check/ledger.hpp"
#include "protocol/strategies.hpp"
#include "sim/network.hpp"
#include "sim/simulation.hpp"
#include "world/external_shared.hpp"
#include "world/faults.hpp"
#include "check/ledger_folding.hpp"
#include "world/observations.hpp"
#include "world/topology.hpp"

namespace lethe {

// What every worker uses.
struct WorkerEnvironment {
  const ScenarioConfig& config;
  sim::Simulation& simulation;
  sim::Network& network;
  Topology& topology;
  Ledger& ledger;
  LedgerFolding& ledger_folding;
  Observations& observations;
  FaultInjector& faults;
  Intervener* intervener = nullptr;  // a counterfactual replay only (world/counterfactual.hpp)
};

// One attempt of (id, processor) on `node`, begun and ended in the ledger and traced ("attempt", "outcome"):
// `protect` runs it, given the attempt's id. Throws sim::Crash when the node dies meanwhile.
ProtectResult run_attempt(const WorkerEnvironment& environment, MessageId id, ProcessorId processor, sim::Node& node,
                          const std::function<ProtectResult(AttemptId)>& protect);

class Workers {
 public:
  explicit Workers(WorkerEnvironment environment) : environment_(environment) {}

  // The main of worker `index`'s current incarnation: never returns; throws sim::Crash when the worker dies.
  void main(std::size_t index);
  // What the run's external nodes share (protocol.kind = "external"): the first bad node's error among it.
  ExternalShared& external() { return external_; }

 private:
  std::vector<ProcessorId> processors_of(std::size_t index) const;
  void external_main(std::size_t index);  // protocol.kind = "external": the node is the user's process

  WorkerEnvironment environment_;
  ExternalShared external_;
  std::shared_ptr<const ProtocolSection> strategy_settings_;  // made at the first worker's start, shared by all
};

}  // namespace lethe
