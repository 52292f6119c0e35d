#include "runner/bench.hpp"

#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runner/command.hpp"
#include "runner/execute.hpp"
#include "scenario/loader.hpp"

namespace runner {

namespace {

using Clock = std::chrono::steady_clock;

struct BenchOptions {
  std::string file;
  std::uint64_t seed = 1;
  std::uint64_t seeds = 1;
  unsigned jobs = 1;
  std::vector<std::string> sets;
  bool check_linearizability = false;
};

struct SeedTiming {
  Clock::time_point start, built, ran, judged, end;
};

double seconds(Clock::time_point from, Clock::time_point to) { return std::chrono::duration<double>(to - from).count(); }

long peak_rss_kb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

std::uint64_t coverage(const lethe::RunResult& result, const std::string& key) {
  const auto found = result.coverage.find(key);
  return found == result.coverage.end() ? 0 : found->second;
}

// Says on stderr why a seed did not finish; returns its exit code. Out of memory or a bad node is not lethe's
// bug: exit 5 or 2, without "internal error".
int report_broken_seed(const std::string& scenario, std::uint64_t seed, const SeedRun& run) {
  const int code = run.bad_input ? kExitBadInput : run.out_of_memory() ? kExitResources : kExitInternal;
  std::cerr << fmt::format("lethe bench: {}{} seed {}: {}\n", code == kExitInternal ? "internal error in " : "",
                           scenario, seed, run.error);
  return code;
}

int run_bench(const BenchOptions& o) {
  auto loaded = scenario::load_scenario(o.file, o.sets);
  if (auto* errors = std::get_if<std::vector<scenario::LoadError>>(&loaded)) {
    for (const auto& e : *errors) std::cerr << e.message << "\n";
    return kExitBadInput;
  }
  const lethe::ScenarioConfig config = std::get<lethe::ScenarioConfig>(std::move(loaded));

  std::vector<SeedRun> runs(o.seeds);
  std::vector<SeedTiming> timings(o.seeds);
  const Clock::time_point all_start = Clock::now();
  parallel_for(o.seeds, o.jobs, [&](std::size_t i) {
    SeedTiming& t = timings[i];
    lethe::WorldOptions options;
    options.check_linearizability = o.check_linearizability;
    options.on_phase = [&t](lethe::WorldPhase phase) {
      const auto now = Clock::now();
      switch (phase) {
        case lethe::WorldPhase::Built: t.built = now; break;
        case lethe::WorldPhase::Ran: t.ran = now; break;
        case lethe::WorldPhase::Judged: t.judged = now; break;
      }
    };
    t.start = Clock::now();
    runs[i] = run_seed(config, o.seed + i, options);
    t.end = Clock::now();
  });
  const Clock::time_point all_end = Clock::now();

  int exit_code = kExitOk;
  double total_events = 0.0;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const SeedRun& run = runs[i];
    const std::uint64_t seed = o.seed + i;
    if (!run.error.empty()) {
      if (exit_code != kExitInternal) exit_code = report_broken_seed(config.scenario.name, seed, run);
      continue;
    }
    const lethe::RunResult& r = run.result;
    const SeedTiming& t = timings[i];
    const std::uint64_t effects = r.effects;
    const std::uint64_t skipped = r.deliveries >= effects ? r.deliveries - effects : 0;
    const double events = 5.0 * static_cast<double>(effects) + 2.0 * static_cast<double>(skipped);
    total_events += events;
    const double loop = seconds(t.built, t.ran);
    std::cout << fmt::format(
        "peer=lethe messages={} effects={} skipped={} sim_seconds={:.6f} wall_seconds={:.3f} events_per_sec={:.0f}\n",
        r.deliveries, effects, skipped, static_cast<double>(r.sim_time) / 1e9, loop, loop > 0 ? events / loop : 0.0);
    std::cerr << fmt::format(
        "# detail peer=lethe seed={} distinct_ids={} duplicate_deliveries={} events={:.0f} setup_seconds={:.3f} "
        "loop_seconds={:.3f} judge_seconds={:.3f} teardown_seconds={:.3f} total_seconds={:.3f} peak_rss_kb={} "
        "trace_events={} trace_hash={:016x} sim_seconds_full={:.9f} linearizable={}\n",
        seed, r.messages, skipped, events, seconds(t.start, t.built), loop, seconds(t.ran, t.judged),
        seconds(t.judged, t.end), seconds(t.start, t.end), peak_rss_kb(), r.trace_events, r.trace_hash,
        static_cast<double>(r.sim_time) / 1e9,
        r.linearizable.has_value() ? (*r.linearizable ? "true" : "false") : "unchecked");
    const std::uint64_t copies = coverage(r, "redelivery.copy");
    if (effects != r.messages || r.duplicate_effects != 0 || r.lost_messages != 0 || skipped != copies ||
        (r.linearizable.has_value() && !*r.linearizable)) {
      std::cerr << fmt::format(
          "# check FAILED seed={}: effects={} (want messages={}), duplicate_effects={}, lost_messages={}, "
          "skipped={} (want redelivery copies={}), linearizable={}\n",
          seed, effects, r.messages, r.duplicate_effects, r.lost_messages, skipped, copies,
          r.linearizable.has_value() ? (*r.linearizable ? "true" : "false") : "unchecked");
      if (exit_code == kExitOk) exit_code = kExitExpectation;
    }
  }
  if (o.seeds > 1) {
    const double wall = seconds(all_start, all_end);
    std::cerr << fmt::format("# total seeds={} jobs={} wall_seconds={:.3f} events={:.0f} events_per_sec={:.0f} "
                             "peak_rss_kb={}\n",
                             o.seeds, o.jobs, wall, total_events, wall > 0 ? total_events / wall : 0.0, peak_rss_kb());
  }
  return exit_code;
}

}  // namespace

ExtraCommand register_bench(CLI::App& app) {
  auto options = std::make_shared<BenchOptions>();
  auto* command = app.add_subcommand(
      "bench", "Run a scenario for speed and print events/s as the peer simulators do (scripts/bench-peers)");
  command->add_option("FILE", options->file, "Scenario file (TOML), e.g. scenarios/bench/dedupe-basic.toml")
      ->required();
  command->add_option("--seed", options->seed, "First seed (default 1)")->check(runner::seed_check());
  command->add_option("--seeds", options->seeds, "Seeds to run: N .. N+K-1 (default 1)")->check(CLI::Range(1, 100000));
  command->add_option("-j,--jobs", options->jobs, "Threads (default 1)")->check(CLI::Range(1, 1024));
  command->add_option("--set", options->sets, "Override a scenario key: KEY=VALUE (repeatable)")
      ->expected(1)
      ->take_all();
  command->add_flag("--check-linearizability", options->check_linearizability,
                    "Also check the store history (off by default; its time goes to judge_seconds)");
  return ExtraCommand{command, [options] { return run_bench(*options); }};
}

}  // namespace runner
