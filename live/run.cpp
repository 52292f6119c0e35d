#include "live/run.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <fmt/format.h>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "check/oracle.hpp"
#include "live/server_watch.hpp"
#include "protocol/registry.hpp"
#include "protocol/strategies.hpp"
#include "sim/random.hpp"

namespace live {

namespace {

using lethe::AttemptId;
using lethe::MessageId;
using SteadyClock = std::chrono::steady_clock;

// Thrown through the protocol from a crash point: the worker "process" dies there.
struct WorkerKilled {};
// Thrown through the protocol from a store operation once the run is abandoned (the server is gone): the worker
// stops where it is.
struct RunAbandoned {};

class RealClock final : public lethe::Clock {
 public:
  explicit RealClock(SteadyClock::time_point epoch) : epoch_(epoch) {}
  sim::Time now() override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now() - epoch_).count();
  }
  void sleep(sim::Duration duration) override {
    if (duration > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(duration));
  }

 private:
  SteadyClock::time_point epoch_;
};

// Every store operation, with real invocation and response instants.
class Recorder {
 public:
  std::size_t begin(std::uint32_t client, const lethe::Op& op, sim::Time invoked_at) {
    lethe::StoreOperation operation;
    operation.client = client;
    operation.keys = op.keys();
    operation.invoked_at = invoked_at;
    operation.returned_at = lethe::lin::kNever;
    operation.input = op;
    std::lock_guard<std::mutex> lock(mutex_);
    operations_.push_back(std::move(operation));
    return operations_.size() - 1;
  }
  void finish(std::size_t index, const lethe::Reply& reply, sim::Time returned_at) {
    std::lock_guard<std::mutex> lock(mutex_);
    operations_[index].returned_at = returned_at;
    operations_[index].output = reply;
  }
  std::vector<lethe::StoreOperation> take() {
    std::lock_guard<std::mutex> lock(mutex_);
    return std::move(operations_);
  }

 private:
  std::mutex mutex_;
  std::vector<lethe::StoreOperation> operations_;
};

// The ledger the oracle reads, shared by the workers.
class SharedLedger {
 public:
  AttemptId begin_attempt(MessageId id, std::uint32_t worker, sim::Time now) {
    std::lock_guard<std::mutex> lock(mutex_);
    lethe::AttemptRecord record;
    record.id = id;
    record.node = worker;
    ledger_.deliveries += 1;
    const AttemptId attempt = ledger_.attempts.add(record);
    delivered_at_[attempt] = now;
    return attempt;
  }
  void end_attempt(AttemptId attempt, const lethe::ProtectResult& result, sim::Time now) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& record = ledger_.attempt(attempt);
    record.ended_at = now;
    record.outcome = static_cast<std::int8_t>(result.outcome);
    if (result.outcome != lethe::Outcome::Failed && result.value) record.set_returned_value(*result.value);
  }
  void crashed(AttemptId attempt, sim::Time now) {
    std::lock_guard<std::mutex> lock(mutex_);
    ledger_.attempt(attempt).crashed_at = now;
  }
  void decided(const lethe::DecisionNote& note, sim::Time now) {
    std::lock_guard<std::mutex> lock(mutex_);
    ledger_.decided(note, now);
  }
  void waited(MessageId id, lethe::ProcessorId processor, AttemptId attempt, sim::Duration waited) {
    std::lock_guard<std::mutex> lock(mutex_);
    ledger_.waits.push_back(lethe::WaitRecord{id, processor, attempt, waited});
  }
  void completed(AttemptId attempt, bool applied, sim::Time now) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& record = ledger_.attempt(attempt);
    if (!applied) {
      record.completion_failed = true;
      return;
    }
    record.completion_applied = true;
    record.completed_at = now;
  }
  // The effect: one entry in the log that outlives the worker. Returns the execution's unique value.
  std::uint64_t execute(MessageId id, AttemptId attempt, std::uint32_t worker, sim::Time now) {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::uint64_t value = ++executions_;
    ledger_.executions.push_back(lethe::ExecutionRecord{id, 0, attempt, 1, worker, now, value});
    return value;
  }
  void slowed(AttemptId attempt) {
    std::lock_guard<std::mutex> lock(mutex_);
    slowed_.insert(attempt);
  }
  lethe::Ledger take() {
    std::lock_guard<std::mutex> lock(mutex_);
    return std::move(ledger_);
  }
  // When each attempt began (its delivery), for the event log.
  lethe::BTreeMap<AttemptId, sim::Time> take_delivered_at() {
    std::lock_guard<std::mutex> lock(mutex_);
    return std::move(delivered_at_);
  }
  std::set<AttemptId> slowed_attempts() {
    std::lock_guard<std::mutex> lock(mutex_);
    return slowed_;
  }

 private:
  std::mutex mutex_;
  lethe::Ledger ledger_;
  lethe::BTreeMap<AttemptId, sim::Time> delivered_at_;
  std::uint64_t executions_ = 0;
  std::set<AttemptId> slowed_;  // attempts whose effect was made slow
};

