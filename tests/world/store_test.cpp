// Tests of world/store_server.hpp: the simulated store over the simulated network, TTL eviction (exact and lazy), the
// lagging read replica, the recorded history and its linearizability check (with deliberate store bugs).
#include "world/store_server.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>
#include <rapidcheck/state.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

// How RapidCheck prints items when a property fails (found by argument-dependent lookup).
namespace lethe {
inline void showValue(const Item& item, std::ostream& os) { os << describe(std::optional<Item>(item)); }
}  // namespace lethe

namespace store_test {

using lethe::Item;
using lethe::Key;
using lethe::Op;
using lethe::OpKind;
using lethe::Reply;
using lethe::Store;
using lethe::StoreBug;
using lethe::StoreSettings;
using lethe::lin::kNever;
using lethe::lin::Verdict;
using sim::kMillisecond;
using sim::kMicrosecond;
using sim::kSecond;

sim::Distribution parse_distribution(const std::string& text) {
  std::string error;
  auto parsed = sim::Distribution::parse(text, {}, error);
  if (!parsed) throw std::invalid_argument(error);
  return *parsed;
}

// One simulation with a store node and any number of client nodes.
struct World {
  sim::Simulation simulation;
  sim::Network network;
  sim::Node& store_node;
  Store store;
  std::vector<std::unique_ptr<lethe::SimStoreClient>> clients;

  World(std::uint64_t seed, StoreSettings settings, sim::LinkConfig link = {})
      : simulation({.seed = seed, .policy = sim::SchedulePolicy::Fifo}),
        network(simulation, simulation.rng("network")),
        store_node(simulation.add_node("store", "store")),
        store(simulation, network, store_node, std::move(settings)) {
    network.set_default_link(std::move(link));
  }

