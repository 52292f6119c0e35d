// Schedule policy tests: FIFO as it always was, Random as a seeded permutation of the ready fibers, PCT as
// priorities with change points. Each round below wakes every fiber at the same instant, so only the policy
// orders them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sim/network.hpp"
#include "sim/node.hpp"
#include "sim/simulation.hpp"

namespace schedule_test {

using sim::kMillisecond;

struct Resume {
  std::uint64_t step;  // the scheduling step that picked the fiber
  int fiber;
  int round;
};

// `fibers` fibers, each waking `rounds` times at the same instants (1 ms apart). Returns every resume in order.
std::vector<Resume> same_instant_rounds(const sim::SimulationOptions& options, int fibers, int rounds) {
  sim::Simulation simulation(options);
  std::vector<Resume> resumes;
  for (int i = 0; i < fibers; ++i) {
    auto& node = simulation.add_node("n" + std::to_string(i), "workers");
    node.set_main([&simulation, &resumes, i, rounds] {
      for (int round = 0; round < rounds; ++round) {
        sim::sleep(kMillisecond);
        resumes.push_back(Resume{simulation.schedule_steps(), i, round});
      }
    });
    node.start();
  }
  simulation.run();
  return resumes;
}

// The order of the fibers in each round.
std::vector<std::vector<int>> orders_by_round(const std::vector<Resume>& resumes, int rounds) {
  std::vector<std::vector<int>> orders(static_cast<std::size_t>(rounds));
  for (const Resume& r : resumes) orders[static_cast<std::size_t>(r.round)].push_back(r.fiber);
  return orders;
}

bool is_permutation_of_first(const std::vector<int>& order, int n) {
  std::vector<int> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < n; ++i) {
    if (sorted.size() != static_cast<std::size_t>(n) || sorted[static_cast<std::size_t>(i)] != i) return false;
  }
  return true;
}

sim::SimulationOptions pct(std::uint64_t seed, int depth, std::uint64_t steps) {
  return sim::SimulationOptions{.seed = seed, .policy = sim::SchedulePolicy::Pct, .pct_depth = depth,
                                .pct_steps = steps};
}

TEST(SchedulePolicy, FifoIsUnchangedByTheNewCode) {
  // Fibers ready at one instant run in the order they became ready, every round.
  const auto fifo = orders_by_round(same_instant_rounds({.seed = 9}, 5, 4), 4);
  for (const auto& order : fifo) EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
  // The trace hash of a FIFO run is the one the kernel gave before Random and Pct had trace records or
  // priorities (pinned from that kernel): FIFO draws nothing and records nothing more.
  sim::Simulation simulation({.seed = 4});
  sim::Network network(simulation, simulation.rng("network"));
  auto& server = simulation.add_node("server", "store");
  sim::Service service{&server, sim::Distribution::constant(0), false, 0};
  for (int i = 0; i < 3; ++i) {
    auto& node = simulation.add_node("c" + std::to_string(i), "consumers");
    node.set_main([&network, &service, i] {
      for (int k = 0; k < 3; ++k) {
        sim::sleep(kMillisecond);
        (void)network.call(service, [] { return 1; }, 10 * kMillisecond, static_cast<std::uint64_t>(i));
      }
    });
    node.start();
  }
  simulation.run();
  EXPECT_EQ(simulation.trace().hash(), 0xb9f3935cc757309bull);
  EXPECT_TRUE(simulation.pct_change_points().empty());
}

TEST(SchedulePolicy, RandomScheduleIsAPermutationAndDeterministicPerSeed) {
  std::set<std::vector<int>> seen;
  for (std::uint64_t seed = 1; seed <= 30; ++seed) {
    const sim::SimulationOptions options{.seed = seed, .policy = sim::SchedulePolicy::Random};
    const auto resumes = same_instant_rounds(options, 5, 4);
    const auto again = same_instant_rounds(options, 5, 4);
    ASSERT_EQ(resumes.size(), again.size());
    for (std::size_t i = 0; i < resumes.size(); ++i) EXPECT_EQ(resumes[i].fiber, again[i].fiber) << "seed " << seed;
    for (const auto& order : orders_by_round(resumes, 4)) {
      EXPECT_TRUE(is_permutation_of_first(order, 5)) << "seed " << seed;
      seen.insert(order);
    }
  }
  // 120 orders of 5 fibers exist; 120 rounds drawn uniformly show far more than a handful of them.
  EXPECT_GT(seen.size(), 40u);
}

TEST(SchedulePolicy, PctRunsTheHighestPriorityReadyFiber) {
  // Depth 1: no change point, so each fiber keeps the priority it drew at spawn. The highest-priority ready
  // fiber always runs first: every round has the same order, a permutation that varies with the seed.
  std::set<std::vector<int>> first_rounds;
  for (std::uint64_t seed = 1; seed <= 30; ++seed) {
    const auto orders = orders_by_round(same_instant_rounds(pct(seed, 1, 0), 5, 4), 4);
    EXPECT_TRUE(is_permutation_of_first(orders[0], 5));
    for (const auto& order : orders) EXPECT_EQ(order, orders[0]) << "seed " << seed;
    first_rounds.insert(orders[0]);
  }
  EXPECT_GT(first_rounds.size(), 15u);
}

