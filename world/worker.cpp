#include "world/worker.hpp"

#include <fmt/format.h>

#include <memory>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "protocol/saga.hpp"
#include "protocol/strategies.hpp"
#include "world/external_node.hpp"
#include "world/saga.hpp"

namespace lethe {
namespace {

constexpr sim::TraceKind kTraceAttempt{"attempt", "message", "processor", "attempt"};
constexpr sim::TraceKind kTraceDecision{"decision", "message", "attempt", "basis"};
constexpr sim::TraceKind kTraceOutcome{"outcome", "message", "attempt", "outcome"};
constexpr sim::TraceKind kTraceAck{"ack", "message", "processor", "accepted"};
constexpr sim::TraceKind kTraceRelease{"release", "message", "attempt", "applied"};
constexpr sim::TraceKind kTracePayloadRefused{"payload.refused", "message", "attempt"};

class SimClock final : public Clock {
 public:
  explicit SimClock(sim::Node& node) : node_(node) {}
  sim::Time now() override { return node_.local_now(); }
  void sleep(sim::Duration duration) override { sim::sleep(duration); }

 private:
  sim::Node& node_;
};

// The protocol's view of the world from one worker node.
class WorkerHooks final : public ProtocolHooks {
 public:
  WorkerHooks(const WorkerEnvironment& environment, sim::Node& node) : environment_(environment), node_(node) {}

  void crash_point(CrashPoint point, MessageId id, AttemptId attempt) override {
    environment_.faults.crash_point(point, node_, id, attempt);
  }

  void decided(const DecisionNote& note) override {
    auto& simulation = environment_.simulation;
    environment_.ledger.decided(note, simulation.now());
    simulation.trace().record(simulation.now(), kTraceDecision, node_.id(), note.id, note.attempt,
                              static_cast<std::uint64_t>(note.basis));
    environment_.observations.decided(note.basis);
  }

  void waited(MessageId id, ProcessorId processor, AttemptId attempt, sim::Duration waited) override {
    environment_.ledger_folding.record_wait(WaitRecord{id, processor, attempt, waited});
  }

  void completed(MessageId, ProcessorId, AttemptId attempt, bool applied) override {
    auto& record = environment_.ledger.attempt(attempt);
    if (applied) {
      record.completion_applied = true;
      record.completed_at = environment_.simulation.now();
    } else {
      record.completion_failed = true;
    }
  }

  void released(MessageId id, ProcessorId, AttemptId attempt, bool applied) override {
    auto& simulation = environment_.simulation;
    simulation.trace().record(simulation.now(), kTraceRelease, node_.id(), id, attempt, applied ? 1 : 0);
    environment_.observations.cover(applied ? "protocol.released" : "protocol.release_refused");
  }

  void payload_refused(MessageId id, ProcessorId, AttemptId attempt) override {
    auto& simulation = environment_.simulation;
    simulation.trace().record(simulation.now(), kTracePayloadRefused, node_.id(), id, attempt);
    environment_.observations.cover("protocol.payload_refused");
    environment_.ledger.payload_refusals.emplace_back(simulation.now(), attempt);
  }

