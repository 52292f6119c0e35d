// protocol/registry.hpp — the dedupe strategies by name: one process-wide registry of StrategyInfo entries.
//
// A scenario names its strategy with protocol.kind; that word is a StrategyInfo's `name`. Everything the rest of
// lethe needs to know about a strategy comes from its entry, never from its name: the loader's allowed words and
// required keys, make_strategy's factory, the decision bases it may report, and the duplicate windows it
// documents (the causes, core/result.hpp, its duplicates may be classed under, and when each one is open).
//
// The registry holds the built-ins (protocol/builtin_strategies.hpp, in the order that list gives) from its first
// use on; register_strategy appends one more. strategy_names() answers in registration order: the built-ins
// first, as their list gives them, then the others in the order they were registered.
//
// REQUIRES: every register_strategy call happens before any run (before loading a scenario, run_world, or
// run_live) and on one thread. Registration is not thread-safe against concurrent runs or lookups; lookups alone
// (many runs on many threads) are safe. An entry lives until the process ends (references stay valid).
// Code linking the library (an out-of-tree project included) registers its own strategy this way and then names
// it in a scenario like a built-in.
//
// Every key a strategy reads is declared in its entry (`keys`): the loader validates [protocol] against the
// chosen kind's keys (a key only other kinds read is an error naming them) and hands the factory the values.
//
// Checks that make a broken promise loud (StrategyContractError, a std::logic_error: exit code 3 in the runner):
//   - make_strategy's strategy reports a decision whose basis is not in the entry's `bases` (thrown in a
//     simulated fiber, it reaches run_world's caller as sim::InternalError);
//   - the oracle (check/oracle.hpp) classes a duplicate under a cause that no window of the entry names
//     (sink_retry aside: the sink's own retries are no strategy's, and every strategy may see them).
// A cause the entry names but whose windows are closed under the run's settings is a finding, not a bug: the
// oracle counts it like any other and live mode counts it as unexplained (live/run.hpp).
//
// Does not: parse scenarios, know any strategy by name, or run anything but the factory.
#pragma once

#include <bitset>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.hpp"
#include "core/result.hpp"
#include "protocol/env.hpp"
#include "protocol/strategies.hpp"
#include "sim/random.hpp"

