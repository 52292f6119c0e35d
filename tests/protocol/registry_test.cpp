// Tests of protocol/registry.hpp: names, refusals, the basis check of make_strategy, and a strategy registered at
// runtime (tests/protocol/run_always_strategy.hpp) that a scenario text names, run_world runs and the oracle
// judges by its declared duplicate windows.
#include "protocol/registry.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "run_always_strategy.hpp"
#include "scenario/loader.hpp"
#include "sim/simulation.hpp"
#include "world/world.hpp"

namespace registry_test {

using lethe::Basis;
using lethe::Cause;
using lethe::WindowOpens;
using registry_test::ensure_registered;
using registry_test::run_always_entry;
using registry_test::window;

const std::vector<std::string> kBuiltIns = {"none", "check-then-insert", "record-after", "mnemosyne", "inbox"};

// ---------------------------------------------------------------- doubles for make_strategy

class FixedClock final : public lethe::Clock {
 public:
  sim::Time now() override { return 0; }
  void sleep(sim::Duration /*duration*/) override {}
};

class SilentStore final : public lethe::StoreClient {
 public:
  std::optional<lethe::Reply> execute(const lethe::Op& /*op*/) override { return std::nullopt; }
};

class RecordingHooks final : public lethe::ProtocolHooks {
 public:
  std::vector<Basis> bases;
  void crash_point(lethe::CrashPoint /*point*/, lethe::MessageId /*id*/, lethe::AttemptId /*attempt*/) override {}
  void decided(const lethe::DecisionNote& note) override { bases.push_back(note.basis); }
  void waited(lethe::MessageId, lethe::ProcessorId, lethe::AttemptId, sim::Duration) override {}
  void completed(lethe::MessageId, lethe::ProcessorId, lethe::AttemptId, bool) override {}
};

lethe::ProtocolSection settings_of(const std::string& kind) {
  lethe::ProtocolSection settings;
  settings.kind = kind;
  settings.settings.set("ttl", sim::Duration{sim::kHour});
  return settings;
}

// ---------------------------------------------------------------- names

TEST(Registry, RefusesASecondStrategyUnderATakenName) {
  EXPECT_THROW(lethe::register_strategy(run_always_entry("mnemosyne", Basis::Absent, {Basis::Absent}, {})),
               std::invalid_argument);
  ensure_registered(run_always_entry("registry-test-once", Basis::Absent, {Basis::Absent}, {}));
  EXPECT_THROW(lethe::register_strategy(run_always_entry("registry-test-once", Basis::Absent, {Basis::Absent}, {})),
               std::invalid_argument);
  const std::vector<std::string> names = lethe::strategy_names();
  EXPECT_EQ(std::count(names.begin(), names.end(), "mnemosyne"), 1);
  EXPECT_EQ(std::count(names.begin(), names.end(), "registry-test-once"), 1);
  std::vector<std::string> required;
  for (const lethe::SettingKey& key : lethe::strategy_info("mnemosyne").keys) {
    if (!key.default_value) required.push_back(key.name);
  }
  EXPECT_EQ(required, (std::vector<std::string>{"max_processing_time", "ttl"}));
}

TEST(Registry, FindsNothingUnderAnUnknownNameAndMakeStrategyRefusesIt) {
  EXPECT_EQ(lethe::find_strategy("no-such-strategy"), nullptr);
  ASSERT_NE(lethe::find_strategy("inbox"), nullptr);
  EXPECT_EQ(lethe::find_strategy("inbox")->name, "inbox");
  try {
    lethe::strategy_info("no-such-strategy");
    ADD_FAILURE() << "strategy_info found an unknown name";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("\"no-such-strategy\""), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("mnemosyne"), std::string::npos) << e.what();  // names the known ones
  }
  FixedClock clock;
  SilentStore store;
  RecordingHooks hooks;
  EXPECT_THROW(lethe::make_strategy(settings_of("no-such-strategy"), store, clock, hooks, sim::Rng(1)),
               std::invalid_argument);
}

