#include "world/world.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <exception>
#include <memory>
#include <set>
#include <string>

#include "check/saga_oracle.hpp"
#include "protocol/registry.hpp"
#include "sim/network.hpp"
#include "sim/node.hpp"
#include "world/faults.hpp"
#include "world/judge.hpp"
#include "check/ledger_folding.hpp"
#include "world/observations.hpp"
#include "world/producer.hpp"
#include "world/topology.hpp"
#include "world/external_node.hpp"
#include "world/worker.hpp"

namespace lethe {

namespace {

constexpr sim::Duration kCheckStep = sim::kSecond;

// What makes a run with plain Maelstrom nodes possibly irreproducible, in one line naming the nodes ("" when every
// turn of every plain node ended with the node seen still and no timer of its own pending).
std::string plain_nodes_unreproducible(const std::map<std::string, PlainNodeTurns>& plain) {
  constexpr std::size_t kNamed = 8;
  PlainNodeTurns sum;
  std::vector<std::string> named;
  std::size_t nodes = 0;
  for (const auto& [node, ended] : plain) {
    if (ended.reproducible()) continue;
    if (++nodes <= kNamed) named.push_back(node);
    sum.add(ended);
  }
  if (nodes == 0) return "";
  std::string names = fmt::format("{}", fmt::join(named, ", "));
  if (nodes > kNamed) names += fmt::format(" and {} more", nodes - kNamed);
  std::vector<std::string> reasons;
  if (sum.by_silence > 0) {
    reasons.push_back(fmt::format("{} of {} turns ended after external.quiet_period of silence ({})", sum.by_silence,
                                  sum.turns, sum.silence_why));
  }
  if (sum.with_timer > 0) {
    // Why the timer was the machine's: the node's whole clock was (wall_clock_why), or else lethe cannot tell
    // which of the waits it does not serve this one is, so it names each that can be (a wait without a free slot
    // only when one was counted).
    const std::string unserved = fmt::format(
        "a wait lethe did not serve: one the virtual-clock library does not cover (a condition variable's timed "
        "wait, or a system call made without the C library){}",
        sum.slots_missed > 0 ? ", one begun before init_ok, or one that found no free slot"
                             : " or one begun before init_ok");
    const std::string whose =
        sum.wall_clock_why.empty() ? unserved : "the node's clock is the machine's: " + sum.wall_clock_why;
    reasons.push_back(fmt::format("{} of {} turns ended with a wall-clock timer of the node's own pending ({}; {}): "
                                  "the run repeats only if none fires before what it waits for",
                                  sum.with_timer, sum.turns, sum.first_timer, whose));
  }
  if (sum.timers_unread > 0) {
    reasons.push_back(fmt::format("{} of {} turns ended with the node still, but what its threads slept in could not "
                                  "be read (/proc/PID/task/TID/syscall): a timer of its own may have been pending",
                                  sum.timers_unread, sum.turns));
  }
  if (sum.slots_missed > 0) {
    reasons.push_back(fmt::format("{} timed wait{} of a node's threads ran on the machine's clock: more threads waited "
                                  "with a timeout at once than the virtual-clock library has slots for",
                                  sum.slots_missed, sum.slots_missed == 1 ? "" : "s"));
  }
  if (sum.wrote_between > 0) {
    reasons.push_back(fmt::format("{} time{} a node wrote between its turns (a timer or a thread of its own): read "
                                  "as part of its next turn",
                                  sum.wrote_between, sum.wrote_between == 1 ? "" : "s"));
  }
  return fmt::format("external node{} {} speak{} no turn protocol (no lethe_turns in init_ok): {}",
                     nodes == 1 ? "" : "s", names, nodes == 1 ? "s" : "", fmt::join(reasons, "; "));
}

class World {
 public:
  World(const ScenarioConfig& config, std::uint64_t seed, const WorldOptions& options,
        const sim::SimulationOptions& kernel)
      : config_(config),
        seed_(seed),
        options_(options) {
    simulation_ = std::make_unique<sim::Simulation>(kernel);
    network_ = std::make_unique<sim::Network>(*simulation_, simulation_->rng("network"));
    faults_ = std::make_unique<FaultInjector>(config_, *simulation_, observations_, ledger_folding_);
    if (options.keep_trace) {
      simulation_->trace().keep_records(true);
      simulation_->trace().keep_only(options.keep_trace_kinds);
    }
    if (options.trace_out != nullptr) simulation_->trace().write_jsonl(options.trace_out);
    if (options.on_trace_record) {
      simulation_->trace().keep_only(options.keep_trace_kinds);
      simulation_->trace().observe(options.on_trace_record);
    }
    ledger_folding_.set_observer(options.ledger_observer);
  }

