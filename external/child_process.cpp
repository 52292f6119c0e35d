#include "external/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <map>

extern char** environ;

namespace lethe::external {

namespace {

constexpr std::size_t kStderrTail = 4096;
constexpr std::size_t kMaxChildren = 1024;

// The live children's process groups (0 = free slot): read by the signal handler, so atomics only.
std::array<std::atomic<int>, kMaxChildren> g_children{};

void list_child(int pid) {
  for (auto& slot : g_children) {
    int expected = 0;
    if (slot.compare_exchange_strong(expected, pid)) return;
  }
  // Full: the child still dies with lethe (PR_SET_PDEATHSIG); only its own children might outlive a signal.
}

void unlist_child(int pid) {
  for (auto& slot : g_children) {
    int expected = pid;
    if (slot.compare_exchange_strong(expected, 0)) return;
  }
}

void on_fatal_signal(int signal_number) {
  kill_all_children();
  std::signal(signal_number, SIG_DFL);
  std::raise(signal_number);
}

// argv[0] as execve wants it: a path containing '/' as is, a bare name searched in PATH (before fork: the child
// may only call async-signal-safe functions).
std::string resolve_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const std::size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string dir = end > start ? dirs.substr(start, end - start) : ".";
    const std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  throw ChildProcessError(fmt::format("cannot start {}: not found in PATH", name));
}

// lethe's environment with `overrides` ("NAME=VALUE") replacing or adding entries.
std::vector<std::string> child_environment(const std::vector<std::string>& overrides) {
  std::map<std::string, std::string> entries;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string text = *entry;
    entries[text.substr(0, text.find('='))] = text;
  }
  for (const std::string& text : overrides) entries[text.substr(0, text.find('='))] = text;
  std::vector<std::string> result;
  for (const auto& [name, text] : entries) result.push_back(text);
  return result;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> result;
  for (std::string& text : strings) result.push_back(text.data());
  result.push_back(nullptr);
  return result;
}

void make_pipe(int fds[2]) {
  if (::pipe2(fds, O_CLOEXEC) != 0) throw ChildProcessError(fmt::format("pipe: {}", std::strerror(errno)));
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// In the child, between fork and exec: async-signal-safe calls only. Reports a failure's errno on `report`.
[[noreturn]] void exec_child(int parent, const int in[2], const int out[2], const int err[2], int report,
                             const char* cwd, const char* program, char* const* argv, char* const* envp) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);  // the parent died before prctl
  ::dup2(in[0], 0);
  ::dup2(out[1], 1);
  ::dup2(err[1], 2);
  ::signal(SIGPIPE, SIG_DFL);
  if (cwd[0] == '\0' || ::chdir(cwd) == 0) ::execve(program, argv, envp);
  const int error = errno;
  [[maybe_unused]] const auto written = ::write(report, &error, sizeof error);
  ::_exit(127);
}

}  // namespace

ChildProcess::ChildProcess(const ChildSpec& spec) {
  if (spec.argv.empty()) throw ChildProcessError("an empty command");
  std::string program = resolve_program(spec.argv.front());
  std::vector<std::string> argv_strings = spec.argv;
  std::vector<std::string> env_strings = child_environment(spec.env);
  std::vector<char*> argv = pointers(argv_strings);
  std::vector<char*> envp = pointers(env_strings);
  int in[2], out[2], err[2], report[2];
  make_pipe(in);
  make_pipe(out);
  make_pipe(err);
  make_pipe(report);
  const int parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    exec_child(parent, in, out, err, report[1], spec.cwd.c_str(), program.c_str(), argv.data(), envp.data());
  }
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  ::close(report[1]);
  if (pid < 0) {
    ::close(in[1]);
    ::close(out[0]);
    ::close(err[0]);
    ::close(report[0]);
    throw ChildProcessError(fmt::format("fork: {}", std::strerror(errno)));
  }
  pid_ = pid;
  ::setpgid(pid_, pid_);  // also here: no race with a kill before the child ran setpgid
  list_child(pid_);
  stdin_fd_ = in[1];
  stdout_fd_ = out[0];
  stderr_fd_ = err[0];
  ::fcntl(stderr_fd_, F_SETFL, O_NONBLOCK);
  int exec_errno = 0;
  const auto got = ::read(report[0], &exec_errno, sizeof exec_errno);
  ::close(report[0]);
  if (got == static_cast<ssize_t>(sizeof exec_errno)) {
    kill();
    throw ChildProcessError(fmt::format("cannot start {}{}: {}", program,
                                        spec.cwd.empty() ? "" : fmt::format(" in {}", spec.cwd),
                                        std::strerror(exec_errno)));
  }
}

