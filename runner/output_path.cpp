#include "runner/output_path.hpp"

#include <cerrno>
#include <fcntl.h>
#include <fmt/format.h>
#include <system_error>
#include <unistd.h>

namespace fs = std::filesystem;

namespace runner {

std::string prepare_output_path(const fs::path& path, std::string_view flag) {
  if (path.empty()) return "";
  std::error_code ec;
  if (fs::is_directory(path, ec)) return fmt::format("{} {}: is a folder; allowed: a file path", flag, path.string());
  const fs::path folder = path.parent_path();
  if (!folder.empty()) {
    fs::create_directories(folder, ec);
    if (ec || !fs::is_directory(folder, ec)) {
      return fmt::format("{} {}: cannot create the folder {}: {}", flag, path.string(), folder.string(),
                         ec ? ec.message() : std::string("a file of that name is in the way"));
    }
  }
  const bool existed = fs::exists(path, ec);
  // O_APPEND and no O_TRUNC: the check leaves an existing file's content alone.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int error = errno;
    return fmt::format("{} {}: cannot write: {}", flag, path.string(),
                       std::error_code(error, std::generic_category()).message());
  }
  ::close(fd);
  if (!existed) fs::remove(path, ec);
  return "";
}

}  // namespace runner
