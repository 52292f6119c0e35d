// The event log round trip: a simulated run's result equals what `lethe check --events` computes from the run's
// own event log, field by field (every field of RunResult's table but check/events.hpp's kFieldsNotFromEvents),
// and explanation by explanation, for every scenario of the library (seed 1, and seeds 2..3 for a few).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

#include "check/event_spool.hpp"
#include "check/events.hpp"
#include "reports/json.hpp"
#include "runner/events.hpp"
#include "runner/execute.hpp"
#include "tests/live/live_support.hpp"
#include "tests/runner/support.hpp"

namespace events_roundtrip_test {

namespace events = lethe::events;

struct Judged {
  lethe::RunResult simulated;
  lethe::RunResult from_events;  // the log read whole
  std::string log;
  std::string folded_differs;    // how the log read folding was judged otherwise ("" when alike)
};

// Where the judgements of a log read whole and read folding differ: the whole result JSON, explanations included,
// and what the log cannot tell apart.
std::string folding_differences(const std::string& log) {
  const auto judged = [&log](bool fold) {
    const events::EventLog read = events::read_events({{"log", log}}, fold);
    const lethe::RunResult result = events::judge_events(read);
    auto json = reports::to_json(result);
    json["cannot_tell_apart"] = events::limits_of(read, result);
    return json;
  };
  const auto whole = judged(false);
  const auto folded = judged(true);
  std::string out;
  for (const auto& [key, value] : whole.items()) {
    if (!folded.contains(key) || folded[key] != value) out += key + ": whole " + value.dump().substr(0, 300) + "\n";
  }
  return out;
}

Judged round_trip(const lethe::ScenarioConfig& config, std::uint64_t seed) {
  lethe::WorldOptions options;
  options.keep_trace = true;
  lethe::WorldRecord record;
  const auto run = runner::run_seed(config, seed, options, &record);
  if (!run.error.empty()) throw std::runtime_error(run.error);
  std::ostringstream lines;
  events::write_events(lines, runner::event_log_of(config, record, run.result));
  const events::EventLog log = events::read_events({{config.scenario.name, lines.str()}});
  return Judged{run.result, events::judge_events(log), lines.str(), folding_differences(lines.str())};
}

Judged round_trip(const std::filesystem::path& file, std::uint64_t seed) {
  return round_trip(test_support::load_config(file), seed);
}

// The lines of `log` of one kind (`of_kind`), or every other line.
std::string lines_of(const std::string& log, const std::string& kind, bool of_kind = true) {
  std::istringstream in(log);
  std::string out;
  for (std::string line; std::getline(in, line);) {
    if ((line.find("\"event\":\"" + kind + "\"") != std::string::npos) == of_kind) out += line + "\n";
  }
  return out;
}

// The same log with every line of one kind left out, judged again.
lethe::RunResult judged_without(const std::string& log, const std::string& kind) {
  return events::judge_events(events::read_events({{"log", lines_of(log, kind, false)}}));
}

bool derived(std::string_view field) {
  return std::find(events::kFieldsNotFromEvents.begin(), events::kFieldsNotFromEvents.end(), field) ==
         events::kFieldsNotFromEvents.end();
}

// Every difference in the fields the events give, one line each ("" when none).
std::string differences(const Judged& j) {
  std::string out;
  const auto simulated = reports::to_json(j.simulated);
  const auto from_events = reports::to_json(j.from_events);
  for (const lethe::ResultField& field : lethe::result_fields()) {
    if (!derived(field.name)) continue;
    const std::string key(field.name);
    const auto a = simulated.contains(key) ? simulated[key].dump() : "(absent)";
    const auto b = from_events.contains(key) ? from_events[key].dump() : "(absent)";
    if (a != b) out += key + ": run " + a + ", events " + b + "\n";
  }
  if (j.simulated.explanations.size() != j.from_events.explanations.size()) {
    out += "explanations: counts differ\n";
  } else {
    for (std::size_t i = 0; i < j.simulated.explanations.size(); ++i) {
      const auto& x = j.simulated.explanations[i];
      const auto& y = j.from_events.explanations[i];
      if (x.because != y.because || x.cause != y.cause || x.at != y.at || x.first_attempt != y.first_attempt) {
        out += "explanation " + std::to_string(i) + ": run \"" + x.because + "\", events \"" + y.because + "\"\n";
      }
    }
  }
  if (j.simulated.memo_explanations.size() != j.from_events.memo_explanations.size()) {
    out += "memo_explanations: counts differ\n";
  } else {
    for (std::size_t i = 0; i < j.simulated.memo_explanations.size(); ++i) {
      if (j.simulated.memo_explanations[i].because != j.from_events.memo_explanations[i].because) {
        out += "memo explanation " + std::to_string(i) + " differs\n";
      }
    }
  }
  return out;
}

std::vector<std::filesystem::path> library() {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(LETHE_SOURCE_DIR) / "scenarios")) {
    if (entry.is_regular_file() && entry.path().extension() == ".toml") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Slow: every scenario of the library (over seven minutes under the sanitizers, which run the other round trips).
TEST(EventLogRoundTripSlow, EveryLibraryScenarioSeed1GivesTheSameResultFieldsFromItsOwnEventLog) {
  const auto files = library();
  ASSERT_GE(files.size(), 40u);
  std::size_t with_duplicates = 0;
  for (const auto& file : files) {
    const Judged j = round_trip(file, 1);
    EXPECT_EQ(differences(j), "") << file.filename();
    EXPECT_EQ(j.folded_differs, "") << file.filename();
    if (j.simulated.duplicate_effects > 0) ++with_duplicates;
  }
  EXPECT_GE(with_duplicates, 20u) << "the library's failures must be in the comparison";
}

TEST(EventLogRoundTrip, SeveralSeedsOfScenariosWithEveryKindOfEventGiveTheSameResultFields) {
  for (const char* name : {"crash-window-after-effect", "slow-work-mpt-too-low", "ttl-shorter-than-redelivery",
                           "lost-ack-double-charge", "saga-double-refund-lost-ack"}) {
    for (std::uint64_t seed : {2, 3}) {
      const Judged j = round_trip(std::filesystem::path(LETHE_SOURCE_DIR) / "scenarios" / (std::string(name) + ".toml"), seed);
      EXPECT_EQ(differences(j), "") << name << " seed " << seed;
      EXPECT_EQ(j.folded_differs, "") << name << " seed " << seed;
    }
  }
}

// A live run against the in-memory store, with kills after the start and after the effect and slow effects (so
// crashes, takeovers, waits and recoveries are in the log), judged from its own event log.
TEST(EventLogRoundTrip, ALiveRunAgainstTheMemoryStoreGivesTheSameResultFieldsFromItsOwnEventLog) {
  live::LiveSettings s = live_test::quiet_settings("memory", "atomic");
  s.faults.crash_after_start = 0.05;
  s.faults.crash_after_effect = 0.05;
  s.faults.slow = 0.05;
  s.keep_events = true;
  const live::LiveOutcome o = live::run_live(s);
  ASSERT_TRUE(o.events.has_value());
  std::ostringstream lines;
  events::write_events(lines, *o.events);
  const Judged j{o.result, events::judge_events(events::read_events({{"live", lines.str()}})), lines.str(),
                 folding_differences(lines.str())};
  EXPECT_EQ(differences(j), "");
  EXPECT_EQ(j.folded_differs, "");
  EXPECT_GT(o.result.duplicate_effects, 0u) << "the faults must make duplicates for the comparison to mean much";
  EXPECT_GT(o.result.recovery_latency.count, 0u);
}

// The round trip is no tautology: a reader that ignored any one kind of line would be caught. Each kind, left
// out of a log where it matters, changes some compared field.
TEST(EventLogRoundTrip, LeavingOutAnyKindOfEventLineMakesTheRoundTripDiffer) {
  const std::filesystem::path dir = std::filesystem::path(LETHE_SOURCE_DIR) / "scenarios";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"publish", "crash-window-after-effect"},      {"delivery", "crash-window-after-effect"},
      {"decision", "slow-work-mpt-too-low"},         {"wait", "memoized-third-call"},
      {"outcome", "lost-ack-double-charge"},         {"completion", "crash-window-after-effect"},
      {"execution", "lost-ack-double-charge"},       {"evict", "ttl-shorter-than-redelivery"},
      {"memo_overwrite", "blind-completion"},        {"crash", "crash-window-after-effect"},
      {"due", "saga-stuck-after-crash"},
  };
  for (const auto& [kind, scenario] : cases) {
    const Judged j = round_trip(dir / (scenario + ".toml"), 1);
    ASSERT_EQ(differences(j), "") << scenario;
    ASSERT_NE(j.log.find("\"event\":\"" + kind + "\""), std::string::npos) << scenario << " has no " << kind << " line";
    if (kind == "delivery") {  // every other line refers to an attempt's delivery: the reader refuses the log
      EXPECT_THROW(judged_without(j.log, kind), lethe::history::Error);
      continue;
    }
    const Judged without{j.simulated, judged_without(j.log, kind), "", ""};
    EXPECT_NE(differences(without), "") << "leaving out " << kind << " lines of " << scenario << " changed nothing";
  }
}

