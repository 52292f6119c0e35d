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
  lethe::RunResult from_events;
  std::string log;
};

Judged round_trip(const std::filesystem::path& file, std::uint64_t seed) {
  const lethe::ScenarioConfig config = test_support::load_config(file);
  lethe::WorldOptions options;
  options.keep_trace = true;
  lethe::WorldRecord record;
  const auto run = runner::run_seed(config, seed, options, &record);
  if (!run.error.empty()) throw std::runtime_error(run.error);
  std::ostringstream lines;
  events::write_events(lines, runner::event_log_of(config, record, run.result));
  const events::EventLog log = events::read_events({{file.filename().string(), lines.str()}});
  return Judged{run.result, events::judge_events(log), lines.str()};
}

// The same log with every line of one kind left out, judged again.
lethe::RunResult judged_without(const std::string& log, const std::string& kind) {
  std::istringstream in(log);
  std::string kept;
  for (std::string line; std::getline(in, line);) {
    if (line.find("\"event\":\"" + kind + "\"") == std::string::npos) kept += line + "\n";
  }
  return events::judge_events(events::read_events({{"log", kept}}));
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
  const Judged j{o.result, events::judge_events(events::read_events({{"live", lines.str()}})), lines.str()};
  EXPECT_EQ(differences(j), "");
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
    const Judged without{j.simulated, judged_without(j.log, kind), ""};
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

}  // namespace events_roundtrip_test
