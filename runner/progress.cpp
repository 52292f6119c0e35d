#include "runner/progress.hpp"

#include <algorithm>
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

namespace {

// A wall-clock span to two significant digits in the unit it is written in ("2.5s", "40s", "4.2m"; the unit
// changes where format_time's does: 120 s, 120 m, 48 h).
std::string wait_text(double ns) {
  ns = std::max(ns, 0.0);
  const double unit = ns < 120e9 ? 1.0 : ns < 120 * 60e9 ? 60e9 : ns < 48 * 3600e9 ? 3600e9 : 86400e9;
  const double rounded = std::stod(fmt::format("{:.2g}", ns / unit)) * unit;
  return reports::format_time(static_cast<std::int64_t>(rounded));
}

}  // namespace

std::string Progress::line(const std::string& label, std::size_t done, std::size_t total, std::size_t failed,
                           std::chrono::nanoseconds elapsed) {
  std::string estimate = "no estimate yet";
  if (done == total) {
    estimate = "done";
  } else if (done > 0) {
    estimate = fmt::format("about {} left", wait_text(static_cast<double>(elapsed.count()) *
                                                      static_cast<double>(total - done) / static_cast<double>(done)));
  }
  return fmt::format("{}: {}/{} seeds, {} failed, {} elapsed, {}", label, done, total, failed,
                     wait_text(static_cast<double>(elapsed.count())), estimate);
}

void Progress::seed_done(bool failed) {
  if (failed) ++failed_;
  ++done_;
  if (mode_ != ProgressMode::Terminal) return;
  std::lock_guard<std::mutex> lock(mutex_);
  rewrite_terminal_line();
}

void Progress::seed_started(std::string what) {
  std::lock_guard<std::mutex> lock(mutex_);
  running_ = std::move(what);
  if (mode_ == ProgressMode::Terminal) rewrite_terminal_line();
}

void Progress::rewrite_terminal_line() {
  // The label is the command the user just typed: left out, and the line padded so a shorter one leaves no tail.
  std::string text = current_line().substr(label_.size() + 2);
  const std::size_t width = text.size();
  text.resize(std::max(width, terminal_width_), ' ');
  terminal_width_ = width;
  out_ << "\r" << text << std::flush;
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
  if (!note_.empty()) text += ", " + note_;
  if (!running_.empty() && done_.load() != total_) text += ", running " + running_;
  return text;
}

void Progress::run_lines() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, interval_, [this] { return stopping_; })) {
    out_ << current_line() << "\n" << std::flush;
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
    // Where the batch ended, always: a short batch prints only this line.
    out_ << current_line() << "\n" << std::flush;
  }
  if (mode_ == ProgressMode::Terminal && done_.load() > 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    running_.clear();
    rewrite_terminal_line();
    out_ << "\n";
  }
}

}  // namespace runner
