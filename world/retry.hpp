// world/retry.hpp — how long a client waits before retrying a failed call.
//
// A RetryPolicy combines a backoff (docs/scenarios.md sink.backoff) with a jitter
// (sink.jitter), with the formulas of the AWS Architecture Blog analysis
// "Exponential Backoff and Jitter". For the n-th retry (n >= 1) the backoff is
//   none:                      d(n) = 0
//   constant(delay):           d(n) = delay
//   exponential(base, cap):    d(n) = min(cap, base * 2^(n-1))   (saturates: never overflows)
// and the delay actually slept is, with uniform[a, b] a whole number of
// nanoseconds in [a, b] (both ends included):
//   jitter none:          d(n)
//   jitter full:          uniform[0, d(n)]
//   jitter equal:         floor(d(n)/2) + uniform[0, d(n) - floor(d(n)/2)]      in [d(n)/2, d(n)]
//   jitter decorrelated:  min(cap, uniform[base, max(base, 3 * previous)])       in [base, cap]
// where `previous` is the delay this policy returned for the previous retry,
// and base for retry 1 (the decorrelated sequence ignores d(n)). For a constant
// backoff, base = cap = delay (decorrelated then always gives `delay`); for
// backoff none, base = cap = 0 (every delay is 0 whatever the jitter).
//
// State: only the decorrelated jitter has any (the previous delay). delay(1)
// starts a new sequence, so one policy object can serve one call after another
// from the same client; reset() does the same explicitly. Give each
// concurrently retrying activity its own RetryPolicy.
//
// Determinism: randomness comes only from the Rng passed to delay(). Jitter
// none draws nothing; every other jitter draws exactly one Rng::between per
// delay (which is one next() except on Lemire's rare rejection), also when the
// range is a single value, so a change of base or cap never shifts a stream
// by a different number of draws.
//
// Does not: decide whether an error is retryable, count retries, or sleep —
// the caller does (see world/sink.hpp for a client that does all three).
#pragma once

#include "core/config.hpp"
#include "sim/random.hpp"
#include "sim/time.hpp"

namespace lethe {

class RetryPolicy {
 public:
  // REQUIRES (the loader guarantees them): constant delay >= 0; exponential 0 < base <= cap.
  // Violations throw std::invalid_argument (a lethe bug, not a user error).
  RetryPolicy(const Backoff& backoff, Jitter jitter);

  // The delay before retry number `retry_number` (1 = the first retry). Draws from `rng`
  // as documented above. REQUIRES: retry_number >= 1 (else std::invalid_argument).
  sim::Duration delay(int retry_number, sim::Rng& rng);

  // The un-jittered backoff d(n) for retry n >= 1 (no draws, no state).
  sim::Duration backoff_delay(int retry_number) const;

  // Forget the previous decorrelated delay (delay(1) does this too).
  void reset() { previous_delay_ = base_; }

  // The smallest and largest delay this policy can ever return for retry n, whatever the draws.
  sim::Duration min_delay(int retry_number) const;
  sim::Duration max_delay(int retry_number) const;

  BackoffKind backoff_kind() const { return backoff_.kind; }
  Jitter jitter() const { return jitter_; }
  // The decorrelated sequence's floor and ceiling: exponential base/cap, constant delay/delay, none 0/0.
  sim::Duration base() const { return base_; }
  sim::Duration cap() const { return cap_; }

 private:
  Backoff backoff_;
  Jitter jitter_;
  sim::Duration base_ = 0;
  sim::Duration cap_ = 0;
  sim::Duration previous_delay_ = 0;
};

}  // namespace lethe
