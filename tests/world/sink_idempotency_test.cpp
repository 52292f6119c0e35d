// The provider's idempotency keys (world/sink.hpp, step 4): the retention window, the 409 for a call whose key
// is still being processed, the 422 for a key reused with other parameters, and what the worker's client does
// on a 409.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/network.hpp"
#include "sim/node.hpp"
#include "sim/simulation.hpp"
#include "world/sink.hpp"

namespace sink_idempotency_test {

using lethe::SinkRequest;
using lethe::SinkResponse;
using lethe::SinkSection;
using sim::kHour;
using sim::kMillisecond;
using sim::kSecond;

SinkSection idempotent_payment() {
  SinkSection section;
  section.kind = "payment";
  section.idempotent = true;
  section.latency = sim::Distribution::constant(20 * kMillisecond);
  return section;
}

struct Provider {
  sim::Simulation simulation;
  sim::Network network;
  sim::Node& node;
  lethe::Sink sink;
  sim::Node& worker;

  explicit Provider(const SinkSection& section)
      : simulation({.seed = 1}),
        network(simulation, simulation.rng("network")),
        node(simulation.add_node("sink", "sink")),
        sink(simulation, network, node, section, simulation.rng("sink")),
        worker(simulation.add_node("worker", "consumers")) {
    sim::LinkConfig link;
    link.latency = sim::Distribution::constant(kMillisecond);
    network.set_default_link(link);
  }
};

SinkRequest request(std::uint32_t call_number, lethe::AttemptId attempt = 1, std::uint64_t payload = 0) {
  SinkRequest r;
  r.id = 7;
  r.processor = 0;
  r.attempt = attempt;
  r.call_number = call_number;
  r.payload = payload;
  return r;
}

// Decides `r` at instant `at` (arrive and handle at once, as a call with no service time).
SinkResponse decide_at(Provider& p, sim::Time at, SinkRequest r) {
  SinkResponse response;
  p.simulation.at(at, [&p, &response, r]() mutable {
    r.key_busy = p.sink.arrive(r);
    response = p.sink.handle(r);
  });
  p.simulation.run();
  return response;
}

TEST(SinkIdempotencyWindow, AKeyOlderThanTheWindowIsPrunedAndTheNextCallChargesAgain) {
  SinkSection section = idempotent_payment();
  section.idempotency_window = 24 * kHour;
  Provider p(section);
  const SinkResponse first = decide_at(p, 0, request(1));
  const SinkResponse inside = decide_at(p, 24 * kHour - 1, request(2));
  EXPECT_EQ(inside.value, first.value);  // still kept: the first charge's id
  EXPECT_EQ(p.sink.replays(), 1u);
  EXPECT_EQ(p.sink.executions().size(), 1u);
  const SinkResponse after = decide_at(p, 24 * kHour, request(3));
  EXPECT_EQ(p.sink.keys_expired(), 1u);
  ASSERT_EQ(p.sink.executions().size(), 2u);  // pruned: a new request, a second charge
  EXPECT_NE(after.value, first.value);
  const SinkResponse again = decide_at(p, 25 * kHour, request(4));
  EXPECT_EQ(again.value, after.value);  // the key stored anew at 24h is kept for another window
  EXPECT_EQ(p.sink.executions().size(), 2u);
}

TEST(SinkIdempotencyWindow, NoneKeepsKeysForever) {
  Provider p(idempotent_payment());  // idempotency_window defaults to "none"
  const SinkResponse first = decide_at(p, 0, request(1));
  const SinkResponse late = decide_at(p, 3000 * 24 * kHour, request(2));
  EXPECT_EQ(late.value, first.value);
  EXPECT_EQ(p.sink.executions().size(), 1u);
  EXPECT_EQ(p.sink.keys_expired(), 0u);
}

TEST(SinkInProgress, ACallArrivingWhileTheOriginalIsInServiceGets409AndExecutesNothing) {
  SinkSection section = idempotent_payment();
  section.in_progress = lethe::KeyInProgress::Conflict;
  Provider p(section);
  SinkRequest original = request(1);
  SinkRequest retry = request(2);
  original.key_busy = p.sink.arrive(original);
  retry.key_busy = p.sink.arrive(retry);  // the original is still in service
  EXPECT_FALSE(original.key_busy);
  EXPECT_TRUE(retry.key_busy);
  const SinkResponse conflict = p.sink.handle(retry);
  EXPECT_TRUE(conflict.conflict);
  EXPECT_TRUE(p.sink.executions().empty());
  const SinkResponse charged = p.sink.handle(original);
  EXPECT_FALSE(charged.conflict);
  ASSERT_EQ(p.sink.executions().size(), 1u);
  SinkRequest later = request(3);
  later.key_busy = p.sink.arrive(later);  // the original is done: its result is replayed, no 409
  EXPECT_FALSE(later.key_busy);
  EXPECT_EQ(p.sink.handle(later).value, charged.value);
  EXPECT_EQ(p.sink.conflicts(), 1u);
  EXPECT_EQ(p.sink.executions().size(), 1u);
}

TEST(SinkInProgress, SerializeNeverAnswers409) {
  Provider p(idempotent_payment());
  SinkRequest original = request(1);
  SinkRequest retry = request(2);
  original.key_busy = p.sink.arrive(original);
  retry.key_busy = p.sink.arrive(retry);
  EXPECT_FALSE(retry.key_busy);
  const SinkResponse second_first = p.sink.handle(retry);  // decided first: it executes
  const SinkResponse first_second = p.sink.handle(original);
  EXPECT_FALSE(second_first.conflict);
  EXPECT_EQ(first_second.value, second_first.value);
  EXPECT_EQ(p.sink.executions().size(), 1u);
  EXPECT_EQ(p.sink.conflicts(), 0u);
}

// Property: with in_progress = "conflict", whatever the order in which calls of one key arrive and are decided,
// the provider executes the key at most once, and every call answered with a value gets that execution's value.
RC_GTEST_PROP(SinkInProgress, ConflictExecutesAKeyAtMostOnceAndEveryAnswerIsTheOneExecution, ()) {
  const auto calls = *rc::gen::inRange<std::size_t>(1, 8);
  // Each call arrives, then is decided; the schedule interleaves the 2 * calls events at random.
  std::vector<std::size_t> events;
  for (std::size_t i = 0; i < calls; ++i) events.insert(events.end(), {i, i});
  const auto shuffled = *rc::gen::container<std::vector<std::size_t>>(events.size(), rc::gen::arbitrary<std::size_t>());
  std::vector<std::size_t> order(events.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return shuffled[a] < shuffled[b]; });
  std::vector<std::size_t> schedule;
  for (std::size_t i : order) schedule.push_back(events[i]);  // first occurrence of i = arrive, second = decide

