#include "runner/command_line.hpp"

#include <fstream>
#include <sstream>

namespace runner {

std::string replay_command(const std::string& file, std::uint64_t seed, const std::vector<std::string>& sets) {
  std::string command = "lethe replay " + shell_quote(file) + " --seed " + std::to_string(seed);
  for (const auto& s : sets) command += " --set " + shell_quote(s);
  return command;
}

std::string this_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  if (!in) return {};
  std::ostringstream content;
  content << in.rdbuf();
  const std::string raw = content.str();
  std::string out;
  std::size_t start = 0;
  while (start < raw.size()) {
    std::size_t end = raw.find('\0', start);
    if (end == std::string::npos) end = raw.size();
    out += (out.empty() ? "" : " ") + shell_quote(raw.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace runner
