// Tests of protocol/strategies.hpp: every dedupe strategy, each variant's failure mode and the fixed setting that
// does not have it. The strategies run in fibers of a sim::Simulation against test doubles defined here: a store
// that applies operations directly to a StoreState (optionally after a delay, so that callers interleave; it can
// lose requests or replies, and answer eventual reads from an older state), a clock over the kernel, and hooks
// that record everything and crash the caller at chosen points.
#include "protocol/strategies.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "protocol/registry.hpp"
#include "sim/node.hpp"
#include "sim/simulation.hpp"

namespace strategies_test {

using lethe::AttemptId;
using lethe::Basis;
using lethe::CrashPoint;
using lethe::DecisionNote;
using lethe::Effect;
using lethe::Item;
using lethe::Key;
using lethe::MessageId;
using lethe::Op;
using lethe::OpKind;
using lethe::Outcome;
using lethe::ProcessorId;
using lethe::ProtectResult;
using lethe::ProtocolSection;
using lethe::Reply;
using lethe::StoreState;
using lethe::Table;
using sim::Duration;
using sim::kMillisecond;
using sim::kSecond;
using sim::Time;

constexpr MessageId kMessage = 42;
constexpr ProcessorId kProcessor = 1;
const Key kRecordKey = lethe::make_key(Table::Dedupe, kProcessor, kMessage);

// ---------------------------------------------------------------- test doubles

// What happens to one store call.
enum class Fate { Normal, LoseRequest /* not applied, nullopt */, LoseReply /* applied, nullopt */ };

class DirectStore final : public lethe::StoreClient {
 public:
  StoreState state;
  Duration delay = 0;                                   // half before the operation takes effect, half after
  Duration eventual_lag = 0;                            // read_eventual answers the state of `lag` ago
  std::function<Fate(const Op&, int call_index)> fate;  // default: every call is Normal
  struct Logged {
    Op op;
    Time at;  // virtual time it took effect (or would have)
    Fate fate;
  };
  std::vector<Logged> log;

  // Remembers the current state as the oldest one eventual reads can see.
  void begin_history() { history_.assign(1, {std::numeric_limits<Time>::min(), state}); }

  std::optional<Reply> execute(const Op& op) override {
    if (delay > 0) sim::sleep(delay / 2);
    const Fate this_fate = fate ? fate(op, static_cast<int>(log.size())) : Fate::Normal;
    log.push_back({op, sim::now(), this_fate});
    std::optional<Reply> reply;
    if (this_fate != Fate::LoseRequest) {
      reply = lethe::apply(state, op);
      if (op.kind != OpKind::Get) history_.push_back({sim::now(), state});
    }
    if (delay > 0) sim::sleep(delay - delay / 2);
    if (this_fate != Fate::Normal) return std::nullopt;
    return reply;
  }

  std::optional<Reply> read_eventual(Key key) override {
    if (delay > 0) sim::sleep(delay / 2);
    const Time as_of = sim::now() - eventual_lag;
    StoreState replica;
    for (const auto& [time, snapshot] : history_) {
      if (time <= as_of) replica = snapshot;
    }
    Reply reply = lethe::apply(replica, lethe::get_op(key));
    log.push_back({lethe::get_op(key), sim::now(), Fate::Normal});
    if (delay > 0) sim::sleep(delay - delay / 2);
    return reply;
  }

  std::vector<Time> times_of(OpKind kind) const {
    std::vector<Time> times;
    for (const auto& entry : log) {
      if (entry.op.kind == kind) times.push_back(entry.at);
    }
    return times;
  }

  std::optional<Item> record(Key key = kRecordKey) const {
    auto found = state.find(key);
    if (found == state.end()) return std::nullopt;
    return found->second;
  }

 private:
  std::vector<std::pair<Time, StoreState>> history_;
};

// The calling node's clock (skewed if the node is), sleeping through the kernel.
class FiberClock final : public lethe::Clock {
 public:
  Time now() override { return sim::this_node().local_now(); }
  void sleep(Duration duration) override { sim::sleep(duration); }
};

class RecordingHooks final : public lethe::ProtocolHooks {
 public:
  std::vector<DecisionNote> notes;
  std::vector<std::pair<AttemptId, Duration>> waits;
  std::map<AttemptId, bool> completions;  // attempt -> applied
  std::vector<std::pair<CrashPoint, AttemptId>> points_reached;
  std::set<std::pair<CrashPoint, AttemptId>> crash_at;  // the caller's node crashes there

  void crash_point(CrashPoint point, MessageId /*id*/, AttemptId attempt) override {
    points_reached.emplace_back(point, attempt);
    if (crash_at.count({point, attempt}) != 0) {
      sim::this_node().crash();
      sim::Simulation::current().checkpoint();  // throws sim::Crash
    }
  }
  void decided(const DecisionNote& note) override { notes.push_back(note); }
  void waited(MessageId /*id*/, ProcessorId /*processor*/, AttemptId attempt, Duration waited) override {
    waits.emplace_back(attempt, waited);
  }
  void completed(MessageId /*id*/, ProcessorId /*processor*/, AttemptId attempt, bool applied) override {
    completions[attempt] = applied;
  }
  std::map<AttemptId, bool> releases;  // attempt -> applied
  std::vector<AttemptId> payload_refusals;
  void payload_refused(MessageId /*id*/, ProcessorId /*processor*/, AttemptId attempt) override {
    payload_refusals.push_back(attempt);
  }
  void released(MessageId /*id*/, ProcessorId /*processor*/, AttemptId attempt, bool applied) override {
    releases[attempt] = applied;
  }

  std::vector<Basis> bases_of(AttemptId attempt) const {
    std::vector<Basis> bases;
    for (const auto& note : notes) {
      if (note.attempt == attempt) bases.push_back(note.basis);
    }
    return bases;
  }
  int count(Basis basis) const {
    int n = 0;
    for (const auto& note : notes) n += note.basis == basis ? 1 : 0;
    return n;
  }
};

// A poll every `interval`.
lethe::Poll poll_every(sim::Duration interval) {
  lethe::Poll poll;
  poll.interval = sim::Distribution::constant(interval);
  return poll;
}

// The settings of `kind`: those of the keys below that it reads (the others are not its to set).
ProtocolSection settings_for(const std::string& kind) {
  ProtocolSection settings;
  settings.kind = kind;
  const lethe::StrategyInfo& info = lethe::strategy_info(kind);
  for (auto& [key, value] : std::vector<std::pair<std::string, lethe::SettingValue>>{
           {"max_processing_time", kSecond}, {"ttl", sim::kHour}, {"poll", poll_every(10 * kMillisecond)},
           {"max_wait", 10 * kSecond}}) {
    if (lethe::find_key(info, key) != nullptr) settings.settings.set(key, value);
  }
  return settings;
}

// One world: a simulation, the store double, the clock, the hooks, and callers on their own nodes.
struct World {
  explicit World(ProtocolSection protocol, std::uint64_t seed = 1,
                 sim::SchedulePolicy policy = sim::SchedulePolicy::Fifo)
      : settings(std::move(protocol)), simulation({.seed = seed, .policy = policy}) {}

  ProtocolSection settings;
  DirectStore store;
  FiberClock clock;
  RecordingHooks hooks;
  std::map<AttemptId, ProtectResult> results;  // by attempt id
  std::vector<std::unique_ptr<lethe::Strategy>> strategies;
  sim::Simulation simulation;  // last: destroyed first, while everything its fibers use is still alive

