// runner/sweep.hpp — `lethe sweep` and `lethe merge`: one scenario over a grid of varied keys, many seeds per
// cell, results written as they finish (so a killed sweep resumes), sharded across machines and merged.
//
// A sweep is defined by its identity: the scenario text, the --set overrides, the axes (--vary, in order) and,
// per cell, the varied values, the number of seeds and the number of processors. Cells are the combinations of
// the axes' values, row-major (the first --vary varies slowest); cell c runs seeds 1..S_c where S_c is --seeds
// or, without it, that cell's run.seeds. The (cell, seed) pairs are numbered in canonical cell-major order
// (cell 0 seeds 1..S_0, then cell 1, ...); shard K/N owns the pairs whose number % N == K-1.
//
// Files in the output folder (docs/sweeps.md shows examples):
//   sweep.json     the identity, plus the scenario file path, the shard, and the command lines that wrote the
//                  folder (written first, atomically). A resumed or merged folder must match it.
//   results.jsonl  one line per finished (cell, seed), appended and fsynced as seeds finish (a writer thread
//                  commits batches, so workers never wait on the disk):
//                    {"cell": C, "params": {KEY: VALUE, ...}, "seed": S, "result": RESULT}
//                  RESULT is reports::to_json(RunResult) with "count" added to "wait_time" and
//                  "recovery_latency" (to_json leaves the sample counts out); a seed where lethe itself broke
//                  also has "error": MESSAGE. Every line is a pure function of (identity, cell, seed): no
//                  times, no paths, nothing about the machine.
//   cells.json, cells.csv   per-cell aggregates (reports/cells.hpp), written at the end, atomically.
//   .lock          flock()ed while a sweep writes into the folder: a second sweep into it is refused (exit 2).
//
// Guarantees:
// - Resume: with `resume`, an existing results.jsonl is read first. A truncated last line (a kill mid-write)
//   is cut off the file; every (cell, seed) already there is skipped; the rest run. A complete line that is
//   not a valid result of this sweep is an error (nothing is dropped silently). Without `resume`, a non-empty
//   results.jsonl is an error. The final results equal an uninterrupted run's: the same set of lines.
// - summarize() is a pure function of the set of results: merge and resume reproduce cells.json exactly.
// - merge_sweeps() accepts folders of the same identity (shards, partial runs, earlier merges); a (cell, seed)
//   present in several must have identical results, else it is an error. Its output folder is what one
//   unsharded sweep would have written (results.jsonl in canonical order), and can itself be resumed.
// Exit codes in SweepOutcome::exit_code: 0 every seed's [expect] held, 1 some seed's did not (cells.json still
// written), 2 bad input (usage, scenario, values, a folder that does not match), 3 lethe broke on some seed.
//
// Does not: print progress unless asked, or decide anything from wall time.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "reports/cells.hpp"
#include "runner/execute.hpp"
#include "runner/progress.hpp"

namespace CLI {
class App;
}

namespace runner {

struct ExtraCommand;

using VarySpec = reports::SweepAxis;
using Params = std::vector<std::pair<std::string, std::string>>;  // varied key -> value, in axis order

// "KEY=V1,V2,...": values are split at commas outside (), [], {} and quotes, so "uniform(1ms, 5ms)" and
// "[\"a\", \"b\"]" are single values; spaces around keys and values are trimmed. Errors: no '=', an empty
// key, an empty value, a value listed twice.
std::optional<VarySpec> parse_vary(std::string_view text, std::string& error);

// "K/N" with 1 <= K <= N.
struct Shard {
  std::uint64_t index = 1;
  std::uint64_t count = 1;
  bool operator==(const Shard&) const = default;
};
std::optional<Shard> parse_shard(std::string_view text, std::string& error);

struct SweepSpec {
  std::filesystem::path scenario_file;        // read unless scenario_text is set; names errors; base of empirical files
  std::optional<std::string> scenario_text;   // the scenario's TOML, when the caller has it in memory
  std::vector<std::string> sets;              // --set KEY=VALUE for every cell (the varied keys override them)
  std::vector<VarySpec> vary;                 // the axes; none = one cell
  std::int64_t seeds = 0;                     // per cell; 0 = each cell's run.seeds
  unsigned jobs = 0;                          // threads; 0 = all cores
  std::filesystem::path out_dir;              // created if missing
  Shard shard;
  bool resume = false;
  std::string command_line;                   // recorded in sweep.json
  ProgressMode progress = ProgressMode::Off;  // on messages_out (runner/progress.hpp)
  std::ostream* table_out = nullptr;          // the readable table (and failing seeds), if not null
  std::ostream* messages_out = nullptr;       // errors and warnings; null = std::cerr
};

struct SweepOutcome {
  int exit_code = 0;
  reports::SweepCells cells;      // what cells.json holds (empty when the input was refused)
  std::size_t pairs_total = 0;    // (cell, seed) pairs in the whole grid
  std::size_t pairs_owned = 0;    // in this shard (merge: in the grid)
  std::size_t pairs_found = 0;    // already in results.jsonl (resume) / in the inputs (merge)
  std::size_t pairs_run = 0;      // run now
};

SweepOutcome run_sweep(const SweepSpec& spec);

struct MergeSpec {
  std::vector<std::filesystem::path> inputs;  // sweep folders
  std::filesystem::path out_dir;
  std::string command_line;
  std::ostream* table_out = nullptr;
  std::ostream* messages_out = nullptr;  // null = std::cerr
};
SweepOutcome merge_sweeps(const MergeSpec& spec);

// Aggregates one cell's seeds (any order; each seed once). Seeds with an error count only in error_seeds.
// trials = sum of messages x processors; duplicates = sum of duplicate_effects; the interval is Wilson 95% on
// min(duplicates, trials) of trials; quantiles: p50/p99 = the lower median of the per-seed values over the
// seeds that have samples (count > 0), max = the largest, count = the total.
reports::CellSummary summarize(std::size_t index, const Params& params, std::size_t processors,
                               const std::vector<SeedRun>& runs);

// One results.jsonl line (without the newline) and its inverse.
std::string result_line(std::size_t cell, const Params& params, const SeedRun& run);
struct ResultLine {
  std::size_t cell = 0;
  Params params;  // in the line's key order
  std::uint64_t seed = 0;
  SeedRun run;
};
std::optional<ResultLine> parse_result_line(std::string_view text, std::string& error);

// The `lethe sweep` and `lethe merge` subcommands (runner/command.hpp).
ExtraCommand register_sweep(CLI::App& app);
ExtraCommand register_merge(CLI::App& app);

}  // namespace runner
