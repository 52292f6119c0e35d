// Tests of world/queue.hpp, world/kafka.hpp and world/clients.hpp: the SQS-like queue, the Kafka-like topic with
// consumer groups, and the request/response clients. Each test is a small simulation with a 1 ms constant one-way
// latency.
#include "world/clients.hpp"
#include "world/kafka.hpp"
#include "world/queue.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "check/ledger.hpp"
#include "sim/channel.hpp"
#include "sim/network.hpp"
#include "sim/node.hpp"
#include "sim/simulation.hpp"

namespace sources_test {

using lethe::ClientsSettings;
using lethe::ClientsSource;
using lethe::ConsumerGroup;
using lethe::Delivery;
using lethe::Kafka;
using lethe::KafkaRecord;
using lethe::KafkaSettings;
using lethe::Ledger;
using lethe::MessageId;
using lethe::Queue;
using lethe::QueueSettings;
using lethe::Request;
using sim::kMillisecond;
using sim::kSecond;

// One simulation with a network, a broker node and `workers` worker nodes (group "consumers").
struct World {
  explicit World(int workers, std::uint64_t seed = 1)
      : simulation({.seed = seed}), network(simulation, simulation.rng("network")) {
    network.set_default_link(sim::LinkConfig{sim::Distribution::constant(kMillisecond), 0.0, 0.0, 0.0});
    broker = &simulation.add_node("broker", "broker");
    for (int i = 0; i < workers; ++i) {
      worker.push_back(&simulation.add_node("worker-" + std::to_string(i), "consumers"));
    }
  }
  // Runs `body` as the main fiber of worker `index`.
  void on_worker(int index, std::function<void()> body) {
    worker[static_cast<std::size_t>(index)]->set_main(std::move(body));
    worker[static_cast<std::size_t>(index)]->start();
  }
  sim::GroupId group(const char* name) { return simulation.group_id(name); }

  sim::Simulation simulation;
  sim::Network network;
  sim::Node* broker = nullptr;
  std::vector<sim::Node*> worker;
  Ledger ledger;
};

// ======================================================================== Queue

QueueSettings queue_settings(sim::Duration visibility_timeout) {
  QueueSettings settings;
  settings.visibility_timeout = visibility_timeout;
  settings.rpc_timeout = kSecond;
  return settings;
}

TEST(QueueTest, CompetingConsumersEachGetDistinctMessagesAndTheQueueDrains) {
  World world(3);
  Queue queue(world.simulation, world.network, *world.broker, queue_settings(30 * kSecond), world.ledger);
  for (MessageId id = 1; id <= 30; ++id) queue.publish(id);
  std::vector<std::pair<int, MessageId>> received;  // (worker, id)
  for (int w = 0; w < 3; ++w) {
    world.on_worker(w, [&, w] {
      while (auto delivery = queue.receive(sim::now() + 2 * kSecond)) {
        received.emplace_back(w, delivery->id);
        EXPECT_EQ(delivery->receive_count, 1u);
        sim::sleep(10 * kMillisecond);  // processing
        EXPECT_TRUE(queue.acknowledge(*delivery));
      }
    });
  }
  world.simulation.run();

  ASSERT_EQ(received.size(), 30u);
  std::set<MessageId> ids;
  std::set<int> workers_that_got_some;
  for (const auto& [w, id] : received) {
    ids.insert(id);
    workers_that_got_some.insert(w);
  }
  EXPECT_EQ(ids.size(), 30u) << "some message went to two consumers";
  EXPECT_EQ(workers_that_got_some.size(), 3u) << "the consumers did not compete";
  EXPECT_TRUE(queue.drained());
  EXPECT_EQ(queue.in_flight(), 0u);
  EXPECT_EQ(queue.expiries(), 0u);
  EXPECT_EQ(world.ledger.deliveries, 30u);
}

// A message deleted before its visibility timeout leaves no timer behind: with 20 messages received and deleted
// within the first second, one timer is pending at 10 s (the earliest receive's, set before it was deleted), not
// one per receive.
TEST(QueueTest, AMessageDeletedBeforeItsVisibilityTimeoutLeavesNoTimerBehind) {
  World world(2);
  Queue queue(world.simulation, world.network, *world.broker, queue_settings(30 * kSecond), world.ledger);
  for (MessageId id = 1; id <= 20; ++id) queue.publish(id);
  for (int w = 0; w < 2; ++w) {
    world.on_worker(w, [&] {
      while (auto delivery = queue.receive(sim::now())) {
        sim::sleep(10 * kMillisecond);
        EXPECT_TRUE(queue.acknowledge(*delivery));
      }
    });
  }
  world.simulation.run_until(10 * kSecond);
  EXPECT_TRUE(queue.drained());
  EXPECT_LT(world.simulation.now(), 2 * kSecond);  // the last RPC's deadline (1 s after it), no later
  EXPECT_EQ(world.simulation.pending_timers(), 1u);
  world.simulation.run();
  EXPECT_EQ(world.simulation.now(), 30 * kSecond + kMillisecond);  // that timer, which finds its message deleted
  EXPECT_EQ(queue.expiries(), 0u);
}

// Of two messages in flight, the one deleted does not expire and the other expires at its own timeout.
TEST(QueueTest, OfTwoMessagesInFlightOnlyTheOneNotDeletedExpiresAtItsTimeout) {
  World world(1);
  Queue queue(world.simulation, world.network, *world.broker, queue_settings(30 * kSecond), world.ledger);
  queue.publish(1);
  queue.publish(2);
  world.on_worker(0, [&] {
    const auto first = queue.receive(sim::now());
    const auto second = queue.receive(sim::now());
    ASSERT_TRUE(first.has_value() && second.has_value());
    EXPECT_TRUE(queue.acknowledge(*first));
  });
  world.simulation.run();
  EXPECT_EQ(queue.expiries(), 1u);
  EXPECT_EQ(queue.visible(), 1u);
  EXPECT_EQ(world.simulation.now(), 30 * kSecond + 3 * kMillisecond);  // received at the broker at 3 ms
}

TEST(QueueTest, BlockedReceiveWakesPromptlyOnPublish) {
  World world(1);
  Queue queue(world.simulation, world.network, *world.broker, queue_settings(30 * kSecond), world.ledger);
  world.simulation.at(5 * kSecond, [&] { queue.publish(42); });
  std::optional<Delivery> got;
  sim::Time got_at = 0;
  world.on_worker(0, [&] {
    got = queue.receive(sim::now() + 60 * kSecond);
    got_at = sim::now();
  });
  world.simulation.run();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->id, 42u);
  // Woken at 5 s, one poll round trip (2 ms) later it has the message.
  EXPECT_EQ(got_at, 5 * kSecond + 2 * kMillisecond);
}

