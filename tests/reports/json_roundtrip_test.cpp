// The JSON result format round-trips: what `lethe run --json` writes, result_from_json reads back
// field for field (sweep --resume and lethe merge rebuild their cells from these lines).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <variant>

#include "reports/json.hpp"
#include "runner/execute.hpp"
#include "scenario/loader.hpp"
#include "tests/runner/support.hpp"

namespace json_roundtrip_test {

lethe::RunResult run(const std::string& name, std::uint64_t seed) {
  auto result = runner::run_seed(
      test_support::load_config(std::filesystem::path(LETHE_SOURCE_DIR) / "scenarios" / (name + ".toml")), seed);
  if (!result.error.empty()) throw std::runtime_error(result.error);
  return result.result;
}

TEST(ResultJson, WritingThenReadingGivesTheSameJsonIncludingQuantileCounts) {
  for (const char* name : {"crash-window-after-effect", "slow-work-mpt-too-low", "ttl-shorter-than-redelivery"}) {
    const lethe::RunResult original = run(name, 2);
    const auto written = reports::to_json(original);
    const lethe::RunResult read = reports::result_from_json(nlohmann::json::parse(written.dump()));
    EXPECT_EQ(reports::to_json(read).dump(), written.dump()) << name;
    EXPECT_EQ(read.wait_time.count, original.wait_time.count) << name;
    EXPECT_EQ(read.recovery_latency.count, original.recovery_latency.count) << name;
    EXPECT_EQ(read.duplicates, original.duplicates) << name;
  }
}

TEST(ResultJson, AnExpectationThatCouldNotBeEvaluatedReadsBackAsNotANumber) {
  const auto j = nlohmann::json::parse(
      R"({"scenario":"x","seed":1,"trace_hash":"00000000000000ff","expectations":[{"key":"wait_time.p99","op":"<","want":"1s","got":null,"ok":false}],"ok":false})");
  const lethe::RunResult r = reports::result_from_json(j);
  ASSERT_EQ(r.expectations.size(), 1u);
  EXPECT_TRUE(std::isnan(r.expectations[0].got));
  EXPECT_FALSE(r.expectations[0].ok);
  EXPECT_EQ(r.trace_hash, 0xffu);
}

}  // namespace json_roundtrip_test
