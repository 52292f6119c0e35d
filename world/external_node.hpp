// world/external_node.hpp — a consumer node that is the user's own OS process (protocol.kind = "external";
// the wire protocol is docs/external.md).
//
// One ExternalNode per worker incarnation: it spawns the scenario's [external] command (external/child_process.hpp),
// sends `init` (incarnation = the node's incarnation + 1), and then speaks the turn protocol. Each line lethe
// writes opens a turn; lethe reads (wall-clock poll, at most external.node_timeout) what the node writes until its
// `turn_end` for that turn (a node without lethe_turns in init_ok: until external.quiet_period of silence).
// Virtual time does not move during a turn: the process I/O blocks the simulation's one thread, never a fiber.
//
// What the node writes in a turn:
//   - a request to a service (lethe-store, sink, clock, lin-kv, seq-kv, lww-kv, lin-tso) becomes a fiber on this
//     node that performs the call over the simulated network (the store server, the sink with
//     workload.processing_time before the provider, the node's clock, world/external_services.hpp on the store's
//     node), with the RPC's timeout; its reply (error 0 on a timeout) is the node's next turn, written when the
//     call returns in virtual time;
//   - a reply to a `deliver` (deliver_ok / error) ends that delivery's attempt;
//   - a message to a peer (dest: a consumer node's name) is sent one way over the simulated network (the
//     consumers-to-consumers link, its faults and partitions) and is written, unchanged, as the receiver's next
//     turn at its arrival; dropped when the receiver is down then or its process has not answered init.
// handle() delivers one message per processor the worker serves, one after the other, each an attempt (ledger,
// trace "attempt" / "outcome"), and waits in virtual time for its reply.
//
// What lethe infers from the traffic (the judgement, docs/external.md): a start write (an applied write of the
// delivery's dedupe or inbox record setting its owner) is the attempt's decision (absent, stale takeover or
// expired completed, from what it replaced), a read that found a completed record a skip, an applied write setting
// completed_at the completion; an effect before any store traffic on the record is unprotected. The named crash
// points are recognised there: after the start write's reply, after the effect's reply, after the completion's
// reply (the reply is then never written: the node dies before it sees it).
//
// Determinism: every line written and read is traced ("node_line": turn, hash of the text, direction), and every
// peer message ("peer_message" when sent, "peer_dropped" when no process could read it), so the trace hash covers
// the node's behaviour. The order of fibers and the content of lines depend only on the seed
// and on what the node writes; a node that reads a real clock or an unseeded random is caught by comparing two
// runs (lethe run --check-determinism).
//
// Errors: a bad node (output that is not a message, an unknown type or service, a reply to nothing, a wrong src,
// exiting, no turn end within node_timeout) throws ExternalNodeError naming the node, the last line lethe sent,
// what was expected and the tail of its stderr; the world stops the run with it (exit code 2).
// Lifetime: the process is killed (SIGKILL to its group) when the node's incarnation ends (crash, end of run).
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "protocol/env.hpp"
#include "world/external_shared.hpp"
#include "world/sink.hpp"
#include "world/source.hpp"
#include "world/worker.hpp"

namespace lethe {

class ExternalSession;

// What a node's process reaches the world through; the node owns them (its request fibers may outlive the
// worker's main fiber while a crash unwinds them).
struct ExternalNodeParts {
  std::unique_ptr<StoreClient> store;
  std::unique_ptr<SinkClient> sink;
  std::shared_ptr<ProtocolHooks> hooks;
};

class ExternalNode {
 public:
  // Spawns the process and runs its init turn. Throws ExternalNodeError (a bad node) or sim::Crash.
  ExternalNode(const WorkerEnvironment& environment, ExternalShared& shared, sim::Node& self, ExternalNodeParts parts,
               std::vector<ProcessorId> processors);
  ~ExternalNode();
  ExternalNode(const ExternalNode&) = delete;
  ExternalNode& operator=(const ExternalNode&) = delete;

  // One delivery per processor, one after the other; waits in virtual time for each reply.
  Handled handle(MessageId id);

 private:
  std::shared_ptr<ExternalSession> session_;
  std::vector<ProcessorId> processors_;
  const WorkerEnvironment& environment_;
  sim::Node& self_;
};

}  // namespace lethe
