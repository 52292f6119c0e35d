// The simulated world end to end: determinism, the oracle's accounting, and each failure's signature.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <algorithm>
#include <regex>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "world/world.hpp"
#include "reports/json.hpp"
#include "runner/execute.hpp"
#include "scenario/loader.hpp"
#include "tests/runner/support.hpp"

namespace fs = std::filesystem;

namespace world_test {

lethe::ScenarioConfig load(const std::string& name, const std::vector<std::string>& sets = {}) {
  return test_support::load_config(fs::path(LETHE_SOURCE_DIR) / "scenarios" / (name + ".toml"), sets);
}

std::uint64_t sum_causes(const lethe::RunResult& r) {
  std::uint64_t sum = 0;
  for (auto n : r.duplicates) sum += n;
  return sum;
}

std::uint64_t cause(const lethe::RunResult& r, lethe::Cause c) { return r.duplicates[static_cast<std::size_t>(c)]; }

TEST(WorldDeterminism, SameSeedSameHashAndDifferentSeedsDiffer) {
  const auto config = load("mnemosyne-lossy-crashes");
  std::set<std::uint64_t> hashes;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    const auto a = lethe::run_world(config, seed);
    const auto b = lethe::run_world(config, seed);
    EXPECT_EQ(a.trace_hash, b.trace_hash) << "seed " << seed;
    EXPECT_EQ(a.effects, b.effects);
    EXPECT_EQ(a.sim_time, b.sim_time);
    hashes.insert(a.trace_hash);
  }
  EXPECT_EQ(hashes.size(), 5u);
}

TEST(WorldDeterminism, ResultsDoNotDependOnTheNumberOfThreads) {
  const auto config = load("herd-takeover-if-not-exists");
  const std::size_t seeds = 6;
  std::vector<std::uint64_t> one(seeds), two(seeds);
  runner::parallel_for(seeds, 1, [&](std::size_t i) { one[i] = runner::run_seed(config, i + 1).result.trace_hash; });
  runner::parallel_for(seeds, 2, [&](std::size_t i) { two[i] = runner::run_seed(config, i + 1).result.trace_hash; });
  EXPECT_EQ(one, two);
}

TEST(WorldDeterminism, KeepingTheTraceDoesNotChangeTheRun) {
  const auto config = load("crash-window-after-effect");
  lethe::WorldOptions keep;
  keep.keep_trace = true;
  lethe::WorldRecord record;
  const auto kept = lethe::run_world(config, 4, keep, &record);
  const auto plain = lethe::run_world(config, 4);
  EXPECT_EQ(kept.trace_hash, plain.trace_hash);
  EXPECT_EQ(record.trace.size(), kept.trace_events);
}

// A [[network.link]]'s own ack_loss drops responses on that link alone: with lost ACKs between the consumers and
// the broker only, the broker's replies to consumers are lost and the store's and the sink's never are.
TEST(NetworkLinkWorld, AckLossOfOneLinkDropsResponsesOnThatLinkAlone) {
  const auto config = load("crash-window-after-effect", {"network.ack_loss=0", "network.link[0].between=consumers,broker",
                                                         "network.link[0].ack_loss=0.2"});
  lethe::WorldOptions keep;
  keep.keep_trace = true;
  lethe::WorldRecord record;
  lethe::run_world(config, 1, keep, &record);
  const auto name = [&](std::uint64_t node) { return record.node_names.at(static_cast<std::size_t>(node)); };
  const auto is_consumer = [&](std::uint64_t node) { return name(node).rfind(config.topology.processors.front(), 0) == 0; };
  std::map<std::string, std::uint64_t> responses;  // "FROM>TO" by group: sent, and dropped
  for (const sim::TraceRecord& r : record.trace) {
    const bool send = r.kind == sim::kinds::kSend.id && r.c == 1;
    const bool dropped = r.kind == sim::kinds::kDropAck.id;
    if (!send && !dropped) continue;
    const std::string from = is_consumer(r.node) ? "consumers" : name(r.node);
    const std::string to = is_consumer(r.b) ? "consumers" : name(r.b);
    responses[fmt::format("{} {}>{}", dropped ? "dropped" : "sent", from, to)] += 1;
  }
  EXPECT_GT(responses["sent store>consumers"], 100u);
  EXPECT_GT(responses["sent sink>consumers"], 100u);
  EXPECT_GT(responses["sent broker>consumers"], 100u);
  EXPECT_GT(responses["dropped broker>consumers"], 10u);
  for (const auto& [what, count] : responses) {
    if (what.rfind("dropped", 0) == 0) {
      EXPECT_EQ(what, "dropped broker>consumers") << count;
    }
  }
}

