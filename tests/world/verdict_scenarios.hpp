// tests/world/verdict_scenarios.hpp — the reproducer scenarios of tests/world/verdicts/, loaded for a test.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "scenario/loader.hpp"

namespace test_support {

// `file` with `sets` applied; throws with the loader's messages when it does not load.
inline lethe::ScenarioConfig load_scenario_file(const std::filesystem::path& file,
                                                const std::vector<std::string>& sets = {}) {
  auto loaded = scenario::load_scenario(file, sets);
  if (auto* errors = std::get_if<std::vector<scenario::LoadError>>(&loaded)) {
    std::string message;
    for (const auto& e : *errors) message += e.message + "\n";
    throw std::runtime_error(message);
  }
  return std::get<lethe::ScenarioConfig>(std::move(loaded));
}

// tests/world/verdicts/NAME.toml, the reproducers.
inline lethe::ScenarioConfig load_verdict(const std::string& name, const std::vector<std::string>& sets = {}) {
  return load_scenario_file(std::filesystem::path(LETHE_SOURCE_DIR) / "tests/world/verdicts" / (name + ".toml"), sets);
}

// scenarios/NAME.toml, the library.
inline lethe::ScenarioConfig load_library(const std::string& name, const std::vector<std::string>& sets = {}) {
  return load_scenario_file(std::filesystem::path(LETHE_SOURCE_DIR) / "scenarios" / (name + ".toml"), sets);
}

}  // namespace test_support
