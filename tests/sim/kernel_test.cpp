// Kernel tests: scheduling order, virtual time, crashes, pauses, channels, determinism.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "sim/channel.hpp"
#include "sim/network.hpp"
#include "sim/node.hpp"
#include "sim/simulation.hpp"

namespace kernel_test {

using sim::kMillisecond;
using sim::kSecond;

TEST(Kernel, SleepAdvancesVirtualTimeOnly) {
  sim::Simulation simulation({.seed = 1});
  auto& node = simulation.add_node("a", "workers");
  std::vector<sim::Time> seen;
  node.set_main([&] {
    seen.push_back(sim::now());
    sim::sleep(5 * kMillisecond);
    seen.push_back(sim::now());
    sim::sleep(0);
    seen.push_back(sim::now());
    sim::sleep(2 * kSecond);
    seen.push_back(sim::now());
  });
  node.start();
  simulation.run();
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0], 0);
  EXPECT_EQ(seen[1], 5 * kMillisecond);
  EXPECT_EQ(seen[2], 5 * kMillisecond);
  EXPECT_EQ(seen[3], 2 * kSecond + 5 * kMillisecond);
  EXPECT_EQ(simulation.now(), 2 * kSecond + 5 * kMillisecond);
  EXPECT_EQ(simulation.live_fibers(), 0u);
}

TEST(Kernel, FifoOrderAmongFibersWakingAtTheSameInstant) {
  sim::Simulation simulation({.seed = 1});
  std::vector<int> order;
  for (int i = 0; i < 5; ++i) {
    auto& node = simulation.add_node("n" + std::to_string(i), "workers");
    node.set_main([&order, i] {
      sim::sleep(kMillisecond);
      order.push_back(i);
      sim::sleep(kMillisecond);
      order.push_back(10 + i);
    });
    node.start();
  }
  simulation.run();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 10, 11, 12, 13, 14}));
}

TEST(Kernel, RunUntilStopsAtTheLimitAndResumes) {
  sim::Simulation simulation({.seed = 1});
  auto& node = simulation.add_node("a", "workers");
  int ticks = 0;
  node.set_main([&] {
    for (int i = 0; i < 10; ++i) {
      sim::sleep(kSecond);
      ++ticks;
    }
  });
  node.start();
  simulation.run_until(3 * kSecond + 1);
  EXPECT_EQ(ticks, 3);
  EXPECT_LE(simulation.now(), 3 * kSecond + 1);
  simulation.run();
  EXPECT_EQ(ticks, 10);
}

struct RaiiCounter {
  int* live;
  explicit RaiiCounter(int* counter) : live(counter) { ++*live; }
  ~RaiiCounter() { --*live; }
};

TEST(Kernel, CrashUnwindsEveryFiberOfTheNodeAndRestartRunsMainAgain) {
  sim::Simulation simulation({.seed = 1});
  auto& victim = simulation.add_node("victim", "workers");
  auto& killer = simulation.add_node("killer", "faults");
  int live = 0;
  int starts = 0;
  bool swallowed_and_rethrown = false;
  victim.set_main([&] {
    ++starts;
    RaiiCounter outer(&live);
    sim::this_node().spawn([&] {
      RaiiCounter inner(&live);
      sim::sleep(100 * kSecond);
    });
    try {
      sim::sleep(100 * kSecond);
    } catch (...) {
      // Code under test swallowing everything: the next await point throws again.
      swallowed_and_rethrown = true;
    }
    sim::sleep(kSecond);
    ADD_FAILURE() << "a crashed fiber kept running";
  });
  victim.start();
  killer.set_main([&] {
    sim::sleep(kSecond);
    EXPECT_EQ(live, 2);
    victim.crash();
    sim::sleep(kMillisecond);
    EXPECT_EQ(live, 0);
    EXPECT_FALSE(victim.alive());
    victim.restart();
    sim::sleep(kMillisecond);
    EXPECT_EQ(live, 2);
  });
  killer.start();
  simulation.run_until(50 * kSecond);
  EXPECT_TRUE(swallowed_and_rethrown);
  EXPECT_EQ(starts, 2);
  EXPECT_EQ(victim.incarnation(), 1u);
}