 private:
  const WorkerEnvironment& environment_;
  sim::Node& node_;
};

// One attempt of `strategy` on (id, processor): the effect is the domain's processing time
// (workload.processing_time), then the provider call.
ProtectResult attempt_once(const WorkerEnvironment& environment, Strategy& strategy, SinkClient& sink,
                           sim::Rng& work, MessageId id, std::uint32_t payload, ProcessorId processor,
                           sim::Node& node) {
  // The closures refer to this frame, so each is one pointer (no allocation for the std::functions).
  struct EffectCall {
    const sim::Distribution* processing_time;
    Strategy* strategy;
    SinkClient* sink;
    sim::Rng* work;
    MessageId id;
    ProcessorId processor;
    AttemptId attempt;
    PayloadFingerprint payload;
  } call{&environment.config.workload.processing_time, &strategy, &sink, &work, id, processor, 0,
         payload_fingerprint(id, payload)};
  return run_attempt(environment, id, processor, node, [frame = &call](AttemptId attempt) {
    frame->attempt = attempt;
    // protect() runs the effect in this fiber, before returning.
    const Effect effect = [frame](FencingToken token) {
      sim::sleep(frame->processing_time->sample(*frame->work));
      return frame->sink->call(frame->id, frame->processor, frame->attempt, token);
    };
    return frame->strategy->protect_payload(frame->id, frame->processor, attempt, frame->payload, effect);
  });
}

// A worker incarnation as its source sees it: the strategies it runs, and what it does around an ack.
class WorkerLoop final : public SourceWorker {
 public:
  WorkerLoop(const WorkerEnvironment& environment, std::size_t index, WorkerHooks& hooks,
             std::vector<std::unique_ptr<Strategy>>& strategies, std::vector<ProcessorId> processors,
             SinkClient& sink, sim::Rng& work, SagaOrchestrator* saga, SagaCalls* saga_calls,
             ExternalNode* external = nullptr)
      : environment_(environment),
        slot_(environment.topology.workers()[index]),
        index_(index),
        hooks_(hooks),
        strategies_(strategies),
        processors_(std::move(processors)),
        sink_(sink),
        work_(work),
        saga_(saga),
        saga_calls_(saga_calls),
        external_(external) {}

  std::size_t index() const override { return index_; }
  sim::Node& node() override { return *slot_.node; }
  Handled handle(MessageId id, std::uint32_t payload) override {
    if (external_ != nullptr) return external_->handle(id);  // an external consumer's payloads are its own
    // A saga is driven by its orchestrator, whose calls are attempts of their own.
    if (saga_ != nullptr) return Handled{saga_->run(id, *saga_calls_) != SagaOutcome::Failed, std::nullopt};
    Handled handled{true, std::nullopt};
    for (std::size_t i = 0; i < strategies_.size(); ++i) {
      const ProtectResult result =
          attempt_once(environment_, *strategies_[i], sink_, work_, id, payload, processors_[i], node());
      if (environment_.config.workload.redelivery.payload == RedeliveryPayload::Changed) {
        environment_.ledger.note_payload(id, processors_[i], payload, result.outcome == Outcome::Executed,
                                         result.outcome == Outcome::Skipped && !result.payload_mismatch);
      }
      if (result.outcome == Outcome::Failed) handled.ok = false;
      if (i == 0) handled.value = result.value;
    }
    return handled;
  }
  // An external node's completion point is recognised from its traffic (world/external_node.hpp).
  void before_ack(MessageId id) override {
    if (external_ == nullptr) hooks_.crash_point(CrashPoint::AfterCompleteBeforeAck, id, 0);
  }
  void acknowledged(MessageId id, bool accepted) override {
    environment_.simulation.trace().record(sim::now(), kTraceAck, node().id(), id, slot_.processor, accepted);
    environment_.observations.active(sim::now());
  }
  void answered(MessageId) override { environment_.observations.active(sim::now()); }
  // REQUIRES: set_owner() was called (ExternalWorker's loop; PlainWorker answers shared() itself).
  std::shared_ptr<SourceWorker> shared() override {
    std::shared_ptr<void> owner = owner_.lock();
    if (!owner) throw std::logic_error("WorkerLoop::shared: the loop has no owner");
    return std::shared_ptr<SourceWorker>(std::move(owner), this);
  }
  // REQUIRES: `owner` owns this loop and everything it refers to.
  void set_owner(std::weak_ptr<void> owner) { owner_ = std::move(owner); }

