#include "sim/distribution.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <map>
#include <numbers>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include "sim/assert.hpp"
#include "sim/regular_file.hpp"
#include "sim/text.hpp"

namespace sim {
namespace {

constexpr double kTwoToThe63 = 0x1p63;
constexpr double kInfinity = std::numeric_limits<double>::infinity();

constexpr std::string_view kForms =
    "\"5ms\" (constant), \"uniform(1ms, 5ms)\", \"exponential(mean=200ms)\", \"normal(mean=1s, sd=200ms)\", "
    "\"lognormal(median=200ms, p99=2s)\", \"pareto(scale=100ms, shape=1.5)\", \"empirical(file=latencies.csv)\" "
    "or \"empirical(file=latencies.csv, unit=ms)\"";


// Nearest whole nanosecond (ties away from zero), clamped to the int64 range.
Duration to_nanoseconds(double value) {
  LETHE_ASSERT(!std::isnan(value), "Distribution: NaN value");
  if (value >= kTwoToThe63) return kTimeMax;
  if (value <= -kTwoToThe63) return std::numeric_limits<Duration>::min();
  return static_cast<Duration>(std::llround(value));
}

double standard_normal_cdf(double x) { return 0.5 * std::erfc(-x / std::numbers::sqrt2); }
double standard_normal_survival(double x) { return 0.5 * std::erfc(x / std::numbers::sqrt2); }
double standard_normal_density(double x) { return std::exp(-0.5 * x * x) / std::sqrt(2.0 * std::numbers::pi); }

// Phi^-1(p) by bisection on erfc, which stays accurate deep in the lower tail; the upper half by symmetry
// (1 - p is exact for p >= 0.5). Returns -inf for 0 and +inf for 1.
double inverse_standard_normal(double p) {
  if (p <= 0) return -kInfinity;
  if (p >= 1) return kInfinity;
  if (p > 0.5) return -inverse_standard_normal(1.0 - p);
  double low = -40.0;  // Phi(-40) underflows to 0 < p
  double high = 0.0;   // Phi(0) = 0.5 >= p
  for (int iteration = 0; iteration < 200; ++iteration) {
    const double middle = 0.5 * (low + high);
    if (middle == low || middle == high) break;
    if (standard_normal_cdf(middle) < p) {
      low = middle;
    } else {
      high = middle;
    }
  }
  return high;
}

double lognormal_sigma(Duration median, Duration p99) {
  return std::log(static_cast<double>(p99) / static_cast<double>(median)) / kNormalQuantile99;
}

// Index of the smallest value whose CDF reaches q, among `count` equally likely sorted values.
std::uint64_t discrete_quantile_index(double q, double count, std::uint64_t index_max) {
  const double index = std::ceil(q * count) - 1.0;
  if (index <= 0) return 0;
  if (index >= static_cast<double>(index_max)) return index_max;
  return static_cast<std::uint64_t>(index);
}

using ::lethe::text::trim;

std::string in_quotes(std::string_view text) {
  std::string result = "\"";
  result += text;
  result += "\"";
  return result;
}

std::string format_number(double value) {
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);  // shortest exact round trip
  return std::string(buffer, result.ptr);
}

bool is_unit(std::string_view name) {
  return name == "ns" || name == "us" || name == "ms" || name == "s" || name == "m" || name == "h" || name == "d";
}

}  // namespace

// Parses the text form; a friend of Distribution so that it can fill in the fields directly.
class DistributionParser {
 public:
  DistributionParser(std::string_view text, const std::filesystem::path& base_dir, std::string& error,
                     bool allow_negative)
      : text_(text), base_dir_(base_dir), error_(error), allow_negative_(allow_negative) {}

  std::optional<Distribution> run() {
    const std::string_view body = trim(text_);
    if (body.empty()) return fail_plain("expected a distribution of durations, found an empty string; allowed: " +
                                        std::string(kForms));
    const std::size_t open = body.find('(');
    if (open == std::string_view::npos) return parse_constant(body);
    if (body.back() != ')') return fail("a closing ')' is missing at the end");
    const std::string_view name = trim(body.substr(0, open));
    split_arguments(body.substr(open + 1, body.size() - open - 2));
    if (name == "uniform") return parse_uniform();
    if (name == "exponential") return parse_exponential();
    if (name == "normal") return parse_normal();
    if (name == "lognormal") return parse_lognormal();
    if (name == "pareto") return parse_pareto();
    if (name == "empirical") return parse_empirical();
    return fail("unknown distribution " + in_quotes(name) + "; allowed: " + std::string(kForms));
  }

