// The `lethe sweep` and `lethe merge` subcommands: options to a SweepSpec / MergeSpec (runner/sweep.hpp).
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "runner/command.hpp"
#include "runner/command_line.hpp"
#include "runner/report.hpp"  // report_after_sweep: DIR/report.html
#include "runner/sweep.hpp"

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
};

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
                        spec.sets = options->sets;
                        spec.seeds = options->seeds;
                        spec.jobs = options->jobs;
                        spec.out_dir = options->out;
                        spec.resume = options->resume;
                        spec.command_line = this_command_line();
                        spec.progress = stderr_progress_mode();
                        spec.table_out = &std::cout;
                        return report_after_sweep(spec.out_dir, run_sweep(spec).exit_code);  // + DIR/report.html (runner/report.hpp)
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