TEST(Registry, NamesTheBuiltInsFirstInTheirListOrderThenTheRegisteredOnesInTheirOrder) {
  ensure_registered(run_always_entry("registry-test-order-z", Basis::Absent, {Basis::Absent}, {}));
  ensure_registered(run_always_entry("registry-test-order-a", Basis::Absent, {Basis::Absent}, {}));
  const std::vector<std::string> names = lethe::strategy_names();
  ASSERT_GE(names.size(), kBuiltIns.size() + 2);
  EXPECT_EQ(std::vector<std::string>(names.begin(), names.begin() + 5), kBuiltIns);
  const auto z = std::find(names.begin(), names.end(), "registry-test-order-z");
  const auto a = std::find(names.begin(), names.end(), "registry-test-order-a");
  ASSERT_NE(z, names.end());
  ASSERT_NE(a, names.end());
  EXPECT_LT(z, a);  // registration order, not sorted
}

TEST(Registry, RefusesAnEntryWhosePromisesCannotBeChecked) {
  const auto refused = [](lethe::StrategyInfo info) {
    EXPECT_THROW(lethe::register_strategy(std::move(info)), std::invalid_argument);
  };
  lethe::StrategyInfo entry = run_always_entry("registry-test-refused", Basis::Absent, {Basis::Absent}, {});
  lethe::StrategyInfo bad = entry;
  bad.name = "Registry Test";
  refused(bad);
  bad = entry;
  bad.name.clear();
  refused(bad);
  bad = entry;
  bad.factory = nullptr;
  refused(bad);
  bad = entry;
  bad.keys.push_back(bad.keys.front());  // ttl declared twice
  refused(bad);
  bad = entry;
  bad.keys.front().name = "kind";  // the key every strategy shares
  refused(bad);
  bad = entry;
  bad.keys.front().name = "Run-Label";
  refused(bad);
  bad = entry;
  bad.keys.back().default_value = lethe::SettingValue{true};  // a Word key with a Boolean default
  refused(bad);
  bad = entry;
  bad.keys.back().default_value = lethe::SettingValue{std::string("quiet")};  // not one of its words
  refused(bad);
  bad = entry;
  bad.keys.back().words.clear();
  refused(bad);
  bad = entry;
  bad.windows = {window(Cause::SinkRetry, WindowOpens::Always)};
  refused(bad);
  bad = entry;
  bad.windows = {window(Cause::HerdTakeover, WindowOpens::WithSettings)};  // no open_with
  refused(bad);
  bad = entry;
  bad.windows = {window(Cause::TakeoverWhileAlive, WindowOpens::WithSlowOwner)};  // max_processing_time not required
  refused(bad);
  EXPECT_EQ(lethe::find_strategy("registry-test-refused"), nullptr);
}

// ---------------------------------------------------------------- make_strategy

TEST(Registry, MakeStrategyChecksTheRequiredKeysAndPassesDeclaredBasesThrough) {
  ensure_registered(run_always_entry("registry-test-declared", Basis::Absent, {Basis::Absent}, {}));
  FixedClock clock;
  SilentStore store;
  RecordingHooks hooks;
  lethe::ProtocolSection settings = settings_of("registry-test-declared");
  settings.settings.erase("ttl");
  EXPECT_THROW(lethe::make_strategy(settings, store, clock, hooks, sim::Rng(1)), std::invalid_argument);
  settings.settings.set("ttl", sim::Duration{0});
  EXPECT_THROW(lethe::make_strategy(settings, store, clock, hooks, sim::Rng(1)), std::invalid_argument);
  settings.settings.set("ttl", sim::Duration{sim::kHour});
  settings.settings.set("run_label", std::string("quiet"));  // not one of its words
  EXPECT_THROW(lethe::make_strategy(settings, store, clock, hooks, sim::Rng(1)), std::invalid_argument);
  settings.settings.erase("run_label");  // its default, "plain", is filled in
  const auto strategy = lethe::make_strategy(settings, store, clock, hooks, sim::Rng(1));
  int runs = 0;
  const lethe::ProtectResult result = strategy->protect(1, 0, 1, [&runs](lethe::FencingToken) -> std::optional<std::uint64_t> {
    return ++runs;
  });
  EXPECT_EQ(result.outcome, lethe::Outcome::Executed);
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(hooks.bases, std::vector<Basis>{Basis::Absent});
}

