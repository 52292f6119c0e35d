// world/sources.hpp — where messages come from: an SQS-like queue, a Kafka-like
// topic with consumer groups, and request/response clients that retry.
//
// All three are plain classes. Their durable state (the queue's messages, the
// partition logs, the committed offsets, the clients' progress) lives in the
// object and survives crashes of worker nodes; the consumer-side calls are
// made from worker fibers and reach the broker (or the clients) only through
// the simulated network, so loss, lost ACKs, duplication and partitions
// between the groups "consumers", "broker" and "clients" apply to them. Every
// message handed to a worker increments Ledger::deliveries (copies, replays
// and redeliveries included). Nothing here reads a clock or draws a random
// number except through the kernel and the sim::Rng streams passed in.
//
// ---- Queue (topology.source = "queue"): competing consumers, as SQS.
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
// ---- Kafka (topology.source = "kafka"): one topic, one consumer group per processor.
// publish() appends the id to one of `partitions` logs: partitioner "key" uses
// partition_for_key(id) (a splitmix64 mix of the id modulo the partition count:
// stable across runs and platforms), "random" draws the partition from the
// Rng given to the constructor. The same id may be appended several times
// (producer retries, redelivery copies): each append is its own record.
// Membership (the coordinator side, called by the world; never blocks, no
// network): join(m), leave(m) and rebalance() each bump the group's generation
// and recompute the assignment with the RANGE assignor over the live members
// sorted by index (P partitions, n members: each gets P / n consecutive
// partitions, the first P % n members one more). join() of a live member is a
// rejoin (a new generation too); leave() of a non-member does nothing.
// The rebalance is eager: every member gives up all its partitions, and the
// owner of a partition in the new generation starts from the group's last
// committed offset, so every record past it is replayed (there is no commit on
// revocation: records finished but not committed when the rebalance happens
// are replayed).
// Consumer side (member m, from a fiber of its worker node): the fetch
// positions are the member's own volatile state (they die with the worker's
// incarnation: a restarted worker starts again from the committed offsets of
// the partitions the coordinator still assigns it). poll() is a fetch RPC: if
// the member's generation is out of date the broker answers with the new
// assignment and committed offsets (the member resets its positions and
// fetches again); otherwise it answers with the next record of one of the
// member's partitions, round-robin across them. Processing is sequential per
// partition: while a record of a partition is out (handed out and neither
// committed nor released), the member hands out no other record of that
// partition, so several fibers of one member may poll concurrently and still
// process each partition in order. poll() blocks until a record or the
// deadline; a waiting member is woken by an append to a partition it owns, a
// membership change of its group, or the end of one of its own records (idle
// members do not all fetch on every append).
// commit(m, r) finishes r. With commit = "after-each" it sends an OffsetCommit
// RPC of r.offset + 1: the broker accepts it only if m is a live member, r was
// handed out in the group's current generation and m owns the partition
// (otherwise it is rejected: the partition's new owner replays the record, the
// classic rebalance duplicate); commit() returns whether the broker accepted
// it (false also when the request or its response was lost: an unanswered
// commit is retried by the member's next poll, and again every rpc_timeout
// while it waits in poll, until the broker answers — a later commit of the
// partition covers it; so a member that keeps polling eventually commits its
// last record even when that record's commit was lost). With
// commit = "interval(d)" commit() only records r as finished (returns false if
// r belongs to an older generation or incarnation of the member); the member
// commits its finished offsets lazily, in poll(), when d has passed since its
// last commit (as Kafka's auto-commit does; a member waiting in poll() wakes
// for it), so a crash or a rebalance replays up to d worth of finished records.
// release(m, r) finishes r WITHOUT committing it: the member's position goes
// back to r.offset, so the next poll hands r out again (for a processing
// failure that must be retried; no network).
// drained(): every group has committed the end of every partition.
//
// ---- ClientsSource (topology.source = "clients"): request/response callers.
// `clients` client nodes (group "clients", named "client-<i>") are created by
// the constructor. The ids are dealt round-robin: id number k goes to client
// k % clients. After start(), each client starts its requests as a Poisson
// process at rate_per_second (open loop: a new request does not wait for the
// previous one), each request in its own fiber: a try is a one-way message to
// a worker's request mailbox; the worker answers with a one-way response
// carrying the try's tag; the client waits up to `timeout` for the response of
// THAT try (a late response to an earlier try is dropped, as by an HTTP client
// that opened a new connection), then sleeps RetryPolicy(backoff,
// jitter).delay(n) and sends retry n with the SAME message id, up to `retries`
// retries; then it gives up. So a lost response makes the worker see the id
// again: the lost-ACK duplicate. Worker choice per try: WorkerChoice::ById
// sends every try of an id to worker id % workers (sticky routing);
// WorkerChoice::RandomPerTry (the default) draws the worker for every try, as
// a load balancer spreads retries. Requests queued at a worker that crashes
// are lost with it (they belonged to the dead incarnation).
// Randomness: client i uses three sub-streams of the constructor's Rng,
// "client-<i>/arrivals", "client-<i>/routing" and "client-<i>/jitter", so
// changing the jitter never shifts the arrivals and clients never share draws.
// Clients are assumed never to crash (no fault targets the "clients" group).
//
// Trace kinds (node: broker-side kinds carry the broker, worker/client-side kinds the caller):
//   queue.publish    broker  a = id, b = message number, c = queue index
//   queue.receive    broker  a = id, b = message number, c = receipt
//   queue.deliver    worker  a = id, b = message number, c = receive count
//   queue.visible    broker  a = id, b = message number, c = the expired receipt
//   queue.delete     broker  a = id, b = message number, c = 1 deleted now | 2 already deleted | 0 stale receipt
//   kafka.append     broker  a = id, b = partition, c = offset
//   kafka.deliver    worker  a = id, b = processor << 32 | partition, c = offset
//   kafka.commit     broker  a = processor << 32 | partition, b = committed offset (next to read), c = accepted
//   kafka.rebalance  broker  a = processor, b = generation, c = live members
//   client.send      client  a = id, b = tag, c = worker << 32 | try number
//   client.retry     client  a = id, b = retry number, c = backoff slept (ns)
//   client.ok        client  a = id, b = tries, c = value received
//   client.give_up   client  a = id, b = tries
//   request.deliver  worker  a = id, b = tag, c = client
//
// Lifetime: the simulation, the network and every node passed in must outlive
// the source, and the source must outlive every call into it and every run of
// the simulation (it schedules timers and network callbacks that point at it).
//
// The broker's sim::Services have zero service time, so they draw nothing from
// their own Rng.
//
// Does not: model broker crashes or broker-side latency (service time zero),
// message retention, dead-letter queues, FIFO queues, Kafka transactions,
// heartbeats and session timeouts (the world calls leave()), a cooperative
// rebalance protocol, or client crashes.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/config.hpp"
#include "check/ledger.hpp"
#include "world/retry.hpp"
#include "protocol/store_ops.hpp"
#include "sim/channel.hpp"
#include "sim/network.hpp"
#include "sim/node.hpp"
#include "sim/random.hpp"
#include "sim/simulation.hpp"
#include "sim/trace.hpp"

