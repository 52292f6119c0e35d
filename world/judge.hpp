// world/judge.hpp — the judge: what a run's result says, once the simulation loop is over.
//
// judge_run() closes the ledger (groups still open are kept whole; the provider's log is taken over unless
// effects were folded as they happened or, for inbox, recorded from the store), marks executed attempts, lets
// the oracle (check/oracle.hpp) count and explain every duplicate, checks the store's history for
// linearizability (when WorldOptions::check_linearizability; the store checked it as it was recorded: within the
// checker's budgets, else undecided, with the reason in linearizable_unknown), and fills the
// coverage: every fault point and fault kind, also the ones that never fired (as zeros), the network's, store's
// and sink's counters, the swarm kinds, the last activity, the trace hash and count.
//
// REQUIRES: called once, after the simulation loop. Runs nothing in the simulation.
// Does not: decide what counts as a duplicate (the oracle does).
#pragma once

#include <cstdint>

#include "core/config.hpp"
#include "check/ledger.hpp"
#include "core/result.hpp"
#include "sim/network.hpp"
#include "sim/simulation.hpp"
#include "world/faults.hpp"
#include "check/ledger_folding.hpp"
#include "world/observations.hpp"
#include "world/topology.hpp"
#include "world/world.hpp"

namespace lethe {

struct JudgeInput {
  const ScenarioConfig& config;
  std::uint64_t seed;
  const WorldOptions& options;
  sim::Simulation& simulation;
  const sim::Network& network;
  Topology& topology;
  Ledger& ledger;
  LedgerFolding& ledger_folding;
  Observations& observations;
  const FaultInjector& faults;
};

RunResult judge_run(const JudgeInput& input);

}  // namespace lethe
