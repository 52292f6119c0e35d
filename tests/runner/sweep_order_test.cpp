// lethe sweep's files are a function of the grid, the seeds and the command line: two uninterrupted -j 2
// sweeps, and one killed with -9 and resumed, write byte-identical results.jsonl, cells.json and cells.csv;
// report.html too, but for the "# resumed by:" line the resumed sweep's report adds to its command.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <spawn.h>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <vector>

#include "tests/runner/support.hpp"

extern char** environ;

namespace fs = std::filesystem;

namespace sweep_order_test {

const std::string kLethe = std::string(LETHE_BINARY_DIR) + "/lethe";
const std::string kScenario = std::string(LETHE_SOURCE_DIR) + "/tests/runner/sweep-scenarios/timing-1000.toml";
const std::string kGrid =
    " --vary protocol.max_processing_time=500ms,2s --vary protocol.ttl=30s,2m --seeds 12 -j 2 --out out";

// Each sweep runs in its own folder with the relative --out out, so the command lines (which the reports
// quote) are the same.
int sweep_in(const fs::path& folder, const std::string& extra = "") {
  fs::create_directories(folder);
  const std::string command =
      "cd '" + folder.string() + "' && " + kLethe + " sweep " + kScenario + kGrid + extra + " >log 2>&1";
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The report's command block with its "# resumed by: COMMAND" lines taken out (the last one ends at </pre>).
std::string without_resumed_by(std::string text) {
  const std::string note = "\n# resumed by: ";
  for (std::size_t at = text.find(note); at != std::string::npos; at = text.find(note, at)) {
    const std::size_t end = std::min(text.find('\n', at + 1), text.find("</pre>", at));
    text.erase(at, end - at);
  }
  return text;
}

TEST(SweepOrderSlow, TwoSweepsAndAKilledResumedOneWriteByteIdenticalFiles) {
  const fs::path dir = test_support::temp_dir("sweep-order", "runs");
  fs::remove_all(dir);
  ASSERT_EQ(sweep_in(dir / "first"), 0) << test_support::read_file(dir / "first/log");
  ASSERT_EQ(sweep_in(dir / "second"), 0) << test_support::read_file(dir / "second/log");

  // The third is killed once a few seeds are in its file, then resumed.
  const fs::path killed = dir / "killed";
  fs::create_directories(killed);
  std::vector<std::string> args{kLethe, "sweep", kScenario};
  std::istringstream words(kGrid);
  for (std::string word; words >> word;) args.push_back(word);
  const fs::path results = killed / "out/results.jsonl";
  const int status = test_support::kill_nine_after_lines(args, killed, results, 4);
  ASSERT_NE(status, -1) << "the sweep could not be started";
  ASSERT_TRUE(WIFSIGNALED(status)) << "the sweep finished before it could be killed";
  ASSERT_LT(test_support::count_lines(results), 48u);
  ASSERT_EQ(sweep_in(killed, " --resume"), 0) << test_support::read_file(killed / "log");

  for (const char* name : {"results.jsonl", "cells.json", "cells.csv", "report.html"}) {
    SCOPED_TRACE(name);
    const std::string first = test_support::read_file(dir / "first/out" / name);
    EXPECT_FALSE(first.empty());
    EXPECT_EQ(test_support::read_file(dir / "second/out" / name), first);
    const std::string resumed = test_support::read_file(killed / "out" / name);
    EXPECT_EQ(std::string(name) == "report.html" ? without_resumed_by(resumed) : resumed, first);
  }
  EXPECT_EQ(test_support::count_lines(dir / "first/out/results.jsonl"), 48u);
  fs::remove_all(dir);
}

}  // namespace sweep_order_test