  // A caller on its own node: at virtual time `at`, protect(kMessage) as `attempt`.
  sim::Node& caller(AttemptId attempt, Time at, Effect effect, Duration skew = 0) {
    return caller_with_payload(attempt, at, std::nullopt, std::move(effect), skew);
  }
  // The same, delivering payload version `payload` (nullopt: through protect(), the original payload).
  sim::Node& caller_with_payload(AttemptId attempt, Time at, std::optional<std::uint32_t> payload, Effect effect,
                                 Duration skew = 0) {
    const std::string name = "worker" + std::to_string(attempt);
    sim::Node& node = simulation.add_node(name, "consumers");
    node.set_clock_skew(skew);
    strategies.push_back(lethe::make_strategy(settings, store, clock, hooks, simulation.rng("poll-" + name)));
    lethe::Strategy* strategy = strategies.back().get();
    node.spawn([this, strategy, attempt, at, payload, effect = std::move(effect)] {
      sim::sleep_until(at);
      results[attempt] =
          payload.has_value()
              ? strategy->protect_payload(kMessage, kProcessor, attempt,
                                          lethe::payload_fingerprint(kMessage, *payload), effect)
              : strategy->protect(kMessage, kProcessor, attempt, effect);
    });
    return node;
  }
};

// An effect that counts its runs, takes `duration` and returns `value(run number)`.
struct CountingEffect {
  int runs = 0;
  Effect make(Duration duration, std::function<std::uint64_t(int)> value) {
    return [this, duration, value = std::move(value)](lethe::FencingToken) -> std::optional<std::uint64_t> {
      const int run = ++runs;
      sim::sleep(duration);
      return value(run);
    };
  }
  Effect make(Duration duration, std::uint64_t constant) {
    return make(duration, [constant](int) { return constant; });
  }
};

Item in_flight_record(Time started_at, AttemptId owner) {
  Item item;
  item.started_at = started_at;
  item.owner = owner;
  return item;
}

// ---------------------------------------------------------------- memoization (the article's 120 callers)

void run_one_hundred_twenty_callers(std::uint64_t seed, sim::SchedulePolicy policy) {
  World world(settings_for("mnemosyne"), seed, policy);
  world.store.delay = kMillisecond;
  CountingEffect effect;
  for (AttemptId attempt = 1; attempt <= 120; ++attempt) world.caller(attempt, 0, effect.make(10 * kMillisecond, 1));
  world.simulation.run();

  EXPECT_EQ(effect.runs, 1) << "seed " << seed;  // the effect ran once: counted separately ...
  std::uint64_t sum = 0;
  int executed = 0;
  ASSERT_EQ(world.results.size(), 120u);
  for (const auto& [attempt, result] : world.results) {
    ASSERT_TRUE(result.value.has_value()) << "attempt " << attempt;
    EXPECT_EQ(*result.value, 1u);  // ... and every caller received the memoized result
    sum += *result.value;
    executed += result.outcome == Outcome::Executed ? 1 : 0;
  }
  EXPECT_EQ(sum, 120u);  // the sum counts callers, not executions
  EXPECT_EQ(executed, 1);
}

TEST(ProtocolMemoization, OneHundredTwentyConcurrentCallersRunTheEffectOnceAndAllReceiveOne) {
  run_one_hundred_twenty_callers(1, sim::SchedulePolicy::Fifo);
  for (std::uint64_t seed = 1; seed <= 4; ++seed) run_one_hundred_twenty_callers(seed, sim::SchedulePolicy::Random);
}

TEST(ProtocolMemoization, EmailLikeEffectEveryCallerGetsTheFirstCallsProviderId) {
  World world(settings_for("mnemosyne"), 7, sim::SchedulePolicy::Random);
  world.store.delay = kMillisecond;
  CountingEffect provider;  // each call makes a fresh provider message id
  for (AttemptId attempt = 1; attempt <= 120; ++attempt) {
    world.caller(attempt, 0,
                 provider.make(20 * kMillisecond, [](int run) { return 5000u + static_cast<unsigned>(run); }));
  }
  world.simulation.run();
  EXPECT_EQ(provider.runs, 1);
  ASSERT_EQ(world.results.size(), 120u);
  for (const auto& [attempt, result] : world.results) {
    ASSERT_TRUE(result.value.has_value());
    EXPECT_EQ(*result.value, 5001u) << "attempt " << attempt;
  }
  ASSERT_TRUE(world.store.record().has_value());
  EXPECT_EQ(world.store.record()->memoized, std::optional<std::uint64_t>(5001));
}

TEST(ProtocolMemoization, WithoutMemoizeADuplicateSkipsWithNoValue) {
  ProtocolSection settings = settings_for("mnemosyne");
  settings.settings.set("memoize", false);
  World world(settings);
  CountingEffect effect;
  world.caller(1, 0, effect.make(10 * kMillisecond, 9));
  world.caller(2, kSecond / 2, effect.make(10 * kMillisecond, 9));
  world.simulation.run();
  EXPECT_EQ(effect.runs, 1);
  EXPECT_EQ(world.results[1].outcome, Outcome::Executed);
  EXPECT_EQ(world.results[1].value, std::optional<std::uint64_t>(9));
  EXPECT_EQ(world.results[2].outcome, Outcome::Skipped);
  EXPECT_FALSE(world.results[2].value.has_value());
  EXPECT_FALSE(world.store.record()->memoized.has_value());
}

// ---------------------------------------------------------------- takeover: if-not-exists vs conditional

// Ten waiters find the record of a dead owner (started at 0, max_processing_time 1s) at t = 2s.
void ten_waiters_on_a_stale_record(lethe::Takeover takeover, World& world, CountingEffect& effect) {
  world.settings.settings.set("takeover", lethe::to_string(takeover));
  world.store.delay = kMillisecond;
  world.store.state[kRecordKey] = in_flight_record(0, 999);
  for (AttemptId attempt = 1; attempt <= 10; ++attempt) {
    world.caller(attempt, 2 * kSecond, effect.make(50 * kMillisecond, [attempt](int) { return 100 + attempt; }));
  }
  world.simulation.run();
}

TEST(ProtocolTakeover, IfNotExistsLetsAllTenWaitersOfAStaleRecordRunTheEffect) {
  World world(settings_for("mnemosyne"));
  CountingEffect effect;
  ten_waiters_on_a_stale_record(lethe::Takeover::IfNotExists, world, effect);
  EXPECT_EQ(effect.runs, 10);  // the herd
  EXPECT_EQ(world.hooks.count(Basis::StaleTakeover), 10);
  for (const auto& note : world.hooks.notes) {
    if (note.basis != Basis::StaleTakeover) continue;
    ASSERT_TRUE(note.seen.has_value());
    EXPECT_EQ(note.seen->started_at, std::optional<Time>(0));  // every one saw the same, never refreshed, record
    EXPECT_EQ(note.seen->owner, 999u);
  }
  // started_at was never refreshed; with fenced completion exactly one of the herd completes the record.
  const Item record = *world.store.record();
  EXPECT_EQ(record.started_at, std::optional<Time>(0));
  EXPECT_TRUE(record.completed_at.has_value());
  int applied = 0;
  for (const auto& [attempt, landed] : world.hooks.completions) applied += landed ? 1 : 0;
  EXPECT_EQ(applied, 1);
}

TEST(ProtocolTakeover, ConditionalLetsExactlyOneOfTenWaitersRunTheEffectAndTheOthersGetItsResult) {
  World world(settings_for("mnemosyne"));
  CountingEffect effect;
  ten_waiters_on_a_stale_record(lethe::Takeover::Conditional, world, effect);
  EXPECT_EQ(effect.runs, 1);
  EXPECT_EQ(world.hooks.count(Basis::StaleTakeover), 1);
  EXPECT_EQ(world.hooks.count(Basis::TakeoverLost), 9);  // the losers of the fenced write waited again
  const Item record = *world.store.record();
  ASSERT_TRUE(record.memoized.has_value());
  int executed = 0;
  for (const auto& [attempt, result] : world.results) {
    EXPECT_EQ(result.value, record.memoized) << "attempt " << attempt;
    executed += result.outcome == Outcome::Executed ? 1 : 0;
  }
  EXPECT_EQ(executed, 1);
  EXPECT_EQ(record.owner, *record.memoized - 100);  // the winner owns and completed it
}

// ---------------------------------------------------------------- completion: blind vs fenced

// A (t=0) works 3s although max_processing_time is 1s; B (t=1.5s) takes over and completes with 2 at ~1.6s;
// A completes with 1 at ~3s; C (t=5s) is a duplicate.
void timed_out_owner_completes_late(lethe::Complete complete, World& world, CountingEffect& effect) {
  world.settings.settings.set("complete", lethe::to_string(complete));
  world.caller(1, 0, effect.make(3 * kSecond, 1));
  world.caller(2, 3 * kSecond / 2, effect.make(100 * kMillisecond, 2));
  world.caller(3, 5 * kSecond, effect.make(100 * kMillisecond, 3));
  world.simulation.run();
  ASSERT_EQ(effect.runs, 2);  // A and B both ran (the takeover of a live owner), C did not
  EXPECT_EQ(world.results[2].value, std::optional<std::uint64_t>(2));
  EXPECT_EQ(world.results[3].outcome, Outcome::Skipped);
}

TEST(ProtocolCompletion, BlindCompletionOfATimedOutOwnerOverwritesTheMemoizedValue) {
  World world(settings_for("mnemosyne"));
  CountingEffect effect;
  timed_out_owner_completes_late(lethe::Complete::Blind, world, effect);
  EXPECT_TRUE(world.hooks.completions[1]);  // A's late completion landed ...
  EXPECT_EQ(world.store.record()->memoized, std::optional<std::uint64_t>(1));  // ... over B's result
  EXPECT_EQ(world.results[3].value, std::optional<std::uint64_t>(1));  // C gets a value B's caller never saw
}

TEST(ProtocolCompletion, FencedCompletionOfATimedOutOwnerDoesNotLand) {
  World world(settings_for("mnemosyne"));
  CountingEffect effect;
  timed_out_owner_completes_late(lethe::Complete::Fenced, world, effect);
  EXPECT_FALSE(world.hooks.completions[1]);
  EXPECT_TRUE(world.hooks.completions[2]);
  EXPECT_EQ(world.store.record()->owner, 2u);
  EXPECT_EQ(world.store.record()->memoized, std::optional<std::uint64_t>(2));
  EXPECT_EQ(world.results[3].value, std::optional<std::uint64_t>(2));
}

// ---------------------------------------------------------------- expires_on: at-complete vs at-start

// A starts at 0 and dies before its effect: an abandoned in-flight record.
void abandon_a_record(World& world, lethe::ExpiresOn expires_on) {
  world.settings.settings.set("expires_on", lethe::to_string(expires_on));
  world.hooks.crash_at.insert({CrashPoint::AfterStartBeforeEffect, 1});
  CountingEffect never;
  world.caller(1, 0, never.make(0, 1));
  world.simulation.run();
  EXPECT_EQ(never.runs, 0);
  EXPECT_EQ(world.results.count(1), 0u);  // it never returned
}

TEST(ProtocolExpiry, AtCompleteLeavesAnAbandonedRecordThatNeverExpires) {
  World world(settings_for("mnemosyne"));
  abandon_a_record(world, lethe::ExpiresOn::AtComplete);
  const Item record = *world.store.record();
  EXPECT_FALSE(record.completed_at.has_value());
  EXPECT_FALSE(record.expires_on.has_value());
  // The TTL sweeper cannot remove it, however late it runs.
  const Reply evicted = lethe::apply(world.store.state, lethe::evict_op(kRecordKey, sim::kTimeMax - 1));
  EXPECT_FALSE(evicted.applied);
  EXPECT_TRUE(world.store.record().has_value());
}

TEST(ProtocolExpiry, AtStartLetsAnAbandonedRecordExpire) {
  World world(settings_for("mnemosyne"));
  abandon_a_record(world, lethe::ExpiresOn::AtStart);
  const Item record = *world.store.record();
  ASSERT_TRUE(record.expires_on.has_value());
  EXPECT_EQ(*record.expires_on, sim::kHour);  // started at 0, ttl 1h
  EXPECT_FALSE(lethe::apply(world.store.state, lethe::evict_op(kRecordKey, sim::kHour - 1)).applied);
  EXPECT_TRUE(lethe::apply(world.store.state, lethe::evict_op(kRecordKey, sim::kHour)).applied);
  EXPECT_FALSE(world.store.record().has_value());
}

TEST(ProtocolExpiry, CompletionSetsExpiresOnInBothVariants) {
  for (const auto expires_on : {lethe::ExpiresOn::AtComplete, lethe::ExpiresOn::AtStart}) {
    ProtocolSection settings = settings_for("mnemosyne");
    settings.settings.set("expires_on", lethe::to_string(expires_on));
    World world(settings);
    CountingEffect effect;
    world.caller(1, 0, effect.make(2 * kSecond, 1));
    world.simulation.run();
    EXPECT_EQ(world.store.record()->expires_on, std::optional<Time>(2 * kSecond + sim::kHour));
  }
}

// A completed record (memo 7) that expired at 10s but was not evicted yet (lazy TTL); a duplicate at 20s.
void expired_not_evicted(bool expired_wins, World& world, CountingEffect& effect) {
  world.settings.settings.set("expired_wins", expired_wins);
  Item completed = in_flight_record(0, 999);
  completed.completed_at = kSecond;
  completed.expires_on = 10 * kSecond;
  completed.memoized = 7;
  world.store.state[kRecordKey] = completed;
  world.caller(1, 20 * kSecond, effect.make(kMillisecond, 8));
  world.simulation.run();
}

TEST(ProtocolExpiry, ExpiredWinsTrueTreatsAnExpiredNotEvictedRecordAsAbsentAndRunsTheEffect) {
  World world(settings_for("mnemosyne"));
  CountingEffect effect;
  expired_not_evicted(true, world, effect);
  EXPECT_EQ(effect.runs, 1);
  EXPECT_EQ(world.results[1].outcome, Outcome::Executed);
  EXPECT_EQ(world.hooks.bases_of(1), std::vector<Basis>{Basis::ExpiredCompleted});
  const Item record = *world.store.record();  // replaced, then completed by attempt 1
  EXPECT_EQ(record.owner, 1u);
  EXPECT_EQ(record.started_at, std::optional<Time>(20 * kSecond));
  EXPECT_EQ(record.memoized, std::optional<std::uint64_t>(8));
  EXPECT_TRUE(world.hooks.completions[1]);
}

TEST(ProtocolExpiry, ExpiredWinsFalseSkipsAnExpiredNotEvictedRecordWithItsMemo) {
  World world(settings_for("mnemosyne"));
  CountingEffect effect;
  expired_not_evicted(false, world, effect);
  EXPECT_EQ(effect.runs, 0);
  EXPECT_EQ(world.results[1].outcome, Outcome::Skipped);
  EXPECT_EQ(world.results[1].value, std::optional<std::uint64_t>(7));
  EXPECT_EQ(world.hooks.bases_of(1), std::vector<Basis>{Basis::Completed});
  EXPECT_EQ(world.store.record()->owner, 999u);  // untouched
}

// ---------------------------------------------------------------- on_max_wait: error, process, skip

// A (t=0) works 10s; W (t=10ms) waits on it with max_wait = 1s.
void wait_on_slow_owner(lethe::OnMaxWait on_max_wait, World& world, CountingEffect& effect) {
  world.settings.settings.set("on_max_wait", lethe::to_string(on_max_wait));
  world.settings.settings.set("max_processing_time", sim::Duration{60 * kSecond});
  world.settings.settings.set("max_wait", sim::Duration{kSecond});
  world.settings.settings.set("poll", poll_every(100 * kMillisecond));
  world.caller(1, 0, effect.make(10 * kSecond, 1));
  world.caller(2, 10 * kMillisecond, effect.make(10 * kSecond, 2));
  world.simulation.run();
  EXPECT_TRUE(world.results[2].waited);
  EXPECT_EQ(world.results[2].wait_time, kSecond);  // ended exactly max_wait after the first Wait decision
  ASSERT_EQ(world.hooks.waits.size(), 1u);
  EXPECT_EQ(world.hooks.waits[0], (std::pair<AttemptId, Duration>{2, kSecond}));
}

TEST(ProtocolMaxWait, ErrorGivesUpAfterMaxWaitWithoutRunningTheEffect) {
  World world(settings_for("mnemosyne"));
  CountingEffect effect;
  wait_on_slow_owner(lethe::OnMaxWait::Error, world, effect);
  EXPECT_EQ(effect.runs, 1);
  EXPECT_EQ(world.results[2].outcome, Outcome::Failed);
  EXPECT_FALSE(world.results[2].value.has_value());
  EXPECT_EQ(world.hooks.bases_of(2).back(), Basis::MaxWaitError);
}

TEST(ProtocolMaxWait, ProcessGoesAheadAfterMaxWaitAndRunsTheEffectASecondTime) {
  World world(settings_for("mnemosyne"));
  CountingEffect effect;
  wait_on_slow_owner(lethe::OnMaxWait::Process, world, effect);
  EXPECT_EQ(effect.runs, 2);
  EXPECT_EQ(world.results[2].outcome, Outcome::Executed);
  EXPECT_EQ(world.hooks.bases_of(2).back(), Basis::MaxWaitProcess);
  // The owner completed first (at 10s); the waiter's fenced completion (at 11.01s) does not overwrite it.
  EXPECT_TRUE(world.hooks.completions[1]);
  EXPECT_FALSE(world.hooks.completions[2]);
  EXPECT_EQ(world.store.record()->memoized, std::optional<std::uint64_t>(1));
}

TEST(ProtocolMaxWait, SkipAcknowledgesTheWaiterAsADuplicateAfterMaxWaitWithNothingHandedBack) {
  World world(settings_for("mnemosyne"));
  CountingEffect effect;
  wait_on_slow_owner(lethe::OnMaxWait::Skip, world, effect);
  EXPECT_EQ(effect.runs, 1);
  EXPECT_EQ(world.results[2].outcome, Outcome::Skipped);
  EXPECT_FALSE(world.results[2].value.has_value());
  EXPECT_EQ(world.hooks.bases_of(2).back(), Basis::InFlightRecent);  // decided on the record in flight
  EXPECT_FALSE(world.hooks.completions.count(2));
}

TEST(ProtocolMaxWait, ZeroMaxWaitRefusesAtOnceWithoutCountingAWait) {
  ProtocolSection settings = settings_for("mnemosyne");
  settings.settings.set("max_wait", sim::Duration{0});
  World world(settings);
  CountingEffect effect;
  world.caller(1, 0, effect.make(kSecond / 2, 1));
  world.caller(2, kMillisecond, effect.make(kSecond / 2, 2));
  world.simulation.run();
  EXPECT_EQ(world.results[2].outcome, Outcome::Failed);
  EXPECT_FALSE(world.results[2].waited);  // a max_wait of 0 refuses at once: no wait begins
  EXPECT_EQ(world.results[2].wait_time, 0);
  EXPECT_EQ(world.store.times_of(OpKind::Get).size(), 0u);  // no poll read at all
}

TEST(ProtocolMaxWait, BackoffPollIntervalsGrowByTheFactorUpToTheCapAndTheLastIsCutAtMaxWait) {
  ProtocolSection settings = settings_for("mnemosyne");
  settings.settings.set("max_processing_time", sim::Duration{60 * kSecond});
  settings.settings.set("max_wait", sim::Duration{200 * kMillisecond});
  lethe::Poll backoff;
  backoff.kind = lethe::PollKind::Backoff;
  backoff.backoff_base = 10 * kMillisecond;
  backoff.backoff_factor = 2.0;
  backoff.backoff_cap = 50 * kMillisecond;
  settings.settings.set("poll", backoff);
  World world(settings);
  CountingEffect effect;
  world.caller(1, 0, effect.make(10 * kSecond, 1));
  world.caller(2, 0, effect.make(10 * kSecond, 2));
  world.simulation.run();
  const std::vector<Time> expected{10 * kMillisecond, 30 * kMillisecond, 70 * kMillisecond,
                                   120 * kMillisecond, 170 * kMillisecond, 200 * kMillisecond};
  EXPECT_EQ(world.store.times_of(OpKind::Get), expected);
  EXPECT_EQ(world.results[2].outcome, Outcome::Failed);
}

// ---------------------------------------------------------------- poll_read: eventual vs consistent

// A (t=0) works 500ms; W (t=10ms) finds A's record and polls every 100ms. The replica lags 200ms, so W's first
// eventual read (t=110ms) sees the store as it was at -90ms: no record.
void waiter_polls_a_replica(lethe::PollReadKind kind, World& world, CountingEffect& effect) {
  lethe::PollRead poll_read;
  poll_read.kind = kind;
  world.settings.settings.set("poll_read", poll_read);
  world.settings.settings.set("poll", poll_every(100 * kMillisecond));
  world.store.eventual_lag = 200 * kMillisecond;
  world.store.begin_history();
  world.caller(1, 0, effect.make(500 * kMillisecond, 1));
  world.caller(2, 10 * kMillisecond, effect.make(500 * kMillisecond, 2));
  world.simulation.run();
}

TEST(ProtocolPollRead, EventualReadOfALaggingReplicaShowsAbsentAndTheWaiterRunsTheEffectAgain) {
  World world(settings_for("mnemosyne"));
  CountingEffect effect;
  waiter_polls_a_replica(lethe::PollReadKind::Eventual, world, effect);
  EXPECT_EQ(effect.runs, 2);
  EXPECT_EQ(world.hooks.bases_of(2), (std::vector<Basis>{Basis::InFlightRecent, Basis::Absent}));
  EXPECT_EQ(world.results[2].outcome, Outcome::Executed);
  EXPECT_EQ(world.results[2].value, std::optional<std::uint64_t>(2));  // not what the record remembers
  EXPECT_FALSE(world.hooks.completions[2]);  // its fenced completion finds A's record and does not land
  EXPECT_EQ(world.store.record()->memoized, std::optional<std::uint64_t>(1));
}

TEST(ProtocolPollRead, ConsistentReadsMakeTheWaiterSkipWithTheMemoizedResult) {
  World world(settings_for("mnemosyne"));
  CountingEffect effect;
  waiter_polls_a_replica(lethe::PollReadKind::Consistent, world, effect);
  EXPECT_EQ(effect.runs, 1);
  EXPECT_EQ(world.results[2].outcome, Outcome::Skipped);
  EXPECT_EQ(world.results[2].value, std::optional<std::uint64_t>(1));
  EXPECT_EQ(world.hooks.bases_of(2).back(), Basis::Completed);
  EXPECT_EQ(world.results[2].wait_time, 500 * kMillisecond);  // polls at 110 .. 510ms; A completed at 500ms
}

// ---------------------------------------------------------------- check-then-insert race vs mnemosyne

int two_concurrent_callers(const std::string& kind) {
  World world(settings_for(kind));
  world.store.delay = kMillisecond;
  CountingEffect effect;
  world.caller(1, 0, effect.make(10 * kMillisecond, 1));
  world.caller(2, 0, effect.make(10 * kMillisecond, 2));
  world.simulation.run();
  return effect.runs;
}

TEST(ProtocolCheckThenInsert, TwoConcurrentCallersBothReadAbsentAndBothRunTheEffect) {
  EXPECT_EQ(two_concurrent_callers("check-then-insert"), 2);
  EXPECT_EQ(two_concurrent_callers("record-after"), 2);  // same race: nothing marks work in flight
}

TEST(ProtocolMnemosyne, TwoConcurrentCallersRunTheEffectOnce) {
  EXPECT_EQ(two_concurrent_callers("mnemosyne"), 1);
}

TEST(ProtocolCheckThenInsert, TheLastInsertOverwritesTheFirstResultAndADuplicateSkipsWithIt) {
  World world(settings_for("check-then-insert"));
  world.store.delay = kMillisecond;
  CountingEffect effect;
  world.caller(1, 0, effect.make(10 * kMillisecond, 1));
  world.caller(2, 0, effect.make(20 * kMillisecond, 2));
  world.caller(3, kSecond, effect.make(10 * kMillisecond, 3));
  world.simulation.run();
  EXPECT_EQ(effect.runs, 2);
  EXPECT_EQ(world.store.record()->memoized, std::optional<std::uint64_t>(2));  // Put: last writer wins
  EXPECT_EQ(world.results[3].outcome, Outcome::Skipped);
  EXPECT_EQ(world.results[3].value, std::optional<std::uint64_t>(2));
}

TEST(ProtocolRecordAfter, TheFirstRecordWinsTheLaterInsertIsRejected) {
  World world(settings_for("record-after"));
  world.store.delay = kMillisecond;
  CountingEffect effect;
  world.caller(1, 0, effect.make(10 * kMillisecond, 1));
  world.caller(2, 0, effect.make(20 * kMillisecond, 2));
  world.simulation.run();
  EXPECT_EQ(effect.runs, 2);
  EXPECT_TRUE(world.hooks.completions[1]);
  EXPECT_FALSE(world.hooks.completions[2]);
  EXPECT_EQ(world.store.record()->memoized, std::optional<std::uint64_t>(1));
  EXPECT_EQ(world.results[2].value, std::optional<std::uint64_t>(2));  // the effect it ran produced this
}

// ---------------------------------------------------------------- crash after the effect: record-after vs mnemosyne

TEST(ProtocolRecordAfter, CrashAfterTheEffectMakesTheNextAttemptRunItAgain) {
  World world(settings_for("record-after"));
  world.hooks.crash_at.insert({CrashPoint::AfterEffectBeforeComplete, 1});
  CountingEffect effect;
  world.caller(1, 0, effect.make(10 * kMillisecond, 1));
  world.caller(2, 100 * kMillisecond, effect.make(10 * kMillisecond, 2));
  world.simulation.run();
  EXPECT_EQ(effect.runs, 2);
  EXPECT_EQ(world.results.count(1), 0u);  // crashed
  EXPECT_EQ(world.hooks.bases_of(2), std::vector<Basis>{Basis::Absent});
}

TEST(ProtocolMnemosyne, CrashAfterTheEffectLeavesAnInFlightRecordThatMakesTheNextAttemptWait) {
  ProtocolSection settings = settings_for("mnemosyne");
  settings.settings.set("max_wait", sim::Duration{500 * kMillisecond});
  {
    World world(settings);
    world.hooks.crash_at.insert({CrashPoint::AfterEffectBeforeComplete, 1});
    CountingEffect effect;
    world.caller(1, 0, effect.make(10 * kMillisecond, 1));
    world.caller(2, 100 * kMillisecond, effect.make(10 * kMillisecond, 2));
    world.simulation.run();
    EXPECT_EQ(effect.runs, 1);
    EXPECT_EQ(world.hooks.bases_of(2).front(), Basis::InFlightRecent);
    EXPECT_EQ(world.results[2].outcome, Outcome::Failed);  // redelivered later
    EXPECT_TRUE(world.results[2].waited);
  }
  {
    // Once the record is stale (max_processing_time 1s) a later attempt takes over: the narrow window the
    // article admits (died after the effect, before recording it).
    World world(settings);
    world.hooks.crash_at.insert({CrashPoint::AfterEffectBeforeComplete, 1});
    CountingEffect effect;
    world.caller(1, 0, effect.make(10 * kMillisecond, 1));
    world.caller(3, 2 * kSecond, effect.make(10 * kMillisecond, 3));
    world.simulation.run();
    EXPECT_EQ(effect.runs, 2);
    EXPECT_EQ(world.hooks.bases_of(3), std::vector<Basis>{Basis::StaleTakeover});
  }
}

// ---------------------------------------------------------------- clock skew, failures, reporting

TEST(ProtocolMnemosyne, ARecordStartedInTheWaitersFutureIsRecentAndTheWaiterDoesNotTakeOver) {
  World world(settings_for("mnemosyne"));
  CountingEffect effect;
  world.caller(1, 0, effect.make(2 * kSecond, 1), /*skew=*/5 * kSecond);  // A's clock is 5s ahead
  world.caller(2, 1500 * kMillisecond, effect.make(kMillisecond, 2));      // past max_processing_time in real time
  world.simulation.run();
  EXPECT_EQ(effect.runs, 1);
  EXPECT_EQ(world.hooks.bases_of(2).front(), Basis::InFlightRecent);
  EXPECT_EQ(world.results[2].outcome, Outcome::Skipped);
  EXPECT_EQ(world.results[2].value, std::optional<std::uint64_t>(1));
}

TEST(ProtocolMnemosyne, AFailedEffectFailsTheAttemptAndLeavesItsRecordInFlight) {
  World world(settings_for("mnemosyne"));
  int runs = 0;
  world.caller(1, 0, [&runs](lethe::FencingToken) -> std::optional<std::uint64_t> {
    ++runs;
    return std::nullopt;
  });
  world.simulation.run();
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(world.results[1].outcome, Outcome::Failed);
  EXPECT_TRUE(world.hooks.completions.empty());
  EXPECT_FALSE(world.store.record()->completed_at.has_value());
  EXPECT_EQ(world.store.record()->owner, 1u);
}

// ---------------------------------------------------------------- a failed effect: keep, release, memoize

// An effect that takes `duration` and fails (a non-retryable error), counting its runs.
Effect failing_effect(int& runs, Duration duration) {
  return [&runs, duration](lethe::FencingToken) -> std::optional<std::uint64_t> {
    ++runs;
    sim::sleep(duration);
    return std::nullopt;
  };
}

TEST(ProtocolOnFailure, ReleaseDeletesTheFailedOwnersRecordSoTheNextDeliveryProcessesAtOnce) {
  for (const bool release : {false, true}) {
    ProtocolSection settings = settings_for("mnemosyne");
    settings.settings.set("on_failure", std::string(release ? "release" : "keep"));
    World world(settings);
    int failed_runs = 0;
    CountingEffect effect;
    world.caller(1, 0, failing_effect(failed_runs, 10 * kMillisecond));
    world.caller(2, 100 * kMillisecond, effect.make(10 * kMillisecond, 7));
    world.simulation.run();
    EXPECT_EQ(world.results[1].outcome, Outcome::Failed);
    EXPECT_EQ(effect.runs, 1);
    EXPECT_EQ(world.results[2].outcome, Outcome::Executed);
    if (release) {
      EXPECT_TRUE(world.hooks.releases[1]);
      EXPECT_EQ(world.hooks.bases_of(2), std::vector<Basis>{Basis::Absent});  // no record: no wait
      EXPECT_FALSE(world.results[2].waited);
    } else {
      EXPECT_TRUE(world.hooks.releases.empty());
      EXPECT_TRUE(world.results[2].waited);  // the kept record is waited on until stale (1s), then taken over
      EXPECT_EQ(world.hooks.bases_of(2).back(), Basis::StaleTakeover);
    }
  }
}

TEST(ProtocolOnFailure, AReleaseAfterATakeoverOfTheSlowOwnerDeletesNothingAndTheTakersRecordStays) {
  ProtocolSection settings = settings_for("mnemosyne");  // max_processing_time 1s
  settings.settings.set("on_failure", std::string("release"));
  World world(settings);
  int failed_runs = 0;
  CountingEffect taker;
  world.caller(1, 0, failing_effect(failed_runs, 2 * kSecond));   // slow, then fails at 2s
  world.caller(2, 1500 * kMillisecond, taker.make(3 * kSecond, 5));  // takes the stale record over at 1.5s
  world.simulation.run();
  EXPECT_EQ(world.hooks.bases_of(2).front(), Basis::StaleTakeover);
  EXPECT_FALSE(world.hooks.releases[1]);  // the record was no longer its own
  EXPECT_EQ(world.results[2].outcome, Outcome::Executed);
  EXPECT_TRUE(world.hooks.completions[2]);  // the taker's record survived the release and completed
  ASSERT_TRUE(world.store.record().has_value());
  EXPECT_EQ(world.store.record()->owner, 2u);
}

TEST(ProtocolOnFailure, AReleaseAfterAnotherAttemptCompletedTheRecordDeletesNothing) {
  ProtocolSection settings = settings_for("mnemosyne");
  settings.settings.set("on_failure", std::string("release"));
  settings.settings.set("on_max_wait", std::string("process"));
  settings.settings.set("max_wait", 100 * kMillisecond);
  World world(settings);
  int failed_runs = 0;
  CountingEffect waiter;
  world.caller(1, 0, failing_effect(failed_runs, kSecond / 2));         // owner, fails at 0.5s
  world.caller(2, 10 * kMillisecond, waiter.make(10 * kMillisecond, 8));  // waits 100ms, runs and completes
  world.simulation.run();
  EXPECT_TRUE(world.hooks.completions[2]);
  EXPECT_FALSE(world.hooks.releases[1]);  // completed (still owner 1): the conditional delete is refused
  ASSERT_TRUE(world.store.record().has_value());
  EXPECT_TRUE(world.store.record()->completed_at.has_value());
  EXPECT_EQ(world.store.record()->memoized, std::optional<std::uint64_t>(8));
}

TEST(ProtocolOnFailure, ANonOwnerWhoseEffectFailsReleasesNothing) {
  ProtocolSection settings = settings_for("mnemosyne");
  settings.settings.set("on_failure", std::string("release"));
  settings.settings.set("on_max_wait", std::string("process"));
  settings.settings.set("max_wait", 100 * kMillisecond);
  World world(settings);
  int failed_runs = 0;
  CountingEffect owner;
  world.caller(1, 0, owner.make(kSecond / 2, 3));                       // the owner, still at work
  world.caller(2, 10 * kMillisecond, failing_effect(failed_runs, kMillisecond));  // goes ahead, fails
  world.simulation.run();
  EXPECT_EQ(failed_runs, 1);
  EXPECT_TRUE(world.hooks.releases.empty());  // not its record: no delete was even tried
  EXPECT_TRUE(world.hooks.completions[1]);
}

TEST(ProtocolOnCompletionFailure, FailFailsTheAttemptWhenTheCompletionIsNeverAnsweredAndAckReturnsTheValue) {
  for (const bool fail : {false, true}) {
    ProtocolSection settings = settings_for("mnemosyne");
    settings.settings.set("on_completion_failure", std::string(fail ? "fail" : "ack"));
    World world(settings);
    world.store.fate = [](const Op& op, int) {
      return op.kind == OpKind::Upsert && op.update.completed_at_mode == lethe::Assign::Set ? Fate::LoseRequest
                                                                                            : Fate::Normal;
    };
    CountingEffect effect;
    world.caller(1, 0, effect.make(kMillisecond, 4));
    world.simulation.run();
    EXPECT_EQ(effect.runs, 1);
    EXPECT_FALSE(world.hooks.completions[1]);
    EXPECT_EQ(world.results[1].outcome, fail ? Outcome::Failed : Outcome::Executed);
  }
}

TEST(ProtocolOnCompletionFailure, ARejectedCompletionIsAnAnswerAndStillReturnsExecutedUnderFail) {
  ProtocolSection settings = settings_for("mnemosyne");
  settings.settings.set("on_completion_failure", std::string("fail"));
  World world(settings);
  CountingEffect effect;
  world.caller(1, 0, effect.make(2 * kSecond, 1));                       // slow owner
  world.caller(2, 1500 * kMillisecond, effect.make(kMillisecond, 2));  // takes over, completes first
  world.simulation.run();
  EXPECT_FALSE(world.hooks.completions[1]);  // fenced out: rejected
  EXPECT_EQ(world.results[1].outcome, Outcome::Executed);
}

TEST(ProtocolMemoizeFailures, APermanentFailureCompletesTheRecordAndLaterDeliveriesAreHandedTheFailure) {
  for (const bool memoize_failures : {false, true}) {
    ProtocolSection settings = settings_for("mnemosyne");
    settings.settings.set("memoize_failures", memoize_failures);
    settings.settings.set("on_failure", std::string("release"));  // memoizing the failure takes precedence
    World world(settings);
    int failed_runs = 0;
    CountingEffect effect;
    world.caller(1, 0, failing_effect(failed_runs, 10 * kMillisecond));
    world.caller(2, 100 * kMillisecond, effect.make(kMillisecond, 6));
    world.simulation.run();
    EXPECT_EQ(world.results[1].outcome, Outcome::Failed);
    if (memoize_failures) {
      EXPECT_TRUE(world.hooks.completions[1]);
      EXPECT_TRUE(world.hooks.releases.empty());
      ASSERT_TRUE(world.store.record().has_value());
      EXPECT_TRUE(world.store.record()->completed_at.has_value());
      EXPECT_FALSE(world.store.record()->memoized.has_value());
      EXPECT_EQ(effect.runs, 0);  // the failure was handed back: no second run
      EXPECT_EQ(world.results[2].outcome, Outcome::Skipped);
      EXPECT_TRUE(world.results[2].memoized_failure);
      EXPECT_FALSE(world.results[2].value.has_value());
    } else {
      EXPECT_EQ(effect.runs, 1);
      EXPECT_EQ(world.results[2].outcome, Outcome::Executed);
      EXPECT_FALSE(world.results[2].memoized_failure);
    }
  }
}

TEST(ProtocolMemoizeFailures, ASuccessfulCompletionIsNotReadAsAFailure) {
  ProtocolSection settings = settings_for("mnemosyne");
  settings.settings.set("memoize_failures", true);
  World world(settings);
  CountingEffect effect;
  world.caller(1, 0, effect.make(kMillisecond, 6));
  world.caller(2, 100 * kMillisecond, effect.make(kMillisecond, 6));
  world.simulation.run();
  EXPECT_EQ(world.results[2].outcome, Outcome::Skipped);
  EXPECT_FALSE(world.results[2].memoized_failure);
  EXPECT_EQ(world.results[2].value, std::optional<std::uint64_t>(6));
}

TEST(ProtocolPayloadCheck, ADeliveryWithAnotherPayloadIsRefusedUnprocessedWhetherTheRecordIsInFlightOrCompleted) {
  for (const std::string check : {"off", "fingerprint"}) {
    ProtocolSection settings = settings_for("mnemosyne");
    settings.settings.set("payload_check", check);
    World world(settings);
    CountingEffect effect;
    world.caller_with_payload(1, 0, 0, effect.make(100 * kMillisecond, 7));
    world.caller_with_payload(2, 10 * kMillisecond, 1, effect.make(kMillisecond, 8));   // finds it in flight
    world.caller_with_payload(3, 500 * kMillisecond, 1, effect.make(kMillisecond, 8));  // finds it completed
    world.simulation.run();
    EXPECT_EQ(effect.runs, 1) << check;
    ASSERT_TRUE(world.store.record().has_value());
    EXPECT_EQ(world.store.record()->owner, 1u);
    for (const AttemptId attempt : {AttemptId{2}, AttemptId{3}}) {
      EXPECT_EQ(world.results[attempt].outcome, Outcome::Skipped) << check << " attempt " << attempt;
      EXPECT_EQ(world.results[attempt].payload_mismatch, check == "fingerprint") << check << " attempt " << attempt;
    }
    if (check == "fingerprint") {
      EXPECT_EQ(world.hooks.payload_refusals, (std::vector<AttemptId>{2, 3}));
      EXPECT_FALSE(world.results[2].waited);  // refused at once, not after waiting for the owner
      EXPECT_FALSE(world.results[3].value.has_value());  // the other payload's result is not handed out
      EXPECT_EQ(world.store.record()->payload, std::optional<std::uint64_t>(lethe::payload_fingerprint(kMessage, 0)));
    } else {
      EXPECT_TRUE(world.hooks.payload_refusals.empty());
      EXPECT_TRUE(world.results[2].waited);
      EXPECT_EQ(world.results[3].value, std::optional<std::uint64_t>(7));  // handed the other payload's result
      EXPECT_FALSE(world.store.record()->payload.has_value());  // "off" writes no fingerprint
    }
  }
}

TEST(ProtocolPayloadCheck, TheSamePayloadIsSkippedAsADuplicateAndHandedTheMemoizedResult) {
  ProtocolSection settings = settings_for("mnemosyne");
  settings.settings.set("payload_check", std::string("fingerprint"));
  World world(settings);
  CountingEffect effect;
  world.caller_with_payload(1, 0, 3, effect.make(kMillisecond, 7));
  world.caller_with_payload(2, 100 * kMillisecond, 3, effect.make(kMillisecond, 8));
  world.caller(3, 200 * kMillisecond, effect.make(kMillisecond, 9));  // protect(): version 0, another payload
  world.simulation.run();
  EXPECT_EQ(effect.runs, 1);
  EXPECT_EQ(world.results[2].outcome, Outcome::Skipped);
  EXPECT_FALSE(world.results[2].payload_mismatch);
  EXPECT_EQ(world.results[2].value, std::optional<std::uint64_t>(7));
  EXPECT_TRUE(world.results[3].payload_mismatch);
  EXPECT_EQ(world.hooks.payload_refusals, std::vector<AttemptId>{3});
}

TEST(ProtocolPayloadCheck, AStaleRecordOfAnotherPayloadIsTakenOverNotComparedAndKeepsTheTakersFingerprint) {
  ProtocolSection settings = settings_for("mnemosyne");  // max_processing_time 1s
  settings.settings.set("payload_check", std::string("fingerprint"));
  World world(settings);
  CountingEffect slow;
  CountingEffect taker;
  world.caller_with_payload(1, 0, 0, slow.make(3 * kSecond, 7));                     // slow owner
  world.caller_with_payload(2, 1500 * kMillisecond, 1, taker.make(500 * kMillisecond, 8));  // stale at 1.5s
  CountingEffect original;
  world.caller_with_payload(3, 1600 * kMillisecond, 0, original.make(kMillisecond, 9));  // the taker is at work
  world.simulation.run();
  EXPECT_EQ(world.hooks.bases_of(2).front(), Basis::StaleTakeover);
  EXPECT_TRUE(world.results[3].payload_mismatch);
  EXPECT_FALSE(world.results[3].waited);  // refused at once: the takeover wrote the taker's fingerprint
  EXPECT_EQ(world.hooks.payload_refusals, std::vector<AttemptId>{3});
  EXPECT_EQ(world.results[2].outcome, Outcome::Executed);
  ASSERT_TRUE(world.store.record().has_value());
  EXPECT_EQ(world.store.record()->owner, 2u);
  EXPECT_EQ(world.store.record()->payload, std::optional<std::uint64_t>(lethe::payload_fingerprint(kMessage, 1)));
}

TEST(ProtocolPayloadCheck, FingerprintsOfDistinctIdsAndVersionsDifferAndAreNeverZero) {
  std::set<std::uint64_t> seen;
  for (MessageId id = 0; id < 200; ++id) {
    for (std::uint32_t version = 0; version < 20; ++version) {
      const std::uint64_t fingerprint = lethe::payload_fingerprint(id, version);
      EXPECT_NE(fingerprint, 0u);
      seen.insert(fingerprint);
    }
  }
  EXPECT_EQ(seen.size(), 200u * 20u);
}

TEST(ProtocolStoreFailures, ALostStartWriteReplyIsRetriedAndTheAttemptRecognisesItsOwnRecord) {
  World world(settings_for("mnemosyne"));
  world.store.fate = [](const Op&, int index) { return index == 0 ? Fate::LoseReply : Fate::Normal; };
  CountingEffect effect;
  world.caller(1, 0, effect.make(kMillisecond, 1));
  world.simulation.run();
  EXPECT_EQ(effect.runs, 1);
  EXPECT_EQ(world.results[1].outcome, Outcome::Executed);
  EXPECT_FALSE(world.results[1].waited);  // it did not wait on its own record
  EXPECT_EQ(world.hooks.bases_of(1), std::vector<Basis>{Basis::Absent});
  EXPECT_TRUE(world.hooks.completions[1]);
}

TEST(ProtocolStoreFailures, AStoreThatNeverAnswersFailsTheAttemptWithoutRunningTheEffect) {
  for (const std::string kind : {"mnemosyne", "check-then-insert", "record-after", "inbox"}) {
    World world(settings_for(kind));
    world.store.fate = [](const Op&, int) { return Fate::LoseRequest; };
    CountingEffect effect;
    world.caller(1, 0, effect.make(kMillisecond, 1));
    world.simulation.run();
    EXPECT_EQ(effect.runs, 0) << kind;
    EXPECT_EQ(world.results[1].outcome, Outcome::Failed) << kind;
    EXPECT_EQ(world.hooks.bases_of(1), std::vector<Basis>{Basis::StoreUnavailable}) << kind;
    const std::size_t expected_tries = kind == "inbox" ? 1 : lethe::kStoreAttemptsPerStep;
    EXPECT_EQ(world.store.log.size(), expected_tries) << kind;
  }
}

TEST(ProtocolStoreFailures, ALostCompletionReplyIsRetriedAndRecognisedAsLanded) {
  World world(settings_for("mnemosyne"));
  bool lost_one = false;  // lose the reply of the first completion only
  world.store.fate = [&lost_one](const Op& op, int) {
    const bool completion = op.kind == OpKind::Upsert && op.update.completed_at_mode == lethe::Assign::Set;
    if (!completion || lost_one) return Fate::Normal;
    lost_one = true;
    return Fate::LoseReply;
  };
  CountingEffect effect;
  world.caller(1, 0, effect.make(kMillisecond, 1));
  world.simulation.run();
  EXPECT_TRUE(lost_one);
  EXPECT_EQ(world.results[1].outcome, Outcome::Executed);
  EXPECT_TRUE(world.hooks.completions[1]);
  EXPECT_EQ(world.store.log.size(), 3u);  // start, completion (reply lost), the same completion again
}

TEST(ProtocolStoreFailures, ACompletionThatNeverAnswersStillReturnsTheEffectsValue) {
  World world(settings_for("mnemosyne"));
  world.store.fate = [](const Op& op, int) {
    return op.kind == OpKind::Upsert && op.update.completed_at_mode == lethe::Assign::Set ? Fate::LoseRequest
                                                                                          : Fate::Normal;
  };
  CountingEffect effect;
  world.caller(1, 0, effect.make(kMillisecond, 4));
  world.simulation.run();
  EXPECT_EQ(world.results[1].outcome, Outcome::Executed);
  EXPECT_EQ(world.results[1].value, std::optional<std::uint64_t>(4));
  EXPECT_FALSE(world.hooks.completions[1]);
  EXPECT_FALSE(world.store.record()->completed_at.has_value());  // left in flight
}

TEST(ProtocolStoreFailures, AnUnansweredPollReadIsNotFatalTheWaiterReadsAgain) {
  World world(settings_for("mnemosyne"));
  world.store.fate = [](const Op& op, int index) {
    return op.kind == OpKind::Get && index < 5 ? Fate::LoseRequest : Fate::Normal;
  };
  CountingEffect effect;
  world.caller(1, 0, effect.make(100 * kMillisecond, 1));
  world.caller(2, kMillisecond, effect.make(100 * kMillisecond, 2));
  world.simulation.run();
  EXPECT_EQ(effect.runs, 1);
  EXPECT_EQ(world.results[2].outcome, Outcome::Skipped);
  EXPECT_EQ(world.results[2].value, std::optional<std::uint64_t>(1));
}

TEST(ProtocolMnemosyne, CrashPointsAndReportsFollowTheAttempt) {
  World world(settings_for("mnemosyne"));
  CountingEffect effect;
  world.caller(1, 0, effect.make(kMillisecond, 1));
  world.caller(2, kSecond, effect.make(kMillisecond, 1));
  world.simulation.run();
  EXPECT_EQ(world.hooks.points_reached,
            (std::vector<std::pair<CrashPoint, AttemptId>>{{CrashPoint::AfterStartBeforeEffect, 1},
                                                           {CrashPoint::AfterEffectBeforeComplete, 1}}));
  ASSERT_EQ(world.hooks.notes.size(), 2u);
  EXPECT_EQ(world.hooks.notes[0].basis, Basis::Absent);
  EXPECT_FALSE(world.hooks.notes[0].seen.has_value());
  EXPECT_EQ(world.hooks.notes[1].basis, Basis::Completed);
  EXPECT_EQ(world.hooks.notes[1].local_time, kSecond);
  ASSERT_TRUE(world.hooks.notes[1].seen.has_value());
  EXPECT_EQ(world.hooks.notes[1].seen->owner, 1u);
  EXPECT_TRUE(world.hooks.waits.empty());
}

// ---------------------------------------------------------------- inbox and none

TEST(ProtocolInbox, OneTransactionInsertsTheInboxRowAndIncrementsTheDomainRowAndADuplicateIsRejected) {
  World world(settings_for("inbox"));
  CountingEffect effect;
  world.caller(1, 0, effect.make(kMillisecond, 1));
  world.caller(2, kSecond, effect.make(kMillisecond, 1));
  world.simulation.run();
  EXPECT_EQ(effect.runs, 0);  // the domain row is the effect
  const Key inbox = lethe::make_key(Table::Inbox, kProcessor, kMessage);
  const Key domain = lethe::make_key(Table::Domain, kProcessor, kMessage);
  ASSERT_TRUE(world.store.record(inbox).has_value());
  EXPECT_EQ(world.store.record(inbox)->expires_on, std::optional<Time>(sim::kHour));
  EXPECT_EQ(world.store.record(domain)->counter, 1);
  EXPECT_EQ(world.results[1].outcome, Outcome::Executed);
  EXPECT_EQ(world.results[1].value, std::optional<std::uint64_t>(1));
  EXPECT_EQ(world.results[2].outcome, Outcome::Skipped);
  EXPECT_EQ(world.results[2].value, std::optional<std::uint64_t>(1));
  EXPECT_EQ(world.hooks.bases_of(2), std::vector<Basis>{Basis::InboxDuplicate});
  EXPECT_TRUE(world.hooks.points_reached.empty());
}

TEST(ProtocolInbox, ManyConcurrentCallersIncrementTheDomainRowOnce) {
  World world(settings_for("inbox"), 3, sim::SchedulePolicy::Random);
  world.store.delay = kMillisecond;
  CountingEffect effect;
  for (AttemptId attempt = 1; attempt <= 20; ++attempt) world.caller(attempt, 0, effect.make(0, 1));
  world.simulation.run();
  EXPECT_EQ(world.store.record(lethe::make_key(Table::Domain, kProcessor, kMessage))->counter, 1);
  int executed = 0;
  for (const auto& [attempt, result] : world.results) executed += result.outcome == Outcome::Executed ? 1 : 0;
  EXPECT_EQ(executed, 1);
}

TEST(ProtocolInbox, AnUnknownOutcomeFailsAndTheRedeliveryFindsTheRowIfItLanded) {
  World world(settings_for("inbox"));
  world.store.fate = [](const Op&, int index) { return index == 0 ? Fate::LoseReply : Fate::Normal; };
  CountingEffect effect;
  world.caller(1, 0, effect.make(0, 1));
  world.caller(2, kSecond, effect.make(0, 1));
  world.simulation.run();
  EXPECT_EQ(world.results[1].outcome, Outcome::Failed);
  EXPECT_EQ(world.results[2].outcome, Outcome::Skipped);
  EXPECT_EQ(world.store.record(lethe::make_key(Table::Domain, kProcessor, kMessage))->counter, 1);
}

TEST(ProtocolInbox, AnExpiredInboxRowIsReplacedWhenExpiredWinsAndKeptOtherwise) {
  for (const bool expired_wins : {true, false}) {
    ProtocolSection settings = settings_for("inbox");
    settings.settings.set("ttl", sim::Duration{kSecond});
    settings.settings.set("expired_wins", expired_wins);
    World world(settings);
    CountingEffect effect;
    world.caller(1, 0, effect.make(0, 1));
    world.caller(2, 2 * kSecond, effect.make(0, 1));  // the row expired at 1s and was not evicted
    world.simulation.run();
    const std::int64_t counter = world.store.record(lethe::make_key(Table::Domain, kProcessor, kMessage))->counter;
    EXPECT_EQ(counter, expired_wins ? 2 : 1);
    EXPECT_EQ(world.results[2].outcome, expired_wins ? Outcome::Executed : Outcome::Skipped);
    EXPECT_EQ(world.hooks.bases_of(2),
              std::vector<Basis>{expired_wins ? Basis::ExpiredCompleted : Basis::InboxDuplicate});
  }
}

TEST(ProtocolNone, EveryCallerRunsTheEffectUnprotected) {
  World world(settings_for("none"));
  CountingEffect effect;
  for (AttemptId attempt = 1; attempt <= 3; ++attempt) world.caller(attempt, 0, effect.make(kMillisecond, attempt));
  world.simulation.run();
  EXPECT_EQ(effect.runs, 3);
  EXPECT_EQ(world.hooks.count(Basis::Unprotected), 3);
  EXPECT_TRUE(world.store.log.empty());
  for (const auto& [attempt, result] : world.results) EXPECT_EQ(result.value, std::optional<std::uint64_t>(attempt));
}

TEST(ProtocolFactory, RefusesSettingsTheLoaderWouldHaveRejected) {
  DirectStore store;
  FiberClock clock;
  RecordingHooks hooks;
  ProtocolSection settings = settings_for("mnemosyne");
  settings.settings.erase("max_processing_time");
  EXPECT_THROW(lethe::make_strategy(settings, store, clock, hooks, sim::Rng(1)), std::invalid_argument);
  settings = settings_for("inbox");
  settings.settings.erase("ttl");
  EXPECT_THROW(lethe::make_strategy(settings, store, clock, hooks, sim::Rng(1)), std::invalid_argument);
  settings = settings_for("inbox");
  settings.settings.set("takeover", std::string("conditional"));  // a key inbox does not read
  EXPECT_THROW(lethe::make_strategy(settings, store, clock, hooks, sim::Rng(1)), std::invalid_argument);
  settings = settings_for("mnemosyne");
  settings.settings.set("takeover", std::string("sometimes"));  // not one of its words
  EXPECT_THROW(lethe::make_strategy(settings, store, clock, hooks, sim::Rng(1)), std::invalid_argument);
  settings = settings_for("none");
  EXPECT_TRUE(settings.settings.values().empty());
  EXPECT_NE(lethe::make_strategy(settings, store, clock, hooks, sim::Rng(1)), nullptr);
}

}  // namespace strategies_test

