#include "world/faults.hpp"

#include <algorithm>
#include <type_traits>

namespace lethe {
namespace {

template <class T>
bool is_off(const std::optional<T>& field) {
  return !field.has_value();
}
template <class T>
bool is_off(const std::vector<T>& field) {
  return field.empty();
}

constexpr sim::TraceKind kTraceCrashPoint{"crash_point", "message", "point", "attempt"};
constexpr sim::TraceKind kTraceSkew{"skew", "skewed_node", "skew_ns"};

}  // namespace

FaultInjector::FaultInjector(const ScenarioConfig& config, sim::Simulation& simulation, Observations& observations,
                             LedgerFolding& ledger_folding)
    : config_(config),
      simulation_(simulation),
      observations_(observations),
      ledger_folding_(ledger_folding),
      rng_(simulation.rng("faults")) {}

FaultSwitches draw_fault_switches(sim::Rng& rng, std::vector<std::string>& on) {
  FaultSwitches switches;
  auto flip = [&](bool& kind_on, const char* name) {
    kind_on = rng.bernoulli(0.5);
    if (kind_on) on.emplace_back(name);
  };
  flip(switches.crashes, "crashes");
  flip(switches.crash_points, "crash_points");
  flip(switches.pauses, "pauses");
  flip(switches.clock_skew, "clock_skew");
  flip(switches.rebalances, "rebalances");
  flip(switches.partitions, "partitions");
  flip(switches.loss, "loss");
  flip(switches.ack_loss, "ack_loss");
  flip(switches.duplication, "duplication");
  flip(switches.producer_crashes, "producer_crashes");
  return switches;
}

std::vector<std::string> switch_off_faults(ScenarioConfig& config, const FaultSwitches& switches) {
  std::vector<std::string> off;
  auto clear = [&](bool kind_on, const char* name, auto&&... fields) {
    if (kind_on) return;
    bool present = false;
    auto reset = [&present](auto& field) {
      using Field = std::decay_t<decltype(field)>;
      if constexpr (std::is_same_v<Field, double>) {
        present = present || field != 0.0;
        field = 0.0;
      } else {  // an optional key, or a list of windows
        present = present || !is_off(field);
        field = Field{};
      }
    };
    (reset(fields), ...);
    if (present) off.emplace_back(name);
  };
  FaultsSection& faults = config.faults;
  clear(switches.crashes, "crashes", faults.crash_every);
  clear(switches.crash_points, "crash_points", faults.crash_points.after_start_before_effect,
        faults.crash_points.after_effect_before_complete, faults.crash_points.after_complete_before_ack);
  clear(switches.pauses, "pauses", faults.pause_every);
  clear(switches.clock_skew, "clock_skew", faults.clock_skew);
  clear(switches.rebalances, "rebalances", faults.rebalance_every);
  clear(switches.partitions, "partitions", config.network.partitions);
  clear(switches.loss, "loss", config.network.loss);
  clear(switches.ack_loss, "ack_loss", config.network.ack_loss);
  clear(switches.duplication, "duplication", config.network.duplicate);
  clear(switches.producer_crashes, "producer_crashes", config.producer.crash_between_commit_and_publish);
  return off;
}

void FaultInjector::draw_swarm() {
  if (!config_.faults.swarm) return;
  // Each fault kind is on or off for this seed, with probability 1/2 (TigerBeetle/FoundationDB swarm testing).
  sim::Rng swarm = simulation_.rng("swarm");
  switches_ = draw_fault_switches(swarm, swarm_on_);
}

void FaultInjector::start(const FaultTargets& targets) {
  targets_ = targets;
  const auto& faults = config_.faults;
  const std::vector<WorkerSlot>& workers = *targets_.workers;
  if (switches_.clock_skew && faults.clock_skew.has_value()) {
    sim::Rng skew_rng = simulation_.rng("clock_skew");
    for (const WorkerSlot& slot : workers) {
      sim::Node* node = slot.node;
      const sim::Duration skew = faults.clock_skew->sample(skew_rng);
      node->set_clock_skew(skew);
      simulation_.trace().record(0, kTraceSkew, node->id(), node->id(), static_cast<std::uint64_t>(skew));
      if (skew != 0) observations_.cover("clock_skew.nonzero_nodes");
    }
  }
  if (switches_.crashes && faults.crash_every.has_value()) {
    for (const WorkerSlot& slot : workers) spawn_crash_loop(slot.node);
  }
  if (switches_.pauses && faults.pause_every.has_value()) {
    for (const WorkerSlot& slot : workers) spawn_pause_loop(slot.node);
  }
  if (switches_.rebalances && faults.rebalance_every.has_value() && targets_.source->has_consumer_groups()) {
    spawn_rebalance_loop();
  }
}

void FaultInjector::spawn_crash_loop(sim::Node* node) {
  targets_.chaos->spawn([this, node] {
    sim::Rng rng = simulation_.rng("crash:" + node->name());
    while (true) {
      sim::sleep(std::max<sim::Duration>(1, config_.faults.crash_every->sample(rng)));
      if (!on_) return;
      if (!node->alive()) continue;
      observations_.cover("crash.random");
      crash(*node);
      sim::sleep(config_.faults.restart_after.sample(rng));
      if (!node->alive()) {
        node->restart();
        rejoin(*node);
        observations_.cover("restart");
      }
    }
  });
}

void FaultInjector::spawn_pause_loop(sim::Node* node) {
  targets_.chaos->spawn([this, node] {
    sim::Rng rng = simulation_.rng("pause:" + node->name());
    while (true) {
      sim::sleep(std::max<sim::Duration>(1, config_.faults.pause_every->sample(rng)));
      if (!on_) return;
      if (!node->alive()) continue;
      node->pause_for(config_.faults.pause_for.sample(rng));
      observations_.cover("pause");
      if (const auto index = worker_index(*node)) targets_.source->worker_paused(*index);
    }
  });
}

void FaultInjector::spawn_rebalance_loop() {
  targets_.chaos->spawn([this] {
    sim::Rng rng = simulation_.rng("rebalance");
    while (true) {
      sim::sleep(std::max<sim::Duration>(1, config_.faults.rebalance_every->sample(rng)));
      if (!on_) return;
      targets_.source->rebalance();
      observations_.cover("rebalance.scheduled");
    }
  });
}

void FaultInjector::crash_point(CrashPoint point, sim::Node& node, MessageId id, AttemptId attempt) {
  observations_.crash_point_reached(point);
  double probability = 0.0;
  const auto& points = config_.faults.crash_points;
  switch (point) {
    case CrashPoint::AfterStartBeforeEffect: probability = points.after_start_before_effect; break;
    case CrashPoint::AfterEffectBeforeComplete: probability = points.after_effect_before_complete; break;
    case CrashPoint::AfterCompleteBeforeAck: probability = points.after_complete_before_ack; break;
  }
  if (!switches_.crash_points || !on_) probability = 0.0;
  if (probability <= 0.0 || !rng_.bernoulli(probability)) return;
  if (intervener_ != nullptr && intervener_->spares_crash_point(point, attempt)) return;
  observations_.crash_point_fired(point);
  simulation_.trace().record(simulation_.now(), kTraceCrashPoint, node.id(), id, static_cast<std::uint64_t>(point),
                             attempt);
  crash(node);
  schedule_restart(node);
  simulation_.checkpoint();  // throws sim::Crash: this fiber dies here
}

void FaultInjector::crash(sim::Node& node) {
  if (!node.alive()) return;
  if (intervener_ != nullptr && intervener_->spares(node)) return;
  ledger_folding_.node_crashed(node.id(), simulation_.now());
  node.crash();
  observations_.cover("crash");
  if (const auto index = worker_index(node)) targets_.source->worker_crashed(*index);
}

void FaultInjector::schedule_restart(sim::Node& node) {
  sim::Node* n = &node;
  const std::uint32_t incarnation = node.incarnation();
  simulation_.after(config_.faults.restart_after.sample(rng_), [this, n, incarnation] {
    if (n->alive() || n->incarnation() != incarnation) return;
    n->restart();
    observations_.cover("restart");
    rejoin(*n);
  });
}

bool FaultInjector::producer_crashes(double probability, const std::string& coverage_key) {
  if (!switches_.producer_crashes || !on_ || probability <= 0.0) return false;
  if (!rng_.bernoulli(probability)) return false;
  observations_.cover(coverage_key);
  return true;
}

void FaultInjector::restart_crashed() {
  for (const WorkerSlot& slot : *targets_.workers) {
    if (!slot.node->alive()) {
      slot.node->restart();
      rejoin(*slot.node);
    }
  }
  if (!targets_.producer->alive()) targets_.producer->restart();
}

void FaultInjector::rejoin(sim::Node& node) {
  if (const auto index = worker_index(node)) targets_.source->worker_started(*index);
}

std::optional<std::size_t> FaultInjector::worker_index(const sim::Node& node) const {
  const std::vector<WorkerSlot>& workers = *targets_.workers;
  for (std::size_t i = 0; i < workers.size(); ++i) {
    if (workers[i].node == &node) return i;
  }
  return std::nullopt;
}

}  // namespace lethe