// ---------------------------------------------------------------- the log streamed out of a run

// The log of a run streamed as `lethe run --events` writes it (the ledger folding, entries spilled to temporary
// files every `buffer` entries), and the same seed's log from its whole record.
struct Both {
  std::string whole;
  std::string streamed;
  std::string spill_error;
};

Both both_logs(const std::filesystem::path& file, std::uint64_t seed, std::size_t buffer,
               const std::filesystem::path& out_dir = std::filesystem::temp_directory_path()) {
  const lethe::ScenarioConfig config = test_support::load_config(file);
  lethe::WorldOptions whole_options;
  whole_options.keep_trace = true;
  lethe::WorldRecord whole_record;
  const auto whole = runner::run_seed(config, seed, whole_options, &whole_record);
  if (!whole.error.empty()) throw std::runtime_error(whole.error);
  std::ostringstream whole_lines;
  events::write_events(whole_lines, runner::event_log_of(config, whole_record, whole.result));

  events::EventSpool spool(buffer);
  lethe::WorldOptions options;
  runner::stream_events(spool, options);
  lethe::WorldRecord record;
  const auto streamed = runner::run_seed(config, seed, options, &record);
  if (!streamed.error.empty()) throw std::runtime_error(streamed.error);
  const std::filesystem::path path = out_dir / ("lethe-streamed-" + std::to_string(::getpid()) + ".jsonl");
  std::ostringstream warnings;
  const std::string error = runner::write_streamed_event_file(path, config, record, streamed.result, spool, warnings);
  if (!error.empty()) throw std::runtime_error(error);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::filesystem::remove(path);
  return Both{whole_lines.str(), text.str(), spool.spill_error()};
}