// ---------------------------------------------------------------- local_cache: a consumer's own completed records

namespace strategies_test::local_cache_test {

// One consumer (one strategy) handling deliveries of kMessage, or of other messages, at the given times.
struct Delivery {
  AttemptId attempt;
  Time at;
  MessageId id = kMessage;
};

std::vector<ProtectResult> one_consumer(World& world, const std::vector<Delivery>& deliveries, CountingEffect& effect) {
  sim::Node& node = world.simulation.add_node("consumer", "consumers");
  world.strategies.push_back(lethe::make_strategy(world.settings, world.store, world.clock, world.hooks,
                                                  world.simulation.rng("poll-consumer")));
  lethe::Strategy* strategy = world.strategies.back().get();
  auto results = std::make_shared<std::vector<ProtectResult>>();
  node.spawn([&effect, strategy, deliveries, results] {
    for (const Delivery& d : deliveries) {
      sim::sleep_until(d.at);
      results->push_back(strategy->protect(d.id, kProcessor, d.attempt, effect.make(10 * kMillisecond, 7)));
    }
  });
  world.simulation.run();
  return *results;
}

ProtocolSection cached(std::string cache) {
  ProtocolSection settings = settings_for("mnemosyne");
  settings.settings.set("local_cache", cache == "off" ? lethe::LocalCache{} : lethe::LocalCache{1, kSecond * 60});
  return settings;
}

TEST(ProtocolLocalCache, ARedeliveryToTheSameConsumerIsSkippedFromItsCacheWithoutAStoreCall) {
  for (const std::string mode : {"off", "lru"}) {
    World world(cached(mode));
    CountingEffect effect;
    const auto results = one_consumer(world, {{1, 0}, {2, kSecond}}, effect);
    ASSERT_EQ(results.size(), 2u);
    EXPECT_EQ(effect.runs, 1);
    EXPECT_EQ(results[1].outcome, Outcome::Skipped);
    EXPECT_EQ(results[1].value, std::optional<std::uint64_t>(7));  // the memoized result, from the cache too
    const std::size_t after_first = mode == "off" ? 3u : 2u;  // start + completion (+ the second start write)
    EXPECT_EQ(world.store.log.size(), after_first) << mode;
  }
}

TEST(ProtocolLocalCache, AnEntryIsNotTrustedPastItsCacheTtlNorPastTheRecordsExpiry) {
  ProtocolSection settings = settings_for("mnemosyne");
  settings.settings.set("local_cache", lethe::LocalCache{8, 2 * kSecond});
  settings.settings.set("ttl", 10 * kSecond);
  World world(settings);
  CountingEffect effect;
  // 1.5 s after: from the cache (a hit does not restart its ttl); 2.5 s: past the 2 s since it was cached, the
  // store (completed: skip); 12 s: past the record's expiry, the store again (expired: processed again).
  const auto results =
      one_consumer(world, {{1, 0}, {2, 3 * kSecond / 2}, {3, 5 * kSecond / 2}, {4, 12 * kSecond}}, effect);
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(results[1].outcome, Outcome::Skipped);
  EXPECT_EQ(results[2].outcome, Outcome::Skipped);
  EXPECT_EQ(results[3].outcome, Outcome::Executed);
  EXPECT_EQ(effect.runs, 2);
  EXPECT_EQ(world.store.times_of(OpKind::Upsert).size(), 2u + 1u + 2u);  // 1st: start+complete; 3rd; 4th
}

TEST(ProtocolLocalCache, PastItsSizeTheLeastRecentlyUsedRecordIsEvictedAndReadFromTheStoreAgain) {
  World world(cached("lru"));  // size 1
  CountingEffect effect;
  const auto results = one_consumer(world, {{1, 0, kMessage}, {2, kSecond, kMessage + 1}, {3, 2 * kSecond, kMessage}},
                                    effect);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[2].outcome, Outcome::Skipped);  // from the store: the cache held the other message only
  EXPECT_EQ(effect.runs, 2);
  EXPECT_EQ(world.store.log.size(), 2u + 2u + 1u);
}

