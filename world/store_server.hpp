// world/store_server.hpp — the simulated store, reached over the simulated network, with its history.
//
// StoreServer: the store as the world sees it, whatever its semantics: a server of the item schema's operations
// (protocol/store_ops.hpp) that each caller node reaches through its own StoreClient (connect), a hook called
// for every operation it executes (the world records evictions and inbox effects from it), and a history that
// can be checked for linearizability. make_store_server() picks the server for a scenario; another semantics
// (say eventually consistent reads everywhere) is another class implementing StoreServer, chosen there. Store
// below is the one make_store_server() builds.
//
// Store: durable in-memory state (StoreState, protocol/store_ops.hpp) served by a sim::Service on a store node.
// A request travels over the network (sim::Network::call); the handler runs at one virtual instant (arrival +
// a service time drawn from `latency` per operation) and executes the operation there with lethe::apply, so
// every operation takes effect atomically at one instant between request arrival and response. The state is
// durable: it survives crashes of the store node (requests to a down node are dropped by the network).
//
// TTL eviction (docs/scenarios.md store.ttl_eviction): whenever an executed operation leaves an item with
// `expires_on` set, the Sweeper (world/store_sweeper.hpp) is armed for it and, when due, the store executes
// evict_op(key, now); a sweeper run that finds the item refreshed (not expired) does nothing and re-arms for the
// item's current expires_on.
//
// Capacity (store.capacity = N): the store holds at most N dedupe records (tables dedupe and inbox, every
// processor together). A write that leaves N + 1 of them evicts the least recently written one (RecentWrites,
// world/store_capacity.hpp: reads do not count as uses) at that same instant, before anything else runs: the store
// executes an unconditional delete_op of it (client kCapacityClient in the history), traces store.evict_capacity
// (not store.evict, which is TTL's) and calls the capacity hook (set_on_capacity_evicted). Unbounded by default.
//
// Read replica (protocol.poll_read = "eventual(lag=DIST)"): read_eventual answers from the state as it was
// `lag` ago, lag drawn per read, from the versions ReplicaVersions keeps (world/store_replica.hpp).
//
// History: every client call (SimStoreClient) is recorded with its invocation and response instants in virtual
// time (not the caller's skewed clock), or with returned_at == lin::kNever when no response came (timeout, or
// the caller crashed mid-call). Operations the server executed that no client observed are recorded at their
// instant (invoked_at == returned_at): sweeper evictions (client kSweeperClient) and the second execution of a
// request the network duplicated (client kDuplicateClient; the network runs a duplicated request twice). Replica
// reads are not linearizable by design and are kept out of the history (counted in stats().replica_reads).
// check_store_history runs lethe::lin::check with StoreModel over it.
//
// Checked as it is recorded (set_check_incrementally, what make_store_server() sets): the same operations go to a
// StoreChecker (check/store_model.hpp) as they happen, and the store keeps only the calls in flight, so memory
// follows what is in flight, not the run's length; history() and eviction_log() stay empty. A call's executions
// are known for sure only when it ends (an answered call may have been answered by a second execution, which
// makes the first a server-only operation at its past instant), so the checker is held back to the first
// execution of the oldest call in flight that has executed. Also kept: the requests abandoned before they
// executed (their first execution, if it comes, is the unanswered call itself), and whatever the checker keeps
// (check/linearizability.hpp, IncrementalChecker).
//
// Deliberate bugs (set_bug), to show the checker catches them: StoreBugs (world/store_bugs.hpp), drawn from the
// store's own Rng stream.
//
// Sweeper timers are ordinary simulation timers: Simulation::run() with no limit keeps going until the last armed
// expiry (a 7-day TTL moves virtual time 7 days on); bound the run with run_until where that matters.
//
// Lifetime: the Store must outlive every run of the simulation it schedules callbacks in (sweeper timers and
// in-flight requests point at it). Not thread-safe (one simulation per thread).
//
// Does not: model throttling, item sizes, partial transactions, or a store node that loses state.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "protocol/env.hpp"
#include "check/ledger.hpp"
#include "check/store_model.hpp"
#include "protocol/store_ops.hpp"
#include "sim/distribution.hpp"
#include "sim/network.hpp"
#include "sim/node.hpp"
#include "sim/random.hpp"
#include "sim/simulation.hpp"
#include "sim/time.hpp"
#include "sim/trace.hpp"
#include "world/store_bugs.hpp"
#include "world/store_capacity.hpp"
#include "world/store_replica.hpp"
#include "world/store_sweeper.hpp"

