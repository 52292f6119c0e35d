// The checker as a library: this executable links lethe_check alone (no simulator, no Boost.Fiber, no world),
// reads histories with check/history.hpp and checks them with lethe::lin::check.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <variant>

#include "check/events.hpp"
#include "check/history.hpp"
#include "check/linearizability_batch.hpp"

namespace {

std::string read(const std::string& relative) {
  std::ifstream in(std::string(LETHE_SOURCE_DIR) + "/" + relative, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(CheckLibrary, LinkedAloneItReadsAndJudgesJepsenHistories) {
  const std::string etcd = "tests/data/porcupine/jepsen/etcd_002.log";
  const auto registers = std::get<lethe::history::RegisterHistory>(lethe::history::read_history(etcd, read(etcd)));
  EXPECT_EQ(lethe::lin::check<lethe::RegisterModel>(registers.ops).verdict, lethe::lin::Verdict::Linearizable);
  const std::string kv = "tests/data/porcupine/kv/c10-bad.txt";
  const auto map = std::get<lethe::history::KvHistory>(lethe::history::read_history(kv, read(kv)));
  EXPECT_EQ(lethe::lin::check<lethe::KvModel>(map.ops).verdict, lethe::lin::Verdict::NotLinearizable);
}

// A log a consumer could write by hand: worker-a ran the effect of message 7 and crashed before its completion
// record; worker-b found the record stale, took it over and ran the effect again.
constexpr const char* kCrashLog = R"({"event":"run","protocol":"mnemosyne","processors":["billing"]}
{"event":"publish","id":7}
{"event":"delivery","at":1000,"id":7,"processor":"billing","node":"worker-a","attempt":1}
{"event":"decision","at":2000,"attempt":1,"basis":"absent"}
{"event":"execution","at":5000,"attempt":1,"value":41}
{"event":"crash","at":6000,"node":"worker-a"}
{"event":"delivery","at":90000,"id":7,"processor":"billing","node":"worker-b","attempt":2}
{"event":"decision","at":91000,"attempt":2,"basis":"stale_takeover","seen":{"owner":1,"started_at":2000}}
{"event":"execution","at":95000,"attempt":2,"value":42}
{"event":"completion","at":96000,"attempt":2}
{"event":"outcome","at":97000,"attempt":2,"outcome":"executed","value":42}
)";

TEST(CheckLibrary, LinkedAloneItJudgesAConsumersEventLogWithTheOracle) {
  const lethe::events::EventLog log = lethe::events::read_events({{"crash.jsonl", kCrashLog}});
  const lethe::RunResult r = lethe::events::judge_events(log);
  EXPECT_EQ(r.effects, 2u);
  EXPECT_EQ(r.duplicate_effects, 1u);
  EXPECT_EQ(r.duplicates[static_cast<std::size_t>(lethe::Cause::CrashAfterEffect)], 1u);
  EXPECT_EQ(r.lost_messages, 0u);
  EXPECT_EQ(r.memo_mismatches, 1u);  // attempt 2 handed its caller 42; the first execution gave 41
  ASSERT_EQ(r.recovery_latency.count, 1u);
  EXPECT_EQ(r.recovery_latency.max, 96000 - 6000);
  ASSERT_EQ(r.explanations.size(), 1u);
  EXPECT_NE(r.explanations[0].because.find("attempt 1 on worker-a"), std::string::npos) << r.explanations[0].because;
}

TEST(CheckLibrary, AnEventLogSplitIntoOneFilePerNodeIsJudgedAsTheWholeLog) {
  std::istringstream in(kCrashLog);
  std::string run_line;
  std::getline(in, run_line);
  std::string first = run_line + "\n";   // publish and worker-a's lines
  std::string second = run_line + "\n";  // worker-b's lines, the provider's execution among them
  int number = 1;
  for (std::string line; std::getline(in, line); ++number) (number < 6 ? first : second) += line + "\n";
  const lethe::RunResult whole = lethe::events::judge_events(lethe::events::read_events({{"all", kCrashLog}}));
  const lethe::RunResult split =
      lethe::events::judge_events(lethe::events::read_events({{"b", second}, {"a", first}}));
  EXPECT_EQ(split.duplicates, whole.duplicates);
  EXPECT_EQ(split.recovery_latency.max, whole.recovery_latency.max);
  ASSERT_EQ(split.explanations.size(), 1u);
  EXPECT_EQ(split.explanations[0].because, whole.explanations[0].because);
}

TEST(CheckLibrary, WithoutTheProvidersLogTheWorkersEffectLinesStandInAndTheOutputSaysWhatThatHides) {
  std::string log = kCrashLog;
  for (std::size_t at = log.find("\"execution\""); at != std::string::npos; at = log.find("\"execution\"", at)) {
    log.replace(at, 11, "\"effect\"");
  }
  const lethe::events::EventLog events = lethe::events::read_events({{"effects.jsonl", log}});
  EXPECT_FALSE(events.provider_log);
  const lethe::RunResult r = lethe::events::judge_events(events);
  EXPECT_EQ(r.duplicates[static_cast<std::size_t>(lethe::Cause::CrashAfterEffect)], 1u);
  EXPECT_EQ(r.sink_calls, 2u);  // the effect lines
  const std::vector<std::string> limits = lethe::events::limits_of(events, r);
  ASSERT_FALSE(limits.empty());
  EXPECT_NE(limits.front().find("sink_retry cannot be told from a second execution"), std::string::npos) << limits.front();
}

TEST(CheckLibrary, AnEventLineWithAMissingFieldNamesTheFileLineAndField) {
  std::string log = kCrashLog;
  log.replace(log.find(R"("basis":"stale_takeover",)"), 25, "");
  try {
    (void)lethe::events::read_events({{"crash.jsonl", log}});
    FAIL() << "read a decision without a basis";
  } catch (const lethe::history::Error& e) {
    EXPECT_EQ(std::string(e.what()), "crash.jsonl:8: field \"basis\" is missing: expected a non-empty string");
  }
}

}  // namespace
