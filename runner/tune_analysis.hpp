// runner/tune_analysis.hpp — the analytic side of `lethe tune` (runner/tune.hpp): the takeover rate and the
// recovery of each max_processing_time from the processing-time law, the recommendation, and the generated
// scenario that confirms it in the simulator. No simulation runs here.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/distribution.hpp"
#include "sim/time.hpp"

namespace runner {

struct TuneInput {
  sim::Distribution processing_time;
  std::string processing_time_text;               // as it goes into the scenario ("exponential(mean=200ms)")
  std::size_t sample_count = 0;                   // --samples: how many values the file has (0 otherwise)
  double crash_rate_per_second = 1.0 / 3600.0;    // per worker
  double target_duplicates = 1e-3;                // in (0, 1)
  std::optional<sim::Duration> patience;          // the longest a crashed message may wait for a retry
  std::optional<sim::Duration> redelivery_window; // how late a duplicate delivery can turn up
  sim::Duration poll = 100 * sim::kMillisecond;   // the protocol's re-read interval while waiting
  // What else makes a live owner look stale (absent = none): stop-the-world pauses of the owner (the interval
  // between two pauses of a node, and a pause's length; both or neither) and a fixed clock offset per node.
  std::optional<sim::Distribution> pause_every;
  std::optional<sim::Distribution> pause_for;
  std::optional<sim::Distribution> clock_skew;
};

// The age a waiter reads on a live owner's record when the owner finishes: the owner's work, plus the pauses it
// met while working, plus the taker's clock offset minus the owner's. A takeover of live work happens when that
// age passes max_processing_time, so its survival is the takeover duplicate rate. Without pauses and skew it is
// the processing-time law itself (exact). With them it is the exact survival of the work plus what pauses and
// skew change, estimated by a fixed-seed Monte Carlo of kApparentAgeDraws paired draws (work alone, with pauses,
// with pauses and skew: a control variate, so the estimate's error is only in those shares, to about
// 1 / kApparentAgeDraws; deterministic, a function of the inputs).
// A pause's first occurrence is at a uniform point of one interval after the attempt starts, then an interval
// after each pause ends, as the simulator's pause loop; the two offsets are drawn independently (owner and taker
// are different workers).
inline constexpr int kApparentAgeDraws = 1000000;
class TakeoverLaw {
 public:
  explicit TakeoverLaw(const TuneInput& input);
  // P(apparent age > mpt), in [0, 1].
  double survival(sim::Duration mpt) const;
  // The shares of survival(mpt): the work alone (exact), what pauses add, what clock skew adds (may be negative:
  // a taker whose clock is behind sees a younger record).
  double work_share(sim::Duration mpt) const { return work_.survival(mpt); }
  double pause_share(sim::Duration mpt) const;
  double skew_share(sim::Duration mpt) const;
  // The smallest mpt with survival(mpt) <= 1 - level.
  sim::Duration quantile(double level) const;
  bool exact() const { return total_.empty(); }
  // What the law adds up, for sentences: "processing time", "processing time + pauses", ...
  const std::string& name() const { return name_; }
  // The smallest share of pauses and skew the Monte Carlo tells apart from zero: 0 when exact.
  double resolution() const;

