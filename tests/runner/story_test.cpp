// What a scenario shows (runner::scenario_story), read from its [expect] entries and the default invariants:
// the suite table's "shows" column.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "runner/execute.hpp"
#include "tests/runner/support.hpp"

namespace story_test {

runner::Story story(const std::string& name, const std::vector<std::string>& sets = {}) {
  return runner::scenario_story(test_support::load_config(
      std::filesystem::path(LETHE_SOURCE_DIR) / "scenarios" / (name + ".toml"), sets));
}

TEST(ScenarioStory, AnExpectationThatRequiresAViolationDemonstratesAFailure) {
  EXPECT_EQ(story("check-then-insert-race"), runner::Story::Failure);           // duplicates.unprotected >= 1
  EXPECT_EQ(story("dual-write-lost-event"), runner::Story::Failure);            // lost_messages >= 1
  EXPECT_EQ(story("memoize-failures"), runner::Story::Failure);                 // lost_messages >= 10%
  EXPECT_EQ(story("payload-changed-ignored"), runner::Story::Failure);          // payload_ignored >= 1
  EXPECT_EQ(story("saga-stuck-after-crash"), runner::Story::Failure);           // saga_stuck >= 1
  EXPECT_EQ(story("check-then-insert-vs-mnemosyne", {"expect.linearizable=== 0"}), runner::Story::Failure);
}

TEST(ScenarioStory, ViolationsHeldAtZeroByEntriesOrDefaultsShowAFix) {
  EXPECT_EQ(story("check-then-insert-vs-mnemosyne"), runner::Story::Fix);  // duplicate_effects == 0
  EXPECT_EQ(story("payload-check-fingerprint"), runner::Story::Fix);       // payload_mismatches is no violation
  EXPECT_EQ(story("kafka-gc-pause-evicted-mnemosyne"), runner::Story::Fix);  // commit_failed >= 1 is no violation
}

TEST(ScenarioStory, ABoundAboveZeroWithoutARequiredViolationIsABoundedFix) {
  EXPECT_EQ(story("ttl-lazy-eviction"), runner::Story::BoundedFix);             // duplicate_effects <= 2
  EXPECT_EQ(story("saga-compensation-race-fixed"), runner::Story::BoundedFix);  // duplicate_effects <= 2%
  EXPECT_EQ(story("check-then-insert-vs-mnemosyne", {"expect.duplicate_effects=<= 0.5"}), runner::Story::Fix)
      << "a bound below one duplicate allows none";
}

TEST(ScenarioStory, NoDefaultsAndNoViolationNamedIsUncheckedAndTheDefaultsAloneShowAFix) {
  lethe::ScenarioConfig config =
      test_support::load_config(std::filesystem::path(LETHE_SOURCE_DIR) / "scenarios" / "check-then-insert-race.toml");
  config.expect.erase(std::remove_if(config.expect.begin(), config.expect.end(),
                                     [](const lethe::Expectation& e) { return e.key != "deliveries"; }),
                      config.expect.end());
  EXPECT_EQ(runner::scenario_story(config), runner::Story::Fix) << "the default invariants hold every violation at 0";
  config.expect_defaults = false;
  EXPECT_EQ(runner::scenario_story(config), runner::Story::Unchecked);
  EXPECT_EQ(runner::to_string(runner::Story::Unchecked), "unchecked");
}

}  // namespace story_test
