#include "runner/sweep_grid.hpp"

#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "check/store_json.hpp"  // parse_bounded_json
#include "scenario/loader.hpp"
#include "sim/text.hpp"

namespace fs = std::filesystem;

namespace runner {

namespace sweep_detail {

std::string params_text(const Params& params) {
  std::string out;
  for (const auto& [key, value] : params) out += fmt::format("{}{}={}", out.empty() ? "" : ", ", key, value);
  return out;
}

std::optional<std::string> read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return content.str();
}

std::optional<std::string> identity_difference(const Identity& a, const Identity& b) {
  if (a.scenario_text != b.scenario_text) return "the scenario text differs";
  if (a.sets != b.sets) return "the --set overrides differ";
  if (a.vary != b.vary) return "the --vary axes differ";
  if (a.cells.size() != b.cells.size()) return "the number of cells differs";
  for (std::size_t c = 0; c < a.cells.size(); ++c) {
    if (a.cells[c].seeds != b.cells[c].seeds) return fmt::format("the seeds of cell {} differ", c);
    if (a.cells[c].processors != b.cells[c].processors) return fmt::format("the processors of cell {} differ", c);
  }
  return std::nullopt;
}

nlohmann::ordered_json params_json(const Params& params) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [key, value] : params) j[key] = value;
  return j;
}

nlohmann::ordered_json sweep_json(const Identity& id, const Shard& shard, const std::string& command_line) {
  nlohmann::ordered_json j;
  j["format"] = kFormat;
  j["scenario_file"] = id.scenario_file;
  j["scenario_name"] = id.scenario_name;
  j["scenario_text"] = id.scenario_text;
  j["sets"] = id.sets;
  nlohmann::ordered_json vary = nlohmann::ordered_json::array();
  for (const auto& axis : id.vary) vary.push_back({{"key", axis.key}, {"values", axis.values}});
  j["vary"] = vary;
  if (id.seeds_option > 0) {
    j["seeds"] = id.seeds_option;
  } else {
    j["seeds"] = nullptr;
  }
  std::size_t pairs = 0;
  nlohmann::ordered_json cells = nlohmann::ordered_json::array();
  for (std::size_t c = 0; c < id.cells.size(); ++c) {
    nlohmann::ordered_json cell;
    cell["index"] = c;
    cell["params"] = params_json(id.cells[c].params);
    cell["seeds"] = id.cells[c].seeds;
    cell["processors"] = id.cells[c].processors;
    cells.push_back(cell);
    pairs += static_cast<std::size_t>(id.cells[c].seeds);
  }
  j["cells"] = cells;
  j["pairs"] = pairs;
  j["shard"] = {{"index", shard.index}, {"count", shard.count}};
  j["command_line"] = command_line;
  j["resumed_by"] = nlohmann::ordered_json::array();
  return j;
}

Identity identity_from_json(const nlohmann::ordered_json& j, Shard& shard) {
  if (j.at("format").get<std::string>() != kFormat) {
    throw std::runtime_error(fmt::format("format \"{}\" is not {}", j.at("format").get<std::string>(), kFormat));
  }
  Identity id;
  id.scenario_file = j.at("scenario_file").get<std::string>();
  id.scenario_name = j.at("scenario_name").get<std::string>();
  id.scenario_text = j.at("scenario_text").get<std::string>();
  id.sets = j.at("sets").get<std::vector<std::string>>();
  for (const auto& axis : j.at("vary")) {
    id.vary.push_back(VarySpec{axis.at("key").get<std::string>(), axis.at("values").get<std::vector<std::string>>()});
  }
  id.seeds_option = j.at("seeds").is_null() ? 0 : j.at("seeds").get<std::int64_t>();
  for (const auto& cell : j.at("cells")) {
    CellDefinition definition;
    for (const auto& [key, value] : cell.at("params").items()) definition.params.emplace_back(key, value.get<std::string>());
    definition.seeds = cell.at("seeds").get<std::int64_t>();
    definition.processors = cell.at("processors").get<std::size_t>();
    id.cells.push_back(std::move(definition));
  }
  shard.index = j.at("shard").at("index").get<std::uint64_t>();
  shard.count = j.at("shard").at("count").get<std::uint64_t>();
  return id;
}

