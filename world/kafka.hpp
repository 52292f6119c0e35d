// world/kafka.hpp — a Kafka-like topic: one consumer group per processor, eager rebalances, offset commits.
//
// Its durable state lives in the object and survives crashes of worker nodes;
// the consumer-side calls are made from worker fibers and reach the broker
// only through the simulated network, so loss, lost ACKs, duplication and
// partitions between the groups "consumers" and "broker" apply to them. Every
// message handed to a worker increments Ledger::deliveries (copies, replays
// and redeliveries included). Nothing here reads a clock or draws a random
// number except through the kernel and the sim::Rng streams passed in.
//
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
// members do not all fetch on every append). A member with no partitions and
// nothing to commit is woken only by a change that gives it partitions or
// removes it: it learns a newer generation that gives it none at its next fetch
// (a rebalance costs work in the partitions, not in the members).
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
// Liveness of members (topology.session_timeout, topology.max_poll_interval; heartbeats are continuous, not
// messages): a member out of poll() — poll() handed it a record and it has not called poll() again — for
// max_poll_interval leaves the group (its heartbeat thread sends the LeaveGroup; a paused process's thread is
// frozen and looks again when the pause ends), and KafkaSource removes a member whose process is paused for
// longer than session_timeout, at the pause's start + session_timeout. Such a removal (remove()) is recorded in
// the ledger with every record the live members hold uncommitted (each one is replayed by the eager
// rebalance), the removed member's later commits fail, and its next poll() joins the group again (a JoinGroup
// RPC; the rebalance it causes is recorded the same way).
// drained(): every group has committed the end of every partition, and no live member still holds a record out
// (a replay overtook it after a rebalance: its effect and its failed commit are still to come).
//
// Trace kinds (node: broker-side kinds carry the broker, worker-side kinds the caller):
//   kafka.append     broker  a = id, b = partition, c = offset
//   kafka.deliver    worker  a = id, b = processor << 32 | partition, c = offset
//   kafka.commit     broker  a = processor << 32 | partition, b = committed offset (next to read), c = accepted
//   kafka.rebalance  broker  a = processor, b = generation, c = live members
//   kafka.remove     broker  a = processor << 32 | member, b = RemovalReason, c = its last heartbeat or poll
//
// Lifetime: the simulation, the network and every node passed in must outlive
// the source, and the source must outlive every call into it and every run of
// the simulation (it schedules timers and network callbacks that point at it).
//
// The broker's sim::Service has zero service time, so it draws nothing from
// its own Rng.
//
// ---- KafkaSource (topology.source = "kafka"): the MessageSource over one Kafka topic. Worker i is member
// WorkerSlot::member of its processor's group: it joins when it (re)starts, and the group notices a crashed
// member after session_timeout (it leaves then, unless it came back meanwhile: its restart rejoined). A paused
// worker (worker_paused) is removed once its pause has lasted session_timeout.
// A worker polls (100 ms deadline), handles the record and commits it; a record whose handling failed is
// handled again in place after the protocol's poll interval (its median, or the backoff's base; at least 1 ms):
// the partition waits. rebalance() rebalances every group.
//
// Does not: model broker crashes or broker-side latency (service time zero),
// message retention, Kafka transactions, heartbeats as network messages (a network partition does not remove a
// member), static membership, commits on revocation, or a cooperative rebalance protocol.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "core/config.hpp"
#include "check/ledger.hpp"
#include "protocol/store_ops.hpp"
#include "sim/network.hpp"
#include "sim/node.hpp"
#include "sim/random.hpp"
#include "sim/simulation.hpp"
#include "sim/trace.hpp"
#include "world/observations.hpp"
#include "world/source.hpp"