TEST(Registry, ADecisionBasisTheEntryDoesNotDeclareIsAContractError) {
  ensure_registered(run_always_entry("registry-test-wrong-basis", Basis::Unprotected, {Basis::Absent}, {}));
  FixedClock clock;
  SilentStore store;
  RecordingHooks hooks;
  const auto strategy =
      lethe::make_strategy(settings_of("registry-test-wrong-basis"), store, clock, hooks, sim::Rng(1));
  int runs = 0;
  EXPECT_THROW(strategy->protect(1, 0, 1, [&runs](lethe::FencingToken) -> std::optional<std::uint64_t> { return ++runs; }),
               lethe::StrategyContractError);
  EXPECT_EQ(runs, 0);            // refused when it was reported, before the effect
  EXPECT_TRUE(hooks.bases.empty());  // and never passed on
}

// ---------------------------------------------------------------- a runtime strategy in a scenario

// Clients retry when our acknowledgement is lost: every retry of a processed message runs the effect again.
std::string scenario_text(const std::string& kind, bool with_ttl) {
  return "[scenario]\nname = \"registry-runtime-strategy\"\n\n"
         "[topology]\nsource = \"clients\"\nconsumers = 2\nclients = 4\n\n"
         "[workload]\nmessages = 60\nrate = \"20/s\"\nprocessing_time = \"10ms\"\n\n"
         "[network]\nack_loss = 0.3\nrpc_timeout = \"200ms\"\n\n"
         "[protocol]\nkind = \"" + kind + "\"\n" + (with_ttl ? "ttl = \"1h\"\n" : "");
}

std::variant<lethe::ScenarioConfig, std::vector<scenario::LoadError>> load(const std::string& text) {
  return scenario::load_scenario_text(text, "test.toml", ".", {});
}

std::string errors_of(const std::variant<lethe::ScenarioConfig, std::vector<scenario::LoadError>>& loaded) {
  if (!std::holds_alternative<std::vector<scenario::LoadError>>(loaded)) return "(loaded)";
  std::string text;
  for (const scenario::LoadError& error : std::get<std::vector<scenario::LoadError>>(loaded)) {
    text += error.message + "\n";
  }
  return text;
}

// A strategy registered at runtime declares a key of its own (run_label) as the built-ins do: the loader reads it
// for that kind only, fills its default, checks its words, and refuses it under a kind that does not read it.
TEST(RegistryWorld, ARuntimeStrategysOwnKeyIsReadForItAndRefusedForAKindThatDoesNotReadIt) {
  ensure_registered(run_always_entry("registry-test-own-key", Basis::Absent, {Basis::Absent}, {}));
  const std::string base = scenario_text("registry-test-own-key", true);
  const auto defaulted = load(base);
  ASSERT_TRUE(std::holds_alternative<lethe::ScenarioConfig>(defaulted)) << errors_of(defaulted);
  EXPECT_EQ(std::get<lethe::ScenarioConfig>(defaulted).protocol.settings.get<std::string>("run_label"), "plain");
  const auto loud = load(base + "run_label = \"loud\"\n");
  ASSERT_TRUE(std::holds_alternative<lethe::ScenarioConfig>(loud)) << errors_of(loud);
  EXPECT_EQ(std::get<lethe::ScenarioConfig>(loud).protocol.settings.get<std::string>("run_label"), "loud");
  EXPECT_NE(errors_of(load(base + "run_label = \"quiet\"\n")).find("allowed: \"plain\", \"loud\""),
            std::string::npos);
  // Under mnemosyne (line 17 of the text: [protocol] ends it), the key is another kind's.
  const std::string mnemosyne = scenario_text("mnemosyne", true) + "max_processing_time = \"1s\"\nrun_label = \"loud\"\n";
  const std::string refused = errors_of(load(mnemosyne));
  // (Every run_always entry this process registered reads it: the list names them all.)
  EXPECT_NE(refused.find("protocol.run_label: found a key that protocol.kind \"mnemosyne\" does not read (read by "),
            std::string::npos)
      << refused;
  EXPECT_NE(refused.find("\"registry-test-own-key\""), std::string::npos) << refused;
  EXPECT_EQ(refused.rfind("test.toml:", 0), 0u) << refused;
}

