// external/stillness.cpp — see stillness.hpp.
#include "external/stillness.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string_view>

#include <fmt/format.h>

namespace lethe::external {
namespace {

// How a system call a thread sleeps in bears on the node's stillness.
enum class Wait {
  input,       // for data (its stdin): lethe's next line wakes it
  writing,     // blocked writing: a reader (lethe) is behind, not a stillness
  timeout_ms,  // poll-like, an int timeout in milliseconds in `arg` (negative: none)
  timeout_at,  // a pointer to a timeout in `arg` (null: none)
  sleep,       // a sleep: always a timer
  futex,       // a futex op: a wait with a timeout when op is a wait and `arg` is not null
  child,       // waits for a child process, which lethe does not watch
};

struct Call {
  long number;
  const char* name;
  Wait wait;
  int arg;
};

// The system calls a waiting node is seen in, by this machine's numbers. Any other counts as a wait for input.
#if defined(__x86_64__)
constexpr Call kCalls[] = {
    {0, "read", Wait::input, -1},           {17, "pread64", Wait::input, -1},
    {19, "readv", Wait::input, -1},         {1, "write", Wait::writing, -1},
    {18, "pwrite64", Wait::writing, -1},    {20, "writev", Wait::writing, -1},
    {44, "sendto", Wait::writing, -1},      {46, "sendmsg", Wait::writing, -1},
    {7, "poll", Wait::timeout_ms, 2},       {232, "epoll_wait", Wait::timeout_ms, 3},
    {281, "epoll_pwait", Wait::timeout_ms, 3}, {23, "select", Wait::timeout_at, 4},
    {270, "pselect6", Wait::timeout_at, 4}, {271, "ppoll", Wait::timeout_at, 2},
    {441, "epoll_pwait2", Wait::timeout_at, 3}, {128, "rt_sigtimedwait", Wait::timeout_at, 2},
    {449, "futex_waitv", Wait::timeout_at, 3}, {35, "nanosleep", Wait::sleep, -1},
    {230, "clock_nanosleep", Wait::sleep, -1}, {202, "futex", Wait::futex, 3},
    {61, "wait4", Wait::child, -1},         {247, "waitid", Wait::child, -1},
};
#elif defined(__aarch64__)
constexpr Call kCalls[] = {
    {63, "read", Wait::input, -1},          {67, "pread64", Wait::input, -1},
    {65, "readv", Wait::input, -1},         {64, "write", Wait::writing, -1},
    {68, "pwrite64", Wait::writing, -1},    {66, "writev", Wait::writing, -1},
    {206, "sendto", Wait::writing, -1},     {211, "sendmsg", Wait::writing, -1},
    {22, "epoll_pwait", Wait::timeout_ms, 3}, {72, "pselect6", Wait::timeout_at, 4},
    {73, "ppoll", Wait::timeout_at, 2},     {441, "epoll_pwait2", Wait::timeout_at, 3},
    {137, "rt_sigtimedwait", Wait::timeout_at, 2}, {449, "futex_waitv", Wait::timeout_at, 3},
    {101, "nanosleep", Wait::sleep, -1},    {115, "clock_nanosleep", Wait::sleep, -1},
    {98, "futex", Wait::futex, 3},          {260, "wait4", Wait::child, -1},
    {95, "waitid", Wait::child, -1},
};
#else
constexpr Call kCalls[] = {{-2, "", Wait::input, -1}};  // no numbers known: timers are reported unknown
#endif
#if defined(__x86_64__) || defined(__aarch64__)
constexpr bool kUnknownMachine = false;
#else
constexpr bool kUnknownMachine = true;
#endif

const Call* call_of(long number) {
  for (const Call& call : kCalls) {
    if (call.number == number) return &call;
  }
  return nullptr;
}

// The whole of a small /proc file (nullopt: it could not be read: no /proc, the thread exited, no permission).
std::optional<std::string> read_small_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text(4096, '\0');
  std::size_t size = 0;
  for (;;) {
    if (size == text.size()) text.resize(text.size() * 2);
    const ssize_t got = ::read(fd, text.data() + size, text.size() - size);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      ::close(fd);
      if (got < 0) return std::nullopt;
      text.resize(size);
      return text;
    }
    size += static_cast<std::size_t>(got);
  }
}

