#include "world/world.hpp"

#include <algorithm>
#include <array>
#include <fmt/format.h>
#include <memory>

#include <ostream>

#include "check/oracle.hpp"
#include "protocol/strategies.hpp"
#include "world/faults.hpp"
#include "world/ledger_folding.hpp"
#include "world/producer.hpp"
#include "world/observations.hpp"
#include "world/sink.hpp"
#include "world/source.hpp"
#include "world/store_server.hpp"
#include "world/topology.hpp"
#include "sim/channel.hpp"
#include "sim/network.hpp"
#include "sim/node.hpp"

namespace lethe {

namespace {

constexpr sim::TraceKind kTraceAttempt{"attempt"};       // a = id, b = processor, c = attempt
constexpr sim::TraceKind kTraceDecision{"decision"};     // a = id, b = attempt, c = basis
constexpr sim::TraceKind kTraceOutcome{"outcome"};       // a = id, b = attempt, c = outcome
constexpr sim::TraceKind kTraceAck{"ack"};               // a = id, b = processor, c = acknowledged

constexpr sim::Duration kCheckStep = sim::kSecond;

class SimClock final : public Clock {
 public:
  explicit SimClock(sim::Node& node) : node_(node) {}
  sim::Time now() override { return node_.local_now(); }
  void sleep(sim::Duration duration) override { sim::sleep(duration); }

 private:
  sim::Node& node_;
};

class World {
 public:
  World(const ScenarioConfig& config, std::uint64_t seed, const WorldOptions& options)
      : config_(config),
        seed_(seed),
        options_(options) {
    simulation_ = std::make_unique<sim::Simulation>(sim::SimulationOptions{.seed = seed, .policy = options.policy});
    network_ = std::make_unique<sim::Network>(*simulation_, simulation_->rng("network"));
    faults_ = std::make_unique<FaultInjector>(config_, *simulation_, observations_, ledger_folding_);
    if (options.keep_trace) simulation_->trace().keep_records(true);
    if (options.trace_out != nullptr) simulation_->trace().write_jsonl(options.trace_out);
  }

  ~World() {
    // Unwind every fiber first: their destructors still use the store, sink and sources.
    simulation_.reset();
  }

  RunResult run(WorldRecord* record);

 private:
  // --- building ---
  void wire_ledger();
  void worker_main(std::size_t worker_index);

  // --- running ---
  bool workload_done() const;
  void heal();
  RunResult judge_run();

  // --- the protocol's view of the world ---
  class Hooks;
  class Consumer;
  AttemptId begin_attempt(MessageId id, ProcessorId processor, sim::Node& node);
  void end_attempt(AttemptId attempt, const ProtectResult& result);
  std::optional<ProtectResult> process(Strategy& strategy, SinkClient& sink, sim::Rng& work, MessageId id,
                                       ProcessorId processor, sim::Node& node);

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
  std::unique_ptr<Producer> producer_;
};

class World::Hooks final : public ProtocolHooks {
 public:
  Hooks(World& world, sim::Node& node) : world_(world), node_(node) {}

  void crash_point(CrashPoint point, MessageId id, AttemptId attempt) override {
    world_.faults_->crash_point(point, node_, id, attempt);
  }

  void decided(const DecisionNote& note) override {
    auto& simulation = *world_.simulation_;
    world_.ledger_.decided(note, simulation.now());
    simulation.trace().record(simulation.now(), kTraceDecision, node_.id(), note.id, note.attempt,
                              static_cast<std::uint64_t>(note.basis));
    world_.observations_.decided(note.basis);
  }

  void waited(MessageId id, ProcessorId processor, AttemptId attempt, sim::Duration waited) override {
    world_.ledger_.waits.push_back(WaitRecord{id, processor, attempt, waited});
  }

  void completed(MessageId, ProcessorId, AttemptId attempt, bool applied) override {
    auto& record = world_.ledger_.attempt(attempt);
    if (applied) {
      record.completion_applied = true;
      record.completed_at = world_.simulation_->now();
    }
  }

