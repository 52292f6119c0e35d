#include "world/retry.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "sim/assert.hpp"

namespace lethe {
namespace {

constexpr sim::Duration kDurationMax = std::numeric_limits<sim::Duration>::max();

// min(cap, base * 2^exponent) without overflow. REQUIRES: 0 <= base <= cap, exponent >= 0.
sim::Duration doubled_capped(sim::Duration base, int exponent, sim::Duration cap) {
  if (base == 0) return 0;
  if (exponent >= 63) return cap;  // base >= 1, so base * 2^63 exceeds any cap
  const sim::Duration factor = sim::Duration{1} << exponent;
  if (base > cap / factor) return cap;
  return std::min(cap, base * factor);
}

// 3 * value, saturating at the int64 maximum. REQUIRES: value >= 0.
sim::Duration tripled(sim::Duration value) {
  return value > kDurationMax / 3 ? kDurationMax : value * 3;
}

}  // namespace

RetryPolicy::RetryPolicy(const Backoff& backoff, Jitter jitter) : backoff_(backoff), jitter_(jitter) {
  switch (backoff.kind) {
    case BackoffKind::None:
      base_ = 0;
      cap_ = 0;
      break;
    case BackoffKind::Constant:
      LETHE_ASSERT(backoff.delay >= 0, "RetryPolicy: constant backoff delay must be >= 0");
      base_ = backoff.delay;
      cap_ = backoff.delay;
      break;
    case BackoffKind::Exponential:
      LETHE_ASSERT(backoff.base > 0, "RetryPolicy: exponential backoff base must be > 0");
      LETHE_ASSERT(backoff.cap >= backoff.base, "RetryPolicy: exponential backoff cap must be >= base");
      base_ = backoff.base;
      cap_ = backoff.cap;
      break;
  }
  previous_delay_ = base_;
}

sim::Duration RetryPolicy::backoff_delay(int retry_number) const {
  LETHE_ASSERT(retry_number >= 1, "RetryPolicy: retry numbers start at 1");
  switch (backoff_.kind) {
    case BackoffKind::None: return 0;
    case BackoffKind::Constant: return backoff_.delay;
    case BackoffKind::Exponential: return doubled_capped(base_, retry_number - 1, cap_);
  }
  return 0;
}

sim::Duration RetryPolicy::delay(int retry_number, sim::Rng& rng) {
  const sim::Duration backoff = backoff_delay(retry_number);
  switch (jitter_) {
    case Jitter::None:
      return backoff;
    case Jitter::Full:
      return rng.between(0, backoff);
    case Jitter::Equal: {
      const sim::Duration half = backoff / 2;
      return half + rng.between(0, backoff - half);
    }
    case Jitter::Decorrelated: {
      if (retry_number == 1) reset();
      const sim::Duration upper = std::max(base_, tripled(previous_delay_));
      const sim::Duration drawn = std::min(cap_, rng.between(base_, upper));
      previous_delay_ = drawn;
      return drawn;
    }
  }
  return backoff;
}

sim::Duration RetryPolicy::min_delay(int retry_number) const {
  const sim::Duration backoff = backoff_delay(retry_number);
  switch (jitter_) {
    case Jitter::None: return backoff;
    case Jitter::Full: return 0;
    case Jitter::Equal: return backoff / 2;
    case Jitter::Decorrelated: return base_;
  }
  return 0;
}

sim::Duration RetryPolicy::max_delay(int retry_number) const {
  const sim::Duration backoff = backoff_delay(retry_number);
  switch (jitter_) {
    case Jitter::None:
    case Jitter::Full:
    case Jitter::Equal: return backoff;
    case Jitter::Decorrelated: return retry_number == 1 ? std::min(cap_, tripled(base_)) : cap_;
  }
  return backoff;
}

}  // namespace lethe
