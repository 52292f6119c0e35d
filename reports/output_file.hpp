// reports/output_file.hpp — every file lethe writes, written to the end and checked.
//
// OutputFile is a std::ostream over a file descriptor that remembers the first failed write (a full disk, a
// quota, an I/O error); finish() flushes, fsyncs when asked and closes, and says what failed: "cannot write
// FILE: OS error". A caller reports that message with exit 2 and prints no verdict. write_file and
// write_file_atomically are the one-call forms for text already in memory.
//
// REQUIRES: one thread per OutputFile. Guarantees: finish() reports any write, flush, fsync or close that
// failed since the open, and a file that failed once is not written further.
// Does not: create folders, retry, or decide exit codes.
#pragma once

#include <filesystem>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>

namespace reports {

// Flushed: written and closed (reports, traces). Synced: also fsynced, for results that must survive a crash
// of the machine (a sweep's files).
enum class Durability { Flushed, Synced };

class OutputFile {
 public:
  // Creates or truncates `path` (a special file such as /dev/stdout is written as it is).
  explicit OutputFile(std::filesystem::path path);
  ~OutputFile();  // closes without reporting: call finish() to know
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  bool is_open() const;
  const std::filesystem::path& path() const { return path_; }
  // REQUIRES: is_open().
  std::ostream& stream() { return stream_; }
  // Flushes, fsyncs for Synced, closes. "" or "cannot write PATH: OS error" (also when the open failed).
  std::string finish(Durability durability = Durability::Flushed);

 private:
  class Buffer;
  std::filesystem::path path_;
  std::unique_ptr<Buffer> buffer_;
  std::ostream stream_;
};

// Writes `text` to `path`, then finish(). "" or the error.
std::string write_file(const std::filesystem::path& path, std::string_view text,
                       Durability durability = Durability::Flushed);

// Writes `text` to PATH.tmp, fsyncs it and renames it over `path`: a reader sees the old file or the new one.
std::string write_file_atomically(const std::filesystem::path& path, std::string_view text);

// Writes all of `data` to `fd`, retrying short writes and EINTR. 0, or the errno of the write that failed.
int write_fully(int fd, std::string_view data);

// "cannot write PATH: OS error" for the errno `error`.
std::string write_error(const std::filesystem::path& path, int error);

}  // namespace reports
