// Scenario files: the loader accepts every form of docs/scenarios.md, refuses every
// broken file of tests/runner/broken/ with a message that points at the right
// line and key, validates --set overrides like the file, and render/load
// round-trips.
#include "scenario/loader.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "protocol/registry.hpp"
#include "scenario/schema.hpp"
#include "scenario/values.hpp"
#include "scenario/text.hpp"

namespace loader_test {

namespace fs = std::filesystem;
using lethe::ScenarioConfig;
using scenario::LoadError;
using scenario::LoadResult;

const fs::path kTestDir = fs::path(LETHE_SOURCE_DIR) / "tests" / "runner";

std::string errors_text(const scenario::LoadResult& result) {
  if (!std::holds_alternative<std::vector<scenario::LoadError>>(result)) return "(loaded)";
  std::string text;
  for (const scenario::LoadError& e : std::get<std::vector<scenario::LoadError>>(result)) text += e.message + "\n";
  return text;
}

// Loads or fails the test, printing every error.
ScenarioConfig must_load(const scenario::LoadResult& result) {
  if (!std::holds_alternative<ScenarioConfig>(result)) {
    ADD_FAILURE() << "expected the scenario to load, got:\n" << errors_text(result);
    return ScenarioConfig{};
  }
  return std::get<ScenarioConfig>(result);
}

std::vector<scenario::LoadError> must_fail(const scenario::LoadResult& result) {
  if (!std::holds_alternative<std::vector<scenario::LoadError>>(result)) {
    ADD_FAILURE() << "expected errors, but the scenario loaded";
    return {};
  }
  return std::get<std::vector<scenario::LoadError>>(result);
}

scenario::LoadResult load_text(const std::string& text, const std::vector<std::string>& overrides = {}) {
  return scenario::load_scenario_text(text, "test.toml", kTestDir / "good", overrides);
}

const std::string kMinimal = "[scenario]\nname = \"t\"\n\n[protocol]\nmax_processing_time = \"30s\"\nttl = \"7d\"\n";

// The strategy settings as "key = TOML" lines, in key order (a key its kind does not declare: "key = ?").
std::string settings_text(const lethe::ProtocolSection& protocol) {
  const lethe::StrategyInfo* info = lethe::find_strategy(protocol.kind);
  std::string text;
  for (const auto& [name, value] : protocol.settings.values()) {
    const lethe::SettingKey* key = info != nullptr ? lethe::find_key(*info, name) : nullptr;
    text += name + " = " + (key != nullptr ? scenario::values::toml_setting(*key, value) : "?") + "\n";
  }
  return text;
}

// Field-by-field comparison of two configs (positions, lines and source_name aside).
// Distributions compare by their canonical text. Returns the names of the fields that differ.
std::vector<std::string> differences(const ScenarioConfig& a, const ScenarioConfig& b) {
  std::vector<std::string> out;
  auto check = [&](const char* name, bool same) {
    if (!same) out.emplace_back(name);
  };
  auto dist = [](const sim::Distribution& d) { return d.to_string(); };
  auto opt_dist = [](const std::optional<sim::Distribution>& d) { return d ? d->to_string() : std::string("(off)"); };
  check("scenario.name", a.scenario.name == b.scenario.name);
  check("scenario.description", a.scenario.description == b.scenario.description);
  check("scenario.tags", a.scenario.tags == b.scenario.tags);
  check("run.seeds", a.run.seeds == b.run.seeds);
  check("run.duration", a.run.duration == b.run.duration);
  check("run.drain", a.run.drain == b.run.drain);
  check("run.schedule", a.run.schedule.kind == b.run.schedule.kind && a.run.schedule.depth == b.run.schedule.depth);
  check("topology.source", a.topology.source == b.topology.source);
  check("topology.consumers", a.topology.consumers == b.topology.consumers);
  check("topology.processors", a.topology.processors == b.topology.processors);
  check("topology.partitions", a.topology.partitions == b.topology.partitions);
  check("topology.partitioner", a.topology.partitioner == b.topology.partitioner);
  check("topology.commit",
        a.topology.commit.mode == b.topology.commit.mode && a.topology.commit.interval == b.topology.commit.interval);
  check("topology.visibility_timeout", a.topology.visibility_timeout == b.topology.visibility_timeout);
  check("topology.clients", a.topology.clients == b.topology.clients);
  check("topology.client_timeout", a.topology.client_timeout == b.topology.client_timeout);
  check("topology.client_retries", a.topology.client_retries == b.topology.client_retries);
  check("topology.client_backoff", a.topology.client_backoff.kind == b.topology.client_backoff.kind &&
                                       a.topology.client_backoff.delay == b.topology.client_backoff.delay &&
                                       a.topology.client_backoff.base == b.topology.client_backoff.base &&
                                       a.topology.client_backoff.cap == b.topology.client_backoff.cap);
  check("topology.client_jitter", a.topology.client_jitter == b.topology.client_jitter);
  check("workload.messages", a.workload.messages == b.workload.messages);
  check("workload.rate", a.workload.rate.per_second == b.workload.rate.per_second);
  check("workload.processing_time", dist(a.workload.processing_time) == dist(b.workload.processing_time));
  check("workload.result_size", a.workload.result_size == b.workload.result_size);
  check("workload.redelivery.fraction", a.workload.redelivery.fraction == b.workload.redelivery.fraction);
  check("workload.redelivery.copies", a.workload.redelivery.copies == b.workload.redelivery.copies);
  check("workload.redelivery.delay", dist(a.workload.redelivery.delay) == dist(b.workload.redelivery.delay));
  check("network.latency", dist(a.network.latency) == dist(b.network.latency));
  check("network.loss", a.network.loss == b.network.loss);
  check("network.ack_loss", a.network.ack_loss == b.network.ack_loss);
  check("network.duplicate", a.network.duplicate == b.network.duplicate);
  check("network.rpc_timeout", a.network.rpc_timeout == b.network.rpc_timeout);
  check("network.partition",
        std::equal(a.network.partitions.begin(), a.network.partitions.end(), b.network.partitions.begin(),
                   b.network.partitions.end(), [](const lethe::NetworkPartition& x, const lethe::NetworkPartition& y) {
                     return x.at == y.at && x.for_duration == y.for_duration && x.first == y.first &&
                            x.second == y.second;
                   }));
  check("faults.crash_every", opt_dist(a.faults.crash_every) == opt_dist(b.faults.crash_every));
  check("faults.restart_after", dist(a.faults.restart_after) == dist(b.faults.restart_after));
  check("faults.pause_every", opt_dist(a.faults.pause_every) == opt_dist(b.faults.pause_every));
  check("faults.pause_for", dist(a.faults.pause_for) == dist(b.faults.pause_for));
  check("faults.clock_skew", opt_dist(a.faults.clock_skew) == opt_dist(b.faults.clock_skew));
  check("faults.rebalance_every", opt_dist(a.faults.rebalance_every) == opt_dist(b.faults.rebalance_every));
  check("faults.swarm", a.faults.swarm == b.faults.swarm);
  check("faults.crash_points.after_start_before_effect",
        a.faults.crash_points.after_start_before_effect == b.faults.crash_points.after_start_before_effect);
  check("faults.crash_points.after_effect_before_complete",
        a.faults.crash_points.after_effect_before_complete == b.faults.crash_points.after_effect_before_complete);
  check("faults.crash_points.after_complete_before_ack",
        a.faults.crash_points.after_complete_before_ack == b.faults.crash_points.after_complete_before_ack);
  check("store.latency", dist(a.store.latency) == dist(b.store.latency));
  check("store.ttl_eviction", a.store.ttl_eviction.kind == b.store.ttl_eviction.kind &&
                                  a.store.ttl_eviction.lazy_max == b.store.ttl_eviction.lazy_max);
  const lethe::ProtocolSection& p = a.protocol;
  const lethe::ProtocolSection& q = b.protocol;
  check("protocol.kind", p.kind == q.kind);
  check("protocol.preset", p.preset == q.preset);
  check("protocol.settings", settings_text(p) == settings_text(q));
  check("sink.kind", a.sink.kind == b.sink.kind);
  check("sink.idempotent", a.sink.idempotent == b.sink.idempotent);
  check("sink.latency", dist(a.sink.latency) == dist(b.sink.latency));
  check("sink.timeout", a.sink.timeout == b.sink.timeout);
  check("sink.retries", a.sink.retries == b.sink.retries);
  check("sink.backoff", a.sink.backoff.kind == b.sink.backoff.kind && a.sink.backoff.delay == b.sink.backoff.delay &&
                            a.sink.backoff.base == b.sink.backoff.base && a.sink.backoff.cap == b.sink.backoff.cap);
  check("sink.jitter", a.sink.jitter == b.sink.jitter);
  check("sink.capacity", a.sink.capacity.per_second == b.sink.capacity.per_second);
  check("sink.outage", std::equal(a.sink.outages.begin(), a.sink.outages.end(), b.sink.outages.begin(),
                                  b.sink.outages.end(), [](const lethe::SinkOutage& x, const lethe::SinkOutage& y) {
                                    return x.at == y.at && x.for_duration == y.for_duration;
                                  }));
  check("producer.mode", a.producer.mode == b.producer.mode);
  check("producer.crash_between_commit_and_publish",
        a.producer.crash_between_commit_and_publish == b.producer.crash_between_commit_and_publish);
  check("expect.defaults", a.expect_defaults == b.expect_defaults);
  check("expect", std::equal(a.expect.begin(), a.expect.end(), b.expect.begin(), b.expect.end(),
                             [](const lethe::Expectation& x, const lethe::Expectation& y) {
                               return x.key == y.key && x.op == y.op && x.number == y.number && x.percent == y.percent;
                             }));
  return out;
}

// True when `text` is "DIGITS: KEY: SOMETHING", with KEY exactly `key` (any key without spaces if `key` is empty).
bool continues_with_column_and_key(std::string_view text, std::string_view key) {
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0 || text.substr(digits, 2) != ": ") return false;
  std::string_view rest = text.substr(digits + 2);
  std::size_t key_end = rest.find(": ");
  if (key_end == std::string_view::npos || key_end == 0 || key_end + 2 >= rest.size()) return false;
  std::string_view written = rest.substr(0, key_end);
  return key.empty() ? written.find(' ') == std::string_view::npos : written == key;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

// ---------------------------------------------------------------- the broken corpus

struct BrokenCase {
  fs::path file;
  std::string expect;  // a substring of the message
  int line = 0;        // the line the message must point at
  std::string key;     // the key the message must name
};

// Every tests/runner/broken/*.toml: line 1 "# expect: SUBSTRING", line 2 "# at: LINE KEY".
std::vector<BrokenCase> broken_corpus() {
  std::vector<BrokenCase> cases;
  for (const fs::directory_entry& entry : fs::directory_iterator(kTestDir / "broken")) {
    if (entry.path().extension() != ".toml") continue;
    std::ifstream in(entry.path());
    std::string expect_line, at_line;
    std::getline(in, expect_line);
    std::getline(in, at_line);
    BrokenCase c;
    c.file = entry.path();
    const std::string expect_prefix = "# expect: ";
    const std::string at_prefix = "# at: ";
    if (expect_line.rfind(expect_prefix, 0) == 0) c.expect = expect_line.substr(expect_prefix.size());
    if (at_line.rfind(at_prefix, 0) == 0) {
      std::istringstream at(at_line.substr(at_prefix.size()));
      at >> c.line >> c.key;
    }
    cases.push_back(c);
  }
  std::sort(cases.begin(), cases.end(), [](const BrokenCase& a, const BrokenCase& b) { return a.file < b.file; });
  return cases;
}

TEST(ScenarioLoaderBrokenCorpus, HasAtLeast45FilesEachWithAnExpectationHeader) {
  std::vector<BrokenCase> cases = broken_corpus();
  EXPECT_GE(cases.size(), 45u);
  for (const BrokenCase& c : cases) {
    EXPECT_FALSE(c.expect.empty()) << c.file << ": line 1 must be `# expect: SUBSTRING`";
    EXPECT_GT(c.line, 0) << c.file << ": line 2 must be `# at: LINE KEY`";
    EXPECT_FALSE(c.key.empty()) << c.file << ": line 2 must be `# at: LINE KEY`";
  }
}

TEST(ScenarioLoaderBrokenCorpus, EveryFileFailsWithOneErrorAtItsLineNamingItsKey) {
  for (const BrokenCase& c : broken_corpus()) {
    SCOPED_TRACE(c.file.filename().string());
    std::vector<scenario::LoadError> errors = must_fail(scenario::load_scenario(c.file, {}));
    ASSERT_EQ(errors.size(), 1u) << errors_text(errors);
    const std::string& message = errors[0].message;
    std::string prefix = fmt::format("{}:{}:", c.file.string(), c.line);
    EXPECT_EQ(message.rfind(prefix, 0), 0u) << message << "\n  should start with " << prefix;
    EXPECT_TRUE(
        continues_with_column_and_key(std::string_view(message).substr(std::min(prefix.size(), message.size())), c.key))
        << message << "\n  should continue with COL: " << c.key << ": ...";
    EXPECT_NE(message.find(c.expect), std::string::npos) << message << "\n  should contain: " << c.expect;
  }
}

// ---------------------------------------------------------------- keys of the protocol kind

const std::string kRecordAfter =
    "[scenario]\nname = \"t\"\n\n[protocol]\nkind = \"record-after\"\nttl = \"7d\"\n";

TEST(ScenarioLoaderProtocolKeys, AKeyTheChosenKindDoesNotReadIsAnErrorNamingTheKindsThatReadIt) {
  const std::vector<scenario::LoadError> errors =
      must_fail(load_text(kRecordAfter + "takeover = \"if-not-exists\"\nmax_wait = \"5s\"\n"));
  ASSERT_EQ(errors.size(), 2u) << errors_text(errors);
  EXPECT_EQ(errors[0].message,
            "test.toml:7:1: protocol.takeover: found a key that protocol.kind \"record-after\" does not read (read by "
            "\"mnemosyne\"); allowed in [protocol] with kind \"record-after\": kind, preset, ttl, memoize, "
            "expired_wins, precedence");
  EXPECT_EQ(errors[1].message.rfind("test.toml:8:1: protocol.max_wait: found a key that protocol.kind \"record-after\" "
                                    "does not read (read by \"mnemosyne\"",
                                    0),
            0u)
      << errors[1].message;
}

TEST(ScenarioLoaderProtocolKeys, AKeyNoKindReadsIsAnUnknownKeyListingTheChosenKindsKeys) {
  const std::vector<scenario::LoadError> errors = must_fail(load_text(kRecordAfter + "bogus = 1\n"));
  ASSERT_EQ(errors.size(), 1u) << errors_text(errors);
  EXPECT_EQ(errors[0].message,
            "test.toml:7:1: protocol.bogus: found an unknown key; allowed in [protocol]: kind, preset, ttl, memoize, "
            "expired_wins, precedence");
}

TEST(ScenarioLoaderProtocolKeys, SetOfAKeyTheChosenKindDoesNotReadIsRefusedLikeTheFileWould) {
  const std::vector<scenario::LoadError> errors = must_fail(load_text(kRecordAfter, {"protocol.takeover=if-not-exists"}));
  ASSERT_EQ(errors.size(), 1u) << errors_text(errors);
  EXPECT_EQ(errors[0].message,
            "--set protocol.takeover=if-not-exists: protocol.takeover: found a key that protocol.kind \"record-after\" "
            "does not read (read by \"mnemosyne\"); allowed in [protocol] with kind \"record-after\": kind, preset, "
            "ttl, memoize, expired_wins, precedence");
  // Switching the kind with --set makes the file's own keys another kind's.
  const std::vector<scenario::LoadError> switched = must_fail(load_text(kMinimal, {"protocol.kind=inbox"}));
  ASSERT_EQ(switched.size(), 1u) << errors_text(switched);
  EXPECT_NE(switched[0].message.find("protocol.max_processing_time: found a key that protocol.kind \"inbox\" does not "
                                     "read (read by \"mnemosyne\", \"saga-state\")"),
            std::string::npos)
      << switched[0].message;
  // protocol.KEY=off leaves the file's key out.
  const ScenarioConfig inbox = must_load(load_text(kMinimal, {"protocol.kind=inbox", "protocol.max_processing_time=off"}));
  EXPECT_FALSE(inbox.protocol.settings.has("max_processing_time"));
  EXPECT_EQ(inbox.protocol.settings.get<sim::Duration>("ttl"), 7 * sim::kDay);
}

TEST(ScenarioLoaderProtocolKeys, TheKindsKeysAreFilledWithTheirDefaultsAndNoOtherKeyIsSet) {
  const ScenarioConfig config = must_load(load_text(kRecordAfter));
  std::vector<std::string> keys;
  for (const auto& [key, value] : config.protocol.settings.values()) keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"expired_wins", "memoize", "precedence", "ttl"}));
  EXPECT_EQ(config.protocol.settings.get<std::string>("precedence"), "expired-wins");
}

