#include "external/child_process.hpp"

#include "core/utf8.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
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

// What the shepherd and the node need, prepared before fork (nothing is allocated after it).
struct ChildPlumbing {
  int in = -1;      // the node's stdin (read end)
  int out = -1;     // its stdout (write end)
  int err = -1;     // its stderr (write end)
  int report = -1;  // close-on-exec: the Report records (the node's pid, an exec failure's errno)
  const char* cwd = "";
  const char* program = "";
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  int inherited = -1;  // >= 0: kept open across exec (ChildSpec::inherited_fd)
};

// ---------------------------------------------------------------- the shepherd
//
// Every node runs below a shepherd: a fork of lethe that never execs (so async-signal-safe calls only, and no
// allocation: lethe may have had threads when it forked). The shepherd is a child subreaper, so every descendant of
// the node stays in its tree even after its parent exits (a daemon that forked twice and called setsid() included).
// It ends them all when the node exits, when lethe asks (SIGTERM) and when lethe dies (PR_SET_PDEATHSIG = SIGTERM,
// kill -9 of lethe included), then exits with the node's own status.

// A linux_dirent64 as getdents64 writes it.
struct DirEntry {
  std::uint64_t inode;
  std::int64_t offset;
  unsigned short length;
  unsigned char type;
  char name[1];
};

constexpr std::size_t kMaxPids = std::size_t{1} << 22;  // Linux's largest pid_max
constexpr std::size_t kMaxProcesses = std::size_t{1} << 20;

// The shepherd's scratch memory, mapped once (never touched pages cost nothing).
struct Scratch {
  std::uint8_t* below = nullptr;  // bitmap by pid: a descendant of the shepherd (or the shepherd)
  int* pids = nullptr;            // every process /proc lists
  int* parents = nullptr;
  char* live = nullptr;           // not a zombie
  char* dirents = nullptr;        // getdents64 buffer
};
constexpr std::size_t kDirentBytes = 65536;

bool map_scratch(Scratch& s) {
  const std::size_t bytes = kMaxPids / 8 + 2 * kMaxProcesses * sizeof(int) + kMaxProcesses + kDirentBytes;
  void* memory = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (memory == MAP_FAILED) return false;
  auto* base = static_cast<char*>(memory);
  s.below = reinterpret_cast<std::uint8_t*>(base);
  s.pids = reinterpret_cast<int*>(base + kMaxPids / 8);
  s.parents = s.pids + kMaxProcesses;
  s.live = reinterpret_cast<char*>(s.parents + kMaxProcesses);
  s.dirents = s.live + kMaxProcesses;
  return true;
}

bool parse_pid(const char* text, int& pid) {
  pid = 0;
  if (*text == '\0') return false;
  for (; *text != '\0'; ++text) {
    if (*text < '0' || *text > '9' || pid > 100'000'000) return false;
    pid = pid * 10 + (*text - '0');
  }
  return pid > 0 && static_cast<std::size_t>(pid) < kMaxPids;
}

// /proc/PID/stat's state and parent ("PID (comm) S PPID ..."; comm may hold ')' and spaces).
bool read_stat(int pid, char& state, int& parent) {
  char path[40] = "/proc/";
  char digits[16];
  int length = 0;
  for (int rest = pid; rest > 0; rest /= 10) digits[length++] = static_cast<char>('0' + rest % 10);
  int at = 6;
  while (length > 0) path[at++] = digits[--length];
  const char tail[] = "/stat";
  for (char c : tail) path[at++] = c;
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char text[1024];
  const ssize_t got = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  if (got <= 0) return false;
  text[got] = '\0';
  const char* close_paren = nullptr;
  for (const char* c = text; *c != '\0'; ++c) {
    if (*c == ')') close_paren = c;
  }
  if (close_paren == nullptr || close_paren[1] != ' ' || close_paren[2] == '\0' || close_paren[3] != ' ') return false;
  state = close_paren[2];
  parent = 0;
  for (const char* c = close_paren + 4; *c >= '0' && *c <= '9'; ++c) parent = parent * 10 + (*c - '0');
  return true;
}

