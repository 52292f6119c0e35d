#include "runner/explore.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <optional>
#include <set>

#include "reports/output_file.hpp"
#include "reports/summary.hpp"
#include "runner/command_line.hpp"
#include "runner/execute.hpp"
#include "runner/output_path.hpp"
#include "runner/progress.hpp"
#include "runner/shrink.hpp"
#include "scenario/explore.hpp"
#include "scenario/text.hpp"
#include "sim/time.hpp"

namespace fs = std::filesystem;

namespace runner {

std::vector<std::string> reached_coverage(const lethe::RunResult& result, std::vector<std::string>& known) {
  std::vector<std::string> reached;
  for (const auto& [key, count] : result.coverage) {
    known.push_back("coverage." + key);
    if (count > 0) reached.push_back("coverage." + key);
  }
  for (std::size_t c = 0; c < lethe::kCauseCount; ++c) {
    const std::string key = "duplicates." + std::string(lethe::kCauseNames[c]);
    known.push_back(key);
    if (result.duplicates[c] > 0) reached.push_back(key);
  }
  std::sort(reached.begin(), reached.end());
  return reached;
}

namespace {

struct ExploreOptions {
  std::string file;
  std::uint64_t seeds = 0;  // 0: --for decides (or 1000 without it)
  std::string for_text;
  unsigned jobs = 0;
  std::string out_dir;
  std::uint64_t campaign = 1;
  bool no_steer = false;
  std::vector<std::string> sets;
  std::size_t max_runs = 300;
};

// One seed of the campaign: its draw, its configuration and, once run, its result.
struct SeedJob {
  std::uint64_t seed = 0;
  scenario::Draw draw;
  lethe::ScenarioConfig config;
  SeedRun run;
  bool ran = false;
};

struct BinStats {
  std::uint64_t seeds = 0;
  std::uint64_t rare = 0;
};

// The campaign's counts: coverage reached, and what each bin of [explore] produced.
class Coverage {
 public:
  explicit Coverage(const lethe::ExploreSection& explore) {
    for (const auto& entry : explore.entries) bins_.emplace_back(scenario::bin_count(entry));
  }

  // A completed seed, in seed order.
  void add(const SeedJob& job) {
    std::vector<std::string> known;
    const std::vector<std::string> reached = reached_coverage(job.run.result, known);
    known_.insert(known.begin(), known.end());
    const std::uint64_t threshold = std::max<std::uint64_t>(1, (seeds_ + 19) / 20);
    bool rare = false;
    for (const std::string& key : reached) {
      if (seeds_reaching_[key] < threshold) rare = true;
    }
    for (const std::string& key : reached) ++seeds_reaching_[key];
    for (const auto& [key, count] : job.run.result.coverage) totals_[("coverage." + key)] += count;
    for (std::size_t c = 0; c < lethe::kCauseCount; ++c) {
      totals_["duplicates." + std::string(lethe::kCauseNames[c])] += job.run.result.duplicates[c];
    }
    for (std::size_t i = 0; i < job.draw.bins.size(); ++i) {
      BinStats& stats = bins_[i][job.draw.bins[i]];
      ++stats.seeds;
      if (rare) ++stats.rare;
    }
    ++seeds_;
  }

  scenario::ExploreWeights weights() const {
    scenario::ExploreWeights weights;
    for (const auto& entry : bins_) {
      std::vector<std::uint32_t> row;
      for (const BinStats& stats : entry) {
        row.push_back(static_cast<std::uint32_t>(1 + 15 * (stats.rare + 1) / (stats.seeds + 2)));
      }
      weights.push_back(std::move(row));
    }
    return weights;
  }

  std::size_t reached() const { return seeds_reaching_.size(); }
  std::size_t known() const { return known_.size(); }

