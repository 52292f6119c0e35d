// The readable text. Expectation lines read in units: a time field's wanted value and the value got are
// durations ("2s", "1.205s"), never raw nanoseconds; a count stays an integer, whatever its size (the field's kind
// decides, in the run summary, the JUnit failure message and every text built by reports::expectation_text). A
// suite table says what each scenario shows and its duplicates by cause; a run summary names only the fault points
// the run armed when they never fired.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "reports/junit.hpp"
#include "reports/summary.hpp"

namespace summary_test {

lethe::ExpectationResult expectation(const std::string& key, const std::string& op, const std::string& want,
                                     double threshold, double got) {
  lethe::ExpectationResult x;
  x.key = key;
  x.op = op;
  x.want = want;  // as runner/execute.cpp writes it: the number, in nanoseconds for a time field
  x.threshold = threshold;
  x.got = got;
  x.ok = false;
  return x;
}

// A run whose wait_time.p99 of 1.205s held against 2s and whose duplicate_effects of 1205006652 (as large as a
// time in nanoseconds) failed against 0.
lethe::RunResult run() {
  lethe::RunResult r;
  r.scenario = "units";
  auto waits = expectation("wait_time.p99", "<=", "2000000000", 2e9, 1205006652);
  waits.ok = true;
  r.expectations.push_back(waits);
  r.expectations.push_back(expectation("duplicate_effects", "==", "0", 0, 1205006652));
  r.ok = false;
  return r;
}

TEST(Summary, AnExpectationOnATimeFieldPrintsDurationsAndOneOnACountPrintsAnInteger) {
  const std::string text = reports::run_summary(run());
  EXPECT_NE(text.find("    ok   wait_time.p99 <= 2s (got 1.205s)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("    FAIL duplicate_effects == 0 (got 1205006652)\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("2000000000"), std::string::npos) << text;
  EXPECT_EQ(text.find("1.205e"), std::string::npos) << text;
}

TEST(Summary, QuantilesAndSimTimeAreTimeFieldsToo) {
  EXPECT_EQ(reports::expectation_text(expectation("recovery_latency.max", "<=", "120000000000", 120e9, 176609048)),
            "recovery_latency.max <= 2m (got 176.6ms)");
  EXPECT_EQ(reports::expectation_text(expectation("sim_time", ">", "1500", 1500, 999)), "sim_time > 1.5us (got 999ns)");
  EXPECT_EQ(reports::expectation_text(expectation("wait_time.p50", "<=", "0", 0, 0)), "wait_time.p50 <= 0s (got 0s)");
}

TEST(Summary, AValueGotThatRoundsOntoOrAcrossTheWantedOneIsWrittenExactly) {
  EXPECT_EQ(reports::expectation_text(expectation("wait_time.p99", "<=", "2000000000", 2e9, 2000000001)),
            "wait_time.p99 <= 2s (got 2.000000001s)");
  // 1.234549ms rounds to 1.235ms, above the 1.2346ms it is below: written exactly (format_duration, shortest).
  EXPECT_EQ(reports::expectation_text(expectation("wait_time.p99", "<=", "1234600", 1234600, 1234549)),
            "wait_time.p99 <= 1.2346ms (got 1234549ns)");
  EXPECT_EQ(reports::expectation_text(expectation("wait_time.p99", "<=", "1234600", 1234600, 1236000)),
            "wait_time.p99 <= 1.2346ms (got 1.236ms)");
  EXPECT_EQ(reports::expectation_text(expectation("calls_per_success", "<=", "1.0417", 1.0417, 1.0416666666666667)),
            "calls_per_success <= 1.0417 (got 1.0416666666666667)");
  EXPECT_EQ(reports::expectation_text(expectation("calls_per_success", "<=", "1.5", 1.5, 1.0416666666666667)),
            "calls_per_success <= 1.5 (got 1.042)");
}

TEST(Summary, PercentsCountsBooleansAndValuesNotHadKeepTheirForm) {
  EXPECT_EQ(reports::expectation_text(expectation("lost_messages", "<", "1%", 4, 5)), "lost_messages < 1% (got 5)");
  EXPECT_EQ(reports::expectation_text(expectation("linearizable", "==", "1", 1, 0)), "linearizable == 1 (got 0)");
  EXPECT_EQ(reports::expectation_text(expectation("linearizable", "==", "1", 1, std::nan(""))),
            "linearizable == 1 (got n/a)");
  EXPECT_EQ(reports::expectation_text(expectation("coverage.pause", ">=", "1", 1, 0)), "coverage.pause >= 1 (got 0)");
}

TEST(Junit, AFailedExpectationOnATimeFieldIsInUnitsInTheFailureMessage) {
  reports::JunitCase c;
  c.scenario = "units";
  c.result = run();
  c.result.expectations.front().ok = false;
  c.result.expectations.front().got = 2500000000;
  const std::string xml = reports::junit_xml({c});
  EXPECT_NE(xml.find("<failure message=\"wait_time.p99 &lt;= 2s (got 2.5s); duplicate_effects == 0 (got 1205006652)\""),
            std::string::npos)
      << xml;
}

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
