// sim/random.hpp — the only source of randomness in the deterministic folders (sim/, core/, protocol/, check/, world/).
//
// Contract:
// - Rng is xoshiro256** (Blackman & Vigna) whose 256-bit state is filled by four successive splitmix64 outputs
//   from the seed. The integer output sequence depends only on the seed: it is identical on every compiler,
//   standard library and platform.
// - Every distribution is written here (never std::*_distribution, whose algorithms differ between standard
//   libraries). Integer draws (next, below, between, shuffle) are bit-exact everywhere. Floating-point draws
//   use std::log, std::exp, std::cos, std::pow and std::sqrt: bit-exact for a given C library, but two different
//   libm implementations may differ in the last bit of those functions.
// - Draw counts are fixed so that a change of a parameter never shifts the rest of a stream: uniform, bernoulli,
//   exponential and pareto consume exactly one next(); normal and lognormal exactly two (Box-Muller, nothing
//   cached). below() and between() consume one next() except on a rejection in Lemire's method (probability
//   below bound / 2^64). shuffle of n elements calls below() n - 1 times.
// - Named sub-streams: derive(root, name) depends only on (root seed, name). Adding, removing or drawing from one
//   stream never changes another's draws, and a derived stream does not depend on how many draws its parent made.
// - Precondition violations (bound 0, low > high, negative mean, NaN probability, ...) throw
//   std::invalid_argument: they are lethe bugs, because scenario values are validated before a run starts.
// - Not thread-safe: one Rng per simulation (per fiber scheduler thread). Not cryptographic.
#pragma once

#include <cstdint>
#include <iterator>
#include <string_view>
#include <utility>

namespace sim {

// The standard normal distribution's 99th percentile, Phi^-1(0.99): a lognormal given by its median and p99.
inline constexpr double kNormalQuantile99 = 2.3263478740408408;

// One step of splitmix64: advances `state` by the golden gamma and returns the mixed value.
std::uint64_t splitmix64(std::uint64_t& state);

// Stable 64-bit FNV-1a of the bytes of `name` (same value on every platform and in every run).
std::uint64_t hash_name(std::string_view name);

class Rng {
 public:
  explicit Rng(std::uint64_t seed);

  // Named sub-stream of a root seed: its seed is a splitmix64 mix of the root seed and hash_name(stream_name).
  static Rng derive(std::uint64_t root_seed, std::string_view stream_name);
  // Child stream of this one: Rng::derive(seed(), stream_name). Independent of the draws already made.
  Rng derive(std::string_view stream_name) const;

  // The seed this Rng was constructed from (for a derived Rng, its derived seed).
  std::uint64_t seed() const { return seed_; }

  std::uint64_t next();
  // Uniform in [0, bound). REQUIRES: bound > 0. Lemire's nearly-divisionless multiply-and-reject: unbiased.
  std::uint64_t below(std::uint64_t bound);
  // Uniform in [low, high], both ends included. REQUIRES: low <= high. The full int64 range is allowed.
  std::int64_t between(std::int64_t low, std::int64_t high);
  // Uniform in [0, 1): the top 53 bits of next() times 2^-53.
  double uniform();
  // True with the given probability. Always consumes one draw, also when probability <= 0 (always false) or
  // >= 1 (always true), so that varying the probability never shifts later draws. REQUIRES: not NaN.
  bool bernoulli(double probability);
  // Exponential with the given mean (inverse CDF). REQUIRES: mean >= 0 and finite. Result >= 0.
  double exponential(double mean);
  // Normal via Box-Muller (cosine branch only; no hidden cached second value). REQUIRES: finite mean,
  // standard_deviation >= 0 and finite. Always two draws, also when standard_deviation == 0.
  double normal(double mean, double standard_deviation);
  // Lognormal whose median and 99th percentile are the given values: exp(ln(median) + sigma * Z) with
  // sigma = ln(p99 / median) / z(0.99). REQUIRES: 0 < median <= p99, both finite. Two draws.
  double lognormal_median_p99(double median, double p99);
  // Pareto (type I): scale * U^(-1 / shape) with U in (0, 1]; result >= scale, may be +inf for tiny shapes.
  // REQUIRES: scale > 0, shape > 0, both finite. One draw.
  double pareto(double scale, double shape);

  // Fisher-Yates, from the back, with below(): the same permutation on every platform.
  template <class RandomIt>
  void shuffle(RandomIt first, RandomIt last) {
    using Difference = typename std::iterator_traits<RandomIt>::difference_type;
    const Difference count = last - first;
    for (Difference remaining = count; remaining > 1; --remaining) {
      const auto chosen = static_cast<Difference>(below(static_cast<std::uint64_t>(remaining)));
      using std::swap;
      swap(first[remaining - 1], first[chosen]);
    }
  }

 private:
  std::uint64_t state_[4];
  std::uint64_t seed_;
};

}  // namespace sim