TEST(QueueTest, UnacknowledgedMessageIsRedeliveredToAnotherConsumerAfterTheVisibilityTimeout) {
  World world(2);
  Queue queue(world.simulation, world.network, *world.broker, queue_settings(5 * kSecond), world.ledger);
  queue.publish(7);
  std::optional<Delivery> first;
  std::optional<Delivery> second;
  sim::Time second_at = 0;
  bool stale_ack = true;
  bool late_ack = false;
  world.on_worker(0, [&] {
    first = queue.receive(sim::now() + kSecond);  // takes it and does not acknowledge in time
    sim::sleep_until(5500 * kMillisecond);
    stale_ack = queue.acknowledge(*first);        // worker 1 holds it now: the receipt is stale
    sim::sleep_until(20 * kSecond);
    late_ack = queue.acknowledge(*first);         // deleted by worker 1 meanwhile: deleting again succeeds
  });
  world.on_worker(1, [&] {
    sim::sleep(100 * kMillisecond);  // worker 0 gets there first
    second = queue.receive(sim::now() + 30 * kSecond);
    second_at = sim::now();
    sim::sleep(kSecond);  // processing
    if (second) {
      EXPECT_TRUE(queue.acknowledge(*second));
    }
  });
  world.simulation.run();

  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(first->id, 7u);
  EXPECT_EQ(second->id, 7u);
  EXPECT_EQ(second->message, first->message);
  EXPECT_EQ(second->receive_count, 2u);
  EXPECT_NE(second->receipt, first->receipt);
  EXPECT_GE(second_at, first->invisible_until) << "redelivered before the visibility timeout";
  EXPECT_LE(second_at, first->invisible_until + 2 * kMillisecond) << "the waiting consumer was not woken";
  EXPECT_FALSE(stale_ack) << "a stale receipt deleted the message";
  EXPECT_TRUE(late_ack);
  EXPECT_EQ(queue.expiries(), 1u);
  EXPECT_TRUE(queue.drained());
  EXPECT_EQ(world.ledger.deliveries, 2u);
}

TEST(QueueTest, ReceiveWhoseResponseIsLostLeavesTheMessageInvisibleUntilItsTimeout) {
  World world(1);
  Queue queue(world.simulation, world.network, *world.broker, queue_settings(5 * kSecond), world.ledger);
  queue.publish(9);
  // The poll reaches the broker at 1 ms; its response would arrive at 2 ms: cut the link in between.
  world.network.add_partition(world.group("consumers"), world.group("broker"), 1500 * sim::kMicrosecond,
                              3 * kMillisecond);
  std::optional<Delivery> got;
  sim::Time got_at = 0;
  world.on_worker(0, [&] {
    got = queue.receive(sim::now() + 60 * kSecond);
    got_at = sim::now();
    if (got) {
      EXPECT_TRUE(queue.acknowledge(*got));
    }
  });
  world.simulation.run();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->receive_count, 2u);
  EXPECT_GE(got_at, kMillisecond + 5 * kSecond);
  EXPECT_EQ(queue.receives(), 2u);
  EXPECT_EQ(world.ledger.deliveries, 1u) << "the lost response is not a delivery";
  EXPECT_TRUE(queue.drained());
}

TEST(QueueTest, LostDeleteAcknowledgementReportsFailureButTheMessageIsDeleted) {
  World world(1);
  Queue queue(world.simulation, world.network, *world.broker, queue_settings(5 * kSecond), world.ledger);
  queue.publish(3);
  bool acked = true;
  world.on_worker(0, [&] {
    auto got = queue.receive(sim::now() + kSecond);  // back at 2 ms
    ASSERT_TRUE(got.has_value());
    // The delete reaches the broker at 3 ms; cut its response.
    world.network.add_partition(world.group("consumers"), world.group("broker"), 3500 * sim::kMicrosecond,
                                5 * kMillisecond);
    acked = queue.acknowledge(*got);
  });
  world.simulation.run();
  EXPECT_FALSE(acked);
  EXPECT_TRUE(queue.drained());
  EXPECT_EQ(queue.expiries(), 0u);
}

