// Tests of protocol/decision.hpp: the four-row decision table as a pure function.
#include "protocol/decision.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>

namespace decision_test {

using lethe::Basis;
using lethe::Decision;
using lethe::decide;
using lethe::decide_with_basis;
using lethe::Item;
using sim::Duration;
using sim::Time;

__extension__ typedef __int128 Wide;  // an independent, overflow-free age for the reference table

// A time: anywhere in the int64 range, or close to zero (so that ages near the threshold are frequent). The
// lowest is INT64_MIN + 1: an item's times are MaybeTime, whose INT64_MIN means "absent" (never an instant).
rc::Gen<std::int64_t> gen_time() {
  return rc::gen::oneOf(rc::gen::map(rc::gen::arbitrary<std::int64_t>(),
                                     [](std::int64_t t) { return t == lethe::MaybeTime::kNone ? t + 1 : t; }),
                        rc::gen::inRange<std::int64_t>(-2000, 2001),
                        rc::gen::elementOf(std::vector<std::int64_t>{std::numeric_limits<std::int64_t>::min() + 1,
                                                                     std::numeric_limits<std::int64_t>::max(), 0}));
}

rc::Gen<std::optional<Time>> gen_optional_time() {
  return rc::gen::oneOf(rc::gen::just(std::optional<Time>()),
                        rc::gen::map(gen_time(), [](std::int64_t t) { return std::optional<Time>(t); }));
}

std::optional<Item> gen_record() {
  if (*rc::gen::inRange(0, 5) == 0) return std::nullopt;
  Item item;
  item.started_at = *gen_optional_time();
  item.completed_at = *gen_optional_time();
  item.expires_on = *gen_optional_time();
  item.owner = *rc::gen::inRange<std::uint64_t>(0, 4);
  if (*rc::gen::arbitrary<bool>()) item.memoized = *rc::gen::arbitrary<std::uint64_t>();
  return item;
}

// The article's table, written independently: nothing -> process; completed -> skip;
// in flight: age >= threshold -> process, else wait; a negative age is recent.
Decision reference_table(const std::optional<Item>& record, Time now, Duration max_processing_time) {
  if (!record) return Decision::Process;
  if (record->completed_at) return Decision::Skip;
  if (!record->started_at) return Decision::Process;
  const Wide age = static_cast<Wide>(now) - static_cast<Wide>(*record->started_at);
  if (age < 0) return Decision::Wait;
  return age >= static_cast<Wide>(max_processing_time) ? Decision::Process : Decision::Wait;
}

RC_GTEST_PROP(DecisionTable, AgreesWithTheFourRowTableForAllRecordsAndClocks, ()) {
  const std::optional<Item> record = gen_record();
  const Time now = *gen_time();
  const Duration max_processing_time = *rc::gen::oneOf(rc::gen::inRange<std::int64_t>(1, 3000),
                                                        rc::gen::positive<std::int64_t>());
  const Decision expected = reference_table(record, now, max_processing_time);
  RC_ASSERT(decide(record, now, max_processing_time) == expected);
  // decide() is decide_with_basis() with expired_wins = false.
  RC_ASSERT(decide_with_basis(record, now, max_processing_time, false).decision == expected);
}

RC_GTEST_PROP(DecisionTable, AgeEqualToMaxProcessingTimeIsStaleAndOneNanosecondLessIsRecent, ()) {
  const Duration max_processing_time = *rc::gen::oneOf(rc::gen::inRange<std::int64_t>(1, 5000),
                                                        rc::gen::positive<std::int64_t>());
  // started_at such that started_at + max_processing_time does not overflow.
  const Time started_at =
      *rc::gen::inRange<std::int64_t>(std::numeric_limits<std::int64_t>::min() / 2,
                                      std::numeric_limits<std::int64_t>::max() - max_processing_time);
  Item record;
  record.started_at = started_at;
  const auto at_threshold = decide_with_basis(record, started_at + max_processing_time, max_processing_time, true);
  RC_ASSERT(at_threshold.decision == Decision::Process);
  RC_ASSERT(at_threshold.basis == Basis::StaleTakeover);
  const auto just_below = decide_with_basis(record, started_at + max_processing_time - 1, max_processing_time, true);
  RC_ASSERT(just_below.decision == Decision::Wait);
  RC_ASSERT(just_below.basis == Basis::InFlightRecent);
}

RC_GTEST_PROP(DecisionTable, NegativeAgeFromClockSkewWaitsAndNeverProcesses, ()) {
  const Time now = *rc::gen::inRange<std::int64_t>(std::numeric_limits<std::int64_t>::min(),
                                                   std::numeric_limits<std::int64_t>::max());
  const Time started_at = *rc::gen::inRange<std::int64_t>(now, std::numeric_limits<std::int64_t>::max()) + 1;
  RC_PRE(started_at > now);
  // Any threshold, even a non-positive one (which would make every non-negative age stale).
  const Duration max_processing_time = *rc::gen::arbitrary<std::int64_t>();
  Item record;
  record.started_at = started_at;
  if (*rc::gen::arbitrary<bool>()) record.expires_on = now + 1;  // not expired (now < INT64_MAX here)
  RC_ASSERT(decide(record, now, max_processing_time) == Decision::Wait);
  const auto with_basis = decide_with_basis(record, now, max_processing_time, *rc::gen::arbitrary<bool>());
  RC_ASSERT(with_basis.decision == Decision::Wait);
  RC_ASSERT(with_basis.basis == Basis::InFlightRecent);
}

RC_GTEST_PROP(DecisionTable, CompletedRecordAlwaysSkipsWhenExpiredWinsIsFalseOrItIsNotExpired, ()) {
  std::optional<Item> record = gen_record();
  if (!record) record = Item{};
  record->completed_at = *gen_time();
  const Time now = *gen_time();
  const Duration max_processing_time = *rc::gen::arbitrary<std::int64_t>();
  const bool expired_wins = *rc::gen::arbitrary<bool>();
  RC_PRE(!expired_wins || !record->expired_at(now));
  const auto verdict = decide_with_basis(record, now, max_processing_time, expired_wins);
  RC_ASSERT(verdict.decision == Decision::Skip);
  RC_ASSERT(verdict.basis == Basis::Completed);
  RC_ASSERT(decide(record, now, max_processing_time) == Decision::Skip);
}

RC_GTEST_PROP(DecisionTable, ExpiredWinsTreatsAnyExpiredRecordAsAbsent, ()) {
  std::optional<Item> record = gen_record();
  if (!record) record = Item{};
  const Time now = *gen_time();
  const Duration back = *rc::gen::inRange<std::int64_t>(0, 1000);
  // <= now: expired. Never INT64_MIN: that is MaybeTime's 'absent', and an absent expiry never expires.
  record->expires_on = now > std::numeric_limits<Time>::min() + back ? now - back : now;
  RC_ASSERT(record->expired_at(now));
  const auto verdict = decide_with_basis(record, now, *rc::gen::arbitrary<std::int64_t>(), true);
  RC_ASSERT(verdict.decision == Decision::Process);
  RC_ASSERT(verdict.basis == (record->completed_at ? Basis::ExpiredCompleted : Basis::Absent));
}

RC_GTEST_PROP(DecisionPrecedence, CompletedFirstSkipsACompletedRecordEvenWhenItHasExpired, ()) {
  std::optional<Item> record = gen_record();
  if (!record) record = Item{};
  record->completed_at = *gen_time();
  const Time now = *gen_time();
  const auto verdict = lethe::decide_with_precedence(record, now, *rc::gen::arbitrary<std::int64_t>(),
                                                     lethe::Precedence::CompletedFirst);
  RC_ASSERT(verdict.decision == Decision::Skip);
  RC_ASSERT(verdict.basis == Basis::Completed);
}

RC_GTEST_PROP(DecisionPrecedence, CompletedFirstTakesOverAnExpiredInFlightRecordWhateverItsAge, ()) {
  Item record;
  const Time now = *rc::gen::inRange<std::int64_t>(-1000000, 1000000);
  record.started_at = now - *rc::gen::inRange<std::int64_t>(-1000, 1000);  // recent, stale or in the future
  record.expires_on = now - *rc::gen::inRange<std::int64_t>(0, 1000);
  const auto verdict = lethe::decide_with_precedence(record, now, *rc::gen::inRange<std::int64_t>(1, 1000000000),
                                                     lethe::Precedence::CompletedFirst);
  RC_ASSERT(verdict.decision == Decision::Process);
  RC_ASSERT(verdict.basis == Basis::StaleTakeover);
}

RC_GTEST_PROP(DecisionPrecedence, CompletedFirstAgreesWithTheTableOnEveryRecordThatIsNotExpired, ()) {
  const std::optional<Item> record = gen_record();
  const Time now = *gen_time();
  RC_PRE(!record || !record->expired_at(now));
  const Duration max_processing_time = *rc::gen::arbitrary<std::int64_t>();
  RC_ASSERT(lethe::decide_with_precedence(record, now, max_processing_time, lethe::Precedence::CompletedFirst) ==
            decide_with_basis(record, now, max_processing_time, false));
}

RC_GTEST_PROP(DecisionPrecedence, ExpiredWinsMapsOntoExpiredFirstWhenTrueAndExpiryIgnoredWhenFalse, ()) {
  const std::optional<Item> record = gen_record();
  const Time now = *gen_time();
  const Duration max_processing_time = *rc::gen::arbitrary<std::int64_t>();
  const bool expired_wins = *rc::gen::arbitrary<bool>();
  const lethe::Precedence effective = lethe::effective_precedence(lethe::Precedence::ExpiredWins, expired_wins);
  RC_ASSERT(effective == (expired_wins ? lethe::Precedence::ExpiredFirst : lethe::Precedence::ExpiryIgnored));
  RC_ASSERT(lethe::decide_with_precedence(record, now, max_processing_time, effective) ==
            decide_with_basis(record, now, max_processing_time, expired_wins));
  // An explicit precedence overrides expired_wins.
  RC_ASSERT(lethe::effective_precedence(lethe::Precedence::CompletedFirst, expired_wins) ==
            lethe::Precedence::CompletedFirst);
}

TEST(DecisionTable, TheFourRowsWithTheirBases) {
  const Duration threshold = 30 * sim::kSecond;
  const Time now = 100 * sim::kSecond;
  Item in_flight;
  in_flight.started_at = now - 10 * sim::kSecond;
  Item stale = in_flight;
  stale.started_at = now - 31 * sim::kSecond;
  Item completed = in_flight;
  completed.completed_at = now - sim::kSecond;
  completed.memoized = 7;

  EXPECT_EQ(decide_with_basis(std::nullopt, now, threshold, false),
            (lethe::DecisionAndBasis{Decision::Process, Basis::Absent}));
  EXPECT_EQ(decide_with_basis(completed, now, threshold, false),
            (lethe::DecisionAndBasis{Decision::Skip, Basis::Completed}));
  EXPECT_EQ(decide_with_basis(stale, now, threshold, false),
            (lethe::DecisionAndBasis{Decision::Process, Basis::StaleTakeover}));
  EXPECT_EQ(decide_with_basis(in_flight, now, threshold, false),
            (lethe::DecisionAndBasis{Decision::Wait, Basis::InFlightRecent}));
}

TEST(DecisionTable, ExpiredCompletedRecordSkipsOrProcessesByExpiredWins) {
  Item completed;
  completed.started_at = 0;
  completed.completed_at = 10;
  completed.expires_on = 100;
  EXPECT_EQ(decide_with_basis(completed, 100, 50, true),
            (lethe::DecisionAndBasis{Decision::Process, Basis::ExpiredCompleted}));
  EXPECT_EQ(decide_with_basis(completed, 100, 50, false),
            (lethe::DecisionAndBasis{Decision::Skip, Basis::Completed}));
  // One nanosecond before expires_on it is not expired yet.
  EXPECT_EQ(decide_with_basis(completed, 99, 50, true), (lethe::DecisionAndBasis{Decision::Skip, Basis::Completed}));
}

TEST(DecisionTable, ExtremeClocksDoNotOverflow) {
  Item record;
  record.started_at = std::numeric_limits<Time>::min();
  EXPECT_EQ(decide(record, std::numeric_limits<Time>::max(), std::numeric_limits<Duration>::max()),
            Decision::Process);  // age 2^64 - 1 > any threshold
  record.started_at = std::numeric_limits<Time>::max();
  EXPECT_EQ(decide(record, std::numeric_limits<Time>::min(), 1), Decision::Wait);  // hugely negative age
  EXPECT_TRUE(lethe::is_stale(5, 5, 0));
  EXPECT_FALSE(lethe::is_stale(6, 5, 0));
  EXPECT_FALSE(lethe::is_stale(6, 5, -100));
}

TEST(DecisionTable, ARecordThatWasNeverClaimedCountsAsAbsent) {
  Item unclaimed;
  unclaimed.counter = 3;
  EXPECT_EQ(decide_with_basis(unclaimed, 0, 1, false), (lethe::DecisionAndBasis{Decision::Process, Basis::Absent}));
}

}  // namespace decision_test
