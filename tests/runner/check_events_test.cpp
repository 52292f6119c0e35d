// `lethe check --events` from the command line: a run's own event log judged as the run judged itself, its exit
// codes, bad input naming file, line and field, `lethe live --history` judged by `lethe check`, and the incident
// page drawn from events in headless Chromium.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "check/events.hpp"
#include "support.hpp"

namespace check_events_test {

using namespace test_support;  // shell, run_lethe, temp_dir, read_file (tests/runner/support.hpp)
namespace fs = std::filesystem;

// The one-line JSON object in lethe's output: the first line that opens one (stderr is interleaved, and a
// sanitizer build may warn there first, e.g. about the fibers' stack switches).
nlohmann::json printed_json(const std::string& out) {
  const std::size_t start = out.rfind('{', 0) == 0 ? 0 : out.find("\n{") + 1;
  return nlohmann::json::parse(out.substr(start, out.find('\n', start) - start));
}

TEST(CheckEvents, ARunsEventLogIsJudgedFromTheCommandLineAsTheRunJudgedItself) {
  const auto dir = temp_dir("CheckEvents", "run");
  const std::string log = (dir / "events.jsonl").string();
  const Outcome run = run_lethe("run scenarios/crash-window-after-effect.toml --seed 2 --json --events " + log);
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const Outcome check = run_lethe("check --events " + log + " --json");
  EXPECT_EQ(check.exit_code, 1) << check.out;  // duplicates: not effectively once
  const auto simulated = printed_json(run.out);
  const auto judged = printed_json(check.out);
  for (const auto& [key, value] : simulated.items()) {
    if (std::find(lethe::events::kFieldsNotFromEvents.begin(), lethe::events::kFieldsNotFromEvents.end(), key) !=
        lethe::events::kFieldsNotFromEvents.end()) {
      continue;
    }
    EXPECT_EQ(judged[key], value) << key;
  }
  EXPECT_GT(judged["duplicates"]["crash_after_effect"].get<int>(), 0);
  EXPECT_FALSE(judged["cannot_tell_apart"].empty());
  const Outcome text = run_lethe("check --events " + log);
  EXPECT_NE(text.out.find("what these events cannot tell apart:"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("[crash_after_effect] at "), std::string::npos) << text.out;
  // lethe replay writes the same log, byte for byte (one seed, one log).
  const std::string again = (dir / "replayed.jsonl").string();
  ASSERT_EQ(run_lethe("replay scenarios/crash-window-after-effect.toml --seed 2 --events " + again).exit_code, 0);
  EXPECT_EQ(read_file(again), read_file(log));
  // A clean run's log exits 0.
  ASSERT_EQ(run_lethe("run scenarios/mnemosyne-lossy-crashes.toml --events " + (dir / "clean.jsonl").string()).exit_code, 0);
  const Outcome clean = run_lethe("check --events " + (dir / "clean.jsonl").string());
  EXPECT_EQ(clean.exit_code, 0) << clean.out;
  fs::remove_all(dir);
}

TEST(CheckEvents, BadEventLinesExitTwoNamingFileLineFieldAndWhatWasExpected) {
  const auto dir = temp_dir("CheckEvents", "bad");
  const std::string run_line = R"({"event":"run","protocol":"mnemosyne","processors":["billing"]})";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"event":"delivery","at":"soon","id":1,"processor":"billing","node":"a","attempt":1})",
       R"(bad.jsonl:2: field "at": expected integer nanoseconds, found "soon")"},
      {R"({"event":"delivery","at":1,"id":1,"processor":"email","node":"a","attempt":1})",
       R"(bad.jsonl:2: field "processor": unknown processor "email"; allowed (the run line's): billing)"},
      {R"({"event":"outcome","at":1,"attempt":9,"outcome":"executed"})",
       R"(bad.jsonl:2: field "attempt": attempt 9 has no delivery line: expected a delivery of it)"},
      {R"({"event":"retry","at":1})", R"(bad.jsonl:2: field "event": unknown kind "retry"; allowed: run, publish)"},
      {R"({"event":"delivery","at":1,)", R"(bad.jsonl:2: not a JSON object)"},
      {R"({"event":"member","at":1,"processor":"billing","node":"a","reason":"bored"})",
       R"(bad.jsonl:2: field "reason": expected "session_timeout" or "max_poll_interval", found "bored")"},
      {R"({"event":"member","at":1,"processor":"billing","node":"a","reason":"session_timeout","held":[-1]})",
       R"(bad.jsonl:2: field "held": expected an array of message ids)"},
      {R"({"event":"refused","at":1,"attempt":4})",
       R"(bad.jsonl:2: field "attempt": attempt 4 has no delivery line: expected a delivery of it)"},
  };
  for (const auto& [line, expected] : cases) {
    std::ofstream(dir / "bad.jsonl") << run_line << "\n" << line << "\n";
    const Outcome o = run_lethe("check --events " + (dir / "bad.jsonl").string());
    EXPECT_EQ(o.exit_code, 2) << line;
    EXPECT_NE(o.out.find(expected), std::string::npos) << o.out;
  }
  std::ofstream(dir / "norun.jsonl") << R"({"event":"publish","id":1})" << "\n";
  const Outcome norun = run_lethe("check --events " + (dir / "norun.jsonl").string());
  EXPECT_EQ(norun.exit_code, 2);
  EXPECT_NE(norun.out.find("norun.jsonl:1: the first event is \"publish\": expected the run line"), std::string::npos)
      << norun.out;
  EXPECT_EQ(run_lethe("check --events --model kv " + (dir / "bad.jsonl").string()).exit_code, 2);
  fs::remove_all(dir);
}

TEST(CheckEvents, ALiveRunsStoreHistoryAndEventLogAreJudgedByCheck) {
  const auto dir = temp_dir("CheckEvents", "live");
  const Outcome live = run_lethe("live --store memory --messages 60 --crash-after-effect 0.1 --history " +
                                 (dir / "history.jsonl").string() + " --events " + (dir / "events.jsonl").string() +
                                 " --json");
  ASSERT_EQ(live.exit_code, 0) << live.out;
  const auto result = nlohmann::json::parse(live.out);
  const Outcome history = run_lethe("check " + (dir / "history.jsonl").string() + " --json");
  EXPECT_EQ(history.exit_code, 0) << history.out;
  const auto verdict = nlohmann::json::parse(history.out);
  EXPECT_EQ(verdict["verdict"], "linearizable") << history.out;
  EXPECT_EQ(verdict["ops"], result["live"]["operations"]) << history.out;
  const Outcome events = run_lethe("check --events " + (dir / "events.jsonl").string() + " --json");
  const auto judged = nlohmann::json::parse(events.out);
  EXPECT_EQ(judged["duplicates"], result["duplicates"]);
  EXPECT_EQ(judged["recovery_latency"], result["recovery_latency"]);
  EXPECT_EQ(judged["memo_mismatches"], result["memo_mismatches"]);
  fs::remove_all(dir);
}

}  // namespace check_events_test
