#include "runner/tune.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unistd.h>

#include "reports/cells.hpp"
#include "reports/output_file.hpp"
#include "reports/report.hpp"
#include "reports/summary.hpp"
#include "runner/command_line.hpp"
#include "scenario/loader.hpp"
#include "scenario/text.hpp"
#include "runner/sweep.hpp"
#include "sim/regular_file.hpp"

namespace fs = std::filesystem;

namespace runner {

sim::Duration round_up_significant(sim::Duration d, int digits) {
  if (d <= 0) return 0;
  if (digits >= 19) return d;  // every int64 has at most 19 digits
  // Integer arithmetic only (a floating log10 near a power of ten, or of a wrapped value, gave a wrong step).
  sim::Duration limit = 1;  // 10^digits
  for (int i = 0; i < std::max(digits, 1); ++i) limit *= 10;
  sim::Duration step = 1;  // the power of ten below the last kept digit; at most 10^18
  while (d / step >= limit) step *= 10;
  const sim::Duration rounded = (d / step) * step;
  if (rounded == d) return d;
  if (rounded > sim::kTimeMax - step) return sim::kTimeMax;
  return rounded + step;
}

namespace {

constexpr double kRelativeSlack = 1e-9;  // survival() is a double: the quantile may land a hair above the target

std::string rate_text(double p) { return fmt::format("{:.3g}", p); }

std::string level_label(double level) {
  // 0.999 -> "p99.9"
  std::string digits = fmt::format("{:.6f}", level * 100.0);
  while (!digits.empty() && digits.back() == '0') digits.pop_back();
  if (!digits.empty() && digits.back() == '.') digits.pop_back();
  return "p" + digits;
}

bool meets(double rate, double target) { return rate <= target * (1.0 + kRelativeSlack); }

}  // namespace

TuneAnalysis analyze_tuning(const TuneInput& in) {
  TuneAnalysis a;
  const auto& law = in.processing_time;
  a.target_mpt_exact = law.quantile(1.0 - in.target_duplicates);
  a.target_mpt = std::max<sim::Duration>(round_up_significant(a.target_mpt_exact), sim::kMillisecond);
  // The rounded value must meet the target (it does for any monotone survival; guard against rounding in
  // survival()) — step up until it does.
  for (int i = 0; i < 8 && !meets(law.survival(a.target_mpt), in.target_duplicates); ++i) {
    a.target_mpt = round_up_significant(sim::saturating_add(a.target_mpt, a.target_mpt / 100));
  }
  if (in.patience) {
    const sim::Duration limit = *in.patience - in.poll;
    if (limit > 0) a.patience_mpt = limit;
  }
  if (!in.patience || (a.patience_mpt && a.target_mpt <= *a.patience_mpt)) a.recommended_mpt = a.target_mpt;
  if (in.redelivery_window) {
    a.ttl = *in.redelivery_window > sim::kTimeMax / 2 ? sim::kTimeMax : 2 * *in.redelivery_window;
  }
  const double mean = law.mean_ns();
  a.typical_processing_ns = std::isfinite(mean) ? mean : static_cast<double>(law.quantile(0.5));
  a.crash_hit_probability = 1.0 - std::exp(-in.crash_rate_per_second * a.typical_processing_ns / 1e9);

  // Candidates: quantile levels, the recommendation and its neighbours, and the patience limit.
  std::map<sim::Duration, std::string> labels;
  const auto add = [&](sim::Duration mpt, const std::string& label) {
    if (mpt <= 0 || mpt == sim::kTimeMax) return;
    auto& l = labels[mpt];
    l += (l.empty() ? "" : ", ") + label;
  };
  for (double level : {0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999, 0.999999}) {
    add(std::max<sim::Duration>(round_up_significant(law.quantile(level)), sim::kMillisecond), level_label(level));
  }
  add(a.target_mpt, a.recommended_mpt ? "recommended" : "meets the target");
  add(round_up_significant(a.target_mpt / 2), "0.5x");
  add(round_up_significant(sim::saturating_add(a.target_mpt, a.target_mpt)), "2x");
  if (a.patience_mpt) add(*a.patience_mpt, "patience limit");
  for (const auto& [mpt, label] : labels) {
    TuneCandidate c;
    c.mpt = mpt;
    c.label = label;
    c.takeover_rate = law.survival(mpt);
    c.recovery = mpt > sim::kTimeMax - in.poll ? sim::kTimeMax : mpt + in.poll;
    c.crash_delay_ns = a.crash_hit_probability * static_cast<double>(c.recovery);
    c.meets_target = meets(c.takeover_rate, in.target_duplicates);
    c.within_patience = !in.patience || c.recovery <= *in.patience;
    a.candidates.push_back(c);
  }

  if (in.sample_count > 0) {
    const double resolution = 1.0 / static_cast<double>(in.sample_count);
    if (resolution > in.target_duplicates) {
      a.notes.push_back(fmt::format(
          "only {} samples: a rate below 1/{} = {} cannot be told apart from zero, so the recommendation is the "
          "largest sample seen; collect at least {:.0f} samples (10 / target) for a trustworthy tail",
          in.sample_count, in.sample_count, rate_text(resolution), std::ceil(10.0 / in.target_duplicates)));
    } else if (resolution * 10.0 > in.target_duplicates) {
      a.notes.push_back(fmt::format("{} samples: the {} quantile rests on fewer than 10 values of the tail", in.sample_count,
                                    level_label(1.0 - in.target_duplicates)));
    }
  }
  if (!std::isfinite(mean)) {
    a.notes.push_back("the processing time has an infinite mean (heavy tail): every max_processing_time leaves a "
                      "real chance of taking over live work; the table uses the median as the typical duration");
  }
  if (!in.redelivery_window) {
    a.notes.push_back("no --redelivery-window given: ttl is not recommended (the confirmation scenario uses 7d). "
                      "Give how late a duplicate can turn up: the producer's retry budget, the broker's replay "
                      "window, how far back an operator may rewind offsets");
  } else if (a.ttl && *a.ttl < 10 * (a.target_mpt + in.poll)) {
    a.notes.push_back(fmt::format("ttl {} is not much longer than max_processing_time {}: with expires_on = "
                                  "\"at-start\" a record could expire while its attempt is still running",
                                  sim::format_duration(*a.ttl), sim::format_duration(a.target_mpt)));
  }
  return a;
}

constexpr int kConsumers = 8;

ConfirmationSize size_confirmation(const TuneInput& in, const TuneAnalysis& a, std::int64_t messages,
                                   std::int64_t seeds) {
  (void)seeds;  // the p99 is per seed: the number of seeds does not change what one seed needs
  constexpr std::int64_t kMostMessages = 100000;
  ConfirmationSize size;
  // Keep the workers about 30% busy: each message costs its processing time plus, for the redelivered copy,
  // up to as long again spent waiting on the in-flight record.
  const double typical_s = std::max(a.typical_processing_ns / 1e9, 1e-4);
  double rate = 0.3 * kConsumers / (2.0 * typical_s + 0.02);
  rate = std::clamp(rate, 0.05, 500.0);
  size.message_rate_per_second = std::stod(fmt::format("{:.3g}", rate));
  // A crash gives a recovery sample when it hits an attempt at work: the share of a worker's time spent
  // processing a first delivery.
  const double busy = std::min(1.0, size.message_rate_per_second * typical_s / kConsumers);
  const auto recoveries = [&](double crash_rate, std::int64_t n) {
    return crash_rate * kConsumers * busy * static_cast<double>(n) / size.message_rate_per_second;
  };
  const double wanted = 1.2 * static_cast<double>(kRecoveriesForP99);
  size.messages = messages;
  size.crash_rate_per_second = in.crash_rate_per_second;
  if (in.crash_rate_per_second > 0 && recoveries(in.crash_rate_per_second, messages) < wanted) {
    const double needed = wanted / recoveries(1.0, messages);
    const double ceiling = 0.02 / typical_s;  // 2% of attempts hit
    const double raised = std::stod(fmt::format("{:.3g}", std::min(needed, ceiling)));
    if (raised > in.crash_rate_per_second) {
      size.crash_rate_per_second = raised;
      size.crash_rate_raised = true;
    }
    const double short_by = wanted / recoveries(size.crash_rate_per_second, messages);
    if (short_by > 1.0) {
      size.messages = std::min<std::int64_t>(
          kMostMessages, std::max<std::int64_t>(messages, static_cast<std::int64_t>(
                                                              std::ceil(static_cast<double>(messages) * short_by))));
      size.messages_raised = size.messages > messages;
    }
  }
  size.workload_seconds = static_cast<double>(size.messages) / size.message_rate_per_second;
  size.expected_recoveries = recoveries(size.crash_rate_per_second, size.messages);
  return size;
}

std::string confirmation_scenario(const TuneInput& in, const TuneAnalysis& a, sim::Duration mpt, std::int64_t messages,
                                  std::int64_t seeds, sim::Duration largest_mpt) {
  const ConfirmationSize size = size_confirmation(in, a, messages, seeds);
  messages = size.messages;
  const double rate = size.message_rate_per_second;
  const double workload_s = size.workload_seconds;
  const sim::Duration duration = static_cast<sim::Duration>(std::ceil(workload_s + 60.0)) * sim::kSecond;
  // Both only need to outlast the run's waits; capped at the longest duration a scenario may give.
  const sim::Duration visibility = std::clamp<sim::Duration>(4 * (largest_mpt + in.poll), 30 * sim::kSecond,
                                                             sim::kDurationMax);
  const sim::Duration max_wait =
      std::min<sim::Duration>(2 * largest_mpt + 10 * in.poll + 10 * sim::kSecond, sim::kDurationMax);
  const sim::Duration ttl = a.ttl.value_or(7 * sim::kDay);
  std::string crash;
  if (size.crash_rate_per_second > 0) {
    const auto mean = static_cast<sim::Duration>(std::llround(1e9 / size.crash_rate_per_second));
    crash = fmt::format("crash_every = {}\n", scenario::text::toml_quote(fmt::format("exponential(mean={})", sim::format_duration(mean))));
  }
  std::string out;
  out += "# Generated by lethe tune: the confirmation scenario of its recommendation.\n";
  out += "[scenario]\nname = \"tune-confirmation\"\n";
  out += "description = \"\"\"\n"
         "A queue whose every message is delivered a second time while the first delivery is still being\n"
         "processed, so a waiting copy takes the record over exactly when it is older than max_processing_time\n"
         "(duplicates.takeover_while_alive measures P(processing time > max_processing_time)); consumers crash at\n"
         "the given rate (recovery_latency measures how long a crashed message waits).\"\"\"\n";
  out += "tags = [\"generated\", \"tune\"]\n\n";
  out += fmt::format("[run]\nseeds = {}\nduration = {}\ndrain = true\n\n", seeds,
                     scenario::text::toml_quote(sim::format_duration(duration)));
  out += fmt::format("[topology]\nsource = \"queue\"\nconsumers = {}\nvisibility_timeout = {}\n\n", kConsumers,
                     scenario::text::toml_quote(sim::format_duration(visibility)));
  out += fmt::format("[workload]\nmessages = {}\nrate = {}\nprocessing_time = {}\n\n", messages,
                     scenario::text::toml_quote(fmt::format("{}/s", scenario::text::format_number(rate))),
                     scenario::text::toml_quote(in.processing_time_text));
  out += fmt::format("[workload.redelivery]\nfraction = 1.0\ncopies = 1\ndelay = {}\n\n",
                     scenario::text::toml_quote(fmt::format("uniform(0s, {})", sim::format_duration(in.poll))));
  out += "[faults]\n" + crash + "restart_after = \"1s\"\n\n";
  out += fmt::format("[protocol]\nkind = \"mnemosyne\"\nmax_processing_time = {}\nttl = {}\npoll = {}\nmax_wait = {}\n\n",
                     scenario::text::toml_quote(sim::format_duration(mpt)), scenario::text::toml_quote(sim::format_duration(ttl)),
                     scenario::text::toml_quote(sim::format_duration(in.poll)), scenario::text::toml_quote(sim::format_duration(max_wait)));
  out += "[sink]\nkind = \"counter\"\nlatency = \"1ms\"\n";
  return out;
}

namespace {

struct TuneOptions {
  std::string processing_time;
  std::string samples;
  std::string samples_unit;
  std::string column;
  std::string crash_rate = "1/h";
  double target = 1e-3;
  std::string patience;
  std::string redelivery_window;
  std::string poll = "100ms";
  std::int64_t seeds = 5;
  std::int64_t messages = 2000;
  unsigned jobs = 0;
  bool no_confirm = false;
  std::string out;
};

// A duration option of at most `largest` (what the generated scenario can hold).
std::optional<sim::Duration> duration_option(const std::string& name, const std::string& text, sim::Duration largest,
                                             bool& ok) {
  if (text.empty()) return std::nullopt;
  std::string error;
  auto d = sim::parse_duration(text, error);
  if (!d) {
    std::cerr << fmt::format("lethe tune: {}: {}\n", name, error);
    ok = false;
  } else if (*d > largest) {
    std::cerr << fmt::format("lethe tune: {}: found {}; allowed: a duration of at most {}\n", name, text,
                             sim::format_duration(largest));
    ok = false;
  }
  return d;
}

// The confirmation scenario runs 0.5x, 1x and 2x the recommendation, and its visibility timeout and max_wait
// grow with them: an mpt of at most a quarter of the longest scenario duration keeps them all representable.
constexpr sim::Duration kMptMax = sim::kDurationMax / 4;
// Below this, 1 - target is too close to 1 for a quantile in double precision to mean anything.
constexpr double kTargetMin = 1e-12;

// A crash rate of 0 (no crashes), or one whose mean interval is a scenario duration: 1 ns to kDurationMax.
bool crash_rate_in_range(double per_second) {
  if (per_second == 0.0) return true;
  const double mean_ns = 1e9 / per_second;
  return mean_ns >= 1.0 && mean_ns <= static_cast<double>(sim::kDurationMax);
}

// One field of a CSV line, trimmed and unquoted ("\"12ms\"" -> 12ms).
std::string csv_field(std::string field) {
  field = scenario::text::trim(field);
  if (field.size() >= 2 && field.front() == '"' && field.back() == '"') field = field.substr(1, field.size() - 2);
  return field;
}

std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> fields;
  std::size_t start = 0;
  while (true) {
    const auto comma = line.find(',', start);
    fields.push_back(csv_field(line.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (comma == std::string::npos) return fields;
    start = comma + 1;
  }
}

bool plain_number(const std::string& text) {
  if (text.empty()) return false;
  char* end = nullptr;
  std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size();
}

constexpr std::array<std::string_view, 7> kSampleUnits = {"ns", "us", "ms", "s", "m", "h", "d"};

// The value of one sample field, or nullopt after writing why to `error` (naming the flag that fixes it).
std::optional<sim::Duration> sample_value(const std::string& text, const std::string& unit, const std::string& where,
                                          std::string& error) {
  std::string problem;
  if (!unit.empty()) {
    if (!plain_number(text)) {
      error = fmt::format("{}: found \"{}\"; with --samples-unit {} every value is a plain number (\"12\")", where,
                          text, unit);
      return std::nullopt;
    }
    auto d = sim::parse_duration_rounded(text + unit, problem);
    if (!d) error = fmt::format("{}: found \"{}\": {}", where, text, problem);
    return d;
  }
  auto d = sim::parse_duration_rounded(text, problem);
  if (d) return d;
  if (plain_number(text)) {
    error = fmt::format("{}: found \"{}\", a number without a unit; give the unit of plain numbers with "
                        "--samples-unit (ns us ms s m h d), or write the unit in the file (\"{}ms\")", where, text, text);
  } else {
    error = fmt::format("{}: found \"{}\"; allowed: a duration (\"12ms\", \"1.5s\"), or a plain number with "
                        "--samples-unit ({})", where, text, problem);
  }
  return std::nullopt;
}

// --samples FILE [--column NAME] [--samples-unit U]: one value per line, or a CSV file whose header line names
// its columns (--column picks one; a file of one column needs none). '#' starts a comment. Every error names
// FILE:LINE and the flag that fixes it.
std::optional<std::vector<sim::Duration>> read_samples(const fs::path& file, const std::string& shown,
                                                       const std::string& column, const std::string& unit,
                                                       std::string& error) {
  // Through read_regular_file: a device never ends and a FIFO blocks; neither is a file of samples.
  sim::FileReadFailure failure;
  const std::optional<std::string> content = sim::read_regular_file(file, sim::kMaxSampleFileBytes, failure);
  if (!content) {
    error = failure.kind == sim::FileReadFailure::Kind::Missing
                ? fmt::format("--samples {}: no such file", shown)
                : fmt::format("--samples {}: {}; allowed: a regular file of at most {} MiB", shown,
                              sim::describe(failure, sim::kMaxSampleFileBytes), sim::kMaxSampleFileBytes >> 20);
    return std::nullopt;
  }
  std::istringstream in(*content);
  std::vector<sim::Duration> values;
  std::optional<std::size_t> index;  // the column read; nullopt until the first line decides
  std::string line;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (scenario::text::trim(line).empty()) continue;
    const auto fields = csv_fields(line);
    const std::string where = fmt::format("--samples {}:{}", shown, number);
    if (!index) {
      std::string probe;
      bool header = false;
      for (const auto& f : fields) header = header || (!plain_number(f) && !sim::parse_duration_rounded(f, probe));
      if (!column.empty()) {
        if (!header) {
          error = fmt::format("{}: --column {}: the first line is not a header naming the columns (found \"{}\")",
                              where, column, scenario::text::trim(line));
          return std::nullopt;
        }
        const auto it = std::find(fields.begin(), fields.end(), column);
        if (it == fields.end()) {
          const std::string near = scenario::text::nearest(column, fields);
          error = fmt::format("{}: --column {}: no such column{}; allowed: {}", where, column,
                              near.empty() ? "" : fmt::format(" (did you mean `{}`?)", near),
                              scenario::text::join(fields, ", "));
          return std::nullopt;
        }
        index = static_cast<std::size_t>(it - fields.begin());
        continue;
      }
      if (fields.size() > 1) {
        error = header ? fmt::format("{}: a header of {} columns ({}); name the one to read with --column NAME",
                                     where, fields.size(), scenario::text::join(fields, ", "))
                       : fmt::format("{}: {} values on a line; give the file a header line naming its columns and "
                                     "pick one with --column NAME", where, fields.size());
        return std::nullopt;
      }
      index = 0;
      if (header && !plain_number(fields[0])) {
        // A one-column file with a header ("latency"): the header is skipped, unless it is a malformed value.
        std::string ignored;
        if (fields[0].find_first_of("0123456789") == std::string::npos) continue;
        if (!sample_value(fields[0], unit, where, error)) return std::nullopt;
      }
    }
    if (*index >= fields.size()) {
      error = fmt::format("{}: the line has {} values, and column {} is number {}", where, fields.size(),
                          column.empty() ? "1" : column, *index + 1);
      return std::nullopt;
    }
    const auto value = sample_value(fields[*index], unit, where, error);
    if (!value) return std::nullopt;
    if (*value > sim::kDurationMax) {  // named here, with its line: the distribution built later knows neither
      error = fmt::format("{}: found \"{}\", {} is above {}, the longest duration a scenario may give", where,
                          fields[*index], sim::format_duration(*value), sim::format_duration(sim::kDurationMax));
      return std::nullopt;
    }
    values.push_back(*value);
  }
  if (values.empty()) {
    error = fmt::format("--samples {}: no values found", shown);
    return std::nullopt;
  }
  return values;
}

// Builds the input from the options; prints what is wrong and returns nullopt on bad input.
std::optional<TuneInput> tune_input(const TuneOptions& o) {
  TuneInput in;
  bool ok = true;
  if (o.processing_time.empty() == o.samples.empty()) {
    std::cerr << "lethe tune: give exactly one of --processing-time DIST and --samples FILE\n";
    return std::nullopt;
  }
  if (!o.samples_unit.empty() && o.samples.empty()) {
    std::cerr << "lethe tune: --samples-unit goes with --samples\n";
    return std::nullopt;
  }
  if (!o.column.empty() && o.samples.empty()) {
    std::cerr << "lethe tune: --column goes with --samples\n";
    return std::nullopt;
  }
  if (!o.samples_unit.empty() &&
      std::find(kSampleUnits.begin(), kSampleUnits.end(), o.samples_unit) == kSampleUnits.end()) {
    std::cerr << fmt::format("lethe tune: --samples-unit: found \"{}\"; allowed: ns us ms s m h d\n", o.samples_unit);
    return std::nullopt;
  }
  std::string dist_text = o.processing_time;
  if (!o.samples.empty()) {
    std::error_code ec;
    const fs::path file = fs::absolute(o.samples, ec);
    if (ec) {
      std::cerr << fmt::format("lethe tune: --samples {}: {}\n", o.samples, ec.message());
      return std::nullopt;
    }
    std::string problem;
    const auto values = read_samples(file, o.samples, o.column, o.samples_unit, problem);
    if (!values) {
      std::cerr << "lethe tune: " << problem << "\n";
      return std::nullopt;
    }
    // The values, one duration a line, in the output folder: the confirmation scenario reads them from there
    // (whatever the input's columns and unit), and the folder holds everything the report rests on.
    std::string text;
    for (const auto v : *values) text += sim::format_duration(v) + "\n";
    const fs::path copy = fs::absolute(fs::path(o.out) / "samples.txt", ec);
    if (copy.string().find_first_of(",()") != std::string::npos) {
      std::cerr << fmt::format("lethe tune: --out {}: the path may not contain ',', '(' or ')'\n", o.out);
      return std::nullopt;
    }
    if (const auto write_error = reports::write_file(copy, text); !write_error.empty()) {
      std::cerr << "lethe tune: " << write_error << "\n";
      return std::nullopt;
    }
    dist_text = fmt::format("empirical(file={})", copy.string());
    in.sample_count = values->size();
  }
  std::string error;
  auto law = sim::Distribution::parse(dist_text, fs::current_path(), error);
  if (!law) {
    std::cerr << fmt::format("lethe tune: {}: {}\n", o.samples.empty() ? "--processing-time" : "--samples", error);
    return std::nullopt;
  }
  if (law->largest_magnitude() > sim::kDurationMax) {
    std::cerr << fmt::format("lethe tune: {}: {} is above {}, the longest duration a scenario may give\n",
                             o.samples.empty() ? "--processing-time" : "--samples",
                             sim::format_duration(law->largest_magnitude()), sim::format_duration(sim::kDurationMax));
    return std::nullopt;
  }
  in.processing_time = *law;
  in.processing_time_text = law->to_string();
  const auto rate = scenario::text::parse_rate_per_second(o.crash_rate);
  if (!rate || !crash_rate_in_range(*rate)) {
    std::cerr << fmt::format("lethe tune: --crash-rate: found \"{}\"; allowed: crashes per worker as N/s, N/m, N/h "
                             "or N/d (e.g. \"2/h\"): 0, or from one per {} to one per nanosecond (1e9/s)\n",
                             o.crash_rate, sim::format_duration(sim::kDurationMax));
    ok = false;
  } else {
    in.crash_rate_per_second = *rate;
  }
  if (!(o.target >= kTargetMin && o.target < 1.0)) {
    std::cerr << fmt::format("lethe tune: --target-duplicates: found {}; allowed: a probability from {} up to, not "
                             "including, 1 (e.g. 0.001)\n", o.target, kTargetMin);
    ok = false;
  } else if (law->quantile(1.0 - o.target) > kMptMax) {
    std::cerr << fmt::format("lethe tune: --target-duplicates: found {}; the processing time {} exceeds {} with a "
                             "higher probability, so no max_processing_time tune can confirm (at most {}) meets it; "
                             "allowed: a target of at least P(processing time > {}) = {:.3g}\n",
                             o.target, in.processing_time_text, sim::format_duration(kMptMax),
                             sim::format_duration(kMptMax), sim::format_duration(kMptMax),
                             law->survival(kMptMax));
    ok = false;
  }
  in.target_duplicates = o.target;
  in.patience = duration_option("--patience", o.patience, sim::kDurationMax, ok);
  // ttl = 2 x the window, and the poll recurs in max_wait ten times: both stay scenario durations.
  in.redelivery_window = duration_option("--redelivery-window", o.redelivery_window, sim::kDurationMax / 2, ok);
  const auto poll = duration_option("--poll", o.poll, sim::kDurationMax / 100, ok);
  if (poll) {
    if (*poll <= 0) {
      std::cerr << "lethe tune: --poll: found 0s; allowed: a positive duration (the re-read interval)\n";
      ok = false;
    } else {
      in.poll = *poll;
    }
  }
  if (in.patience && *in.patience <= 0) {
    std::cerr << "lethe tune: --patience: found 0s; allowed: a positive duration\n";
    ok = false;
  }
  if (in.redelivery_window && *in.redelivery_window <= 0) {
    std::cerr << "lethe tune: --redelivery-window: found 0s; allowed: a positive duration\n";
    ok = false;
  }
  if (!ok) return std::nullopt;
  return in;
}

std::string d(sim::Duration v) { return v == sim::kTimeMax ? "inf" : reports::format_time(v); }

// A takeover rate as people read it: past the largest sample an empirical law gives exactly 0, which only
// means "below what N samples can resolve": "< 1/N", never 0.
std::string takeover_rate_text(const TuneInput& in, double rate) {
  if (rate == 0.0 && in.sample_count > 0) return fmt::format("< 1/{}", in.sample_count);
  return rate_text(rate);
}

std::string candidates_text(const TuneInput& in, const TuneAnalysis& a) {
  std::string out = fmt::format("  {:>10}  {:>22}  {:>19}  {:>18}  {}\n", "mpt", "takeover dup rate", "recovery ~ mpt+poll",
                                "crash delay/msg", "");
  for (const auto& c : a.candidates) {
    std::string flags = c.label;
    if (!c.meets_target) flags += "; over target";
    if (!c.within_patience) flags += "; beyond patience";
    out += fmt::format("  {:>10}  {:>22}  {:>19}  {:>18}  {}\n", d(c.mpt), takeover_rate_text(in, c.takeover_rate), d(c.recovery),
                       reports::format_time(static_cast<std::int64_t>(std::llround(c.crash_delay_ns))), flags);
  }
  return out;
}

std::string candidates_html(const TuneInput& in, const TuneAnalysis& a) {
  std::string out = "<table class=\"tune\">\n<thead><tr><th>max_processing_time</th><th>takeover duplicate rate "
                    "P(T &gt; mpt)</th><th>recovery after a crash &asymp; mpt + poll</th><th>mean crash delay per "
                    "message</th><th>meets target</th><th>within patience</th><th>note</th></tr></thead>\n<tbody>\n";
  for (const auto& c : a.candidates) {
    out += fmt::format("<tr{}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                       c.meets_target && c.within_patience ? "" : " class=\"failed\"", d(c.mpt),
                       reports::html_escape(takeover_rate_text(in, c.takeover_rate)), d(c.recovery),
                       reports::format_time(static_cast<std::int64_t>(std::llround(c.crash_delay_ns))),
                       c.meets_target ? "yes" : "no", c.within_patience ? "yes" : "no", reports::html_escape(c.label));
  }
  return out + "</tbody>\n</table>\n";
}

struct Verdict {
  std::string text;  // plain words, several lines
  bool feasible = false;
};

Verdict verdict(const TuneInput& in, const TuneAnalysis& a) {
  Verdict v;
  const std::string target = rate_text(in.target_duplicates);
  if (a.recommended_mpt) {
    v.feasible = true;
    v.text += fmt::format("recommended max_processing_time = {}\n", sim::format_duration(*a.recommended_mpt));
    v.text += fmt::format("  the smallest value with P(processing time > mpt) <= {} (the {} quantile is {}; rounded "
                          "up to {} takes over live work with probability {})\n",
                          target, level_label(1.0 - in.target_duplicates), d(a.target_mpt_exact),
                          sim::format_duration(a.target_mpt), rate_text(in.processing_time.survival(a.target_mpt)));
    v.text += fmt::format("  a crashed message waits about {} (mpt + poll {}) for a retry{}\n",
                          d(a.target_mpt + in.poll), d(in.poll),
                          in.patience ? fmt::format("; patience {}", d(*in.patience)) : "");
  } else {
    v.text += fmt::format("no max_processing_time meets both the target duplicate rate {} and the patience {}:\n",
                          target, d(*in.patience));
    v.text += fmt::format("  the target needs mpt >= {} (P(T > mpt) = {}), so a crashed message waits about {}, "
                          "longer than the patience {}\n",
                          sim::format_duration(a.target_mpt), rate_text(in.processing_time.survival(a.target_mpt)),
                          d(a.target_mpt + in.poll), d(*in.patience));
    v.text += "closest options:\n";
    v.text += fmt::format("  (a) keep the target: max_processing_time = {}; crashed messages wait about {} ({} over "
                          "the patience)\n",
                          sim::format_duration(a.target_mpt), d(a.target_mpt + in.poll),
                          d(a.target_mpt + in.poll - *in.patience));
    if (a.patience_mpt) {
      const double rate = in.processing_time.survival(*a.patience_mpt);
      v.text += fmt::format("  (b) keep the patience: max_processing_time = {}; live work is taken over with "
                            "probability {} ({:.3g}x the target)\n",
                            sim::format_duration(*a.patience_mpt), rate_text(rate), rate / in.target_duplicates);
    } else {
      v.text += fmt::format("  (b) the patience {} is not even one poll interval ({}): no max_processing_time fits "
                            "it\n", d(*in.patience), d(in.poll));
    }
    v.text += "  (c) or make the effect idempotent at the provider (keyed by message id), so a takeover of live work "
              "is harmless, and choose mpt for the patience alone\n";
  }
  if (a.ttl) {
    v.text += fmt::format("recommended ttl = {}\n  2 x the redelivery window {}: a duplicate arriving after its "
                          "record expired is processed again, and twice the window covers an underestimate of it\n",
                          sim::format_duration(*a.ttl), d(*in.redelivery_window));
  }
  return v;
}

struct SideVerdict {
  bool confirmed = false;
  bool measured = false;  // false: the side could not be measured at all
  std::string text;       // one sentence
};

// Takeovers of live work at the recommended mpt: confirmed only when the whole 95% interval is below the target.
SideVerdict takeover_verdict(const TuneInput& in, const reports::CellSummary& cell) {
  SideVerdict v;
  const auto takeovers = cell.by_cause[static_cast<std::size_t>(lethe::Cause::TakeoverWhileAlive)];
  const auto interval = reports::wilson_interval(takeovers, cell.trials);
  const double rate = cell.trials == 0 ? 0.0 : static_cast<double>(takeovers) / static_cast<double>(cell.trials);
  const std::string measured = fmt::format("{} takeovers in {} trials = {} [95%: {}, {}]", takeovers, cell.trials,
                                           rate_text(rate), rate_text(interval.low), rate_text(interval.high));
  const std::string target = rate_text(in.target_duplicates);
  v.measured = cell.trials > 0;
  // With no takeover at all, n trials bound the rate to about 3.84 / n: the fewest that can show the target.
  const double needed = std::ceil(3.84 / in.target_duplicates);
  if (interval.high <= in.target_duplicates) {
    v.confirmed = true;
    v.text = fmt::format("takeover rate confirmed: measured interval below the target {} ({})", target, measured);
  } else if (interval.low > in.target_duplicates) {
    v.text = fmt::format("takeover rate not confirmed: the measured interval is above the target {} ({}); the "
                         "processing time in the simulator exceeds max_processing_time more often than the input says",
                         target, measured);
  } else {
    v.text = fmt::format("takeover rate not confirmed: the measured interval contains the target {} ({}); the "
                         "recommendation sits at the target by construction, so only more trials can narrow the "
                         "interval{}", target, measured,
                         static_cast<double>(cell.trials) < needed
                             ? fmt::format(", and fewer than {:.0f} trials cannot show any rate below it", needed)
                             : std::string());
  }
  return v;
}

// Recovery after a crash at the recommended mpt: a p99 needs kRecoveriesForP99 recoveries in each seed (the
// cell's p99 is the median of the seeds' p99s).
SideVerdict recovery_verdict(const TuneInput& in, const ConfirmationSize& size, const reports::CellSummary& cell,
                             std::int64_t seeds, std::int64_t messages) {
  SideVerdict v;
  const auto n = cell.recovery_latency.count;
  const double per_seed = static_cast<double>(n) / static_cast<double>(std::max<std::int64_t>(seeds, 1));
  if (in.crash_rate_per_second == 0.0) {
    v.text = "recovery not measured: --crash-rate 0 gives no crashes";
    return v;
  }
  v.measured = n > 0;
  const std::string raised = size.crash_rate_raised
                                 ? fmt::format(" (crashes run at {:.3g}/h per worker instead of the given {:.3g}/h, "
                                               "for samples)", size.crash_rate_per_second * 3600.0,
                                               in.crash_rate_per_second * 3600.0)
                                 : std::string();
  if (per_seed < static_cast<double>(kRecoveriesForP99)) {
    const double scale = per_seed > 0 ? static_cast<double>(kRecoveriesForP99) / per_seed : 0.0;
    v.text = fmt::format("recovery not confirmed: {} recoveries over {} seeds (about {:.0f} a seed){}; a p99 needs at "
                         "least {} a seed, with fewer it is one of the few largest values{}", n, seeds, per_seed, raised,
                         kRecoveriesForP99,
                         scale > 0 ? fmt::format("; --messages {:.0f} would give about {}",
                                                 std::ceil(static_cast<double>(messages) * scale * 1.2),
                                                 kRecoveriesForP99)
                                   : std::string("; no crash hit an attempt at work"));
    return v;
  }
  const std::string p99 = fmt::format("p99 {} over {} recoveries, about {:.0f} a seed{}", d(cell.recovery_latency.p99), n,
                                      per_seed, raised);
  if (!in.patience) {
    v.text = "recovery measured: " + p99 + "; no --patience to compare it with";
    return v;
  }
  v.confirmed = cell.recovery_latency.p99 <= *in.patience;
  v.text = fmt::format("recovery {}: measured {} {} the patience {}", v.confirmed ? "confirmed" : "not confirmed",
                       p99, v.confirmed ? "within" : "above", d(*in.patience));
  return v;
}

std::string inputs_html(const TuneInput& in, const ConfirmationSize& size, std::int64_t seeds, std::int64_t messages) {
  const auto row = [](const std::string& name, const std::string& value) {
    return "<tr><th>" + reports::html_escape(name) + "</th><td>" + reports::html_escape(value) + "</td></tr>\n";
  };
  std::string out = "<table class=\"tune inputs\">\n<tbody>\n";
  out += row("processing time", in.processing_time_text);
  if (in.sample_count > 0) {
    const auto& law = in.processing_time;
    out += row("samples", fmt::format("{} values: p50 {}, p90 {}, p99 {}, largest {}", in.sample_count,
                                      d(law.quantile(0.5)), d(law.quantile(0.9)), d(law.quantile(0.99)),
                                      d(law.quantile(1.0))));
  }
  out += row("crash rate", fmt::format("{:.3g} per worker per hour{}", in.crash_rate_per_second * 3600.0,
                                       size.crash_rate_raised
                                           ? fmt::format(" (the confirmation runs {:.3g}/h to see enough crashes)",
                                                         size.crash_rate_per_second * 3600.0)
                                           : std::string()));
  out += row("target duplicate rate", rate_text(in.target_duplicates) + " (takeovers of live work per message)");
  out += row("patience", in.patience ? d(*in.patience) : "none given");
  out += row("redelivery window", in.redelivery_window ? d(*in.redelivery_window) : "none given (no ttl recommended)");
  out += row("poll", d(in.poll));
  out += row("confirmation", fmt::format("{} seeds x {} messages a cell{}, {:.3g} messages/s, about {:.0f} recoveries "
                                         "expected a seed (a p99 needs {})", seeds, size.messages,
                                         size.messages_raised ? fmt::format(" (--messages {} raised for the crash "
                                                                            "side)", messages)
                                                              : std::string(),
                                         size.message_rate_per_second, size.expected_recoveries, kRecoveriesForP99));
  return out + "</tbody>\n</table>\n";
}

reports::SurvivalPlot survival_plot(const TuneInput& in, const TuneAnalysis& a) {
  reports::SurvivalPlot plot;
  plot.title = "Processing time: P(T > t), the takeover rate of max_processing_time = t";
  plot.target = in.target_duplicates;
  plot.target_quantile = a.target_mpt_exact;
  plot.recommended = a.recommended_mpt;
  plot.patience_limit = a.patience_mpt;
  // Up to a little past the 2x cell, in 400 steps (an empirical law's steps show at this resolution too).
  sim::Duration last = std::max<sim::Duration>(sim::saturating_add(a.target_mpt, a.target_mpt) / 10 * 11, 1);
  // The patience limit too, unless it is so far out that the curve would shrink to the left edge.
  if (a.patience_mpt && *a.patience_mpt > last && *a.patience_mpt / 5 < last) last = *a.patience_mpt / 10 * 11;
  for (int i = 0; i <= 400; ++i) {
    const sim::Duration t = last / 400 * i;
    plot.points.emplace_back(t, in.processing_time.survival(t));
  }
  return plot;
}

// tune.json keeps every duration as integer nanoseconds under KEY_ns, its text beside it under KEY_text;
// both null when there is none.
void put_duration(nlohmann::ordered_json& j, const std::string& key, std::optional<sim::Duration> value) {
  j[key + "_ns"] = value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json();
  j[key + "_text"] = value ? nlohmann::ordered_json(sim::format_duration(*value)) : nlohmann::ordered_json();
}

nlohmann::ordered_json inputs_json(const TuneInput& in) {
  nlohmann::ordered_json j;
  j["processing_time"] = in.processing_time_text;
  j["samples"] = in.sample_count;
  j["crash_rate_per_second"] = in.crash_rate_per_second;
  j["target_duplicates"] = in.target_duplicates;
  put_duration(j, "patience", in.patience);
  put_duration(j, "redelivery_window", in.redelivery_window);
  put_duration(j, "poll", in.poll);
  if (in.sample_count > 0) {
    nlohmann::ordered_json summary;
    summary["count"] = in.sample_count;
    for (const auto& [name, level] : {std::pair{"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}, {"max", 1.0}}) {
      put_duration(summary, name, in.processing_time.quantile(level));
    }
    j["samples_summary"] = summary;
  }
  return j;
}

std::string html_paragraphs(const std::string& text) {
  return "<pre class=\"verdict\">" + reports::html_escape(text) + "</pre>\n";
}

int run_tune(const TuneOptions& o) {
  // The folder first: the samples are copied into it, and nothing is computed for a folder that cannot be had.
  std::error_code ec;
  const fs::path dir = o.out;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir, ec)) {
    std::cerr << fmt::format("lethe tune: --out {}: cannot create the folder{}\n", dir.string(),
                             ec ? ": " + ec.message() : std::string());
    return kExitBadInput;
  }
  const auto input = tune_input(o);
  if (!input) return kExitBadInput;
  const TuneInput& in = *input;
  const TuneAnalysis a = analyze_tuning(in);
  const Verdict v = verdict(in, a);

  std::cout << fmt::format("processing time: {}{}\n", in.processing_time_text,
                           in.sample_count > 0 ? fmt::format(" ({} samples)", in.sample_count) : "");
  std::cout << fmt::format("crash rate: {:.3g} per worker per hour; target duplicate rate: {}; patience: {}; poll: {}\n\n",
                           in.crash_rate_per_second * 3600.0, rate_text(in.target_duplicates),
                           in.patience ? d(*in.patience) : "none given", d(in.poll));
  std::cout << v.text << "\n";
  std::cout << "trade-off: duplicates from taking over live work against recovery latency after a crash\n";
  std::cout << candidates_text(in, a);
  std::cout << fmt::format("  (an attempt of typical length {} is hit by a crash with probability {})\n",
                           d(static_cast<sim::Duration>(std::llround(a.typical_processing_ns))),
                           rate_text(a.crash_hit_probability));
  for (const auto& note : a.notes) std::cout << "note: " << note << "\n";

  // The cells of the confirmation sweep: around the recommendation, or the two closest options.
  std::vector<sim::Duration> mpts;
  if (a.recommended_mpt) {
    mpts = {round_up_significant(*a.recommended_mpt / 2), *a.recommended_mpt, round_up_significant(sim::saturating_add(*a.recommended_mpt, *a.recommended_mpt))};
  } else {
    if (a.patience_mpt) mpts.push_back(*a.patience_mpt);
    mpts.push_back(a.target_mpt);
  }
  const sim::Duration centre = a.recommended_mpt.value_or(a.target_mpt);
  const ConfirmationSize size = size_confirmation(in, a, o.messages, o.seeds);
  const sim::Duration largest = *std::max_element(mpts.begin(), mpts.end());
  const std::string scenario_text = confirmation_scenario(in, a, centre, o.messages, o.seeds, largest);
  const fs::path scenario_path = dir / "scenario.toml";
  if (const auto error = reports::write_file(scenario_path, scenario_text); !error.empty()) {
    std::cerr << "lethe tune: " << error << "\n";
    return kExitBadInput;
  }
  VarySpec axis;
  axis.key = "protocol.max_processing_time";
  for (const auto mpt : mpts) axis.values.push_back(sim::format_duration(mpt));
  std::string vary_text = axis.key + "=";
  for (std::size_t i = 0; i < axis.values.size(); ++i) vary_text += (i > 0 ? "," : "") + axis.values[i];
  const fs::path confirmation = dir / "confirmation";
  const std::string sweep_command = fmt::format("lethe sweep {} --vary {} --seeds {} --out {}",
                                                shell_quote(scenario_path.string()), vary_text, o.seeds,
                                                shell_quote(confirmation.string()));

  nlohmann::ordered_json json;
  json["inputs"] = inputs_json(in);
  json["recommended"] = nlohmann::ordered_json::object();
  put_duration(json["recommended"], "max_processing_time", a.recommended_mpt);
  put_duration(json["recommended"], "ttl", a.ttl);
  put_duration(json, "target_mpt", a.target_mpt);
  json["target_mpt_exact_ns"] = a.target_mpt_exact;
  put_duration(json, "patience_mpt", a.patience_mpt);
  nlohmann::ordered_json candidates = nlohmann::ordered_json::array();
  for (const auto& c : a.candidates) {
    nlohmann::ordered_json candidate;
    put_duration(candidate, "max_processing_time", c.mpt);
    candidate["label"] = c.label;
    candidate["takeover_duplicate_rate"] = c.takeover_rate;
    candidate["recovery_ns"] = c.recovery;
    candidate["crash_delay_per_message_ns"] = static_cast<std::int64_t>(std::llround(c.crash_delay_ns));
    candidate["meets_target"] = c.meets_target;
    candidate["within_patience"] = c.within_patience;
    candidates.push_back(candidate);
  }
  json["candidates"] = candidates;
  json["notes"] = a.notes;
  json["confirmation_plan"] = {{"seeds", o.seeds},
                               {"messages", size.messages},
                               {"messages_given", o.messages},
                               {"message_rate_per_second", size.message_rate_per_second},
                               {"crash_rate_per_second", size.crash_rate_per_second},
                               {"crash_rate_raised", size.crash_rate_raised},
                               {"expected_recoveries_per_seed", size.expected_recoveries},
                               {"recoveries_needed_per_seed_for_p99", kRecoveriesForP99}};

  reports::ReportInput report;
  report.title = fmt::format("lethe tune: max_processing_time for {}", in.processing_time_text);
  report.varied_keys = {axis.key};
  report.scenario_path = scenario_path.string();
  report.scenario_toml = scenario_text;
  report.command = this_command_line() + "\n\n# the confirmation sweep alone:\n" + sweep_command;
  report.analytic_label = "analytic P(T > mpt)";
  report.target_rate = in.target_duplicates;
  report.target_label = "target " + rate_text(in.target_duplicates);
  if (in.patience) {
    report.patience_seconds = static_cast<double>(*in.patience) / 1e9;
    report.patience_label = "patience " + d(*in.patience);
  }
  SideVerdict takeover_side{false, false, "takeover rate not confirmed: --no-confirm skipped the confirmation"};
  SideVerdict recovery_side{false, false, "recovery not confirmed: --no-confirm skipped the confirmation"};
  std::string measured_text;
  std::string measured_html;
  int exit_code = v.feasible ? kExitOk : kExitExpectation;

  if (!o.no_confirm) {
    fs::remove_all(confirmation, ec);
    SweepSpec spec;
    spec.scenario_file = scenario_path;
    spec.scenario_text = scenario_text;
    spec.vary = {axis};
    spec.seeds = o.seeds;
    spec.jobs = o.jobs;
    spec.out_dir = confirmation;
    spec.command_line = sweep_command;
    spec.progress = stderr_progress_mode();
    spec.messages_out = &std::cerr;
    std::cout << fmt::format("\nconfirmation sweep: {} cells x {} seeds x {} messages{} ({})\n", mpts.size(), o.seeds,
                             size.messages,
                             size.messages_raised ? fmt::format(" (raised from {} for the crash side's p99)", o.messages)
                                                  : std::string(),
                             confirmation.string());
    const SweepOutcome outcome = run_sweep(spec);
    if (outcome.exit_code == kExitBadInput || outcome.exit_code == kExitInternal) {
      // Its own exit code: a sweep that could not write its files (a full disk) is exit 2, not an internal error.
      std::cerr << fmt::format("lethe tune: the confirmation sweep failed (exit {}); the generated scenario is {}\n",
                               outcome.exit_code, scenario_path.string());
      return outcome.exit_code;
    }
    report.cells = outcome.cells.cells;
    measured_text = fmt::format("  {:>10}  {:>10}  {:>10}  {:>24}  {:>10}  {:>14}  {:>26}\n", "mpt", "analytic",
                                "measured", "95% interval", "takeovers", "analytic rec.", "measured rec. p50/p99 (n)");
    measured_html = "<table class=\"tune\">\n<thead><tr><th>max_processing_time</th><th>analytic P(T &gt; mpt)</th>"
                    "<th>measured duplicate rate (every cause)</th><th>95% interval</th><th>of which takeovers of live "
                    "work</th><th>analytic recovery &asymp; mpt + poll</th>"
                    "<th>measured recovery p50 / p99 (samples)</th></tr></thead>\n<tbody>\n";
    nlohmann::ordered_json measured = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < report.cells.size() && i < mpts.size(); ++i) {
      const auto& cell = report.cells[i];
      const double analytic = in.processing_time.survival(mpts[i]);
      report.analytic_duplicate_rate[cell.index] = analytic;
      const double takeovers =
          cell.trials == 0 ? 0.0
                           : static_cast<double>(cell.by_cause[static_cast<std::size_t>(lethe::Cause::TakeoverWhileAlive)]) /
                                 static_cast<double>(cell.trials);
      const std::string recovery = cell.recovery_latency.count == 0
                                       ? std::string("none")
                                       : fmt::format("{} / {} ({})", d(cell.recovery_latency.p50),
                                                     d(cell.recovery_latency.p99), cell.recovery_latency.count);
      measured_text += fmt::format("  {:>10}  {:>10}  {:>10}  {:>24}  {:>10}  {:>14}  {:>26}\n", d(mpts[i]),
                                   takeover_rate_text(in, analytic), rate_text(cell.duplicate_rate),
                                   fmt::format("[{}, {}]", rate_text(cell.duplicate_interval.low),
                                               rate_text(cell.duplicate_interval.high)),
                                   rate_text(takeovers), d(mpts[i] + in.poll), recovery);
      measured_html += fmt::format(
          "<tr><td>{}</td><td>{}</td><td>{}</td><td>[{}, {}]</td><td>{}</td><td>{}</td><td>{}</td></tr>\n", d(mpts[i]),
          reports::html_escape(takeover_rate_text(in, analytic)), rate_text(cell.duplicate_rate), rate_text(cell.duplicate_interval.low),
          rate_text(cell.duplicate_interval.high), rate_text(takeovers), d(mpts[i] + in.poll),
          reports::html_escape(recovery));
      nlohmann::ordered_json cell_json;
      put_duration(cell_json, "max_processing_time", mpts[i]);
      measured.push_back({{"max_processing_time_ns", cell_json["max_processing_time_ns"]},
                          {"max_processing_time_text", cell_json["max_processing_time_text"]},
                          {"analytic_duplicate_rate", analytic},
                          {"measured_duplicate_rate", cell.duplicate_rate},
                          {"interval", {cell.duplicate_interval.low, cell.duplicate_interval.high}},
                          {"duplicates", cell.duplicates},
                          {"trials", cell.trials},
                          {"takeover_while_alive", cell.by_cause[static_cast<std::size_t>(lethe::Cause::TakeoverWhileAlive)]},
                          {"recovery_latency_p50_ns", cell.recovery_latency.p50},
                          {"recovery_latency_p99_ns", cell.recovery_latency.p99},
                          {"recovery_samples", cell.recovery_latency.count}});
    }
    measured_html += "</tbody>\n</table>\n";
    json["confirmation"] = measured;
    // The verdicts are on the cell of the recommendation (or of the target, when there is none).
    for (std::size_t i = 0; i < report.cells.size() && i < mpts.size(); ++i) {
      if (mpts[i] != centre) continue;
      takeover_side = takeover_verdict(in, report.cells[i]);
      recovery_side = recovery_verdict(in, size, report.cells[i], o.seeds, o.messages);
    }
    std::cout << "measured in the simulator (duplicates: every cause; the analytic rate is an upper bound of the "
                 "takeovers, a waiter notices a stale record only at its next re-read):\n"
              << measured_text;
  }

