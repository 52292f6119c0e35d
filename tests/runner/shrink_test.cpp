// lethe shrink: a smaller scenario that still fails the same expectation at the same seed.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include "runner/execute.hpp"
#include "scenario/loader.hpp"
#include "runner/shrink.hpp"
#include "tests/runner/support.hpp"

namespace fs = std::filesystem;

namespace shrink_test {

using namespace test_support;  // shell, run_lethe, read_file, load_config (tests/runner/support.hpp)
fs::path temp_dir(const std::string& name) { return test_support::temp_dir("shrink-test", name); }

lethe::ScenarioConfig load(const fs::path& file, const std::vector<std::string>& sets) {
  return test_support::load_config(file, sets);
}

const lethe::ExpectationResult* expectation(const lethe::RunResult& result, const std::string& key) {
  for (const auto& x : result.expectations) {
    if (x.key == key) return &x;
  }
  return nullptr;
}

const fs::path kCrashWindow = fs::path(LETHE_SOURCE_DIR) / "scenarios" / "crash-window-after-effect.toml";

TEST(ShrinkSlow, CrashWindowFailingZeroDuplicatesShrinksAndKeepsTheCrashPoint) {
  // crash-window-after-effect has duplicates from crashes after the effect; demanding none fails at seed 1.
  const auto config = load(kCrashWindow, {"expect.duplicate_effects=== 0"});
  runner::ShrinkOptions options;
  options.seed = 1;
  const auto result = runner::shrink_scenario(config, options);
  ASSERT_TRUE(result.original_fails) << result.why;
  EXPECT_EQ(result.original.key, "duplicate_effects");
  EXPECT_FALSE(result.final.ok);
  EXPECT_LT(result.shrunk.workload.messages, config.workload.messages);
  EXPECT_LE(result.shrunk.topology.consumers, config.topology.consumers);
  EXPECT_GT(result.shrunk.faults.crash_points.after_effect_before_complete, 0.0)
      << "the crash point is the cause: switching it off makes the expectation hold, so it stays";
  EXPECT_FALSE(result.steps.empty());
  EXPECT_LE(result.runs, options.max_runs);
  // Deterministic: the same search again gives the same scenario.
  const auto again = runner::shrink_scenario(config, options);
  EXPECT_EQ(scenario::render_scenario_toml(again.shrunk), scenario::render_scenario_toml(result.shrunk));
}

TEST(ShrinkSlow, CliWritesAScenarioThatStillFailsTheSameExpectationWhenLoadedAndRun) {
  const fs::path dir = temp_dir("cli");
  const fs::path out = dir / "shrunk.toml";
  const auto o = run_lethe("shrink scenarios/crash-window-after-effect.toml --seed 2 --set 'expect.duplicate_effects=== 0' "
                       "--out " + out.string());
  ASSERT_EQ(o.exit_code, 0) << o.out;
  ASSERT_TRUE(fs::exists(out)) << o.out;
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  const std::string file = text.str();
  EXPECT_EQ(file.rfind("# Shrunk by lethe shrink from scenarios/crash-window-after-effect.toml at seed 2.", 0), 0u)
      << file.substr(0, 300);
  EXPECT_NE(file.find("# Failing expectation: duplicate_effects == 0"), std::string::npos) << file.substr(0, 600);
  // Loaded back and run at the same seed, it fails the same expectation, and it is smaller.
  const auto original = load(kCrashWindow, {"expect.duplicate_effects=== 0"});
  const auto shrunk = load(out, {});
  EXPECT_LT(shrunk.workload.messages, original.workload.messages);
  const auto run = runner::run_seed(shrunk, 2);
  ASSERT_TRUE(run.error.empty()) << run.error;
  const auto* x = expectation(run.result, "duplicate_effects");
  ASSERT_NE(x, nullptr);
  EXPECT_FALSE(x->ok) << "still fails at seed 2";
  EXPECT_GT(x->got, 0.0);
  // And through the CLI: `lethe run` exits 1 on it.
  EXPECT_EQ(run_lethe("run " + out.string() + " --seed 2").exit_code, 1);
  fs::remove_all(dir);
}

TEST(Shrink, SeedThatDoesNotFailExitsTwo) {
  const fs::path dir = temp_dir("passing");
  const auto o = run_lethe("shrink scenarios/crash-window-after-effect.toml --seed 1 --out " + (dir / "x.toml").string());
  EXPECT_EQ(o.exit_code, 2) << o.out;
  EXPECT_NE(o.out.find("does not fail"), std::string::npos) << o.out;
  EXPECT_FALSE(fs::exists(dir / "x.toml"));
  const auto named = run_lethe("shrink scenarios/crash-window-after-effect.toml --seed 1 --expect lost_messages "
                           "--set 'expect.duplicate_effects=== 0' --out " + (dir / "y.toml").string());
  EXPECT_EQ(named.exit_code, 2) << "--expect names an expectation that holds: " << named.out;
  EXPECT_EQ(run_lethe("shrink scenarios/no-such-file.toml --seed 1").exit_code, 2);
  EXPECT_EQ(run_lethe("shrink scenarios/crash-window-after-effect.toml").exit_code, 2) << "--seed is required";
  fs::remove_all(dir);
}

TEST(Shrink, FaultKindsThatDoNotMatterAreSwitchedOff) {
  // The impossible expectation fails whatever the configuration, so every reduction is kept: the search goes
  // all the way down, and each fault kind is switched off.
  auto config = load(fs::path(LETHE_SOURCE_DIR) / "scenarios" / "mnemosyne-lossy-crashes.toml",
                     {"expect.lost_messages=< 0"});
  runner::ShrinkOptions options;
  options.seed = 3;
  const auto result = runner::shrink_scenario(config, options);
  ASSERT_TRUE(result.original_fails) << result.why;
  EXPECT_EQ(result.original.key, "lost_messages");
  EXPECT_EQ(result.shrunk.workload.messages, 1);
  EXPECT_EQ(result.shrunk.topology.consumers, 1);
  EXPECT_EQ(result.shrunk.network.loss, 0.0);
  EXPECT_EQ(result.shrunk.network.ack_loss, 0.0);
  EXPECT_TRUE(result.shrunk.network.partitions.empty());
  EXPECT_EQ(result.shrunk.faults.crash_points.after_start_before_effect, 0.0);
  EXPECT_LT(result.shrunk.run.duration, config.run.duration);
  const std::string text = runner::shrunk_scenario_text(result, "scenarios/mnemosyne-lossy-crashes.toml", 3, {});
  EXPECT_NE(text.find("#   network.loss = 0"), std::string::npos) << text.substr(0, 800);
}

}  // namespace shrink_test
