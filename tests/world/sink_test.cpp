// Sink tests: the lost-ACK double charge and its idempotent fix, email ids,
// capacity and outage 503s, timeouts, determinism, and the retry storm.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "world/sink.hpp"
#include "sim/network.hpp"
#include "sim/node.hpp"
#include "sim/simulation.hpp"

namespace sink_test {

using lethe::AttemptId;
using lethe::Backoff;
using lethe::BackoffKind;
using lethe::Jitter;
using lethe::MessageId;
using lethe::SinkSection;
using sim::kMillisecond;
using sim::kSecond;

sim::LinkConfig link_with(sim::Distribution latency, double ack_loss = 0.0, double loss = 0.0) {
  sim::LinkConfig link;
  link.latency = std::move(latency);
  link.ack_loss = ack_loss;
  link.loss = loss;
  return link;
}

SinkSection section_of(const std::string& kind, bool idempotent, int retries, Backoff backoff = {},
                       Jitter jitter = Jitter::None) {
  SinkSection section;
  section.kind = kind;
  section.idempotent = idempotent;
  section.latency = sim::Distribution::constant(20 * kMillisecond);
  section.timeout = 100 * kMillisecond;
  section.retries = retries;
  section.backoff = backoff;
  section.jitter = jitter;
  return section;
}

sim::Distribution parse_distribution(const char* text) {
  std::string error;
  const std::optional<sim::Distribution> parsed = sim::Distribution::parse(text, {}, error);
  EXPECT_TRUE(parsed.has_value()) << error;
  return parsed.value_or(sim::Distribution{});
}

Backoff constant_backoff(sim::Duration delay) { return Backoff{BackoffKind::Constant, delay, 0, 0}; }
Backoff exponential_backoff(sim::Duration base, sim::Duration cap) {
  return Backoff{BackoffKind::Exponential, 0, base, cap};
}

// A provider on its own node and `workers` worker nodes, over one network.
struct World {
  sim::Simulation simulation;
  sim::Network network;
  sim::Node& sink_node;
  lethe::Sink sink;
  std::vector<sim::Node*> workers;