 private:
  const WorkerEnvironment& environment_;
  const WorkerSlot& slot_;
  std::size_t index_;
  WorkerHooks& hooks_;
  std::vector<std::unique_ptr<Strategy>>& strategies_;
  std::vector<ProcessorId> processors_;  // the processor of each strategy
  SinkClient& sink_;
  sim::Rng& work_;
  SagaOrchestrator* saga_;  // null: plain messages
  SagaCalls* saga_calls_;
  ExternalNode* external_;  // null: the strategies run in lethe
  std::weak_ptr<void> owner_;
};

std::unique_ptr<StoreClient> connect_store(const WorkerEnvironment& environment, sim::Node& self) {
  std::unique_ptr<StoreClient> client = environment.topology.store().connect(self);
  if (environment.intervener != nullptr) client = environment.intervener->wrap(std::move(client), self);
  return client;
}

// What a worker incarnation running built-in strategies holds to handle messages, built in member order and
// destroyed in the reverse.
struct PlainParts {
  PlainParts(const WorkerEnvironment& environment, const std::shared_ptr<const ProtocolSection>& settings,
             std::size_t index, sim::Node& self, std::vector<ProcessorId> processors)
      : clock(self),
        store_client(connect_store(environment, self)),
        sink_client(environment.topology.sink(), environment.network, environment.config.sink,
                    environment.simulation.rng(fmt::format("sink-client:{}:{}", self.name(), self.incarnation()))),
        hooks(environment, self),
        work(environment.simulation.rng(fmt::format("work:{}:{}", self.name(), self.incarnation()))),
        saga_calls(environment, sink_client, work, self) {
    sim::Simulation& simulation = environment.simulation;
    for (std::size_t i = 0; i < processors.size(); ++i) {
      strategies.push_back(make_strategy(settings, *store_client, clock, hooks,
                                         simulation.rng(fmt::format("protocol:{}:{}:{}", self.name(),
                                                                    self.incarnation(), i))));
    }
    if (environment.config.saga.steps > 0) {
      saga = make_saga_orchestrator(environment.config.protocol, *store_client, clock, hooks,
                                    simulation.rng(fmt::format("saga:{}:{}", self.name(), self.incarnation())),
                                    *strategies.front());
    }
    loop.emplace(environment, index, hooks, strategies, std::move(processors), sink_client, work, saga.get(),
                 &saga_calls);
  }

  SimClock clock;
  std::unique_ptr<StoreClient> store_client;
  SinkClient sink_client;
  WorkerHooks hooks;
  std::vector<std::unique_ptr<Strategy>> strategies;
  sim::Rng work;
  SagaWorkerCalls saga_calls;
  std::unique_ptr<SagaOrchestrator> saga;
  std::optional<WorkerLoop> loop;
};

// A worker incarnation running built-in strategies, owned by the fiber that consumes or, while the worker waits
// without one, by the source's continuation. Its parts are built when it first handles a message: an idle
// consumer holds none (a million idle consumers hold a million slots, not a million sets of strategies and
// clients), and building them later changes nothing in the run (every stream is derived from its name, and
// building draws nothing and sends nothing).
class PlainWorker final : public SourceWorker, public std::enable_shared_from_this<PlainWorker> {
 public:
  PlainWorker(const WorkerEnvironment& environment, std::shared_ptr<const ProtocolSection> settings,
              std::size_t index, sim::Node& self, std::vector<ProcessorId> processors)
      : environment_(environment),
        settings_(std::move(settings)),
        index_(index),
        self_(self),
        processors_(std::move(processors)) {}

  std::size_t index() const override { return index_; }
  sim::Node& node() override { return self_; }
  Handled handle(MessageId id, std::uint32_t payload) override { return loop().handle(id, payload); }
  void before_ack(MessageId id) override { loop().before_ack(id); }
  void acknowledged(MessageId id, bool accepted) override { loop().acknowledged(id, accepted); }
  void answered(MessageId id) override { loop().answered(id); }
  std::shared_ptr<SourceWorker> shared() override { return shared_from_this(); }

 private:
  WorkerLoop& loop() {
    if (!parts_) parts_ = std::make_unique<PlainParts>(environment_, settings_, index_, self_, processors_);
    return *parts_->loop;
  }

