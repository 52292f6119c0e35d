#include "world/store_server.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

namespace lethe {

namespace {

constexpr sim::Time kBeforeAnything = std::numeric_limits<sim::Time>::min();

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
  return settings;
}

const char* to_string(StoreBug bug) {
  switch (bug) {
    case StoreBug::None: return "none";
    case StoreBug::StaleRead: return "stale-read";
    case StoreBug::LostWrite: return "lost-write";
    case StoreBug::NonAtomicUpsert: return "non-atomic-upsert";
  }
  return "?";
}

// ---------------------------------------------------------------- Store

Store::Store(sim::Simulation& simulation, sim::Network& network, sim::Node& node, StoreSettings settings)
    : simulation_(simulation),
      network_(network),
      node_(node),
      settings_(std::move(settings)),
      service_{&node, settings_.latency, false, 0, simulation.rng("store.service")},
      ttl_rng_(simulation.rng("store.ttl")),
      replica_rng_(simulation.rng("store.replica")),
      bug_rng_(simulation.rng("store.bugs")) {
  if (settings_.lazy_max < 0) throw std::invalid_argument("Store: lazy_max must be >= 0");
  if (settings_.rpc_timeout <= 0) throw std::invalid_argument("Store: rpc_timeout must be > 0");
  if (settings_.poll_read == PollReadKind::Eventual) {
    sim::Duration horizon = settings_.replica_lag.quantile(1.0);
    if (horizon == sim::kTimeMax) horizon = settings_.replica_lag.quantile(1.0 - 1e-9);
    replica_horizon_ = std::max<sim::Duration>(0, horizon);
  }
}

std::optional<Item> Store::peek(Key key) const {
  auto found = state_.find(key);
  if (found == state_.end()) return std::nullopt;
  return found->second;
}

void Store::set_bug(StoreBug bug, double probability) {
  if (!(probability >= 0.0 && probability <= 1.0)) throw std::invalid_argument("Store::set_bug: probability");
  bug_ = bug;
  bug_probability_ = probability;
  before_last_write_.clear();
}

std::size_t Store::replica_versions() const {
  std::size_t total = 0;
  for (const auto& [key, log] : versions_) total += log.size();
  return total;
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
    recording_checker().instant(kDuplicateClient, call.input->keys(), execution.at, *call.input, execution.reply);
  }
}

