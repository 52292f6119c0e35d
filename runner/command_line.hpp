// runner/command_line.hpp — small helpers shared by the tune, shrink and report commands.
//
// shell_quote() quotes a word for a POSIX shell only when it needs it; this_command_line() is the running
// process's own command line, each word shell-quoted (Linux: /proc/self/cmdline; "" where it cannot be read),
// so a report can show the command that reproduces it.
//
// Does not: run anything.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "reports/report.hpp"

namespace runner {

using reports::shell_quote;  // reports/report.hpp: the one definition
std::string this_command_line();
// The name the running program was started as (argv[0]'s last path component, "lethe" until set), so a hint
// printed by a program built on the library (runner::run_command_line from its own main) names that program,
// which knows its own strategies, rather than the stock lethe. run_command_line sets it.
void set_program_name(const std::string& argv0);
const std::string& program_name();
// `PROGRAM COMMAND FILE --seed N --set K=V...`, each word quoted as needed (COMMAND: run, replay).
std::string seed_command(std::string_view command, const std::string& file, std::uint64_t seed,
                         const std::vector<std::string>& sets);
// seed_command("replay", ...): the line printed under every failure.
std::string replay_command(const std::string& file, std::uint64_t seed, const std::vector<std::string>& sets);

}  // namespace runner
