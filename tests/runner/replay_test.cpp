// lethe replay: the incident page (drawn, checked in headless Chromium), the Graphviz timeline, --explain's
// summary and selection, and the refusals (exit 2) of what cannot work.
#include <gtest/gtest.h>

#include <filesystem>
#include <vector>
#include <regex>
#include <string>

#include "support.hpp"

namespace replay_test {

namespace fs = std::filesystem;
using test_support::read_file;
using test_support::run_lethe;
using test_support::shell;

const std::string kCrashWindow = "replay scenarios/crash-window-after-effect.toml --seed 1";

fs::path temp_dir(const std::string& name) { return test_support::temp_dir("replay", name); }

bool installed(const std::string& program) { return shell("command -v " + program + " >/dev/null").exit_code == 0; }

TEST(ReplayRefuses, AnUnknownMessageAnUnknownExtensionAnUnknownCauseAndASelectionWithoutExplainWithExitTwo) {
  const fs::path dir = temp_dir("refuses");
  const auto unknown = run_lethe(kCrashWindow + " --message 9999");
  EXPECT_EQ(unknown.exit_code, 2) << unknown.out;
  EXPECT_NE(unknown.out.find("--message 9999: no such message"), std::string::npos) << unknown.out;
  const auto png_as_text = run_lethe(kCrashWindow + " --dot " + (dir / "x.txt").string());
  EXPECT_EQ(png_as_text.exit_code, 2) << png_as_text.out;
  EXPECT_NE(png_as_text.out.find("allowed: .dot"), std::string::npos) << png_as_text.out;
  EXPECT_FALSE(fs::exists(dir / "x.txt"));
  EXPECT_EQ(run_lethe(kCrashWindow + " --html " + (dir / "x.svg").string()).exit_code, 2);
  const auto cause = run_lethe(kCrashWindow + " --explain --cause crashed");
  EXPECT_EQ(cause.exit_code, 2) << cause.out;
  EXPECT_NE(cause.out.find("allowed: unprotected, takeover_while_alive"), std::string::npos) << cause.out;
  EXPECT_EQ(run_lethe(kCrashWindow + " --limit 3").exit_code, 2) << "--limit selects what --explain prints";
  EXPECT_EQ(run_lethe(kCrashWindow + " --explain --limit 0").exit_code, 2);
  // A run without duplicates has nothing to draw: never silently message 0.
  const auto none = run_lethe("replay scenarios/outbox-no-lost-event.toml --seed 1 --dot " + (dir / "t.dot").string());
  EXPECT_EQ(none.exit_code, 2) << none.out;
  EXPECT_NE(none.out.find("no duplicate to draw"), std::string::npos) << none.out;
  EXPECT_FALSE(fs::exists(dir / "t.dot"));
  fs::remove_all(dir);
}

TEST(ReplayExplain, OpensWithTheDuplicatesByCauseAndSelectsByCauseAndLimitSayingWhatItLeftOut) {
  const auto all = run_lethe(kCrashWindow + " --explain");
  ASSERT_EQ(all.exit_code, 0) << all.out;
  const auto summary = all.out.find("why each duplicate happened: 14 duplicate effects");
  ASSERT_NE(summary, std::string::npos) << all.out;
  const auto first = all.out.find("crash_after_effect         14  first: message 14 at 10.21s");
  EXPECT_NE(first, std::string::npos) << all.out;
  EXPECT_LT(summary, all.out.find("details:")) << "the summary comes before the details";
  // One readable unit per instant: no bare nanoseconds, no nine-digit seconds.
  EXPECT_NE(all.out.find("ran the effect at 176.6ms and died at 178.4ms"), std::string::npos) << all.out;
  EXPECT_FALSE(std::regex_search(all.out, std::regex(R"(\d{6,}ns|\.\d{5,}s)"))) << all.out;
  // Memo mismatches (19 here, 14 of them the duplicates' own callers) are explained too.
  EXPECT_NE(all.out.find("why callers got another value than the first execution's: 19 memo mismatches"),
            std::string::npos) << all.out;
  std::size_t memo = 0;
  for (auto at = all.out.find("[memo]"); at != std::string::npos; at = all.out.find("[memo]", at + 1)) ++memo;
  EXPECT_EQ(memo, 19u);
  EXPECT_NE(all.out.find("attempt 310 on billing-0 was handed 312, the result of the duplicate execution by attempt "
                         "315 on billing-1 at 10.26s"),
            std::string::npos) << all.out;
  const auto limited = run_lethe(kCrashWindow + " --explain --limit 2");
  EXPECT_NE(limited.out.find("(2 of 14 shown"), std::string::npos) << limited.out;
  // Count the explained items ("  [cause] ..." lines), not every '[': the summary marks defaults with "[default]".
  std::size_t items = 0;
  for (auto at = limited.out.find("\n  ["); at != std::string::npos; at = limited.out.find("\n  [", at + 1)) ++items;
  EXPECT_EQ(items, 4u) << "two duplicates, two memo: " << limited.out;
  const auto other = run_lethe(kCrashWindow + " --explain --cause expired");
  EXPECT_NE(other.out.find("no duplicates expired"), std::string::npos) << other.out;
}

TEST(ReplayMessage, PrintsTheStoryInTimeOrderWithNamedFieldsAndThePollsFolded) {
  const auto story = run_lethe(kCrashWindow + " --message 14");
  ASSERT_EQ(story.exit_code, 0) << story.out;
  EXPECT_NE(story.out.find("decision in_flight_recent (attempt 307) (49 times"), std::string::npos) << story.out;
  EXPECT_NE(story.out.find("DUPLICATE execution (crash_after_effect)"), std::string::npos) << story.out;
  EXPECT_EQ(story.out.find(" a="), std::string::npos) << "no unnamed fields: " << story.out;
  EXPECT_EQ(story.out.find("node 8"), std::string::npos) << story.out;
}

TEST(ReplayDot, DrawsTheDuplicateInTimeOrderAndRendersSvgAndPngThroughGraphviz) {
  const fs::path dir = temp_dir("dot");
  ASSERT_EQ(run_lethe(kCrashWindow + " --dot " + (dir / "m.dot").string()).exit_code, 0);
  const std::string dot = read_file(dir / "m.dot");
  EXPECT_NE(dot.find("DUPLICATE execution (crash_after_effect)"), std::string::npos);
  EXPECT_NE(dot.find("fillcolor=\"#f8d0d0\""), std::string::npos) << "the duplicate is filled";
  EXPECT_NE(dot.find("(49 times"), std::string::npos) << "the polls are one box";
  EXPECT_EQ(dot.find(" a="), std::string::npos);
  if (!installed("dot")) GTEST_SKIP() << "Graphviz is not installed (scripts/setup installs it)";
  ASSERT_EQ(run_lethe(kCrashWindow + " --dot " + (dir / "m.svg").string()).exit_code, 0);
  EXPECT_NE(read_file(dir / "m.svg").find("<svg"), std::string::npos);
  ASSERT_EQ(run_lethe(kCrashWindow + " --dot " + (dir / "m.png").string()).exit_code, 0);
  EXPECT_EQ(read_file(dir / "m.png").substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8)) << "a PNG, not DOT text";
  fs::remove_all(dir);
}

