// world/source.hpp — where messages come from, as the world sees it: one interface for every message source,
// and the registry that maps the scenario word topology.source to one.
//
// A source is everything between the producer and the workers' strategies: the broker (or the callers) with its
// durable state, and the consumer side that runs on each worker. The world drives a source only through
// MessageSource (every call from the simulation's thread; "never blocks" = callable from a timer or handler):
//   publish(id)        a message reached the broker (the producer's RPC handler, or a redelivery timer): the
//                      source keeps one copy for every processor (fan-out). Never blocks.
//   consume(worker)    the main loop of one worker incarnation: it receives the next message the source hands
//                      this worker, has the worker handle it (SourceWorker::handle runs every strategy the worker
//                      runs), then, when handling succeeded, calls SourceWorker::before_ack and acknowledges the
//                      message (a delete, an offset commit, a response) and reports it (acknowledged/answered);
//                      when handling failed it leaves the message for redelivery or requeues it in place, as the
//                      source's semantics say. Never returns, or returns only when the worker waits without
//                      its fiber: after a kernel wait without a stack (sim::Simulation::park_then, the
//                      Signal's wait_then, Network::call_or_then) whose continuation holds SourceWorker::shared()
//                      and goes on consuming (the queue's idle consumers do; returning otherwise fails the run).
//                      Throws sim::Crash when the worker dies.
//   worker_started(i)  worker i (re)started: it rejoins the source (a consumer group member). Never blocks.
//   worker_crashed(i)  worker i crashed (the node is already down). Never blocks.
//   worker_paused(i)   worker i's node was just paused or its pause extended (Node::paused_until says until
//                      when). Never blocks.
//   set_intervener(x)  a counterfactual replay (world/counterfactual.hpp): the interventions that act in the
//                      source (MemberKept). Before the run starts; `x` outlives the source's every call.
//   rebalance()        a forced rebalance of every consumer group; called only if has_consumer_groups().
//   start()            the run begins; called only if makes_own_requests() (the source's callers start).
//   drained()          every message the source holds has been acknowledged for every processor.
// Why consume() is one call rather than receive/ack/nack: what identifies a delivery differs per source (a
// receipt handle; a partition, offset and generation; a client's try tag), and so does what a failure means
// (the queue lets the visibility timeout redeliver, kafka retries the record in place, a client gets no
// response). The source keeps both; the world keeps what a worker does with a message (SourceWorker).
//
// Registry: source_registry() maps each topology.source word to a SourceEntry: how the topology lays out the
// workers for it, and the factory. The built-ins ("kafka", "queue", "clients", in that order) are listed
// explicitly in world/source_registry.cpp (static initializers are dropped from static libraries);
// register_source() adds more at runtime, before any run. The scenario loader accepts exactly source_names().
// A new in-tree source touches three files: its own (world/<name>.cpp, with the function that registers it; a
// header only if tests use the class), world/source_registry.cpp (that function's declaration and one call in
// the list of built-ins), and docs/scenarios.md (what the word means). CMake and the loader need no edit.
//
// Does not: own the worker nodes (the topology creates them before the source), or know about dedupe.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "check/ledger.hpp"
#include "protocol/store_ops.hpp"
#include "sim/network.hpp"
#include "sim/node.hpp"
#include "sim/simulation.hpp"
#include "world/observations.hpp"
#include "core/registry.hpp"

