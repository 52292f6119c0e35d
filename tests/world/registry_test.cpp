// Tests of the registries of world/source.hpp and world/sink.hpp, and of an effect provider registered at
// runtime: a fencing provider that refuses a call whose attempt id (the fencing token) is older than the newest
// it has executed, as a provider that checks the strategies' owner token would.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/network.hpp"
#include "sim/simulation.hpp"
#include "world/names.hpp"
#include "world/sink.hpp"
#include "world/source.hpp"

namespace registry_test {

using lethe::AttemptId;
using lethe::EffectOutcome;
using lethe::SinkRequest;
using sim::kMillisecond;

class FencingProvider final : public lethe::EffectProvider {
 public:
  EffectOutcome execute(const SinkRequest& request, sim::Time /*now*/) override {
    if (request.attempt < newest_) return EffectOutcome{.refused = true, .value = 0};
    newest_ = request.attempt;
    return EffectOutcome{.refused = false, .value = ++executions_};
  }

 private:
  AttemptId newest_ = 0;
  std::uint64_t executions_ = 0;
};

const char* fencing_kind() {
  static const bool registered = [] {
    lethe::register_sink("test-fencing", lethe::SinkEntry{[](const lethe::EffectContext&) {
                           return std::make_unique<FencingProvider>();
                         }});
    return true;
  }();
  (void)registered;
  return "test-fencing";
}

lethe::SinkRequest request_of(lethe::MessageId id, AttemptId attempt) {
  return SinkRequest{.id = id, .processor = 0, .attempt = attempt, .call_number = 1, .caller = 0};
}

TEST(Registries, BuiltInNamesComeFirstInTheirListedOrder) {
  const std::vector<std::string> sources = lethe::source_names();
  ASSERT_GE(sources.size(), 3u);
  EXPECT_EQ(std::vector<std::string>(sources.begin(), sources.begin() + 3),
            (std::vector<std::string>{"kafka", "queue", "clients"}));
  const std::vector<std::string> sinks = lethe::sink_names();
  ASSERT_GE(sinks.size(), 3u);
  EXPECT_EQ(std::vector<std::string>(sinks.begin(), sinks.begin() + 3),
            (std::vector<std::string>{"counter", "payment", "email"}));
}

TEST(Registries, ATakenOrEmptyNameIsRefusedAndAnUnknownOneIsNotFound) {
  EXPECT_THROW(lethe::register_source("kafka", lethe::SourceEntry{}), std::invalid_argument);
  EXPECT_THROW(lethe::register_sink("", lethe::SinkEntry{}), std::invalid_argument);
  EXPECT_EQ(lethe::source_registry().find("no-such-source"), nullptr);
  EXPECT_THROW(lethe::sink_registry().at("no-such-sink", "sink.kind"), std::invalid_argument);
}

TEST(Registries, ARegisteredSinkIsListedAfterTheBuiltIns) {
  fencing_kind();
  const std::vector<std::string> sinks = lethe::sink_names();
  EXPECT_EQ(sinks.back(), "test-fencing");
  EXPECT_NE(lethe::sink_registry().find("test-fencing"), nullptr);
}

struct FencingWorld {
  sim::Simulation simulation{{.seed = 1}};
  sim::Network network{simulation, simulation.rng("network")};
  sim::Node& sink_node = simulation.add_node("sink", "sink");
  sim::Node& worker = simulation.add_node("worker", "consumers");
  lethe::SinkSection section = [] {
    lethe::SinkSection s;
    s.kind = fencing_kind();
    s.latency = sim::Distribution::constant(kMillisecond);
    s.retries = 3;
    return s;
  }();
  lethe::Sink sink{simulation, network, sink_node, section, simulation.rng("sink")};
  FencingWorld() {
    sim::LinkConfig link;
    link.latency = sim::Distribution::constant(kMillisecond);
    network.set_default_link(link);
  }
};

TEST(Sink, ARegisteredFencingProviderRefusesACallWhoseTokenIsOlderThanTheNewestItExecuted) {
  FencingWorld world;
  EXPECT_FALSE(world.sink.handle(request_of(1, 5)).refused);
  EXPECT_FALSE(world.sink.handle(request_of(2, 7)).refused);
  const lethe::SinkResponse stale = world.sink.handle(request_of(3, 6));
  EXPECT_TRUE(stale.refused);
  EXPECT_FALSE(stale.unavailable);
  EXPECT_FALSE(world.sink.handle(request_of(3, 8)).refused);
  EXPECT_EQ(world.sink.refused(), 1u);
  EXPECT_EQ(world.sink.calls(), 4u);
  ASSERT_EQ(world.sink.executions().size(), 3u);
  EXPECT_EQ(world.sink.executions()[2].attempt, 8u);
}

TEST(SinkClient, ARefusedCallIsNotRetried) {
  FencingWorld world;
  lethe::SinkClient client(world.sink, world.network, world.section, world.simulation.rng("client"));
  std::optional<std::uint64_t> newer, older;
  world.worker.set_main([&] {
    newer = client.call(1, 0, 9);
    older = client.call(2, 0, 4);
  });
  world.worker.start();
  world.simulation.run();
  EXPECT_EQ(newer, std::optional<std::uint64_t>(1));
  EXPECT_EQ(older, std::nullopt);
  EXPECT_EQ(client.stats().tries, 2u);  // one each: the refusal is final although retries = 3
  EXPECT_EQ(client.stats().refused, 1u);
  EXPECT_EQ(client.stats().failures, 1u);
  EXPECT_EQ(world.sink.calls(), 2u);
}

}  // namespace registry_test
