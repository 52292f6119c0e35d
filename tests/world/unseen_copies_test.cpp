// What a run did not see is counted, not dropped: message copies due after the run ended (undelivered, with the
// latest due time) and deliveries a consumer still held unanswered at the end (unanswered). Reproducers in
// tests/world/verdicts/.
#include <gtest/gtest.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "scenario/loader.hpp"
#include "sim/time.hpp"
#include "tests/world/verdict_scenarios.hpp"
#include "world/world.hpp"

namespace unseen_copies_test {

namespace fs = std::filesystem;

lethe::ScenarioConfig load(const std::string& name, const std::vector<std::string>& sets = {}) {
  return test_support::load_verdict(name, sets);
}

std::uint64_t copies_published(const lethe::RunResult& r) {
  const auto it = r.coverage.find("redelivery.copy");
  return it == r.coverage.end() ? 0 : it->second;
}

constexpr std::int64_t kDay = 86'400'000'000'000;

// The copies a seed schedules do not depend on run.duration (one draw per message, in publishing order): a run
// long enough to deliver every copy counts them all, and a short one delivers some and counts the rest.
TEST(UnseenCopies, EveryScheduledCopyIsEitherPublishedOrCountedUndelivered) {
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    const lethe::RunResult whole = lethe::run_world(load("late-redelivery-after-run", {"run.duration=4d"}), seed);
    ASSERT_EQ(whole.undelivered, 0u) << "seed " << seed;
    ASSERT_GT(copies_published(whole), 0u) << "seed " << seed;
    const lethe::RunResult cut = lethe::run_world(load("late-redelivery-after-run"), seed);
    EXPECT_GT(cut.undelivered, 0u) << "seed " << seed;
    EXPECT_EQ(copies_published(cut) + cut.undelivered, copies_published(whole)) << "seed " << seed;
    // The latest due time is past the run's end and within the 3 days the copies are drawn from.
    EXPECT_GT(cut.undelivered_latest, cut.sim_time) << "seed " << seed;
    EXPECT_LE(cut.undelivered_latest, 3 * kDay) << "seed " << seed;
  }
}

// The defect this field exists for: cut short, ttl = 1d looks safe; run long enough to deliver the late copies,
// the ones due after the TTL ran out are expired duplicates.
TEST(UnseenCopies, ARunLongEnoughForTheLatestCopyShowsTheDuplicatesACutRunHid) {
  const lethe::RunResult cut = lethe::run_world(load("late-redelivery-after-run"), 1);
  EXPECT_EQ(cut.duplicate_effects, 0u);
  ASSERT_GT(cut.undelivered, 0u);
  const std::int64_t days = (cut.undelivered_latest + kDay - 1) / kDay;
  const lethe::RunResult whole =
      lethe::run_world(load("late-redelivery-after-run", {"run.duration=" + std::to_string(days) + "d"}), 1);
  EXPECT_EQ(whole.undelivered, 0u);
  EXPECT_GT(whole.duplicates[static_cast<std::size_t>(lethe::Cause::Expired)], 100u);
}

// A consumer that dies before its effect leaves its queue message undeleted: the queue hands it out again when
// its visibility timeout expires. When that is after the end, the message is undelivered (with that due time),
// not lost; a run long enough to reach the timeout delivers it.
TEST(UnseenCopies, AQueueMessageWhoseVisibilityTimeoutExpiresAfterTheEndIsUndeliveredNotLost) {
  const std::vector<std::string> sets = {"topology.visibility_timeout=3h",
                                         "faults.crash_points.after_start_before_effect=0.05"};
  const lethe::RunResult cut = lethe::run_world(test_support::load_library("queue-visibility-timeout-mnemosyne", sets), 1);
  EXPECT_EQ(cut.lost_messages, 0u);
  ASSERT_GT(cut.undelivered, 0u);
  EXPECT_GT(cut.undelivered_latest, cut.sim_time);
  EXPECT_LE(cut.undelivered_latest, cut.sim_time + 3 * 3'600'000'000'000);
  std::vector<std::string> longer = sets;
  longer.push_back("run.duration=4h");
  const lethe::RunResult whole =
      lethe::run_world(test_support::load_library("queue-visibility-timeout-mnemosyne", longer), 1);
  EXPECT_EQ(whole.undelivered, 0u);
  EXPECT_EQ(whole.lost_messages, 0u);
  EXPECT_EQ(whole.messages, cut.messages);
}

