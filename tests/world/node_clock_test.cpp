// A node's clocks and timed waits in virtual time (external/node_clock.hpp and the preloaded library
// vclock/lethe_vclock.c), on real processes: CPython with the library built beside lethe.
#include "external/node_clock.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <fmt/format.h>
#include <signal.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>

#include "external/child_process.hpp"
#include "external/stillness.hpp"
#include "tests/runner/support.hpp"
#include "vclock/vclock_abi.h"

namespace lethe::external {
namespace node_clock_test {

using std::chrono::milliseconds;
using ::testing::HasSubstr;

constexpr std::int64_t kSecond = 1'000'000'000;
constexpr std::int64_t kMillisecond = 1'000'000;
constexpr std::int64_t kMonotonicBase = 1'000'000 * kSecond;  // node_clock.cpp's bases
constexpr std::int64_t kRealtimeBase = 946'684'800 * kSecond;
constexpr milliseconds kPrompt{3000};  // a line the node writes at once arrives well within it
constexpr milliseconds kQuiet{300};    // a wait in wall-clock time would have ended within it

std::string library() {
  std::string searched;
  const std::optional<std::string> found = find_vclock_library(searched);
  if (!found) ADD_FAILURE() << "liblethe-vclock.so not found in " << searched;
  return found.value_or("");
}

// /usr/bin/python3 running `code`, unbuffered, with the clock's page and (when `preload`) the library.
ChildSpec python(const NodeClock& clock, const std::string& code, bool preload = true) {
  ChildSpec spec;
  spec.argv = {"/usr/bin/python3", "-u", "-c", code};
  spec.env = clock.environment(library(), "");
  if (!preload) spec.env.pop_back();  // LD_PRELOAD
  spec.inherited_fd = clock.fd();
  return spec;
}

std::string line(ChildProcess& node, milliseconds timeout = kPrompt) {
  return node.read_line(timeout).value_or("<nothing>");
}

// The node's earliest deadline once it is still with a thread waiting for one (nullopt if that never comes).
std::optional<std::int64_t> deadline_once_asleep(ChildProcess& node, const NodeClock& clock) {
  const WallBudget budget{milliseconds(5000)};
  while (budget.left().count() > 0) {
    if (clock.next_deadline() && node.stillness().kind == Stillness::Kind::still) return clock.next_deadline();
    std::this_thread::sleep_for(milliseconds(2));
  }
  return std::nullopt;
}

// The node still, with no thread waiting with a timeout.
bool still_without_deadline(ChildProcess& node, const NodeClock& clock) {
  const WallBudget budget{milliseconds(5000)};
  while (budget.left().count() > 0) {
    if (node.stillness().kind == Stillness::Kind::still) return !clock.next_deadline();
    std::this_thread::sleep_for(milliseconds(2));
  }
  return false;
}

TEST(NodeClock, ANodeReadsItsMonotonicAndRealtimeClocksFromThePage) {
  NodeClock clock(5 * kSecond);
  ChildProcess node(python(clock,
                           "import os, time\n"
                           "print(time.monotonic_ns(), time.time_ns())\n"
                           "os.read(0, 100)\n"
                           "print(time.monotonic_ns(), time.time_ns())\n"));
  EXPECT_EQ(line(node), std::to_string(kMonotonicBase + 5 * kSecond) + " " +
                            std::to_string(kRealtimeBase + 5 * kSecond));
  EXPECT_TRUE(clock.loaded());
  clock.set_now(7 * kSecond + 250);
  node.write_line("again");
  EXPECT_EQ(line(node), std::to_string(kMonotonicBase + 7 * kSecond + 250) + " " +
                            std::to_string(kRealtimeBase + 7 * kSecond + 250));
}

// `code` prints "asleep", waits `timeout` of the node's time, then prints what the wait returned.
void expect_virtual_wait(const std::string& code, std::int64_t timeout, const std::string& returned) {
  NodeClock clock(5 * kSecond);
  ChildProcess node(python(clock, "import select, time\nprint('asleep')\n" + code));
  ASSERT_EQ(line(node), "asleep");
  ASSERT_EQ(deadline_once_asleep(node, clock), 5 * kSecond + timeout);
  EXPECT_EQ(node.read_line(kQuiet), std::nullopt) << "the wait ended in wall-clock time";
  // Short of the deadline, nobody is due: lethe wakes no one.
  clock.set_now(5 * kSecond + timeout - 1);
  EXPECT_EQ(clock.wake_due(), 0);
  // And a wake-up sent anyway (the node has one thread) is no reason to return before the deadline.
  ASSERT_EQ(::kill(node.node_pid(), LETHE_VCLOCK_SIGNAL), 0);
  EXPECT_EQ(node.read_line(milliseconds(100)), std::nullopt) << "woken before its deadline";
  EXPECT_EQ(clock.next_deadline(), 5 * kSecond + timeout);
  clock.set_now(5 * kSecond + timeout);
  EXPECT_EQ(clock.wake_due(), 1);
  EXPECT_EQ(line(node), returned);
  EXPECT_EQ(clock.next_deadline(), std::nullopt);
}

// `code` prints "asleep", then waits with a 10 s timeout for something the next line lethe writes brings; that
// line ends the wait at once (it prints `printed`), and its slot is freed.
void expect_ended_by_the_next_line(const std::string& code, const std::string& printed) {
  NodeClock clock(0);
  ChildProcess node(python(clock, code));
  ASSERT_EQ(line(node), "asleep");
  ASSERT_EQ(deadline_once_asleep(node, clock), 10 * kSecond);
  node.write_line("data");
  EXPECT_EQ(line(node), printed);
  EXPECT_TRUE(still_without_deadline(node, clock)) << "the slot outlived the wait";
}

TEST(NodeClock, ASleepEndsAtItsVirtualDeadlineNotInWallClockTime) {
  expect_virtual_wait("time.sleep(5)\nprint(time.monotonic_ns())", 5 * kSecond,
                      std::to_string(kMonotonicBase + 10 * kSecond));
}

TEST(NodeClock, AnEpollWaitEndsAtItsVirtualDeadlineNotInWallClockTime) {
  expect_virtual_wait("print(select.epoll().poll(2.0))", 2 * kSecond, "[]");
}

TEST(NodeClock, APollEndsAtItsVirtualDeadlineNotInWallClockTime) {
  expect_virtual_wait("print(select.poll().poll(3000))", 3 * kSecond, "[]");
}

TEST(NodeClock, ASelectEndsAtItsVirtualDeadlineNotInWallClockTime) {
  expect_virtual_wait("print(select.select([], [], [], 2.5))", 2500 * kMillisecond, "([], [], [])");
}

TEST(NodeClock, APselectAndAnEpollPwait2EndAtTheirVirtualDeadlinesNotInWallClockTime) {
  const std::string call_with_a_timespec =
      "import ctypes\n"
      "libc = ctypes.CDLL(None, use_errno=True)\n"
      "class Time(ctypes.Structure):\n"
      "    _fields_ = [('s', ctypes.c_long), ('ns', ctypes.c_long)]\n"
      "timeout = ctypes.byref(Time(1, 500_000_000))\n";
  expect_virtual_wait(call_with_a_timespec + "print(libc.pselect(0, None, None, None, timeout, None))",
                      1500 * kMillisecond, "0");
  expect_virtual_wait(call_with_a_timespec +
                          "events, polled = ctypes.create_string_buffer(12), select.epoll()\n"
                          "print(libc.epoll_pwait2(polled.fileno(), events, 1, timeout, None))",
                      1500 * kMillisecond, "0");
}

TEST(NodeClock, AMalformedTimeoutIsRefusedAsTheRealCallRefusesItNotServed) {
  // 2 * 10^9 ns in tv_nsec: the kernel's EINVAL, at once, for every wait that takes a timespec.
  NodeClock clock(0);
  ChildProcess node(python(clock,
                           "import ctypes, select\n"
                           "libc = ctypes.CDLL(None, use_errno=True)\n"
                           "class Time(ctypes.Structure):\n"
                           "    _fields_ = [('s', ctypes.c_long), ('ns', ctypes.c_long)]\n"
                           "bad, polled = ctypes.byref(Time(1, 2_000_000_000)), select.epoll()\n"
                           "events = ctypes.create_string_buffer(12)\n"
                           "calls = [lambda: libc.ppoll(None, 0, bad, None),\n"
                           "         lambda: libc.pselect(0, None, None, None, bad, None),\n"
                           "         lambda: libc.epoll_pwait2(polled.fileno(), events, 1, bad, None),\n"
                           "         lambda: libc.nanosleep(bad, None)]\n"
                           "print(*[(call(), ctypes.get_errno())[1] for call in calls])\n"));
  EXPECT_EQ(line(node), fmt::format("{0} {0} {0} {0}", EINVAL));
  EXPECT_EQ(clock.next_deadline(), std::nullopt);
}

TEST(NodeClock, DataOnASelectedDescriptorEndsTheWaitAtOnceAndFreesTheSlot) {
  expect_ended_by_the_next_line("import os, select\n"
                                "print('asleep')\n"
                                "print(select.select([0], [], [], 10.0)[0])\n"
                                "os.read(0, 100)\n"
                                "os.read(0, 100)\n",
                                "[0]");
}

TEST(NodeClock, AThreadingEventWaitASemaphoreWaitEndsAtItsVirtualDeadlineNotInWallClockTime) {
  // CPython's timed lock acquire (Event.wait, Condition.wait, queue.get) is sem_clockwait on CLOCK_MONOTONIC.
  expect_virtual_wait("import threading\nprint(threading.Event().wait(4))", 4 * kSecond, "False");
}

TEST(NodeClock, ALockReleasedByAnotherThreadEndsAServedSemaphoreWaitAtOnce) {
  expect_ended_by_the_next_line("import os, threading\n"
                                "lock = threading.Lock()\n"
                                "lock.acquire()\n"
                                "threading.Thread(target=lambda: (os.read(0, 100), lock.release())).start()\n"
                                "print('asleep')\n"
                                "print(lock.acquire(timeout=10))\n"
                                "os.read(0, 100)\n",
                                "True");
}

TEST(NodeClock, ThreadsPassingManyItemsThroughServedSemaphoreWaitsLoseNoneAndNeverHang) {
  // Eight threads take 40,000 items from a queue with a timeout that never comes (Condition.wait: a semaphore
  // each), while four put them: every post must reach a waiter, with the waiters' count glibc keeps in the
  // semaphore right through lethe's waits.
  NodeClock clock(0);
  ChildProcess node(python(clock,
                           "import queue, threading\n"
                           "items, taken = queue.Queue(maxsize=2), []\n"
                           "def take():\n"
                           "    while (item := items.get(timeout=3600)) is not None:\n"
                           "        taken.append(item)\n"
                           "def put(start):\n"
                           "    for i in range(start, 40_000, 4):\n"
                           "        items.put(i, timeout=3600)\n"
                           "takers = [threading.Thread(target=take) for _ in range(8)]\n"
                           "putters = [threading.Thread(target=put, args=(k,)) for k in range(4)]\n"
                           "for t in takers + putters: t.start()\n"
                           "for t in putters: t.join(timeout=3600)\n"
                           "for _ in takers: items.put(None)\n"
                           "for t in takers: t.join(timeout=3600)\n"
                           "print(len(taken), sorted(taken) == list(range(40_000)))\n"));
  EXPECT_EQ(line(node, milliseconds(60'000)), "40000 True");
  EXPECT_EQ(clock.slots_missed(), 0U);
}

TEST(NodeClock, WithTimersOffASemaphoreWaitUntilAVirtualInstantLastsItsLengthOfWallClockTime) {
  // The instant is on the virtual clock (10^6 s after its base): handed to the kernel as it is, it would be days
  // away on the machine's monotonic clock.
  NodeClock clock(0);
  clock.set_timers_virtual(false);
  ChildProcess node(python(clock, "import threading\nprint(threading.Event().wait(0.2))"));
  EXPECT_EQ(node.read_line(milliseconds(100)), std::nullopt) << "the wait ended before its length";
  EXPECT_EQ(line(node), "False");
  EXPECT_EQ(clock.next_deadline(), std::nullopt);
}

TEST(NodeClock, AConditionVariablesTimedWaitUntilAVirtualInstantLastsItsLengthOfTheKernelsClock) {
  // On either clock of the condition variable (CPython's GIL and V8's platform use CLOCK_MONOTONIC ones): the
  // virtual instant would be days away on the machine's monotonic clock and decades past on its real-time one.
  NodeClock clock(0);
  ChildProcess node(python(clock,
                           "import ctypes, os, time\n"
                           "libc = ctypes.CDLL(None)\n"
                           "class Time(ctypes.Structure):\n"
                           "    _fields_ = [('s', ctypes.c_long), ('ns', ctypes.c_long)]\n"
                           "for clock in (time.CLOCK_REALTIME, time.CLOCK_MONOTONIC):\n"
                           "    attr, cond, mutex = (ctypes.create_string_buffer(64) for _ in range(3))\n"
                           "    libc.pthread_condattr_init(attr)\n"
                           "    libc.pthread_condattr_setclock(attr, clock)\n"
                           "    libc.pthread_cond_init(cond, attr)\n"
                           "    libc.pthread_mutex_init(mutex, None)\n"
                           "    libc.pthread_mutex_lock(mutex)\n"
                           "    at = time.clock_gettime_ns(clock) + 300_000_000\n"
                           "    print('waiting')\n"
                           "    until = ctypes.byref(Time(at // 10**9, at % 10**9))\n"
                           "    print(libc.pthread_cond_timedwait(cond, mutex, until))\n"
                           "    os.read(0, 100)\n"));
  for (const char* clock_name : {"CLOCK_REALTIME", "CLOCK_MONOTONIC"}) {
    ASSERT_EQ(line(node), "waiting") << clock_name;
    EXPECT_EQ(node.read_line(milliseconds(150)), std::nullopt) << clock_name << ": ended before its length";
    EXPECT_EQ(line(node), std::to_string(ETIMEDOUT)) << clock_name;
    node.write_line("next");
  }
}

TEST(NodeClock, DataOnThePolledDescriptorEndsTheWaitAtOnceAndFreesTheSlot) {
  expect_ended_by_the_next_line("import os, select\n"
                                "e = select.epoll()\n"
                                "e.register(0, select.EPOLLIN)\n"
                                "print('asleep')\n"
                                "print(len(e.poll(10.0)))\n"
                                "os.read(0, 100)\n"
                                "e.poll()\n",
                                "1");
}

TEST(NodeClock, WithTimersOffASleepEndsInWallClockTime) {
  NodeClock clock(0);
  clock.set_timers_virtual(false);
  ChildProcess node(python(clock, "import time\ntime.sleep(0.05)\nprint('slept')"));
  EXPECT_EQ(line(node), "slept");
  EXPECT_EQ(clock.next_deadline(), std::nullopt);
}

TEST(NodeClock, TurningTimersOffWakesASleeperThatThenEndsInWallClockTime) {
  NodeClock clock(0);
  ChildProcess node(python(clock, "import time\nprint('asleep')\ntime.sleep(0.2)\nprint('slept')"));
  ASSERT_EQ(line(node), "asleep");
  ASSERT_EQ(deadline_once_asleep(node, clock), kSecond / 5);
  clock.set_timers_virtual(false);
  EXPECT_EQ(line(node), "slept");
}

TEST(NodeClock, TheSlotOfAProcessKilledWhileItWaitedIsFreedAtItsDeadlineAndDoesNotComeBack) {
  NodeClock clock(0);
  // A child of the node (coreutils' sleep, which loads the library too, given the page's descriptor: Python's
  // subprocess closes the others) killed in its virtual sleep: the library never frees its slot.
  ChildProcess node(python(clock,
                           "import os, subprocess\n"
                           "child = subprocess.Popen(['sleep', '5'], pass_fds=[int(os.environ['LETHE_VCLOCK_FD'])])\n"
                           "print('started')\n"
                           "os.read(0, 100)\n"
                           "child.kill()\n"
                           "child.wait()\n"
                           "print('killed')\n"
                           "os.read(0, 100)\n"));
  ASSERT_EQ(line(node), "started");
  ASSERT_EQ(deadline_once_asleep(node, clock), 5 * kSecond);
  node.write_line("kill it");
  ASSERT_EQ(line(node), "killed");
  EXPECT_EQ(clock.next_deadline(), 5 * kSecond) << "the killed sleeper's slot was freed by someone else";
  clock.set_now(5 * kSecond);
  EXPECT_EQ(clock.wake_due(), 0);
  EXPECT_EQ(clock.next_deadline(), std::nullopt) << "a dead thread's deadline would come back as a timer for ever";
}

TEST(NodeClock, WhyALibraryWasNotPreloadedIsReadFromTheProgramsElfHeaders) {
  EXPECT_THAT(why_not_preloaded("/sbin/ldconfig"), HasSubstr("a static binary"));  // static-pie on Debian
  EXPECT_THAT(why_not_preloaded("/usr/bin/python3"), HasSubstr("dynamically linked, yet its loader did not"));
  const std::filesystem::path folder = test_support::temp_dir("node-clock", "elf");
  const auto write = [&folder](const std::string& name, const std::string& bytes) {
    std::ofstream(folder / name, std::ios::binary) << bytes;
    return (folder / name).string();
  };
  EXPECT_THAT(why_not_preloaded(write("script", "#!/bin/sh\nexec sleep 1\n")), HasSubstr("not an ELF file"));
  std::string elf32(52, '\0');
  elf32.replace(0, 5, "\x7f" "ELF\x01");  // ELFCLASS32
  EXPECT_THAT(why_not_preloaded(write("elf32", elf32)), HasSubstr("32-bit"));
  EXPECT_THAT(why_not_preloaded((folder / "absent").string()), HasSubstr("could not read its program"));
  std::filesystem::remove_all(folder);
}

TEST(NodeClock, ALibraryWhosePathHoldsASpaceIsNotOfferedToLdPreloadAndTheSearchSaysWhy) {
  const std::filesystem::path folder = test_support::temp_dir("node-clock", "a space");
  const std::filesystem::path copy = folder / "liblethe-vclock.so";
  std::filesystem::copy_file(library(), copy, std::filesystem::copy_options::overwrite_existing);
  ::setenv("LETHE_VCLOCK_LIBRARY", copy.c_str(), 1);
  std::string searched;
  const std::optional<std::string> found = find_vclock_library(searched);
  ::unsetenv("LETHE_VCLOCK_LIBRARY");
  std::filesystem::remove_all(folder);
  EXPECT_EQ(found, std::nullopt);
  EXPECT_THAT(searched, HasSubstr("LD_PRELOAD cannot hold a path with a space or a colon"));
}

TEST(NodeClock, ANodeWithoutTheLibraryLeavesLoadedFalse) {
  NodeClock clock(0);
  ChildProcess node(python(clock, "import time\nprint(time.time_ns())", false));
  const std::string printed = line(node);
  EXPECT_GT(std::stoll(printed), kRealtimeBase + 20 * 365 * 24 * 3600 * kSecond) << "not the kernel's clock";
  node.await_exit(milliseconds(3000));
  EXPECT_FALSE(clock.loaded());
}

}  // namespace node_clock_test
}  // namespace lethe::external
