// The command line's small contracts: seeds in range, a near miss said once, a closed standard output, the
// default number of threads, the program's own name in the hints it prints.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sstream>
#include <sched.h>
#include <string>
#include <thread>

#include "runner/execute.hpp"
#include "sim/trace.hpp"
#include "tests/runner/support.hpp"

namespace fs = std::filesystem;

namespace command_line_test {

using namespace test_support;  // shell, run_lethe, temp_dir (tests/runner/support.hpp)

const std::string kPassing = "scenarios/lost-ack-idempotent-gateway.toml";  // seed 2: every expectation holds

TEST(Cli, SeedsOutsideZeroToTwoToTheSixtyFourMinusOneAreBadInputOnEveryCommand) {
  for (const std::string seed : {"-1", "99999999999999999999", "18446744073709551616", "+3", "1e3", ""}) {
    for (const std::string& command : {"run " + kPassing + " --seed '" + seed + "'",
                                      "replay " + kPassing + " --seed '" + seed + "'",
                                      "shrink " + kPassing + " --seed '" + seed + "'"}) {
      const Outcome o = run_lethe(command);
      EXPECT_EQ(o.exit_code, 2) << command << "\n" << o.out;
      EXPECT_NE(o.out.find("allowed: an integer 0..18446744073709551615"), std::string::npos) << command << "\n"
                                                                                                << o.out;
    }
  }
  const Outcome largest = run_lethe("run " + kPassing + " --seed 18446744073709551615 --json");
  EXPECT_LE(largest.exit_code, 1) << largest.out;
  EXPECT_NE(largest.out.find("\"seed\":18446744073709551615"), std::string::npos) << largest.out;
}

TEST(Cli, AMistypedCommandSaysOnlyItsDidYouMean) {
  const Outcome o = run_lethe("suit scenarios");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_EQ(o.out.rfind("lethe: unknown command \"suit\" (did you mean `suite`?); allowed: run, suite,", 0), 0u)
      << o.out;
  EXPECT_EQ(o.out.find("subcommand"), std::string::npos) << o.out;
  EXPECT_EQ(std::count(o.out.begin(), o.out.end(), '\n'), 1) << o.out;
}

// `lethe ... | head -1`: the reader stopped, which is no error of lethe's; the command's own status stands.
// The pipe's read end is closed before lethe starts, so every write to it fails (no race with a reader).
Outcome with_closed_stdout(const std::string& args) {
  return shell("python3 -c 'import os, subprocess, sys\n"
               "r, w = os.pipe(); os.close(r)\n"
               "p = subprocess.run(sys.argv[1:], stdout=w, stderr=subprocess.PIPE, cwd=\"" LETHE_SOURCE_DIR "\")\n"
               "sys.stdout.write(p.stderr.decode() + \"status \" + str(p.returncode) + \"\\n\")' " LETHE_BINARY_DIR
               "/lethe " + args);
}

TEST(Cli, AClosedStandardOutputEndsQuietlyWithTheCommandsOwnStatus) {
  const Outcome passing = with_closed_stdout("run " + kPassing + " --seed 2");
  EXPECT_EQ(passing.out, "status 0\n");
  const Outcome failing = with_closed_stdout("run scenarios/lost-ack-double-charge.toml --seed 2 --set "
                                             "'expect.duplicate_effects=== 0'");
  EXPECT_EQ(failing.out, "status 1\n") << "an expectation that failed still says so";
  const Outcome help = with_closed_stdout("suite --help");
  EXPECT_EQ(help.out, "status 0\n");
}

TEST(Cli, HintsNameTheProgramThatPrintedThem) {
  const fs::path dir = temp_dir("cli-program-name", "link");
  fs::create_symlink(fs::path(LETHE_BINARY_DIR) / "lethe", dir / "my-lethe");
  const Outcome o = shell(std::string("cd ") + LETHE_SOURCE_DIR + " && " + (dir / "my-lethe").string() + " run " +
                          kPassing + " --seed 2");
  EXPECT_EQ(o.exit_code, 0) << o.out;
  EXPECT_NE(o.out.find("replay: my-lethe replay " + kPassing + " --seed 2"), std::string::npos) << o.out;
  const Outcome suite = shell(std::string("cd ") + LETHE_SOURCE_DIR + " && " + (dir / "my-lethe").string() +
                              " suite scenarios/lost-ack-double-charge.toml --seeds 1 --set "
                              "'expect.duplicate_effects=== 0'");
  EXPECT_EQ(suite.exit_code, 1) << suite.out;
  EXPECT_NE(suite.out.find("replay: my-lethe replay scenarios/lost-ack-double-charge.toml --seed 1"),
            std::string::npos)
      << suite.out;
  fs::remove_all(dir);
}

// `suite --json` alone is `run --json` for every seed: JSON lines on stdout, the table on stderr; `--json -j 2`
// is JSON on stdout with two threads (the 2 is not a file name).
TEST(Cli, SuiteJsonAloneIsRunJsonForEverySeedOnStdout) {
  const std::string suite = std::string("cd ") + LETHE_SOURCE_DIR + " && " + LETHE_BINARY_DIR + "/lethe suite " +
                            kPassing + " --seeds 3 --json -j 2";
  const Outcome out = shell("(" + suite + " 2>/dev/null)");
  EXPECT_EQ(out.exit_code, 0) << out.out;
  std::istringstream lines(out.out);
  std::string line;
  std::uint64_t seed = 0;
  while (std::getline(lines, line)) {
    const auto json = nlohmann::json::parse(line);  // every stdout line is one result
    EXPECT_EQ(json.at("seed").get<std::uint64_t>(), ++seed);
  }
  EXPECT_EQ(seed, 3u) << out.out;
  const Outcome err = shell("(" + suite + " >/dev/null)");
  EXPECT_NE(err.out.find("lost-ack-idempotent-gateway"), std::string::npos) << "the table on stderr: " << err.out;
  EXPECT_FALSE(fs::exists(fs::path(LETHE_SOURCE_DIR) / "2"));
}

// `suite --fingerprint`, what scripts/baseline compares: each line's digest is the FNV-1a of what `replay
// --explain` prints for that seed and its JSON is `run --json`'s, so one suite run stands for both commands.
TEST(Cli, SuiteFingerprintLinesAreReplayExplainDigestsAndRunJsonOfEverySeed) {
  const fs::path dir = temp_dir("fingerprint", "lines");
  const std::string file = "scenarios/lost-ack-double-charge.toml";  // duplicates on every seed
  const Outcome suite = run_lethe("suite " + file + " --seeds 2 --fingerprint " + (dir / "f.txt").string());
  ASSERT_TRUE(fs::exists(dir / "f.txt")) << suite.out;
  std::istringstream lines(read_file(dir / "f.txt"));
  std::string line;
  std::uint64_t seed = 0;
  while (std::getline(lines, line)) {
    ++seed;
    const std::string head = file + " seed=" + std::to_string(seed) + " explain=";
    ASSERT_EQ(line.substr(0, head.size()), head) << line;
    const std::string digest = line.substr(head.size(), 16);
    const std::string cd = std::string("cd ") + LETHE_SOURCE_DIR + " && " + LETHE_BINARY_DIR + "/lethe ";
    const std::string args = file + " --seed " + std::to_string(seed);
    const Outcome explained = shell("(" + cd + "replay " + args + " --explain 2>/dev/null)");
    EXPECT_NE(explained.out.find("why each duplicate happened"), std::string::npos) << explained.out;
    EXPECT_EQ(digest, fmt::format("{:016x}", sim::TraceKind::fnv1a(explained.out))) << line;
    const Outcome json = shell("(" + cd + "run " + args + " --json 2>/dev/null)");
    EXPECT_EQ(line.substr(head.size() + 17), json.out.substr(0, json.out.size() - 1)) << "seed " << seed;
  }
  EXPECT_EQ(seed, 2u);
  fs::remove_all(dir);
}

TEST(DefaultJobs, IsTheNumberOfCpusThisThreadMayRunOn) {
  cpu_set_t all;
  ASSERT_EQ(::sched_getaffinity(0, sizeof(all), &all), 0);
  if (CPU_COUNT(&all) < 2) GTEST_SKIP() << "one CPU: pinning to one changes nothing";
  EXPECT_EQ(runner::default_jobs(), static_cast<unsigned>(CPU_COUNT(&all)));
  int first = 0;
  while (!CPU_ISSET(first, &all)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(::sched_setaffinity(0, sizeof(one), &one), 0);
  const unsigned pinned = runner::default_jobs();
  ASSERT_EQ(::sched_setaffinity(0, sizeof(all), &all), 0);
  EXPECT_EQ(pinned, 1u) << "taskset -c 0 lethe suite ... runs one thread";
}

}  // namespace command_line_test
