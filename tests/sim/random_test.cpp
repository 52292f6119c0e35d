// Tests of sim/random.hpp: known-answer vectors, determinism, unbiased bounded draws, named sub-streams.
//
// The integer known answers and golden hashes below were computed by an independent Python transcription of the
// splitmix64, xoshiro256**, FNV-1a and Lemire definitions (itself checked against the published xoshiro256**
// vector for state {1, 2, 3, 4}: 11520, 0, 1509978240, 1215971899390074240). The floating-point goldens
// (exponential, normal, lognormal, pareto) were computed once by this code on Debian 12 / glibc and agree with the
// same Python transcription using Python's math module on the same machine; they depend on libm's log1p, log,
// exp, cos and pow, so a different libm shows up here first.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/random.hpp"

namespace sim {
namespace random_test {

constexpr std::uint64_t kGoldenSeed = 2024;

std::uint64_t fold(std::uint64_t hash, std::uint64_t value) { return (hash ^ value) * 0x100000001b3ULL; }

// FNV-style fold of 1000 results of `draw` on a fresh Rng(kGoldenSeed).
std::uint64_t thousand_draw_hash(const std::function<std::uint64_t(Rng&)>& draw) {
  Rng rng(kGoldenSeed);
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (int i = 0; i < 1000; ++i) hash = fold(hash, draw(rng));
  return hash;
}

std::vector<std::uint64_t> first_draws(Rng rng, int count) {
  std::vector<std::uint64_t> draws;
  for (int i = 0; i < count; ++i) draws.push_back(rng.next());
  return draws;
}

// Upper critical value of chi-square with `degrees` degrees of freedom at probability 0.9999 (Wilson-Hilferty).
double chi_square_critical_9999(int degrees) {
  const double k = degrees;
  const double z = 3.719;  // standard normal 99.99th percentile
  const double term = 1.0 - 2.0 / (9.0 * k) + z * std::sqrt(2.0 / (9.0 * k));
  return k * term * term * term;
}

double chi_square(const std::vector<std::uint64_t>& counts, double expected_per_bucket) {
  double statistic = 0;
  for (std::uint64_t count : counts) {
    const double difference = static_cast<double>(count) - expected_per_bucket;
    statistic += difference * difference / expected_per_bucket;
  }
  return statistic;
}

TEST(SplitMix64, MatchesTheReferenceOutputsForSeedZero) {
  std::uint64_t state = 0;
  EXPECT_EQ(splitmix64(state), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(splitmix64(state), 0x6e789e6aa1b965f4ULL);
  EXPECT_EQ(splitmix64(state), 0x06c45d188009454fULL);
  EXPECT_EQ(state, 3 * 0x9e3779b97f4a7c15ULL);
}

TEST(HashName, IsFnv1a64) {
  EXPECT_EQ(hash_name(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(hash_name("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(hash_name("foobar"), 0x85944171f73967e8ULL);
  EXPECT_NE(hash_name("network"), hash_name("Network"));
}

TEST(Xoshiro256StarStar, SeededBySplitMix64MatchesTheReferenceVectors) {
  const std::vector<std::uint64_t> seed0 = {0x99ec5f36cb75f2b4ULL, 0xbf6e1f784956452aULL, 0x1a5f849d4933e6e0ULL,
                                            0x6aa594f1262d2d2cULL, 0xbba5ad4a1f842e59ULL, 0xffef8375d9ebcacaULL};
  const std::vector<std::uint64_t> seed1 = {0xb3f2af6d0fc710c5ULL, 0x853b559647364ceaULL, 0x92f89756082a4514ULL,
                                            0x642e1c7bc266a3a7ULL, 0xb27a48e29a233673ULL, 0x24c123126ffda722ULL};
  const std::vector<std::uint64_t> seed42 = {0x15780b2e0c2ec716ULL, 0x6104d9866d113a7eULL, 0xae17533239e499a1ULL,
                                             0xecb8ad4703b360a1ULL, 0xfde6dc7fe2ec5e64ULL, 0xc50da53101795238ULL};
  EXPECT_EQ(first_draws(Rng(0), 6), seed0);
  EXPECT_EQ(first_draws(Rng(1), 6), seed1);
  EXPECT_EQ(first_draws(Rng(42), 6), seed42);
}

TEST(RngDeterminism, SameSeedGivesTheSameFirstThousandDrawsInTwoConstructions) {
  EXPECT_EQ(first_draws(Rng(kGoldenSeed), 1000), first_draws(Rng(kGoldenSeed), 1000));
  EXPECT_NE(first_draws(Rng(kGoldenSeed), 1000), first_draws(Rng(kGoldenSeed + 1), 1000));
}

TEST(RngDeterminism, FirstThousandIntegerDrawsMatchTheGoldenHashes) {
  EXPECT_EQ(thousand_draw_hash([](Rng& rng) { return rng.next(); }), 0x661cca34e873bd8cULL);
  EXPECT_EQ(thousand_draw_hash([](Rng& rng) { return rng.below(1000); }), 0xcc763d83b36113ecULL);
  EXPECT_EQ(thousand_draw_hash([](Rng& rng) { return rng.below(std::uint64_t{3} << 62); }), 0xf437f95cdf1056d6ULL);
  EXPECT_EQ(thousand_draw_hash([](Rng& rng) { return static_cast<std::uint64_t>(rng.between(-5, 5)); }),
            0xc95e53f811f60a1aULL);
  EXPECT_EQ(thousand_draw_hash([](Rng& rng) { return std::bit_cast<std::uint64_t>(rng.uniform()); }),
            0xa1cb8e12c3dab0e0ULL);
  EXPECT_EQ(thousand_draw_hash([](Rng& rng) { return std::uint64_t{rng.bernoulli(0.3)}; }), 0x434b5da7eae2a94dULL);
}

TEST(RngDeterminism, FirstThousandFloatingPointDrawsMatchTheGoldenHashes) {
  const auto bits = [](double value) { return std::bit_cast<std::uint64_t>(value); };
  const std::uint64_t exponential = thousand_draw_hash([&](Rng& rng) { return bits(rng.exponential(2e8)); });
  const std::uint64_t normal = thousand_draw_hash([&](Rng& rng) { return bits(rng.normal(1e9, 2e8)); });
  const std::uint64_t lognormal =
      thousand_draw_hash([&](Rng& rng) { return bits(rng.lognormal_median_p99(2e8, 2e9)); });
  const std::uint64_t pareto = thousand_draw_hash([&](Rng& rng) { return bits(rng.pareto(1e8, 1.5)); });
  // Stable across two constructions...
  EXPECT_EQ(exponential, thousand_draw_hash([&](Rng& rng) { return bits(rng.exponential(2e8)); }));
  EXPECT_EQ(normal, thousand_draw_hash([&](Rng& rng) { return bits(rng.normal(1e9, 2e8)); }));
  // ...and equal to the values computed once (glibc libm; matched by the Python transcription).
  EXPECT_EQ(exponential, 0xe8ac7308438d6387ULL);
  EXPECT_EQ(normal, 0x9c3729536bdfd64aULL);
  EXPECT_EQ(lognormal, 0x881c7a12867f2df2ULL);
  EXPECT_EQ(pareto, 0xce46fdbb43771014ULL);
}

TEST(RngDeterminism, ShuffleOfAHundredMatchesTheGoldenPermutation) {
  Rng rng(kGoldenSeed);
  std::vector<std::uint64_t> values(100);
  std::iota(values.begin(), values.end(), 0);
  rng.shuffle(values.begin(), values.end());
  const std::vector<std::uint64_t> head(values.begin(), values.begin() + 10);
  EXPECT_EQ(head, (std::vector<std::uint64_t>{10, 90, 84, 12, 92, 79, 53, 9, 38, 25}));
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (std::uint64_t value : values) hash = fold(hash, value);
  EXPECT_EQ(hash, 0x07e212f026d40d6dULL);
}

TEST(RngBelow, IsUniformOverAWideBoundThatRejectsAQuarterOfDraws) {
  // bound = 3 * 2^62: Lemire rejects when the low product half is below 2^64 mod bound = 2^62, a quarter of the
  // time. A plain `next() % bound` would make the lowest third of the range twice as likely.
  const std::uint64_t bound = std::uint64_t{3} << 62;
  const int buckets = 64;
  const int draws = 128000;
  const std::uint64_t bucket_width = bound / buckets;
  std::vector<std::uint64_t> lemire_counts(buckets, 0);
  std::vector<std::uint64_t> modulo_counts(buckets, 0);
  // Residues mod 3 catch a multiply-shift without the rejection step: with bound / 2^64 = 3/4, every value
  // divisible by 3 would get two of the four preimages in each group of four.
  std::vector<std::uint64_t> residue_counts(3, 0);
  Rng rng(7);
  Rng modulo_rng(7);
  for (int i = 0; i < draws; ++i) {
    const std::uint64_t value = rng.below(bound);
    ASSERT_LT(value, bound);
    ++lemire_counts[value / bucket_width];
    ++residue_counts[value % 3];
    ++modulo_counts[(modulo_rng.next() % bound) / bucket_width];
  }
  const double expected = static_cast<double>(draws) / buckets;
  const double critical = chi_square_critical_9999(buckets - 1);
  EXPECT_LT(chi_square(lemire_counts, expected), critical);
  EXPECT_LT(chi_square(residue_counts, draws / 3.0), chi_square_critical_9999(2));
  // The test has power: the biased method fails it by far.
  EXPECT_GT(chi_square(modulo_counts, expected), 10 * critical);
}

TEST(RngBelow, IsUniformOverASmallBoundAndCoversIt) {
  const std::uint64_t bound = 7;
  const int draws = 70000;
  std::vector<std::uint64_t> counts(bound, 0);
  Rng rng(11);
  for (int i = 0; i < draws; ++i) ++counts[rng.below(bound)];
  EXPECT_LT(chi_square(counts, draws / 7.0), chi_square_critical_9999(6));
}

TEST(RngBelow, BoundOneAlwaysGivesZeroAndBoundZeroIsRejected) {
  Rng rng(3);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(rng.below(1), 0u);
  EXPECT_THROW(rng.below(0), std::invalid_argument);
}

TEST(RngBetween, IncludesBothEndsAndNothingOutside) {
  Rng rng(5);
  std::set<std::int64_t> seen;
  for (int i = 0; i < 2000; ++i) {
    const std::int64_t value = rng.between(-3, 3);
    ASSERT_GE(value, -3);
    ASSERT_LE(value, 3);
    seen.insert(value);
  }
  EXPECT_EQ(seen.size(), 7u);
  EXPECT_EQ(rng.between(9, 9), 9);
}

TEST(RngBetween, HandlesTheFullInt64RangeAndRejectsAnInvertedRange) {
  Rng rng(5);
  bool saw_negative = false;
  bool saw_positive = false;
  for (int i = 0; i < 100; ++i) {
    const std::int64_t value = rng.between(INT64_MIN, INT64_MAX);
    saw_negative = saw_negative || value < 0;
    saw_positive = saw_positive || value > 0;
  }
  EXPECT_TRUE(saw_negative);
  EXPECT_TRUE(saw_positive);
  EXPECT_THROW(rng.between(2, 1), std::invalid_argument);
}

RC_GTEST_PROP(RngBetween, ResultIsAlwaysWithinTheInclusiveRange, (std::uint64_t seed, std::int64_t a, std::int64_t b)) {
  Rng rng(seed);
  const std::int64_t low = std::min(a, b);
  const std::int64_t high = std::max(a, b);
  for (int i = 0; i < 20; ++i) {
    const std::int64_t value = rng.between(low, high);
    RC_ASSERT(value >= low);
    RC_ASSERT(value <= high);
  }
}

RC_GTEST_PROP(RngBelow, ResultIsAlwaysBelowTheBound, (std::uint64_t seed, std::uint64_t bound)) {
  RC_PRE(bound > 0u);
  Rng rng(seed);
  for (int i = 0; i < 20; ++i) RC_ASSERT(rng.below(bound) < bound);
}

TEST(RngUniform, StaysInTheHalfOpenUnitIntervalWithMeanOneHalf) {
  Rng rng(13);
  const int draws = 20000;
  double sum = 0;
  for (int i = 0; i < draws; ++i) {
    const double value = rng.uniform();
    ASSERT_GE(value, 0.0);
    ASSERT_LT(value, 1.0);
    sum += value;
  }
  // Standard deviation of the mean: sqrt(1/12 / n).
  EXPECT_NEAR(sum / draws, 0.5, 5 * std::sqrt(1.0 / 12.0 / draws));
}

TEST(RngBernoulli, ConsumesExactlyOneDrawWhateverTheProbability) {
  for (double probability : {-1.0, 0.0, 0.3, 1.0, 2.0}) {
    Rng tested(17);
    Rng reference(17);
    tested.bernoulli(probability);
    reference.next();
    EXPECT_EQ(tested.next(), reference.next()) << "probability " << probability;
  }
}

TEST(RngBernoulli, ZeroIsNeverOneIsAlwaysAndNaNIsRejected) {
  Rng rng(19);
  int heads = 0;
  for (int i = 0; i < 1000; ++i) {
    EXPECT_FALSE(rng.bernoulli(0.0));
    EXPECT_TRUE(rng.bernoulli(1.0));
    heads += rng.bernoulli(0.25) ? 1 : 0;
  }
  EXPECT_NEAR(heads, 250, 5 * std::sqrt(1000 * 0.25 * 0.75));
  EXPECT_THROW(rng.bernoulli(std::nan("")), std::invalid_argument);
}

TEST(RngDrawCounts, AreFixedPerDistribution) {
  const auto draws_used = [](const std::function<void(Rng&)>& draw) {
    Rng tested(23);
    draw(tested);
    const std::uint64_t after = tested.next();
    Rng reference(23);
    for (int used = 0; used < 10; ++used) {
      if (reference.next() == after) return used;
    }
    return -1;
  };
  EXPECT_EQ(draws_used([](Rng& rng) { rng.uniform(); }), 1);
  EXPECT_EQ(draws_used([](Rng& rng) { rng.exponential(5.0); }), 1);
  EXPECT_EQ(draws_used([](Rng& rng) { rng.exponential(0.0); }), 1);
  EXPECT_EQ(draws_used([](Rng& rng) { rng.pareto(1.0, 2.0); }), 1);
  EXPECT_EQ(draws_used([](Rng& rng) { rng.normal(0.0, 1.0); }), 2);
  EXPECT_EQ(draws_used([](Rng& rng) { rng.normal(0.0, 0.0); }), 2);
  EXPECT_EQ(draws_used([](Rng& rng) { rng.lognormal_median_p99(1.0, 10.0); }), 2);
}

TEST(RngParameters, ViolatedPreconditionsThrow) {
  Rng rng(29);
  EXPECT_THROW(rng.exponential(-1.0), std::invalid_argument);
  EXPECT_THROW(rng.normal(0.0, -1.0), std::invalid_argument);
  EXPECT_THROW(rng.normal(INFINITY, 1.0), std::invalid_argument);
  EXPECT_THROW(rng.lognormal_median_p99(0.0, 1.0), std::invalid_argument);
  EXPECT_THROW(rng.lognormal_median_p99(2.0, 1.0), std::invalid_argument);
  EXPECT_THROW(rng.pareto(0.0, 1.0), std::invalid_argument);
  EXPECT_THROW(rng.pareto(1.0, 0.0), std::invalid_argument);
}

TEST(RngContinuous, DrawsRespectTheirSupport) {
  Rng rng(31);
  for (int i = 0; i < 10000; ++i) {
    ASSERT_GE(rng.exponential(3.0), 0.0);
    ASSERT_GE(rng.pareto(2.0, 1.5), 2.0);
    ASSERT_GT(rng.lognormal_median_p99(1.0, 5.0), 0.0);
    ASSERT_TRUE(std::isfinite(rng.normal(0.0, 1.0)));
  }
  EXPECT_EQ(rng.normal(4.0, 0.0), 4.0);
  EXPECT_EQ(rng.exponential(0.0), 0.0);
}

TEST(RngDerive, SameNameGivesTheSameStream) {
  EXPECT_EQ(first_draws(Rng::derive(kGoldenSeed, "network"), 100),
            first_draws(Rng::derive(kGoldenSeed, "network"), 100));
  // Known answer from the Python transcription: seed = splitmix64(splitmix64(root) ^ fnv1a(name)).
  EXPECT_EQ(first_draws(Rng::derive(kGoldenSeed, "network"), 3),
            (std::vector<std::uint64_t>{0x595c636cd306d3caULL, 0x74355f9be51f30c5ULL, 0x1396088eb507ecdfULL}));
}

TEST(RngDerive, DifferentNamesAndRootsGiveDifferentStreams) {
  const std::vector<std::string> names = {"network", "Network", "network2", "storage", "crash", "", "a", "b"};
  std::set<std::vector<std::uint64_t>> streams;
  for (const std::string& name : names) streams.insert(first_draws(Rng::derive(kGoldenSeed, name), 4));
  EXPECT_EQ(streams.size(), names.size());
  EXPECT_NE(first_draws(Rng::derive(1, "network"), 4), first_draws(Rng::derive(2, "network"), 4));
  // A derived stream is not its root's own stream either.
  EXPECT_NE(first_draws(Rng::derive(kGoldenSeed, ""), 4), first_draws(Rng(kGoldenSeed), 4));
}

TEST(RngDerive, IsUnaffectedByDrawsMadeOnTheParent) {
  Rng parent(37);
  const Rng before = parent.derive("child");
  for (int i = 0; i < 100; ++i) parent.next();
  const Rng after = parent.derive("child");
  EXPECT_EQ(first_draws(before, 50), first_draws(after, 50));
  EXPECT_EQ(parent.seed(), 37u);
}

TEST(RngDerive, StaticAndMemberFormsAgreeAndNest) {
  EXPECT_EQ(first_draws(Rng::derive(41, "x"), 20), first_draws(Rng(41).derive("x"), 20));
  const Rng grandchild = Rng(41).derive("x").derive("y");
  EXPECT_EQ(first_draws(grandchild, 20), first_draws(Rng::derive(Rng::derive(41, "x").seed(), "y"), 20));
  EXPECT_NE(first_draws(grandchild, 20), first_draws(Rng(41).derive("y"), 20));
}

TEST(RngDerive, AddingAStreamNeverChangesAnother) {
  const std::vector<std::uint64_t> alone = first_draws(Rng::derive(43, "crash"), 50);
  Rng other = Rng::derive(43, "network");
  for (int i = 0; i < 1000; ++i) other.next();
  EXPECT_EQ(first_draws(Rng::derive(43, "crash"), 50), alone);
}

TEST(RngDerive, SiblingStreamsAreUncorrelated) {
  Rng first = Rng::derive(47, "a");
  Rng second = Rng::derive(47, "b");
  const int draws = 20000;
  double sum_first = 0, sum_second = 0, sum_product = 0, sum_first_squared = 0, sum_second_squared = 0;
  std::uint64_t equal_bits = 0;
  for (int i = 0; i < draws; ++i) {
    const std::uint64_t raw_first = first.next();
    const std::uint64_t raw_second = second.next();
    equal_bits += static_cast<std::uint64_t>(std::popcount(~(raw_first ^ raw_second)));
    const double x = static_cast<double>(raw_first >> 11) * 0x1.0p-53;
    const double y = static_cast<double>(raw_second >> 11) * 0x1.0p-53;
    sum_first += x;
    sum_second += y;
    sum_product += x * y;
    sum_first_squared += x * x;
    sum_second_squared += y * y;
  }
  const double n = draws;
  const double covariance = sum_product / n - (sum_first / n) * (sum_second / n);
  const double variance_first = sum_first_squared / n - (sum_first / n) * (sum_first / n);
  const double variance_second = sum_second_squared / n - (sum_second / n) * (sum_second / n);
  const double correlation = covariance / std::sqrt(variance_first * variance_second);
  EXPECT_LT(std::abs(correlation), 5.0 / std::sqrt(n));
  // Bits agree half the time: 64 * n bit comparisons, standard deviation sqrt(64 n) / 2.
  EXPECT_NEAR(static_cast<double>(equal_bits), 32.0 * n, 5.0 * std::sqrt(64.0 * n) / 2.0);
}

TEST(RngShuffle, GivesAPermutationAndHandlesTinyRanges) {
  Rng rng(53);
  std::vector<int> values(50);
  std::iota(values.begin(), values.end(), 0);
  rng.shuffle(values.begin(), values.end());
  std::vector<int> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int> expected(50);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(sorted, expected);
  EXPECT_NE(values, expected);
  std::vector<int> empty;
  rng.shuffle(empty.begin(), empty.end());
  std::array<int, 1> single = {7};
  rng.shuffle(single.begin(), single.end());
  EXPECT_EQ(single[0], 7);
}

TEST(RngShuffle, EveryPermutationOfThreeIsEquallyLikely) {
  Rng rng(59);
  const int shuffles = 60000;
  std::vector<std::uint64_t> counts(6, 0);
  for (int i = 0; i < shuffles; ++i) {
    std::array<int, 3> values = {0, 1, 2};
    rng.shuffle(values.begin(), values.end());
    // Index of the permutation: first element picks a block of two, second element the order within it.
    const int first = values[0];
    const int second_rank = values[1] < values[2] ? 0 : 1;
    ++counts[static_cast<std::size_t>(first * 2 + second_rank)];
  }
  EXPECT_LT(chi_square(counts, shuffles / 6.0), chi_square_critical_9999(5));
}

}  // namespace random_test
}  // namespace sim
