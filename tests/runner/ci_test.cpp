// lethe in a CI pipeline: output paths checked before any seed runs, a broken scenario file reported in the
// JUnit XML while the others still run, progress lines without a terminal, help on every command and
// suggestions for mistyped commands and options.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "runner/output_path.hpp"
#include "runner/progress.hpp"
#include "tests/runner/support.hpp"

namespace fs = std::filesystem;

namespace ci_test {

using namespace test_support;  // shell, run_lethe, read_file (tests/runner/support.hpp)
fs::path temp_dir(const std::string& name) { return test_support::temp_dir("ci-test", name); }

std::size_t count(const std::string& text, const std::string& pattern) {
  const std::regex re(pattern);
  return static_cast<std::size_t>(std::distance(std::sregex_iterator(text.begin(), text.end(), re),
                                                std::sregex_iterator()));
}

TEST(CiSuite, MissingOutputFoldersAreCreatedAndTheResultsReachThem) {
  const fs::path dir = temp_dir("missing-folder");
  const fs::path junit = dir / "not" / "yet" / "junit.xml";
  const fs::path json = dir / "other" / "results.jsonl";
  const Outcome o = run_lethe("suite scenarios/lost-ack-double-charge.toml --seeds 2 --junit " + junit.string() +
                              " --json " + json.string());
  ASSERT_EQ(o.exit_code, 0) << o.out;
  ASSERT_TRUE(fs::exists(junit)) << o.out;
  EXPECT_NE(read_file(junit).find("<testsuites name=\"lethe\" tests=\"2\" failures=\"0\" errors=\"0\""),
            std::string::npos) << read_file(junit);
  EXPECT_EQ(count(read_file(json), "\n"), 2u) << read_file(json);
  fs::remove_all(dir);
}

// A suite stopped by SIGINT before its end writes no report: the previous run's files must not pass for its.
TEST(CiSuite, ASuiteInterruptedBeforeItsEndLeavesNoReportOfAnEarlierRun) {
  const fs::path dir = temp_dir("interrupted");
  const fs::path junit = dir / "junit.xml";
  const fs::path json = dir / "results.jsonl";
  std::ofstream(junit) << "<testsuites name=\"lethe\" tests=\"2\" failures=\"0\" errors=\"0\"/>\n";
  std::ofstream(json) << "{}\n";
  const Outcome o = shell(std::string("cd ") + LETHE_SOURCE_DIR + " && timeout -s INT 3 " + LETHE_BINARY_DIR +
                          "/lethe suite scenarios/lost-ack-double-charge.toml --seeds 1000000 --junit " +
                          junit.string() + " --json " + json.string());
  EXPECT_NE(o.exit_code, 0) << o.out;
  EXPECT_FALSE(fs::exists(junit)) << o.out;
  EXPECT_FALSE(fs::exists(json)) << o.out;
  fs::remove_all(dir);
}

TEST(CiSuite, AnOutputPathThatCannotBeWrittenStopsTheSuiteBeforeTheFirstSeed) {
  const fs::path dir = temp_dir("unwritable");
  std::ofstream(dir / "a-file") << "in the way\n";
  // A folder that cannot be created (a file stands where it would go), and an output path that is a folder.
  for (const std::string& flags : {"--junit " + (dir / "a-file" / "junit.xml").string(), "--json " + dir.string()}) {
    const Outcome o = run_lethe("suite scenarios/lost-ack-double-charge.toml --seeds 2 " + flags);
    EXPECT_EQ(o.exit_code, 2) << flags << "\n" << o.out;
    EXPECT_NE(o.out.find("lethe suite: " + flags.substr(0, flags.find(' ') + 1)), std::string::npos) << o.out;
    EXPECT_EQ(o.out.find("seeds:"), std::string::npos) << "no seed may run before the paths are checked:\n" << o.out;
  }
  fs::remove_all(dir);
}

TEST(OutputPath, TheCheckLeavesAnExistingFileAsItWasAndNoNewFileBehind) {
  const fs::path dir = temp_dir("existing");
  std::ofstream(dir / "results.jsonl") << "an earlier run\n";
  EXPECT_EQ(runner::prepare_output_path(dir / "results.jsonl", "--json"), "");
  EXPECT_EQ(read_file(dir / "results.jsonl"), "an earlier run\n");
  EXPECT_EQ(runner::prepare_output_path(dir / "new" / "junit.xml", "--junit"), "");
  EXPECT_TRUE(fs::is_directory(dir / "new"));
  EXPECT_FALSE(fs::exists(dir / "new" / "junit.xml")) << "the check creates the folder, not the file";
  EXPECT_EQ(runner::prepare_output_path(dir, "--json"), "--json " + dir.string() + ": is a folder; allowed: a file path");
  fs::remove_all(dir);
}

TEST(CiSuite, ABrokenFileAmongGoodOnesIsAJunitErrorCaseWhileTheOthersStillRunAndExitsTwo) {
  const fs::path dir = temp_dir("broken-among-good");
  const fs::path source(LETHE_SOURCE_DIR);
  fs::copy_file(source / "scenarios/lost-ack-double-charge.toml", dir / "a-good.toml");
  fs::copy_file(source / "tests/runner/broken/ack_loss_negative.toml", dir / "b-broken.toml");
  fs::copy_file(source / "scenarios/crash-window-after-effect.toml", dir / "c-good.toml");
  const fs::path junit = dir / "out" / "junit.xml";
  const Outcome o = run_lethe("suite " + dir.string() + " --seeds 2 --junit " + junit.string());
  EXPECT_EQ(o.exit_code, 2) << o.out;
  EXPECT_NE(o.out.find("b-broken.toml:"), std::string::npos) << "the loader's message, positioned:\n" << o.out;
  EXPECT_NE(o.out.find("lost-ack-double-charge"), std::string::npos) << "the good files still ran:\n" << o.out;
  EXPECT_NE(o.out.find("crash-window-after-effect"), std::string::npos) << o.out;
  ASSERT_TRUE(fs::exists(junit)) << o.out;
  const std::string xml = read_file(junit);
  EXPECT_NE(xml.find("<testsuites name=\"lethe\" tests=\"5\" failures=\"0\" errors=\"1\""), std::string::npos) << xml;
  EXPECT_EQ(count(xml, "<testcase [^>]*name=\"load\" file=\"[^\"]*b-broken\\.toml\""), 1u) << xml;
  EXPECT_EQ(count(xml, "<error type=\"load\" message=\"[^\"]*b-broken\\.toml:"), 1u) << xml;
  EXPECT_EQ(count(xml, "name=\"seed [12]\""), 4u) << xml;
  fs::remove_all(dir);
}

TEST(CiSuite, WithoutATerminalProgressIsALineOnStandardErrorEveryInterval) {
  const fs::path dir = temp_dir("progress");
  // Standard error is a file here, not a terminal; the interval is shortened so a short suite shows lines.
  const Outcome o = shell(std::string("cd ") + LETHE_SOURCE_DIR + " && (LETHE_PROGRESS_INTERVAL=20ms " +
                          LETHE_BINARY_DIR + "/lethe suite scenarios/crash-window-after-effect.toml "
                          "scenarios/lost-ack-double-charge.toml --seeds 40 -j 1 --set 'expect.effects=< 0' 2>" +
                          (dir / "stderr.txt").string() + " >" + (dir / "stdout.txt").string() + ")");
  EXPECT_EQ(o.exit_code, 1) << o.out;
  const std::string err = read_file(dir / "stderr.txt");
  const std::string line = R"(lethe suite: \d+/80 seeds, \d+ failed, [0-9.]+(ns|us|ms|s|m) elapsed, )"
                           R"((about [0-9.]+(ns|us|ms|s|m) left|no estimate yet|done)(, running [a-z-]+ seed \d+)?\n)";
  EXPECT_GE(count(err, line), 2u) << "at least one line while running and one at the end:\n" << err;
  EXPECT_EQ(count(err, "lethe suite: 80/80 seeds, 80 failed, [^\n]*, done\n$"), 1u) << "the last line: " << err;
  EXPECT_EQ(err.find('\r'), std::string::npos) << "no terminal rewriting in a log: " << err;
  EXPECT_EQ(read_file(dir / "stdout.txt").find("lethe suite:"), std::string::npos) << "progress stays off stdout";
  fs::remove_all(dir);
}

TEST(CiSuite, AProgressIntervalThatIsNotADurationIsBadInput) {
  const Outcome o = shell(std::string("cd ") + LETHE_SOURCE_DIR + " && LETHE_PROGRESS_INTERVAL=soon " +
                          LETHE_BINARY_DIR + "/lethe suite scenarios/lost-ack-double-charge.toml --seeds 1");
  EXPECT_EQ(o.exit_code, 2) << o.out;
  EXPECT_NE(o.out.find("LETHE_PROGRESS_INTERVAL: found \"soon\"; allowed: a positive duration"), std::string::npos)
      << o.out;
}

TEST(Progress, TheLineSaysSeedsDoneFailuresElapsedAndAnEstimateProportionalToWhatIsLeft) {
  using std::chrono::seconds;
  EXPECT_EQ(runner::Progress::line("lethe suite", 30, 120, 2, seconds(10)),
            "lethe suite: 30/120 seeds, 2 failed, 10s elapsed, about 30s left");
  EXPECT_EQ(runner::Progress::line("lethe sweep", 0, 10, 0, seconds(10)),
            "lethe sweep: 0/10 seeds, 0 failed, 10s elapsed, no estimate yet");
  EXPECT_EQ(runner::Progress::line("lethe suite", 10, 10, 0, seconds(3)),
            "lethe suite: 10/10 seeds, 0 failed, 3s elapsed, done");
  // Two significant digits in the unit written: 250 s left is 4.2m, not 4.167m.
  EXPECT_EQ(runner::Progress::line("lethe suite", 10, 60, 0, seconds(50)),
            "lethe suite: 10/60 seeds, 0 failed, 50s elapsed, about 4.2m left");
}

TEST(Progress, WithoutATerminalNothingIsPrintedBeforeTheFirstIntervalAndAShortBatchStillEndsWithItsFinalLine) {
  std::ostringstream out;
  {
    runner::Progress progress("lethe suite", 3, out, runner::ProgressMode::Lines, std::chrono::hours(1));
    progress.seed_started("a seed 1");
    progress.seed_done(false);
    progress.seed_done(true);
    progress.seed_done(false);
  }
  EXPECT_TRUE(std::regex_match(out.str(), std::regex(R"(lethe suite: 3/3 seeds, 1 failed, [0-9.]+(ns|us|ms|s) elapsed, done\n)")))
      << out.str();
}

TEST(Progress, OnATerminalOneLineIsRewrittenAfterEverySeedWithElapsedTimeAnEstimateAndWhatRuns) {
  std::ostringstream out;
  {
    runner::Progress progress("lethe suite", 2, out, runner::ProgressMode::Terminal, std::chrono::hours(1));
    progress.seed_started("gc-pause-takeover seed 1");
    progress.seed_done(true);
    progress.seed_started("gc-pause-takeover seed 2");
    progress.seed_done(false);
  }
  const std::string time = R"([0-9.]+(ns|us|ms|s))";
  const std::regex shown(R"(\r0/2 seeds, 0 failed, )" + time + R"( elapsed, no estimate yet, running gc-pause-takeover seed 1 *)"
                         R"(\r1/2 seeds, 1 failed, )" + time + R"( elapsed, about )" + time + R"( left, running gc-pause-takeover seed 1 *)"
                         R"(\r1/2 seeds, 1 failed, )" + time + R"( elapsed, about )" + time + R"( left, running gc-pause-takeover seed 2 *)"
                         R"((\r2/2 seeds, 1 failed, )" + time + R"( elapsed, done *)+\n)");
  EXPECT_TRUE(std::regex_match(out.str(), shown)) << out.str();
}

// The subcommands `lethe --help` lists (the lines under "Subcommands:").
std::vector<std::string> listed_subcommands() {
  const Outcome o = run_lethe("--help");
  std::vector<std::string> names;
  std::istringstream in(o.out);
  std::string line;
  bool listing = false;
  while (std::getline(in, line)) {
    if (line.rfind("Subcommands:", 0) == 0) {
      listing = true;
      continue;
    }
    std::smatch m;
    if (listing && std::regex_search(line, m, std::regex(R"(^  ([a-z]+)\s)"))) names.push_back(m[1]);
  }
  return names;
}

TEST(Cli, EverySubcommandListedByHelpHasItsOwnHelpThatExitsZero) {
  const auto names = listed_subcommands();
  EXPECT_GE(names.size(), 10u);
  for (const auto& name : names) {
    const Outcome o = run_lethe(name + " --help");
    EXPECT_EQ(o.exit_code, 0) << name << ": " << o.out;
    EXPECT_NE(o.out.find("Usage: "), std::string::npos) << name << ": " << o.out;
    EXPECT_NE(o.out.find(" " + name), std::string::npos) << name << ": " << o.out;
    EXPECT_NE(o.out.find("Options:"), std::string::npos) << name << ": " << o.out;
  }
}

TEST(Cli, AMistypedCommandOrOptionExitsTwoAndSuggestsTheNearestName) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"suit scenarios", "lethe: unknown command \"suit\" (did you mean `suite`?)"},
      {"replya scenarios/lost-ack-double-charge.toml --seed 1", "(did you mean `replay`?)"},
      {"suite scenarios/lost-ack-double-charge.toml --junt x.xml", "lethe suite: unknown option --junt (did you mean `--junit`?)"},
      {"run --sed 3 scenarios/lost-ack-double-charge.toml", "lethe run: unknown option --sed (did you mean `--seed`?)"},
      {"tune --sample x.txt --out y", "lethe tune: unknown option --sample (did you mean `--samples`?)"},
      {"frobnicate", "lethe: unknown command \"frobnicate\"; allowed: run, suite, replay"},
  };
  for (const auto& [args, expected] : cases) {
    const Outcome o = run_lethe(args);
    EXPECT_EQ(o.exit_code, 2) << args << "\n" << o.out;
    EXPECT_NE(o.out.find(expected), std::string::npos) << args << "\n" << o.out;
  }
}

}  // namespace ci_test