TEST(Kernel, PauseFreezesTheNodeButKeepsItAlive) {
  sim::Simulation simulation({.seed = 1});
  auto& worker = simulation.add_node("worker", "workers");
  auto& gc = simulation.add_node("gc", "faults");
  std::vector<sim::Time> ticks;
  worker.set_main([&] {
    for (int i = 0; i < 4; ++i) {
      sim::sleep(kSecond);
      ticks.push_back(sim::now());
    }
  });
  worker.start();
  gc.set_main([&] {
    sim::sleep(1500 * kMillisecond);
    worker.pause_for(3 * kSecond);  // frozen from 1.5s to 4.5s
  });
  gc.start();
  simulation.run();
  ASSERT_EQ(ticks.size(), 4u);
  EXPECT_EQ(ticks[0], kSecond);
  EXPECT_EQ(ticks[1], 4500 * kMillisecond);  // the 2s wake-up waited for the pause to end
  EXPECT_EQ(ticks[2], 5500 * kMillisecond);
  EXPECT_TRUE(worker.alive());
}

TEST(Kernel, ChannelPopUntilTimesOutAndDelivers) {
  sim::Simulation simulation({.seed = 1});
  auto& node = simulation.add_node("a", "workers");
  sim::Channel<int> channel;
  std::vector<std::string> log;
  node.set_main([&] {
    auto first = channel.pop_until(sim::now() + kSecond);
    log.push_back(first ? std::to_string(*first) : "timeout@" + std::to_string(sim::now()));
    auto second = channel.pop_until(sim::now() + 10 * kSecond);
    log.push_back(second ? std::to_string(*second) + "@" + std::to_string(sim::now()) : "timeout");
  });
  node.start();
  simulation.at(3 * kSecond, [&] { channel.push(42); });
  simulation.run();
  EXPECT_EQ(log, (std::vector<std::string>{"timeout@1000000000", "42@3000000000"}));
}

TEST(Kernel, SignalNotifyOneWakesTheLongestWaitingLiveFiberOnly) {
  sim::Simulation simulation({.seed = 1});
  std::vector<std::string> log;
  // w0 waits with a 1 s deadline (it times out and leaves), w1..w3 wait without one, in that order.
  sim::Signal signal;
  for (int i = 0; i < 4; ++i) {
    auto& node = simulation.add_node("w" + std::to_string(i), "workers");
    node.set_main([&, i] {
      sim::sleep(i * kMillisecond);
      const bool notified = signal.wait(i == 0 ? sim::now() + kSecond : sim::kTimeMax);
      log.push_back("w" + std::to_string(i) + (notified ? " notified@" : " timeout@") + std::to_string(sim::now()));
    });
    node.start();
  }
  bool first = false, second = false, third = false;
  simulation.at(2 * kSecond, [&] { first = signal.notify_one(); });   // skips w0 (timed out): wakes w1
  simulation.at(3 * kSecond, [&] { second = signal.notify_one(); });  // w2
  simulation.at(4 * kSecond, [&] {
    third = signal.notify_one();  // w3
    EXPECT_FALSE(signal.notify_one());  // nobody left
  });
  simulation.run();
  EXPECT_TRUE(first && second && third);
  EXPECT_EQ(log, (std::vector<std::string>{"w0 timeout@1000000000", "w1 notified@2000000000",
                                           "w2 notified@3000000000", "w3 notified@4000000000"}));
}

TEST(Kernel, ExceptionEscapingAFiberIsAnInternalError) {
  sim::Simulation simulation({.seed = 1});
  auto& node = simulation.add_node("a", "workers");
  node.set_main([] {
    sim::sleep(kMillisecond);
    throw std::runtime_error("boom");
  });
  node.start();
  EXPECT_THROW(simulation.run(), sim::InternalError);
}

