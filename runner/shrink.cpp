#include "runner/shrink.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <regex>
#include <unistd.h>

#include "runner/command_line.hpp"
#include "reports/output_file.hpp"
#include "reports/summary.hpp"
#include "runner/execute.hpp"
#include "scenario/loader.hpp"

namespace fs = std::filesystem;

namespace runner {

namespace {

const lethe::ExpectationResult* find_expectation(const lethe::RunResult& result, const std::string& key) {
  for (const auto& x : result.expectations) {
    if (x.key == key) return &x;
  }
  return nullptr;
}

class Shrinker {
 public:
  Shrinker(const lethe::ScenarioConfig& config, const ShrinkOptions& options) : options_(options) {
    result_.shrunk = config;
  }

  ShrinkResult run() {
    const auto first = run_seed(result_.shrunk, options_.seed);
    result_.runs = 1;
    if (!first.error.empty()) {
      result_.original_broke = true;
      result_.broke_exit = first.bad_input ? kExitBadInput : first.out_of_memory() ? kExitResources : kExitInternal;
      result_.why = first.error;
      return std::move(result_);
    }
    if (options_.expectation_key) {
      key_ = *options_.expectation_key;
      const auto* x = find_expectation(first.result, key_);
      if (x == nullptr) {
        result_.why = fmt::format("the scenario has no [expect] line for \"{}\"", key_);
        return std::move(result_);
      }
      if (x->ok) {
        result_.why = fmt::format("seed {} does not fail \"{}\": {} holds", options_.seed, key_,
                                  reports::expectation_text(*x));
        return std::move(result_);
      }
      result_.original = *x;
    } else {
      const auto failing = std::find_if(first.result.expectations.begin(), first.result.expectations.end(),
                                        [](const auto& x) { return !x.ok; });
      if (failing == first.result.expectations.end()) {
        result_.why = first.result.expectations.empty()
                          ? "the scenario has no [expect] lines: nothing can fail"
                          : fmt::format("seed {} does not fail: every [expect] line held", options_.seed);
        return std::move(result_);
      }
      key_ = failing->key;
      result_.original = *failing;
    }
    result_.original_fails = true;
    result_.final = result_.original;

    for (int round = 0; round < 6; ++round) {
      const std::size_t before = result_.steps.size();
      shrink_round();
      if (result_.steps.size() == before || budget_spent()) break;
    }
    return std::move(result_);
  }

 private:
  bool budget_spent() {
    if (result_.runs >= options_.max_runs) result_.budget_exhausted = true;
    return result_.budget_exhausted;
  }

  // Runs the candidate; keeps it if the target expectation still fails.
  bool try_candidate(const lethe::ScenarioConfig& candidate, const std::string& step) {
    if (budget_spent()) return false;
    ++result_.runs;
    const auto run = run_seed(candidate, options_.seed);
    if (!run.error.empty()) return false;
    const auto* x = find_expectation(run.result, key_);
    if (x == nullptr || x->ok) return false;
    result_.shrunk = candidate;
    result_.final = *x;
    result_.steps.push_back(step);
    if (options_.progress) options_.progress(step);
    return true;
  }

  // Reduces an integer field towards `lowest`: halve while it fails, then smaller cuts.
  template <class T, class Get>
  void reduce_count(const std::string& name, T lowest, Get field) {
    while (!budget_spent()) {
      const T value = *field(result_.shrunk);
      if (value <= lowest) return;
      bool accepted = false;
      for (T cut = static_cast<T>((value - lowest + 1) / 2); cut >= 1; cut = static_cast<T>(cut / 2)) {
        lethe::ScenarioConfig candidate = result_.shrunk;
        const T next = static_cast<T>(value - cut);
        *field(candidate) = next;
        if (try_candidate(candidate, fmt::format("{} {} -> {}", name, value, next))) {
          accepted = true;
          break;
        }
        if (budget_spent()) return;
      }
      if (!accepted) return;
    }
  }

