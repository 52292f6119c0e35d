// The lethe executable as a user and a CI pipeline see it: exit codes, messages, JUnit, replay.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <sys/wait.h>

#include "tests/runner/support.hpp"

namespace fs = std::filesystem;

namespace cli_test {

using namespace test_support;  // shell, run_lethe, read_file, load_config (tests/runner/support.hpp)
fs::path temp_dir(const std::string& name) { return test_support::temp_dir("cli-test", name); }

std::string first_line(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

TEST(Cli, EveryBrokenScenarioExitsTwoWithItsPositionedMessage) {
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(LETHE_SOURCE_DIR) / "tests/runner/broken")) {
    if (entry.path().extension() != ".toml") continue;
    const std::string header = first_line(entry.path());
    ASSERT_EQ(header.rfind("# expect: ", 0), 0u) << entry.path();
    const std::string expected = header.substr(10);
    const std::string relative = "tests/runner/broken/" + entry.path().filename().string();
    const Outcome o = run_lethe("run " + relative);
    EXPECT_EQ(o.exit_code, 2) << relative << "\n" << o.out;
    EXPECT_NE(o.out.find(relative + ":"), std::string::npos) << "the message names the file: " << o.out;
    EXPECT_NE(o.out.find(expected), std::string::npos) << relative << ": " << o.out;
    ++checked;
  }
  EXPECT_GE(checked, 45);
}

TEST(Cli, BadUsageExitsTwoAndHelpExitsZeroOnEveryCommand) {
  EXPECT_EQ(run_lethe("").exit_code, 2);
  EXPECT_EQ(run_lethe("frobnicate").exit_code, 2);
  EXPECT_EQ(run_lethe("run").exit_code, 2);
  EXPECT_EQ(run_lethe("run scenarios/no-such-file.toml").exit_code, 2);
  EXPECT_EQ(run_lethe("run scenarios/lost-ack-double-charge.toml --seed notanumber").exit_code, 2);
  EXPECT_EQ(run_lethe("replay scenarios/lost-ack-double-charge.toml").exit_code, 2) << "replay needs --seed";
  for (const char* command : {"--help", "run --help", "suite --help", "replay --help"}) {
    const Outcome o = run_lethe(command);
    EXPECT_EQ(o.exit_code, 0) << command;
    EXPECT_NE(o.out.find("Usage"), std::string::npos) << command << ": " << o.out;
  }
}

TEST(Cli, ASetOverrideIsValidatedLikeTheFile) {
  const Outcome o = run_lethe("run scenarios/lost-ack-double-charge.toml --set network.loss=1.5");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.out.find("network.loss"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("--set"), std::string::npos) << o.out;
}

TEST(Cli, RunExitsZeroWhenExpectationsHoldAndOneWhenOneFails) {
  const Outcome ok = run_lethe("run scenarios/lost-ack-idempotent-gateway.toml --seed 2");
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
  EXPECT_NE(ok.out.find("duplicate effects 0"), std::string::npos) << ok.out;
  EXPECT_NE(ok.out.find("lethe replay scenarios/lost-ack-idempotent-gateway.toml --seed 2"), std::string::npos);
  // The same run with an expectation that cannot hold.
  const Outcome failed =
      run_lethe("run scenarios/lost-ack-double-charge.toml --seed 2 --set 'expect.duplicate_effects=== 0'");
  EXPECT_EQ(failed.exit_code, 1) << failed.out;
  EXPECT_NE(failed.out.find("FAIL duplicate_effects == 0"), std::string::npos) << failed.out;
}