// Lists every process into the scratch arrays; returns how many (-1: /proc cannot be read).
long list_processes(Scratch& s) {
  const int dir = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return -1;
  long count = 0;
  for (;;) {
    const long got = ::syscall(SYS_getdents64, dir, s.dirents, kDirentBytes);
    if (got <= 0) break;
    for (long at = 0; at < got;) {
      const auto* entry = reinterpret_cast<const DirEntry*>(s.dirents + at);
      at += entry->length;
      int pid = 0;
      char state = 0;
      int parent = 0;
      if (!parse_pid(entry->name, pid) || !read_stat(pid, state, parent)) continue;
      if (static_cast<std::size_t>(count) == kMaxProcesses) break;
      s.pids[count] = pid;
      s.parents[count] = parent;
      s.live[count] = state != 'Z' ? 1 : 0;
      ++count;
    }
  }
  ::close(dir);
  return count;
}

bool is_below(const Scratch& s, int pid) { return (s.below[pid / 8] >> (pid % 8) & 1) != 0; }
void mark_below(Scratch& s, int pid) { s.below[pid / 8] = static_cast<std::uint8_t>(s.below[pid / 8] | 1 << (pid % 8)); }

// SIGKILLs every live descendant of the shepherd /proc shows; returns how many (-1: /proc cannot be read).
long kill_descendants(Scratch& s) {
  const long count = list_processes(s);
  if (count < 0) return -1;
  for (long i = 0; i < count; ++i) s.below[s.pids[i] / 8] = 0;
  mark_below(s, ::getpid());
  for (bool grew = true; grew;) {  // parent links point anywhere in the list: repeat until nothing is added
    grew = false;
    for (long i = 0; i < count; ++i) {
      if (!is_below(s, s.pids[i]) && s.parents[i] > 0 && is_below(s, s.parents[i])) {
        mark_below(s, s.pids[i]);
        grew = true;
      }
    }
  }
  long killed = 0;
  for (long i = 0; i < count; ++i) {
    if (s.pids[i] == ::getpid() || !is_below(s, s.pids[i]) || s.live[i] == 0) continue;
    ::kill(s.pids[i], SIGKILL);
    ++killed;
  }
  return killed;
}

// Reaps every child that ended; `node`'s status goes to `status`. Returns false when no child is left.
bool reap_children(int node, int& status, bool& node_ended) {
  for (;;) {
    int got_status = 0;
    const pid_t got = ::waitpid(-1, &got_status, WNOHANG);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return false;
    if (got == 0) return true;
    if (got == node) {
      status = got_status;
      node_ended = true;
    }
  }
}

// Kills and reaps every descendant (the ones that fork meanwhile come back to the shepherd: it is their subreaper).
void end_descendants(Scratch& s, int node, int& status, bool& node_ended) {
  for (int round = 0;; ++round) {
    const long killed = kill_descendants(s);
    if (killed < 0) ::kill(node, SIGKILL);  // no /proc: the node at least
    const bool children_left = reap_children(node, status, node_ended);
    if (!children_left || (killed < 0 && round > 1000)) return;
    const timespec pause{0, 1'000'000};
    ::nanosleep(&pause, nullptr);
  }
}

[[noreturn]] void exit_like(int status) {
  if (WIFSIGNALED(status)) {
    const int number = WTERMSIG(status);
    const rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    ::signal(number, SIG_DFL);
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, number);
    ::sigprocmask(SIG_UNBLOCK, &only, nullptr);
    ::kill(::getpid(), number);
    ::_exit(128 + number);
  }
  ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 127);
}