  // What was reached (in how many seeds, how often in all) and what never was.
  std::string table(const lethe::ExploreSection& explore) const {
    std::string out = fmt::format("coverage over {} seeds (key: seeds that reached it, times in all):\n", seeds_);
    std::vector<std::string> never;
    for (const std::string& key : known_) {
      const auto reached = seeds_reaching_.find(key);
      if (reached == seeds_reaching_.end()) {
        never.push_back(key);
        continue;
      }
      out += fmt::format("  {:<58} {:>7} {:>10}\n", key, reached->second, totals_.at(key));
    }
    out += never.empty() ? "  never reached: nothing\n"
                         : "  never reached: " + scenario::text::join(never, ", ") + "\n";
    for (std::size_t i = 0; i < explore.entries.size(); ++i) {
      const auto& entry = explore.entries[i];
      std::vector<std::string> parts;
      for (std::size_t b = 0; b < bins_[i].size(); ++b) {
        parts.push_back(fmt::format("{} {}/{}", scenario::bin_name(entry, b), bins_[i][b].rare, bins_[i][b].seeds));
      }
      out += fmt::format("  {} (bin rare/seeds): {}\n", entry.key, scenario::text::join(parts, ", "));
    }
    return out;
  }

 private:
  std::uint64_t seeds_ = 0;
  std::map<std::string, std::uint64_t> seeds_reaching_;
  std::map<std::string, std::uint64_t> totals_;
  std::set<std::string> known_;
  std::vector<std::vector<BinStats>> bins_;
};

bool failed(const SeedJob& job) { return job.ran && (!job.run.error.empty() || !job.run.result.ok); }

std::string failed_expectations(const lethe::RunResult& result) {
  std::vector<std::string> parts;
  for (const auto& x : result.expectations) {
    if (!x.ok) parts.push_back(reports::expectation_text(x));
  }
  return scenario::text::join(parts, "; ");
}

class Campaign {
 public:
  Campaign(const ExploreOptions& options, const lethe::ScenarioConfig& base)
      : options_(options), base_(base), coverage_(base.explore) {}

  // 0: budget ended; 1: a failure (written); 2: bad input; 3: an internal error; 5: resources exhausted.
  int run(std::optional<std::chrono::nanoseconds> wall_budget, std::uint64_t seed_budget) {
    std::string progress_error;
    const auto interval = progress_interval(progress_error);
    if (!interval) {
      std::cerr << "lethe explore: " << progress_error << "\n";
      return kExitBadInput;
    }
    const auto started = std::chrono::steady_clock::now();
    Progress progress("lethe explore", wall_budget ? Progress::kUnbounded : seed_budget, std::cerr,
                      stderr_progress_mode(), *interval);
    for (std::uint64_t first = 1; first <= seed_budget; first += kExploreBatch) {
      if (wall_budget && std::chrono::steady_clock::now() - started >= *wall_budget) break;
      std::vector<SeedJob> batch;
      if (!prepare(first, std::min<std::uint64_t>(seed_budget, first + kExploreBatch - 1), batch)) {
        return kExitBadInput;
      }
      run_batch(batch, progress);
      for (SeedJob& job : batch) {
        if (failed(job)) {
          progress.finish();
          return report_failure(job);
        }
        coverage_.add(job);
        ++seeds_run_;
      }
      progress.set_note(fmt::format("coverage {}/{} keys", coverage_.reached(), coverage_.known()));
    }
    progress.finish();
    std::cout << fmt::format("no failure in {} seeds of campaign {} ({})\n", seeds_run_, options_.campaign,
                             options_.no_steer ? "not steered" : "steered");
    std::cout << coverage_.table(base_.explore);
    return kExitOk;
  }

 private:
  std::uint64_t seed_of(std::uint64_t n) const { return (options_.campaign - 1) * kCampaignSeeds + n; }

