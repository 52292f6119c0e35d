#include "world/world.hpp"

#include <algorithm>
#include <array>
#include <exception>
#include <fmt/format.h>
#include <memory>

#include <absl/container/btree_set.h>
#include <absl/container/inlined_vector.h>
#include <ostream>

#include "check/oracle.hpp"
#include "protocol/registry.hpp"
#include "protocol/strategies.hpp"
#include "world/sink.hpp"
#include "world/sources.hpp"
#include "world/store_server.hpp"
#include "sim/channel.hpp"
#include "sim/network.hpp"
#include "sim/node.hpp"

namespace lethe {

namespace {

constexpr sim::TraceKind kTraceAttempt{"attempt"};       // a = id, b = processor, c = attempt
constexpr sim::TraceKind kTraceDecision{"decision"};     // a = id, b = attempt, c = basis
constexpr sim::TraceKind kTraceOutcome{"outcome"};       // a = id, b = attempt, c = outcome
constexpr sim::TraceKind kTraceAck{"ack"};               // a = id, b = processor, c = acknowledged
constexpr sim::TraceKind kTracePublish{"publish"};       // a = id, b = copy number
constexpr sim::TraceKind kTraceCommit{"producer.commit"};  // a = id
constexpr sim::TraceKind kTraceCrashPoint{"crash_point"};  // a = id, b = point, c = attempt
constexpr sim::TraceKind kTraceSkew{"skew"};             // a = node, b = skew (two's complement)

constexpr ProcessorId kProducerProcessor = 0xffff;
constexpr sim::Duration kCheckStep = sim::kSecond;
constexpr sim::Duration kKafkaSessionTimeout = 10 * sim::kSecond;

class SimClock final : public Clock {
 public:
  explicit SimClock(sim::Node& node) : node_(node) {}
  sim::Time now() override { return node_.local_now(); }
  void sleep(sim::Duration duration) override { sim::sleep(duration); }

 private:
  sim::Node& node_;
};

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

class World {
 public:
  World(const ScenarioConfig& config, std::uint64_t seed, const WorldOptions& options)
      : config_(config), seed_(seed), options_(options) {
    simulation_ = std::make_unique<sim::Simulation>(sim::SimulationOptions{.seed = seed, .policy = options.policy});
    network_ = std::make_unique<sim::Network>(*simulation_, simulation_->rng("network"));
    fault_rng_ = simulation_->rng("faults");
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
  void draw_swarm();
  void build_network();
  // [[network.link]]: `base` (the default link's faults) with each listed pair's own latency.
  void set_link_latencies(const sim::LinkConfig& base);
  void build_nodes();
  void build_faults();
  void start_producer();
  void worker_main(std::size_t worker_index);
  void producer_main();
  void relay_main();

  // --- running ---
  bool workload_done() const;
  void heal();
  RunResult judge_run();

  // --- the protocol's view of the world ---
  class Hooks;
  AttemptId begin_attempt(MessageId id, ProcessorId processor, sim::Node& node);
  void end_attempt(AttemptId attempt, const ProtectResult& result);
  std::optional<ProtectResult> process(Strategy& strategy, SinkClient& sink, sim::Rng& work, MessageId id,
                                       ProcessorId processor, sim::Node& node);
  void crash_node(sim::Node& node);
  // --- folding settled groups (check/ledger.hpp) ---
  void record_execution(const ExecutionRecord& execution);
  void record_eviction(Key key, sim::Time at);
  void attempt_over(const AttemptRecord& record);  // it ended, or its node crashed
  struct OpenGroup;
  void close_group(std::uint64_t key, OpenGroup& group);
  void flush_open_groups();
  // Kafka: a (re)started worker joins its processor's consumer group.
  void join_group(sim::Node& node);
  void schedule_restart(sim::Node& node);
  bool maybe_crash(double probability, const std::string& coverage_key);
  void publish(MessageId id, std::uint32_t copy);
  bool publish_with_retries(MessageId id);
  sim::Duration sample(const sim::Distribution& d) { return d.sample(fault_rng_); }
  void cover(const std::string& key, std::uint64_t n = 1) { coverage_[key] += n; }
  // The per-attempt coverage counters (crash points, decisions), kept as numbers during the run (formatting a
  // key per attempt cost more than the attempt's store calls) and added to coverage_ by judge_run.
  void merge_counted_coverage();

  const ScenarioConfig& config_;
  std::uint64_t seed_;
  WorldOptions options_;
  std::unique_ptr<sim::Simulation> simulation_;
  std::unique_ptr<sim::Network> network_;
  sim::Rng fault_rng_{0};
  FaultSwitches switches_;
  std::vector<std::string> swarm_on_;

  sim::Node* store_node_ = nullptr;
  sim::Node* sink_node_ = nullptr;
  sim::Node* broker_node_ = nullptr;
  sim::Node* producer_node_ = nullptr;
  sim::Node* chaos_node_ = nullptr;
  std::vector<sim::Node*> workers_;            // worker nodes, in index order
  std::vector<ProcessorId> worker_processor_;  // the processor each worker serves (kafka / queue)
  std::vector<std::size_t> worker_member_;     // member index within its processor's group
  std::unique_ptr<Store> store_;
  std::unique_ptr<Sink> sink_;
  std::vector<std::unique_ptr<Queue>> queues_;
  std::unique_ptr<Kafka> kafka_;
  std::unique_ptr<ClientsSource> clients_;
  std::unique_ptr<sim::Service> broker_service_;

  Ledger ledger_;
  std::vector<std::vector<AttemptId>> active_attempts_;  // per node id
  // Groups with an attempt begun since they were last closed: folded or kept when their last attempt is over.
  struct OpenGroup {
    std::uint32_t running = 0;                // attempts begun and not over
    // Inline room for the common group (one attempt and its execution, or a skip): no allocation per message.
    absl::InlinedVector<AttemptId, 2> attempts;          // begun since the group opened
    absl::InlinedVector<ExecutionRecord, 1> executions;  // the provider's executions while open
  };
  bool folding_ = false;
  absl::btree_map<std::uint64_t, OpenGroup> open_groups_;  // by group_key
  absl::btree_set<std::uint64_t> kept_groups_;             // groups whose records are kept whole from now on
  std::map<std::string, std::uint64_t> coverage_;
  std::array<std::uint64_t, kCrashPointCount> crash_points_reached_{};
  std::array<std::uint64_t, kCrashPointCount> crash_points_fired_{};
  std::array<std::uint64_t, static_cast<std::size_t>(Basis::InboxDuplicate) + 1> decisions_by_basis_{};
  std::int64_t next_to_publish_ = 0;  // durable producer position
  std::int64_t committed_ = 0;        // ids committed by the producer (dual-write / outbox)
  std::int64_t relay_cursor_ = 0;     // durable outbox relay position
  bool producer_done_ = false;
  std::int64_t pending_copies_ = 0;   // redelivery copies scheduled but not yet published
  bool faults_on_ = true;
  bool draining_ = false;
  sim::Time last_activity_ = 0;
  std::vector<std::uint8_t> expected_marked_;
};

class World::Hooks final : public ProtocolHooks {
 public:
  Hooks(World& world, sim::Node& node) : world_(world), node_(node) {}