// Closes every descriptor from 3 on but the `keep` ones (the shepherd holds nothing of lethe's: files, sockets,
// other nodes' pipes).
void close_all_but(int keep[], int count) {
  std::sort(keep, keep + count);
  unsigned low = 3;
  for (int i = 0; i <= count; ++i) {
    const unsigned high = i < count ? static_cast<unsigned>(keep[i]) : ~0U;
    if (high > low) {
      if (::syscall(SYS_close_range, low, high - 1, 0) != 0) {
        for (unsigned fd = low; fd < high && fd < 65536; ++fd) ::close(static_cast<int>(fd));
      }
    }
    if (i < count) low = std::max(low, static_cast<unsigned>(keep[i]) + 1);
  }
}

// What the shepherd and the node tell lethe on the report pipe, one atomic write each, before exec closes it.
struct Report {
  enum Kind : int { node_pid = 1, exec_errno = 2 };
  int kind;
  int value;
};

void report(int fd, Report::Kind kind, int value) {
  const Report record{kind, value};
  [[maybe_unused]] const auto written = ::write(fd, &record, sizeof record);
}

// The node itself, between fork and exec. Reports a failure's errno on `report`.
[[noreturn]] void exec_node(int shepherd, const ChildPlumbing& p) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != shepherd) ::_exit(127);
  ::dup2(p.in, 0);
  ::dup2(p.out, 1);
  ::dup2(p.err, 2);
  ::signal(SIGPIPE, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // lethe's descriptors are close-on-exec; this one the node keeps (its clock's page, say).
  if (p.inherited >= 0) ::fcntl(p.inherited, F_SETFD, 0);
  if (p.cwd[0] == '\0' || ::chdir(p.cwd) == 0) ::execve(p.program, p.argv, p.envp);
  report(p.report, Report::exec_errno, errno);
  ::_exit(127);
}

// The shepherd's life: start the node, then wait for it to end or for lethe to end it (or to die).
[[noreturn]] void run_shepherd(int lethe, const ChildPlumbing& p) {
  ::setpgid(0, 0);
  for (const int number : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGPIPE}) ::signal(number, SIG_DFL);
  sigset_t waited;
  sigemptyset(&waited);
  for (const int number : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&waited, number);
  ::sigprocmask(SIG_SETMASK, &waited, nullptr);
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != lethe) ::_exit(127);  // lethe died before prctl
  Scratch scratch;
  if (!map_scratch(scratch)) {
    report(p.report, Report::exec_errno, ENOMEM);
    ::_exit(127);
  }
  int keep[] = {p.in, p.out, p.err, p.report, p.inherited};
  close_all_but(keep, p.inherited >= 0 ? 5 : 4);
  const int shepherd = ::getpid();
  const pid_t node = ::fork();
  if (node == 0) exec_node(shepherd, p);
  if (node < 0) {
    report(p.report, Report::exec_errno, errno);
    ::_exit(127);
  }
  report(p.report, Report::node_pid, node);
  for (const int fd : {p.in, p.out, p.err, p.report, p.inherited}) {
    if (fd >= 0) ::close(fd);
  }
  int status = 0;
  bool node_ended = false;
  for (;;) {
    siginfo_t info{};
    const int number = ::sigwaitinfo(&waited, &info);
    if (number < 0) continue;
    if (number == SIGCHLD) {
      reap_children(node, status, node_ended);
      if (!node_ended) continue;
    }
    end_descendants(scratch, node, status, node_ended);
    if (number != SIGCHLD) ::_exit(0);  // lethe ended it
    exit_like(status);
  }
}

constexpr int kShepherdGraceMs = 10'000;  // a shepherd should take milliseconds to end its tree

// The shepherd `pid` has exited (it waits, unreaped, for waitpid), or is not lethe's child any more.
bool shepherd_exited(int pid) {
  siginfo_t info{};
  return ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == pid;
}

void pause_a_millisecond() {
  const timespec pause{0, 1'000'000};
  ::nanosleep(&pause, nullptr);
}