namespace lethe {

namespace source_kinds {
inline constexpr sim::TraceKind kQueuePublish{"queue.publish"};
inline constexpr sim::TraceKind kQueueReceive{"queue.receive"};
inline constexpr sim::TraceKind kQueueDeliver{"queue.deliver"};
inline constexpr sim::TraceKind kQueueVisible{"queue.visible"};
inline constexpr sim::TraceKind kQueueDelete{"queue.delete"};
inline constexpr sim::TraceKind kKafkaAppend{"kafka.append"};
inline constexpr sim::TraceKind kKafkaDeliver{"kafka.deliver"};
inline constexpr sim::TraceKind kKafkaCommit{"kafka.commit"};
inline constexpr sim::TraceKind kKafkaRebalance{"kafka.rebalance"};
inline constexpr sim::TraceKind kClientSend{"client.send"};
inline constexpr sim::TraceKind kClientRetry{"client.retry"};
inline constexpr sim::TraceKind kClientOk{"client.ok"};
inline constexpr sim::TraceKind kClientGiveUp{"client.give_up"};
inline constexpr sim::TraceKind kRequestDeliver{"request.deliver"};
}  // namespace source_kinds

// ======================================================================== Queue

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
  std::uint64_t publish(MessageId id);

  // From a worker fiber: a visible message, or nullopt once `deadline` has passed with none. Always polls
  // at least once; a poll in flight at the deadline finishes first (returns at most rpc_timeout late).
  // Throws sim::Crash if the worker crashes.
  std::optional<Delivery> receive(sim::Time deadline);
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
  const QueueSettings& settings() const { return settings_; }
  sim::Node& broker() { return broker_; }