TEST(RegistryWorld, ARuntimeStrategyLoadsFromAScenarioTextRunsAndIsJudgedByItsWindows) {
  ensure_registered(run_always_entry("registry-test-run-always", Basis::Absent, {Basis::Absent},
                                     {window(Cause::Unprotected, WindowOpens::Always),
                                      window(Cause::CrashAfterEffect, WindowOpens::Always)}));
  // The loader knows the name and asks the entry what it requires.
  const auto without_ttl = load(scenario_text("registry-test-run-always", false));
  ASSERT_TRUE(std::holds_alternative<std::vector<scenario::LoadError>>(without_ttl));
  const auto& errors = std::get<std::vector<scenario::LoadError>>(without_ttl);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].message.find("protocol.ttl: missing"), std::string::npos) << errors[0].message;
  EXPECT_NE(errors[0].message.find("required when protocol.kind is \"registry-test-run-always\""), std::string::npos)
      << errors[0].message;

  const auto loaded = load(scenario_text("registry-test-run-always", true));
  ASSERT_TRUE(std::holds_alternative<lethe::ScenarioConfig>(loaded));
  const lethe::ScenarioConfig& config = std::get<lethe::ScenarioConfig>(loaded);
  EXPECT_EQ(config.protocol.kind, "registry-test-run-always");
  const lethe::RunResult result = lethe::run_world(config, 1);
  // Lost responses (ack_loss covers the provider's too) make the attempts give up after their effect, and
  // redeliveries race: the two windows declared, and nothing else.
  EXPECT_GT(result.duplicate_effects, 0u);
  EXPECT_EQ(result.duplicates[static_cast<std::size_t>(Cause::Unprotected)] +
                result.duplicates[static_cast<std::size_t>(Cause::CrashAfterEffect)],
            result.duplicate_effects);
}

TEST(RegistryWorld, ADuplicateUnderACauseOutsideTheDeclaredWindowsIsAContractError) {
  ensure_registered(run_always_entry("registry-test-undeclared-cause", Basis::Absent, {Basis::Absent},
                                     {window(Cause::Expired, WindowOpens::Always)}));
  const auto loaded = load(scenario_text("registry-test-undeclared-cause", true));
  ASSERT_TRUE(std::holds_alternative<lethe::ScenarioConfig>(loaded));
  try {
    lethe::run_world(std::get<lethe::ScenarioConfig>(loaded), 1);
    ADD_FAILURE() << "the oracle accepted a cause the strategy does not declare";
  } catch (const lethe::StrategyContractError& e) {
    EXPECT_NE(std::string(e.what()).find("registry-test-undeclared-cause"), std::string::npos) << e.what();
  }
}

TEST(RegistryWorld, ADecisionBasisOutsideTheDeclaredSetStopsTheRunWithAnInternalError) {
  ensure_registered(run_always_entry("registry-test-undeclared-basis", Basis::Unprotected, {Basis::Absent},
                                     {window(Cause::Unprotected, WindowOpens::Always)}));
  const auto loaded = load(scenario_text("registry-test-undeclared-basis", true));
  ASSERT_TRUE(std::holds_alternative<lethe::ScenarioConfig>(loaded));
  try {
    lethe::run_world(std::get<lethe::ScenarioConfig>(loaded), 1);
    ADD_FAILURE() << "a decision basis the strategy does not declare went through";
  } catch (const sim::InternalError& e) {  // thrown in a fiber: the kernel reports it (exit code 3 in the runner)
    EXPECT_NE(std::string(e.what()).find("\"unprotected\""), std::string::npos) << e.what();
  }
}

}  // namespace registry_test
