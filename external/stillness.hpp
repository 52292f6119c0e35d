// external/stillness.hpp — whether a process has finished reacting, as the Linux kernel shows it in /proc.
//
// A node that never says when it has finished reacting (a plain Maelstrom node) has finished when every one of its
// threads sleeps in the kernel and none ran between two looks: nothing it does can then happen before something
// wakes it, which is lethe's next line, or a timer of its own. A look reads, per thread, /proc/PID/task/TID/status
// (state, context switches) and /proc/PID/task/TID/syscall (what it sleeps in, with its arguments: readable by
// lethe because the node is its descendant).
//
// What a look cannot see, compare() reports as unknown rather than guess: a thread that waits for a child process
// the looks do not cover (look_at_group covers a node's group), or no /proc at all. A thread blocked writing is busy
// (lethe is behind on a pipe). A thread sleeping with a timeout is a timer of the node's own: it runs on the wall clock, and
// compare() names it (timer) so that the caller can say the run's reproducibility depends on it not firing.
//
// Outside the deterministic folders: what is read here only decides when lethe stops reading a node's lines for a
// turn, never what the simulation does with them.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace lethe::external {

// One thread at one look.
struct ThreadLook {
  int tid = 0;
  char state = '?';             // /proc's: 'R' running or runnable, 'S' asleep, 'D' in uninterruptible I/O, ...
  std::uint64_t switches = 0;   // voluntary + involuntary context switches so far
  bool syscall_known = false;   // /proc/TID/syscall was read and names a system call
  bool woke = false;            // /proc/TID/syscall said it runs, or is blocked outside a system call
  long syscall = -1;            // the system call it is in (this machine's numbering)
  std::array<std::uint64_t, 6> args{};
};

// Every thread of one process at one look, by tid.
struct ProcessLook {
  std::vector<ThreadLook> threads;  // sorted by tid
  std::string unreadable;           // non-empty: why the process could not be looked at (no /proc, it exited)
};

// Looks at every thread of `pid`.
ProcessLook look_at(int pid);
// Looks at every thread of every process in the process group `group` but `except` (one /proc scan): a node and the
// processes it started, which stay in its group unless they leave it (setsid, setpgid).
ProcessLook look_at_group(int group, int except);

struct Stillness {
  enum class Kind {
    busy,     // a thread runs or is runnable, or ran between the looks, or a thread came or went
    still,    // every thread asleep, the same as at the first look
    unknown,  // asleep, but in a wait a look cannot judge: `why` says which
  };
  Kind kind = Kind::busy;
  std::string why;    // unknown: the reason ("thread 812 waits for a child process (wait4)")
  std::string timer;  // still: the first thread sleeping with a timeout ("thread 812 in epoll_wait, 1000 ms"), or ""
  bool timers_known = true;  // still: false when a thread's system call could not be read (timer then says nothing)
  bool waits_for_child = false;  // unknown because a thread waits for a child process
};

// What two looks at the same process (or group), `first` then `second`, tell. With `children_watched` (the looks
// cover the processes a waiting thread may wait for: look_at_group) a wait for a child is a wait like any other.
Stillness compare(const ProcessLook& first, const ProcessLook& second, bool children_watched = false);

}  // namespace lethe::external
