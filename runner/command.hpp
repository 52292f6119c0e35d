// runner/command.hpp — how a `lethe` subcommand plugs into the command line.
//
// A command file (runner/<name>.cpp) defines `ExtraCommand register_<name>(CLI::App& app)`, which adds its
// subcommand and options to `app` and returns the function that runs it once parsed. runner/cli.cpp calls
// each register_<name>() and runs the one the user chose. Exit codes: 0 ok, 1 an expectation failed,
// 2 bad input, 3 an internal error of lethe.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace runner {

struct ExtraCommand {
  CLI::App* command = nullptr;
  std::function<int()> run;
};

inline constexpr int kExitOk = 0;
inline constexpr int kExitExpectation = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitInternal = 3;

}  // namespace runner
