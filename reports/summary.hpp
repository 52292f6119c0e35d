// reports/summary.hpp — readable text for people: one run, and a suite table.
// Renders only: runs nothing.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace reports {

std::string format_time(std::int64_t ns);  // sim::format_human: "176.6ms", "10.19s", "0s"

// One [expect] verdict for people, "KEY OP WANT (got VALUE)": "wait_time.p99 <= 2s (got 1.205s)". The field's kind
// (lethe::expectation_kind), never the size of the number, picks the form: a time field (sim_time, a quantile part
// such as wait_time.p99) in units, the wanted value exact as a scenario writes it (sim::format_duration) and the
// value got rounded (sim::format_human); a ratio to four significant digits; a count or a boolean an integer.
// A rounded value that would land on the wanted one or across it is written exactly instead ("== 2s (got
// 2.000000001s)", never "(got 2s)"). "n/a": the value could not be had. Every human text of an expectation (run
// summaries, suite and explore failures, shrink headers, JUnit messages) uses it; JSON keeps plain numbers.
std::string expectation_text(const lethe::ExpectationResult& expectation);

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
