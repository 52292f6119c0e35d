#include "runner/tune_scenario.hpp"

#include <fmt/format.h>

#include <fstream>
#include <ostream>
#include <sstream>
#include <variant>

#include "protocol/registry.hpp"
#include "scenario/loader.hpp"

namespace runner {

namespace {

// "FILE:LINE:COL: protocol.kind" where the kind was written, "FILE: protocol.kind" when it was left at its default.
std::string kind_place(const lethe::ScenarioConfig& config, const std::string& file) {
  for (const char* key : {"protocol.kind", "protocol"}) {
    const auto it = config.positions.find(key);
    if (it != config.positions.end() && it->second.line > 0) {
      return fmt::format("{}:{}:{}: protocol.kind", file, it->second.line, it->second.column);
    }
  }
  return file + ": protocol.kind";
}

// Empty when the strategy reads `key`; else the error naming the strategies that do.
std::string missing_key(const lethe::ScenarioConfig& config, const std::string& file, const std::string& key,
                        const std::string& why) {
  const std::string& kind = config.protocol.kind;
  if (lethe::find_key(lethe::strategy_info(kind), key) != nullptr) return {};
  std::string allowed;
  for (const auto& name : lethe::strategies_reading(key)) allowed += (allowed.empty() ? "\"" : ", \"") + name + "\"";
  return fmt::format("{}: found \"{}\", a strategy that reads no {} ({}); allowed: a strategy that reads it: {}",
                     kind_place(config, file), kind, key, why, allowed);
}

std::string redelivery_text(const lethe::ScenarioConfig& config) {
  if (config.topology.source == "queue") {
    return fmt::format("its queue redelivers a crashed attempt's message after visibility_timeout {}",
                       sim::format_duration(config.topology.visibility_timeout));
  }
  return fmt::format("its {} source redelivers a crashed attempt's message as that source does", config.topology.source);
}

}  // namespace

std::optional<TuneScenario> load_tune_scenario(const std::string& file, std::optional<sim::Duration> ttl,
                                               std::ostream& err) {
  const auto loaded = scenario::load_scenario(file, {});
  if (const auto* errors = std::get_if<std::vector<scenario::LoadError>>(&loaded)) {
    for (const auto& e : *errors) err << "lethe tune: --scenario: " << e.message << "\n";
    return std::nullopt;
  }
  TuneScenario s;
  s.file = file;
  s.config = std::get<lethe::ScenarioConfig>(loaded);
  std::string problem = missing_key(s.config, file, "max_processing_time", "tune would sweep a key it ignores");
  if (problem.empty() && ttl) {
    problem = missing_key(s.config, file, "ttl", "tune recommends a ttl from --redelivery-window; drop it or");
  }
  if (!problem.empty()) {
    err << "lethe tune: --scenario: " << problem << "\n";
    return std::nullopt;
  }
  std::ifstream in(s.file, std::ios::binary);  // load_scenario checked it is a regular file of bounded size
  std::ostringstream text;
  text << in.rdbuf();
  s.text = text.str();
  if (ttl) s.sets.push_back("protocol.ttl=" + sim::format_duration(*ttl));
  s.redelivery = redelivery_text(s.config);
  return s;
}

}  // namespace runner
