// runner/progress.hpp — how far a long batch of seeds has come, for whoever watches it (a person at a terminal,
// or a CI log).
//
// On a terminal, one line rewritten in place after every seed ("\r120/600 seeds, 2 failed"). Without a terminal
// (CI), a new line every interval from a thread of its own, even while one seed runs for minutes:
//   lethe suite: 120/600 seeds, 2 failed, 10.0s elapsed, about 40.0s left
// and once more when the batch ends if any line was printed. The interval is 10s unless LETHE_PROGRESS_INTERVAL
// holds a duration ("200ms"), which tests use.
// Wall-clock UI only: it reads the real clock to print, and nothing it does reaches a simulation.
//
// REQUIRES: seed_done() may be called from any thread; finish() (or the destructor) from the constructing one.
// Does not: print anything when disabled, or decide anything from the time it measures.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <thread>

namespace runner {

enum class ProgressMode { Off, Terminal, Lines };

// Terminal when standard error is one, Lines otherwise.
ProgressMode stderr_progress_mode();

// LETHE_PROGRESS_INTERVAL as a positive duration, 10s when unset; nullopt after writing the reason to `error`.
std::optional<std::chrono::nanoseconds> progress_interval(std::string& error);

class Progress {
 public:
  Progress(std::string label, std::size_t total, std::ostream& out, ProgressMode mode,
           std::chrono::nanoseconds interval);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // A total of kUnbounded prints "N seeds" with no total or estimate (a batch that ends on a deadline).
  static constexpr std::size_t kUnbounded = static_cast<std::size_t>(-1);

  void seed_done(bool failed);
  // Text appended to every later line ("coverage 12/30 keys"); from the constructing thread.
  void set_note(std::string note);
  // Ends the terminal line and stops the thread; idempotent.
  void finish();

  // The line printed without a terminal ("lethe suite: 3/10 seeds, 1 failed, 2.00s elapsed, about 4.67s left").
  static std::string line(const std::string& label, std::size_t done, std::size_t total, std::size_t failed,
                          std::chrono::nanoseconds elapsed);

 private:
  void run_lines();
  std::string current_line() const;  // REQUIRES: mutex_ held

  std::string label_;
  std::size_t total_;
  std::ostream& out_;
  ProgressMode mode_;
  std::chrono::nanoseconds interval_;
  std::chrono::steady_clock::time_point started_;
  std::atomic<std::size_t> done_{0};
  std::atomic<std::size_t> failed_{0};
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool finished_ = false;
  bool printed_ = false;  // a line was written (guarded by mutex_ until the thread is joined)
  std::string note_;      // guarded by mutex_
  std::thread thread_;
};

}  // namespace runner