struct Delivery {
  MessageId id = 0;
  int attempts = 0;
};

// The broker: ready deliveries in order, failed ones back after a delay, until every one was acknowledged.
class DeliveryQueue {
 public:
  DeliveryQueue(std::deque<Delivery> initial, RealClock& clock)
      : ready_(std::move(initial)), outstanding_(ready_.size()), clock_(clock) {}

  std::optional<Delivery> pop() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      if (stopped_ || outstanding_ == 0) return std::nullopt;
      const sim::Time now = clock_.now();
      while (!delayed_.empty() && delayed_.begin()->first <= now) {
        ready_.push_back(delayed_.begin()->second);
        delayed_.erase(delayed_.begin());
      }
      if (!ready_.empty()) {
        Delivery delivery = ready_.front();
        ready_.pop_front();
        return delivery;
      }
      const sim::Duration wait = delayed_.empty() ? 10 * sim::kMillisecond : delayed_.begin()->first - now;
      changed_.wait_for(lock, std::chrono::nanoseconds(std::max<sim::Duration>(wait, 10 * sim::kMicrosecond)));
    }
  }
  void acknowledge() {
    std::lock_guard<std::mutex> lock(mutex_);
    --outstanding_;
    changed_.notify_all();
  }
  // Back after `delay`, unless the delivery used all its attempts (then it is given up).
  void redeliver(Delivery delivery, sim::Duration delay) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (++delivery.attempts >= kMaxDeliveryAttempts) {
      --outstanding_;
      ++given_up_;
    } else {
      delayed_.emplace(clock_.now() + delay, delivery);
    }
    changed_.notify_all();
  }
  void stop() {
    std::lock_guard<std::mutex> lock(mutex_);
    stopped_ = true;
    changed_.notify_all();
  }
  // Waits until every delivery is done or `deadline` (run time) passes; false on the deadline.
  bool wait_done(sim::Time deadline) {
    std::unique_lock<std::mutex> lock(mutex_);
    while (outstanding_ > 0 && !stopped_) {
      const sim::Duration left = deadline - clock_.now();
      if (left <= 0) return false;
      changed_.wait_for(lock, std::chrono::nanoseconds(std::min<sim::Duration>(left, 50 * sim::kMillisecond)));
    }
    return true;
  }
  std::uint64_t given_up() {
    std::lock_guard<std::mutex> lock(mutex_);
    return given_up_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Delivery> ready_;
  std::multimap<sim::Time, Delivery> delayed_;
  std::size_t outstanding_;
  std::uint64_t given_up_ = 0;
  bool stopped_ = false;
  RealClock& clock_;
};

// The protocol's StoreClient: one connection (reopened after it broke), every operation recorded. Tells the
// ServerWatch whether the server answered; reconnects with a growing delay after failed attempts; throws
// RunAbandoned once the run is given up.
class RecordingClient final : public lethe::StoreClient {
 public:
  RecordingClient(LiveStore& store, Recorder& recorder, RealClock& clock, Counters& coverage, std::uint32_t client,
                  double drop, sim::Rng rng, ServerWatch& watch, const std::atomic<bool>& abandoned)
      : store_(store), recorder_(recorder), clock_(clock), coverage_(coverage), client_(client), drop_(drop),
        rng_(std::move(rng)), watch_(watch), abandoned_(abandoned) {}

