// The ledger keeps, per attempt, only the decision the oracle reads: the last one that let it run the effect.
#include "check/ledger.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

namespace lethe {
namespace ledger_test {

AttemptId add_attempt(Ledger& ledger, MessageId id) {
  AttemptRecord record;
  record.id = id;
  return ledger.attempts.add(record);
}

DecisionNote note(AttemptId attempt, Basis basis, std::optional<Item> seen = std::nullopt, sim::Time local = 0) {
  DecisionNote n;
  n.id = 7;
  n.attempt = attempt;
  n.basis = basis;
  n.seen = std::move(seen);
  n.local_time = local;
  return n;
}

TEST(Ledger, AnAttemptKeepsItsLastProcessDecisionAndNoSkipOrWaitDecision) {
  Ledger ledger;
  const AttemptId a = add_attempt(ledger, 7);
  ledger.decided(note(a, Basis::InFlightRecent), 10);
  EXPECT_EQ(ledger.process_decision(a), std::nullopt);

  Item in_flight;
  in_flight.started_at = 3;
  in_flight.owner = 99;
  ledger.decided(note(a, Basis::StaleTakeover, in_flight, 40), 50);
  ledger.decided(note(a, Basis::TakeoverLost, in_flight), 60);  // not a process basis: the takeover stays
  const std::optional<ProcessDecision> d = ledger.process_decision(a);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->basis, Basis::StaleTakeover);
  EXPECT_EQ(d->at, 50);
  EXPECT_EQ(d->local_time, 40);
  EXPECT_TRUE(d->seen);
  EXPECT_EQ(d->seen_owner, 99u);
  ASSERT_TRUE(d->seen_started_at.has_value());
  EXPECT_EQ(*d->seen_started_at, 3);
  EXPECT_FALSE(d->seen_expires_on.has_value());

  ledger.decided(note(a, Basis::Absent), 70);  // a later process decision replaces it
  EXPECT_EQ(ledger.process_decision(a)->basis, Basis::Absent);
  EXPECT_FALSE(ledger.process_decision(a)->seen);
}

TEST(Ledger, OnlyDecisionsThatSawARecordUseTheSideTableAndAnAttemptStaysAt80Bytes) {
  static_assert(sizeof(AttemptRecord) <= 80, "an attempt record is kept per delivery: keep it small");
  Ledger ledger;
  const AttemptId first = add_attempt(ledger, 1);
  const AttemptId second = add_attempt(ledger, 1);
  ledger.decided(note(first, Basis::Absent), 5);
  EXPECT_TRUE(ledger.seen.empty());
  Item expired;
  expired.completed_at = 2;
  expired.expires_on = 4;
  expired.owner = first;
  ledger.decided(note(second, Basis::ExpiredCompleted, expired, 6), 6);
  ASSERT_EQ(ledger.seen.size(), 1u);
  const std::optional<ProcessDecision> d = ledger.process_decision(second);
  ASSERT_TRUE(d.has_value());
  EXPECT_TRUE(d->seen);
  EXPECT_EQ(d->seen_owner, first);
  EXPECT_FALSE(d->seen_started_at.has_value());
  ASSERT_TRUE(d->seen_expires_on.has_value());
  EXPECT_EQ(*d->seen_expires_on, 4);
  EXPECT_FALSE(ledger.process_decision(first)->seen);
}

TEST(Ledger, ADecisionForAnUnknownAttemptIsIgnored) {
  Ledger ledger;
  add_attempt(ledger, 1);
  ledger.decided(note(0, Basis::Absent), 1);
  ledger.decided(note(2, Basis::Absent), 1);
  EXPECT_EQ(ledger.process_decision(1), std::nullopt);
}

RC_GTEST_PROP(MaybeTime, HoldsEveryTimeButNoneAndComparesByPresenceThenValue,
              (bool present, std::int64_t value, std::int64_t other)) {
  RC_PRE(value != MaybeTime::kNone && other != MaybeTime::kNone);
  const MaybeTime m = present ? MaybeTime(value) : MaybeTime(std::nullopt);
  RC_ASSERT(m.has_value() == present);
  RC_ASSERT(static_cast<bool>(m) == present);
  RC_ASSERT(m.value_or(other) == (present ? value : other));
  if (present) RC_ASSERT(*m == value);
  RC_ASSERT((m == MaybeTime(other)) == (present && value == other));
  RC_ASSERT((m == MaybeTime()) == !present);
}

RC_GTEST_PROP(ExpectedIds, ListsEveryAddedPairInOrderLikeAPlainListWhateverTheIds,
              (const std::vector<std::pair<std::uint8_t, std::uint8_t>>& adds)) {
  // Ids from a small range (so consecutive runs, repeats and gaps all occur) and 1-3 processors.
  ExpectedIds expected;
  std::vector<std::pair<MessageId, ProcessorId>> plain;
  for (const auto& [id, processors_raw] : adds) {
    const auto processors = static_cast<ProcessorId>(1 + processors_raw % 3);
    expected.add(id % 16, processors);
    for (ProcessorId p = 0; p < processors; ++p) plain.emplace_back(id % 16, p);
  }
  std::vector<std::pair<MessageId, ProcessorId>> listed;
  expected.for_each([&listed](MessageId id, ProcessorId p) { listed.emplace_back(id, p); });
  RC_ASSERT(listed == plain);
}

}  // namespace ledger_test
}  // namespace lethe
