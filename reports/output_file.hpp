// reports/output_file.hpp — every file lethe writes, written to the end and checked.
//
// OutputFile is a std::ostream over a file descriptor that remembers the first failed write (a full disk, a
// quota, an I/O error); finish() flushes, fsyncs when asked and closes, and says what failed: "cannot write
// FILE: OS error". A caller reports that message with exit 2 and prints no verdict. write_file and
// write_file_atomically are the one-call forms for text already in memory.
//
// Atomic: a regular file (or one that does not exist yet) is written to a new temporary file in its folder
// (".NAME.tmp-PID-N"), renamed over it by a finish() that succeeded and removed otherwise, also when the
// OutputFile is destroyed unfinished. A reader, and a failed or interrupted write, sees the old file whole or none,
// never a truncated one. A special file (a pipe, /dev/stdout, a device, a link to one) is written in place.
//
// REQUIRES: one thread per OutputFile. Guarantees: finish() reports any write, flush, fsync or close that
// failed since the open, and a file that failed once is not written further.
// Does not: create folders, retry, or decide exit codes.
#pragma once

#include <filesystem>
#include <functional>
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
  // Opens the temporary file for `path` (a special file such as /dev/stdout: `path` itself).
  explicit OutputFile(std::filesystem::path path);
  ~OutputFile();  // unfinished: closes and removes the temporary file, without reporting

  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  bool is_open() const;
  const std::filesystem::path& path() const { return path_; }
  // REQUIRES: is_open().
  std::ostream& stream() { return stream_; }
  // Flushes, fsyncs for Synced, closes, renames the temporary file over `path`. "" or "cannot write PATH: OS
  // error" (also when the open failed); on an error the temporary file is removed and `path` is untouched.
  std::string finish(Durability durability = Durability::Flushed);

 private:
  class Buffer;
  std::filesystem::path path_;       // as given (messages name it)
  std::filesystem::path target_;     // the file replaced: path_, or what the link path_ points to
  std::filesystem::path temporary_;  // "": written in place
  bool finished_ = false;
  std::unique_ptr<Buffer> buffer_;
  std::ostream stream_;
};

// Writes `text` to `path`, then finish(). "" or the error.
std::string write_file(const std::filesystem::path& path, std::string_view text,
                       Durability durability = Durability::Flushed);
// Writes to `path` what `write` puts on the stream it is given, as it goes (a long log is never held whole in
// memory), then finish(). "" or the error; `write` is not called when the file cannot be opened.
std::string write_file_with(const std::filesystem::path& path, const std::function<void(std::ostream&)>& write,
                            Durability durability = Durability::Flushed);

// write_file, fsynced before the rename (results that must survive a crash of the machine).
std::string write_file_atomically(const std::filesystem::path& path, std::string_view text);

// Writes all of `data` to `fd`, retrying short writes and EINTR. 0, or the errno of the write that failed.
int write_fully(int fd, std::string_view data);

// "cannot write PATH: OS error" for the errno `error`.
std::string write_error(const std::filesystem::path& path, int error);

}  // namespace reports