// ---------------------------------------------------------------- good files

TEST(ScenarioLoaderGoodFiles, TheScenariosMdExampleLoadsWithTheValuesWritten) {
  ScenarioConfig config = must_load(scenario::load_scenario(kTestDir / "good" / "scenarios_md_example.toml", {}));
  EXPECT_EQ(config.scenario.name, "lost-ack-payment");
  EXPECT_EQ(config.scenario.tags, (std::vector<std::string>{"incident", "payments"}));
  EXPECT_EQ(config.run.seeds, 20);
  EXPECT_EQ(config.run.duration, sim::kHour);
  EXPECT_EQ(config.topology.source, "kafka");
  EXPECT_EQ(config.topology.partitions, 8);
  EXPECT_EQ(config.topology.commit.mode, lethe::CommitMode::AfterEach);
  EXPECT_EQ(config.workload.rate.per_second, 50.0);
  EXPECT_EQ(config.workload.processing_time.to_string(), "exponential(mean=200ms)");
  EXPECT_EQ(config.network.latency.to_string(), "uniform(500us, 2ms)");
  ASSERT_EQ(config.network.partitions.size(), 1u);
  EXPECT_EQ(config.network.partitions[0].at, 2 * sim::kMinute);
  EXPECT_EQ(config.network.partitions[0].for_duration, 30 * sim::kSecond);
  EXPECT_EQ(config.network.partitions[0].first, lethe::PartitionGroup::Consumers);
  EXPECT_EQ(config.network.partitions[0].second, lethe::PartitionGroup::Store);
  ASSERT_TRUE(config.faults.crash_every.has_value());
  ASSERT_TRUE(config.faults.clock_skew.has_value());
  EXPECT_EQ(config.faults.clock_skew->quantile(0.0), -50 * sim::kMillisecond);
  EXPECT_EQ(config.store.ttl_eviction.kind, lethe::TtlEvictionKind::Exact);
  EXPECT_EQ(config.protocol.settings.get<sim::Duration>("max_processing_time"), 30 * sim::kSecond);
  EXPECT_EQ(config.protocol.settings.get<sim::Duration>("ttl"), 7 * sim::kDay);
  EXPECT_EQ(config.protocol.settings.get<lethe::Poll>("poll").kind, lethe::PollKind::Distribution);
  EXPECT_EQ(config.protocol.settings.get<lethe::Poll>("poll").interval.to_string(), "100ms");
  EXPECT_EQ(config.sink.capacity.per_second, 0.0);
  ASSERT_EQ(config.sink.outages.size(), 1u);
  EXPECT_EQ(config.sink.outages[0].at, sim::kMinute);
  ASSERT_EQ(config.expect.size(), 4u);
  EXPECT_EQ(config.expect[0].key, "duplicate_effects");
  EXPECT_EQ(config.expect[3].key, "duplicates.expired");
  EXPECT_EQ(config.expect[3].op, lethe::ExpectationOp::LessEqual);
  EXPECT_EQ(config.expect[3].number, 3.0);
  EXPECT_EQ(config.expect[3].line, 103);
}

