// sim/time.hpp — virtual time and durations, and their text form.
//
// Contract:
// - `Time` is virtual nanoseconds since the start of a simulation; `Duration` is a signed count of nanoseconds.
//   Both are plain integers: no real clock is ever read here.
// - Text form (docs/scenarios.md "Values"): "<number><unit>", the number an integer or a decimal ("250ms", "1.5s",
//   "7d", "0s"), units ns us ms s m h d (m = minute). A bare "0" is also accepted. No spaces, no '+', no exponent,
//   no ".5s" or "5.s" (digits are required on both sides of a decimal point).
// - parse_duration() is exact: a value that is not a whole number of nanoseconds ("0.5ns", "1.0000000001s") is
//   rejected rather than rounded, and so is anything beyond the int64 range. Trailing zeros are fine ("1.500s").
//   parse_duration_rounded(), for measured data only, rounds to the nearest nanosecond instead.
// - A bare "0" (also "0.0", and "-0" when negatives are allowed) is the only number accepted without a unit.
// - format_duration() gives the shortest text that parse_duration() reads back as exactly the same value;
//   parse_duration(format_duration(d)) == d for every d >= 0, and for every d when negatives are allowed.
// - format_human() is for people, not for reading back: at most four significant digits and a unit ("176.6ms",
//   "10.19s", "17.75m"); every human-facing text (explanations, summaries, reports) uses it, JSON keeps integer
//   nanoseconds.
// - Nothing here throws; errors are reported through the `error` out-parameter, which is written only on failure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sim {

using Time = std::int64_t;      // virtual nanoseconds since simulation start
using Duration = std::int64_t;  // nanoseconds (negative only where a caller allows it, e.g. clock skew)

inline constexpr Duration kNanosecond = 1;
inline constexpr Duration kMicrosecond = 1000;
inline constexpr Duration kMillisecond = 1000000;
inline constexpr Duration kSecond = 1000000000;
inline constexpr Duration kMinute = 60 * kSecond;
inline constexpr Duration kHour = 60 * kMinute;
inline constexpr Duration kDay = 24 * kHour;
inline constexpr Time kTimeMax = INT64_MAX;  // also "never": a timer due then never fires

// The largest duration the simulation takes from outside: 3650 days (about 10 years). Scenario values are
// refused above it, and distribution samples are clamped to [-kDurationMax, kDurationMax]. A run's virtual time
// stays below its workload plus its drain (each at most kDurationMax, plus an hour), so now plus 25 such
// durations still fits in int64 nanoseconds (292 years): the sums of simulated code never overflow.
inline constexpr Duration kDurationMax = 3650 * kDay;

// time + delay, saturated at kTimeMax (and at INT64_MIN for a negative delay): virtual time never wraps around.
constexpr Time saturating_add(Time time, Duration delay) {
  if (delay > 0 && time > kTimeMax - delay) return kTimeMax;
  if (delay < 0 && time < INT64_MIN - delay) return INT64_MIN;
  return time + delay;
}

// Parses a duration (see the contract above). A leading '-' is accepted only when `allow_negative`; the range is
// then [INT64_MIN, INT64_MAX] ns, otherwise [0, INT64_MAX] ns. On failure returns nullopt and sets `error` to one
// sentence naming what was found, why it was refused and what is allowed.
std::optional<Duration> parse_duration(std::string_view text, std::string& error, bool allow_negative = false);

// Like parse_duration, but a value finer than one nanosecond is rounded to the nearest nanosecond (ties away from
// zero) instead of being refused; decimal digits beyond the 18th are ignored. For measured data (empirical
// distribution files), which often carries more digits than a nanosecond.
std::optional<Duration> parse_duration_rounded(std::string_view text, std::string& error, bool allow_negative = false);

// Shortest exact text of `d` whose number does not start with "0." (so 100 ms is "100ms", never "0.1s"):
// 0 -> "0s", 1500000000 -> "1.5s", 250000000 -> "250ms", 90 s -> "90s", 36 h -> "36h", 7 days -> "7d",
// 1500 ns -> "1.5us", 1234567 ms -> "1234.567s". Among texts of equal length the larger unit wins.
// Negative values get a leading '-'.
std::string format_duration(Duration d);

// Readable and rounded: below 1us in whole nanoseconds ("850ns"), otherwise four significant digits in the largest
// unit that keeps the number at least 1 (us, ms, s below 2 minutes, m below 2 hours, h below 2 days, then d):
// 176609048 -> "176.6ms", 10194977018 -> "10.19s", 1065 s -> "17.75m", 0 -> "0s", 5 s -> "5s". A value that rounds
// up to the next unit is written in it (999999999 -> "1s", not "1000ms"). Negative values get a leading '-'.
std::string format_human(Duration d);

}  // namespace sim
