#include "reports/output_file.hpp"

#include <sys/stat.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <fcntl.h>
#include <fmt/format.h>
#include <streambuf>
#include <system_error>
#include <unistd.h>
#include <vector>

namespace reports {

namespace fs = std::filesystem;

int write_fully(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t written = ::write(fd, data.data(), data.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    data.remove_prefix(static_cast<std::size_t>(written));
  }
  return 0;
}

std::string write_error(const fs::path& path, int error) {
  return fmt::format("cannot write {}: {}", path.string(), std::error_code(error, std::generic_category()).message());
}

// A write buffer over the descriptor. After the first failure it takes nothing more (the stream goes bad).
class OutputFile::Buffer final : public std::streambuf {
 public:
  // Opens `path` itself when it is a special file, otherwise a new temporary file beside it (`temporary` says
  // which).
  Buffer(const fs::path& path, const fs::path& temporary) : bytes_(kBytes) {
    if (temporary.empty()) {
      fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    } else {
      fd_ = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      struct stat old {};
      if (fd_ >= 0 && ::stat(path.c_str(), &old) == 0) ::fchmod(fd_, old.st_mode & 07777);  // keep its mode
    }
    if (fd_ < 0) error_ = errno;
    setp(bytes_.data(), bytes_.data() + bytes_.size());
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() override {
    if (fd_ >= 0) ::close(fd_);
  }

  bool is_open() const { return fd_ >= 0; }

  // Flushes, fsyncs if asked, closes; the first errno of the file's life, or 0.
  int finish(Durability durability) {
    if (fd_ < 0) return error_;
    drain();
    // A special file (a pipe, /dev/stdout) cannot be synced and need not be.
    if (error_ == 0 && durability == Durability::Synced && ::fsync(fd_) != 0 && errno != EINVAL) error_ = errno;
    if (::close(fd_) != 0 && error_ == 0) error_ = errno;
    fd_ = -1;
    return error_;
  }

 protected:
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    *pptr() = traits_type::to_char_type(c);
    pbump(1);
    return c;
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  static constexpr std::size_t kBytes = 64 * 1024;
  bool drain() {
    if (error_ != 0 || fd_ < 0) return false;
    error_ = write_fully(fd_, std::string_view(pbase(), static_cast<std::size_t>(pptr() - pbase())));
    setp(bytes_.data(), bytes_.data() + bytes_.size());
    return error_ == 0;
  }

  std::vector<char> bytes_;
  int fd_ = -1;
  int error_ = 0;
};

namespace {

// The file an OutputFile for `path` replaces: `path`, or the file a link at `path` points to (the link stays).
fs::path target_of(const fs::path& path) {
  std::error_code code;
  if (!fs::is_symlink(fs::symlink_status(path, code))) return path;
  const fs::path target = fs::weakly_canonical(path, code);
  return code ? path : target;
}

// Where it writes before its finish(): "" for a special file (a pipe, /dev/stdout, a device), written in place;
// otherwise a new file in the target's folder.
fs::path temporary_for(const fs::path& target) {
  static std::atomic<std::uint64_t> counter{0};
  std::error_code code;
  const fs::file_status status = fs::status(target, code);
  if (!code && fs::exists(status) && !fs::is_regular_file(status)) return {};
  return target.parent_path() / fmt::format(".{}.tmp-{}-{}", target.filename().string(), ::getpid(), ++counter);
}

}  // namespace

OutputFile::OutputFile(fs::path path)
    : path_(std::move(path)),
      target_(target_of(path_)),
      temporary_(temporary_for(target_)),
      buffer_(std::make_unique<Buffer>(path_, temporary_)),
      stream_(buffer_.get()) {}

OutputFile::~OutputFile() {
  if (!finished_ && !temporary_.empty()) {
    buffer_.reset();
    ::unlink(temporary_.c_str());  // abandoned: the old file stays
  }
}

bool OutputFile::is_open() const { return buffer_->is_open(); }

std::string OutputFile::finish(Durability durability) {
  stream_.flush();
  finished_ = true;
  int error = buffer_->finish(durability);
  if (temporary_.empty()) return error == 0 ? std::string() : write_error(path_, error);
  if (error == 0 && ::rename(temporary_.c_str(), target_.c_str()) != 0) error = errno;
  if (error != 0) ::unlink(temporary_.c_str());  // a failed write leaves the old file, or none
  return error == 0 ? std::string() : write_error(path_, error);
}

std::string write_file(const fs::path& path, std::string_view text, Durability durability) {
  OutputFile file(path);
  if (file.is_open()) file.stream().write(text.data(), static_cast<std::streamsize>(text.size()));
  return file.finish(durability);
}

std::string write_file_with(const fs::path& path, const std::function<void(std::ostream&)>& write,
                            Durability durability) {
  OutputFile file(path);
  if (file.is_open()) write(file.stream());
  return file.finish(durability);
}

std::string write_file_atomically(const fs::path& path, std::string_view text) {
  return write_file(path, text, Durability::Synced);
}

}  // namespace reports