std::uint64_t Store::begin_call(std::uint32_t client, const std::shared_ptr<const Op>& op) {
  const std::uint64_t request = next_request_++;
  ++stats_.client_calls;
  if (record_history_ && incremental_) {
    const StoreChecker::OpId id = recording_checker().invoke(client, op->keys(), simulation_.now(), *op);
    live_calls_.emplace(request, LiveCall{id, op, {}});
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

std::optional<std::optional<Item>> Store::snapshot_for_bug(const Op& op) {
  if (bug_ != StoreBug::NonAtomicUpsert || op.kind != OpKind::Upsert) return std::nullopt;
  if (!bug_rng_.bernoulli(bug_probability_)) return std::nullopt;
  return std::optional<std::optional<Item>>(peek(op.key));
}

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
      recording_checker().instant(kDuplicateClient, op.keys(), simulation_.now(), op, response.reply);
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
    if (request != 0 && bug_ != StoreBug::None) {
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
    reply = (request != 0 && bug_ != StoreBug::None) ? execute_with_bug(request, op, snapshot) : apply(state_, op);
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
  auto fired = [this, request] {
    ++stats_.bugs_fired;
    simulation_.trace().record(simulation_.now(), kTraceBug, node_.id(), request, static_cast<std::uint64_t>(bug_));
  };
  switch (bug_) {
    case StoreBug::None: break;
    case StoreBug::StaleRead: {
      if (op.kind != OpKind::Get || !bug_rng_.bernoulli(bug_probability_)) break;
      auto found = before_last_write_.find(op.key);
      if (found == before_last_write_.end() || found->second == peek(op.key)) break;
      fired();
      Reply reply;
      reply.previous = found->second;
      return reply;
    }
    case StoreBug::LostWrite: {
      if ((op.kind != OpKind::Put && op.kind != OpKind::Upsert) || !bug_rng_.bernoulli(bug_probability_)) break;
      StoreState scratch;
      if (auto current = peek(op.key)) scratch.emplace(op.key, *current);
      Reply reply = apply(scratch, op);  // what applying it would answer; the durable state is left alone
      if (reply.applied) fired();
      return reply;
    }
    case StoreBug::NonAtomicUpsert: {
      if (op.kind != OpKind::Upsert || !snapshot.has_value()) break;
      fired();
      // Read at invocation (the snapshot), write now: a read-modify-write that is not atomic.
      std::optional<Item> item = *snapshot;
      Reply reply;
      reply.previous = item;
      if (!op.condition.holds(item)) {
        reply.applied = false;
        return reply;
      }
      op.update.apply_to(item);
      if (item.has_value()) {
        state_[op.key] = *item;
      } else {
        state_.erase(op.key);
      }
      return reply;
    }
  }
  return apply(state_, op);
}

void Store::after_change(Key key, const std::optional<Item>& before, const std::optional<Item>& after) {
  if (before == after) return;
  if (before.has_value() != after.has_value()) {
    stats_.records = after.has_value() ? stats_.records + 1 : stats_.records - 1;
    stats_.peak_records = std::max(stats_.peak_records, stats_.records);
  }
  if (settings_.poll_read == PollReadKind::Eventual) record_version(key, before, after);
  if (bug_ == StoreBug::StaleRead) before_last_write_[key] = before;
  if (after.has_value() && after->expires_on.has_value()) arm_sweeper(key, *after);
}

void Store::arm_sweeper(Key key, const Item& item) {
  const sim::Time expires_on = *item.expires_on;
  if (expires_on == sim::kTimeMax) return;  // never expires (ttl = "none"): no eviction to arm
  auto pending = pending_evictions_.lower_bound(key);  // one descent: the entry, or where it goes
  const bool found = pending != pending_evictions_.end() && pending->first == key;
  // A pending eviction armed for an earlier-or-equal expiry runs no later than this one needs (it re-arms if
  // the item is not expired by then).
  if (found && pending->second.for_expires_on <= expires_on) return;
  sim::Time at = expires_on;
  if (settings_.ttl_eviction == TtlEvictionKind::Lazy && settings_.lazy_max > 0) {
    const sim::Duration delay = ttl_rng_.between(0, settings_.lazy_max);
    at = expires_on > sim::kTimeMax - delay ? sim::kTimeMax : expires_on + delay;
  }
  at = std::max(at, simulation_.now());
  const std::uint64_t token = next_eviction_token_++;
  if (found) {
    pending->second = PendingEviction{expires_on, token};
  } else {
    pending_evictions_.emplace_hint(pending, key, PendingEviction{expires_on, token});
  }
  ++stats_.eviction_timers;
  schedule_sweep(Sweep{at, token, key});
}

void Store::schedule_sweep(const Sweep& sweep) {
  if (sweep_fifo_.empty() || sweep_fifo_.back().at <= sweep.at) {
    sweep_fifo_.push_back(sweep);  // tokens grow, so the fifo stays sorted by (at, token)
  } else {
    sweep_heap_.push_back(sweep);
    std::push_heap(sweep_heap_.begin(), sweep_heap_.end(), SweepLater{});
  }
  if (!sweeping_) arm_sweep_timer();
}

bool Store::heap_first() const {
  return !sweep_heap_.empty() && (sweep_fifo_.empty() || SweepLater{}(sweep_fifo_.front(), sweep_heap_.front()));
}

bool Store::next_sweep(Sweep& out) const {
  if (sweep_fifo_.empty() && sweep_heap_.empty()) return false;
  out = heap_first() ? sweep_heap_.front() : sweep_fifo_.front();
  return true;
}

void Store::pop_sweep() {
  if (heap_first()) {
    std::pop_heap(sweep_heap_.begin(), sweep_heap_.end(), SweepLater{});
    sweep_heap_.pop_back();
  } else {
    sweep_fifo_.pop_front();
  }
}

void Store::arm_sweep_timer() {
  Sweep next;
  if (!next_sweep(next) || next.at >= sweep_timer_at_) return;  // the live timer fires early enough
  sweep_timer_at_ = next.at;
  const std::uint64_t generation = ++sweep_timer_generation_;
  simulation_.at(next.at, [this, generation] {
    if (generation != sweep_timer_generation_) return;  // superseded by an earlier one
    sweep_timer_at_ = sim::kTimeMax;
    run_due_sweeps();
  });
}

void Store::run_due_sweeps() {
  sweeping_ = true;
  Sweep next;
  while (next_sweep(next) && next.at <= simulation_.now()) {
    pop_sweep();
    run_sweeper(next.key, next.token);
  }
  sweeping_ = false;
  arm_sweep_timer();
}

void Store::run_sweeper(Key key, std::uint64_t token) {
  auto pending = pending_evictions_.find(key);
  if (pending == pending_evictions_.end() || pending->second.token != token) return;  // superseded
  pending_evictions_.erase(pending);
  ++stats_.sweeper_runs;
  if (never_evict_ && never_evict_(key)) return;
  const sim::Time now = simulation_.now();
  const Op op = evict_op(key, now);
  const Reply reply = execute(0, op, std::nullopt);
  if (record_history_ && incremental_) {
    recording_checker().instant(kSweeperClient, op.keys(), now, op, reply);
    feed_checker();
  }
  if (keeps_whole_history()) {
    server_only_.push_back(ServerOnly{kSweeperClient, now, op, reply});
  }
  if (!reply.applied) {
    // Refreshed (or removed) since it was armed: follow the item's current expiry, if any.
    std::optional<Item> item = peek(key);
    if (item.has_value() && item->expires_on.has_value()) arm_sweeper(key, *item);
  }
}

void Store::record_version(Key key, const std::optional<Item>& before, const std::optional<Item>& after) {
  const sim::Time now = simulation_.now();
  std::deque<Version>& log = versions_[key];
  if (log.empty()) log.push_back(Version{kBeforeAnything, before});
  log.push_back(Version{now, after});
  version_writes_.emplace_back(now, key);
  prune_versions();
}

void Store::prune_versions() {
  const sim::Time now = simulation_.now();
  const sim::Time cutoff = now - replica_horizon_;
  while (!version_writes_.empty() && version_writes_.front().first <= cutoff) {
    const Key key = version_writes_.front().second;
    version_writes_.pop_front();
    auto found = versions_.find(key);
    if (found == versions_.end()) continue;
    std::deque<Version>& log = found->second;
    // Keep the newest version at or before the cutoff (the replica may still be asked for it).
    while (log.size() >= 2 && log[1].at <= cutoff) log.pop_front();
    // A single version at or before the cutoff is the current state: nothing to remember.
    if (log.size() == 1) versions_.erase(found);
  }
}

std::optional<Item> Store::replica_item(Key key, sim::Time at) const {
  auto found = versions_.find(key);
  if (found == versions_.end()) return peek(key);
  const std::deque<Version>& log = found->second;
  auto after = std::upper_bound(log.begin(), log.end(), at,
                                [](sim::Time wanted, const Version& version) { return wanted < version.at; });
  if (after == log.begin()) return log.front().item;  // unreachable: the base version is at kBeforeAnything
  return std::prev(after)->item;
}

Reply Store::serve_replica_read(Key key) {
  prune_versions();
  const sim::Duration lag = std::clamp<sim::Duration>(settings_.replica_lag.sample(replica_rng_), 0, replica_horizon_);
  ++stats_.replica_reads;
  const sim::Time now = simulation_.now();
  simulation_.trace().record(now, kTraceReplicaRead, node_.id(), key, static_cast<std::uint64_t>(lag));
  Reply reply;
  reply.previous = replica_item(key, now - lag);
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
    for (const auto& [request, call] : live_calls_) emit_duplicates(call, std::nullopt);
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
