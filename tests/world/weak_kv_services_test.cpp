// world/external_services.hpp: seq-kv and lww-kv, driven with random operations, hold their own models
// (check/weak_kv.hpp) on every seed, and answer stale exactly when lin-kv would have answered otherwise.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "check/weak_kv.hpp"
#include "sim/simulation.hpp"
#include "world/external_services.hpp"

namespace weak_kv_services_test {

using lethe::WeakKvOp;
using lethe::WeakKvType;

// One random operation of `node` on one of three keys, with values that repeat (so a stale value can pass for a
// fresh one only by being equal to it).
struct Drawn {
  WeakKvType type;
  std::string key;
  std::string value;
  std::string from;
  bool create;
};
Drawn draw(sim::Rng& rng) {
  const auto type = static_cast<WeakKvType>(rng.below(3));
  return Drawn{type, "k" + std::to_string(rng.below(3)), "v" + std::to_string(rng.below(4)),
               "v" + std::to_string(rng.below(4)), rng.below(2) == 1};
}
WeakKvOp record(std::uint32_t node, lethe::lin::Time at, const Drawn& d, const lethe::KvAnswer& answer) {
  return WeakKvOp{node, at, at, d.key, d.type, d.value, d.from, d.create, answer.code, answer.value};
}

// Each node's operations one after another, the nodes interleaved at random: seq-kv's answers are sequentially
// consistent per key whatever the interleaving (a cas that compared at the head is seen by the node's next read).
TEST(WeakKvServices, SeqKvHistoriesAreSequentiallyConsistentOnEverySeed) {
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    sim::Rng rng(seed);
    lethe::SeqKv kv(sim::Rng(seed * 7 + 1));
    std::vector<WeakKvOp> history;
    for (lethe::lin::Time at = 0; at < 40; ++at) {
      const auto node = static_cast<std::uint32_t>(rng.below(3));
      const std::string name = "n" + std::to_string(node);
      const Drawn d = draw(rng);
      const lethe::KvAnswer answer = d.type == WeakKvType::Read    ? kv.read(name, d.key)
                                     : d.type == WeakKvType::Write ? kv.write(name, d.key, d.value)
                                                                   : kv.cas(name, d.key, d.from, d.value, d.create);
      history.push_back(record(node, at, d, answer));
    }
    const lethe::WeakKvVerdict verdict = lethe::check_weak_kv_sequential(history);
    ASSERT_EQ(verdict.holds, true) << "seed " << seed << ": " << verdict.why;
  }
}

// lww-kv's replicas lag: its answers read from writes (no value from nowhere or from the future), and every
// operation done linearizable (KvLinearizable) makes the whole history linearizable.
TEST(WeakKvServices, LwwKvReadsFromWritesAndItsLinearizableAnswersAreLinearizable) {
  for (const bool linearizable : {false, true}) {
    for (std::uint64_t seed = 1; seed <= 100; ++seed) {
      sim::Simulation simulation;
      sim::Rng rng(seed);
      lethe::LwwKv kv(simulation, sim::Rng(seed * 7 + 1));
      std::vector<WeakKvOp> history;
      for (int i = 0; i < 40; ++i) {
        const sim::Time at = simulation.now() + static_cast<sim::Duration>(rng.below(100)) *
                                                           sim::kMillisecond;
        simulation.run_until(at);
        const auto node = static_cast<std::uint32_t>(rng.below(3));
        const Drawn d = draw(rng);
        const lethe::KvAnswer answer = d.type == WeakKvType::Read    ? kv.read(d.key, linearizable)
                                       : d.type == WeakKvType::Write ? kv.write(d.key, d.value)
                                                                     : kv.cas(d.key, d.from, d.value, d.create,
                                                                              linearizable);
        history.push_back(record(node, simulation.now(), d, answer));
        if (linearizable) {
          ASSERT_FALSE(answer.stale) << "seed " << seed;
        }
      }
      simulation.run();
      ASSERT_EQ(lethe::check_weak_kv_reads_from_writes(history).holds, true) << "seed " << seed;
      if (linearizable) {
        const lethe::WeakKvVerdict verdict = lethe::check_weak_kv_linearizable(history);
        ASSERT_EQ(verdict.holds, true) << "seed " << seed << ": " << verdict.why;
      }
    }
  }
}

// Some seed shows what lww-kv is for: a stale answer, and a history that is not linearizable.
TEST(WeakKvServices, LwwKvAnswersStaleAndIsNotLinearizableOnSomeSeed) {
  bool stale = false;
  bool not_linearizable = false;
  for (std::uint64_t seed = 1; seed <= 50 && !(stale && not_linearizable); ++seed) {
    sim::Simulation simulation;
    sim::Rng rng(seed);
    lethe::LwwKv kv(simulation, sim::Rng(seed * 7 + 1));
    std::vector<WeakKvOp> history;
    for (int i = 0; i < 40; ++i) {
      simulation.run_until(simulation.now() + static_cast<sim::Duration>(rng.below(100)) *
                                                  sim::kMillisecond);
      const Drawn d = draw(rng);
      const lethe::KvAnswer answer = d.type == WeakKvType::Read    ? kv.read(d.key)
                                     : d.type == WeakKvType::Write ? kv.write(d.key, d.value)
                                                                   : kv.cas(d.key, d.from, d.value, d.create);
      stale = stale || answer.stale;
      history.push_back(record(0, simulation.now(), d, answer));
    }
    not_linearizable = not_linearizable || lethe::check_weak_kv_linearizable(history).holds == false;
  }
  EXPECT_TRUE(stale);
  EXPECT_TRUE(not_linearizable);
}

}  // namespace weak_kv_services_test