  json["verdict"] = {{"takeover", {{"confirmed", takeover_side.confirmed}, {"text", takeover_side.text}}},
                     {"recovery", {{"confirmed", recovery_side.confirmed}, {"text", recovery_side.text}}}};
  std::cout << "\nverdict:\n  " << takeover_side.text << "\n  " << recovery_side.text << "\n";
  const auto verdict_html = [](const SideVerdict& side) {
    return fmt::format("<p class=\"verdict-side {}\">{}</p>\n", side.confirmed ? "confirmed" : "not-confirmed",
                       reports::html_escape(side.text));
  };
  report.intro_html = "<h2>Recommendation</h2>\n" + html_paragraphs(v.text);
  report.intro_html += "<h2>Verdict</h2>\n" + verdict_html(takeover_side) + verdict_html(recovery_side);
  report.intro_html += "<h2>Inputs</h2>\n" + inputs_html(in, size, o.seeds, o.messages);
  report.intro_html += "<h2>Processing time</h2>\n<figure>\n" + reports::survival_svg(survival_plot(in, a)) +
                       "<figcaption>The measured or given processing time as P(T &gt; t): a max_processing_time of t "
                       "takes over live work at this rate. Red: the target rate and the quantile that meets it; "
                       "green: the recommended max_processing_time (rounded up); purple: the patience limit."
                       "</figcaption>\n</figure>\n";
  for (const auto& note : a.notes) report.intro_html += "<p class=\"note\">" + reports::html_escape(note) + "</p>\n";
  report.intro_html += "<h2>Trade-off</h2>\n<p>Duplicates from taking over live work (the record looks dead while "
                       "its owner is only slow) against the time a crashed message waits before anyone retries "
                       "it.</p>\n" + candidates_html(in, a);
  if (!measured_html.empty()) {
    report.intro_html += "<h2>Confirmation in the simulator</h2>\n<p>The generated scenario below, at 0.5x, 1x and 2x "
                         "the recommendation (or at the closest options), every message redelivered while in flight. "
                         "The analytic rate is an upper bound of the takeovers: a waiting copy notices a stale record "
                         "only at its next re-read.</p>\n" + measured_html;
  }
  const auto rendered = reports::write_report(dir, report);
  for (const auto& w : rendered.warnings) std::cerr << "lethe tune: " << w << "\n";
  if (!rendered.ok()) {
    std::cerr << "lethe tune: " << rendered.error << "\n";
    return kExitBadInput;
  }
  if (const auto error = reports::write_file(dir / "tune.json", json.dump(2) + "\n"); !error.empty()) {
    std::cerr << "lethe tune: " << error << "\n";
    return kExitBadInput;
  }
  std::cout << fmt::format("\nreport: {}\n", rendered.html_path.string());
  return exit_code;
}

}  // namespace