std::vector<Params> grid_params(const std::vector<VarySpec>& vary) {
  std::size_t cells = 1;
  for (const auto& axis : vary) cells *= axis.values.size();
  std::vector<Params> grid(cells);
  for (std::size_t c = 0; c < cells; ++c) {
    std::size_t rest = c;
    Params params(vary.size());
    for (std::size_t k = vary.size(); k-- > 0;) {
      const std::size_t n = vary[k].values.size();
      params[k] = {vary[k].key, vary[k].values[rest % n]};
      rest /= n;
    }
    grid[c] = std::move(params);
  }
  return grid;
}

bool same_params(const Params& a, const Params& b) {
  std::map<std::string, std::string> left(a.begin(), a.end());
  std::map<std::string, std::string> right(b.begin(), b.end());
  return left == right;
}
std::vector<std::size_t> first_pairs(const Identity& id, std::size_t& total) {
  std::vector<std::size_t> first(id.cells.size());
  total = 0;
  for (std::size_t c = 0; c < id.cells.size(); ++c) {
    first[c] = total;
    total += static_cast<std::size_t>(id.cells[c].seeds);
  }
  return first;
}


namespace {

// Rewrites "--set KEY=VALUE: ..." as "--vary KEY=VALUE: ..." for the override that came from --vary.
std::string as_vary_error(const std::string& message, const std::string& assignment) {
  const std::string prefix = "--set " + assignment;
  if (message.rfind(prefix, 0) == 0) return "--vary " + message.substr(6);
  return message;
}


}  // namespace

bool build_grid(const SweepSpec& spec, Identity& id, std::vector<lethe::ScenarioConfig>& configs,
                std::ostream& messages) {
  id.scenario_file = spec.scenario_file.string();
  if (spec.scenario_text) {
    id.scenario_text = *spec.scenario_text;
  } else {
    std::error_code code;
    auto text = fs::is_directory(spec.scenario_file, code) ? std::nullopt : read_text(spec.scenario_file);
    if (!text) {
      messages << fmt::format("{}:1:1: scenario: found no readable file; allowed: a readable scenario file (.toml)\n",
                              id.scenario_file);
      return false;
    }
    id.scenario_text = std::move(*text);
  }
  id.sets = spec.sets;
  id.vary = spec.vary;
  id.seeds_option = spec.seeds;
  fs::path base_dir = spec.scenario_file.parent_path();
  if (base_dir.empty()) base_dir = ".";
  auto load = [&](const std::vector<std::string>& overrides) {
    return scenario::load_scenario_text(id.scenario_text, id.scenario_file, base_dir, overrides);
  };
  // The file with --set alone, then each varied value alone, so an error is reported once, not once per cell.
  std::set<std::string> keys;
  for (const auto& axis : spec.vary) {
    if (!keys.insert(axis.key).second) {
      messages << fmt::format("--vary {}: the key is varied twice; allowed: one --vary per key\n", axis.key);
      return false;
    }
    if (axis.values.empty()) {
      messages << fmt::format("--vary {}: found no values; allowed: --vary KEY=V1,V2,...\n", axis.key);
      return false;
    }
  }
  if (spec.seeds < 0) {
    messages << "--seeds: found a negative number; allowed: 1 or more\n";
    return false;
  }
  bool ok = true;
  std::set<std::string> printed;
  auto report = [&](const scenario::LoadResult& loaded, const std::string& assignment, const std::string& context) {
    if (const auto* errors = std::get_if<std::vector<scenario::LoadError>>(&loaded)) {
      for (const auto& e : *errors) {
        const std::string message = context + (assignment.empty() ? e.message : as_vary_error(e.message, assignment));
        if (printed.insert(message).second) messages << message << "\n";
      }
      return false;
    }
    return true;
  };
  const scenario::LoadResult base = load(spec.sets);
  if (!report(base, "", "")) return false;
  for (const auto& axis : spec.vary) {
    for (const auto& value : axis.values) {
      std::vector<std::string> overrides = spec.sets;
      const std::string assignment = axis.key + "=" + value;
      overrides.push_back(assignment);
      ok = report(load(overrides), assignment, "") && ok;
    }
  }
  if (!ok) return false;
  id.scenario_name = std::get<lethe::ScenarioConfig>(base).scenario.name;
  for (const auto& params : grid_params(spec.vary)) {
    std::vector<std::string> overrides = spec.sets;
    for (const auto& [key, value] : params) overrides.push_back(key + "=" + value);
    scenario::LoadResult loaded = load(overrides);
    if (!report(loaded, "", fmt::format("cell {} ({}): ", configs.size(), params_text(params)))) {
      ok = false;
      configs.emplace_back();
      continue;
    }
    auto config = std::get<lethe::ScenarioConfig>(std::move(loaded));
    CellDefinition definition;
    definition.params = params;
    definition.seeds = spec.seeds > 0 ? spec.seeds : config.run.seeds;
    definition.processors = config.topology.processors.size();
    id.cells.push_back(std::move(definition));
    configs.push_back(std::move(config));
  }
  return ok;
}

