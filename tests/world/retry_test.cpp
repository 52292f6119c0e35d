// RetryPolicy tests: every backoff x jitter combination stays within its
// documented bounds, exponential backoff doubles and caps, decorrelated jitter
// stays in [base, cap], and the same seed gives the same delays.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <set>
#include <stdexcept>
#include <vector>

#include "world/retry.hpp"

namespace retry_test {

using lethe::Backoff;
using lethe::BackoffKind;
using lethe::Jitter;
using lethe::RetryPolicy;
using sim::kMillisecond;
using sim::kSecond;

Backoff none_backoff() { return Backoff{}; }
Backoff constant_backoff(sim::Duration delay) { return Backoff{BackoffKind::Constant, delay, 0, 0}; }
Backoff exponential_backoff(sim::Duration base, sim::Duration cap) {
  return Backoff{BackoffKind::Exponential, 0, base, cap};
}

// A random backoff of any kind, with values from 0 (or 1 ns) to a few hours.
rc::Gen<Backoff> any_backoff() {
  return rc::gen::oneOf(
      rc::gen::just(none_backoff()),
      rc::gen::map(rc::gen::inRange<sim::Duration>(0, 10 * kSecond), constant_backoff),
      rc::gen::mapcat(rc::gen::inRange<sim::Duration>(1, 10 * kSecond), [](sim::Duration base) {
        return rc::gen::map(rc::gen::inRange<sim::Duration>(base, base + 3600 * kSecond),
                            [base](sim::Duration cap) { return exponential_backoff(base, cap); });
      }));
}

// Draws `retries` delays in sequence and checks each against the policy's documented bounds.
void check_sequence_within_bounds(const Backoff& backoff, Jitter jitter, int retries, std::uint64_t seed) {
  RetryPolicy policy(backoff, jitter);
  sim::Rng rng(seed);
  for (int n = 1; n <= retries; ++n) {
    const sim::Duration d = policy.backoff_delay(n);
    const sim::Duration got = policy.delay(n, rng);
    RC_ASSERT(got >= 0);
    RC_ASSERT(got >= policy.min_delay(n));
    RC_ASSERT(got <= policy.max_delay(n));
    switch (jitter) {
      case Jitter::None: RC_ASSERT(got == d); break;
      case Jitter::Full: RC_ASSERT(got <= d); break;
      case Jitter::Equal:
        RC_ASSERT(got >= d / 2);
        RC_ASSERT(got <= d);
        break;
      case Jitter::Decorrelated:
        RC_ASSERT(got >= policy.base());
        RC_ASSERT(got <= policy.cap());
        break;
    }
  }
}

RC_GTEST_PROP(RetryPolicyProperties, NoJitterDelayEqualsTheBackoffExactly, ()) {
  check_sequence_within_bounds(*any_backoff(), Jitter::None, *rc::gen::inRange(1, 80),
                               *rc::gen::arbitrary<std::uint64_t>());
}

RC_GTEST_PROP(RetryPolicyProperties, FullJitterDelayStaysWithinZeroAndTheBackoff, ()) {
  check_sequence_within_bounds(*any_backoff(), Jitter::Full, *rc::gen::inRange(1, 80),
                               *rc::gen::arbitrary<std::uint64_t>());
}

RC_GTEST_PROP(RetryPolicyProperties, EqualJitterDelayStaysWithinHalfTheBackoffAndTheBackoff, ()) {
  check_sequence_within_bounds(*any_backoff(), Jitter::Equal, *rc::gen::inRange(1, 80),
                               *rc::gen::arbitrary<std::uint64_t>());
}

RC_GTEST_PROP(RetryPolicyProperties, DecorrelatedJitterDelayStaysWithinBaseAndCap, ()) {
  check_sequence_within_bounds(*any_backoff(), Jitter::Decorrelated, *rc::gen::inRange(1, 80),
                               *rc::gen::arbitrary<std::uint64_t>());
}

RC_GTEST_PROP(RetryPolicyProperties, ExponentialBackoffIsBaseTimesTwoToTheRetryMinusOneCappedAndNeverOverflows, ()) {
  const auto base = *rc::gen::inRange<sim::Duration>(1, sim::kDay);
  const auto cap = *rc::gen::inRange<sim::Duration>(base, sim::kTimeMax);
  const RetryPolicy policy(exponential_backoff(base, cap), Jitter::None);
  sim::Duration expected = base;
  for (int n = 1; n <= 200; ++n) {
    const sim::Duration got = policy.backoff_delay(n);
    RC_ASSERT(got == expected);
    RC_ASSERT(got <= cap);
    if (n > 1) RC_ASSERT(got >= policy.backoff_delay(n - 1));
    expected = expected > cap / 2 ? cap : std::min(cap, expected * 2);
  }
}

RC_GTEST_PROP(RetryPolicyProperties, SameSeedGivesTheSameDelaysForEveryCombination, ()) {
  const Backoff backoff = *any_backoff();
  const auto jitter = *rc::gen::element(Jitter::None, Jitter::Full, Jitter::Equal, Jitter::Decorrelated);
  const auto seed = *rc::gen::arbitrary<std::uint64_t>();
  auto draw = [&] {
    RetryPolicy policy(backoff, jitter);
    sim::Rng rng(seed);
    std::vector<sim::Duration> delays;
    for (int n = 1; n <= 20; ++n) delays.push_back(policy.delay(n, rng));
    delays.push_back(static_cast<sim::Duration>(rng.next() >> 1));  // the stream position after the draws
    return delays;
  };
  RC_ASSERT(draw() == draw());
}

TEST(RetryPolicy, ExponentialDoublesFromBaseAndStopsAtTheCap) {
  const RetryPolicy policy(exponential_backoff(100 * kMillisecond, 10 * kSecond), Jitter::None);
  const std::vector<sim::Duration> expected = {100 * kMillisecond, 200 * kMillisecond, 400 * kMillisecond,
                                               800 * kMillisecond, 1600 * kMillisecond, 3200 * kMillisecond,
                                               6400 * kMillisecond, 10 * kSecond,       10 * kSecond};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(policy.backoff_delay(static_cast<int>(i + 1)), expected[i]) << "retry " << i + 1;
  }
  EXPECT_EQ(policy.backoff_delay(1000), 10 * kSecond);
  EXPECT_EQ(policy.backoff_delay(INT32_MAX), 10 * kSecond);
}