// A lossy run: every message is eventually processed and deleted; the same seed gives the same trace.
struct LossyQueueRun {
  std::set<MessageId> processed;
  std::uint64_t deliveries = 0;
  std::uint64_t trace_hash = 0;
  bool drained = false;
};

LossyQueueRun run_lossy_queue(std::uint64_t seed) {
  World world(3, seed);
  std::string error;
  world.network.set_default_link(
      sim::LinkConfig{sim::Distribution::parse("uniform(500us, 3ms)", {}, error).value(), 0.1, 0.2, 0.05});
  Queue queue(world.simulation, world.network, *world.broker, queue_settings(2 * kSecond), world.ledger);
  for (MessageId id = 1; id <= 40; ++id) {
    world.simulation.at(static_cast<sim::Time>(id) * 20 * kMillisecond, [&queue, id] { queue.publish(id); });
  }
  LossyQueueRun run;
  for (int w = 0; w < 3; ++w) {
    world.on_worker(w, [&] {
      while (sim::now() < 120 * kSecond && (queue.published() < 40 || !queue.drained())) {
        auto delivery = queue.receive(sim::now() + kSecond);
        if (!delivery) continue;
        run.processed.insert(delivery->id);
        sim::sleep(5 * kMillisecond);
        queue.acknowledge(*delivery);
      }
    });
  }
  world.simulation.run();
  run.deliveries = world.ledger.deliveries;
  run.trace_hash = world.simulation.trace().hash();
  run.drained = queue.drained();
  return run;
}

TEST(QueueTest, UnderLossDuplicationAndLostAcksEveryMessageIsProcessedAndRunsAreDeterministic) {
  const LossyQueueRun run = run_lossy_queue(7);
  EXPECT_TRUE(run.drained);
  EXPECT_EQ(run.processed.size(), 40u);
  EXPECT_GT(run.deliveries, 40u) << "with 20% lost ACKs some message should have been redelivered";
  const LossyQueueRun again = run_lossy_queue(7);
  EXPECT_EQ(again.trace_hash, run.trace_hash);
  EXPECT_EQ(again.deliveries, run.deliveries);
  EXPECT_NE(run_lossy_queue(8).trace_hash, run.trace_hash);
}

// ======================================================================== Kafka

KafkaSettings kafka_settings(int partitions, lethe::CommitMode mode = lethe::CommitMode::AfterEach,
                             sim::Duration interval = 0) {
  KafkaSettings settings;
  settings.partitions = partitions;
  settings.partitioner = lethe::Partitioner::ByKey;
  settings.commit = lethe::Commit{mode, interval};
  settings.processors = 1;
  settings.rpc_timeout = kSecond;
  // The workers of these tests stop polling when their work is done: a run to the end would otherwise see each
  // leave its group max_poll_interval later. "Never" (a timer due at kTimeMax never fires); tests of that
  // timeout set their own.
  settings.max_poll_interval = sim::kTimeMax;
  return settings;
}

TEST(KafkaTest, KeyedPartitionerIsStableAndSpreadsIds) {
  World world(0);
  Kafka kafka(world.simulation, world.network, *world.broker, kafka_settings(8), world.ledger,
              world.simulation.rng("kafka"));
  std::vector<int> per_partition(8, 0);
  for (MessageId id = 1; id <= 800; ++id) {
    const int partition = Kafka::partition_for_key(id, 8);
    ASSERT_GE(partition, 0);
    ASSERT_LT(partition, 8);
    EXPECT_EQ(partition, Kafka::partition_for_key(id, 8));
    ++per_partition[static_cast<std::size_t>(partition)];
  }
  for (int count : per_partition) EXPECT_GT(count, 60) << "the keyed partitioner is badly skewed";
  // The same id always lands in the same partition, one record per append.
  const lethe::KafkaAppend first = kafka.publish(12345);
  const lethe::KafkaAppend again = kafka.publish(12345);
  EXPECT_EQ(first.partition, Kafka::partition_for_key(12345, 8));
  EXPECT_EQ(again.partition, first.partition);
  EXPECT_EQ(again.offset, first.offset + 1);
  EXPECT_EQ(kafka.records(), 2u);
  // Pinned values (splitmix64 of the id, modulo): a change of the hash would reshuffle every scenario.
  EXPECT_EQ((std::vector<int>{Kafka::partition_for_key(0, 16), Kafka::partition_for_key(1, 16),
                              Kafka::partition_for_key(2, 16), Kafka::partition_for_key(1000, 16)}),
            (std::vector<int>{15, 1, 14, 8}));
}

TEST(KafkaTest, RandomPartitionerDrawsFromItsStream) {
  auto placements = [](std::uint64_t seed) {
    World world(0, seed);
    KafkaSettings settings = kafka_settings(8);
    settings.partitioner = lethe::Partitioner::Random;
    Kafka kafka(world.simulation, world.network, *world.broker, settings, world.ledger,
                world.simulation.rng("kafka"));
    std::vector<int> partitions;
    for (int i = 0; i < 50; ++i) partitions.push_back(kafka.publish(5).partition);
    return partitions;
  };
  EXPECT_EQ(placements(1), placements(1));
  const std::vector<int> spread = placements(1);
  EXPECT_GT(std::set<int>(spread.begin(), spread.end()).size(), 1u) << "one id should spread under random";
  EXPECT_NE(placements(1), placements(2));
}

