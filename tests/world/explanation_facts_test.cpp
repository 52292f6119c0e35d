// Every sentence of an explanation is a fact of the run: each explanation of the library's duplicates (scenarios/,
// seeds 1..3, in-process) is read back against the trace and the ledger. Checked: the node an attempt is said to
// run on, the instants it is said to have run the effect, decided and died at, that an effect said to precede a
// death did, that a call said to be in flight at a death was, and the state a racing or taken-over owner is said
// to have been in at the decision.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "scenario/loader.hpp"
#include "sim/time.hpp"
#include "world/world.hpp"

namespace explanation_facts_test {

namespace fs = std::filesystem;
using lethe::AttemptId;

// What the trace says of each attempt and node, as the explanations print instants (sim::format_human).
struct Facts {
  std::map<AttemptId, std::string> node_of;
  std::map<AttemptId, std::vector<sim::Time>> executed, called, decided;
  std::map<std::string, std::vector<sim::Time>> crashes;  // by node name
  std::map<std::uint64_t, std::vector<sim::Time>> store_writes;  // by key: the store's executions of its operations
  struct RoomEviction {
    sim::Time at;
    std::uint64_t key;
    std::uint64_t capacity;
  };
  std::vector<RoomEviction> room_evictions;
  const lethe::Ledger* ledger = nullptr;