namespace lethe {

// A strategy broke what its registry entry promises (or the entry promises too little): lethe's bug or the
// strategy's, never the scenario's.
struct StrategyContractError : std::logic_error {
  using std::logic_error::logic_error;
};

// What opens a duplicate window.
enum class WindowOpens : std::uint8_t {
  Always,         // the design: any run may show it (no guarantee, a crash, the ttl)
  WithSettings,   // only under the settings DuplicateWindow::open_with accepts (e.g. a takeover mode)
  WithSlowOwner,  // an owner alive but holding its record in flight for slow_owner_key or more, as a run
                  // observed it (slow work, a pause, a stalled completion): live mode's evidence
  BrokenStore,    // only when the store broke its contract (a conditional write that did not hold): a finding
};

// One way a strategy lets a duplicate through, and the cause the oracle gives it.
struct DuplicateWindow {
  Cause cause = Cause::Unprotected;
  WindowOpens opens = WindowOpens::Always;
  std::function<bool(const ProtocolSection&)> open_with;  // WithSettings only: the settings that open it
  std::string description;                                // one line: how the duplicate happens
};

class SagaOrchestrator;  // protocol/saga.hpp
using SagaFactory = std::function<std::unique_ptr<SagaOrchestrator>(const ProtocolSection& settings,
                                                                    StoreClient& store, Clock& clock,
                                                                    ProtocolHooks& hooks, sim::Rng rng)>;

using StrategyFactory = std::function<std::unique_ptr<Strategy>(const ProtocolSection& settings, StoreClient& store,
                                                                Clock& clock, ProtocolHooks& hooks, sim::Rng rng)>;

struct StrategyInfo {
  std::string name;         // the protocol.kind word: lowercase letters, digits and '-', not empty
  std::string description;  // one line
  // The [protocol] keys it reads (kind aside): the loader accepts these and no other, fills every one (the value
  // written, else its default) and refuses a file that leaves a required one out. A required Duration key must
  // also be positive (make_strategy checks it).
  std::vector<SettingKey> keys;
  // The required Duration key a slow owner is measured against (an owner holding its record in flight this long
  // or longer; live mode's evidence for WithSlowOwner windows).
  std::string slow_owner_key = "max_processing_time";
  StrategyFactory factory;  // REQUIRES of it: settings holds every key of `keys` (make_strategy checks them)
  std::vector<Basis> bases;              // every basis it may report through ProtocolHooks::decided
  std::vector<DuplicateWindow> windows;  // every window its duplicates may come through (sink_retry aside)
  // The effect is the Table::Domain mutation of a store transaction, not a call of `effect`: the simulated world
  // counts executions from the store, and live mode (no transactions) refuses the strategy.
  bool effect_in_store_transaction = false;
  // Its decisions are inferred from what lethe observes (protocol.kind "external"): an execution without one is
  // not_attributable (the observations cannot tell which clause broke), not unprotected.
  bool decisions_inferred = false;
  // Set for a strategy that orchestrates whole sagas itself (protocol/saga.hpp); its `factory` is then for
  // plain messages, which the loader refuses for it (saga.steps must be set). Empty: a saga run protects each
  // step and compensation with the strategy made by `factory`.
  SagaFactory saga;
  // Set for a strategy that keeps one record for all of a message's processors, under a processor id of its own
  // (saga-state: the saga's lease): a counterfactual replay closing a window of any processor of the message acts
  // on that record (world/counterfactual.hpp). Unset: each (message, processor) has its own record.
  std::optional<ProcessorId> message_record_processor;
};

// Adds a strategy. Throws std::invalid_argument when the name is taken or malformed, the factory is missing, a
// key is malformed (a name of lowercase letters, digits and '_', not "kind", declared once; a default of its
// language's type; a Word key with words and a default among them), a window names sink_retry or has no
// open_with although it opens WithSettings, or a window opens WithSlowOwner without a required Duration key
// named slow_owner_key (a slow owner is measured against it).
void register_strategy(StrategyInfo info);

// The entry named `name`, or nullptr.
const StrategyInfo* find_strategy(std::string_view name);

// The entry named `name`; throws std::invalid_argument (naming the registered ones) when there is none.
const StrategyInfo& strategy_info(std::string_view name);

// Every registered name, in registration order (the built-ins first).
std::vector<std::string> strategy_names();

bool declares_basis(const StrategyInfo& strategy, Basis basis);

// The key `name` of `strategy`, or nullptr when it does not read it.
const SettingKey* find_key(const StrategyInfo& strategy, std::string_view name);

// The registered strategies that read the [protocol] key `name`, in registration order.
std::vector<std::string> strategies_reading(std::string_view name);

// `settings` with every key of its kind's entry that it leaves out and that has a default set to that default.
// REQUIRES: settings.kind is registered.
ProtocolSection with_defaults(const ProtocolSection& settings);

// Why `settings` cannot make its kind's strategy ("" when it can): a key the kind does not read, a value of the
// wrong type or below its key's min, a Word not among its words, a required key left out (or not positive).
// REQUIRES: settings.kind is registered. Live mode and make_strategy check through it.
std::string settings_problem(const ProtocolSection& settings);

// Forwards a strategy's hook calls, throwing StrategyContractError on a decision basis its entry does not
// declare; the error names the id as `subject` ("message", "saga"). Holds references: `info` and `hooks` must
// outlive it.
class DeclaredBasesHooks final : public ProtocolHooks {
 public:
  DeclaredBasesHooks(const StrategyInfo& info, ProtocolHooks& hooks, std::string_view subject = "message");

  void crash_point(CrashPoint point, MessageId id, AttemptId attempt) override;
  void decided(const DecisionNote& note) override;
  void waited(MessageId id, ProcessorId processor, AttemptId attempt, sim::Duration waited) override;
  void completed(MessageId id, ProcessorId processor, AttemptId attempt, bool applied) override;
  void released(MessageId id, ProcessorId processor, AttemptId attempt, bool applied) override;
  void payload_refused(MessageId id, ProcessorId processor, AttemptId attempt) override;

 private:
  const StrategyInfo& info_;
  ProtocolHooks& hooks_;
  std::string_view subject_;
  std::bitset<256> declared_;  // indexed by the Basis value (one byte): decided() is on every attempt's path
};

bool declares_cause(const StrategyInfo& strategy, Cause cause);

// Whether a window of `strategy` for `cause` is open under `settings` (Always, or WithSettings accepting them),
// or, when `slow_owner`, opens WithSlowOwner. BrokenStore windows are never open.
bool window_open(const StrategyInfo& strategy, Cause cause, const ProtocolSection& settings, bool slow_owner);

// Whether some window of `strategy` opens WithSlowOwner (its judgement needs that evidence).
bool needs_slow_owner_evidence(const StrategyInfo& strategy);

}  // namespace lethe
