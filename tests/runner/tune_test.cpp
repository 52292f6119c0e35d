// lethe tune: the analytic recommendation, the conflict between target and patience, samples files, and the
// confirmation sweep in the simulator.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include "scenario/loader.hpp"
#include "runner/tune.hpp"
#include "runner/tune_verdict.hpp"
#include "tests/runner/support.hpp"

namespace fs = std::filesystem;

namespace tune_test {

using namespace test_support;  // shell, run_lethe, read_file, load_config (tests/runner/support.hpp)
fs::path temp_dir(const std::string& name) { return test_support::temp_dir("tune-test", name); }

sim::Distribution parse(const std::string& text) {
  std::string error;
  auto d = sim::Distribution::parse(text, {}, error);
  if (!d) throw std::runtime_error(error);
  return *d;
}

// Every duration in tune.json is integer nanoseconds under a KEY_ns key (or null); a duration as text only ever
// sits beside it, under KEY_text. Adds one failure per offending key.
void expect_durations_are_integer_nanoseconds(const nlohmann::json& j, const std::string& where) {
  if (j.is_array()) {
    for (std::size_t i = 0; i < j.size(); ++i) expect_durations_are_integer_nanoseconds(j[i], where + "." + std::to_string(i));
    return;
  }
  if (!j.is_object()) return;
  for (const auto& [key, value] : j.items()) {
    const std::string path = where + "." + key;
    const bool ns = key.size() > 3 && key.substr(key.size() - 3) == "_ns";
    const bool text = key.size() > 5 && key.substr(key.size() - 5) == "_text";
    if (ns) {
      EXPECT_TRUE(value.is_number_integer() || value.is_null()) << path << " = " << value.dump();
    }
    if (value.is_string() && !text) {
      std::string error;
      EXPECT_FALSE(sim::parse_duration(value.get<std::string>(), error).has_value())
          << path << " holds a duration as text: " << value.dump();
    }
    expect_durations_are_integer_nanoseconds(value, path);
  }
}

runner::TuneInput exponential_200ms() {
  runner::TuneInput in;
  in.processing_time = parse("exponential(mean=200ms)");
  in.processing_time_text = "exponential(mean=200ms)";
  in.target_duplicates = 1e-3;
  return in;
}

TEST(Tune, RoundUpSignificantKeepsThreeDigitsAndNeverRoundsDown) {
  EXPECT_EQ(runner::round_up_significant(1'381'551'056), 1'390'000'000);
  EXPECT_EQ(runner::round_up_significant(1'380'000'000), 1'380'000'000);
  EXPECT_EQ(runner::round_up_significant(999), 999);
  EXPECT_EQ(runner::round_up_significant(1001), 1010);
  EXPECT_EQ(runner::round_up_significant(0), 0);
  EXPECT_EQ(runner::round_up_significant(99'950'000, 2), 100'000'000);
}

TEST(Tune, ExponentialMean200msTarget1e3RecommendsThe0999Quantile) {
  const auto a = runner::analyze_tuning(exponential_200ms());
  const double quantile_ns = -200e6 * std::log(1e-3);  // 1.3816 s
  EXPECT_NEAR(static_cast<double>(a.target_mpt_exact), quantile_ns, 1e3);
  ASSERT_TRUE(a.recommended_mpt.has_value());
  EXPECT_GE(static_cast<double>(a.target_mpt), quantile_ns) << "rounded up, so it still meets the target";
  EXPECT_LE(static_cast<double>(a.target_mpt), quantile_ns * 1.01) << "within rounding (3 digits)";
  EXPECT_EQ(a.target_mpt, 1'390'000'000);
  // The recommendation aims at a quarter of the target, so a confirmation can show the rate below it:
  // -200ms x ln(0.00025) = 1.6589 s, rounded up.
  EXPECT_EQ(*a.recommended_mpt, 1'660'000'000);
  EXPECT_LE(std::exp(-1.66e9 / 200e6), 1e-3 / runner::kDesignMargin);
  // The trade-off table: the rate falls and the recovery grows with mpt; exactly the values >= the
  // recommendation meet the target.
  ASSERT_GE(a.candidates.size(), 5u);
  for (std::size_t i = 1; i < a.candidates.size(); ++i) {
    EXPECT_LT(a.candidates[i - 1].mpt, a.candidates[i].mpt);
    EXPECT_GE(a.candidates[i - 1].takeover_rate, a.candidates[i].takeover_rate);
    EXPECT_LT(a.candidates[i - 1].recovery, a.candidates[i].recovery);
  }
  for (const auto& c : a.candidates) {
    EXPECT_EQ(c.meets_target, c.mpt >= a.target_mpt) << c.label;
    EXPECT_NEAR(c.takeover_rate, std::exp(-static_cast<double>(c.mpt) / 200e6), 1e-9) << c.label;
    EXPECT_EQ(c.recovery, c.mpt + 100'000'000) << "mpt + poll";
  }
  EXPECT_FALSE(a.ttl.has_value()) << "no redelivery window, no ttl";
}

TEST(Tune, TtlIsTwiceTheRedeliveryWindow) {
  auto in = exponential_200ms();
  in.redelivery_window = 36 * sim::kHour;
  const auto a = runner::analyze_tuning(in);
  ASSERT_TRUE(a.ttl.has_value());
  EXPECT_EQ(*a.ttl, 72 * sim::kHour);
}

TEST(Tune, PatienceShorterThanTheTargetNeedsMeansNoRecommendation) {
  auto in = exponential_200ms();
  in.patience = sim::kSecond;
  const auto a = runner::analyze_tuning(in);
  EXPECT_FALSE(a.recommended_mpt.has_value());
  ASSERT_TRUE(a.patience_mpt.has_value());
  EXPECT_EQ(*a.patience_mpt, 900'000'000) << "patience - poll";
  in.patience = 2 * sim::kSecond;
  const auto relaxed = runner::analyze_tuning(in);
  ASSERT_TRUE(relaxed.recommended_mpt.has_value());
  EXPECT_EQ(*relaxed.recommended_mpt, 1'660'000'000) << "the value with the margin, not the patience's";
  // A patience between the target's value and the margin's: the patience limit, which still meets the target.
  in.patience = 1'600'000'000;
  const auto tight = runner::analyze_tuning(in);
  ASSERT_TRUE(tight.recommended_mpt.has_value());
  EXPECT_EQ(*tight.recommended_mpt, 1'500'000'000) << "patience - poll";
}

TEST(Tune, CliRecommendsAndWritesTheReport) {
  const fs::path dir = temp_dir("cli");
  const auto o = run_lethe("tune --processing-time 'exponential(mean=200ms)' --target-duplicates 0.001 "
                       "--redelivery-window 1d --no-confirm --out " + dir.string());
  EXPECT_EQ(o.exit_code, 0) << o.out;
  EXPECT_NE(o.out.find("recommended max_processing_time = 1.66s"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("recommended ttl = 2d"), std::string::npos) << o.out;
  EXPECT_TRUE(fs::exists(dir / "report.html"));
  EXPECT_TRUE(fs::exists(dir / "tune.json"));
  std::ifstream json_in(dir / "tune.json");
  const auto json = nlohmann::json::parse(json_in);
  EXPECT_EQ(json["recommended"]["max_processing_time_ns"], 1660000000);
  EXPECT_EQ(json["recommended"]["max_processing_time_text"], "1.66s");
  EXPECT_EQ(json["recommended"]["ttl_ns"], 2 * sim::kDay);
  EXPECT_EQ(json["recommended"]["ttl_text"], "2d");
  expect_durations_are_integer_nanoseconds(json, "tune.json");
  // The generated confirmation scenario is a valid scenario with the recommendation in it.
  auto loaded = scenario::load_scenario(dir / "scenario.toml", {});
  ASSERT_TRUE(std::holds_alternative<lethe::ScenarioConfig>(loaded))
      << std::get<std::vector<scenario::LoadError>>(loaded).front().message;
  const auto& config = std::get<lethe::ScenarioConfig>(loaded);
  EXPECT_EQ(config.protocol.settings.get<sim::Duration>("max_processing_time"), 1'660'000'000);
  EXPECT_EQ(config.protocol.settings.get<sim::Duration>("ttl"), 2 * sim::kDay);
  EXPECT_EQ(config.workload.redelivery.fraction, 1.0) << "every message redelivered while in flight";
  EXPECT_EQ(config.topology.source, "queue");
  EXPECT_FALSE(config.expect_defaults) << "tune measures duplicates: the default invariants would fail every seed";
  ASSERT_TRUE(config.faults.crash_every.has_value()) << "crashes at the default 1/h, raised for the crash side";
  EXPECT_NEAR(config.faults.crash_every->mean_ns(), 1e9 / json["confirmation_plan"]["crash_rate_per_second"].get<double>(),
              1.0);
  fs::remove_all(dir);
}

TEST(Tune, TargetThatConflictsWithPatienceExitsOneAndNamesTheClosestOptions) {
  const fs::path dir = temp_dir("conflict");
  const auto o = run_lethe("tune --processing-time 'exponential(mean=200ms)' --target-duplicates 0.001 --patience 1s "
                       "--no-confirm --out " + dir.string());
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_NE(o.out.find("no max_processing_time meets both"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("closest options"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("(a) keep the target: max_processing_time = 1.39s"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("(b) keep the patience: max_processing_time = 900ms"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("recommended max_processing_time"), std::string::npos) << o.out;
  fs::remove_all(dir);
}

TEST(Tune, SamplesFileIsReadAndFewSamplesAreFlagged) {
  const fs::path dir = temp_dir("samples");
  {
    std::ofstream f(dir / "latencies.txt");
    f << "# measured in production\n";
    for (int i = 1; i <= 1000; ++i) f << i << "ms\n";
  }
  const auto o = run_lethe("tune --samples " + (dir / "latencies.txt").string() +
                       " --target-duplicates 0.001 --no-confirm --out " + (dir / "out").string());
  EXPECT_EQ(o.exit_code, 0) << o.out;
  // 1000 values 1ms..1000ms: the smallest x with P(X > x) <= 0.001 is 999ms (meets the target); a quarter of
  // the target, 0.00025, takes the largest value, 1000ms.
  EXPECT_NE(o.out.find("recommended max_processing_time = 1s"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("999ms"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("(1000 samples)"), std::string::npos) << o.out;
  {
    std::ofstream f(dir / "few.txt");
    for (int i = 1; i <= 50; ++i) f << i * 10 << "\n";
  }
  const auto few = run_lethe("tune --samples " + (dir / "few.txt").string() + " --samples-unit ms --no-confirm --out " +
                         (dir / "out2").string());
  EXPECT_EQ(few.exit_code, 0) << few.out;
  EXPECT_NE(few.out.find("recommended max_processing_time = 500ms"), std::string::npos) << few.out;
  EXPECT_NE(few.out.find("only 50 samples"), std::string::npos) << few.out;
  fs::remove_all(dir);
}

// A value past the longest duration is named with its file and line; a byte order mark is not part of line 1.
TEST(Tune, ASampleOutOfRangeNamesItsFileAndLineAndABomIsSkipped) {
  const fs::path dir = temp_dir("samples-range");
  {
    std::ofstream f(dir / "huge.txt");
    for (int i = 1; i <= 100; ++i) f << "1ms\n";
    f << "9223372036854775807ns\n";
  }
  const auto huge = run_lethe("tune --samples " + (dir / "huge.txt").string() + " --no-confirm --out " +
                              (dir / "out").string());
  EXPECT_EQ(huge.exit_code, 2) << huge.out;
  EXPECT_NE(huge.out.find("--samples " + (dir / "huge.txt").string() + ":101: found \"9223372036854775807ns\""),
            std::string::npos)
      << huge.out;
  {
    std::ofstream f(dir / "bom.csv");
    f << "\xEF\xBB\xBF";  // then "1ms" on line 1
    for (int i = 1; i <= 1000; ++i) f << i << "ms\n";
  }
  const auto bom = run_lethe("tune --samples " + (dir / "bom.csv").string() +
                             " --target-duplicates 0.001 --no-confirm --out " + (dir / "out2").string());
  EXPECT_EQ(bom.exit_code, 0) << bom.out;
  EXPECT_NE(bom.out.find("(1000 samples)"), std::string::npos) << bom.out;  // line 1, after the BOM, is read
  fs::remove_all(dir);
}

TEST(Tune, BadInputExitsTwo) {
  const fs::path dir = temp_dir("bad");
  const std::string out = " --no-confirm --out " + dir.string();
  EXPECT_EQ(run_lethe("tune" + out).exit_code, 2) << "neither --processing-time nor --samples";
  EXPECT_EQ(run_lethe("tune --processing-time 200ms --samples x.txt" + out).exit_code, 2);
  EXPECT_EQ(run_lethe("tune --processing-time 'exponential(mean=200)'" + out).exit_code, 2);
  const auto missing = run_lethe("tune --samples /no/such/file.txt" + out);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.out.find("--samples /no/such/file.txt: no such file"), std::string::npos) << missing.out;
  // A device never ends and is not missing: the message says what it is.
  const auto device = run_lethe("tune --samples /dev/zero" + out);
  EXPECT_EQ(device.exit_code, 2);
  EXPECT_NE(device.out.find("--samples /dev/zero: a device, FIFO or socket, not a regular file; allowed: a "
                            "regular file"),
            std::string::npos)
      << device.out;
  const auto folder = run_lethe("tune --samples " + dir.string() + out);
  EXPECT_EQ(folder.exit_code, 2);
  EXPECT_NE(folder.out.find(": a directory; allowed: a regular file"), std::string::npos) << folder.out;
  const auto rate = run_lethe("tune --processing-time 200ms --crash-rate 2" + out);
  EXPECT_EQ(rate.exit_code, 2);
  EXPECT_NE(rate.out.find("N/h"), std::string::npos) << "a bare number is refused, naming the units: " << rate.out;
  EXPECT_EQ(run_lethe("tune --processing-time 200ms --target-duplicates 1.5" + out).exit_code, 2);
  EXPECT_EQ(run_lethe("tune --processing-time 200ms --target-duplicates 0" + out).exit_code, 2);
  EXPECT_EQ(run_lethe("tune --processing-time 200ms --patience soon" + out).exit_code, 2);
  EXPECT_EQ(run_lethe("tune --processing-time 200ms").exit_code, 2) << "--out is required";
  fs::remove_all(dir);
}

TEST(Tune, ASamplesCsvWithAHeaderIsReadByItsColumnAndEveryErrorNamesTheFlagThatFixesIt) {
  const fs::path dir = temp_dir("csv");
  {
    std::ofstream csv(dir / "latencies.csv");
    csv << "request_id,latency_ms,status\n";
    for (int i = 1; i <= 400; ++i) csv << i << "," << (i % 40) + 1 << ".5,200\n";
  }
  const std::string out = " --no-confirm --out " + (dir / "out").string();
  const auto ok = run_lethe("tune --samples " + (dir / "latencies.csv").string() +
                            " --column latency_ms --samples-unit ms --target-duplicates 0.01" + out);
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
  EXPECT_NE(ok.out.find("(400 samples)"), std::string::npos) << ok.out;
  EXPECT_NE(ok.out.find("recommended max_processing_time = 40.5ms"), std::string::npos) << ok.out;
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "latencies.csv:1: a header of 3 columns (request_id, latency_ms, status); name the one to read with "
           "--column NAME"},
      {" --column latncy_ms", "--column latncy_ms: no such column (did you mean `latency_ms`?); allowed: request_id, "
                            "latency_ms, status"},
      {" --column latency_ms", "latencies.csv:2: found \"2.5\", a number without a unit; give the unit of plain "
                               "numbers with --samples-unit"},
      {" --column latency_ms --samples-unit parsec", "--samples-unit: found \"parsec\"; allowed: ns us ms s m h d"},
  };
  for (const auto& [flags, expected] : bad) {
    const auto o = run_lethe("tune --samples " + (dir / "latencies.csv").string() + flags + out);
    EXPECT_EQ(o.exit_code, 2) << flags << "\n" << o.out;
    EXPECT_NE(o.out.find(expected), std::string::npos) << flags << "\n" << o.out;
    EXPECT_EQ(o.out.find("empirical("), std::string::npos) << "the error names tune's flags, not the scenario "
                                                               "syntax behind them: " << o.out;
  }
  fs::remove_all(dir);
}

TEST(Tune, ARatePastTheLargestSampleIsShownAsBelowOneOverTheSampleCountNeverZero) {
  const fs::path dir = temp_dir("resolution");
  {
    std::ofstream samples(dir / "few.txt");
    for (int i = 1; i <= 50; ++i) samples << i * 10 << "ms\n";
  }
  const auto o = run_lethe("tune --samples " + (dir / "few.txt").string() + " --no-confirm --out " +
                           (dir / "out").string());
  EXPECT_EQ(o.exit_code, 0) << o.out;
  EXPECT_NE(o.out.find("< 1/50"), std::string::npos) << o.out;
  EXPECT_FALSE(std::regex_search(o.out, std::regex(R"(\n\s+\S+\s+0\s+\S+\s+\S+\s+p99)"))) << "a rate of 0: " << o.out;
  EXPECT_NE(read_file(dir / "out" / "report.html").find("&lt; 1/50"), std::string::npos);
  fs::remove_all(dir);
}

TEST(Tune, TheReportShowsTheInputsTheDistributionWithItsMarksAndAVerdictPerSide) {
  const fs::path dir = temp_dir("page");
  const auto o = run_lethe("tune --processing-time 'exponential(mean=200ms)' --crash-rate 2/h --patience 5s "
                           "--redelivery-window 1d --no-confirm --out " + dir.string());
  ASSERT_EQ(o.exit_code, 0) << o.out;
  const std::string html = read_file(dir / "report.html");
  for (const std::string& part :
       {std::string("<h2>Inputs</h2>"), std::string("<th>crash rate</th><td>2 per worker per hour"),
        std::string("<th>patience</th><td>5s</td>"), std::string("<th>redelivery window</th><td>24h</td>"),
        std::string("<th>target duplicate rate</th><td>0.001"), std::string("<svg class=\"survival\""),
        std::string("class=\"recommended\""), std::string("recommended max_processing_time 1.66s"),
        std::string("class=\"target\""), std::string("class=\"target-quantile\""),
        std::string("class=\"patience\""), std::string("<h2>Verdict</h2>"),
        std::string("takeover rate not confirmed: --no-confirm"),
        std::string("recovery not confirmed: --no-confirm")}) {
    EXPECT_NE(html.find(part), std::string::npos) << part;
  }
  std::ifstream json_in(dir / "tune.json");
  const auto json = nlohmann::json::parse(json_in);
  EXPECT_EQ(json["inputs"]["patience_ns"], 5 * sim::kSecond);
  EXPECT_NEAR(json["inputs"]["crash_rate_per_second"].get<double>(), 2.0 / 3600.0, 1e-12);
  EXPECT_EQ(json["verdict"]["takeover"]["confirmed"], false);
  expect_durations_are_integer_nanoseconds(json, "tune.json");
  fs::remove_all(dir);
}

TEST(Tune, TheConfirmationIsSizedForAP99OfRecoveriesInEverySeed) {
  runner::TuneInput in = exponential_200ms();
  in.crash_rate_per_second = 1.0 / 3600.0;
  const auto a = runner::analyze_tuning(in);
  const auto size = runner::size_confirmation(in, a, 2000, 5);
  EXPECT_TRUE(size.crash_rate_raised);
  EXPECT_LE(size.crash_rate_per_second * 0.2, 0.005 + 1e-12) << "at most 0.5% of 200ms attempts hit";
  EXPECT_GE(size.expected_recoveries, 1.2 * runner::kRecoveriesForP99);
  EXPECT_TRUE(size.messages_raised);
  EXPECT_GT(size.messages, 2000);
  // The scenario runs what the size says.
  auto loaded = scenario::load_scenario_text(runner::confirmation_scenario(in, a, a.target_mpt, 2000, 5, 2 * a.target_mpt,
                                                                         a.target_mpt / 2),
                                            "confirmation", {}, {});
  ASSERT_TRUE(std::holds_alternative<lethe::ScenarioConfig>(loaded));
  const auto& config = std::get<lethe::ScenarioConfig>(loaded);
  EXPECT_EQ(config.workload.messages, size.messages);
  ASSERT_TRUE(config.faults.crash_every.has_value());
  EXPECT_NEAR(config.faults.crash_every->mean_ns(), 1e9 / size.crash_rate_per_second, 1.0);
  // No crashes given: none added, nothing raised.
  in.crash_rate_per_second = 0.0;
  const auto calm = runner::size_confirmation(in, a, 2000, 5);
  EXPECT_FALSE(calm.crash_rate_raised);
  EXPECT_FALSE(calm.messages_raised);
  EXPECT_EQ(calm.crash_rate_per_second, 0.0);
}

TEST(TuneSlow, ConfirmationSweepMeasuresRatesNextToTheAnalyticOnes) {
  const fs::path dir = temp_dir("confirm");
  const auto o = run_lethe("tune --processing-time 'exponential(mean=200ms)' --target-duplicates 0.001 "
                       "--crash-rate 60/h --redelivery-window 1h -j 2 --out " + dir.string());
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_NE(o.out.find("measured in the simulator"), std::string::npos) << o.out;
  EXPECT_TRUE(fs::exists(dir / "confirmation" / "cells.json"));
  EXPECT_TRUE(fs::exists(dir / "confirmation" / "results.jsonl"));
  std::ifstream json_in(dir / "tune.json");
  const auto json = nlohmann::json::parse(json_in);
  expect_durations_are_integer_nanoseconds(json, "tune.json");
  // The curves carry the target as a line (their gnuplot scripts), and each side has its verdict.
  EXPECT_NE(read_file(dir / "report" / "curve-duplicate-rate.gp").find("title \"target 0.001\""), std::string::npos);
  EXPECT_EQ(json["verdict"]["takeover"]["text"].get<std::string>().rfind("takeover rate ", 0), 0u) << json["verdict"];
  EXPECT_NE(json["verdict"]["recovery"]["text"].get<std::string>().find(" recoveries"), std::string::npos)
      << json["verdict"];
  EXPECT_GE(json["confirmation_plan"]["expected_recoveries_per_seed"].get<double>(), 100.0);
  const auto& cells = json.at("confirmation");
  ASSERT_EQ(cells.size(), 3u);
  EXPECT_EQ(cells[0]["max_processing_time_ns"], 830000000);
  EXPECT_EQ(cells[1]["max_processing_time_ns"], 1660000000);
  EXPECT_EQ(cells[2]["max_processing_time_text"], "3.32s");
  // At 0.5x the takeovers are frequent enough to compare: the measured rate of takeovers of live work is at
  // most the analytic P(T > mpt) (a waiter notices staleness only at its next re-read, up to one poll later)
  // and not far below it.
  const double analytic = cells[0]["analytic_duplicate_rate"].get<double>();
  const double takeovers = cells[0]["takeover_while_alive"].get<double>() / cells[0]["trials"].get<double>();
  EXPECT_GT(takeovers, 0.5 * analytic) << o.out;
  EXPECT_LT(takeovers, 1.1 * analytic) << o.out;
  // Rates fall with max_processing_time, and crashes were recovered roughly mpt (+ poll) after the crash.
  EXPECT_GT(cells[0]["measured_duplicate_rate"].get<double>(), cells[2]["measured_duplicate_rate"].get<double>());
  // Recovery is measured on a world whose queue brings a crashed attempt's message back before its record is
  // stale (not after a 30 s visibility timeout): at every mpt the measured p50 is within 10% of the analytic
  // one, and the measured p99 is not below 90% of the analytic one.
  for (const auto& cell : cells) {
    ASSERT_GT(cell["recovery_samples"].get<std::uint64_t>(), 0u) << cell.dump();
    const double analytic_p50 = cell["analytic_recovery_p50_ns"].get<double>();
    EXPECT_NEAR(cell["recovery_latency_p50_ns"].get<double>(), analytic_p50, 0.1 * analytic_p50) << cell.dump();
    EXPECT_GE(cell["recovery_latency_p99_ns"].get<double>(), 0.9 * cell["analytic_recovery_p99_ns"].get<double>())
        << cell.dump();
    EXPECT_LT(cell["recovery_latency_p99_ns"].get<double>(), 30e9) << "not the queue's timeout: " << cell.dump();
  }
  const std::string html = [&] {
    std::ifstream in(dir / "report.html");
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }();
  EXPECT_NE(html.find("Confirmation in the simulator"), std::string::npos);
  EXPECT_NE(html.find("<figure id=\"curve-duplicate-rate\">"), std::string::npos);
  fs::remove_all(dir);
}

TEST(TuneSlow, TheReadmeCommandEndsWithBothSidesConfirmed) {
  const fs::path dir = temp_dir("readme");
  const auto o = run_lethe("tune --processing-time 'exponential(mean=200ms)' --crash-rate 1/h --target-duplicates 0.001 "
                           "--patience 5s -j 2 --out " + dir.string());
  ASSERT_EQ(o.exit_code, 0) << o.out;
  std::ifstream json_in(dir / "tune.json");
  const auto json = nlohmann::json::parse(json_in);
  EXPECT_EQ(json["verdict"]["takeover"]["state"], "confirmed") << o.out;
  EXPECT_EQ(json["verdict"]["recovery"]["state"], "confirmed") << o.out;
  EXPECT_NE(o.out.find("takeover rate confirmed"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("recovery confirmed"), std::string::npos) << o.out;
  fs::remove_all(dir);
}

TEST(Tune, AnalyticRecoveryIsTheWaitLessTheWorkDoneBeforeTheCrashPlusAPollPlusTheRerun) {
  // Constant 1 s work, mpt 5 s, poll 100 ms: R = 5 s - U(0, 1 s) + U(0, 100 ms) + 1 s, within [5 s, 6.1 s].
  const auto r = runner::analytic_recovery(parse("1s"), 5 * sim::kSecond, 100 * sim::kMillisecond);
  EXPECT_NEAR(static_cast<double>(r.p50), 5.55e9, 0.02e9);
  EXPECT_GT(r.p99, 5'900'000'000);
  EXPECT_LE(r.p99, 6'100'000'000);
  // It moves one for one with mpt, and is a pure function of its inputs.
  const auto later = runner::analytic_recovery(parse("1s"), 7 * sim::kSecond, 100 * sim::kMillisecond);
  EXPECT_NEAR(static_cast<double>(later.p50 - r.p50), 2e9, 1e6);
  EXPECT_EQ(runner::analytic_recovery(parse("1s"), 5 * sim::kSecond, 100 * sim::kMillisecond).p99, r.p99);
}

TEST(Tune, TheTakeoverVerdictDecidesOrAsksForMoreTrialsUntilTheBudgetIsSpent) {
  const auto in = exponential_200ms();  // target 0.001
  EXPECT_EQ(runner::takeover_verdict(in, 2, 100000, 1, true).state, "confirmed");
  EXPECT_EQ(runner::takeover_verdict(in, 200, 10000, 1, true).state, "not confirmed");
  EXPECT_EQ(runner::takeover_verdict(in, 5, 10000, 1, true).state, "undecided") << "[99%] contains 0.001";
  const auto last = runner::takeover_verdict(in, 5, 10000, runner::kMostLooks, false);
  EXPECT_EQ(last.state, "unreachable");
  EXPECT_FALSE(last.change.empty());
  EXPECT_NE(last.text.find("raise max_processing_time"), std::string::npos) << last.text;
}

TEST(Tune, TheConfirmationQueueBringsACrashedMessageBackBeforeItsRecordIsStale) {
  const auto in = exponential_200ms();
  const auto a = runner::analyze_tuning(in);
  auto loaded = scenario::load_scenario_text(
      runner::confirmation_scenario(in, a, a.design_mpt, 2000, 5, 2 * a.design_mpt, a.design_mpt / 2), "c", {}, {});
  ASSERT_TRUE(std::holds_alternative<lethe::ScenarioConfig>(loaded));
  EXPECT_LE(std::get<lethe::ScenarioConfig>(loaded).topology.visibility_timeout, a.design_mpt / 2);
}

TEST(Tune, RoundUpSignificantIsExactAndSaturatesForEveryInt64) {
  EXPECT_EQ(runner::round_up_significant(sim::kTimeMax), sim::kTimeMax);
  EXPECT_EQ(runner::round_up_significant(999'999'999'999'999'999), 1'000'000'000'000'000'000);
  EXPECT_EQ(runner::round_up_significant(1'000'000'000'000'000'000), 1'000'000'000'000'000'000);
  EXPECT_EQ(runner::round_up_significant(-5), 0);
  EXPECT_EQ(runner::round_up_significant(sim::kTimeMax, 19), sim::kTimeMax);
  EXPECT_EQ(runner::round_up_significant(123, 1), 200);
}

// Options outside what the generated scenario can hold are refused up front (exit 2, the range named), never a
// signal (SIGFPE on a tiny target) nor a confirmation scenario lethe's own loader refuses (exit 3).
TEST(Tune, OptionsOutsideTheirRangeExitTwoNamingTheRange) {
  const fs::path dir = temp_dir("ranges");
  const std::string out = " --no-confirm --out " + dir.string();
  struct Case {
    std::string options;
    std::string names;
  };
  const std::vector<Case> cases = {
      {"--processing-time 'exponential(mean=200ms)' --target-duplicates 1e-17", "from 1e-12 up to"},
      {"--processing-time 'pareto(scale=100ms, shape=0.1)' --target-duplicates 1e-9", "at most 912.5d"},
      {"--processing-time 200ms --crash-rate 1e308/s", "from one per 3650d to one per millisecond"},
      {"--processing-time 200ms --crash-rate 1e-300/s", "from one per 3650d to one per millisecond"},
      {"--processing-time 9223372036s", "above 3650d"},
      {"--processing-time 200ms --poll 3650d", "at most 876h"},
      {"--processing-time 200ms --redelivery-window 3000d", "at most 1825d"},
      {"--processing-time 200ms --patience 4000d", "at most 3650d"},
  };
  for (const Case& c : cases) {
    const auto outcome = run_lethe("tune " + c.options + out);
    EXPECT_EQ(outcome.exit_code, 2) << c.options << "\n" << outcome.out;
    EXPECT_NE(outcome.out.find(c.names), std::string::npos) << c.options << "\n" << outcome.out;
  }
  fs::remove_all(dir);
}

// The largest crash rate and the smallest target tune accepts give a confirmation scenario lethe loads.
TEST(Tune, TheEdgesOfTheAcceptedRangesGiveAScenarioLetheLoads) {
  const fs::path dir = temp_dir("edges");
  const auto outcome = run_lethe("tune --processing-time 'exponential(mean=200ms)' --target-duplicates 1e-12 "
                                 "--crash-rate 1000/s --poll 876h --redelivery-window 1825d --no-confirm --out " +
                                 dir.string());
  EXPECT_TRUE(outcome.exit_code == 0 || outcome.exit_code == 1) << outcome.out;
  const auto loaded = scenario::load_scenario(dir / "scenario.toml", {});
  EXPECT_TRUE(std::holds_alternative<lethe::ScenarioConfig>(loaded)) << read_file(dir / "scenario.toml");
  fs::remove_all(dir);
}

runner::TuneInput with_pauses(const std::string& work, const std::string& every, const std::string& length) {
  runner::TuneInput in;
  in.processing_time = parse(work);
  in.processing_time_text = in.processing_time.to_string();
  in.pause_every = parse(every);
  in.pause_for = parse(length);
  return in;
}

TEST(TuneStale, PausesOnlyEverAddToTheTakeoverRateAndWithoutThemTheLawIsTheProcessingTimeExactly) {
  runner::TuneInput plain = exponential_200ms();
  const runner::TakeoverLaw exact(plain);
  ASSERT_TRUE(exact.exact());
  const runner::TakeoverLaw paused(with_pauses("exponential(mean=200ms)", "exponential(mean=10s)", "2s"));
  ASSERT_FALSE(paused.exact());
  for (sim::Duration mpt = 50 * sim::kMillisecond; mpt <= 5 * sim::kSecond; mpt += 50 * sim::kMillisecond) {
    EXPECT_EQ(exact.survival(mpt), plain.processing_time.survival(mpt)) << mpt;
    EXPECT_GE(paused.pause_share(mpt), 0.0) << mpt;
    EXPECT_DOUBLE_EQ(paused.survival(mpt), std::min(1.0, paused.work_share(mpt) + paused.pause_share(mpt))) << mpt;
  }
  // A 2s pause in a 200ms-mean work: past a few means of the work, what remains is the pauses' share.
  EXPECT_GT(paused.pause_share(2 * sim::kSecond), 10 * paused.work_share(2 * sim::kSecond));
}

// The payment question's hourly pause of up to 3s: far in the tail none of the 10^6 paired draws lands where a
// pause pushes work past mpt. That share is unknown below one draw in 10^6, so it must not read as 0; an input
// not given (clock skew) has no share to print.
TEST(TuneStale, APauseShareNoDrawLandsInIsPrintedBelowTheResolutionAndAnInputNotGivenIsNotPrinted) {
  runner::TuneInput in = with_pauses("lognormal(median=800ms, p99=6s)", "exponential(mean=1h)", "uniform(0s, 3s)");
  in.target_duplicates = 1e-4;
  const auto a = runner::analyze_tuning(in);
  ASSERT_TRUE(a.recommended_mpt);
  const auto recommended = std::find_if(a.candidates.begin(), a.candidates.end(),
                                        [&](const runner::TuneCandidate& c) { return c.mpt == *a.recommended_mpt; });
  ASSERT_NE(recommended, a.candidates.end());
  ASSERT_EQ(recommended->pause_rate, 0.0) << "no draw lands in the pause's share at " << *a.recommended_mpt;
  const std::string text = runner::candidate_rate_text(in, a, *recommended);
  EXPECT_NE(text.find("pauses < 1e-06"), std::string::npos) << text;
  EXPECT_EQ(text.find("skew"), std::string::npos) << text;
  const std::string table = runner::candidates_text(in, a);
  EXPECT_EQ(table.find("pauses 0,"), std::string::npos) << table;
  EXPECT_EQ(table.find("pauses 0)"), std::string::npos) << table;
}

// Work of exactly 100ms; pauses of exactly 500ms after exponential intervals of mean 1s (memoryless: at any
// instant the next pause is exponential(1s) away). The work is stretched past 300ms iff a pause starts within its
// 100ms: 1 - e^-0.1 = 0.0952. A model that put the first pause at a uniform point of one fresh interval would
// give about 0.33 (short intervals counted as often as long ones).
TEST(TuneStale, ThePausesAWorkMeetsAreThoseOfTheSimulatorsPauseLoopAtARandomInstant) {
  const runner::TakeoverLaw law(with_pauses("100ms", "exponential(mean=1s)", "500ms"));
  EXPECT_NEAR(law.survival(300 * sim::kMillisecond), 1.0 - std::exp(-0.1), 0.005);
  EXPECT_EQ(law.work_share(300 * sim::kMillisecond), 0.0);
}

TEST(TuneStale, ClockSkewWidensTheLawBothWaysAndTheRecommendationAccountsForIt) {
  runner::TuneInput in = exponential_200ms();
  const auto plain = runner::analyze_tuning(in);
  std::string error;
  in.clock_skew = sim::Distribution::parse("normal(mean=0s, sd=500ms)", {}, error, true);  // offsets either way
  ASSERT_TRUE(in.clock_skew) << error;
  const auto skewed = runner::analyze_tuning(in);
  EXPECT_GT(skewed.design_mpt, plain.design_mpt + 500 * sim::kMillisecond)
      << "a taker whose clock runs ahead sees an older record: mpt must cover the offset too";
  EXPECT_LE(skewed.law->survival(skewed.design_mpt), skewed.design_rate * 1.05);
  // Below the median a clock behind the owner's hides some takeovers: the skew's share is negative there.
  EXPECT_LT(skewed.law->skew_share(100 * sim::kMillisecond), 0.0);
}

TEST(TuneStale, TheConfirmationScenarioRunsTheSamePausesAndSkewTheAnalysisWeighed) {
  runner::TuneInput in = with_pauses("exponential(mean=200ms)", "exponential(mean=1h)", "uniform(0s, 3s)");
  std::string error;
  in.clock_skew = sim::Distribution::parse("uniform(-1s, 1s)", {}, error, true);
  ASSERT_TRUE(in.clock_skew) << error;
  const auto a = runner::analyze_tuning(in);
  auto loaded = scenario::load_scenario_text(
      runner::confirmation_scenario(in, a, a.design_mpt, 2000, 5, 2 * a.design_mpt, a.design_mpt / 2), "c", {}, {});
  ASSERT_TRUE(std::holds_alternative<lethe::ScenarioConfig>(loaded));
  const auto& faults = std::get<lethe::ScenarioConfig>(loaded).faults;
  ASSERT_TRUE(faults.pause_every && faults.clock_skew);
  EXPECT_EQ(faults.pause_every->to_string(), in.pause_every->to_string());
  EXPECT_EQ(faults.pause_for.to_string(), in.pause_for->to_string());
  EXPECT_EQ(faults.clock_skew->to_string(), in.clock_skew->to_string());
}

TEST(TuneStale, APauseWithoutItsLengthOrABadLawExitsTwoNamingTheOption) {
  const fs::path dir = temp_dir("stale-bad");
  const std::string base = "tune --processing-time 200ms --no-confirm --out " + dir.string();
  const auto alone = run_lethe(base + " --pause-every 1h");
  EXPECT_EQ(alone.exit_code, 2);
  EXPECT_NE(alone.out.find("--pause-every and --pause-for go together"), std::string::npos) << alone.out;
  const auto bad = run_lethe(base + " --clock-skew 'gauss(1s)'");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.out.find("--clock-skew: "), std::string::npos) << bad.out;
  const auto fast = run_lethe(base + " --pause-every 10us --pause-for 1s");
  EXPECT_EQ(fast.exit_code, 2);
  EXPECT_NE(fast.out.find("--pause-every: found \"10us\", a mean interval below 1ms"), std::string::npos) << fast.out;
  fs::remove_all(dir);
}

// The confirmation raises the crash rate for samples; a rerun hit by a crash waits for its own record to age, so
// when more than 1% of reruns are hit the p99 is a second wait: about 2 x mpt. The analytic side must say so, or
// it disagrees with every measurement at a raised rate.
TEST(TuneRecovery, ARerunHitByACrashStartsTheWaitOverSoFrequentCrashesPutTheP99NearTwiceMpt) {
  const auto one_second = parse("1s");
  const sim::Duration mpt = 5 * sim::kSecond;
  const auto calm = runner::analytic_recovery(one_second, mpt, 100 * sim::kMillisecond, 0.0);
  EXPECT_LT(calm.p99, mpt + 1200 * sim::kMillisecond);
  const double five_percent = -std::log(0.95);  // per second: 5% of 1s reruns are hit
  const auto stormy = runner::analytic_recovery(one_second, mpt, 100 * sim::kMillisecond, five_percent);
  EXPECT_GT(stormy.p99, 2 * mpt);
  EXPECT_LT(stormy.p99, 2 * mpt + 2500 * sim::kMillisecond);
  EXPECT_NEAR(static_cast<double>(stormy.p50), static_cast<double>(calm.p50), 0.05e9) << "the median is one wait";
}

reports::CellSummary cell_with_expired(std::uint64_t expired, std::uint64_t trials) {
  reports::CellSummary cell;
  cell.trials = trials;
  cell.by_cause[static_cast<std::size_t>(lethe::Cause::Expired)] = expired;
  return cell;
}

TEST(TuneTtl, TheTtlIsConfirmedOnlyWhenNoCopyExpiredAtItAndSomeDidAtHalfTheWindow) {
  runner::TuneInput in = exponential_200ms();
  in.redelivery_window = 3 * sim::kDay;
  const auto a = runner::analyze_tuning(in);
  ASSERT_TRUE(a.ttl);
  const auto confirmed = runner::ttl_verdict(in, a, cell_with_expired(0, 2500), cell_with_expired(1233, 2500));
  EXPECT_TRUE(confirmed.confirmed);
  EXPECT_NE(confirmed.text.find("0 of 2500"), std::string::npos) << confirmed.text;
  const auto expired = runner::ttl_verdict(in, a, cell_with_expired(3, 2500), cell_with_expired(1233, 2500));
  EXPECT_FALSE(expired.confirmed);
  EXPECT_NE(expired.change.find("raise protocol.ttl"), std::string::npos);
  const auto untested = runner::ttl_verdict(in, a, cell_with_expired(0, 2500), cell_with_expired(0, 2500));
  EXPECT_FALSE(untested.confirmed) << "no copy met the expiry even at half the window: nothing was tested";
}

TEST(TuneTtl, TheTtlScenarioDeliversEveryCopyUpToTheWindowLateBeforeTheRunEnds) {
  runner::TuneInput in = exponential_200ms();
  in.redelivery_window = 3 * sim::kDay;
  const auto a = runner::analyze_tuning(in);
  auto loaded = scenario::load_scenario_text(runner::ttl_scenario(in, a, a.design_mpt, 2), "t", {}, {});
  ASSERT_TRUE(std::holds_alternative<lethe::ScenarioConfig>(loaded));
  const auto& config = std::get<lethe::ScenarioConfig>(loaded);
  EXPECT_GT(config.run.duration, *in.redelivery_window);
  EXPECT_EQ(config.workload.redelivery.delay.quantile(1.0), *in.redelivery_window);
}

// The payment question of docs/report-tune-shrink.md, end to end: lognormal work (median 800ms, p99 6s), two
// crashes a day, a GC pause of up to 3s hourly, copies up to 3 days late, 1 duplicate in 10,000, 2 minutes of
// patience. Every side is confirmed.
TEST(TuneSlow, ThePaymentQuestionEndsWithEverySideConfirmed) {
  const fs::path dir = temp_dir("payment");
  const auto o = run_lethe("tune --processing-time 'lognormal(median=800ms, p99=6s)' --crash-rate 2/d "
                           "--pause-every 'exponential(mean=1h)' --pause-for 'uniform(0s, 3s)' "
                           "--target-duplicates 1e-4 --patience 2m --redelivery-window 3d --out " + dir.string());
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_NE(o.out.find("takeover rate confirmed"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("recovery confirmed"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("ttl confirmed"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("recommended ttl = 6d"), std::string::npos) << o.out;
  fs::remove_all(dir);
}

}  // namespace tune_test