  const WorkerEnvironment& environment_;
  std::shared_ptr<const ProtocolSection> settings_;
  std::size_t index_;
  sim::Node& self_;
  std::vector<ProcessorId> processors_;
  std::unique_ptr<PlainParts> parts_;  // a pointer: an idle worker holds none of its bytes
};

// A worker incarnation whose consumer is the user's process (protocol.kind = "external"), held as PlainWorker is.
struct ExternalWorker {
  ExternalWorker(const WorkerEnvironment& environment, ExternalShared& shared, std::size_t index, sim::Node& self,
                 ExternalNodeParts parts, std::vector<ProcessorId> processors)
      : hooks(std::static_pointer_cast<WorkerHooks>(parts.hooks)),
        sink(*parts.sink),
        node(environment, shared, self, std::move(parts), processors),
        unused_work(environment.simulation.rng(fmt::format("work:{}:{}", self.name(), self.incarnation()))) {
    loop.emplace(environment, index, *hooks, no_strategies, std::move(processors), sink, unused_work, nullptr,
                 nullptr, &node);
  }

  std::shared_ptr<WorkerHooks> hooks;
  SinkClient& sink;  // owned by `node`'s parts
  ExternalNode node;
  sim::Rng unused_work;
  std::vector<std::unique_ptr<Strategy>> no_strategies;
  std::optional<WorkerLoop> loop;
};

// Hands `worker` to the source's consume loop. It returns only when the worker waits without its fiber, and then
// the source's continuation holds the worker (SourceWorker::shared).
void consume(const WorkerEnvironment& environment, SourceWorker& worker) {
  environment.topology.source().consume(worker);
  if (!environment.simulation.parked_without_stack()) {
    throw std::logic_error("the source's consume loop returned without its worker waiting (MessageSource::consume)");
  }
}

}  // namespace

ProtectResult run_attempt(const WorkerEnvironment& environment, MessageId id, ProcessorId processor, sim::Node& node,
                          const std::function<ProtectResult(AttemptId)>& protect) {
  sim::Simulation& simulation = environment.simulation;
  const AttemptId attempt = environment.ledger_folding.begin(id, processor, node.id());
  simulation.trace().record(simulation.now(), kTraceAttempt, node.id(), id, processor, attempt);
  const ProtectResult result = protect(attempt);
  const AttemptRecord record = environment.ledger_folding.end(attempt, result, simulation.now());
  simulation.trace().record(simulation.now(), kTraceOutcome, record.node, record.id, attempt,
                            static_cast<std::uint64_t>(result.outcome));
  environment.observations.active(simulation.now());
  return result;
}

void Workers::main(std::size_t index) {
  sim::Node& self = *environment_.topology.workers()[index].node;
  if (environment_.config.protocol.kind == "external") {
    external_main(index);
    return;
  }
  if (!strategy_settings_) strategy_settings_ = strategy_settings(environment_.config.protocol);
  auto worker = std::make_shared<PlainWorker>(environment_, strategy_settings_, index, self, processors_of(index));
  consume(environment_, *worker);
}

// Shared workers run every processor; the others their own processor.
std::vector<ProcessorId> Workers::processors_of(std::size_t index) const {
  std::vector<ProcessorId> processors;
  if (environment_.topology.worker_layout() == WorkerLayout::Shared) {
    for (std::size_t p = 0; p < environment_.config.topology.processors.size(); ++p) {
      processors.push_back(static_cast<ProcessorId>(p));
    }
  } else {
    processors.push_back(environment_.topology.workers()[index].processor);
  }
  return processors;
}

void Workers::external_main(std::size_t index) {
  const WorkerEnvironment& environment = environment_;
  sim::Simulation& simulation = environment.simulation;
  sim::Node& self = *environment.topology.workers()[index].node;
  ExternalNodeParts parts;
  // The node's store operations pass this client (the turn protocol), so a counterfactual acts on them as on a
  // built-in strategy's.
  parts.store = connect_store(environment, self);
  parts.sink = std::make_unique<SinkClient>(
      environment.topology.sink(), environment.network, environment.config.sink,
      simulation.rng(fmt::format("sink-client:{}:{}", self.name(), self.incarnation())));
  parts.hooks = std::make_shared<WorkerHooks>(environment, self);
  auto worker = std::make_shared<ExternalWorker>(environment, external_, index, self, std::move(parts),
                                                 processors_of(index));
  worker->loop->set_owner(worker);
  consume(environment, *worker->loop);
}

}  // namespace lethe