 private:
  sim::Distribution work_;           // the processing time
  std::vector<double> work_draws_;   // sorted draws of the work (empty when exact)
  std::vector<double> paused_;       // sorted draws of work + pauses, paired with the work's draws
  std::vector<double> total_;        // sorted draws of work + pauses + offsets
  std::string name_ = "processing time";
};

struct TuneCandidate {
  sim::Duration mpt = 0;
  std::string label;             // "p99.9", "recommended", "0.5x", "patience limit", ...
  double takeover_rate = 0.0;    // P(apparent age > mpt): TakeoverLaw::survival
  double work_rate = 0.0;        // its shares (TakeoverLaw): slow work alone, P(processing time > mpt) ...
  double pause_rate = 0.0;       // ... what pauses add ...
  double skew_rate = 0.0;        // ... and what clock skew adds (may be negative)
  sim::Duration recovery = 0;    // ~= mpt + poll
  double crash_delay_ns = 0.0;   // mean delay added per message by crashes: P(attempt hit) x (mpt + poll)
  bool meets_target = false;
  bool within_patience = true;
};

// The recommendation aims at target / kDesignMargin, not at the target: a rate at the target can never be shown
// below it by a finite confirmation (its interval always contains the target), while a rate of a quarter of it
// is shown below it by about 3/target trials.
inline constexpr double kDesignMargin = 4.0;

struct TuneAnalysis {
  std::shared_ptr<const TakeoverLaw> law;        // what the rates below are read from
  sim::Duration target_mpt_exact = 0;            // the (1 - target) quantile
  sim::Duration target_mpt = 0;                  // rounded up: the smallest mpt offered that meets the target
  double design_rate = 0.0;                      // target / kDesignMargin
  sim::Duration design_mpt = 0;                  // rounded up (1 - design_rate) quantile, at least target_mpt
  std::optional<sim::Duration> patience_mpt;     // the largest mpt within patience (patience - poll), if any
  // design_mpt when it fits the patience; else the patience limit when target_mpt fits it (less margin).
  std::optional<sim::Duration> recommended_mpt;
  std::optional<sim::Duration> ttl;              // 2 x redelivery window
  double crash_hit_probability = 0.0;            // P(an attempt is hit by a crash) ~= rate x mean processing time
  double typical_processing_ns = 0.0;            // mean, or the median when the mean is infinite
  std::vector<TuneCandidate> candidates;         // sorted by mpt
  std::vector<std::string> notes;                // caveats (few samples, heavy tail, ...)
};

// Rounds a positive duration UP to 3 significant digits (1381551056ns -> 1.39s), saturating at kTimeMax; 0 and
// negative values give 0. Integer arithmetic: exact for every int64.
sim::Duration round_up_significant(sim::Duration d, int digits = 3);

// The analytic part: no simulation. REQUIRES 0 < target < 1, poll >= 0.
TuneAnalysis analyze_tuning(const TuneInput& input);

// A p99 rests on at least this many samples (the 99th percentile of fewer is the largest value or near it).
inline constexpr std::uint64_t kRecoveriesForP99 = 100;

// The share of attempts a raised crash rate may hit in the confirmation (size_confirmation).
inline constexpr double kMostAttemptsHit = 0.005;

// How the confirmation scenario is sized. Messages arrive at a rate that keeps the 8 consumers about 30% busy.
// The crash side needs kRecoveriesForP99 recoveries in each seed for its p99 (a cell's p99 is the median of its
// seeds' p99s), and aims 20% above that: when the given crash rate would give fewer, the scenario crashes more
// often (the time a crashed message waits does not depend on how often crashes come, only the number of samples
// does), up to a rate at which kMostAttemptsHit of attempts are hit, so the takeover side stays what it measures
// and a rerun is hit too rarely to move the p99 (it stays the one wait a crash at the given rate costs); when
// that is still too few, it runs more messages (at most 100000 a seed).
struct ConfirmationSize {
  std::int64_t messages = 0;            // per seed, as the scenario runs them
  bool messages_raised = false;         // above --messages
  double message_rate_per_second = 0.0;
  double workload_seconds = 0.0;
  double crash_rate_per_second = 0.0;   // per worker, as the scenario runs it
  bool crash_rate_raised = false;       // above the given --crash-rate
  double expected_recoveries = 0.0;     // per seed
};
// Recovery after a crash in the confirmation world, from the processing-time law and the crash rate. A crash
// lands in an attempt with a probability proportional to the attempt's length, at a uniform point of it (age A);
// the copy the queue redelivers (visibility_timeout <= mpt, so it arrives before the record is stale) waits
// until the record is mpt old, notices it at its next re-read (uniform in one poll interval) and runs the work
// again (a fresh processing time T'): R = max(mpt - A, 0) + U(0, poll) + T'. The rerun can itself be hit by a
// crash (a worker crashes at `crash_rate_per_second`): the wait then starts over from the rerun's record, which
// is what puts a p99 near 2 x mpt when crashes are frequent. p50 and p99 of R by a fixed-seed Monte Carlo of
// 200,000 draws (deterministic; its own error is below 1% of the p99).
struct RecoveryEstimate {
  sim::Duration p50 = 0;
  sim::Duration p99 = 0;
};
RecoveryEstimate analytic_recovery(const sim::Distribution& processing_time, sim::Duration mpt, sim::Duration poll,
                                   double crash_rate_per_second = 0.0);

ConfirmationSize size_confirmation(const TuneInput& input, const TuneAnalysis& analysis, std::int64_t messages,
                                   std::int64_t seeds);

// The generated confirmation scenario (queue; every message redelivered while in flight; the processing time;
// crashes at size_confirmation()'s crash rate), with max_processing_time = `mpt`, as TOML that
// scenario::load_scenario_text accepts. The queue's visibility_timeout is `smallest_mpt` (the smallest mpt the
// sweep runs): a crashed attempt's message comes back before its record is stale, so the wait for the record
// to age, not the queue's timeout, bounds recovery (analytic_recovery()).
std::string confirmation_scenario(const TuneInput& input, const TuneAnalysis& analysis, sim::Duration mpt,
                                  std::int64_t messages, std::int64_t seeds, sim::Duration largest_mpt,
                                  sim::Duration smallest_mpt);

// The scenario that confirms the ttl (TuneAnalysis::ttl; REQUIRES in.redelivery_window and a.ttl): every
// message comes again once, uniformly up to the redelivery window late, no crashes, max_processing_time `mpt`;
// the run lasts past the latest copy, so each copy is delivered and either finds its record or is a duplicate
// classed `expired`.
inline constexpr std::int64_t kTtlMessages = 500;  // per seed: about half come later than half the window
std::string ttl_scenario(const TuneInput& input, const TuneAnalysis& analysis, sim::Duration mpt, std::int64_t seeds);

// The words tune prints: a rate with 3 significant digits; a quantile level as "p99.9"; whether a rate meets a
// target (allowing for the rounding of survival(), a double).
std::string tune_rate_text(double p);
std::string tune_level_label(double level);
bool tune_meets(double rate, double target);

}  // namespace runner