namespace lethe {

struct StoreSettings {
  sim::Distribution latency = sim::Distribution::constant(200 * sim::kMicrosecond);  // service time per operation
  TtlEvictionKind ttl_eviction = TtlEvictionKind::Exact;
  sim::Duration lazy_max = 0;                                // Lazy: the sweeper runs up to this late (>= 0)
  PollReadKind poll_read = PollReadKind::Consistent;         // Eventual: read_eventual goes to the replica
  sim::Distribution replica_lag = sim::Distribution::constant(0);
  sim::Duration rpc_timeout = sim::kSecond;                  // the client's timeout per call (> 0)
  std::optional<std::uint64_t> capacity;                     // store.capacity: nullopt unbounded, else >= 1
};

// The store settings of a scenario (store.*, protocol.poll_read, network.rpc_timeout).
StoreSettings store_settings(const ScenarioConfig& config);

class StoreServer {
 public:
  virtual ~StoreServer() = default;

  // A connection for `caller` (one per caller node and incarnation); its calls must run in fibers of that node.
  virtual std::unique_ptr<StoreClient> connect(sim::Node& caller) = 0;

  // Called for every operation the server executes (client ops, duplicates and server-side ones alike), at
  // its instant, with the reply it produced. Runs on the event loop: must not block.
  using AppliedHook = std::function<void(const Op&, const Reply&, sim::Time)>;
  virtual void set_on_applied(AppliedHook hook) = 0;

  // Off: no history is kept (for runs that do not check it). On by default.
  virtual void set_record_history(bool record) = 0;
  // On: the whole history is kept for history() even while it is checked as recorded (`lethe run --history`).
  // Off by default. REQUIRES: no call made yet.
  virtual void set_keep_history(bool keep) = 0;
  // The whole recorded history, ordered by invocation: empty unless kept (see the server's header comment).
  virtual std::vector<StoreOperation> history() const = 0;
  // Set: every operation of the recorded history is handed to `f` as it ends (answered, abandoned by its caller,
  // or executed by the server alone), and those still in flight when check_history() runs then: the whole
  // history, in the order its operations ended, with nothing kept (`lethe run --history`). REQUIRES: no call made
  // yet, history recorded (set_record_history) and checked as recorded.
  using HistorySink = std::function<void(const StoreOperation&)>;
  virtual void set_on_history(HistorySink f) = 0;
  // The verdict on the recorded history against the item schema's sequential specification (check/store_model):
  // lin::check of the whole history, or, checked as recorded, the checker's verdict (Unknown if the search at
  // some response needed more than `budget` steps). Once, after the run.
  virtual lin::Result check_history(std::uint64_t budget) = 0;

  // Items deleted by applied evictions (coverage "store.evictions").
  virtual std::uint64_t evictions() const = 0;
  // A counterfactual replay's veto (world/counterfactual.hpp, NeverExpires): a key for which it returns true is
  // never evicted; its sweeper runs and draws as without it. Unset by default (every due eviction runs).
  virtual void set_never_evict(std::function<bool(Key)> veto) = 0;
  // The most items it held at once, every table (the growth of a store without expiry, ttl = "none").
  virtual std::uint64_t peak_records() const = 0;