// A small busy world: nodes call each other over a lossy network, sleep for
// random times and crash at random. Returns the trace hash.
std::uint64_t busy_world_hash(std::uint64_t seed, sim::SchedulePolicy policy, bool fast_path = true) {
  sim::Simulation simulation({.seed = seed, .policy = policy, .fast_path = fast_path, .pct_depth = 3, .pct_steps = 600});
  sim::Network network(simulation, simulation.rng("network"));
  sim::LinkConfig link;
  link.latency = sim::Distribution::exponential(kMillisecond);
  link.loss = 0.05;
  link.ack_loss = 0.05;
  link.duplicate = 0.02;
  network.set_default_link(link);
  auto& server_node = simulation.add_node("server", "store");
  sim::Service service{&server_node, sim::Distribution::constant(100 * sim::kMicrosecond), true, 0};
  std::uint64_t counter = 0;
  for (int i = 0; i < 6; ++i) {
    auto& node = simulation.add_node("client" + std::to_string(i), "consumers");
    node.set_main([&simulation, &network, &service, &counter, i] {
      sim::Rng rng = simulation.rng("client" + std::to_string(i));
      for (int k = 0; k < 50; ++k) {
        sim::sleep(static_cast<sim::Duration>(rng.exponential(2.0 * kMillisecond)));
        auto r = network.call(service, [&counter] { return ++counter; }, 10 * kMillisecond, static_cast<std::uint64_t>(i));
        (void)r;
      }
    });
    node.start();
  }
  auto& chaos = simulation.add_node("chaos", "faults");
  chaos.set_main([&simulation] {
    sim::Rng rng = simulation.rng("chaos");
    for (int k = 0; k < 10; ++k) {
      sim::sleep(static_cast<sim::Duration>(rng.exponential(20.0 * kMillisecond)));
      auto& victim = simulation.node(static_cast<sim::NodeId>(1 + rng.below(6)));
      if (victim.alive()) {
        victim.crash();
      } else {
        victim.restart();
      }
    }
  });
  chaos.start();
  simulation.run();
  return simulation.trace().hash();
}

TEST(KernelDeterminism, SameSeedSameHashWithEachPolicy) {
  for (auto policy : {sim::SchedulePolicy::Fifo, sim::SchedulePolicy::Random, sim::SchedulePolicy::Pct}) {
    for (std::uint64_t seed : {1u, 2u, 99u}) {
      EXPECT_EQ(busy_world_hash(seed, policy), busy_world_hash(seed, policy));
    }
  }
}

TEST(KernelDeterminism, FastPathDoesNotChangeTheTrace) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    EXPECT_EQ(busy_world_hash(seed, sim::SchedulePolicy::Fifo, true),
              busy_world_hash(seed, sim::SchedulePolicy::Fifo, false));
    EXPECT_EQ(busy_world_hash(seed, sim::SchedulePolicy::Random, true),
              busy_world_hash(seed, sim::SchedulePolicy::Random, false));
    EXPECT_EQ(busy_world_hash(seed, sim::SchedulePolicy::Pct, true),
              busy_world_hash(seed, sim::SchedulePolicy::Pct, false));
  }
}

TEST(KernelDeterminism, DifferentSeedsGiveDifferentHashes) {
  std::set<std::uint64_t> hashes;
  const int seeds = 300;
  for (int seed = 1; seed <= seeds; ++seed) hashes.insert(busy_world_hash(static_cast<std::uint64_t>(seed), sim::SchedulePolicy::Fifo));
  EXPECT_EQ(hashes.size(), static_cast<std::size_t>(seeds));
}

// Fibers that wake at the same instants: only the schedule policy orders them.
std::vector<int> same_instant_order(std::uint64_t seed, sim::SchedulePolicy policy) {
  sim::Simulation simulation({.seed = seed, .policy = policy});
  std::vector<int> order;
  for (int i = 0; i < 4; ++i) {
    auto& node = simulation.add_node("n" + std::to_string(i), "workers");
    node.set_main([&order, i] {
      for (int k = 0; k < 3; ++k) {
        sim::sleep(kMillisecond);
        order.push_back(i);
      }
    });
    node.start();
  }
  simulation.run();
  return order;
}

