// runner/tune_verdict.hpp — what `lethe tune` (runner/tune.hpp) says: the recommendation in words, the
// trade-off table, and a verdict per side (takeover rate, recovery) on the confirmation sweep's cell.
#pragma once

#include <cstdint>
#include <string>

#include "reports/cells.hpp"
#include "runner/tune_analysis.hpp"

namespace runner {

// A duration as tune prints it ("inf" for kTimeMax).
std::string tune_duration_text(sim::Duration v);

// A takeover rate as people read it: past the largest sample an empirical law gives exactly 0, which only
// means "below what N samples can resolve": "< 1/N", never 0.
std::string takeover_rate_text(const TuneInput& in, double rate);

// The candidates as a text table (mpt, takeover rate, recovery, crash delay, labels).
std::string candidates_text(const TuneInput& in, const TuneAnalysis& a);

struct Verdict {
  std::string text;  // plain words, several lines
  bool feasible = false;
};

// The recommendation in words, or why there is none and the closest options.
Verdict verdict(const TuneInput& in, const TuneAnalysis& a);

struct SideVerdict {
  bool confirmed = false;
  bool measured = false;  // false: the side could not be measured at all
  std::string text;       // one sentence
};

// Takeovers of live work at the recommended mpt: confirmed only when the whole 95% interval is below the target.
SideVerdict takeover_verdict(const TuneInput& in, const reports::CellSummary& cell);

// Recovery after a crash at the recommended mpt: a p99 needs kRecoveriesForP99 recoveries in each seed (the
// cell's p99 is the median of the seeds' p99s).
SideVerdict recovery_verdict(const TuneInput& in, const ConfirmationSize& size, const reports::CellSummary& cell,
                             std::int64_t seeds, std::int64_t messages);

}  // namespace runner