TEST(Cli, JsonHasTheContractFieldsAndDuplicatesSumToTheTotal) {
  const Outcome o = run_lethe("run scenarios/herd-takeover-if-not-exists.toml --seed 3 --json");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  const auto j = nlohmann::json::parse(o.out);
  for (const char* field : {"scenario", "seed", "trace_hash", "sim_time", "messages", "deliveries", "effects",
                            "duplicate_effects", "duplicates", "lost_messages", "memo_mismatches", "waits",
                            "wait_time", "sink_calls", "calls_per_success", "recovery_latency", "linearizable",
                            "expectations", "ok"}) {
    EXPECT_TRUE(j.contains(field)) << field;
  }
  std::uint64_t sum = 0;
  for (const char* cause : {"unprotected", "takeover_while_alive", "herd_takeover", "crash_after_effect", "expired",
                            "sink_retry"}) {
    ASSERT_TRUE(j["duplicates"].contains(cause)) << cause;
    sum += j["duplicates"][cause].get<std::uint64_t>();
  }
  EXPECT_EQ(sum, j["duplicate_effects"].get<std::uint64_t>());
  EXPECT_GT(j["duplicates"]["herd_takeover"].get<std::uint64_t>(), 0u);
  for (const char* q : {"p50", "p99", "max"}) EXPECT_TRUE(j["wait_time"].contains(q)) << q;
}

TEST(Cli, ReplayOfASuiteSeedReproducesItsTraceHash) {
  const fs::path dir = temp_dir("replay");
  const Outcome suite = run_lethe("suite scenarios/crash-window-after-effect.toml scenarios/webhook-dedupe-inbox.toml "
                              "--seeds 3 -j 2 --json " + (dir / "results.jsonl").string() +
                              " --junit " + (dir / "junit.xml").string());
  ASSERT_EQ(suite.exit_code, 0) << suite.out;
  std::ifstream in(dir / "results.jsonl");
  std::string line;
  int replayed = 0;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    const std::string file = j["scenario"] == "crash-window-after-effect" ? "scenarios/crash-window-after-effect.toml"
                                                                          : "scenarios/webhook-dedupe-inbox.toml";
    const Outcome replay = run_lethe("replay " + file + " --seed " + std::to_string(j["seed"].get<int>()));
    EXPECT_EQ(replay.exit_code, 0) << replay.out;
    EXPECT_NE(replay.out.find("trace " + j["trace_hash"].get<std::string>()), std::string::npos)
        << "suite hash " << j["trace_hash"] << " not reproduced by replay:\n" << replay.out;
    ++replayed;
  }
  EXPECT_EQ(replayed, 6);
  // JUnit: one testcase per scenario and seed, in suites per scenario, no failures.
  std::ifstream junit_file(dir / "junit.xml");
  std::stringstream junit;
  junit << junit_file.rdbuf();
  const std::string xml = junit.str();
  const std::regex testcase("<testcase ");
  EXPECT_EQ(std::distance(std::sregex_iterator(xml.begin(), xml.end(), testcase), std::sregex_iterator()), 6);
  EXPECT_NE(xml.find("<testsuites name=\"lethe\" tests=\"6\" failures=\"0\" errors=\"0\""), std::string::npos) << xml;
  fs::remove_all(dir);
}