TEST(KafkaTest, RangeAssignmentSpreadsPartitionsOverLiveMembersSortedByIndex) {
  World world(0);
  Kafka kafka(world.simulation, world.network, *world.broker, kafka_settings(5), world.ledger,
              world.simulation.rng("kafka"));
  ConsumerGroup& group = kafka.group(0);
  group.join(4);
  group.join(1);
  EXPECT_EQ(group.generation(), 2u);
  EXPECT_EQ(group.assignment(1), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(group.assignment(4), (std::vector<int>{3, 4}));
  group.leave(1);
  EXPECT_EQ(group.generation(), 3u);
  EXPECT_EQ(group.assignment(4), (std::vector<int>{0, 1, 2, 3, 4}));
  group.leave(1);  // not a member: nothing happens
  EXPECT_EQ(group.generation(), 3u);
  group.rebalance();
  EXPECT_EQ(group.generation(), 4u);
  EXPECT_EQ(group.owner(2), 4);
}

TEST(KafkaTest, PerPartitionProcessingIsSequentialEvenWithSeveralFibersPerMember) {
  World world(1);
  Kafka kafka(world.simulation, world.network, *world.broker, kafka_settings(2), world.ledger,
              world.simulation.rng("kafka"));
  ConsumerGroup& group = kafka.group(0);
  group.join(0);
  for (MessageId id = 1; id <= 40; ++id) kafka.publish(id);
  struct Span {
    std::int64_t offset;
    sim::Time start, end;
  };
  std::map<int, std::vector<Span>> spans;  // by partition
  int out_at_once = 0;
  int max_out_at_once = 0;
  sim::Rng processing = world.simulation.rng("processing");
  auto consumer = [&] {
    while (auto record = group.poll(0, sim::now() + 2 * kSecond)) {
      ++out_at_once;
      max_out_at_once = std::max(max_out_at_once, out_at_once);
      const sim::Time start = sim::now();
      sim::sleep(static_cast<sim::Duration>(processing.below(20)) * kMillisecond);
      spans[record->partition].push_back(Span{record->offset, start, sim::now()});
      --out_at_once;
      EXPECT_TRUE(group.commit(0, *record));
    }
  };
  world.on_worker(0, consumer);
  for (int extra = 0; extra < 3; ++extra) world.worker[0]->spawn(consumer);
  world.simulation.run();

  ASSERT_EQ(spans.size(), 2u);
  std::size_t total = 0;
  for (const auto& [partition, list] : spans) {
    total += list.size();
    ASSERT_EQ(static_cast<std::int64_t>(list.size()), kafka.end_offset(partition));
    for (std::size_t k = 0; k < list.size(); ++k) {
      EXPECT_EQ(list[k].offset, static_cast<std::int64_t>(k)) << "partition " << partition << " out of order";
      if (k > 0) {
        EXPECT_GE(list[k].start, list[k - 1].end) << "record " << k << " started before " << k - 1;
      }
    }
  }
  EXPECT_EQ(total, 40u);
  EXPECT_EQ(max_out_at_once, 2) << "the two partitions should be processed in parallel, one record each";
  EXPECT_TRUE(kafka.drained());
  EXPECT_EQ(group.replays(), 0u);
  EXPECT_EQ(world.ledger.deliveries, 40u);
}

TEST(KafkaTest, CrashOfAMemberThatProcessedButDidNotCommitReplaysToTheNewOwner) {
  World world(2);
  Kafka kafka(world.simulation, world.network, *world.broker, kafka_settings(1), world.ledger,
              world.simulation.rng("kafka"));
  ConsumerGroup& group = kafka.group(0);
  group.join(0);  // owns the only partition
  group.join(1);
  for (MessageId id = 100; id < 110; ++id) kafka.publish(id);
  std::vector<std::pair<int, KafkaRecord>> processed;  // (member, record)
  world.on_worker(0, [&] {
    for (int k = 0; k < 4; ++k) {
      auto record = group.poll(0, sim::now() + kSecond);
      ASSERT_TRUE(record.has_value());
      sim::sleep(10 * kMillisecond);
      processed.emplace_back(0, *record);
      if (k == 3) {  // processed record 3, dies before committing it
        sim::this_node().crash();
        sim::Simulation::current().checkpoint();
      }
      EXPECT_TRUE(group.commit(0, *record));
    }
  });
  // The world notices the crash after a session timeout.
  world.simulation.at(2 * kSecond, [&] { group.leave(0); });
  world.on_worker(1, [&] {
    while (auto record = group.poll(1, sim::now() + 5 * kSecond)) {
      sim::sleep(10 * kMillisecond);
      processed.emplace_back(1, *record);
      EXPECT_TRUE(group.commit(1, *record));
    }
  });
  world.simulation.run();

  ASSERT_EQ(processed.size(), 11u);
  std::vector<KafkaRecord> by_member_1;
  for (const auto& [member, record] : processed) {
    if (member == 1) by_member_1.push_back(record);
  }
  ASSERT_EQ(by_member_1.size(), 7u);
  EXPECT_EQ(by_member_1.front().offset, 3) << "the new owner must start at the last committed offset";
  EXPECT_EQ(by_member_1.front().id, 103u);
  EXPECT_EQ(by_member_1.front().generation, 3u);
  EXPECT_EQ(by_member_1.back().offset, 9);
  EXPECT_EQ(group.replays(), 1u);
  EXPECT_TRUE(kafka.drained());
  EXPECT_EQ(world.ledger.deliveries, 11u);
}

TEST(KafkaTest, ScheduledRebalanceReplaysTheUncommittedRecordAndRejectsItsCommit) {
  World world(1);
  Kafka kafka(world.simulation, world.network, *world.broker, kafka_settings(1), world.ledger,
              world.simulation.rng("kafka"));
  ConsumerGroup& group = kafka.group(0);
  group.join(0);
  kafka.publish(1);
  kafka.publish(2);
  world.simulation.at(50 * kMillisecond, [&] { group.rebalance(); });
  std::vector<KafkaRecord> records;
  std::vector<bool> commits;
  world.on_worker(0, [&] {
    while (auto record = group.poll(0, sim::now() + kSecond)) {
      sim::sleep(100 * kMillisecond);
      records.push_back(*record);
      commits.push_back(group.commit(0, *record));
    }
  });
  world.simulation.run();

  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].offset, 0);
  EXPECT_EQ(records[0].generation, 1u);
  EXPECT_FALSE(commits[0]) << "a commit from an older generation must be rejected";
  EXPECT_EQ(records[1].offset, 0) << "the uncommitted record is replayed after the rebalance";
  EXPECT_EQ(records[1].generation, 2u);
  EXPECT_TRUE(commits[1]);
  EXPECT_EQ(records[2].offset, 1);
  EXPECT_TRUE(commits[2]);
  EXPECT_EQ(group.replays(), 1u);
  EXPECT_EQ(group.rejected_commits(), 1u);
  EXPECT_TRUE(kafka.drained());
}

