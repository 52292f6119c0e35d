// runner/bench.hpp — `lethe bench`: one scenario run for speed, reported the way the peer simulators report.
//
//   lethe bench FILE [--seed N] [--seeds K] [-j J] [--set KEY=VALUE]... [--check-linearizability]
//
// Runs seeds N .. N+K-1 (default one seed, N = 1) on J threads (default 1) and prints, per seed, one line in
// the format the peer simulators of scripts/bench-peers print (docs/performance.md describes the workload):
//   peer=lethe messages=<deliveries> effects=<n> skipped=<n> sim_seconds=<t> wall_seconds=<w> events_per_sec=<e>
// where, with the peers' event definition, events = 5 * effects + 2 * skipped: lethe does more
// per message (queue receive and delete RPCs, the sink call, the ledger and the oracle), and none of that is
// counted. skipped = deliveries - effects. wall_seconds is the simulation loop only (workload and drain), as
// the peers time their engine's run loop; the other phases are on the `# detail` line (stderr):
//   setup_seconds (World construction and wiring), judge_seconds (oracle; plus the linearizability check when
//   --check-linearizability), teardown_seconds (unwinding fibers, freeing), total_seconds, peak_rss_kb (of the
//   process so far), trace_events, trace_hash, sim_seconds_full (ns precision).
// With K > 1 a `# total` line follows: the wall time from the first seed's start to the last seed's end, and
// the events of all seeds over it (the -j scaling figure).
//
// Check (exit code 1 when it fails, `# check FAILED ...` on stderr): every distinct message took effect once
// and every extra delivery was skipped: effects == messages, duplicate_effects == 0, lost_messages == 0 and
// deliveries - effects == the redelivery copies published (coverage redelivery.copy).
//
// The linearizability check is off by default (it is an analysis after the run, and its history grows with
// the run); --check-linearizability turns it on and adds its time to judge_seconds.
#pragma once

namespace CLI {
class App;
}

namespace runner {

struct ExtraCommand;

ExtraCommand register_bench(CLI::App& app);

}  // namespace runner
