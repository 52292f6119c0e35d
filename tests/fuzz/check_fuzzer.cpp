// tests/fuzz/check_fuzzer.cpp — libFuzzer target over what `lethe check` reads: histories in every format
// (check/history.hpp) and, when the first line is an event log's run line, `check --events` logs
// (check/events.hpp).
//
// A history is read with the format and model detected, then checked with a small step budget (the model's
// step() and the search run on whatever was read); an event log is read and judged by the oracle, whole and
// folding (`lethe check --events`), which must give the same judgement. Bad input must end in history::Error
// (exit 2 in the command); anything else escaping, a crash, a sanitizer report or the two readings judged apart
// is a finding. Built two ways (tests/fuzz/CMakeLists.txt): with -fsanitize=fuzzer under LETHE_FUZZ (scripts/fuzz),
// and in every build with replay_main.cpp over tests/fuzz/check/ and the ground-truth histories, as a ctest test.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "check/events.hpp"
#include "check/history.hpp"
#include "check/linearizability_batch.hpp"
#include "check/total_queue_model.hpp"

namespace {

namespace history = lethe::history;
constexpr std::uint64_t kBudget = 20'000;

void check_history(std::string_view text) {
  const history::AnyHistory recorded = history::read_history("fuzz", text);
  std::visit(
      [](const auto& h) {
        using H = std::decay_t<decltype(h)>;
        if constexpr (std::is_same_v<H, history::RegisterHistory>) {
          (void)lethe::lin::check<lethe::RegisterModel>(h.ops, kBudget);
        } else if constexpr (std::is_same_v<H, history::KvHistory>) {
          (void)lethe::lin::check<lethe::KvModel>(h.ops, kBudget);
        } else if constexpr (std::is_same_v<H, history::ObjectHistory>) {
          (void)lethe::lin::check<lethe::ObjectModel>(h.ops, kBudget);
        } else if constexpr (std::is_same_v<H, history::StoreHistory>) {
          (void)lethe::lin::check<lethe::ObservedStoreModel>(h.ops, kBudget);
        } else {
          (void)lethe::judge_total_queue(h);
        }
      },
      recorded);
}

// What the oracle said of the log, read whole or folding: its counts, causes and explanations, or the error.
std::string judged(std::string_view text, bool fold) {
  lethe::RunResult r;
  std::vector<std::string> limits;
  try {
    const lethe::events::EventLog log = lethe::events::read_events({lethe::events::EventFile{"fuzz", text}}, fold);
    r = lethe::events::judge_events(log);
    limits = lethe::events::limits_of(log, r);
  } catch (const history::Error& e) {
    return std::string("bad input: ") + e.what();
  }
  std::string out = std::to_string(r.effects) + " " + std::to_string(r.duplicate_effects) + " " +
                    std::to_string(r.lost_messages) + " " + std::to_string(r.memo_mismatches) + " " +
                    std::to_string(r.deliveries) + " " + std::to_string(r.sim_time) + " " +
                    std::to_string(r.sink_calls) + "\n";
  for (const std::string& limit : limits) out += limit + "\n";
  for (const std::uint64_t n : r.duplicates) out += std::to_string(n) + " ";
  for (const auto& x : r.explanations) out += "\n" + x.because;
  for (const auto& x : r.memo_explanations) out += "\n" + x.because;
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    if (text.substr(0, 16) == "{\"event\":\"run\"") {
      const std::string whole = judged(text, false);
      if (whole.starts_with("bad input: ")) throw history::Error("fuzz", 0, whole);
      if (judged(text, true) != whole) std::abort();  // folding changed the judgement
    } else {
      check_history(text);
    }
  } catch (const history::Error&) {
    // bad input, reported with its file and line: what the command turns into exit 2
  }
  return 0;
}