// Every scenario of the library: the causes sum to the total, every expectation holds on seeds 1..2,
// and the store history is linearizable.
// Folding settled groups (check/ledger.hpp) is a memory measure: every result field, every count, cause and
// explanation text, must be what the whole ledger gives. Every scenario of the library (they cover crashes,
// takeovers, TTL evictions before late copies, lost ACKs, sink retries, memo overwrites, inbox, kafka, clients),
// seeds 1-2, and the benchmark's workload with redeliveries behind a short TTL.
TEST(WorldFolding, FoldingSettledGroupsNeverChangesAResultOfAnyScenario) {
  std::vector<std::pair<std::string, std::vector<std::string>>> cases;
  for (const auto& entry : fs::directory_iterator(fs::path(LETHE_SOURCE_DIR) / "scenarios")) {
    if (entry.path().extension() == ".toml") cases.emplace_back(entry.path().stem().string(), std::vector<std::string>{});
  }
  std::sort(cases.begin(), cases.end());
  ASSERT_GE(cases.size(), 30u);
  cases.emplace_back("bench/dedupe-basic", std::vector<std::string>{"workload.messages=3000", "protocol.ttl=2s",
                                                                     "workload.redelivery.delay=uniform(0s, 5s)"});
  lethe::WorldOptions whole;
  whole.fold_settled_groups = false;
  whole.check_linearizability = false;
  lethe::WorldOptions folded = whole;
  folded.fold_settled_groups = true;
  std::uint64_t duplicates = 0;
  for (const auto& [name, sets] : cases) {
    const auto config = load(name, sets);
    for (std::uint64_t seed = 1; seed <= 2; ++seed) {
      const lethe::RunResult a = lethe::run_world(config, seed, whole);
      const lethe::RunResult b = lethe::run_world(config, seed, folded);
      EXPECT_EQ(reports::to_json(a).dump(), reports::to_json(b).dump()) << name << " seed " << seed;
      ASSERT_EQ(a.explanations.size(), b.explanations.size()) << name << " seed " << seed;
      for (std::size_t i = 0; i < a.explanations.size(); ++i) {
        const lethe::DuplicateExplanation& x = a.explanations[i];
        const lethe::DuplicateExplanation& y = b.explanations[i];
        EXPECT_EQ(std::tie(x.id, x.processor, x.cause, x.attempt, x.first_attempt, x.at, x.because),
                  std::tie(y.id, y.processor, y.cause, y.attempt, y.first_attempt, y.at, y.because))
            << name << " seed " << seed << " explanation " << i;
      }
      duplicates += a.duplicate_effects;
    }
  }
  EXPECT_GT(duplicates, 100u) << "the cases should explain many duplicates";
}

TEST(ScenarioLibrary, EveryScenarioHoldsItsExpectationsAndCausesSumToTheTotal) {
  int scenarios = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(LETHE_SOURCE_DIR) / "scenarios")) {
    if (entry.path().extension() != ".toml") continue;
    const auto config = load(entry.path().stem().string());
    ++scenarios;
    for (std::uint64_t seed = 1; seed <= 2; ++seed) {
      const auto run = runner::run_seed(config, seed);
      SCOPED_TRACE(config.scenario.name + " seed " + std::to_string(seed));
      ASSERT_TRUE(run.error.empty()) << run.error;
      EXPECT_TRUE(run.result.ok);
      EXPECT_EQ(sum_causes(run.result), run.result.duplicate_effects);
      EXPECT_GE(run.result.effects, run.result.duplicate_effects);
      EXPECT_NE(run.result.linearizable, std::optional<bool>(false));
      EXPECT_LE(run.result.explanations.size(), run.result.duplicate_effects);
    }
  }
  EXPECT_GE(scenarios, 20);
}

