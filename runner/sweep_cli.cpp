// The `lethe sweep` and `lethe merge` subcommands: options to a SweepSpec / MergeSpec (runner/sweep.hpp).
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <array>
#include <csignal>
#include <cstring>
#include <iostream>
#include <memory>
#include <unistd.h>

#include "runner/command.hpp"
#include "runner/command_line.hpp"
#include "runner/report.hpp"  // report_after_sweep: DIR/report.html
#include "reports/output_file.hpp"
#include "runner/sweep.hpp"
#include "runner/sweep_targets.hpp"

namespace runner {

namespace {

struct SweepCommandOptions {
  std::string file;
  std::vector<std::string> vary;
  std::int64_t seeds = 0;
  unsigned jobs = 0;
  std::string out;
  std::string shard;
  bool resume = false;
  std::vector<std::string> sets;
  std::vector<std::string> targets;
};

// While a sweep runs, SIGINT (Ctrl-C) first prints the command that resumes it: the finished seeds are in the
// folder and --resume runs the others. Then the signal goes on to the handler it replaced (which ends the external
// nodes' processes) or to its default, so the exit status is still "killed by SIGINT".
class ResumeOnInterrupt {
 public:
  explicit ResumeOnInterrupt(const SweepSpec& spec) {
    const std::string command = spec.command_line.find(" --resume") == std::string::npos
                                    ? spec.command_line + " --resume"
                                    : spec.command_line;
    const std::string text = fmt::format("\nlethe sweep: interrupted; the results written so far are kept in {}. Resume "
                                         "with:\n  {}\n", spec.out_dir.string(), command);
    length_ = std::min(text.size(), note_.size());
    std::memcpy(note_.data(), text.data(), length_);
    struct sigaction action {};
    action.sa_handler = on_interrupt;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGINT, &action, &previous_);
  }
  ~ResumeOnInterrupt() { ::sigaction(SIGINT, &previous_, nullptr); }
  ResumeOnInterrupt(const ResumeOnInterrupt&) = delete;
  ResumeOnInterrupt& operator=(const ResumeOnInterrupt&) = delete;

 private:
  // Async-signal-safe: write(2), sigaction(2) and raise(3) only.
  static void on_interrupt(int signal_number) {
    [[maybe_unused]] const auto written = ::write(STDERR_FILENO, note_.data(), length_);
    ::sigaction(signal_number, &previous_, nullptr);
    std::raise(signal_number);
  }

  static inline std::array<char, 8192> note_{};
  static inline std::size_t length_ = 0;
  static inline struct sigaction previous_ {};
};

// --target: the verdict table after the sweep's own, DIR/targets.json, and exit 1 unless every cell passed.
int apply_targets(const std::vector<SweepTarget>& targets, const SweepSpec& spec, const SweepOutcome& outcome) {
  if (targets.empty() || (outcome.exit_code != kExitOk && outcome.exit_code != kExitExpectation)) {
    // The report reads targets.json: one left by an earlier sweep with targets would judge these cells.
    std::error_code ec;
    std::filesystem::remove(spec.out_dir / "targets.json", ec);
    return outcome.exit_code;
  }
  bool all_pass = true;
  std::cout << targets_table(targets, outcome.cells.cells, all_pass);
  const auto error = reports::write_file_atomically(spec.out_dir / "targets.json",
                                                    targets_json(targets, outcome.cells.cells).dump(2) + "\n");
  if (!error.empty()) {
    std::cerr << "lethe sweep: " << error << "\n";
    return kExitBadInput;
  }
  return all_pass ? outcome.exit_code : kExitExpectation;
}

struct MergeCommandOptions {
  std::vector<std::string> inputs;
  std::string out;
};

}  // namespace

