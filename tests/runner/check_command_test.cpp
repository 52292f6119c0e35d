// `lethe check` on recorded histories: Porcupine's test data as ground truth, bad input, unknown, and the
// independence of the answer from the number of threads.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "support.hpp"

namespace check_command_test {

using namespace test_support;  // shell, run_lethe, temp_dir, read_file (tests/runner/support.hpp)

const std::string kData = "tests/data/porcupine/";

// FILE -> "linearizable" / "not linearizable", from tests/data/porcupine/expected.txt (Porcupine's own tests).
std::map<std::string, std::string> porcupine_expectations() {
  std::map<std::string, std::string> expected;
  std::istringstream in(read_file(std::string(LETHE_SOURCE_DIR) + "/" + kData + "expected.txt"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string file;
    std::string verdict;
    fields >> file >> verdict;
    expected[kData + file] = verdict == "linearizable" ? "linearizable" : "not linearizable";
  }
  return expected;
}

std::vector<nlohmann::json> json_lines(const std::string& text) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] == '{') lines.push_back(nlohmann::json::parse(line));
  }
  return lines;
}

TEST(CheckCommand, EveryPorcupineHistoryGivesTheVerdictPorcupinesTestsExpect) {
  const auto expected = porcupine_expectations();
  ASSERT_EQ(expected.size(), 108u);  // 102 etcd logs (etcd_095.log is empty and untested there) and 6 kv files
  std::string files;
  for (const auto& [file, verdict] : expected) files += " " + file;
  const Outcome o = run_lethe("check --json -j 2" + files);
  EXPECT_EQ(o.exit_code, 1) << o.out.substr(0, 2000);
  const auto lines = json_lines(o.out);
  ASSERT_EQ(lines.size(), expected.size()) << o.out.substr(0, 2000);
  for (const auto& line : lines) {
    const std::string file = line["file"];
    EXPECT_EQ(line["verdict"], expected.at(file)) << file;
  }
}

TEST(CheckCommand, C50BadIsProvenNotLinearizableWithAWindowInItsFailingKey) {
  const Outcome o = run_lethe("check --json " + kData + "kv/c50-bad.txt");
  EXPECT_EQ(o.exit_code, 1) << o.out;
  const auto lines = json_lines(o.out);
  ASSERT_EQ(lines.size(), 1u) << o.out;
  EXPECT_EQ(lines[0]["verdict"], "not linearizable");
  EXPECT_EQ(lines[0]["partitions"], 10);
  EXPECT_EQ(lines[0]["failing"]["key"], "\"1\"");
  EXPECT_TRUE(lines[0]["failing"]["minimal"].get<bool>());
  EXPECT_FALSE(lines[0]["failing"]["window"].empty());
}

// Jepsen's independent [K V] tuples: every failing key is named as EDN writes it (the string "a", the integer 1,
// the keyword :k), in the text and in --json, and the key that passes is not.
TEST(CheckCommand, EveryFailingIndependentKeyIsNamedAsWrittenAndOnlyThose) {
  const auto dir = temp_dir("CheckCommand", "independent");
  const auto path = dir / "independent.edn";
  std::ofstream out(path);
  for (const std::string key : {"\"a\"", "1", ":k", "\"ok\""}) {
    const std::string read = key == "\"ok\"" ? "5" : "6";
    out << "{:process 0, :type :invoke, :f :write, :value [" << key << " 5]}\n"
        << "{:process 0, :type :ok, :f :write, :value [" << key << " 5]}\n"
        << "{:process 1, :type :invoke, :f :read, :value [" << key << " nil]}\n"
        << "{:process 1, :type :ok, :f :read, :value [" << key << " " << read << "]}\n";
  }
  out.close();
  const Outcome text = run_lethe("check " + path.string());
  EXPECT_EQ(text.exit_code, 1) << text.out;
  EXPECT_NE(text.out.find("3 failing keys"), std::string::npos) << text.out;
  for (const std::string named : {"key \"a\" (2 ops)", "key 1 (2 ops)", "key :k (2 ops)"}) {
    EXPECT_NE(text.out.find(named), std::string::npos) << named << "\n" << text.out;
  }
  EXPECT_EQ(text.out.find("\"ok\""), std::string::npos) << text.out;
  const auto json = json_lines(run_lethe("check --json " + path.string()).out);
  ASSERT_EQ(json.size(), 1u);
  std::vector<std::string> keys;
  for (const auto& failing : json[0]["failing_keys"]) keys.push_back(failing["key"]);
  EXPECT_EQ(keys, (std::vector<std::string>{"\"a\"", "1", ":k"}));
}