  std::optional<lethe::Reply> execute(const lethe::Op& op) override {
    if (abandoned_) throw RunAbandoned{};
    if (!connection_ || connection_->broken()) {
      connection_.reset();
      if (!reconnect()) return std::nullopt;  // nothing was sent: no operation to record
    }
    DropPlan plan;
    if (rng_.bernoulli(drop_)) {
      if (rng_.bernoulli(0.5)) {
        plan.before_send = true;
      } else {
        plan.after_request = 1 + static_cast<int>(rng_.below(2));
      }
    }
    const std::size_t index = recorder_.begin(client_, op, clock_.now());
    std::optional<lethe::Reply> reply = connection_->execute(op, plan);
    if (reply.has_value()) {
      recorder_.finish(index, *reply, clock_.now());
      watch_.answered();
    } else {
      coverage_.add("store.unknown_outcomes");
      if (plan.any()) {
        coverage_.add("fault.connection_drop.fired");
      } else if (connection_->broken()) {
        watch_.failed(clock_.now(), "an operation got no answer (a broken connection or a client-side timeout)");
      } else {
        watch_.answered();  // the server answered with an error (a statement timeout): it is there
      }
    }
    return reply;
  }

  // The worker died: its connection goes with it.
  void disconnect() { connection_.reset(); }

 private:
  // A new connection, after the delay that failed attempts in a row call for (sleeping in short steps, so that
  // an abandoned run is noticed). False when the server could not be reached.
  bool reconnect() {
    const sim::Time until = clock_.now() + reconnect_delay(failed_connects_);
    while (clock_.now() < until) {
      if (abandoned_) throw RunAbandoned{};
      clock_.sleep(std::min<sim::Duration>(until - clock_.now(), 10 * sim::kMillisecond));
    }
    try {
      connection_ = store_.connect();
    } catch (const std::runtime_error& e) {
      coverage_.add("store.connect_failures");
      ++failed_connects_;
      watch_.failed(clock_.now(), e.what());
      return false;
    }
    coverage_.add("store.connections");
    failed_connects_ = 0;
    watch_.answered();
    return true;
  }

  LiveStore& store_;
  Recorder& recorder_;
  RealClock& clock_;
  Counters& coverage_;
  std::uint32_t client_;
  double drop_;
  sim::Rng rng_;
  ServerWatch& watch_;
  const std::atomic<bool>& abandoned_;
  std::uint64_t failed_connects_ = 0;  // connection attempts in a row that failed
  std::unique_ptr<Connection> connection_;
};

class WorkerHooks final : public lethe::ProtocolHooks {
 public:
  WorkerHooks(const LiveFaults& faults, SharedLedger& ledger, Counters& coverage, RealClock& clock, sim::Rng rng)
      : faults_(faults), ledger_(ledger), coverage_(coverage), clock_(clock), rng_(std::move(rng)) {}

  void crash_point(lethe::CrashPoint point, MessageId, AttemptId attempt) override {
    const std::string name = lethe::to_string(point);
    coverage_.add(fmt::format("crash_point.{}.reached", name));
    double probability = 0.0;
    switch (point) {
      case lethe::CrashPoint::AfterStartBeforeEffect: probability = faults_.crash_after_start; break;
      case lethe::CrashPoint::AfterEffectBeforeComplete: probability = faults_.crash_after_effect; break;
      case lethe::CrashPoint::AfterCompleteBeforeAck: probability = faults_.crash_before_ack; break;
    }
    if (!rng_.bernoulli(probability)) return;
    coverage_.add(fmt::format("crash_point.{}.fired", name));
    if (attempt != 0) ledger_.crashed(attempt, clock_.now());
    throw WorkerKilled{};
  }
  void decided(const lethe::DecisionNote& note) override {
    ledger_.decided(note, clock_.now());
    coverage_.add(fmt::format("decision.{}", lethe::to_string(note.basis)));
  }
  void waited(MessageId id, lethe::ProcessorId processor, AttemptId attempt, sim::Duration waited) override {
    ledger_.waited(id, processor, attempt, waited);
  }
  void completed(MessageId, lethe::ProcessorId, AttemptId attempt, bool applied) override {
    ledger_.completed(attempt, applied, clock_.now());
  }

 private:
  const LiveFaults& faults_;
  SharedLedger& ledger_;
  Counters& coverage_;
  RealClock& clock_;
  sim::Rng rng_;
};

// One run: the shared state and the threads.
class Run {
 public:
  Run(const LiveSettings& settings, LiveStore& store)
      : settings_(settings), store_(store), clock_(SteadyClock::now()), queue_(initial_deliveries(), clock_) {}

  LiveOutcome execute();

