// A message source and an effect provider registered at runtime, named from a scenario text, loaded by the
// loader and run by run_world; and the loader's refusal of a name nobody registered, with the registered names
// as the allowed list.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "scenario/loader.hpp"
#include "tests/protocol/run_always_strategy.hpp"
#include "sim/channel.hpp"
#include "world/sink.hpp"
#include "world/source.hpp"
#include "world/world.hpp"

namespace registered_parts_test {

using lethe::MessageId;

// What the registered parts saw, for the assertions (each run is single-threaded).
struct Seen {
  std::uint64_t published = 0;      // publishes the mailbox source received
  std::uint64_t acknowledged = 0;   // messages it acknowledged (per processor)
  std::uint64_t provider_calls = 0; // effects the ledger provider executed
  std::vector<lethe::SinkRequest> requests;  // every call the ledger provider executed
};
Seen seen;

// The simplest source: one mailbox per processor at the broker; a worker takes from its processor's mailbox,
// puts a failed message back, and acknowledges the others at once.
class MailboxSource final : public lethe::MessageSource {
 public:
  explicit MailboxSource(const lethe::SourceContext& context)
      : workers_(context.workers), ledger_(context.ledger), mailboxes_(context.config.topology.processors.size()) {}

  void publish(MessageId id, std::uint32_t /*payload*/) override {
    ++seen.published;
    for (auto& mailbox : mailboxes_) {
      mailbox.push(id);
      ++outstanding_;
    }
  }
  void consume(lethe::SourceWorker& worker) override {
    sim::Channel<MessageId>& mailbox = mailboxes_[workers_[worker.index()].processor];
    while (true) {
      const auto id = mailbox.pop_until(sim::now() + 100 * sim::kMillisecond);
      if (!id) continue;
      ++ledger_.deliveries;
      if (!worker.handle(*id, 0).ok) {
        mailbox.push(*id);
        continue;
      }
      worker.before_ack(*id);
      --outstanding_;
      ++seen.acknowledged;
      worker.acknowledged(*id, true);
    }
  }
  bool drained() const override { return outstanding_ == 0; }