void expect_self_contained(const std::string& html) {
  for (const char* tag : {"<script", "<link", "<img", "<iframe", "@import", " src=", "url("}) {
    EXPECT_EQ(html.find(tag), std::string::npos) << tag;
  }
  for (auto at = html.find("href=\""); at != std::string::npos; at = html.find("href=\"", at + 1)) {
    EXPECT_EQ(html[at + 6], '#') << "only links inside the page: " << html.substr(at, 60);
  }
  std::string outside = std::regex_replace(html, std::regex("xmlns=\"http://www.w3.org/2000/svg\""), "");
  EXPECT_EQ(outside.find("http"), std::string::npos) << "nothing fetched";
}

TEST(IncidentPage, DrawsEachDuplicatedMessageWithItsMarkAndExplanationAndListsEveryDuplicateByCause) {
  const fs::path dir = temp_dir("page");
  const auto page = run_lethe(kCrashWindow + " --html " + (dir / "incident.html").string());
  ASSERT_EQ(page.exit_code, 0) << page.out;
  const std::string html = read_file(dir / "incident.html");
  expect_self_contained(html);
  // It opens on the first duplicate: message 14, redone by attempt 307.
  const auto first_section = html.find("<section id=\"message-14\">");
  ASSERT_NE(first_section, std::string::npos);
  EXPECT_EQ(html.find("<section"), first_section);
  EXPECT_NE(html.find("id=\"duplicate-14-307\""), std::string::npos) << "the duplicate's mark";
  EXPECT_NE(html.find("attempt 15 on billing-3 ran the effect at 176.6ms"), std::string::npos) << "its sentence";
  EXPECT_NE(html.find("in_flight_recent x49"), std::string::npos) << "the polls folded into one span";
  // Every duplicate by cause, with a link to the drawn ones and the command for the others.
  EXPECT_NE(html.find("crash_after_effect (14)"), std::string::npos);
  EXPECT_EQ(std::count(html.begin(), html.end(), '<') > 0, true);
  EXPECT_NE(html.find("<a href=\"#message-14\">"), std::string::npos);
  EXPECT_NE(html.find("--message 368 --html message-368.html"), std::string::npos) << "past the drawn ones";
  // The same run renders the same bytes.
  ASSERT_EQ(run_lethe(kCrashWindow + " --html " + (dir / "again.html").string()).exit_code, 0);
  EXPECT_EQ(read_file(dir / "again.html"), html);
  // One message asked for: only it.
  ASSERT_EQ(run_lethe(kCrashWindow + " --message 16 --html " + (dir / "m16.html").string()).exit_code, 0);
  const std::string one = read_file(dir / "m16.html");
  EXPECT_NE(one.find("id=\"duplicate-16-308\""), std::string::npos);
  EXPECT_EQ(one.find("<section id=\"message-14\">"), std::string::npos);
  fs::remove_all(dir);
}

