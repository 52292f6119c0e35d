// protocol.poll_with: waiting callers that run the start write again (as the real libraries poll) re-create an
// evicted record and own it, so one waiter reruns the effect where every reading waiter would.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "scenario/loader.hpp"
#include "world/world.hpp"

namespace poll_with_test {

lethe::ScenarioConfig library(const std::string& name, const std::vector<std::string>& sets = {}) {
  auto loaded = scenario::load_scenario(std::string(LETHE_SOURCE_DIR) + "/scenarios/" + name + ".toml", sets);
  if (auto* errors = std::get_if<std::vector<scenario::LoadError>>(&loaded)) {
    throw std::runtime_error(errors->front().message);
  }
  return std::get<lethe::ScenarioConfig>(std::move(loaded));
}

TEST(PollWith, StartWritePollsRerunFewerEffectsAfterEvictionThanReadPollsOnEverySeed) {
  const auto read = library("poll-read-after-eviction");
  const auto start_write = library("poll-read-after-eviction", {"protocol.poll_with=start-write"});
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    const lethe::RunResult by_read = lethe::run_world(read, seed);
    const lethe::RunResult by_write = lethe::run_world(start_write, seed);
    EXPECT_GT(by_write.duplicate_effects, 0u) << "seed " << seed;  // a rerun after eviction still happens
    EXPECT_LT(by_write.duplicate_effects, by_read.duplicate_effects) << "seed " << seed;
    EXPECT_EQ(by_write.lost_messages, 0u) << "seed " << seed;
  }
}

TEST(PollWith, StartWritePollsOnAConsistentStoreWithoutEvictionChangeNothingButTheTrace) {
  // Nothing evicted, nothing eventual: a re-run start write finds what a read would, so the counts agree.
  const auto read = library("slow-work-mpt-fixed");
  const auto start_write = library("slow-work-mpt-fixed", {"protocol.poll_with=start-write"});
  const lethe::RunResult by_read = lethe::run_world(read, 1);
  const lethe::RunResult by_write = lethe::run_world(start_write, 1);
  EXPECT_EQ(by_write.duplicate_effects, by_read.duplicate_effects);
  EXPECT_EQ(by_write.effects, by_read.effects);
  EXPECT_EQ(by_write.lost_messages, 0u);
}

TEST(PollWith, StartWritePollsGoToThePrimarySoALaggingReplicaMakesNoDuplicate) {
  const auto start_write = library("eventual-poll-reads", {"protocol.poll_with=start-write"});
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    EXPECT_EQ(lethe::run_world(start_write, seed).duplicate_effects, 0u) << "seed " << seed;
  }
}

}  // namespace poll_with_test