// Slow: every scenario of the library twice.
TEST(EventLogStreamingSlow, EveryLibraryScenarioSeed1WritesTheSameLogStreamedAsFromItsWholeRecord) {
  for (const auto& file : library()) {
    const Both logs = both_logs(file, 1, 64);
    EXPECT_EQ(logs.spill_error, "") << file.filename();
    EXPECT_TRUE(logs.streamed == logs.whole) << file.filename() << ": the streamed log differs";
  }
}

TEST(EventLogStreaming, ScenariosWithEveryKindOfEventWriteTheSameLogStreamedWhateverTheSpillSize) {
  for (const char* name : {"crash-window-after-effect", "slow-work-mpt-too-low", "ttl-shorter-than-redelivery",
                           "memoized-third-call", "blind-completion", "saga-stuck-after-crash"}) {
    for (const std::size_t buffer : {std::size_t{1}, std::size_t{7}, events::EventSpool::kBufferEntries}) {
      const Both logs = both_logs(std::filesystem::path(LETHE_SOURCE_DIR) / "scenarios" / (std::string(name) + ".toml"),
                                  2, buffer);
      EXPECT_GT(logs.whole.size(), 1000u) << name;
      EXPECT_TRUE(logs.streamed == logs.whole) << name << " spilling every " << buffer << " entries";
    }
  }
}

