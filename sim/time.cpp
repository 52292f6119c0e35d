#include "sim/time.hpp"

#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace sim {
namespace {

__extension__ using Uint128 = unsigned __int128;

struct Unit {
  std::string_view name;
  std::uint64_t nanoseconds;
};

// Largest first: format_duration() prefers the larger unit on a tie.
constexpr std::array<Unit, 7> kUnits{{
    {"d", static_cast<std::uint64_t>(kDay)},
    {"h", static_cast<std::uint64_t>(kHour)},
    {"m", static_cast<std::uint64_t>(kMinute)},
    {"s", static_cast<std::uint64_t>(kSecond)},
    {"ms", static_cast<std::uint64_t>(kMillisecond)},
    {"us", static_cast<std::uint64_t>(kMicrosecond)},
    {"ns", static_cast<std::uint64_t>(kNanosecond)},
}};

constexpr std::uint64_t kMagnitudeMaxPositive = static_cast<std::uint64_t>(INT64_MAX);
constexpr std::uint64_t kMagnitudeMaxNegative = kMagnitudeMaxPositive + 1;  // |INT64_MIN|
// A fraction with more significant digits than this cannot be a whole number of nanoseconds in any unit
// (the largest unit, a day, is 2^16 * 3^3 * 5^11 ns).
constexpr std::size_t kFractionDigitsMax = 18;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

const Unit* find_unit(std::string_view name) {
  for (const Unit& unit : kUnits) {
    if (unit.name == name) return &unit;
  }
  return nullptr;
}

std::uint64_t power_of_ten(std::size_t exponent) {
  std::uint64_t result = 1;
  for (std::size_t i = 0; i < exponent; ++i) result *= 10;
  return result;
}

// Parses a run of decimal digits into `value`; false if it does not fit in 64 bits.
bool parse_digits(std::string_view digits, std::uint64_t& value) {
  value = 0;
  for (char c : digits) {
    const Uint128 next = static_cast<Uint128>(value) * 10 + static_cast<unsigned>(c - '0');
    if (next > UINT64_MAX) return false;
    value = static_cast<std::uint64_t>(next);
  }
  return true;
}

bool all_zeros(std::string_view digits) { return digits.find_first_not_of('0') == std::string_view::npos; }

// Exact decimal text of magnitude_ns in `unit`, or empty when the value has no finite decimal expansion there.
std::string format_in_unit(std::uint64_t magnitude_ns, const Unit& unit) {
  std::string text = std::to_string(magnitude_ns / unit.nanoseconds);
  std::uint64_t remainder = magnitude_ns % unit.nanoseconds;
  if (remainder != 0) {
    text += '.';
    // A terminating expansion of r / unit has at most 16 digits (see kFractionDigitsMax); 20 is a safe bound.
    for (int digit = 0; digit < 20 && remainder != 0; ++digit) {
      remainder *= 10;  // remainder < 8.64e13, so this cannot overflow
      text += static_cast<char>('0' + remainder / unit.nanoseconds);
      remainder %= unit.nanoseconds;
    }
    if (remainder != 0) return {};
  }
  text += unit.name;
  return text;
}

enum class Precision { kExact, kRoundToNanosecond };

std::optional<Duration> parse(std::string_view text, std::string& error, bool allow_negative, Precision precision) {
  const auto fail = [&](std::string_view reason) -> std::optional<Duration> {
    error = allow_negative ? "expected a duration like \"250ms\", \"1.5s\" or \"-20ms\" (units: ns us ms s m h d)"
                           : "expected a duration like \"250ms\" or \"1.5s\" (units: ns us ms s m h d)";
    error += ", found \"";
    error += text;
    error += "\" (";
    error += reason;
    error += ")";
    return std::nullopt;
  };
  if (text.empty()) return fail("an empty string");
  for (char c : text) {
    if (is_space(c)) return fail("it contains whitespace");
  }
  std::size_t position = 0;
  bool negative = false;
  if (text[0] == '+') return fail("a '+' sign is not allowed");
  if (text[0] == '-') {
    if (!allow_negative) return fail("a negative duration is not allowed here");
    negative = true;
    position = 1;
  }
  const std::size_t integer_begin = position;
  while (position < text.size() && is_digit(text[position])) ++position;
  const std::string_view integer_digits = text.substr(integer_begin, position - integer_begin);
  if (integer_digits.empty()) {
    if (position < text.size() && text[position] == '.') return fail("a digit is required before the decimal point");
    return fail("the number is missing");
  }
  std::string_view fraction_digits;
  if (position < text.size() && text[position] == '.') {
    const std::size_t fraction_begin = ++position;
    while (position < text.size() && is_digit(text[position])) ++position;
    fraction_digits = text.substr(fraction_begin, position - fraction_begin);
    if (fraction_digits.empty()) return fail("a digit is required after the decimal point");
  }
  const std::string_view unit_name = text.substr(position);
  if (unit_name.empty()) {
    if (all_zeros(integer_digits) && all_zeros(fraction_digits)) return Duration{0};
    return fail("the unit is missing");
  }
  const Unit* unit = find_unit(unit_name);
  if (unit == nullptr) {
    std::string reason = "unknown unit \"";
    reason += unit_name;
    reason += "\"";
    return fail(reason);
  }

  const std::uint64_t magnitude_max = negative ? kMagnitudeMaxNegative : kMagnitudeMaxPositive;
  const std::string_view too_large = negative
                                         ? "beyond the smallest duration, -9223372036854775808ns (about -106751 days)"
                                         : "beyond the largest duration, 9223372036854775807ns (about 106751 days)";
  std::uint64_t integer_value = 0;
  if (!parse_digits(integer_digits, integer_value)) return fail(too_large);
  const Uint128 integer_ns = static_cast<Uint128>(integer_value) * unit->nanoseconds;
  if (integer_ns > magnitude_max) return fail(too_large);

  // The fraction contributes fraction_value * unit / 10^digits ns, which must be a whole number.
  const std::size_t significant = fraction_digits.find_last_not_of('0');
  fraction_digits =
      significant == std::string_view::npos ? std::string_view{} : fraction_digits.substr(0, significant + 1);
  const std::string_view too_precise = "more precise than one nanosecond";
  const bool rounding = precision == Precision::kRoundToNanosecond;
  if (fraction_digits.size() > kFractionDigitsMax) {
    if (!rounding) return fail(too_precise);
    fraction_digits = fraction_digits.substr(0, kFractionDigitsMax);
  }
  std::uint64_t fraction_value = 0;
  parse_digits(fraction_digits, fraction_value);  // at most 18 digits: always fits
  const Uint128 fraction_scaled = static_cast<Uint128>(fraction_value) * unit->nanoseconds;
  const std::uint64_t fraction_denominator = power_of_ten(fraction_digits.size());
  const auto fraction_remainder = static_cast<std::uint64_t>(fraction_scaled % fraction_denominator);
  if (fraction_remainder != 0 && !rounding) return fail(too_precise);
  // Ties away from zero: round the magnitude half up. remainder < denominator <= 10^18, so doubling fits.
  const bool round_up = 2 * fraction_remainder >= fraction_denominator;
  const Uint128 magnitude = integer_ns + fraction_scaled / fraction_denominator + (round_up ? 1 : 0);
  if (magnitude > magnitude_max) return fail(too_large);

  const auto magnitude64 = static_cast<std::uint64_t>(magnitude);
  if (!negative) return static_cast<Duration>(magnitude64);
  // Two's complement negation in unsigned arithmetic, so that |INT64_MIN| is representable on the way.
  return static_cast<Duration>(std::uint64_t{0} - magnitude64);
}

}  // namespace

