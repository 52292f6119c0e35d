#include "runner/progress.hpp"

#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>
#include <unistd.h>

#include "reports/summary.hpp"
#include "sim/time.hpp"

namespace runner {

ProgressMode stderr_progress_mode() {
  return isatty(fileno(stderr)) != 0 ? ProgressMode::Terminal : ProgressMode::Lines;
}

std::optional<std::chrono::nanoseconds> progress_interval(std::string& error) {
  const char* text = std::getenv("LETHE_PROGRESS_INTERVAL");
  if (text == nullptr || *text == '\0') return std::chrono::seconds(10);
  std::string problem;
  const auto parsed = sim::parse_duration(text, problem);
  if (!parsed || *parsed <= 0) {
    error = fmt::format("LETHE_PROGRESS_INTERVAL: found \"{}\"; allowed: a positive duration such as \"10s\" or "
                        "\"200ms\"{}", text, problem.empty() ? "" : " (" + problem + ")");
    return std::nullopt;
  }
  return std::chrono::nanoseconds(*parsed);
}

Progress::Progress(std::string label, std::size_t total, std::ostream& out, ProgressMode mode,
                   std::chrono::nanoseconds interval)
    : label_(std::move(label)),
      total_(total),
      out_(out),
      mode_(total == 0 ? ProgressMode::Off : mode),
      interval_(interval),
      started_(std::chrono::steady_clock::now()) {
  if (mode_ == ProgressMode::Lines) thread_ = std::thread([this] { run_lines(); });
}

Progress::~Progress() { finish(); }

std::string Progress::line(const std::string& label, std::size_t done, std::size_t total, std::size_t failed,
                           std::chrono::nanoseconds elapsed) {
  std::string estimate = "no estimate yet";
  if (done == total) {
    estimate = "done";
  } else if (done > 0) {
    const double left = static_cast<double>(elapsed.count()) * static_cast<double>(total - done) /
                        static_cast<double>(done);
    estimate = fmt::format("about {} left", reports::format_time(static_cast<std::int64_t>(left)));
  }
  return fmt::format("{}: {}/{} seeds, {} failed, {} elapsed, {}", label, done, total, failed,
                     reports::format_time(elapsed.count()), estimate);
}

void Progress::seed_done(bool failed) {
  if (failed) ++failed_;
  const std::size_t done = ++done_;
  if (mode_ != ProgressMode::Terminal) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const std::size_t failures = failed_.load();
  const std::string total = total_ == kUnbounded ? "" : fmt::format("/{}", total_);
  out_ << fmt::format("\r{}{} seeds{}{}", done, total, failures == 0 ? "" : fmt::format(", {} failed", failures),
                      note_.empty() ? "" : ", " + note_)
       << std::flush;
}

void Progress::set_note(std::string note) {
  std::lock_guard<std::mutex> lock(mutex_);
  note_ = std::move(note);
}

std::string Progress::current_line() const {
  const auto elapsed = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - started_);
  std::string text = total_ == kUnbounded
                         ? fmt::format("{}: {} seeds, {} failed, {} elapsed", label_, done_.load(), failed_.load(),
                                       reports::format_time(elapsed.count()))
                         : line(label_, done_.load(), total_, failed_.load(), elapsed);
  return note_.empty() ? text : text + ", " + note_;
}

void Progress::run_lines() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, interval_, [this] { return stopping_; })) {
    out_ << current_line() << "\n" << std::flush;
    printed_ = true;
  }
}

void Progress::finish() {
  if (finished_) return;
  finished_ = true;
  if (thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
    // A log that showed progress also shows where it ended.
    if (printed_) out_ << current_line() << "\n" << std::flush;
  }
  if (mode_ == ProgressMode::Terminal && done_.load() > 0) out_ << "\n";
}

}  // namespace runner