 private:
  enum class State : std::uint8_t { Visible, InFlight, Deleted };
  struct Entry {  // 24 bytes: the queue holds one per message published and not yet deleted
    MessageId id = 0;
    std::uint64_t receipt = 0;  // the latest receipt (0: never received)
    std::uint32_t receive_count = 0;
    State state = State::Visible;
  };
  struct ReceiveResponse {
    std::optional<Delivery> delivery;
  };
  enum class DeleteResult : std::uint8_t { Stale = 0, Deleted = 1, AlreadyDeleted = 2 };

  ReceiveResponse serve_receive();
  DeleteResult serve_delete(MessageId id, std::uint64_t message, std::uint64_t receipt);
  Entry& entry(std::uint64_t message) { return entries_[static_cast<std::size_t>(message - first_entry_)]; }
  void expire(std::uint64_t message, std::uint64_t receipt);
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
  sim::Signal changed_;
};

// ======================================================================== Kafka

struct KafkaSettings {
  int partitions = 8;                          // >= 1
  Partitioner partitioner = Partitioner::Key;
  Commit commit;                               // after-each | interval(d) with d > 0
  int processors = 1;                          // consumer groups, for processor ids 0 .. processors - 1; >= 1
  sim::Duration rpc_timeout = sim::kSecond;    // > 0

  // topology.partitions, .partitioner, .commit, the number of topology.processors, network.rpc_timeout.
  static KafkaSettings from(const ScenarioConfig& config);
};

// One record handed to a member.
struct KafkaRecord {
  int partition = 0;
  std::int64_t offset = 0;
  MessageId id = 0;
  std::uint64_t generation = 0;  // the group generation the member held when it was handed out
  bool operator==(const KafkaRecord&) const = default;
};

// Where publish() appended a record.
struct KafkaAppend {
  int partition = 0;
  std::int64_t offset = 0;
};

class Kafka;

class ConsumerGroup {
 public:
  ConsumerGroup(Kafka& kafka, ProcessorId processor);
  ConsumerGroup(const ConsumerGroup&) = delete;
  ConsumerGroup& operator=(const ConsumerGroup&) = delete;

  // --- membership (the coordinator; from the world, a callback or a fiber; never block). REQUIRES member >= 0.
  void join(int member);
  void leave(int member);
  void rebalance();

  // --- consumer side, from a fiber of member `member`'s worker node (see the header comment).
  // The next record of one of the member's partitions, or nullopt once `deadline` has passed with none.
  // Throws sim::Crash if the worker crashes.
  std::optional<KafkaRecord> poll(int member, sim::Time deadline);
  // Finishes `record`. after-each: true iff the broker accepted the offset commit. interval: true iff the
  // record was recorded for the next periodic commit.
  bool commit(int member, const KafkaRecord& record);
  // Finishes `record` without committing it: it is handed out again by the member's next poll.
  void release(int member, const KafkaRecord& record);

  // --- the coordinator's view.
  ProcessorId processor() const { return processor_; }
  std::uint64_t generation() const { return generation_; }
  const std::set<int>& members() const { return members_; }
  bool is_member(int member) const { return members_.count(member) != 0; }
  int owner(int partition) const;                 // -1: unassigned
  std::vector<int> assignment(int member) const;  // partitions owned by `member`, ascending
  std::int64_t committed(int partition) const;    // the next offset the group will read after a rebalance
  bool drained() const;                           // committed == end of log for every partition
  std::uint64_t replays() const { return replays_; }  // records handed out again (offset below the high water)
  std::uint64_t accepted_commits() const { return accepted_commits_; }
  std::uint64_t rejected_commits() const { return rejected_commits_; }

 private:
  friend class Kafka;
  struct Cursor {
    int partition = 0;
    std::int64_t position = 0;      // next offset to fetch
    bool out = false;               // a record of this partition is handed out and not finished
    std::int64_t out_offset = 0;
  };
  // The member's volatile consumer state (dies with its worker's incarnation).
  struct MemberState {
    bool known = false;
    sim::NodeId node = 0;
    std::uint32_t incarnation = 0;
    std::uint64_t generation = 0;            // 0: must learn the assignment from the broker
    std::vector<Cursor> cursors;             // the member's partitions, ascending
    std::size_t next_cursor = 0;             // round-robin start
    std::map<int, std::int64_t> finished;    // partition -> next offset, finished and not known committed
    sim::Time next_commit_at = 0;            // when commit_pending() sends them (interval: 0 = not scheduled)
  };
  enum class FetchKind : std::uint8_t { Record, Empty, Sync, NotMember };
  struct FetchResponse {
    FetchKind kind = FetchKind::Empty;
    std::uint64_t generation = 0;
    std::vector<std::pair<int, std::int64_t>> assignment;  // Sync: partition, committed offset
    KafkaRecord record;                                    // Record
  };