 private:
  struct Argument {
    std::string_view key;  // empty for a positional argument
    std::string_view value;
  };

  std::optional<Distribution> fail_plain(std::string message) {
    error_ = std::move(message);
    return std::nullopt;
  }

  std::optional<Distribution> fail(const std::string& detail) {
    return fail_plain("in distribution " + in_quotes(text_) + ": " + detail);
  }

  std::optional<Distribution> parse_constant(std::string_view body) {
    std::string duration_error;
    const std::optional<Duration> value = parse_duration(body, duration_error, allow_negative_);
    if (!value) return fail_plain(duration_error + "; a distribution is written as one of " + std::string(kForms));
    return Distribution::constant(*value);
  }

  void split_arguments(std::string_view inner) {
    if (trim(inner).empty()) return;
    while (true) {
      const std::size_t comma = inner.find(',');
      const std::string_view piece = trim(inner.substr(0, comma));
      const std::size_t equals = piece.find('=');
      if (equals == std::string_view::npos) {
        arguments_.push_back({{}, piece});
      } else {
        arguments_.push_back({trim(piece.substr(0, equals)), trim(piece.substr(equals + 1))});
      }
      if (comma == std::string_view::npos) break;
      inner.remove_prefix(comma + 1);
    }
  }

  // Checks that the arguments are named, known, unique and non-empty, and that every required one is present.
  // Fills `named_` (key -> value).
  bool collect_named(std::string_view form, std::initializer_list<std::string_view> required,
                     std::initializer_list<std::string_view> optional = {}) {
    const auto known = [&](std::string_view key) {
      return std::find(required.begin(), required.end(), key) != required.end() ||
             std::find(optional.begin(), optional.end(), key) != optional.end();
    };
    for (const Argument& argument : arguments_) {
      if (argument.key.empty()) {
        fail("expected named arguments as in " + std::string(form) + ", found " + in_quotes(argument.value));
        return false;
      }
      if (!known(argument.key)) {
        fail("unknown argument " + in_quotes(argument.key) + "; expected " + std::string(form));
        return false;
      }
      if (named_.count(argument.key) != 0) {
        fail("argument " + in_quotes(argument.key) + " is given twice");
        return false;
      }
      if (argument.value.empty()) {
        fail("argument " + in_quotes(argument.key) + " has no value");
        return false;
      }
      named_[argument.key] = argument.value;
    }
    for (std::string_view key : required) {
      if (named_.count(key) == 0) {
        fail("missing argument " + in_quotes(key) + "; expected " + std::string(form));
        return false;
      }
    }
    return true;
  }

  std::optional<Duration> duration_argument(std::string_view key, std::string_view value, bool allow_negative) {
    std::string duration_error;
    std::optional<Duration> result = parse_duration(value, duration_error, allow_negative);
    if (!result) fail(std::string(key) + ": " + duration_error);
    return result;
  }

  std::optional<Distribution> parse_uniform() {
    const std::string_view form = "uniform(1ms, 5ms)";
    if (arguments_.size() != 2 || !arguments_[0].key.empty() || !arguments_[1].key.empty()) {
      return fail("expected two durations, low and high, as in " + std::string(form));
    }
    const std::optional<Duration> low = duration_argument("low", arguments_[0].value, allow_negative_);
    if (!low) return std::nullopt;
    const std::optional<Duration> high = duration_argument("high", arguments_[1].value, allow_negative_);
    if (!high) return std::nullopt;
    if (*low > *high) {
      return fail("low " + in_quotes(arguments_[0].value) + " is above high " + in_quotes(arguments_[1].value));
    }
    Distribution result;
    result.kind_ = Distribution::Kind::kUniform;
    result.first_ = *low;
    result.second_ = *high;
    return result;
  }

  std::optional<Distribution> parse_exponential() {
    if (!collect_named("exponential(mean=200ms)", {"mean"})) return std::nullopt;
    const std::optional<Duration> mean = duration_argument("mean", named_["mean"], false);
    if (!mean) return std::nullopt;
    return Distribution::exponential(*mean);
  }

  std::optional<Distribution> parse_normal() {
    if (!collect_named("normal(mean=1s, sd=200ms)", {"mean", "sd"})) return std::nullopt;
    const std::optional<Duration> mean = duration_argument("mean", named_["mean"], allow_negative_);
    if (!mean) return std::nullopt;
    const std::optional<Duration> deviation = duration_argument("sd", named_["sd"], false);
    if (!deviation) return std::nullopt;
    Distribution result;
    result.kind_ = Distribution::Kind::kNormal;
    result.first_ = *mean;
    result.second_ = *deviation;
    result.truncated_at_zero_ = !allow_negative_;
    return result;
  }

