#include "runner/command_line.hpp"

#include <fstream>
#include <sstream>

namespace runner {

std::string shell_quote(const std::string& word) {
  if (!word.empty() &&
      word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,%+@") ==
          std::string::npos) {
    return word;
  }
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
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
