// runner/cli.hpp — the whole `lethe` command line as one function, so that a program of its own can be lethe.
//
// run_command_line(argc, argv) parses the arguments as `lethe` does (docs/cli.md), runs the chosen subcommand
// (run, suite, replay and every command of runner/<name>.cpp) and returns its exit code: 0 every expectation
// held, 1 an expectation failed, 2 bad input (usage, scenario file, values), 3 an internal invariant of lethe
// broke. runner/main.cpp, the lethe binary, sets up its allocator and calls it; an executable built outside
// the repository against the installed package registers its own extensions first and then calls it, and is
// a full lethe with them.
//
// REQUIRES: argc and argv as main() received them. No exception escapes: an unexpected one prints
// "lethe: internal error: ..." and gives exit code 3.
// Does not: set up the allocator, or exit the process.
#pragma once

#include <string>

namespace runner {

int run_command_line(int argc, char** argv);

// "lethe X.Y.Z", what `lethe --version` prints: the version of the CMake project (core/version.hpp).
std::string version_line();

}  // namespace runner
