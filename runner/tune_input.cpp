#include "runner/tune_input.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <vector>

#include "reports/output_file.hpp"
#include "scenario/text.hpp"
#include "sim/text.hpp"
#include "sim/regular_file.hpp"

namespace fs = std::filesystem;

namespace runner {

namespace {


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

// A crash rate of 0 (no crashes), or one whose mean interval a scenario's faults.crash_every accepts: 1 ms (the
// shortest mean interval of a fault loop) to kDurationMax.
bool crash_rate_in_range(double per_second) {
  if (per_second == 0.0) return true;
  const double mean_ns = 1e9 / per_second;
  return mean_ns >= 1e6 && mean_ns <= static_cast<double>(sim::kDurationMax);
}

// One field of a CSV line, trimmed and unquoted ("\"12ms\"" -> 12ms).
std::string csv_field(std::string field) {
  field = std::string(lethe::text::trim(field));
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

}  // namespace

std::optional<std::vector<sim::Duration>> parse_samples(const std::string& content, const std::string& shown,
                                                        const std::string& column, const std::string& unit,
                                                        std::string& error) {
  std::istringstream in(content);
  std::vector<sim::Duration> values;
  std::optional<std::size_t> index;  // the column read; nullopt until the first line decides
  std::string line;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (lethe::text::trim(line).empty()) continue;
    const auto fields = csv_fields(line);
    const std::string where = fmt::format("--samples {}:{}", shown, number);
    if (!index) {
      std::string probe;
      bool header = false;
      for (const auto& f : fields) header = header || (!plain_number(f) && !sim::parse_duration_rounded(f, probe));
      if (!column.empty()) {
        if (!header) {
          error = fmt::format("{}: --column {}: the first line is not a header naming the columns (found \"{}\")",
                              where, column, lethe::text::trim(line));
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

namespace {

// --samples FILE: parse_samples over the file's content.
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
  return parse_samples(*content, shown, column, unit, error);
}


// The crash rate, the target and the durations into `in`; false after printing what is wrong with any of them.
bool read_rates_and_durations(const TuneOptions& o, const sim::Distribution& law, TuneInput& in) {
  bool ok = true;
  const auto rate = scenario::text::parse_rate_per_second(o.crash_rate);
  if (!rate || !crash_rate_in_range(*rate)) {
    std::cerr << fmt::format("lethe tune: --crash-rate: found \"{}\"; allowed: crashes per worker as N/s, N/m, N/h "
                             "or N/d (e.g. \"2/h\"): 0, or from one per {} to one per millisecond (1000/s)\n",
                             o.crash_rate, sim::format_duration(sim::kDurationMax));
    ok = false;
  } else {
    in.crash_rate_per_second = *rate;
  }
  if (!(o.target >= kTargetMin && o.target < 1.0)) {
    std::cerr << fmt::format("lethe tune: --target-duplicates: found {}; allowed: a probability from {} up to, not "
                             "including, 1 (e.g. 0.001)\n", o.target, kTargetMin);
    ok = false;
  } else if (law.quantile(1.0 - o.target) > kMptMax) {
    std::cerr << fmt::format("lethe tune: --target-duplicates: found {}; the processing time {} exceeds {} with a "
                             "higher probability, so no max_processing_time tune can confirm (at most {}) meets it; "
                             "allowed: a target of at least P(processing time > {}) = {:.3g}\n",
                             o.target, in.processing_time_text, sim::format_duration(kMptMax),
                             sim::format_duration(kMptMax), sim::format_duration(kMptMax),
                             law.survival(kMptMax));
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
  return ok;
}

// A distribution option of what makes a live owner look stale (--pause-every, --pause-for, --clock-skew), as
// the scenario's faults take it; nullopt when not given, or after printing what is wrong (ok = false).
std::optional<sim::Distribution> stale_option(const std::string& name, const std::string& text, bool negative,
                                              bool& ok) {
  if (text.empty()) return std::nullopt;
  std::string error;
  auto law = sim::Distribution::parse(text, fs::current_path(), error, negative);
  if (law && law->largest_magnitude() > sim::kDurationMax) {
    error = fmt::format("{} is above {}, the longest duration a scenario may give",
                        sim::format_duration(law->largest_magnitude()), sim::format_duration(sim::kDurationMax));
    law.reset();
  }
  if (law && name == "--pause-every" && !(law->mean_ns() >= 1e6)) {
    error = fmt::format("found \"{}\", a mean interval below 1ms; allowed: a distribution with a mean of at least 1ms",
                        text);
    law.reset();
  }
  if (!law) {
    std::cerr << fmt::format("lethe tune: {}: {}\n", name, error);
    ok = false;
  }
  return law;
}

// --pause-every and --pause-for (both or neither) and --clock-skew into `in`; false after printing what is wrong.
bool read_stale_inputs(const TuneOptions& o, TuneInput& in) {
  if (o.pause_every.empty() != o.pause_for.empty()) {
    std::cerr << "lethe tune: --pause-every and --pause-for go together: give both (how often a worker pauses, "
                 "how long a pause lasts) or neither\n";
    return false;
  }
  bool ok = true;
  in.pause_every = stale_option("--pause-every", o.pause_every, false, ok);
  in.pause_for = stale_option("--pause-for", o.pause_for, false, ok);
  in.clock_skew = stale_option("--clock-skew", o.clock_skew, true, ok);
  return ok;
}

}  // namespace

std::optional<TuneInput> tune_input(const TuneOptions& o) {
  TuneInput in;
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
  const bool rates = read_rates_and_durations(o, *law, in);  // both read: every wrong option is named at once
  if (!read_stale_inputs(o, in) || !rates) return std::nullopt;
  return in;
}

}  // namespace runner
