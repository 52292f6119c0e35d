#include "runner/command_line.hpp"

#include <fstream>
#include <sstream>

namespace runner {

namespace {
std::string& stored_program_name() {
  static std::string name = "lethe";
  return name;
}
}  // namespace

void set_program_name(const std::string& argv0) {
  const std::string base = argv0.substr(argv0.find_last_of('/') + 1);  // npos + 1 == 0: no slash
  if (!base.empty()) stored_program_name() = base;
}

const std::string& program_name() { return stored_program_name(); }

std::string seed_command(std::string_view command, const std::string& file, std::uint64_t seed,
                         const std::vector<std::string>& sets) {
  std::string line = shell_quote(program_name()) + " " + std::string(command) + " " + shell_quote(file) + " --seed " +
                     std::to_string(seed);
  for (const auto& s : sets) line += " --set " + shell_quote(s);
  return line;
}

std::string replay_command(const std::string& file, std::uint64_t seed, const std::vector<std::string>& sets) {
  return seed_command("replay", file, seed, sets);
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