// Powertools test_idempotent_lambda_already_completed_with_validation_bad_payload_from_local_cache: the cached
// record's fingerprint refuses another payload, with no store call.
TEST(ProtocolLocalCache, ACachedRecordRefusesAnotherPayloadWithoutAStoreCall) {
  ProtocolSection settings = cached("lru");
  settings.settings.set("payload_check", std::string("fingerprint"));
  World world(settings);
  CountingEffect effect;
  sim::Node& node = world.simulation.add_node("consumer", "consumers");
  world.strategies.push_back(lethe::make_strategy(world.settings, world.store, world.clock, world.hooks,
                                                  world.simulation.rng("poll-consumer")));
  lethe::Strategy* strategy = world.strategies.back().get();
  std::vector<ProtectResult> results;
  node.spawn([&] {
    for (std::uint32_t version : {0u, 1u}) {
      sim::sleep(kSecond);
      results.push_back(strategy->protect_payload(kMessage, kProcessor, version + 1,
                                                  lethe::payload_fingerprint(kMessage, version),
                                                  effect.make(10 * kMillisecond, 7)));
    }
  });
  world.simulation.run();
  ASSERT_EQ(results.size(), 2u);
  EXPECT_TRUE(results[1].payload_mismatch);
  EXPECT_EQ(effect.runs, 1);
  EXPECT_EQ(world.store.log.size(), 2u);  // the first delivery's start and completion only
}

// Powertools test_in_progress_never_saved_to_cache, test_idempotent_lambda_in_progress_with_cache: a record
// found in flight is not cached, so the consumer's next delivery reads the store and finds it completed.
TEST(ProtocolLocalCache, ARecordFoundInFlightIsNotCachedAndTheNextDeliveryReadsTheStore) {
  ProtocolSection settings = cached("lru");
  settings.settings.set("max_wait", Duration{0});  // refuse at once, as Powertools does
  settings.settings.set("max_processing_time", 60 * kSecond);
  World world(settings);
  CountingEffect owner;
  world.caller(1, 0, owner.make(2 * kSecond, 9));  // another consumer, at work until 2 s
  CountingEffect effect;
  const auto results = one_consumer(world, {{2, kSecond}, {3, 3 * kSecond}}, effect);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].outcome, Outcome::Failed);   // in flight: refused
  EXPECT_EQ(results[1].outcome, Outcome::Skipped);  // from the store: completed by the other consumer
  EXPECT_EQ(results[1].value, std::optional<std::uint64_t>(9));
  EXPECT_EQ(effect.runs, 0);
}

}  // namespace strategies_test::local_cache_test