// Asks every shepherd at once to end its node and every descendant, awaits them together, and SIGKILLs the
// groups of those that have not exited after kShepherdGraceMs. Does not reap.
void end_shepherds(std::vector<int> pids) {
  for (const int pid : pids) ::kill(pid, SIGTERM);
  const WallBudget grace{std::chrono::milliseconds(kShepherdGraceMs)};
  while (!pids.empty()) {
    std::erase_if(pids, shepherd_exited);
    if (pids.empty() || grace.left().count() <= 0) break;
    pause_a_millisecond();
  }
  for (const int pid : pids) ::kill(-pid, SIGKILL);
}
}  // namespace

ChildProcess::ChildProcess(const ChildSpec& spec, bool wait_for_exec) {
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
  const ChildPlumbing plumbing{in[0], out[1], err[1], report[1], spec.cwd.c_str(), program.c_str(), argv.data(),
                               envp.data(), spec.inherited_fd};
  // Every signal blocked across fork: the shepherd must not run lethe's handlers before it replaced them.
  sigset_t all;
  sigset_t before;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &before);
  const pid_t pid = ::fork();
  if (pid == 0) run_shepherd(parent, plumbing);
  ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
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
  ::setpgid(pid_, pid_);  // also here: no race with a signal to the group before the shepherd ran setpgid
  list_child(pid_);
  stdin_fd_ = in[1];
  stdout_fd_ = out[0];
  stderr_fd_ = err[0];
  ::fcntl(stderr_fd_, F_SETFL, O_NONBLOCK);
  report_fd_ = report[0];
  start_what_ = program + (spec.cwd.empty() ? "" : " in " + spec.cwd);
  if (wait_for_exec) this->wait_for_exec();
}

ChildProcess::~ChildProcess() { kill(); }

void ChildProcess::wait_for_exec() {
  if (report_fd_ < 0) return;
  // Records until every writer closed the pipe: the shepherd after its fork, the node at exec (or its exit).
  std::optional<int> exec_errno;
  for (;;) {
    Report record{};
    const ssize_t got = ::read(report_fd_, &record, sizeof record);
    if (got < 0 && errno == EINTR) continue;
    if (got != static_cast<ssize_t>(sizeof record)) break;
    if (record.kind == Report::node_pid) node_pid_ = record.value;
    if (record.kind == Report::exec_errno) exec_errno = record.value;
  }
  close_fd(report_fd_);
  if (exec_errno.has_value()) {
    kill();
    throw ChildProcessError(fmt::format("cannot start {}: {}", start_what_, std::strerror(*exec_errno)));
  }
}

void ChildProcess::kill() {
  if (pid_ > 0) {
    if (!wait_status_.has_value()) end_shepherds({pid_});  // once reaped, its pid may be another process's
    reap(true);
    unlist_child(pid_);
  }
  close_fd(stdin_fd_);
  close_fd(stdout_fd_);
  close_fd(stderr_fd_);
  close_fd(report_fd_);
  pid_ = -1;
}

void ChildProcess::kill_together(const std::vector<ChildProcess*>& children) {
  std::vector<int> running;
  for (ChildProcess* child : children) {
    if (child->pid_ > 0 && !child->wait_status_.has_value()) running.push_back(child->pid_);
  }
  end_shepherds(std::move(running));
  for (ChildProcess* child : children) child->kill();  // each has exited or is being killed: reaps, closes
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

void ChildProcess::await_exit(std::chrono::milliseconds most) {
  const WallBudget budget(most);
  while (!reap(false) && pid_ > 0 && budget.left().count() > 0) pause_a_millisecond();
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
    if (err_tail_.size() > kStderrTail) err_tail_ = std::string(lethe::utf8_suffix(err_tail_, kStderrTail));
  }
}

std::string ChildProcess::stderr_tail() {
  drain_stderr();
  return err_tail_;
}

