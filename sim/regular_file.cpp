#include "sim/regular_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
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

std::optional<LineFile> LineFile::open(const std::filesystem::path& path, FileReadFailure& failure) {
  using Kind = FileReadFailure::Kind;
  Descriptor file(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  const auto refuse = [&failure](Kind kind, int error_number = 0) {
    failed(failure, kind, error_number);
    return std::optional<LineFile>();
  };
  if (file.get() < 0) return refuse(errno == ENOENT ? Kind::Missing : Kind::Unreadable, errno);
  struct stat status {};
  if (::fstat(file.get(), &status) != 0) return refuse(Kind::Unreadable, errno);
  if (S_ISDIR(status.st_mode)) return refuse(Kind::Directory);
  if (!S_ISREG(status.st_mode)) return refuse(Kind::NotRegular);
  const int descriptor = ::dup(file.get());
  if (descriptor < 0) return refuse(Kind::Unreadable, errno);
  return LineFile(descriptor, static_cast<std::uintmax_t>(status.st_size));
}

LineFile::~LineFile() {
  if (descriptor_ >= 0) ::close(descriptor_);
}

bool LineFile::for_each_line(const std::function<void(std::size_t, std::string_view)>& f,
                             FileReadFailure& failure) const {
  constexpr std::size_t kBlock = 1 << 20;
  std::string block(kBlock, '\0');
  std::string carried;  // the start of a line that runs past the block
  std::uintmax_t offset = 0;
  std::size_t number = 0;
  while (offset < size_) {
    const std::size_t want = static_cast<std::size_t>(std::min<std::uintmax_t>(kBlock, size_ - offset));
    const ssize_t got = ::pread(descriptor_, block.data(), want, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      failed(failure, FileReadFailure::Kind::Unreadable, errno);
      return false;
    }
    if (got == 0) {
      failure.kind = FileReadFailure::Kind::Unreadable;
      failure.os_error = "it became shorter while it was read";
      return false;
    }
    std::string_view text(block.data(), static_cast<std::size_t>(got));
    if (offset == 0 && text.rfind("\xEF\xBB\xBF", 0) == 0) text.remove_prefix(3);
    offset += static_cast<std::uintmax_t>(got);
    while (!text.empty()) {
      const std::size_t end = text.find('\n');
      if (end == std::string_view::npos) {
        carried.append(text);
        break;
      }
      if (carried.empty()) {
        f(++number, text.substr(0, end));
      } else {
        carried.append(text.substr(0, end));
        f(++number, carried);
        carried.clear();
      }
      text.remove_prefix(end + 1);
    }
  }
  if (!carried.empty()) f(++number, carried);
  return true;
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