ChildProcess::~ChildProcess() { kill(); }

void ChildProcess::kill() {
  if (pid_ > 0) {
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    reap(true);
    unlist_child(pid_);
  }
  close_fd(stdin_fd_);
  close_fd(stdout_fd_);
  close_fd(stderr_fd_);
  pid_ = -1;
}

bool ChildProcess::reap(bool wait) {
  if (wait_status_.has_value()) return true;
  if (pid_ <= 0) return false;
  int status = 0;
  pid_t got = 0;
  do {
    got = ::waitpid(pid_, &status, wait ? 0 : WNOHANG);
  } while (got < 0 && errno == EINTR);
  if (got == pid_) wait_status_ = status;
  return wait_status_.has_value();
}

std::string ChildProcess::status() {
  if (!reap(false)) return "running";
  const int status = *wait_status_;
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return fmt::format("killed by signal {}", WTERMSIG(status));
  return "stopped";
}

void ChildProcess::write_line(const std::string& line) {
  std::string data = line;
  data.push_back('\n');
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(stdin_fd_, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw ChildProcessError(fmt::format("cannot write to its stdin: {}", std::strerror(errno)));
    done += static_cast<std::size_t>(n);
  }
}

void ChildProcess::drain_stderr() {
  if (stderr_fd_ < 0) return;
  for (;;) {
    const ssize_t n = ::read(stderr_fd_, chunk_.data(), chunk_.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) close_fd(stderr_fd_);
      return;
    }
    err_tail_.append(chunk_.data(), static_cast<std::size_t>(n));
    if (err_tail_.size() > kStderrTail) err_tail_.erase(0, err_tail_.size() - kStderrTail);
  }
}

std::string ChildProcess::stderr_tail() {
  drain_stderr();
  return err_tail_;
}

std::optional<std::string> ChildProcess::read_line(std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline = Clock::now() + timeout;
  for (;;) {
    if (const std::size_t end = out_buffer_.find('\n'); end != std::string::npos) {
      std::string line = out_buffer_.substr(0, end);
      out_buffer_.erase(0, end + 1);
      return line;
    }
    if (stdout_fd_ < 0) throw ChildProcessError("its stdout is closed");
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() < 0) return std::nullopt;
    std::array<pollfd, 2> fds{pollfd{stdout_fd_, POLLIN, 0}, pollfd{stderr_fd_, POLLIN, 0}};
    const int ready = ::poll(fds.data(), stderr_fd_ >= 0 ? 2 : 1, static_cast<int>(left.count()) + 1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) throw ChildProcessError(fmt::format("poll: {}", std::strerror(errno)));
    if (stderr_fd_ >= 0 && fds[1].revents != 0) drain_stderr();
    if (fds[0].revents == 0) continue;
    const ssize_t n = ::read(stdout_fd_, chunk_.data(), chunk_.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close_fd(stdout_fd_);
      drain_stderr();
      throw ChildProcessError("it closed its stdout");
    }
    out_buffer_.append(chunk_.data(), static_cast<std::size_t>(n));
  }
}

WallBudget::WallBudget(std::chrono::milliseconds budget) : deadline_(std::chrono::steady_clock::now() + budget) {}

std::chrono::milliseconds WallBudget::left() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - std::chrono::steady_clock::now());
}

void kill_all_children() {
  for (auto& slot : g_children) {
    const int pid = slot.load();
    if (pid > 0) ::kill(-pid, SIGKILL);
  }
}

void install_child_reaper_signal_handlers() {
  static std::atomic<bool> installed{false};
  if (installed.exchange(true)) return;
  std::signal(SIGPIPE, SIG_IGN);
  struct sigaction action {};
  action.sa_handler = on_fatal_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
}

}  // namespace lethe::external