  void crash_point(CrashPoint point, MessageId id, AttemptId attempt) override {
    ++world_.crash_points_reached_[static_cast<std::size_t>(point)];
    double probability = 0.0;
    const auto& points = world_.config_.faults.crash_points;
    switch (point) {
      case CrashPoint::AfterStartBeforeEffect: probability = points.after_start_before_effect; break;
      case CrashPoint::AfterEffectBeforeComplete: probability = points.after_effect_before_complete; break;
      case CrashPoint::AfterCompleteBeforeAck: probability = points.after_complete_before_ack; break;
    }
    if (!world_.switches_.crash_points || !world_.faults_on_) probability = 0.0;
    if (probability <= 0.0 || !world_.fault_rng_.bernoulli(probability)) return;
    ++world_.crash_points_fired_[static_cast<std::size_t>(point)];
    auto& simulation = *world_.simulation_;
    simulation.trace().record(simulation.now(), kTraceCrashPoint, node_.id(), id, static_cast<std::uint64_t>(point),
                              attempt);
    world_.crash_node(node_);
    world_.schedule_restart(node_);
    simulation.checkpoint();  // throws sim::Crash: this fiber dies here
  }

  void decided(const DecisionNote& note) override {
    auto& simulation = *world_.simulation_;
    world_.ledger_.decided(note, simulation.now());
    simulation.trace().record(simulation.now(), kTraceDecision, node_.id(), note.id, note.attempt,
                              static_cast<std::uint64_t>(note.basis));
    ++world_.decisions_by_basis_[static_cast<std::size_t>(note.basis)];
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

void World::draw_swarm() {
  if (!config_.faults.swarm) return;
  // Each fault kind is on or off for this seed, with probability 1/2 (TigerBeetle/FoundationDB swarm testing).
  sim::Rng swarm = simulation_->rng("swarm");
  auto flip = [&](bool& on, const char* name) {
    on = swarm.bernoulli(0.5);
    if (on) swarm_on_.emplace_back(name);
  };
  flip(switches_.crashes, "crashes");
  flip(switches_.crash_points, "crash_points");
  flip(switches_.pauses, "pauses");
  flip(switches_.clock_skew, "clock_skew");
  flip(switches_.rebalances, "rebalances");
  flip(switches_.partitions, "partitions");
  flip(switches_.loss, "loss");
  flip(switches_.ack_loss, "ack_loss");
  flip(switches_.duplication, "duplication");
  flip(switches_.producer_crashes, "producer_crashes");
}

void World::build_network() {
  sim::LinkConfig link;
  link.latency = config_.network.latency;
  link.loss = switches_.loss ? config_.network.loss : 0.0;
  link.ack_loss = switches_.ack_loss ? config_.network.ack_loss : 0.0;
  link.duplicate = switches_.duplication ? config_.network.duplicate : 0.0;
  network_->set_default_link(link);
  set_link_latencies(link);
  // The fault injector is not part of the system: its links are perfect and instant.
  sim::LinkConfig perfect;
  perfect.latency = sim::Distribution::constant(0);
  network_->set_link(simulation_->group_id("chaos"), simulation_->group_id("chaos"), perfect);
  if (switches_.partitions) {
    for (const auto& p : config_.network.partitions) {
      network_->add_partition(simulation_->group_id(to_string(p.first)), simulation_->group_id(to_string(p.second)),
                              p.at, p.at + p.for_duration);
      cover("partition.scheduled");
    }
  }
}

void World::set_link_latencies(const sim::LinkConfig& base) {
  for (const NetworkLink& entry : config_.network.links) {
    sim::LinkConfig link = base;
    link.latency = entry.latency;
    network_->set_link(simulation_->group_id(to_string(entry.first)), simulation_->group_id(to_string(entry.second)),
                       link);
  }
}

void World::build_nodes() {
  auto& sim = *simulation_;
  store_node_ = &sim.add_node("store", "store");
  sink_node_ = &sim.add_node("sink", "sink");
  broker_node_ = &sim.add_node("broker", "broker");
  producer_node_ = &sim.add_node("producer", "clients");
  chaos_node_ = &sim.add_node("chaos", "chaos");

  StoreSettings settings = store_settings(config_);
  store_ = std::make_unique<Store>(sim, *network_, *store_node_, settings);
  const bool effect_in_store = strategy_info(config_.protocol.kind).effect_in_store_transaction;
  store_->set_on_applied([this, effect_in_store](const Op& op, const Reply& reply, sim::Time at) {
    if (op.kind == OpKind::Evict && reply.applied) record_eviction(op.key, at);
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
      record_execution(e);
    }
  });
  if (!options_.check_linearizability) store_->set_record_history(false);
  sink_ = std::make_unique<Sink>(sim, *network_, *sink_node_, config_.sink, sim.rng("sink"));
  if (folding_) sink_->set_on_execute([this](const Execution& e) { record_execution(e); });
  broker_service_ = std::make_unique<sim::Service>(sim::Service{broker_node_, {}, false, 0});

  const auto processors = config_.topology.processors.size();
  const auto consumers = static_cast<std::size_t>(config_.topology.consumers);
  // Workers: for kafka and queue, `consumers` nodes per processor (a consumer group, or a queue, per
  // processor); for clients, `consumers` API nodes that run every processor for each request.
  const bool api = config_.topology.source == SourceKind::Clients;
  const std::size_t groups = api ? 1 : processors;
  for (std::size_t p = 0; p < groups; ++p) {
    for (std::size_t c = 0; c < consumers; ++c) {
      const std::string name = api ? fmt::format("api-{}", c) : fmt::format("{}-{}", config_.topology.processors[p], c);
      auto& node = sim.add_node(name, "consumers");
      const std::size_t index = workers_.size();
      workers_.push_back(&node);
      worker_processor_.push_back(static_cast<ProcessorId>(p));
      worker_member_.push_back(c);
      node.set_main([this, index] { worker_main(index); });
    }
  }
  switch (config_.topology.source) {
    case SourceKind::Queue:
      // One queue per processor, each getting every message (fan-out, as SNS to several SQS queues).
      for (std::size_t p = 0; p < processors; ++p) {
        queues_.push_back(std::make_unique<Queue>(sim, *network_, *broker_node_,
                                                  QueueSettings::from(config_, static_cast<std::uint32_t>(p)),
                                                  ledger_));
      }
      break;
    case SourceKind::Kafka:
      kafka_ = std::make_unique<Kafka>(sim, *network_, *broker_node_, KafkaSettings::from(config_), ledger_,
                                       sim.rng("kafka"));
      break;
    case SourceKind::Clients: {
      ClientsSettings clients;
      clients.clients = config_.topology.clients;
      clients.rate_per_second = config_.workload.rate.per_second / static_cast<double>(config_.topology.clients);
      clients.timeout = config_.topology.client_timeout;
      clients.retries = config_.topology.client_retries;
      clients.backoff = config_.topology.client_backoff;
      clients.jitter = config_.topology.client_jitter;
      std::vector<MessageId> ids;
      for (std::int64_t i = 0; i < config_.workload.messages; ++i) ids.push_back(static_cast<MessageId>(i));
      clients_ = std::make_unique<ClientsSource>(sim, *network_, workers_, clients, std::move(ids), ledger_,
                                                 sim.rng("clients"));
      break;
    }
  }
  active_attempts_.resize(sim.node_count());
}

void World::build_faults() {
  auto& sim = *simulation_;
  const auto& faults = config_.faults;
  if (switches_.clock_skew && faults.clock_skew.has_value()) {
    sim::Rng skew_rng = sim.rng("clock_skew");
    for (auto* node : workers_) {
      const sim::Duration skew = faults.clock_skew->sample(skew_rng);
      node->set_clock_skew(skew);
      sim.trace().record(0, kTraceSkew, node->id(), node->id(), static_cast<std::uint64_t>(skew));
      if (skew != 0) cover("clock_skew.nonzero_nodes");
    }
  }
  if (switches_.crashes && faults.crash_every.has_value()) {
    for (auto* node : workers_) {
      chaos_node_->spawn([this, node] {
        sim::Rng rng = simulation_->rng("crash:" + node->name());
        while (true) {
          sim::sleep(std::max<sim::Duration>(1, config_.faults.crash_every->sample(rng)));
          if (!faults_on_) return;
          if (!node->alive()) continue;
          cover("crash.random");
          crash_node(*node);
          sim::sleep(config_.faults.restart_after.sample(rng));
          if (!node->alive()) {
            node->restart();
            join_group(*node);
            cover("restart");
          }
        }
      });
    }
  }
  if (switches_.pauses && faults.pause_every.has_value()) {
    for (auto* node : workers_) {
      chaos_node_->spawn([this, node] {
        sim::Rng rng = simulation_->rng("pause:" + node->name());
        while (true) {
          sim::sleep(std::max<sim::Duration>(1, config_.faults.pause_every->sample(rng)));
          if (!faults_on_) return;
          if (!node->alive()) continue;
          node->pause_for(config_.faults.pause_for.sample(rng));
          cover("pause");
        }
      });
    }
  }
  if (switches_.rebalances && faults.rebalance_every.has_value() && kafka_) {
    chaos_node_->spawn([this] {
      sim::Rng rng = simulation_->rng("rebalance");
      while (true) {
        sim::sleep(std::max<sim::Duration>(1, config_.faults.rebalance_every->sample(rng)));
        if (!faults_on_) return;
        for (std::size_t p = 0; p < config_.topology.processors.size(); ++p) {
          kafka_->group(static_cast<ProcessorId>(p)).rebalance();
        }
        cover("rebalance.scheduled");
      }
    });
  }
}

AttemptId World::begin_attempt(MessageId id, ProcessorId processor, sim::Node& node) {
  AttemptRecord record;
  record.id = id;
  record.processor = processor;
  record.node = node.id();
  const AttemptId attempt = ledger_.attempts.add(record);
  active_attempts_[node.id()].push_back(attempt);
  if (folding_) {
    const std::uint64_t key = group_key(id, processor);
    if (!kept_groups_.contains(key)) {
      OpenGroup& group = open_groups_[key];
      ++group.running;
      group.attempts.push_back(attempt);
    }
  }
  simulation_->trace().record(simulation_->now(), kTraceAttempt, node.id(), id, processor, attempt);
  return attempt;
}

void World::end_attempt(AttemptId attempt, const ProtectResult& result) {
  auto& record = ledger_.attempt(attempt);
  record.ended_at = simulation_->now();
  record.outcome = static_cast<std::int8_t>(result.outcome);
  if (result.outcome != Outcome::Failed && result.value) record.set_returned_value(*result.value);
  auto& active = active_attempts_[record.node];
  active.erase(std::remove(active.begin(), active.end(), attempt), active.end());
  simulation_->trace().record(simulation_->now(), kTraceOutcome, record.node, record.id, attempt,
                              static_cast<std::uint64_t>(result.outcome));
  last_activity_ = simulation_->now();
  if (folding_) attempt_over(record);
}

void World::record_execution(const ExecutionRecord& execution) {
  if (folding_) {
    const auto open = open_groups_.find(group_key(execution.id, execution.processor));
    if (open != open_groups_.end()) {
      open->second.executions.push_back(execution);
      return;
    }
  }
  ledger_.executions.push_back(execution);  // a kept group, or one that is not open (a late duplicate request)
}

void World::record_eviction(Key key, sim::Time at) {
  const Table table = key_table(key);
  if (folding_ && (table == Table::Dedupe || table == Table::Inbox)) {
    const auto settled = ledger_.settled.find(group_key(key_message(key), key_processor(key)));
    if (settled != ledger_.settled.end()) {
      MaybeTime& evicted = settled->second.evicted_at;
      if (!evicted || at < *evicted) evicted = at;
      return;
    }
  }
  ledger_.evictions.push_back(EvictionRecord{key, at});
}

void World::attempt_over(const AttemptRecord& record) {
  const std::uint64_t key = group_key(record.id, record.processor);
  const auto open = open_groups_.find(key);
  if (open == open_groups_.end()) return;  // a kept group
  if (--open->second.running > 0) return;
  close_group(key, open->second);
  open_groups_.erase(open);
}

// Folds the group if it settled cleanly (SettledGroup says what that means), or keeps its records whole for good.
void World::close_group(std::uint64_t key, OpenGroup& group) {
  const auto prior = ledger_.settled.lower_bound(key);  // where a new summary goes, if it is not there
  const bool was_settled = prior != ledger_.settled.end() && prior->first == key;
  const ExecutionRecord* effect = nullptr;
  bool fold = false;
  std::uint64_t value = 0;
  if (was_settled) {
    fold = group.executions.empty();
    value = prior->second.value;
  } else if (group.executions.size() == 1 && group.executions.front().call_number == 1) {
    effect = &group.executions.front();
    fold = true;
    value = effect->value;
  }
  bool runner_seen = effect == nullptr;
  for (std::size_t i = 0; fold && i < group.attempts.size(); ++i) {
    const AttemptRecord& r = ledger_.attempt(group.attempts[i]);
    if (r.crashed_at || !r.ended_at || !r.has_returned_value || r.returned != value) fold = false;
    else if (effect != nullptr && r.attempt == effect->attempt) {
      runner_seen = true;
      fold = r.outcome == static_cast<std::int8_t>(Outcome::Executed) && r.completion_applied && r.completed_at &&
             r.decided_to_process && r.decided_basis != Basis::StaleTakeover &&
             r.decided_basis != Basis::MaxWaitProcess && r.node == effect->node;
    } else {
      fold = r.outcome == static_cast<std::int8_t>(Outcome::Skipped) && !r.completion_applied &&
             !r.decided_to_process;
    }
  }
  if (fold && runner_seen) {
    if (effect != nullptr) {
      const AttemptRecord& runner = ledger_.attempt(effect->attempt);
      ledger_.settled.emplace_hint(prior, key, SettledGroup{effect->attempt, effect->at, *runner.completed_at, value,
                                                            {}, effect->node});
    }
    for (const AttemptId a : group.attempts) ledger_.fold_attempt(a);
    return;
  }
  for (const ExecutionRecord& e : group.executions) ledger_.executions.push_back(e);
  kept_groups_.insert(key);
}

void World::flush_open_groups() {
  // Groups with an attempt still running when the run ended: kept whole.
  for (auto& [key, group] : open_groups_) {
    for (const ExecutionRecord& e : group.executions) ledger_.executions.push_back(e);
  }
  open_groups_.clear();
}

void World::crash_node(sim::Node& node) {
  if (!node.alive()) return;
  for (AttemptId a : active_attempts_[node.id()]) {
    AttemptRecord& record = ledger_.attempt(a);
    record.crashed_at = simulation_->now();
    if (folding_) attempt_over(record);
  }
  active_attempts_[node.id()].clear();
  node.crash();
  cover("crash");
  if (kafka_) {
    const auto it = std::find(workers_.begin(), workers_.end(), &node);
    if (it != workers_.end()) {
      const auto index = static_cast<std::size_t>(it - workers_.begin());
      // The group notices the dead member after the session timeout, unless it came back meanwhile (its
      // restart rejoined the group: removing it then would leave a live consumer with no partitions).
      const ProcessorId p = worker_processor_[index];
      const std::size_t member = worker_member_[index];
      const std::uint32_t incarnation = node.incarnation();
      sim::Node* n = &node;
      simulation_->after(kKafkaSessionTimeout, [this, p, member, n, incarnation] {
        if (!n->alive() && n->incarnation() == incarnation) {
          kafka_->group(p).leave(static_cast<int>(member));
          cover("rebalance.session_timeout");
        }
      });
    }
  }
}

void World::join_group(sim::Node& node) {
  if (!kafka_) return;
  const auto it = std::find(workers_.begin(), workers_.end(), &node);
  if (it == workers_.end()) return;
  const auto index = static_cast<std::size_t>(it - workers_.begin());
  kafka_->group(worker_processor_[index]).join(static_cast<int>(worker_member_[index]));
}

void World::schedule_restart(sim::Node& node) {
  sim::Node* n = &node;
  const std::uint32_t incarnation = node.incarnation();
  simulation_->after(sample(config_.faults.restart_after), [this, n, incarnation] {
    if (n->alive() || n->incarnation() != incarnation) return;
    n->restart();
    cover("restart");
    join_group(*n);
  });
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

void World::worker_main(std::size_t worker_index) {
  sim::Node& self = *workers_[worker_index];
  SimClock clock(self);
  SimStoreClient store_client(*store_, self);
  SinkClient sink_client(*sink_, *network_, config_.sink,
                         simulation_->rng(fmt::format("sink-client:{}:{}", self.name(), self.incarnation())));
  Hooks hooks(*this, self);
  const ProcessorId processor = worker_processor_[worker_index];
  const std::size_t member = worker_member_[worker_index];
  std::vector<std::unique_ptr<Strategy>> strategies;
  const std::size_t strategy_count = clients_ ? config_.topology.processors.size() : 1;
  for (std::size_t i = 0; i < strategy_count; ++i) {
    strategies.push_back(make_strategy(config_.protocol, store_client, clock, hooks,
                                       simulation_->rng(fmt::format("protocol:{}:{}:{}", self.name(),
                                                                    self.incarnation(), i))));
  }
  sim::Rng work = simulation_->rng(fmt::format("work:{}:{}", self.name(), self.incarnation()));
  const sim::Duration poll_wait = 100 * sim::kMillisecond;
  constexpr sim::Duration kQueueLongPoll = 20 * sim::kSecond;
  const sim::Duration retry_wait = config_.protocol.poll.kind == PollKind::Distribution
                                       ? std::max<sim::Duration>(config_.protocol.poll.interval.quantile(0.5), sim::kMillisecond)
                                       : std::max<sim::Duration>(config_.protocol.poll.backoff_base, sim::kMillisecond);
  if (!queues_.empty()) {
    Queue& queue = *queues_[processor];
    while (true) {
      // A long poll, as SQS's WaitTimeSeconds = 20: the broker hands a newly visible message to one waiting
      // receiver at once, so idle consumers only re-poll every 20 s (a 100 ms re-poll made 100,000 idle
      // consumers cost two million RPCs per simulated second).
      auto delivery = queue.receive(sim::now() + kQueueLongPoll);
      if (!delivery) continue;
      auto result = process(*strategies[0], sink_client, work, delivery->id, processor, self);
      if (result->outcome == Outcome::Failed) continue;  // not deleted: redelivered after the visibility timeout
      hooks.crash_point(CrashPoint::AfterCompleteBeforeAck, delivery->id, 0);
      const bool acknowledged = queue.acknowledge(*delivery);
      simulation_->trace().record(sim::now(), kTraceAck, self.id(), delivery->id, processor, acknowledged);
      last_activity_ = sim::now();
    }
  } else if (kafka_) {
    while (true) {
      auto record = kafka_->group(processor).poll(static_cast<int>(member), sim::now() + poll_wait);
      if (!record) continue;
      std::optional<ProtectResult> result;
      while (true) {
        result = process(*strategies[0], sink_client, work, record->id, processor, self);
        if (result->outcome != Outcome::Failed) break;
        sim::sleep(retry_wait);  // Kafka consumers retry the record in place: the partition waits
      }
      hooks.crash_point(CrashPoint::AfterCompleteBeforeAck, record->id, 0);
      const bool committed = kafka_->group(processor).commit(static_cast<int>(member), *record);
      simulation_->trace().record(sim::now(), kTraceAck, self.id(), record->id, processor, committed);
      last_activity_ = sim::now();
    }
  } else {
    while (true) {
      auto request = clients_->next_request(static_cast<int>(worker_index), sim::now() + poll_wait);
      if (!request) continue;
      const auto req = *request;
      self.spawn([this, req, &strategies, &sink_client, &self, &hooks, &work] {
        std::optional<std::uint64_t> answer;
        bool failed = false;
        for (std::size_t p = 0; p < strategies.size(); ++p) {
          auto result = process(*strategies[p], sink_client, work, req.id, static_cast<ProcessorId>(p), self);
          if (result->outcome == Outcome::Failed) failed = true;
          if (p == 0) answer = result->value;
        }
        if (failed) return;  // no response: the client times out and retries
        hooks.crash_point(CrashPoint::AfterCompleteBeforeAck, req.id, 0);
        clients_->respond(req, answer.value_or(0));
        last_activity_ = sim::now();
      });
    }
  }
}

void World::publish(MessageId id, std::uint32_t copy) {
  simulation_->trace().record(simulation_->now(), kTracePublish, broker_node_->id(), id, copy);
  for (auto& queue : queues_) queue->publish(id);
  if (kafka_) kafka_->publish(id);
  if (copy > 0) cover("redelivery.copy");
}

bool World::publish_with_retries(MessageId id) {
  // The producer's publish crosses the network: a lost request is retried harmlessly, a lost ACK is retried
  // and appends a duplicate (producer retries).
  for (int attempt = 0; attempt < 20; ++attempt) {
    if (attempt > 0) {
      cover("producer.retry");
      sim::sleep(100 * sim::kMillisecond);
    }
    auto ack = network_->call(*broker_service_, [this, id] {
      publish(id, 0);
      return true;
    }, config_.network.rpc_timeout, id);
    if (ack.has_value()) return true;
  }
  cover("producer.gave_up");
  return false;
}

bool World::maybe_crash(double probability, const std::string& coverage_key) {
  if (!switches_.producer_crashes || !faults_on_ || probability <= 0.0) return false;
  if (!fault_rng_.bernoulli(probability)) return false;
  cover(coverage_key);
  return true;
}

void World::producer_main() {
  sim::Node& self = *producer_node_;
  SimStoreClient store_client(*store_, self);
  const auto& workload = config_.workload;
  const auto messages = workload.messages;
  const double rate = workload.rate.per_second;
  const sim::Duration spacing = rate > 0.0 ? static_cast<sim::Duration>(1e9 / rate) : 0;
  sim::Rng copies_rng = simulation_->rng("redelivery");
  const std::size_t processors = config_.topology.processors.size();
  while (next_to_publish_ < messages) {
    const MessageId id = static_cast<MessageId>(next_to_publish_);
    if (spacing > 0) sim::sleep_until(static_cast<sim::Time>(next_to_publish_) * spacing);
    switch (config_.producer.mode) {
      case ProducerMode::Direct:
        ++next_to_publish_;
        break;
      case ProducerMode::DualWrite:
      case ProducerMode::Outbox: {
        Item row;
        row.counter = 1;
        Op op = config_.producer.mode == ProducerMode::DualWrite
                    ? put_op(make_key(Table::Domain, kProducerProcessor, id), row)
                    : transaction_op({TransactionPart{make_key(Table::Domain, kProducerProcessor, id), {}, [] {
                                        Update u;
                                        u.counter_add = 1;
                                        return u;
                                      }()},
                                      TransactionPart{make_key(Table::Outbox, kProducerProcessor, id), {}, {}}});
        auto reply = store_client.execute(op);
        if (!reply.has_value()) continue;  // unknown: try the same order again (an idempotent write)
        ++next_to_publish_;
        ++committed_;
        simulation_->trace().record(sim::now(), kTraceCommit, self.id(), id);
        break;
      }
    }
    // The message is owed from here on: every processor must act on it once.
    ledger_.messages += 1;
    ledger_.expected.add(id, static_cast<ProcessorId>(processors));
    if (config_.producer.mode != ProducerMode::Direct &&
        maybe_crash(config_.producer.crash_between_commit_and_publish, "producer.crash_between_commit_and_publish")) {
      self.crash();
      schedule_restart(self);
      simulation_->checkpoint();
    }
    if (config_.producer.mode != ProducerMode::Outbox) {
      publish_with_retries(id);
      last_activity_ = sim::now();
    }
    // Extra deliveries of the same id from the producer side (workload.redelivery).
    if (workload.redelivery.fraction > 0.0 && copies_rng.bernoulli(workload.redelivery.fraction)) {
      for (int copy = 1; copy <= workload.redelivery.copies; ++copy) {
        const sim::Duration delay = workload.redelivery.delay.sample(copies_rng);
        ++pending_copies_;
        simulation_->after(delay, [this, id, copy] {
          --pending_copies_;
          publish(id, static_cast<std::uint32_t>(copy));
        });
      }
    }
  }
  producer_done_ = true;
}

void World::relay_main() {
  // The outbox relay: publishes committed outbox rows in order, at least once. Its cursor is durable and is
  // advanced only after the row is marked published, so a crash between publish and mark republishes.
  sim::Node& self = *producer_node_;
  SimStoreClient store_client(*store_, self);
  while (true) {
    if (relay_cursor_ >= committed_) {
      if (producer_done_) return;
      sim::sleep(10 * sim::kMillisecond);
      continue;
    }
    const MessageId id = static_cast<MessageId>(relay_cursor_);
    if (!publish_with_retries(id)) continue;
    Update mark;
    mark.counter_add = 1;
    auto reply = store_client.execute(upsert_op(make_key(Table::Outbox, kProducerProcessor, id), {}, mark));
    if (!reply.has_value()) continue;
    ++relay_cursor_;
    last_activity_ = sim::now();
  }
}

void World::start_producer() {
  producer_node_->set_main([this] {
    if (config_.producer.mode == ProducerMode::Outbox) producer_node_->spawn([this] { relay_main(); });
    if (!producer_done_) producer_main();
  });
  producer_node_->start();
}

bool World::workload_done() const {
  if (!producer_done_ || pending_copies_ > 0) return false;
  if (config_.producer.mode == ProducerMode::Outbox && relay_cursor_ < committed_) return false;
  if (!queues_.empty()) {
    for (const auto& queue : queues_) {
      if (!queue->drained()) return false;
    }
    return true;
  }
  if (kafka_) return kafka_->drained();
  return clients_->drained();
}

void World::heal() {
  faults_on_ = false;
  draining_ = true;
  sim::LinkConfig link;
  link.latency = config_.network.latency;
  network_->set_default_link(link);
  set_link_latencies(link);
  for (auto* node : workers_) {
    if (!node->alive()) {
      node->restart();
      join_group(*node);
    }
  }
  if (!producer_node_->alive()) producer_node_->restart();
}

RunResult World::run(WorldRecord* record) {
  folding_ = options_.fold_settled_groups && record == nullptr;
  draw_swarm();
  build_network();
  build_nodes();
  build_faults();
  for (auto* node : workers_) {
    node->start();
    join_group(*node);
  }
  if (clients_) {
    clients_->start();
    producer_done_ = true;
    ledger_.messages = static_cast<std::uint64_t>(config_.workload.messages);
    for (std::int64_t id = 0; id < config_.workload.messages; ++id) {
      ledger_.expected.add(static_cast<MessageId>(id), static_cast<ProcessorId>(config_.topology.processors.size()));
    }
  } else {
    start_producer();
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

void World::merge_counted_coverage() {
  for (int p = 0; p < kCrashPointCount; ++p) {
    const char* name = to_string(static_cast<CrashPoint>(p));
    const auto index = static_cast<std::size_t>(p);
    if (crash_points_reached_[index] > 0) cover(fmt::format("crash_point.{}.reached", name), crash_points_reached_[index]);
    if (crash_points_fired_[index] > 0) cover(fmt::format("crash_point.{}.fired", name), crash_points_fired_[index]);
  }
  for (std::size_t b = 0; b < decisions_by_basis_.size(); ++b) {
    if (decisions_by_basis_[b] > 0) cover(fmt::format("decision.{}", to_string(static_cast<Basis>(b))), decisions_by_basis_[b]);
  }
}

RunResult World::judge_run() {
  auto& sim = *simulation_;
  merge_counted_coverage();
  flush_open_groups();
  if (!strategy_info(config_.protocol.kind).effect_in_store_transaction && !folding_) {
    ledger_.executions = sink_->take_executions();  // only inbox runs record executions in the store hook
  }
  for (const auto& e : ledger_.executions) {
    if (ledger_.has_attempt(e.attempt)) ledger_.attempt(e.attempt).executed = true;
  }
  RunResult result;
  result.scenario = config_.scenario.name;
  result.seed = seed_;
  OracleInput input{ledger_, config_.protocol.kind, sink_->calls(),
                    [&sim](std::uint32_t node) { return sim.node(node).name(); },
                    [this](ProcessorId p) {
                      return p < config_.topology.processors.size() ? config_.topology.processors[p]
                                                                    : fmt::format("processor{}", p);
                    }};
  judge(input, result);
  if (options_.check_linearizability) {
    const auto verdict = check_store_history(*store_, options_.linearizability_budget);
    if (verdict.verdict == lin::Verdict::Linearizable) result.linearizable = true;
    if (verdict.verdict == lin::Verdict::NotLinearizable) result.linearizable = false;
  }
  // Coverage of every fault point, including the ones that never fired (a silent green is visible).
  for (const char* point : {"after_start_before_effect", "after_effect_before_complete", "after_complete_before_ack"}) {
    coverage_.try_emplace(fmt::format("crash_point.{}.reached", point), 0);
    coverage_.try_emplace(fmt::format("crash_point.{}.fired", point), 0);
  }
  for (const char* key : {"crash", "restart", "pause", "partition.scheduled", "redelivery.copy", "producer.retry"}) {
    coverage_.try_emplace(key, 0);
  }
  const auto& net = network_->stats();
  coverage_["network.lost"] = net.lost;
  coverage_["network.ack_lost"] = net.ack_lost;
  coverage_["network.duplicated"] = net.duplicated;
  coverage_["network.partitioned"] = net.partitioned;
  coverage_["network.rpc_timeouts"] = net.rpc_timeouts;
  coverage_["store.evictions"] = store_->stats().evictions;
  coverage_["sink.rejected"] = sink_->rejected();
  result.coverage = coverage_;
  result.swarm = swarm_on_;
  result.sim_time = last_activity_;
  result.trace_hash = sim.trace().hash();
  result.trace_events = sim.trace().count();
  return result;
}

}  // namespace

RunResult run_world(const ScenarioConfig& config, std::uint64_t seed, const WorldOptions& options,
                    WorldRecord* record) {
  std::exception_ptr failure;
  {
    World world(config, seed, options);
    try {
      return world.run(record);
    } catch (...) {
      failure = std::current_exception();
    }
  }  // The fibers unwind here with no exception in flight: the kernel crashes a fiber only when none is.
  std::rethrow_exception(failure);
}

}  // namespace lethe