  bool prepare(std::uint64_t first, std::uint64_t last, std::vector<SeedJob>& batch) {
    const scenario::ExploreWeights weights = options_.no_steer ? scenario::ExploreWeights{} : coverage_.weights();
    for (std::uint64_t n = first; n <= last; ++n) {
      SeedJob job;
      job.seed = seed_of(n);
      job.draw = scenario::draw_configuration(base_.explore, job.seed, weights);
      auto loaded = scenario::load_drawn(options_.file, options_.sets, job.draw);
      if (auto* errors = std::get_if<std::vector<scenario::LoadError>>(&loaded)) {
        std::cerr << fmt::format("lethe explore: seed {} drew a configuration that does not load:\n", job.seed);
        for (const auto& e : *errors) std::cerr << e.message << "\n";
        return false;
      }
      job.config = std::get<lethe::ScenarioConfig>(std::move(loaded));
      batch.push_back(std::move(job));
    }
    return true;
  }

  // Runs the batch; seeds after a failing one are skipped (the first failure is the lowest failing seed).
  void run_batch(std::vector<SeedJob>& batch, Progress& progress) {
    std::atomic<std::size_t> first_failure{batch.size()};
    parallel_for(batch.size(), options_.jobs == 0 ? default_jobs() : options_.jobs, [&](std::size_t i) {
      if (i > first_failure.load()) return;
      SeedJob& job = batch[i];
      job.run = run_seed(job.config, job.seed);
      job.run.result.drawn = scenario::describe(job.draw);
      job.ran = true;
      const bool job_failed = failed(job);
      progress.seed_done(job_failed);
      if (!job_failed) return;
      std::size_t known = first_failure.load();
      while (i < known && !first_failure.compare_exchange_weak(known, i)) {
      }
    });
  }

  int report_failure(const SeedJob& job);