 private:
  World& world_;
  sim::Node& node_;
};

// The store's and the sink's hooks feed the ledger: evictions, and the effects (the provider's executions; for
// inbox, the domain writes committed with the inbox row).
void World::wire_ledger() {
  StoreServer& store = topology_->store();
  store.set_on_applied([this](const Op& op, const Reply& reply, sim::Time at) {
    if (op.kind == OpKind::Evict && reply.applied) ledger_folding_.record_eviction(op.key, at);
    if (config_.protocol.kind != ProtocolKind::Inbox || op.kind != OpKind::Transaction || !reply.applied) return;
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
  if (!options_.check_linearizability) store.set_record_history(false);
  if (ledger_folding_.folding()) {
    topology_->sink().set_on_execute([this](const Execution& e) { ledger_folding_.record_execution(e); });
  }
}

AttemptId World::begin_attempt(MessageId id, ProcessorId processor, sim::Node& node) {
  const AttemptId attempt = ledger_folding_.begin(id, processor, node.id());
  simulation_->trace().record(simulation_->now(), kTraceAttempt, node.id(), id, processor, attempt);
  return attempt;
}

void World::end_attempt(AttemptId attempt, const ProtectResult& result) {
  const AttemptRecord record = ledger_folding_.end(attempt, result, simulation_->now());
  simulation_->trace().record(simulation_->now(), kTraceOutcome, record.node, record.id, attempt,
                              static_cast<std::uint64_t>(result.outcome));
  observations_.active(simulation_->now());
}

std::optional<ProtectResult> World::process(Strategy& strategy, SinkClient& sink, sim::Rng& work, MessageId id,
                                            ProcessorId processor, sim::Node& node) {
  const AttemptId attempt = begin_attempt(id, processor, node);
  // The effect: the domain's processing time (workload.processing_time), then the provider call. protect()
  // runs it in this fiber, before returning: the closure refers to this frame, so it is one pointer (no
  // allocation for the std::function).
  struct EffectCall {
    World* world;
    SinkClient* sink;
    sim::Rng* work;
    MessageId id;
    ProcessorId processor;
    AttemptId attempt;
  } call{this, &sink, &work, id, processor, attempt};
  const Effect effect = [frame = &call]() {
    sim::sleep(frame->world->config_.workload.processing_time.sample(*frame->work));
    return frame->sink->call(frame->id, frame->processor, frame->attempt);
  };
  const ProtectResult result = strategy.protect(id, processor, attempt, effect);
  end_attempt(attempt, result);
  return result;
}

// A worker incarnation as its source sees it: the strategies it runs, and what it does around an ack.
class World::Consumer final : public SourceWorker {
 public:
  Consumer(World& world, std::size_t index, Hooks& hooks, std::vector<std::unique_ptr<Strategy>>& strategies,
           std::vector<ProcessorId> processors, SinkClient& sink, sim::Rng& work)
      : world_(world),
        index_(index),
        hooks_(hooks),
        strategies_(strategies),
        processors_(std::move(processors)),
        sink_(sink),
        work_(work) {}

  std::size_t index() const override { return index_; }
  sim::Node& node() override { return *world_.topology_->workers()[index_].node; }
  Handled handle(MessageId id) override {
    Handled handled{true, std::nullopt};
    for (std::size_t i = 0; i < strategies_.size(); ++i) {
      auto result = world_.process(*strategies_[i], sink_, work_, id, processors_[i], node());
      if (result->outcome == Outcome::Failed) handled.ok = false;
      if (i == 0) handled.value = result->value;
    }
    return handled;
  }
  void before_ack(MessageId id) override { hooks_.crash_point(CrashPoint::AfterCompleteBeforeAck, id, 0); }
  void acknowledged(MessageId id, bool accepted) override {
    world_.simulation_->trace().record(sim::now(), kTraceAck, node().id(), id, world_.topology_->workers()[index_].processor,
                                       accepted);
    world_.observations_.active(sim::now());
  }
  void answered(MessageId) override { world_.observations_.active(sim::now()); }

 private:
  World& world_;
  std::size_t index_;
  Hooks& hooks_;
  std::vector<std::unique_ptr<Strategy>>& strategies_;
  std::vector<ProcessorId> processors_;  // the processor of each strategy
  SinkClient& sink_;
  sim::Rng& work_;
};

void World::worker_main(std::size_t worker_index) {
  sim::Node& self = *topology_->workers()[worker_index].node;
  SimClock clock(self);
  const std::unique_ptr<StoreClient> store_client = topology_->store().connect(self);
  SinkClient sink_client(topology_->sink(), *network_, config_.sink,
                         simulation_->rng(fmt::format("sink-client:{}:{}", self.name(), self.incarnation())));
  Hooks hooks(*this, self);
  // Shared workers run every processor's strategy; the others their own processor's.
  std::vector<ProcessorId> processors;
  if (topology_->worker_layout() == WorkerLayout::Shared) {
    for (std::size_t p = 0; p < config_.topology.processors.size(); ++p) processors.push_back(static_cast<ProcessorId>(p));
  } else {
    processors.push_back(topology_->workers()[worker_index].processor);
  }
  std::vector<std::unique_ptr<Strategy>> strategies;
  for (std::size_t i = 0; i < processors.size(); ++i) {
    strategies.push_back(make_strategy(config_.protocol, *store_client, clock, hooks,
                                       simulation_->rng(fmt::format("protocol:{}:{}:{}", self.name(),
                                                                    self.incarnation(), i))));
  }
  sim::Rng work = simulation_->rng(fmt::format("work:{}:{}", self.name(), self.incarnation()));
  Consumer consumer(*this, worker_index, hooks, strategies, std::move(processors), sink_client, work);
  topology_->source().consume(consumer);
}

bool World::workload_done() const {
  return producer_->done() && topology_->source().drained();
}

void World::heal() {
  faults_->stop();
  topology_->heal_network();
  faults_->restart_crashed();
}

RunResult World::run(WorldRecord* record) {
  ledger_folding_.set_folding(options_.fold_settled_groups && record == nullptr);
  faults_->draw_swarm();
  topology_ = std::make_unique<Topology>(config_, *simulation_, *network_, faults_->switches(), ledger_,
                                         observations_);
  wire_ledger();
  const std::vector<WorkerSlot>& workers = topology_->workers();
  for (std::size_t i = 0; i < workers.size(); ++i) workers[i].node->set_main([this, i] { worker_main(i); });
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
  if (options_.on_phase) options_.on_phase(WorldPhase::Built);
  auto& sim = *simulation_;
  const sim::Time workload_end = config_.run.duration;
  sim::Time check = 0;
  while (check < workload_end) {
    check = std::min(workload_end, check + kCheckStep);
    sim.run_until(check);
    if (workload_done()) break;
  }
  if (config_.run.drain) {
    heal();
    const sim::Time drain_end = std::max(check, sim.now()) + std::max<sim::Duration>(config_.run.duration, sim::kHour);
    check = std::max(check, sim.now());
    while (!workload_done() && check < drain_end) {
      check = std::min(drain_end, check + kCheckStep);
      sim.run_until(check);
    }
  }
  if (options_.on_phase) options_.on_phase(WorldPhase::Ran);
  RunResult result = judge_run();
  if (options_.on_phase) options_.on_phase(WorldPhase::Judged);
  if (record != nullptr) {
    record->trace = sim.trace().records();
    record->node_names.clear();
    for (std::size_t i = 0; i < sim.node_count(); ++i) record->node_names.push_back(sim.node(static_cast<sim::NodeId>(i)).name());
    record->ledger = ledger_;
    record->processors = config_.topology.processors;
  }
  return result;
}

RunResult World::judge_run() {
  auto& sim = *simulation_;
  observations_.merge_counted();
  ledger_folding_.flush();
  if (config_.protocol.kind != ProtocolKind::Inbox && !ledger_folding_.folding()) {
    ledger_.executions = topology_->sink().take_executions();  // only inbox runs record executions in the store hook
  }
  for (const auto& e : ledger_.executions) {
    if (ledger_.has_attempt(e.attempt)) ledger_.attempt(e.attempt).executed = true;
  }
  RunResult result;
  result.scenario = config_.scenario.name;
  result.seed = seed_;
  OracleInput input{ledger_, config_.protocol.kind, topology_->sink().calls(),
                    [&sim](std::uint32_t node) { return sim.node(node).name(); },
                    [this](ProcessorId p) {
                      return p < config_.topology.processors.size() ? config_.topology.processors[p]
                                                                    : fmt::format("processor{}", p);
                    }};
  judge(input, result);
  if (options_.check_linearizability) {
    const auto verdict = topology_->store().check_history(options_.linearizability_budget);
    if (verdict.verdict == lin::Verdict::Linearizable) result.linearizable = true;
    if (verdict.verdict == lin::Verdict::NotLinearizable) result.linearizable = false;
  }
  // Coverage of every fault point, including the ones that never fired (a silent green is visible).
  for (const char* point : {"after_start_before_effect", "after_effect_before_complete", "after_complete_before_ack"}) {
    observations_.counters().try_emplace(fmt::format("crash_point.{}.reached", point), 0);
    observations_.counters().try_emplace(fmt::format("crash_point.{}.fired", point), 0);
  }
  for (const char* key : {"crash", "restart", "pause", "partition.scheduled", "redelivery.copy", "producer.retry"}) {
    observations_.counters().try_emplace(key, 0);
  }
  const auto& net = network_->stats();
  observations_.counters()["network.lost"] = net.lost;
  observations_.counters()["network.ack_lost"] = net.ack_lost;
  observations_.counters()["network.duplicated"] = net.duplicated;
  observations_.counters()["network.partitioned"] = net.partitioned;
  observations_.counters()["network.rpc_timeouts"] = net.rpc_timeouts;
  observations_.counters()["store.evictions"] = topology_->store().evictions();
  observations_.counters()["sink.rejected"] = topology_->sink().rejected();
  result.coverage = observations_.counters();
  result.swarm = faults_->swarm_on();
  result.sim_time = observations_.last_activity();
  result.trace_hash = sim.trace().hash();
  result.trace_events = sim.trace().count();
  return result;
}

}  // namespace

RunResult run_world(const ScenarioConfig& config, std::uint64_t seed, const WorldOptions& options,
                    WorldRecord* record) {
  World world(config, seed, options);
  return world.run(record);
}

}  // namespace lethe
