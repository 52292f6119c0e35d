// world/queue.hpp — an SQS-like queue: competing consumers, visibility timeouts, receipt handles.
//
// Its durable state lives in the object and survives crashes of worker nodes;
// the consumer-side calls are made from worker fibers and reach the broker
// only through the simulated network, so loss, lost ACKs, duplication and
// partitions between the groups "consumers" and "broker" apply to them. Every
// message handed to a worker increments Ledger::deliveries (copies, replays
// and redeliveries included). Nothing here reads a clock or draws a random
// number except through the kernel and the sim::Rng streams passed in.
//
// One Queue is one queue; a scenario with several processors uses one Queue
// per processor (SNS fan-out to one SQS queue each). publish() appends a
// message at the broker (each publish is its own queue message, so a
// producer-side copy of an id is a second message). receive() is an RPC to the
// broker (zero service time): the broker hands out the oldest visible message
// (publish order), makes it invisible for visibility_timeout and gives it a
// fresh receipt handle. A message that is not deleted becomes visible again
// when its visibility timeout expires and is handed out again (to any
// consumer). acknowledge() is a DeleteMessage RPC: it deletes the message if
// the receipt is the message's latest one (a consumer whose message was
// received again by someone else holds a stale receipt: the delete is refused
// and returns false); deleting an already deleted message succeeds. A receive
// whose response is lost leaves the message invisible until its timeout, and a
// delete whose response is lost returns false although the message is gone:
// the caller cannot tell (as with SQS).
// Long poll: the worker polls with an RPC; when the broker has nothing visible
// it waits on the broker's Signal (notified on publish and on every visibility
// expiry), bounded by its deadline, then polls again. A poll that times out is
// retried at once (each failed poll costs rpc_timeout of virtual time).
//
// Trace kinds (node: broker-side kinds carry the broker, worker-side kinds the caller):
//   queue.publish    broker  a = id, b = message number, c = queue index
//   queue.receive    broker  a = id, b = message number, c = receipt
//   queue.deliver    worker  a = id, b = message number, c = receive count
//   queue.visible    broker  a = id, b = message number, c = the expired receipt
//   queue.delete     broker  a = id, b = message number, c = 1 deleted now | 2 already deleted | 0 stale receipt
//
// Lifetime: the simulation, the network and every node passed in must outlive
// the source, and the source must outlive every call into it and every run of
// the simulation (it schedules timers and network callbacks that point at it).
//
// The broker's sim::Service has zero service time, so it draws nothing from
// its own Rng.
//
// ---- QueueSource (topology.source = "queue"): the MessageSource over one Queue per processor, each getting
// every published message (fan-out, as SNS to several SQS queues). A worker serves its processor's queue: it
// long-polls (receive with a 20 s deadline, as SQS's WaitTimeSeconds = 20: the broker hands a newly visible
// message to one waiting receiver at once, so idle consumers re-poll only every 20 s), handles the message,
// and deletes it. A message whose handling failed is not deleted: the visibility timeout redelivers it.
//
// Does not: model broker crashes or broker-side latency (service time zero),
// message retention, dead-letter queues or FIFO queues.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "core/config.hpp"
#include "check/ledger.hpp"
#include "protocol/store_ops.hpp"
#include "sim/channel.hpp"
#include "sim/network.hpp"
#include "sim/node.hpp"
#include "sim/simulation.hpp"
#include "sim/trace.hpp"
#include "world/source.hpp"

namespace lethe {

namespace source_kinds {
inline constexpr sim::TraceKind kQueuePublish{"queue.publish", "message", "number", "queue"};
inline constexpr sim::TraceKind kQueueReceive{"queue.receive", "message", "number", "receipt"};
inline constexpr sim::TraceKind kQueueDeliver{"queue.deliver", "message", "number", "receive_count"};
inline constexpr sim::TraceKind kQueueVisible{"queue.visible", "message", "number", "receipt"};
inline constexpr sim::TraceKind kQueueDelete{"queue.delete", "message", "number", "result"};
}  // namespace source_kinds

struct QueueSettings {
  sim::Duration visibility_timeout = 30 * sim::kSecond;  // > 0
  sim::Duration rpc_timeout = sim::kSecond;              // > 0: a worker's wait for each broker RPC
  std::uint32_t index = 0;                               // names the queue in traces (e.g. the processor id)

