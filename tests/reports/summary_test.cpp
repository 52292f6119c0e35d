// Expectation lines read in units: a time field's wanted value and the value got are durations ("2s",
// "1.205s"), never raw nanoseconds; a count stays an integer, whatever its size. The field's kind decides,
// in the run summary, the JUnit failure message and every other text built by reports::expectation_text.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

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

}  // namespace summary_test