TEST(KafkaTest, CommitFromAMemberThatLostItsPartitionIsRejectedAndTheNewOwnerReplays) {
  World world(2);
  Kafka kafka(world.simulation, world.network, *world.broker, kafka_settings(2), world.ledger,
              world.simulation.rng("kafka"));
  ConsumerGroup& group = kafka.group(0);
  group.join(0);  // owns partitions 0 and 1
  // An id that lands in partition 1.
  MessageId id = 1;
  while (Kafka::partition_for_key(id, 2) != 1) ++id;
  kafka.publish(id);
  std::optional<KafkaRecord> old_owner_record;
  bool old_owner_commit = true;
  world.on_worker(0, [&] {
    old_owner_record = group.poll(0, sim::now() + kSecond);
    sim::sleep(200 * kMillisecond);  // member 1 joins meanwhile and takes partition 1
    old_owner_commit = group.commit(0, *old_owner_record);
  });
  world.simulation.at(100 * kMillisecond, [&] { group.join(1); });
  std::optional<KafkaRecord> new_owner_record;
  bool new_owner_commit = false;
  world.on_worker(1, [&] {
    sim::sleep(100 * kMillisecond);
    new_owner_record = group.poll(1, sim::now() + kSecond);
    if (new_owner_record) new_owner_commit = group.commit(1, *new_owner_record);
  });
  world.simulation.run();

  ASSERT_TRUE(old_owner_record.has_value());
  ASSERT_TRUE(new_owner_record.has_value());
  EXPECT_EQ(old_owner_record->partition, 1);
  EXPECT_EQ(group.owner(1), 1);
  EXPECT_FALSE(old_owner_commit);
  EXPECT_EQ(new_owner_record->partition, 1);
  EXPECT_EQ(new_owner_record->offset, 0);
  EXPECT_EQ(new_owner_record->id, old_owner_record->id);
  EXPECT_TRUE(new_owner_commit);
  EXPECT_EQ(group.rejected_commits(), 1u);
  EXPECT_EQ(group.committed(1), 1);
  EXPECT_TRUE(kafka.drained());
}

TEST(KafkaTest, MemberOutOfPollPastMaxPollIntervalIsRemovedItsRecordReplayedItsCommitFailsAndItRejoins) {
  World world(2);
  KafkaSettings settings = kafka_settings(1);
  settings.max_poll_interval = kSecond;
  Kafka kafka(world.simulation, world.network, *world.broker, settings, world.ledger, world.simulation.rng("kafka"));
  ConsumerGroup& group = kafka.group(0);
  group.join(0);  // member 0 owns the only partition; member 1 gets none
  group.join(1);
  kafka.publish(7);
  std::optional<KafkaRecord> slow;
  bool slow_commit = true;
  sim::Time handed_out = 0;
  world.on_worker(0, [&] {
    slow = group.poll(0, sim::now() + kSecond);
    handed_out = sim::now();
    sim::sleep(3 * kSecond);  // slow work: out of poll for 3 s
    slow_commit = group.commit(0, *slow);
    group.poll(0, sim::now() + 100 * kMillisecond);  // its next poll joins the group again
  });
  std::vector<KafkaRecord> replayed;
  world.on_worker(1, [&] {
    while (sim::now() < 5 * kSecond) {
      if (auto record = group.poll(1, sim::now() + 100 * kMillisecond)) {
        replayed.push_back(*record);
        group.commit(1, *record);
      }
    }
  });
  world.simulation.run();

  ASSERT_TRUE(slow.has_value());
  ASSERT_EQ(world.ledger.member_removals.size(), 2u) << "the removal and the rejoin";
  const lethe::MemberRemoval& removal = world.ledger.member_removals[0];
  EXPECT_EQ(removal.reason, lethe::RemovalReason::MaxPollInterval);
  EXPECT_FALSE(removal.rejoin);
  EXPECT_EQ(removal.at, handed_out + kSecond);
  EXPECT_EQ(removal.since, handed_out);
  EXPECT_EQ(removal.node, world.worker[0]->id());
  EXPECT_EQ(removal.held, std::vector<MessageId>{7});
  EXPECT_TRUE(world.ledger.member_removals[1].rejoin);
  ASSERT_EQ(replayed.size(), 1u) << "the new owner replays the record from the committed offset";
  EXPECT_EQ(replayed[0].id, 7u);
  EXPECT_FALSE(slow_commit) << "the removed member's commit is refused";
  EXPECT_EQ(world.ledger.commit_failed, 1u);
  EXPECT_TRUE(group.is_member(0)) << "the removed member rejoins at its next poll";
  EXPECT_TRUE(kafka.drained());
}

