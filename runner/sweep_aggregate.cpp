#include "runner/sweep_aggregate.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <ostream>

#include "reports/output_file.hpp"
#include "runner/command.hpp"
#include "runner/command_line.hpp"

namespace fs = std::filesystem;

namespace runner {

reports::CellSummary summarize(std::size_t index, const Params& params, std::size_t processors,
                               const std::vector<SeedRun>& runs) {
  reports::CellSummary cell;
  cell.index = index;
  cell.params = params;
  std::vector<std::int64_t> wait_p50;
  std::vector<std::int64_t> wait_p99;
  std::vector<std::int64_t> recovery_p50;
  std::vector<std::int64_t> recovery_p99;
  auto gather = [](const lethe::Quantiles& q, lethe::Quantiles& total, std::vector<std::int64_t>& p50,
                   std::vector<std::int64_t>& p99) {
    if (q.count == 0) return;
    p50.push_back(q.p50);
    p99.push_back(q.p99);
    total.max = std::max(total.max, q.max);
    total.count += q.count;
  };
  for (const auto& run : runs) {
    if (!run.error.empty()) {
      ++cell.error_seeds;
      continue;
    }
    const auto& r = run.result;
    ++cell.seeds;
    cell.trials += r.messages * processors;
    cell.duplicates += r.duplicate_effects;
    for (std::size_t i = 0; i < lethe::kCauseCount; ++i) cell.by_cause[i] += r.duplicates[i];
    cell.lost += r.lost_messages;
    cell.waits += r.waits;
    cell.memo_mismatches += r.memo_mismatches;
    if (!r.ok) ++cell.failed_seeds;
    gather(r.wait_time, cell.wait_time, wait_p50, wait_p99);
    gather(r.recovery_latency, cell.recovery_latency, recovery_p50, recovery_p99);
  }
  auto lower_median = [](std::vector<std::int64_t>& values) -> std::int64_t {
    if (values.empty()) return 0;
    const auto middle = values.begin() + static_cast<std::ptrdiff_t>((values.size() - 1) / 2);
    std::nth_element(values.begin(), middle, values.end());
    return *middle;
  };
  cell.wait_time.p50 = lower_median(wait_p50);
  cell.wait_time.p99 = lower_median(wait_p99);
  cell.recovery_latency.p50 = lower_median(recovery_p50);
  cell.recovery_latency.p99 = lower_median(recovery_p99);
  cell.duplicate_rate =
      cell.trials == 0 ? 0.0 : static_cast<double>(cell.duplicates) / static_cast<double>(cell.trials);
  cell.duplicate_interval = reports::wilson_interval(cell.duplicates, cell.trials);
  return cell;
}

namespace sweep_detail {

namespace {

std::string replay_command(const Identity& id, const Params& params, std::uint64_t seed) {
  std::vector<std::string> sets = id.sets;
  for (const auto& [key, value] : params) sets.push_back(key + "=" + value);
  return runner::replay_command(id.scenario_file, seed, sets);
}


}  // namespace

bool finish(const fs::path& out_dir, const Identity& id, const ResultMap& results, std::ostream* table_out,
            std::ostream& messages, SweepOutcome& outcome) {
  const auto grid = grid_params(id.vary);
  std::vector<std::vector<SeedRun>> runs(id.cells.size());
  std::vector<std::vector<std::uint64_t>> failed(id.cells.size());
  std::vector<std::vector<std::pair<std::uint64_t, std::string>>> broken(id.cells.size());
  for (const auto& [key, entry] : results) {
    runs[key.first].push_back(entry.line.run);
    if (!entry.line.run.error.empty()) {
      broken[key.first].emplace_back(key.second, entry.line.run.error);
    } else if (!entry.line.run.result.ok) {
      failed[key.first].push_back(key.second);
    }
  }
  reports::SweepCells sweep;
  sweep.scenario = id.scenario_name;
  sweep.axes = id.vary;
  for (std::size_t c = 0; c < id.cells.size(); ++c) {
    sweep.cells.push_back(summarize(c, grid[c], id.cells[c].processors, runs[c]));
  }
  const std::string json_text = reports::sweep_cells_json(sweep).dump(2) + "\n";
  std::string write_failure = reports::write_file_atomically(out_dir / "cells.json", json_text);
  if (write_failure.empty()) {
    write_failure = reports::write_file_atomically(out_dir / "cells.csv", reports::cells_csv(sweep.axes, sweep.cells));
  }
  if (!write_failure.empty()) {
    messages << "lethe: " << write_failure << "\n";
    outcome.exit_code = kExitBadInput;
    return false;
  }
  bool any_failed = false;
  bool any_broken = false;
  bool any_out_of_memory = false;
  std::string notes;
  for (std::size_t c = 0; c < id.cells.size(); ++c) {
    for (const auto& [seed, error] : broken[c]) {
      if (SeedRun::is_out_of_memory(error)) {
        any_out_of_memory = true;
        notes += fmt::format("RESOURCES cell {} ({}) seed {}: {}\n", c, params_text(grid[c]), seed, error);
        continue;
      }
      any_broken = true;
      notes += fmt::format("ERROR cell {} ({}) seed {}: {}\n  replay: {}\n", c, params_text(grid[c]), seed, error,
                           replay_command(id, grid[c], seed));
    }
    if (failed[c].empty()) continue;
    any_failed = true;
    std::string seeds;
    for (std::size_t i = 0; i < failed[c].size() && i < 10; ++i) seeds += fmt::format("{}{}", i == 0 ? "" : ", ", failed[c][i]);
    if (failed[c].size() > 10) seeds += fmt::format(" and {} more", failed[c].size() - 10);
    const std::string replay = replay_command(id, grid[c], failed[c].front());
    notes += fmt::format("FAIL cell {} ({}): expectations failed on seeds {}\n  replay: {} --explain\n"
                         "  draw it: {} --html cell{}-seed{}.html\n",
                         c, params_text(grid[c]), seeds, replay, replay, c, failed[c].front());
  }
  if (table_out != nullptr) {
    *table_out << fmt::format("sweep {}: {} cell{}, {} of {} (cell, seed) pairs\n", id.scenario_name,
                              id.cells.size(), id.cells.size() == 1 ? "" : "s", results.size(), outcome.pairs_total);
    *table_out << reports::cells_table(sweep.axes, sweep.cells);
    if (!notes.empty()) *table_out << "\n" << notes;
    *table_out << std::flush;
  }
  outcome.cells = std::move(sweep);
  outcome.exit_code = any_broken           ? kExitInternal
                      : any_out_of_memory ? kExitResources
                                          : (any_failed ? kExitExpectation : kExitOk);
  return true;
}

}  // namespace sweep_detail

}  // namespace runner