  std::optional<Distribution> parse_lognormal() {
    if (!collect_named("lognormal(median=200ms, p99=2s)", {"median", "p99"})) return std::nullopt;
    const std::optional<Duration> median = duration_argument("median", named_["median"], false);
    if (!median) return std::nullopt;
    const std::optional<Duration> p99 = duration_argument("p99", named_["p99"], false);
    if (!p99) return std::nullopt;
    if (*median <= 0) return fail("median must be above 0, found " + in_quotes(named_["median"]));
    if (*p99 < *median) {
      return fail("p99 " + in_quotes(named_["p99"]) + " is below the median " + in_quotes(named_["median"]) +
                  "; it must be at least the median");
    }
    Distribution result;
    result.kind_ = Distribution::Kind::kLognormal;
    result.first_ = *median;
    result.second_ = *p99;
    return result;
  }

  std::optional<Distribution> parse_pareto() {
    if (!collect_named("pareto(scale=100ms, shape=1.5)", {"scale", "shape"})) return std::nullopt;
    const std::optional<Duration> scale = duration_argument("scale", named_["scale"], false);
    if (!scale) return std::nullopt;
    if (*scale <= 0) return fail("scale must be above 0, found " + in_quotes(named_["scale"]));
    const std::string_view shape_text = named_["shape"];
    double shape = 0;
    const auto [end, status] = std::from_chars(shape_text.data(), shape_text.data() + shape_text.size(), shape);
    if (status != std::errc{} || end != shape_text.data() + shape_text.size() || !std::isfinite(shape) ||
        shape <= 0) {
      return fail("shape must be a number above 0, such as 1.5, found " + in_quotes(shape_text));
    }
    Distribution result;
    result.kind_ = Distribution::Kind::kPareto;
    result.first_ = *scale;
    result.shape_ = shape;
    return result;
  }

  std::optional<Distribution> parse_empirical() {
    if (!collect_named("empirical(file=latencies.csv) or empirical(file=latencies.csv, unit=ms)", {"file"},
                       {"unit"})) {
      return std::nullopt;
    }
    const std::string_view file = named_["file"];
    std::string_view unit;
    if (named_.count("unit") != 0) {
      unit = named_["unit"];
      if (!is_unit(unit)) return fail("unknown unit " + in_quotes(unit) + "; allowed: ns us ms s m h d");
    }
    std::optional<std::vector<Duration>> samples = load_samples(base_dir_ / std::filesystem::path(file), unit);
    if (!samples) return std::nullopt;
    std::sort(samples->begin(), samples->end());
    Distribution result;
    result.kind_ = Distribution::Kind::kEmpirical;
    result.samples_ = std::make_shared<const std::vector<Duration>>(std::move(*samples));
    result.file_ = std::string(file);
    result.unit_ = std::string(unit);
    return result;
  }

  std::optional<std::vector<Duration>> load_samples(const std::filesystem::path& path, std::string_view unit) {
    FileReadFailure failure;
    std::optional<std::string> content = read_regular_file(path, kMaxSampleFileBytes, failure);
    if (!content) {
      using Kind = FileReadFailure::Kind;
      switch (failure.kind) {
        case Kind::Missing: fail("file " + in_quotes(path.string()) + " does not exist"); break;
        case Kind::Directory: fail(in_quotes(path.string()) + " is a directory, expected a file of durations"); break;
        case Kind::Unreadable: fail("cannot read file " + in_quotes(path.string())); break;
        case Kind::NotRegular:
        case Kind::TooLarge:
          fail(in_quotes(path.string()) + " is " + describe(failure, kMaxSampleFileBytes) +
               ", expected a file of durations");
          break;
      }
      return std::nullopt;
    }
    std::istringstream input(std::move(*content));
    std::vector<Duration> samples;
    std::string line;
    for (std::size_t line_number = 1; std::getline(input, line); ++line_number) {
      std::string_view value = line;
      value = trim(value.substr(0, value.find('#')));
      if (value.empty()) continue;
      const std::string where = path.string() + ":" + std::to_string(line_number) + ": ";
      std::string duration_error;
      std::optional<Duration> sample;
      if (unit.empty()) {
        sample = parse_duration_rounded(value, duration_error, allow_negative_);
      } else if (value.find_first_not_of("-0123456789.") != std::string_view::npos) {
        duration_error = "expected a plain number such as \"12\" or \"0.25\" (unit=" + std::string(unit) +
                         " gives the unit), found " + in_quotes(value);
      } else {
        sample = parse_duration_rounded(std::string(value) + std::string(unit), duration_error, allow_negative_);
        if (!sample) {
          duration_error = "value " + in_quotes(value) + " with unit=" + std::string(unit) + ": " + duration_error;
        }
      }
      if (!sample) {
        fail_plain(where + duration_error);
        return std::nullopt;
      }
      samples.push_back(*sample);
    }
    if (input.bad()) {
      fail("error while reading file " + in_quotes(path.string()));
      return std::nullopt;
    }
    if (samples.empty()) {
      fail("file " + in_quotes(path.string()) + " contains no values (one duration per line is expected)");
      return std::nullopt;
    }
    return samples;
  }