// A figure a scenario's description states about its own run, and how to read it from the run.
struct StatedFigure {
  const char* scenario;
  const char* text;  // as the description writes it
  std::uint64_t seeds;
  double stated;     // the figure: a share of messages, or a count summed over the seeds
  double tolerance;  // an absolute one for shares, 0 for counts
  std::function<double(const lethe::RunResult&)> measure;  // per seed; summed, then divided by the messages for shares
  bool share = true;
  std::uint64_t first_seed = 1;
  std::vector<std::string> sets = {};  // a variant the description speaks of
};

// The run must give what the description says; a description that states a run's figure ("seed N", "N times",
// "N% of messages") must be in this table, so a description edited without its run (or a run changed under its
// description) fails here.
TEST(ScenarioLibrary, EveryFigureADescriptionStatesOfItsRunIsWhatTheRunGives) {
  const auto cause_of = [](lethe::Cause c) {
    return [c](const lethe::RunResult& r) { return static_cast<double>(cause(r, c)); };
  };
  const std::vector<StatedFigure> figures = {
      {"queue-visibility-timeout", "seed 1 runs it 7728 times for 100 messages", 1, 7728, 0,
       [](const lethe::RunResult& r) { return r.messages == 100 ? static_cast<double>(r.effects) : -1.0; }, false},
      {"slow-work-mpt-too-low", "Seeds 1 to 3: 46% of\nmessages", 3, 0.46, 0.01,
       cause_of(lethe::Cause::TakeoverWhileAlive)},
      {"poll-runs-out-mnemosyne-rs", "seeds 1 to 3 give 22% of\nmessages", 3, 0.22, 0.01,
       cause_of(lethe::Cause::MaxWaitExceeded)},
      {"kafka-gc-pause-evicted-mnemosyne", "at 2 minutes, seed 3 has an owner stopped\nfor 2.7 minutes, and the record is "
       "taken over while it is alive", 1, 1, 0,
       [](const lethe::RunResult& r) { return cause(r, lethe::Cause::TakeoverWhileAlive) > 0 ? 1.0 : 0.0; }, false, 3,
       {"protocol.max_processing_time=2m"}},
      {"kafka-gc-pause-evicted-mnemosyne", "No\nduplicate.", 5, 0, 0,
       [](const lethe::RunResult& r) { return static_cast<double>(r.duplicate_effects); }, false},
  };
  for (const auto& f : figures) {
    SCOPED_TRACE(f.scenario);
    const auto config = load(f.scenario, f.sets);
    ASSERT_NE(config.scenario.description.find(f.text), std::string::npos) << config.scenario.description;
    double measured = 0;
    double messages = 0;
    for (std::uint64_t seed = f.first_seed; seed < f.first_seed + f.seeds; ++seed) {
      const auto run = runner::run_seed(config, seed);
      measured += f.measure(run.result);
      messages += static_cast<double>(run.result.messages);
    }
    if (f.share) measured /= messages;
    EXPECT_NEAR(measured, f.stated, f.tolerance + 1e-12);
  }
  const std::regex run_figure(R"(seeds? \d|\d+ times|\d+% of\s+messages)");
  for (const auto& entry : fs::directory_iterator(fs::path(LETHE_SOURCE_DIR) / "scenarios")) {
    if (entry.path().extension() != ".toml") continue;
    const std::string description = load(entry.path().stem().string()).scenario.description;
    if (!std::regex_search(description, run_figure)) continue;
    const bool listed = std::any_of(figures.begin(), figures.end(), [&](const StatedFigure& f) {
      return entry.path().stem() == f.scenario;
    });
    EXPECT_TRUE(listed) << entry.path().filename() << " states a figure of its run: add it to the table above";
  }
}

