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
// A candidate's takeover rate; with pauses or clock skew, each input's share beside it.
std::string candidate_rate_text(const TuneInput& in, const TuneAnalysis& a, const TuneCandidate& c);

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
  std::string text;       // one sentence: the state, the reason and what was measured
  // "confirmed", "not confirmed", "unreachable" (the confirmation cannot decide: too close to the target within
  // the trial budget, or too few samples), or "undecided" (takeover side only: more trials can decide).
  std::string state = "not confirmed";
  std::string change;     // what to change ("" when confirmed)
};

// The takeover side is a sequential test: after each round its interval is compared with the target, and an
// interval that still contains the target runs the next round (twice the seeds so far), up to kMostLooks looks
// in all. Each look uses a 99% Wilson interval, so the chance that any of the looks errs stays under 5%.
inline constexpr int kMostLooks = 5;
inline constexpr double kLookZ = 2.5758293035489;  // two-sided 99%

// The seeds of each cell's p50 / p99 of recovery latency, for the spread around the cell's median of them.
struct SeedSpread {
  std::int64_t p50_low = 0, p50_high = 0, p99_low = 0, p99_high = 0;
  std::size_t seeds = 0;  // seeds with a recovery sample
};

// Takeovers of live work at the recommended mpt: confirmed only when the whole 95% interval is below the target.
// `budget_left`: another round may run, so an interval that contains the target gives "undecided".
SideVerdict takeover_verdict(const TuneInput& in, std::uint64_t takeovers, std::uint64_t trials, int looks,
                             bool budget_left);

// Recovery after a crash at the recommended mpt: a p99 needs kRecoveriesForP99 recoveries in each seed (the
// cell's p99 is the median of the seeds' p99s).
// Confirmed when the measured p99 is within the patience; the text compares it with analytic_recovery() and
// says what bounds recovery in the confirmation world.
// The ttl side: `at_ttl` is the cell of the recommended ttl, `at_half` the cell of half the redelivery window
// (it shows that copies came late enough to meet the expiry). Confirmed when no copy found its record expired at
// the ttl while some did at half the window.
SideVerdict ttl_verdict(const TuneInput& in, const TuneAnalysis& a, const reports::CellSummary& at_ttl,
                        const reports::CellSummary& at_half);

// The confirmation world, for the recovery verdict's words.
struct RecoveryWorld {
  // What brings a crashed attempt's message back and what that means for recovery (a clause of the verdict).
  std::string redelivery;
  // The setting that runs more messages a seed ("--messages", or "workload.messages in FILE").
  std::string messages_setting = "--messages";
  std::string messages_where;  // after the value: " in FILE" for a scenario's key
  // What to change when no crash was recovered from at all.
  std::string no_recoveries = "a higher --crash-rate or more --messages";
};

SideVerdict recovery_verdict(const TuneInput& in, const ConfirmationSize& size, const reports::CellSummary& cell,
                             std::int64_t seeds, std::int64_t messages, const RecoveryEstimate& analytic,
                             const SeedSpread& spread, sim::Duration mpt, const RecoveryWorld& world);

}  // namespace runner