 private:
  std::vector<lethe::WorkerSlot> workers_;
  lethe::Ledger& ledger_;
  std::vector<sim::Channel<MessageId>> mailboxes_;
  std::uint64_t outstanding_ = 0;
};

// A provider whose values start at 7001, so its answers are recognisable.
class LedgerProvider final : public lethe::EffectProvider {
 public:
  lethe::EffectOutcome execute(const lethe::SinkRequest& request, sim::Time /*now*/) override {
    ++seen.provider_calls;
    seen.requests.push_back(request);
    return lethe::EffectOutcome{.refused = false, .value = 7000 + seen.provider_calls};
  }
};

void register_test_parts() {
  if (lethe::source_registry().find("test-mailbox") == nullptr) {
    lethe::register_source("test-mailbox", lethe::SourceEntry{lethe::WorkerLayout::PerProcessor,
                                                              [](const lethe::SourceContext& context) {
                                                                return std::make_unique<MailboxSource>(context);
                                                              }});
  }
  if (lethe::sink_registry().find("test-ledger") == nullptr) {
    lethe::register_sink("test-ledger", lethe::SinkEntry{[](const lethe::EffectContext&) {
                           return std::make_unique<LedgerProvider>();
                         }});
  }
}

scenario::LoadResult load(const std::string& source, const std::string& sink, const std::string& kind = "none") {
  // Each strategy reads its own [protocol] keys: "none" reads none, so ttl would be refused there.
  const std::string ttl = kind == "none" ? "" : "ttl = \"7d\"\n";
  const std::string text = "[scenario]\nname = \"registered\"\n[protocol]\nkind = \"" + kind + "\"\n" + ttl +
                           "[topology]\nsource = \"" + source +
                           "\"\nconsumers = 2\nprocessors = [\"billing\", \"audit\"]\n"
                           "[workload]\nmessages = 40\nrate = \"100/s\"\nprocessing_time = \"5ms\"\n"
                           "[sink]\nkind = \"" + sink + "\"\n";
  return scenario::load_scenario_text(text, "registered.toml", ".", {});
}

std::string errors_of(const scenario::LoadResult& loaded) {
  std::string text;
  if (const auto* errors = std::get_if<std::vector<scenario::LoadError>>(&loaded)) {
    for (const auto& error : *errors) text += error.message + "\n";
  }
  return text;
}

TEST(RegisteredParts, ASourceAndASinkRegisteredAtRuntimeAreUsedByNameFromAScenarioText) {
  register_test_parts();
  const scenario::LoadResult loaded = load("test-mailbox", "test-ledger");
  ASSERT_TRUE(std::holds_alternative<lethe::ScenarioConfig>(loaded)) << errors_of(loaded);
  const auto& config = std::get<lethe::ScenarioConfig>(loaded);
  EXPECT_EQ(config.topology.source, "test-mailbox");
  EXPECT_EQ(config.sink.kind, "test-ledger");
  seen = Seen{};
  const lethe::RunResult result = lethe::run_world(config, 1);
  EXPECT_EQ(seen.published, 40u);     // the producer published into the registered source ...
  EXPECT_EQ(seen.acknowledged, 80u);  // ... which fanned every message out to both processors
  EXPECT_EQ(result.effects, 80u);
  EXPECT_EQ(seen.provider_calls, 80u);  // every effect went to the registered provider
  EXPECT_EQ(result.lost_messages, 0u);
  EXPECT_EQ(result.duplicate_effects, 0u);
  EXPECT_EQ(result.deliveries, 80u);
}

TEST(RegisteredParts, TheLoaderRefusesAnUnregisteredSourceOrSinkAndListsTheRegisteredNames) {
  register_test_parts();
  const std::string source_errors = errors_of(load("tset-mailbox", "counter"));
  EXPECT_NE(source_errors.find("topology.source: found \"tset-mailbox\" (did you mean \"test-mailbox\"?); allowed: "
                               "\"kafka\", \"queue\", \"clients\", \"test-mailbox\""),
            std::string::npos)
      << source_errors;
  const std::string sink_errors = errors_of(load("queue", "fax"));
  EXPECT_NE(sink_errors.find("sink.kind: found \"fax\"; allowed: \"counter\", \"payment\", \"email\", \"test-ledger\""),
            std::string::npos)
      << sink_errors;
}

constexpr lethe::FencingToken kTokenOffset = 1'000'000;

TEST(RegisteredParts, TheFencingTokenAStrategyHandsItsEffectReachesTheProviderWithEveryCall) {
  register_test_parts();
  registry_test::ensure_registered(registry_test::run_always_entry(
      "test-token", lethe::Basis::Unprotected, {lethe::Basis::Unprotected},
      {registry_test::window(lethe::Cause::Unprotected, lethe::WindowOpens::Always)}, kTokenOffset));
  const scenario::LoadResult loaded = load("queue", "test-ledger", "test-token");
  ASSERT_TRUE(std::holds_alternative<lethe::ScenarioConfig>(loaded)) << errors_of(loaded);
  seen = Seen{};
  const lethe::RunResult result = lethe::run_world(std::get<lethe::ScenarioConfig>(loaded), 1);
  ASSERT_EQ(seen.requests.size(), result.effects);
  ASSERT_GT(seen.requests.size(), 0u);
  for (const lethe::SinkRequest& request : seen.requests) {
    EXPECT_EQ(request.fencing_token, request.attempt + kTokenOffset) << "message " << request.id;
  }
}

TEST(RegisteredParts, AStrategyThatFencesNothingReachesTheProviderWithoutAToken) {
  register_test_parts();
  const scenario::LoadResult loaded = load("queue", "test-ledger");
  ASSERT_TRUE(std::holds_alternative<lethe::ScenarioConfig>(loaded)) << errors_of(loaded);
  seen = Seen{};
  lethe::run_world(std::get<lethe::ScenarioConfig>(loaded), 1);
  ASSERT_GT(seen.requests.size(), 0u);
  for (const lethe::SinkRequest& request : seen.requests) EXPECT_EQ(request.fencing_token, lethe::kNoFencingToken);
}

}  // namespace registered_parts_test
