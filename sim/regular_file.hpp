// sim/regular_file.hpp — reading a whole input file that must be a regular file of bounded size.
//
// Inputs (scenario files, empirical sample files) are read whole. A path may name a device (/dev/zero never
// ends), a FIFO (opening it waits for a writer forever) or a file too large to hold: read_regular_file opens
// without blocking, looks at what it opened (fstat) before reading a byte, and reads at most `max_bytes`
// (a file that grows while it is read is refused too).
//
// Guarantees: returns the content (without a leading UTF-8 byte order mark: every input's format detection and
// columns see the text as an editor shows it), or nullopt with `failure` saying why (its `kind`, and the OS error for
// Unreadable). Never blocks on a FIFO, reads at most max_bytes plus one buffer, throws nothing.
// Does not: format messages (callers name the file in their own shape), follow a path's folder rules.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace sim {

struct FileReadFailure {
  enum class Kind { Missing, Directory, NotRegular, TooLarge, Unreadable };
  Kind kind = Kind::Unreadable;
  std::uintmax_t size = 0;  // TooLarge: the size found (at least max_bytes + 1)
  std::string os_error;     // Unreadable: the OS's reason
};

std::optional<std::string> read_regular_file(const std::filesystem::path& path, std::uintmax_t max_bytes,
                                             FileReadFailure& failure);

// A regular file read a line at a time, from the start as often as asked, never held whole (inputs that may be
// larger than memory: event logs). Opened as read_regular_file opens: never blocks on a FIFO, refuses what is
// not a regular file. Owns its descriptor (move-only).
class LineFile {
 public:
  static std::optional<LineFile> open(const std::filesystem::path& path, FileReadFailure& failure);
  LineFile(LineFile&& other) noexcept : descriptor_(other.descriptor_), size_(other.size_) { other.descriptor_ = -1; }
  LineFile& operator=(LineFile&&) = delete;
  LineFile(const LineFile&) = delete;
  LineFile& operator=(const LineFile&) = delete;
  ~LineFile();

  // f(number, line) for each line, numbered from 1, without its '\n' (a last line without one counts; a leading
  // UTF-8 byte order mark is dropped), as read_regular_file's text splits. Reads the bytes the file had when
  // opened. False, with `failure`, when a read fails or the file became shorter.
  bool for_each_line(const std::function<void(std::size_t, std::string_view)>& f, FileReadFailure& failure) const;

 private:
  LineFile(int descriptor, std::uintmax_t size) : descriptor_(descriptor), size_(size) {}
  int descriptor_;
  std::uintmax_t size_;
};

// "a directory", "a device, FIFO or socket", "N bytes (more than the M allowed)", "unreadable (REASON)", ...
std::string describe(const FileReadFailure& failure, std::uintmax_t max_bytes);

}  // namespace sim
