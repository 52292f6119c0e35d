// protocol/saga.hpp — sagas: a workflow of steps, each an effect with a compensation, driven by an orchestrator
// that consumes at-least-once messages (docs/sagas.md).
//
// One message is one saga. Its steps run in order (step 0, 1, ...); a step the provider declines for good (a
// terminal failure, returned as kDeclined) sends the saga backward: the compensations of the steps already done
// run in reverse, and the saga ends compensated. A call that fails (nullopt: the outcome is unknown) is the
// orchestrator's to handle: each orchestrator says what it does.
//
// Every call of a step or a compensation is its own attempt (SagaCalls::begin/end), with its own processor id:
// step s is processor s, its compensation kCompensationBase + s. The world's ledger and the provider's log see
// each (saga, processor) pair as one group, so the oracle counts and explains duplicate steps and compensations
// like any other duplicate effect, and the saga oracle (check/saga_oracle.hpp) judges each saga as a whole.
//
// Orchestrators (make_saga_orchestrator):
//   stepwise: each call protected by the plain strategy of protocol.kind: with "none" nothing is deduplicated (a
//     redelivery runs the whole saga again); with a record strategy ("mnemosyne", ...) there is one dedupe record
//     per (saga, step) and per compensation, and a declined step is remembered by its memoized result (memoize =
//     false forgets it: a skipped step then counts as done). A failed call fails the delivery (redelivered).
//   a registered strategy's own (StrategyInfo::saga): "saga-state" (protocol/saga_state.cpp).
//
// Does not: retry a call itself, ack messages, or decide whether a step declines (the provider does).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/config.hpp"
#include "protocol/env.hpp"
#include "protocol/store_ops.hpp"
#include "protocol/strategies.hpp"
#include "sim/random.hpp"

namespace lethe {

inline constexpr int kSagaMaxSteps = 8;
inline constexpr ProcessorId kCompensationBase = 16;  // above every step's processor id

inline ProcessorId step_processor(int step) { return static_cast<ProcessorId>(step); }
inline ProcessorId compensation_processor(int step) { return kCompensationBase + static_cast<ProcessorId>(step); }
inline bool is_compensation(ProcessorId processor) { return processor >= kCompensationBase; }
// The step a step or compensation processor id belongs to.
inline int saga_step_of(ProcessorId processor) {
  return static_cast<int>(is_compensation(processor) ? processor - kCompensationBase : processor);
}

// "step 1", "compensation of step 0": a call's name in explanations.
std::string saga_call_name(ProcessorId processor);

// What a step call returns when the provider declined the step for good. Providers' values are never 0
// (counters and charge ids start at 1, email ids are non-zero).
inline constexpr std::uint64_t kDeclined = 0;

// What an orchestrator needs of its caller: the saga's length and one call of a step or compensation.
class SagaCalls {
 public:
  virtual ~SagaCalls() = default;
  virtual int steps() const = 0;  // 2..kSagaMaxSteps
  // Begins one call of (saga, processor) and returns its attempt id (unique, non-zero).
  virtual AttemptId begin(MessageId saga, ProcessorId processor) = 0;
  // The work of the call begun as `attempt` (the domain's processing time), before its provider call. May throw
  // (a crash of the caller).
  virtual void work(MessageId saga, ProcessorId processor, AttemptId attempt) = 0;
  // The provider call of the call begun as `attempt`: the provider's value, kDeclined (a forward step declined
  // for good; compensations are never declined), or nullopt (failed, outcome unknown). May throw.
  virtual std::optional<std::uint64_t> call(MessageId saga, ProcessorId processor, AttemptId attempt,
                                            FencingToken token) = 0;
  // Ends the call begun as `attempt` (once; not when begin's caller crashed).
  virtual void end(AttemptId attempt, const ProtectResult& result) = 0;
};

// Failed: the delivery gave up with the saga unfinished; the message must be redelivered.
enum class SagaOutcome { Completed, Compensated, Failed };

class SagaOrchestrator {
 public:
  virtual ~SagaOrchestrator() = default;
  // Drives saga `saga` as far as this delivery can. May be called concurrently for one saga on several nodes.
  virtual SagaOutcome run(MessageId saga, SagaCalls& calls) = 0;
};

// Protects every call with `strategy` (which must outlive the orchestrator).
std::unique_ptr<SagaOrchestrator> stepwise_orchestrator(Strategy& strategy);

// The orchestrator of settings.kind: its entry's own (StrategyInfo::saga), its decisions checked against the
// entry's bases like make_strategy's, or stepwise over `strategy` (made by make_strategy for the same settings).
// `store`, `clock`, `hooks` and `strategy` must outlive it.
std::unique_ptr<SagaOrchestrator> make_saga_orchestrator(const ProtocolSection& settings, StoreClient& store,
                                                         Clock& clock, ProtocolHooks& hooks, sim::Rng rng,
                                                         Strategy& strategy);

}  // namespace lethe