  // The candidate with one probability set to `value`.
  template <class Get>
  bool try_candidate_with(const std::string& name, double value, Get get) {
    lethe::ScenarioConfig candidate = result_.shrunk;
    const double before = get(candidate);
    get(candidate) = value;
    return try_candidate(candidate, value == 0.0 ? name + " = 0" : fmt::format("{} {} -> {}", name, before, value));
  }

  template <class Mutate>
  void try_off(const std::string& step, Mutate mutate) {
    lethe::ScenarioConfig candidate = result_.shrunk;
    if (!mutate(candidate)) return;  // already off
    try_candidate(candidate, step);
  }

  void shrink_round() {
    // The plainest schedule first: a failure that FIFO still shows needs no interleaving to explain it.
    try_off("run.schedule " + lethe::to_string(result_.shrunk.run.schedule) + " -> fifo", [](lethe::ScenarioConfig& c) {
      if (c.run.schedule.kind == lethe::ScheduleKind::Fifo) return false;
      c.run.schedule = lethe::Schedule{};
      return true;
    });
    reduce_count<std::int64_t>("workload.messages", 1,
                               [](lethe::ScenarioConfig& c) { return &c.workload.messages; });
    reduce_count<int>("topology.consumers", 1, [](lethe::ScenarioConfig& c) { return &c.topology.consumers; });
    if (result_.shrunk.topology.source == "clients") {
      reduce_count<int>("topology.clients", 1, [](lethe::ScenarioConfig& c) { return &c.topology.clients; });
    }
    if (result_.shrunk.topology.source == "kafka") {
      reduce_count<int>("topology.partitions", 1, [](lethe::ScenarioConfig& c) { return &c.topology.partitions; });
    }
    for (std::size_t i = result_.shrunk.topology.processors.size(); i-- > 0 && result_.shrunk.topology.processors.size() > 1;) {
      if (i >= result_.shrunk.topology.processors.size()) continue;
      const std::string name = result_.shrunk.topology.processors[i];
      try_off("topology.processors: dropped \"" + name + "\"", [i](lethe::ScenarioConfig& c) {
        c.topology.processors.erase(c.topology.processors.begin() + static_cast<std::ptrdiff_t>(i));
        return true;
      });
    }
    // Fault kinds, one at a time.
    const auto optional_off = [this](const char* name, auto member) {
      try_off(std::string(name) + " off", [member](lethe::ScenarioConfig& c) {
        auto& field = c.faults.*member;
        if (!field) return false;
        field.reset();
        return true;
      });
    };
    optional_off("faults.crash_every", &lethe::FaultsSection::crash_every);
    optional_off("faults.pause_every", &lethe::FaultsSection::pause_every);
    optional_off("faults.clock_skew", &lethe::FaultsSection::clock_skew);
    optional_off("faults.rebalance_every", &lethe::FaultsSection::rebalance_every);
    try_off("faults.swarm off", [](lethe::ScenarioConfig& c) {
      if (!c.faults.swarm) return false;
      c.faults.swarm = false;
      return true;
    });
    // A probability: 0 if the failure survives it, else halved while it does (down to a tenth).
    const auto zero = [this](const std::string& name, auto get) {
      const double original = get(result_.shrunk);
      if (original == 0.0) return;
      if (try_candidate_with(name, 0.0, get)) return;
      while (!budget_spent() && get(result_.shrunk) / 2 >= original / 10) {
        if (!try_candidate_with(name, get(result_.shrunk) / 2, get)) return;
      }
    };
    zero("faults.crash_points.after_start_before_effect",
         [](lethe::ScenarioConfig& c) -> double& { return c.faults.crash_points.after_start_before_effect; });
    zero("faults.crash_points.after_effect_before_complete",
         [](lethe::ScenarioConfig& c) -> double& { return c.faults.crash_points.after_effect_before_complete; });
    zero("faults.crash_points.after_complete_before_ack",
         [](lethe::ScenarioConfig& c) -> double& { return c.faults.crash_points.after_complete_before_ack; });
    zero("network.loss", [](lethe::ScenarioConfig& c) -> double& { return c.network.loss; });
    zero("network.ack_loss", [](lethe::ScenarioConfig& c) -> double& { return c.network.ack_loss; });
    zero("network.duplicate", [](lethe::ScenarioConfig& c) -> double& { return c.network.duplicate; });
    zero("producer.crash_between_commit_and_publish",
         [](lethe::ScenarioConfig& c) -> double& { return c.producer.crash_between_commit_and_publish; });
    zero("workload.redelivery.fraction", [](lethe::ScenarioConfig& c) -> double& { return c.workload.redelivery.fraction; });
    for (std::size_t i = result_.shrunk.network.partitions.size(); i-- > 0;) {
      if (i >= result_.shrunk.network.partitions.size()) continue;
      try_off(fmt::format("network.partition[{}] removed", i), [i](lethe::ScenarioConfig& c) {
        c.network.partitions.erase(c.network.partitions.begin() + static_cast<std::ptrdiff_t>(i));
        return true;
      });
    }
    for (std::size_t i = result_.shrunk.sink.outages.size(); i-- > 0;) {
      if (i >= result_.shrunk.sink.outages.size()) continue;
      try_off(fmt::format("sink.outage[{}] removed", i), [i](lethe::ScenarioConfig& c) {
        c.sink.outages.erase(c.sink.outages.begin() + static_cast<std::ptrdiff_t>(i));
        return true;
      });
    }
    // A shorter run.
    while (!budget_spent() && result_.shrunk.run.duration / 2 >= sim::kSecond) {
      lethe::ScenarioConfig candidate = result_.shrunk;
      // Half, in whole seconds (readable values: 1h -> 30m -> 15m -> 450s -> 225s -> 112s -> ...).
      candidate.run.duration = candidate.run.duration / 2 / sim::kSecond * sim::kSecond;
      if (!try_candidate(candidate, fmt::format("run.duration {} -> {}", sim::format_duration(result_.shrunk.run.duration),
                                                sim::format_duration(candidate.run.duration)))) {
        break;
      }
    }
    if (result_.shrunk.workload.redelivery.fraction > 0.0) {
      reduce_count<int>("workload.redelivery.copies", 1,
                        [](lethe::ScenarioConfig& c) { return &c.workload.redelivery.copies; });
    }
  }

