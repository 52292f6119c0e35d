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
#include <optional>
#include <string>

namespace sim {

struct FileReadFailure {
  enum class Kind { Missing, Directory, NotRegular, TooLarge, Unreadable };
  Kind kind = Kind::Unreadable;
  std::uintmax_t size = 0;  // TooLarge: the size found (at least max_bytes + 1)
  std::string os_error;     // Unreadable: the OS's reason
};

std::optional<std::string> read_regular_file(const std::filesystem::path& path, std::uintmax_t max_bytes,
                                             FileReadFailure& failure);

// "a directory", "a device, FIFO or socket", "N bytes (more than the M allowed)", "unreadable (REASON)", ...
std::string describe(const FileReadFailure& failure, std::uintmax_t max_bytes);

}  // namespace sim