ExtraCommand register_sweep(CLI::App& app) {
  auto options = std::make_shared<SweepCommandOptions>();
  auto* command = app.add_subcommand("sweep", "Run a scenario over a grid of varied keys, many seeds per cell, "
                                              "with confidence intervals (resumable, shardable)");
  command->add_option("FILE", options->file, "Scenario file (TOML)")->required();
  command->add_option("--vary", options->vary,
                      "KEY=V1,V2,...: one axis of the grid (repeatable: a grid, row-major in the order given)")
      ->allow_extra_args(false);
  command->add_option("--seeds", options->seeds, "Seeds 1..N per cell (default: the scenario's run.seeds)")
      ->check(CLI::Range(1, 1000000));
  command->add_option("-j,--jobs", options->jobs, "Threads (default: all cores)")->check(CLI::Range(0, 1024));
  command->add_option("--out", options->out, "Output folder (results.jsonl, cells.json, cells.csv, sweep.json)")
      ->required();
  command->add_option("--shard", options->shard, "K/N: run only the (cell, seed) pairs whose number % N == K-1");
  command->add_flag("--resume", options->resume, "Continue the sweep already in --out, skipping finished seeds");
  command->add_option("--set", options->sets, "Override a key in every cell: KEY=VALUE (repeatable)")
      ->allow_extra_args(false);
  command->add_option("--target", options->targets,
                      "FIELD<=X or FIELD>=X on a field of cells.json: pass / fail / undecided per cell by its 95% "
                      "interval, exit 1 unless every cell passes (repeatable)")
      ->allow_extra_args(false);
  return ExtraCommand{command, [options] {
                        SweepSpec spec;
                        spec.scenario_file = options->file;
                        for (const auto& text : options->vary) {
                          std::string error;
                          auto axis = parse_vary(text, error);
                          if (!axis) {
                            std::cerr << error << "\n";
                            return kExitBadInput;
                          }
                          spec.vary.push_back(std::move(*axis));
                        }
                        if (!options->shard.empty()) {
                          std::string error;
                          auto shard = parse_shard(options->shard, error);
                          if (!shard) {
                            std::cerr << error << "\n";
                            return kExitBadInput;
                          }
                          spec.shard = *shard;
                        }
                        std::vector<SweepTarget> targets;
                        for (const auto& text : options->targets) {
                          std::string error;
                          auto target = parse_sweep_target(text, error);
                          if (!target) {
                            std::cerr << error << "\n";
                            return kExitBadInput;
                          }
                          targets.push_back(std::move(*target));
                        }
                        spec.sets = options->sets;
                        spec.seeds = options->seeds;
                        spec.jobs = options->jobs;
                        spec.out_dir = options->out;
                        spec.resume = options->resume;
                        spec.command_line = this_command_line();
                        spec.progress = stderr_progress_mode();
                        spec.table_out = &std::cout;
                        const SweepOutcome outcome = [&spec] {
                          const ResumeOnInterrupt resume_hint(spec);
                          return run_sweep(spec);
                        }();
                        const int code = apply_targets(targets, spec, outcome);
                        return report_after_sweep(spec.out_dir, code);  // + DIR/report.html (runner/report.hpp)
                      }};
}

ExtraCommand register_merge(CLI::App& app) {
  auto options = std::make_shared<MergeCommandOptions>();
  auto* command = app.add_subcommand("merge", "Combine sweep folders (shards) into the result of one sweep");
  command->add_option("DIRS", options->inputs, "Sweep folders written by lethe sweep (or merge)")->required();
  command->add_option("--out", options->out, "Output folder")->required();
  return ExtraCommand{command, [options] {
                        MergeSpec spec;
                        for (const auto& input : options->inputs) spec.inputs.emplace_back(input);
                        spec.out_dir = options->out;
                        spec.command_line = this_command_line();
                        spec.table_out = &std::cout;
                        return report_after_sweep(spec.out_dir, merge_sweeps(spec).exit_code);  // + DIR/report.html (runner/report.hpp)
                      }};
}

}  // namespace runner