namespace lethe {

class Intervener;  // world/counterfactual.hpp

// How the topology lays out the workers of a source.
enum class WorkerLayout {
  PerProcessor,  // topology.consumers nodes per processor ("<processor>-<c>"), each runs its processor's strategy
  Shared,        // topology.consumers nodes ("api-<c>"), each runs every processor's strategy for every message
};

// One worker node as the topology built it.
struct WorkerSlot {
  sim::Node* node = nullptr;
  ProcessorId processor = 0;  // PerProcessor: the processor it serves; Shared: 0
  std::size_t member = 0;     // its index among its processor's workers (its consumer group member number)
};

// What handling one message gave.
struct Handled {
  bool ok = false;                     // no strategy's attempt failed
  std::optional<std::uint64_t> value;  // the first strategy's value (what a caller is answered)
};

// What a source's consumer loop asks of the worker it runs on (the world implements it; one per incarnation).
class SourceWorker {
 public:
  virtual ~SourceWorker() = default;
  virtual std::size_t index() const = 0;  // into SourceContext::workers
  virtual sim::Node& node() = 0;
  // One attempt of every strategy the worker runs, in processor order. Throws sim::Crash if the worker dies.
  // `payload`: the delivery's payload version (0: as first published; workload.redelivery.payload = "changed"
  // gives copy i version i).
  virtual Handled handle(MessageId id, std::uint32_t payload) = 0;
  // The crash point between completing and acknowledging. Throws sim::Crash when the worker dies there.
  virtual void before_ack(MessageId id) = 0;
  // The source acknowledged `id` at its broker; `accepted` is the broker's answer (false: refused, or unknown).
  virtual void acknowledged(MessageId id, bool accepted) = 0;
  // The source answered `id` to its caller (no acknowledgement of its own).
  virtual void answered(MessageId id) = 0;
  // This worker, owning everything its incarnation holds (strategies, clients, streams): what a continuation
  // keeps when the worker waits without its fiber. Dropping the last copy ends the incarnation's state.
  virtual std::shared_ptr<SourceWorker> shared() = 0;
};

class MessageSource {
 public:
  virtual ~MessageSource() = default;
  // `payload`: the version of the payload this copy carries (0: as first published), handed back to handle().
  virtual void publish(MessageId id, std::uint32_t payload) = 0;
  virtual void consume(SourceWorker& worker) = 0;
  virtual void worker_started(std::size_t /*worker*/) {}
  virtual void worker_crashed(std::size_t /*worker*/) {}
  virtual void worker_paused(std::size_t /*worker*/) {}
  virtual void set_intervener(const Intervener* /*intervener*/) {}
  virtual bool has_consumer_groups() const { return false; }
  virtual void rebalance() {}
  // True: the source makes the requests itself (every message of the workload); the world runs no producer.
  virtual bool makes_own_requests() const { return false; }
  virtual void start() {}
  // Only if makes_own_requests(), once the run has ended at `end`: owes in the ledger every message the source's
  // callers requested (ledger.messages and ledger.expected, in id order) and counts the rest as undelivered
  // (ledger.undelivered and undelivered_latest): a request never made is not a lost message.
  virtual void account_requests(Ledger& /*ledger*/, ProcessorId /*processors*/, sim::Time /*end*/) const {}
  // Once the run has ended at `end`: counts each copy the source holds to hand out only after `end` (a queue
  // message whose visibility timeout expires later, unless a consumer still at work holds it: that one is
  // unanswered) as undelivered (ledger.undelivered, undelivered_latest) and
  // records its pair in ledger.due_after_end, so that a message whose only copy is still due is not lost.
  virtual void account_due_after(Ledger& /*ledger*/, sim::Time /*end*/) const {}
  virtual bool drained() const = 0;
};

// What a factory may use. Every reference outlives the source.
struct SourceContext {
  const ScenarioConfig& config;
  sim::Simulation& simulation;
  sim::Network& network;
  sim::Node& broker;                       // group "broker"
  const std::vector<WorkerSlot>& workers;  // every worker, by index, laid out as the entry's `workers` says
  Ledger& ledger;                          // deliveries are counted here
  Observations& observations;
};

using SourceFactory = std::function<std::unique_ptr<MessageSource>(const SourceContext&)>;

struct SourceEntry {
  WorkerLayout workers = WorkerLayout::PerProcessor;
  SourceFactory make;
  // True: an idle worker waits without its fiber's stack (the loader does not count a stack per consumer).
  bool idle_workers_stackless = false;
};

using SourceRegistry = Registry<SourceEntry>;

// The process-wide registry, with the built-ins registered on first use.
SourceRegistry& source_registry();
// source_registry().add(name, entry): throws std::invalid_argument on an empty or taken name.
void register_source(std::string name, SourceEntry entry);

}  // namespace lethe
