// runner/progress.hpp — how far a long batch of seeds has come, for whoever watches it (a person at a terminal,
// or a CI log).
//
// On a terminal, one line rewritten in place after every seed and every start ("\r120/600 seeds, 2 failed, 10s
// elapsed, about 40s left, running gc-pause-takeover seed 3"). Without a terminal (CI), a new line every interval
// from a thread of its own, even while one seed runs for minutes:
//   lethe suite: 120/600 seeds, 2 failed, 10s elapsed, about 40s left, running gc-pause-takeover seed 3
// and always once more when the batch ends ("..., 12s elapsed, done"). The interval is 10s unless LETHE_PROGRESS_INTERVAL
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
  // What started last ("gc-pause-takeover seed 3"), shown as "running ..." until the batch ends; any thread.
  void seed_started(std::string what);
  // Text appended to every later line ("coverage 12/30 keys"); from the constructing thread.
  void set_note(std::string note);
  // Ends the terminal line and stops the thread; idempotent.
  void finish();

  // The line printed without a terminal ("lethe suite: 3/10 seeds, 1 failed, 2s elapsed, about 4.7s left"): times
  // to two significant digits, a person's precision for a wait.
  static std::string line(const std::string& label, std::size_t done, std::size_t total, std::size_t failed,
                          std::chrono::nanoseconds elapsed);

 private:
  void run_lines();
  std::string current_line() const;  // REQUIRES: mutex_ held
  void rewrite_terminal_line();       // REQUIRES: mutex_ held

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
  std::string note_;      // guarded by mutex_
  std::string running_;   // guarded by mutex_
  std::size_t terminal_width_ = 0;  // the last terminal line's length (guarded by mutex_)
  std::thread thread_;
};

}  // namespace runner