  std::string_view text_;
  const std::filesystem::path& base_dir_;
  std::string& error_;
  bool allow_negative_;
  std::vector<Argument> arguments_;
  std::map<std::string_view, std::string_view> named_;
};

Distribution::Distribution() = default;

Distribution Distribution::constant(Duration value) {
  Distribution result;
  result.first_ = value;
  return result;
}

Distribution Distribution::exponential(Duration mean) {
  LETHE_ASSERT(mean >= 0, "Distribution::exponential: mean must be >= 0");
  Distribution result;
  result.kind_ = Kind::kExponential;
  result.first_ = mean;
  return result;
}

std::optional<Distribution> Distribution::parse(std::string_view text, const std::filesystem::path& base_dir,
                                                std::string& error, bool allow_negative) {
  return DistributionParser(text, base_dir, error, allow_negative).run();
}

Duration Distribution::sample(Rng& rng) const {
  return std::clamp(sample_unclamped(rng), -kDurationMax, kDurationMax);
}

Duration Distribution::largest_magnitude() const {
  const auto magnitude = [](Duration value) {
    return value == std::numeric_limits<Duration>::min() ? kTimeMax : (value < 0 ? -value : value);
  };
  if (kind_ == Kind::kEmpirical) return std::max(magnitude(samples_->front()), magnitude(samples_->back()));
  return std::max(magnitude(first_), magnitude(second_));
}

Duration Distribution::sample_unclamped(Rng& rng) const {
  switch (kind_) {
    case Kind::kConstant:
      return first_;
    case Kind::kUniform:
      return rng.between(first_, second_);
    case Kind::kExponential:
      return to_nanoseconds(rng.exponential(static_cast<double>(first_)));
    case Kind::kNormal:
      while (true) {
        const double value = rng.normal(static_cast<double>(first_), static_cast<double>(second_));
        if (!truncated_at_zero_ || value >= 0) return to_nanoseconds(value);
      }
    case Kind::kLognormal:
      return to_nanoseconds(rng.lognormal_median_p99(static_cast<double>(first_), static_cast<double>(second_)));
    case Kind::kPareto:
      return to_nanoseconds(rng.pareto(static_cast<double>(first_), shape_));
    case Kind::kEmpirical:
      return (*samples_)[rng.below(samples_->size())];
  }
  throw std::logic_error("Distribution::sample: unknown kind");
}

double Distribution::mean_ns() const {
  const auto first = static_cast<double>(first_);
  const auto second = static_cast<double>(second_);
  switch (kind_) {
    case Kind::kConstant:
    case Kind::kExponential:
      return first;
    case Kind::kUniform:
      return 0.5 * (first + second);
    case Kind::kNormal: {
      if (!truncated_at_zero_ || second_ == 0) return first;
      const double alpha = -first / second;
      return first + second * standard_normal_density(alpha) / standard_normal_survival(alpha);
    }
    case Kind::kLognormal: {
      const double sigma = lognormal_sigma(first_, second_);
      return first * std::exp(0.5 * sigma * sigma);
    }
    case Kind::kPareto:
      return shape_ <= 1 ? kInfinity : shape_ * first / (shape_ - 1);
    case Kind::kEmpirical: {
      double sum = 0;
      for (Duration value : *samples_) sum += static_cast<double>(value);
      return sum / static_cast<double>(samples_->size());
    }
  }
  throw std::logic_error("Distribution::mean_ns: unknown kind");
}