 private:
  std::deque<Delivery> initial_deliveries() {
    sim::Rng rng = sim::Rng::derive(settings_.seed, "deliveries");
    std::deque<Delivery> deliveries;
    for (std::int64_t i = 0; i < settings_.messages; ++i) {
      const int count = rng.bernoulli(settings_.duplicates) ? 1 + settings_.copies : 1;
      for (int c = 0; c < count; ++c) deliveries.push_back(Delivery{static_cast<MessageId>(i), 0});
      if (count > 1) coverage_.add("redelivery.copy", static_cast<std::uint64_t>(count - 1));
    }
    return deliveries;
  }
  void worker_main(std::uint32_t index);
  void stall_main();
  void supervise();
  // execute()'s steps: the workers and the staller run to the end (the wall time it took); the ledger judged;
  // what the store's history shows; the coverage of crash points and faults.
  sim::Duration run_threads();
  lethe::Ledger judged_ledger(const std::vector<lethe::StoreOperation>& history, sim::Duration wall_time,
                              lethe::RunResult& result);
  void check_history(std::vector<lethe::StoreOperation>& history, LiveOutcome& outcome) const;
  std::map<std::string, std::uint64_t> coverage_of(const lethe::Ledger& ledger, const LiveOutcome& outcome);
  std::vector<std::string> armed_fault_points() const;
  std::set<MessageId> slow_owners(const lethe::Ledger& ledger);
  lethe::events::EventLog event_log(const lethe::Ledger& ledger, const lethe::RunResult& result);
  std::vector<std::uint64_t> unexplained_messages(const lethe::Ledger& ledger, const lethe::RunResult& result);
  void record_error(const std::string& what) {
    {
      std::lock_guard<std::mutex> lock(error_mutex_);
      if (error_.empty()) error_ = what;
    }
    queue_.stop();
  }

  const LiveSettings& settings_;
  LiveStore& store_;
  RealClock clock_;
  Counters coverage_;
  Recorder recorder_;
  SharedLedger ledger_;
  DeliveryQueue queue_;
  std::mutex error_mutex_;
  std::string error_;
  std::mutex stop_mutex_;
  std::condition_variable stop_signal_;
  bool stopping_ = false;
  ServerWatch watch_;
  std::atomic<bool> abandoned_{false};
  std::string abandoned_because_;  // written by supervise() before abandoned_ is set, read after the joins
};

// The run's dedupe events (check/events.hpp): the judged ledger, each attempt's delivery, and a crash line
// for every attempt a kill stopped (one attempt runs at a time on a worker, so the crash ends just that one).
lethe::events::EventLog Run::event_log(const lethe::Ledger& ledger, const lethe::RunResult& result) {
  lethe::events::EventLog log;
  log.protocol = settings_.protocol.kind;
  log.processors = {"live"};
  log.provider_calls = result.sink_calls;
  log.scenario = result.scenario;
  log.seed = result.seed;
  for (int w = 0; w < settings_.workers; ++w) log.nodes.push_back(fmt::format("worker-{}", w));
  log.ledger = ledger;
  log.delivered_at = ledger_.take_delivered_at();
  ledger.attempts.for_each([&log](const lethe::AttemptRecord& a) {
    if (a.crashed_at) {
      log.node_events.push_back(lethe::events::NodeEvent{lethe::events::NodeEventKind::Crash, *a.crashed_at, a.node, 0});
    }
  });
  std::stable_sort(log.node_events.begin(), log.node_events.end(),
                   [](const auto& x, const auto& y) { return x.at < y.at; });
  return log;
}

std::set<MessageId> Run::slow_owners(const lethe::Ledger& ledger) {
  // Required by every strategy with a slow-owner window (register_strategy makes sure).
  const sim::Duration max_processing_time = settings_.protocol.settings.get<sim::Duration>(
      lethe::strategy_info(settings_.protocol.kind).slow_owner_key);
  // Messages with an attempt that ran the effect while alive and held its record in flight for at least
  // max_processing_time: an injected slow effect, a completion that never landed although the attempt was not
  // killed, or a measured span >= max_processing_time from its decision to run until its completion landed (a
  // store stall delaying the completion, a real pause).
  const std::set<AttemptId> slowed = ledger_.slowed_attempts();
  std::map<AttemptId, sim::Time> decided_at;  // the last decision of each attempt that let it run the effect
  ledger.attempts.for_each([&](const lethe::AttemptRecord& a) {
    const std::optional<lethe::ProcessDecision> d = ledger.process_decision(a);
    if (d && d->basis != lethe::Basis::Unprotected) decided_at[a.attempt] = d->local_time;
  });
  std::set<MessageId> slow_owner;
  for (const auto& e : ledger.executions) {
    const lethe::AttemptRecord& a = ledger.attempt(e.attempt);
    // (A kill after the effect does not matter here: the attempt was alive, and slow, when it ran the effect.)
    const bool unrecorded =
        !a.crashed_at && a.outcome == static_cast<int>(lethe::Outcome::Executed) && !a.completion_applied;
    // How long the attempt kept its record in flight: from its decision to its completion landing (or to its
    // end, or its effect): at least max_processing_time means a waiter could rightly find it stale.
    const sim::Time held_until = std::max(e.at, a.completed_at.value_or(a.ended_at.value_or(e.at)));
    const auto decided = decided_at.find(e.attempt);
    const bool paused =
        decided != decided_at.end() && held_until - decided->second >= max_processing_time;
    if (slowed.count(e.attempt) > 0 || unrecorded || paused) slow_owner.insert(e.id);
  }
  return slow_owner;
}

