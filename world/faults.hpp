// world/faults.hpp — the fault injector: crashes and restarts, crash points, pauses, clock skew, rebalances,
// producer crashes, and swarm mode's choice of which fault kinds a seed gets.
//
// draw_swarm() (before the topology is built; it reads switches() for the network's faults): with
// faults.swarm, each fault kind is on or off for this seed with probability 1/2 (stream "swarm"); otherwise all
// are on. start() (once, after the topology is built, before any node starts) spawns the injectors on the chaos
// node: clock skew for every worker (drawn and traced at time 0, stream "clock_skew"), then one crash loop per
// worker (faults.crash_every, restart after faults.restart_after; stream "crash:<node>"), then one pause loop per
// worker (stream "pause:<node>"), then, for a source with consumer groups, the rebalance loop (stream
// "rebalance"). Every loop stops at the drain (stop()). crash_point() is the protocol's named crash point: it
// fires with the scenario's probability (stream "faults"), crashes the worker and schedules its restart.
// Crashing a node marks its running attempts crashed (LedgerFolding) and tells the source which worker died;
// a restarted worker rejoins the source.
//
// Determinism: every draw comes from the streams named above, in the order of the simulation's events.
// Lifetime: everything passed in outlives the injector, which outlives every run of the simulation.
// Does not: cut network links (the topology schedules partitions) or decide how a worker recovers.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "protocol/env.hpp"
#include "sim/node.hpp"
#include "sim/random.hpp"
#include "sim/simulation.hpp"
#include "world/counterfactual.hpp"
#include "check/ledger_folding.hpp"
#include "world/observations.hpp"
#include "world/source.hpp"

namespace lethe {

// Fault kinds a seed can switch on or off in swarm mode.
struct FaultSwitches {
  bool crashes = true;
  bool crash_points = true;
  bool pauses = true;
  bool clock_skew = true;
  bool rebalances = true;
  bool partitions = true;
  bool loss = true;
  bool ack_loss = true;
  bool duplication = true;
  bool producer_crashes = true;
};

// Swarm testing's draw: each fault kind on or off with probability 1/2, in FaultSwitches' order (one
// bernoulli draw each from `rng`); the names of the kinds switched on are appended to `on`.
FaultSwitches draw_fault_switches(sim::Rng& rng, std::vector<std::string>& on);

// Removes from `config` every fault that a kind `switches` has off would never fire (optional keys left out,
// probabilities 0, partitions removed), so a drawn configuration says it in plain keys. Returns the names of
// the kinds that were in the configuration and are now off, in FaultSwitches' order.
std::vector<std::string> switch_off_faults(ScenarioConfig& config, const FaultSwitches& switches);

// What the injector acts on, once the topology exists.
struct FaultTargets {
  sim::Node* chaos = nullptr;                      // runs the injectors (group "chaos": perfect, instant links)
  sim::Node* producer = nullptr;                   // restarted at the drain
  const std::vector<WorkerSlot>* workers = nullptr;
  MessageSource* source = nullptr;
};

class FaultInjector {
 public:
  FaultInjector(const ScenarioConfig& config, sim::Simulation& simulation, Observations& observations,
                LedgerFolding& ledger_folding);
  FaultInjector(const FaultInjector&) = delete;
  FaultInjector& operator=(const FaultInjector&) = delete;

  void draw_swarm();
  const FaultSwitches& switches() const { return switches_; }
  const std::vector<std::string>& swarm_on() const { return swarm_on_; }  // the kinds a swarm seed got

  void start(const FaultTargets& targets);
  // A counterfactual replay (NoCrash): crashes it spares are not done (their draws are). Before start().
  void set_intervener(const Intervener* intervener) { intervener_ = intervener; }

  // From a worker fiber at `point` of attempt `attempt` of `id`. Throws sim::Crash when the worker dies here.
  void crash_point(CrashPoint point, sim::Node& node, MessageId id, AttemptId attempt);
  // Crashes `node` now, if it is alive.
  void crash(sim::Node& node);
  // Restarts `node` after faults.restart_after, unless it restarted meanwhile.
  void schedule_restart(sim::Node& node);
  // A producer crash point: true when the producer crashes here (counted under `coverage_key`).
  bool producer_crashes(double probability, const std::string& coverage_key);

  // The drain: no fault fires from now on.
  void stop() { on_ = false; }
  // The drain: every crashed worker restarts (and rejoins the source), then the producer.
  void restart_crashed();

 private:
  void spawn_crash_loop(sim::Node* node);
  void spawn_pause_loop(sim::Node* node);
  void spawn_rebalance_loop();
  void rejoin(sim::Node& node);  // a restarted worker rejoins the source
  std::optional<std::size_t> worker_index(const sim::Node& node) const;

  const ScenarioConfig& config_;
  sim::Simulation& simulation_;
  Observations& observations_;
  LedgerFolding& ledger_folding_;
  sim::Rng rng_;  // "faults": crash points, producer crashes, restart delays
  FaultSwitches switches_;
  std::vector<std::string> swarm_on_;
  FaultTargets targets_;
  const Intervener* intervener_ = nullptr;
  bool on_ = true;
};

}  // namespace lethe
