// run.schedule at the scenario level: the key, its errors, the result field, the trace hash, and a race that
// only some schedules show (scenarios/same-instant-check-then-insert.toml), replayed identically on one thread
// and on several.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/runner/support.hpp"
#include "world/world.hpp"

namespace schedule_test {

using test_support::load_config;
using test_support::run_lethe;

const std::string kRace = std::string(LETHE_SOURCE_DIR) + "/scenarios/same-instant-check-then-insert.toml";
const std::string kLostAck = std::string(LETHE_SOURCE_DIR) + "/scenarios/lost-ack-double-charge.toml";

lethe::RunResult run(const std::string& file, const std::string& schedule, std::uint64_t seed) {
  return lethe::run_world(load_config(file, {"run.schedule=" + schedule}), seed);
}

TEST(Schedule, TheKeyReadsEveryPolicyAndRefusesAnythingElseNamingTheKeyAndTheAllowedValues) {
  EXPECT_EQ(load_config(kLostAck).run.schedule.kind, lethe::ScheduleKind::Fifo);  // the default
  EXPECT_EQ(load_config(kLostAck, {"run.schedule=random"}).run.schedule.kind, lethe::ScheduleKind::Random);
  const lethe::Schedule pct = load_config(kLostAck, {"run.schedule=pct(depth=5)"}).run.schedule;
  EXPECT_EQ(pct.kind, lethe::ScheduleKind::Pct);
  EXPECT_EQ(pct.depth, 5);
  // The renderer writes it back as the loader reads it.
  lethe::ScenarioConfig with_pct = load_config(kLostAck, {"run.schedule=pct(depth=7)"});
  const std::string text = scenario::render_scenario_toml(with_pct);
  EXPECT_NE(text.find("schedule = \"pct(depth=7)\""), std::string::npos) << text;
  auto reloaded = scenario::load_scenario_text(text, "rendered.toml", ".", {});
  ASSERT_TRUE(std::holds_alternative<lethe::ScenarioConfig>(reloaded));
  EXPECT_EQ(std::get<lethe::ScenarioConfig>(reloaded).run.schedule.depth, 7);
  EXPECT_EQ(std::get<lethe::ScenarioConfig>(reloaded).run.schedule.kind, lethe::ScheduleKind::Pct);
  for (const std::string bad : {"lifo", "pct", "pct(depth=0)", "pct(depth=101)", "pct(depth=2.5)", "pct(d=3)",
                                "pct(depth=3, steps=9)", "random(3)"}) {
    const auto outcome = run_lethe("run scenarios/lost-ack-double-charge.toml --set 'run.schedule=" + bad + "'");
    EXPECT_EQ(outcome.exit_code, 2) << bad << ": " << outcome.out;
    EXPECT_NE(outcome.out.find("run.schedule"), std::string::npos) << bad << ": " << outcome.out;
    EXPECT_NE(outcome.out.find("pct(depth=N)"), std::string::npos) << bad << ": " << outcome.out;
  }
}

TEST(Schedule, FifoLeavesTheResultAsItWasAndTheOthersAreRecordedInTheResultAndTheTraceHash) {
  const lethe::RunResult fifo = run(kLostAck, "fifo", 3);
  const lethe::RunResult fifo_default = lethe::run_world(load_config(kLostAck), 3);
  EXPECT_TRUE(fifo.schedule.empty());
  // Pinned: the hash this seed had before schedule policies existed (tests/baseline/results.txt).
  EXPECT_EQ(fifo.trace_hash, 0xd17c10ac4f68a5c7ULL);
  EXPECT_EQ(fifo.trace_hash, fifo_default.trace_hash);
  EXPECT_EQ(fifo.trace_events, fifo_default.trace_events);
  const lethe::RunResult random = run(kLostAck, "random", 3);
  const lethe::RunResult pct = run(kLostAck, "pct(depth=3)", 3);
  EXPECT_EQ(random.schedule, std::vector<std::string>{"random"});
  EXPECT_EQ(pct.schedule, std::vector<std::string>{"pct(depth=3)"});
  EXPECT_NE(random.trace_hash, fifo.trace_hash);
  EXPECT_NE(pct.trace_hash, fifo.trace_hash);
  EXPECT_NE(pct.trace_hash, run(kLostAck, "pct(depth=4)", 3).trace_hash);
  // The JSON names it for the other policies only.
  const auto json = run_lethe("run scenarios/lost-ack-double-charge.toml --seed 3 --json");
  EXPECT_EQ(json.out.find("\"schedule\""), std::string::npos) << json.out;
  const auto pct_json =
      run_lethe("run scenarios/lost-ack-double-charge.toml --seed 3 --json --set 'run.schedule=pct(depth=3)'");
  EXPECT_NE(pct_json.out.find("\"schedule\":[\"pct(depth=3)\"]"), std::string::npos) << pct_json.out;
}

TEST(Schedule, TheSameInstantRaceShowsUnderRandomAndPctButNeverUnderFifo) {
  std::set<std::uint64_t> pct_failing;
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    const lethe::RunResult fifo = run(kRace, "fifo", seed);
    const lethe::RunResult random = run(kRace, "random", seed);
    EXPECT_EQ(fifo.duplicate_effects, 0u) << "seed " << seed;
    EXPECT_GE(random.duplicates[static_cast<std::size_t>(lethe::Cause::Unprotected)], 1u) << "seed " << seed;
    EXPECT_NE(random.trace_hash, fifo.trace_hash);
    const lethe::RunResult pct = run(kRace, "pct(depth=3)", seed);
    if (pct.duplicate_effects > 0) pct_failing.insert(seed);
    // The same seed replays the same interleaving.
    EXPECT_EQ(run(kRace, "random", seed).trace_hash, random.trace_hash) << "seed " << seed;
    EXPECT_EQ(run(kRace, "pct(depth=3)", seed).trace_hash, pct.trace_hash) << "seed " << seed;
  }
  // PCT keeps each fiber's priority until a change point: it shows the race on some seeds, not all.
  EXPECT_GE(pct_failing.size(), 1u);
  EXPECT_LT(pct_failing.size(), 12u);
}

