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

// Forwards an orchestrator's hook calls, refusing a decision basis its entry does not declare.
class SagaDeclaredBases final : public ProtocolHooks {
 public:
  SagaDeclaredBases(const StrategyInfo& info, ProtocolHooks& hooks) : info_(info), hooks_(hooks) {}

  void crash_point(CrashPoint point, MessageId id, AttemptId attempt) override {
    hooks_.crash_point(point, id, attempt);
  }
  void decided(const DecisionNote& note) override {
    if (!declares_basis(info_, note.basis)) {
      throw StrategyContractError(fmt::format(
          "strategy \"{}\" reported decision basis \"{}\" for saga {} (attempt {}), which its registry entry does "
          "not declare",
          info_.name, to_string(note.basis), note.id, note.attempt));
    }
    hooks_.decided(note);
  }
  void waited(MessageId id, ProcessorId processor, AttemptId attempt, sim::Duration waited) override {
    hooks_.waited(id, processor, attempt, waited);
  }
  void completed(MessageId id, ProcessorId processor, AttemptId attempt, bool applied) override {
    hooks_.completed(id, processor, attempt, applied);
  }

 private:
  const StrategyInfo& info_;
  ProtocolHooks& hooks_;
};

// The entry's orchestrator behind the basis check.
class CheckedOrchestrator final : public SagaOrchestrator {
 public:
  CheckedOrchestrator(const StrategyInfo& info, const ProtocolSection& settings, StoreClient& store, Clock& clock,
                      ProtocolHooks& hooks, sim::Rng rng)
      : hooks_(info, hooks), orchestrator_(info.saga(settings, store, clock, hooks_, std::move(rng))) {
    if (!orchestrator_) throw StrategyContractError("strategy \"" + info.name + "\": its saga factory made nothing");
  }

  SagaOutcome run(MessageId saga, SagaCalls& calls) override { return orchestrator_->run(saga, calls); }

 private:
  SagaDeclaredBases hooks_;
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
  return std::make_unique<CheckedOrchestrator>(info, settings, store, clock, hooks, std::move(rng));
}

}  // namespace lethe