TEST(KernelDeterminism, RandomPolicyExploresOtherInterleavingsReproducibly) {
  const auto fifo = same_instant_order(1, sim::SchedulePolicy::Fifo);
  EXPECT_EQ(fifo, (std::vector<int>{0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3}));
  std::set<std::vector<int>> orders;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const auto order = same_instant_order(seed, sim::SchedulePolicy::Random);
    EXPECT_EQ(order, same_instant_order(seed, sim::SchedulePolicy::Random));
    EXPECT_EQ(order.size(), 12u);
    orders.insert(order);
  }
  EXPECT_GT(orders.size(), 10u);
}

// Property: a node crashed at a random virtual time, whatever await point its
// fibers are in, unwinds every fiber (RAII counters balance) and restarts cleanly.
RC_GTEST_PROP(KernelProperties, CrashAtAnyTimeUnwindsEveryFiberAndRestartsCleanly, ()) {
  const auto crash_at = *rc::gen::inRange<sim::Time>(0, 200 * kMillisecond);
  const auto fibers = *rc::gen::inRange(1, 6);
  const auto seed = *rc::gen::inRange<std::uint64_t>(1, 1000000);
  sim::Simulation simulation({.seed = seed});
  sim::Network network(simulation, simulation.rng("network"));
  sim::LinkConfig link;
  link.latency = sim::Distribution::exponential(3 * kMillisecond);
  network.set_default_link(link);
  auto& server_node = simulation.add_node("server", "store");
  sim::Service service{&server_node, {}, false, 0};
  auto& victim = simulation.add_node("victim", "workers");
  int live = 0;
  int restarted_runs = 0;
  sim::Channel<int> inbox;
  victim.set_main([&] {
    RaiiCounter guard(&live);
    if (sim::this_node().incarnation() > 0) {
      ++restarted_runs;
      return;
    }
    for (int f = 1; f < fibers; ++f) {
      sim::this_node().spawn([&, f] {
        RaiiCounter inner(&live);
        sim::Rng rng = simulation.rng("f" + std::to_string(f));
        for (;;) {
          switch (rng.below(3)) {
            case 0: sim::sleep(static_cast<sim::Duration>(rng.below(10 * kMillisecond))); break;
            case 1: (void)inbox.pop_until(sim::now() + static_cast<sim::Duration>(rng.below(10 * kMillisecond))); break;
            default: (void)network.call(service, [] { return 1; }, 20 * kMillisecond); break;
          }
        }
      });
    }
    for (;;) sim::sleep(kMillisecond);
  });
  victim.start();
  auto& chaos = simulation.add_node("chaos", "faults");
  sim::Time last_seen = 0;
  bool time_monotonic = true;
  chaos.set_main([&] {
    sim::sleep_until(crash_at);
    victim.crash();
    sim::sleep(kMillisecond);
    RC_ASSERT(live == 0);
    RC_ASSERT(victim.fiber_count() == 0u);
    victim.restart();
    for (int i = 0; i < 10; ++i) {
      sim::sleep(kMillisecond);
      time_monotonic = time_monotonic && sim::now() >= last_seen;
      last_seen = sim::now();
    }
  });
  chaos.start();
  simulation.run();
  RC_ASSERT(time_monotonic);
  RC_ASSERT(restarted_runs == 1);
  RC_ASSERT(live == 0);
  RC_ASSERT(simulation.live_fibers() == 0u);
}

