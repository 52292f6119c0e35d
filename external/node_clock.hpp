// external/node_clock.hpp — a node process's clock and timers served in virtual time: lethe's side of the page it
// shares with the preloaded library vclock/lethe_vclock.c (the contract: vclock/vclock_abi.h).
//
// Like the rest of external/, this is process plumbing: it maps shared memory and sends signals. What it reads
// (the deadlines the node's threads wait for) is the node's own doing, written while the node ran; lethe reads it
// only once the node is still, so the simulation sees the same deadlines on every run.
//
// Ownership: a NodeClock owns its memfd and mapping; the node process holds its own mapping and descriptor, which
// outlive the NodeClock harmlessly. One NodeClock serves one node process (an incarnation).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lethe::external {

class NodeClock {
 public:
  // Creates the page (memfd, close-on-exec in lethe) with the clock at `now_ns` and timers virtual.
  // Throws ChildProcessError when the kernel refuses (memfd_create, mmap).
  explicit NodeClock(std::int64_t now_ns);
  ~NodeClock();
  NodeClock(const NodeClock&) = delete;
  NodeClock& operator=(const NodeClock&) = delete;

  int fd() const { return fd_; }  // for ChildSpec::inherited_fd
  // The environment a node needs to load the library: LETHE_VCLOCK_FD=<fd> and LD_PRELOAD=`library` followed by
  // what `existing_preload` holds (the nodes' own LD_PRELOAD from external.env), or else lethe's own LD_PRELOAD.
  std::vector<std::string> environment(const std::string& library, const std::string& existing_preload) const;

  void set_now(std::int64_t now_ns);        // the node's clock, before a turn
  std::int64_t now() const;
  void set_timers_virtual(bool on);          // off: the node's timed waits use the kernel's clock; wakes every waiter
  bool loaded() const;                       // a process of the node mapped the page
  std::uint32_t slots_missed() const;        // timed waits made in wall-clock time (no free slot)
  // The earliest deadline of the node's waiting threads; nullopt when none waits with a timeout.
  std::optional<std::int64_t> next_deadline() const;
  // Sends LETHE_VCLOCK_SIGNAL to every thread whose deadline is <= now(); returns how many were signalled (a
  // thread that exited in between is skipped).
  int wake_due();

 private:
  int fd_ = -1;
  void* page_ = nullptr;
};

// The preloaded library's path: $LETHE_VCLOCK_LIBRARY when set, else liblethe-vclock.so beside the running
// executable, one or two folders above it (a build tree), or in the installed library folder relative to it.
// nullopt, with `searched` listing the places looked at, when none exists or none can be preloaded (a path with a
// space or a colon: LD_PRELOAD splits on them; `searched` says so for such a file).
std::optional<std::string> find_vclock_library(std::string& searched);

// Why the library did not load in a node whose program is `program` (an executable's path; /proc/PID/exe for a
// running process), as the program's ELF headers tell it: not a program lethe can read, a static binary (no
// dynamic loader: Go's), one of another class (32-bit), or a dynamically linked one whose loader did not preload
// it (its environment lost LD_PRELOAD, or it runs set-user-ID: lethe cannot tell which). Reads the file only.
std::string why_not_preloaded(const std::string& program);

}  // namespace lethe::external
