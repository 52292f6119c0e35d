// Every file lethe writes is checked to its end: a write that fails (a full disk: /dev/full fails every write
// with ENOSPC; a file-size limit fails it with EFBIG) is exit 2 naming the file and the OS error, and no
// verdict is printed.
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <string>
#include <vector>

#include "reports/output_file.hpp"
#include "tests/runner/support.hpp"

namespace fs = std::filesystem;

namespace output_file_test {

using test_support::read_file;

// The names of the files in `dir` that start with '.' (OutputFile's temporary files).
std::vector<std::string> temporaries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string().front() == '.') names.push_back(entry.path().filename().string());
  }
  return names;
}

using test_support::run_lethe;
using test_support::shell;

const std::string kScenario = "scenarios/check-then-insert-race.toml";
const std::string kFullDisk = "cannot write /dev/full: No space left on device";

TEST(OutputFile, AWriteToAFullDiskIsReportedByFinishWithTheFileAndTheOsError) {
  reports::OutputFile file("/dev/full");
  ASSERT_TRUE(file.is_open());
  file.stream() << std::string(200 * 1024, 'x');
  EXPECT_EQ(file.finish(), kFullDisk);
  EXPECT_EQ(reports::write_file("/dev/full", "a few bytes"), kFullDisk);  // even when they fit in the buffer
}

TEST(OutputFile, AFileThatCannotBeCreatedIsReportedWithTheOsError) {
  EXPECT_EQ(reports::write_file("/nonexistent-folder/out.txt", "x"),
            "cannot write /nonexistent-folder/out.txt: No such file or directory");
}

TEST(OutputFile, EveryByteReachesARegularFileAndAnAtomicWriteLeavesNoTemporary) {
  const fs::path dir = test_support::temp_dir("output-file", "bytes");
  std::string text;
  for (int i = 0; i < 100000; ++i) text += std::to_string(i) + "\n";  // several buffers' worth
  reports::OutputFile file(dir / "streamed.txt");
  file.stream() << text;
  EXPECT_EQ(file.finish(reports::Durability::Synced), "");
  EXPECT_EQ(read_file(dir / "streamed.txt"), text);
  EXPECT_EQ(reports::write_file_atomically(dir / "atomic.txt", text), "");
  EXPECT_EQ(read_file(dir / "atomic.txt"), text);
  EXPECT_EQ(temporaries(dir), std::vector<std::string>{});
  fs::remove_all(dir);
}

