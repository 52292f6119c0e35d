// runner/tune.hpp — `lethe tune`: choose max_processing_time and ttl from what the domain knows.
//
//   lethe tune (--processing-time DIST | --samples FILE [--column NAME] [--samples-unit U]) [--crash-rate R]
//              [--target-duplicates P] [--patience D] [--redelivery-window D] [--poll D]
//              [--seeds N] [--messages N] [-j N] [--no-confirm] --out DIR
//
// max_processing_time (mpt) is a statement about the domain, not a config value: too low and healthy-but-slow
// work is declared dead and run again concurrently (a takeover of live work: a duplicate); too high and a
// crashed message waits that long before anyone retries it. tune makes the trade-off explicit:
// - takeover duplicate rate(mpt) = P(processing time > mpt) = survival(mpt) of the processing-time law
//   (a waiting redelivery takes over as soon as the record is mpt old; polling can only make it later, so this
//   is an upper bound of the rate the simulator measures);
// - recovery after a crash ~= mpt + poll: the crashed attempt's record must age to mpt, then a waiter needs up
//   to one poll interval to re-read it. --patience bounds this: mpt + poll <= patience.
// The recommendation is the smallest mpt whose takeover rate meets --target-duplicates (the (1 - P) quantile,
// rounded UP to 3 significant digits so the rounded value still meets the target), provided mpt + poll fits
// the patience. TTL = 2 x --redelivery-window: a duplicate that turns up after its record expired is processed
// again (duplicates.expired), and the window (producer retry budget, broker replay, operator rewinds) is an
// estimate: twice it covers an underestimate, and a store that evicts lazily only ever keeps records longer.
//
// Units: --crash-rate is crashes per worker (consumer node) as a rate with its unit, "N/s", "N/m", "N/h" or
// "N/d" (default "1/h"); a bare number is refused, because "per second or per hour?" is exactly the mistake
// this command exists to prevent. Durations use the scenario language ("250ms", "1.5s").
//
// Output: a readable summary on stdout with a verdict per side, and in DIR: tune.json (inputs, analysis,
// candidates, the confirmation's plan, measured rates and verdicts; durations as KEY_ns and KEY_text),
// samples.txt (--samples: the values read),
// scenario.toml (the generated confirmation scenario), confirmation/ (a `lethe sweep` folder over mpt = 0.5x,
// 1x, 2x the recommendation; rewritten on every run) and report.html.
// Limits (checked up front, exit 2 naming the range): --target-duplicates from 1e-12 to below 1, and met by
// some max_processing_time of at most 912.5d (a quarter of the longest scenario duration, so the 2x cell, the
// visibility timeout and max_wait stay representable); --crash-rate 0 or from one per 3650d to one per ns;
// --patience up to 3650d, --redelivery-window up to 1825d (ttl = 2x), --poll up to 876h (36.5d).
// Exit codes: 0 a recommendation exists; 1 no mpt meets both the target and the patience (the closest options
// are printed); 2 bad input; 3 lethe broke during the confirmation sweep.
//
// Does not: fit distributions to samples (an empirical law is used as measured), or tune anything but mpt/ttl.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runner/command.hpp"
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
};

struct TuneCandidate {
  sim::Duration mpt = 0;
  std::string label;             // "p99.9", "recommended", "0.5x", "patience limit", ...
  double takeover_rate = 0.0;    // P(processing time > mpt)
  sim::Duration recovery = 0;    // ~= mpt + poll
  double crash_delay_ns = 0.0;   // mean delay added per message by crashes: P(attempt hit) x (mpt + poll)
  bool meets_target = false;
  bool within_patience = true;
};

struct TuneAnalysis {
  sim::Duration target_mpt_exact = 0;            // the (1 - target) quantile
  sim::Duration target_mpt = 0;                  // rounded up: the smallest mpt offered that meets the target
  std::optional<sim::Duration> patience_mpt;     // the largest mpt within patience (patience - poll), if any
  std::optional<sim::Duration> recommended_mpt;  // target_mpt when it fits the patience
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

// How the confirmation scenario is sized. Messages arrive at a rate that keeps the 8 consumers about 30% busy.
// The crash side needs kRecoveriesForP99 recoveries in each seed for its p99 (a cell's p99 is the median of its
// seeds' p99s), and aims 20% above that: when the given crash rate would give fewer, the scenario crashes more
// often (the time a crashed message waits does not depend on how often crashes come, only the number of samples
// does), up to a rate at which 2% of attempts are hit, so the takeover side stays what it measures; when that is
// still too few, it runs more messages (at most 100000 a seed).
struct ConfirmationSize {
  std::int64_t messages = 0;            // per seed, as the scenario runs them
  bool messages_raised = false;         // above --messages
  double message_rate_per_second = 0.0;
  double workload_seconds = 0.0;
  double crash_rate_per_second = 0.0;   // per worker, as the scenario runs it
  bool crash_rate_raised = false;       // above the given --crash-rate
  double expected_recoveries = 0.0;     // per seed
};
ConfirmationSize size_confirmation(const TuneInput& input, const TuneAnalysis& analysis, std::int64_t messages,
                                   std::int64_t seeds);

// The generated confirmation scenario (queue; every message redelivered while in flight; the processing time;
// crashes at size_confirmation()'s crash rate), with max_processing_time = `mpt`, as TOML that scenario::load_scenario_text accepts.
std::string confirmation_scenario(const TuneInput& input, const TuneAnalysis& analysis, sim::Duration mpt,
                                  std::int64_t messages, std::int64_t seeds, sim::Duration largest_mpt);

ExtraCommand register_tune(CLI::App& app);

}  // namespace runner