// Knossos calls a history of nemesis ops only, or of failed ops only, valid: exit 0, and the line says there was
// nothing to order rather than only "linearizable (0 ops)".
TEST(CheckCommand, AHistoryWithNoClientOperationIsLinearizableSayingThereWasNothingToOrder) {
  const auto dir = temp_dir("CheckCommand", "nothing");
  std::ofstream(dir / "nemesis.edn") << "{:process :nemesis, :type :info, :f :start, :value nil}\n";
  std::ofstream(dir / "failed.edn") << "{:process 0, :type :invoke, :f :write, :value 1}\n"
                                       "{:process 0, :type :fail, :f :write, :value 1}\n";
  for (const std::string name : {"nemesis.edn", "failed.edn"}) {
    const Outcome o = run_lethe("check " + (dir / name).string());
    EXPECT_EQ(o.exit_code, 0) << o.out;
    EXPECT_NE(o.out.find("0 ops, 0 partitions): no client operation that took or may have taken effect"),
              std::string::npos) << o.out;
  }
}

TEST(CheckCommand, TheAnswerAndItsWindowDoNotDependOnTheNumberOfThreads) {
  const std::string files = " " + kData + "kv/c50-bad.txt " + kData + "kv/c10-bad.txt " + kData + "jepsen/etcd_000.log";
  const Outcome one = run_lethe("check -j 1" + files);
  const Outcome four = run_lethe("check -j 4" + files);
  EXPECT_EQ(one.exit_code, 1);
  EXPECT_EQ(four.exit_code, 1);
  EXPECT_EQ(one.out, four.out);
  EXPECT_NE(one.out.find("shortest failing window"), std::string::npos) << one.out;
}

TEST(CheckCommand, AnEmptyHistoryFileIsBadInputNamingTheFile) {
  const Outcome o = run_lethe("check " + kData + "jepsen/etcd_095.log");
  EXPECT_EQ(o.exit_code, 2) << o.out;
  EXPECT_NE(o.out.find("etcd_095.log: the file is empty"), std::string::npos) << o.out;
}