std::optional<std::string> ChildProcess::take_line() {
  const std::size_t end = out_buffer_.find('\n', scanned_);
  if (end == std::string::npos) {
    scanned_ = out_buffer_.size();
    if (scanned_ - line_start_ > kMaxLineBytes) {
      throw LineTooLong(fmt::format("it wrote a line longer than {} bytes (no newline in the {} bytes read)",
                                          kMaxLineBytes, scanned_ - line_start_));
    }
    return std::nullopt;
  }
  if (end - line_start_ > kMaxLineBytes) {
    throw LineTooLong(fmt::format("it wrote a line of {} bytes, longer than {}", end - line_start_,
                                        kMaxLineBytes));
  }
  std::string line = out_buffer_.substr(line_start_, end - line_start_);
  line_start_ = end + 1;
  scanned_ = line_start_;
  if (line_start_ == out_buffer_.size() || line_start_ > out_buffer_.size() / 2) {  // amortised: linear overall
    out_buffer_.erase(0, line_start_);
    scanned_ -= line_start_;
    line_start_ = 0;
  }
  return line;
}

std::optional<std::string> ChildProcess::read_line(std::chrono::microseconds timeout) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline = Clock::now() + timeout;
  for (;;) {
    if (std::optional<std::string> line = take_line()) return line;
    if (stdout_fd_ < 0) throw ChildProcessError("its stdout is closed");
    const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - Clock::now());
    const bool last_look = left.count() <= 0;  // once more without waiting, so that a 0 timeout still reads
    const auto wait = last_look ? std::chrono::nanoseconds(0) : left;
    const timespec span{static_cast<time_t>(wait.count() / 1'000'000'000),
                        static_cast<long>(wait.count() % 1'000'000'000)};
    std::array<pollfd, 2> fds{pollfd{stdout_fd_, POLLIN, 0}, pollfd{stderr_fd_, POLLIN, 0}};
    const int ready = ::ppoll(fds.data(), stderr_fd_ >= 0 ? 2 : 1, &span, nullptr);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) throw ChildProcessError(fmt::format("poll: {}", std::strerror(errno)));
    if (stderr_fd_ >= 0 && fds[1].revents != 0) drain_stderr();
    if (fds[0].revents == 0) {
      if (last_look) return std::nullopt;
      continue;
    }
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

bool ChildProcess::output_pending() {
  if (line_start_ < out_buffer_.size()) return true;
  if (stdout_fd_ < 0) return false;
  pollfd fd{stdout_fd_, POLLIN, 0};
  return ::poll(&fd, 1, 0) > 0;
}

Stillness ChildProcess::stillness() {
  Stillness busy;
  if (output_pending()) return busy;
  int unread = 0;
  if (stdin_fd_ >= 0 && ::ioctl(stdin_fd_, FIONREAD, &unread) == 0 && unread > 0) return busy;
  if (node_pid_ <= 0) {
    Stillness unknown;
    unknown.kind = Stillness::Kind::unknown;
    unknown.why = "the node's process id is not known (its shepherd did not report it)";
    return unknown;
  }
  drain_stderr();  // a node blocked writing to a full stderr pipe is not still
  Stillness result = compare(look_at(node_pid_), look_at(node_pid_));
  if (result.waits_for_child) {
    // The node waits for a process of its own: the look widens to the node's process group (the shepherd's), which
    // holds what it started unless that left the group.
    result = compare(look_at_group(pid_, pid_), look_at_group(pid_, pid_), true);
  }
  // What it wrote before it fell asleep is read before its turn is called over.
  if (result.kind == Stillness::Kind::still && output_pending()) return busy;
  return result;
}

WallBudget::WallBudget(std::chrono::milliseconds budget) : deadline_(std::chrono::steady_clock::now() + budget) {}

std::chrono::milliseconds WallBudget::left() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - std::chrono::steady_clock::now());
}

void kill_all_children() {
  for (auto& slot : g_children) {
    const int pid = slot.load();
    if (pid > 0) ::kill(pid, SIGTERM);
  }
  for (auto& slot : g_children) {
    const int pid = slot.load();
    if (pid > 0) ::waitpid(pid, nullptr, 0);
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