std::vector<std::uint64_t> Run::unexplained_messages(const lethe::Ledger& ledger, const lethe::RunResult& result) {
  const lethe::StrategyInfo& strategy = lethe::strategy_info(settings_.protocol.kind);
  // (A strategy with a slow-owner window requires its slow_owner_key: register_strategy makes sure.)
  const std::set<MessageId> slow_owner =
      lethe::needs_slow_owner_evidence(strategy) ? slow_owners(ledger) : std::set<MessageId>{};
  std::vector<std::uint64_t> unexplained;  // one entry per unexplained duplicate
  for (const auto& x : result.explanations) {
    if (x.cause == lethe::Cause::SinkRetry) continue;  // the sink's, not the strategy's (and live mode has none)
    if (!lethe::window_open(strategy, x.cause, settings_.protocol, slow_owner.count(x.id) > 0)) {
      unexplained.push_back(x.id);
    }
  }
  return unexplained;
}

void Run::worker_main(std::uint32_t index) {
  const sim::Rng root = sim::Rng::derive(settings_.seed, fmt::format("worker:{}", index));
  RecordingClient client(store_, recorder_, clock_, coverage_, index, settings_.faults.drop, root.derive("drops"),
                         watch_, abandoned_);
  WorkerHooks hooks(settings_.faults, ledger_, coverage_, clock_, root.derive("crashes"));
  sim::Rng work = root.derive("work");
  std::uint32_t incarnation = 0;
  auto strategy = lethe::make_strategy(settings_.protocol, client, clock_, hooks, root.derive("protocol:0"));
  const sim::Duration* max_processing_time =
      settings_.protocol.settings.find<sim::Duration>("max_processing_time");
  const sim::Duration slow_for = settings_.faults.slow_for.value_or(
      2 * (max_processing_time != nullptr ? *max_processing_time : 50 * sim::kMillisecond));
  while (auto delivery = queue_.pop()) {
    const MessageId id = delivery->id;
    const AttemptId attempt = ledger_.begin_attempt(id, index, clock_.now());
    const lethe::Effect effect = [&](lethe::FencingToken) -> std::optional<std::uint64_t> {
      clock_.sleep(settings_.processing_time.sample(work));
      if (work.bernoulli(settings_.faults.slow)) {
        coverage_.add("fault.slow_effect.fired");
        ledger_.slowed(attempt);
        clock_.sleep(slow_for);
      }
      return ledger_.execute(id, attempt, index, clock_.now());
    };
    try {
      const lethe::ProtectResult result = strategy->protect(id, 0, attempt, effect);
      ledger_.end_attempt(attempt, result, clock_.now());
      if (result.outcome == lethe::Outcome::Failed) {
        queue_.redeliver(*delivery, settings_.visibility_timeout);
        continue;
      }
      hooks.crash_point(lethe::CrashPoint::AfterCompleteBeforeAck, id, 0);
      queue_.acknowledge();
    } catch (const RunAbandoned&) {
      ledger_.crashed(attempt, clock_.now());  // stopped where it was, as if its process died
      return;
    } catch (const WorkerKilled&) {
      coverage_.add("crash");
      client.disconnect();
      clock_.sleep(settings_.restart_after);
      ++incarnation;
      coverage_.add("restart");
      strategy = lethe::make_strategy(settings_.protocol, client, clock_, hooks,
                                      root.derive(fmt::format("protocol:{}", incarnation)));
      queue_.redeliver(*delivery, settings_.visibility_timeout);
    }
  }
}

