#include "runner/report.hpp"

#include "check/store_json.hpp"  // parse_bounded_json
#include "runner/command.hpp"  // exit codes

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unistd.h>

#include "reports/cells.hpp"
#include "reports/report.hpp"
#include "runner/command_line.hpp"

namespace fs = std::filesystem;

namespace runner {

namespace {

std::optional<nlohmann::json> read_json(const fs::path& path, std::string& error) {
  std::error_code ec;
  if (fs::exists(path, ec) && !fs::is_regular_file(path, ec)) {  // a device such as /dev/zero never ends
    error = fmt::format("{}: not a regular file (a sweep folder holds the files lethe sweep wrote)", path.string());
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = fmt::format("{}: cannot read it (is this a folder written by lethe sweep or lethe merge, and did it "
                        "finish?)", path.string());
    return std::nullopt;
  }
  std::ostringstream text;
  text << in.rdbuf();
  try {
    return lethe::history::parse_bounded_json<nlohmann::json>(text.str());
  } catch (const nlohmann::json::exception& e) {
    error = fmt::format("{}: not valid JSON: {}", path.string(), lethe::history::json_error_reason(e, "of the file"));
    return std::nullopt;
  } catch (const lethe::history::JsonTooDeep& e) {
    error = fmt::format("{}: not a sweep's JSON: {}", path.string(), e.what());
    return std::nullopt;
  }
}

// The single `lethe sweep` command that reproduces the whole grid (sweep.json's identity, unsharded).
std::string sweep_command(const nlohmann::json& sweep, const fs::path& dir) {
  std::string command = "lethe sweep " + shell_quote(sweep.value("scenario_file", std::string("SCENARIO.toml")));
  if (sweep.contains("sets") && sweep["sets"].is_array()) {
    for (const auto& s : sweep["sets"]) command += " --set " + shell_quote(s.get<std::string>());
  }
  if (sweep.contains("vary") && sweep["vary"].is_array()) {
    for (const auto& axis : sweep["vary"]) {
      std::string values;
      for (const auto& v : axis.at("values")) values += (values.empty() ? "" : ",") + v.get<std::string>();
      command += " --vary " + shell_quote(axis.at("key").get<std::string>() + "=" + values);
    }
  }
  if (sweep.contains("seeds") && sweep["seeds"].is_number_integer()) {
    command += fmt::format(" --seeds {}", sweep["seeds"].get<std::int64_t>());
  }
  return command + " --out " + shell_quote(dir.string());
}

}  // namespace

namespace {

// DIR/targets.json (lethe sweep --target), when there is one: each cell's verdict over every target (fail when
// any fails, else undecided when any is, else n/a when any is, else pass) and the targets as given. "" or what is
// wrong with the file.
std::string read_target_verdicts(const fs::path& path, reports::ReportInput& input) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return {};
  std::string error;
  const auto json = read_json(path, error);
  if (!json) return error;
  const auto rank = [](const std::string& verdict) {
    return verdict == "fail" ? 3 : verdict == "undecided" ? 2 : verdict == "n/a" ? 1 : 0;
  };
  try {
    for (const auto& row : *json) {
      const auto cell = row.at("cell").get<std::size_t>();
      const auto verdict = row.at("verdict").get<std::string>();
      const auto target = row.at("target").get<std::string>();
      if (std::find(input.targets.begin(), input.targets.end(), target) == input.targets.end()) {
        input.targets.push_back(target);
      }
      auto [it, inserted] = input.cell_verdicts.emplace(cell, verdict);
      if (!inserted && rank(verdict) > rank(it->second)) it->second = verdict;
    }
  } catch (const std::exception& e) {
    return fmt::format("{}: not a targets.json of lethe sweep: {}", path.string(), e.what());
  }
  return {};
}

}  // namespace

std::string render_sweep_report(const fs::path& dir, std::ostream& messages) {
  std::string error;
  const auto cells_json = read_json(dir / "cells.json", error);
  if (!cells_json) return error;
  const auto sweep_json = read_json(dir / "sweep.json", error);
  if (!sweep_json) return error;
  reports::SweepCells cells;
  try {
    cells = reports::sweep_cells_from_json(*cells_json);
  } catch (const std::exception& e) {
    return fmt::format("{}: not a cells.json of lethe sweep: {}", (dir / "cells.json").string(), e.what());
  }
  reports::ReportInput input;
  input.title = fmt::format("Sweep of {}", cells.scenario);
  for (const auto& axis : cells.axes) input.varied_keys.push_back(axis.key);
  input.cells = cells.cells;
  try {
    const auto& sweep = *sweep_json;
    input.scenario_path = sweep.value("scenario_file", std::string());
    input.scenario_toml = sweep.value("scenario_text", std::string());
    const std::string recorded = sweep.value("command_line", std::string());
    const auto shard = sweep.find("shard");
    const bool sharded = shard != sweep.end() && shard->value("count", 1) > 1;
    const std::string whole = sweep_command(sweep, dir);
    input.command = recorded.empty() ? whole : recorded;
    if (sharded || recorded.find(" merge ") != std::string::npos || recorded.empty()) {
      input.command += "\n\n# the whole grid in one run:\n" + whole;
    }
    if (sweep.contains("resumed_by") && sweep["resumed_by"].is_array()) {
      for (const auto& r : sweep["resumed_by"]) {
        if (r.is_string()) input.command += "\n# resumed by: " + r.get<std::string>();
      }
    }
  } catch (const std::exception& e) {
    return fmt::format("{}: not a sweep.json of lethe sweep: {}", (dir / "sweep.json").string(), e.what());
  }
  if (error = read_target_verdicts(dir / "targets.json", input); !error.empty()) return error;
  const auto outcome = reports::write_report(dir, input);
  for (const auto& w : outcome.warnings) messages << "lethe report: " << w << "\n";
  return outcome.error;
}

int report_after_sweep(const fs::path& dir, int exit_code) {
  std::error_code ec;
  // A sweep that could not write its files (exit 2) or broke (exit 3) has no cells to draw.
  if (exit_code == kExitBadInput || exit_code == kExitInternal) return exit_code;
  if (!fs::exists(dir / "cells.json", ec)) return exit_code;
  const std::string error = render_sweep_report(dir, std::cerr);
  if (!error.empty()) {
    std::cerr << "lethe: the report was not written: " << error << "\n";
    return std::max(exit_code, kExitBadInput);  // a file that did not reach the disk is never a success
  } else if (isatty(fileno(stderr)) != 0) {
    std::cerr << "report: " << (dir / "report.html").string() << "\n";
  }
  return exit_code;
}

ExtraCommand register_report(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  auto* command = app.add_subcommand("report", "Render DIR/report.html (plots, tables, decision table) from a sweep "
                                               "folder written by lethe sweep or lethe merge");
  command->add_option("DIR", *dir, "Sweep folder (cells.json, sweep.json)")->required();
  return ExtraCommand{command, [dir] {
                        const std::string error = render_sweep_report(*dir, std::cerr);
                        if (!error.empty()) {
                          std::cerr << "lethe report: " << error << "\n";
                          return kExitBadInput;
                        }
                        std::cout << (fs::path(*dir) / "report.html").string() << "\n";
                        return kExitOk;
                      }};
}

}  // namespace runner