std::uint64_t number_after(std::string_view text, std::string_view label) {
  const std::size_t at = text.find(label);
  if (at == std::string_view::npos) return 0;
  std::size_t from = at + label.size();
  while (from < text.size() && (text[from] == ' ' || text[from] == '\t')) ++from;
  std::uint64_t value = 0;
  std::from_chars(text.data() + from, text.data() + text.size(), value);
  return value;
}

// Fills state and switches from /proc/.../status; false when it cannot be read.
bool read_status(const std::string& task, ThreadLook& thread) {
  const std::optional<std::string> status = read_small_file(task + "/status");
  if (!status.has_value()) return false;
  const std::size_t state = status->find("\nState:");
  if (state != std::string::npos) {
    const std::size_t letter = status->find_first_not_of(" \t", state + 7);
    if (letter != std::string::npos) thread.state = (*status)[letter];
  }
  thread.switches = number_after(*status, "\nvoluntary_ctxt_switches:") +
                    number_after(*status, "\nnonvoluntary_ctxt_switches:");
  return true;
}

// Fills the system call from /proc/.../syscall ("NR ARG1 ... ARG6 SP PC", "running" or "-1 SP PC").
void read_syscall(const std::string& task, ThreadLook& thread) {
  const std::optional<std::string> text = read_small_file(task + "/syscall");
  if (!text.has_value() || text->empty()) return;
  // Read after its status: a thread seen asleep there that runs (or faults) here has woken in between.
  if ((*text)[0] == 'r' || (*text)[0] == '-') {
    thread.woke = true;
    return;
  }
  std::string_view rest(*text);
  auto field = [&rest]() {
    const std::size_t start = rest.find_first_not_of(' ');
    if (start == std::string_view::npos) return std::string_view{};
    rest.remove_prefix(start);
    const std::size_t end = std::min(rest.find_first_of(" \n"), rest.size());
    const std::string_view word = rest.substr(0, end);
    rest.remove_prefix(end);
    return word;
  };
  const std::string_view number = field();
  if (std::from_chars(number.data(), number.data() + number.size(), thread.syscall).ec != std::errc{}) return;
  for (std::uint64_t& arg : thread.args) {
    std::string_view word = field();
    if (word.starts_with("0x")) word.remove_prefix(2);
    std::from_chars(word.data(), word.data() + word.size(), arg, 16);
  }
  thread.syscall_known = true;
}

constexpr std::uint64_t kFutexCommand = 0x7f;  // the op without FUTEX_PRIVATE_FLAG and FUTEX_CLOCK_REALTIME

bool futex_waits(std::uint64_t op) {
  switch (op & kFutexCommand) {
    case 0:   // FUTEX_WAIT
    case 6:   // FUTEX_LOCK_PI
    case 9:   // FUTEX_WAIT_BITSET
    case 11:  // FUTEX_WAIT_REQUEUE_PI
    case 13:  // FUTEX_LOCK_PI2
      return true;
    default:
      return false;
  }
}

// A sleeping thread's timer ("" if it has none).
std::string timer_of(const ThreadLook& thread, const Call& call) {
  const auto held = [&](int arg) { return thread.args[static_cast<std::size_t>(arg)]; };
  switch (call.wait) {
    case Wait::timeout_ms: {
      const auto ms = static_cast<std::int32_t>(static_cast<std::uint32_t>(held(call.arg)));
      return ms < 0 ? "" : fmt::format("thread {} in {} with a {} ms timeout", thread.tid, call.name, ms);
    }
    case Wait::timeout_at:
      return held(call.arg) == 0 ? "" : fmt::format("thread {} in {} with a timeout", thread.tid, call.name);
    case Wait::sleep:
      return fmt::format("thread {} in {}", thread.tid, call.name);
    case Wait::futex:
      return futex_waits(thread.args[1]) && held(call.arg) != 0
                 ? fmt::format("thread {} in a futex wait with a timeout", thread.tid)
                 : "";
    default:
      return "";
  }
}

}  // namespace