  World(std::uint64_t seed, const SinkSection& section, const sim::LinkConfig& link, int worker_count = 1)
      : simulation({.seed = seed}),
        network(simulation, simulation.rng("network")),
        sink_node(simulation.add_node("sink", "sink")),
        sink(simulation, network, sink_node, section, simulation.rng("sink")) {
    network.set_default_link(link);
    for (int i = 0; i < worker_count; ++i) {
      workers.push_back(&simulation.add_node("worker" + std::to_string(i), "consumers"));
    }
  }
};

// Each (message id, attempt) with the executions it produced, in order.
std::map<std::pair<MessageId, AttemptId>, std::vector<lethe::Execution>> by_attempt(
    const std::vector<lethe::Execution>& executions) {
  std::map<std::pair<MessageId, AttemptId>, std::vector<lethe::Execution>> grouped;
  for (const auto& execution : executions) grouped[{execution.id, execution.attempt}].push_back(execution);
  return grouped;
}

// One call whose first response is lost (ack_loss = 1.0 until 50 ms, then 0):
// the caller times out at 100 ms and retries at 110 ms.
struct LostFirstAck {
  std::vector<lethe::Execution> executions;
  std::optional<std::uint64_t> result;
  std::uint64_t calls = 0;
  std::uint64_t replays = 0;
  lethe::SinkClientStats stats;
};

LostFirstAck call_with_lost_first_ack(const std::string& kind, bool idempotent) {
  const SinkSection section = section_of(kind, idempotent, 3, constant_backoff(10 * kMillisecond));
  World world(1, section, link_with(sim::Distribution::constant(kMillisecond), /*ack_loss=*/1.0));
  world.simulation.at(50 * kMillisecond, [&world] {
    world.network.set_default_link(link_with(sim::Distribution::constant(kMillisecond)));
  });
  lethe::SinkClient client(world.sink, world.network, section, world.simulation.rng("client"));
  LostFirstAck outcome;
  world.workers[0]->set_main([&] { outcome.result = client.call(7, 0, 1001); });
  world.workers[0]->start();
  world.simulation.run();
  outcome.executions.assign(world.sink.executions().begin(), world.sink.executions().end());
  outcome.calls = world.sink.calls();
  outcome.replays = world.sink.replays();
  outcome.stats = client.stats();
  return outcome;
}

TEST(Sink, LostAckRetryChargesANonIdempotentPaymentTwiceForTheSameAttempt) {
  const LostFirstAck outcome = call_with_lost_first_ack("payment", /*idempotent=*/false);
  ASSERT_EQ(outcome.executions.size(), 2u);
  for (const auto& execution : outcome.executions) {
    EXPECT_EQ(execution.id, 7u);
    EXPECT_EQ(execution.attempt, 1001u);
    EXPECT_EQ(execution.processor, 0u);
  }
  EXPECT_EQ(outcome.executions[0].call_number, 1u);
  EXPECT_EQ(outcome.executions[1].call_number, 2u);
  EXPECT_EQ(outcome.executions[0].at, 21 * kMillisecond);   // 1 ms there + 20 ms service
  EXPECT_EQ(outcome.executions[1].at, 131 * kMillisecond);  // timeout 100 ms + backoff 10 ms + 21 ms
  EXPECT_NE(outcome.executions[0].value, outcome.executions[1].value);  // two distinct charges
  ASSERT_TRUE(outcome.result.has_value());
  EXPECT_EQ(*outcome.result, outcome.executions[1].value);  // the caller only ever saw the second charge
  EXPECT_EQ(outcome.calls, 2u);
  EXPECT_EQ(outcome.stats.timeouts, 1u);
  EXPECT_EQ(outcome.stats.tries, 2u);
}

TEST(Sink, IdempotentPaymentChargesOnceAndReturnsTheSameChargeIdOnTheRetry) {
  const LostFirstAck outcome = call_with_lost_first_ack("payment", /*idempotent=*/true);
  ASSERT_EQ(outcome.executions.size(), 1u);
  EXPECT_EQ(outcome.executions[0].call_number, 1u);
  ASSERT_TRUE(outcome.result.has_value());
  EXPECT_EQ(*outcome.result, outcome.executions[0].value);
  EXPECT_EQ(outcome.calls, 2u);    // the retry did reach the provider ...
  EXPECT_EQ(outcome.replays, 1u);  // ... and was answered from the idempotency table
  EXPECT_EQ(outcome.stats.timeouts, 1u);
}

TEST(Sink, EmailProviderGivesEachExecutionADifferentMessageId) {
  const LostFirstAck outcome = call_with_lost_first_ack("email", /*idempotent=*/false);
  ASSERT_EQ(outcome.executions.size(), 2u);
  EXPECT_NE(outcome.executions[0].value, 0u);
  EXPECT_NE(outcome.executions[0].value, outcome.executions[1].value);
  ASSERT_TRUE(outcome.result.has_value());
  // The first email's id is lost for good: the caller holds the second one's.
  EXPECT_EQ(*outcome.result, outcome.executions[1].value);

  const LostFirstAck idempotent = call_with_lost_first_ack("email", /*idempotent=*/true);
  ASSERT_EQ(idempotent.executions.size(), 1u);
  ASSERT_TRUE(idempotent.result.has_value());
  EXPECT_EQ(*idempotent.result, idempotent.executions[0].value);
}

// Many messages, each called once by one of several workers, over a link that
// loses half the responses, with 3 retries.
struct ManyCalls {
  std::vector<lethe::Execution> executions;
  std::map<MessageId, std::uint64_t> results;  // message id -> value the caller got
  std::uint64_t trace_hash = 0;
  std::uint64_t calls = 0;
};

ManyCalls many_calls_with_lossy_acks(std::uint64_t seed, const std::string& kind, bool idempotent, int messages = 200) {
  SinkSection section = section_of(kind, idempotent, 3, exponential_backoff(10 * kMillisecond, kSecond),
                                   Jitter::Full);
  section.latency = sim::Distribution::exponential(20 * kMillisecond);
  World world(seed, section, link_with(parse_distribution("uniform(500us, 2ms)"), 0.5), 4);
  lethe::SinkClient client(world.sink, world.network, section, world.simulation.rng("client"));
  ManyCalls outcome;
  for (std::size_t w = 0; w < world.workers.size(); ++w) {
    world.workers[w]->set_main([&outcome, &client, w, messages] {
      for (auto id = static_cast<MessageId>(w); id < static_cast<MessageId>(messages); id += 4) {
        const auto value = client.call(id, 0, 1000 + id);
        if (value.has_value()) outcome.results[id] = *value;
      }
    });
    world.workers[w]->start();
  }
  world.simulation.run();
  outcome.executions.assign(world.sink.executions().begin(), world.sink.executions().end());
  outcome.trace_hash = world.simulation.trace().hash();
  outcome.calls = world.sink.calls();
  return outcome;
}

TEST(Sink, LossyAcksWithRetriesDuplicateSomeNonIdempotentAttemptsAndNoIdempotentOnes) {
  const ManyCalls plain = many_calls_with_lossy_acks(5, "payment", false);
  int duplicated_attempts = 0;
  for (const auto& [key, executions] : by_attempt(plain.executions)) {
    if (executions.size() > 1) ++duplicated_attempts;
    for (const auto& execution : executions) EXPECT_EQ(execution.attempt, 1000 + execution.id);
  }
  EXPECT_GT(duplicated_attempts, 20);  // about half of 200 attempts lose their first ACK
  const auto plain_by_attempt = by_attempt(plain.executions);
  for (const auto& [id, value] : plain.results) {
    const auto found_attempt = plain_by_attempt.find({id, 1000 + id});
    ASSERT_NE(found_attempt, plain_by_attempt.end()) << "message " << id << " has no execution";
    const auto& executions = found_attempt->second;
    bool found = false;
    for (const auto& execution : executions) found = found || execution.value == value;
    EXPECT_TRUE(found) << "message " << id << " got a value no execution produced";
  }

  const ManyCalls idempotent = many_calls_with_lossy_acks(5, "payment", true);
  std::map<MessageId, int> executions_per_message;
  std::map<MessageId, std::uint64_t> executed_value;
  for (const auto& execution : idempotent.executions) {
    ++executions_per_message[execution.id];
    executed_value[execution.id] = execution.value;
  }
  for (const auto& [id, count] : executions_per_message) EXPECT_EQ(count, 1) << "message " << id;
  EXPECT_GT(idempotent.results.size(), 150u);
  for (const auto& [id, value] : idempotent.results) {
    EXPECT_EQ(value, executed_value[id]) << "message " << id;
  }
  EXPECT_GT(idempotent.calls, idempotent.executions.size());  // retries reached it and were replayed
}

TEST(Sink, EmailIdsAreDistinctAcrossAllExecutions) {
  const ManyCalls outcome = many_calls_with_lossy_acks(9, "email", false);
  std::set<std::uint64_t> ids;
  for (const auto& execution : outcome.executions) ids.insert(execution.value);
  EXPECT_EQ(ids.size(), outcome.executions.size());
  EXPECT_GT(outcome.executions.size(), 200u);  // lost ACKs made some extra ones
}

TEST(Sink, CounterValueIsTheRunningCountOfExecutions) {
  const ManyCalls outcome = many_calls_with_lossy_acks(3, "counter", false, 40);
  for (std::size_t i = 0; i < outcome.executions.size(); ++i) {
    EXPECT_EQ(outcome.executions[i].value, i + 1);
    if (i > 0) {
      EXPECT_GE(outcome.executions[i].at, outcome.executions[i - 1].at);
    }
  }
}

TEST(Sink, SameSeedSameTraceAndExecutionsDifferentSeedDifferentTrace) {
  const ManyCalls first = many_calls_with_lossy_acks(11, "email", false, 60);
  const ManyCalls again = many_calls_with_lossy_acks(11, "email", false, 60);
  const ManyCalls other = many_calls_with_lossy_acks(12, "email", false, 60);
  EXPECT_EQ(first.trace_hash, again.trace_hash);
  EXPECT_EQ(first.executions, again.executions);
  EXPECT_EQ(first.results, again.results);
  EXPECT_NE(first.trace_hash, other.trace_hash);
}

// `callers` fibers (one per worker node) each make one effect call at time 0.
struct Burst {
  std::vector<std::optional<std::uint64_t>> results;
  std::vector<sim::Time> finished_at;
  std::uint64_t calls = 0;
  std::uint64_t rejected_for_capacity = 0;
  std::uint64_t rejected_for_outage = 0;
  std::vector<lethe::Execution> executions;
};

Burst burst(const SinkSection& section, int callers, std::uint64_t seed = 1,
            sim::Distribution latency = sim::Distribution::constant(kMillisecond),
            std::optional<std::uint64_t> bucket_calls = std::nullopt) {
  World world(seed, section, link_with(std::move(latency)), callers);
  if (bucket_calls.has_value()) world.sink.set_burst(*bucket_calls);
  lethe::SinkClient client(world.sink, world.network, section, world.simulation.rng("client"));
  Burst outcome;
  outcome.results.resize(static_cast<std::size_t>(callers));
  outcome.finished_at.resize(static_cast<std::size_t>(callers));
  for (int i = 0; i < callers; ++i) {
    const auto index = static_cast<std::size_t>(i);
    world.workers[index]->set_main([&outcome, &client, index] {
      outcome.results[index] = client.call(index, 0, 1 + index);
      outcome.finished_at[index] = sim::now();
    });
    world.workers[index]->start();
  }
  world.simulation.run();
  outcome.calls = world.sink.calls();
  outcome.rejected_for_capacity = world.sink.rejected_for_capacity();
  outcome.rejected_for_outage = world.sink.rejected_for_outage();
  outcome.executions.assign(world.sink.executions().begin(), world.sink.executions().end());
  return outcome;
}

int successes(const Burst& outcome) {
  int count = 0;
  for (const auto& result : outcome.results) count += result.has_value() ? 1 : 0;
  return count;
}

TEST(Sink, DefaultBucketHoldsOneTenthOfASecondOfCapacity) {
  auto bucket_of = [](double per_second) {
    SinkSection section;
    section.capacity = lethe::Rate{per_second};
    World world(1, section, link_with(sim::Distribution::constant(kMillisecond)));
    return world.sink.burst();
  };
  EXPECT_EQ(bucket_of(0.0), 0u);  // unlimited
  EXPECT_EQ(bucket_of(0.5), 1u);
  EXPECT_EQ(bucket_of(2.0), 1u);
  EXPECT_EQ(bucket_of(20.0), 2u);
  EXPECT_EQ(bucket_of(50.0), 5u);
  EXPECT_EQ(bucket_of(70.0), 7u);
  EXPECT_EQ(bucket_of(1000.0), 100u);
}

TEST(Sink, CapacityRejectsCallsBeyondTheTokenBucketWith503AndNoExecution) {
  SinkSection section = section_of("payment", false, 0);
  section.capacity = lethe::Rate{20.0};  // a bucket of 2 tokens, one more every 50 ms
  const Burst outcome = burst(section, 5);
  EXPECT_EQ(successes(outcome), 2);
  EXPECT_EQ(outcome.executions.size(), 2u);
  EXPECT_EQ(outcome.calls, 5u);
  EXPECT_EQ(outcome.rejected_for_capacity, 3u);
  for (std::size_t i = 0; i < outcome.results.size(); ++i) {
    // A 503 is an answer, not a timeout: the rejected callers learn it after one round trip.
    EXPECT_EQ(outcome.finished_at[i], 22 * kMillisecond);
  }
}

TEST(Sink, CapacityWithALargerBucketAcceptsALargerBurst) {
  SinkSection section = section_of("payment", false, 0);
  section.capacity = lethe::Rate{20.0};
  const Burst outcome = burst(section, 30, 1, sim::Distribution::constant(kMillisecond), /*bucket_calls=*/20);
  EXPECT_EQ(successes(outcome), 20);
  EXPECT_EQ(outcome.rejected_for_capacity, 10u);
}

TEST(Sink, CapacityRetriesGoThroughOnceTheBucketRefills) {
  SinkSection section = section_of("payment", false, 4, constant_backoff(kSecond / 4));
  section.capacity = lethe::Rate{4.0};  // one token, one more every 250 ms
  const Burst outcome = burst(section, 5);
  EXPECT_EQ(successes(outcome), 5);
  EXPECT_EQ(outcome.executions.size(), 5u);
  EXPECT_GT(outcome.rejected_for_capacity, 0u);
  EXPECT_EQ(outcome.calls, outcome.executions.size() + outcome.rejected_for_capacity);
  // Never more than the bucket allows: 1 at once, then one per 250 ms.
  for (std::size_t i = 0; i < outcome.executions.size(); ++i) {
    for (std::size_t j = i + 1; j < outcome.executions.size(); ++j) {
      const sim::Duration span = outcome.executions[j].at - outcome.executions[i].at;
      const auto allowed = 1 + static_cast<std::size_t>(span / (250 * kMillisecond));
      EXPECT_LE(j - i + 1, allowed);
    }
  }
}

TEST(Sink, OutageRejectsEveryCallWith503) {
  SinkSection section = section_of("counter", false, 0);
  section.outages.push_back(lethe::SinkOutage{0, kSecond});
  const Burst outcome = burst(section, 3);
  EXPECT_EQ(successes(outcome), 0);
  EXPECT_TRUE(outcome.executions.empty());
  EXPECT_EQ(outcome.rejected_for_outage, 3u);
  EXPECT_EQ(outcome.calls, 3u);
  for (const sim::Time finished : outcome.finished_at) EXPECT_EQ(finished, 22 * kMillisecond);
}

TEST(Sink, AFailingCallTakesFailAfterExecutesNothingAndIsNotRetried) {
  SinkSection section = section_of("counter", false, 5, constant_backoff(10 * kMillisecond));
  section.fail = 1.0;
  section.fail_after = sim::Distribution::constant(300 * kMillisecond);
  const Burst outcome = burst(section, 3);
  EXPECT_EQ(successes(outcome), 0);
  EXPECT_TRUE(outcome.executions.empty());
  EXPECT_EQ(outcome.calls, 0u);  // never retried, and the provider executed nothing
  for (const sim::Time finished : outcome.finished_at) EXPECT_EQ(finished, 300 * kMillisecond);
}

TEST(Sink, SomeCallsFailAtTheirProbabilityAndTheOthersExecuteOnce) {
  SinkSection section = section_of("counter", false, 0);
  section.fail = 0.5;
  const Burst outcome = burst(section, 200);
  const int executed = successes(outcome);
  EXPECT_GT(executed, 60);
  EXPECT_LT(executed, 140);
  EXPECT_EQ(outcome.executions.size(), static_cast<std::size_t>(executed));
  EXPECT_EQ(outcome.calls, static_cast<std::uint64_t>(executed));
}

TEST(Sink, RetriesGoThroughAfterTheOutage) {
  SinkSection section = section_of("counter", false, 5, constant_backoff(300 * kMillisecond));
  section.outages.push_back(lethe::SinkOutage{0, kSecond});
  const Burst outcome = burst(section, 3);
  EXPECT_EQ(successes(outcome), 3);
  ASSERT_EQ(outcome.executions.size(), 3u);
  for (const auto& execution : outcome.executions) {
    EXPECT_GE(execution.at, kSecond);
    EXPECT_EQ(execution.call_number, 5u);  // tries at 21, 343, 665, 987 ms are refused; 1309 ms goes through
  }
  EXPECT_EQ(outcome.rejected_for_outage, 12u);
}

TEST(Sink, TimeoutWithoutRetriesReturnsNulloptButTheEffectStillHappens) {
  SinkSection section = section_of("payment", false, 0);
  section.latency = sim::Distribution::constant(2 * kSecond);
  section.timeout = kSecond;
  const Burst outcome = burst(section, 1);
  ASSERT_EQ(outcome.results.size(), 1u);
  EXPECT_FALSE(outcome.results[0].has_value());
  EXPECT_EQ(outcome.finished_at[0], kSecond);
  ASSERT_EQ(outcome.executions.size(), 1u);  // the provider charged anyway, after the caller gave up
  EXPECT_EQ(outcome.executions[0].at, 2 * kSecond + kMillisecond);
}

TEST(Sink, TimeoutWithRetriesOnASlowProviderExecutesOncePerTry) {
  SinkSection section = section_of("payment", false, 2, constant_backoff(100 * kMillisecond));
  section.latency = sim::Distribution::constant(2 * kSecond);
  section.timeout = kSecond;
  const Burst outcome = burst(section, 1);
  EXPECT_FALSE(outcome.results[0].has_value());
  EXPECT_EQ(outcome.executions.size(), 3u);  // every slow try still executed: 3 charges, none acknowledged
}

// The retry storm: `callers` clients call at the same instant a provider that
// accepts 50 calls per second, each retrying 8 times with exponential backoff.
struct StormFigures {
  std::uint64_t calls = 0;
  int successes = 0;
  double calls_per_success = 0.0;
};

StormFigures storm(Jitter jitter, std::uint64_t seed, std::optional<std::uint64_t> bucket_calls = std::nullopt) {
  SinkSection section = section_of("counter", false, 8, exponential_backoff(100 * kMillisecond, 10 * kSecond),
                                   jitter);
  section.timeout = kSecond;
  section.capacity = lethe::Rate{50.0};
  const Burst outcome = burst(section, 200, seed, parse_distribution("uniform(500us, 2ms)"), bucket_calls);
  StormFigures figures;
  figures.calls = outcome.calls;
  figures.successes = successes(outcome);
  figures.calls_per_success =
      figures.successes == 0 ? 0.0 : static_cast<double>(outcome.calls) / static_cast<double>(figures.successes);
  return figures;
}

// Runs every jitter over `seeds` seeds, prints the sums, and returns them.
std::map<Jitter, StormFigures> storm_table(std::uint64_t seeds, std::optional<std::uint64_t> bucket_calls,
                                           const char* bucket_text) {
  std::map<Jitter, StormFigures> totals;
  for (Jitter jitter : {Jitter::None, Jitter::Full, Jitter::Equal, Jitter::Decorrelated}) {
    StormFigures sum;
    for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
      const StormFigures one = storm(jitter, seed, bucket_calls);
      sum.calls += one.calls;
      sum.successes += one.successes;
    }
    sum.calls_per_success = static_cast<double>(sum.calls) / static_cast<double>(sum.successes);
    totals[jitter] = sum;
    std::cout << "retry storm: 200 clients at t=0, capacity 50/s (bucket " << bucket_text
              << "), retries 8, exponential(base=100ms, cap=10s), seeds 1.." << seeds << ": jitter "
              << lethe::to_string(jitter) << ": sink_calls " << sum.calls << ", successes " << sum.successes << " of "
              << 200 * seeds << ", calls_per_success " << sum.calls_per_success << "\n";
  }
  return totals;
}

