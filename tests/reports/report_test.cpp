// The sweep report (reports/report.hpp, runner/report.hpp): self-contained HTML with gnuplot and Graphviz SVGs
// inlined, rendered by the sweep / merge / report commands, and a real browser draws something.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "reports/cells.hpp"
#include "reports/report.hpp"
#include "tests/runner/support.hpp"

namespace fs = std::filesystem;

namespace report_test {

using namespace test_support;  // shell, run_lethe, read_file, load_config (tests/runner/support.hpp)
fs::path temp_dir(const std::string& name) { return test_support::temp_dir("report-test", name); }

std::string read(const fs::path& path) { return read_file(path); }

bool installed(const std::string& tool) { return shell("command -v " + tool + " >/dev/null").exit_code == 0; }

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// A 3 x 2 grid over max_processing_time x ttl, with made-up but plausible numbers.
reports::ReportInput grid_input() {
  reports::ReportInput in;
  in.title = "Sweep of a <test> & friends";
  in.varied_keys = {"protocol.max_processing_time", "protocol.ttl"};
  in.scenario_path = "scenarios/example.toml";
  in.scenario_toml = "[scenario]\nname = \"<script>alert(1)</script> & co\"\n# see https://example.invalid/docs\n";
  in.command = "lethe sweep scenarios/example.toml --vary protocol.max_processing_time=500ms,2s,8s "
               "--vary protocol.ttl=1m,10m --out out";
  std::size_t index = 0;
  for (const char* mpt : {"500ms", "2s", "8s"}) {
    for (const char* ttl : {"1m", "10m"}) {
      reports::CellSummary cell;
      cell.index = index++;
      cell.params = {{"protocol.max_processing_time", mpt}, {"protocol.ttl", ttl}};
      cell.seeds = 5;
      cell.trials = 1000;
      cell.duplicates = 40 / (cell.index + 1);
      cell.duplicate_rate = static_cast<double>(cell.duplicates) / 1000.0;
      cell.duplicate_interval = reports::wilson_interval(cell.duplicates, cell.trials);
      cell.by_cause[1] = cell.duplicates / 2;
      cell.by_cause[4] = cell.duplicates - cell.duplicates / 2;
      cell.recovery_latency = lethe::Quantiles{static_cast<std::int64_t>(cell.index + 1) * 500'000'000,
                                               static_cast<std::int64_t>(cell.index + 2) * 600'000'000,
                                               static_cast<std::int64_t>(cell.index + 3) * 700'000'000, 12};
      in.cells.push_back(cell);
    }
  }
  return in;
}

// Every way an HTML page could load something: tags, attributes and CSS. (Plain string scans: the page is
// a few hundred kB, too much for std::regex's recursive matcher.)
void expect_self_contained(const std::string& html) {
  for (const char* tag : {"<script", "<link", "<img", "<iframe", "<object", "<embed", "@import", " src="}) {
    EXPECT_EQ(html.find(tag), std::string::npos) << tag;
  }
  for (const char* reference : {"url(", "href=\"", "href='"}) {
    for (auto at = html.find(reference); at != std::string::npos; at = html.find(reference, at + 1)) {
      const std::size_t after = at + std::string(reference).size();
      ASSERT_LT(after, html.size());
      EXPECT_EQ(html[after], '#') << "only references inside the page: " << html.substr(at, 60);
    }
  }
  // http(s):// may appear only inside text that was escaped from the input (here: the scenario's comment).
  std::string outside = html;
  const auto pre = outside.find("<pre class=\"scenario\">");
  if (pre != std::string::npos) outside.erase(pre, outside.find("</pre>", pre) - pre);
  EXPECT_EQ(outside.find("http://"), std::string::npos) << outside.substr(outside.find("http://"), 80);
  EXPECT_EQ(outside.find("https://"), std::string::npos);
}

TEST(ReportPieces, InlineSvgPrefixesIdsWithTheirReferencesAndDropsPrologAndNamespaces) {
  const std::string svg = "<?xml version=\"1.0\"?>\n<!DOCTYPE svg PUBLIC \"-//W3C//DTD SVG 1.1//EN\" "
                          "\"http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd\">\n<!-- made by a tool -->\n"
                          "<svg viewBox=\"0 0 10 10\" xmlns=\"http://www.w3.org/2000/svg\" "
                          "xmlns:xlink='http://www.w3.org/1999/xlink'>\n<defs><path id='gpPt0' d='M0,0'/>"
                          "<clipPath id=\"clip1\"><rect/></clipPath></defs>\n<use xlink:href='#gpPt0'/>"
                          "<g clip-path=\"url(#clip1)\"><a href=\"#gpPt0\">x</a></g></svg>\n";
  const std::string out = reports::inline_svg(svg, "fig");
  EXPECT_EQ(out.rfind("<svg", 0), 0u) << out;
  EXPECT_EQ(out.find("http"), std::string::npos) << out;
  EXPECT_EQ(out.find("<!--"), std::string::npos) << out;
  EXPECT_NE(out.find("id='fig-gpPt0'"), std::string::npos) << out;
  EXPECT_NE(out.find("id=\"fig-clip1\""), std::string::npos) << out;
  EXPECT_NE(out.find("xlink:href='#fig-gpPt0'"), std::string::npos) << out;
  EXPECT_NE(out.find("href=\"#fig-gpPt0\""), std::string::npos) << out;
  EXPECT_NE(out.find("url(#fig-clip1)"), std::string::npos) << out;
  EXPECT_EQ(out.find("'#gpPt0'"), std::string::npos) << "no reference is left pointing at an old id: " << out;
}

TEST(ReportPieces, HtmlEscapeAndNumericValues) {
  EXPECT_EQ(reports::html_escape("<a href=\"x\">Tom & 'Jerry'</a>"),
            "&lt;a href=&quot;x&quot;&gt;Tom &amp; &apos;Jerry&apos;&lt;/a&gt;");
  EXPECT_DOUBLE_EQ(*reports::numeric_value("1.5s"), 1.5);
  EXPECT_DOUBLE_EQ(*reports::numeric_value("250ms"), 0.25);
  EXPECT_DOUBLE_EQ(*reports::numeric_value("7d"), 7 * 86400.0);
  EXPECT_DOUBLE_EQ(*reports::numeric_value("0.25"), 0.25);
  EXPECT_DOUBLE_EQ(*reports::numeric_value("4"), 4.0);
  EXPECT_FALSE(reports::numeric_value("mnemosyne").has_value());
  EXPECT_FALSE(reports::numeric_value("uniform(1ms, 5ms)").has_value());
}

TEST(ReportPieces, DecisionTableDotHasEveryStateAndTheDecisionsOfDecideWithBasis) {
  const std::string dot = reports::decision_table_dot();
  for (const char* state : {"absent [", "recent [", "stale [", "completed [", "expired ["}) {
    EXPECT_NE(dot.find(state), std::string::npos) << state << "\n" << dot;
  }
  // The labels come from lethe::decide_with_basis on a representative record of each state.
  EXPECT_NE(dot.find("absent -> recent [label=\"attempt: Process\\n"), std::string::npos) << dot;
  EXPECT_NE(dot.find("recent -> recent [label=\"attempt: Wait\\n"), std::string::npos) << dot;
  EXPECT_NE(dot.find("stale -> recent [label=\"attempt: Process (take over)\\n"), std::string::npos) << dot;
  EXPECT_NE(dot.find("completed -> completed [label=\"attempt: Skip\\n"), std::string::npos) << dot;
  EXPECT_NE(dot.find("expired -> recent [label=\"attempt: Process\\n"), std::string::npos) << dot;
  EXPECT_NE(dot.find("age reaches max_processing_time"), std::string::npos) << dot;
  EXPECT_NE(dot.find("now >= expiresOn"), std::string::npos) << dot;
}

TEST(ReportHtml, GridReportIsSelfContainedWithHeatmapCurvesCausesAndDecisionTableSvgs) {
  ASSERT_TRUE(installed("gnuplot")) << "gnuplot is a dependency (scripts/setup installs gnuplot-nox)";
  ASSERT_TRUE(installed("dot")) << "Graphviz is a dependency (scripts/setup installs graphviz)";
  const fs::path dir = temp_dir("grid");
  const auto outcome = reports::write_report(dir, grid_input());
  ASSERT_TRUE(outcome.ok()) << outcome.error;
  EXPECT_TRUE(outcome.warnings.empty()) << outcome.warnings.front();
  const std::string html = read(dir / "report.html");
  ASSERT_FALSE(html.empty());
  expect_self_contained(html);
  // One figure each, with an inline SVG inside.
  for (const char* id : {"heatmap-1", "curve-duplicate-rate", "curve-recovery-latency", "duplicates-by-cause",
                         "decision-table"}) {
    const auto at = html.find(std::string("<figure id=\"") + id + "\">");
    ASSERT_NE(at, std::string::npos) << id;
    const auto end = html.find("</figure>", at);
    const std::string figure = html.substr(at, end - at);
    EXPECT_NE(figure.find("<svg"), std::string::npos) << id << ": " << figure.substr(0, 400);
    EXPECT_NE(figure.find("</svg>"), std::string::npos) << id;
  }
  EXPECT_EQ(count(html, "<svg"), 5u);
  EXPECT_NE(html.find("Process (take over)"), std::string::npos) << "the decision table's edge labels";
  EXPECT_NE(html.find("heatmap-1-gnuplot_canvas"), std::string::npos) << "ids are prefixed per figure";
  // The heatmap is over max_processing_time x ttl; the Wilson intervals are drawn as error bars.
  const std::string heat_script = read(dir / "report" / "heatmap-1.gp");
  EXPECT_NE(heat_script.find("set xlabel \"protocol.max_processing_time\""), std::string::npos) << heat_script;
  EXPECT_NE(heat_script.find("set ylabel \"protocol.ttl\""), std::string::npos) << heat_script;
  EXPECT_NE(read(dir / "report" / "curve-duplicate-rate.gp").find("yerrorlines"), std::string::npos);
  // Text from the input is escaped; the scenario and the command are there.
  EXPECT_EQ(html.find("<script>alert(1)"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt; &amp; co"), std::string::npos);
  EXPECT_NE(html.find("Sweep of a &lt;test&gt; &amp; friends"), std::string::npos);
  EXPECT_NE(html.find("--vary protocol.ttl=1m,10m --out out"), std::string::npos);
  // The cells table has a row per cell with the Wilson interval.
  EXPECT_EQ(count(html, "<tr><td>"), 6u + 6u + 5u) << "cells + causes + decision rows";
  const auto interval = reports::wilson_interval(40, 1000);
  EXPECT_NE(html.find(fmt::format("[{:.3g}, {:.3g}]", interval.low, interval.high)), std::string::npos);
  fs::remove_all(dir);
}

TEST(ReportHtml, OneVariedKeyGivesCurvesAndNoHeatmapAndNoCellsStillRenders) {
  ASSERT_TRUE(installed("gnuplot"));
  reports::ReportInput in = grid_input();
  in.varied_keys = {"protocol.max_processing_time"};
  std::vector<reports::CellSummary> cells;
  for (auto cell : in.cells) {
    if (cell.params[1].second != "1m") continue;
    cell.params.resize(1);
    cell.index = cells.size();
    in.analytic_duplicate_rate[cell.index] = 0.05 / static_cast<double>(cell.index + 1);
    cells.push_back(cell);
  }
  in.cells = cells;
  in.analytic_label = "analytic P(T > mpt)";
  const fs::path dir = temp_dir("curve");
  const auto outcome = reports::write_report(dir, in);
  ASSERT_TRUE(outcome.ok()) << outcome.error;
  const std::string html = read(dir / "report.html");
  EXPECT_EQ(html.find("<figure id=\"heatmap"), std::string::npos);
  EXPECT_NE(html.find("<figure id=\"curve-duplicate-rate\">"), std::string::npos);
  EXPECT_NE(read(dir / "report" / "curve-duplicate-rate.gp").find("analytic P(T > mpt)"), std::string::npos);
  expect_self_contained(html);

  in.cells.clear();
  const fs::path empty = temp_dir("empty");
  const auto none = reports::write_report(empty, in);
  ASSERT_TRUE(none.ok()) << none.error;
  const std::string empty_html = read(empty / "report.html");
  EXPECT_NE(empty_html.find("No cells"), std::string::npos);
  EXPECT_NE(empty_html.find("<figure id=\"decision-table\">"), std::string::npos);
  fs::remove_all(dir);
  fs::remove_all(empty);
}

// A real sweep through the CLI: sweep, shards + merge, and `lethe report` on the merged folder; then headless
// Chromium screenshots the report and the PNG is checked for content.
TEST(ReportSlow, SweepShardsMergeAndReportCommandEachWriteTheReport) {
  const fs::path dir = temp_dir("cli");
  const std::string base = "sweep scenarios/crash-window-after-effect.toml --set workload.messages=120 "
                           "--vary protocol.max_processing_time=1s,10s --vary protocol.ttl=1m,7d --seeds 2 -j 2";
  const auto whole = run_lethe(base + " --out " + (dir / "whole").string());
  ASSERT_LE(whole.exit_code, 1) << whole.out;
  EXPECT_TRUE(fs::exists(dir / "whole" / "report.html")) << "lethe sweep renders the report: " << whole.out;
  for (const char* shard : {"1/2", "2/2"}) {
    const auto part = run_lethe(base + " --shard " + shard + " --out " + (dir / ("shard" + std::string(1, shard[0]))).string());
    ASSERT_LE(part.exit_code, 1) << part.out;
  }
  const auto merged = run_lethe("merge " + (dir / "shard1").string() + " " + (dir / "shard2").string() + " --out " +
                            (dir / "merged").string());
  ASSERT_LE(merged.exit_code, 1) << merged.out;
  ASSERT_TRUE(fs::exists(dir / "merged" / "report.html")) << merged.out;
  fs::remove(dir / "merged" / "report.html");
  const auto report = run_lethe("report " + (dir / "merged").string());
  ASSERT_EQ(report.exit_code, 0) << report.out;
  const std::string html = read(dir / "merged" / "report.html");
  EXPECT_NE(html.find("<figure id=\"heatmap-1\">"), std::string::npos);
  EXPECT_NE(html.find("the whole grid in one run"), std::string::npos) << "a merge shows the one-run command";
  expect_self_contained(html);
  // The merged report shows the same cells as the unsharded one (the cells table is identical).
  const auto cells_of = [](const std::string& page) {
    const auto at = page.find("<table class=\"cells\">");
    return page.substr(at, page.find("</table>", at) - at);
  };
  EXPECT_EQ(cells_of(html), cells_of(read(dir / "whole" / "report.html")));
  EXPECT_EQ(run_lethe("report " + (dir / "nothing-here").string()).exit_code, 2);
  fs::remove_all(dir);
}

TEST(ReportSlow, HeadlessChromiumScreenshotOfTheReportIsNotBlank) {
  std::string browser;
  for (const char* name : {"chromium", "chromium-browser"}) {
    if (installed(name)) {
      browser = name;
      break;
    }
  }
  if (browser.empty()) GTEST_SKIP() << "chromium is not installed (scripts/setup installs it): no screenshot";
  ASSERT_TRUE(installed("gnuplot"));
  const fs::path dir = temp_dir("screenshot");
  const auto outcome = reports::write_report(dir, grid_input());
  ASSERT_TRUE(outcome.ok()) << outcome.error;
  // Deterministic: the same input renders the same bytes.
  const fs::path again = temp_dir("screenshot-again");
  ASSERT_TRUE(reports::write_report(again, grid_input()).ok());
  EXPECT_EQ(read(again / "report.html"), read(dir / "report.html"));
  fs::remove_all(again);
  const fs::path png = dir / "shot.png";
  const std::string command = browser +
                              " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
                              "--disable-background-networking --disable-component-update --disable-sync "
                              "--user-data-dir=" + (dir / "profile").string() +
                              " --screenshot=" + png.string() + " --window-size=1200,2000 file://" +
                              (dir / "report.html").string();
  const auto shot = shell("timeout 180 " + command);
  ASSERT_TRUE(fs::exists(png)) << "exit " << shot.exit_code << ": " << shot.out;
  const auto stats = shell(std::string("python3 ") + LETHE_SOURCE_DIR + "/tests/runner/png_stats.py " + png.string());
  ASSERT_EQ(stats.exit_code, 0) << stats.out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(stats.out, m,
                                std::regex(R"(width=(\d+) height=(\d+) distinct=(\d+) nonwhite=([0-9.]+))")))
      << stats.out;
  EXPECT_EQ(std::stoi(m[1]), 1200);
  EXPECT_EQ(std::stoi(m[2]), 2000);
  // A blank page is one colour; text alone is a few dozen grey levels. Coloured plots, tables and a heatmap
  // give hundreds of colours and cover a real share of the page.
  EXPECT_GE(std::stoi(m[3]), 100) << stats.out;
  EXPECT_GE(std::stod(m[4]), 0.05) << stats.out;
  fs::remove_all(dir);
}

}  // namespace report_test