TEST(KafkaTest, MemberPollingAgainWithinMaxPollIntervalIsNeverRemoved) {
  World world(1);
  KafkaSettings settings = kafka_settings(1);
  settings.max_poll_interval = kSecond;
  Kafka kafka(world.simulation, world.network, *world.broker, settings, world.ledger, world.simulation.rng("kafka"));
  ConsumerGroup& group = kafka.group(0);
  group.join(0);
  for (MessageId id = 1; id <= 10; ++id) kafka.publish(id);
  int committed = 0;
  world.on_worker(0, [&] {
    while (auto record = group.poll(0, sim::now() + kSecond)) {
      sim::sleep(900 * kMillisecond);  // slow, but each under max_poll_interval: 9 s in all
      if (group.commit(0, *record)) ++committed;
    }
  });
  world.simulation.run();
  EXPECT_EQ(committed, 10);
  EXPECT_TRUE(world.ledger.member_removals.empty());
  EXPECT_EQ(world.ledger.commit_failed, 0u);
}

TEST(KafkaTest, ReleasedRecordIsHandedOutAgainByTheSameMember) {
  World world(1);
  Kafka kafka(world.simulation, world.network, *world.broker, kafka_settings(1), world.ledger,
              world.simulation.rng("kafka"));
  ConsumerGroup& group = kafka.group(0);
  group.join(0);
  kafka.publish(11);
  kafka.publish(12);
  std::vector<std::int64_t> offsets;
  world.on_worker(0, [&] {
    auto record = group.poll(0, sim::now() + kSecond);
    ASSERT_TRUE(record.has_value());
    offsets.push_back(record->offset);
    group.release(0, *record);  // processing failed: try again
    while (auto next = group.poll(0, sim::now() + kSecond)) {
      offsets.push_back(next->offset);
      EXPECT_TRUE(group.commit(0, *next));
    }
  });
  world.simulation.run();
  EXPECT_EQ(offsets, (std::vector<std::int64_t>{0, 0, 1}));
  EXPECT_TRUE(kafka.drained());
}

TEST(KafkaTest, CommitIntervalReplaysAtMostAnIntervalOfRecordsOnACrash) {
  World world(2);
  const sim::Duration interval = kSecond;
  const sim::Duration processing = 100 * kMillisecond;
  Kafka kafka(world.simulation, world.network, *world.broker,
              kafka_settings(1, lethe::CommitMode::Interval, interval), world.ledger, world.simulation.rng("kafka"));
  ConsumerGroup& group = kafka.group(0);
  group.join(0);
  group.join(1);  // owns nothing until member 0 leaves
  for (MessageId id = 1; id <= 60; ++id) kafka.publish(id);
  std::int64_t finished_by_0 = 0;
  std::vector<KafkaRecord> by_member_1;
  std::int64_t committed_at_crash = -1;
  world.on_worker(0, [&] {
    while (auto record = group.poll(0, sim::now() + kSecond)) {
      sim::sleep(processing);
      EXPECT_TRUE(group.commit(0, *record));
      ++finished_by_0;
    }
  });
  world.simulation.at(2550 * kMillisecond, [&] {
    committed_at_crash = group.committed(0);
    world.worker[0]->crash();
  });
  world.simulation.at(3 * kSecond, [&] { group.leave(0); });
  world.on_worker(1, [&] {
    while (auto record = group.poll(1, sim::now() + 10 * kSecond)) {
      sim::sleep(processing);
      EXPECT_TRUE(group.commit(1, *record));
      by_member_1.push_back(*record);
    }
  });
  world.simulation.run();

  ASSERT_FALSE(by_member_1.empty());
  EXPECT_GT(committed_at_crash, 0) << "the periodic commit never ran";
  EXPECT_EQ(by_member_1.front().offset, committed_at_crash);
  const std::int64_t replayed = finished_by_0 - committed_at_crash;
  EXPECT_GE(replayed, 1);
  EXPECT_LE(replayed, interval / processing + 1) << "more than one interval's worth was replayed";
  EXPECT_EQ(static_cast<std::int64_t>(group.replays()), replayed + 1) << "replayed records + the one in progress";
  EXPECT_EQ(by_member_1.back().offset, 59);
  EXPECT_TRUE(kafka.drained()) << "the periodic commit of the last records never ran";
}

struct LossyKafkaRun {
  std::set<MessageId> processed;
  std::uint64_t deliveries = 0;
  std::uint64_t replays = 0;
  std::uint64_t trace_hash = 0;
  bool drained = false;
};

