// Tests of the simulated store checked as it records (Store::set_check_incrementally): the same verdict as the
// whole recorded history's check, over lossy and duplicating networks and with the deliberate store bugs, and a
// memory that follows the calls in flight.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "check/history.hpp"
#include "world/store_server.hpp"

namespace store_incremental_test {

using lethe::Key;
using lethe::Store;
using lethe::StoreBug;
using lethe::StoreSettings;
using lethe::lin::Verdict;
using sim::kMillisecond;

sim::Distribution parse_distribution(const std::string& text) {
  std::string error;
  auto parsed = sim::Distribution::parse(text, {}, error);
  if (!parsed) throw std::invalid_argument(error);
  return *parsed;
}

struct Outcome {
  Verdict verdict = Verdict::Unknown;
  std::string explanation;
  std::uint64_t duplicates = 0;
  std::uint64_t no_responses = 0;
  std::size_t most_live_calls = 0;
  std::size_t most_checker_operations = 0;
};

// Clients read, increment, claim, put, delete and expire a few keys over a network that loses requests and
// acknowledgements and duplicates requests; the same seed gives the same run whichever way the history is checked.
// With `lines`: the history, one line each (check/history.hpp), the whole history's when not incremental, else
// what the store handed on as operations ended.
Outcome run_workload(std::uint64_t seed, StoreBug bug, bool incremental, double duplicate, int ops_per_client = 30,
                     Key keys = 2, double loss = 0.05, std::vector<std::string>* lines = nullptr) {
  StoreSettings settings;
  settings.latency = parse_distribution("uniform(50us, 1ms)");
  settings.rpc_timeout = 8 * kMillisecond;
  sim::LinkConfig link;
  link.latency = parse_distribution("uniform(100us, 3ms)");
  link.loss = loss;
  link.ack_loss = loss;
  link.duplicate = duplicate;
  sim::Simulation simulation({.seed = seed, .policy = sim::SchedulePolicy::Fifo});
  sim::Network network(simulation, simulation.rng("network"));
  network.set_default_link(link);
  sim::Node& store_node = simulation.add_node("store", "store");
  Store store(simulation, network, store_node, settings);
  if (incremental) store.set_check_incrementally(true);
  if (incremental && lines != nullptr) {
    store.set_on_history([lines](const lethe::StoreOperation& operation) {
      std::ostringstream line;
      lethe::history::write_store_operation(line, operation);
      lines->push_back(line.str());
    });
  }
  if (bug != StoreBug::None) store.set_bug(bug, 0.3);
  std::vector<std::unique_ptr<lethe::SimStoreClient>> clients;
  Outcome outcome;
  for (int index = 0; index < 4; ++index) {
    sim::Node& node = simulation.add_node("client" + std::to_string(index), "clients");
    clients.push_back(std::make_unique<lethe::SimStoreClient>(store, node));
    lethe::SimStoreClient& client = *clients.back();
    node.set_main([&, index] {
      sim::Rng rng = simulation.rng("workload" + std::to_string(index));
      for (int round = 0; round < ops_per_client; ++round) {
        sim::sleep(static_cast<sim::Duration>(rng.exponential(1.0 * kMillisecond)));
        const Key key = 1 + rng.below(keys);
        const std::uint64_t choice = rng.below(11);
        lethe::Update update;
        update.counter_add = 1;
        lethe::Condition condition;
        if (choice < 3) {
          (void)client.execute(lethe::get_op(key));
        } else if (choice < 5) {
          (void)client.execute(lethe::upsert_op(key, condition, update));
        } else if (choice < 7) {
          update.owner_mode = lethe::Assign::Set;
          update.owner = static_cast<lethe::AttemptId>(index + 1);
          condition.require_absent = rng.below(2) == 0;
          (void)client.execute(lethe::upsert_op(key, condition, update));
        } else if (choice < 8) {
          lethe::Item item;
          item.counter = 100 + round;
          item.expires_on = simulation.now() + 2 * kMillisecond;  // the sweeper evicts it (a server-only operation)
          (void)client.execute(lethe::put_op(key, item));
        } else if (choice < 9) {
          (void)client.execute(lethe::delete_op(key));
        } else {
          lethe::TransactionPart first{key, {}, update};
          lethe::TransactionPart second{key == 1 ? Key{2} : Key{1}, {}, update};
          (void)client.execute(lethe::transaction_op({first, second}));
        }
        outcome.most_live_calls = std::max(outcome.most_live_calls, store.live_calls());
        if (store.checker() != nullptr) {
          outcome.most_checker_operations = std::max(outcome.most_checker_operations, store.checker()->live_operations());
        }
      }
    });
    node.start();
  }
  simulation.run();
  const lethe::lin::Result result = store.check_history(20'000'000);
  outcome.verdict = result.verdict;
  outcome.explanation = result.explanation;
  outcome.duplicates = store.stats().duplicate_executions;
  outcome.no_responses = store.stats().no_responses;
  if (!incremental && lines != nullptr) {
    for (const lethe::StoreOperation& operation : store.history()) {
      std::ostringstream line;
      lethe::history::write_store_operation(line, operation);
      lines->push_back(line.str());
    }
  }
  if (incremental) {
    EXPECT_TRUE(store.history().empty());
    EXPECT_TRUE(store.eviction_log().empty());
  }
  return outcome;
}

// Under the sanitizers each run takes seconds: seeds 1..2 of each bug (one with duplicated requests, one
// without), and a shorter long run. The counts asserted below hold for both.
#ifdef LETHE_SANITIZE
constexpr std::uint64_t kSeedsPerBug = 2;
constexpr int kLongRunOpsPerClient = 200;
#else
constexpr std::uint64_t kSeedsPerBug = 8;
constexpr int kLongRunOpsPerClient = 800;
#endif

TEST(StoreIncremental, VerdictEqualsTheWholeHistoryCheckOnLossyDuplicatingNetworksAndWithEachBug) {
  std::uint64_t duplicates = 0;
  std::uint64_t no_responses = 0;
  int caught = 0;
  int undecided = 0;
  for (StoreBug bug : {StoreBug::None, StoreBug::StaleRead, StoreBug::LostWrite, StoreBug::NonAtomicUpsert}) {
    for (std::uint64_t seed = 1; seed <= kSeedsPerBug; ++seed) {
      const double duplicate = seed % 2 == 0 ? 0.2 : 0.0;
      const Outcome whole = run_workload(seed, bug, false, duplicate);
      const Outcome incremental = run_workload(seed, bug, true, duplicate);
      ASSERT_NE(whole.verdict, Verdict::Unknown) << whole.explanation;
      // Many unanswered increments of one key multiply the configurations the incremental checker keeps (the
      // whole-history search needs only one order): it may run out of its budget, never disagree.
      if (incremental.verdict == Verdict::Unknown) {
        ++undecided;
        continue;
      }
      EXPECT_EQ(lethe::lin::to_string(incremental.verdict), lethe::lin::to_string(whole.verdict))
          << to_string(bug) << " seed " << seed << ": " << incremental.explanation << " / " << whole.explanation;
      if (whole.verdict == Verdict::NotLinearizable) ++caught;
      duplicates += incremental.duplicates;
      no_responses += incremental.no_responses;
    }
  }
  // The runs exercised what the incremental recording must get right.
  EXPECT_GT(duplicates, 10u);
  EXPECT_GT(no_responses, 10u);
  EXPECT_GT(caught, 4);
  EXPECT_LE(undecided, 8) << "of " << 4 * kSeedsPerBug << " runs";
}

// The history handed on as operations end (`lethe run --history`) holds exactly the whole history's operations,
// duplicates, abandoned calls, calls still in flight at the end and sweeper evictions included.
TEST(StoreIncremental, TheHistoryHandedOnAsOperationsEndHasEveryOperationOfTheWholeHistory) {
  std::size_t operations = 0;
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    std::vector<std::string> whole;
    std::vector<std::string> handed_on;
    (void)run_workload(seed, StoreBug::None, false, 0.2, 30, 2, 0.05, &whole);
    (void)run_workload(seed, StoreBug::None, true, 0.2, 30, 2, 0.05, &handed_on);
    std::sort(whole.begin(), whole.end());
    std::sort(handed_on.begin(), handed_on.end());
    EXPECT_EQ(handed_on, whole) << "seed " << seed;
    operations += whole.size();
  }
  EXPECT_GT(operations, 400u);
}

TEST(StoreIncremental, KeepsOnlyTheCallsInFlightOverALongRun) {
  // No loss (an unanswered call stays a candidate for ever), but duplicated requests.
  const Outcome outcome = run_workload(3, StoreBug::None, true, 0.2, kLongRunOpsPerClient, 300, 0.0);
  EXPECT_EQ(outcome.verdict, Verdict::Linearizable) << outcome.explanation;
  EXPECT_LE(outcome.most_live_calls, 4u);
  EXPECT_LE(outcome.most_checker_operations, 64u);
}

}  // namespace store_incremental_test
