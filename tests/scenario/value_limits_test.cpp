// Every duration a scenario may give is bounded by sim::kDurationMax (3650 days): walked over the table of keys
// (scenario/schema.hpp), a value near 2^63 ns in any duration, distribution or duration-carrying language key is
// refused with the largest allowed value in the message (exit 2 from the binary, never a signal), and the
// largest allowed value itself loads. Rates outside what the simulation represents are refused too.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <variant>
#include <vector>

#include "scenario/loader.hpp"
#include "protocol/registry.hpp"
#include "scenario/schema.hpp"
#include "tests/runner/support.hpp"

namespace value_limits_test {

namespace fs = std::filesystem;
namespace schema = scenario::schema;

// One partition, one link and one outage, so that every array entry's keys can be set as entry [0].
const std::string kBase =
    "[scenario]\nname = \"t\"\n[workload]\nmessages = 20\nrate = \"100/s\"\n"
    "[protocol]\nmax_processing_time = \"30s\"\nttl = \"7d\"\n"
    "[[network.partition]]\nat = \"1s\"\nfor = \"1s\"\nbetween = [\"consumers\", \"store\"]\n"
    "[[network.link]]\nbetween = [\"consumers\", \"sink\"]\nlatency = \"1ms\"\n"
    "[[sink.outage]]\nat = \"1s\"\nfor = \"1s\"\n";

// A key and how a duration is written into it: "{}" is replaced by the duration.
struct DurationKey {
  std::string path;
  std::string form;
};

// Collects every key of the table whose value holds a duration.
struct DurationKeys {
  std::string table_path;
  std::vector<DurationKey> keys;

  void table(std::string_view path) { table_path = path; }
  void add(std::string_view name, std::string form) {
    keys.push_back({table_path + "." + std::string(name), std::move(form)});
  }
  template <class Type, class Field>
  void key(std::string_view name, const Type& type, const Field& field, std::string_view) {
    forms(name, type, field);
  }
  template <class Type, class Field>
  void required_key(std::string_view name, const Type& type, const Field& field, std::string_view) {
    forms(name, type, field);
  }
  template <class Entry, class Keys>
  void array(std::string_view path, const std::vector<Entry>&, Keys entry_keys) {
    const std::string outer = table_path;
    table_path = std::string(path) + "[0]";
    const Entry entry{};
    entry_keys(*this, entry);
    table_path = outer;
  }
  // The default kind's duration keys (the other kinds' share the same languages).
  void strategy_keys(const lethe::ProtocolSection& protocol) {
    for (const lethe::SettingKey& key : lethe::strategy_info(protocol.kind).keys) {
      if (key.language == lethe::SettingLanguage::Duration) {
        forms(key.name, schema::Duration{key.min, key.none}, sim::Duration{0});
      }
    }
  }
  template <class Object>
  void rule(schema::Rule, const Object&) {}
  void expect(const std::vector<lethe::Expectation>&, std::string_view) {}