TEST(SchedulePolicy, PctDemotesTheFiberPickedAtAChangePointBelowEveryOther) {
  // With the same seed the fibers draw the same priorities whatever the depth: depth 1 shows their order.
  // With depth 2 the fiber picked at the change point runs last in every later round, the others keep theirs.
  int demotions_seen = 0;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const int fibers = 4;
    const int rounds = 6;
    const auto priority_order = orders_by_round(same_instant_rounds(pct(seed, 1, 0), fibers, rounds), rounds)[0];
    const std::uint64_t steps = static_cast<std::uint64_t>(fibers * (rounds + 1));
    std::uint64_t change = 0;
    {
      sim::Simulation probe(pct(seed, 2, steps));
      ASSERT_EQ(probe.pct_change_points().size(), 1u);
      change = probe.pct_change_points()[0];
      EXPECT_GE(change, 1u);
      EXPECT_LE(change, steps);
    }
    const auto resumes = same_instant_rounds(pct(seed, 2, steps), fibers, rounds);
    const auto picked = std::find_if(resumes.begin(), resumes.end(), [&](const Resume& r) { return r.step == change; });
    if (picked == resumes.end()) continue;  // the change point fell on a fiber's start, before its first round
    ++demotions_seen;
    std::vector<int> expected = priority_order;
    expected.erase(std::find(expected.begin(), expected.end(), picked->fiber));
    expected.push_back(picked->fiber);
    const auto orders = orders_by_round(resumes, rounds);
    for (int round = picked->round + 1; round < rounds; ++round) {
      EXPECT_EQ(orders[static_cast<std::size_t>(round)], expected) << "seed " << seed << " round " << round;
    }
  }
  EXPECT_GT(demotions_seen, 10);
}

TEST(SchedulePolicy, PctChangePointsAreDistinctStepsWithinTheBoundAndDeterministicPerSeed) {
  for (std::uint64_t seed = 1; seed <= 50; ++seed) {
    for (const auto& [depth, steps] : std::vector<std::pair<int, std::uint64_t>>{{3, 1000}, {5, 4}, {6, 5}, {8, 3}}) {
      std::vector<std::uint64_t> points;
      {
        sim::Simulation simulation(pct(seed, depth, steps));
        points = simulation.pct_change_points();
      }
      EXPECT_EQ(points.size(), std::min<std::uint64_t>(static_cast<std::uint64_t>(depth - 1), steps));
      EXPECT_TRUE(std::is_sorted(points.begin(), points.end()));
      EXPECT_EQ(std::adjacent_find(points.begin(), points.end()), points.end()) << "a step drawn twice";
      for (std::uint64_t p : points) {
        EXPECT_GE(p, 1u);
        EXPECT_LE(p, steps);
      }
      sim::Simulation again(pct(seed, depth, steps));
      EXPECT_EQ(again.pct_change_points(), points);
    }
  }
}

TEST(SchedulePolicy, PctNeedsAStepBoundWhenItHasChangePoints) {
  EXPECT_THROW(sim::Simulation(pct(1, 3, 0)), std::invalid_argument);
  EXPECT_THROW(sim::Simulation(pct(1, 0, 10)), std::invalid_argument);
  EXPECT_NO_THROW(sim::Simulation(pct(1, 1, 0)));
}

TEST(SchedulePolicy, StepsCountEveryPickTheSameWithAndWithoutTheFastPath) {
  for (auto policy : {sim::SchedulePolicy::Fifo, sim::SchedulePolicy::Random, sim::SchedulePolicy::Pct}) {
    std::uint64_t counted[2] = {0, 0};
    for (bool fast_path : {true, false}) {
      sim::Simulation simulation(
          {.seed = 3, .policy = policy, .fast_path = fast_path, .pct_depth = 3, .pct_steps = 40});
      for (int i = 0; i < 3; ++i) {
        auto& node = simulation.add_node("n" + std::to_string(i), "workers");
        node.set_main([] {
          for (int k = 0; k < 4; ++k) sim::sleep(kMillisecond);
        });
        node.start();
      }
      simulation.run();
      counted[fast_path ? 1 : 0] = simulation.schedule_steps();
    }
    // Three fibers: a start and four wake-ups each.
    EXPECT_EQ(counted[0], 15u);
    EXPECT_EQ(counted[1], 15u);
  }
}

TEST(SchedulePolicy, OnlyANonFifoPolicyEntersTheTraceHash) {
  // Three fibers that never share an instant: every policy runs them alike, and only the record of the policy
  // tells the hashes apart.
  auto hash = [](sim::SimulationOptions options, std::uint64_t* records) {
    sim::Simulation simulation(options);
    for (int i = 0; i < 3; ++i) {
      auto& node = simulation.add_node("n" + std::to_string(i), "workers");
      node.set_main([i] { sim::sleep((i + 1) * kMillisecond); });
      node.start();
    }
    simulation.run();
    *records = simulation.trace().count();
    return simulation.trace().hash();
  };
  std::uint64_t fifo_records = 0;
  std::uint64_t random_records = 0;
  std::uint64_t pct_records = 0;
  const std::uint64_t fifo = hash({.seed = 1}, &fifo_records);
  const std::uint64_t random = hash({.seed = 1, .policy = sim::SchedulePolicy::Random}, &random_records);
  const std::uint64_t pct3 = hash(pct(1, 3, 10), &pct_records);
  std::uint64_t ignored = 0;
  EXPECT_EQ(fifo_records + 1, random_records);
  EXPECT_EQ(fifo_records + 1, pct_records);
  EXPECT_NE(fifo, random);
  EXPECT_NE(fifo, pct3);
  EXPECT_NE(random, pct3);
  EXPECT_NE(pct3, hash(pct(1, 2, 10), &ignored));  // the depth is recorded too
  EXPECT_EQ(pct3, hash(pct(1, 3, 10), &ignored));
}

}  // namespace schedule_test