  ~World() {
    // External nodes' processes end all at once, not one by one as their fibers unwind.
    if (workers_) workers_->external().end_processes();
    // Unwind every fiber first: their destructors still use the store, sink and sources.
    simulation_.reset();
  }

  RunResult run(WorldRecord* record);
  // The workload and the drain only, nothing judged: how many scheduling steps they took.
  std::uint64_t count_steps();

 private:
  // The parts, built and started in this order: fault switches, topology, hooks, workers, injectors, producer.
  void build();
  void wire_ledger();
  void wire_intervener();  // a counterfactual replay: the parts its intervention acts in
  // The workload until done or run.duration, then (run.drain) the drain: faults healed, in-flight work settles.
  void simulate();
  void simulate_until_done();
  bool workload_done() const;
  void heal();
  void keep(WorldRecord& record);  // what replay and reports read

  const ScenarioConfig& config_;
  std::uint64_t seed_;
  WorldOptions options_;
  std::unique_ptr<sim::Simulation> simulation_;
  std::unique_ptr<sim::Network> network_;

  Ledger ledger_;
  LedgerFolding ledger_folding_{ledger_};
  Observations observations_;
  std::unique_ptr<FaultInjector> faults_;
  std::unique_ptr<Topology> topology_;
  std::unique_ptr<Workers> workers_;
  std::unique_ptr<Producer> producer_;
  std::unique_ptr<Intervener> intervener_;  // a counterfactual replay only
};

// The store's and the sink's hooks feed the ledger: evictions, and the effects (the provider's executions; for
// inbox, the domain writes committed with the inbox row).
void World::wire_ledger() {
  StoreServer& store = topology_->store();
  const bool effect_in_store = strategy_info(config_.protocol.kind).effect_in_store_transaction;
  store.set_on_applied([this, effect_in_store](const Op& op, const Reply& reply, sim::Time at) {
    if (op.kind == OpKind::Evict && reply.applied) ledger_folding_.record_eviction(op.key, at);
    if (const auto overwrite = memo_overwrite(op, reply, at)) ledger_.memo_overwrites.push_back(*overwrite);
    if (!effect_in_store || op.kind != OpKind::Transaction || !reply.applied) return;
    // Inbox: the domain mutation committed with the inbox row is the effect (ground truth).
    AttemptId attempt = 0;
    for (const auto& part : op.parts) {
      if (key_table(part.key) == Table::Inbox) attempt = part.update.owner;
    }
    if (attempt == 0) return;  // not an inbox transaction (e.g. the producer's outbox write)
    for (std::size_t i = 0; i < op.parts.size(); ++i) {
      const auto& part = op.parts[i];
      if (key_table(part.key) != Table::Domain) continue;
      ExecutionRecord e;
      e.id = key_message(part.key);
      e.processor = key_processor(part.key);
      e.attempt = attempt;
      e.at = at;
      const auto& before = i < reply.previous_parts.size() ? reply.previous_parts[i] : std::optional<Item>{};
      e.value = static_cast<std::uint64_t>((before ? before->counter : 0) + part.update.counter_add);
      e.node = ledger_.has_attempt(attempt) ? ledger_.attempt(attempt).node : 0;
      ledger_folding_.record_execution(e);
    }
  });
  store.set_on_capacity_evicted([this](const EvictionRecord& e) { ledger_folding_.record_capacity_eviction(e); });
  if (!options_.check_linearizability) store.set_record_history(false);
  if (options_.on_store_operation) store.set_on_history(options_.on_store_operation);
  if (ledger_folding_.folding()) {
    topology_->sink().set_on_execute([this](const Execution& e) { ledger_folding_.record_execution(e); });
  }
}

void World::wire_intervener() {
  if (!options_.counterfactual) return;
  const StrategyInfo& strategy = strategy_info(config_.protocol.kind);
  StrategyShape shape;
  shape.in_flight_records = std::find(strategy.bases.begin(), strategy.bases.end(), Basis::InFlightRecent) !=
                            strategy.bases.end();
  shape.message_record_processor = strategy.message_record_processor;
  if (config_.protocol.settings.has("max_processing_time")) {
    shape.max_processing_time = config_.protocol.settings.get<sim::Duration>("max_processing_time");
  }
  intervener_ = std::make_unique<Intervener>(*options_.counterfactual, shape, ledger_, ledger_folding_);
  faults_->set_intervener(intervener_.get());
  topology_->sink().set_intervener(intervener_.get());
  topology_->source().set_intervener(intervener_.get());
  if (options_.counterfactual->closes(Intervention::NeverEvicted)) {
    topology_->store().set_never_evict_for_room(
        [this](Key key) { return intervener_->acts_on_record(Intervention::NeverEvicted, key); });
  }
  if (options_.counterfactual->closes(Intervention::NeverExpires)) {
    topology_->store().set_never_evict(
        [this](Key key) { return intervener_->acts_on_record(Intervention::NeverExpires, key); });
  }
}

bool World::workload_done() const {
  return producer_->done() && topology_->source().drained();
}

void World::heal() {
  faults_->stop();
  topology_->heal_network();
  faults_->restart_crashed();
}

void World::build() {
  faults_->draw_swarm();
  topology_ = std::make_unique<Topology>(config_, *simulation_, *network_, faults_->switches(), ledger_,
                                         observations_);
  wire_ledger();
  wire_intervener();
  workers_ = std::make_unique<Workers>(WorkerEnvironment{config_, *simulation_, *network_, *topology_, ledger_,
                                                         ledger_folding_, observations_, *faults_, intervener_.get()});
  workers_->external().lines = options_.external_lines;
  const std::vector<WorkerSlot>& workers = topology_->workers();
  for (std::size_t i = 0; i < workers.size(); ++i) workers[i].node->set_main([this, i] { workers_->main(i); });
  faults_->start(topology_->fault_targets());
  for (std::size_t i = 0; i < workers.size(); ++i) {
    workers[i].node->start();
    topology_->source().worker_started(i);
  }
  producer_ = std::make_unique<Producer>(config_, *simulation_, *network_, topology_->producer_parts(), ledger_,
                                         observations_, *faults_);
  if (topology_->source().makes_own_requests()) {
    topology_->source().start();
    producer_->hand_over_to_source();
  } else {
    producer_->start();
  }
}

void World::simulate() {
  try {
    simulate_until_done();
  } catch (const sim::InternalError&) {
    // A bad external node stopped the run: the scenario's consumer, not lethe, is at fault (exit code 2).
    if (!workers_->external().failure.empty()) throw ExternalNodeError(workers_->external().failure_text());
    throw;
  }
}

void World::simulate_until_done() {
  auto& sim = *simulation_;
  const sim::Time workload_end = config_.run.duration;
  sim::Time check = 0;
  while (check < workload_end) {
    check = std::min(workload_end, check + kCheckStep);
    sim.run_until(check);
    if (workload_done()) break;
  }
  if (!config_.run.drain) return;
  heal();
  const sim::Time drain_end = std::max(check, sim.now()) + std::max<sim::Duration>(config_.run.duration, sim::kHour);
  check = std::max(check, sim.now());
  while (!workload_done() && check < drain_end) {
    check = std::min(drain_end, check + kCheckStep);
    sim.run_until(check);
  }
}

void World::keep(WorldRecord& record) {
  auto& sim = *simulation_;
  record.trace = sim.trace().records();
  record.node_names.clear();
  for (std::size_t i = 0; i < sim.node_count(); ++i) record.node_names.push_back(sim.node(static_cast<sim::NodeId>(i)).name());
  record.ledger = ledger_;
  record.processors = config_.topology.processors;
  record.schedule_steps = sim.schedule_steps();
}

RunResult World::run(WorldRecord* record) {
  // An observer takes what folding lets go: the record's ledger need not be whole then.
  ledger_folding_.set_folding(options_.fold_settled_groups &&
                              (record == nullptr || options_.ledger_observer != nullptr));
  build();
  if (options_.on_phase) options_.on_phase(WorldPhase::Built);
  simulate();
  const Producer::Unsent unsent = producer_->unsent(simulation_->now());
  ledger_.undelivered = unsent.count;
  ledger_.undelivered_latest = unsent.latest;
  topology_->source().account_due_after(ledger_, simulation_->now());
  if (topology_->source().makes_own_requests()) {
    topology_->source().account_requests(ledger_, static_cast<ProcessorId>(config_.topology.processors.size()),
                                         simulation_->now());
  }
  if (options_.on_phase) options_.on_phase(WorldPhase::Ran);
  RunResult result = judge_run(JudgeInput{config_, seed_, options_, *simulation_, *network_, *topology_, ledger_,
                                          ledger_folding_, observations_, *faults_});
  if (config_.saga.steps > 0) judge_sagas(SagaOracleInput{ledger_, config_.saga.steps}, result);
  if (options_.check_linearizability) judge_weak_kv(workers_->external().weak_kv_history, result);
  // One entry for the run, however many nodes: the summary prints each entry.
  if (std::string why = plain_nodes_unreproducible(workers_->external().plain_nodes); !why.empty()) {
    result.not_reproducible.push_back(std::move(why));
  }
  if (options_.counterfactual && options_.counterfactual_fate != nullptr) {
    *options_.counterfactual_fate = pair_fate(ledger_, options_.counterfactual->id, options_.counterfactual->processor);
  }
  if (options_.on_phase) options_.on_phase(WorldPhase::Judged);
  if (record != nullptr) keep(*record);
  return result;
}

std::uint64_t World::count_steps() {
  ledger_folding_.set_folding(options_.fold_settled_groups);
  build();
  simulate();
  return simulation_->schedule_steps();
}

sim::SchedulePolicy policy_of(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::Fifo: return sim::SchedulePolicy::Fifo;
    case ScheduleKind::Random: return sim::SchedulePolicy::Random;
    case ScheduleKind::Pct: return sim::SchedulePolicy::Pct;
  }
  return sim::SchedulePolicy::Fifo;
}

// k for PCT: the steps of the same seed under FIFO, a run that writes and judges nothing.
std::uint64_t fifo_steps(const ScenarioConfig& config, std::uint64_t seed) {
  WorldOptions quiet;
  quiet.check_linearizability = false;
  std::uint64_t steps = 0;
  std::exception_ptr failure;
  {
    World world(config, seed, quiet, sim::SimulationOptions{.seed = seed});
    try {
      steps = world.count_steps();
    } catch (...) {
      failure = std::current_exception();
    }
  }  // as in run_world: the fibers unwind with no exception in flight
  if (failure) std::rethrow_exception(failure);
  return steps;
}

}  // namespace

RunResult run_world(const ScenarioConfig& config, std::uint64_t seed, const WorldOptions& options,
                    WorldRecord* record) {
  const Schedule& schedule = config.run.schedule;
  sim::SimulationOptions kernel{.seed = seed, .policy = policy_of(schedule.kind)};
  if (schedule.kind == ScheduleKind::Pct) {
    kernel.pct_depth = schedule.depth;
    if (schedule.depth > 1) kernel.pct_steps = std::max<std::uint64_t>(1, fifo_steps(config, seed));
  }
  std::exception_ptr failure;
  {
    World world(config, seed, options, kernel);
    try {
      RunResult result = world.run(record);
      if (schedule.kind != ScheduleKind::Fifo) result.schedule = {to_string(schedule)};
      return result;
    } catch (...) {
      failure = std::current_exception();
    }
  }  // The fibers unwind here with no exception in flight: the kernel crashes a fiber only when none is.
  std::rethrow_exception(failure);
}

}  // namespace lethe
