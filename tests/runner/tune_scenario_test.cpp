// Tests of `lethe tune --scenario FILE` (runner/tune_scenario.hpp): the confirmation runs the user's own scenario
// with the recommended values set, and a scenario tune cannot use is refused naming its place.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reports/cells.hpp"
#include "runner/sweep_targets.hpp"
#include "tests/runner/support.hpp"

namespace fs = std::filesystem;
using test_support::run_lethe;

namespace tune_scenario_test {

fs::path temp_dir(const std::string& name) { return test_support::temp_dir("tune-scenario-test", name); }

// Workers that stop the world for about 5 s every 5 s: a paused owner's record looks stale at any mpt below 5 s,
// which the generated confirmation scenario (no pauses) never shows.
const char* const kPaused = R"toml([scenario]
name = "paused-consumers"

[run]
seeds = 5
duration = "1h"
drain = true

[topology]
source = "queue"
consumers = 8
visibility_timeout = "1s"

[workload]
messages = 600
rate = "5/s"
processing_time = "exponential(mean=200ms)"

[workload.redelivery]
fraction = 1.0
copies = 1
delay = "uniform(0s, 100ms)"

[faults]
crash_every = "exponential(mean=10s)"
restart_after = "1s"
pause_every = "exponential(mean=5s)"
pause_for = "uniform(4s, 6s)"

[protocol]
kind = "mnemosyne"
max_processing_time = "1s"
ttl = "7d"
max_wait = "5m"
)toml";

fs::path write(const fs::path& dir, const std::string& name, const std::string& text) {
  fs::create_directories(dir);
  std::ofstream(dir / name) << text;
  return dir / name;
}

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}


// Without --scenario the generated world takes over live work at about 3e-4 at the recommended 1.66s; the
// scenario's pauses take it over at about 2e-2. The figures, the verdict and the per-cause rates must be the
// scenario's, and every cell must run with the recommended ttl set.
TEST(TuneScenario, TheScenariosOwnFaultsMakeTheMeasuredFiguresAndTheRecommendedTtlIsSetInEveryCell) {
  const fs::path dir = temp_dir("paused");
  const fs::path file = write(dir, "paused.toml", kPaused);
  const auto o = run_lethe("tune --processing-time 'exponential(mean=200ms)' --target-duplicates 0.001 --patience 5s "
                           "--redelivery-window 1d --seeds 3 -j 2 --scenario " + file.string() + " --out " +
                           (dir / "out").string());
  ASSERT_EQ(o.exit_code, 0) << o.out;
  const auto json = read_json(dir / "out" / "tune.json");
  EXPECT_EQ(json["confirmation_plan"]["scenario"], file.string());
  EXPECT_EQ(json["verdict"]["takeover"]["state"], "not confirmed") << o.out;
  const auto& by_cause = json["expected_duplicates_by_cause"];
  EXPECT_EQ(by_cause["max_processing_time_ns"], 1'660'000'000);
  std::uint64_t total = 0;
  double takeover_rate = 0.0;
  for (const auto& c : by_cause["causes"]) {
    const double rate = c["rate"];
    EXPECT_LE(c["interval"][0].get<double>(), rate) << c;
    EXPECT_GE(c["interval"][1].get<double>(), rate) << c;
    total += c["duplicates"].get<std::uint64_t>();
    if (c["cause"] == "takeover_while_alive") takeover_rate = rate;
  }
  EXPECT_GT(takeover_rate, 0.005) << "the scenario's pauses, not the generated world: " << by_cause;
  // The first look's causes add up to the cell's duplicates (later looks only add seeds).
  if (json["sequential_test"]["looks"] == 1) {
    EXPECT_EQ(total, json["confirmation"][1]["duplicates"]);
  }
  const auto sweep = read_json(dir / "out" / "confirmation" / "sweep.json");
  EXPECT_EQ(sweep["sets"], nlohmann::json::array({"protocol.ttl=2d"}));
  EXPECT_NE(sweep["scenario_text"].get<std::string>().find("paused-consumers"), std::string::npos);
  EXPECT_NE(o.out.find("note: " + file.string() + " pauses its workers"), std::string::npos) << o.out;
  const std::string html = test_support::read_file(dir / "out" / "report.html");
  EXPECT_NE(html.find("Expected duplicates per cause"), std::string::npos);
  EXPECT_NE(html.find("takeover_while_alive"), std::string::npos);
  EXPECT_NE(html.find("Your scenario " + file.string()), std::string::npos);
  fs::remove_all(dir);
}

TEST(TuneScenario, AScenarioTuneCannotUseExitsTwoNamingItsFileLineAndColumn) {
  const fs::path dir = temp_dir("bad");
  const std::string out = " --processing-time 200ms --no-confirm --out " + (dir / "out").string();
  const auto missing = run_lethe("tune --scenario " + (dir / "nope.toml").string() + out);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.out.find((dir / "nope.toml").string() + ":1:1: scenario: found no readable file"),
            std::string::npos) << missing.out;
  std::string none = kPaused;
  const std::string protocol = "kind = \"mnemosyne\"\nmax_processing_time = \"1s\"\nttl = \"7d\"\nmax_wait = \"5m\"\n";
  none.replace(none.find(protocol), protocol.size(), "kind = \"none\"\n");
  const fs::path none_file = write(dir, "none.toml", none);
  const auto unprotected = run_lethe("tune --scenario " + none_file.string() + out);
  EXPECT_EQ(unprotected.exit_code, 2);
  EXPECT_NE(unprotected.out.find(none_file.string() + ":31:8: protocol.kind: found \"none\", a strategy that reads no "
                                 "max_processing_time"), std::string::npos) << unprotected.out;
  EXPECT_NE(unprotected.out.find("allowed: a strategy that reads it: \"mnemosyne\""), std::string::npos);
  std::string bad = kPaused;
  bad.replace(bad.find("max_processing_time = \"1s\""), 26, "max_processing_time = \"soon\"");
  const fs::path bad_file = write(dir, "bad.toml", bad);
  const auto bad_value = run_lethe("tune --scenario " + bad_file.string() + out);
  EXPECT_EQ(bad_value.exit_code, 2);
  EXPECT_NE(bad_value.out.find(bad_file.string() + ":32:23: protocol.max_processing_time"), std::string::npos)
      << bad_value.out;
  const fs::path good = write(dir, "paused.toml", kPaused);
  EXPECT_EQ(run_lethe("tune --scenario " + good.string() + " --messages 10" + out).exit_code, 2)
      << "the scenario's own workload.messages is what runs";
  EXPECT_EQ(run_lethe("tune --scenario " + good.string() + out).exit_code, 0);
  fs::remove_all(dir);
}

