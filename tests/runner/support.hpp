// tests/runner/support.hpp — helpers shared by the runner tests: running a shell command or the built
// `lethe` (from the source tree, so scenario paths are relative to it), a fresh temporary folder, reading a
// file, and loading a scenario that must load.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "scenario/loader.hpp"

namespace test_support {

struct Outcome {
  int exit_code = -1;
  std::string out;  // stdout and stderr, interleaved
};

inline Outcome shell(const std::string& command) {
  Outcome outcome;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return outcome;
  std::array<char, 4096> buffer{};
  while (fgets(buffer.data(), static_cast<int>(buffer.size()), pipe) != nullptr) outcome.out += buffer.data();
  const int status = pclose(pipe);
  outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return outcome;
}

// Runs `lethe ARGS` from the source tree.
inline Outcome run_lethe(const std::string& args) {
  return shell(std::string("cd ") + LETHE_SOURCE_DIR + " && " + LETHE_BINARY_DIR + "/lethe " + args);
}

// An empty folder of its own for one test: lethe-TEST-NAME-PID under the system's temporary folder.
inline std::filesystem::path temp_dir(const std::string& test, const std::string& name) {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("lethe-" + test + "-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

// Loads a scenario that must load: throws with every error message otherwise.
inline lethe::ScenarioConfig load_config(const std::filesystem::path& file, const std::vector<std::string>& sets = {}) {
  auto loaded = scenario::load_scenario(file, sets);
  if (auto* errors = std::get_if<std::vector<scenario::LoadError>>(&loaded)) {
    std::string text;
    for (const auto& e : *errors) text += e.message + "\n";
    throw std::runtime_error(text);
  }
  return std::get<lethe::ScenarioConfig>(std::move(loaded));
}

}  // namespace test_support
