// Tests of sim/distribution.hpp: the text forms, validation messages, empirical files, analytic values,
// statistical fit of the samples (quick suite and a 100k-sample "Slow" suite) and determinism.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/distribution.hpp"

namespace sim {
namespace distribution_test {

// A fresh directory per test (and per process), removed afterwards.
class TempDirectory {
 public:
  TempDirectory() {
    const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::path(::testing::TempDir()) /
            ("lethe_" + std::string(test->test_suite_name()) + "_" + test->name() + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDirectory(const TempDirectory&) = delete;
  TempDirectory& operator=(const TempDirectory&) = delete;

  const std::filesystem::path& path() const { return path_; }
  void write(const std::string& name, const std::string& contents) const {
    std::ofstream output(path_ / name, std::ios::binary);
    output << contents;
  }

 private:
  std::filesystem::path path_;
};

Distribution parse_or_die(std::string_view text, const std::filesystem::path& base_dir = {},
                          bool allow_negative = false) {
  std::string error;
  std::optional<Distribution> result = Distribution::parse(text, base_dir, error, allow_negative);
  if (!result) throw std::runtime_error("cannot parse \"" + std::string(text) + "\": " + error);
  return *result;
}

std::string parse_error(std::string_view text, const std::filesystem::path& base_dir = {},
                        bool allow_negative = false) {
  std::string error;
  const std::optional<Distribution> result = Distribution::parse(text, base_dir, error, allow_negative);
  EXPECT_FALSE(result.has_value()) << "\"" << text << "\" was accepted as " << result->to_string();
  return error;
}

std::vector<Duration> draw(const Distribution& distribution, Rng rng, int count) {
  std::vector<Duration> samples;
  samples.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) samples.push_back(distribution.sample(rng));
  return samples;
}

bool contains(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

constexpr std::string_view kLatencies =
    "# measured latencies\n"
    "12ms\n"
    "\n"
    "15ms   # a slow one\n"
    "  9ms\r\n"
    "12ms\n"
    "40ms\n"
    "1.5ms\n";
// Sorted: 1.5ms 9ms 12ms 12ms 15ms 40ms.

// Checks samples against survival(), quantile() and mean_ns(): a Kolmogorov-Smirnov distance below the 0.1%
// critical value (valid for integer-valued samples: the CDF is compared on both sides of every distinct value),
// quantiles within 5 standard errors, and the mean within 6 standard errors when the variance is finite.
void expect_fit(const Distribution& distribution, Rng rng, int count, bool check_mean) {
  std::vector<Duration> samples = draw(distribution, rng, count);
  std::sort(samples.begin(), samples.end());
  const double n = count;
  double distance = 0;
  for (std::size_t first = 0; first < samples.size();) {
    std::size_t last = first;
    while (last < samples.size() && samples[last] == samples[first]) ++last;
    const Duration value = samples[first];
    const double model_at = 1.0 - distribution.survival(value);
    const double model_below = value == INT64_MIN ? 0.0 : 1.0 - distribution.survival(value - 1);
    distance = std::max({distance, std::abs(static_cast<double>(last) / n - model_at),
                         std::abs(static_cast<double>(first) / n - model_below)});
    first = last;
  }
  EXPECT_LT(distance, 1.95 / std::sqrt(n)) << distribution.to_string();

  for (double q : {0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99}) {
    const Duration x = distribution.quantile(q);
    const double at_or_below =
        static_cast<double>(std::upper_bound(samples.begin(), samples.end(), x) - samples.begin()) / n;
    const double below = static_cast<double>(std::lower_bound(samples.begin(), samples.end(), x) - samples.begin()) / n;
    const double tolerance = 5.0 * std::sqrt(q * (1.0 - q) / n) + 1.0 / n;
    EXPECT_GE(at_or_below, q - tolerance) << distribution.to_string() << " q=" << q;
    EXPECT_LE(below, q + tolerance) << distribution.to_string() << " q=" << q;
  }

  if (!check_mean) return;
  double sum = 0;
  for (Duration sample : samples) sum += static_cast<double>(sample);
  const double mean = sum / n;
  double squares = 0;
  for (Duration sample : samples) {
    const double deviation = static_cast<double>(sample) - mean;
    squares += deviation * deviation;
  }
  const double standard_error = std::sqrt(squares / (n - 1)) / std::sqrt(n);
  EXPECT_NEAR(mean, distribution.mean_ns(), 6.0 * standard_error + 1e-9 * std::abs(mean)) << distribution.to_string();
}

struct FitCase {
  std::string_view text;
  bool allow_negative;
  bool check_mean;  // false where the variance is infinite
};

const std::vector<FitCase> kFitCases = {
    {"5ms", false, true},
    {"uniform(1ms, 5ms)", false, true},
    {"uniform(0ns, 3ns)", false, true},
    {"uniform(-50ms, 50ms)", true, true},
    {"exponential(mean=200ms)", false, true},
    {"normal(mean=1s, sd=200ms)", false, true},
    {"normal(mean=100ms, sd=200ms)", false, true},  // truncation removes 31% of the mass: resampling matters
    {"normal(mean=0s, sd=20ms)", true, true},       // clock skew: not truncated
    {"lognormal(median=200ms, p99=2s)", false, true},
    {"pareto(scale=100ms, shape=1.5)", false, false},
    {"pareto(scale=100ms, shape=3.5)", false, true},
    {"empirical(file=latencies.csv)", false, true},
};

void run_fit_cases(int count) {
  TempDirectory directory;
  directory.write("latencies.csv", std::string(kLatencies));
  for (const FitCase& fit_case : kFitCases) {
    SCOPED_TRACE(fit_case.text);
    const Distribution distribution = parse_or_die(fit_case.text, directory.path(), fit_case.allow_negative);
    expect_fit(distribution, Rng::derive(2024, fit_case.text), count, fit_case.check_mean);
  }
}

TEST(DistributionFit, FourThousandSamplesOfEachFormFitTheirLaw) { run_fit_cases(4000); }

TEST(DistributionFitSlow, AHundredThousandSamplesOfEachFormFitTheirLaw) { run_fit_cases(100000); }

TEST(DistributionParse, AcceptsEveryDocumentedFormAndPrintsItCanonically) {
  TempDirectory directory;
  directory.write("latencies.csv", std::string(kLatencies));
  directory.write("plain.csv", "12\n0.25\n");
  const std::vector<std::pair<std::string_view, std::string_view>> cases = {
      {"5ms", "5ms"},
      {"  1500ms ", "1.5s"},
      {"uniform(1ms, 5ms)", "uniform(1ms, 5ms)"},
      {"uniform( 1000us ,5ms )", "uniform(1ms, 5ms)"},
      {"exponential(mean=200ms)", "exponential(mean=200ms)"},
      {"exponential( mean = 0.2s )", "exponential(mean=200ms)"},
      {"normal(mean=1s, sd=200ms)", "normal(mean=1s, sd=200ms)"},
      {"normal(sd=200ms, mean=1s)", "normal(mean=1s, sd=200ms)"},
      {"lognormal(median=200ms, p99=2s)", "lognormal(median=200ms, p99=2s)"},
      {"pareto(scale=100ms, shape=1.5)", "pareto(scale=100ms, shape=1.5)"},
      {"pareto(scale=100ms, shape=2.0)", "pareto(scale=100ms, shape=2)"},
      {"pareto(scale=100ms, shape=1e-1)", "pareto(scale=100ms, shape=0.1)"},
      {"empirical(file=latencies.csv)", "empirical(file=latencies.csv)"},
      {"empirical(unit=ms, file=plain.csv)", "empirical(file=plain.csv, unit=ms)"},
  };
  for (const auto& [text, canonical] : cases) {
    EXPECT_EQ(parse_or_die(text, directory.path()).to_string(), canonical) << text;
  }
}

TEST(DistributionParse, ToStringParsesBackToAnEqualDistribution) {
  TempDirectory directory;
  directory.write("latencies.csv", std::string(kLatencies));
  for (const FitCase& fit_case : kFitCases) {
    const Distribution original = parse_or_die(fit_case.text, directory.path(), fit_case.allow_negative);
    const Distribution reparsed = parse_or_die(original.to_string(), directory.path(), fit_case.allow_negative);
    EXPECT_EQ(reparsed.to_string(), original.to_string());
    EXPECT_EQ(draw(reparsed, Rng(61), 200), draw(original, Rng(61), 200)) << fit_case.text;
    EXPECT_EQ(reparsed.mean_ns(), original.mean_ns()) << fit_case.text;
  }
}

RC_GTEST_PROP(DistributionParse, ToStringOfAnyUniformOrNormalParsesBackIdentically,
              (std::uint32_t low_ms, std::uint32_t width_us, bool is_normal)) {
  const Duration low = static_cast<Duration>(low_ms) * kMillisecond;
  const Duration width = static_cast<Duration>(width_us) * kMicrosecond;
  const std::string text = is_normal ? "normal(mean=" + format_duration(low) + ", sd=" + format_duration(width) + ")"
                                     : "uniform(" + format_duration(low) + ", " + format_duration(low + width) + ")";
  std::string error;
  const std::optional<Distribution> parsed = Distribution::parse(text, {}, error);
  RC_ASSERT(parsed.has_value());
  RC_ASSERT(parsed->to_string() == text);
  RC_ASSERT(Distribution::parse(parsed->to_string(), {}, error)->to_string() == text);
}

TEST(DistributionParse, RejectsBadTextNamingWhatWasFoundAndWhatIsAllowed) {
  const std::vector<std::pair<std::string_view, std::string_view>> cases = {
      {"gamma(k=2)", "unknown distribution \"gamma\""},
      {"uniform(5ms, 1ms)", "low \"5ms\" is above high \"1ms\""},
      {"uniform(1ms)", "expected two durations"},
      {"uniform(1ms, 2ms, 3ms)", "expected two durations"},
      {"uniform(low=1ms, high=2ms)", "expected two durations"},
      {"uniform(-1ms, 5ms)", "a negative duration is not allowed"},
      {"exponential(mean=200ms", "a closing ')' is missing"},
      {"exponential(mean=)", "argument \"mean\" has no value"},
      {"exponential(mean=200)", "the unit is missing"},
      {"exponential(200ms)", "expected named arguments"},
      {"exponential()", "missing argument \"mean\""},
      {"normal(mean=1s)", "missing argument \"sd\""},
      {"normal(mean=1s, sd=-2ms)", "sd: expected a duration"},
      {"normal(mean=1s, sd=2ms, sd=3ms)", "argument \"sd\" is given twice"},
      {"normal(mean=1s, stddev=2ms)", "unknown argument \"stddev\""},
      {"normal(mean=-1s, sd=2ms)", "a negative duration is not allowed"},
      {"lognormal(median=2s, p99=200ms)", "p99 \"200ms\" is below the median \"2s\""},
      {"lognormal(median=0s, p99=1s)", "median must be above 0"},
      {"pareto(scale=100ms, shape=0)", "shape must be a number above 0"},
      {"pareto(scale=100ms, shape=-1)", "shape must be a number above 0"},
      {"pareto(scale=100ms, shape=abc)", "shape must be a number above 0"},
      {"pareto(scale=100ms, shape=inf)", "shape must be a number above 0"},
      {"pareto(scale=100ms, shape=nan)", "shape must be a number above 0"},
      {"pareto(scale=100ms, shape=1.5x)", "shape must be a number above 0"},
      {"pareto(scale=0s, shape=1)", "scale must be above 0"},
      {"empirical()", "missing argument \"file\""},
      {"empirical(file=x.csv, unit=sec)", "unknown unit \"sec\""},
  };
  for (const auto& [text, reason] : cases) {
    const std::string error = parse_error(text);
    EXPECT_TRUE(contains(error, reason)) << "for \"" << text << "\": " << error;
    EXPECT_TRUE(contains(error, "\"" + std::string(text) + "\"")) << error;
  }
  // Unknown forms list every allowed form.
  const std::string unknown = parse_error("gamma(k=2)");
  for (std::string_view form : {"uniform(1ms, 5ms)", "exponential(mean=200ms)", "normal(mean=1s, sd=200ms)",
                                "lognormal(median=200ms, p99=2s)", "pareto(scale=100ms, shape=1.5)",
                                "empirical(file=latencies.csv)", "unit=ms"}) {
    EXPECT_TRUE(contains(unknown, form)) << unknown;
  }
  // A bad constant explains the duration problem and lists the distribution forms.
  const std::string constant = parse_error("5 sec");
  EXPECT_TRUE(contains(constant, "found \"5 sec\" (it contains whitespace)")) << constant;
  EXPECT_TRUE(contains(constant, "exponential(mean=200ms)")) << constant;
  EXPECT_TRUE(contains(parse_error(""), "empty")) << parse_error("");
  EXPECT_TRUE(contains(parse_error("   "), "empty"));
}

TEST(DistributionParse, WritesTheErrorOnlyOnFailure) {
  std::string error = "untouched";
  EXPECT_TRUE(Distribution::parse("uniform(1ms, 2ms)", {}, error).has_value());
  EXPECT_EQ(error, "untouched");
}

TEST(DistributionNegative, NegativeValuesOnlyWithAllowNegative) {
  Rng rng(1);
  EXPECT_EQ(parse_or_die("-5ms", {}, true).sample(rng), -5 * kMillisecond);
  EXPECT_TRUE(contains(parse_error("-5ms"), "negative"));

  const Distribution skew = parse_or_die("uniform(-50ms, 50ms)", {}, true);
  const std::vector<Duration> skews = draw(skew, Rng(67), 1000);
  EXPECT_LT(*std::min_element(skews.begin(), skews.end()), 0);
  EXPECT_GT(*std::max_element(skews.begin(), skews.end()), 0);

  const Distribution untruncated = parse_or_die("normal(mean=0s, sd=20ms)", {}, true);
  const std::vector<Duration> untruncated_samples = draw(untruncated, Rng(67), 1000);
  EXPECT_LT(*std::min_element(untruncated_samples.begin(), untruncated_samples.end()), 0);
  EXPECT_EQ(untruncated.quantile(0), INT64_MIN);
  EXPECT_NEAR(untruncated.survival(0), 0.5, 1e-12);
}

TEST(DistributionNegative, NoFormEverSamplesANegativeValueWithoutAllowNegative) {
  TempDirectory directory;
  directory.write("latencies.csv", std::string(kLatencies));
  for (const FitCase& fit_case : kFitCases) {
    if (fit_case.allow_negative) continue;
    const Distribution distribution = parse_or_die(fit_case.text, directory.path());
    for (Duration sample : draw(distribution, Rng(71), 5000)) ASSERT_GE(sample, 0) << fit_case.text;
  }
  const Distribution truncated = parse_or_die("normal(mean=0s, sd=1s)");
  for (Duration sample : draw(truncated, Rng(73), 5000)) ASSERT_GE(sample, 0);
}

TEST(DistributionEmpirical, LoadsValuesSkippingBlankLinesAndComments) {
  TempDirectory directory;
  directory.write("latencies.csv", std::string(kLatencies));
  const Distribution distribution = parse_or_die("empirical(file=latencies.csv)", directory.path());
  EXPECT_FALSE(distribution.is_constant());
  EXPECT_DOUBLE_EQ(distribution.mean_ns(), (1.5 + 9 + 12 + 12 + 15 + 40) * 1e6 / 6);
  EXPECT_EQ(distribution.quantile(0), 1500 * kMicrosecond);
  EXPECT_EQ(distribution.quantile(0.5), 12 * kMillisecond);     // third of six values
  EXPECT_EQ(distribution.quantile(0.51), 12 * kMillisecond);    // fourth
  EXPECT_EQ(distribution.quantile(0.67), 15 * kMillisecond);    // fifth
  EXPECT_EQ(distribution.quantile(1), 40 * kMillisecond);
  EXPECT_DOUBLE_EQ(distribution.survival(12 * kMillisecond), 2.0 / 6);
  EXPECT_DOUBLE_EQ(distribution.survival(0), 1.0);
  EXPECT_DOUBLE_EQ(distribution.survival(40 * kMillisecond), 0.0);
  for (Duration sample : draw(distribution, Rng(79), 1000)) {
    EXPECT_TRUE(sample == 1500 * kMicrosecond || sample == 9 * kMillisecond || sample == 12 * kMillisecond ||
                sample == 15 * kMillisecond || sample == 40 * kMillisecond)
        << sample;
  }
  // Copies share the samples and draw identically.
  const Distribution copy = distribution;
  EXPECT_EQ(draw(copy, Rng(83), 100), draw(distribution, Rng(83), 100));
}

TEST(DistributionEmpirical, PlainNumbersTakeTheUnitArgumentAndAreRoundedToNanoseconds) {
  TempDirectory directory;
  directory.write("plain.csv", "12\n0.25 # quarter\n\n12.3456789012\n");
  const Distribution distribution = parse_or_die("empirical(file=plain.csv, unit=ms)", directory.path());
  EXPECT_EQ(distribution.quantile(0), 250 * kMicrosecond);
  EXPECT_EQ(distribution.quantile(0.5), 12 * kMillisecond);
  EXPECT_EQ(distribution.quantile(1), 12345679);
  EXPECT_EQ(distribution.to_string(), "empirical(file=plain.csv, unit=ms)");
}

TEST(DistributionEmpirical, AcceptsAnAbsolutePathAndANestedRelativePath) {
  TempDirectory directory;
  std::filesystem::create_directories(directory.path() / "data");
  directory.write("data/x.csv", "3ms\n");
  EXPECT_EQ(parse_or_die("empirical(file=data/x.csv)", directory.path()).quantile(0.5), 3 * kMillisecond);
  const std::string absolute = "empirical(file=" + (directory.path() / "data" / "x.csv").string() + ")";
  EXPECT_EQ(parse_or_die(absolute, "/nonexistent-base").quantile(0.5), 3 * kMillisecond);
}

TEST(DistributionEmpirical, AMissingFileIsAnErrorNamingThePath) {
  TempDirectory directory;
  const std::string error = parse_error("empirical(file=nope.csv)", directory.path());
  EXPECT_TRUE(contains(error, (directory.path() / "nope.csv").string())) << error;
  EXPECT_TRUE(contains(error, "does not exist")) << error;
  EXPECT_TRUE(contains(error, "empirical(file=nope.csv)")) << error;
}

TEST(DistributionEmpirical, AMalformedLineIsAnErrorNamingTheFileAndLine) {
  TempDirectory directory;
  directory.write("latencies.csv", "# header\n12ms\n\n12 ms\n15ms\n");
  const std::string error = parse_error("empirical(file=latencies.csv)", directory.path());
  EXPECT_TRUE(contains(error, (directory.path() / "latencies.csv").string() + ":4: ")) << error;
  EXPECT_TRUE(contains(error, "found \"12 ms\"")) << error;
  EXPECT_TRUE(contains(error, "units: ns us ms s m h d")) << error;

  directory.write("units.csv", "12\n13ms\n");
  const std::string unit_error = parse_error("empirical(file=units.csv, unit=ms)", directory.path());
  EXPECT_TRUE(contains(unit_error, "units.csv:2: ")) << unit_error;
  EXPECT_TRUE(contains(unit_error, "expected a plain number")) << unit_error;
  EXPECT_TRUE(contains(unit_error, "found \"13ms\"")) << unit_error;

  directory.write("dot.csv", "12\n5.\n");
  const std::string dot_error = parse_error("empirical(file=dot.csv, unit=ms)", directory.path());
  EXPECT_TRUE(contains(dot_error, "dot.csv:2: value \"5.\" with unit=ms")) << dot_error;

  directory.write("negative.csv", "-3ms\n");
  EXPECT_TRUE(contains(parse_error("empirical(file=negative.csv)", directory.path()), "negative.csv:1: "));
  EXPECT_EQ(parse_or_die("empirical(file=negative.csv)", directory.path(), true).quantile(0.5), -3 * kMillisecond);
}

TEST(DistributionEmpirical, AnEmptyFileOrADirectoryIsAnError) {
  TempDirectory directory;
  directory.write("empty.csv", "# nothing yet\n\n");
  EXPECT_TRUE(contains(parse_error("empirical(file=empty.csv)", directory.path()), "contains no values"));
  std::filesystem::create_directories(directory.path() / "folder");
  EXPECT_TRUE(contains(parse_error("empirical(file=folder)", directory.path()), "is a directory"));
}

TEST(DistributionAnalytic, ConstantAndDefault) {
  const Distribution zero;
  EXPECT_TRUE(zero.is_constant());
  EXPECT_EQ(zero.to_string(), "0s");
  const Distribution constant = Distribution::constant(5 * kMillisecond);
  EXPECT_TRUE(constant.is_constant());
  EXPECT_EQ(constant.mean_ns(), 5e6);
  EXPECT_EQ(constant.survival(5 * kMillisecond - 1), 1.0);
  EXPECT_EQ(constant.survival(5 * kMillisecond), 0.0);
  EXPECT_EQ(constant.quantile(0.3), 5 * kMillisecond);
  // Sampling a constant consumes no draws.
  Rng used(89);
  Rng reference(89);
  EXPECT_EQ(constant.sample(used), 5 * kMillisecond);
  EXPECT_EQ(used.next(), reference.next());
  EXPECT_FALSE(parse_or_die("uniform(5ms, 5ms)").is_constant());
}

TEST(DistributionAnalytic, Uniform) {
  const Distribution uniform = parse_or_die("uniform(1ms, 5ms)");
  EXPECT_EQ(uniform.mean_ns(), 3e6);
  EXPECT_EQ(uniform.survival(kMillisecond - 1), 1.0);
  EXPECT_EQ(uniform.survival(5 * kMillisecond), 0.0);
  EXPECT_DOUBLE_EQ(uniform.survival(3 * kMillisecond), 2e6 / 4000001.0);
  EXPECT_EQ(uniform.quantile(0), kMillisecond);
  EXPECT_EQ(uniform.quantile(0.5), 3 * kMillisecond);
  EXPECT_EQ(uniform.quantile(1), 5 * kMillisecond);
  const Distribution whole = parse_or_die("uniform(0ns, 9223372036854775807ns)");
  EXPECT_EQ(whole.quantile(1), kTimeMax);
  EXPECT_EQ(whole.quantile(0), 0);
}

TEST(DistributionAnalytic, Exponential) {
  const Distribution exponential = Distribution::exponential(200 * kMillisecond);
  EXPECT_EQ(exponential.to_string(), "exponential(mean=200ms)");
  EXPECT_EQ(exponential.mean_ns(), 2e8);
  EXPECT_EQ(exponential.quantile(0.5), 138629436);
  EXPECT_NEAR(exponential.survival(200 * kMillisecond), std::exp(-1.0), 1e-15);
  EXPECT_EQ(exponential.quantile(1), kTimeMax);
  EXPECT_THROW(Distribution::exponential(-1), std::invalid_argument);
  const Distribution degenerate = parse_or_die("exponential(mean=0s)");
  EXPECT_EQ(degenerate.quantile(1), 0);
  EXPECT_EQ(degenerate.survival(0), 0.0);
  for (Duration sample : draw(degenerate, Rng(97), 100)) EXPECT_EQ(sample, 0);
}

TEST(DistributionAnalytic, NormalTruncatedAndNot) {
  const Distribution standard = parse_or_die("normal(mean=0s, sd=1s)", {}, true);
  EXPECT_NEAR(static_cast<double>(standard.quantile(0.975)), 1959963984.54, 2.0);
  EXPECT_NEAR(static_cast<double>(standard.quantile(1e-10)), -6361340902.40, 10.0);
  EXPECT_EQ(standard.quantile(0.5), 0);
  EXPECT_EQ(standard.quantile(1), kTimeMax);
  EXPECT_EQ(standard.mean_ns(), 0.0);

  const Distribution half = parse_or_die("normal(mean=0s, sd=1s)");  // truncated at 0: the half-normal
  EXPECT_NEAR(half.mean_ns(), 797884560.80, 1.0);
  EXPECT_NEAR(static_cast<double>(half.quantile(0.5)), 674489750.20, 2.0);
  EXPECT_EQ(half.quantile(0), 0);
  EXPECT_EQ(half.survival(-1), 1.0);
  EXPECT_NEAR(half.survival(0), 1.0, 1e-15);

  const Distribution latency = parse_or_die("normal(mean=1s, sd=200ms)");
  EXPECT_NEAR(latency.mean_ns(), 1000000297.34, 1.0);
  EXPECT_NEAR(latency.survival(kSecond), 0.5, 1e-6);

  const Distribution point = parse_or_die("normal(mean=1s, sd=0s)");
  EXPECT_EQ(point.mean_ns(), 1e9);
  EXPECT_EQ(point.quantile(0.9), kSecond);
  EXPECT_EQ(point.survival(kSecond), 0.0);
  for (Duration sample : draw(point, Rng(101), 100)) EXPECT_EQ(sample, kSecond);
}

TEST(DistributionAnalytic, Lognormal) {
  const Distribution lognormal = parse_or_die("lognormal(median=200ms, p99=2s)");
  EXPECT_NEAR(static_cast<double>(lognormal.quantile(0.5)), 2e8, 1.0);
  EXPECT_NEAR(static_cast<double>(lognormal.quantile(0.99)), 2e9, 2.0);
  EXPECT_NEAR(lognormal.survival(2 * kSecond), 0.01, 1e-9);
  EXPECT_NEAR(lognormal.mean_ns(), 326410211.10, 1.0);
  EXPECT_EQ(lognormal.survival(0), 1.0);
  EXPECT_EQ(lognormal.quantile(0), 0);
  EXPECT_EQ(lognormal.quantile(1), kTimeMax);
  const Distribution point = parse_or_die("lognormal(median=2s, p99=2s)");
  EXPECT_EQ(point.quantile(0.3), 2 * kSecond);
  for (Duration sample : draw(point, Rng(103), 100)) EXPECT_EQ(sample, 2 * kSecond);
}

TEST(DistributionAnalytic, Pareto) {
  const Distribution pareto = parse_or_die("pareto(scale=100ms, shape=1.5)");
  EXPECT_NEAR(pareto.survival(200 * kMillisecond), 0.35355339059327379, 1e-15);
  EXPECT_EQ(pareto.survival(100 * kMillisecond), 1.0);
  EXPECT_NEAR(static_cast<double>(pareto.quantile(0.5)), 158740105.20, 1.0);
  EXPECT_EQ(pareto.quantile(0), 100 * kMillisecond);
  EXPECT_EQ(pareto.quantile(1), kTimeMax);
  EXPECT_NEAR(pareto.mean_ns(), 3e8, 1e-6);
  EXPECT_EQ(parse_or_die("pareto(scale=100ms, shape=1)").mean_ns(), INFINITY);
  // A tiny shape overflows to infinity: clamped to kTimeMax, never UB.
  for (Duration sample : draw(parse_or_die("pareto(scale=1s, shape=0.01)"), Rng(107), 1000)) {
    ASSERT_GE(sample, kSecond);
  }
}

TEST(DistributionAnalytic, QuantileOutsideTheUnitIntervalThrows) {
  const Distribution distribution = parse_or_die("exponential(mean=1s)");
  EXPECT_THROW(distribution.quantile(-0.1), std::invalid_argument);
  EXPECT_THROW(distribution.quantile(1.1), std::invalid_argument);
  EXPECT_THROW(distribution.quantile(std::nan("")), std::invalid_argument);
}

// FNV-style fold of the first 1000 samples from Rng(2024): computed once (glibc libm), hard-coded, and matched by
// an independent Python transcription (same libm) of the sampling rules, including the truncated-normal resampling.
std::uint64_t thousand_sample_hash(const Distribution& distribution) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (Duration sample : draw(distribution, Rng(2024), 1000)) {
    hash = (hash ^ static_cast<std::uint64_t>(sample)) * 0x100000001b3ULL;
  }
  return hash;
}

TEST(DistributionDeterminism, FirstThousandSamplesAreStableAndMatchTheGoldenHashes) {
  TempDirectory directory;
  directory.write("latencies.csv", std::string(kLatencies));
  const std::vector<std::pair<std::string_view, std::uint64_t>> golden = {
      {"uniform(1ms, 5ms)", 0xde06445aadbdd4d9ULL},
      {"exponential(mean=200ms)", 0xe2eadc4e6e28f6cbULL},
      {"normal(mean=100ms, sd=200ms)", 0xb43849da68f6d101ULL},
      {"lognormal(median=200ms, p99=2s)", 0xdd4b845114918ac0ULL},
      {"pareto(scale=100ms, shape=1.5)", 0x5bdcd729f6ca2d9cULL},
      {"empirical(file=latencies.csv)", 0x0d04c3d4ccb33c85ULL},
  };
  for (const auto& [text, hash] : golden) {
    const std::uint64_t first = thousand_sample_hash(parse_or_die(text, directory.path()));
    const std::uint64_t second = thousand_sample_hash(parse_or_die(text, directory.path()));
    EXPECT_EQ(first, second) << text;
    EXPECT_EQ(first, hash) << text << " hash 0x" << std::hex << first;
  }
}


// Samples are clamped to [-kDurationMax, kDurationMax]: a heavy tail never draws a delay whose sum with the
// current time could overflow, and the draws per sample are unchanged.
TEST(DistributionLimits, HeavyTailSamplesAreClampedToTheLargestDuration) {
  const Distribution heavy = parse_or_die("pareto(scale=1000d, shape=0.01)");
  Rng rng(7);
  for (int i = 0; i < 1000; ++i) {
    const sim::Duration value = heavy.sample(rng);
    EXPECT_GE(value, 1000 * sim::kDay);
    EXPECT_LE(value, sim::kDurationMax);
  }
  const Distribution skew = parse_or_die("normal(mean=-3000d, sd=3000d)", {}, true);
  for (int i = 0; i < 1000; ++i) EXPECT_GE(skew.sample(rng), -sim::kDurationMax);
  EXPECT_EQ(Distribution::constant(sim::kTimeMax).sample(rng), sim::kDurationMax);
}

TEST(DistributionLimits, LargestMagnitudeIsTheLargestWrittenDuration) {
  EXPECT_EQ(parse_or_die("uniform(1ms, 5ms)").largest_magnitude(), 5 * kMillisecond);
  EXPECT_EQ(parse_or_die("pareto(scale=100ms, shape=1.5)").largest_magnitude(), 100 * kMillisecond);
  EXPECT_EQ(parse_or_die("lognormal(median=200ms, p99=2s)").largest_magnitude(), 2 * sim::kSecond);
  EXPECT_EQ(Distribution::constant(INT64_MIN).largest_magnitude(), sim::kTimeMax);
  EXPECT_EQ(Distribution::constant(-3 * sim::kSecond).largest_magnitude(), 3 * sim::kSecond);
}

}  // namespace distribution_test
}  // namespace sim