  sim::Node& add_client(const std::string& name) {
    sim::Node& node = simulation.add_node(name, "clients");
    clients.push_back(std::make_unique<lethe::SimStoreClient>(store, node));
    return node;
  }
  lethe::SimStoreClient& client(std::size_t index) { return *clients[index]; }
};

Item item_with_counter(std::int64_t counter) {
  Item item;
  item.counter = counter;
  return item;
}

// ---------------------------------------------------------------- the reference model (rc::state)

// A plain map, with the semantics of each operation written out independently of lethe::apply.
struct Reference {
  lethe::StoreState items;
};

bool reference_holds(const lethe::Condition& condition, const std::optional<Item>& current) {
  const bool present = current.has_value();
  if (condition.require_absent && present) return false;
  if (condition.require_present && !present) return false;
  if (condition.absent_or_expired_at && present) {
    const bool expired = current->expires_on.has_value() && *current->expires_on <= *condition.absent_or_expired_at;
    if (!expired) return false;
  }
  if (condition.started_at_equals && !(present && current->started_at == *condition.started_at_equals)) return false;
  if (condition.owner_equals && !(present && current->owner == *condition.owner_equals)) return false;
  if (condition.require_not_completed && present && current->completed_at.has_value()) return false;
  return true;
}

template <class T>
void reference_assign(lethe::Assign mode, std::optional<T>& field, T value) {
  if (mode == lethe::Assign::Set || (mode == lethe::Assign::SetIfAbsent && !field.has_value())) field = value;
  if (mode == lethe::Assign::Remove) field = std::nullopt;
}
void reference_assign(lethe::Assign mode, lethe::MaybeTime& field, sim::Time value) {
  if (mode == lethe::Assign::Set || (mode == lethe::Assign::SetIfAbsent && !field.has_value())) field = value;
  if (mode == lethe::Assign::Remove) field = std::nullopt;
}

Item reference_update(const lethe::Update& update, std::optional<Item> current) {
  if (update.replace_expired_at && current && current->expires_on && *current->expires_on <= *update.replace_expired_at) {
    current = std::nullopt;
  }
  const bool fresh = !current.has_value();
  Item item = current.value_or(Item{});
  reference_assign(update.started_at_mode, item.started_at, update.started_at);
  reference_assign(update.completed_at_mode, item.completed_at, update.completed_at);
  reference_assign(update.expires_on_mode, item.expires_on, update.expires_on);
  reference_assign(update.memoized_mode, item.memoized, update.memoized);
  if (update.owner_mode == lethe::Assign::Set || (update.owner_mode == lethe::Assign::SetIfAbsent && (fresh || item.owner == 0))) {
    item.owner = update.owner;
  }
  if (update.owner_mode == lethe::Assign::Remove) item.owner = 0;
  item.counter += update.counter_add;
  return item;
}

std::optional<Item> reference_find(const Reference& reference, Key key) {
  auto found = reference.items.find(key);
  return found == reference.items.end() ? std::nullopt : std::optional<Item>(found->second);
}

Reply reference_apply(Reference& reference, const Op& op) {
  Reply reply;
  if (op.kind == OpKind::Transaction) {
    for (const auto& part : op.parts) reply.previous_parts.push_back(reference_find(reference, part.key));
    for (std::size_t index = 0; index < op.parts.size(); ++index) {
      if (!reference_holds(op.parts[index].condition, reply.previous_parts[index])) {
        reply.applied = false;
        return reply;
      }
    }
    for (const auto& part : op.parts) {
      reference.items[part.key] = reference_update(part.update, reference_find(reference, part.key));
    }
    return reply;
  }
  reply.previous = reference_find(reference, op.key);
  switch (op.kind) {
    case OpKind::Get: break;
    case OpKind::Put: reference.items[op.key] = op.item; break;
    case OpKind::Delete: reference.items.erase(op.key); break;
    case OpKind::Upsert:
      if (reference_holds(op.condition, reply.previous)) {
        reference.items[op.key] = reference_update(op.update, reply.previous);
      } else {
        reply.applied = false;
      }
      break;
    case OpKind::Evict:
      if (reply.previous && reply.previous->expires_on && *reply.previous->expires_on <= op.at) {
        reference.items.erase(op.key);
      } else {
        reply.applied = false;
      }
      break;
    case OpKind::Transaction: break;
  }
  return reply;
}

// Instants far beyond the virtual time a test reaches, so the sweeper never fires during the property test and
// every expiry is decided by the conditions and Evict operations themselves.
constexpr sim::Time kFarInstant = 1000 * sim::kHour;

rc::Gen<sim::Time> gen_instant() {
  return rc::gen::map(rc::gen::inRange<std::int64_t>(0, 4), [](std::int64_t step) { return kFarInstant + step * kSecond; });
}
rc::Gen<Key> gen_key() { return rc::gen::inRange<Key>(1, 4); }

template <class T>
std::optional<T> maybe(const rc::Gen<T>& generator) {
  if (*rc::gen::inRange(0, 3) != 0) return std::nullopt;
  return *generator;
}

Item generate_item() {
  Item item;
  item.started_at = maybe(gen_instant());
  item.completed_at = maybe(gen_instant());
  item.expires_on = maybe(gen_instant());
  item.owner = *rc::gen::inRange<lethe::AttemptId>(0, 3);
  item.memoized = maybe(rc::gen::inRange<std::uint64_t>(0, 3));
  item.counter = *rc::gen::inRange<std::int64_t>(-2, 3);
  return item;
}

lethe::Condition generate_condition() {
  lethe::Condition condition;
  auto coin = [] { return *rc::gen::inRange(0, 4) == 0; };
  condition.require_absent = coin();
  condition.require_present = coin();
  if (coin()) condition.absent_or_expired_at = *gen_instant();
  if (coin()) condition.started_at_equals = *gen_instant();
  if (coin()) condition.owner_equals = *rc::gen::inRange<lethe::AttemptId>(0, 3);
  condition.require_not_completed = coin();
  return condition;
}

lethe::Update generate_update() {
  auto mode = [] { return static_cast<lethe::Assign>(*rc::gen::inRange(0, 4)); };
  lethe::Update update;
  update.started_at_mode = mode();
  update.started_at = *gen_instant();
  update.owner_mode = mode();
  update.owner = *rc::gen::inRange<lethe::AttemptId>(1, 3);
  update.completed_at_mode = mode();
  update.completed_at = *gen_instant();
  update.expires_on_mode = mode();
  update.expires_on = *gen_instant();
  update.memoized_mode = mode();
  update.memoized = *rc::gen::inRange<std::uint64_t>(0, 3);
  update.counter_add = *rc::gen::inRange<std::int64_t>(-1, 3);
  update.replace_expired_at = maybe(gen_instant());
  return update;
}

// The system under test: a store reached over a loss-free network from one client node.
struct StoreUnderTest {
  World world;
  sim::Node& client_node;
  std::size_t applied_evicts = 0;

  explicit StoreUnderTest(std::uint64_t seed)
      : world(seed, settings(), link()), client_node(world.add_client("client")) {}