  SinkSection section = idempotent_payment();
  section.in_progress = lethe::KeyInProgress::Conflict;
  Provider p(section);
  std::vector<SinkRequest> requests;
  for (std::size_t i = 0; i < calls; ++i) requests.push_back(request(static_cast<std::uint32_t>(i + 1)));
  std::vector<bool> arrived(calls, false);
  std::vector<std::optional<std::uint64_t>> answers(calls);
  for (std::size_t i : schedule) {
    if (!arrived[i]) {
      arrived[i] = true;
      requests[i].key_busy = p.sink.arrive(requests[i]);
      continue;
    }
    const SinkResponse response = p.sink.handle(requests[i]);
    if (!response.conflict) answers[i] = response.value;
  }
  RC_ASSERT(p.sink.executions().size() <= 1u);
  for (const auto& answer : answers) {
    if (answer) RC_ASSERT(*answer == p.sink.executions().front().value);
  }
  // The first call to arrive never gets a 409.
  RC_ASSERT(answers[schedule.front()].has_value());
}

TEST(SinkPayload, AKeyReusedWithOtherParametersGets422AndExecutesNothing) {
  Provider p(idempotent_payment());
  const SinkResponse first = decide_at(p, 0, request(1, 1, /*payload=*/11));
  const SinkResponse other = decide_at(p, kSecond, request(1, 2, /*payload=*/12));
  EXPECT_TRUE(other.mismatch);
  EXPECT_EQ(p.sink.mismatches(), 1u);
  EXPECT_EQ(p.sink.executions().size(), 1u);
  const SinkResponse same = decide_at(p, 2 * kSecond, request(2, 1, /*payload=*/11));
  EXPECT_FALSE(same.mismatch);
  EXPECT_EQ(same.value, first.value);
}

// A client call of (7, processor 0, `attempt`) from the worker node, at `at`.
std::optional<std::uint64_t> client_call(Provider& p, lethe::SinkClient& client, lethe::AttemptId attempt,
                                         sim::Time at) {
  std::optional<std::uint64_t> result;
  p.worker.set_main([&] {
    sim::sleep_until(at);
    result = client.call(7, 0, attempt);
  });
  p.worker.start();
  p.simulation.run();
  return result;
}