struct Signature {
  const char* scenario;
  lethe::Cause cause;
};

// Each failure mode shows up with the cause that names it, and only where expected.
TEST(ScenarioLibrary, EachFailureHasItsSignatureCause) {
  const Signature signatures[] = {
      {"consumer-crash-before-ack-none", lethe::Cause::Unprotected},
      {"check-then-insert-race", lethe::Cause::Unprotected},
      {"record-after-crash", lethe::Cause::CrashAfterEffect},
      {"crash-window-after-effect", lethe::Cause::CrashAfterEffect},
      {"slow-work-mpt-too-low", lethe::Cause::TakeoverWhileAlive},
      {"gc-pause-takeover", lethe::Cause::TakeoverWhileAlive},
      {"clock-skew-takeover", lethe::Cause::TakeoverWhileAlive},
      {"ttl-shorter-than-redelivery", lethe::Cause::Expired},
      {"herd-takeover-if-not-exists", lethe::Cause::HerdTakeover},
      {"lost-ack-double-charge", lethe::Cause::SinkRetry},
      {"provider-key-expired", lethe::Cause::ProviderKeyExpired},
      {"provider-conflict-new-key", lethe::Cause::SinkRetry},
  };
  for (const auto& s : signatures) {
    const auto config = load(s.scenario);
    const auto r = runner::run_seed(config, 1).result;
    SCOPED_TRACE(s.scenario);
    EXPECT_GT(cause(r, s.cause), 0u);
    EXPECT_GE(2 * cause(r, s.cause), r.duplicate_effects) << "the signature cause is the main one";
  }
}

TEST(ScenarioLibrary, TheFixedVariantsRemoveTheirFailure) {
  EXPECT_EQ(runner::run_seed(load("lost-ack-idempotent-gateway"), 1).result.duplicate_effects, 0u);
  EXPECT_EQ(runner::run_seed(load("provider-conflict-retry"), 1).result.duplicate_effects, 0u);
  EXPECT_EQ(runner::run_seed(load("consumer-crash-before-ack-inbox"), 1).result.duplicate_effects, 0u);
  EXPECT_EQ(runner::run_seed(load("herd-takeover-conditional"), 1).result.duplicate_effects, 0u);
  EXPECT_EQ(runner::run_seed(load("slow-work-mpt-fixed"), 1).result.duplicate_effects, 0u);
  EXPECT_EQ(runner::run_seed(load("fenced-completion"), 1).result.memo_overwrites, 0u);
  EXPECT_GT(runner::run_seed(load("blind-completion"), 1).result.memo_overwrites, 0u);
  EXPECT_GT(runner::run_seed(load("dual-write-lost-event"), 1).result.lost_messages, 0u);
  EXPECT_EQ(runner::run_seed(load("outbox-no-lost-event"), 1).result.lost_messages, 0u);
  // The same lost sink ACKs: without an idempotent provider the retries charge twice, with one they do not.
  const auto lossy = load("lost-ack-double-charge");
  const auto idempotent = load("lost-ack-double-charge", {"sink.idempotent=true", "expect.duplicate_effects=== 0",
                                                          "expect.duplicates.sink_retry=== 0"});
  EXPECT_GT(runner::run_seed(lossy, 3).result.duplicates[static_cast<std::size_t>(lethe::Cause::SinkRetry)], 0u);
  EXPECT_EQ(runner::run_seed(idempotent, 3).result.duplicate_effects, 0u);
}

