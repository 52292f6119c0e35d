// Tests that the sweep report stays readable: a log colour scale labelled with values inside its range, curves
// that coincide still both visible, and a causes table only as wide as the causes seen.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>

#include "reports/cells.hpp"
#include "reports/report.hpp"
#include "tests/runner/support.hpp"

namespace fs = std::filesystem;

namespace report_legibility_test {

fs::path temp_dir(const std::string& name) { return test_support::temp_dir("report-legibility-test", name); }

// A 3 x 2 grid over max_processing_time x ttl whose rates span three decades (0.0133 .. 3.3e-5) and do not depend
// on the ttl (so the two ttl curves coincide); duplicates come from two causes only.
reports::ReportInput spread_grid() {
  reports::ReportInput in;
  in.title = "legibility";
  in.varied_keys = {"protocol.max_processing_time", "protocol.ttl"};
  const std::uint64_t counts[] = {399, 7, 1};  // of 30000: 0.0133, 0.000233, 3.33e-5
  std::size_t index = 0;
  for (int m = 0; m < 3; ++m) {
    for (const char* ttl : {"3d", "6d"}) {
      reports::CellSummary cell;
      cell.index = index++;
      cell.params = {{"protocol.max_processing_time", std::to_string(m + 1) + "s"}, {"protocol.ttl", ttl}};
      cell.seeds = 5;
      cell.trials = 30000;
      cell.duplicates = counts[m];
      cell.duplicate_rate = static_cast<double>(cell.duplicates) / 30000.0;
      cell.duplicate_interval = reports::wilson_interval(cell.duplicates, cell.trials);
      cell.by_cause[static_cast<std::size_t>(lethe::Cause::TakeoverWhileAlive)] = cell.duplicates - 1;
      cell.by_cause[static_cast<std::size_t>(lethe::Cause::CrashAfterEffect)] = 1;
      in.cells.push_back(cell);
    }
  }
  return in;
}


TEST(ReportLegibility, ALogColourScaleIsLabelledWithValuesInsideItsRangeNotOnlyAtWholeDecades) {
  const fs::path dir = temp_dir("heat");
  ASSERT_TRUE(reports::write_report(dir, spread_grid()).ok());
  const std::string script = test_support::read_file(dir / "report" / "heatmap-1.gp");
  EXPECT_NE(script.find("set logscale cb"), std::string::npos) << script;
  const auto tics = script.find("set cbtics (");
  ASSERT_NE(tics, std::string::npos) << script;
  const std::string line = script.substr(tics, script.find('\n', tics) - tics);
  for (const char* label : {"\"5e-05\"", "\"0.0001\"", "\"0.001\"", "\"0.01\""}) {
    EXPECT_NE(line.find(label), std::string::npos) << label << " in " << line;
  }
  EXPECT_EQ(line.find("\"0.02\""), std::string::npos) << "no label past the largest rate: " << line;
  fs::remove_all(dir);
}

TEST(ReportLegibility, CoincidingCurvesDrawTheEarlierSeriesWithLargerPointsSoBothShow) {
  const fs::path dir = temp_dir("curves");
  ASSERT_TRUE(reports::write_report(dir, spread_grid()).ok());
  const std::string script = test_support::read_file(dir / "report" / "curve-duplicate-rate.gp");
  const auto first = script.find("index 0 ");
  const auto second = script.find("index 1 ");
  ASSERT_NE(first, std::string::npos);
  ASSERT_NE(second, std::string::npos);
  EXPECT_NE(script.substr(first, second - first).find("ps 1.6"), std::string::npos) << script;
  EXPECT_NE(script.substr(second).find("ps 1.1"), std::string::npos) << script;
  fs::remove_all(dir);
}

// A ttl that removes every duplicate gives a series of zero rates: on a log axis 0 has no place, and a series
// without a point loses its legend entry. Its points sit on the bottom edge instead, named in the caption.
TEST(ReportLegibility, ASeriesOfZeroRatesOnALogAxisKeepsItsPointsOnTheBottomEdge) {
  reports::ReportInput in = spread_grid();
  for (auto& cell : in.cells) {
    if (cell.params.back().second != "6d") continue;
    cell.duplicates = 0;
    cell.duplicate_rate = 0.0;
    cell.duplicate_interval = reports::wilson_interval(0, cell.trials);
    cell.by_cause = {};
  }
  const fs::path dir = temp_dir("zeros");
  ASSERT_TRUE(reports::write_report(dir, in).ok());
  const std::string script = test_support::read_file(dir / "report" / "curve-duplicate-rate.gp");
  EXPECT_NE(script.find("set logscale y"), std::string::npos) << script;
  const auto range = script.find("set yrange [");
  ASSERT_NE(range, std::string::npos) << "the axis starts at the bottom edge the zeros are drawn on: " << script;
  const std::string floor = script.substr(range + 12, script.find(':', range) - range - 12);
  const std::string data = test_support::read_file(dir / "report" / "curve-duplicate-rate.dat");
  const auto second_series = data.find("\n\n\n");
  ASSERT_NE(second_series, std::string::npos) << data;
  std::size_t points = 0;
  std::istringstream rows(data.substr(second_series + 3));
  for (std::string row; std::getline(rows, row);) {
    if (row.empty()) continue;
    ++points;
    const auto y_start = row.find(' ') + 1;
    EXPECT_EQ(row.substr(y_start, row.find(' ', y_start) - y_start), floor) << "a zero rate at the floor: " << row;
  }
  EXPECT_EQ(points, 3u) << data;
  const std::string html = test_support::read_file(dir / "report.html");
  EXPECT_NE(html.find("a cell without a duplicate is drawn on the bottom edge"), std::string::npos);
  fs::remove_all(dir);
}

TEST(ReportLegibility, TheCausesTableHasAColumnPerCauseSeenAndNamesTheCausesNoCellSaw) {
  const fs::path dir = temp_dir("causes");
  ASSERT_TRUE(reports::write_report(dir, spread_grid()).ok());
  const std::string html = test_support::read_file(dir / "report.html");
  const auto table = html.find("<table class=\"causes\">");
  ASSERT_NE(table, std::string::npos);
  const std::string head = html.substr(table, html.find("</thead>", table) - table);
  EXPECT_NE(head.find("<th>takeover_<wbr>while_<wbr>alive</th>"), std::string::npos) << head;
  EXPECT_NE(head.find("<th>crash_<wbr>after_<wbr>effect</th>"), std::string::npos) << head;
  EXPECT_EQ(head.find("herd_"), std::string::npos) << "a cause no cell saw has no column: " << head;
  EXPECT_NE(html.find("<p>0 in every cell: unprotected, max_wait_exceeded, herd_takeover, completion_lost"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace report_legibility_test
