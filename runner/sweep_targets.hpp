// runner/sweep_targets.hpp — `lethe sweep ... --target FIELD<=X`: a verdict per cell on any field of cells.json.
//
// FIELD is a dotted path into a cell of cells.json (docs/sweeps.md): duplicate_rate, by_cause.CAUSE (a rate:
// that cause's duplicates / trials), lost, waits, wait_time.p99, recovery_latency.p50, ... X is a number, or a
// duration ("5s") for the latency fields (nanoseconds in cells.json). A rate has its 95% Wilson interval, and
// the cell passes only when the whole interval is on the target's side, fails when the whole interval is on
// the other side, and is "undecided" when the interval contains X (more seeds can decide it). Any other field
// is a point value (a count, or a median over seeds) judged as it is.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/cells.hpp"

namespace runner {

struct SweepTarget {
  std::string field;     // dotted path into a cell of cells.json
  bool at_most = true;   // FIELD<=X (else FIELD>=X)
  double limit = 0.0;    // in cells.json's unit (nanoseconds for durations)
  std::string text;      // as given ("duplicate_rate<=0.001")
};

// "FIELD<=X" or "FIELD>=X". Errors name the option, what was found and the fields allowed.
std::optional<SweepTarget> parse_sweep_target(std::string_view text, std::string& error);

struct TargetVerdict {
  // "pass", "fail", "undecided" (a rate whose interval contains the limit), "n/a" (no trials, or a latency
  // quantile without samples)
  std::string verdict;
  double value = 0.0;                           // meaningless when n/a
  std::optional<reports::Interval> interval;  // rates only
  std::string reason;                           // why n/a: "no trials", "no recoveries", "no waits"
};
TargetVerdict judge_target(const SweepTarget& target, const reports::CellSummary& cell);

// The verdict table (one line per cell and target) and its JSON (DIR/targets.json). `all_pass`: every cell
// passed every target.
std::string targets_table(const std::vector<SweepTarget>& targets, const std::vector<reports::CellSummary>& cells,
                          bool& all_pass);
nlohmann::ordered_json targets_json(const std::vector<SweepTarget>& targets,
                                    const std::vector<reports::CellSummary>& cells);

}  // namespace runner