TEST(UnseenCopies, MessagesNotYetPublishedWhenTheRunEndsAreUndeliveredToo) {
  // 1,000 messages at 10/s take 100 s; without a drain the run stops at 30 s.
  const lethe::RunResult r = lethe::run_world(
      load("late-redelivery-after-run", {"run.duration=30s", "run.drain=false", "workload.redelivery.fraction=0"}), 1);
  EXPECT_GE(r.undelivered, 690u);
  EXPECT_LE(r.undelivered, 700u);
  EXPECT_EQ(r.undelivered_latest, 99'900'000'000);  // message 999, due at 999 x 100 ms
}

// Callers (topology.source = "clients") that had not yet made most of their requests when the run ended: those
// are undelivered, not lost, and the run's memory follows the requests made (10^12 named here once needed a
// vector of 10^12 outcomes and exhausted memory; 10^8 took 7 GB and reported every unmade request as lost).
TEST(UnseenCopies, RequestsTheCallersNeverMadeAreUndeliveredNotLostAndCostNoMemory) {
  const lethe::RunResult r = lethe::run_world(
      test_support::load_library("webhook-no-dedupe", {"workload.messages=1000000000000", "run.duration=1m",
                                                        "run.drain=false", "network.ack_loss=0"}),
      1);
  EXPECT_GT(r.messages, 1000u);  // 20 requests per second for a minute
  EXPECT_LT(r.messages, 1400u);
  EXPECT_LE(r.lost_messages, 10u);  // only requests in flight when the run was cut
  EXPECT_EQ(r.messages + r.undelivered, 1'000'000'000'000u);
  // The last of ~10^11 arrivals per caller at 2 per second: ~1,585 years, past the largest time (about 292 years).
  EXPECT_EQ(r.undelivered_latest, sim::kTimeMax);
}

TEST(UnseenCopies, UnmadeRequestsAreDueWithinTheBoundOfTheirArrivals) {
  // 300 requests at 20 per second take 15 s (mean); cut at 5 s, about 200 are unmade, the last due near 15 s.
  const lethe::RunResult r = lethe::run_world(
      test_support::load_library("webhook-no-dedupe", {"run.duration=5s", "run.drain=false"}), 1);
  EXPECT_EQ(r.messages + r.undelivered, 300u);
  EXPECT_GT(r.undelivered, 150u);
  EXPECT_GT(r.undelivered_latest, 15 * 1'000'000'000LL);
  EXPECT_LT(r.undelivered_latest, 35 * 1'000'000'000LL);  // 5 s + (u + 6 sqrt(u)) / (2 per second), u about 20
}

TEST(UnseenCopies, ADeliveryStillHeldWhenTheRunEndsIsUnansweredAndNamed) {
  const lethe::RunResult r = lethe::run_world(load("held-at-end"), 1);
  EXPECT_EQ(r.lost_messages, 1u);
  EXPECT_EQ(r.unanswered, 1u);
  ASSERT_EQ(r.unanswered_examples.size(), 1u);
  EXPECT_NE(r.unanswered_examples.front().find("message 0 ("), std::string::npos) << r.unanswered_examples.front();
  EXPECT_NE(r.unanswered_examples.front().find(" on "), std::string::npos) << r.unanswered_examples.front();
}

TEST(UnseenCopies, ADeliveryCutByAnInjectedCrashIsNotUnanswered) {
  // Every attempt dies after its effect; the restarted consumers take the redeliveries over. No delivery is held
  // at the end: the crashes answered for theirs.
  const lethe::RunResult r = lethe::run_world(load("crash-then-ttl"), 1);
  ASSERT_GT(r.coverage.at("crash"), 0u);
  EXPECT_EQ(r.unanswered, 0u);
}

TEST(UnseenCopies, AnExternalNodeThatNeverAnswersLeavesEveryConsumerHoldingADelivery) {
  const lethe::RunResult r = lethe::run_world(load("silent-node"), 1);
  EXPECT_EQ(r.lost_messages, 5u);
  EXPECT_EQ(r.unanswered, 2u);  // each of the 2 consumers holds the first message it was sent
  EXPECT_EQ(r.unanswered_examples.size(), 2u);
}

}  // namespace unseen_copies_test