// A temporary directory that cannot be written is no failure of the log: it is sorted in memory, and said.
TEST(EventLogStreaming, ALogWhoseTemporaryFilesCannotBeWrittenIsSortedInMemoryAndSaysWhy) {
  const std::filesystem::path out_dir = std::filesystem::temp_directory_path();
  const char* before = std::getenv("TMPDIR");
  const std::string saved = before != nullptr ? before : "";
  ::setenv("TMPDIR", "/nonexistent-lethe-directory", 1);
  const Both logs = both_logs(std::filesystem::path(LETHE_SOURCE_DIR) / "scenarios" / "crash-window-after-effect.toml",
                              1, 5, out_dir);
  if (before != nullptr) ::setenv("TMPDIR", saved.c_str(), 1); else ::unsetenv("TMPDIR");
  EXPECT_NE(logs.spill_error.find("/nonexistent-lethe-directory"), std::string::npos) << logs.spill_error;
  EXPECT_TRUE(logs.streamed == logs.whole);
}

// `lethe check --events FILE` reads the file a line at a time; the log is the one its text gives, across the
// reader's 1 MiB blocks (this log is over 1 MiB), with a byte order mark and without a last newline.
TEST(EventLogStreaming, ALogReadFromItsFileLineByLineIsTheLogItsTextGives) {
  const Both logs =
      both_logs(std::filesystem::path(LETHE_SOURCE_DIR) / "scenarios" / "saga-stuck-after-crash.toml", 1, 1000);
  ASSERT_GT(logs.whole.size(), std::size_t{1} << 20);
  const std::string text = "\xEF\xBB\xBF" + logs.whole.substr(0, logs.whole.size() - 1);
  const std::filesystem::path path = test_support::temp_dir("streaming", "read") / "log.jsonl";
  std::ofstream(path, std::ios::binary) << text;
  sim::FileReadFailure failure;
  const std::optional<sim::LineFile> file = sim::LineFile::open(path, failure);
  ASSERT_TRUE(file.has_value()) << sim::describe(failure, 0);
  const events::EventLog from_text = events::read_events({{"log", text}});
  const events::EventLog from_file = events::read_events({{"log", {}, &*file}});
  std::ostringstream a;
  std::ostringstream b;
  events::write_events(a, from_text);
  events::write_events(b, from_file);
  EXPECT_TRUE(a.str() == b.str());
  EXPECT_TRUE(a.str() == logs.whole);
  EXPECT_EQ(reports::to_json(events::judge_events(from_file)).dump(),
            reports::to_json(events::judge_events(from_text)).dump());
  std::filesystem::remove_all(path.parent_path());
}

// ---------------------------------------------------------------- reading folding (`lethe check --events`)

// The run line, then the lines of one kind, then every other line of `log` in its order.
std::string moved_first(const std::string& log, const std::string& kind) {
  const std::size_t run_end = log.find('\n') + 1;
  return log.substr(0, run_end) + lines_of(log, kind) + lines_of(log.substr(run_end), kind, false);
}

