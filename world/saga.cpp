#include "world/saga.hpp"

#include <fmt/format.h>

namespace lethe {
namespace {

constexpr sim::TraceKind kTraceAttempt{"attempt", "message", "processor", "attempt"};
constexpr sim::TraceKind kTraceOutcome{"outcome", "message", "attempt", "outcome"};
constexpr sim::TraceKind kTraceDecline{"saga.decline", "saga", "attempt", "step"};

}  // namespace

bool saga_declines(const ScenarioConfig& config, const sim::Simulation& simulation, MessageId saga, int step) {
  const SagaSection& section = config.saga;
  if (step <= 0 || step >= section.steps) return false;
  const bool last = step == section.steps - 1;
  const double probability = last && section.decline_last > 0.0 ? section.decline_last : section.decline;
  if (probability <= 0.0) return false;
  return simulation.rng(fmt::format("saga.decline:{}:{}", saga, step)).bernoulli(probability);
}

AttemptId SagaWorkerCalls::begin(MessageId saga, ProcessorId processor) {
  sim::Simulation& simulation = environment_.simulation;
  const AttemptId attempt = environment_.ledger_folding.begin(saga, processor, node_.id());
  simulation.trace().record(simulation.now(), kTraceAttempt, node_.id(), saga, processor, attempt);
  return attempt;
}

void SagaWorkerCalls::work(MessageId, ProcessorId, AttemptId) {
  sim::sleep(environment_.config.workload.processing_time.sample(work_));
}

std::optional<std::uint64_t> SagaWorkerCalls::call(MessageId saga, ProcessorId processor, AttemptId attempt,
                                                   FencingToken token) {
  const int step = saga_step_of(processor);
  if (!is_compensation(processor) && saga_declines(environment_.config, environment_.simulation, saga, step)) {
    return decline(saga, step, attempt);
  }
  return sink_.call(saga, processor, attempt, token);
}

// The provider's answer "declined": a round trip to its node that executes nothing.
std::optional<std::uint64_t> SagaWorkerCalls::decline(MessageId saga, int step, AttemptId attempt) {
  sim::Simulation* simulation = &environment_.simulation;
  Sink& sink = environment_.topology.sink();
  const sim::NodeId provider = sink.node().id();
  const std::optional<bool> answered = environment_.network.call(
      sink.service(),
      [simulation, provider, saga, attempt, step] {
        simulation->trace().record(simulation->now(), kTraceDecline, provider, saga, attempt,
                                   static_cast<std::uint64_t>(step));
        return true;
      },
      environment_.config.sink.timeout, saga);
  if (!answered.has_value()) return std::nullopt;
  return kDeclined;
}

void SagaWorkerCalls::end(AttemptId attempt, const ProtectResult& result) {
  sim::Simulation& simulation = environment_.simulation;
  const AttemptRecord record = environment_.ledger_folding.end(attempt, result, simulation.now());
  simulation.trace().record(simulation.now(), kTraceOutcome, record.node, record.id, attempt,
                            static_cast<std::uint64_t>(result.outcome));
  environment_.observations.active(simulation.now());
}

}  // namespace lethe