TEST(SinkRetryStorm, FullJitterNeedsFewerCallsPerSuccessThanNoJitter) {
  const std::uint64_t seeds = 5;
  auto totals = storm_table(seeds, std::nullopt, "5 calls = 100ms, the default");
  EXPECT_LT(totals[Jitter::Full].calls_per_success, totals[Jitter::None].calls_per_success);
  // Synchronized waves find the bucket holding only its 5 tokens: most clients run out of retries.
  EXPECT_LT(totals[Jitter::None].successes, totals[Jitter::Full].successes);
  EXPECT_GE(totals[Jitter::Full].successes, static_cast<int>(200 * seeds * 95 / 100));
  // Per seed too, not only in sum.
  for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
    EXPECT_LT(storm(Jitter::Full, seed).calls_per_success, storm(Jitter::None, seed).calls_per_success)
        << "seed " << seed;
  }
}

// With a bucket holding a whole second of capacity, each synchronized wave
// finds it refilled: the waves use the capacity as well as spread-out calls do,
// so no jitter is no longer worse (printed for comparison, see world/sink.hpp).
TEST(SinkRetryStorm, AOneSecondBucketAbsorbsSynchronizedWaves) {
  auto totals = storm_table(5, 50, "50 calls = 1s");
  EXPECT_EQ(totals[Jitter::None].successes, 1000);
  EXPECT_EQ(totals[Jitter::Full].successes, 1000);
  EXPECT_LT(totals[Jitter::None].calls_per_success, 1.1 * totals[Jitter::Full].calls_per_success);
}

}  // namespace sink_test
