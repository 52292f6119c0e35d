// docs/result.schema.json: the JSON Schema of the result object, generated from the result-field table, and
// every scenario's result valid against it (validated by python3-jsonschema, an implementation lethe did not
// write). LETHE_UPDATE_SCHEMA=1 makes the first test rewrite the committed file instead of comparing it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <utility>
#include <vector>
#include <nlohmann/json.hpp>
#include <string>

#include "reports/json.hpp"
#include "tests/runner/support.hpp"

namespace fs = std::filesystem;

namespace result_schema_test {

using namespace test_support;  // shell, run_lethe, read_file (tests/runner/support.hpp)

const fs::path kSchema = fs::path(LETHE_SOURCE_DIR) / "docs" / "result.schema.json";

Outcome validate(const fs::path& lines) {
  return shell(std::string("python3 ") + LETHE_SOURCE_DIR + "/tests/runner/validate_json.py " + kSchema.string() +
               " " + lines.string());
}

TEST(ResultSchema, TheCommittedSchemaIsWhatTheResultFieldTableGives) {
  const std::string generated = reports::result_schema().dump(2) + "\n";
  if (const char* update = std::getenv("LETHE_UPDATE_SCHEMA"); update != nullptr && std::string(update) == "1") {
    std::ofstream(kSchema, std::ios::binary) << generated;
  }
  EXPECT_EQ(read_file(kSchema), generated)
      << "docs/result.schema.json is stale: LETHE_UPDATE_SCHEMA=1 build/tests/reports_tests "
         "--gtest_filter='ResultSchema.*' rewrites it";
}

TEST(ResultSchema, EveryScenariosResultIsValidAgainstTheSchema) {
  const fs::path dir = temp_dir("result-schema", "every");
  const fs::path lines = dir / "results.jsonl";
  // Seed 1 of every scenario of the library, expectations failing or not: only the JSON's shape matters.
  const Outcome suite = run_lethe("suite scenarios --seeds 1 -j 2 --json " + lines.string());
  ASSERT_TRUE(suite.exit_code == 0 || suite.exit_code == 1) << suite.out;
  std::size_t count = 0;
  std::ifstream in(lines);
  for (std::string line; std::getline(in, line);) ++count;
  std::size_t scenarios = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(LETHE_SOURCE_DIR) / "scenarios")) {
    scenarios += entry.path().extension() == ".toml" ? 1 : 0;
  }
  EXPECT_EQ(count, scenarios);
  const Outcome o = validate(lines);
  EXPECT_EQ(o.exit_code, 0) << o.out;
  EXPECT_NE(o.out.find(std::to_string(count) + " valid, 0 invalid"), std::string::npos) << o.out;
  fs::remove_all(dir);
}

TEST(ResultSchema, AResultWithAFieldOfTheWrongTypeIsInvalid) {
  const fs::path dir = temp_dir("result-schema", "wrong");
  const Outcome run = run_lethe("run scenarios/crash-window-after-effect.toml --seed 1 --json");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  // The result is the line that opens with '{': a sanitizer build interleaves its own warnings on stderr.
  const std::size_t start = run.out.rfind("\n{") == std::string::npos ? run.out.find('{') : run.out.rfind("\n{") + 1;
  ASSERT_NE(start, std::string::npos) << run.out;
  const nlohmann::json good = nlohmann::json::parse(run.out.substr(start, run.out.find('\n', start) - start));
  {
    std::ofstream(dir / "good.jsonl") << good.dump() << "\n";
    const Outcome o = validate(dir / "good.jsonl");
    ASSERT_EQ(o.exit_code, 0) << o.out;
  }
  // Each wrong type the schema must refuse: the field it names in its error.
  const std::vector<std::pair<std::string, std::function<void(nlohmann::json&)>>> wrong = {
      {"messages", [](nlohmann::json& j) { j["messages"] = "400"; }},
      {"effects", [](nlohmann::json& j) { j["effects"] = 414.5; }},
      {"sim_time", [](nlohmann::json& j) { j["sim_time"] = "24.49s"; }},
      {"wait_time.p50", [](nlohmann::json& j) { j["wait_time"]["p50"] = 5.0338; }},
      {"duplicates.crash_after_effect", [](nlohmann::json& j) { j["duplicates"]["crash_after_effect"] = -1; }},
      {"trace_hash", [](nlohmann::json& j) { j["trace_hash"] = 1; }},
      {"expectations.0.want", [](nlohmann::json& j) { j["expectations"][0]["want"] = "1"; }},
      {"expectations.0.got", [](nlohmann::json& j) { j["expectations"][0]["got"] = "14"; }},
      {"linearizable", [](nlohmann::json& j) { j["linearizable"] = "yes"; }},
      {"(top)", [](nlohmann::json& j) { j.erase("lost_messages"); }},
      {"(top)", [](nlohmann::json& j) { j["surprise"] = 1; }},
  };
  for (const auto& [field, spoil] : wrong) {
    nlohmann::json bad = good;
    spoil(bad);
    std::ofstream(dir / "bad.jsonl") << bad.dump() << "\n";
    const Outcome o = validate(dir / "bad.jsonl");
    EXPECT_EQ(o.exit_code, 1) << field << ": " << o.out;
    EXPECT_NE(o.out.find(":1: " + field + ": "), std::string::npos) << field << ": " << o.out;
  }
  fs::remove_all(dir);
}

}  // namespace result_schema_test