// Three members, lossy links, a rebalance every 400 ms for 4 s, a member leaving and coming back.
LossyKafkaRun run_lossy_kafka(std::uint64_t seed, lethe::CommitMode mode) {
  World world(3, seed);
  std::string error;
  world.network.set_default_link(
      sim::LinkConfig{sim::Distribution::parse("uniform(500us, 3ms)", {}, error).value(), 0.1, 0.2, 0.05});
  Kafka kafka(world.simulation, world.network, *world.broker, kafka_settings(4, mode, 300 * kMillisecond),
              world.ledger, world.simulation.rng("kafka"));
  ConsumerGroup& group = kafka.group(0);
  for (int m = 0; m < 3; ++m) group.join(m);
  for (MessageId id = 1; id <= 80; ++id) {
    world.simulation.at(static_cast<sim::Time>(id) * 25 * kMillisecond, [&kafka, id] { kafka.publish(id); });
  }
  for (int k = 1; k <= 10; ++k) world.simulation.at(k * 400 * kMillisecond, [&group] { group.rebalance(); });
  world.simulation.at(1100 * kMillisecond, [&group] { group.leave(2); });
  world.simulation.at(2300 * kMillisecond, [&group] { group.join(2); });
  LossyKafkaRun run;
  for (int m = 0; m < 3; ++m) {
    world.on_worker(m, [&, m] {
      while (sim::now() < 120 * kSecond && (kafka.records() < 80 || !kafka.drained())) {
        auto record = group.poll(m, sim::now() + kSecond);
        if (!record) continue;
        run.processed.insert(record->id);
        EXPECT_EQ(kafka.log(record->partition)[static_cast<std::size_t>(record->offset)], record->id);
        sim::sleep(10 * kMillisecond);
        group.commit(m, *record);
      }
    });
  }
  world.simulation.run();
  run.deliveries = world.ledger.deliveries;
  run.replays = group.replays();
  run.trace_hash = world.simulation.trace().hash();
  run.drained = kafka.drained();
  return run;
}

TEST(KafkaTest, UnderLossRebalancesAndLostCommitsEveryRecordIsProcessedAndRunsAreDeterministic) {
  for (lethe::CommitMode mode : {lethe::CommitMode::AfterEach, lethe::CommitMode::Interval}) {
    SCOPED_TRACE(mode == lethe::CommitMode::AfterEach ? "after-each" : "interval");
    const LossyKafkaRun run = run_lossy_kafka(3, mode);
    EXPECT_TRUE(run.drained);
    EXPECT_EQ(run.processed.size(), 80u);
    EXPECT_GT(run.replays, 0u) << "rebalances should have replayed something";
    EXPECT_EQ(run.deliveries, 80u + run.replays);
    const LossyKafkaRun again = run_lossy_kafka(3, mode);
    EXPECT_EQ(again.trace_hash, run.trace_hash);
    EXPECT_EQ(again.deliveries, run.deliveries);
  }
}

// ======================================================================== ClientsSource

ClientsSettings client_settings(int clients, int retries, lethe::Backoff backoff, lethe::Jitter jitter) {
  ClientsSettings settings;
  settings.clients = clients;
  settings.rate_per_second = 10.0;
  settings.timeout = 100 * kMillisecond;
  settings.retries = retries;
  settings.backoff = backoff;
  settings.jitter = jitter;
  settings.worker_choice = lethe::WorkerChoice::ById;
  return settings;
}

lethe::Backoff constant_backoff(sim::Duration delay) {
  return lethe::Backoff{lethe::BackoffKind::Constant, delay, 0, 0};
}
lethe::Backoff exponential_backoff(sim::Duration base, sim::Duration cap) {
  return lethe::Backoff{lethe::BackoffKind::Exponential, 0, base, cap};
}

TEST(ClientsTest, LostResponseMakesTheClientRetryTheSameIdAndTheWorkerSeesItTwice) {
  World world(1);
  ClientsSource clients(world.simulation, world.network, world.worker,
                        client_settings(1, 3, constant_backoff(10 * kMillisecond), lethe::Jitter::None), 7, 1,
                        world.ledger, world.simulation.rng("clients"));
  std::vector<Request> seen;
  world.on_worker(0, [&] {
    while (auto request = clients.next_request(0, sim::now() + 5 * kSecond)) {
      seen.push_back(*request);
      if (seen.size() == 1) {
        // Lose this response: cut workers <-> clients while it is in flight.
        world.network.add_partition(world.group("consumers"), world.group("clients"), sim::now(),
                                    sim::now() + 5 * kMillisecond);
      }
      clients.respond(*request, 1000 + seen.size());
    }
  });
  clients.start();
  world.simulation.run();

  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].id, 7u);
  EXPECT_EQ(seen[1].id, 7u) << "a retry must reuse the message id";
  EXPECT_EQ(seen[0].try_number, 1u);
  EXPECT_EQ(seen[1].try_number, 2u);
  EXPECT_NE(seen[0].tag, seen[1].tag);
  EXPECT_EQ(seen[1].sent_at - seen[0].sent_at, 100 * kMillisecond + 10 * kMillisecond);
  const lethe::ClientStats& stats = clients.stats(0);
  EXPECT_EQ(stats.requests, 1u);
  EXPECT_EQ(stats.retries, 1u);
  EXPECT_EQ(stats.successes, 1u);
  EXPECT_EQ(stats.gave_up, 0u);
  ASSERT_EQ(clients.outcomes().size(), 1u);
  EXPECT_EQ(clients.outcomes()[0].value, std::optional<std::uint64_t>(1002));
  EXPECT_EQ(clients.outcomes()[0].tries, 2u);
  EXPECT_TRUE(clients.drained());
  EXPECT_EQ(world.ledger.deliveries, 2u);
}