  // store.capacity: records evicted for room (not counted in evictions(), which are TTL's).
  virtual std::uint64_t capacity_evictions() const = 0;
  // Called at each eviction for room, after the store executed it: the key, the instant, the record's last write
  // and the writes of other records since.
  using CapacityHook = std::function<void(const EvictionRecord&)>;
  virtual void set_on_capacity_evicted(CapacityHook hook) = 0;
  // A counterfactual replay's veto (world/counterfactual.hpp, NeverEvicted): a key for which it returns true is
  // not evicted for room when its turn comes; it stays in the store and stops counting toward the capacity, so
  // every other record is evicted when it would be without it. Unset by default.
  virtual void set_never_evict_for_room(std::function<bool(Key)> veto) = 0;
};

// One item deleted by an applied Evict (the sweeper's, or a client's).
struct Eviction {
  Key key = 0;
  sim::Time at = 0;  // the virtual instant of the eviction
  Item evicted;
};

struct StoreStats {
  std::uint64_t executions = 0;              // operations executed by the server (sweeper and duplicates included)
  std::uint64_t client_calls = 0;            // SimStoreClient::execute calls (invocations)
  std::uint64_t responses = 0;               // calls that got a response
  std::uint64_t no_responses = 0;            // calls without one (timeout or caller crash)
  std::uint64_t duplicate_executions = 0;    // second and later executions of one request (counted while recording)
  std::uint64_t sweeper_runs = 0;            // sweeper Evict executions (applied or not)
  std::uint64_t evictions = 0;               // applied Evicts (== eviction_log().size() while recording history)
  std::uint64_t eviction_timers = 0;         // sweeper timers scheduled
  std::uint64_t capacity_evictions = 0;      // records evicted for room (store.capacity)
  std::uint64_t replica_reads = 0;           // replica reads served (not in the history)
  std::uint64_t bugs_fired = 0;              // operations a deliberate bug altered
  std::uint64_t records = 0;                 // items held now, every table
  std::uint64_t peak_records = 0;            // the most items held at once
};

class Store final : public StoreServer {
 public:
  static constexpr std::uint32_t kSweeperClient = UINT32_MAX;
  static constexpr std::uint32_t kDuplicateClient = UINT32_MAX - 1;
  static constexpr std::uint32_t kCapacityClient = UINT32_MAX - 2;

  // request 0: the sweeper; key: the operation's first key; operation: kind * 2 + (applied ? 1 : 0).
  static constexpr sim::TraceKind kTraceExecute{"store.execute", "request", "key", "operation"};
  static constexpr sim::TraceKind kTraceEvict{"store.evict", "key", "expires_on"};
  // An eviction for room (store.capacity): the key, and the capacity it made room under.
  static constexpr sim::TraceKind kTraceCapacityEvict{"store.evict_capacity", "key", "capacity"};
  static constexpr sim::TraceKind kTraceReplicaRead{"store.replica", "key", "lag_ns"};
  static constexpr sim::TraceKind kTraceBug{"store.bug", "request", "bug"};

  // REQUIRES: `node` belongs to `simulation`; settings valid (lazy_max >= 0, rpc_timeout > 0).
  Store(sim::Simulation& simulation, sim::Network& network, sim::Node& node, StoreSettings settings);
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  const StoreSettings& settings() const { return settings_; }
  sim::Node& node() { return node_; }
  sim::Network& network() { return network_; }

  // The durable state (for oracles and tests; clients go through SimStoreClient).
  const StoreState& state() const { return state_; }
  std::optional<Item> peek(Key key) const;

  // --- as a StoreServer (sweeper evictions are among the operations the hook sees)
  std::unique_ptr<StoreClient> connect(sim::Node& caller) override;
  void set_on_applied(AppliedHook hook) override { on_applied_ = std::move(hook); }
  lin::Result check_history(std::uint64_t budget) override;
  std::uint64_t evictions() const override { return stats_.evictions; }
  void set_never_evict(std::function<bool(Key)> veto) override { never_evict_ = std::move(veto); }
  std::uint64_t peak_records() const override { return stats_.peak_records; }
  std::uint64_t capacity_evictions() const override { return stats_.capacity_evictions; }
  void set_on_capacity_evicted(CapacityHook hook) override { on_capacity_evicted_ = std::move(hook); }
  void set_never_evict_for_room(std::function<bool(Key)> veto) override { never_evict_for_room_ = std::move(veto); }

