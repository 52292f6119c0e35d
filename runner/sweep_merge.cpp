// lethe merge: sweep folders of one identity into the folder one unsharded sweep would have written.
#include <fmt/format.h>
#include <ostream>

#include "reports/output_file.hpp"
#include "runner/command.hpp"
#include "runner/command_line.hpp"
#include "runner/sweep.hpp"
#include "runner/sweep_aggregate.hpp"

namespace fs = std::filesystem;

namespace runner {

using namespace sweep_detail;

SweepOutcome merge_sweeps(const MergeSpec& spec) {
  std::ostream& messages = messages_of(spec.messages_out);
  SweepOutcome outcome;
  outcome.exit_code = kExitBadInput;
  if (spec.inputs.empty()) {
    messages << "lethe merge: found no sweep folder to merge\n";
    return outcome;
  }
  std::error_code code;
  for (const auto& input : spec.inputs) {
    if (fs::exists(spec.out_dir, code) && fs::equivalent(input, spec.out_dir, code)) {
      messages << fmt::format("lethe merge: --out {} is one of the inputs; allowed: a new folder\n",
                              spec.out_dir.string());
      return outcome;
    }
  }
  Identity id;
  Shard shard;
  if (!read_sweep_json(spec.inputs.front(), id, shard, messages)) return outcome;
  for (std::size_t i = 1; i < spec.inputs.size(); ++i) {
    Identity other;
    Shard other_shard;
    if (!read_sweep_json(spec.inputs[i], other, other_shard, messages)) return outcome;
    if (auto difference = identity_difference(id, other)) {
      messages << fmt::format("lethe merge: {} and {} hold different sweeps ({})\n", spec.inputs.front().string(),
                              spec.inputs[i].string(), *difference);
      return outcome;
    }
  }
  const auto first_pair = first_pairs(id, outcome.pairs_total);
  outcome.pairs_owned = outcome.pairs_total;
  ResultMap results;
  for (const auto& input : spec.inputs) {
    if (!read_results(input / kResultsName, Partial::Ignore, id, std::nullopt, first_pair, results, messages)) {
      return outcome;
    }
  }
  outcome.pairs_found = results.size();
  fs::create_directories(spec.out_dir, code);
  if (code || !fs::is_directory(spec.out_dir, code)) {
    messages << fmt::format("lethe merge: --out {}: cannot create the folder\n", spec.out_dir.string());
    return outcome;
  }
  const fs::path results_path = spec.out_dir / kResultsName;
  if (fs::exists(results_path, code) && fs::file_size(results_path, code) > 0) {
    messages << fmt::format("lethe merge: {} already holds results; allowed: a new or empty --out folder\n",
                            results_path.string());
    return outcome;
  }
  nlohmann::ordered_json description = sweep_json(id, Shard{1, 1}, spec.command_line);
  nlohmann::ordered_json inputs = nlohmann::ordered_json::array();
  for (const auto& input : spec.inputs) inputs.push_back(input.string());
  description["merged_from"] = inputs;
  std::string lines;
  for (const auto& [key, entry] : results) lines += entry.text + "\n";  // canonical (cell, seed) order
  std::string error = reports::write_file_atomically(spec.out_dir / kSweepName, description.dump(2) + "\n");
  if (error.empty()) error = reports::write_file_atomically(results_path, lines);
  if (!error.empty()) {
    messages << "lethe merge: " << error << "\n";
    return outcome;
  }
  if (results.size() < outcome.pairs_total) {
    std::string missing;
    std::size_t shown = 0;
    for (std::size_t c = 0; c < id.cells.size() && shown < 5; ++c) {
      for (std::int64_t s = 1; s <= id.cells[c].seeds && shown < 5; ++s) {
        if (results.count({c, static_cast<std::uint64_t>(s)}) != 0) continue;
        missing += fmt::format("{}cell {} seed {}", shown == 0 ? "" : ", ", c, s);
        ++shown;
      }
    }
    messages << fmt::format("lethe merge: {} of {} (cell, seed) pairs are missing (e.g. {}); to run them: lethe "
                            "sweep {} ... --out {} --resume\n",
                            outcome.pairs_total - results.size(), outcome.pairs_total, missing,
                            shell_quote(id.scenario_file), shell_quote(spec.out_dir.string()));
  }
  finish(spec.out_dir, id, results, spec.table_out, messages, outcome);
  return outcome;
}

}  // namespace runner
