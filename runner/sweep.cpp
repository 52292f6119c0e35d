#include "runner/sweep.hpp"

#include <atomic>
#include <fmt/format.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <ostream>

#include "reports/output_file.hpp"
#include "runner/command.hpp"
#include "runner/sweep_aggregate.hpp"

namespace fs = std::filesystem;

namespace runner {

using namespace sweep_detail;

namespace {

// Every seed allocates and frees the same large buffers (the store history, the linearizability check's copy of
// it, timers, traces). By default glibc serves the large ones with mmap and gives freed memory back to the
// kernel, so the next seed faults it all in again: measured on the 1,000-message timing sweep, a third of the
// CPU time was page faults. Keeping freed memory in the process removes them; results do not change (nothing
// depends on addresses). Process-wide, and set once.
void keep_freed_memory() {
#if defined(__GLIBC__)
  static const bool done = [] {
    mallopt(M_MMAP_THRESHOLD, 256 * 1024 * 1024);
    mallopt(M_TRIM_THRESHOLD, 1024 * 1024 * 1024);
    return true;
  }();
  (void)done;
#endif
}

// The spec's folder and shard, checked before anything is written; false after a message when they are bad.
bool spec_ok(const SweepSpec& spec, std::ostream& messages) {
  if (spec.out_dir.empty()) {
    messages << "lethe sweep: --out: found no folder; allowed: a folder for the results\n";
    return false;
  }
  if (spec.shard.index < 1 || spec.shard.index > spec.shard.count) {
    messages << fmt::format("--shard {}/{}: allowed: K/N with 1 <= K <= N\n", spec.shard.index, spec.shard.count);
    return false;
  }
  return true;
}

// Creates the results folder; false after a message when it cannot be.
bool make_folder(const fs::path& dir, std::ostream& messages) {
  std::error_code code;
  fs::create_directories(dir, code);
  if (code || !fs::is_directory(dir, code)) {
    messages << fmt::format("lethe sweep: --out {}: cannot create the folder\n", dir.string());
    return false;
  }
  return true;
}

// The sweep's description (sweep.json). When the folder holds results of this sweep and --resume allows it, reads
// them into `results` and keeps the command lines that started, resumed or merged it. nullopt, after a message,
// when the folder holds results that may not be continued.
std::optional<nlohmann::ordered_json> describe_sweep(const SweepSpec& spec, const Identity& id,
                                                     const std::vector<std::size_t>& first_pair, ResultMap& results,
                                                     std::ostream& messages) {
  const fs::path results_path = spec.out_dir / kResultsName;
  std::error_code code;
  const bool has_results = fs::exists(results_path, code) && fs::file_size(results_path, code) > 0;
  nlohmann::ordered_json description = sweep_json(id, spec.shard, spec.command_line);
  if (!has_results) return description;
  if (!spec.resume) {
    messages << fmt::format("lethe sweep: {} already holds results: use --resume to continue that sweep, or "
                            "another --out\n",
                            results_path.string());
    return std::nullopt;
  }
  Identity existing;
  Shard existing_shard;
  auto previous = read_sweep_json(spec.out_dir, existing, existing_shard, messages);
  if (!previous) return std::nullopt;
  if (auto difference = identity_difference(existing, id)) {
    messages << fmt::format("lethe sweep: --resume: {} holds another sweep ({}); use another --out\n",
                            spec.out_dir.string(), *difference);
    return std::nullopt;
  }
  if (existing_shard != spec.shard) {
    messages << fmt::format("lethe sweep: --resume: {} holds shard {}/{}, not {}/{}\n", spec.out_dir.string(),
                            existing_shard.index, existing_shard.count, spec.shard.index, spec.shard.count);
    return std::nullopt;
  }
  if (!read_results(results_path, Partial::Repair, id, spec.shard, first_pair, results, messages)) return std::nullopt;
  // Keep the command line that started the sweep; note this one.
  description["command_line"] = previous->value("command_line", std::string{});
  if (previous->contains("resumed_by")) description["resumed_by"] = (*previous)["resumed_by"];
  if (previous->contains("merged_from")) description["merged_from"] = (*previous)["merged_from"];
  description["resumed_by"].push_back(spec.command_line);
  return description;
}

struct Pending {
  std::size_t cell;
  std::uint64_t seed;
};

// The (cell, seed) pairs of this shard that `results` does not hold yet; counts the shard's pairs in `outcome`.
std::vector<Pending> pending_pairs(const SweepSpec& spec, const Identity& id,
                                   const std::vector<std::size_t>& first_pair, const ResultMap& results,
                                   SweepOutcome& outcome) {
  std::vector<Pending> pending;
  for (std::size_t c = 0; c < id.cells.size(); ++c) {
    for (std::int64_t s = 1; s <= id.cells[c].seeds; ++s) {
      const std::size_t pair = first_pair[c] + static_cast<std::size_t>(s - 1);
      if (pair % spec.shard.count != spec.shard.index - 1) continue;
      ++outcome.pairs_owned;
      if (results.count({c, static_cast<std::uint64_t>(s)}) == 0) pending.push_back({c, static_cast<std::uint64_t>(s)});
    }
  }
  return pending;
}

// Runs the pending pairs in parallel, appending each seed's line to the results file as it finishes; false after
// a message when the file cannot be written.
bool run_pending(const SweepSpec& spec, const Identity& id, const std::vector<lethe::ScenarioConfig>& configs,
                 const std::vector<Pending>& pending, SweepOutcome& outcome, std::ostream& messages) {
  LineAppender appender(spec.out_dir / kResultsName);
  if (appender.failed()) {
    messages << "lethe sweep: " << appender.error() << "\n";
    return false;
  }
  std::string interval_error;
  const auto interval = progress_interval(interval_error);
  if (!interval) {
    messages << "lethe sweep: " << interval_error << "\n";
    return false;
  }
  std::atomic<std::size_t> done{0};
  const lethe::WorldOptions options;
  Progress progress("lethe sweep", pending.size(), messages, spec.progress, *interval);
  parallel_for(pending.size(), spec.jobs == 0 ? default_jobs() : spec.jobs, [&](std::size_t i) {
    if (appender.failed()) return;
    const auto& job = pending[i];
    progress.seed_started(fmt::format("cell {} seed {}", job.cell, job.seed));
    const SeedRun run = run_seed(configs[job.cell], job.seed, options);
    appender.append(result_line(job.cell, id.cells[job.cell].params, run));
    ++done;
    progress.seed_done(!run.error.empty() || !run.result.ok);
  });
  progress.finish();
  outcome.pairs_run = done.load();
  if (!appender.close()) {
    messages << "lethe sweep: " << appender.error() << "\n";
    return false;
  }
  return true;
}

// Seeds finish, and their lines are appended, in an order -j N makes vary; rewritten in (cell, seed) order, as
// merge writes it, the file is a function of the grid and the seeds alone, resumed or not. The appended file
// stays the crash-safe record until the atomic rename (a kill before it leaves it for --resume).
bool write_in_order(const fs::path& results_path, const ResultMap& results, std::ostream& messages) {
  std::string canonical;
  for (const auto& [key, entry] : results) canonical += entry.text + "\n";
  if (read_text(results_path) == canonical) return true;
  if (const auto error = reports::write_file_atomically(results_path, canonical); !error.empty()) {
    messages << "lethe sweep: " << error << "\n";
    return false;
  }
  return true;
}

}  // namespace

SweepOutcome run_sweep(const SweepSpec& spec) {
  keep_freed_memory();
  std::ostream& messages = messages_of(spec.messages_out);
  SweepOutcome outcome;
  outcome.exit_code = kExitBadInput;  // until finish() says otherwise
  if (!spec_ok(spec, messages)) return outcome;
  Identity id;
  std::vector<lethe::ScenarioConfig> configs;
  if (!build_grid(spec, id, configs, messages)) return outcome;
  const auto first_pair = first_pairs(id, outcome.pairs_total);
  if (!make_folder(spec.out_dir, messages)) return outcome;
  const FolderLock folder_lock(spec.out_dir);
  if (!folder_lock.held()) {
    messages << fmt::format("lethe sweep: another lethe sweep is writing into {} (or {}/.lock cannot be "
                            "created); wait for it, or use another --out\n",
                            spec.out_dir.string(), spec.out_dir.string());
    return outcome;
  }
  ResultMap results;
  const auto description = describe_sweep(spec, id, first_pair, results, messages);
  if (!description) return outcome;
  outcome.pairs_found = results.size();
  if (const auto error = reports::write_file_atomically(spec.out_dir / kSweepName, description->dump(2) + "\n");
      !error.empty()) {
    messages << "lethe sweep: " << error << "\n";
    return outcome;
  }
  const std::vector<Pending> pending = pending_pairs(spec, id, first_pair, results, outcome);
  if (!run_pending(spec, id, configs, pending, outcome, messages)) return outcome;
  // Aggregate what the file holds (old and new lines read the same way).
  const fs::path results_path = spec.out_dir / kResultsName;
  results.clear();
  if (!read_results(results_path, Partial::Repair, id, spec.shard, first_pair, results, messages)) return outcome;
  if (!write_in_order(results_path, results, messages)) return outcome;
  finish(spec.out_dir, id, results, spec.table_out, messages, outcome);
  return outcome;
}

}  // namespace runner