  // topology.visibility_timeout and network.rpc_timeout.
  static QueueSettings from(const ScenarioConfig& config, std::uint32_t index = 0);
};

// One receive of one queue message by a worker.
struct Delivery {
  MessageId id = 0;
  std::uint64_t message = 0;        // the queue's message number (publish order from 0): copies of an id differ
  std::uint64_t receipt = 0;        // receipt handle, unique per receive (from 1)
  std::uint32_t receive_count = 0;  // 1 on the first receive of this message, 2 on its first redelivery, ...
  sim::Time invisible_until = 0;    // when the message becomes visible again unless deleted
  std::uint32_t payload = 0;        // the payload version this queue message was published with
  bool operator==(const Delivery&) const = default;
};

class Queue {
 public:
  // `broker` is the broker's node (group "broker"). Throws std::invalid_argument on bad settings.
  Queue(sim::Simulation& simulation, sim::Network& network, sim::Node& broker, QueueSettings settings,
        Ledger& ledger);
  Queue(const Queue&) = delete;
  Queue& operator=(const Queue&) = delete;

  // Appends a message (visible at once). Runs at the broker: from a callback or any fiber; never blocks.
  // Returns its message number.
  std::uint64_t publish(MessageId id, std::uint32_t payload = 0);

  // From a worker fiber: a visible message, or nullopt once `deadline` has passed with none. Always polls
  // at least once; a poll in flight at the deadline finishes first (returns at most rpc_timeout late).
  // Throws sim::Crash if the worker crashes.
  std::optional<Delivery> receive(sim::Time deadline);
  // receive(deadline) without holding the worker's stack while it waits (a poll in flight, a long poll asleep):
  // true with `received` set when it ended without waiting; otherwise false, after which the calling fiber must
  // return at once, and then(what receive() would have returned) runs in a new fiber of its slot
  // (sim::Simulation::park_then). The same run as receive().
  using ReceiveThen = std::function<void(std::optional<Delivery>)>;
  bool receive_or_then(sim::Time deadline, std::optional<Delivery>& received, ReceiveThen then);
  // From a worker fiber: DeleteMessage. True if the broker answered that the message is deleted.
  bool acknowledge(const Delivery& delivery);

  // Every published message deleted (nothing visible, nothing in flight).
  bool drained() const { return deleted_ == published_; }
  std::size_t published() const { return published_; }
  std::size_t deleted() const { return deleted_; }
  std::size_t visible() const { return revisible_.size() + (published_ - fresh_); }
  std::size_t in_flight() const { return published_ - deleted_ - visible(); }
  std::uint64_t receives() const { return receives_; }    // at the broker (responses lost included)
  std::uint64_t expiries() const { return expiries_; }    // visibility timeouts that made a message visible again
  // f(id, invisible_until) for each message in flight whose visibility timeout expires after `end`, in publish
  // order: a copy the queue hands out again only after a run that ended at `end`.
  template <class F>
  void for_each_due_after(sim::Time end, F&& f) const {
    for (const Entry& entry : entries_) {
      if (entry.state == State::InFlight && entry.invisible_until > end) f(entry.id, entry.invisible_until);
    }
  }
  const QueueSettings& settings() const { return settings_; }
  sim::Node& broker() { return broker_; }

 private:
  // The payload versions other than 0, by message number (sparse: a queue of unchanged payloads keeps none).
  std::map<std::uint64_t, std::uint32_t> changed_payloads_;
  enum class State : std::uint8_t { Visible, InFlight, Deleted };
  struct Entry {  // 32 bytes: the queue holds one per message published and not yet deleted
    MessageId id = 0;
    std::uint64_t receipt = 0;  // the latest receipt (0: never received)
    sim::Time invisible_until = 0;  // InFlight: when the latest receipt's visibility timeout expires
    std::uint32_t receive_count = 0;
    State state = State::Visible;
  };
  struct ReceiveResponse {
    std::optional<Delivery> delivery;
  };
  enum class DeleteResult : std::uint8_t { Stale = 0, Deleted = 1, AlreadyDeleted = 2 };