double Distribution::survival(Duration x) const {
  const auto first = static_cast<double>(first_);
  const auto second = static_cast<double>(second_);
  const auto point = static_cast<double>(x);
  switch (kind_) {
    case Kind::kConstant:
      return x < first_ ? 1.0 : 0.0;
    case Kind::kUniform: {
      if (x < first_) return 1.0;
      if (x >= second_) return 0.0;
      const std::uint64_t span = static_cast<std::uint64_t>(second_) - static_cast<std::uint64_t>(first_);
      const std::uint64_t above = static_cast<std::uint64_t>(second_) - static_cast<std::uint64_t>(x);
      return static_cast<double>(above) / (static_cast<double>(span) + 1.0);
    }
    case Kind::kExponential:
      if (x < 0) return 1.0;
      if (first_ == 0) return 0.0;
      return std::exp(-point / first);
    case Kind::kNormal: {
      if (truncated_at_zero_ && x < 0) return 1.0;
      if (second_ == 0) return x < first_ ? 1.0 : 0.0;
      const double tail = standard_normal_survival((point - first) / second);
      return truncated_at_zero_ ? tail / standard_normal_survival(-first / second) : tail;
    }
    case Kind::kLognormal: {
      if (x <= 0) return 1.0;
      if (first_ == second_) return x < first_ ? 1.0 : 0.0;
      return standard_normal_survival((std::log(point) - std::log(first)) / lognormal_sigma(first_, second_));
    }
    case Kind::kPareto:
      if (x <= first_) return 1.0;
      return std::pow(first / point, shape_);
    case Kind::kEmpirical: {
      const auto above = samples_->end() - std::upper_bound(samples_->begin(), samples_->end(), x);
      return static_cast<double>(above) / static_cast<double>(samples_->size());
    }
  }
  throw std::logic_error("Distribution::survival: unknown kind");
}

Duration Distribution::quantile(double q) const {
  LETHE_ASSERT(q >= 0 && q <= 1, "Distribution::quantile: q must be in [0, 1]");
  const auto first = static_cast<double>(first_);
  const auto second = static_cast<double>(second_);
  switch (kind_) {
    case Kind::kConstant:
      return first_;
    case Kind::kUniform: {
      const std::uint64_t span = static_cast<std::uint64_t>(second_) - static_cast<std::uint64_t>(first_);
      const std::uint64_t offset = discrete_quantile_index(q, static_cast<double>(span) + 1.0, span);
      return static_cast<Duration>(static_cast<std::uint64_t>(first_) + offset);
    }
    case Kind::kExponential:
      if (first_ == 0) return 0;
      return to_nanoseconds(-first * std::log1p(-q));
    case Kind::kNormal: {
      if (second_ == 0) return first_;
      if (!truncated_at_zero_) return to_nanoseconds(first + second * inverse_standard_normal(q));
      // P(X > x) = (1 - q) * P(N > 0), solved in the upper tail for accuracy.
      const double tail = (1.0 - q) * standard_normal_survival(-first / second);
      return std::max<Duration>(0, to_nanoseconds(first - second * inverse_standard_normal(tail)));
    }
    case Kind::kLognormal:
      if (first_ == second_) return first_;
      if (q == 0) return 0;
      return to_nanoseconds(std::exp(std::log(first) + lognormal_sigma(first_, second_) * inverse_standard_normal(q)));
    case Kind::kPareto:
      if (q == 1) return kTimeMax;
      return to_nanoseconds(first * std::pow(1.0 - q, -1.0 / shape_));
    case Kind::kEmpirical: {
      const std::size_t count = samples_->size();
      return (*samples_)[discrete_quantile_index(q, static_cast<double>(count), count - 1)];
    }
  }
  throw std::logic_error("Distribution::quantile: unknown kind");
}

bool Distribution::is_constant() const { return kind_ == Kind::kConstant; }

std::string Distribution::to_string() const {
  switch (kind_) {
    case Kind::kConstant:
      return format_duration(first_);
    case Kind::kUniform:
      return "uniform(" + format_duration(first_) + ", " + format_duration(second_) + ")";
    case Kind::kExponential:
      return "exponential(mean=" + format_duration(first_) + ")";
    case Kind::kNormal:
      return "normal(mean=" + format_duration(first_) + ", sd=" + format_duration(second_) + ")";
    case Kind::kLognormal:
      return "lognormal(median=" + format_duration(first_) + ", p99=" + format_duration(second_) + ")";
    case Kind::kPareto:
      return "pareto(scale=" + format_duration(first_) + ", shape=" + format_number(shape_) + ")";
    case Kind::kEmpirical:
      return "empirical(file=" + file_ + (unit_.empty() ? "" : ", unit=" + unit_) + ")";
  }
  throw std::logic_error("Distribution::to_string: unknown kind");
}

}  // namespace sim