TEST(CheckCommand, ARanOutBudgetIsUnknownNamingThePartitionsAndWhy) {
  const Outcome o = run_lethe("check --budget 200 " + kData + "kv/c50-ok.txt");
  EXPECT_EQ(o.exit_code, 4) << o.out;
  EXPECT_NE(o.out.find("unknown"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("the step budget of 200 ran out"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("key \"0\""), std::string::npos) << o.out;
}

TEST(CheckCommand, BadInputExitsTwoNamingFileLineAndWhatWasExpected) {
  const auto dir = temp_dir("CheckCommand", "bad-input");
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {"truncated.edn", "{:process 0, :type :invoke, :f :get, :key \"1\", :value nil}\n{:process 0, :type :ok, :f :get",
       "truncated.edn:2:1: unclosed '{': the text ends before its closing '}'"},
      {"unknown-op.edn", "{:process 0, :type :invoke, :f :frob, :key \"1\", :value nil}\n",
       "unknown-op.edn:1:32: unknown operation :frob; allowed: :read, :write, :cas (register), :get, :put, :append (kv), "
       ":txn (multi-register), :acquire, :release (mutex), :add (set), :enqueue, :dequeue, :drain (queues)"},
      {"orphan.log", "INFO  jepsen.util - 0\t:invoke\t:read\tnil\nINFO  jepsen.util - 3\t:ok\t:read\t1\n",
       "orphan.log:2: a response (:ok :read) of process 3 without an invocation"},
      {"short.log", "INFO  jepsen.util - 0\t:invoke\n", "short.log:1:10: truncated: :F VALUE missing after the type; expected \"PROCESS :TYPE :F VALUE\""},
      {"field.jsonl", "{\"client\":1,\"invoked_at\":5,\"returned_at\":6,\"op\":{\"kind\":\"get\",\"key\":1},\"reply\":{\"applied\":true,\"previus\":null}}\n",
       "field.jsonl:1: unknown field \"previus\" in reply; allowed: applied, previous, previous_parts"},
      {"kind.jsonl", "{\"client\":1,\"invoked_at\":5,\"op\":{\"kind\":\"gte\",\"key\":1}}\n",
       "kind.jsonl:1: unknown op kind \"gte\"; allowed: get, put, delete, upsert, transaction, evict"},
  };
  for (const auto& [name, text, expected] : cases) {
    const auto path = dir / name;
    std::ofstream(path) << text;
    const Outcome o = shell(std::string(LETHE_BINARY_DIR) + "/lethe check " + path.string());
    EXPECT_EQ(o.exit_code, 2) << name << "\n" << o.out;
    EXPECT_NE(o.out.find(expected), std::string::npos) << name << "\n" << o.out;
  }
  const Outcome model = run_lethe("check --model store " + kData + "kv/c01-ok.txt");
  EXPECT_EQ(model.exit_code, 2) << model.out;
  EXPECT_NE(model.out.find("allowed models: register, cas-register, etcd-register, kv, multi-register"), std::string::npos) << model.out;
  const Outcome format = run_lethe("check --format edn " + kData + "kv/c01-ok.txt");
  EXPECT_EQ(format.exit_code, 2) << format.out;
  EXPECT_NE(format.out.find("allowed: auto, lethe, jepsen-edn, jepsen-log"), std::string::npos) << format.out;
}

}  // namespace check_command_test

namespace check_command_test {

// The last line of `lethe run --json` (a terminal may add progress lines before it).
nlohmann::json result_line(const std::string& out) {
  const auto lines = json_lines(out);
  return lines.empty() ? nlohmann::json() : lines.back();
}

TEST(CheckCommand, ARunsStoreHistoryIsJudgedByCheckAsTheRunJudgedIt) {
  const auto dir = temp_dir("CheckCommand", "run-history");
  for (const std::string scenario : {"lost-ack-double-charge", "herd-takeover-conditional", "check-then-insert-race",
                                     "poll-read-after-eviction"}) {
    const auto file = dir / (scenario + ".jsonl");
    const Outcome plain = run_lethe("run scenarios/" + scenario + ".toml --seed 2 --json");
    const Outcome with = run_lethe("run scenarios/" + scenario + ".toml --seed 2 --json --history " + file.string());
    const nlohmann::json plain_result = result_line(plain.out);
    const nlohmann::json with_result = result_line(with.out);
    ASSERT_TRUE(with_result.is_object()) << scenario << "\n" << with.out;
    // Writing the history changes nothing the run does or decides.
    EXPECT_EQ(with.exit_code, plain.exit_code) << scenario;
    EXPECT_EQ(with_result, plain_result) << scenario;
    ASSERT_TRUE(with_result["linearizable"].is_boolean()) << scenario << ": " << with_result.dump();
    const Outcome checked = run_lethe("check --json " + file.string());
    const auto verdict = json_lines(checked.out);
    ASSERT_EQ(verdict.size(), 1u) << scenario << "\n" << checked.out;
    EXPECT_EQ(verdict[0]["verdict"], with_result["linearizable"].get<bool>() ? "linearizable" : "not linearizable")
        << scenario;
    EXPECT_GT(verdict[0]["ops"].get<int>(), 0) << scenario;
    EXPECT_EQ(verdict[0]["model"], "store") << scenario;
  }
}

}  // namespace check_command_test

