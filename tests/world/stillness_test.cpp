// What the kernel shows of a process that has finished reacting (external/stillness.hpp), on real processes.
#include "external/stillness.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>

namespace lethe::external {
namespace {

// A forked child running `body` (async-signal-safe calls only), killed and reaped at the end of the test.
class Child {
 public:
  explicit Child(const std::function<void()>& body) {
    pid_ = ::fork();
    if (pid_ == 0) {
      body();
      ::_exit(0);
    }
  }
  ~Child() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  int pid() const { return pid_; }

 private:
  int pid_ = -1;
};

// Whether this machine lets a process read what its child sleeps in (Yama or a container may forbid it: a look
// then leaves timers unknown, as it should).
bool syscall_readable(int pid) {
  const int fd = ::open(("/proc/" + std::to_string(pid) + "/syscall").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char text[256];
  const bool read_ok = ::read(fd, text, sizeof text) > 0;
  ::close(fd);
  return read_ok;
}

// Two looks until they say something other than busy, for at most `most` of wall-clock time.
Stillness settle(int pid, std::chrono::milliseconds most = std::chrono::milliseconds(5000)) {
  const auto end = std::chrono::steady_clock::now() + most;
  Stillness seen;
  while (std::chrono::steady_clock::now() < end) {
    const ProcessLook first = look_at(pid);
    const ProcessLook second = look_at(pid);
    seen = compare(first, second);
    if (seen.kind != Stillness::Kind::busy) return seen;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return seen;
}

TEST(Stillness, AProcessBlockedReadingAnEmptyPipeIsStillWithNoTimer) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  Child child([&] {
    char byte = 0;
    [[maybe_unused]] const auto got = ::read(fds[0], &byte, 1);
  });
  const Stillness seen = settle(child.pid());
  ::close(fds[0]);
  ::close(fds[1]);
  ASSERT_EQ(seen.kind, Stillness::Kind::still) << seen.why;
  if (!syscall_readable(child.pid())) GTEST_SKIP() << "/proc/PID/syscall is not readable on this machine";
  EXPECT_TRUE(seen.timers_known);
  EXPECT_EQ(seen.timer, "");
}

TEST(Stillness, AProcessSleepingWithATimeoutIsStillAndItsTimerIsNamed) {
  Child child([] { ::poll(nullptr, 0, 60'000); });
  const Stillness seen = settle(child.pid());
  ASSERT_EQ(seen.kind, Stillness::Kind::still) << seen.why;
  if (!syscall_readable(child.pid())) GTEST_SKIP() << "/proc/PID/syscall is not readable on this machine";
  ASSERT_TRUE(seen.timers_known);
  EXPECT_NE(seen.timer.find("poll with a 60000 ms timeout"), std::string::npos) << seen.timer;
}

TEST(Stillness, AProcessThatKeepsRunningIsNeverStill) {
  Child child([] {
    std::atomic<unsigned> spin{0};
    for (;;) spin.fetch_add(1, std::memory_order_relaxed);
  });
  for (int look = 0; look < 200; ++look) {
    const Stillness seen = compare(look_at(child.pid()), look_at(child.pid()));
    ASSERT_EQ(seen.kind, Stillness::Kind::busy) << "look " << look;
  }
}

TEST(Stillness, AProcessWaitingForAChildOfItsOwnIsUnknownNotStill) {
  Child child([] {
    const pid_t parent = ::getpid();
    const pid_t grandchild = ::fork();
    if (grandchild == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // ends with its parent's SIGKILL
      if (::getppid() != parent) ::_exit(0);
      ::pause();
      ::_exit(0);
    }
    ::waitpid(grandchild, nullptr, 0);
  });
  const Stillness seen = settle(child.pid());
  if (!syscall_readable(child.pid())) GTEST_SKIP() << "/proc/PID/syscall is not readable on this machine";
  ASSERT_EQ(seen.kind, Stillness::Kind::unknown);
  EXPECT_NE(seen.why.find("waits for a child process"), std::string::npos) << seen.why;
}

TEST(Stillness, AProcessWaitingForAChildIsStillWhenItsGroupIsWatchedAndTheChildWaitsForInput) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  Child child([&] {
    ::setpgid(0, 0);
    const pid_t parent = ::getpid();
    const pid_t grandchild = ::fork();
    if (grandchild == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(0);
      char byte = 0;
      [[maybe_unused]] const auto got = ::read(fds[0], &byte, 1);
      ::_exit(0);
    }
    ::waitpid(grandchild, nullptr, 0);
  });
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  Stillness seen;
  while (std::chrono::steady_clock::now() < end) {
    seen = compare(look_at_group(child.pid(), -1), look_at_group(child.pid(), -1), true);
    // Until the child has run setpgid its group is empty (unknown): only still ends the wait.
    if (seen.kind == Stillness::Kind::still) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ::close(fds[0]);
  ::close(fds[1]);
  ASSERT_EQ(seen.kind, Stillness::Kind::still) << seen.why;
  EXPECT_EQ(seen.timer, "");
  // The grandchild counts: one more thread than the waiting process alone has.
  EXPECT_EQ(look_at_group(child.pid(), -1).threads.size(), look_at(child.pid()).threads.size() + 1);
}

TEST(Stillness, AProcessThatIsGoneIsUnknownWithTheReason) {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  const Stillness seen = compare(look_at(pid), look_at(pid));
  ASSERT_EQ(seen.kind, Stillness::Kind::unknown);
  EXPECT_NE(seen.why.find("/proc/"), std::string::npos) << seen.why;
}

}  // namespace
}  // namespace lethe::external
