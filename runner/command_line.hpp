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
#include <vector>

#include "reports/report.hpp"

namespace runner {

using reports::shell_quote;  // reports/report.hpp: the one definition
std::string this_command_line();
// `lethe replay FILE --seed N --set K=V...`, each word quoted as needed: the line printed under every failure.
std::string replay_command(const std::string& file, std::uint64_t seed, const std::vector<std::string>& sets);

}  // namespace runner