  const ShrinkOptions& options_;
  ShrinkResult result_;
  std::string key_;
};

// Relative `empirical(file=...)` paths resolve against the scenario's folder; the shrunk file may live
// elsewhere, so they are made absolute.
std::string absolute_empirical_paths(const std::string& toml, const fs::path& original_dir) {
  static const std::regex kEmpirical(R"re(empirical\(file=([^,)]+))re");
  std::string out;
  auto begin = std::sregex_iterator(toml.begin(), toml.end(), kEmpirical);
  std::size_t last = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    const auto& m = *it;
    const fs::path file = m[1].str();
    out += toml.substr(last, static_cast<std::size_t>(m.position(0)) - last);
    out += "empirical(file=" + (file.is_absolute() ? file : (original_dir / file).lexically_normal()).string();
    last = static_cast<std::size_t>(m.position(0) + m.length(0));
  }
  out += toml.substr(last);
  return out;
}

}  // namespace

ShrinkResult shrink_scenario(const lethe::ScenarioConfig& config, const ShrinkOptions& options) {
  return Shrinker(config, options).run();
}

std::string shrunk_scenario_text(const ShrinkResult& result, const std::string& original_file, std::uint64_t seed,
                                 const std::vector<std::string>& sets) {
  std::string header;
  header += fmt::format("# Shrunk by lethe shrink from {} at seed {}.\n", original_file, seed);
  std::string set_words;
  for (const auto& s : sets) set_words += " --set " + shell_quote(s);
  if (!sets.empty()) header += fmt::format("# Original overrides:{}\n", set_words);
  header += fmt::format("# Failing expectation: {}; originally {}.\n", reports::expectation_text(result.final),
                        reports::expectation_text(result.original));
  header += fmt::format("# Reproduce: {} run THIS_FILE --seed {}\n", program_name(), seed);
  if (result.steps.empty()) {
    header += "# Nothing could be removed: every reduction tried made the expectation hold.\n";
  } else {
    header += "# Reductions (each kept because the expectation still failed):\n";
    for (const auto& step : result.steps) header += "#   " + step + "\n";
  }
  if (result.budget_exhausted) header += fmt::format("# The run budget ({} runs) ran out: it may shrink further.\n", result.runs);
  return header + "\n" + scenario_file_text(result.shrunk, original_file);
}