// A message redelivered for two hours has 77,764 events: the page draws a window of them, says which, and stays
// well under a megabyte (23 MB when every event was drawn and listed).
TEST(IncidentPage, AMessageWithTensOfThousandsOfEventsIsDrawnAsAWindowAndThePageStaysSmall) {
  const fs::path dir = temp_dir("window");
  const auto page = run_lethe("replay scenarios/queue-visibility-timeout.toml --seed 1 --html " +
                              (dir / "page.html").string());
  ASSERT_EQ(page.exit_code, 0) << page.out;
  EXPECT_LT(fs::file_size(dir / "page.html"), 1u << 20);
  const std::string html = read_file(dir / "page.html");
  EXPECT_NE(html.find("Drawn and listed here: events 1 to 400 of this message's 77764"), std::string::npos);
  EXPECT_NE(html.find("--seed 1 --message 12</code> prints them all"), std::string::npos);
  EXPECT_NE(html.find("more duplicate executions of this message"), std::string::npos);
  fs::remove_all(dir);
}

// Ticks a few microseconds apart late in a run read the same when rounded; each stretch between cuts has its own
// scale, which the page states; a timeout names the call that timed out.
TEST(IncidentPage, TickLabelsNeverRepeatEachStretchStatesItsLengthAndATimeoutNamesItsCall) {
  const fs::path dir = temp_dir("axis");
  for (const std::string scenario : {"crash-window-after-effect", "blind-completion", "lost-ack-double-charge"}) {
    const fs::path file = dir / (scenario + ".html");
    const auto page = run_lethe("replay scenarios/" + scenario + ".toml --seed 1 --html " + file.string());
    ASSERT_LE(page.exit_code, 1) << page.out;
    const std::string html = read_file(file);
    for (std::size_t at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1)) {
      const std::string svg = html.substr(at, html.find("</svg>", at) - at);
      std::vector<std::string> labels;
      const std::regex tick(R"re(class="tick-label"[^>]*>([^<]*)<)re");
      for (auto it = std::sregex_iterator(svg.begin(), svg.end(), tick); it != std::sregex_iterator(); ++it) {
        labels.push_back((*it)[1]);
      }
      for (std::size_t k = 1; k < labels.size(); ++k) {
        EXPECT_NE(labels[k], labels[k - 1]) << scenario << ": a tick label repeated";
      }
      const auto count = [&svg](const std::string& needle) {
        std::size_t n = 0;
        for (auto p = svg.find(needle); p != std::string::npos; p = svg.find(needle, p + 1)) ++n;
        return n;
      };
      EXPECT_EQ(count("class=\"segment-label\""), count("class=\"break\"") + 1) << scenario;
    }
    if (scenario == "lost-ack-double-charge") {
      EXPECT_EQ(html.find(">timeout<"), std::string::npos) << "a bare timeout label";
      EXPECT_NE(html.find(">provider call timeout<"), std::string::npos) << "the sink call's timeouts, named";
    }
  }
  fs::remove_all(dir);
}