TEST(SinkPayload, PerAttemptPayloadMakesARedeliveryFailWith422AndNotRetry) {
  SinkSection section = idempotent_payment();
  section.payload = lethe::SinkPayload::PerAttempt;
  section.retries = 3;
  Provider p(section);
  lethe::SinkClient client(p.sink, p.network, section, p.simulation.rng("client"));
  const auto first = client_call(p, client, 1001, 0);
  ASSERT_TRUE(first.has_value());
  const auto redelivered = client_call(p, client, 1002, kSecond);
  EXPECT_FALSE(redelivered.has_value());
  EXPECT_EQ(client.stats().mismatches, 1u);
  EXPECT_EQ(client.stats().tries, 2u);  // the 422 is not retried
  EXPECT_EQ(p.sink.executions().size(), 1u);
}

// A slow original and a fast retry: the original's service takes 300 ms (1 ms there: in service until 301 ms),
// the client times out after 100 ms and retries after a 100 ms backoff; from 50 ms on the provider serves in 5 ms.
// So try 2 arrives at 201 ms, during the original, and its 409 is back at 207 ms; try 3 arrives at 308 ms,
// after the original stored its result.
struct ConflictRun {
  std::optional<std::uint64_t> result;
  std::size_t executions = 0;
  std::uint64_t conflicts = 0;
  std::uint64_t tries = 0;
};

ConflictRun call_during_slow_original(lethe::OnConflict on_conflict,
                                     lethe::KeyInProgress in_progress = lethe::KeyInProgress::Conflict) {
  SinkSection section = idempotent_payment();
  section.in_progress = in_progress;
  section.on_conflict = on_conflict;
  section.latency = sim::Distribution::constant(300 * kMillisecond);
  section.timeout = 100 * kMillisecond;
  section.retries = 3;
  section.backoff = lethe::Backoff{lethe::BackoffKind::Constant, 100 * kMillisecond, 0, 0};
  Provider p(section);
  p.simulation.at(50 * kMillisecond,
                  [&p] { p.sink.service().service_time = sim::Distribution::constant(5 * kMillisecond); });
  lethe::SinkClient client(p.sink, p.network, section, p.simulation.rng("client"));
  ConflictRun run;
  run.result = client_call(p, client, 1001, 0);
  run.executions = p.sink.executions().size();
  run.conflicts = p.sink.conflicts();
  run.tries = client.stats().tries;
  return run;
}

TEST(SinkOnConflict, RetryTheSameKeyChargesOnceAndReturnsTheOriginalsCharge) {
  const ConflictRun run = call_during_slow_original(lethe::OnConflict::Retry);
  EXPECT_EQ(run.conflicts, 1u);
  EXPECT_EQ(run.executions, 1u);
  EXPECT_EQ(run.tries, 3u);  // the third try is answered with the original's charge
  ASSERT_TRUE(run.result.has_value());
}

TEST(SinkOnConflict, SerializeAnswersTheRetryWithTheOriginalsChargeWithout409) {
  const ConflictRun run = call_during_slow_original(lethe::OnConflict::Retry, lethe::KeyInProgress::Serialize);
  // Try 2 is decided at 206 ms, before the original (301 ms): it executes, and the original replays it.
  EXPECT_EQ(run.conflicts, 0u);
  EXPECT_EQ(run.executions, 1u);
  EXPECT_EQ(run.tries, 2u);
  EXPECT_TRUE(run.result.has_value());
}

TEST(SinkOnConflict, FailGivesUpAtTheFirst409AndTheOriginalStillCharges) {
  const ConflictRun run = call_during_slow_original(lethe::OnConflict::Fail);
  EXPECT_EQ(run.conflicts, 1u);
  EXPECT_FALSE(run.result.has_value());
  EXPECT_EQ(run.executions, 1u);
  EXPECT_EQ(run.tries, 2u);
}

TEST(SinkOnConflict, NewKeyChargesTheCardAgain) {
  const ConflictRun run = call_during_slow_original(lethe::OnConflict::NewKey);
  EXPECT_EQ(run.conflicts, 1u);
  EXPECT_EQ(run.executions, 2u);  // the new key is one the provider never saw
  ASSERT_TRUE(run.result.has_value());
}

}  // namespace sink_idempotency_test