TEST(ScenarioLoaderGoodFiles, EveryValueFormLoadsIncludingEmpiricalFiles) {
  ScenarioConfig config = must_load(scenario::load_scenario(kTestDir / "good" / "every_form.toml", {}));
  EXPECT_EQ(config.run.duration, 90 * sim::kMinute);
  EXPECT_EQ(config.topology.source, "queue");
  EXPECT_EQ(config.topology.commit.mode, lethe::CommitMode::Interval);
  EXPECT_EQ(config.topology.commit.interval, 5 * sim::kSecond);
  EXPECT_DOUBLE_EQ(config.workload.rate.per_second, 0.5);
  EXPECT_EQ(config.workload.processing_time.quantile(1.0), 2500 * sim::kMillisecond);  // from latencies.csv
  EXPECT_EQ(config.workload.processing_time.quantile(0.0), 95 * sim::kMillisecond);
  EXPECT_EQ(config.faults.restart_after.quantile(0.0), 250 * sim::kMicrosecond);  // 0.25 with unit=ms
  EXPECT_EQ(config.network.ack_loss, 1.0);
  ASSERT_EQ(config.network.partitions.size(), 2u);
  EXPECT_EQ(config.network.partitions[0].first, lethe::PartitionGroup::Broker);
  EXPECT_EQ(config.network.partitions[1].for_duration, sim::kDay);
  EXPECT_FALSE(config.faults.pause_every.has_value());
  EXPECT_EQ(config.store.ttl_eviction.kind, lethe::TtlEvictionKind::Lazy);
  EXPECT_EQ(config.store.ttl_eviction.lazy_max, 48 * sim::kHour);
  const lethe::StrategySettings& protocol = config.protocol.settings;
  EXPECT_EQ(protocol.get<lethe::Poll>("poll").kind, lethe::PollKind::Backoff);
  EXPECT_EQ(protocol.get<lethe::Poll>("poll").backoff_base, 50 * sim::kMillisecond);
  EXPECT_EQ(protocol.get<lethe::Poll>("poll").backoff_factor, 1.5);
  EXPECT_EQ(protocol.get<lethe::Poll>("poll").backoff_cap, 5 * sim::kSecond);
  EXPECT_EQ(protocol.get<lethe::PollRead>("poll_read").kind, lethe::PollReadKind::Eventual);
  EXPECT_EQ(protocol.get<lethe::PollRead>("poll_read").lag.to_string(), "uniform(1ms, 5ms)");
  EXPECT_EQ(protocol.get<std::string>("takeover"), "if-not-exists");
  EXPECT_EQ(protocol.get<std::string>("complete"), "blind");
  EXPECT_EQ(protocol.get<std::string>("expires_on"), "at-start");
  EXPECT_EQ(protocol.get<std::string>("on_max_wait"), "process");
  EXPECT_EQ(config.sink.backoff.kind, lethe::BackoffKind::Exponential);
  EXPECT_EQ(config.sink.backoff.cap, 10 * sim::kSecond);
  EXPECT_EQ(config.sink.jitter, lethe::Jitter::Decorrelated);
  EXPECT_EQ(config.sink.outages.size(), 2u);
  EXPECT_EQ(config.producer.mode, lethe::ProducerMode::Outbox);
  // Expectations in file order, nested tables flattened to dotted keys.
  std::vector<std::string> keys;
  for (const lethe::Expectation& e : config.expect) keys.push_back(e.key);
  EXPECT_EQ(keys,
            (std::vector<std::string>{"duplicate_effects", "wait_time.p99", "recovery_latency.max", "linearizable",
                                      "calls_per_success", "duplicates.expired", "duplicates.sink_retry"}));
  EXPECT_TRUE(config.expect[0].percent);
  EXPECT_EQ(config.expect[0].number, 1.0);
  EXPECT_EQ(config.expect[1].number, 5e9);  // "< 5s" on a time field is in ns
  EXPECT_EQ(config.expect[1].op, lethe::ExpectationOp::Less);
  EXPECT_EQ(config.expect[6].op, lethe::ExpectationOp::NotEqual);
}