  explicit Facts(const lethe::WorldRecord& record) : ledger(&record.ledger) {
    for (const sim::TraceRecord& r : record.trace) {
      if (r.node == sim::kSimulationNode) continue;  // the schedule: no node's fact
      const std::string& node = record.node_names.at(r.node);
      if (r.kind_name == "attempt") node_of[r.c] = node;
      if (r.kind_name == "sink.execute") executed[r.b].push_back(r.time);
      if (r.kind_name == "sink.call") called[r.b].push_back(r.time);
      if (r.kind_name == "decision") decided[r.b].push_back(r.time);
      if (r.kind_name == "crash") crashes[node].push_back(r.time);
      if (r.kind_name == "store.execute") store_writes[r.b].push_back(r.time);
      if (r.kind_name == "store.evict_capacity") room_evictions.push_back({r.time, r.a, r.b});
    }
  }
  // The instants in `times` printed as `text`.
  static std::vector<sim::Time> at(const std::vector<sim::Time>& times, const std::string& text) {
    std::vector<sim::Time> out;
    for (const sim::Time time : times) {
      if (sim::format_human(time) == text) out.push_back(time);
    }
    return out;
  }
  std::vector<sim::Time> of(const std::map<AttemptId, std::vector<sim::Time>>& table, AttemptId a,
                            const std::string& text) const {
    const auto it = table.find(a);
    return it == table.end() ? std::vector<sim::Time>{} : at(it->second, text);
  }
  std::vector<sim::Time> deaths(AttemptId a, const std::string& text) const {
    const auto node = node_of.find(a);
    if (node == node_of.end()) return {};
    const auto it = crashes.find(node->second);
    return it == crashes.end() ? std::vector<sim::Time>{} : at(it->second, text);
  }
};

AttemptId number(const std::string& text) { return std::stoull(text); }

// The false statements of one explanation (empty: every checked statement holds).
std::vector<std::string> false_statements(const Facts& f, const std::string& why) {
  std::vector<std::string> wrong;
  const auto each = [&why](const std::string& pattern, auto&& check) {
    const std::regex re(pattern);
    for (auto it = std::sregex_iterator(why.begin(), why.end(), re); it != std::sregex_iterator(); ++it) check(*it);
  };
  each(R"(attempt (\d+) on ([^ ,;:()]+))", [&](const std::smatch& m) {
    const auto it = f.node_of.find(number(m[1]));
    if (it == f.node_of.end() || it->second != m[2].str()) wrong.push_back("runs on " + m[0].str());
  });
  each(R"(attempt (\d+) on \S+ ran the effect at ([0-9][0-9.]*(?:ns|us|ms|s|m|h|d)))", [&](const std::smatch& m) {
    if (f.of(f.executed, number(m[1]), m[2]).empty()) wrong.push_back("no execution: " + m[0].str());
  });
  each(R"(attempt (\d+) on \S+ ran the effect at ([0-9][0-9.]*(?:ns|us|ms|s|m|h|d)) and died at ([0-9][0-9.]*(?:ns|us|ms|s|m|h|d)))", [&](const std::smatch& m) {
    const auto effects = f.of(f.executed, number(m[1]), m[2]);
    const auto deaths = f.deaths(number(m[1]), m[3]);
    if (deaths.empty()) wrong.push_back("no such death: " + m[0].str());
    if (!effects.empty() && !deaths.empty() && effects.front() > deaths.back()) {
      wrong.push_back("the effect came after the death: " + m[0].str());
    }
  });
  each(R"(attempt (\d+) on \S+ called the provider, died at ([0-9][0-9.]*(?:ns|us|ms|s|m|h|d)) while the call was in flight, and the provider executed it at ([0-9][0-9.]*(?:ns|us|ms|s|m|h|d)))",
       [&](const std::smatch& m) {
         const AttemptId a = number(m[1]);
         const auto deaths = f.deaths(a, m[2]);
         const auto effects = f.of(f.executed, a, m[3]);
         const auto calls = f.called.count(a) ? f.called.at(a) : std::vector<sim::Time>{};
         if (deaths.empty() || effects.empty() || calls.empty() || calls.front() > deaths.front() ||
             deaths.front() > effects.front()) {
           wrong.push_back("not a call in flight at the death: " + m[0].str());
         }
       });
  // "ran the effect at E and then failed at U": the effect came first; "called the provider, gave up at U while the
  // call was in flight, and the provider executed it at E": the attempt ended before the provider executed.
  const auto ended = [&f](AttemptId a) -> std::optional<sim::Time> {
    if (!f.ledger->has_attempt(a) || !f.ledger->attempt(a).ended_at) return std::nullopt;
    return *f.ledger->attempt(a).ended_at;
  };
  each(R"(attempt (\d+) on \S+ ran the effect at ([0-9][0-9.]*(?:ns|us|ms|s|m|h|d)) and then failed at ([0-9][0-9.]*(?:ns|us|ms|s|m|h|d)))", [&](const std::smatch& m) {
    const auto effects = f.of(f.executed, number(m[1]), m[2]);
    const auto end = ended(number(m[1]));
    if (!end || effects.empty() || effects.front() > *end) wrong.push_back("the effect came after the failure: " + m[0].str());
  });
  each(R"(attempt (\d+) on \S+ called the provider, gave up at ([0-9][0-9.]*(?:ns|us|ms|s|m|h|d)) while the call was in flight, and the provider executed it at ([0-9][0-9.]*(?:ns|us|ms|s|m|h|d)))",
       [&](const std::smatch& m) {
         const auto effects = f.of(f.executed, number(m[1]), m[3]);
         const auto end = ended(number(m[1]));
         if (!end || effects.empty() || *end > effects.front()) {
           wrong.push_back("not a call in flight when the attempt gave up: " + m[0].str());
         }
       });
  each(R"(attempt (\d+) on \S+ (?:found|created)(?:(?!ran the effect)[^;])*? at ([0-9][0-9.]*(?:ns|us|ms|s|m|h|d)))", [&](const std::smatch& m) {
    if (f.of(f.decided, number(m[1]), m[2]).empty()) wrong.push_back("no decision then: " + m[0].str());
  });
  // "attempt A found no record at T while attempt P (effect at E) had not recorded it yet": at A's decision, P
  // had neither completed, ended nor died.
  each(R"(attempt (\d+) on \S+ found no record at ([0-9][0-9.]*(?:ns|us|ms|s|m|h|d)) while attempt (\d+) on \S+ \(effect at \S+\) had not recorded it yet)",
       [&](const std::smatch& m) {
         const auto decisions = f.of(f.decided, number(m[1]), m[2]);
         const AttemptId p = number(m[3]);
         if (decisions.empty() || !f.ledger->has_attempt(p)) return;  // the decision is checked above
         const lethe::AttemptRecord& r = f.ledger->attempt(p);
         for (const lethe::MaybeTime t : {r.completed_at, r.ended_at, r.crashed_at}) {
           if (t && *t <= decisions.front()) wrong.push_back("had recorded, ended or died by then: " + m[0].str());
         }
       });
  // "evicted it for room at X (store.capacity: last written at Y, then N writes of other records made it the least
  // recently written)": the store evicted a record for room at X, executed an operation on that record at Y, and
  // N is at least the capacity (every record still held was written after it).
  each(R"(for room at ([0-9][0-9.]*(?:ns|us|ms|s|m|h|d)) \(store\.capacity: last written at ([0-9][0-9.]*(?:ns|us|ms|s|m|h|d)), then (\d+) writes of other records)",
       [&](const std::smatch& m) {
         bool found = false;
         for (const auto& e : f.room_evictions) {
           if (sim::format_human(e.at) != m[1].str()) continue;
           const auto writes = f.store_writes.find(e.key);
           if (writes == f.store_writes.end() || Facts::at(writes->second, m[2]).empty()) continue;
           if (std::stoull(m[3].str()) < e.capacity) continue;
           found = true;
         }
         if (!found) wrong.push_back("no such eviction for room: " + m[0].str());
       });
  return wrong;
}

std::vector<fs::path> library() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(fs::path(LETHE_SOURCE_DIR) / "scenarios")) {
    if (entry.path().extension() == ".toml") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(ExplanationFactsSlow, EveryTimeNodeAndStateInTheLibrarysExplanationsIsReadFromTheTrace) {
  std::size_t checked = 0;
  for (const fs::path& file : library()) {
    auto loaded = scenario::load_scenario(file, {});
    ASSERT_TRUE(std::holds_alternative<lethe::ScenarioConfig>(loaded)) << file;
    const auto& config = std::get<lethe::ScenarioConfig>(loaded);
    if (config.protocol.kind == "external") continue;  // needs node and python: tests/external runs those
    for (std::uint64_t seed = 1; seed <= 3; ++seed) {
      lethe::WorldOptions options;
      options.keep_trace = true;
      options.check_linearizability = false;
      lethe::WorldRecord record;
      const lethe::RunResult r = lethe::run_world(config, seed, options, &record);
      const Facts facts(record);
      for (const auto& x : r.explanations) {
        ++checked;
        for (const std::string& w : false_statements(facts, x.because)) {
          ADD_FAILURE() << file.filename().string() << " seed " << seed << ": " << w << "\n  in: " << x.because;
        }
      }
    }
  }
  EXPECT_GT(checked, 1000u);
}

}  // namespace explanation_facts_test
