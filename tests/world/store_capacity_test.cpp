// Tests of store.capacity (world/store_capacity.hpp, world/store_server.hpp): the store evicts the least recently
// written dedupe record for room, reads do not count as uses, other tables are not bounded, the eviction is a
// server-side delete in a linearizable history, and a counterfactual's veto keeps one record without moving the
// other evictions.
#include "world/store_capacity.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "sim/network.hpp"
#include "sim/simulation.hpp"
#include "world/store_server.hpp"

namespace store_capacity_test {

using lethe::Key;
using lethe::Table;
using sim::kMicrosecond;
using sim::kMillisecond;

Key dedupe(std::uint64_t id) { return lethe::make_key(Table::Dedupe, 0, id); }

// What explains an eviction for room: when the record was last written, and how many writes of other records came
// since (a rewrite of another record counts each time; the record's own rewrite starts the count again).
TEST(RecentWrites, ARecordsLastWriteIsItsLatestWithTheWritesOfOtherRecordsSince) {
  lethe::RecentWrites recent;
  EXPECT_FALSE(recent.last_write(1).has_value());
  recent.written(1, 10);
  recent.written(2, 20);
  recent.written(2, 25);
  recent.written(3, 30);
  ASSERT_TRUE(recent.last_write(1).has_value());
  EXPECT_EQ(recent.last_write(1)->at, 10);
  EXPECT_EQ(recent.last_write(1)->writes_since, 3u);
  EXPECT_EQ(recent.last_write(2)->at, 25);
  EXPECT_EQ(recent.last_write(2)->writes_since, 1u);
  recent.written(1, 40);
  EXPECT_EQ(recent.last_write(1)->at, 40);
  EXPECT_EQ(recent.last_write(1)->writes_since, 0u);
  recent.removed(1);
  EXPECT_FALSE(recent.last_write(1).has_value());
}

TEST(RecentWrites, TheLeastRecentIsTheOneWrittenLongestAgoAndARewriteMakesAKeyRecent) {
  lethe::RecentWrites recent;
  EXPECT_FALSE(recent.least_recent().has_value());
  recent.written(1, 10);
  recent.written(2, 20);
  recent.written(3, 30);
  EXPECT_EQ(recent.least_recent(), 1u);
  recent.written(1, 40);
  EXPECT_EQ(recent.least_recent(), 2u);
  recent.removed(2);
  EXPECT_EQ(recent.least_recent(), 3u);
  EXPECT_EQ(recent.size(), 2u);
  recent.removed(42);  // not held: nothing changes
  EXPECT_EQ(recent.size(), 2u);
}

struct World {
  sim::Simulation simulation{{.seed = 1, .policy = sim::SchedulePolicy::Fifo}};
  sim::Network network{simulation, simulation.rng("network")};
  sim::Node& store_node = simulation.add_node("store", "store");
  lethe::Store store;
  std::vector<Key> evicted;
  std::vector<lethe::EvictionRecord> evictions;

  explicit World(std::uint64_t capacity) : store(simulation, network, store_node, settings(capacity)) {
    store.set_on_capacity_evicted([this](const lethe::EvictionRecord& e) {
      evicted.push_back(e.key);
      evictions.push_back(e);
    });
  }
  static lethe::StoreSettings settings(std::uint64_t capacity) {
    lethe::StoreSettings settings;
    settings.latency = sim::Distribution::constant(100 * kMicrosecond);
    settings.capacity = capacity;
    return settings;
  }
  // Runs `ops` one after another from one client node, 1 ms apart.
  void run(const std::vector<lethe::Op>& ops) {
    sim::Node& node = simulation.add_node("client", "clients");
    auto client = std::make_shared<lethe::SimStoreClient>(store, node);
    node.set_main([client, ops] {
      for (const lethe::Op& op : ops) {
        EXPECT_TRUE(client->execute(op).has_value());
        sim::sleep(kMillisecond);
      }
    });
    node.start();
    simulation.run();
  }
};

lethe::Op put(Key key, std::int64_t counter = 0) {
  lethe::Item item;
  item.counter = counter;
  return lethe::put_op(key, item);
}

TEST(StoreCapacity, AWritePastTheCapacityEvictsTheLeastRecentlyWrittenRecordAndAReadIsNoUse) {
  World world(2);
  world.run({put(dedupe(1)), put(dedupe(2)), lethe::get_op(dedupe(1)), put(dedupe(3))});
  EXPECT_EQ(world.evicted, std::vector<Key>{dedupe(1)}) << "record 1 was read after 2 was written: still the LRU";
  EXPECT_FALSE(world.store.peek(dedupe(1)).has_value());
  EXPECT_TRUE(world.store.peek(dedupe(2)).has_value());
  EXPECT_TRUE(world.store.peek(dedupe(3)).has_value());
  EXPECT_EQ(world.store.capacity_evictions(), 1u);
  EXPECT_EQ(world.store.evictions(), 0u) << "TTL's count stays apart";
  const auto history = world.store.history();
  const auto deletes = std::count_if(history.begin(), history.end(), [](const lethe::StoreOperation& op) {
    return op.client == lethe::Store::kCapacityClient && op.input.kind == lethe::OpKind::Delete && op.output.applied;
  });
  EXPECT_EQ(deletes, 1);
  EXPECT_EQ(lethe::check_store_history(world.store).verdict, lethe::lin::Verdict::Linearizable);
}

TEST(StoreCapacity, ARewriteMakesARecordRecentAndOtherTablesAreNotBounded) {
  World world(2);
  world.run({put(dedupe(1)), put(dedupe(2)), put(dedupe(1), 1), put(lethe::make_key(Table::Domain, 0, 9)),
             put(dedupe(3))});
  EXPECT_EQ(world.evicted, std::vector<Key>{dedupe(2)});
  EXPECT_TRUE(world.store.peek(lethe::make_key(Table::Domain, 0, 9)).has_value());
  // Record 2 was written second, then record 1 again and record 3: two writes of other dedupe records (the domain
  // row is not ordered); evicted by the write of 3, three operations (each 1 ms apart plus its round trip) later.
  ASSERT_EQ(world.evictions.size(), 1u);
  const lethe::EvictionRecord& e = world.evictions.front();
  ASSERT_TRUE(e.written_at.has_value());
  EXPECT_GT(e.at - *e.written_at, 3 * kMillisecond);
  EXPECT_EQ(e.writes_since, 2u);
}

TEST(StoreCapacity, AVetoedRecordStaysAndStopsCountingSoTheOthersGoWhenTheyWouldWithoutIt) {
  World world(2);
  world.store.set_never_evict_for_room([](Key key) { return key == dedupe(1); });
  world.run({put(dedupe(1)), put(dedupe(2)), put(dedupe(3)), put(dedupe(4))});
  EXPECT_EQ(world.evicted, std::vector<Key>{dedupe(2)}) << "without the veto: 1 then 2";
  EXPECT_TRUE(world.store.peek(dedupe(1)).has_value());
}

}  // namespace store_capacity_test