TEST(ScenarioLoaderGoodFiles, AClientsScenarioMayPartitionClients) {
  ScenarioConfig config = must_load(scenario::load_scenario(kTestDir / "good" / "clients.toml", {}));
  EXPECT_EQ(config.topology.source, "clients");
  EXPECT_EQ(config.topology.clients, 50);
  EXPECT_EQ(config.network.partitions[0].first, lethe::PartitionGroup::Clients);
  EXPECT_EQ(config.protocol.kind, "none");
  EXPECT_TRUE(config.protocol.settings.values().empty());  // "none" reads no key
  EXPECT_EQ(config.sink.backoff.kind, lethe::BackoffKind::Constant);
  EXPECT_EQ(config.sink.backoff.delay, 100 * sim::kMillisecond);
  EXPECT_EQ(config.topology.client_timeout, 2 * sim::kSecond);
  EXPECT_EQ(config.topology.client_retries, 2);
  EXPECT_EQ(config.topology.client_backoff.kind, lethe::BackoffKind::Constant);
  EXPECT_EQ(config.topology.client_backoff.delay, 50 * sim::kMillisecond);
  EXPECT_EQ(config.topology.client_jitter, lethe::Jitter::Equal);
}

TEST(ScenarioLoaderGoodFiles, AMinimalFileGetsTheDocumentedDefaults) {
  ScenarioConfig config = must_load(scenario::load_scenario(kTestDir / "good" / "minimal.toml", {}));
  ScenarioConfig expected;
  expected.scenario.name = "minimal";
  expected.protocol.settings.set("max_processing_time", sim::Duration{30 * sim::kSecond});
  expected.protocol.settings.set("ttl", sim::Duration{7 * sim::kDay});
  expected.protocol = lethe::with_defaults(expected.protocol);
  EXPECT_EQ(differences(config, expected), std::vector<std::string>{});
  // Spot checks of the defaults against docs/scenarios.md's example.
  EXPECT_EQ(config.run.seeds, 20);
  EXPECT_EQ(config.topology.consumers, 4);
  EXPECT_EQ(config.topology.processors, std::vector<std::string>{"billing"});
  EXPECT_EQ(config.network.rpc_timeout, sim::kSecond);
  EXPECT_EQ(config.network.latency.to_string(), "uniform(500us, 2ms)");
  EXPECT_EQ(config.store.latency.to_string(), "200us");
  EXPECT_EQ(config.faults.pause_for.to_string(), "exponential(mean=2s)");
  EXPECT_EQ(config.protocol.settings.get<sim::Duration>("max_wait"), sim::kMinute);
  EXPECT_FALSE(config.faults.crash_every.has_value());
  EXPECT_FALSE(config.faults.clock_skew.has_value());
  EXPECT_TRUE(config.expect.empty());
}

TEST(ScenarioLoaderGoodFiles, TtlNoneMeansNoExpiryAndRendersBackAsNone) {
  const std::string text = "[scenario]\nname = \"t\"\n[protocol]\nmax_processing_time = \"30s\"\nttl = \"none\"\n";
  const ScenarioConfig config = must_load(load_text(text));
  EXPECT_EQ(config.protocol.settings.get<sim::Duration>("ttl"), lethe::kTtlNone);
  const std::string rendered = scenario::render_scenario_toml(config);
  EXPECT_NE(rendered.find("ttl = \"none\""), std::string::npos) << rendered;
  EXPECT_EQ(differences(must_load(load_text(rendered)), config), std::vector<std::string>{});
  // Elsewhere "none" is not a duration.
  must_fail(load_text("[scenario]\nname = \"t\"\n[protocol]\nmax_processing_time = \"none\"\nttl = \"1m\"\n"));
}

TEST(ScenarioLoaderGoodFiles, PositionsPointAtTheLinesKeysWereWrittenOn) {
  ScenarioConfig config = must_load(scenario::load_scenario(kTestDir / "good" / "minimal.toml", {}));
  EXPECT_EQ(config.source_name, (kTestDir / "good" / "minimal.toml").string());
  ASSERT_TRUE(config.positions.count("protocol.ttl"));
  EXPECT_EQ(config.positions.at("protocol.ttl").line, 7);
  EXPECT_EQ(config.positions.at("protocol.ttl").column, 7);
  EXPECT_EQ(config.positions.at("scenario.name").line, 3);
  EXPECT_EQ(config.positions.count("run.seeds"), 0u);  // left at its default
}

// ---------------------------------------------------------------- errors beyond the corpus

TEST(ScenarioLoaderErrors, EveryErrorOfAFileIsReportedInLineOrder) {
  std::string text =
      "[scenario]\nname = \"t\"\n[topology]\nconsumers = 0\nsource = \"kafak\"\n"
      "[protocol]\nkind = \"none\"\nbogus = 1\n[network]\nloss = 2\n";
  std::vector<scenario::LoadError> errors = must_fail(load_text(text));
  ASSERT_EQ(errors.size(), 4u) << errors_text(errors);
  EXPECT_EQ(errors[0].message.rfind("test.toml:4:13: topology.consumers:", 0), 0u) << errors[0].message;
  EXPECT_EQ(errors[1].message.rfind("test.toml:5:10: topology.source:", 0), 0u) << errors[1].message;
  EXPECT_EQ(errors[2].message.rfind("test.toml:8:1: protocol.bogus:", 0), 0u) << errors[2].message;
  EXPECT_EQ(errors[3].message.rfind("test.toml:10:8: network.loss:", 0), 0u) << errors[3].message;
}

TEST(ScenarioLoaderErrors, WithoutAProtocolTableTheDefaultMnemosyneNeedsBothRequiredKeys) {
  std::vector<scenario::LoadError> errors = must_fail(load_text("[scenario]\nname = \"t\"\n"));
  ASSERT_EQ(errors.size(), 2u) << errors_text(errors);
  EXPECT_EQ(errors[0].message.rfind("test.toml:1:1: protocol.max_processing_time: missing", 0), 0u);
  EXPECT_NE(errors[0].message.find("\"mnemosyne\", the default kind (no default, by design)"), std::string::npos)
      << errors[0].message;
  EXPECT_EQ(errors[1].message.rfind("test.toml:1:1: protocol.ttl: missing", 0), 0u) << errors[1].message;
}

TEST(ScenarioLoaderErrors, AnEmptyFileNeedsAName) {
  std::vector<scenario::LoadError> errors = must_fail(load_text(""));
  ASSERT_GE(errors.size(), 1u);
  EXPECT_EQ(errors[0].message.rfind("test.toml:1:1: scenario.name: missing", 0), 0u) << errors_text(errors);
}