  static StoreSettings settings() {
    StoreSettings settings;
    settings.latency = parse_distribution("uniform(10us, 500us)");
    settings.rpc_timeout = kSecond;
    return settings;
  }
  static sim::LinkConfig link() {
    sim::LinkConfig link;
    link.latency = parse_distribution("uniform(100us, 2ms)");
    return link;
  }

  std::optional<Reply> execute(const Op& op) {
    std::optional<Reply> reply;
    bool returned = false;
    lethe::SimStoreClient& client = world.client(0);
    client_node.spawn([&reply, &returned, &client, op] {
      reply = client.execute(op);
      returned = true;
    });
    world.simulation.run_until(world.simulation.now() + 10 * kSecond);
    RC_ASSERT(returned);
    return reply;
  }
};

struct OpCommand : rc::state::Command<Reference, StoreUnderTest> {
  Op op;

  void apply(Reference& reference) const override { reference_apply(reference, op); }

  void run(const Reference& before, StoreUnderTest& sut) const override {
    Reference expected_state = before;
    const Reply expected = reference_apply(expected_state, op);
    const std::size_t evictions_before = sut.world.store.eviction_log().size();
    const std::optional<Reply> reply = sut.execute(op);
    RC_ASSERT(reply.has_value());
    RC_ASSERT(*reply == expected);
    RC_ASSERT(sut.world.store.state() == expected_state.items);
    const bool evicted = op.kind == OpKind::Evict && expected.applied;
    RC_ASSERT(sut.world.store.eviction_log().size() == evictions_before + (evicted ? 1u : 0u));
  }