// Waits for the end of the run: every delivery done (or a worker's error), the deadline, or the server gone —
// then the run is abandoned: the queue stops and every worker stops at its next store operation.
void Run::supervise() {
  // An injected stall keeps the server from answering for stall_for: that is no reason to give up on it.
  const sim::Duration stalls = settings_.faults.stall_every > 0 ? settings_.faults.stall_for : 0;
  const sim::Duration server_limit = settings_.server_timeout + stalls;
  for (;;) {
    const sim::Time check_at = std::min(settings_.max_duration, clock_.now() + 50 * sim::kMillisecond);
    if (queue_.wait_done(check_at)) return;
    if (const std::optional<std::string> gone = watch_.gone(server_limit)) {
      coverage_.add("run.server_gone");
      abandoned_because_ = *gone;
      abandoned_ = true;
      queue_.stop();
      return;
    }
    if (clock_.now() >= settings_.max_duration) {
      coverage_.add("run.deadline_reached");
      queue_.stop();
      return;
    }
  }
}

void Run::stall_main() {
  sim::Rng rng = sim::Rng::derive(settings_.seed, "stalls");
  for (;;) {
    // Uniform in [stall_every / 2, 3 * stall_every / 2]: a run of a few stall_every sees stalls for sure.
    const sim::Duration every = settings_.faults.stall_every;
    const sim::Duration pause = every / 2 + rng.between(0, every);
    {
      std::unique_lock<std::mutex> lock(stop_mutex_);
      if (stop_signal_.wait_for(lock, std::chrono::nanoseconds(std::max<sim::Duration>(pause, 1)),
                                [this] { return stopping_; })) {
        return;
      }
    }
    try {
      if (store_.stall(settings_.faults.stall_for)) coverage_.add("fault.store_stall.fired");
    } catch (const std::runtime_error&) {
      coverage_.add("fault.store_stall.errors");
    }
  }
}

sim::Duration Run::run_threads() {
  std::vector<std::thread> threads;
  for (int i = 0; i < settings_.workers; ++i) {
    threads.emplace_back([this, i] {
      try {
        worker_main(static_cast<std::uint32_t>(i));
      } catch (const std::exception& e) {
        record_error(fmt::format("worker {}: {}", i, e.what()));
      } catch (...) {
        record_error(fmt::format("worker {}: unknown exception", i));
      }
    });
  }
  std::thread staller;
  if (settings_.faults.stall_every > 0) staller = std::thread([this] { stall_main(); });
  supervise();
  for (auto& t : threads) t.join();
  {
    std::lock_guard<std::mutex> lock(stop_mutex_);
    stopping_ = true;
  }
  stop_signal_.notify_all();
  if (staller.joinable()) staller.join();
  return clock_.now();
}

lethe::Ledger Run::judged_ledger(const std::vector<lethe::StoreOperation>& history, sim::Duration wall_time,
                                 lethe::RunResult& result) {
  lethe::Ledger ledger = ledger_.take();
  ledger.messages = static_cast<std::uint64_t>(settings_.messages);
  for (std::int64_t i = 0; i < settings_.messages; ++i) ledger.expected.add(static_cast<MessageId>(i), 1);
  for (const auto& e : ledger.executions) ledger.attempt(e.attempt).executed = true;
  result.scenario = fmt::format("live-{}-{}", settings_.store, settings_.store_options.variant);
  result.seed = settings_.seed;
  for (const auto& op : history) {  // the store's answers show which completions overwrote a memoized result
    if (op.returned_at == lethe::lin::kNever) continue;
    if (const auto overwrite = lethe::memo_overwrite(op.input, op.output, op.returned_at)) {
      ledger.memo_overwrites.push_back(*overwrite);
    }
  }
  lethe::OracleInput input{ledger, settings_.protocol.kind, ledger.executions.size(),
                           [](std::uint32_t node) { return fmt::format("worker-{}", node); },
                           [](lethe::ProcessorId) { return std::string("live"); }};
  input.max_explanations = SIZE_MAX;  // every duplicate is accounted for below
  lethe::judge(input, result);
  result.sim_time = wall_time;
  return ledger;
}

void Run::check_history(std::vector<lethe::StoreOperation>& history, LiveOutcome& outcome) const {
  outcome.operations = history.size();
  outcome.unknown_outcomes = static_cast<std::uint64_t>(std::count_if(
      history.begin(), history.end(), [](const lethe::StoreOperation& op) { return op.returned_at == lethe::lin::kNever; }));
  std::vector<std::int64_t> latencies;
  for (const auto& op : history) {
    if (op.returned_at != lethe::lin::kNever) latencies.push_back(op.returned_at - op.invoked_at);
  }
  outcome.latency = lethe::quantiles(latencies);
  const lethe::lin::Result check = lethe::check_store_history(history, settings_.linearizability_budget);
  outcome.verdict = check.verdict;
  outcome.check_steps = check.steps;
  outcome.check_explanation = check.explanation;
  if (check.verdict != lethe::lin::Verdict::Unknown) {
    outcome.result.linearizable = check.verdict == lethe::lin::Verdict::Linearizable;
  }
  if (settings_.keep_history) outcome.history = std::move(history);
}

