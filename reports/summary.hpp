// reports/summary.hpp — readable text for people: one run, and a suite table.
// Renders only: runs nothing.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace reports {

std::string format_time(std::int64_t ns);  // sim::format_human: "176.6ms", "10.19s", "0s"

// The summary of one seed: counts, duplicates by cause, lost, memo mismatches,
// waits, recovery latency, linearizability, expectations.
// `live`: a run of `lethe live` (real threads and clock): no trace hash, and its time is wall time, not simulated.
std::string run_summary(const lethe::RunResult& result, bool live = false);

struct SuiteRow {
  std::string scenario;
  std::string file;
  std::string shows;               // what its [expect] says it shows (runner::Story: "failure", "fix", ...)
  std::size_t seeds = 0;
  std::size_t passed = 0;
  std::size_t errors = 0;          // internal errors (exit 3)
  std::uint64_t messages = 0;      // summed over seeds
  std::uint64_t effects = 0;
  std::uint64_t duplicates = 0;
  std::uint64_t lost = 0;
  std::array<std::uint64_t, lethe::kCauseCount> causes{};  // duplicates by cause, summed over seeds
  std::vector<std::uint64_t> failed_seeds;
};
// One line per scenario: what it shows, seeds, passed, messages, effects, duplicates, lost, result, and its
// duplicates by cause ("crash_after_effect 14, expired 3") last, wrapped under their column to keep lines within
// kSuiteTableWidth; then the total line.
inline constexpr std::size_t kSuiteTableWidth = 150;
std::string suite_table(const std::vector<SuiteRow>& rows);

}  // namespace reports