TEST(ScenarioLoaderErrors, AMissingFileOrADirectoryIsAnErrorNotACrash) {
  std::vector<scenario::LoadError> missing = must_fail(scenario::load_scenario(kTestDir / "no-such-file.toml", {}));
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_NE(missing[0].message.find("no-such-file.toml:1:1: scenario: found no readable file"), std::string::npos);
  std::vector<scenario::LoadError> directory = must_fail(scenario::load_scenario(kTestDir / "good", {}));
  ASSERT_EQ(directory.size(), 1u);
  EXPECT_NE(directory[0].message.find("found a directory"), std::string::npos);
}

TEST(ScenarioLoaderErrors, EmpiricalPathsResolveAgainstTheScenarioFolder) {
  std::string text = kMinimal + "[workload]\nprocessing_time = \"empirical(file=latencies.csv)\"\n";
  must_load(scenario::load_scenario_text(text, "x.toml", kTestDir / "good", {}));
  std::vector<scenario::LoadError> errors = must_fail(scenario::load_scenario_text(text, "x.toml", kTestDir / "broken", {}));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(
      errors[0].message.rfind("x.toml:8:19: workload.processing_time: found \"empirical(file=latencies.csv)\"", 0), 0u)
      << errors[0].message;
}

// ---------------------------------------------------------------- --set

TEST(ScenarioLoaderOverrides, SetValuesAreTypedByTheKeysSchema) {
  ScenarioConfig config = must_load(load_text(
      kMinimal, {"protocol.max_processing_time=5s", "topology.consumers=8", "network.loss=0.1", "faults.swarm=true",
                 "network.ack_loss=1", "topology.processors=billing, shipping", "scenario.tags=[\"a\", \"b\"]",
                 "scenario.name=\"quoted name\"", "faults.crash_every=exponential(mean=10m)", "workload.rate=30/m",
                 "sink.backoff=exponential(base=100ms, cap=10s)", "expect.lost_messages=== 0",
                 "expect.duplicates.expired=<= 2%"}));
  EXPECT_EQ(config.protocol.settings.get<sim::Duration>("max_processing_time"), 5 * sim::kSecond);
  EXPECT_EQ(config.topology.consumers, 8);
  EXPECT_EQ(config.network.loss, 0.1);
  EXPECT_TRUE(config.faults.swarm);
  EXPECT_EQ(config.network.ack_loss, 1.0);
  EXPECT_EQ(config.topology.processors, (std::vector<std::string>{"billing", "shipping"}));
  EXPECT_EQ(config.scenario.tags, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(config.scenario.name, "quoted name");
  ASSERT_TRUE(config.faults.crash_every.has_value());
  EXPECT_EQ(config.faults.crash_every->to_string(), "exponential(mean=10m)");
  EXPECT_DOUBLE_EQ(config.workload.rate.per_second, 0.5);
  EXPECT_EQ(config.sink.backoff.kind, lethe::BackoffKind::Exponential);
  ASSERT_EQ(config.expect.size(), 2u);
  EXPECT_EQ(config.expect[1].key, "duplicates.expired");
  EXPECT_TRUE(config.expect[1].percent);
  EXPECT_EQ(config.expect[1].line, 0);
  EXPECT_EQ(config.positions.at("topology.consumers").line, 0);  // 0 = from the command line
}

TEST(ScenarioLoaderOverrides, ALaterSetWinsAndReplacesAFileExpectation) {
  std::string text = kMinimal + "[expect]\nlost_messages = \"== 0\"\n";
  ScenarioConfig config =
      must_load(load_text(text, {"topology.consumers=2", "topology.consumers=3", "expect.lost_messages=<= 5"}));
  EXPECT_EQ(config.topology.consumers, 3);
  ASSERT_EQ(config.expect.size(), 1u);
  EXPECT_EQ(config.expect[0].op, lethe::ExpectationOp::LessEqual);
  EXPECT_EQ(config.expect[0].number, 5.0);
}

TEST(ScenarioLoaderOverrides, ArrayEntriesCanBeChangedOrAdded) {
  std::string text = kMinimal + "[[sink.outage]]\nat = \"1m\"\nfor = \"30s\"\n";
  ScenarioConfig config =
      must_load(load_text(text, {"sink.outage[0].at=2m", "sink.outage[1].at=5m", "sink.outage[1].for=1s"}));
  ASSERT_EQ(config.sink.outages.size(), 2u);
  EXPECT_EQ(config.sink.outages[0].at, 2 * sim::kMinute);
  EXPECT_EQ(config.sink.outages[1].at, 5 * sim::kMinute);
  // An entry added with only some of its keys is missing the others, and the error names --set.
  std::vector<scenario::LoadError> errors = must_fail(load_text(text, {"sink.outage[1].at=5m"}));
  ASSERT_EQ(errors.size(), 1u) << errors_text(errors);
  EXPECT_EQ(errors[0].message.rfind("--set sink.outage[1].at=5m: sink.outage[1].for: missing", 0), 0u)
      << errors[0].message;
  errors = must_fail(load_text(text, {"sink.outage[3].at=5m"}));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].message.find("found index 3; allowed: 0 to 1"), std::string::npos) << errors[0].message;
}

TEST(ScenarioLoaderOverrides, PartitionGroupsCanBeSetAsACommaList) {
  std::string text =
      kMinimal + "[[network.partition]]\nat = \"1m\"\nfor = \"30s\"\nbetween = [\"consumers\", \"store\"]\n";
  ScenarioConfig config = must_load(load_text(text, {"network.partition[0].between=sink, store"}));
  EXPECT_EQ(config.network.partitions[0].first, lethe::PartitionGroup::Sink);
  EXPECT_EQ(config.network.partitions[0].second, lethe::PartitionGroup::Store);
  std::vector<scenario::LoadError> errors = must_fail(load_text(text, {"network.partition[0].between=sink,clients"}));
  ASSERT_EQ(errors.size(), 1u) << errors_text(errors);
  EXPECT_EQ(errors[0].message.rfind("--set network.partition[0].between=sink,clients: network.partition[0].between[1]: "
                                    "found \"clients\", but topology.source is \"kafka\"",
                                    0),
            0u)
      << errors[0].message;
  // The same group twice, and a window start beyond the largest duration, from the file.
  errors = must_fail(load_text(text, {"network.partition[0].between=store,store", "network.partition[0].at=106751d",
                                      "network.partition[0].for=1d"}));
  ASSERT_EQ(errors.size(), 2u) << errors_text(errors);
  EXPECT_NE(errors_text(errors).find("found \"store\" twice; allowed: two different groups"), std::string::npos);
  EXPECT_NE(errors_text(errors).find("106751d is above 3650d"), std::string::npos);
}

