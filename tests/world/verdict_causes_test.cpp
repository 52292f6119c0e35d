// Each duplicate is named by the window that opened it, read from the run's facts: one reproducer scenario per
// class of misnamed verdict (tests/world/verdicts/), run through the world and the oracle.
#include <gtest/gtest.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "scenario/loader.hpp"
#include "tests/world/verdict_scenarios.hpp"
#include "world/world.hpp"

namespace verdict_causes_test {

namespace fs = std::filesystem;

lethe::ScenarioConfig load(const std::string& name, const std::vector<std::string>& sets = {}) {
  return test_support::load_verdict(name, sets);
}

std::uint64_t count(const lethe::RunResult& r, lethe::Cause c) { return r.duplicates[static_cast<std::size_t>(c)]; }

std::string explanations(const lethe::RunResult& r) {
  std::string out;
  for (const auto& x : r.explanations) out += std::string(lethe::to_string(x.cause)) + ": " + x.because + "\n";
  return out;
}

TEST(VerdictCauses, ALostCompletionWriteIsCompletionLostNotTakeoverWhileAlive) {
  const lethe::RunResult r = lethe::run_world(load("completion-lost"), 1);
  EXPECT_EQ(r.duplicate_effects, 1u) << explanations(r);
  EXPECT_EQ(count(r, lethe::Cause::CompletionLost), 1u) << explanations(r);
  EXPECT_EQ(count(r, lethe::Cause::TakeoverWhileAlive), 0u) << explanations(r);
  ASSERT_FALSE(r.explanations.empty());
  EXPECT_NE(r.explanations.front().because.find("completion write never landed"), std::string::npos)
      << explanations(r);
}

TEST(VerdictCauses, AnInFlightRecordReplacedAsExpiredIsExpiredUnderLazyAndExactEviction) {
  for (const std::string eviction : {"lazy(max=48h)", "exact"}) {
    const lethe::RunResult r =
        lethe::run_world(load("expired-in-flight-lazy", {"store.ttl_eviction=" + eviction}), 1);
    EXPECT_GE(r.duplicate_effects, 1u) << eviction << "\n" << explanations(r);
    EXPECT_EQ(count(r, lethe::Cause::Expired), r.duplicate_effects) << eviction << "\n" << explanations(r);
  }
}

TEST(VerdictCauses, ACrashAfterTheEffectIsTheCauseEvenWhenTheRecordThenExpired) {
  const lethe::RunResult r = lethe::run_world(load("crash-then-ttl"), 1);
  EXPECT_GE(r.duplicate_effects, 1u) << explanations(r);
  EXPECT_EQ(count(r, lethe::Cause::CrashAfterEffect), r.duplicate_effects) << explanations(r);
  EXPECT_EQ(count(r, lethe::Cause::Expired), 0u) << explanations(r);
}

TEST(VerdictCauses, MaxWaitZeroRefusesWithoutCountingAWait) {
  const lethe::RunResult r = lethe::run_world(load("max-wait-zero"), 1);
  EXPECT_EQ(r.waits, 0u);
  EXPECT_EQ(r.wait_time.count, 0u);
  // The copies did find the record in flight (and were refused): the scenario meets the case.
  EXPECT_GT(r.deliveries, r.messages);
}

}  // namespace verdict_causes_test
