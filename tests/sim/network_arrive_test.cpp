// A handler with an arrive() member (sim/network.hpp): told when its request reaches the server, before the
// service time, once per delivered copy; on the instant path too.
#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "sim/distribution.hpp"
#include "sim/network.hpp"
#include "sim/node.hpp"
#include "sim/simulation.hpp"

namespace network_arrive_test {

using sim::kMillisecond;

struct Seen {
  std::vector<sim::Time> arrived;
  std::vector<sim::Time> handled;
};

// The handler copies the network keeps share `seen`; `arrivals_before` is what this copy saw at its arrival.
struct Handler {
  Seen* seen;
  std::size_t arrivals_before = 0;
  void arrive() {
    arrivals_before = seen->arrived.size();
    seen->arrived.push_back(sim::now());
  }
  std::size_t operator()() const {
    seen->handled.push_back(sim::now());
    return arrivals_before;
  }
};

Seen one_call(sim::Distribution latency, sim::Distribution service_time, double duplicate = 0.0) {
  sim::Simulation simulation({.seed = 3});
  sim::Network network(simulation, simulation.rng("network"));
  sim::LinkConfig link;
  link.latency = std::move(latency);
  link.duplicate = duplicate;
  network.set_default_link(link);
  auto& server = simulation.add_node("server", "sink");
  auto& client = simulation.add_node("client", "consumers");
  sim::Service service{&server, std::move(service_time), false, 0};
  Seen seen;
  client.set_main([&] { (void)network.call(service, Handler{&seen}, 10'000 * kMillisecond, 1); });
  client.start();
  simulation.run();
  return seen;
}

TEST(NetworkArrive, ArriveRunsWhenTheRequestReachesTheServerBeforeTheServiceTime) {
  const Seen seen = one_call(sim::Distribution::constant(kMillisecond), sim::Distribution::constant(300 * kMillisecond));
  ASSERT_EQ(seen.arrived.size(), 1u);
  ASSERT_EQ(seen.handled.size(), 1u);
  EXPECT_EQ(seen.arrived[0], kMillisecond);
  EXPECT_EQ(seen.handled[0], 301 * kMillisecond);
}

TEST(NetworkArrive, TheInstantPathArrivesThenHandlesAtTheSameInstant) {
  const Seen seen = one_call(sim::Distribution::constant(0), sim::Distribution::constant(0));
  ASSERT_EQ(seen.arrived.size(), 1u);
  ASSERT_EQ(seen.handled.size(), 1u);
  EXPECT_EQ(seen.arrived[0], 0);
  EXPECT_EQ(seen.handled[0], 0);
}

TEST(NetworkArrive, ADuplicatedRequestArrivesTwiceAndIsHandledTwice) {
  const Seen seen = one_call(sim::Distribution::constant(kMillisecond), sim::Distribution::constant(5 * kMillisecond),
                             /*duplicate=*/1.0);
  EXPECT_EQ(seen.arrived.size(), 2u);
  EXPECT_EQ(seen.handled.size(), seen.arrived.size());
}

}  // namespace network_arrive_test
