#include "sim/random.hpp"

#include <cmath>
#include <numbers>
#include <stdexcept>

#include "sim/assert.hpp"

namespace sim {
namespace {

__extension__ using Uint128 = unsigned __int128;

constexpr std::uint64_t kFnvOffsetBasis = 0xcbf29ce484222325ULL;
constexpr std::uint64_t kFnvPrime = 0x100000001b3ULL;
constexpr std::uint64_t rotate_left(std::uint64_t value, int shift) {
  return (value << shift) | (value >> (64 - shift));
}


}  // namespace

std::uint64_t splitmix64(std::uint64_t& state) {
  state += 0x9e3779b97f4a7c15ULL;
  std::uint64_t mixed = state;
  mixed = (mixed ^ (mixed >> 30)) * 0xbf58476d1ce4e5b9ULL;
  mixed = (mixed ^ (mixed >> 27)) * 0x94d049bb133111ebULL;
  return mixed ^ (mixed >> 31);
}

std::uint64_t hash_name(std::string_view name) {
  std::uint64_t hash = kFnvOffsetBasis;
  for (char c : name) {
    hash ^= static_cast<unsigned char>(c);
    hash *= kFnvPrime;
  }
  return hash;
}

Rng::Rng(std::uint64_t seed) : state_{}, seed_(seed) {
  std::uint64_t mixer = seed;
  // Four consecutive splitmix64 outputs are distinct (splitmix64 is a bijection of its counter), so the
  // xoshiro state is never all zero.
  for (std::uint64_t& word : state_) word = splitmix64(mixer);
}

Rng Rng::derive(std::uint64_t root_seed, std::string_view stream_name) {
  std::uint64_t root_mixer = root_seed;
  std::uint64_t stream_mixer = splitmix64(root_mixer) ^ hash_name(stream_name);
  return Rng(splitmix64(stream_mixer));
}

Rng Rng::derive(std::string_view stream_name) const { return Rng::derive(seed_, stream_name); }

std::uint64_t Rng::next() {
  const std::uint64_t result = rotate_left(state_[1] * 5, 7) * 9;
  const std::uint64_t shifted = state_[1] << 17;
  state_[2] ^= state_[0];
  state_[3] ^= state_[1];
  state_[1] ^= state_[2];
  state_[0] ^= state_[3];
  state_[2] ^= shifted;
  state_[3] = rotate_left(state_[3], 45);
  return result;
}

std::uint64_t Rng::below(std::uint64_t bound) {
  LETHE_ASSERT(bound > 0, "Rng::below: bound must be > 0");
  Uint128 product = static_cast<Uint128>(next()) * bound;
  auto low_bits = static_cast<std::uint64_t>(product);
  if (low_bits < bound) {
    // 2^64 mod bound: products whose low half falls under it belong to an incomplete last interval.
    const std::uint64_t threshold = (std::uint64_t{0} - bound) % bound;
    while (low_bits < threshold) {
      product = static_cast<Uint128>(next()) * bound;
      low_bits = static_cast<std::uint64_t>(product);
    }
  }
  return static_cast<std::uint64_t>(product >> 64);
}

std::int64_t Rng::between(std::int64_t low, std::int64_t high) {
  LETHE_ASSERT(low <= high, "Rng::between: low must be <= high");
  const std::uint64_t span = static_cast<std::uint64_t>(high) - static_cast<std::uint64_t>(low);
  const std::uint64_t offset = span == UINT64_MAX ? next() : below(span + 1);
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(low) + offset);
}

double Rng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

bool Rng::bernoulli(double probability) {
  LETHE_ASSERT(!std::isnan(probability), "Rng::bernoulli: probability is NaN");
  // uniform() is in [0, 1): p <= 0 is never above it and p >= 1 always is, with the draw still consumed.
  return uniform() < probability;
}

double Rng::exponential(double mean) {
  LETHE_ASSERT(std::isfinite(mean) && mean >= 0, "Rng::exponential: mean must be finite and >= 0");
  // log1p(-u) with u in [0, 1) is finite and <= 0.
  return -mean * std::log1p(-uniform());
}

double Rng::normal(double mean, double standard_deviation) {
  LETHE_ASSERT(std::isfinite(mean), "Rng::normal: mean must be finite");
  LETHE_ASSERT(std::isfinite(standard_deviation) && standard_deviation >= 0,
          "Rng::normal: standard deviation must be finite and >= 0");
  const double radius_uniform = uniform();
  const double angle_uniform = uniform();
  const double radius = std::sqrt(-2.0 * std::log1p(-radius_uniform));
  const double standard = radius * std::cos(2.0 * std::numbers::pi * angle_uniform);
  return mean + standard_deviation * standard;
}

double Rng::lognormal_median_p99(double median, double p99) {
  LETHE_ASSERT(std::isfinite(median) && std::isfinite(p99), "Rng::lognormal_median_p99: median and p99 must be finite");
  LETHE_ASSERT(median > 0, "Rng::lognormal_median_p99: median must be > 0");
  LETHE_ASSERT(p99 >= median, "Rng::lognormal_median_p99: p99 must be >= median");
  const double sigma = std::log(p99 / median) / kNormalQuantile99;
  return std::exp(std::log(median) + normal(0.0, sigma));
}

double Rng::pareto(double scale, double shape) {
  LETHE_ASSERT(std::isfinite(scale) && scale > 0, "Rng::pareto: scale must be finite and > 0");
  LETHE_ASSERT(std::isfinite(shape) && shape > 0, "Rng::pareto: shape must be finite and > 0");
  const double survival = 1.0 - uniform();  // in (0, 1]
  return scale * std::pow(survival, -1.0 / shape);
}

}  // namespace sim
