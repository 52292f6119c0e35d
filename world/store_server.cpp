#include "world/store_server.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

namespace lethe {

namespace {

// Restores the invariant "the call has a record" when a call unwinds (timeout, sim::Crash).
class CallGuard {
 public:
  CallGuard(Store& store, std::uint64_t request, void (Store::*abandon)(std::uint64_t))
      : store_(store), request_(request), abandon_(abandon) {}
  CallGuard(const CallGuard&) = delete;
  CallGuard& operator=(const CallGuard&) = delete;
  ~CallGuard() {
    if (!finished_) (store_.*abandon_)(request_);
  }
  void finished() { finished_ = true; }

 private:
  Store& store_;
  std::uint64_t request_;
  void (Store::*abandon_)(std::uint64_t);
  bool finished_ = false;
};

}  // namespace

StoreSettings store_settings(const ScenarioConfig& config) {
  StoreSettings settings;
  settings.latency = config.store.latency;
  settings.ttl_eviction = config.store.ttl_eviction.kind;
  settings.lazy_max = config.store.ttl_eviction.lazy_max;
  // A read replica only for a strategy that reads protocol.poll_read and sets it eventual.
  const PollRead* poll_read = config.protocol.settings.find<PollRead>("poll_read");
  const PollRead read = poll_read != nullptr ? *poll_read : PollRead{};
  settings.poll_read = read.kind;
  settings.replica_lag = read.lag;
  settings.rpc_timeout = config.network.rpc_timeout;
  settings.capacity = config.store.capacity;
  return settings;
}

// ---------------------------------------------------------------- Store

Store::Store(sim::Simulation& simulation, sim::Network& network, sim::Node& node, StoreSettings settings)
    : simulation_(simulation),
      network_(network),
      node_(node),
      settings_(std::move(settings)),
      service_{&node, settings_.latency, false, 0, simulation.rng("store.service")},
      bugs_(simulation.rng("store.bugs")),
      sweeper_(simulation, settings_.ttl_eviction, settings_.lazy_max, simulation.rng("store.ttl"),
               [this](Key key) { evict_expired(key); }),
      replica_(settings_.replica_lag, settings_.poll_read == PollReadKind::Eventual, simulation.rng("store.replica")) {
  if (settings_.lazy_max < 0) throw std::invalid_argument("Store: lazy_max must be >= 0");
  if (settings_.rpc_timeout <= 0) throw std::invalid_argument("Store: rpc_timeout must be > 0");
  if (settings_.capacity && *settings_.capacity == 0) throw std::invalid_argument("Store: capacity must be >= 1");
}

std::optional<Item> Store::peek(Key key) const {
  auto found = state_.find(key);
  if (found == state_.end()) return std::nullopt;
  return found->second;
}

// --- client side

void Store::set_check_incrementally(bool incremental, lin::IncrementalBudget budget) {
  if (next_request_ != 1 || checker_) throw std::logic_error("Store::set_check_incrementally: calls were made");
  incremental_ = incremental;
  checker_budget_ = budget;
}

StoreChecker& Store::recording_checker() {
  if (!checker_) checker_ = std::make_unique<StoreChecker>(checker_budget_);
  return *checker_;
}

// Everything before now (and before the first execution of any call in flight that executed) can be checked.
void Store::feed_checker() {
  if (recording_checker().stopped()) return;
  sim::Time watermark = simulation_.now();
  if (!first_executions_.empty()) watermark = std::min(watermark, *first_executions_.begin());
  recording_checker().advance(watermark);
}

// The executions of an ended call that no client observed, as server-only operations at their instants: all but
// the answered one, or all but the first when unanswered (the unanswered call stands for that one).
void Store::emit_duplicates(const LiveCall& call, std::optional<std::uint32_t> observed) {
  const std::uint32_t seen = observed.value_or(0);
  for (std::uint32_t index = 0; index < call.executions.size(); ++index) {
    if (index == seen) continue;
    const Execution& execution = call.executions[index];
    record_instant(kDuplicateClient, *call.input, execution.at, execution.reply);
  }
}

void Store::record_instant(std::uint32_t client, const Op& op, sim::Time at, const Reply& reply) {
  recording_checker().instant(client, op.keys(), at, op, reply);
  if (on_history_) on_history_(StoreOperation{client, op.keys(), at, at, op, reply});
}

void Store::hand_on(const LiveCall& call, sim::Time returned_at, std::optional<std::uint32_t> answered) const {
  if (!on_history_) return;
  StoreOperation operation{call.client, call.input->keys(), call.invoked_at, returned_at, *call.input, {}};
  if (answered.has_value()) operation.output = call.executions.at(*answered).reply;
  on_history_(operation);
}

std::uint64_t Store::begin_call(std::uint32_t client, const std::shared_ptr<const Op>& op) {
  const std::uint64_t request = next_request_++;
  ++stats_.client_calls;
  if (record_history_ && incremental_) {
    const StoreChecker::OpId id = recording_checker().invoke(client, op->keys(), simulation_.now(), *op);
    live_calls_.emplace(request, LiveCall{id, op, {}, client, simulation_.now()});
    feed_checker();
  }
  if (keeps_whole_history()) {
    Call call;
    call.request = request;
    call.client = client;
    call.invoked_at = simulation_.now();
    call.op = op;
    calls_.push_back(std::move(call));
  }
  return request;
}

Store::Call* Store::find_call(std::uint64_t request) {
  auto found = std::lower_bound(calls_.begin(), calls_.end(), request,
                                [](const Call& call, std::uint64_t wanted) { return call.request < wanted; });
  if (found == calls_.end() || found->request != request) return nullptr;
  return &*found;
}

void Store::finish_call(std::uint64_t request, std::uint32_t execution) {
  ++stats_.responses;
  if (auto live = live_calls_.find(request); live != live_calls_.end()) {
    const LiveCall& call = live->second;
    recording_checker().respond(call.op, simulation_.now(), call.executions.at(execution).reply);
    hand_on(call, simulation_.now(), execution);
    emit_duplicates(call, execution);
    first_executions_.erase(first_executions_.find(call.executions.front().at));
    live_calls_.erase(live);
    feed_checker();
  }
  if (Call* call = keeps_whole_history() ? find_call(request) : nullptr) {
    call->returned_at = simulation_.now();
    call->answered_by = execution;
  }
}

void Store::abandon_call(std::uint64_t request) {
  // Whole history: the record already says "no response" (returned_at == kNever).
  ++stats_.no_responses;
  if (auto live = live_calls_.find(request); live != live_calls_.end()) {
    const LiveCall& call = live->second;
    recording_checker().abandon(call.op, simulation_.now());
    hand_on(call, lin::kNever, std::nullopt);
    if (call.executions.empty()) {
      abandoned_unexecuted_.insert(request);
    } else {
      emit_duplicates(call, std::nullopt);
      first_executions_.erase(first_executions_.find(call.executions.front().at));
    }
    live_calls_.erase(live);
    feed_checker();
  }
}

std::optional<std::optional<Item>> Store::snapshot_for_bug(const Op& op) { return bugs_.snapshot(op, state_); }

// --- server side

Store::Response Store::serve(std::uint64_t request, const Op& op,
                             const std::optional<std::optional<Item>>& snapshot) {
  Response response;
  response.reply = execute(request, op, snapshot);
  if (record_history_ && incremental_) {
    if (auto live = live_calls_.find(request); live != live_calls_.end()) {
      LiveCall& call = live->second;
      if (call.executions.empty()) first_executions_.insert(simulation_.now());
      call.executions.push_back(Execution{simulation_.now(), response.reply});
      response.execution = static_cast<std::uint32_t>(call.executions.size() - 1);
      if (response.execution > 0) ++stats_.duplicate_executions;
    } else if (abandoned_unexecuted_.erase(request) == 0) {
      // The call ended (answered, or abandoned after executing): a second execution no client observes.
      ++stats_.duplicate_executions;
      response.execution = 1;
      record_instant(kDuplicateClient, op, simulation_.now(), response.reply);
      feed_checker();
    }
  }
  // The whole history: beside the incremental record only under set_keep_history, which numbers nothing.
  if (Call* call = keeps_whole_history() ? find_call(request) : nullptr) {
    call->executions.push_back(Execution{simulation_.now(), response.reply});
    if (!incremental_) {
      response.execution = static_cast<std::uint32_t>(call->executions.size() - 1);
      if (response.execution > 0) ++stats_.duplicate_executions;
    }
  }
  // Room is made after the write is in the history: the eviction follows it at the same instant.
  if (settings_.capacity) keep_capacity();
  return response;
}

Reply Store::execute(std::uint64_t request, const Op& op, const std::optional<std::optional<Item>>& snapshot) {
  const sim::Time now = simulation_.now();
  ++stats_.executions;
  Reply reply;
  Key first_key = 0;
  if (op.kind != OpKind::Transaction) {
    // One key (op.keys() == {op.key}): no vectors.
    first_key = op.key;
    if (request != 0 && bugs_.active()) {
      const std::optional<Item> before = peek(op.key);
      reply = execute_with_bug(request, op, snapshot);
      after_change(op.key, before, peek(op.key));
    } else {
      std::optional<Item> after;
      reply = apply(state_, op, &after);  // a single-key op's reply.previous is the item before it (lethe::apply)
      after_change(op.key, reply.previous, after);
    }
  } else {
    const std::vector<Key> keys = op.keys();
    std::vector<std::optional<Item>> before;
    before.reserve(keys.size());
    for (Key key : keys) before.push_back(peek(key));
    reply = (request != 0 && bugs_.active()) ? execute_with_bug(request, op, snapshot) : apply(state_, op);
    for (std::size_t index = 0; index < keys.size(); ++index) after_change(keys[index], before[index], peek(keys[index]));
    first_key = keys.empty() ? 0 : keys.front();
  }
  if (op.kind == OpKind::Evict && reply.applied && reply.previous.has_value()) {
    if (record_history_ && !incremental_) evictions_.push_back(Eviction{op.key, now, *reply.previous});
    ++stats_.evictions;
    simulation_.trace().record(now, kTraceEvict, node_.id(), op.key,
                               static_cast<std::uint64_t>(reply.previous->expires_on.value_or(0)));
  }
  simulation_.trace().record(now, kTraceExecute, node_.id(), request, first_key,
                             static_cast<std::uint64_t>(op.kind) * 2 + (reply.applied ? 1 : 0));
  if (on_applied_) on_applied_(op, reply, now);
  return reply;
}

Reply Store::execute_with_bug(std::uint64_t request, const Op& op,
                              const std::optional<std::optional<Item>>& snapshot) {
  bool fired = false;
  Reply reply = bugs_.apply(state_, op, snapshot, fired);
  if (fired) {
    ++stats_.bugs_fired;
    simulation_.trace().record(simulation_.now(), kTraceBug, node_.id(), request,
                               static_cast<std::uint64_t>(bugs_.kind()));
  }
  return reply;
}

void Store::after_change(Key key, const std::optional<Item>& before, const std::optional<Item>& after) {
  if (before == after) return;
  if (before.has_value() != after.has_value()) {
    stats_.records = after.has_value() ? stats_.records + 1 : stats_.records - 1;
    stats_.peak_records = std::max(stats_.peak_records, stats_.records);
  }
  if (settings_.poll_read == PollReadKind::Eventual) replica_.record(key, before, after, simulation_.now());
  bugs_.saw_write(key, before);
  if (after.has_value() && after->expires_on.has_value()) arm_sweeper(key, *after);
  if (settings_.capacity && bounded_by_capacity(key)) {
    if (after.has_value()) {
      recent_writes_.written(key, simulation_.now());
    } else {
      recent_writes_.removed(key);
    }
  }
}

void Store::keep_capacity() {
  if (keeping_capacity_) return;
  keeping_capacity_ = true;
  while (recent_writes_.size() > *settings_.capacity) {
    const Key victim = *recent_writes_.least_recent();
    if (never_evict_for_room_ && never_evict_for_room_(victim)) {
      recent_writes_.removed(victim);  // kept, and no longer counted: the others go when they would without it
      continue;
    }
    evict_for_room(victim);
  }
  keeping_capacity_ = false;
}

void Store::evict_for_room(Key key) {
  const sim::Time now = simulation_.now();
  ++stats_.capacity_evictions;
  simulation_.trace().record(now, kTraceCapacityEvict, node_.id(), key, *settings_.capacity);
  EvictionRecord eviction{key, now, {}, EvictionRecord::kUnknown};
  if (const auto last = recent_writes_.last_write(key)) {
    eviction.written_at = last->at;
    eviction.writes_since = last->writes_since;
  }
  const Op op = delete_op(key);
  const Reply reply = execute(0, op, std::nullopt);  // removes it from recent_writes_ (after_change)
  record_server_only(kCapacityClient, op, reply);
  if (on_capacity_evicted_) on_capacity_evicted_(eviction);
}

void Store::record_server_only(std::uint32_t client, const Op& op, const Reply& reply) {
  const sim::Time now = simulation_.now();
  if (record_history_ && incremental_) {
    record_instant(client, op, now, reply);
    feed_checker();
  }
  if (keeps_whole_history()) {
    server_only_.push_back(ServerOnly{client, now, op, reply});
  }
}

void Store::arm_sweeper(Key key, const Item& item) {
  if (sweeper_.arm(key, *item.expires_on)) ++stats_.eviction_timers;
}

void Store::evict_expired(Key key) {
  ++stats_.sweeper_runs;
  if (never_evict_ && never_evict_(key)) return;
  const sim::Time now = simulation_.now();
  const Op op = evict_op(key, now);
  const Reply reply = execute(0, op, std::nullopt);
  record_server_only(kSweeperClient, op, reply);
  if (!reply.applied) {
    // Refreshed (or removed) since it was armed: follow the item's current expiry, if any.
    std::optional<Item> item = peek(key);
    if (item.has_value() && item->expires_on.has_value()) arm_sweeper(key, *item);
  }
}

Reply Store::serve_replica_read(Key key) {
  replica_.prune(simulation_.now());
  const sim::Duration lag = replica_.draw_lag();
  ++stats_.replica_reads;
  const sim::Time now = simulation_.now();
  simulation_.trace().record(now, kTraceReplicaRead, node_.id(), key, static_cast<std::uint64_t>(lag));
  Reply reply;
  reply.previous = replica_.item_at(key, now - lag, state_);
  return reply;
}

std::vector<StoreOperation> Store::history() const {
  std::vector<StoreOperation> operations;
  std::vector<StoreOperation> server_only;
  operations.reserve(calls_.size());
  for (const Call& call : calls_) {
    StoreOperation operation;
    operation.client = call.client;
    operation.keys = call.op->keys();
    operation.invoked_at = call.invoked_at;
    operation.returned_at = call.answered_by.has_value() ? call.returned_at : lin::kNever;
    operation.input = *call.op;
    if (call.answered_by.has_value()) operation.output = call.executions[*call.answered_by].reply;
    // Executions no client observed: all but the answered one (all but the first when unanswered: the
    // unanswered call itself may take the place of any one of them).
    const std::uint32_t observed = call.answered_by.value_or(0);
    for (std::uint32_t index = 0; index < call.executions.size(); ++index) {
      if (index == observed) continue;
      const Execution& execution = call.executions[index];
      server_only.push_back(
          StoreOperation{kDuplicateClient, operation.keys, execution.at, execution.at, *call.op, execution.reply});
    }
    operations.push_back(std::move(operation));
  }
  for (const ServerOnly& entry : server_only_) {
    server_only.push_back(StoreOperation{entry.client, entry.op.keys(), entry.at, entry.at, entry.op, entry.reply});
  }
  std::stable_sort(server_only.begin(), server_only.end(),
                   [](const StoreOperation& a, const StoreOperation& b) { return a.invoked_at < b.invoked_at; });
  operations.insert(operations.end(), std::make_move_iterator(server_only.begin()),
                    std::make_move_iterator(server_only.end()));
  std::stable_sort(operations.begin(), operations.end(),
                   [](const StoreOperation& a, const StoreOperation& b) { return a.invoked_at < b.invoked_at; });
  return operations;
}

// ---------------------------------------------------------------- SimStoreClient

SimStoreClient::SimStoreClient(Store& store, sim::Node& caller) : store_(store), caller_(caller) {}

std::optional<Reply> SimStoreClient::execute(const Op& op) {
  sim::Simulation& simulation = sim::Simulation::current();
  if (simulation.this_node().id() != caller_.id()) {
    throw std::logic_error("SimStoreClient::execute called from a fiber of another node");
  }
  auto shared_op = std::make_shared<const Op>(op);
  const std::optional<std::optional<Item>> snapshot = store_.snapshot_for_bug(op);
  const std::uint64_t request = store_.begin_call(client_id(), shared_op);
  CallGuard guard(store_, request, &Store::abandon_call);
  Store* store = &store_;
  auto response = store_.network_.call(
      store_.service_, [store, request, shared_op, snapshot] { return store->serve(request, *shared_op, snapshot); },
      store_.settings_.rpc_timeout, request);
  if (!response.has_value()) return std::nullopt;
  guard.finished();
  store_.finish_call(request, response->execution);
  return std::move(response->reply);
}

std::optional<Reply> SimStoreClient::read_eventual(Key key) {
  if (store_.settings_.poll_read != PollReadKind::Eventual) return execute(get_op(key));
  sim::Simulation& simulation = sim::Simulation::current();
  if (simulation.this_node().id() != caller_.id()) {
    throw std::logic_error("SimStoreClient::read_eventual called from a fiber of another node");
  }
  Store* store = &store_;
  return store_.network_.call(
      store_.service_, [store, key] { return store->serve_replica_read(key); }, store_.settings_.rpc_timeout, 0);
}

lin::Result check_store_history(const Store& store, std::uint64_t budget) {
  return check_store_history(store.history(), budget);
}

std::unique_ptr<StoreClient> Store::connect(sim::Node& caller) {
  return std::make_unique<SimStoreClient>(*this, caller);
}

lin::Result Store::check_history(std::uint64_t budget) {
  if (!incremental_) return check_store_history(*this, budget);
  if (!incremental_result_) {
    // Calls still in flight stay unanswered; their executions but the first are server-only operations.
    for (const auto& [request, call] : live_calls_) {
      hand_on(call, lin::kNever, std::nullopt);
      emit_duplicates(call, std::nullopt);
    }
    lin::Result result = recording_checker().finish();
    if (result.verdict == lin::Verdict::Linearizable && recording_checker().max_steps_per_response() > budget) {
      result.verdict = lin::Verdict::Unknown;
      result.explanation = fmt::format("unknown: the search at one response took {} steps, above the budget of {}",
                                       recording_checker().max_steps_per_response(), budget);
    }
    incremental_result_ = std::move(result);
  }
  return *incremental_result_;
}

std::unique_ptr<StoreServer> make_store_server(const ScenarioConfig& config, sim::Simulation& simulation,
                                               sim::Network& network, sim::Node& node) {
  auto store = std::make_unique<Store>(simulation, network, node, store_settings(config));
  store->set_check_incrementally(true);
  return store;
}

}  // namespace lethe