ProcessLook look_at(int pid) {
  ProcessLook look;
  const std::string tasks = fmt::format("/proc/{}/task", pid);
  DIR* directory = ::opendir(tasks.c_str());
  if (directory == nullptr) {
    look.unreadable = fmt::format("{}: {}", tasks, std::strerror(errno));
    return look;
  }
  while (const dirent* entry = ::readdir(directory)) {
    int tid = 0;
    const std::string_view name(entry->d_name);
    if (std::from_chars(name.data(), name.data() + name.size(), tid).ec != std::errc{} || tid <= 0) continue;
    ThreadLook thread;
    thread.tid = tid;
    const std::string task = tasks + "/" + entry->d_name;
    if (!read_status(task, thread)) continue;  // it exited meanwhile: the next look sees a different set
    read_syscall(task, thread);
    look.threads.push_back(thread);
  }
  ::closedir(directory);
  std::sort(look.threads.begin(), look.threads.end(),
            [](const ThreadLook& a, const ThreadLook& b) { return a.tid < b.tid; });
  if (look.threads.empty()) look.unreadable = fmt::format("{}: no thread could be read", tasks);
  return look;
}

ProcessLook look_at_group(int group, int except) {
  ProcessLook look;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) {
    look.unreadable = fmt::format("/proc: {}", std::strerror(errno));
    return look;
  }
  while (const dirent* entry = ::readdir(proc)) {
    int pid = 0;
    const std::string_view name(entry->d_name);
    if (std::from_chars(name.data(), name.data() + name.size(), pid).ec != std::errc{} || pid <= 0 || pid == except) {
      continue;
    }
    const std::optional<std::string> stat = read_small_file(fmt::format("/proc/{}/stat", pid));
    // "PID (COMM) STATE PPID PGRP ...": COMM may hold spaces and parentheses, so fields count from the last ')'.
    const std::size_t close = stat.has_value() ? stat->rfind(')') : std::string::npos;
    if (close == std::string::npos) continue;
    char state = 0;
    int parent = 0;
    int process_group = 0;
    if (std::sscanf(stat->c_str() + close + 1, " %c %d %d", &state, &parent, &process_group) != 3) continue;
    if (process_group != group || state == 'Z') continue;
    ProcessLook one = look_at(pid);
    look.threads.insert(look.threads.end(), one.threads.begin(), one.threads.end());
  }
  ::closedir(proc);
  std::sort(look.threads.begin(), look.threads.end(),
            [](const ThreadLook& a, const ThreadLook& b) { return a.tid < b.tid; });
  if (look.threads.empty()) look.unreadable = fmt::format("no process of group {} could be read", group);
  return look;
}

Stillness compare(const ProcessLook& first, const ProcessLook& second, bool children_watched) {
  Stillness result;
  if (!first.unreadable.empty() || !second.unreadable.empty()) {
    result.kind = Stillness::Kind::unknown;
    result.why = !second.unreadable.empty() ? second.unreadable : first.unreadable;
    return result;
  }
  if (first.threads.size() != second.threads.size()) return result;  // busy: a thread came or went
  for (std::size_t i = 0; i < first.threads.size(); ++i) {
    const ThreadLook& a = first.threads[i];
    const ThreadLook& b = second.threads[i];
    if (a.tid != b.tid || a.state != 'S' || b.state != 'S' || a.switches != b.switches || a.woke || b.woke) {
      return result;
    }
  }
  result.kind = Stillness::Kind::still;
  for (const ThreadLook& thread : second.threads) {
    if (!thread.syscall_known || kUnknownMachine) {
      result.timers_known = false;
      continue;
    }
    const Call* call = call_of(thread.syscall);
    if (call == nullptr) continue;  // any other call: a wait for input (a socket, a signal)
    if (call->wait == Wait::writing) {
      result.kind = Stillness::Kind::busy;  // lethe has yet to read what it writes
      return result;
    }
    if (call->wait == Wait::child && !children_watched) {
      result.kind = Stillness::Kind::unknown;
      result.waits_for_child = true;
      result.why = fmt::format("thread {} waits for a child process ({}), which lethe does not watch", thread.tid,
                               call->name);
      return result;
    }
    if (result.timer.empty()) result.timer = timer_of(thread, *call);
  }
  return result;
}

}  // namespace lethe::external
