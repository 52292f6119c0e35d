#include "sim/regular_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace sim {
namespace {

// Closes the descriptor on every path out.
class Descriptor {
 public:
  explicit Descriptor(int descriptor) : descriptor_(descriptor) {}
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  ~Descriptor() {
    if (descriptor_ >= 0) ::close(descriptor_);
  }
  int get() const { return descriptor_; }

 private:
  int descriptor_;
};

std::optional<std::string> failed(FileReadFailure& failure, FileReadFailure::Kind kind, int error_number = 0) {
  failure.kind = kind;
  if (error_number != 0) failure.os_error = std::strerror(error_number);
  return std::nullopt;
}

}  // namespace

std::optional<std::string> read_regular_file(const std::filesystem::path& path, std::uintmax_t max_bytes,
                                             FileReadFailure& failure) {
  using Kind = FileReadFailure::Kind;
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  Descriptor file(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (file.get() < 0) return failed(failure, errno == ENOENT ? Kind::Missing : Kind::Unreadable, errno);
  struct stat status {};
  if (::fstat(file.get(), &status) != 0) return failed(failure, Kind::Unreadable, errno);
  if (S_ISDIR(status.st_mode)) return failed(failure, Kind::Directory);
  if (!S_ISREG(status.st_mode)) return failed(failure, Kind::NotRegular);
  if (static_cast<std::uintmax_t>(status.st_size) > max_bytes) {
    failure.size = static_cast<std::uintmax_t>(status.st_size);
    return failed(failure, Kind::TooLarge);
  }
  std::string content;
  char buffer[65536];
  while (true) {
    ssize_t got = ::read(file.get(), buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return failed(failure, Kind::Unreadable, errno);
    if (got == 0) break;
    content.append(buffer, static_cast<std::size_t>(got));
    if (content.size() > max_bytes) {  // grew while being read
      failure.size = content.size();
      return failed(failure, Kind::TooLarge);
    }
  }
  // A UTF-8 byte order mark (editors and spreadsheet exports write one) is not the file's first character.
  if (content.rfind("\xEF\xBB\xBF", 0) == 0) content.erase(0, 3);
  return content;
}

std::string describe(const FileReadFailure& failure, std::uintmax_t max_bytes) {
  using Kind = FileReadFailure::Kind;
  switch (failure.kind) {
    case Kind::Missing: return "no such file";
    case Kind::Directory: return "a directory";
    case Kind::NotRegular: return "a device, FIFO or socket, not a regular file";
    case Kind::TooLarge:
      return "a file of " + std::to_string(failure.size) + " bytes or more, over the limit of " +
             std::to_string(max_bytes) + " bytes";
    case Kind::Unreadable: break;
  }
  return "an unreadable file (" + failure.os_error + ")";
}

}  // namespace sim
