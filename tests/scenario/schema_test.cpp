// The table of scenario keys (scenario/schema.hpp) and the pages generated from the tables: every default is
// allowed by its own row and loads back to the default config, every key the loader knows appears in the
// reference page under its table, an unknown key one letter off gets the table's key as its suggestion (in a
// file and with --set). (That the committed pages are what the tables give is checked by the ctest tests
// scenario_reference_is_current and result_fields_reference_is_current, cmake/LetheReference.cmake.)
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "core/result.hpp"
#include "reports/json.hpp"
#include "scenario/loader.hpp"
#include "scenario/reference.hpp"

namespace schema_test {

namespace fs = std::filesystem;
using scenario::KeyReference;

scenario::LoadResult load_text(const std::string& text, const std::vector<std::string>& overrides = {}) {
  return scenario::load_scenario_text(text, "test.toml", fs::path(LETHE_SOURCE_DIR) / "tests" / "runner" / "good",
                                      overrides);
}

std::string errors_text(const scenario::LoadResult& result) {
  if (!std::holds_alternative<std::vector<scenario::LoadError>>(result)) return "(loaded)";
  std::string text;
  for (const scenario::LoadError& e : std::get<std::vector<scenario::LoadError>>(result)) text += e.message + "\n";
  return text;
}

// A file of the given tables (table path -> its key lines), with the keys every file needs.
std::string file_of(std::map<std::string, std::vector<std::string>> tables) {
  tables["scenario"].insert(tables["scenario"].begin(), "name = \"t\"");
  tables["protocol"].push_back("max_processing_time = \"30s\"");
  tables["protocol"].push_back("ttl = \"7d\"");
  std::string text;
  for (const auto& [path, lines] : tables) {
    text += fmt::format("[{}]\n", path);
    for (const std::string& line : lines) text += line + "\n";
  }
  return text;
}

std::string rendered(const scenario::LoadResult& result) {
  if (!std::holds_alternative<lethe::ScenarioConfig>(result)) return "(errors)\n" + errors_text(result);
  return scenario::render_scenario_toml(std::get<lethe::ScenarioConfig>(result));
}

// Property over the table: a key written at the default its row documents is allowed by that row and changes
// nothing (the default text, the row's parser and the config's initializer agree).
TEST(ScenarioSchema, EveryKeyWrittenAtItsDocumentedDefaultLoadsBackToTheDefaultConfig) {
  const std::string defaults = rendered(load_text(file_of({})));
  std::size_t checked = 0;
  for (const KeyReference& key : scenario::scenario_key_references()) {
    if (key.array || key.default_value.empty() || key.default_value.front() != '`') continue;
    const std::string value = key.default_value.substr(1, key.default_value.size() - 2);
    const auto result = load_text(file_of({{key.table, {key.key + " = " + value}}}));
    EXPECT_EQ(rendered(result), defaults) << key.table << "." << key.key << " = " << value;
    ++checked;
  }
  EXPECT_GE(checked, 57u);
}

// The keys the loader knows in each table, as its unknown-key message lists them.
std::vector<std::string> loader_keys(const std::string& header) {
  const auto result = load_text(fmt::format("[scenario]\nname = \"t\"\n\n{}\nzzzz_not_a_key = 1\n", header));
  const std::string errors = errors_text(result);
  const std::string marker = "allowed in [";
  const std::size_t at = errors.find(marker);
  if (at == std::string::npos) return {};
  const std::size_t colon = errors.find(": ", at);
  std::string list = errors.substr(colon + 2, errors.find('\n', colon) - colon - 2);
  std::vector<std::string> keys;
  std::stringstream stream(list);
  for (std::string item; std::getline(stream, item, ',');) keys.push_back(item.substr(item.front() == ' ' ? 1 : 0));
  return keys;
}

// The headers of every table the renderer writes, for a config with one entry in each array of tables.
std::vector<std::string> every_table_header() {
  const auto result = load_text(file_of({}), {"network.partition[0].at=1m", "network.partition[0].for=1s",
                                              "network.partition[0].between=consumers,store",
                                              "network.link[0].between=consumers,store", "network.link[0].latency=1ms",
                                              "sink.outage[0].at=1m", "sink.outage[0].for=1s"});
  std::vector<std::string> headers;
  std::stringstream stream(rendered(result));
  for (std::string line; std::getline(stream, line);) {
    if (!line.empty() && line.front() == '[') headers.push_back(line);
  }
  return headers;
}

TEST(ScenarioReference, EveryKeyTheLoaderKnowsAppearsInThePageUnderItsTable) {
  const std::string page = scenario::scenario_reference_markdown();
  const std::vector<std::string> headers = every_table_header();
  ASSERT_GE(headers.size(), 14u);
  std::size_t checked = 0;
  for (const std::string& header : headers) {
    if (header == "[expect]") continue;
    const std::size_t section = page.find(fmt::format("## `{}`", header));
    ASSERT_NE(section, std::string::npos) << header;
    const std::string body = page.substr(section, page.find("\n## ", section + 1) - section);
    const std::string path = header.substr(header.rfind('[') + 1, header.find(']') - header.rfind('[') - 1);
    for (const std::string& key : loader_keys(header)) {
      // A key naming a table of its own (workload.redelivery, network.partition) has its own section.
      if (page.find(fmt::format("## `[{}.{}]`", path, key)) != std::string::npos ||
          page.find(fmt::format("## `[[{}.{}]]`", path, key)) != std::string::npos) {
        continue;
      }
      EXPECT_NE(body.find(fmt::format("\n| `{}` |", key)), std::string::npos) << header << " " << key;
      ++checked;
    }
  }
  EXPECT_GE(checked, 68u);
}

// A key one letter off: an 'x' inserted in the middle.
std::string typo_of(const std::string& key) { return key.substr(0, key.size() / 2) + "x" + key.substr(key.size() / 2); }

TEST(ScenarioSchema, AnUnknownKeyOneLetterOffSuggestsTheTablesKeyInAFileAndWithSet) {
  std::size_t checked = 0;
  for (const KeyReference& key : scenario::scenario_key_references()) {
    if (key.table == "expect") continue;
    const std::string typo = typo_of(key.key);
    const std::string hint = fmt::format("(did you mean `{}`?)", key.key);
    const std::string header = key.array ? fmt::format("[[{}]]", key.table) : fmt::format("[{}]", key.table);
    const std::string text = key.table == "scenario"
                                 ? fmt::format("[scenario]\nname = \"t\"\n{} = 1\n", typo)
                                 : fmt::format("[scenario]\nname = \"t\"\n\n{}\n{} = 1\n", header, typo);
    const std::string in_file = errors_text(load_text(text));
    EXPECT_NE(in_file.find(fmt::format("{}: found an unknown key {}", typo, hint)), std::string::npos)
        << key.table << "." << key.key << ":\n" << in_file;
    if (!key.array) {
      const std::string with_set =
          errors_text(load_text(file_of({}), {fmt::format("{}.{}=1", key.table, typo)}));
      EXPECT_NE(with_set.find(hint), std::string::npos) << key.table << "." << key.key << ":\n" << with_set;
    }
    ++checked;
  }
  EXPECT_GE(checked, 70u);
}

TEST(ResultFieldTable, EveryNameExpectMayUseIsAnsweredByFieldAndTheJsonKeysAreTheTablesRows) {
  lethe::RunResult result;
  result.linearizable = true;
  result.kv_consistent = true;
  for (const std::string& name : lethe::expectation_field_names()) {
    EXPECT_TRUE(result.field(name).has_value()) << name;
    EXPECT_TRUE(lethe::expectation_kind(name).has_value()) << name;
  }
  EXPECT_EQ(lethe::expectation_kind("coverage.pause"), lethe::FieldKind::Count);
  EXPECT_FALSE(lethe::expectation_kind("trace_hash").has_value());
  EXPECT_FALSE(lethe::expectation_kind("wait_time.count").has_value());
  EXPECT_EQ(lethe::expectation_kind("recovery_latency.p99"), lethe::FieldKind::Time);
  const std::string page = scenario::result_fields_markdown();
  result.swarm = {"crash"};  // written only when swarm mode drew something
  result.saga_violations = {"stuck: saga 1 never ran a step"};  // written only when a saga broke something
  result.linearizable_unknown = {"unknown: budget"};  // written only when the check ran out of budget
  result.schedule = {"random"};  // written only when run.schedule is not fifo
  result.drawn = {"topology.consumers=3"};  // written only when [explore] drew the configuration
  result.not_reproducible = {"external node billing-0 speaks no turn protocol"};  // written only then
  result.defaults_replaced = {"duplicate_effects"};  // written only when an [expect] entry replaces a default
  result.lost_examples = {"message 3 (billing)"};  // written only when something was lost
  result.store_error_first = {"bad op"};  // written only when an external node's store operation was rejected
  result.unanswered_examples = {"message 3 (billing) attempt 7 on billing-0"};  // written only when one was held
  result.kv_checks = {"seq-kv history (2 operations): ..."};  // written only when a node used seq-kv or lww-kv
  const nlohmann::ordered_json json = reports::to_json(result);
  std::vector<std::string> rows;
  for (const lethe::ResultField& field : lethe::result_fields()) {
    EXPECT_NE(page.find(fmt::format("\n| `{}` |", field.name)), std::string::npos) << field.name;
    rows.emplace_back(field.name);
  }
  std::vector<std::string> keys;
  for (const auto& item : json.items()) keys.push_back(item.key());
  std::sort(rows.begin(), rows.end());
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(keys, rows);
}

}  // namespace schema_test