namespace lethe {

namespace source_kinds {
inline constexpr sim::TraceKind kKafkaAppend{"kafka.append", "message", "partition", "offset"};
inline constexpr sim::TraceKind kKafkaDeliver{"kafka.deliver", "message", "processor/partition", "offset"};
inline constexpr sim::TraceKind kKafkaCommit{"kafka.commit", "processor/partition", "next_offset", "accepted"};
inline constexpr sim::TraceKind kKafkaRebalance{"kafka.rebalance", "processor", "generation", "partitions"};
inline constexpr sim::TraceKind kKafkaRemove{"kafka.remove", "processor/member", "reason", "since"};
}  // namespace source_kinds

struct KafkaSettings {
  int partitions = 8;                          // >= 1
  Partitioner partitioner = Partitioner::ByKey;
  Commit commit;                               // after-each | interval(d) with d > 0
  int processors = 1;                          // consumer groups, for processor ids 0 .. processors - 1; >= 1
  sim::Duration rpc_timeout = sim::kSecond;    // > 0
  sim::Duration session_timeout = 45 * sim::kSecond;    // > 0
  sim::Duration max_poll_interval = 300 * sim::kSecond;  // > 0

  // topology.partitions, .partitioner, .commit, .session_timeout, .max_poll_interval, the number of
  // topology.processors, network.rpc_timeout.
  static KafkaSettings from(const ScenarioConfig& config);
};

// One record handed to a member.
struct KafkaRecord {
  int partition = 0;
  std::int64_t offset = 0;
  MessageId id = 0;
  std::uint64_t generation = 0;  // the group generation the member held when it was handed out
  std::uint32_t payload = 0;     // the payload version it was appended with
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
  // Removes live member `member` (on node `node`) for `reason`, its last heartbeat or poll at `since`: recorded
  // in the ledger (Ledger::member_removals, with the ids it held uncommitted) and traced (kafka.remove), and a
  // new generation without it. Its next poll rejoins the group (a JoinGroup RPC). Does nothing for a non-member,
  // or when a counterfactual's MemberKept acts on a message it holds. Returns whether it removed it.
  bool remove(int member, sim::NodeId node, RemovalReason reason, sim::Time since);
  bool removed(int member) const { return removed_.count(member) != 0; }

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
  // The member's poll clock (max_poll_interval): the consumer's heartbeat thread leaves the group when the
  // member has been out of poll() longer than that. One timer per member at a time.
  struct PollWatch {
    bool in_poll = false;
    bool armed = false;
    sim::Time last_exit = 0;  // when poll() last handed out a record
    sim::NodeId node = 0;
    std::uint32_t incarnation = 0;
  };

  MemberState& member_state(int member);
  void bump();
  // Wake-ups: a member waiting in poll() is woken when something it may fetch changes.
  void notify(int member);  // an append to a partition it owns, or one of its records finished
  void notify_all();        // a membership change
  void wake_idle(int member);
  // A member with nothing to fetch or commit and no partitions in the current generation, which it knows: a new
  // generation that gives it none changes nothing for it.
  bool idle(int member, const MemberState& state) const;
  std::uint64_t wake_version(int member) const;
  void wait(int member, const MemberState& state, sim::Time deadline);
  FetchResponse serve_fetch(int member, std::uint64_t generation,
                            const std::vector<std::pair<int, std::int64_t>>& candidates) const;
  bool serve_commit(int member, std::uint64_t generation, const std::vector<std::pair<int, std::int64_t>>& offsets);
  static std::vector<std::pair<int, std::int64_t>> fetch_candidates(const MemberState& state);
  void sync(int member, MemberState& state, std::uint64_t generation,
            const std::vector<std::pair<int, std::int64_t>>& assignment);
  void delivered(const KafkaRecord& record);
  bool accept(MemberState& state, const KafkaRecord& record);
  bool finish(int member, MemberState& state, const KafkaRecord& record, bool rewind);
  void commit_pending(int member, MemberState& state);
  void check_partition(int partition) const;
  std::vector<MessageId> held_by(int member) const;  // records handed out past the committed offset, ascending
  std::vector<MessageId> held_by_live_members() const;  // the same for every live member, ascending
  bool holds_record() const;                          // a live member has a record out
  bool kept_for_counterfactual() const;
  void record_change(sim::NodeId node, RemovalReason reason, bool rejoin, sim::Time since,
                     std::vector<MessageId> held);
  void polled(int member);                            // poll() began
  void handed_out(int member);                        // poll() returned a record
  void arm_poll_watch(int member, sim::Time at);
  void poll_watch_fired(int member);
  bool rejoin(int member);                            // the JoinGroup RPC of a removed member