  ReceiveResponse serve_receive();
  // receive()'s loop, in pieces that both forms share: a poll, what its answer leads to, and a delivery taken.
  enum class AfterPoll : std::uint8_t { Delivered, DeadlinePassed, PollAgain, Sleep };
  std::optional<ReceiveResponse> poll();
  AfterPoll after_poll(const std::optional<ReceiveResponse>& response, sim::Time deadline);
  Delivery delivered(const Delivery& delivery);
  // One receive_or_then() in progress.
  struct Receiving {
    sim::Time deadline = 0;
    ReceiveThen then;
  };
  // receive()'s loop from a poll's answer (`polled`), or from a poll to make: true when it ended (`received`
  // set), false when the slot waits (the continuation goes on with resume_receive).
  bool run_receive(const std::shared_ptr<Receiving>& receiving, std::optional<std::optional<ReceiveResponse>> polled,
                   std::optional<Delivery>& received);
  void resume_receive(const std::shared_ptr<Receiving>& receiving,
                      std::optional<std::optional<ReceiveResponse>> polled);
  DeleteResult serve_delete(MessageId id, std::uint64_t message, std::uint64_t receipt);
  Entry& entry(std::uint64_t message) { return entries_[static_cast<std::size_t>(message - first_entry_)]; }
  void expire(std::uint64_t message, std::uint64_t receipt);
  // The visibility timeouts: one per receive, in receive order (the timeout is constant, so in time order too),
  // and one kernel timer, for the earliest whose receipt is still in flight: a message deleted before its timeout
  // (nearly every one) costs no timer. Each timer keeps the place it would have had if set at its receive.
  struct PendingExpiry {
    sim::Time at = 0;
    sim::Simulation::TimerPlace place;
    std::uint64_t message = 0;
    std::uint64_t receipt = 0;
  };
  // The message is in flight under `receipt` (not deleted, not received again since, not visible again).
  bool in_flight_under(std::uint64_t message, std::uint64_t receipt) const;
  void arm_expiry();        // sets the kernel timer for the earliest live pending expiry, if any and none is set
  void run_armed_expiry();  // the kernel timer's callback
  void changed();
  bool has_visible() const { return !revisible_.empty() || fresh_ < published_; }

  sim::Simulation& simulation_;
  sim::Network& network_;
  sim::Node& broker_;
  QueueSettings settings_;
  Ledger& ledger_;
  sim::Service service_;
  // Memory: messages from the oldest one not yet deleted on (a deleted message at the front is dropped), and
  // no per-message index: the visible messages are the never-received ones, which are every message from
  // fresh_ on (they are handed out in publish order and cannot be deleted before their first receive), and
  // the few made visible again by a visibility timeout (all older than fresh_, so they go first).
  std::deque<Entry> entries_;            // messages first_entry_ .. published_ - 1
  std::uint64_t first_entry_ = 0;
  std::uint64_t published_ = 0;
  std::uint64_t fresh_ = 0;              // the first message never received
  std::set<std::uint64_t> revisible_;    // visible again after a visibility timeout, oldest first
  std::size_t deleted_ = 0;
  std::uint64_t next_receipt_ = 1;
  std::uint64_t receives_ = 0;
  std::uint64_t expiries_ = 0;
  std::uint64_t unclaimed_ = 0;          // messages made visible while no receiver slept (see receive())
  std::deque<PendingExpiry> pending_expiries_;
  bool expiry_armed_ = false;
  sim::Signal changed_;
};

class QueueSource final : public MessageSource {
 public:
  explicit QueueSource(const SourceContext& context);

  void publish(MessageId id, std::uint32_t payload) override;
  void consume(SourceWorker& worker) override;
  bool drained() const override;
  void account_due_after(Ledger& ledger, sim::Time end) const override;

  Queue& queue(ProcessorId processor) { return *queues_.at(processor); }

 private:
  // The consume loop of `worker` on `queue`, from a receive's result (`received`) or from a receive to make;
  // returns when the worker waits without its fiber (the continuation holds `worker`).
  void serve(Queue& queue, const std::shared_ptr<SourceWorker>& worker,
             std::optional<std::optional<Delivery>> received);

  std::vector<WorkerSlot> workers_;
  std::vector<std::unique_ptr<Queue>> queues_;  // by processor
};

// Registers QueueSource as "queue" (called from the registry's list of built-ins).
void register_queue_source(SourceRegistry& registry);

}  // namespace lethe