namespace check_command_test {

namespace fs = std::filesystem;

TEST(CheckPage, ThePageOfAFailingHistoryMarksItsWindowItsFailingResponseAndTheLinearizablePrefix) {
  const auto dir = temp_dir("CheckPage", "page");
  const auto page = dir / "etcd_000.html";
  const Outcome o = run_lethe("check " + kData + "jepsen/etcd_000.log --html " + page.string());
  EXPECT_EQ(o.exit_code, 1) << o.out;
  const std::string html = read_file(page);
  ASSERT_FALSE(html.empty()) << o.out;
  // One failing response, the window's other ops, and a prefix of steps with the state after each.
  std::size_t failing = 0;
  for (std::size_t at = html.find("<rect class=\"op window failing"); at != std::string::npos;
       at = html.find("<rect class=\"op window failing", at + 1)) {
    ++failing;
  }
  EXPECT_EQ(failing, 1u);
  EXPECT_NE(html.find("<rect class=\"op window\""), std::string::npos);
  EXPECT_NE(html.find("<td>1</td>"), std::string::npos);
  EXPECT_NE(html.find("process 11"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  // The same input gives the same bytes.
  const auto again = dir / "again.html";
  run_lethe("check " + kData + "jepsen/etcd_000.log --html " + again.string());
  EXPECT_EQ(read_file(again), html);
  // Several files are refused.
  const Outcome two = run_lethe("check " + kData + "jepsen/etcd_000.log " + kData + "jepsen/etcd_001.log --html x.html");
  EXPECT_EQ(two.exit_code, 2) << two.out;
}

// A window of 1,001 operations (1,000 sequential writes, then a read of a value never written): the page shows the
// 1,000 steps that explain everything before the failing read, not an empty prefix.
TEST(CheckPage, ALongFailingWindowShowsItsLongestLinearizablePrefix) {
  const auto dir = temp_dir("CheckPage", "long-window");
  const auto history = dir / "long.edn";
  std::ofstream out(history);
  for (int i = 0; i < 1000; ++i) {
    out << "{:process 0, :type :invoke, :f :write, :value " << i << "}\n{:process 0, :type :ok, :f :write, :value " << i << "}\n";
  }
  out << "{:process 1, :type :invoke, :f :read, :value nil}\n{:process 1, :type :ok, :f :read, :value -7}\n";
  out.close();
  const auto page = dir / "long.html";
  const Outcome o = run_lethe("check " + history.string() + " --html " + page.string());
  EXPECT_EQ(o.exit_code, 1) << o.out;
  const std::string html = read_file(page);
  EXPECT_NE(html.find("Longest linearizable prefix found (1000 steps)"), std::string::npos) << o.out;
  EXPECT_NE(html.find("<td>1000</td><td>0</td><td><a href=\"#op-999\">write(999)</a>"), std::string::npos);
  EXPECT_EQ(html.find("may not be the longest"), std::string::npos);
  fs::remove_all(dir);
}

TEST(CheckPage, ThePageOfALinearizableHistoryDrawsEveryOperationWithNoWindowAndSaysItIsLinearizable) {
  const auto dir = temp_dir("CheckPage", "linearizable");
  const auto page = dir / "etcd_002.html";
  const Outcome o = run_lethe("check " + kData + "jepsen/etcd_002.log --html " + page.string());
  EXPECT_EQ(o.exit_code, 0) << o.out;
  const std::string html = read_file(page);
  ASSERT_FALSE(html.empty()) << o.out;
  EXPECT_NE(html.find("<p class=\"verdict ok\">linearizable"), std::string::npos) << html.substr(0, 3000);
  EXPECT_NE(html.find("Linearizable: every partition has an order"), std::string::npos);
  EXPECT_EQ(html.find("op window"), std::string::npos);  // nothing failing, no window
  EXPECT_EQ(html.find("Longest linearizable prefix"), std::string::npos);
  // Every operation of the history is a bar: as many as the check counted.
  const auto verdict = json_lines(run_lethe("check " + kData + "jepsen/etcd_002.log --json").out).at(0);
  std::size_t bars = 0;
  for (std::size_t at = html.find("<rect class=\"op"); at != std::string::npos; at = html.find("<rect class=\"op", at + 1)) ++bars;
  EXPECT_EQ(bars, verdict["ops"].get<std::size_t>());
  fs::remove_all(dir);
}

// A lethe store history of 400 messages: a lane per key named by its message (not 0x100000000000000e), each on
// its own scale so its few operations are wide enough to label, and the keys past the page's limit counted.
TEST(CheckPage, ALinearizableStoreHistoryIsDrawnOneLanePerMessageWithLabelsThatFitTheirBars) {
  const auto dir = temp_dir("CheckPage", "by-key");
  const auto history = dir / "h.jsonl";
  ASSERT_LE(run_lethe("run scenarios/crash-window-after-effect.toml --seed 1 --history " + history.string()).exit_code, 1);
  const auto page = dir / "h.html";
  const Outcome o = run_lethe("check " + history.string() + " --html " + page.string());
  EXPECT_EQ(o.exit_code, 0) << o.out;
  const std::string html = read_file(page);
  EXPECT_NE(html.find("<text class=\"lane\" x=\"4\" y=\"35.0\">message 0</text>"), std::string::npos);
  EXPECT_EQ(html.find(">process 5<"), std::string::npos) << "lanes are keys, not processes";
  EXPECT_EQ(html.find("0x1000"), std::string::npos) << "no key in hex";
  EXPECT_NE(html.find("340 more keys not drawn"), std::string::npos);
  EXPECT_NE(html.find(">p7 upsert<"), std::string::npos) << "a label that fits its bar";
  fs::remove_all(dir);
}

// The failing response against the state the longest prefix leaves: a write(1) of unknown outcome explains a read
// of 1, not the read of 3 the history has.
TEST(CheckPage, TheFailingOperationIsShownWithTheStateBeforeItAndTheModelsAnswerBesideTheRecordedOne) {
  const auto dir = temp_dir("CheckPage", "answer");
  const auto page = dir / "bad.html";
  const Outcome o = run_lethe("check tests/data/knossos/cas-register/bad/bad-analysis.edn --html " + page.string());
  EXPECT_EQ(o.exit_code, 1) << o.out;
  const std::string html = read_file(page);
  EXPECT_NE(html.find("leaves the state <code>1</code>. From it the model answers the red operation</p>\n<pre>read() "
                      "-&gt; 1</pre>\n<p>but the history says</p>\n<pre>read() -&gt; 3</pre>"),
            std::string::npos)
      << html;
  fs::remove_all(dir);
}

// A page as headless Chromium shows it: how many colours its screenshot has, the share that is not white, and
// the DOM after parsing. Empty `dom` when chromium is not installed.
struct Shown {
  int colours = 0;
  double nonwhite = 0;
  std::string dom;
  std::string trouble;  // why there is no screenshot
};

std::string chromium() {
  for (const char* name : {"chromium", "chromium-browser"}) {
    if (shell(std::string("command -v ") + name + " >/dev/null").exit_code == 0) return name;
  }
  return "";
}

Shown show(const fs::path& dir, const fs::path& page, const fs::path& png) {
  Shown shown;
  const std::string flags = " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
                            "--disable-background-networking --disable-component-update --disable-sync "
                            "--user-data-dir=" + (dir / "profile").string();
  const std::string url = " file://" + page.string();
  const auto shot = shell("timeout 180 " + chromium() + flags + " --screenshot=" + png.string() + " --window-size=1300,1000" + url);
  if (!fs::exists(png)) {
    shown.trouble = "exit " + std::to_string(shot.exit_code) + ": " + shot.out;
    return shown;
  }
  const auto stats = shell(std::string("python3 ") + LETHE_SOURCE_DIR + "/tests/runner/png_stats.py " + png.string());
  std::smatch m;
  if (!std::regex_search(stats.out, m, std::regex(R"(distinct=(\d+) nonwhite=([0-9.]+))"))) {
    shown.trouble = stats.out;
    return shown;
  }
  shown.colours = std::stoi(m[1]);
  shown.nonwhite = std::stod(m[2]);
  shown.dom = shell("timeout 180 " + chromium() + flags + " --dump-dom" + url + " 2>/dev/null").out;
  return shown;
}

TEST(CheckPageSlow, HeadlessChromiumShowsANonBlankPageWhoseDomHoldsTheFailingOperation) {
  if (chromium().empty()) GTEST_SKIP() << "chromium is not installed (scripts/setup installs it)";
  const auto dir = temp_dir("CheckPageSlow", "chromium");
  ASSERT_EQ(run_lethe("check " + kData + "jepsen/etcd_000.log --html " + (dir / "page.html").string()).exit_code, 1);
  const Shown shown = show(dir, dir / "page.html", dir / "shot.png");
  ASSERT_TRUE(shown.trouble.empty()) << shown.trouble;
  EXPECT_GE(shown.colours, 50);       // a blank page is one colour
  EXPECT_GE(shown.nonwhite, 0.05);    // lanes and bars cover a real share
  // The browser's DOM (the SVG parsed into the page): the failing operation's bar.
  EXPECT_TRUE(std::regex_search(shown.dom, std::regex(R"(<g class="op window failing" id="op-\d+"><rect )"))) << shown.dom.substr(0, 2000);
  fs::remove_all(dir);
}

TEST(CheckPageSlow, HeadlessChromiumShowsALinearizableHistorysPageWithItsOperationsAndNoFailingOne) {
  if (chromium().empty()) GTEST_SKIP() << "chromium is not installed (scripts/setup installs it)";
  const auto dir = temp_dir("CheckPageSlow", "linearizable");
  ASSERT_EQ(run_lethe("check " + kData + "jepsen/etcd_002.log --html " + (dir / "page.html").string()).exit_code, 0);
  const Shown shown = show(dir, dir / "page.html", dir / "shot.png");
  ASSERT_TRUE(shown.trouble.empty()) << shown.trouble;
  EXPECT_GE(shown.colours, 50);
  EXPECT_GE(shown.nonwhite, 0.05);
  EXPECT_TRUE(std::regex_search(shown.dom, std::regex(R"(<g class="op" id="op-0"><rect )"))) << shown.dom.substr(0, 2000);
  EXPECT_EQ(shown.dom.find("op window"), std::string::npos);
  EXPECT_NE(shown.dom.find("Linearizable: every partition"), std::string::npos);
  fs::remove_all(dir);
}

TEST(CheckPageSlow, HeadlessChromiumShowsTheIncidentPageOfAnEventLogWithItsDuplicateMarked) {
  if (chromium().empty()) GTEST_SKIP() << "chromium is not installed (scripts/setup installs it)";
  const auto dir = temp_dir("CheckPageSlow", "events");
  const std::string log = (dir / "events.jsonl").string();
  ASSERT_EQ(run_lethe("run scenarios/lost-ack-double-charge.toml --events " + log).exit_code, 0);
  ASSERT_EQ(run_lethe("check --events " + log + " --html " + (dir / "page.html").string()).exit_code, 1);
  const Shown shown = show(dir, dir / "page.html", dir / "shot.png");
  ASSERT_TRUE(shown.trouble.empty()) << shown.trouble;
  EXPECT_GE(shown.colours, 50);
  EXPECT_GE(shown.nonwhite, 0.05);
  // The first duplicate (message 21, attempt 24, as lethe replay's page marks it) and the page's source.
  EXPECT_TRUE(std::regex_search(shown.dom, std::regex(R"(<g class="duplicate" id="duplicate-21-24"><circle )")))
      << shown.dom.substr(0, 2000);
  EXPECT_NE(shown.dom.find("Drawn from an event log by"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace check_command_test
