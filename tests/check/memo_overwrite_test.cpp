// memo_overwrites counts what its definition says: a completion that landed on a live record whose memoized
// result was different (check/ledger.hpp memo_overwrite, fed by the store's replies). Properties over whole runs
// of the simulated world, with the settings drawn.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <fmt/format.h>

#include <string>
#include <vector>
#include <variant>

#include "scenario/loader.hpp"
#include "world/world.hpp"
#include "check/ledger.hpp"

namespace lethe {
namespace memo_overwrite_test {

// Slow emails redelivered twice: takeovers of live owners (max_processing_time below the work), and, with a
// TTL shorter than the redelivery delay, reruns after eviction.
ScenarioConfig emails(const std::string& protocol, std::uint64_t messages, const std::string& delay) {
  const std::string text = fmt::format(R"toml(
[scenario]
name = "memo-overwrite-property"
[topology]
source = "queue"
consumers = 4
visibility_timeout = "60s"
[workload]
messages = {}
rate = "20/s"
processing_time = "exponential(mean=1s)"
[workload.redelivery]
fraction = 1.0
copies = 2
delay = "{}"
[store]
ttl_eviction = "exact"
[protocol]
kind = "mnemosyne"
poll = "100ms"
max_wait = "5m"
{}
[sink]
kind = "email"
latency = "20ms"
)toml",
                                       messages, delay, protocol);
  auto loaded = scenario::load_scenario_text(text, "memo-overwrite-property", ".", {});
  if (auto* errors = std::get_if<std::vector<scenario::LoadError>>(&loaded)) {
    throw std::runtime_error(errors->front().message);
  }
  return std::get<ScenarioConfig>(std::move(loaded));
}

std::uint64_t expired(const RunResult& r) { return r.duplicates[static_cast<std::size_t>(Cause::Expired)]; }

RC_GTEST_PROP(MemoOverwrites, AFencedCompletionNeverOverwritesWhateverTheTtlAndTakeovers, ()) {
  const auto mpt_ms = *rc::gen::inRange(200, 3000);
  const auto ttl_ms = *rc::gen::inRange(100, 20000);
  const auto seed = *rc::gen::inRange<std::uint64_t>(1, 1000);
  const ScenarioConfig config = emails(
      fmt::format("max_processing_time = \"{}ms\"\nttl = \"{}ms\"\ncomplete = \"fenced\"", mpt_ms, ttl_ms), 60,
      "uniform(1s, 10s)");
  const RunResult r = run_world(config, seed);
  RC_ASSERT(r.memo_overwrites == 0u);
}

RC_GTEST_PROP(MemoOverwrites, NothingMemoizedMeansNoOverwriteEvenWithBlindCompletions, ()) {
  const auto mpt_ms = *rc::gen::inRange(200, 3000);
  const auto ttl_ms = *rc::gen::inRange(100, 20000);
  const auto seed = *rc::gen::inRange<std::uint64_t>(1, 1000);
  const ScenarioConfig config = emails(
      fmt::format("max_processing_time = \"{}ms\"\nttl = \"{}ms\"\ncomplete = \"blind\"\nmemoize = false", mpt_ms,
                  ttl_ms),
      60, "uniform(1s, 10s)");
  const RunResult r = run_world(config, seed);
  RC_ASSERT(r.memo_overwrites == 0u);
}

RC_GTEST_PROP(MemoOverwrites, ARerunAfterEvictionIsNotAnOverwriteEvenWithBlindCompletions, ()) {
  // No takeover (max_processing_time far above the work), records gone long before the late copies come back:
  // every rerun is a new record's completion.
  const auto ttl_ms = *rc::gen::inRange(100, 5000);
  const auto seed = *rc::gen::inRange<std::uint64_t>(1, 1000);
  const ScenarioConfig config = emails(
      fmt::format("max_processing_time = \"10m\"\nttl = \"{}ms\"\ncomplete = \"blind\"", ttl_ms), 60, "2m");
  const RunResult r = run_world(config, seed);
  RC_ASSERT(expired(r) > 0u);  // the reruns happened: the property is not vacuous
  RC_ASSERT(r.memo_overwrites == 0u);
}

TEST(MemoOverwrites, ABlindCompletionOverATakenOverRecordIsCounted) {
  const ScenarioConfig config =
      emails("max_processing_time = \"1500ms\"\nttl = \"7d\"\ncomplete = \"blind\"", 200, "uniform(1s, 10s)");
  EXPECT_GT(run_world(config, 1).memo_overwrites, 0u);
}

ScenarioConfig library(const std::string& name, const std::vector<std::string>& sets) {
  auto loaded = scenario::load_scenario(std::string(LETHE_SOURCE_DIR) + "/scenarios/" + name + ".toml", sets);
  if (auto* errors = std::get_if<std::vector<scenario::LoadError>>(&loaded)) {
    throw std::runtime_error(errors->front().message);
  }
  return std::get<ScenarioConfig>(std::move(loaded));
}

TEST(MemoOverwrites, FencedCompletionStaysAtZeroWithATtlShorterThanItsRedeliveryDelay) {
  // fenced-completion redelivers after 1..10 s; a 500 ms TTL evicts every record before its copies come back.
  const ScenarioConfig config = library("fenced-completion", {"protocol.ttl=500ms"});
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    const RunResult r = run_world(config, seed);
    EXPECT_GT(expired(r), 0u) << "seed " << seed;
    EXPECT_EQ(r.memo_overwrites, 0u) << "seed " << seed;
  }
}

TEST(MemoOverwrites, TheStoreReplyDecides) {
  Op op;
  op.kind = OpKind::Upsert;
  op.key = make_key(Table::Dedupe, 2, 9);
  op.update.memoized_mode = Assign::Set;
  op.update.memoized = 5;
  op.update.owner = 11;
  Reply reply;
  reply.applied = true;
  Item before;
  before.completed_at = 100;
  before.expires_on = 200;
  before.memoized = 4;
  reply.previous = before;
  const auto found = memo_overwrite(op, reply, 150);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->id, 9u);
  EXPECT_EQ(found->processor, 2u);
  EXPECT_EQ(found->attempt, 11u);
  EXPECT_EQ(found->replaced, 4u);
  EXPECT_EQ(found->written, 5u);
  Reply rejected = reply;
  rejected.applied = false;
  EXPECT_FALSE(memo_overwrite(op, rejected, 150));  // did not land
  Reply same = reply;
  same.previous->memoized = 5;
  EXPECT_FALSE(memo_overwrite(op, same, 150));  // the same result
  Reply in_flight = reply;
  in_flight.previous->completed_at.reset();
  EXPECT_FALSE(memo_overwrite(op, in_flight, 150));  // nothing memoized to overwrite
  Op replacing = op;
  replacing.update.replace_expired_at = 250;
  EXPECT_FALSE(memo_overwrite(replacing, reply, 250));  // the expired record is replaced, as if evicted
  Op keep = op;
  keep.update.memoized_mode = Assign::Keep;
  EXPECT_FALSE(memo_overwrite(keep, reply, 150));  // writes no memoized result
}

}  // namespace memo_overwrite_test
}  // namespace lethe
