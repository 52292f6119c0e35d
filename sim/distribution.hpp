// sim/distribution.hpp — a probability distribution of durations, as written in scenario files.
//
// Forms accepted by parse() (docs/scenarios.md "Values"; spaces around arguments are optional, named arguments may
// come in any order, each exactly once, unknown names are errors):
//   "5ms"                                  constant
//   "uniform(1ms, 5ms)"                    every whole nanosecond in [low, high] equally likely; low <= high
//   "exponential(mean=200ms)"              mean >= 0 (mean 0 always gives 0)
//   "normal(mean=1s, sd=200ms)"            sd >= 0; truncated at 0 by RESAMPLING (a proper truncated normal, no
//                                          point mass at 0) unless allow_negative, in which case it is not truncated
//   "lognormal(median=200ms, p99=2s)"      0 < median <= p99
//   "pareto(scale=100ms, shape=1.5)"       scale > 0, shape > 0 (a plain number); shape <= 1 has an infinite mean
//   "empirical(file=latencies.csv)"        one duration per line ("12ms")
//   "empirical(file=x.csv, unit=ms)"       one plain number per line ("12", "0.25"), in that unit
// Empirical files: the path is relative to `base_dir` (absolute paths are kept); blank lines are skipped, '#'
// starts a comment (whole line or after a value); surrounding whitespace and '\r' are ignored; at least one value
// is required. Values in files are rounded to the nearest nanosecond (ties away from zero), because measured data
// often carries more digits; everywhere else durations must be exact (see parse_duration). Sampling picks one of
// the values uniformly (a value listed twice is twice as likely). File names cannot contain ','. A file must be a
// regular file (not a device or FIFO) of at most kMaxSampleFileBytes, checked before it is read.
//
// Contract:
// - sample() is a pure function of the Rng stream: the number of draws is fixed per form (constant: none;
//   uniform, exponential, pareto, empirical: those of one Rng call; normal and lognormal: two per attempt, and a
//   truncated normal makes a new attempt while the value is negative: a geometric number of attempts, each
//   succeeding with probability >= 1/2 because its mean is >= 0, so 2 attempts or fewer on average). Results are
//   rounded to the nearest nanosecond and clamped to [-kDurationMax, kDurationMax] (sim/time.hpp), so a heavy
//   tail (pareto, lognormal) never draws a delay whose sum with the current time could overflow. They are never
//   negative unless allow_negative was used.
// - mean_ns(), survival() and quantile() are analytic for the continuous law before rounding (uniform and
//   empirical are discrete and exact). quantile(q) is the smallest x with P(X <= x) >= q for the discrete forms.
//   mean_ns() is +infinity for pareto with shape <= 1. They describe the law before sample()'s clamping.
// - largest_magnitude() is the largest |duration| the text was written with (a parameter, or an empirical
//   file's value): what a scenario's range check compares with kDurationMax.
// - to_string() is canonical and parse() reads it back to an equal distribution when given the same base_dir and
//   allow_negative (empirical keeps the file argument as written and re-reads the file).
// - Copies are cheap: empirical samples are shared, immutable.
// - parse() writes `error` only on failure. Factories and queries throw std::invalid_argument on a violated
//   REQUIRES (a lethe bug, not a user error).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/random.hpp"
#include "sim/time.hpp"

namespace sim {

// The largest empirical sample file read (64 MiB: millions of samples).
inline constexpr std::uintmax_t kMaxSampleFileBytes = std::uintmax_t{64} << 20;

class Distribution {
 public:
  Distribution();  // constant 0
  static Distribution constant(Duration value);  // any value, negative ones included (the caller's choice)
  // REQUIRES: mean >= 0.
  static Distribution exponential(Duration mean);
  static std::optional<Distribution> parse(std::string_view text, const std::filesystem::path& base_dir,
                                           std::string& error, bool allow_negative = false);

  Duration sample(Rng& rng) const;
  double mean_ns() const;
  // P(X > x).
  double survival(Duration x) const;
  // Inverse CDF. REQUIRES: 0 <= q <= 1. quantile(1) of an unbounded form is kTimeMax; quantile(0) of an
  // untruncated normal is INT64_MIN.
  Duration quantile(double q) const;
  // The largest magnitude among the written durations (kTimeMax for INT64_MIN).
  Duration largest_magnitude() const;
  // True only for the constant form (which is also the only form whose sample() consumes no draws).
  bool is_constant() const;
  std::string to_string() const;

 private:
  Duration sample_unclamped(Rng& rng) const;

  enum class Kind { kConstant, kUniform, kExponential, kNormal, kLognormal, kPareto, kEmpirical };

  Kind kind_ = Kind::kConstant;
  Duration first_ = 0;        // constant value, uniform low, exponential/normal mean, lognormal median, pareto scale
  Duration second_ = 0;       // uniform high, normal sd, lognormal p99
  double shape_ = 0;          // pareto shape
  bool truncated_at_zero_ = true;  // normal only
  std::shared_ptr<const std::vector<Duration>> samples_;  // empirical only: sorted ascending, non-empty
  std::string file_;          // empirical: the file argument as written
  std::string unit_;          // empirical: the unit argument, empty when lines carry their own units

  friend class DistributionParser;
};

}  // namespace sim
