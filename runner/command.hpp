// runner/command.hpp — how a `lethe` subcommand plugs into the command line.
//
// A command file (runner/<name>.cpp) defines `ExtraCommand register_<name>(CLI::App& app)`, which adds its
// subcommand and options to `app` and returns the function that runs it once parsed. runner/cli.cpp calls
// each register_<name>() and runs the one the user chose. Exit codes: kExitCodes below, the one table that
// `lethe --help` (and from it the man page) prints and docs/cli.md is checked against (scripts/cli-doc-check).
#pragma once

#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdint>
#include <functional>
#include <string>

namespace runner {

struct ExtraCommand {
  CLI::App* command = nullptr;
  std::function<int()> run;
};

inline constexpr int kExitOk = 0;
inline constexpr int kExitExpectation = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitInternal = 3;
// Resources exhausted: memory ran out (the address-space limit, or the machine's). No input is wrong and lethe
// is not broken: the same run fits under a higher limit or with fewer consumers. When seeds end differently it
// ranks below 3 and above 2.
inline constexpr int kExitResources = 5;

// What each exit code means for every command (a command's own reading of 0 and 1 is in its --help and
// docs/cli.md, each row starting with this meaning).
struct ExitCodeMeaning {
  int code;
  const char* meaning;
};
inline constexpr ExitCodeMeaning kExitCodes[] = {
    {kExitOk, "every expectation held"},
    {kExitExpectation, "an expectation failed"},
    {kExitBadInput, "bad input"},
    {kExitInternal, "lethe could not finish the run"},
    {kExitResources, "resources exhausted (out of memory)"},
};

// "Exit codes: 0 every expectation held, 1 an expectation failed, 2 bad input, 3 lethe could not finish the run,
// 5 resources exhausted (out of memory)."
inline std::string exit_codes_line() {
  std::string line = "Exit codes:";
  for (const auto& [code, meaning] : kExitCodes) {
    line += std::string(code == kExitOk ? " " : ", ") + std::to_string(code) + " " + meaning;
  }
  return line + ".";
}

// The check of every --seed option: a decimal integer in 0..2^64-1. Without it CLI11 reads "-1" as 2^64-1 and
// wraps "99999999999999999999"; with it either is a parse error (exit 2) naming the allowed range.
inline CLI::Validator seed_check() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        std::uint64_t value = 0;
        const char* end = text.data() + text.size();
        const auto [stop, error] = std::from_chars(text.data(), end, value);
        if (text.empty() || error != std::errc() || stop != end) {
          return "\"" + text + "\" is not a seed; allowed: an integer 0..18446744073709551615";
        }
        return {};
      },
      "SEED", "seed");
}

}  // namespace runner
