#include "protocol/saga.hpp"

#include <fmt/format.h>

#include <utility>

#include "protocol/registry.hpp"

namespace lethe {

namespace {

class StepwiseOrchestrator final : public SagaOrchestrator {
 public:
  explicit StepwiseOrchestrator(Strategy& strategy) : strategy_(strategy) {}

  SagaOutcome run(MessageId saga, SagaCalls& calls) override {
    for (int step = 0; step < calls.steps(); ++step) {
      const ProtectResult result = protected_call(saga, step_processor(step), calls);
      if (result.outcome == Outcome::Failed) return SagaOutcome::Failed;
      if (result.value == kDeclined) return compensate(saga, step, calls);
    }
    return SagaOutcome::Completed;
  }

 private:
  // The compensations of steps `done` - 1 down to 0.
  SagaOutcome compensate(MessageId saga, int done, SagaCalls& calls) {
    for (int step = done - 1; step >= 0; --step) {
      if (protected_call(saga, compensation_processor(step), calls).outcome == Outcome::Failed) {
        return SagaOutcome::Failed;
      }
    }
    return SagaOutcome::Compensated;
  }

  ProtectResult protected_call(MessageId saga, ProcessorId processor, SagaCalls& calls) {
    const AttemptId attempt = calls.begin(saga, processor);
    // protect() runs the effect in this frame: the closure holds references only.
    const Effect effect = [&calls, saga, processor, attempt](FencingToken token) {
      calls.work(saga, processor, attempt);
      return calls.call(saga, processor, attempt, token);
    };
    const ProtectResult result = strategy_.protect(saga, processor, attempt, effect);
    calls.end(attempt, result);
    return result;
  }

  Strategy& strategy_;
};

// The entry's orchestrator behind the basis check.
class CheckedOrchestrator final : public SagaOrchestrator {
 public:
  CheckedOrchestrator(const StrategyInfo& info, ProtocolSection settings, StoreClient& store, Clock& clock,
                      ProtocolHooks& hooks, sim::Rng rng)
      : settings_(std::move(settings)),
        hooks_(info, hooks, "saga"),
        orchestrator_(info.saga(settings_, store, clock, hooks_, std::move(rng))) {
    if (!orchestrator_) throw StrategyContractError("strategy \"" + info.name + "\": its saga factory made nothing");
  }

  SagaOutcome run(MessageId saga, SagaCalls& calls) override { return orchestrator_->run(saga, calls); }

 private:
  ProtocolSection settings_;  // with its defaults filled in; the orchestrator may keep a reference to it
  DeclaredBasesHooks hooks_;
  std::unique_ptr<SagaOrchestrator> orchestrator_;
};

}  // namespace

std::string saga_call_name(ProcessorId processor) {
  const int step = saga_step_of(processor);
  return is_compensation(processor) ? fmt::format("compensation of step {}", step) : fmt::format("step {}", step);
}

std::unique_ptr<SagaOrchestrator> stepwise_orchestrator(Strategy& strategy) {
  return std::make_unique<StepwiseOrchestrator>(strategy);
}

std::unique_ptr<SagaOrchestrator> make_saga_orchestrator(const ProtocolSection& settings, StoreClient& store,
                                                         Clock& clock, ProtocolHooks& hooks, sim::Rng rng,
                                                         Strategy& strategy) {
  const StrategyInfo& info = strategy_info(settings.kind);
  if (!info.saga) return stepwise_orchestrator(strategy);
  const ProtocolSection filled = with_defaults(settings);
  const std::string why = settings_problem(filled);
  if (!why.empty()) throw std::invalid_argument("make_saga_orchestrator: " + why);
  return std::make_unique<CheckedOrchestrator>(info, filled, store, clock, hooks, std::move(rng));
}

}  // namespace lethe