// Property: virtual time observed by fibers never goes backwards, whatever the sleeps.
RC_GTEST_PROP(KernelProperties, VirtualTimeNeverGoesBackwards, (std::vector<std::uint32_t> sleeps_us)) {
  sim::Simulation simulation({.seed = 7, .policy = sim::SchedulePolicy::Random});
  std::vector<sim::Time> observed;
  for (int f = 0; f < 3; ++f) {
    auto& node = simulation.add_node("n" + std::to_string(f), "workers");
    node.set_main([&, f] {
      for (std::size_t i = static_cast<std::size_t>(f); i < sleeps_us.size(); i += 3) {
        sim::sleep(static_cast<sim::Duration>(sleeps_us[i] % 1000000u) * sim::kMicrosecond);
        observed.push_back(sim::now());
      }
    });
    node.start();
  }
  simulation.run();
  for (std::size_t i = 1; i < observed.size(); ++i) RC_ASSERT(observed[i] >= observed[i - 1]);
}

// Timers of two kinds at instants with many ties: "direct" ones set at once, and a chain of "deferred" ones whose
// places are reserved at once but which are set one by one, each from the callback of the one before (as the
// queue sets its visibility timeouts). Every timer runs exactly where it would have if all were set at once.
RC_GTEST_PROP(KernelProperties, ATimerSetLaterWithAReservedPlaceRunsWhereItWouldHaveRunIfSetThen, ()) {
  const auto count = *rc::gen::inRange<std::size_t>(1, 40);
  const auto times = *rc::gen::container<std::vector<sim::Time>>(count, rc::gen::inRange<sim::Time>(0, 4));
  const auto deferred = *rc::gen::container<std::vector<bool>>(count, rc::gen::arbitrary<bool>());
  std::vector<std::size_t> expected;
  {
    sim::Simulation reference;
    for (std::size_t i = 0; i < count; ++i) reference.at(times[i], [&expected, i] { expected.push_back(i); });
    reference.run();
  }
  sim::Simulation simulation;
  std::vector<std::size_t> ran;
  struct Reserved {
    sim::Time time;
    sim::Simulation::TimerPlace place;
    std::size_t index;
  };
  std::vector<Reserved> chain;  // in (time, place) order: what the queue's fifo holds
  for (std::size_t i = 0; i < count; ++i) {
    if (deferred[i]) {
      chain.push_back(Reserved{times[i], simulation.reserve_timer_place(), i});
    } else {
      simulation.at(times[i], [&ran, i] { ran.push_back(i); });
    }
  }
  std::stable_sort(chain.begin(), chain.end(), [](const Reserved& x, const Reserved& y) { return x.time < y.time; });
  std::function<void(std::size_t)> set = [&](std::size_t k) {
    if (k == chain.size()) return;
    simulation.at(chain[k].time, chain[k].place, [&, k] {
      ran.push_back(chain[k].index);
      set(k + 1);
    });
  };
  set(0);
  simulation.run();
  RC_ASSERT(ran == expected);
}

// A callback timer is not a fiber's wake-up: compacting stale wake-ups must keep it.
TEST(Kernel, CallbackTimersSurviveTheCompactionOfStaleWakeUps) {
  sim::Simulation simulation;
  int handled = 0;
  for (int i = 0; i < 100; ++i) simulation.at(10 * kSecond + i, [&handled] { ++handled; });  // behind the stale ones
  auto& node = simulation.add_node("waker", "g");
  node.set_main([] {
    // Each park with a deadline that is woken early leaves a stale wake-up behind (5,000 of them: compaction
    // runs once they are more than half of the timers).
    auto& s = sim::Simulation::current();
    for (int i = 0; i < 5000; ++i) {
      const sim::Waker w = s.waker();
      s.at(s.now() + 1, [&s, w] { s.wake(w); });
      s.park(s.now() + kSecond);
    }
  });
  node.start();
  simulation.run();
  EXPECT_EQ(handled, 100) << "now " << simulation.now() << " pending " << simulation.has_pending_timers();
}

