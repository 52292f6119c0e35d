// protocol.preset: each preset loads to the values docs/libraries.md's Presets table documents, keys written in
// the file or by --set win over it, an unknown preset is refused with its position and the allowed presets, and
// a preset runs exactly as its keys written out by hand.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "protocol/presets.hpp"
#include "protocol/registry.hpp"
#include "reports/json.hpp"
#include "runner/execute.hpp"
#include "scenario/loader.hpp"
#include "scenario/values.hpp"

namespace preset_test {

namespace fs = std::filesystem;
using lethe::ScenarioConfig;

std::string errors_text(const scenario::LoadResult& result) {
  if (!std::holds_alternative<std::vector<scenario::LoadError>>(result)) return "(loaded)";
  std::string text;
  for (const scenario::LoadError& e : std::get<std::vector<scenario::LoadError>>(result)) text += e.message + "\n";
  return text;
}

scenario::LoadResult load_text(const std::string& text, const std::vector<std::string>& overrides = {}) {
  return scenario::load_scenario_text(text, "test.toml", fs::path(LETHE_SOURCE_DIR) / "scenarios", overrides);
}

ScenarioConfig must_load(const std::string& text, const std::vector<std::string>& overrides = {}) {
  scenario::LoadResult result = load_text(text, overrides);
  if (!std::holds_alternative<ScenarioConfig>(result)) {
    ADD_FAILURE() << "expected the scenario to load, got:\n" << errors_text(result);
    return ScenarioConfig{};
  }
  return std::get<ScenarioConfig>(result);
}

// A setting as the TOML the documentation writes ("" when the loaded config does not have it).
std::string setting(const lethe::ProtocolSection& protocol, const std::string& name) {
  const lethe::StrategyInfo* info = lethe::find_strategy(protocol.kind);
  const lethe::SettingKey* key = info != nullptr ? lethe::find_key(*info, name) : nullptr;
  auto value = protocol.settings.values().find(name);
  if (key == nullptr || value == protocol.settings.values().end()) return "";
  return scenario::values::toml_setting(*key, value->second);
}

// The values a scenario writes for the keys a library leaves to its user ("file" in the table).
const std::map<std::string, std::string> kFileValues = {{"max_processing_time", "\"2m\""}, {"ttl", "\"7d\""}};

// docs/libraries.md's Presets table: preset -> key -> cell ("`\"1h\"`" unquoted of its backticks, "file", "—").
std::map<std::string, std::map<std::string, std::string>> documented_presets() {
  std::ifstream in(fs::path(LETHE_SOURCE_DIR) / "docs" / "libraries.md");
  std::map<std::string, std::map<std::string, std::string>> table;
  std::vector<std::string> columns;
  std::string line;
  auto cells = [](const std::string& row) {
    std::vector<std::string> out;
    std::stringstream stream(row.substr(1));
    std::string cell;
    while (std::getline(stream, cell, '|')) {
      const auto first = cell.find_first_not_of(' ');
      const auto last = cell.find_last_not_of(' ');
      cell = first == std::string::npos ? "" : cell.substr(first, last - first + 1);
      if (cell.size() >= 2 && cell.front() == '`' && cell.back() == '`') cell = cell.substr(1, cell.size() - 2);
      out.push_back(cell);
    }
    return out;
  };
  while (std::getline(in, line)) {
    if (columns.empty()) {
      if (line.rfind("| key | `powertools`", 0) == 0) columns = cells(line);
      continue;
    }
    if (line.rfind("| ---", 0) == 0) continue;
    if (line.empty() || line[0] != '|') break;
    const std::vector<std::string> row = cells(line);
    for (std::size_t i = 1; i < row.size() && i < columns.size(); ++i) table[columns[i]][row[0]] = row[i];
  }
  return table;
}

// A scenario with the preset and the keys its table column leaves to the file.
std::string preset_protocol(const std::string& name, const std::map<std::string, std::string>& column) {
  std::string text = fmt::format("[protocol]\npreset = \"{}\"\n", name);
  for (const auto& [key, cell] : column) {
    if (cell == "file") text += key + " = " + kFileValues.at(key) + "\n";
  }
  return text;
}

const std::string kHeader = "[scenario]\nname = \"t\"\n\n";

TEST(Preset, EachPresetSetsTheValuesTheLibrariesPageDocuments) {
  const auto documented = documented_presets();
  ASSERT_EQ(documented.size(), lethe::presets().size()) << "docs/libraries.md lists another set of presets";
  for (const lethe::Preset& preset : lethe::presets()) {
    SCOPED_TRACE(preset.name);
    ASSERT_EQ(documented.count(preset.name), 1U) << "no column in docs/libraries.md";
    const auto& column = documented.at(preset.name);
    const ScenarioConfig config = must_load(kHeader + preset_protocol(preset.name, column));
    EXPECT_EQ(config.protocol.preset, preset.name);
    ASSERT_EQ(column.count("kind"), 1U);
    EXPECT_EQ("\"" + config.protocol.kind + "\"", column.at("kind"));
    // Every key the kind reads has a row, and every row is what loaded.
    for (const lethe::SettingKey& key : lethe::strategy_info(config.protocol.kind).keys) {
      EXPECT_EQ(column.count(key.name), 1U) << key.name << " has no row";
    }
    for (const auto& [key, cell] : column) {
      if (key == "kind") continue;
      const std::string loaded = setting(config.protocol, key);
      if (cell == "—") {
        EXPECT_EQ(loaded, "") << key << ": documented as not read by the kind";
      } else if (cell == "file") {
        EXPECT_EQ(loaded, kFileValues.at(key)) << key;
        bool set_by_preset = false;
        for (const auto& [name, value] : preset.settings) {
          if (name == key) set_by_preset = true;
        }
        EXPECT_FALSE(set_by_preset) << key << ": documented as left to the file, but the preset sets it";
      } else {
        EXPECT_EQ(loaded, cell) << key;
      }
    }
  }
}

const std::string kPowertools = kHeader + "[protocol]\npreset = \"powertools\"\nmax_processing_time = \"30s\"\n";

TEST(Preset, AKeyWrittenInTheFileWinsOverThePreset) {
  const ScenarioConfig config = must_load(kPowertools + "max_wait = \"5s\"\ncomplete = \"fenced\"\n");
  EXPECT_EQ(setting(config.protocol, "max_wait"), "\"5s\"");
  EXPECT_EQ(setting(config.protocol, "complete"), "\"fenced\"");
  EXPECT_EQ(setting(config.protocol, "on_failure"), "\"release\"");  // the preset's, not lethe's default
  // A kind written in the file wins too: the preset sets only the keys that kind reads.
  const ScenarioConfig other =
      must_load(kHeader + "[protocol]\npreset = \"powertools\"\nkind = \"check-then-insert\"\n");
  EXPECT_EQ(other.protocol.kind, "check-then-insert");
  EXPECT_EQ(setting(other.protocol, "ttl"), "\"1h\"");
  EXPECT_EQ(setting(other.protocol, "memoize"), "true");
}

TEST(Preset, AKeyGivenWithSetWinsOverThePreset) {
  const ScenarioConfig config =
      must_load(kPowertools + "max_wait = \"5s\"\n", {"protocol.max_wait=2s", "protocol.on_failure=keep"});
  EXPECT_EQ(setting(config.protocol, "max_wait"), "\"2s\"");
  EXPECT_EQ(setting(config.protocol, "on_failure"), "\"keep\"");
  EXPECT_EQ(setting(config.protocol, "complete"), "\"blind\"");
  // --set KEY=off leaves the key out: its default, not the preset's value.
  const ScenarioConfig left_out = must_load(kPowertools, {"protocol.max_wait=off"});
  EXPECT_EQ(setting(left_out.protocol, "max_wait"), "\"1m\"");
  // The preset itself by --set, over a file without one.
  const ScenarioConfig by_set = must_load(kHeader + "[protocol]\nmax_processing_time = \"30s\"\nttl = \"7d\"\n",
                                          {"protocol.preset=mnemosyne-rs"});
  EXPECT_EQ(setting(by_set.protocol, "on_max_wait"), "\"process\"");
  EXPECT_EQ(setting(by_set.protocol, "ttl"), "\"7d\"");
}

TEST(Preset, AnUnknownPresetIsRefusedWithItsPositionAndTheAllowedPresets) {
  const std::string allowed =
      "allowed: \"none\", \"powertools\", \"camel-eager\", \"camel-lazy\", \"idempotency-keys\", "
      "\"mnemosyne-scala\", \"mnemosyne-rs\", \"comms-deduplication\"";
  const scenario::LoadResult result = load_text(
      kHeader + "[protocol]\npreset = \"powertool\"\nmax_processing_time = \"30s\"\nttl = \"7d\"\n");
  EXPECT_EQ(errors_text(result),
            "test.toml:5:10: protocol.preset: found \"powertool\" (did you mean \"powertools\"?); " + allowed + "\n");
  const scenario::LoadResult by_set = load_text(kPowertools + "ttl = \"7d\"\n", {"protocol.preset=camel"});
  EXPECT_EQ(errors_text(by_set), "--set protocol.preset=camel: protocol.preset: found \"camel\"; " + allowed + "\n");
}

TEST(Preset, AKeyThePresetLeavesToTheFileIsAskedForNamingThePreset) {
  const std::string errors = errors_text(load_text(kHeader + "[protocol]\npreset = \"mnemosyne-scala\"\n"));
  EXPECT_EQ(errors.rfind("test.toml:5:10: protocol.max_processing_time: missing; it is required when protocol.kind "
                         "is \"mnemosyne\" by protocol.preset \"mnemosyne-scala\", which leaves this key to the file",
                         0),
            0U)
      << errors;
  EXPECT_NE(errors.find("protocol.ttl: missing"), std::string::npos) << errors;
}

TEST(Preset, TheRenderedScenarioWritesEveryKeyThePresetSet) {
  const ScenarioConfig config = must_load(kPowertools);
  const std::string rendered = scenario::render_scenario_toml(config);
  EXPECT_NE(rendered.find("max_wait = \"0s\"\n"), std::string::npos) << rendered;
  EXPECT_NE(rendered.find("on_completion_failure = \"fail\"\n"), std::string::npos) << rendered;
  const ScenarioConfig again = must_load(rendered);
  EXPECT_EQ(again.protocol.settings.values().size(), config.protocol.settings.values().size());
  for (const auto& [key, value] : config.protocol.settings.values()) {
    EXPECT_EQ(setting(again.protocol, key), setting(config.protocol, key)) << key;
  }
}

// A small run that reaches waits, failures, takeovers and redeliveries, so that most keys change what happens.
const std::string kWorkload = R"toml([topology]
source = "queue"
consumers = 4
visibility_timeout = "5s"

[workload]
messages = 60
rate = "20/s"
processing_time = "exponential(mean=20ms)"

[workload.redelivery]
fraction = 0.5
copies = 2
delay = "uniform(10ms, 2s)"

[sink]
kind = "payment"
latency = "5ms"
fail = 0.2
fail_after = "1s"

[expect]
defaults = false

)toml";