// A write that fails half-way (here: a file-size limit, EFBIG, as a full disk's ENOSPC would) leaves the file
// that was there whole, or none, and no temporary file.
TEST(OutputFile, AFailedWriteLeavesTheOldFileWholeOrNoneAndNoTemporary) {
  const fs::path dir = test_support::temp_dir("output-file", "failed");
  const std::string old_text = "the old report\n";
  ASSERT_EQ(reports::write_file(dir / "old.txt", old_text), "");
  const std::string big(1 << 20, 'x');
  const pid_t child = ::fork();
  if (child == 0) {
    const rlimit small{64 * 1024, 64 * 1024};
    ::setrlimit(RLIMIT_FSIZE, &small);
    ::signal(SIGXFSZ, SIG_IGN);
    const bool failed_old = !reports::write_file(dir / "old.txt", big).empty();
    const bool failed_new = !reports::write_file_atomically(dir / "new.txt", big).empty();
    {  // destroyed unfinished; the block ends before _exit, which runs no destructor
      reports::OutputFile abandoned(dir / "abandoned.txt");
      abandoned.stream() << "partial";
    }
    ::_exit(failed_old && failed_new ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the writes did not fail";
  EXPECT_EQ(read_file(dir / "old.txt"), old_text);
  EXPECT_FALSE(fs::exists(dir / "new.txt"));
  EXPECT_FALSE(fs::exists(dir / "abandoned.txt"));
  EXPECT_EQ(temporaries(dir), std::vector<std::string>{});
  fs::remove_all(dir);
}

class FullDisk : public ::testing::TestWithParam<std::string> {};

// "FULL.ext" in a command: a name with that extension (the options that check it) that is a link to /dev/full.
TEST_P(FullDisk, EveryWriterOptionExitsTwoNamingTheFileAndTheOsErrorAndPrintsNoVerdict) {
  std::string command = GetParam();
  std::string full_disk = kFullDisk;
  const auto placeholder = command.find("FULL.");
  const fs::path dir = test_support::temp_dir("output-file", "full-link");
  if (placeholder != std::string::npos) {
    const fs::path link = dir / command.substr(placeholder, command.find(' ', placeholder) - placeholder);
    fs::create_symlink("/dev/full", link);
    command.replace(placeholder, link.filename().string().size(), link.string());
    full_disk = "cannot write " + link.string() + ": No space left on device";
  }
  const auto outcome = run_lethe(command);
  fs::remove_all(dir);
  EXPECT_EQ(outcome.exit_code, 2) << outcome.out;
  EXPECT_NE(outcome.out.find(full_disk), std::string::npos) << outcome.out;
  EXPECT_EQ(outcome.out.find("OK"), std::string::npos) << outcome.out;      // run, replay
  EXPECT_EQ(outcome.out.find("passed"), std::string::npos) << outcome.out;  // suite
}

INSTANTIATE_TEST_SUITE_P(
    WriterOptions, FullDisk,
    ::testing::Values("run " + kScenario + " --trace /dev/full", "run " + kScenario + " --dot FULL.dot",
                      "replay " + kScenario + " --seed 1 --trace /dev/full",
                      "replay " + kScenario + " --seed 1 --dot FULL.dot",
                      "replay " + kScenario + " --seed 1 --html FULL.html",
                      "suite " + kScenario + " --seeds 2 --junit /dev/full",
                      "suite " + kScenario + " --seeds 2 --json /dev/full"));

TEST(FullDisk, AVerdictThatCannotReachStandardOutputExitsTwo) {
  const auto outcome = shell(std::string("cd ") + LETHE_SOURCE_DIR + " && (" + LETHE_BINARY_DIR + "/lethe run " +
                             kScenario + " >/dev/full)");  // stderr still reaches the test
  EXPECT_EQ(outcome.exit_code, 2) << outcome.out;
  EXPECT_NE(outcome.out.find("cannot write standard output: No space left on device"), std::string::npos)
      << outcome.out;
}

// A disk that fills up part-way: a file-size limit cuts the file where a small full disk would.
TEST(FullDisk, ATraceCutAt64KiBExitsTwoNamingTheTraceFile) {
  const fs::path dir = test_support::temp_dir("output-file", "cut-trace");
  const auto outcome = shell(std::string("cd ") + LETHE_SOURCE_DIR + " && prlimit --fsize=65536 " +
                             LETHE_BINARY_DIR + "/lethe run " + kScenario + " --trace " + (dir / "t.jsonl").string());
  EXPECT_EQ(outcome.exit_code, 2) << outcome.out;
  EXPECT_NE(outcome.out.find("cannot write " + (dir / "t.jsonl").string() + ": File too large"), std::string::npos)
      << outcome.out;
  EXPECT_EQ(outcome.out.find("OK"), std::string::npos) << outcome.out;
  fs::remove_all(dir);
}

// A sweep's three files: sweep.json and cells.json (written atomically: a temporary file renamed) and
// results.jsonl (appended).
class FullDiskSweep : public ::testing::TestWithParam<std::string> {};

TEST_P(FullDiskSweep, ASweepFileThatCannotBeWrittenExitsTwoNamingIt) {
  const fs::path dir = test_support::temp_dir("output-file", "sweep-" + GetParam().substr(0, 5));
  std::string limit;
  if (GetParam() == "results.jsonl") {
    limit = "prlimit --fsize=3000 ";  // sweep.json fits, the results do not
  } else if (GetParam() == "sweep.json") {
    limit = "prlimit --fsize=100 ";  // the first file written does not fit
  } else {
    fs::create_symlink("/dev/full", dir / GetParam());
  }
  const auto outcome = shell(std::string("cd ") + LETHE_SOURCE_DIR + " && " + limit + LETHE_BINARY_DIR +
                             "/lethe sweep tests/runner/sweep-scenarios/small.toml --vary protocol.ttl=1s,10s "
                             "--seeds 4 -j 1 --out " + dir.string());
  EXPECT_EQ(outcome.exit_code, 2) << outcome.out;
  EXPECT_NE(outcome.out.find("cannot write " + (dir / GetParam()).string() + ": "), std::string::npos)
      << outcome.out;
  EXPECT_EQ(outcome.out.find("pairs"), std::string::npos) << outcome.out;  // no table
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(SweepFiles, FullDiskSweep,
                         ::testing::Values("sweep.json", "cells.json", "results.jsonl"));

}  // namespace output_file_test