  void show(std::ostream& os) const override {
    const std::string text = lethe::StoreModel::describe(op, Reply{});
    os << text.substr(0, text.rfind(" -> "));  // the operation without a reply
  }
};

struct GetCommand : OpCommand {
  GetCommand() { op = lethe::get_op(*gen_key()); }
};
struct PutCommand : OpCommand {
  PutCommand() { op = lethe::put_op(*gen_key(), generate_item()); }
};
struct DeleteCommand : OpCommand {
  DeleteCommand() { op = lethe::delete_op(*gen_key()); }
};
struct UpsertCommand : OpCommand {
  UpsertCommand() { op = lethe::upsert_op(*gen_key(), generate_condition(), generate_update()); }
};
struct EvictCommand : OpCommand {
  EvictCommand() { op = lethe::evict_op(*gen_key(), *gen_instant()); }
};
struct TransactionCommand : OpCommand {
  TransactionCommand() {
    const Key first = *gen_key();
    const Key second = *rc::gen::distinctFrom(gen_key(), first);
    op = lethe::transaction_op({lethe::TransactionPart{first, generate_condition(), generate_update()},
                                lethe::TransactionPart{second, generate_condition(), generate_update()}});
  }
};

RC_GTEST_PROP(StoreProperty, StoreOverTheNetworkAnswersAndStoresLikeAPlainMapForAnyCommandSequence, ()) {
  const auto seed = *rc::gen::inRange<std::uint64_t>(1, 1'000'000);
  StoreUnderTest sut(seed);
  rc::state::check(Reference{}, sut,
                   rc::state::gen::execOneOfWithArgs<GetCommand, PutCommand, DeleteCommand, UpsertCommand,
                                                     EvictCommand, TransactionCommand>());
  // A single client's sequential history is trivially linearizable; the checker must agree.
  const auto history = sut.world.store.history();
  RC_ASSERT(history.size() == sut.world.store.stats().client_calls);
  RC_ASSERT(lethe::check_store_history(sut.world.store).verdict == Verdict::Linearizable);
}

// lethe::apply's `after`: what the store's sweeper and replica versions are told the op left at its key.
RC_GTEST_PROP(StoreApply, TheItemAfterASingleKeyOpIsWhatTheStateHoldsAtItsKeyAndTheReplyIsTheSameWithoutIt, ()) {
  lethe::StoreState state;
  const int items = *rc::gen::inRange(0, 4);
  for (int i = 0; i < items; ++i) state[*gen_key()] = generate_item();
  const Key key = *gen_key();
  Op op;
  switch (*rc::gen::inRange(0, 5)) {
    case 0: op = lethe::get_op(key); break;
    case 1: op = lethe::put_op(key, generate_item()); break;
    case 2: op = lethe::delete_op(key); break;
    case 3: op = lethe::upsert_op(key, generate_condition(), generate_update()); break;
    default: op = lethe::evict_op(key, *gen_instant()); break;
  }
  lethe::StoreState without_after = state;
  std::optional<Item> after = generate_item();  // overwritten in every case, absent included
  const Reply reply = lethe::apply(state, op, &after);
  const auto held = state.find(key);
  RC_ASSERT(after == (held == state.end() ? std::nullopt : std::optional<Item>(held->second)));
  RC_ASSERT(lethe::apply(without_after, op) == reply);
  RC_ASSERT(without_after == state);
}

// ---------------------------------------------------------------- TTL eviction

StoreSettings ttl_settings(lethe::TtlEvictionKind kind, sim::Duration lazy_max) {
  StoreSettings settings;
  settings.latency = sim::Distribution::constant(100 * kMicrosecond);
  settings.ttl_eviction = kind;
  settings.lazy_max = lazy_max;
  settings.rpc_timeout = kSecond;
  return settings;
}

// Puts an item expiring at 50 ms (at t=0), then reads it at each of `read_at` (sent at that instant, arriving
// 1.1 ms later). Returns what each read saw.
std::vector<std::optional<Item>> expiring_item_reads(World& world, const std::vector<sim::Time>& read_at) {
  sim::Node& node = world.add_client("client");
  std::vector<std::optional<Item>> seen;
  lethe::SimStoreClient& client = world.client(0);
  node.set_main([&client, &seen, read_at] {
    Item item = item_with_counter(7);
    item.expires_on = 50 * kMillisecond;
    EXPECT_TRUE(client.execute(lethe::put_op(1, item)).has_value());
    for (sim::Time instant : read_at) {
      sim::sleep_until(instant);
      auto reply = client.execute(lethe::get_op(1));
      EXPECT_TRUE(reply.has_value());
      seen.push_back(reply ? reply->previous : std::nullopt);
    }
  });
  node.start();
  world.simulation.run();
  return seen;
}

TEST(StoreTtl, ExactEvictionDeletesTheItemAtItsExpiryInstant) {
  World world(1, ttl_settings(lethe::TtlEvictionKind::Exact, 0));
  const auto seen = expiring_item_reads(world, {40 * kMillisecond, 49 * kMillisecond, 60 * kMillisecond});
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_TRUE(seen[0].has_value());
  EXPECT_FALSE(seen[1].has_value()) << "arrives at 50.1 ms, after the exact eviction at 50 ms";
  EXPECT_FALSE(seen[2].has_value());
  ASSERT_EQ(world.store.eviction_log().size(), 1u);
  EXPECT_EQ(world.store.eviction_log()[0].at, 50 * kMillisecond);
  EXPECT_EQ(world.store.eviction_log()[0].key, 1u);
  EXPECT_EQ(world.store.eviction_log()[0].evicted.counter, 7);
  EXPECT_EQ(world.store.pending_evictions(), 0u);
  const auto history = world.store.history();
  const auto sweeper = std::count_if(history.begin(), history.end(), [](const lethe::StoreOperation& op) {
    return op.client == Store::kSweeperClient && op.invoked_at == 50 * kMillisecond &&
           op.returned_at == 50 * kMillisecond && op.input.kind == OpKind::Evict && op.output.applied;
  });
  EXPECT_EQ(sweeper, 1);
  EXPECT_EQ(lethe::check_store_history(world.store).verdict, Verdict::Linearizable);
}

TEST(StoreTtl, LazyEvictionLeavesTheExpiredItemReadableUntilTheSweeperRuns) {
  const sim::Duration lazy_max = sim::kHour;
  sim::Time evicted_at = 0;
  {
    World world(3, ttl_settings(lethe::TtlEvictionKind::Lazy, lazy_max));
    const auto seen = expiring_item_reads(world, {60 * kMillisecond});
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_TRUE(seen[0].has_value()) << "expired at 50 ms but not swept yet";
    EXPECT_TRUE(seen[0]->expired_at(60 * kMillisecond));
    ASSERT_EQ(world.store.eviction_log().size(), 1u);
    evicted_at = world.store.eviction_log()[0].at;
    EXPECT_GE(evicted_at, 50 * kMillisecond);
    EXPECT_LE(evicted_at, 50 * kMillisecond + lazy_max);
    EXPECT_EQ(world.store.eviction_log()[0].evicted.counter, 7);
    EXPECT_EQ(lethe::check_store_history(world.store).verdict, Verdict::Linearizable);
  }
  ASSERT_GT(evicted_at, 70 * kMillisecond) << "seed 3 must sweep late enough for the reads below";
  // The same seed replays the same sweep: read just before it (readable) and just after it (gone).
  World world(3, ttl_settings(lethe::TtlEvictionKind::Lazy, lazy_max));
  const auto seen = expiring_item_reads(world, {60 * kMillisecond, evicted_at - 5 * kMillisecond, evicted_at});
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_TRUE(seen[0].has_value());
  EXPECT_TRUE(seen[1].has_value());
  EXPECT_FALSE(seen[2].has_value());
  ASSERT_EQ(world.store.eviction_log().size(), 1u);
  EXPECT_EQ(world.store.eviction_log()[0].at, evicted_at);
}

TEST(StoreTtl, RefreshingAnExpiryDoesNotPileUpSweeperTimers) {
  World world(5, ttl_settings(lethe::TtlEvictionKind::Exact, 0));
  sim::Node& node = world.add_client("client");
  lethe::SimStoreClient& client = world.client(0);
  node.set_main([&client] {
    for (int round = 0; round < 40; ++round) {
      lethe::Update update;
      update.expires_on_mode = lethe::Assign::Set;
      update.expires_on = sim::now() + 100 * kMillisecond;  // a heartbeat that keeps pushing the expiry back
      update.counter_add = 1;
      EXPECT_TRUE(client.execute(lethe::upsert_op(9, {}, update)).has_value());
      sim::sleep(10 * kMillisecond);
    }
  });
  node.start();
  world.simulation.run();
  EXPECT_LE(world.store.stats().eviction_timers, 8u) << "one timer per expiry period, not one per write";
  ASSERT_EQ(world.store.eviction_log().size(), 1u);
  EXPECT_EQ(world.store.eviction_log()[0].evicted.counter, 40);
  EXPECT_EQ(world.store.eviction_log()[0].at, *world.store.eviction_log()[0].evicted.expires_on);
  EXPECT_EQ(world.store.pending_evictions(), 0u);
  EXPECT_TRUE(world.store.state().empty());
  EXPECT_EQ(lethe::check_store_history(world.store).verdict, Verdict::Linearizable);
}

TEST(StoreTtl, AnExpiryMovedEarlierIsSweptAtTheEarlierInstant) {
  World world(6, ttl_settings(lethe::TtlEvictionKind::Exact, 0));
  sim::Node& node = world.add_client("client");
  lethe::SimStoreClient& client = world.client(0);
  node.set_main([&client] {
    Item item = item_with_counter(1);
    item.expires_on = 100 * kMillisecond;
    EXPECT_TRUE(client.execute(lethe::put_op(4, item)).has_value());
    item.expires_on = 30 * kMillisecond;
    item.counter = 2;
    EXPECT_TRUE(client.execute(lethe::put_op(4, item)).has_value());
  });
  node.start();
  world.simulation.run();
  ASSERT_EQ(world.store.eviction_log().size(), 1u);
  EXPECT_EQ(world.store.eviction_log()[0].at, 30 * kMillisecond);
  EXPECT_EQ(world.store.eviction_log()[0].evicted.counter, 2);
  EXPECT_EQ(world.store.stats().sweeper_runs, 1u) << "the superseded 100 ms timer does nothing";
}

RC_GTEST_PROP(StoreTtl, EveryItemIsEvictedOnceAtItsLastExpiryInWhateverOrderTheExpiriesWereSet, ()) {
  // Expiries at least 1 s ahead, set (and some moved earlier or later) within the first ~100 ms: earlier ones
  // after later ones take the sweeper's heap path, increasing ones its fifo.
  const auto seed = *rc::gen::inRange<std::uint64_t>(1, 1'000'000);
  const auto writes = *rc::gen::container<std::vector<std::pair<Key, sim::Duration>>>(
      *rc::gen::inRange<std::size_t>(1, 40),
      rc::gen::pair(rc::gen::inRange<Key>(1, 12), rc::gen::inRange<sim::Duration>(1'000, 2'000)));
  World world(seed, ttl_settings(lethe::TtlEvictionKind::Exact, 0));
  sim::Node& node = world.add_client("client");
  lethe::SimStoreClient& client = world.client(0);
  std::map<Key, sim::Time> last_expiry;
  for (const auto& [key, ms] : writes) last_expiry[key] = ms * kMillisecond;
  node.set_main([&client, &writes] {
    for (const auto& [key, ms] : writes) {
      Item item = item_with_counter(static_cast<std::int64_t>(ms));
      item.expires_on = ms * kMillisecond;
      RC_ASSERT(client.execute(lethe::put_op(key, item)).has_value());
    }
  });
  node.start();
  world.simulation.run();
  const auto& log = world.store.eviction_log();
  RC_ASSERT(log.size() == last_expiry.size());
  std::map<Key, sim::Time> evicted;
  for (std::size_t i = 0; i < log.size(); ++i) {
    if (i > 0) RC_ASSERT(log[i - 1].at <= log[i].at);
    RC_ASSERT(evicted.emplace(log[i].key, log[i].at).second);
  }
  RC_ASSERT(evicted == last_expiry);
  RC_ASSERT(world.store.pending_evictions() == 0u);
  RC_ASSERT(world.store.state().empty());
}

// ---------------------------------------------------------------- read replica

StoreSettings replica_settings(const std::string& lag) {
  StoreSettings settings;
  settings.latency = sim::Distribution::constant(100 * kMicrosecond);
  settings.poll_read = lethe::PollReadKind::Eventual;
  settings.replica_lag = parse_distribution(lag);
  return settings;
}

TEST(StoreReplica, AnEventualReadRightAfterAWriteSeesTheOldValueAndAConsistentReadNeverDoes) {
  World world(7, replica_settings("50ms"));
  sim::Node& node = world.add_client("client");
  lethe::SimStoreClient& client = world.client(0);
  std::vector<std::int64_t> eventual;
  std::vector<std::int64_t> consistent;
  auto counter_of = [](const std::optional<Reply>& reply) {
    return reply && reply->previous ? reply->previous->counter : -1;
  };
  node.set_main([&] {
    EXPECT_TRUE(client.execute(lethe::put_op(1, item_with_counter(1))).has_value());
    sim::sleep(100 * kMillisecond);
    EXPECT_TRUE(client.execute(lethe::put_op(1, item_with_counter(2))).has_value());
    eventual.push_back(counter_of(client.read_eventual(1)));
    consistent.push_back(counter_of(client.execute(lethe::get_op(1))));
    eventual.push_back(counter_of(client.read_eventual(2)));  // never written: absent at any lag
    sim::sleep(60 * kMillisecond);
    eventual.push_back(counter_of(client.read_eventual(1)));
    consistent.push_back(counter_of(client.execute(lethe::get_op(1))));
  });
  node.start();
  world.simulation.run();
  EXPECT_EQ(eventual, (std::vector<std::int64_t>{1, -1, 2}));
  EXPECT_EQ(consistent, (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(world.store.stats().replica_reads, 3u);
  EXPECT_EQ(world.store.history().size(), 4u) << "replica reads stay out of the checked history";
  EXPECT_EQ(lethe::check_store_history(world.store).verdict, Verdict::Linearizable);
}

TEST(StoreReplica, ZeroLagAndConsistentModeReadTheLatestWrite) {
  for (auto mode : {lethe::PollReadKind::Eventual, lethe::PollReadKind::Consistent}) {
    StoreSettings settings = replica_settings("0s");
    settings.poll_read = mode;
    World world(8, settings);
    sim::Node& node = world.add_client("client");
    lethe::SimStoreClient& client = world.client(0);
    std::optional<Reply> read;
    node.set_main([&] {
      EXPECT_TRUE(client.execute(lethe::put_op(1, item_with_counter(1))).has_value());
      EXPECT_TRUE(client.execute(lethe::put_op(1, item_with_counter(2))).has_value());
      read = client.read_eventual(1);
    });
    node.start();
    world.simulation.run();
    ASSERT_TRUE(read && read->previous);
    EXPECT_EQ(read->previous->counter, 2);
    const bool eventual = mode == lethe::PollReadKind::Eventual;
    EXPECT_EQ(world.store.stats().replica_reads, eventual ? 1u : 0u);
    EXPECT_EQ(world.store.history().size(), eventual ? 2u : 3u);
  }
}

TEST(StoreReplica, TheVersionLogStaysBoundedByTheLagHorizon) {
  World world(9, replica_settings("uniform(0s, 10ms)"));
  EXPECT_EQ(world.store.replica_horizon(), 10 * kMillisecond);
  sim::Node& node = world.add_client("client");
  lethe::SimStoreClient& client = world.client(0);
  std::size_t most_versions = 0;
  node.set_main([&] {
    sim::Rng rng = world.simulation.rng("workload");
    for (int round = 0; round < 1000; ++round) {
      const Key key = 1 + rng.below(5);
      lethe::Update update;
      update.counter_add = 1;
      EXPECT_TRUE(client.execute(lethe::upsert_op(key, {}, update)).has_value());
      if (round % 10 == 0) {
        EXPECT_TRUE(client.read_eventual(key).has_value());
      }
      most_versions = std::max(most_versions, world.store.replica_versions());
    }
    sim::sleep(kSecond);
    EXPECT_TRUE(client.read_eventual(1).has_value());
  });
  node.start();
  world.simulation.run();
  // A write every ~2.2 ms (round trip plus service): about 5 within the 10 ms horizon, plus a base per key.
  EXPECT_LE(most_versions, 30u);
  EXPECT_GT(most_versions, 0u);
  EXPECT_EQ(world.store.replica_versions(), 0u) << "after an idle horizon nothing needs remembering";
  EXPECT_EQ(world.store.stats().replica_reads, 101u);
}

// ---------------------------------------------------------------- history and linearizability

struct WorkloadResult {
  lethe::lin::Result check;
  std::vector<lethe::StoreOperation> history;
  lethe::StoreStats stats;
};

// Several clients upsert, put, delete and read a few keys concurrently over a lossy network.
WorkloadResult concurrent_workload(std::uint64_t seed, StoreBug bug, int clients = 4, int ops_per_client = 20,
                                   double duplicate = 0.0) {
  StoreSettings settings;
  settings.latency = parse_distribution("uniform(50us, 1ms)");
  settings.rpc_timeout = 8 * kMillisecond;
  sim::LinkConfig link;
  link.latency = parse_distribution("uniform(100us, 3ms)");
  link.loss = 0.05;
  link.ack_loss = 0.05;
  link.duplicate = duplicate;
  World world(seed, settings, link);
  if (bug != StoreBug::None) world.store.set_bug(bug, 0.3);
  for (int index = 0; index < clients; ++index) {
    sim::Node& node = world.add_client("client" + std::to_string(index));
    lethe::SimStoreClient& client = world.client(static_cast<std::size_t>(index));
    node.set_main([&world, &client, index, ops_per_client] {
      sim::Rng rng = world.simulation.rng("workload" + std::to_string(index));
      for (int round = 0; round < ops_per_client; ++round) {
        sim::sleep(static_cast<sim::Duration>(rng.exponential(1.0 * kMillisecond)));
        const Key key = 1 + rng.below(2);
        const std::uint64_t choice = rng.below(10);
        lethe::Update update;
        update.counter_add = 1;
        lethe::Condition condition;
        if (choice < 3) {
          (void)client.execute(lethe::get_op(key));
        } else if (choice < 6) {
          (void)client.execute(lethe::upsert_op(key, condition, update));  // a counter increment
        } else if (choice < 8) {
          update.owner_mode = lethe::Assign::Set;
          update.owner = static_cast<lethe::AttemptId>(index + 1);
          condition.require_absent = rng.below(2) == 0;
          (void)client.execute(lethe::upsert_op(key, condition, update));  // claim the key
        } else if (choice < 9) {
          (void)client.execute(lethe::put_op(key, item_with_counter(static_cast<std::int64_t>(100 + round))));
        } else {
          (void)client.execute(lethe::delete_op(key));
        }
      }
    });
    node.start();
  }
  world.simulation.run();
  WorkloadResult result;
  result.history = world.store.history();
  result.check = lethe::check_store_history(result.history, 2'000'000);
  result.stats = world.store.stats();
  return result;
}

std::size_t unanswered(const std::vector<lethe::StoreOperation>& history) {
  return static_cast<std::size_t>(std::count_if(history.begin(), history.end(), [](const lethe::StoreOperation& op) {
    return op.returned_at == kNever;
  }));
}

void expect_lossy_workloads_linearizable(std::uint64_t first_seed, std::uint64_t last_seed, double duplicate,
                                         int clients = 4, int ops_per_client = 20) {
  std::size_t total_unanswered = 0;
  std::uint64_t duplicates = 0;
  for (std::uint64_t seed = first_seed; seed <= last_seed; ++seed) {
    const WorkloadResult result = concurrent_workload(seed, StoreBug::None, clients, ops_per_client, duplicate);
    ASSERT_EQ(result.check.verdict, Verdict::Linearizable) << "seed " << seed << ": " << result.check.explanation;
    ASSERT_EQ(unanswered(result.history), result.stats.no_responses) << "seed " << seed;
    ASSERT_EQ(result.stats.responses + result.stats.no_responses, result.stats.client_calls) << "seed " << seed;
    total_unanswered += unanswered(result.history);
    duplicates += result.stats.duplicate_executions;
  }
  EXPECT_GT(total_unanswered, 0u) << "lossy runs must produce calls without a response";
  if (duplicate > 0.0) {
    EXPECT_GT(duplicates, 0u);
  }
}

TEST(StoreHistory, ConcurrentLossyWorkloadsAreLinearizable) { expect_lossy_workloads_linearizable(1, 25, 0.0); }

TEST(StoreHistory, DuplicatedRequestsAreRecordedAsExtraExecutionsAndStayLinearizable) {
  expect_lossy_workloads_linearizable(1, 10, 0.2);
}

TEST(StoreHistorySlow, TwoHundredSeedsOfConcurrentLossyWorkloadsAreLinearizable) {
  expect_lossy_workloads_linearizable(1, 200, 0.0);
  expect_lossy_workloads_linearizable(1001, 1050, 0.1, 6, 60);  // more clients, longer runs, duplicated requests
}

void expect_bug_detected(StoreBug bug) {
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    const WorkloadResult result = concurrent_workload(seed, bug);
    ASSERT_NE(result.check.verdict, Verdict::Unknown) << "seed " << seed;
    if (result.check.verdict == Verdict::NotLinearizable) {
      EXPECT_GT(result.stats.bugs_fired, 0u);
      EXPECT_FALSE(result.check.offending_ops.empty());
      EXPECT_NE(result.check.explanation.find("client"), std::string::npos) << result.check.explanation;
      EXPECT_NE(result.check.explanation.find("#"), std::string::npos) << result.check.explanation;
      return;
    }
  }
  ADD_FAILURE() << "bug " << lethe::to_string(bug) << " went undetected on 40 seeds";
}

TEST(StoreHistory, CheckerCatchesStaleReads) { expect_bug_detected(StoreBug::StaleRead); }
TEST(StoreHistory, CheckerCatchesLostWrites) { expect_bug_detected(StoreBug::LostWrite); }
TEST(StoreHistory, CheckerCatchesNonAtomicUpserts) { expect_bug_detected(StoreBug::NonAtomicUpsert); }

TEST(StoreHistory, CallerCrashMidCallRecordsTheOperationWithoutAResponse) {
  StoreSettings settings;
  settings.latency = sim::Distribution::constant(20 * kMillisecond);
  World world(11, settings);
  sim::Node& node = world.add_client("client");
  lethe::SimStoreClient& client = world.client(0);
  bool returned = false;
  node.set_main([&client, &returned] {
    lethe::Update update;
    update.counter_add = 5;
    (void)client.execute(lethe::upsert_op(3, {}, update));
    returned = true;
  });
  node.start();
  world.simulation.at(5 * kMillisecond, [&node] { node.crash(); });
  world.simulation.run();
  EXPECT_FALSE(returned);
  const auto history = world.store.history();
  ASSERT_EQ(history.size(), 1u);
  EXPECT_EQ(history[0].client, node.id());
  EXPECT_EQ(history[0].invoked_at, 0);
  EXPECT_EQ(history[0].returned_at, kNever);
  EXPECT_EQ(world.store.stats().no_responses, 1u);
  ASSERT_TRUE(world.store.peek(3).has_value()) << "the request had reached the store: it took effect";
  EXPECT_EQ(world.store.peek(3)->counter, 5);
  EXPECT_EQ(lethe::check_store_history(world.store).verdict, Verdict::Linearizable);
}

TEST(StoreHistory, OnAppliedSeesEveryExecutionInOrder) {
  World world(12, ttl_settings(lethe::TtlEvictionKind::Exact, 0));
  std::vector<std::pair<OpKind, sim::Time>> seen;
  world.store.set_on_applied([&seen](const Op& op, const Reply&, sim::Time at) { seen.emplace_back(op.kind, at); });
  expiring_item_reads(world, {10 * kMillisecond});
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].first, OpKind::Put);
  EXPECT_EQ(seen[1].first, OpKind::Get);
  EXPECT_EQ(seen[2].first, OpKind::Evict);
  EXPECT_EQ(seen[2].second, 50 * kMillisecond);
  EXPECT_EQ(world.store.stats().executions, 3u);
}

TEST(StoreHistory, SameSeedSameTraceHash) {
  auto hash = [](std::uint64_t seed) {
    World world(seed, ttl_settings(lethe::TtlEvictionKind::Lazy, kSecond));
    expiring_item_reads(world, {10 * kMillisecond, 70 * kMillisecond});
    return world.simulation.trace().hash();
  };
  EXPECT_EQ(hash(21), hash(21));
  EXPECT_NE(hash(21), hash(22));
}

}  // namespace store_test