std::string scenario_file_text(const lethe::ScenarioConfig& config, const std::string& original_file) {
  std::error_code ec;
  const fs::path dir = fs::absolute(fs::path(original_file), ec).parent_path();
  return absolute_empirical_paths(scenario::render_scenario_toml(config), dir);
}

namespace {

struct ShrinkCommandOptions {
  std::string file;
  std::uint64_t seed = 1;
  std::vector<std::string> sets;
  std::string expect;
  std::size_t max_runs = 300;
  std::string out;
};

int run_shrink_command(const ShrinkCommandOptions& o) {
  auto loaded = scenario::load_scenario(o.file, o.sets);
  if (auto* errors = std::get_if<std::vector<scenario::LoadError>>(&loaded)) {
    for (const auto& e : *errors) std::cerr << e.message << "\n";
    return kExitBadInput;
  }
  const auto& config = std::get<lethe::ScenarioConfig>(loaded);
  ShrinkOptions options;
  options.seed = o.seed;
  if (!o.expect.empty()) options.expectation_key = o.expect;
  options.max_runs = o.max_runs;
  const bool terminal = isatty(fileno(stderr)) != 0;
  options.progress = [terminal](const std::string& step) {
    if (terminal) std::cerr << "  kept: " << step << "\n";
  };
  const ShrinkResult result = shrink_scenario(config, options);
  if (result.original_broke) {
    std::cerr << fmt::format("lethe shrink: the original run of seed {} did not finish: {}{}\n", o.seed,
                             result.broke_exit == kExitInternal ? "internal error: " : "", result.why);
    return result.broke_exit;
  }
  if (!result.original_fails) {
    std::cerr << fmt::format("lethe shrink: {}: {}\n", o.file, result.why);
    return kExitBadInput;
  }
  std::string out = o.out;
  if (out.empty()) out = fmt::format("{}.seed{}.shrunk.toml", fs::path(o.file).stem().string(), o.seed);
  if (const auto error = reports::write_file(out, shrunk_scenario_text(result, o.file, o.seed, o.sets));
      !error.empty()) {
    std::cerr << "lethe shrink: " << error << "\n";
    return kExitBadInput;
  }
  std::cout << fmt::format("seed {} fails {}\n", o.seed, reports::expectation_text(result.original));
  std::cout << fmt::format("{} runs, {} reductions kept:\n", result.runs, result.steps.size());
  for (const auto& step : result.steps) std::cout << "  " << step << "\n";
  if (result.budget_exhausted) std::cout << "  (the run budget ran out: raise --max-runs to shrink further)\n";
  std::cout << fmt::format("shrunk scenario fails {}\nwrote {}\nreproduce: lethe run {} --seed {}\n",
                           reports::expectation_text(result.final), out, shell_quote(out), o.seed);
  return kExitOk;
}

}  // namespace

ExtraCommand register_shrink(CLI::App& app) {
  auto o = std::make_shared<ShrinkCommandOptions>();
  auto* command = app.add_subcommand("shrink", "Find a smaller scenario that fails the same expectation at the same seed");
  command->add_option("FILE", o->file, "Scenario file (TOML)")->required();
  command->add_option("--seed", o->seed, "The failing seed")->required()->check(runner::seed_check());
  command->add_option("--set", o->sets, "Override a scenario key: KEY=VALUE (repeatable)")->expected(1)->take_all();
  command->add_option("--expect", o->expect, "The expectation key to keep failing (default: the first failing one)");
  command->add_option("--max-runs", o->max_runs, "Budget of simulation runs (default 300)")->check(CLI::Range(1, 1000000));
  command->add_option("--out", o->out, "Where to write the shrunk scenario (default FILE-STEM.seedN.shrunk.toml here)");
  return ExtraCommand{command, [o] { return run_shrink_command(*o); }};
}

}  // namespace runner