TEST(ScenarioLoaderOverrides, BadSetValuesAreValidatedLikeTheFileAndNameSetAndTheKey) {
  struct Case {
    std::string set;
    std::string prefix;
    std::string contains;
  };
  std::vector<Case> cases = {
      {"protocol.max_processing_time=5",
       "--set protocol.max_processing_time=5: protocol.max_processing_time: ", "found \"5\""},
      {"topology.consumers=0", "--set topology.consumers=0: topology.consumers: ", "found 0; allowed: an integer"},
      {"topology.consumers=many", "--set topology.consumers=many: topology.consumers: ", "found string \"many\""},
      {"network.loss=1.5", "--set network.loss=1.5: network.loss: ", "allowed: a probability"},
      {"faults.swarm=yes", "--set faults.swarm=yes: faults.swarm: ", "allowed: true or false"},
      {"protocol.max_procesing_time=5s",
       "--set protocol.max_procesing_time=5s: protocol.max_procesing_time: ", "did you mean `max_processing_time`?"},
      {"protocl.ttl=5s", "--set protocl.ttl=5s: protocl: ", "did you mean `protocol`?"},
      {"protocol.kind=mnemosine", "--set protocol.kind=mnemosine: protocol.kind: ", "did you mean \"mnemosyne\"?"},
      {"expect.lost_mesages=== 0",
       "--set expect.lost_mesages=== 0: expect.lost_mesages: ", "did you mean `lost_messages`?"},
      {"expect.lost_messages=0", "--set expect.lost_messages=0: expect.lost_messages: ", "allowed: \"OP NUMBER\""},
      {"topology.consumers", "--set topology.consumers: topology.consumers: ", "allowed: --set KEY=VALUE"},
      {"protocol=none", "--set protocol=none: protocol: ", "allowed: --set sets one value"},
      {"scenario.name.first=x", "--set scenario.name.first=x: scenario.name: ", "not a table"},
      {"topology..consumers=3", "--set topology..consumers=3: topology..consumers: ", "malformed key"},
      {"network.partition[1].at=1m", "--set network.partition[1].at=1m: network.partition[1]: ",
       "found index 1; allowed: 0 to 0 (an existing entry, or 0 to add one)"},
      {"network.partition[0]=x", "--set network.partition[0]=x: network.partition[0]: ",
       "found a whole table; allowed: one key of it, e.g. network.partition[0].at=1m"},
      {"scenario.name[0].x=1", "--set scenario.name[0].x=1: scenario.name: ",
       "found string \"t\" in the file; allowed: an array of tables"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.set);
    std::vector<scenario::LoadError> errors = must_fail(load_text(kMinimal, {c.set}));
    ASSERT_EQ(errors.size(), 1u) << errors_text(errors);
    EXPECT_EQ(errors[0].message.rfind(c.prefix, 0), 0u) << errors[0].message;
    EXPECT_NE(errors[0].message.find(c.contains), std::string::npos) << errors[0].message;
  }
}

TEST(ScenarioLoaderOverrides, ASetThatMakesAKeyRequiredPointsAtTheSet) {
  std::string text = "[scenario]\nname = \"t\"\n[protocol]\nkind = \"none\"\n";
  std::vector<scenario::LoadError> errors = must_fail(load_text(text, {"protocol.kind=inbox"}));
  ASSERT_EQ(errors.size(), 1u) << errors_text(errors);
  EXPECT_EQ(errors[0].message.rfind("--set protocol.kind=inbox: protocol.ttl: missing", 0), 0u) << errors[0].message;
  must_load(load_text(text, {"protocol.kind=inbox", "protocol.ttl=1d"}));
}

// ---------------------------------------------------------------- render round trip

TEST(ScenarioLoaderRender, EveryGoodFileRoundTripsThroughRender) {
  for (const char* name : {"scenarios_md_example.toml", "every_form.toml", "clients.toml", "minimal.toml"}) {
    SCOPED_TRACE(name);
    ScenarioConfig config = must_load(scenario::load_scenario(kTestDir / "good" / name, {}));
    std::string rendered = scenario::render_scenario_toml(config);
    ScenarioConfig again = must_load(load_text(rendered));
    EXPECT_EQ(differences(config, again), std::vector<std::string>{}) << rendered;
    EXPECT_EQ(scenario::render_scenario_toml(again), rendered);
  }
}