// Every crash point (also those that never fired) and every fault that was switched on.
std::map<std::string, std::uint64_t> Run::coverage_of(const lethe::Ledger& ledger, const LiveOutcome& outcome) {
  std::map<std::string, std::uint64_t> coverage = coverage_.snapshot();
  for (const auto& [name, count] : store_.counters().snapshot()) coverage[name] += count;
  for (const char* point : {"after_start_before_effect", "after_effect_before_complete", "after_complete_before_ack"}) {
    coverage.try_emplace(fmt::format("crash_point.{}.reached", point), 0);
    coverage.try_emplace(fmt::format("crash_point.{}.fired", point), 0);
  }
  for (const char* key : {"crash", "restart", "redelivery.copy", "store.unknown_outcomes"}) coverage.try_emplace(key, 0);
  if (settings_.faults.drop > 0) coverage.try_emplace("fault.connection_drop.fired", 0);
  if (settings_.faults.stall_every > 0) coverage.try_emplace("fault.store_stall.fired", 0);
  if (settings_.faults.slow > 0) coverage.try_emplace("fault.slow_effect.fired", 0);
  // Attempts that ran the effect and returned, but whose completion write never landed (every try unknown or
  // rejected): their record stays in flight and is taken over later while they are alive.
  std::uint64_t unrecorded = 0;
  ledger.attempts.for_each([&](const lethe::AttemptRecord& a) {
    if (a.executed && !a.crashed_at && !a.completion_applied && a.outcome == static_cast<int>(lethe::Outcome::Executed)) {
      ++unrecorded;
    }
  });
  coverage["completion.not_recorded"] = unrecorded;
  coverage["store.operations"] = outcome.operations;
  coverage["deliveries.given_up"] = queue_.given_up();
  return coverage;
}

// The fault points the settings gave a non-zero probability or interval (their ".fired" coverage keys).
std::vector<std::string> Run::armed_fault_points() const {
  const LiveFaults& f = settings_.faults;
  const std::pair<const char*, bool> points[] = {
      {"crash_point.after_start_before_effect.fired", f.crash_after_start > 0},
      {"crash_point.after_effect_before_complete.fired", f.crash_after_effect > 0},
      {"crash_point.after_complete_before_ack.fired", f.crash_before_ack > 0},
      {"fault.connection_drop.fired", f.drop > 0},
      {"fault.store_stall.fired", f.stall_every > 0},
      {"fault.slow_effect.fired", f.slow > 0}};
  std::vector<std::string> armed;
  for (const auto& [key, on] : points) {
    if (on) armed.emplace_back(key);
  }
  return armed;
}

LiveOutcome Run::execute() {
  const sim::Duration wall_time = run_threads();
  if (!error_.empty()) throw std::runtime_error(error_);
  LiveOutcome outcome;
  outcome.store = settings_.store;
  outcome.variant = settings_.store_options.variant;
  const VariantInfo* info = find_variant(settings_.store, settings_.store_options.variant);
  outcome.variant_atomic = info != nullptr && info->atomic;
  outcome.location = store_.location();
  outcome.wall_time = wall_time;
  if (abandoned_) outcome.abandoned = abandoned_because_;
  std::vector<lethe::StoreOperation> history = recorder_.take();
  const lethe::Ledger ledger = judged_ledger(history, wall_time, outcome.result);
  check_history(history, outcome);
  if (settings_.keep_history) outcome.ledger = ledger;
  if (settings_.keep_events) outcome.events = event_log(ledger, outcome.result);
  outcome.unexplained_ids = unexplained_messages(ledger, outcome.result);
  outcome.unexplained_duplicates = outcome.unexplained_ids.size();
  outcome.result.coverage = coverage_of(ledger, outcome);
  outcome.result.armed_fault_points = armed_fault_points();
  outcome.result.ok = outcome.passed();
  return outcome;
}

}  // namespace