  const ExploreOptions& options_;
  const lethe::ScenarioConfig& base_;
  Coverage coverage_;
  std::uint64_t seeds_run_ = 0;
};

std::string drawn_header(const ExploreOptions& o, const SeedJob& job) {
  std::string header = fmt::format("# Drawn by lethe explore from {} at seed {} (campaign {}, {}).\n", o.file,
                                   job.seed, o.campaign, o.no_steer ? "not steered" : "steered");
  for (const std::string& word : scenario::describe(job.draw)) header += "#   " + word + "\n";
  header += fmt::format("# Reproduce: {} run THIS_FILE --seed {}\n", program_name(), job.seed);
  return header;
}

int Campaign::report_failure(const SeedJob& job) {
  const fs::path dir = options_.out_dir;
  const std::string drawn_path = (dir / "drawn.toml").string();
  const std::string shrunk_path = (dir / "shrunk.toml").string();
  std::cout << fmt::format("seed {} (number {} of campaign {}) fails: {}\n", job.seed,
                           job.seed - seed_of(0), options_.campaign,
                           job.run.error.empty() ? failed_expectations(job.run.result) : job.run.error);
  std::cout << "  drawn: " << scenario::text::join(scenario::describe(job.draw), ", ") << "\n";
  if (const auto error =
          reports::write_file(drawn_path, drawn_header(options_, job) + "\n" + scenario_file_text(job.config, options_.file));
      !error.empty()) {
    std::cerr << "lethe explore: " << error << "\n";
    return kExitBadInput;
  }
  if (job.run.out_of_memory()) {
    std::cout << fmt::format("resources exhausted on this seed: {}\nwrote {}\n", job.run.error, drawn_path);
    return kExitResources;
  }
  if (!job.run.error.empty()) {
    std::cout << fmt::format("lethe broke on this seed (internal error)\nwrote {}\nreplay: lethe run {} --seed {}\n",
                             drawn_path, shell_quote(drawn_path), job.seed);
    return kExitInternal;
  }
  ShrinkOptions shrink;
  shrink.seed = job.seed;
  shrink.max_runs = options_.max_runs;
  const ShrinkResult shrunk = shrink_scenario(job.config, shrink);
  if (const auto error = reports::write_file(shrunk_path, shrunk_scenario_text(shrunk, drawn_path, job.seed, {}));
      !error.empty()) {
    std::cerr << "lethe explore: " << error << "\n";
    return kExitBadInput;
  }
  std::cout << fmt::format("shrunk in {} runs, {} reductions kept:\n", shrunk.runs, shrunk.steps.size());
  for (const auto& step : shrunk.steps) std::cout << "  " << step << "\n";
  const SeedRun replay = run_seed(shrunk.shrunk, job.seed);
  std::cout << fmt::format("shrunk scenario fails {}\n", reports::expectation_text(shrunk.final));
  if (!replay.result.explanations.empty()) {
    std::cout << "  why: " << replay.result.explanations.front().because << "\n";
  }
  std::cout << fmt::format("wrote {} and {}\n", drawn_path, shrunk_path);
  std::cout << fmt::format("replay: lethe run {} --seed {}\n", shell_quote(shrunk_path), job.seed);
  std::cout << coverage_.table(base_.explore);
  return kExitExpectation;
}

int run_explore_command(const ExploreOptions& o) {
  std::optional<std::chrono::nanoseconds> wall_budget;
  if (!o.for_text.empty()) {
    std::string problem;
    const auto parsed = sim::parse_duration(o.for_text, problem);
    if (!parsed || *parsed <= 0) {
      std::cerr << fmt::format("lethe explore: --for: found \"{}\"{}; allowed: a positive duration such as \"10m\"\n",
                               o.for_text, problem.empty() ? "" : " (" + problem + ")");
      return kExitBadInput;
    }
    wall_budget = std::chrono::nanoseconds(*parsed);
  }
  auto loaded = scenario::load_scenario(o.file, o.sets);
  if (auto* errors = std::get_if<std::vector<scenario::LoadError>>(&loaded)) {
    for (const auto& e : *errors) std::cerr << e.message << "\n";
    return kExitBadInput;
  }
  const auto& base = std::get<lethe::ScenarioConfig>(loaded);
  for (const char* name : {"drawn.toml", "shrunk.toml"}) {
    if (const auto error = prepare_output_path(fs::path(o.out_dir) / name, "--out"); !error.empty()) {
      std::cerr << "lethe explore: " << error << "\n";
      return kExitBadInput;
    }
  }
  const std::uint64_t seed_budget = o.seeds > 0 ? o.seeds : wall_budget ? kCampaignSeeds - 1 : 1000;
  Campaign campaign(o, base);
  return campaign.run(wall_budget, seed_budget);
}

}  // namespace

ExtraCommand register_explore(CLI::App& app) {
  auto o = std::make_shared<ExploreOptions>();
  auto* command = app.add_subcommand(
      "explore", "Run seeds, each drawing its configuration from [explore], until one fails; shrink and save it");
  command->add_option("FILE", o->file, "Scenario file (TOML) with an [explore] table")->required();
  auto* seeds = command->add_option("--seeds", o->seeds, "At most N seeds (default 1000 without --for)")
                    ->check(CLI::Range(std::uint64_t{1}, kCampaignSeeds - 1));
  command->add_option("--for", o->for_text, "Stop starting seeds after this wall-clock time (\"10m\")")
      ->excludes(seeds);
  command->add_option("-j,--jobs", o->jobs, "Threads (default: the CPUs lethe may run on)")->check(CLI::Range(0, 1024));
  command->add_option("--out", o->out_dir, "Folder for drawn.toml and shrunk.toml (default explore-out)");
  command->add_option("--campaign", o->campaign, "Campaign number C: seeds (C-1)*10^9 + 1, + 2, ... (default 1)")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1'000'000'000}));
  command->add_flag("--no-steer", o->no_steer, "Draw every configuration uniformly (no coverage steering)");
  command->add_option("--set", o->sets, "Override a scenario key: KEY=VALUE (repeatable; wins over a draw)");
  command->add_option("--max-runs", o->max_runs, "Shrink's budget of simulation runs (default 300)")
      ->check(CLI::Range(1, 1000000));
  o->out_dir = "explore-out";
  return ExtraCommand{command, [o] { return run_explore_command(*o); }};
}

}  // namespace runner
