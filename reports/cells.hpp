// reports/cells.hpp — a sweep's results per cell (one combination of varied values), for tables and plots.
//
// Written by `lethe sweep` / `lethe merge` (runner/sweep.*) as cells.json and cells.csv, read by the report
// (reports/report.*) and by `lethe tune`. Plain data and its rendering: nothing here runs a simulation.
//
// cells.json is the document sweep_cells_json() writes:
//   {"scenario": NAME, "axes": [{"key": K, "values": [V, ...]}, ...], "cells": [CELL, ...]}
// with CELL = cell_json(): {"index", "params": {K: V}, "seeds", "trials", "duplicates", "duplicate_rate",
//   "duplicate_interval": {"low", "high"}, "by_cause": {CAUSE: n, ...}, "lost", "waits", "memo_mismatches",
//   "wait_time": {"p50","p99","max","count"}, "recovery_latency": {...}, "failed_seeds", "error_seeds"}.
// Cells are listed by index: row-major over the axes (the first axis varies slowest). Every cell of the grid
// is listed, also one with no seed (a shard that ran none of its seeds): seeds 0, interval [0, 1].
// sweep_cells_from_json() reads it back to equal values (doubles round-trip exactly).
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/result.hpp"

namespace reports {

// A 95% Wilson score interval for `successes` out of `trials` (trials 0 gives [0, 1]).
struct Interval {
  double low = 0.0;
  double high = 1.0;
};
Interval wilson_interval(std::uint64_t successes, std::uint64_t trials, double z = 1.959963984540054);

struct CellSummary {
  std::size_t index = 0;                                    // position in the sweep's grid (row-major over --vary)
  std::vector<std::pair<std::string, std::string>> params;  // varied key -> value, as written on the command line
  std::size_t seeds = 0;                                    // seeds aggregated
  std::uint64_t trials = 0;      // (message id, processor) pairs owed an execution, summed over seeds
  std::uint64_t duplicates = 0;  // duplicate effects, summed over seeds
  double duplicate_rate = 0.0;   // duplicates / trials (capped at 1 for the interval)
  Interval duplicate_interval;   // Wilson 95% on min(duplicates, trials) / trials
  std::array<std::uint64_t, lethe::kCauseCount> by_cause{};
  std::uint64_t lost = 0;
  std::uint64_t waits = 0;
  std::uint64_t memo_mismatches = 0;
  // Across seeds: p50 = median of the per-seed p50, p99 = median of the per-seed p99, max = largest max,
  // count = total samples (seeds without a sample are left out).
  lethe::Quantiles recovery_latency;
  lethe::Quantiles wait_time;
  std::size_t failed_seeds = 0;       // seeds whose [expect] lines did not all hold
  std::size_t error_seeds = 0;        // seeds where lethe itself broke (exit 3); left out of every other field
};

// One varied key and its values, in the order given (`--vary KEY=V1,V2,...`).
struct SweepAxis {
  std::string key;
  std::vector<std::string> values;
  bool operator==(const SweepAxis&) const = default;
};

// The content of cells.json.
struct SweepCells {
  std::string scenario;  // scenario.name
  std::vector<SweepAxis> axes;
  std::vector<CellSummary> cells;  // by index
};

nlohmann::ordered_json cell_json(const CellSummary& cell);
CellSummary cell_from_json(const nlohmann::json& json);
nlohmann::ordered_json sweep_cells_json(const SweepCells& sweep);
// Throws nlohmann::json::exception when a required field is missing or has the wrong type.
SweepCells sweep_cells_from_json(const nlohmann::json& json);

// cells.csv (RFC 4180; values with a comma, quote or newline are quoted). One header line, then one line per
// cell: index, one column per axis key, seeds, trials, duplicates, duplicate_rate, ci_low, ci_high,
// duplicates.<cause>..., lost, waits, memo_mismatches, wait_time.{p50,p99,max,count},
// recovery_latency.{p50,p99,max,count}, failed_seeds, error_seeds. Times are integer nanoseconds.
std::string cells_csv(const std::vector<SweepAxis>& axes, const std::vector<CellSummary>& cells);

// A readable table for people (stdout): one row per cell with at least one seed.
std::string cells_table(const std::vector<SweepAxis>& axes, const std::vector<CellSummary>& cells);

}  // namespace reports
