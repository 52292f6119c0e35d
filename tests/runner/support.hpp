// tests/runner/support.hpp — helpers shared by the runner tests: running a shell command or the built
// `lethe` (from the source tree, so scenario paths are relative to it), a fresh temporary folder, reading a
// file, loading a scenario that must load, and killing a command with SIGKILL part way through.
#pragma once

#include <gtest/gtest.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <thread>

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

// The number of newline characters in the file (0 when it does not exist).
inline std::size_t count_lines(const std::filesystem::path& path) {
  const std::string text = read_file(path);
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

// Starts `args` (args[0] the program) in `cwd` (the current folder when empty) with its output to /dev/null,
// waits until `file` has at least `lines` lines (two minutes at most), then kills it with SIGKILL and reaps it.
// Returns waitpid's status (WIFSIGNALED(status) when the kill came before the command ended), or -1 when the
// command could not be started.
inline int kill_nine_after_lines(std::vector<std::string> args, const std::filesystem::path& cwd,
                                 const std::filesystem::path& file, std::size_t lines) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return -1;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (count_lines(file) < lines && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return status;
}

}  // namespace test_support
