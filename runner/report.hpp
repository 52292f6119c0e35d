// runner/report.hpp — `lethe report DIR`: renders DIR/report.html from a sweep folder, and the hook with which
// `lethe sweep` / `lethe merge` render it when they finish.
//
//   lethe report DIR
//
// Reads DIR/cells.json (reports::sweep_cells_from_json) and DIR/sweep.json (the scenario file and text, the
// --set overrides, the axes, the seeds and the recorded command line; runner/sweep.hpp) and calls
// reports::write_report. Works on any folder lethe sweep or lethe merge wrote, so a merged set of shards gets
// its report without re-running anything. The report shows the recorded command line and, for shards and
// merges, the one `lethe sweep` command that reproduces the whole grid in one run.
// Exit codes: 0 written (warnings, e.g. a missing gnuplot, go to stderr); 2 the folder is not a finished sweep.
//
// Does not: run simulations.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <string>

#include "runner/command.hpp"

namespace runner {

// Writes DIR/report.html; returns "" or what went wrong. Warnings go to `messages`.
std::string render_sweep_report(const std::filesystem::path& dir, std::ostream& messages);

// For lethe sweep / merge: when the folder holds cells.json (the sweep ran or merged, whatever its verdict),
// renders the report (a failure to render is a warning on stderr) and returns `exit_code` unchanged.
int report_after_sweep(const std::filesystem::path& dir, int exit_code);

ExtraCommand register_report(CLI::App& app);

}  // namespace runner