TEST(ScenarioLibrary, FullJitterNeedsFewerCallsPerSuccessThanNoJitter) {
  double none = 0, full = 0;
  // Callers that gave up leave their messages undeleted: the queue hands them out again after the run.
  std::uint64_t lost_none = 0, lost_full = 0;
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    const auto a = runner::run_seed(load("retry-storm-no-jitter"), seed).result;
    const auto b = runner::run_seed(load("retry-storm-full-jitter"), seed).result;
    none += a.calls_per_success;
    full += b.calls_per_success;
    lost_none += a.undelivered;
    lost_full += b.undelivered;
    EXPECT_EQ(a.lost_messages + b.lost_messages, 0u) << "seed " << seed;
  }
  std::printf("retry storm, 4 seeds: calls per success no jitter %.3f, full jitter %.3f; gave up %llu vs %llu\n",
              none / 4, full / 4, static_cast<unsigned long long>(lost_none), static_cast<unsigned long long>(lost_full));
  EXPECT_LT(full, none);
  EXPECT_LT(lost_full, lost_none);
}

// Regression: a kafka consumer that crashed and restarted within the session timeout rejoined its group, and
// the dead incarnation's session expiry then removed the live member; after a few crashes the group had no
// members and the drain ended with 89 of 200 messages never delivered (seed 1).
TEST(KafkaGroupWorld, AConsumerThatRestartsBeforeTheSessionTimeoutKeepsItsMembership) {
  const auto kafka = load("mnemosyne-lossy-crashes",
                          {"topology.source=kafka", "topology.partitions=8",
                           "faults.rebalance_every=exponential(mean=5s)", "workload.messages=200"});
  const auto run = runner::run_seed(kafka, 1);
  ASSERT_TRUE(run.error.empty()) << run.error;
  EXPECT_EQ(run.result.lost_messages, 0u);
  EXPECT_EQ(run.result.duplicate_effects, 0u);
  EXPECT_GE(run.result.coverage.count("crash") ? run.result.coverage.at("crash") : 0u, 3u);
}

// mnemosyne with fixed settings and work faster than max_processing_time: zero duplicates and nothing lost,
// under request loss, lost ACKs, crashes before the effect, rebalances, partitions and producer retries.
TEST(MnemosyneFixedSettingsSlow, ZeroDuplicatesAndNothingLostOverHundredsOfSeeds) {
  const auto queue = load("mnemosyne-lossy-crashes");
  const auto kafka = load("mnemosyne-lossy-crashes",
                          {"topology.source=kafka", "topology.partitions=8",
                           "faults.rebalance_every=exponential(mean=5s)", "workload.messages=200"});
  std::uint64_t effects = 0, faults_fired = 0, rebalances = 0, producer_retries = 0;
  for (const auto* config : {&queue, &kafka}) {
    for (std::uint64_t seed = 1; seed <= 100; ++seed) {
      const auto run = runner::run_seed(*config, seed);
      ASSERT_TRUE(run.error.empty()) << run.error;
      const auto& r = run.result;
      const char* source = config->topology.source.c_str();
      ASSERT_EQ(r.duplicate_effects, 0u) << source << " seed " << seed;
      ASSERT_EQ(r.lost_messages, 0u) << "seed " << seed;
      ASSERT_EQ(r.memo_mismatches, 0u) << "seed " << seed;
      ASSERT_NE(r.linearizable, std::optional<bool>(false)) << "seed " << seed;
      effects += r.effects;
      faults_fired += r.coverage.at("crash_point.after_start_before_effect.fired") + r.coverage.at("network.lost") +
                      r.coverage.at("network.ack_lost") + r.coverage.at("network.partitioned");
      rebalances += r.coverage.count("rebalance.scheduled") ? r.coverage.at("rebalance.scheduled") : 0;
      producer_retries += r.coverage.at("producer.retry");
    }
  }
  std::printf("200 seeds: %llu effects, %llu faults fired, %llu rebalances, %llu producer retries, 0 duplicates\n",
              static_cast<unsigned long long>(effects), static_cast<unsigned long long>(faults_fired),
              static_cast<unsigned long long>(rebalances), static_cast<unsigned long long>(producer_retries));
  EXPECT_GT(faults_fired, 1000u);
  EXPECT_GT(rebalances, 100u);
  EXPECT_GT(producer_retries, 10u);
}

}  // namespace world_test