// Regression: a run that finished inside its first advance (only callback timers) marked the caller's context as
// ready although it never suspended; the thread's scheduler kept it, and the next simulation on the thread was
// resumed early: its run returned after the fiber's work, before the timers due later.
TEST(Kernel, ASimulationAfterATimersOnlyRunOnTheSameThreadRunsEveryTimer) {
  {
    sim::Simulation timers_only;
    int fired = 0;
    timers_only.at(5, [&fired] { ++fired; });
    timers_only.run();
    ASSERT_EQ(fired, 1);
  }
  sim::Simulation simulation;
  int late = 0;
  simulation.at(10 * kSecond, [&late] { ++late; });
  auto& node = simulation.add_node("sleeper", "g");
  node.set_main([] { sim::sleep(kMillisecond); });
  node.start();
  simulation.run();
  EXPECT_EQ(late, 1);
  EXPECT_EQ(simulation.now(), 10 * kSecond);
  EXPECT_FALSE(simulation.has_pending_timers());
}

// Time sums saturate: a sleep, timer, pause or RPC timeout past the end of virtual time waits "forever" (the run
// ends with nothing due) instead of wrapping around into the past; kTimeMax itself never fires.
TEST(KernelTime, SaturatingAddCapsAtBothEndsAndIsExactElsewhere) {
  EXPECT_EQ(sim::saturating_add(sim::kTimeMax - 5, 10), sim::kTimeMax);
  EXPECT_EQ(sim::saturating_add(1, sim::kTimeMax), sim::kTimeMax);
  EXPECT_EQ(sim::saturating_add(INT64_MIN + 5, -10), INT64_MIN);
  EXPECT_EQ(sim::saturating_add(7, -3), 4);
  EXPECT_EQ(sim::saturating_add(sim::kTimeMax - 10, 10), sim::kTimeMax);
  EXPECT_EQ(sim::saturating_add(sim::kTimeMax - 11, 10), sim::kTimeMax - 1);
}

TEST(KernelTime, SleepsTimersAndPausesPastTheEndOfTimeSaturateAndNeverFire) {
  sim::Simulation simulation({.seed = 1});
  auto& node = simulation.add_node("a", "workers");
  bool woke = false;
  bool timer_fired = false;
  node.set_main([&] {
    sim::sleep(kSecond);
    simulation.after(sim::kTimeMax, [&] { timer_fired = true; });
    simulation.this_node().pause_for(sim::kTimeMax);
    sim::sleep(sim::kTimeMax);
    woke = true;
  });
  node.start();
  simulation.run();  // no abort, no hang: nothing is due before "never"
  EXPECT_FALSE(woke);
  EXPECT_FALSE(timer_fired);
  EXPECT_EQ(simulation.now(), kSecond);
  EXPECT_TRUE(simulation.has_pending_timers());
}

TEST(KernelTime, ARpcTimeoutPastTheEndOfTimeSaturates) {
  sim::Simulation simulation({.seed = 1});
  sim::Network network(simulation, simulation.rng("net"));
  auto& client = simulation.add_node("client", "clients");
  auto& server = simulation.add_node("server", "servers");
  sim::Service service{&server, sim::Distribution::constant(kMillisecond), false, 0, simulation.rng("svc")};
  std::optional<int> reply;
  client.set_main([&] {
    sim::sleep(kSecond);
    reply = network.call(service, [] { return 42; }, sim::kTimeMax);
  });
  client.start();
  simulation.run();
  EXPECT_EQ(reply, 42);
}

TEST(KernelTime, ATimerInThePastFailsTheRunWithAnInternalErrorNotAnAbort) {
  sim::Simulation simulation({.seed = 1});
  auto& node = simulation.add_node("a", "workers");
  node.set_main([&] {
    sim::sleep(kSecond);
    simulation.at(kMillisecond, [] {});
  });
  node.start();
  EXPECT_THROW(simulation.run(), sim::InternalError);
}

TEST(KernelTime, AParkDeadlineInThePastFailsTheRunWithAnInternalErrorNotAnAbort) {
  sim::Simulation simulation({.seed = 1});
  auto& node = simulation.add_node("a", "workers");
  node.set_main([&] {
    sim::sleep(kSecond);
    simulation.park(kMillisecond);
  });
  node.start();
  EXPECT_THROW(simulation.run(), sim::InternalError);
}

}  // namespace kernel_test
