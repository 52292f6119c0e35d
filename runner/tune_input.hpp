// runner/tune_input.hpp — the options of `lethe tune` (runner/tune.hpp) read into a TuneInput: the processing
// time (a distribution, or a samples file copied into the output folder), rates and durations, each checked
// against the range the generated scenario can hold.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runner/tune_analysis.hpp"
#include "sim/time.hpp"

namespace runner {

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
  std::string pause_every;  // with pause_for: a worker's stop-the-world pauses (distributions)
  std::string pause_for;
  std::string clock_skew;   // a fixed clock offset per worker (a distribution; negative values allowed)
  std::int64_t seeds = 5;
  std::int64_t messages = 2000;
  unsigned jobs = 0;
  bool no_confirm = false;
  std::string scenario;     // --scenario FILE: confirm on it instead of the generated scenario
  std::string out;
};

// Builds the input from the options; prints what is wrong (naming the option and the allowed values) and
// returns nullopt on bad input. --samples: writes OUT/samples.txt, the values read, one duration a line.
std::optional<TuneInput> tune_input(const TuneOptions& o);

// The durations of a --samples file's content (SHOWN names it in errors): one value per line, or a CSV file whose
// header line names its columns (COLUMN picks one; a file of one column needs none); '#' starts a comment; plain
// numbers need UNIT. Nullopt after writing to `error` what is wrong, with "--samples SHOWN:LINE" and the flag
// that fixes it.
std::optional<std::vector<sim::Duration>> parse_samples(const std::string& content, const std::string& shown,
                                                        const std::string& column, const std::string& unit,
                                                        std::string& error);

}  // namespace runner