// At the README's inputs the confirmation crashes 90x more often than the given 1/h (for a p99 of recovery): the
// per-cause table gives every cause seen with its Wilson interval, and a cause a crash opens also scaled back to the
// given rate.
TEST(TuneCauses, EachCauseSeenHasItsRateAndIntervalAndACrashCauseIsAlsoGivenAtTheGivenCrashRate) {
  const fs::path dir = temp_dir("causes");
  const auto o = run_lethe("tune --processing-time 'exponential(mean=200ms)' --crash-rate 1/h --target-duplicates "
                           "0.001 --patience 5s -j 2 --out " + dir.string());
  ASSERT_EQ(o.exit_code, 0) << o.out;
  const auto json = read_json(dir / "tune.json");
  const auto& by_cause = json["expected_duplicates_by_cause"];
  const double scale = (1.0 / 3600.0) / json["confirmation_plan"]["crash_rate_per_second"].get<double>();
  ASSERT_LT(scale, 0.02) << "the confirmation raised the crash rate";
  bool crash_cause = false;
  for (const auto& c : by_cause["causes"]) {
    const double rate = c["rate"];
    EXPECT_DOUBLE_EQ(rate, c["duplicates"].get<double>() / by_cause["trials"].get<double>()) << c;
    EXPECT_LE(c["interval"][0].get<double>(), rate) << c;
    EXPECT_GE(c["interval"][1].get<double>(), rate) << c;
    EXPECT_GT(c["interval"][1].get<double>(), 0.0) << "a count of 0 still has an upper bound: " << c;
    if (c["cause"] == "crash_after_effect") {
      crash_cause = true;
      EXPECT_DOUBLE_EQ(c["at_given_crash_rate"]["rate"].get<double>(), rate * scale) << c;
    } else {
      EXPECT_FALSE(c.contains("at_given_crash_rate")) << c;
    }
  }
  EXPECT_TRUE(crash_cause) << by_cause;
  EXPECT_NE(o.out.find("expected duplicate rate per cause at max_processing_time = 1.66s"), std::string::npos) << o.out;
  const std::string html = test_support::read_file(dir / "report.html");
  EXPECT_NE(html.find("<td>crash_after_effect</td>"), std::string::npos);
  fs::remove_all(dir);
}

// The targets table's columns are as wide as their longest entry (two varied keys do not push the rows out of
// line), and a latency reads as people read it (14.8s, not 14.803285971s).
TEST(SweepTargetsTable, RowsLineUpWhateverTheParamsWidthAndLatenciesAreReadable) {
  reports::CellSummary cell;
  cell.index = 0;
  cell.params = {{"protocol.max_processing_time", "6.73s"}, {"protocol.ttl", "3d"}};
  cell.trials = 1000;
  cell.duplicates = 5;
  cell.duplicate_rate = 0.005;
  cell.duplicate_interval = reports::wilson_interval(5, 1000);
  cell.recovery_latency = lethe::Quantiles{14'803'285'971, 14'803'285'971, 14'803'285'971, 500};
  std::string error;
  const auto rate = runner::parse_sweep_target("duplicate_rate<=0.001", error);
  const auto latency = runner::parse_sweep_target("recovery_latency.p99<=2m", error);
  ASSERT_TRUE(rate && latency) << error;
  bool all_pass = true;
  const std::string table = runner::targets_table({*rate, *latency}, {cell}, all_pass);
  EXPECT_FALSE(all_pass);
  EXPECT_NE(table.find(" 14.8s "), std::string::npos) << table;
  // Every line of the table starts its target column at the same offset.
  std::vector<std::size_t> at;
  for (std::size_t line = table.find("\n  "); line != std::string::npos; line = table.find("\n  ", line + 1)) {
    const std::string row = table.substr(line + 1, table.find('\n', line + 1) - line - 1);
    for (const char* word : {"target", "duplicate_rate", "recovery_latency"}) {
      if (const auto p = row.find(word); p != std::string::npos) {
        at.push_back(p);
        break;
      }
    }
  }
  ASSERT_EQ(at.size(), 3u) << table;
  EXPECT_EQ(at[0], at[1]) << table;
  EXPECT_EQ(at[1], at[2]) << table;
}

}  // namespace tune_scenario_test