namespace world_test {

// In this configuration (small.toml, max_processing_time 50ms, ttl 1s) the owners no one took over from while
// alive: an owner that ran the effect, lost the provider's response and failed (no completion record) abandoned
// its record, and the retry that found it stale is crash_after_effect; the stale record of an owner that died
// before its effect, written because TTL had evicted the first executor's completed record, is expired. Neither
// is takeover_while_alive: the owner had ended.
const lethe::ScenarioConfig& small_with_short_windows() {
  static const auto config = test_support::load_config(
      fs::path(LETHE_SOURCE_DIR) / "tests/runner/sweep-scenarios/small.toml",
      {"protocol.max_processing_time=50ms", "protocol.ttl=1s"});
  return config;
}

TEST(OracleWorld, OwnersThatFailedAfterTheEffectAreCrashAfterEffectAndNoSeedHasATakeoverOfLiveWork) {
  std::size_t failed_owners = 0;
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    const auto run = runner::run_seed(small_with_short_windows(), seed);
    ASSERT_TRUE(run.error.empty()) << run.error;
    for (const auto& e : run.result.explanations) {
      if (e.because.find("and then failed at") == std::string::npos) continue;
      ++failed_owners;
      EXPECT_EQ(e.cause, lethe::Cause::CrashAfterEffect) << "seed " << seed << ": " << e.because;
    }
    EXPECT_EQ(run.result.duplicates[static_cast<std::size_t>(lethe::Cause::TakeoverWhileAlive)], 0u) << seed;
  }
  EXPECT_GT(failed_owners, 0u);
}

TEST(OracleWorld, ATakeoverFromADeadOwnerWhoseRecordFollowedATtlEvictionIsExpired) {
  const auto run = runner::run_seed(small_with_short_windows(), 2);
  ASSERT_TRUE(run.error.empty()) << run.error;
  bool found = false;
  for (const auto& e : run.result.explanations) {
    if (e.id != 41) continue;
    found = true;
    EXPECT_EQ(e.cause, lethe::Cause::Expired) << e.because;
    EXPECT_NE(e.because.find("never ran the effect and had died at 9.69s"), std::string::npos) << e.because;
    EXPECT_NE(e.because.find("TTL had evicted the completed record of attempt 35"), std::string::npos) << e.because;
  }
  EXPECT_TRUE(found) << "message 41 of seed 2 is duplicated";
}

}  // namespace world_test

namespace world_test {

// Regression: every receiver whose poll was in flight re-polled whenever anything became visible, and each new
// message woke every sleeping receiver, so a queue's idle consumers spun while messages arrived: O(consumers)
// polls per message (16,000 consumers: 408 s for 20,000 messages). With one wake-up (or claim) per visible
// message, the work of a run does not depend on how many consumers sit idle.
TEST(QueueWorld, IdleConsumersCostNothingPerMessageWhateverTheirNumber) {
  std::vector<std::uint64_t> events;
  for (const char* consumers : {"topology.consumers=50", "topology.consumers=1600"}) {
    const auto run = runner::run_seed(
        test_support::load_config(fs::path(LETHE_SOURCE_DIR) / "scenarios/bench/consumers-100k.toml",
                                  {consumers, "workload.messages=1000"}),
        1);
    ASSERT_TRUE(run.error.empty()) << run.error;
    EXPECT_EQ(run.result.effects, 1000u);
    EXPECT_EQ(run.result.duplicate_effects, 0u);
    EXPECT_EQ(run.result.lost_messages, 0u);
    events.push_back(run.result.trace_events);
  }
  // 32x the consumers: the spawns and one long poll each, and nothing per message.
  EXPECT_LT(static_cast<double>(events[1]), 1.5 * static_cast<double>(events[0])) << events[0] << " vs " << events[1];
}

}  // namespace world_test