std::optional<nlohmann::ordered_json> read_sweep_json(const fs::path& dir, Identity& id, Shard& shard,
                                                       std::ostream& messages) {
  const fs::path path = dir / kSweepName;
  auto text = read_text(path);
  if (!text) {
    messages << fmt::format("lethe: {}: not found: {} is not a sweep folder\n", path.string(), dir.string());
    return std::nullopt;
  }
  try {
    auto j = lethe::history::parse_bounded_json<nlohmann::ordered_json>(*text);
    id = identity_from_json(j, shard);
    return j;
  } catch (const std::exception& e) {
    messages << fmt::format("lethe: {}: not a sweep description: {}\n", path.string(),
                            lethe::history::json_error_reason(e, "of the file"));
    return std::nullopt;
  }
}

std::ostream& messages_of(std::ostream* out) { return out != nullptr ? *out : std::cerr; }

}  // namespace sweep_detail

using namespace sweep_detail;

// ---------------------------------------------------------------- parsing

std::optional<VarySpec> parse_vary(std::string_view text, std::string& error) {
  const auto equals = text.find('=');
  if (equals == std::string_view::npos) {
    error = fmt::format("--vary {}: found no KEY=V1,V2,...; allowed: e.g. --vary protocol.max_processing_time=1s,5s,30s",
                        text);
    return std::nullopt;
  }
  VarySpec spec;
  spec.key = lethe::text::trim(text.substr(0, equals));
  if (spec.key.empty()) {
    error = fmt::format("--vary {}: found no key before '='; allowed: --vary KEY=V1,V2,...", text);
    return std::nullopt;
  }
  auto values = lethe::text::split_top_level(text.substr(equals + 1));
  if (!values) {
    error = fmt::format("--vary {}: found an unbalanced bracket or quote; allowed: --vary KEY=V1,V2,... where a value "
                        "may hold commas inside (), [], {{}} or quotes",
                        text);
    return std::nullopt;
  }
  spec.values = std::move(*values);
  std::set<std::string> seen;
  for (const auto& value : spec.values) {
    if (value.empty()) {
      error = fmt::format("--vary {}: found an empty value; allowed: --vary KEY=V1,V2,... with no empty value", text);
      return std::nullopt;
    }
    if (!seen.insert(value).second) {
      error = fmt::format("--vary {}: found \"{}\" twice; allowed: each value once", text, value);
      return std::nullopt;
    }
  }
  return spec;
}

std::optional<Shard> parse_shard(std::string_view text, std::string& error) {
  const auto slash = text.find('/');
  auto number = [](std::string_view digits) -> std::optional<std::uint64_t> {
    if (digits.empty() || digits.size() > 9) return std::nullopt;
    std::uint64_t value = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') return std::nullopt;
      value = value * 10 + static_cast<std::uint64_t>(c - '0');
    }
    return value;
  };
  std::optional<std::uint64_t> index;
  std::optional<std::uint64_t> count;
  if (slash != std::string_view::npos) {
    index = number(text.substr(0, slash));
    count = number(text.substr(slash + 1));
  }
  if (!index || !count || *index < 1 || *index > *count) {
    error = fmt::format("--shard {}: found no K/N with 1 <= K <= N; allowed: e.g. --shard 2/8", text);
    return std::nullopt;
  }
  return Shard{*index, *count};
}

}  // namespace runner
