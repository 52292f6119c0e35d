// runner/sweep_results_file.hpp — results.jsonl: one line per finished (cell, seed), written by a locked
// appender and read back against the sweep's identity.
//
// The line format is result_line() / parse_result_line() (runner/sweep.hpp). LineAppender writes lines from any
// thread and fsyncs them in batches; FolderLock keeps a second sweep out of a folder being written;
// read_results() reads a file back, checking every line against the grid.
#pragma once

#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "runner/sweep_grid.hpp"

namespace runner::sweep_detail {

// Appends lines to a file from any thread. A writer thread takes every queued line, writes the batch and fsyncs
// it, so callers never wait on the disk. Lines reach the file in the order they were queued.
class LineAppender {
 public:
  explicit LineAppender(const std::filesystem::path& path);
  LineAppender(const LineAppender&) = delete;
  LineAppender& operator=(const LineAppender&) = delete;
  ~LineAppender() { close(); }

  bool failed() const;
  // "cannot write PATH: OS error" for the first failure.
  std::string error() const;
  void append(std::string line);
  // Writes and fsyncs everything queued, then stops the writer. Returns false if any write failed.
  bool close();

 private:
  void fail(int error);
  void write_loop();

  std::filesystem::path path_;
  int fd_ = -1;
  int error_ = 0;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<std::string> queue_;
  bool closing_ = false;
  bool failed_ = false;
  std::thread writer_;
};

// An exclusive lock on DIR/.lock while a sweep writes into DIR, so two sweeps (a job runner that started a
// shard twice) cannot interleave their lines. The kernel drops it when the process dies, also on kill -9.
class FolderLock {
 public:
  explicit FolderLock(const std::filesystem::path& dir);
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;
  ~FolderLock();
  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

using PairKey = std::pair<std::size_t, std::uint64_t>;  // (cell, seed)

struct Entry {
  std::string text;    // the line as written (no newline)
  std::string origin;  // "FILE:LINE"
  ResultLine line;
};
using ResultMap = std::map<PairKey, Entry>;

enum class Partial { Repair, Ignore };

// Reads a results.jsonl into `results`, checking each line against the sweep (and the shard, if given). A
// truncated last line is cut off the file (Repair) or skipped (Ignore); either way a warning says so. Returns
// false after printing the first error.
bool read_results(const std::filesystem::path& path, Partial partial, const Identity& id,
                  const std::optional<Shard>& shard, const std::vector<std::size_t>& first_pair, ResultMap& results,
                  std::ostream& messages);

}  // namespace runner::sweep_detail