  struct Waiter {
    int member = 0;
    sim::Waker waker;
  };

  MemberState& member_state(int member);
  void bump();
  // Wake-ups: a member waiting in poll() is woken when something it may fetch changes.
  void notify(int member);  // an append to a partition it owns, or one of its records finished
  void notify_all();        // a membership change
  std::uint64_t wake_version(int member) const;
  void wait(int member, sim::Time deadline);
  FetchResponse serve_fetch(int member, std::uint64_t generation,
                            const std::vector<std::pair<int, std::int64_t>>& candidates) const;
  bool serve_commit(int member, std::uint64_t generation, const std::vector<std::pair<int, std::int64_t>>& offsets);
  static std::vector<std::pair<int, std::int64_t>> fetch_candidates(const MemberState& state);
  static void sync(MemberState& state, std::uint64_t generation,
                   const std::vector<std::pair<int, std::int64_t>>& assignment);
  void delivered(const KafkaRecord& record);
  bool accept(MemberState& state, const KafkaRecord& record);
  bool finish(int member, MemberState& state, const KafkaRecord& record, bool rewind);
  void commit_pending(int member, MemberState& state);
  void check_partition(int partition) const;

  Kafka& kafka_;
  ProcessorId processor_;
  std::uint64_t generation_ = 0;
  std::set<int> members_;
  std::vector<int> owner_;                  // by partition
  std::vector<std::int64_t> committed_;     // by partition
  std::vector<std::int64_t> high_water_;    // by partition: 1 + the highest offset handed out
  std::map<int, MemberState> member_states_;
  std::vector<Waiter> waiters_;                  // in the order they started waiting
  std::uint64_t group_version_ = 0;              // bumped by notify_all()
  std::map<int, std::uint64_t> member_version_;  // bumped by notify(member)
  std::uint64_t replays_ = 0;
  std::uint64_t accepted_commits_ = 0;
  std::uint64_t rejected_commits_ = 0;
};

class Kafka {
 public:
  // `broker` is the broker's node (group "broker"); `rng` draws partitions for partitioner "random" only.
  // Throws std::invalid_argument on bad settings.
  Kafka(sim::Simulation& simulation, sim::Network& network, sim::Node& broker, KafkaSettings settings,
        Ledger& ledger, sim::Rng rng);
  Kafka(const Kafka&) = delete;
  Kafka& operator=(const Kafka&) = delete;

  // Appends one record (at the broker: from a callback or any fiber; never blocks).
  KafkaAppend publish(MessageId id);
  // The keyed partitioner: stable for a given id and partition count. REQUIRES partitions >= 1.
  static int partition_for_key(MessageId id, int partitions);

  // The consumer group of processor `processor`. REQUIRES processor < settings().processors.
  ConsumerGroup& group(ProcessorId processor);
  const ConsumerGroup& group(ProcessorId processor) const;

  const std::vector<MessageId>& log(int partition) const;
  std::int64_t end_offset(int partition) const { return static_cast<std::int64_t>(log(partition).size()); }
  std::uint64_t records() const { return records_; }
  // Every group has committed the end of every partition.
  bool drained() const;
  const KafkaSettings& settings() const { return settings_; }
  sim::Node& broker() { return broker_; }

 private:
  friend class ConsumerGroup;

  sim::Simulation& simulation_;
  sim::Network& network_;
  sim::Node& broker_;
  KafkaSettings settings_;
  Ledger& ledger_;
  sim::Rng rng_;
  sim::Service service_;
  std::vector<std::vector<MessageId>> logs_;
  std::vector<std::unique_ptr<ConsumerGroup>> groups_;
  std::uint64_t records_ = 0;
};

// ======================================================================== ClientsSource

enum class WorkerChoice : std::uint8_t {
  ById,          // every try of id goes to worker id % workers
  RandomPerTry,  // each try draws its worker (a load balancer)
};