std::optional<Duration> parse_duration(std::string_view text, std::string& error, bool allow_negative) {
  return parse(text, error, allow_negative, Precision::kExact);
}

std::optional<Duration> parse_duration_rounded(std::string_view text, std::string& error, bool allow_negative) {
  return parse(text, error, allow_negative, Precision::kRoundToNanosecond);
}

std::string format_duration(Duration d) {
  if (d == 0) return "0s";
  const bool negative = d < 0;
  const std::uint64_t magnitude =
      negative ? std::uint64_t{0} - static_cast<std::uint64_t>(d) : static_cast<std::uint64_t>(d);
  std::string best;
  for (const Unit& unit : kUnits) {  // largest unit first: it wins a tie ("1234.567s", not "1234567us")
    if (magnitude < unit.nanoseconds) continue;  // never "0.1s": "100ms" reads better (nanoseconds always qualify)
    std::string candidate = format_in_unit(magnitude, unit);
    if (!candidate.empty() && (best.empty() || candidate.size() < best.size())) best = std::move(candidate);
  }
  return negative ? "-" + best : best;
}

std::string format_human(Duration d) {
  if (d == 0) return "0s";
  const std::string sign = d < 0 ? "-" : "";
  const double magnitude = std::fabs(static_cast<double>(d));
  if (magnitude < 1e3) return fmt::format("{}{}ns", sign, static_cast<long long>(magnitude));
  struct HumanUnit {
    const char* name;
    double nanoseconds;
    double below;  // the next unit takes over from this many of this one
  };
  static constexpr std::array<HumanUnit, 6> kHumanUnits{{{"us", 1e3, 1e3},
                                                         {"ms", 1e6, 1e3},
                                                         {"s", 1e9, 120},
                                                         {"m", 60e9, 120},
                                                         {"h", 3600e9, 48},
                                                         {"d", 86400e9, HUGE_VAL}}};
  for (const HumanUnit& unit : kHumanUnits) {
    const double value = magnitude / unit.nanoseconds;
    // Round to four significant digits first, so that 999.96ms is promoted to "1s" rather than shown as "1000ms".
    const double digits = std::floor(std::log10(value)) + 1;
    const double scale = std::pow(10.0, 4 - digits);
    const double rounded = std::round(value * scale) / scale;
    if (rounded >= unit.below) continue;
    // Beyond four digits (only days get there) whole units, never an exponent.
    if (rounded >= 1e4) return fmt::format("{}{:.0f}{}", sign, value, unit.name);
    return fmt::format("{}{:.4g}{}", sign, rounded, unit.name);
  }
  return sign + "?";  // unreachable: days take everything
}

}  // namespace sim
