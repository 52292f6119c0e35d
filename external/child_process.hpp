// external/child_process.hpp — one OS child process spoken to in lines over pipes: the plumbing of external
// consumer nodes (world/external_node.hpp speaks the protocol over it).
//
// This folder is outside the deterministic folders on purpose: it spawns processes, reads pipes and waits with
// wall-clock timeouts. Nothing here decides anything the simulation does: a wall-clock timeout only ever turns
// into a ChildProcessError (the run stops with exit code 2), never into a simulated event, and what is read is
// the child's output, whose order the child alone decides.
//
// Lifetime guarantees (no process a node started survives lethe):
//   - the node runs below a shepherd, a fork of lethe in its own process group that is a child subreaper
//     (PR_SET_CHILD_SUBREAPER): every descendant of the node stays in the shepherd's tree, one that forked twice and
//     called setsid() included;
//   - the shepherd ends every descendant (SIGKILL, again until none is left) when the node exits, when lethe sends
//     it SIGTERM (kill(), the destructor) and when lethe dies (PR_SET_PDEATHSIG = SIGTERM: kill -9 of lethe too),
//     then exits with the node's status (status() reports the node's);
//   - every live shepherd is listed in a signal-safe table: kill_all_children() (async-signal-safe) ends each and
//     waits for it, for lethe's SIGINT / SIGTERM handlers (install_child_reaper_signal_handlers).
// stderr is drained continuously (whenever stdout is polled) and its last 4 KiB are kept.
//
// Threads: one ChildProcess is used by one thread; several threads may each own their own.
// Does not: parse what it reads (lines are opaque), or restart anything.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "external/stillness.hpp"

namespace lethe::external {

// Spawning failed, the child closed its pipes or exited, or a write failed. what() says which.
struct ChildProcessError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The child wrote a line longer than kMaxLineBytes.
struct LineTooLong : ChildProcessError {
  using ChildProcessError::ChildProcessError;
};

struct ChildSpec {
  std::vector<std::string> argv;  // argv[0]: a path (with '/') or a name looked up in PATH
  std::vector<std::string> env;   // "NAME=VALUE", added to (and overriding) lethe's own environment
  std::string cwd;                // "" = lethe's
  int inherited_fd = -1;          // >= 0: a descriptor of lethe's the node keeps across exec, at the same number
};

// The longest line a child may write (its '\n' excluded): a protocol message is a small JSON object.
inline constexpr std::size_t kMaxLineBytes = std::size_t{16} << 20;

class ChildProcess {
 public:
  // Spawns the child with three pipes. Throws ChildProcessError when it cannot be started (exec failing is
  // reported here too: the child tells through a close-on-exec pipe). With `wait_for_exec` false it returns once
  // forked and exec's outcome is awaited by wait_for_exec(): many children then start side by side.
  explicit ChildProcess(const ChildSpec& spec, bool wait_for_exec = true);
  ~ChildProcess();  // kill()
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Waits until the child ran exec (or failed to); throws ChildProcessError, as the constructor does, when it
  // cannot be started. Idempotent; the constructor called it unless told not to.
  void wait_for_exec();
  // Writes `line` and a '\n'. Throws ChildProcessError when the child no longer reads (it exited).
  void write_line(const std::string& line);
  // The next line the child wrote (without its '\n'), waiting at most `timeout` of wall-clock time.
  // nullopt: nothing within the timeout. Throws ChildProcessError when stdout closed (the child exited) or when a
  // line is longer than kMaxLineBytes. Linear in what the child writes, however long its lines.
  std::optional<std::string> read_line(std::chrono::microseconds timeout);
  // Whether the node has finished reacting to what it was written, as the kernel shows it (stillness.hpp): busy
  // while a line is left unread on its stdin, a line of its own waits on stdout or stderr, or its threads are not
  // still across two looks. The look is at the node's own process (its threads), and at every process of its group
  // (the shepherd's) when a thread of the node waits for a child.
  Stillness stillness();
  // Whether the node has written anything lethe has not taken yet (without waiting).
  bool output_pending();
  // Ends the node and all its descendants (through the shepherd) and reaps the shepherd (idempotent).
  void kill();
  // kill() of several children side by side: every shepherd is asked at once, all are awaited together for at
  // most one shepherd's grace, the groups of the ones left are SIGKILLed, then each is reaped: the shepherds end
  // their trees side by side, not one after the other.
  static void kill_together(const std::vector<ChildProcess*>& children);

  int pid() const { return pid_; }  // the shepherd's (the node's process group)
  int node_pid() const { return node_pid_; }  // the node's own (-1 until wait_for_exec() learnt it)
  // When it was spawned (steady clock): a start-up budget counts from here.
  std::chrono::steady_clock::time_point started() const { return started_; }
  // Wall-clock time since it was spawned: the one read of a real clock a start-up budget needs, kept here in the
  // process layer so that the deterministic folders never read a clock.
  std::chrono::milliseconds age() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started_);
  }
  // The last 4 KiB of what the child wrote to stderr (drained now, without waiting).
  std::string stderr_tail();
  // "exited with status N" / "killed by signal N" / "running".
  std::string status();
  // Waits at most `most` of wall-clock time for the node to end (its shepherd to exit and be reaped): a node that
  // exits right after its last line is then reported as exited, not as running, whatever the machine's load.
  void await_exit(std::chrono::milliseconds most);

 private:
  void drain_stderr();
  bool reap(bool wait);
  std::optional<std::string> take_line();  // a whole line from out_buffer_, if one is there

  int pid_ = -1;
  int node_pid_ = -1;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  int stderr_fd_ = -1;
  int report_fd_ = -1;       // exec's outcome, until wait_for_exec() read it
  std::string start_what_;   // "PROGRAM[ in CWD]", for the error when exec failed
  std::vector<char> chunk_ = std::vector<char>(65536);  // on the heap: callers run on small fiber stacks
  std::string out_buffer_;
  std::size_t line_start_ = 0;  // out_buffer_ before it: lines already taken
  std::size_t scanned_ = 0;     // out_buffer_[line_start_, scanned_) holds no '\n'
  std::string err_tail_;
  std::optional<int> wait_status_;
};

// A wall-clock budget: what is left of it since it was made. Only ever used to stop a run on a node that takes too
// long (the simulation never reads it).
class WallBudget {
 public:
  explicit WallBudget(std::chrono::milliseconds budget);
  std::chrono::milliseconds left() const;  // <= 0: spent

 private:
  std::chrono::steady_clock::time_point deadline_;
};

// Ends every live child and its descendants, and waits for each shepherd. Async-signal-safe.
void kill_all_children();
// Installs SIGINT and SIGTERM handlers that kill every live child, then die of the signal as before; and ignores
// SIGPIPE (a write to a dead child is an error, not a death). Idempotent.
void install_child_reaper_signal_handlers();

}  // namespace lethe::external
