// lethe sweep / lethe merge: the grid, results written as seeds finish, resume after kill -9, shards and merge,
// order-independent aggregation, and the measured duplicate rates against their closed forms.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <random>
#include <spawn.h>
#include <sstream>
#include <string>
#include <sys/file.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "reports/cells.hpp"
#include "scenario/loader.hpp"
#include "runner/sweep.hpp"
#include "runner/sweep_targets.hpp"
#include "tests/runner/support.hpp"

extern char** environ;

namespace fs = std::filesystem;

namespace sweep_test {

using namespace test_support;  // shell, run_lethe, read_file, load_config (tests/runner/support.hpp)
fs::path temp_dir(const std::string& name) { return test_support::temp_dir("sweep-test", name); }

const fs::path kScenarios = fs::path(LETHE_SOURCE_DIR) / "tests/runner/sweep-scenarios";
const std::string kLethe = std::string(LETHE_BINARY_DIR) + "/lethe";

std::vector<std::string> sorted_lines(const fs::path& path) {
  std::vector<std::string> lines;
  std::istringstream in(read_file(path));
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::sort(lines.begin(), lines.end());
  return lines;
}

// Runs `lethe ARGS`; returns the exit code (-1 if it did not exit normally). Output goes to `log`.
int run_lethe(const std::string& args, const fs::path& log) {
  const std::string command = kLethe + " " + args + " >" + log.string() + " 2>&1";
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The small sweep most tests use: 3 x 2 cells x 6 seeds of a 60-message scenario.
runner::SweepSpec small_sweep(const fs::path& out, std::ostream& messages) {
  runner::SweepSpec spec;
  spec.scenario_file = kScenarios / "small.toml";
  spec.vary = {{"protocol.max_processing_time", {"50ms", "200ms", "1s"}}, {"protocol.ttl", {"1s", "10s"}}};
  spec.jobs = 2;
  spec.out_dir = out;
  spec.messages_out = &messages;
  return spec;
}

lethe::RunResult random_result(std::mt19937_64& random, std::uint64_t seed) {
  lethe::RunResult r;
  r.scenario = "x";
  r.seed = seed;
  r.messages = random() % 1000;
  for (auto& n : r.duplicates) n = random() % 5;
  for (auto n : r.duplicates) r.duplicate_effects += n;
  r.lost_messages = random() % 3;
  r.waits = random() % 4;
  r.wait_time = {static_cast<std::int64_t>(random() % 1000), static_cast<std::int64_t>(random() % 5000),
                 static_cast<std::int64_t>(random() % 9000), r.waits};
  r.recovery_latency.count = random() % 3;
  if (r.recovery_latency.count > 0) {
    r.recovery_latency.p50 = static_cast<std::int64_t>(random() % 1000);
    r.recovery_latency.p99 = static_cast<std::int64_t>(random() % 5000);
    r.recovery_latency.max = static_cast<std::int64_t>(random() % 9000);
  }
  r.memo_mismatches = random() % 2;
  r.ok = random() % 4 != 0;
  return r;
}

// ---------------------------------------------------------------- parsing

TEST(SweepParse, VarySplitsOnlyAtCommasOutsideParenthesesBracketsAndQuotes) {
  std::string error;
  auto vary = runner::parse_vary(
      "workload.processing_time = uniform(1ms, 5ms), exponential(mean=2s) ,\"a,b\", [\"x\", \"y\"]", error);
  ASSERT_TRUE(vary.has_value()) << error;
  EXPECT_EQ(vary->key, "workload.processing_time");
  EXPECT_EQ(vary->values,
            (std::vector<std::string>{"uniform(1ms, 5ms)", "exponential(mean=2s)", "\"a,b\"", "[\"x\", \"y\"]"}));
}

TEST(SweepParse, VaryRefusesAMissingKeyAnEmptyValueAndARepeatedValue) {
  std::string error;
  EXPECT_FALSE(runner::parse_vary("protocol.ttl", error).has_value());
  EXPECT_NE(error.find("KEY=V1,V2"), std::string::npos) << error;
  EXPECT_FALSE(runner::parse_vary("=1s,2s", error).has_value());
  EXPECT_FALSE(runner::parse_vary("protocol.ttl=1s,,2s", error).has_value());
  EXPECT_NE(error.find("empty value"), std::string::npos) << error;
  EXPECT_FALSE(runner::parse_vary("protocol.ttl=1s,2s,1s", error).has_value());
  EXPECT_NE(error.find("twice"), std::string::npos) << error;
}

TEST(SweepParse, ShardIsKOverNWithKFromOneToN) {
  std::string error;
  EXPECT_EQ(runner::parse_shard("1/1", error), (runner::Shard{1, 1}));
  EXPECT_EQ(runner::parse_shard("3/8", error), (runner::Shard{3, 8}));
  for (const char* bad : {"0/3", "4/3", "3", "/3", "1/", "a/b", "-1/3", "1/3x", ""}) {
    EXPECT_FALSE(runner::parse_shard(bad, error).has_value()) << bad;
  }
}

// ---------------------------------------------------------------- aggregation

TEST(SweepSummarize, TrialsAreMessagesTimesProcessorsAndErrorSeedsCountOnlyAsErrors) {
  std::vector<runner::SeedRun> runs(3);
  runs[0].result.seed = 1;
  runs[0].result.messages = 100;
  runs[0].result.duplicate_effects = 3;
  runs[0].result.duplicates[static_cast<std::size_t>(lethe::Cause::Expired)] = 3;
  runs[1].result.seed = 2;
  runs[1].result.messages = 100;
  runs[1].result.duplicate_effects = 1;
  runs[1].result.duplicates[static_cast<std::size_t>(lethe::Cause::SinkRetry)] = 1;
  runs[1].result.ok = false;
  runs[2].result.seed = 3;
  runs[2].result.messages = 100;
  runs[2].result.duplicate_effects = 50;
  runs[2].error = "broken";
  const auto cell = runner::summarize(4, {{"protocol.ttl", "1m"}}, 2, runs);
  EXPECT_EQ(cell.index, 4u);
  EXPECT_EQ(cell.seeds, 2u);
  EXPECT_EQ(cell.error_seeds, 1u);
  EXPECT_EQ(cell.failed_seeds, 1u);
  EXPECT_EQ(cell.trials, 400u);
  EXPECT_EQ(cell.duplicates, 4u);
  EXPECT_DOUBLE_EQ(cell.duplicate_rate, 0.01);
  EXPECT_EQ(cell.by_cause[static_cast<std::size_t>(lethe::Cause::Expired)], 3u);
  EXPECT_EQ(cell.by_cause[static_cast<std::size_t>(lethe::Cause::SinkRetry)], 1u);
  const auto expected = reports::wilson_interval(4, 400);
  EXPECT_EQ(cell.duplicate_interval.low, expected.low);
  EXPECT_EQ(cell.duplicate_interval.high, expected.high);
  EXPECT_LT(cell.duplicate_interval.low, 0.01);
  EXPECT_GT(cell.duplicate_interval.high, 0.01);
}

TEST(SweepSummarize, QuantilesAreLowerMediansOverSeedsWithSamplesAndTheLargestMax) {
  std::vector<runner::SeedRun> runs(4);
  const std::array<lethe::Quantiles, 4> recovery = {
      lethe::Quantiles{10, 40, 50, 2}, lethe::Quantiles{0, 0, 0, 0}, lethe::Quantiles{30, 60, 90, 1},
      lethe::Quantiles{20, 20, 20, 5}};
  for (std::size_t i = 0; i < runs.size(); ++i) {
    runs[i].result.seed = i + 1;
    runs[i].result.recovery_latency = recovery[i];
  }
  const auto cell = runner::summarize(0, {}, 1, runs);
  EXPECT_EQ(cell.recovery_latency.p50, 20);  // of 10, 20, 30 (the seed without a sample is left out)
  EXPECT_EQ(cell.recovery_latency.p99, 40);  // of 20, 40, 60
  EXPECT_EQ(cell.recovery_latency.max, 90);
  EXPECT_EQ(cell.recovery_latency.count, 8u);
  EXPECT_EQ(cell.wait_time.count, 0u);
}

RC_GTEST_PROP(SweepSummarize, TheSummaryIsTheSameForEveryOrderOfTheSeeds, (std::uint64_t generator_seed)) {
  std::mt19937_64 random(generator_seed);
  const std::size_t count = 1 + random() % 20;
  std::vector<runner::SeedRun> runs(count);
  for (std::size_t i = 0; i < count; ++i) {
    runs[i].result = random_result(random, i + 1);
    if (random() % 7 == 0) runs[i].error = "lethe broke";
  }
  const auto expected = reports::cell_json(runner::summarize(2, {{"k", "v"}}, 3, runs)).dump();
  std::shuffle(runs.begin(), runs.end(), random);
  RC_ASSERT(reports::cell_json(runner::summarize(2, {{"k", "v"}}, 3, runs)).dump() == expected);
}

TEST(SweepLines, AResultLineReadsBackToTheSameLine) {
  std::mt19937_64 random(7);
  runner::SeedRun run;
  run.result = random_result(random, 12);
  run.result.trace_hash = 0xfeedbeefcafe1234ull;
  run.result.expectations.push_back({"linearizable", "==", "1", std::nan(""), false, 3});
  run.result.ok = false;
  const runner::Params params{{"protocol.ttl", "1m"}, {"workload.processing_time", "uniform(1ms, 5ms)"}};
  const std::string line = runner::result_line(5, params, run);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  std::string error;
  auto parsed = runner::parse_result_line(line, error);
  ASSERT_TRUE(parsed.has_value()) << error;
  EXPECT_EQ(parsed->cell, 5u);
  EXPECT_EQ(parsed->seed, 12u);
  EXPECT_EQ(parsed->params, params);
  EXPECT_EQ(parsed->run.result.recovery_latency.count, run.result.recovery_latency.count);
  EXPECT_EQ(parsed->run.result.wait_time.count, run.result.wait_time.count);
  EXPECT_EQ(runner::result_line(parsed->cell, parsed->params, parsed->run), line);
  run.error = "lethe broke";
  auto broken = runner::parse_result_line(runner::result_line(5, params, run), error);
  ASSERT_TRUE(broken.has_value()) << error;
  EXPECT_EQ(broken->run.error, "lethe broke");
  EXPECT_FALSE(runner::parse_result_line(line.substr(0, line.size() / 2), error).has_value());
  // A number no integer field can hold is refused, not converted (undefined for a float past 2^64).
  const std::string huge = "{\"cell\":184467440737095516160" + line.substr(line.find(','));
  EXPECT_FALSE(runner::parse_result_line(huge, error).has_value());
  EXPECT_NE(error.find("out of range"), std::string::npos) << error;
}

TEST(SweepCells, CellsJsonReadsBackToEqualCells) {
  reports::SweepCells sweep;
  sweep.scenario = "s";
  sweep.axes = {{"protocol.ttl", {"1m", "2m"}}, {"a.b", {"x"}}};
  std::mt19937_64 random(3);
  for (std::size_t c = 0; c < 2; ++c) {
    std::vector<runner::SeedRun> runs(5);
    for (std::size_t i = 0; i < runs.size(); ++i) runs[i].result = random_result(random, i + 1);
    sweep.cells.push_back(runner::summarize(c, {{"protocol.ttl", sweep.axes[0].values[c]}, {"a.b", "x"}}, 1, runs));
  }
  const std::string text = reports::sweep_cells_json(sweep).dump(2);
  const auto back = reports::sweep_cells_from_json(nlohmann::json::parse(text));
  EXPECT_EQ(reports::sweep_cells_json(back).dump(2), text);
  EXPECT_EQ(back.cells[1].params.front().first, "protocol.ttl");  // axis order, not key order
  const std::string csv = reports::cells_csv(sweep.axes, sweep.cells);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3);
  EXPECT_EQ(csv.rfind("index,protocol.ttl,a.b,seeds,trials,duplicates,duplicate_rate,ci_low,ci_high,", 0), 0u);
}

// ---------------------------------------------------------------- the sweep in-process

TEST(Sweep, CellsAreRowMajorInVaryOrderAndEveryCellRunsItsSeeds) {
  const fs::path dir = temp_dir("grid");
  std::ostringstream messages;
  auto spec = small_sweep(dir / "out", messages);
  spec.seeds = 2;
  const auto outcome = runner::run_sweep(spec);
  ASSERT_LE(outcome.exit_code, 1) << messages.str();
  ASSERT_EQ(outcome.cells.cells.size(), 6u);
  EXPECT_EQ(outcome.pairs_total, 12u);
  EXPECT_EQ(outcome.pairs_run, 12u);
  const std::vector<std::pair<std::string, std::string>> cell3{{"protocol.max_processing_time", "200ms"},
                                                               {"protocol.ttl", "10s"}};
  EXPECT_EQ(outcome.cells.cells[3].params, cell3);
  for (const auto& cell : outcome.cells.cells) {
    EXPECT_EQ(cell.seeds, 2u);
    EXPECT_EQ(cell.trials, 120u);  // 60 messages x 1 processor x 2 seeds
  }
  EXPECT_EQ(count_lines(dir / "out/results.jsonl"), 12u);
  EXPECT_TRUE(fs::exists(dir / "out/cells.json"));
  EXPECT_TRUE(fs::exists(dir / "out/cells.csv"));
  const auto description = nlohmann::json::parse(read_file(dir / "out/sweep.json"));
  EXPECT_EQ(description["scenario_text"], read_file(kScenarios / "small.toml"));
  EXPECT_EQ(description["vary"][1]["key"], "protocol.ttl");
  EXPECT_EQ(description["shard"]["count"], 1);
  fs::remove_all(dir);
}

TEST(Sweep, BadInputIsRefusedWithTheStandardMessageAndExitTwo) {
  const fs::path dir = temp_dir("bad");
  std::ostringstream messages;
  auto spec = small_sweep(dir / "out", messages);
  spec.vary = {{"protocol.max_processing_time", {"1s", "abc"}}};
  EXPECT_EQ(runner::run_sweep(spec).exit_code, 2);
  EXPECT_NE(messages.str().find("--vary protocol.max_processing_time=abc: protocol.max_processing_time: found \"abc\""),
            std::string::npos)
      << messages.str();
  messages.str("");
  spec.vary = {{"protocol.max_procesing_time", {"1s"}}};
  EXPECT_EQ(runner::run_sweep(spec).exit_code, 2);
  EXPECT_NE(messages.str().find("did you mean `max_processing_time`"), std::string::npos) << messages.str();
  messages.str("");
  spec.vary = {{"protocol.ttl", {"1s"}}, {"protocol.ttl", {"2s"}}};
  EXPECT_EQ(runner::run_sweep(spec).exit_code, 2);
  EXPECT_NE(messages.str().find("varied twice"), std::string::npos) << messages.str();
  EXPECT_FALSE(fs::exists(dir / "out/results.jsonl"));  // nothing is written for refused input
  fs::remove_all(dir);
}

TEST(Sweep, ExistingResultsNeedResumeAndAnotherSweepsFolderIsRefused) {
  const fs::path dir = temp_dir("exists");
  std::ostringstream messages;
  auto spec = small_sweep(dir / "out", messages);
  spec.seeds = 1;
  ASSERT_LE(runner::run_sweep(spec).exit_code, 1) << messages.str();
  messages.str("");
  EXPECT_EQ(runner::run_sweep(spec).exit_code, 2);
  EXPECT_NE(messages.str().find("use --resume"), std::string::npos) << messages.str();
  spec.resume = true;
  messages.str("");
  const auto again = runner::run_sweep(spec);
  EXPECT_LE(again.exit_code, 1) << messages.str();
  EXPECT_EQ(again.pairs_run, 0u);
  EXPECT_EQ(again.pairs_found, 6u);
  spec.sets = {"sink.latency=3ms"};
  messages.str("");
  EXPECT_EQ(runner::run_sweep(spec).exit_code, 2);
  EXPECT_NE(messages.str().find("holds another sweep (the --set overrides differ)"), std::string::npos)
      << messages.str();
  spec.sets = {};
  spec.shard = {1, 2};
  messages.str("");
  EXPECT_EQ(runner::run_sweep(spec).exit_code, 2);
  EXPECT_NE(messages.str().find("holds shard 1/1"), std::string::npos) << messages.str();
  fs::remove_all(dir);
}

TEST(Sweep, ASecondSweepIntoAFolderThatIsBeingWrittenIsRefused) {
  const fs::path dir = temp_dir("locked");
  std::ostringstream messages;
  auto spec = small_sweep(dir / "out", messages);
  spec.seeds = 1;
  fs::create_directories(dir / "out");
  const int fd = ::open((dir / "out/.lock").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);  // as a running sweep holds it
  spec.resume = true;
  EXPECT_EQ(runner::run_sweep(spec).exit_code, 2);
  EXPECT_NE(messages.str().find("another lethe sweep is writing into"), std::string::npos) << messages.str();
  EXPECT_FALSE(fs::exists(dir / "out/results.jsonl"));
  ::close(fd);  // the first sweep ended (or was killed): the folder is free again
  messages.str("");
  EXPECT_LE(runner::run_sweep(spec).exit_code, 1) << messages.str();
  fs::remove_all(dir);
}

TEST(Sweep, ATruncatedLastLineIsDroppedAndItsSeedRunsAgain) {
  const fs::path dir = temp_dir("truncated");
  std::ostringstream messages;
  auto whole = small_sweep(dir / "whole", messages);
  whole.seeds = 3;
  ASSERT_LE(runner::run_sweep(whole).exit_code, 1) << messages.str();
  fs::copy(dir / "whole", dir / "cut");
  const fs::path results = dir / "cut/results.jsonl";
  const auto size = fs::file_size(results);
  fs::resize_file(results, size - 40);  // the last line loses its end (and its newline)
  fs::remove(dir / "cut/cells.json");
  auto resumed = small_sweep(dir / "cut", messages);
  resumed.seeds = 3;
  resumed.resume = true;
  messages.str("");
  const auto outcome = runner::run_sweep(resumed);
  ASSERT_LE(outcome.exit_code, 1) << messages.str();
  EXPECT_NE(messages.str().find("dropped a truncated last line"), std::string::npos) << messages.str();
  EXPECT_EQ(outcome.pairs_run, 1u);
  EXPECT_EQ(outcome.pairs_found, 17u);
  EXPECT_EQ(sorted_lines(results), sorted_lines(dir / "whole/results.jsonl"));
  EXPECT_EQ(read_file(dir / "cut/cells.json"), read_file(dir / "whole/cells.json"));
  EXPECT_EQ(read_file(dir / "cut/cells.csv"), read_file(dir / "whole/cells.csv"));
  fs::remove_all(dir);
}

TEST(Sweep, AGarbledCompleteLineIsAnErrorNotSilentlyDropped) {
  const fs::path dir = temp_dir("garbled");
  std::ostringstream messages;
  auto spec = small_sweep(dir / "out", messages);
  spec.seeds = 1;
  ASSERT_LE(runner::run_sweep(spec).exit_code, 1) << messages.str();
  {
    std::ofstream out(dir / "out/results.jsonl", std::ios::app);
    out << "{\"cell\": 1, \"oops\n";
  }
  spec.resume = true;
  messages.str("");
  EXPECT_EQ(runner::run_sweep(spec).exit_code, 2);
  EXPECT_NE(messages.str().find("results.jsonl:7: not a result line"), std::string::npos) << messages.str();
  fs::remove_all(dir);
}

// Hostile complete lines in results.jsonl: values nested 100,000 deep, 1e400, invalid UTF-8. --resume and merge
// refuse each with its line and the reason in words, and the message quotes none of the line's bytes.
TEST(Sweep, HostileResultLinesAreBadInputSayingWhyWithoutQuotingTheirBytes) {
  const fs::path dir = temp_dir("hostile");
  std::ostringstream messages;
  auto spec = small_sweep(dir / "out", messages);
  spec.seeds = 1;
  ASSERT_LE(runner::run_sweep(spec).exit_code, 1) << messages.str();
  const std::string lines = read_file(dir / "out/results.jsonl");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{\"cell\":0,\"params\":" + std::string(100'000, '[') + std::string(100'000, ']') + "}\n",
       "values nested deeper than 64 levels"},
      {"{\"cell\":0,\"seed\":1e400}\n", "a number beyond a double (as 1e400)"},
      {"{\"cell\":0,\"params\":\"\xff\xfe\"}\n", "invalid UTF-8 at byte 21 of the line"},
  };
  for (const auto& [line, why] : cases) {
    std::ofstream(dir / "out/results.jsonl", std::ios::trunc) << lines << line;
    spec.resume = true;
    messages.str("");
    EXPECT_EQ(runner::run_sweep(spec).exit_code, 2) << why;
    EXPECT_NE(messages.str().find("results.jsonl:7: not a result line: " + why), std::string::npos) << messages.str();
    EXPECT_EQ(messages.str().find('\xff'), std::string::npos);
    fs::remove_all(dir / "merged");
    EXPECT_EQ(run_lethe("merge " + (dir / "out").string() + " --out " + (dir / "merged").string(), dir / "merge.log"), 2);
    EXPECT_NE(read_file(dir / "merge.log").find("results.jsonl:7: not a result line: " + why), std::string::npos)
        << read_file(dir / "merge.log");
  }
  fs::remove_all(dir);
}

TEST(Sweep, ThreeShardsMergedEqualOneRun) {
  const fs::path dir = temp_dir("shards");
  std::ostringstream messages;
  auto whole = small_sweep(dir / "whole", messages);
  whole.seeds = 3;
  ASSERT_LE(runner::run_sweep(whole).exit_code, 1) << messages.str();
  runner::MergeSpec merge;
  std::size_t owned = 0;
  for (std::uint64_t k = 1; k <= 3; ++k) {
    auto shard = small_sweep(dir / ("shard" + std::to_string(k)), messages);
    shard.seeds = 3;
    shard.shard = {k, 3};
    shard.jobs = 1;
    const auto outcome = runner::run_sweep(shard);
    ASSERT_LE(outcome.exit_code, 1) << messages.str();
    EXPECT_EQ(outcome.pairs_owned, 6u);  // 18 pairs, every third
    EXPECT_EQ(outcome.pairs_run, 6u);
    owned += outcome.pairs_owned;
    merge.inputs.push_back(shard.out_dir);
  }
  EXPECT_EQ(owned, 18u);
  merge.inputs.push_back(dir / "shard2");  // overlapping inputs: the same results count once
  merge.out_dir = dir / "merged";
  merge.messages_out = &messages;
  messages.str("");
  const auto merged = runner::merge_sweeps(merge);
  ASSERT_LE(merged.exit_code, 1) << messages.str();
  EXPECT_EQ(messages.str(), "");  // nothing missing, nothing to warn about
  EXPECT_EQ(merged.pairs_found, 18u);
  EXPECT_EQ(sorted_lines(dir / "merged/results.jsonl"), sorted_lines(dir / "whole/results.jsonl"));
  EXPECT_EQ(read_file(dir / "merged/cells.json"), read_file(dir / "whole/cells.json"));
  EXPECT_EQ(read_file(dir / "merged/cells.csv"), read_file(dir / "whole/cells.csv"));
  fs::remove_all(dir);
}

TEST(Sweep, MergeRefusesDifferentSweepsAndDifferingResultsForTheSamePair) {
  const fs::path dir = temp_dir("merge-refuse");
  std::ostringstream messages;
  auto a = small_sweep(dir / "a", messages);
  a.seeds = 1;
  ASSERT_LE(runner::run_sweep(a).exit_code, 1) << messages.str();
  auto b = small_sweep(dir / "b", messages);
  b.seeds = 2;
  ASSERT_LE(runner::run_sweep(b).exit_code, 1) << messages.str();
  runner::MergeSpec merge{{dir / "a", dir / "b"}, dir / "m1", "", nullptr, &messages};
  messages.str("");
  EXPECT_EQ(runner::merge_sweeps(merge).exit_code, 2);
  EXPECT_NE(messages.str().find("hold different sweeps (the seeds of cell 0 differ)"), std::string::npos)
      << messages.str();
  // The same sweep, but one result edited: a (cell, seed) with two different results.
  fs::copy(dir / "a", dir / "c");
  std::string text = read_file(dir / "c/results.jsonl");
  const auto at = text.find("\"deliveries\":");
  ASSERT_NE(at, std::string::npos);
  text.insert(at + 13, "1");
  std::ofstream(dir / "c/results.jsonl", std::ios::trunc) << text;
  merge = runner::MergeSpec{{dir / "a", dir / "c"}, dir / "m2", "", nullptr, &messages};
  messages.str("");
  EXPECT_EQ(runner::merge_sweeps(merge).exit_code, 2);
  EXPECT_NE(messages.str().find("differs from the same pair"), std::string::npos) << messages.str();
  fs::remove_all(dir);
}

// ---------------------------------------------------------------- the lethe binary

TEST(SweepCliSlow, ResumeAfterKillNineEqualsAnUninterruptedRunByteForByte) {
  const fs::path dir = temp_dir("kill");
  const std::string scenario = (kScenarios / "timing-1000.toml").string();
  const std::string grid = " --vary protocol.max_processing_time=500ms,2s --vary protocol.ttl=30s,2m --seeds 12 -j 2";
  ASSERT_EQ(run_lethe("sweep " + scenario + grid + " --out " + (dir / "whole").string(), dir / "whole.log"), 0)
      << read_file(dir / "whole.log");
  const fs::path results = dir / "killed/results.jsonl";
  // Start the same sweep, and kill -9 it once a few seeds are in the file.
  std::vector<std::string> args{kLethe, "sweep", scenario};
  std::istringstream words(grid + " --out " + (dir / "killed").string());
  for (std::string word; words >> word;) args.push_back(word);
  const int status = test_support::kill_nine_after_lines(args, {}, results, 4);
  ASSERT_NE(status, -1) << "the sweep could not be started";
  ASSERT_TRUE(WIFSIGNALED(status)) << "the sweep finished before it could be killed";
  const std::size_t before = count_lines(results);
  EXPECT_GE(before, 4u);
  EXPECT_LT(before, 48u);
  EXPECT_FALSE(fs::exists(dir / "killed/cells.json"));
  // Without --resume the folder is refused; with it the sweep completes.
  EXPECT_EQ(run_lethe("sweep " + scenario + grid + " --out " + (dir / "killed").string(), dir / "refused.log"), 2);
  ASSERT_EQ(run_lethe("sweep " + scenario + grid + " --out " + (dir / "killed").string() + " --resume",
                  dir / "resumed.log"),
            0)
      << read_file(dir / "resumed.log");
  EXPECT_EQ(count_lines(results), 48u);
  EXPECT_EQ(sorted_lines(results), sorted_lines(dir / "whole/results.jsonl"));
  EXPECT_EQ(read_file(dir / "killed/cells.json"), read_file(dir / "whole/cells.json"));
  EXPECT_EQ(read_file(dir / "killed/cells.csv"), read_file(dir / "whole/cells.csv"));
  fs::remove_all(dir);
}

// Ctrl-C during a sweep: before it dies of the signal, the sweep prints the command that resumes it, and that
// command, run as printed, completes the sweep.
TEST(SweepCliSlow, SigintPrintsTheResumeCommandAndThatCommandFinishesTheSweep) {
  const fs::path dir = temp_dir("sigint");
  const std::string scenario = (kScenarios / "timing-1000.toml").string();
  const fs::path out = dir / "swept";
  const std::string command = kLethe + " sweep " + scenario +
                              " --vary protocol.max_processing_time=500ms,2s --vary protocol.ttl=30s,2m --seeds 12 -j 2 "
                              "--out " + out.string();
  const fs::path results = out / "results.jsonl";
  const Outcome o = shell("(" + command + " 2>" + (dir / "err.txt").string() + " >/dev/null & pid=$!; "
                          "for i in $(seq 1 6000); do [ -f " + results.string() + " ] && [ $(wc -l < " +
                          results.string() + ") -ge 4 ] && break; sleep 0.02; done; kill -INT $pid; wait $pid; "
                          "echo \"status $?\")");
  ASSERT_NE(o.out.find("status 130"), std::string::npos) << o.out << read_file(dir / "err.txt");
  const std::string err = read_file(dir / "err.txt");
  const auto at = err.find("Resume with:\n  ");
  ASSERT_NE(at, std::string::npos) << err;
  const std::string printed = err.substr(at + 15, err.find('\n', at + 15) - at - 15);
  EXPECT_EQ(printed, command + " --resume");
  EXPECT_LT(count_lines(results), 48u);
  ASSERT_EQ(shell(printed + " >/dev/null 2>&1").exit_code, 0);
  EXPECT_EQ(count_lines(results), 48u);
  fs::remove_all(dir);
}

TEST(SweepCliSlow, ShardsFromTheCommandLineMergeIntoOneRun) {
  const fs::path dir = temp_dir("cli-shards");
  const std::string scenario = (kScenarios / "small.toml").string();
  const std::string grid = " --vary protocol.ttl=1s,10s --vary 'workload.processing_time=10ms,uniform(1ms, 90ms)'";
  ASSERT_LE(run_lethe("sweep " + scenario + grid + " --out " + (dir / "whole").string(), dir / "whole.log"), 1)
      << read_file(dir / "whole.log");
  std::string shards;
  for (int k = 1; k <= 3; ++k) {
    const fs::path out = dir / ("shard" + std::to_string(k));
    ASSERT_LE(run_lethe("sweep " + scenario + grid + " --shard " + std::to_string(k) + "/3 --out " + out.string(),
                    dir / "shard.log"),
              1)
        << read_file(dir / "shard.log");
    shards += " " + out.string();
  }
  ASSERT_LE(run_lethe("merge" + shards + " --out " + (dir / "merged").string(), dir / "merge.log"), 1)
      << read_file(dir / "merge.log");
  EXPECT_NE(read_file(dir / "merge.log").find("4 cells, 24 of 24 (cell, seed) pairs"), std::string::npos)
      << read_file(dir / "merge.log");
  EXPECT_EQ(sorted_lines(dir / "merged/results.jsonl"), sorted_lines(dir / "whole/results.jsonl"));
  EXPECT_EQ(read_file(dir / "merged/cells.json"), read_file(dir / "whole/cells.json"));
  EXPECT_EQ(run_lethe("merge" + shards + " --out " + (dir / "merged").string(), dir / "again.log"), 2);
  fs::remove_all(dir);
}

// ---------------------------------------------------------------- statistics

// The expected rate of each cell, from the cell's own config.
double survival_at(const std::string& scenario, const runner::Params& params, bool of_delay) {
  std::vector<std::string> overrides;
  for (const auto& [key, value] : params) overrides.push_back(key + "=" + value);
  auto loaded = scenario::load_scenario(scenario, overrides);
  const auto& config = std::get<lethe::ScenarioConfig>(loaded);
  if (!of_delay) {
    return config.workload.processing_time.survival(config.protocol.settings.get<sim::Duration>("max_processing_time"));
  }
  // The copy finds the record expired when its delay exceeds ttl + the (constant) processing time.
  const sim::Duration processing = config.workload.processing_time.quantile(0.5);
  return config.workload.redelivery.delay.survival(config.protocol.settings.get<sim::Duration>("ttl") + processing);
}

void expect_rates_match_the_tail(const std::string& file, const runner::VarySpec& axis, lethe::Cause cause,
                                 bool of_delay) {
  const fs::path dir = temp_dir("statistics-" + axis.key);
  std::ostringstream messages;
  runner::SweepSpec spec;
  spec.scenario_file = file;
  spec.vary = {axis};
  spec.jobs = 2;
  spec.out_dir = dir;
  spec.messages_out = &messages;
  const auto outcome = runner::run_sweep(spec);
  ASSERT_EQ(outcome.exit_code, 0) << messages.str();  // the scenario's [expect]: no other cause, nothing lost
  ASSERT_EQ(outcome.cells.cells.size(), axis.values.size());
  for (const auto& cell : outcome.cells.cells) {
    const double expected = survival_at(file, cell.params, of_delay);
    EXPECT_EQ(cell.trials, 4000u);
    EXPECT_EQ(cell.by_cause[static_cast<std::size_t>(cause)], cell.duplicates);
    EXPECT_GT(cell.duplicates, 0u);
    EXPECT_LE(cell.duplicate_interval.low, expected)
        << cell.params.front().second << ": measured " << cell.duplicate_rate << " in [" << cell.duplicate_interval.low
        << ", " << cell.duplicate_interval.high << "], expected " << expected;
    EXPECT_GE(cell.duplicate_interval.high, expected)
        << cell.params.front().second << ": measured " << cell.duplicate_rate << " in [" << cell.duplicate_interval.low
        << ", " << cell.duplicate_interval.high << "], expected " << expected;
    // And the interval is tight enough to mean something.
    EXPECT_LT(cell.duplicate_interval.high - cell.duplicate_interval.low, 0.035);
  }
  fs::remove_all(dir);
}

TEST(SweepStatisticsSlow, TakeoverRateIsTheProcessingTimeTailAtMaxProcessingTime) {
  expect_rates_match_the_tail((kScenarios / "takeover-rate.toml").string(),
                              {"protocol.max_processing_time", {"500ms", "1s", "2s"}},
                              lethe::Cause::TakeoverWhileAlive, false);
}

TEST(SweepStatisticsSlow, ExpiryRateIsTheDelayTailAtTtlPlusProcessing) {
  expect_rates_match_the_tail((kScenarios / "ttl-rate.toml").string(), {"protocol.ttl", {"30s", "1m", "2m"}},
                              lethe::Cause::Expired, true);
}

// ---------------------------------------------------------------- --target

TEST(SweepTarget, ACellPassesOnlyWhenItsWholeIntervalIsOnTheTargetsSideAndAnUnknownFieldIsBadInput) {
  reports::CellSummary cell;
  cell.trials = 10000;
  cell.duplicates = 5;
  cell.duplicate_rate = 5e-4;
  cell.duplicate_interval = reports::wilson_interval(5, 10000);
  cell.recovery_latency.p99 = 3 * sim::kSecond;
  cell.recovery_latency.count = 100;
  std::string error;
  const auto judge = [&](const std::string& text) {
    const auto target = runner::parse_sweep_target(text, error);
    EXPECT_TRUE(target.has_value()) << error;
    return runner::judge_target(*target, cell).verdict;
  };
  EXPECT_EQ(judge("duplicate_rate<=0.01"), "pass");
  EXPECT_EQ(judge("duplicate_rate<=0.0001"), "fail");
  EXPECT_EQ(judge("duplicate_rate<=0.0006"), "undecided") << "the 95% interval [0.000214, 0.00117] contains it";
  EXPECT_EQ(judge("recovery_latency.p99<=5s"), "pass");
  EXPECT_EQ(judge("recovery_latency.p99>=5s"), "fail");
  EXPECT_EQ(judge("by_cause.expired<=0.01"), "pass");
  EXPECT_EQ(judge("by_cause.expired<=0"), "undecided") << "no duplicate in 10000 trials cannot show a rate of 0";
  cell.recovery_latency.count = 0;
  EXPECT_EQ(judge("recovery_latency.p99<=5s"), "n/a") << "a quantile of no samples";
  EXPECT_EQ(runner::judge_target(*runner::parse_sweep_target("recovery_latency.p99<=5s", error), cell).reason,
            "no recoveries")
      << "n/a says why, so a 0 is not read as a measured latency";
  EXPECT_FALSE(runner::parse_sweep_target("duplicate_ratio<=0.1", error).has_value());
  EXPECT_NE(error.find("allowed: "), std::string::npos) << error;
  EXPECT_NE(error.find("recovery_latency.p99"), std::string::npos) << error;
  EXPECT_FALSE(runner::parse_sweep_target("duplicate_rate=0.1", error).has_value());
  EXPECT_FALSE(runner::parse_sweep_target("duplicate_rate<=lots", error).has_value());
}

TEST(SweepCli, TargetPrintsAVerdictPerCellWritesTargetsJsonAndExitsOneUnlessEveryCellPasses) {
  const fs::path dir = temp_dir("target");
  const std::string scenario = (kScenarios / "small.toml").string();
  const std::string grid = " --vary protocol.max_processing_time=1s,5s --seeds 2 -j 2";
  EXPECT_EQ(run_lethe("sweep " + scenario + grid + " --target 'duplicate_rate<=1' --out " + (dir / "a").string(),
                      dir / "a.log"), 0) << read_file(dir / "a.log");
  EXPECT_NE(read_file(dir / "a.log").find("pass"), std::string::npos) << read_file(dir / "a.log");
  const auto json = nlohmann::json::parse(read_file(dir / "a/targets.json"));
  ASSERT_EQ(json.size(), 2u);
  EXPECT_EQ(json[0]["verdict"], "pass");
  EXPECT_EQ(json[0]["interval"].size(), 2u);
  EXPECT_EQ(run_lethe("sweep " + scenario + grid + " --target 'duplicate_rate<=0' --out " + (dir / "b").string(),
                      dir / "b.log"), 1) << read_file(dir / "b.log");
  EXPECT_EQ(run_lethe("sweep " + scenario + grid + " --target 'nonsense<=0' --out " + (dir / "c").string(),
                      dir / "c.log"), 2);
  EXPECT_NE(read_file(dir / "c.log").find("allowed: "), std::string::npos) << read_file(dir / "c.log");
  fs::remove_all(dir);
}

// Two axes give a heatmap; each square says whether its cell meets every target. A later sweep into the same
// folder without --target leaves no targets.json behind for the report to misread.
TEST(SweepCli, TheHeatmapMarksEachCellPassOrFailAndASweepWithoutTargetsClearsThem) {
  const fs::path dir = temp_dir("target-heatmap");
  const std::string scenario = (kScenarios / "small.toml").string();
  const std::string grid = " --vary protocol.max_processing_time=1s,5s --vary protocol.ttl=1h,1d --seeds 2 -j 2";
  const fs::path out = dir / "grid";
  EXPECT_EQ(run_lethe("sweep " + scenario + grid + " --target 'duplicate_rate<=0' --out " + out.string(),
                      dir / "a.log"), 1) << read_file(dir / "a.log");
  const auto cells = nlohmann::json::parse(read_file(out / "cells.json"));
  std::string report = read_file(out / "report.html");
  EXPECT_NE(report.find("meets every target (duplicate_rate&lt;=0)"), std::string::npos);
  const bool any_duplicate = read_file(dir / "a.log").find(" fail") != std::string::npos;
  EXPECT_EQ(report.find("FAIL") != std::string::npos, any_duplicate) << "a failed cell is marked in its square";
  EXPECT_EQ(run_lethe("sweep " + scenario + grid + " --resume --out " + out.string(), dir / "b.log"), 0)
      << read_file(dir / "b.log");
  EXPECT_FALSE(fs::exists(out / "targets.json"));
  EXPECT_EQ(read_file(out / "report.html").find("meets every target"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace sweep_test
