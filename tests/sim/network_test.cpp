// Network tests: fault frequencies and latencies match the configured link, RPC timeouts and duplicates behave
// as sim/network.hpp promises, crashed nodes receive nothing, and partitions block exactly what crosses them.
//
// Statistical checks use fixed seeds and two-sided 99.9% bounds (z = 3.29), so each passes or fails the same way
// on every run; a failure means the frequency is off by more than sampling noise explains.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "sim/distribution.hpp"
#include "sim/network.hpp"
#include "sim/node.hpp"
#include "sim/simulation.hpp"
#include "sim/trace.hpp"

namespace network_test {

using sim::kMicrosecond;
using sim::kMillisecond;
using sim::kSecond;

constexpr double kZ999 = 3.29;  // two-sided 99.9% normal quantile

// Half-width of the 99.9% interval for a binomial frequency with probability p over n trials.
double binomial_bound(double p, std::uint64_t trials) {
  return kZ999 * std::sqrt(p * (1.0 - p) / static_cast<double>(trials));
}

void expect_frequency(std::uint64_t hits, std::uint64_t trials, double p, const std::string& what) {
  ASSERT_GT(trials, 0u) << what;
  const double observed = static_cast<double>(hits) / static_cast<double>(trials);
  EXPECT_NEAR(observed, p, binomial_bound(p, trials))
      << what << ": " << hits << " of " << trials << " (bound +-" << binomial_bound(p, trials) << ")";
}

std::string numbered(const char* prefix, std::uint64_t number) {
  std::string name(prefix);
  name += std::to_string(number);
  return name;
}

std::size_t count_kind(const sim::Trace& trace, const sim::TraceKind& kind) {
  const auto& records = trace.records();
  return static_cast<std::size_t>(
      std::count_if(records.begin(), records.end(), [&](const sim::TraceRecord& r) { return r.kind == kind.id; }));
}

sim::Distribution parse_distribution(const std::string& text) {
  std::string error;
  auto parsed = sim::Distribution::parse(text, ".", error);
  if (!parsed) throw std::invalid_argument(text + ": " + error);
  return *parsed;
}

// --- one-way message faults ---

struct LossCase {
  std::uint64_t seed;
  double loss;
  double duplicate;
};

TEST(NetworkFaults, LossAndDuplicationFrequenciesMatchTheLinkWithinA999PercentBound) {
  constexpr std::uint64_t kMessages = 20000;
  for (const LossCase c : {LossCase{11, 0.1, 0.05}, LossCase{12, 0.5, 0.3}, LossCase{13, 0.01, 0.2}}) {
    SCOPED_TRACE(numbered("seed ", c.seed));
    sim::Simulation simulation({.seed = c.seed});
    simulation.trace().keep_records(true);
    sim::Network network(simulation, simulation.rng("network"));
    auto& sender = simulation.add_node("sender", "left");
    auto& receiver = simulation.add_node("receiver", "right");
    auto& neighbour = simulation.add_node("neighbour", "left");
    // Only left<->right is faulty; the default link (left<->left) is perfect.
    sim::LinkConfig faulty;
    faulty.latency = parse_distribution("uniform(1ms, 5ms)");
    faulty.loss = c.loss;
    faulty.duplicate = c.duplicate;
    network.set_link(simulation.group_id("left"), simulation.group_id("right"), faulty);

    std::vector<int> deliveries(kMessages, 0);
    int neighbour_deliveries = 0;
    sender.set_main([&] {
      for (std::uint64_t i = 0; i < kMessages; ++i) {
        network.send(sender, receiver, [&deliveries, i] { ++deliveries[i]; }, i);
        if (i % 10 == 0) network.send(sender, neighbour, [&neighbour_deliveries] { ++neighbour_deliveries; });
        sim::sleep(50 * kMicrosecond);
      }
    });
    sender.start();
    simulation.run();

    std::uint64_t distinct = 0;
    std::uint64_t twice = 0;
    for (int d : deliveries) {
      ASSERT_LE(d, 2) << "a message was delivered more than twice";
      distinct += d > 0 ? 1 : 0;
      twice += d == 2 ? 1 : 0;
    }
    expect_frequency(kMessages - distinct, kMessages, c.loss, "loss");
    expect_frequency(twice, distinct, c.duplicate, "duplication among delivered messages");
    EXPECT_EQ(neighbour_deliveries, static_cast<int>(kMessages / 10)) << "the perfect default link lost messages";

    // The kernel's own bookkeeping agrees with what the receiver saw.
    const auto& stats = network.stats();
    EXPECT_EQ(stats.lost, kMessages - distinct);
    EXPECT_EQ(stats.duplicated, twice);
    EXPECT_EQ(stats.delivered, distinct + twice + kMessages / 10);
    EXPECT_EQ(count_kind(simulation.trace(), sim::kinds::kDropLoss), kMessages - distinct);
    EXPECT_EQ(count_kind(simulation.trace(), sim::kinds::kDuplicate), twice);
    EXPECT_EQ(count_kind(simulation.trace(), sim::kinds::kDropAck), 0u);
  }
}

TEST(NetworkFaults, RequestLossAndAckLossFrequenciesMatchTheLinkWithinA999PercentBound) {
  constexpr std::uint64_t kCalls = 20000;
  constexpr double kLoss = 0.1;
  constexpr double kAckLoss = 0.2;
  sim::Simulation simulation({.seed = 21});
  simulation.trace().keep_records(true);
  sim::Network network(simulation, simulation.rng("network"));
  sim::LinkConfig link;
  link.latency = sim::Distribution::exponential(kMillisecond);
  link.loss = kLoss;
  link.ack_loss = kAckLoss;
  network.set_default_link(link);
  auto& server = simulation.add_node("server", "store");
  auto& client = simulation.add_node("client", "consumers");
  sim::Service service{&server, {}, false, 0};
  std::vector<int> handler_runs(kCalls, 0);
  std::vector<bool> answered(kCalls, false);
  client.set_main([&] {
    for (std::uint64_t i = 0; i < kCalls; ++i) {
      auto response = network.call(
          service, [&handler_runs, i] { return ++handler_runs[i]; }, kSecond, i);
      answered[i] = response.has_value();
    }
  });
  client.start();
  simulation.run();

  std::uint64_t requests_lost = 0;
  std::uint64_t served = 0;
  std::uint64_t responses_lost = 0;
  for (std::uint64_t i = 0; i < kCalls; ++i) {
    ASSERT_LE(handler_runs[i], 1) << "no duplication configured";
    if (handler_runs[i] == 0) {
      ++requests_lost;
      EXPECT_FALSE(answered[i]) << "a call whose request was lost got a response";
    } else {
      ++served;
      responses_lost += answered[i] ? 0 : 1;
    }
  }
  expect_frequency(requests_lost, kCalls, kLoss, "request loss");
  expect_frequency(responses_lost, served, kAckLoss, "ack loss among served requests");
  EXPECT_EQ(count_kind(simulation.trace(), sim::kinds::kDropLoss), requests_lost);
  EXPECT_EQ(count_kind(simulation.trace(), sim::kinds::kDropAck), responses_lost);
  EXPECT_EQ(count_kind(simulation.trace(), sim::kinds::kRpcTimeout), requests_lost + responses_lost);
  EXPECT_EQ(network.stats().late_responses, 0u) << "a 1 s timeout is far above any 2 x exponential(1ms) here";
}

// --- latency ---

TEST(NetworkLatency, OneWayLatenciesFitTheLinkDistribution) {
  constexpr std::size_t kMessages = 20000;
  const std::vector<std::string> distributions = {"uniform(1ms, 5ms)", "exponential(mean=2ms)",
                                                  "lognormal(median=1ms, p99=20ms)", "normal(mean=3ms, sd=1ms)",
                                                  "pareto(scale=1ms, shape=3)"};
  std::uint64_t seed = 31;
  for (const std::string& text : distributions) {
    SCOPED_TRACE(text);
    const sim::Distribution latency = parse_distribution(text);
    sim::Simulation simulation({.seed = seed++});
    sim::Network network(simulation, simulation.rng("network"));
    sim::LinkConfig link;
    link.latency = latency;
    network.set_default_link(link);
    auto& sender = simulation.add_node("sender", "a");
    auto& receiver = simulation.add_node("receiver", "b");
    std::vector<sim::Duration> samples;
    samples.reserve(kMessages);
    sender.set_main([&] {
      sim::Rng gaps = simulation.rng("gaps");
      for (std::size_t i = 0; i < kMessages; ++i) {
        const sim::Time sent_at = sim::now();
        network.send(sender, receiver, [&simulation, &samples, sent_at] { samples.push_back(simulation.now() - sent_at); });
        sim::sleep(static_cast<sim::Duration>(gaps.exponential(100.0 * kMicrosecond)));
      }
    });
    sender.start();
    simulation.run();
    ASSERT_EQ(samples.size(), kMessages);

    double sum = 0;
    for (sim::Duration d : samples) {
      ASSERT_GE(d, 0);
      sum += static_cast<double>(d);
    }
    const double n = static_cast<double>(kMessages);
    const double mean = sum / n;
    double squares = 0;
    for (sim::Duration d : samples) squares += (static_cast<double>(d) - mean) * (static_cast<double>(d) - mean);
    const double standard_error = std::sqrt(squares / (n - 1.0)) / std::sqrt(n);
    EXPECT_NEAR(mean, latency.mean_ns(), kZ999 * standard_error + 1.0) << "mean latency (ns)";

    // At each quantile x_q of the law, the fraction of samples <= x_q is binomial(n, q).
    for (double q : {0.1, 0.5, 0.9, 0.99}) {
      const sim::Duration x = latency.quantile(q);
      const auto at_or_below = static_cast<std::uint64_t>(
          std::count_if(samples.begin(), samples.end(), [x](sim::Duration d) { return d <= x; }));
      expect_frequency(at_or_below, kMessages, q, "fraction at or below quantile " + std::to_string(q));
    }
  }
}

// --- RPC ---

struct SingleCall {
  std::optional<int> response;
  sim::Time returned_at = 0;
  int handler_runs = 0;
  std::vector<sim::TraceRecord> records;
  sim::NodeId caller = 0;
  sim::NodeId server = 0;
};

SingleCall one_call(const sim::LinkConfig& link, bool server_down = false) {
  constexpr std::uint64_t kTag = 77;
  SingleCall out;
  sim::Simulation simulation({.seed = 5});
  simulation.trace().keep_records(true);
  sim::Network network(simulation, simulation.rng("network"));
  network.set_default_link(link);
  auto& server = simulation.add_node("server", "store");
  auto& client = simulation.add_node("client", "consumers");
  out.caller = client.id();
  out.server = server.id();
  if (server_down) server.crash();
  sim::Service service{&server, {}, false, 0};
  client.set_main([&] {
    sim::sleep(kMillisecond);
    out.response = network.call(service, [&out] { return ++out.handler_runs; }, 50 * kMillisecond, kTag);
    out.returned_at = sim::now();
  });
  client.start();
  simulation.run();
  out.records = simulation.trace().records();
  return out;
}

std::vector<const sim::TraceRecord*> of_kind(const SingleCall& call, const sim::TraceKind& kind) {
  std::vector<const sim::TraceRecord*> found;
  for (const auto& r : call.records) {
    if (r.kind == kind.id) found.push_back(&r);
  }
  return found;
}

TEST(NetworkRpc, LostRequestAndLostResponseLookTheSameToTheCallerButNotInTheTrace) {
  sim::LinkConfig lose_requests;
  lose_requests.loss = 1.0;
  sim::LinkConfig lose_responses;
  lose_responses.ack_loss = 1.0;
  const SingleCall lost_request = one_call(lose_requests);
  const SingleCall lost_response = one_call(lose_responses);

  // The caller cannot tell them apart: both time out at the same instant.
  EXPECT_FALSE(lost_request.response.has_value());
  EXPECT_FALSE(lost_response.response.has_value());
  EXPECT_EQ(lost_request.returned_at, kMillisecond + 50 * kMillisecond);
  EXPECT_EQ(lost_response.returned_at, lost_request.returned_at);

  // But the server did the work only for the lost response (the lost ACK) ...
  EXPECT_EQ(lost_request.handler_runs, 0);
  EXPECT_EQ(lost_response.handler_runs, 1);
  // ... and the trace says which message was lost.
  const auto request_drops = of_kind(lost_request, sim::kinds::kDropLoss);
  ASSERT_EQ(request_drops.size(), 1u);
  EXPECT_EQ(request_drops[0]->node, lost_request.caller);
  EXPECT_EQ(request_drops[0]->a, 77u);
  EXPECT_EQ(request_drops[0]->b, lost_request.server);
  EXPECT_EQ(request_drops[0]->c, 0u) << "c = 0 marks a request";
  EXPECT_TRUE(of_kind(lost_request, sim::kinds::kDropAck).empty());

  const auto response_drops = of_kind(lost_response, sim::kinds::kDropAck);
  ASSERT_EQ(response_drops.size(), 1u);
  EXPECT_EQ(response_drops[0]->node, lost_response.server);
  EXPECT_EQ(response_drops[0]->a, 77u);
  EXPECT_EQ(response_drops[0]->b, lost_response.caller);
  EXPECT_EQ(response_drops[0]->c, 1u) << "c = 1 marks a response";
  EXPECT_TRUE(of_kind(lost_response, sim::kinds::kDropLoss).empty());

  for (const SingleCall* call : {&lost_request, &lost_response}) {
    const auto timeouts = of_kind(*call, sim::kinds::kRpcTimeout);
    ASSERT_EQ(timeouts.size(), 1u);
    EXPECT_EQ(timeouts[0]->time, call->returned_at);
    EXPECT_EQ(timeouts[0]->node, call->caller);
    EXPECT_EQ(timeouts[0]->a, 77u);
  }
}

// An instant call (zero latency both ways, nothing lost or duplicated, zero service time) runs the handler on
// the caller's fiber and returns at once: another fiber ready at the same instant has not run yet. Over a 1 ns
// link the same program parks, so the other fiber runs first: the test would fail if the fast path parked.
struct InstantRun {
  std::optional<int> response;
  bool other_ran_before_return = false;
  sim::Time returned_at = -1;
  std::vector<sim::TraceRecord> records;
  sim::NetworkStats stats;
};

InstantRun instant_run(sim::Duration latency, sim::Duration server_pause) {
  InstantRun out;
  sim::Simulation simulation({.seed = 9});
  simulation.trace().keep_records(true);
  sim::Network network(simulation, simulation.rng("network"));
  sim::LinkConfig link;
  link.latency = sim::Distribution::constant(latency);
  network.set_default_link(link);
  auto& server = simulation.add_node("server", "broker");
  auto& client = simulation.add_node("client", "consumers");
  auto& other = simulation.add_node("other", "consumers");
  bool other_ran = false;
  sim::Service service{&server, {}, false, 0};
  client.set_main([&] {
    if (server_pause > 0) server.pause_for(server_pause);
    out.response = network.call(service, [] { return 42; }, 50 * kMillisecond, 7);
    out.other_ran_before_return = other_ran;
    out.returned_at = sim::now();
  });
  other.set_main([&] { other_ran = true; });
  client.start();
  other.start();
  simulation.run();
  out.records = simulation.trace().records();
  out.stats = network.stats();
  return out;
}

TEST(NetworkRpc, AnInstantCallReturnsAtTheSameInstantBeforeAnyOtherFiberRunsAndStillTracesBothLegs) {
  const InstantRun instant = instant_run(0, 0);
  ASSERT_EQ(instant.response, 42);
  EXPECT_EQ(instant.returned_at, 0);
  EXPECT_FALSE(instant.other_ran_before_return) << "the instant call parked";
  EXPECT_EQ(instant.stats.sent, 2u);
  EXPECT_EQ(instant.stats.delivered, 2u);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> legs;  // (kind, c) of the send/deliver records
  for (const auto& r : instant.records) {
    if (r.kind == sim::kinds::kSend.id || r.kind == sim::kinds::kDeliver.id) legs.emplace_back(r.kind, r.c);
  }
  const std::vector<std::pair<std::uint64_t, std::uint64_t>> expected = {
      {sim::kinds::kSend.id, 0}, {sim::kinds::kDeliver.id, 0}, {sim::kinds::kSend.id, 1}, {sim::kinds::kDeliver.id, 0}};
  EXPECT_EQ(legs, expected);

  const InstantRun one_ns = instant_run(1, 0);
  ASSERT_EQ(one_ns.response, 42);
  EXPECT_EQ(one_ns.returned_at, 2);
  EXPECT_TRUE(one_ns.other_ran_before_return);
}

TEST(NetworkRpc, AZeroLatencyCallToAPausedServerIsAnsweredWhenThePauseEnds) {
  const InstantRun paused = instant_run(0, 5 * kMillisecond);
  ASSERT_EQ(paused.response, 42);
  EXPECT_EQ(paused.returned_at, 5 * kMillisecond);
  EXPECT_TRUE(paused.other_ran_before_return);
}

TEST(NetworkRpc, CallToACrashedServerTimesOutWithoutRunningTheHandler) {
  const SingleCall call = one_call(sim::LinkConfig{}, /*server_down=*/true);
  EXPECT_FALSE(call.response.has_value());
  EXPECT_EQ(call.handler_runs, 0);
  const auto down = of_kind(call, sim::kinds::kDropDown);
  ASSERT_EQ(down.size(), 1u);
  EXPECT_EQ(down[0]->node, call.server);
  EXPECT_EQ(down[0]->a, 77u);
  EXPECT_EQ(down[0]->b, call.caller);
  EXPECT_EQ(down[0]->time, 2 * kMillisecond) << "dropped on arrival, after the 1 ms latency";
}

TEST(NetworkRpc, DuplicatedRequestRunsTheHandlerTwiceButTheCallerGetsOneResponse) {
  // Every message is duplicated: each call's request arrives twice (two handler runs) and each of the two
  // responses arrives twice: four responses, of which the caller takes exactly one.
  int late_during_next_call = 0;
  for (std::uint64_t seed = 1; seed <= 30; ++seed) {
    SCOPED_TRACE(numbered("seed ", seed));
    sim::Simulation simulation({.seed = seed});
    simulation.trace().keep_records(true);
    sim::Network network(simulation, simulation.rng("network"));
    sim::LinkConfig link;
    link.latency = parse_distribution("uniform(1ms, 10ms)");
    link.duplicate = 1.0;
    network.set_default_link(link);
    auto& server = simulation.add_node("server", "store");
    auto& client = simulation.add_node("client", "consumers");
    sim::Service service{&server, {}, false, 0};
    std::map<std::uint64_t, int> runs;
    std::map<std::uint64_t, std::optional<int>> responses;
    sim::Time second_call_started = 0;
    sim::Time second_call_ended = 0;
    client.set_main([&] {
      for (std::uint64_t tag = 1; tag <= 2; ++tag) {
        if (tag == 2) second_call_started = sim::now();
        responses[tag] = network.call(
            service, [&runs, tag] { return static_cast<int>(tag) * 100 + ++runs[tag]; }, 100 * kMillisecond, tag);
        if (tag == 2) second_call_ended = sim::now();
      }
    });
    client.start();
    simulation.run();

    for (std::uint64_t tag = 1; tag <= 2; ++tag) {
      EXPECT_EQ(runs[tag], 2) << "call " << tag;
      ASSERT_TRUE(responses[tag].has_value()) << "call " << tag;
      const int value = *responses[tag];
      EXPECT_TRUE(value == static_cast<int>(tag) * 100 + 1 || value == static_cast<int>(tag) * 100 + 2)
          << "call " << tag << " got " << value << ", which is not one of its own responses";
    }
    const auto& records = simulation.trace().records();
    for (std::uint64_t tag = 1; tag <= 2; ++tag) {
      const auto late = std::count_if(records.begin(), records.end(), [tag](const sim::TraceRecord& r) {
        return r.kind == sim::kinds::kLateResponse.id && r.a == tag;
      });
      EXPECT_EQ(late, 3) << "call " << tag << ": four responses, one taken";
    }
    EXPECT_EQ(network.stats().late_responses, 6u);
    EXPECT_EQ(network.stats().rpc_timeouts, 0u);
    late_during_next_call += static_cast<int>(std::count_if(records.begin(), records.end(), [&](const sim::TraceRecord& r) {
      return r.kind == sim::kinds::kLateResponse.id && r.a == 1 && r.time >= second_call_started &&
             r.time < second_call_ended;
    }));
  }
  // Coverage: stragglers of call 1 really arrived while call 2 was waiting (and were not taken as its answer).
  EXPECT_GT(late_during_next_call, 0);
}

// A server that crashes while a request is in service never completes it: the operation does not take effect
// and no response leaves the crashed node (not even after a restart, which is a new incarnation).
TEST(NetworkRpc, ServerCrashDuringServiceTimeLosesTheRequest) {
  for (const bool restart_before_finish : {false, true}) {
    SCOPED_TRACE(restart_before_finish ? "restarted before the finish instant" : "still down at the finish instant");
    sim::Simulation simulation({.seed = 9});
    sim::Network network(simulation, simulation.rng("network"));
    auto& server = simulation.add_node("server", "store");
    auto& client = simulation.add_node("client", "consumers");
    sim::Service service{&server, sim::Distribution::constant(10 * kMillisecond), false, 0};
    int handler_runs = 0;
    std::optional<int> response;
    client.set_main([&] {
      response = network.call(service, [&handler_runs] { return ++handler_runs; }, kSecond);
    });
    client.start();
    // The request arrives at 1 ms and would take effect at 11 ms.
    simulation.at(5 * kMillisecond, [&] { server.crash(); });
    if (restart_before_finish) simulation.at(8 * kMillisecond, [&] { server.restart(); });
    simulation.run();
    EXPECT_EQ(handler_runs, 0) << "the handler ran on a server that crashed during the service time";
    EXPECT_FALSE(response.has_value()) << "a crashed server answered";
  }
}

TEST(NetworkRpc, MessagesToACrashedNodeAreDroppedUntilItRestarts) {
  sim::Simulation simulation({.seed = 3});
  simulation.trace().keep_records(true);
  sim::Network network(simulation, simulation.rng("network"));
  auto& sender = simulation.add_node("sender", "a");
  auto& receiver = simulation.add_node("receiver", "b");
  std::vector<int> delivered;
  auto send = [&](int id) { network.send(sender, receiver, [&delivered, id] { delivered.push_back(id); }); };
  // Latency is the default constant 1 ms.
  simulation.at(0, [&] { receiver.crash(); });
  simulation.at(1 * kMillisecond, [&] { send(1); });   // arrives at 2 ms: down
  simulation.at(10 * kMillisecond, [&] { receiver.restart(); });
  simulation.at(11 * kMillisecond, [&] { send(2); });  // arrives at 12 ms: up
  simulation.at(20 * kMillisecond, [&] { send(3); });  // sent while up, receiver crashes in flight
  simulation.at(20 * kMillisecond + 500 * kMicrosecond, [&] { receiver.crash(); });
  simulation.at(30 * kMillisecond, [&] { receiver.restart(); });
  simulation.at(30 * kMillisecond, [&] { send(4); });
  simulation.run();
  EXPECT_EQ(delivered, (std::vector<int>{2, 4}));
  EXPECT_EQ(network.stats().to_down_node, 2u);
  EXPECT_EQ(count_kind(simulation.trace(), sim::kinds::kDropDown), 2u);
}

// --- properties ---

struct PlannedMessage {
  int from = 0;
  int to = 0;
  sim::Time sent_at = 0;
};

// Property: with one partition window [from, until) between groups A and B, a message between A and B is dropped
// exactly when it is sent or arrives inside the window; every other message (within a group, or between other
// groups, or across A-B outside the window) is delivered, on time.
RC_GTEST_PROP(NetworkProperties, PartitionBlocksExactlyTheMessagesAcrossItSentOrArrivingInTheWindow, ()) {
  const int group_count = *rc::gen::inRange(2, 5);
  const int node_count = *rc::gen::inRange(2, 9);
  auto node_groups = *rc::gen::container<std::vector<int>>(static_cast<std::size_t>(node_count),
                                                              rc::gen::inRange(0, group_count));
  const int blocked_a = *rc::gen::inRange(0, group_count);
  const int blocked_b = *rc::gen::distinctFrom(rc::gen::inRange(0, group_count), blocked_a);
  // Both sides of the partition have a node, so that some messages cross it.
  node_groups[0] = blocked_a;
  node_groups[1] = blocked_b;
  // Whole milliseconds, so that sends and arrivals land exactly on the window's edges often.
  const sim::Time window_from = *rc::gen::inRange(0, 60) * kMillisecond;
  const sim::Time window_until = window_from + *rc::gen::inRange(0, 40) * kMillisecond;
  const sim::Duration latency = *rc::gen::inRange(0, 15) * kMillisecond;
  const auto planned = *rc::gen::container<std::vector<std::tuple<int, int, int>>>(
      rc::gen::tuple(rc::gen::inRange(0, node_count), rc::gen::inRange(0, node_count), rc::gen::inRange(0, 100)));

  sim::Simulation simulation({.seed = 1});
  sim::Network network(simulation, simulation.rng("network"));
  sim::LinkConfig link;
  link.latency = sim::Distribution::constant(latency);
  network.set_default_link(link);
  std::vector<sim::Node*> nodes;
  for (int i = 0; i < node_count; ++i) {
    nodes.push_back(&simulation.add_node(numbered("n", static_cast<std::uint64_t>(i)),
                                         numbered("g", static_cast<std::uint64_t>(node_groups[static_cast<std::size_t>(i)]))));
  }
  network.add_partition(simulation.group_id(numbered("g", static_cast<std::uint64_t>(blocked_a))),
                        simulation.group_id(numbered("g", static_cast<std::uint64_t>(blocked_b))), window_from,
                        window_until);

  std::vector<std::optional<sim::Time>> delivered_at(planned.size());
  for (std::size_t m = 0; m < planned.size(); ++m) {
    const auto [from, to, sent_ms] = planned[m];
    simulation.at(sent_ms * kMillisecond, [&, m, from = from, to = to] {
      network.send(*nodes[static_cast<std::size_t>(from)], *nodes[static_cast<std::size_t>(to)],
                   [&simulation, &delivered_at, m] { delivered_at[m] = simulation.now(); });
    });
  }
  simulation.run();

  auto in_window = [&](sim::Time t) { return t >= window_from && t < window_until; };
  std::uint64_t expected_blocked = 0;
  bool blocked_at_send_only = false;
  bool blocked_at_arrival_only = false;
  bool spans_the_window = false;
  for (std::size_t m = 0; m < planned.size(); ++m) {
    const auto [from, to, sent_ms] = planned[m];
    const int group_from = node_groups[static_cast<std::size_t>(from)];
    const int group_to = node_groups[static_cast<std::size_t>(to)];
    const bool across = (group_from == blocked_a && group_to == blocked_b) ||
                        (group_from == blocked_b && group_to == blocked_a);
    const sim::Time sent_at = sent_ms * kMillisecond;
    const bool blocked = across && (in_window(sent_at) || in_window(sent_at + latency));
    expected_blocked += blocked ? 1 : 0;
    blocked_at_send_only = blocked_at_send_only || (blocked && !in_window(sent_at + latency));
    blocked_at_arrival_only = blocked_at_arrival_only || (blocked && !in_window(sent_at));
    spans_the_window = spans_the_window || (across && sent_at < window_from && sent_at + latency >= window_until &&
                                            window_from < window_until);
    if (blocked) {
      RC_ASSERT(!delivered_at[m].has_value());
    } else {
      RC_ASSERT(delivered_at[m].has_value());
      RC_ASSERT(*delivered_at[m] == sent_at + latency);
    }
  }
  RC_ASSERT(network.stats().partitioned == expected_blocked);
  RC_TAG(expected_blocked > 0 ? "some blocked" : "none blocked");
  if (blocked_at_send_only) RC_TAG("blocked at send only");
  if (blocked_at_arrival_only) RC_TAG("blocked at arrival only");
  if (spans_the_window) RC_TAG("a crossing message spans the whole window");
}

// Property: over a random lossy, duplicating network with random latency and service times and a server that
// crashes and restarts, every call returns either its own response strictly before its timeout, or nullopt exactly
// at its timeout; and of all the responses that reach a caller for one call, it takes at most one (the others are
// reported as late), so no response is ever taken twice or by another call.
RC_GTEST_PROP(NetworkProperties, RpcOverALossyNetworkNeverAnswersAfterTheTimeoutAndNeverTwice, ()) {
  const auto seed = *rc::gen::inRange<std::uint64_t>(1, 1000000);
  const double loss = *rc::gen::inRange(0, 500) / 1000.0;
  const double ack_loss = *rc::gen::inRange(0, 500) / 1000.0;
  const double duplicate = *rc::gen::inRange(0, 600) / 1000.0;
  const bool exponential_latency = *rc::gen::arbitrary<bool>();
  const sim::Duration latency_scale = *rc::gen::inRange(1, 6) * kMillisecond;
  const sim::Duration timeout = *rc::gen::inRange(1, 25) * kMillisecond;
  const bool serial = *rc::gen::arbitrary<bool>();
  const bool slow_service = *rc::gen::arbitrary<bool>();
  const int clients = *rc::gen::inRange(1, 5);
  const int calls_per_client = *rc::gen::inRange(1, 30);
  const auto server_flips_ms = *rc::gen::container<std::vector<int>>(rc::gen::inRange(0, 300));

  sim::Simulation simulation({.seed = seed});
  simulation.trace().keep_records(true);
  sim::Network network(simulation, simulation.rng("network"));
  sim::LinkConfig link;
  link.latency = exponential_latency ? sim::Distribution::exponential(latency_scale)
                                     : parse_distribution(std::string("uniform(0ms, ") + sim::format_duration(2 * latency_scale) + ")");
  link.loss = loss;
  link.ack_loss = ack_loss;
  link.duplicate = duplicate;
  network.set_default_link(link);
  auto& server = simulation.add_node("server", "store");
  sim::Service service{&server,
                       slow_service ? sim::Distribution::exponential(kMillisecond) : sim::Distribution::constant(0),
                       serial, 0};
  for (int flip_ms : server_flips_ms) {
    simulation.at(flip_ms * kMillisecond, [&server] {
      if (server.alive()) {
        server.crash();
      } else {
        server.restart();
      }
    });
  }

  struct Outcome {
    sim::NodeId caller = 0;
    sim::Time started = 0;
    sim::Time returned = 0;
    std::optional<std::uint64_t> response;
  };
  std::map<std::uint64_t, Outcome> outcomes;
  std::map<std::uint64_t, int> handler_runs;
  for (int c = 0; c < clients; ++c) {
    auto& client = simulation.add_node(numbered("client", static_cast<std::uint64_t>(c)), "consumers");
    client.set_main([&, c] {
      sim::Rng pauses = simulation.rng(numbered("pauses", static_cast<std::uint64_t>(c)));
      for (int k = 0; k < calls_per_client; ++k) {
        const auto tag = static_cast<std::uint64_t>(c * 1000 + k + 1);
        Outcome& outcome = outcomes[tag];
        outcome.caller = sim::this_node().id();
        outcome.started = sim::now();
        outcome.response = network.call(
            service, [&handler_runs, tag] { ++handler_runs[tag]; return tag; }, timeout, tag);
        outcome.returned = sim::now();
        if (pauses.bernoulli(0.5)) sim::sleep(static_cast<sim::Duration>(pauses.below(3 * kMillisecond)));
      }
    });
    client.start();
  }
  simulation.run();

  RC_ASSERT(outcomes.size() == static_cast<std::size_t>(clients * calls_per_client));
  std::map<std::uint64_t, int> responses_reaching_caller;
  std::map<std::uint64_t, int> late;
  for (const auto& r : simulation.trace().records()) {
    if (r.kind == sim::kinds::kDeliver.id && outcomes.count(r.a) > 0 && r.node == outcomes[r.a].caller) {
      ++responses_reaching_caller[r.a];
    }
    if (r.kind == sim::kinds::kLateResponse.id) ++late[r.a];
  }
  bool some_answered = false;
  bool some_timed_out = false;
  for (const auto& [tag, outcome] : outcomes) {
    RC_ASSERT(handler_runs[tag] <= 2);
    if (outcome.response.has_value()) {
      some_answered = true;
      RC_ASSERT(*outcome.response == tag);
      RC_ASSERT(handler_runs[tag] >= 1);
      RC_ASSERT(outcome.returned - outcome.started < timeout);
    } else {
      some_timed_out = true;
      RC_ASSERT(outcome.returned - outcome.started == timeout);
    }
    const int taken = outcome.response.has_value() ? 1 : 0;
    RC_ASSERT(responses_reaching_caller[tag] == taken + late[tag]);
  }
  RC_TAG(some_answered ? "answered" : "none answered");
  RC_TAG(some_timed_out ? "timed out" : "none timed out");
}

}  // namespace network_test
