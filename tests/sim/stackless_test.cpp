// Fibers without a stack: a slot that waits with park_then (Signal::wait_then, Network::call_or_then) instead
// of park (wait, call) runs the same simulation, holds no stack while it waits, and is dropped unrun by a crash.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "sim/channel.hpp"
#include "sim/network.hpp"
#include "sim/node.hpp"
#include "sim/simulation.hpp"

namespace stackless_test {

using sim::kMillisecond;
using sim::kSecond;

// What a client saw, in order: (time, client, what, value).
using Log = std::vector<std::tuple<sim::Time, int, std::string, std::uint64_t>>;

struct World {
  sim::Simulation& simulation;
  sim::Network& network;
  sim::Service& service;
  sim::Signal& signal;
  std::uint64_t& counter;
  Log& log;
};

constexpr int kRounds = 30;

// One incarnation of a client: sleep, call the server, then every third round wait on the shared signal (else
// notify it). The stackful form is a loop; the stackless one the same steps as continuations.
struct Client {
  World world;
  int index;
  sim::Rng rng;
  int round = 0;

  sim::Duration pause() { return static_cast<sim::Duration>(rng.exponential(2.0 * kMillisecond)) + 1; }
  sim::Time wait_deadline() { return world.simulation.now() + static_cast<sim::Duration>(rng.exponential(5.0 * kMillisecond)) + 1; }
  void note(const char* what, std::uint64_t value) { world.log.emplace_back(world.simulation.now(), index, what, value); }
  std::uint64_t* counter() { return &world.counter; }
};

void run_stackful(Client& client) {
  for (; client.round < kRounds; ++client.round) {
    sim::sleep(client.pause());
    std::uint64_t* counter = client.counter();
    const auto got = client.world.network.call(client.world.service, [counter] { return ++*counter; },
                                               10 * kMillisecond, static_cast<std::uint64_t>(client.index));
    client.note("call", got.value_or(0));
    if (client.round % 3 == 0) {
      client.note("woken", client.world.signal.wait(client.wait_deadline()) ? 1 : 0);
    } else {
      client.world.signal.notify_one();
    }
  }
}

enum class Step { Sleep, Call, Signal };

// Runs the client from `step` until it waits (then returns, its continuation set) or ends.
void run_stackless(const std::shared_ptr<Client>& client, Step step) {
  sim::Simulation& simulation = client->world.simulation;
  while (client->round < kRounds) {
    switch (step) {
      case Step::Sleep:
        simulation.park_then(simulation.now() + client->pause(), [client](bool) { run_stackless(client, Step::Call); });
        return;
      case Step::Call: {
        std::uint64_t* counter = client->counter();
        const auto instant = client->world.network.call_or_then(
            client->world.service, [counter] { return ++*counter; }, 10 * kMillisecond,
            static_cast<std::uint64_t>(client->index), [client](std::optional<std::uint64_t> got) {
              client->note("call", got.value_or(0));
              run_stackless(client, Step::Signal);
            });
        if (!instant) return;
        client->note("call", *instant);
        step = Step::Signal;
        break;
      }
      case Step::Signal: {
        const bool waits = client->round % 3 == 0;
        ++client->round;
        step = Step::Sleep;
        if (!waits) {
          client->world.signal.notify_one();
          break;
        }
        if (client->world.signal.wait_then(client->wait_deadline(), [client](bool notified) {
              client->note("woken", notified ? 1 : 0);
              run_stackless(client, Step::Sleep);
            })) {
          return;
        }
        client->note("woken", 0);
        break;
      }
    }
  }
}

struct Outcome {
  std::uint64_t hash = 0;
  Log log;
  std::uint64_t steps = 0;
  bool operator==(const Outcome&) const = default;
};

// Six clients, a lossy network with random latency, a serial server, and a chaos node that crashes, restarts
// and pauses clients at random.
Outcome busy_world(std::uint64_t seed, sim::SchedulePolicy policy, bool stackless, bool fast_path) {
  sim::Simulation simulation({.seed = seed, .policy = policy, .fast_path = fast_path, .pct_depth = 3, .pct_steps = 800});
  sim::Network network(simulation, simulation.rng("network"));
  sim::LinkConfig link;
  link.latency = sim::Distribution::exponential(kMillisecond);
  link.loss = 0.05;
  link.ack_loss = 0.05;
  link.duplicate = 0.02;
  network.set_default_link(link);
  auto& server = simulation.add_node("server", "store");
  sim::Service service{&server, sim::Distribution::constant(100 * sim::kMicrosecond), true, 0};
  sim::Signal signal;
  std::uint64_t counter = 0;
  Outcome outcome;
  const World world{simulation, network, service, signal, counter, outcome.log};
  for (int i = 0; i < 6; ++i) {
    auto& node = simulation.add_node("client" + std::to_string(i), "consumers");
    node.set_main([&world, &node, i, stackless] {
      auto client = std::make_shared<Client>(Client{
          world, i, world.simulation.rng("client" + std::to_string(i) + ":" + std::to_string(node.incarnation()))});
      if (stackless) {
        run_stackless(client, Step::Sleep);
      } else {
        run_stackful(*client);
      }
    });
    node.start();
  }
  auto& chaos = simulation.add_node("chaos", "faults");
  chaos.set_main([&simulation] {
    sim::Rng rng = simulation.rng("chaos");
    for (int k = 0; k < 16; ++k) {
      sim::sleep(static_cast<sim::Duration>(rng.exponential(10.0 * kMillisecond)));
      auto& victim = simulation.node(static_cast<sim::NodeId>(1 + rng.below(6)));
      if (rng.below(3) == 0) {
        victim.pause_for(static_cast<sim::Duration>(rng.exponential(5.0 * kMillisecond)));
      } else if (victim.alive()) {
        victim.crash();
      } else {
        victim.restart();
      }
    }
  });
  chaos.start();
  simulation.run();
  outcome.hash = simulation.trace().hash();
  outcome.steps = simulation.schedule_steps();
  return outcome;
}

TEST(StacklessProperty, WaitingWithoutTheStackGivesTheSameRunAsParkingForEveryPolicySeedAndFastPath) {
  for (auto policy : {sim::SchedulePolicy::Fifo, sim::SchedulePolicy::Random, sim::SchedulePolicy::Pct}) {
    for (const bool fast_path : {true, false}) {
      for (std::uint64_t seed = 1; seed <= 12; ++seed) {
        const Outcome parked = busy_world(seed, policy, false, fast_path);
        const Outcome stackless = busy_world(seed, policy, true, fast_path);
        EXPECT_GT(parked.log.size(), 100u);
        EXPECT_EQ(parked, stackless) << "policy " << static_cast<int>(policy) << " seed " << seed << " fast path "
                                     << fast_path;
      }
    }
  }
}

TEST(Stackless, AHundredThousandStartedNodesThatWaitWithoutTheirStacksMapOnlyAFewStacks) {
  sim::Simulation simulation({.seed = 1});
  constexpr int kNodes = 100'000;
  int woke = 0;
  for (int i = 0; i < kNodes; ++i) {
    auto& node = simulation.add_node("n" + std::to_string(i), "consumers");
    node.set_main([&simulation, &woke] {
      simulation.park_then(simulation.now() + kSecond, [&woke](bool woken) { woke += woken ? 0 : 1; });
    });
    node.start();
  }
  simulation.run();
  EXPECT_EQ(woke, kNodes);  // every deadline passed, every continuation ran
  EXPECT_EQ(simulation.live_fibers(), 0u);
  // 64 KiB stacks: a stack per node would be 6.1 GiB of address space; a few chunks of 256 stacks are reused.
  EXPECT_LE(simulation.stack_bytes_mapped(), std::size_t{64} << 20) << simulation.stack_bytes_mapped();
}

TEST(Stackless, ACrashDropsTheContinuationUnrunAndReleasesWhatItHeld) {
  sim::Simulation simulation({.seed = 1});
  std::weak_ptr<int> watch;
  bool ran = false;
  auto& node = simulation.add_node("worker", "consumers");
  node.set_main([&simulation, &ran, &watch] {
    auto held = std::make_shared<int>(7);
    watch = held;
    simulation.park_then(simulation.now() + kSecond, [&ran, held](bool) { ran = true; });
  });
  node.start();
  simulation.at(500 * kMillisecond, [&node, &watch] {
    EXPECT_FALSE(watch.expired());  // the waiting slot's continuation holds it
    node.crash();
  });
  simulation.run();
  EXPECT_FALSE(ran);
  EXPECT_TRUE(watch.expired());
  EXPECT_EQ(simulation.live_fibers(), 0u);
  EXPECT_EQ(node.fiber_count(), 0u);
}

TEST(Stackless, AWaitWithoutTheStackEndsAfterThePauseOfItsNode) {
  sim::Simulation simulation({.seed = 1});
  sim::Time ran_at = 0;
  auto& node = simulation.add_node("worker", "consumers");
  node.set_main([&simulation, &ran_at] {
    simulation.park_then(simulation.now() + kSecond, [&simulation, &ran_at](bool) { ran_at = simulation.now(); });
  });
  node.start();
  simulation.at(500 * kMillisecond, [&node] { node.pause_for(2 * kSecond); });
  simulation.run();
  EXPECT_EQ(ran_at, 2500 * kMillisecond);
}

TEST(Stackless, AnAwaitPointAfterParkThenFailsTheRun) {
  sim::Simulation simulation({.seed = 1});
  auto& node = simulation.add_node("worker", "consumers");
  node.set_main([&simulation] {
    simulation.park_then(simulation.now() + kSecond, [](bool) {});
    sim::sleep(kMillisecond);
  });
  node.start();
  EXPECT_THROW(simulation.run(), sim::InternalError);
}

}  // namespace stackless_test