TEST(Cli, SuiteReportsEachFailingSeedWithItsReplayCommandAndJunitFailure) {
  const fs::path dir = temp_dir("fail");
  const Outcome o = run_lethe("suite scenarios/crash-window-after-effect.toml --seeds 2 --set 'expect.effects=< 0' "
                          "--junit " + (dir / "junit.xml").string());
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_NE(o.out.find("FAIL crash-window-after-effect seed 1"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("lethe replay scenarios/crash-window-after-effect.toml --seed 2"), std::string::npos) << o.out;
  std::ifstream junit_file(dir / "junit.xml");
  std::stringstream junit;
  junit << junit_file.rdbuf();
  EXPECT_NE(junit.str().find("<failure message=\"effects &lt; 0"), std::string::npos) << junit.str();
  fs::remove_all(dir);
}

TEST(Cli, AFailedExpectationOnATimeFieldReadsInUnitsInTheRunAndTheSuite) {
  const std::string sets = " --set 'expect.sim_time=< 1500us' --set 'expect.effects=< 0'";
  const std::regex time_line(R"(sim_time < 1\.5ms \(got [0-9.]+(ms|s|m)\))");
  const std::regex count_line(R"(effects < 0 \(got [0-9]+\))");
  const Outcome run = run_lethe("run scenarios/crash-window-after-effect.toml --seed 1" + sets);
  const Outcome suite = run_lethe("suite scenarios/crash-window-after-effect.toml --seeds 1" + sets);
  for (const Outcome& o : {run, suite}) {
    EXPECT_EQ(o.exit_code, 1) << o.out;
    EXPECT_TRUE(std::regex_search(o.out, time_line)) << o.out;
    EXPECT_TRUE(std::regex_search(o.out, count_line)) << o.out;
    EXPECT_EQ(o.out.find("1500000"), std::string::npos) << o.out;
  }
}

TEST(Cli, ReplayExplainsEveryDuplicateAndWritesATimeline) {
  const fs::path dir = temp_dir("explain");
  const Outcome o = run_lethe("replay scenarios/crash-window-after-effect.toml --seed 1 --explain --dot " +
                          (dir / "timeline.dot").string());
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_NE(o.out.find("why each duplicate happened"), std::string::npos);
  EXPECT_NE(o.out.find("[crash_after_effect]"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("died at"), std::string::npos) << o.out;
  std::ifstream dot(dir / "timeline.dot");
  std::stringstream text;
  text << dot.rdbuf();
  EXPECT_NE(text.str().find("digraph"), std::string::npos);
  EXPECT_NE(text.str().find("subgraph cluster_"), std::string::npos) << "a lane per node";
  fs::remove_all(dir);
}

TEST(Cli, ReplayMessagePrintsThatMessagesTrace) {
  const Outcome o = run_lethe("replay scenarios/check-then-insert-race.toml --seed 1 --message 7");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_NE(o.out.find("story of message 7"), std::string::npos);
  EXPECT_NE(o.out.find("attempt"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("the provider executed the effect"), std::string::npos) << o.out;
}

// The lethe binary's allocator works on 2 MiB pages (docs/dependencies.md); fiber stacks come from the
// kernel's own pool (sim/simulation.cpp) and must stay lazily committed: a parked consumer keeps only the stack
// pages it touched. When stacks came from that allocator, every 64 KiB stack was committed whole (100,000
// consumers: 6.6 GB); 20,000 would be over 1.3 GB.
TEST(CliBench, TwentyThousandConsumersKeepOnlyTheStackPagesTheyTouch) {
  const Outcome o = run_lethe("bench scenarios/bench/consumers-100k.toml --set topology.consumers=20000 "
                          "--set workload.messages=2000");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_NE(o.out.find(" effects=2000 "), std::string::npos) << o.out;
  std::smatch match;
  ASSERT_TRUE(std::regex_search(o.out, match, std::regex("peak_rss_kb=([0-9]+)"))) << o.out;
  const long peak_kb = std::stol(match[1].str());
  EXPECT_LT(peak_kb, 20000L * 32) << "more than 32 KiB per consumer: are fiber stacks committed whole?";
}

TEST(CliBench, AHundredThousandIdleQueueConsumersHoldNoStackEach) {
  const Outcome o = run_lethe("bench scenarios/bench/consumers-100k.toml --set workload.messages=1000");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_NE(o.out.find(" effects=1000 "), std::string::npos) << o.out;
  std::smatch match;
  ASSERT_TRUE(std::regex_search(o.out, match, std::regex("peak_rss_kb=([0-9]+)"))) << o.out;
  const long peak_kb = std::stol(match[1].str());
  // A parked fiber keeps at least the 4 KiB page its frames touched: 100,000 of them alone would be 400 MB.
  EXPECT_LT(peak_kb, 100000L * 4) << "an idle consumer holds a stack";
}

}  // namespace cli_test