  // Ended waits are dropped when waiters_ doubles (amortised O(1) a wait; waking an ended wait does nothing).
  static constexpr std::size_t kMinCompaction = 64;

  Kafka& kafka_;
  ProcessorId processor_;
  std::uint64_t generation_ = 0;
  std::set<int> members_;
  std::vector<int> owner_;                  // by partition
  std::map<int, std::pair<std::size_t, std::size_t>> ranges_;  // member -> its partitions [first, end) (bump())
  std::vector<std::int64_t> committed_;     // by partition
  std::vector<std::int64_t> high_water_;    // by partition: 1 + the highest offset handed out
  std::map<int, MemberState> member_states_;
  // The members whose state has partitions (cursors), the only ones that can hold a record: what a removal
  // looks through (every member's state would make a removal cost work in the members).
  std::set<int> with_cursors_;
  std::map<int, std::pair<sim::NodeId, RemovalReason>> removed_;  // removed while alive; their next poll rejoins
  std::map<int, PollWatch> poll_watches_;
  std::vector<Waiter> waiters_;                  // in the order they started waiting; may hold ended waits
  // The waits of idle() members, by member: a rebalance wakes only those it gives partitions or removes, so one
  // costs work in the partitions, not in the members (their faults cause rebalances in proportion to them).
  std::map<int, std::vector<sim::Waker>> idle_waiters_;
  std::size_t compact_at_ = kMinCompaction;      // waiters_ drops its ended waits when it reaches this size
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
  KafkaAppend publish(MessageId id, std::uint32_t payload = 0);
  // The payload version of the record at (partition, offset): 0 unless it was appended with another.
  std::uint32_t payload(int partition, std::int64_t offset) const;
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
  // Coverage of removals ("group.removed.session_timeout", "group.removed.max_poll_interval"); optional.
  void set_observations(Observations* observations) { observations_ = observations; }
  // A counterfactual replay: MemberKept spares a member that holds its message. Before the run.
  void set_intervener(const Intervener* intervener) { intervener_ = intervener; }

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
  // The payload versions other than 0, by (partition, offset) (sparse: logs of unchanged payloads keep none).
  std::map<std::pair<int, std::int64_t>, std::uint32_t> changed_payloads_;
  std::vector<std::unique_ptr<ConsumerGroup>> groups_;
  std::uint64_t records_ = 0;
  Observations* observations_ = nullptr;
  const Intervener* intervener_ = nullptr;
};

class KafkaSource final : public MessageSource {
 public:
  explicit KafkaSource(const SourceContext& context);

  void publish(MessageId id, std::uint32_t payload) override { kafka_.publish(id, payload); }
  void consume(SourceWorker& worker) override;
  void worker_started(std::size_t worker) override;
  void worker_crashed(std::size_t worker) override;
  void worker_paused(std::size_t worker) override;
  void set_intervener(const Intervener* intervener) override { kafka_.set_intervener(intervener); }
  bool has_consumer_groups() const override { return true; }
  void rebalance() override;
  bool drained() const override { return kafka_.drained(); }

  Kafka& kafka() { return kafka_; }

 private:
  void session_expired(std::size_t worker, sim::Time pause_began);

  sim::Simulation& simulation_;
  std::vector<WorkerSlot> workers_;
  Observations& observations_;
  sim::Duration retry_wait_;
  Kafka kafka_;
  // By worker: when its current pause began, and whether its session timeout is scheduled for that pause.
  std::vector<sim::Time> pause_began_;
  std::vector<sim::Time> paused_until_;
  std::vector<std::uint32_t> paused_incarnation_;
  std::vector<bool> expiry_scheduled_;
};

// Registers KafkaSource as "kafka" (called from the registry's list of built-ins).
void register_kafka_source(SourceRegistry& registry);

}  // namespace lethe