  template <class Type, class Field>
  void forms(std::string_view, const Type&, const Field&) {}
  template <class Field>
  void forms(std::string_view name, const schema::Duration&, const Field&) { add(name, "{}"); }
  template <class Field>
  void forms(std::string_view name, const schema::Distribution&, const Field&) {
    add(name, "{}");
    add(name, "uniform(0s, {})");
  }
  template <class Field>
  void forms(std::string_view name, const schema::Language&, const Field& field) {
    for (const char* form : language_forms(field)) add(name, form);
  }
  static std::vector<const char*> language_forms(const lethe::Commit&) { return {"interval({})"}; }
  static std::vector<const char*> language_forms(const lethe::TtlEviction&) { return {"lazy(max={})"}; }
  static std::vector<const char*> language_forms(const lethe::Poll&) {
    return {"{}", "backoff(base=1ms, factor=2, cap={})"};
  }
  static std::vector<const char*> language_forms(const lethe::PollRead&) { return {"eventual(lag={})"}; }
  static std::vector<const char*> language_forms(const lethe::LocalCache&) { return {"lru(size=8, ttl={})"}; }
  static std::vector<const char*> language_forms(const lethe::Schedule&) { return {}; }  // holds no duration
  static std::vector<const char*> language_forms(const lethe::Backoff&) {
    return {"constant({})", "exponential(base=1ms, cap={})"};
  }
};

std::vector<DurationKey> duration_keys() {
  DurationKeys visitor;
  const lethe::ScenarioConfig config;
  schema::visit_schema(visitor, config);
  return visitor.keys;
}

std::string setting(const DurationKey& key, const std::string& duration) {
  return key.path + "=" + fmt::format(fmt::runtime(key.form), duration);
}

scenario::LoadResult load(const std::vector<std::string>& overrides) {
  return scenario::load_scenario_text(kBase, "test.toml", fs::path(LETHE_SOURCE_DIR) / "tests" / "runner" / "good",
                                      overrides);
}

std::string errors_of(const scenario::LoadResult& result) {
  if (!std::holds_alternative<std::vector<scenario::LoadError>>(result)) return "";
  std::string text;
  for (const scenario::LoadError& e : std::get<std::vector<scenario::LoadError>>(result)) text += e.message + "\n";
  return text;
}

TEST(ValueLimits, TheTableHasTheDurationKeysTheLimitMustCover) {
  const std::vector<DurationKey> keys = duration_keys();
  // 12 duration keys, 12 distribution keys (two forms each), 6 language keys (9 forms).
  EXPECT_GE(keys.size(), 12u + 24u + 9u);
}

// Property over the table: a duration above the bound, in any key that holds one, is refused with the bound
// named; the bound itself is accepted.
TEST(ValueLimits, EveryDurationKeyRefusesValuesAboveTheMaximumAndAcceptsTheMaximum) {
  for (const DurationKey& key : duration_keys()) {
    for (const std::string& too_large : {std::string("9223372036s"), std::string("3651d"),
                                         std::string("9223372036854775807ns")}) {
      const std::string set = setting(key, too_large);
      const std::string errors = errors_of(load({set}));
      EXPECT_NE(errors.find("3650d"), std::string::npos) << set << ": " << (errors.empty() ? "(loaded)" : errors);
    }
    const std::string at_maximum = setting(key, "3650d");
    EXPECT_EQ(errors_of(load({at_maximum})), "") << at_maximum;
  }
}

TEST(ValueLimits, EmpiricalFileValuesAboveTheMaximumAreRefused) {
  const fs::path dir = test_support::temp_dir("value-limits-test", "empirical");
  std::ofstream(dir / "huge.csv") << "1ms\n9223372036s\n";
  const auto result = scenario::load_scenario_text(kBase, "test.toml", dir, {"network.latency=empirical(file=huge.csv)"});
  EXPECT_NE(errors_of(result).find("9223372036s is above 3650d"), std::string::npos) << errors_of(result);
}

TEST(ValueLimits, RatesAreZeroOrBetweenOnePer3650DaysAndTenPerNanosecond) {
  for (const std::string rate : {"1e308/s", "11/ns", "1e-300/s", "0.0002/d"}) {
    const std::string errors = errors_of(load({"workload.rate=" + rate}));
    EXPECT_NE(errors.find("from one per 3650 days"), std::string::npos) << rate << ": " << errors;
    EXPECT_NE(errors_of(load({"sink.capacity=" + rate})), "") << rate;
  }
  for (const std::string rate : {"0/s", "10/ns", "0.000274/d", "50/s"}) {
    EXPECT_EQ(errors_of(load({"sink.capacity=" + rate})), "") << rate;
  }
}

// The binary: a near-2^63 value in each key ends in exit 2 with the bound in the message, never in a signal.
TEST(ValueLimits, NearMaximumDurationsExitTwoWithAMessageNeverASignal) {
  const fs::path dir = test_support::temp_dir("value-limits-test", "binary");
  std::ofstream(dir / "base.toml") << kBase;
  for (const DurationKey& key : duration_keys()) {
    const std::string set = setting(key, "9223372036s");
    const test_support::Outcome outcome =
        test_support::run_lethe(fmt::format("run {} --set '{}'", (dir / "base.toml").string(), set));
    EXPECT_EQ(outcome.exit_code, 2) << set << "\n" << outcome.out;
    EXPECT_NE(outcome.out.find("3650d"), std::string::npos) << set << "\n" << outcome.out;
  }
}

}  // namespace value_limits_test