// The first-retry delay of every client, measured at a worker that never answers.
std::vector<sim::Duration> first_retry_delays(lethe::Jitter jitter) {
  World world(1);
  const int count = 6;
  ClientsSource clients(world.simulation, world.network, world.worker,
                        client_settings(count, 2, exponential_backoff(400 * kMillisecond, 10 * kSecond), jitter),
                        1, count, world.ledger, world.simulation.rng("clients"));
  std::map<std::uint32_t, std::vector<sim::Time>> sent;  // by client
  world.on_worker(0, [&] {
    while (auto request = clients.next_request(0, sim::now() + 10 * kSecond)) {
      sent[request->client].push_back(request->sent_at);  // never answered
    }
  });
  clients.start();
  world.simulation.run();
  std::vector<sim::Duration> delays;
  for (const auto& [client, times] : sent) {
    EXPECT_EQ(times.size(), 3u);
    if (times.size() >= 2) delays.push_back(times[1] - times[0] - 100 * kMillisecond);
  }
  EXPECT_TRUE(clients.drained());
  return delays;
}

TEST(ClientsTest, FullJitterRetryDelaysDifferBetweenClientsButNoJitterDelaysAreEqual) {
  const std::vector<sim::Duration> jittered = first_retry_delays(lethe::Jitter::Full);
  ASSERT_EQ(jittered.size(), 6u);
  for (sim::Duration delay : jittered) {
    EXPECT_GE(delay, 0);
    EXPECT_LE(delay, 400 * kMillisecond);
  }
  EXPECT_EQ(std::set<sim::Duration>(jittered.begin(), jittered.end()).size(), 6u)
      << "full jitter gave two clients the same delay";

  const std::vector<sim::Duration> plain = first_retry_delays(lethe::Jitter::None);
  ASSERT_EQ(plain.size(), 6u);
  for (sim::Duration delay : plain) EXPECT_EQ(delay, 400 * kMillisecond);
}

TEST(ClientsTest, ClientGivesUpAfterItsRetriesAreExhausted) {
  World world(2);
  ClientsSource clients(world.simulation, world.network, world.worker,
                        client_settings(1, 2, exponential_backoff(50 * kMillisecond, kSecond), lethe::Jitter::None),
                        4, 2, world.ledger, world.simulation.rng("clients"));
  std::map<MessageId, int> seen;
  for (int w = 0; w < 2; ++w) {
    world.on_worker(w, [&, w] {
      while (auto request = clients.next_request(w, sim::now() + 5 * kSecond)) {
        EXPECT_EQ(request->worker, static_cast<std::uint32_t>(w));
        EXPECT_EQ(request->id % 2, static_cast<MessageId>(w)) << "ById routes id % workers";
        ++seen[request->id];
        if (request->id == 5) clients.respond(*request, 55);  // id 4 is never answered
      }
    });
  }
  clients.start();
  world.simulation.run();

  EXPECT_EQ(seen[4], 3) << "one try and two retries";
  EXPECT_EQ(seen[5], 1);
  const lethe::ClientStats& stats = clients.stats(0);
  EXPECT_EQ(stats.requests, 2u);
  EXPECT_EQ(stats.retries, 2u);
  EXPECT_EQ(stats.successes, 1u);
  EXPECT_EQ(stats.gave_up, 1u);
  const lethe::RequestOutcome& gave_up = clients.outcomes()[0];
  EXPECT_EQ(gave_up.id, 4u);
  EXPECT_TRUE(gave_up.finished);
  EXPECT_FALSE(gave_up.succeeded);
  EXPECT_EQ(gave_up.tries, 3u);
  // Three timeouts plus backoffs of 50 ms and 100 ms.
  EXPECT_EQ(gave_up.finished_at - gave_up.started_at, 3 * 100 * kMillisecond + 150 * kMillisecond);
  EXPECT_TRUE(clients.drained());
}

TEST(ClientsTest, RequestsQueuedAtACrashedWorkerAreLostWithIt) {
  World world(1);
  ClientsSettings settings = client_settings(1, 1, constant_backoff(0), lethe::Jitter::None);
  settings.rate_per_second = 1000.0;  // the request starts within a few milliseconds
  ClientsSource clients(world.simulation, world.network, world.worker, settings, 8, 1, world.ledger,
                        world.simulation.rng("clients"));
  std::vector<Request> seen;
  // The first incarnation never reads its mailbox; the second one does.
  world.on_worker(0, [&] {
    if (world.worker[0]->incarnation() == 0) {
      sim::sleep(60 * kSecond);
      return;
    }
    while (auto request = clients.next_request(0, sim::now() + 5 * kSecond)) {
      seen.push_back(*request);
      clients.respond(*request, 1);
    }
  });
  clients.start();
  world.simulation.at(kSecond, [&] { world.worker[0]->crash(); });
  world.simulation.at(kSecond + kMillisecond, [&] { world.worker[0]->restart(); });
  world.simulation.run();

  const lethe::RequestOutcome& outcome = clients.outcomes()[0];
  ASSERT_LT(outcome.started_at, 500 * kMillisecond);
  EXPECT_TRUE(seen.empty()) << "requests queued at the crashed incarnation reached the restarted one";
  EXPECT_FALSE(outcome.succeeded);
  EXPECT_EQ(outcome.tries, 2u);
  EXPECT_EQ(world.ledger.deliveries, 0u);
  EXPECT_TRUE(clients.drained());
}

}  // namespace sources_test