TEST(RetryPolicy, ConstantAndNoneBackoffIgnoreTheRetryNumber) {
  RetryPolicy constant(constant_backoff(250 * kMillisecond), Jitter::None);
  RetryPolicy none(none_backoff(), Jitter::Full);
  sim::Rng rng(7);
  for (int n = 1; n <= 10; ++n) {
    EXPECT_EQ(constant.delay(n, rng), 250 * kMillisecond);
    EXPECT_EQ(none.delay(n, rng), 0);
  }
  RetryPolicy constant_decorrelated(constant_backoff(250 * kMillisecond), Jitter::Decorrelated);
  for (int n = 1; n <= 10; ++n) EXPECT_EQ(constant_decorrelated.delay(n, rng), 250 * kMillisecond);
}

TEST(RetryPolicy, JittersSpreadOverTheirWholeRange) {
  const Backoff backoff = exponential_backoff(100 * kMillisecond, 10 * kSecond);
  sim::Rng rng(42);
  RetryPolicy full(backoff, Jitter::Full);
  RetryPolicy equal(backoff, Jitter::Equal);
  sim::Duration full_min = sim::kTimeMax, full_max = 0, equal_min = sim::kTimeMax, equal_max = 0;
  for (int i = 0; i < 5000; ++i) {
    const sim::Duration f = full.delay(4, rng);   // backoff 800 ms
    const sim::Duration e = equal.delay(4, rng);
    full_min = std::min(full_min, f);
    full_max = std::max(full_max, f);
    equal_min = std::min(equal_min, e);
    equal_max = std::max(equal_max, e);
  }
  EXPECT_LT(full_min, 10 * kMillisecond);
  EXPECT_GT(full_max, 790 * kMillisecond);
  EXPECT_GE(equal_min, 400 * kMillisecond);
  EXPECT_LT(equal_min, 410 * kMillisecond);
  EXPECT_GT(equal_max, 790 * kMillisecond);
  EXPECT_LE(equal_max, 800 * kMillisecond);
}

TEST(RetryPolicy, DecorrelatedGrowsFromBaseUpToTheCapAndRestartsAtRetryOne) {
  const sim::Duration base = 100 * kMillisecond;
  const sim::Duration cap = 2 * kSecond;
  RetryPolicy policy(exponential_backoff(base, cap), Jitter::Decorrelated);
  sim::Rng rng(3);
  bool reached_cap_region = false;
  for (int round = 0; round < 50; ++round) {
    sim::Duration previous = base;
    for (int n = 1; n <= 12; ++n) {
      const sim::Duration got = policy.delay(n, rng);
      EXPECT_GE(got, base);
      EXPECT_LE(got, std::min(cap, 3 * previous)) << "retry " << n;  // never more than 3x the previous delay
      if (got > cap / 2) reached_cap_region = true;
      previous = got;
    }
  }
  EXPECT_TRUE(reached_cap_region);
  // delay(1) restarts the sequence: its first delay is at most 3 * base whatever came before.
  for (int i = 0; i < 200; ++i) {
    for (int n = 1; n <= 8; ++n) (void)policy.delay(n, rng);
    EXPECT_LE(policy.delay(1, rng), 3 * base);
  }
}

TEST(RetryPolicy, DifferentSeedsGiveDifferentJitter) {
  std::set<std::vector<sim::Duration>> sequences;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    RetryPolicy policy(exponential_backoff(100 * kMillisecond, 10 * kSecond), Jitter::Full);
    sim::Rng rng(seed);
    std::vector<sim::Duration> delays;
    for (int n = 1; n <= 5; ++n) delays.push_back(policy.delay(n, rng));
    sequences.insert(delays);
  }
  EXPECT_EQ(sequences.size(), 20u);
}

TEST(RetryPolicy, NoJitterDrawsNothingAndOtherJittersDrawOncePerDelay) {
  for (Jitter jitter : {Jitter::None, Jitter::Full, Jitter::Equal, Jitter::Decorrelated}) {
    RetryPolicy policy(exponential_backoff(kMillisecond, kSecond), jitter);
    sim::Rng used(11);
    sim::Rng reference(11);
    for (int n = 1; n <= 10; ++n) (void)policy.delay(n, used);
    if (jitter != Jitter::None) {
      for (int n = 1; n <= 10; ++n) (void)reference.next();
    }
    EXPECT_EQ(used.next(), reference.next()) << lethe::to_string(jitter);
  }
}

TEST(RetryPolicy, RejectsInvalidArguments) {
  EXPECT_THROW(RetryPolicy(exponential_backoff(0, kSecond), Jitter::None), std::invalid_argument);
  EXPECT_THROW(RetryPolicy(exponential_backoff(2 * kSecond, kSecond), Jitter::None), std::invalid_argument);
  EXPECT_THROW(RetryPolicy(constant_backoff(-1), Jitter::None), std::invalid_argument);
  RetryPolicy policy(constant_backoff(kSecond), Jitter::Full);
  sim::Rng rng(1);
  EXPECT_THROW((void)policy.delay(0, rng), std::invalid_argument);
}

}  // namespace retry_test