TEST(FailureLines, OfTheSuiteAndTheSweepPrintTheCommandThatDrawsTheIncidentPage) {
  const fs::path dir = temp_dir("failure-lines");
  const std::string few = " --seeds 1 --set workload.messages=3";  // too few messages for the expected duplicate
  const auto suite = run_lethe("suite scenarios/crash-window-after-effect.toml" + few);
  ASSERT_EQ(suite.exit_code, 1) << suite.out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(suite.out, m, std::regex(R"(draw it: lethe (replay .* --html )(\S+\.html))"))) << suite.out;
  EXPECT_EQ(m[2], "crash-window-after-effect-seed1.html");
  EXPECT_EQ(run_lethe(m[1].str() + (dir / "page.html").string()).exit_code, 1) << "the printed command runs";
  EXPECT_NE(read_file(dir / "page.html").find("No duplicate effects in this run"), std::string::npos);
  const auto sweep = run_lethe("sweep scenarios/crash-window-after-effect.toml --vary workload.messages=3" + few +
                               " --out " + (dir / "sweep").string());
  EXPECT_EQ(sweep.exit_code, 1) << sweep.out;
  EXPECT_NE(sweep.out.find("--html cell0-seed1.html"), std::string::npos) << sweep.out;
  fs::remove_all(dir);
}

std::string browser() {
  for (const char* name : {"chromium", "chromium-browser"}) {
    if (installed(name)) return name;
  }
  return "";
}

TEST(IncidentPageSlow, HeadlessChromiumShowsANonBlankPageWhoseDomHoldsTheDuplicatesMark) {
  const std::string chromium = browser();
  if (chromium.empty()) GTEST_SKIP() << "chromium is not installed (scripts/setup installs it)";
  const fs::path dir = temp_dir("chromium");
  ASSERT_EQ(run_lethe("replay scenarios/lost-ack-double-charge.toml --seed 1 --html " + (dir / "page.html").string())
                .exit_code,
            0);
  const std::string flags = " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
                            "--disable-background-networking --disable-component-update --disable-sync "
                            "--user-data-dir=" + (dir / "profile").string();
  const std::string url = " file://" + (dir / "page.html").string();
  const fs::path png = dir / "shot.png";
  const auto shot = shell("timeout 180 " + chromium + flags + " --screenshot=" + png.string() +
                          " --window-size=1300,1000" + url);
  ASSERT_TRUE(fs::exists(png)) << "exit " << shot.exit_code << ": " << shot.out;
  const auto stats = shell(std::string("python3 ") + LETHE_SOURCE_DIR + "/tests/runner/png_stats.py " + png.string());
  ASSERT_EQ(stats.exit_code, 0) << stats.out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(stats.out, m, std::regex(R"(distinct=(\d+) nonwhite=([0-9.]+))"))) << stats.out;
  // A blank page is one colour; lanes, bars and the red duplicate give dozens and cover a real share.
  EXPECT_GE(std::stoi(m[1]), 50) << stats.out;
  EXPECT_GE(std::stod(m[2]), 0.05) << stats.out;
  // The browser's DOM (after parsing, so the SVG really is in the page): the first duplicate's mark, a circle.
  const auto dom = shell("timeout 180 " + chromium + flags + " --dump-dom" + url + " 2>/dev/null");
  const std::regex mark(R"(<g class="duplicate" id="duplicate-21-24"><circle )");
  EXPECT_TRUE(std::regex_search(dom.out, mark)) << dom.out.substr(0, 2000);
  fs::remove_all(dir);
}

}  // namespace replay_test
