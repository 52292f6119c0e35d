// The Kafka incident scenarios (scenarios/kafka-*.toml) end to end: a consumer paused past
// topology.session_timeout, or working past topology.max_poll_interval, is removed from its group, the replay
// runs the effect again (member_removed under strategy none), and its commit fails; timeouts above the pauses and
// the work remove no one.
#include <gtest/gtest.h>

#include <string>

#include "tests/world/verdict_scenarios.hpp"
#include "world/world.hpp"

namespace kafka_membership_test {

using test_support::load_library;

std::uint64_t cause(const lethe::RunResult& r, lethe::Cause c) { return r.duplicates[static_cast<std::size_t>(c)]; }

TEST(KafkaMembership, PausePastSessionTimeoutRemovesTheMemberAndEveryDuplicateIsMemberRemoved) {
  const lethe::RunResult r = lethe::run_world(load_library("kafka-gc-pause-evicted-none"), 1);
  EXPECT_GT(r.duplicate_effects, 0u);
  EXPECT_EQ(cause(r, lethe::Cause::MemberRemoved), r.duplicate_effects);
  EXPECT_GT(r.commit_failed, 0u);
  EXPECT_GT(r.coverage.at("group.removed.session_timeout"), 0u);
  EXPECT_EQ(r.lost_messages, 0u);
  EXPECT_EQ(r.unanswered, 0u) << "the run waits for the paused member to finish its record";
}

TEST(KafkaMembership, SessionTimeoutAboveEveryPauseRemovesNoOneAndGivesNoDuplicate) {
  const lethe::RunResult r =
      lethe::run_world(load_library("kafka-gc-pause-evicted-none", {"topology.session_timeout=\"2m\""}), 1);
  EXPECT_EQ(r.duplicate_effects, 0u);
  EXPECT_EQ(r.commit_failed, 0u);
  EXPECT_EQ(r.coverage.count("group.removed.session_timeout"), 0u);
}

TEST(KafkaMembership, WorkPastMaxPollIntervalRemovesTheMemberAndItsRecordRunsTwice) {
  const lethe::RunResult r = lethe::run_world(load_library("kafka-slow-work-poll-interval-none"), 1);
  EXPECT_GT(cause(r, lethe::Cause::MemberRemoved), 0u);
  EXPECT_EQ(cause(r, lethe::Cause::MemberRemoved), r.duplicate_effects);
  EXPECT_GT(r.commit_failed, 0u);
  EXPECT_GT(r.coverage.at("group.removed.max_poll_interval"), 0u);
  const lethe::RunResult longer =
      lethe::run_world(load_library("kafka-slow-work-poll-interval-none", {"topology.max_poll_interval=\"3h\""}), 1);
  EXPECT_EQ(longer.duplicate_effects, 0u);
  EXPECT_EQ(longer.commit_failed, 0u);
}

TEST(KafkaMembership, MnemosyneWithMaxProcessingTimeAboveThePauseHasNoDuplicateAndBelowItTakeoverWhileAlive) {
  const lethe::RunResult above = lethe::run_world(load_library("kafka-gc-pause-evicted-mnemosyne"), 1);
  EXPECT_EQ(above.duplicate_effects, 0u);
  EXPECT_GT(above.commit_failed, 0u);
  const lethe::RunResult below = lethe::run_world(load_library("kafka-gc-pause-evicted-mpt-too-low"), 1);
  EXPECT_GT(cause(below, lethe::Cause::TakeoverWhileAlive), 0u);
  EXPECT_EQ(cause(below, lethe::Cause::MemberRemoved), 0u) << "mnemosyne's duplicates are its record's";
}

// Scheduling steps of a 1-hour run of five records with `consumers` members over 8 partitions.
std::uint64_t steps_with(int consumers) {
  lethe::WorldRecord record;
  lethe::run_world(load_library("kafka-slow-work-poll-interval-none",
                                {"topology.consumers=" + std::to_string(consumers), "workload.messages=5",
                                 "topology.commit=\"interval(1h)\""}),
                   1, {}, &record);
  return record.schedule_steps;
}

// A member with no partition has nothing to fetch: it waits until the group wakes it (a rebalance), so a run's
// work grows by a few steps per member (joining, syncing), not by wakes on a timer for as long as the run lasts.
TEST(KafkaMembership, IdleMembersAddAFewStepsEachWhateverTheRunsLength) {
  const std::uint64_t few = steps_with(16);
  const std::uint64_t many = steps_with(216);
  EXPECT_LT(many - few, 200u * 20u) << few << " steps with 16 members, " << many << " with 216";
}

// Scheduling steps of a run of five records, never committed, with `consumers` members over 8 partitions, each
// member paused past its session timeout about every 90 s: a removal and a rejoin per pause, so rebalances grow
// with the members.
std::uint64_t paused_steps_with(int consumers) {
  lethe::WorldRecord record;
  lethe::run_world(load_library("kafka-gc-pause-evicted-none",
                                {"topology.consumers=" + std::to_string(consumers), "workload.messages=5",
                                 "topology.commit=\"interval(1h)\""}),
                   1, {}, &record);
  return record.schedule_steps;
}

// A rebalance wakes the members it gives partitions or removes, not every idle member (each would fetch once to
// learn a generation that changes nothing for it): steps per member stay about the same as members grow, where
// waking every member made them grow with the members (the run's work quadratic in them).
TEST(KafkaMembership, RebalancesCausedByManyMembersCostStepsLinearInThem) {
  const std::uint64_t small = paused_steps_with(100);
  const std::uint64_t large = paused_steps_with(400);
  EXPECT_LT(large, 6 * small) << small << " steps with 100 members, " << large << " with 400";
}

}  // namespace kafka_membership_test