// A valid config with every field drawn at random within the loader's rules.
ScenarioConfig arbitrary_config() {
  namespace gen = rc::gen;
  const fs::path base = kTestDir / "good";
  auto distribution = [&](bool allow_negative) {
    std::vector<std::string> forms = {"0s",
                                      "5ms",
                                      "1.5s",
                                      "uniform(1ms, 5ms)",
                                      "exponential(mean=200ms)",
                                      "normal(mean=1s, sd=200ms)",
                                      "lognormal(median=200ms, p99=2s)",
                                      "pareto(scale=100ms, shape=1.5)",
                                      "empirical(file=latencies.csv)",
                                      "empirical(file=latencies_ms.txt, unit=ms)"};
    if (allow_negative) forms.push_back("uniform(-50ms, 50ms)");
    std::string text = *gen::elementOf(forms);
    std::string error;
    std::optional<sim::Distribution> parsed = sim::Distribution::parse(text, base, error, allow_negative);
    RC_ASSERT(parsed.has_value());
    return *parsed;
  };
  auto positive = [&] { return sim::Distribution::constant(*gen::inRange<sim::Duration>(1, sim::kDay)); };
  // A fault loop's interval has a mean of at least kMinFaultIntervalMean (a shorter one is refused at load).
  auto fault_interval = [&] {
    const sim::Duration shortest = scenario::schema::kMinFaultIntervalMean;
    return sim::Distribution::constant(*gen::inRange<sim::Duration>(shortest, sim::kDay));
  };
  auto duration = [](sim::Duration min) { return *gen::inRange<sim::Duration>(min, 400 * sim::kDay); };
  auto probability = [] {
    return *gen::oneOf(gen::element(0.0, 1.0, 0.5),
                       gen::map(gen::inRange<std::int64_t>(0, std::int64_t{1} << 53), [](std::int64_t n) {
                         return static_cast<double>(n) / static_cast<double>(std::int64_t{1} << 53);
                       }));
  };
  auto text = [] {
    return *gen::container<std::string>(
        gen::element<char>('a', 'Z', '0', ' ', '"', '\\', '\n', '\t', '#', '=', '[', '\x01', '\x7f'));
  };
  // A random subset of `items`, in their order.
  auto subset = [](const std::vector<std::string>& items) {
    std::vector<std::string> chosen;
    for (const std::string& item : items) {
      if (*gen::arbitrary<bool>()) chosen.push_back(item);
    }
    return chosen;
  };
  auto backoff = [&] {
    switch (*gen::inRange(0, 3)) {
      case 0: return lethe::Backoff{};
      case 1: return lethe::Backoff{lethe::BackoffKind::Constant, duration(0), 0, 0};
      default: {
        sim::Duration first_delay = duration(1);
        return lethe::Backoff{lethe::BackoffKind::Exponential, 0, first_delay, first_delay + duration(0)};
      }
    }
  };
  auto jitter = [] {
    return *gen::element(lethe::Jitter::None, lethe::Jitter::Full, lethe::Jitter::Equal, lethe::Jitter::Decorrelated);
  };
  ScenarioConfig c;
  c.scenario.name = "n" + text();
  c.scenario.description = text() + "\xc3\xa9";  // and a non-ASCII character
  c.scenario.tags = subset({"a", "b", "c d", "\"q\"", "\u00e9t\u00e9"});
  c.run.seeds = *gen::inRange<std::int64_t>(1, 1'000'000'000);
  c.run.duration = duration(1);
  c.run.drain = *gen::arbitrary<bool>();
  c.topology.source = *gen::element<std::string>("kafka", "queue", "clients");
  c.topology.consumers = *gen::inRange(1, 1000);
  c.topology.processors = subset({"billing", "ship", "x y"});
  if (c.topology.processors.empty()) c.topology.processors = {"only"};
  c.topology.partitions = *gen::inRange(c.topology.source == "kafka" ? 1 : 0, 1000);
  c.topology.partitioner = *gen::element(lethe::Partitioner::ByKey, lethe::Partitioner::Random);
  if (*gen::arbitrary<bool>()) c.topology.commit = lethe::Commit{lethe::CommitMode::Interval, duration(1)};
  c.topology.visibility_timeout = duration(1);
  c.topology.clients = *gen::inRange(c.topology.source == "clients" ? 1 : 0, 1000);
  c.topology.client_timeout = duration(1);
  c.topology.client_retries = *gen::inRange(0, 1000);
  c.topology.client_backoff = backoff();
  c.topology.client_jitter = jitter();
  c.workload.messages = *gen::inRange<std::int64_t>(0, 1'000'000);
  c.workload.rate.per_second = *gen::element(50.0, 0.5, 1.0 / 60.0, 1e-5, 12345.678);
  c.workload.processing_time = distribution(false);
  c.workload.result_size = *gen::inRange<std::int64_t>(0, 100000);
  c.workload.redelivery.fraction = probability();
  c.workload.redelivery.copies = *gen::inRange(1, 1000);
  c.workload.redelivery.delay = distribution(false);
  c.network.latency = distribution(false);
  c.network.loss = probability();
  c.network.ack_loss = probability();
  c.network.duplicate = probability();
  c.network.rpc_timeout = duration(1);
  std::vector<lethe::PartitionGroup> groups = {lethe::PartitionGroup::Consumers, lethe::PartitionGroup::Store,
                                               lethe::PartitionGroup::Sink};
  groups.push_back(c.topology.source == "clients" ? lethe::PartitionGroup::Clients
                                                                   : lethe::PartitionGroup::Broker);
  int partitions = *gen::inRange(0, 3);
  for (int i = 0; i < partitions; ++i) {
    lethe::NetworkPartition p;
    p.at = duration(0);
    p.for_duration = duration(1);
    std::size_t first = *gen::inRange<std::size_t>(0, groups.size());
    std::size_t second = (first + *gen::inRange<std::size_t>(1, groups.size())) % groups.size();
    p.first = groups[first];
    p.second = groups[second];
    c.network.partitions.push_back(p);
  }
  if (*gen::arbitrary<bool>()) c.faults.crash_every = fault_interval();
  c.faults.restart_after = distribution(false);
  if (*gen::arbitrary<bool>()) c.faults.pause_every = fault_interval();
  c.faults.pause_for = distribution(false);
  if (*gen::arbitrary<bool>()) c.faults.clock_skew = distribution(true);
  if (*gen::arbitrary<bool>()) c.faults.rebalance_every = fault_interval();
  c.faults.swarm = *gen::arbitrary<bool>();
  c.faults.crash_points.after_start_before_effect = probability();
  c.faults.crash_points.after_effect_before_complete = probability();
  c.faults.crash_points.after_complete_before_ack = probability();
  c.store.latency = distribution(false);
  if (*gen::arbitrary<bool>()) c.store.ttl_eviction = lethe::TtlEviction{lethe::TtlEvictionKind::Lazy, duration(0)};
  lethe::ProtocolSection& p = c.protocol;
  p.kind = *gen::element<std::string>("none", "check-then-insert", "record-after", "mnemosyne", "inbox");
  const lethe::StrategyInfo& info = lethe::strategy_info(p.kind);
  // Only the keys the kind reads (another kind's key is refused); the rest take their defaults below.
  const auto put = [&](const char* key, lethe::SettingValue value) {
    if (lethe::find_key(info, key) != nullptr) p.settings.set(key, std::move(value));
  };
  put("max_processing_time", duration(1));
  put("ttl", duration(1));
  lethe::Poll poll;
  if (*gen::arbitrary<bool>()) {
    poll.kind = lethe::PollKind::Backoff;
    poll.backoff_base = duration(1);
    poll.backoff_factor = *gen::element(1.0, 1.5, 2.0, 1.0 / 3.0 + 1.0);
    poll.backoff_cap = poll.backoff_base + *gen::inRange<sim::Duration>(0, sim::kHour);
  } else {
    poll.interval = positive();
  }
  put("poll", poll);
  put("max_wait", duration(0));
  put("on_max_wait", lethe::to_string(*gen::element(lethe::OnMaxWait::Error, lethe::OnMaxWait::Process,
                                                     lethe::OnMaxWait::Skip)));
  put("memoize", *gen::arbitrary<bool>());
  put("takeover", lethe::to_string(*gen::element(lethe::Takeover::Conditional, lethe::Takeover::IfNotExists)));
  put("complete", lethe::to_string(*gen::element(lethe::Complete::Fenced, lethe::Complete::Blind)));
  if (*gen::arbitrary<bool>()) put("poll_read", lethe::PollRead{lethe::PollReadKind::Eventual, distribution(false)});
  put("expires_on", lethe::to_string(*gen::element(lethe::ExpiresOn::AtComplete, lethe::ExpiresOn::AtStart)));
  put("expired_wins", *gen::arbitrary<bool>());
  p = lethe::with_defaults(p);
  c.sink.kind = *gen::element<std::string>("counter", "payment", "email");
  c.sink.idempotent = *gen::arbitrary<bool>();
  c.sink.latency = distribution(false);
  c.sink.timeout = duration(1);
  c.sink.retries = *gen::inRange(0, 1000);
  c.sink.backoff = backoff();
  c.sink.jitter = jitter();
  c.sink.capacity.per_second = *gen::element(0.0, 100.0, 2.5);
  int outages = *gen::inRange(0, 3);
  for (int i = 0; i < outages; ++i) c.sink.outages.push_back(lethe::SinkOutage{duration(0), duration(1)});
  c.producer.mode =
      *gen::element(lethe::ProducerMode::Direct, lethe::ProducerMode::DualWrite, lethe::ProducerMode::Outbox);
  c.producer.crash_between_commit_and_publish = probability();
  for (const std::string& key : subset(scenario::expectation_keys())) {
    lethe::Expectation e;
    e.key = key;
    if (lethe::expectation_kind(key) == lethe::FieldKind::Boolean) {
      e.op = *gen::element(lethe::ExpectationOp::Equal, lethe::ExpectationOp::NotEqual);
      e.number = *gen::element(0.0, 1.0);
    } else {
      e.op = *gen::element(lethe::ExpectationOp::Equal, lethe::ExpectationOp::NotEqual, lethe::ExpectationOp::Less,
                           lethe::ExpectationOp::LessEqual, lethe::ExpectationOp::Greater,
                           lethe::ExpectationOp::GreaterEqual);
      e.number = *gen::element(0.0, 3.0, 0.25, -1.0, 1e21, 123456789.5);
      bool count = key != "sim_time" && key != "calls_per_success" && key.find("wait_time") == std::string::npos &&
                   key.find("recovery_latency") == std::string::npos;
      e.percent = count && *gen::arbitrary<bool>();
    }
    c.expect.push_back(e);
  }
  c.expect_defaults = *gen::arbitrary<bool>();
  return c;
}

RC_GTEST_PROP(ScenarioLoaderRender, RenderedConfigsLoadBackToAnEqualConfig, ()) {
  ScenarioConfig config = arbitrary_config();
  std::string rendered = scenario::render_scenario_toml(config);
  scenario::LoadResult result = scenario::load_scenario_text(rendered, "rendered.toml", kTestDir / "good", {});
  RC_ASSERT_FALSE(std::holds_alternative<std::vector<scenario::LoadError>>(result));
  std::vector<std::string> differing = differences(config, std::get<ScenarioConfig>(result));
  RC_ASSERT(differing == std::vector<std::string>{});
}

// ---------------------------------------------------------------- robustness

RC_GTEST_PROP(ScenarioLoaderRobustness, AnyMutationOfAGoodFileLoadsOrFailsWithPositionedErrors, ()) {
  static const std::string original = read_file(kTestDir / "good" / "every_form.toml");
  std::string text = original;
  int edits = *rc::gen::inRange(1, 6);
  for (int i = 0; i < edits; ++i) {
    std::size_t at = *rc::gen::inRange<std::size_t>(0, text.size());
    switch (*rc::gen::inRange(0, 3)) {
      case 0: text.erase(at, 1); break;
      case 1: text.insert(at, 1, *rc::gen::element('"', '=', '[', ']', '\n', '(', ',', '-', '0', 'x', '%', '.')); break;
      default: text[at] = *rc::gen::element('"', '=', '[', ']', '\n', '(', ',', '-', '0', 'x', '%', '.');
    }
  }
  scenario::LoadResult result = scenario::load_scenario_text(text, "mutated.toml", kTestDir / "good", {});
  if (std::holds_alternative<std::vector<scenario::LoadError>>(result)) {
    const std::vector<scenario::LoadError>& errors = std::get<std::vector<scenario::LoadError>>(result);
    RC_ASSERT(!errors.empty());
    for (const scenario::LoadError& e : errors) {
      RC_ASSERT(e.message.rfind("mutated.toml:", 0) == 0);
      std::string_view after_file = std::string_view(e.message).substr(13);
      std::size_t line_digits = after_file.find(':');
      RC_ASSERT(line_digits != std::string_view::npos && line_digits > 0);
      RC_ASSERT(after_file.substr(0, line_digits).find_first_not_of("0123456789") == std::string_view::npos);
      RC_ASSERT(continues_with_column_and_key(after_file.substr(line_digits + 1), ""));
    }
  }
}

RC_GTEST_PROP(ScenarioLoaderRobustness, ArbitrarySetArgumentsNeverCrashAndTheirErrorsNameSet,
              (const std::string& value)) {
  // A known key (or a near miss) with an arbitrary value, or an arbitrary argument.
  std::string key = *rc::gen::element<std::string>(
      "scenario.name", "scenario.tags", "run.seeds", "run.duration", "run.drain", "topology.source",
      "topology.processors", "topology.commit", "workload.rate", "workload.processing_time",
      "workload.redelivery.fraction", "network.loss", "network.partition[0].at", "network.partition[0].between",
      "faults.clock_skew", "faults.crash_points.after_complete_before_ack", "store.ttl_eviction", "protocol.kind",
      "protocol.poll", "protocol.poll_read", "sink.backoff", "sink.capacity", "sink.outage[0].for", "producer.mode",
      "expect.duplicates.expired", "expect.wait_time.p99", "protocol", "protocol.ttl.x", "network.partition[1].at",
      "expect.", "");
  std::string argument = *rc::gen::arbitrary<bool>() ? key + "=" + value : value;
  scenario::LoadResult result = load_text(kMinimal, {argument});
  if (std::holds_alternative<std::vector<scenario::LoadError>>(result)) {
    for (const scenario::LoadError& e : std::get<std::vector<scenario::LoadError>>(result)) RC_ASSERT(e.message.rfind("--set ", 0) == 0);
  }
}

// ---------------------------------------------------------------- the value languages

TEST(ScenarioText, CallsSplitAtTopLevelCommasOnly) {
  std::optional<scenario::text::Call> call = scenario::text::parse_call("eventual(lag=uniform(1ms, 5ms))");
  ASSERT_TRUE(call.has_value());
  EXPECT_EQ(call->name, "eventual");
  ASSERT_EQ(call->arguments.size(), 1u);
  EXPECT_EQ(call->arguments[0].key, "lag");
  EXPECT_EQ(call->arguments[0].value, "uniform(1ms, 5ms)");
  call = scenario::text::parse_call(" backoff( 50ms , factor = 1.5,cap=5s ) ");
  ASSERT_TRUE(call.has_value());
  ASSERT_EQ(call->arguments.size(), 3u);
  EXPECT_EQ(call->arguments[0].key, "");
  EXPECT_EQ(call->arguments[1].value, "1.5");
  EXPECT_FALSE(scenario::text::parse_call("lazy(max=48h").has_value());
  EXPECT_FALSE(scenario::text::parse_call("lazy(,)").has_value());
  EXPECT_FALSE(scenario::text::parse_call("(5s)").has_value());
  EXPECT_FALSE(scenario::text::parse_call("lazy(a))(").has_value());
}

TEST(ScenarioText, ArgumentsBindPositionallyThenByName) {
  std::string problem;
  auto call = scenario::text::parse_call("exponential(100ms, cap=10s)");
  ASSERT_TRUE(call.has_value());
  auto bound = scenario::text::bind_arguments(*call, {"base", "cap"}, problem);
  ASSERT_TRUE(bound.has_value()) << problem;
  EXPECT_EQ(*bound, (std::vector<std::string>{"100ms", "10s"}));
  call = scenario::text::parse_call("exponential(cap=10s, base=1s, base=2s)");
  EXPECT_FALSE(scenario::text::bind_arguments(*call, {"base", "cap"}, problem).has_value());
  EXPECT_EQ(problem, "argument `base` given twice");
}

TEST(ScenarioText, RatesAreEventsPerSecond) {
  EXPECT_EQ(scenario::text::parse_rate_per_second("50/s"), 50.0);
  EXPECT_EQ(scenario::text::parse_rate_per_second("30/m"), 0.5);
  EXPECT_EQ(scenario::text::parse_rate_per_second("1/ms"), 1000.0);
  EXPECT_EQ(scenario::text::parse_rate_per_second("0/s"), 0.0);
  EXPECT_FALSE(scenario::text::parse_rate_per_second("-1/s").has_value());
  EXPECT_FALSE(scenario::text::parse_rate_per_second("50").has_value());
  EXPECT_FALSE(scenario::text::parse_rate_per_second("50/week").has_value());
  EXPECT_FALSE(scenario::text::parse_rate_per_second("inf/s").has_value());
  EXPECT_FALSE(scenario::text::parse_rate_per_second("1e400/s").has_value());
}

TEST(ScenarioText, NearestSuggestsTyposOnly) {
  std::vector<std::string> keys = {"kind", "max_processing_time", "ttl", "poll", "max_wait"};
  EXPECT_EQ(scenario::text::nearest("max_procesing_time", keys), "max_processing_time");
  EXPECT_EQ(scenario::text::nearest("tll", keys), "ttl");
  EXPECT_EQ(scenario::text::nearest("pol", keys), "poll");
  EXPECT_EQ(scenario::text::nearest("colour", keys), "");
  EXPECT_EQ(scenario::text::edit_distance("kafak", "kafka"), 1u);
  EXPECT_EQ(scenario::text::edit_distance("", "abc"), 3u);
}

RC_GTEST_PROP(ScenarioText, FormattedNumbersParseBackExactly, (double value)) {
  RC_PRE(std::isfinite(value));
  std::optional<double> parsed = scenario::text::parse_number(scenario::text::format_number(value));
  RC_ASSERT(parsed.has_value());
  RC_ASSERT(*parsed == value);
}

TEST(LoaderStoreCapacity, AnIntegerOrUnboundedLoadsAndAnythingElseIsRefusedWithItsPlace) {
  EXPECT_FALSE(must_load(load_text(kMinimal)).store.capacity.has_value()) << "the default is unbounded";
  EXPECT_EQ(must_load(load_text(kMinimal + "\n[store]\ncapacity = 1000\n")).store.capacity, 1000u);
  EXPECT_FALSE(must_load(load_text(kMinimal + "\n[store]\ncapacity = \"unbounded\"\n")).store.capacity.has_value());
  EXPECT_EQ(must_load(load_text(kMinimal, {"store.capacity=7"})).store.capacity, 7u);
  EXPECT_FALSE(must_load(load_text(kMinimal, {"store.capacity=unbounded"})).store.capacity.has_value());
  for (const std::string bad : {"0", "-3", "\"big\"", "1.5", "true"}) {
    const std::vector<scenario::LoadError> errors = must_fail(load_text(kMinimal + "\n[store]\ncapacity = " + bad + "\n"));
    ASSERT_EQ(errors.size(), 1u) << bad;
    EXPECT_NE(errors[0].message.find("test.toml:9:12: store.capacity: found "), std::string::npos) << errors[0].message;
    EXPECT_NE(errors[0].message.find("allowed: an integer >= 1, or \"unbounded\""), std::string::npos)
        << errors[0].message;
  }
}

}  // namespace loader_test
