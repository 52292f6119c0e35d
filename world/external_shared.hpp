// world/external_shared.hpp — what the external nodes of one run share (world/external_node.hpp), and one line
// exchanged with a node, as kept for `lethe run --check-determinism` (WorldOptions::external_lines).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "external/child_process.hpp"
#include "external/node_clock.hpp"
#include "sim/network.hpp"
#include "world/external_services.hpp"

namespace lethe {

class ExternalSession;

// A bad external node: the scenario's consumer broke the protocol (run_world throws it; the runner exits with
// code 2).
struct ExternalNodeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct ExternalLine {
  std::string node;               // the consumer node's name
  std::uint32_t incarnation = 0;  // the node's incarnation (0 before its first restart)
  std::uint64_t turn = 0;         // the turn the line opened (sent) or belongs to (received)
  bool sent = false;              // true: lethe wrote it; false: the node wrote it
  std::string text;
};

// How the turns of a node without lethe_turns (a plain Maelstrom node) ended, over all its processes: what the
// run's reproducibility depends on (World says so in RunResult::not_reproducible).
struct PlainNodeTurns {
  std::uint64_t turns = 0;       // turns after its init_ok
  std::uint64_t by_silence = 0;  // ended after external.quiet_period of silence (not seen still)
  std::string silence_why;       // the first such turn's reason ("plain_turn_end = \"silence\"", what the kernel lacked)
  std::uint64_t with_timer = 0;  // ended still, with a wall-clock timer of the node's own pending
  std::string first_timer;       // the first such timer ("thread 812 in epoll_wait with a 1000 ms timeout")
  std::uint64_t timers_unread = 0;  // ended still, but what its threads sleep in could not be read
  std::uint64_t wrote_between = 0;  // lines it wrote after a turn ended, before the next (read in the next turn)
  std::string wall_clock_why;       // why its clock was the machine's (external.clock = "wall", no library...)
  std::uint64_t slots_missed = 0;   // timed waits the virtual-clock library made in wall time (no slot was free)
  bool reproducible() const {
    return by_silence == 0 && with_timer == 0 && timers_unread == 0 && wrote_between == 0 && slots_missed == 0;
  }
  // Adds another node's counts; the first reason and timer seen are kept.
  void add(const PlainNodeTurns& other) {
    turns += other.turns;
    by_silence += other.by_silence;
    with_timer += other.with_timer;
    timers_unread += other.timers_unread;
    wrote_between += other.wrote_between;
    slots_missed += other.slots_missed;
    if (silence_why.empty()) silence_why = other.silence_why;
    if (wall_clock_why.empty()) wall_clock_why = other.wall_clock_why;
    if (first_timer.empty()) first_timer = other.first_timer;
  }
};

// A node's process and, with external.clock = "virtual", the page that serves its clock and timers.
struct NodeProcess {
  std::unique_ptr<external::NodeClock> clock;  // null: the node reads the machine's clock
  std::unique_ptr<external::ChildProcess> process;
};

// What every external node of one run shares: the nodes' sessions (peer messages find their receiver there),
// lin-kv's interning of JSON keys and values (first seen, first
// numbered), the failures (the world rethrows them), the lines exchanged when asked for, and the processes started
// for the nodes' first incarnations all at once with the grace they share once one failed to start (nodes that
// never start cost external.node_timeout and one grace per run, not one each).
struct ExternalShared {
  std::map<std::string, std::uint64_t> linkv_keys;    // JSON text -> index (1, 2, ...)
  std::map<std::string, std::uint64_t> linkv_values;  // JSON text -> index (1, 2, ...)
  std::vector<std::string> linkv_value_text;          // index - 1 -> JSON text
  std::map<std::uint64_t, std::uint32_t> deliveries;  // group_key -> deliveries so far (`delivery` of deliver)
  // The run's bad nodes: the first one's ExternalNodeError in full, then every other one's, except the nodes that
  // failed in their init turn as the first did, with nothing on stderr (their init lines differ only in their
  // node_id): those are only named, in same_failures ("NAME (incarnation N, process STATUS)").
  std::string failure;
  std::string first_reason;                           // the first failure's "WHAT; expected EXPECTED"
  std::vector<std::string> same_failures;
  // The text the world throws: `failure`, then one line naming the same_failures.
  std::string failure_text() const {
    if (same_failures.empty()) return failure;
    std::string text = failure + "\nthe same in the init turn for " + std::to_string(same_failures.size()) +
                       " more external node" + (same_failures.size() == 1 ? "" : "s") + " (stderr empty):";
    for (std::size_t i = 0; i < same_failures.size(); ++i) text += (i == 0 ? " " : ", ") + same_failures[i];
    return text;
  }
  std::vector<NodeProcess> first_processes;           // spawned, not yet taken by a node
  std::vector<external::ChildProcess*> processes;     // every node's process, while its session lives
  bool first_spawned = false;                         // first_processes was filled
  // Set when a node failed in its init turn: what is left of the grace the other nodes share to answer init.
  std::optional<external::WallBudget> init_grace;
  // Set at the first bad node: what is left of the wall-clock time the run's bad nodes share to exit before their
  // status is read (ExternalSession::fail).
  std::optional<external::WallBudget> exit_grace;
  std::map<std::string, PlainNodeTurns> plain_nodes;  // nodes whose init_ok had no lethe_turns: how their turns ended
  std::vector<ExternalLine>* lines = nullptr;         // set: every line exchanged (WorldOptions::external_lines)
  // Each node's session once it answered init: where a peer message to the node is written (a session of a
  // crashed incarnation stays here until the next one replaces it; the receiver checks it is still the node's).
  std::map<std::string, std::weak_ptr<ExternalSession>> sessions;
  std::uint64_t peer_messages = 0;                    // peer messages sent so far: the next one's network tag
  // The virtual-clock library (external.clock = "virtual"), looked for once per run: its path, or "" and where
  // it was looked for.
  bool vclock_looked = false;
  std::string vclock_library;
  std::string vclock_searched;
  // Maelstrom's lin-tso, seq-kv and lww-kv (world/external_services.hpp), made at their first use, served by one
  // service on the store's node.
  std::optional<sim::Service> services;
  LinTso lin_tso;
  std::optional<SeqKv> seq_kv;
  std::optional<LwwKv> lww_kv;
  std::map<std::string, std::vector<WeakKvOp>> weak_kv_history;  // "seq-kv", "lww-kv" -> what the nodes were answered

  // Ends every process still running, side by side (the end of a run: the world calls it before the nodes'
  // fibers unwind, each of which would otherwise end its own process in turn).
  void end_processes() {
    std::vector<external::ChildProcess*> all = processes;
    for (const NodeProcess& first : first_processes) all.push_back(first.process.get());
    external::ChildProcess::kill_together(all);
  }
};

}  // namespace lethe
