// Tests of sim/time.hpp: the duration text form, both ways.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/time.hpp"

namespace sim {
namespace time_test {

std::optional<Duration> parse(std::string_view text, bool allow_negative = false) {
  std::string error;
  return parse_duration(text, error, allow_negative);
}

std::string parse_error(std::string_view text, bool allow_negative = false) {
  std::string error;
  const std::optional<Duration> result = parse_duration(text, error, allow_negative);
  EXPECT_FALSE(result.has_value()) << "\"" << text << "\" was accepted as " << result.value_or(0);
  return error;
}

rc::Gen<Duration> non_negative_duration() {
  const std::vector<Duration> units = {kNanosecond, kMicrosecond, kMillisecond, kSecond, kMinute, kHour, kDay};
  return rc::gen::oneOf(
      // Anywhere in the range (mostly huge values).
      rc::gen::inRange<Duration>(0, kTimeMax),
      // Small values first, growing with the size.
      rc::gen::map(rc::gen::arbitrary<Duration>(),
                   [](Duration value) { return value == INT64_MIN ? kTimeMax : (value < 0 ? -value : value); }),
      // Round values in some unit, plus a few nanoseconds or a half unit: the human-looking cases.
      rc::gen::map(rc::gen::tuple(rc::gen::inRange<Duration>(0, 100000), rc::gen::elementOf(units),
                                  rc::gen::inRange<int>(0, 3)),
                   [](const std::tuple<Duration, Duration, int>& parts) {
                     const auto [count, unit, extra] = parts;
                     return count * unit + (extra == 1 ? unit / 2 : (extra == 2 ? 7 : 0));
                   }),
      rc::gen::element<Duration>(0, 1, kTimeMax, kTimeMax - 1, kDay, 90 * kSecond));
}

TEST(DurationParse, AcceptsEveryUnit) {
  const std::vector<std::pair<std::string_view, Duration>> cases = {
      {"7ns", 7},          {"7us", 7 * kMicrosecond}, {"7ms", 7 * kMillisecond}, {"7s", 7 * kSecond},
      {"7m", 7 * kMinute}, {"7h", 7 * kHour},         {"7d", 7 * kDay},          {"0s", 0},
      {"250ms", 250 * kMillisecond},                  {"00012ms", 12 * kMillisecond},
  };
  for (const auto& [text, expected] : cases) EXPECT_EQ(parse(text), expected) << text;
}

TEST(DurationParse, AcceptsExactDecimals) {
  const std::vector<std::pair<std::string_view, Duration>> cases = {
      {"1.5s", 1500 * kMillisecond}, {"0.25ms", 250 * kMicrosecond}, {"1.5m", 90 * kSecond},
      {"0.5d", 12 * kHour},          {"1.500s", 1500 * kMillisecond}, {"0.000000001s", 1},
      {"2.0ns", 2},                  {"1.000000000000000000000s", kSecond},
      {"0.0000000000000115740740740740740740740740740740740740740740740740740740740740741d", 0}};
  // The last one is 1ns / 1 day, not a terminating decimal: it must be refused, not rounded to 0 or 1.
  for (std::size_t i = 0; i + 1 < cases.size(); ++i) {
    EXPECT_EQ(parse(cases[i].first), cases[i].second) << cases[i].first;
  }
  EXPECT_FALSE(parse(cases.back().first).has_value());
  EXPECT_EQ(parse("1.3333m"), 79998 * kMillisecond);
}

TEST(DurationParse, AcceptsABareZeroOnly) {
  EXPECT_EQ(parse("0"), 0);
  EXPECT_EQ(parse("0.0"), 0);
  EXPECT_EQ(parse("-0", true), 0);
  EXPECT_NE(parse_error("5").find("the unit is missing"), std::string::npos);
}

TEST(DurationParse, AcceptsTheWholeInt64Range) {
  EXPECT_EQ(parse("9223372036854775807ns"), kTimeMax);
  EXPECT_EQ(parse("9223372036.854775807s"), kTimeMax);
  EXPECT_EQ(parse("106751d"), 106751 * kDay);
  EXPECT_EQ(parse("-9223372036854775808ns", true), INT64_MIN);
  EXPECT_EQ(parse("-9223372036.854775808s", true), INT64_MIN);
}

TEST(DurationParse, RejectsOverflowSayingWhatTheLimitIs) {
  for (std::string_view text : {"9223372036854775808ns", "106752d", "99999999999999999999999s",
                                "9223372036.854775808s", "18446744073709551616ns"}) {
    const std::string error = parse_error(text);
    EXPECT_NE(error.find("beyond the largest duration"), std::string::npos) << error;
  }
  EXPECT_NE(parse_error("-9223372036854775809ns", true).find("beyond the smallest duration, -9223372036854775808ns"),
            std::string::npos);
}

TEST(DurationParse, RejectsMalformedTextWithAMessageSayingWhatWasFoundAndWhatIsAllowed) {
  const std::vector<std::pair<std::string_view, std::string_view>> cases = {
      {"", "an empty string"},
      {"5", "the unit is missing"},
      {"1.5", "the unit is missing"},
      {"ms", "the number is missing"},
      {"5 sec", "whitespace"},
      {" 5ms", "whitespace"},
      {"12ms ", "whitespace"},
      {"5sec", "unknown unit \"sec\""},
      {"5MS", "unknown unit \"MS\""},
      {"5m3s", "unknown unit \"m3s\""},
      {"1e3ms", "unknown unit \"e3ms\""},
      {"1.5.3s", "unknown unit \".3s\""},
      {".5s", "a digit is required before the decimal point"},
      {"5.s", "a digit is required after the decimal point"},
      {"+5s", "'+' sign"},
      {"-5s", "negative duration is not allowed"},
      {"0.5ns", "more precise than one nanosecond"},
      {"1.0000000001s", "more precise than one nanosecond"},
      {"0.1234567890123456789s", "more precise than one nanosecond"},
  };
  for (const auto& [text, reason] : cases) {
    const std::string error = parse_error(text);
    EXPECT_NE(error.find("found \"" + std::string(text) + "\""), std::string::npos) << error;
    EXPECT_NE(error.find("units: ns us ms s m h d"), std::string::npos) << error;
    EXPECT_NE(error.find("\"250ms\""), std::string::npos) << error;
    EXPECT_NE(error.find(reason), std::string::npos) << "for \"" << text << "\": " << error;
  }
  EXPECT_EQ(parse_error("5 sec"),
            "expected a duration like \"250ms\" or \"1.5s\" (units: ns us ms s m h d), found \"5 sec\" "
            "(it contains whitespace)");
}

TEST(DurationParse, AcceptsNegativeValuesOnlyWhenAllowed) {
  EXPECT_EQ(parse("-50ms", true), -50 * kMillisecond);
  EXPECT_EQ(parse("-1.5s", true), -1500 * kMillisecond);
  EXPECT_FALSE(parse("-50ms").has_value());
  EXPECT_FALSE(parse("--50ms", true).has_value());
  EXPECT_NE(parse_error("-", true).find("the number is missing"), std::string::npos);
  EXPECT_NE(parse_error("x", true).find("\"-20ms\""), std::string::npos);  // the example shows a negative
}

TEST(DurationParse, WritesTheErrorOnlyOnFailure) {
  std::string error = "untouched";
  EXPECT_EQ(parse_duration("5ms", error), 5 * kMillisecond);
  EXPECT_EQ(error, "untouched");
}

TEST(DurationParseRounded, RoundsToTheNearestNanosecondWithTiesAwayFromZero) {
  const auto rounded = [](std::string_view text, bool allow_negative = false) {
    std::string error;
    return parse_duration_rounded(text, error, allow_negative);
  };
  EXPECT_EQ(rounded("0.4ns"), 0);
  EXPECT_EQ(rounded("0.5ns"), 1);
  EXPECT_EQ(rounded("1.49ns"), 1);
  EXPECT_EQ(rounded("-0.5ns", true), -1);
  EXPECT_EQ(rounded("12.3456789012ms"), 12345679);
  EXPECT_EQ(rounded("1.0000000001s"), kSecond);
  EXPECT_EQ(rounded("0.1234567891234567891234s"), 123456789);
  EXPECT_EQ(rounded("9223372036.8547758074s"), kTimeMax);
  EXPECT_FALSE(rounded("9223372036.8547758075s").has_value());  // rounds to one past the maximum
  EXPECT_FALSE(rounded("12 ms").has_value());
  EXPECT_FALSE(rounded("-1ms").has_value());
}

TEST(DurationFormat, GivesTheShortestExactHumanForm) {
  const std::vector<std::pair<Duration, std::string_view>> cases = {
      {0, "0s"},
      {1500 * kMillisecond, "1.5s"},
      {250 * kMillisecond, "250ms"},
      {100 * kMillisecond, "100ms"},
      {90 * kSecond, "90s"},
      {kMinute, "1m"},
      {kHour, "1h"},
      {36 * kHour, "36h"},
      {7 * kDay, "7d"},
      {1, "1ns"},
      {1500, "1.5us"},
      {1001, "1001ns"},
      {1234567 * kMicrosecond, "1.234567s"},  // ties "1234567us": the larger unit wins
      {1234567 * kMillisecond, "1234.567s"},
      {-20 * kMillisecond, "-20ms"},
      {kTimeMax, "9223372036.854775807s"},
      {INT64_MIN, "-9223372036.854775808s"},
  };
  for (const auto& [value, text] : cases) EXPECT_EQ(format_duration(value), text) << value;
  EXPECT_EQ(parse(format_duration(INT64_MIN), true), INT64_MIN);
}

RC_GTEST_PROP(DurationRoundTrip, ParseOfFormatGivesBackAnyNonNegativeDuration, ()) {
  const Duration value = *non_negative_duration();
  std::string error;
  const std::optional<Duration> parsed = parse_duration(format_duration(value), error);
  RC_ASSERT(parsed.has_value());
  RC_ASSERT(*parsed == value);
}

RC_GTEST_PROP(DurationRoundTrip, ParseOfFormatGivesBackAnyNegativeDurationWhenNegativesAreAllowed, ()) {
  const Duration value = -*non_negative_duration();  // INT64_MIN: see DurationFormat.GivesTheShortestExactHumanForm
  std::string error;
  const std::optional<Duration> parsed = parse_duration(format_duration(value), error, true);
  RC_ASSERT(parsed.has_value());
  RC_ASSERT(*parsed == value);
}

RC_GTEST_PROP(DurationFormat, IsNeverLongerThanNanosecondsAndIsAFixedPointOfParse, ()) {
  const Duration value = *non_negative_duration();
  const std::string text = format_duration(value);
  RC_ASSERT(text.size() <= std::to_string(value).size() + 2);
  RC_ASSERT(text.rfind("0.", 0) != 0);
  std::string error;
  RC_ASSERT(format_duration(*parse_duration(text, error)) == text);
}

RC_GTEST_PROP(DurationParse, AWholeNumberOfUnitsIsExact, (std::uint32_t count)) {
  const std::vector<std::pair<std::string, Duration>> units = {{"ns", kNanosecond}, {"us", kMicrosecond},
                                                               {"ms", kMillisecond}, {"s", kSecond},
                                                               {"m", kMinute},      {"h", kHour},
                                                               {"d", kDay}};
  const auto& [name, nanoseconds] = *rc::gen::elementOf(units);
  const Duration whole = count % 100000;
  std::string error;
  RC_ASSERT(parse_duration(std::to_string(whole) + name, error) == whole * nanoseconds);
}

TEST(DurationHuman, WritesFourSignificantDigitsAndTheLargestUnitThatKeepsTheNumberAtLeastOne) {
  const std::vector<std::pair<Duration, std::string>> cases = {
      {0, "0s"},
      {850, "850ns"},
      {1500, "1.5us"},
      {176609048, "176.6ms"},
      {10194977018, "10.19s"},
      {1065 * kSecond, "17.75m"},
      {5 * kSecond, "5s"},
      {999999999, "1s"},                  // rounds up into the next unit, never "1000ms"
      {119999 * kMillisecond, "2m"},      // 119.999s rounds to 120s, which minutes take
      {90 * kSecond, "90s"},
      {36 * kHour, "36h"},
      {7 * kDay, "7d"},
      {-250 * kMillisecond, "-250ms"},
      {INT64_MIN, "-106752d"},  // whole days past four digits, never an exponent
  };
  for (const auto& [value, text] : cases) EXPECT_EQ(format_human(value), text) << value;
}

}  // namespace time_test
}  // namespace sim