  // Checks the history as it is recorded instead of keeping it (see the header comment), with this budget.
  // REQUIRES: no call made yet.
  void set_check_incrementally(bool incremental, lin::IncrementalBudget budget = {});
  bool checking_incrementally() const { return incremental_; }
  // While checking incrementally: the checker (memory checks), calls in flight.
  const StoreChecker* checker() const { return checker_.get(); }
  std::size_t live_calls() const { return live_calls_.size(); }

  // REQUIRES: probability in [0, 1] (else std::invalid_argument).
  void set_bug(StoreBug bug, double probability = 0.25) { bugs_.set(bug, probability); }
  StoreBug bug() const { return bugs_.kind(); }

  // Off: no history is kept (for long runs that do not check it), nor the eviction log (96 bytes per evicted
  // item: with a TTL, as much as a record per message over the whole run). On by default.
  void set_record_history(bool record) override { record_history_ = record; }
  bool recording_history() const { return record_history_; }
  void set_keep_history(bool keep) override { keep_history_ = keep; }
  void set_on_history(HistorySink f) override { on_history_ = std::move(f); }

  // The history for the checker, ordered by invocation (ties: client calls in invocation order, then
  // server-only operations in execution order). While checking incrementally, empty unless set_keep_history.
  std::vector<StoreOperation> history() const override;
  const std::vector<Eviction>& eviction_log() const { return evictions_; }
  const StoreStats& stats() const { return stats_; }

  // Keys with a pending sweeper eviction, and versions kept for the replica (memory checks).
  std::size_t pending_evictions() const { return sweeper_.pending(); }
  std::size_t replica_versions() const { return replica_.versions(); }
  sim::Duration replica_horizon() const { return replica_.horizon(); }

 private:
  friend class SimStoreClient;

  struct Response {
    Reply reply;
    std::uint32_t execution = 0;  // which execution of the request produced it (0 = first)
  };
  struct Execution {
    sim::Time at = 0;
    Reply reply;
  };
  struct Call {
    std::uint64_t request = 0;
    std::uint32_t client = 0;
    sim::Time invoked_at = 0;
    sim::Time returned_at = lin::kNever;
    std::shared_ptr<const Op> op;
    std::vector<Execution> executions;  // by the server, in order (more than one if duplicated)
    std::optional<std::uint32_t> answered_by;
  };
  struct ServerOnly {
    std::uint32_t client = 0;
    sim::Time at = 0;
    Op op;
    Reply reply;
  };

  // Client side (SimStoreClient).
  std::uint64_t begin_call(std::uint32_t client, const std::shared_ptr<const Op>& op);
  Call* find_call(std::uint64_t request);
  void finish_call(std::uint64_t request, std::uint32_t execution);
  void abandon_call(std::uint64_t request);
  std::optional<std::optional<Item>> snapshot_for_bug(const Op& op);

  // Server side (on the event loop).
  Response serve(std::uint64_t request, const Op& op, const std::optional<std::optional<Item>>& snapshot);
  Reply serve_replica_read(Key key);
  Reply execute(std::uint64_t request, const Op& op, const std::optional<std::optional<Item>>& snapshot);
  // bugs_.apply, counted and traced when the bug fires.
  Reply execute_with_bug(std::uint64_t request, const Op& op, const std::optional<std::optional<Item>>& snapshot);
  void after_change(Key key, const std::optional<Item>& before, const std::optional<Item>& after);
  void arm_sweeper(Key key, const Item& item);
  void evict_expired(Key key);  // the Sweeper's eviction, when due
  void record_server_only(std::uint32_t client, const Op& op, const Reply& reply);
  void keep_capacity();          // evicts for room while more dedupe records than the capacity are held
  void evict_for_room(Key key);