struct ClientsSettings {
  int clients = 10;                       // >= 1
  double rate_per_second = 5.0;           // requests started per second by EACH client (Poisson); > 0, finite
  sim::Duration timeout = sim::kSecond;   // a client's wait for the response of one try; > 0
  int retries = 0;                        // retries after the first try; >= 0
  Backoff backoff;                        // the delay before each retry ...
  Jitter jitter = Jitter::None;           // ... and its jitter (RetryPolicy)
  WorkerChoice worker_choice = WorkerChoice::RandomPerTry;
};

// One try of one request, as the worker sees it.
struct Request {
  MessageId id = 0;
  std::uint32_t client = 0;
  std::uint32_t worker = 0;     // the worker index it was sent to
  std::uint32_t try_number = 1; // 1 = first try, 2 = first retry, ...
  std::uint64_t tag = 0;        // unique per try: the response must carry it
  sim::Time sent_at = 0;
  bool operator==(const Request&) const = default;
};

struct ClientStats {
  std::uint64_t requests = 0;        // requests started (one per id)
  std::uint64_t retries = 0;         // tries beyond the first (sends = requests + retries)
  std::uint64_t successes = 0;       // requests that got a response
  std::uint64_t gave_up = 0;         // requests whose every try timed out
  std::uint64_t late_responses = 0;  // responses that arrived after their try was abandoned
};

// What happened to one request (one id of one client).
struct RequestOutcome {
  MessageId id = 0;
  std::uint32_t client = 0;
  std::uint32_t tries = 0;
  bool finished = false;
  bool succeeded = false;
  std::optional<std::uint64_t> value;  // the value the client received
  sim::Time started_at = 0;
  sim::Time finished_at = 0;
};

class ClientsSource {
 public:
  // Creates settings.clients client nodes (group "clients"). `workers` are the worker nodes, by worker index;
  // `ids` the message ids to request; `rng` the root of the clients' streams.
  // Throws std::invalid_argument on bad settings or no workers.
  ClientsSource(sim::Simulation& simulation, sim::Network& network, std::vector<sim::Node*> workers,
                ClientsSettings settings, std::vector<MessageId> ids, Ledger& ledger, sim::Rng rng);
  ClientsSource(const ClientsSource&) = delete;
  ClientsSource& operator=(const ClientsSource&) = delete;

  // Starts every client's main fiber. Call once.
  void start();

  // Worker side, from a fiber of worker `worker`: the next request sent to it, or nullopt at `deadline`.
  std::optional<Request> next_request(int worker, sim::Time deadline);
  // Worker side: a one-way response carrying `request.tag` and `value`, from the request's worker.
  void respond(const Request& request, std::uint64_t value);

  // Every request finished (succeeded or gave up).
  bool drained() const { return finished_ == outcomes_.size(); }
  std::size_t finished() const { return finished_; }
  const ClientStats& stats(int client) const;
  ClientStats totals() const;
  const std::vector<RequestOutcome>& outcomes() const { return outcomes_; }  // in id order of the input
  sim::Node& client_node(int client);
  int clients() const { return static_cast<int>(clients_.size()); }
  const ClientsSettings& settings() const { return settings_; }

 private:
  struct Queued {
    Request request;
    std::uint32_t incarnation = 0;  // of the worker when it arrived
  };
  struct Client {
    sim::Node* node = nullptr;
    sim::Rng arrivals;
    sim::Rng routing;
    sim::Rng jitter;
    ClientStats stats;
    std::vector<std::size_t> share;                          // indices into outcomes_
    std::map<std::uint64_t, sim::Channel<std::uint64_t>> pending;  // tag -> the response of that try
    std::uint64_t next_tag = 1;
  };

  void run_client(std::uint32_t client);
  void run_request(std::uint32_t client, std::size_t outcome);
  std::uint32_t choose_worker(Client& client, MessageId id);
  void arrive_request(const Request& request);
  void arrive_response(std::uint32_t client, std::uint64_t tag, std::uint64_t value);

  sim::Simulation& simulation_;
  sim::Network& network_;
  std::vector<sim::Node*> workers_;
  ClientsSettings settings_;
  Ledger& ledger_;
  std::vector<std::unique_ptr<Client>> clients_;
  std::vector<sim::Channel<Queued>> mailboxes_;  // by worker index
  std::vector<RequestOutcome> outcomes_;
  std::size_t finished_ = 0;
  bool started_ = false;
};

}  // namespace lethe
