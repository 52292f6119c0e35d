// runner/sweep_aggregate.hpp — from the results of a sweep to its cells: cells.json, cells.csv, the table.
#pragma once

#include <filesystem>
#include <iosfwd>

#include "runner/sweep_results_file.hpp"

namespace runner::sweep_detail {

// Aggregates every cell (summarize(), runner/sweep.hpp), writes cells.json and cells.csv, prints the table and
// the failing seeds with their replay commands. Sets outcome.cells and outcome.exit_code; false after printing
// why the files could not be written.
bool finish(const std::filesystem::path& out_dir, const Identity& id, const ResultMap& results,
            std::ostream* table_out, std::ostream& messages, SweepOutcome& outcome);

}  // namespace runner::sweep_detail
