// runner/command_line.hpp — small helpers shared by the tune, shrink and report commands.
//
// shell_quote() quotes a word for a POSIX shell only when it needs it; this_command_line() is the running
// process's own command line, each word shell-quoted (Linux: /proc/self/cmdline; "" where it cannot be read),
// so a report can show the command that reproduces it.
//
// Does not: run anything.
#pragma once

#include <string>

namespace runner {

std::string shell_quote(const std::string& word);
std::string this_command_line();

}  // namespace runner