// A time-ordered log of a clean run, read folding, holds no attempt whole: each settled group is folded as it
// settles, as the run itself folds it, and the judgement is the one of the whole log.
TEST(EventLogFolding, ATimeOrderedLogOfACleanRunHoldsNoSettledAttemptAndIsJudgedAsTheWholeLog) {
  const auto config = test_support::load_config(std::filesystem::path(LETHE_SOURCE_DIR) / "scenarios" / "bench" /
                                                "messages-10m.toml", {"workload.messages=3000"});
  const Judged j = round_trip(config, 1);
  ASSERT_EQ(differences(j), "");
  EXPECT_EQ(j.folded_differs, "");
  const events::EventLog whole = events::read_events({{"log", j.log}}, false);
  const events::EventLog folded = events::read_events({{"log", j.log}}, true);
  EXPECT_GE(whole.ledger.attempts.size(), 3000u);
  EXPECT_EQ(folded.ledger.attempts.size(), 0u);
  EXPECT_EQ(folded.ledger.folded_attempts, whole.ledger.attempts.size());
  EXPECT_EQ(folded.ledger.executions.size(), 0u);
  EXPECT_EQ(folded.delivered_at.size(), 0u);
  EXPECT_EQ(folded.ledger.settled.size(), 3000u);
}

// Lines out of time order are read whole: a crash line moved before the deliveries it crashes would, replayed in
// the order of the lines, crash nothing.
TEST(EventLogFolding, ALogOutOfTimeOrderIsReadWholeAndJudgedAsTheWholeLog) {
  const Judged j = round_trip(std::filesystem::path(LETHE_SOURCE_DIR) / "scenarios" / "crash-window-after-effect.toml", 1);
  ASSERT_GT(j.simulated.duplicate_effects, 0u);
  const std::string moved = moved_first(j.log, "crash");
  ASSERT_NE(lines_of(moved, "crash"), "");
  EXPECT_EQ(folding_differences(moved), "");
  const events::EventLog folded = events::read_events({{"log", moved}}, true);
  EXPECT_EQ(folded.ledger.folded_attempts, 0u);
  EXPECT_EQ(reports::to_json(events::judge_events(folded)).dump(), reports::to_json(j.from_events).dump());
}

// A line after its attempt was folded away (here the provider executing a settled attempt's call again, late)
// makes the folding give up: the log is read whole and judged as the whole log, the late execution a duplicate.
TEST(EventLogFolding, ALateLineNamingAFoldedAttemptMakesTheLogReadWholeAndJudgedAsTheWholeLog) {
  const auto config = test_support::load_config(std::filesystem::path(LETHE_SOURCE_DIR) / "scenarios" / "bench" /
                                                "messages-10m.toml", {"workload.messages=200"});
  const Judged j = round_trip(config, 1);
  ASSERT_EQ(j.simulated.duplicate_effects, 0u);
  const std::string late = j.log + "{\"event\":\"execution\",\"at\":999000000000000,\"attempt\":1,\"call\":2,\"value\":7}\n";
  EXPECT_EQ(folding_differences(late), "");
  const events::EventLog folded = events::read_events({{"log", late}}, true);
  EXPECT_EQ(folded.ledger.folded_attempts, 0u);
  EXPECT_EQ(events::judge_events(folded).duplicate_effects, 1u);
}

