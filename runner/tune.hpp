// runner/tune.hpp — `lethe tune`: choose max_processing_time and ttl from what the domain knows.
//
//   lethe tune (--processing-time DIST | --samples FILE [--column NAME] [--samples-unit U]) [--crash-rate R]
//              [--target-duplicates P] [--patience D] [--redelivery-window D] [--poll D]
//              [--pause-every DIST --pause-for DIST] [--clock-skew DIST]
//              [--seeds N] [--messages N | --scenario FILE] [-j N] [--no-confirm] --out DIR
//
// max_processing_time (mpt) is a statement about the domain, not a config value: too low and healthy-but-slow
// work is declared dead and run again concurrently (a takeover of live work: a duplicate); too high and a
// crashed message waits that long before anyone retries it. tune makes the trade-off explicit:
// - takeover duplicate rate(mpt) = P(processing time > mpt) = survival(mpt) of the processing-time law
//   (a waiting redelivery takes over as soon as the record is mpt old; polling can only make it later, so this
//   is an upper bound of the rate the simulator measures);
//   With --pause-every/--pause-for (a worker's stop-the-world pauses) or --clock-skew (a fixed offset per
//   worker), a live owner also looks stale when its work plus the pauses it met plus the taker's clock offset
//   minus its own passes mpt: the rate is that sum's survival (TakeoverLaw), and the table gives each input's
//   share; the confirmation scenario has the same pauses and skew.
// - recovery after a crash ~= mpt + poll: the crashed attempt's record must age to mpt, then a waiter needs up
//   to one poll interval to re-read it. --patience bounds this: mpt + poll <= patience.
// The recommendation is the mpt whose takeover rate is a quarter of --target-duplicates (kDesignMargin; the
// (1 - P/4) quantile rounded UP to 3 significant digits): a rate at the target can never be confirmed below it,
// a quarter of it can. When that does not fit the patience but the target's own quantile does, the patience
// limit is recommended. Recovery p50/p99 come from analytic_recovery() (runner/tune_analysis.hpp). The
// confirmation decides each side: confirmed / not confirmed / unreachable (runner/tune_verdict.hpp); the
// takeover side is a sequential test that runs more seeds while its interval contains the target.
// TTL = 2 x --redelivery-window: a duplicate that turns up after its record expired is processed
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
// scenario.toml (the generated confirmation scenario; with --scenario FILE none: the confirmation runs FILE with
// the recommended ttl set, runner/tune_scenario.hpp), confirmation/ (a `lethe sweep` folder over mpt = 0.5x,
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

#include "runner/command.hpp"
#include "runner/tune_analysis.hpp"

namespace runner {

ExtraCommand register_tune(CLI::App& app);

}  // namespace runner
