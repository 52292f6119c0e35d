// The readable text: a suite table that says what each scenario shows and its duplicates by cause, and a run
// summary that names only the fault points the run armed when they never fired.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "reports/summary.hpp"

namespace summary_test {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string row_of(const std::string& table, const std::string& scenario) {
  for (const auto& line : lines_of(table)) {
    if (line.rfind(scenario + " ", 0) == 0) return line;
  }
  return "";
}

std::uint64_t& cause(reports::SuiteRow& row, lethe::Cause c) { return row.causes[static_cast<std::size_t>(c)]; }

reports::SuiteRow row(const std::string& scenario, const std::string& shows, std::uint64_t duplicates) {
  reports::SuiteRow r;
  r.scenario = scenario;
  r.shows = shows;
  r.seeds = 5;
  r.passed = 5;
  r.messages = 2000;
  r.effects = 2000 + duplicates;
  r.duplicates = duplicates;
  return r;
}

TEST(SuiteTable, EachRowSaysWhatItsScenarioShowsAndItsDuplicatesByCauseSummedOverSeeds) {
  reports::SuiteRow failure = row("crash-window-after-effect", "failure", 17);
  cause(failure, lethe::Cause::CrashAfterEffect) = 14;
  cause(failure, lethe::Cause::Expired) = 3;
  const reports::SuiteRow fix = row("check-then-insert-vs-mnemosyne", "fix", 0);
  const std::string table = reports::suite_table({failure, fix});
  const auto header = lines_of(table).front();
  EXPECT_NE(header.find("shows"), std::string::npos) << table;
  EXPECT_NE(header.find("duplicates by cause"), std::string::npos) << table;
  const std::string failing = row_of(table, "crash-window-after-effect");
  EXPECT_NE(failing.find(" failure "), std::string::npos) << table;
  EXPECT_TRUE(failing.ends_with("  crash_after_effect 14, expired 3")) << table;
  const std::string fixing = row_of(table, "check-then-insert-vs-mnemosyne");
  EXPECT_NE(fixing.find(" fix "), std::string::npos) << table;
  EXPECT_TRUE(fixing.ends_with(" ok")) << "no cause, no trailing text: " << table;
  // The columns line up: the causes start where the header's last column does.
  EXPECT_EQ(failing.find("crash_after_effect"), header.find("duplicates by cause")) << table;
}

TEST(SuiteTable, ManyCausesWrapUnderTheirColumnWithinTheTableWidth) {
  reports::SuiteRow r = row("kafka-gc-pause-evicted-mpt-too-low", "failure", 0);
  for (std::size_t c = 0; c < lethe::kCauseCount; ++c) {
    r.causes[c] = 1000 + c;
    r.duplicates += r.causes[c];
  }
  const std::string table = reports::suite_table({r});
  const auto lines = lines_of(table);
  const std::size_t column = lines.front().find("duplicates by cause");
  std::string causes;
  std::size_t continued = 0;
  for (std::size_t i = 1; i + 1 < lines.size(); ++i) {
    EXPECT_LE(lines[i].size(), reports::kSuiteTableWidth) << table;
    if (i > 1) {
      EXPECT_EQ(lines[i].find_first_not_of(' '), column) << table;
      ++continued;
    }
    causes += lines[i].substr(column) + (i + 2 < lines.size() ? " " : "");
  }
  EXPECT_GE(continued, 2u) << table;
  for (std::size_t c = 0; c < lethe::kCauseCount; ++c) {
    const std::string part = std::string(lethe::kCauseNames[c]) + " " + std::to_string(1000 + c);
    EXPECT_NE(causes.find(part), std::string::npos) << part << " in " << table;
  }
}

lethe::RunResult with_crash_points() {
  lethe::RunResult r;
  r.scenario = "s";
  for (const char* point : {"after_start_before_effect", "after_effect_before_complete", "after_complete_before_ack"}) {
    r.coverage[std::string("crash_point.") + point + ".reached"] = 40;
    r.coverage[std::string("crash_point.") + point + ".fired"] = 0;
  }
  return r;
}

TEST(RunSummary, NamesOnlyTheArmedFaultPointsThatNeverFired) {
  lethe::RunResult r = with_crash_points();
  r.armed_fault_points = {"crash_point.after_effect_before_complete.fired"};
  const std::string text = reports::run_summary(r);
  EXPECT_NE(text.find("  fault points that never fired: crash_point.after_effect_before_complete.fired\n"),
            std::string::npos)
      << text;
  r.coverage["crash_point.after_effect_before_complete.fired"] = 3;
  EXPECT_EQ(reports::run_summary(r).find("never fired"), std::string::npos) << reports::run_summary(r);
}

TEST(RunSummary, FaultPointsTheScenarioNeverArmedAreNotListedAsNeverFired) {
  const std::string text = reports::run_summary(with_crash_points());
  EXPECT_EQ(text.find("never fired"), std::string::npos) << text;
}

}  // namespace summary_test