ExtraCommand register_tune(CLI::App& app) {
  auto o = std::make_shared<TuneOptions>();
  auto* command = app.add_subcommand(
      "tune", "Recommend max_processing_time and ttl from the processing time, crash rate, duplicate target and "
              "patience; confirm it in the simulator");
  auto* dist = command->add_option("--processing-time", o->processing_time,
                                   "The domain's processing time as a distribution (\"exponential(mean=200ms)\")");
  auto* samples = command->add_option("--samples", o->samples, "Measured processing times: one duration per line, or a CSV file with a header (--column)");
  dist->excludes(samples);
  command->add_option("--samples-unit", o->samples_unit, "Unit of plain numbers in --samples (ns us ms s m h d)");
  command->add_option("--column", o->column, "The column of a --samples CSV file to read, by its header name");
  command->add_option("--crash-rate", o->crash_rate,
                      "Crashes per worker, with a unit: N/s, N/m, N/h or N/d (default 1/h)");
  command->add_option("--target-duplicates", o->target,
                      "Acceptable rate of duplicates from taking over live work, in (0, 1) (default 0.001)");
  command->add_option("--patience", o->patience, "The longest a crashed message may wait for a retry (a duration)");
  command->add_option("--redelivery-window", o->redelivery_window,
                      "How late a duplicate delivery can turn up (ttl = 2x this)");
  command->add_option("--poll", o->poll, "The protocol's re-read interval while waiting (default 100ms)");
  command->add_option("--seeds", o->seeds, "Seeds per cell of the confirmation sweep (default 5)")
      ->check(CLI::Range(1, 100000));
  command->add_option("--messages", o->messages, "Messages per seed of the confirmation sweep (default 2000)")
      ->check(CLI::Range(1, 10000000));
  command->add_option("-j,--jobs", o->jobs, "Threads (default: all cores)")->check(CLI::Range(0, 1024));
  command->add_flag("--no-confirm", o->no_confirm, "Skip the confirmation sweep (analysis and report only)");
  command->add_option("--out", o->out, "Output folder (report.html, tune.json, scenario.toml, confirmation/)")
      ->required();
  return ExtraCommand{command, [o] { return run_tune(*o); }};
}

}  // namespace runner
