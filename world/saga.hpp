// world/saga.hpp — a saga's calls in the simulated world ([saga] steps > 0; protocol/saga.hpp, docs/sagas.md).
//
// SagaWorkerCalls is what a worker's orchestrator calls through. begin/end are an attempt like any other:
// begun and ended in the ledger and traced ("attempt", "outcome"), one per step or compensation call, with the
// call's processor id. work() sleeps workload.processing_time (the worker's "work" stream); call() is then:
//   - a forward step after the first that this saga declines: one round trip to the provider's node (the sink's
//     service and latency, sink.timeout), which traces "saga.decline" (a = saga, b = attempt, c = step) and
//     executes nothing; the caller gets kDeclined, or nullopt when the round trip timed out;
//   - otherwise the provider call, through the worker's SinkClient (retries, idempotency, outages and the log
//     of executions are the sink's).
// Whether a saga declines at a step is a pure function of (seed, saga, step): stream "saga.decline:<saga>:<step>",
// one Bernoulli draw of saga.decline_last for the last step (saga.decline when decline_last is 0) and
// saga.decline for the steps between; step 0 never declines. So every delivery of a saga meets the same answer.
//
// Lifetime: everything passed in outlives the calls. Throws sim::Crash when the worker dies.
// Does not: decide what the orchestrator does with an answer, or judge sagas (check/saga_oracle.hpp).
#pragma once

#include <cstdint>
#include <optional>

#include "world/sink.hpp"
#include "protocol/saga.hpp"
#include "world/worker.hpp"

namespace lethe {

// Whether saga `saga` declines at `step` under `config` and the run's `simulation` seed.
bool saga_declines(const ScenarioConfig& config, const sim::Simulation& simulation, MessageId saga, int step);

class SagaWorkerCalls final : public SagaCalls {
 public:
  SagaWorkerCalls(const WorkerEnvironment& environment, SinkClient& sink, sim::Rng& work, sim::Node& node)
      : environment_(environment), sink_(sink), work_(work), node_(node) {}

  int steps() const override { return environment_.config.saga.steps; }
  AttemptId begin(MessageId saga, ProcessorId processor) override;
  void work(MessageId saga, ProcessorId processor, AttemptId attempt) override;
  std::optional<std::uint64_t> call(MessageId saga, ProcessorId processor, AttemptId attempt,
                                    FencingToken token) override;
  void end(AttemptId attempt, const ProtectResult& result) override;

 private:
  std::optional<std::uint64_t> decline(MessageId saga, int step, AttemptId attempt);

  const WorkerEnvironment& environment_;
  SinkClient& sink_;
  sim::Rng& work_;
  sim::Node& node_;
};

}  // namespace lethe