TEST(Preset, APresetRunsAsItsKeysWrittenOutByHand) {
  const auto documented = documented_presets();
  std::set<std::uint64_t> hashes;
  for (const lethe::Preset& preset : lethe::presets()) {
    SCOPED_TRACE(preset.name);
    const auto& column = documented.at(preset.name);
    std::string by_hand = fmt::format("[protocol]\nkind = \"{}\"\n", preset.kind);
    const lethe::StrategyInfo& strategy = lethe::strategy_info(preset.kind);
    for (const auto& [key, value] : preset.settings) {
      by_hand += key + " = " + scenario::values::toml_setting(*lethe::find_key(strategy, key), value) + "\n";
    }
    for (const auto& [key, cell] : column) {
      if (cell == "file") by_hand += key + " = " + kFileValues.at(key) + "\n";
    }
    const ScenarioConfig with_preset = must_load(kHeader + kWorkload + preset_protocol(preset.name, column));
    const ScenarioConfig written_out = must_load(kHeader + kWorkload + by_hand);
    const runner::SeedRun a = runner::run_seed(with_preset, 1);
    const runner::SeedRun b = runner::run_seed(written_out, 1);
    ASSERT_EQ(a.error, "");
    ASSERT_EQ(b.error, "");
    EXPECT_EQ(a.result.trace_hash, b.result.trace_hash);
    EXPECT_EQ(reports::to_json(a.result).dump(), reports::to_json(b.result).dump());
    hashes.insert(a.result.trace_hash);
  }
  // The presets differ in what they do (the comparison above compares runs that could differ).
  EXPECT_GE(hashes.size(), 5U);
}

}  // namespace preset_test