std::string validate(const LiveSettings& s) {
  if (s.store != "postgres" && s.store != "redis" && s.store != "memory") {
    return "unknown store \"" + s.store + "\" (postgres, redis or memory)";
  }
  if (find_variant(s.store, s.store_options.variant) == nullptr) {
    std::string known;
    for (const auto& v : store_variants()) {
      if (v.store == s.store) known += (known.empty() ? "" : ", ") + v.name;
    }
    return "store " + s.store + ": unknown variant \"" + s.store_options.variant + "\" (" + known + ")";
  }
  const lethe::StrategyInfo* strategy = lethe::find_strategy(s.protocol.kind);
  if (strategy == nullptr) return "unknown protocol.kind \"" + s.protocol.kind + "\"";
  if (strategy->effect_in_store_transaction) {
    return "protocol.kind = \"" + s.protocol.kind + "\" needs store transactions, which live mode does not run";
  }
  if (strategy->saga) return "protocol.kind = \"" + s.protocol.kind + "\" drives sagas, which live mode does not run";
  if (strategy->decisions_inferred) {
    return "protocol.kind = \"" + s.protocol.kind + "\" runs external processes in the simulated world only";
  }
  // The strategy's own keys, through its registry entry (the loader's table).
  const lethe::ProtocolSection protocol = lethe::with_defaults(s.protocol);
  if (std::string why = lethe::settings_problem(protocol); !why.empty()) return why;
  const lethe::PollRead* poll_read = protocol.settings.find<lethe::PollRead>("poll_read");
  if (poll_read != nullptr && poll_read->kind == lethe::PollReadKind::Eventual) {
    return "protocol.poll_read = \"eventual\" needs a read replica, which live mode does not have";
  }
  const std::string* payload_check = protocol.settings.find<std::string>("payload_check");
  if (payload_check != nullptr && *payload_check != "off") {
    return "protocol.payload_check = \"" + *payload_check + "\" needs the payload of each delivery, which live mode "
           "does not have (its messages are ids)";
  }
  if (s.workers < 1 || s.workers > 256) return "workers must be between 1 and 256";
  if (s.messages < 1 || s.messages > 10'000'000) return "messages must be between 1 and 10000000";
  auto probability = [](double p) { return p >= 0.0 && p <= 1.0; };
  if (!probability(s.duplicates)) return "duplicates must be a fraction in [0, 1]";
  if (s.copies < 1 || s.copies > 100) return "copies must be between 1 and 100";
  const LiveFaults& f = s.faults;
  if (!probability(f.crash_after_start) || !probability(f.crash_after_effect) || !probability(f.crash_before_ack) ||
      !probability(f.drop) || !probability(f.slow)) {
    return "fault probabilities must be in [0, 1]";
  }
  if (f.stall_every < 0 || f.stall_for < 0 || (f.stall_every > 0 && f.stall_for <= 0)) {
    return "stalls need stall_every > 0 and stall_for > 0";
  }
  if (f.slow_for && *f.slow_for < 0) return "slow_for must be >= 0";
  if (s.visibility_timeout <= 0 || s.restart_after < 0 || s.max_duration <= 0) {
    return "visibility_timeout and max_duration must be positive, restart_after >= 0";
  }
  if (s.store_options.timeout <= 0) return "the store timeout must be positive";
  if (s.server_timeout <= 0) return "the server timeout must be positive";
  return {};
}

namespace {

// Best-effort removal of what the run created: empty when done, else what is left and why.
std::string clean_up(LiveStore& store) {
  try {
    store.teardown();
    return {};
  } catch (const std::exception& e) {
    return fmt::format("{} ({})", store.location(), e.what());
  }
}

}  // namespace

LiveOutcome run_live(const LiveSettings& settings) {
  const std::string problem = validate(settings);
  if (!problem.empty()) throw std::invalid_argument(problem);
  std::unique_ptr<LiveStore> store = open_store(settings.store, settings.store_options);
  LiveSettings filled = settings;  // the strategy's keys left out take their defaults (windows read them)
  filled.protocol = lethe::with_defaults(settings.protocol);
  LiveOutcome outcome;
  try {
    Run run(filled, *store);
    outcome = run.execute();
  } catch (const std::exception& e) {
    const std::string left = clean_up(*store);
    if (left.empty()) throw;
    throw std::runtime_error(fmt::format("{}; could not remove {}", e.what(), left));
  } catch (...) {
    clean_up(*store);
    throw;
  }
  outcome.left_behind = clean_up(*store);
  return outcome;
}

}  // namespace live