// Lines in time order that the folding would take otherwise than the whole reading are left to it: an attempt
// that ends after its node's crash (the whole reading keeps its end: it was not crashed), and a delivery at the
// very instant of a crash of its node written after the crash line (the whole reading crashes it).
TEST(EventLogFolding, AnEndAfterACrashAndADeliveryAtTheCrashInstantAreReadAsTheWholeLogReadsThem) {
  const std::string run = R"({"event":"run","protocol":"mnemosyne","processors":["billing"]})" "\n"
                          R"({"event":"publish","id":1})" "\n";
  const std::string second = R"({"event":"delivery","at":6,"id":1,"processor":"billing","node":"n1","attempt":2})" "\n"
                             R"({"event":"decision","at":6,"attempt":2,"basis":"absent"})" "\n"
                             R"({"event":"execution","at":7,"id":1,"attempt":2,"call":1,"value":8})" "\n"
                             R"({"event":"completion","at":8,"attempt":2,"applied":true})" "\n"
                             R"({"event":"outcome","at":8,"attempt":2,"outcome":"executed","value":8})" "\n";
  const std::string ended_after_crash = run +
      R"({"event":"delivery","at":1,"id":1,"processor":"billing","node":"n0","attempt":1})" "\n"
      R"({"event":"decision","at":2,"attempt":1,"basis":"absent"})" "\n"
      R"({"event":"execution","at":3,"id":1,"attempt":1,"call":1,"value":7})" "\n"
      R"({"event":"crash","at":4,"node":"n0"})" "\n"
      R"({"event":"outcome","at":5,"attempt":1,"outcome":"executed","value":7})" "\n" + second;
  const std::string delivered_at_crash = run +
      R"({"event":"crash","at":4,"node":"n0"})" "\n"
      R"({"event":"delivery","at":4,"id":1,"processor":"billing","node":"n0","attempt":1})" "\n"
      R"({"event":"decision","at":4,"attempt":1,"basis":"absent"})" "\n"
      R"({"event":"execution","at":4,"id":1,"attempt":1,"call":1,"value":7})" "\n" + second;
  for (const std::string& log : {ended_after_crash, delivered_at_crash}) {
    const lethe::RunResult whole = events::judge_events(events::read_events({{"log", log}}, false));
    ASSERT_EQ(whole.duplicate_effects, 1u) << log;
    EXPECT_EQ(folding_differences(log), "") << log;
  }
}

// What a log cannot tell apart is said of its lines, not of what folding kept: a TTL eviction folded into its
// settled message's summary is still an evict line of the log.
TEST(EventLogFolding, AnEvictionFoldedIntoASettledMessageStillCountsAsTheLogsEvictLine) {
  const std::string log =
      R"({"event":"run","protocol":"mnemosyne","processors":["billing"]})" "\n"
      R"({"event":"publish","id":1})" "\n"
      R"({"event":"publish","id":2})" "\n"
      R"({"event":"delivery","at":1,"id":1,"processor":"billing","node":"n0","attempt":1})" "\n"
      R"({"event":"decision","at":1,"attempt":1,"basis":"absent"})" "\n"
      R"({"event":"execution","at":2,"id":1,"attempt":1,"call":1,"value":7})" "\n"
      R"({"event":"completion","at":3,"attempt":1,"applied":true})" "\n"
      R"({"event":"outcome","at":3,"attempt":1,"outcome":"executed","value":7})" "\n"
      R"({"event":"evict","at":4,"id":1,"processor":"billing"})" "\n"
      R"({"event":"delivery","at":5,"id":2,"processor":"billing","node":"n0","attempt":2})" "\n"
      R"({"event":"execution","at":6,"id":2,"attempt":2,"call":1,"value":8})" "\n"
      R"({"event":"outcome","at":6,"attempt":2,"outcome":"executed","value":8})" "\n"
      R"({"event":"delivery","at":7,"id":2,"processor":"billing","node":"n1","attempt":3})" "\n"
      R"({"event":"execution","at":8,"id":2,"attempt":3,"call":1,"value":9})" "\n"
      R"({"event":"outcome","at":8,"attempt":3,"outcome":"executed","value":9})" "\n";
  const events::EventLog folded = events::read_events({{"log", log}}, true);
  ASSERT_EQ(folded.ledger.settled.size(), 1u);
  ASSERT_TRUE(folded.ledger.evictions.empty()) << "the eviction is folded into message 1's summary";
  const lethe::RunResult result = events::judge_events(folded);
  ASSERT_EQ(result.duplicates[static_cast<std::size_t>(lethe::Cause::Unprotected)], 1u);
  for (const std::string& limit : events::limits_of(folded, result)) {
    EXPECT_EQ(limit.find("no evict lines"), std::string::npos) << limit;
  }
  EXPECT_EQ(folding_differences(log), "");
}

}  // namespace events_roundtrip_test