  sim::Simulation& simulation_;
  sim::Network& network_;
  sim::Node& node_;
  StoreSettings settings_;
  sim::Service service_;

  StoreState state_;
  AppliedHook on_applied_;
  StoreBugs bugs_;

  std::function<bool(Key)> never_evict_;  // set only in a counterfactual replay
  Sweeper sweeper_;
  std::vector<Eviction> evictions_;

  RecentWrites recent_writes_;  // store.capacity only
  CapacityHook on_capacity_evicted_;
  std::function<bool(Key)> never_evict_for_room_;  // set only in a counterfactual replay
  bool keeping_capacity_ = false;                  // in keep_capacity (its own deletes do not re-enter it)

  ReplicaVersions replica_;  // Eventual only

  bool record_history_ = true;
  bool keep_history_ = false;
  // The whole history goes to calls_ and server_only_ (always when not checked as recorded).
  bool keeps_whole_history() const { return record_history_ && (!incremental_ || keep_history_); }
  bool incremental_ = false;
  lin::IncrementalBudget checker_budget_;
  std::unique_ptr<StoreChecker> checker_;  // incremental: made at the first call
  struct LiveCall {                        // incremental: a call in flight
    StoreChecker::OpId op = 0;
    std::shared_ptr<const Op> input;
    std::vector<Execution> executions;
    std::uint32_t client = 0;
    sim::Time invoked_at = 0;
  };
  HistorySink on_history_;
  // A server-only operation (a duplicate execution, a sweeper's or capacity eviction) at `at`: to the checker,
  // and to on_history_.
  void record_instant(std::uint32_t client, const Op& op, sim::Time at, const Reply& reply);
  // An ended call to on_history_ (answered: with the reply of its execution `answered`).
  void hand_on(const LiveCall& call, sim::Time returned_at, std::optional<std::uint32_t> answered) const;
  std::map<std::uint64_t, LiveCall> live_calls_;        // by request id
  std::multiset<sim::Time> first_executions_;           // of live calls that executed: the checker waits for them
  std::set<std::uint64_t> abandoned_unexecuted_;        // their first execution is the unanswered call itself
  std::optional<lin::Result> incremental_result_;
  StoreChecker& recording_checker();  // made at the first use
  void feed_checker();
  void emit_duplicates(const LiveCall& call, std::optional<std::uint32_t> observed);
  std::vector<Call> calls_;              // by request id (only calls made while recording)
  std::uint64_t next_request_ = 1;
  std::vector<ServerOnly> server_only_;  // sweeper runs
  StoreStats stats_;
};

// A caller's connection to the store: one per caller node. execute() must run in a fiber of that node.
class SimStoreClient : public StoreClient {
 public:
  // The client id in the history is the caller node's id.
  SimStoreClient(Store& store, sim::Node& caller);

  // The RPC, with settings().rpc_timeout. nullopt: no response (the operation may or may not have taken effect).
  // Throws sim::Crash if the caller crashes meanwhile; the call stays in the history without a response.
  std::optional<Reply> execute(const Op& op) override;
  // poll_read = eventual: a replica read over the network (answered with lag, not in the history);
  // consistent: execute(get_op(key)).
  std::optional<Reply> read_eventual(Key key) override;

  std::uint32_t client_id() const { return caller_.id(); }

 private:
  Store& store_;
  sim::Node& caller_;
};

lin::Result check_store_history(const Store& store, std::uint64_t budget = 10'000'000);

// The store server of a scenario on `node`: a Store with store_settings(config).
// REQUIRES: what Store's constructor requires.
std::unique_ptr<StoreServer> make_store_server(const ScenarioConfig& config, sim::Simulation& simulation,
                                               sim::Network& network, sim::Node& node);

}  // namespace lethe