// seed -> trace hash, from `lethe suite --json`.
std::map<std::uint64_t, std::string> suite_hashes(const std::string& schedule, int jobs) {
  const auto dir = test_support::temp_dir("schedule", schedule.substr(0, 3) + std::to_string(jobs));
  const std::string out = (dir / "results.jsonl").string();
  const auto outcome = run_lethe("suite scenarios/same-instant-check-then-insert.toml --seeds 8 -j " +
                                 std::to_string(jobs) + " --json " + out + " --set 'run.schedule=" + schedule + "'");
  std::map<std::uint64_t, std::string> hashes;
  std::istringstream lines(test_support::read_file(out));
  for (std::string line; std::getline(lines, line);) {
    const auto seed_at = line.find("\"seed\":");
    const auto hash_at = line.find("\"trace_hash\":\"");
    if (seed_at == std::string::npos || hash_at == std::string::npos) continue;
    hashes[std::stoull(line.substr(seed_at + 7))] = line.substr(hash_at + 14, 16);
  }
  return hashes;
}

TEST(Schedule, ARandomAndAPctSeedGiveTheSameTraceHashOnOneThreadAndOnSeveral) {
  for (const std::string schedule : {"random", "pct(depth=3)"}) {
    const auto one = suite_hashes(schedule, 1);
    EXPECT_EQ(one.size(), 8u) << schedule;
    EXPECT_EQ(one, suite_hashes(schedule, 4)) << schedule;
    // And `lethe run` of one seed gives the suite's hash.
    const auto single = run_lethe("run scenarios/same-instant-check-then-insert.toml --seed 6 --json --set 'run.schedule=" +
                                  schedule + "'");
    EXPECT_NE(single.out.find("\"trace_hash\":\"" + one.at(6) + "\""), std::string::npos) << single.out;
  }
}

}  // namespace schedule_test
