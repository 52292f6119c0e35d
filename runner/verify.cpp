#include "runner/verify.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <compare>
#include <cstdint>
#include <map>
#include <string_view>

#include "protocol/registry.hpp"
#include "runner/execute.hpp"
#include "world/counterfactual.hpp"
#include "world/world.hpp"

namespace runner {
namespace {

constexpr std::size_t kShown = 10;  // second windows and failures listed in full; the rest counted

// What one replay closes: a message-wide intervention, or RecordSeen's one attempt.
struct ReplayKey {
  lethe::Intervention intervention;
  std::uint64_t id;
  std::uint32_t processor;
  std::uint64_t attempt;  // RecordSeen only (0 otherwise)
  std::uint64_t first;    // RecordSeen only (0 otherwise)
  lethe::Intervention also;  // a second window closed with it (Counterfactual::also)
  auto operator<=>(const ReplayKey&) const = default;
};

struct Replayed {
  lethe::RunResult result;
  std::string error;
  lethe::PairFate fate = lethe::PairFate::Done;  // the intervened message's, at the replay's end
};

lethe::Intervention intervention_of(const lethe::DuplicateExplanation& x) {
  return lethe::cause_row(x.cause).intervention;
}

// Why `x` has no replay, or "" when it has one. `inferred`: the strategy's decisions are inferred from what lethe
// observes (an external node).
std::string not_verifiable_reason(const lethe::DuplicateExplanation& x, bool inferred) {
  const lethe::Intervention i = intervention_of(x);
  if (i == lethe::Intervention::None) return "no intervention: the clause that broke is unknown";
  if (i != lethe::Intervention::RecordSeen) return "";
  if (x.read_nothing) {
    return "its attempt read no record before its effect: there is no read to show the first executor's record to";
  }
  if (inferred) {
    return "an external node: lethe does not know whether it writes its record in flight before its effect or "
           "completed after it, so it cannot show the record the first executor would have left";
  }
  return "";
}

lethe::Counterfactual counterfactual_of(const lethe::DuplicateExplanation& x,
                                        lethe::Intervention also = lethe::Intervention::None) {
  return lethe::Counterfactual{intervention_of(x), x.id, x.processor, x.attempt, x.first_attempt, also};
}

ReplayKey key_of(const lethe::Counterfactual& cf) {
  // RecordSeen acts for one attempt: a replay per duplicate. The others act for the whole message.
  const bool per_attempt = cf.closes(lethe::Intervention::RecordSeen);
  return ReplayKey{cf.intervention, cf.id, cf.processor, per_attempt ? cf.attempt : 0,
                   per_attempt ? cf.first_attempt : 0, cf.also};
}

Replayed replay(const lethe::ScenarioConfig& config, std::uint64_t seed, const lethe::Counterfactual& cf) {
  lethe::WorldOptions options;
  options.check_linearizability = false;  // the replay is judged by its duplicates only
  options.max_explanations = SIZE_MAX;
  options.counterfactual = cf;
  lethe::PairFate fate = lethe::PairFate::Done;
  options.counterfactual_fate = &fate;
  SeedRun run = run_seed(config, seed, options);
  return Replayed{std::move(run.result), std::move(run.error), fate};
}

// The replays of one verification, each run once (a message-wide intervention serves every duplicate of it).
class Replays {
 public:
  Replays(const lethe::ScenarioConfig& config, std::uint64_t seed) : config_(config), seed_(seed) {}
  const Replayed& of(const lethe::Counterfactual& cf) {
    const ReplayKey key = key_of(cf);
    auto found = done_.find(key);
    if (found == done_.end()) found = done_.emplace(key, replay(config_, seed_, cf)).first;
    return found->second;
  }
  std::size_t count() const { return done_.size(); }

 private:
  const lethe::ScenarioConfig& config_;
  std::uint64_t seed_;
  std::map<ReplayKey, Replayed> done_;
};

bool same_pair(const lethe::DuplicateExplanation& x, const lethe::DuplicateExplanation& y) {
  return x.id == y.id && x.processor == y.processor && x.attempt == y.attempt && x.first_attempt == y.first_attempt;
}

// The verdict on a duplicate gone from a replay: proven only if the message still finished there (an
// intervention that blocks the message removes any duplicate).
VerifyVerdict gone(lethe::PairFate fate) {
  return fate == lethe::PairFate::Done ? VerifyVerdict::Verified : VerifyVerdict::Blocked;
}

void judge(VerifiedDuplicate& v, const Replayed& replayed) {
  if (!replayed.error.empty()) {
    v.verdict = VerifyVerdict::Error;
    v.error = replayed.error;
    return;
  }
  for (const auto& y : replayed.result.explanations) {
    if (y.id == v.duplicate.id && y.processor == v.duplicate.processor) v.after.push_back(y);
  }
  const bool still = std::any_of(v.after.begin(), v.after.end(),
                                 [&v](const lethe::DuplicateExplanation& y) { return same_pair(v.duplicate, y); });
  v.fate = replayed.fate;
  if (still) {
    v.verdict = VerifyVerdict::NotRemoved;
  } else {
    v.verdict = gone(replayed.fate);
  }
}

bool pair_in(const Replayed& replayed, const lethe::DuplicateExplanation& x) {
  return std::any_of(replayed.result.explanations.begin(), replayed.result.explanations.end(),
                     [&x](const lethe::DuplicateExplanation& y) { return same_pair(x, y); });
}

// A duplicate its cause's replay left in place, through the same pair of attempts but blamed there on another
// window B: two windows may have been open at once, each enough without the other (a waiter went ahead past
// max_wait, and the owner then died after its effect). Verified together with B when closing B alone leaves it too
// (else B alone was the window, and the cause named is wrong) and closing both removes it with the message
// finished.
void judge_together(VerifiedDuplicate& v, Replays& replays, bool inferred) {
  const auto other = std::find_if(v.after.begin(), v.after.end(), [&](const lethe::DuplicateExplanation& y) {
    return same_pair(v.duplicate, y) && intervention_of(y) != intervention_of(v.duplicate) &&
           not_verifiable_reason(y, inferred).empty();
  });
  if (other == v.after.end()) return;
  const lethe::DuplicateExplanation b = *other;  // the same pair: its attempts are the duplicate's
  const Replayed& without_b = replays.of(counterfactual_of(b));
  if (!without_b.error.empty() || !pair_in(without_b, v.duplicate)) return;
  const Replayed& without_both = replays.of(counterfactual_of(v.duplicate, intervention_of(b)));
  if (!without_both.error.empty() || pair_in(without_both, v.duplicate)) return;
  v.fate = without_both.fate;
  v.verdict = gone(without_both.fate);
  v.together_with = b;
}

void tally(VerifyReport& report, const VerifiedDuplicate& v) {
  CauseTally& t = report.by_cause[static_cast<std::size_t>(v.duplicate.cause)];
  ++t.total;
  switch (v.verdict) {
    case VerifyVerdict::Verified:
      ++t.verified;
      if (v.together_with) {
        ++report.joint_windows;
      } else if (!v.after.empty()) {
        ++report.second_windows;
      }
      break;
    case VerifyVerdict::NotRemoved: ++t.not_removed; break;
    case VerifyVerdict::Blocked: ++t.blocked; break;
    case VerifyVerdict::NotVerifiable: ++t.not_verifiable; break;
    case VerifyVerdict::NotReplayed: ++t.not_replayed; break;
    case VerifyVerdict::Error: ++t.errors; break;
  }
}

std::string pair_text(const lethe::DuplicateExplanation& x) {
  return fmt::format("attempts {} -> {} [{}]", x.first_attempt, x.attempt, lethe::to_string(x.cause));
}

}  // namespace

bool VerifyReport::failed() const {
  return std::any_of(by_cause.begin(), by_cause.end(),
                     [](const CauseTally& t) { return t.not_removed > 0 || t.blocked > 0 || t.errors > 0; });
}

VerifyReport verify_causes(const lethe::ScenarioConfig& config, std::uint64_t seed, const lethe::RunResult& result,
                           std::size_t limit) {
  VerifyReport report;
  const bool inferred = lethe::strategy_info(config.protocol.kind).decisions_inferred;
  Replays replays(config, seed);
  std::array<std::size_t, lethe::kCauseCount> replayed_per_cause{};
  for (const auto& x : result.explanations) {
    VerifiedDuplicate v{x, VerifyVerdict::NotVerifiable, {}, "", lethe::PairFate::Done, std::nullopt};
    std::size_t& taken = replayed_per_cause[static_cast<std::size_t>(x.cause)];
    if (std::string reason = not_verifiable_reason(x, inferred); !reason.empty()) {
      v.verdict = VerifyVerdict::NotVerifiable;
      CauseTally& t = report.by_cause[static_cast<std::size_t>(x.cause)];
      if (t.not_verifiable_reason.empty()) t.not_verifiable_reason = std::move(reason);
    } else if (limit != 0 && taken >= limit) {
      v.verdict = VerifyVerdict::NotReplayed;
    } else {
      ++taken;
      judge(v, replays.of(counterfactual_of(x)));
      if (v.verdict == VerifyVerdict::NotRemoved) judge_together(v, replays, inferred);
    }
    tally(report, v);
    report.duplicates.push_back(std::move(v));
  }
  report.replays = replays.count();
  return report;
}

namespace {

std::string cause_lines(const VerifyReport& report) {
  std::string text;
  for (std::size_t c = 0; c < lethe::kCauseCount; ++c) {
    const CauseTally& t = report.by_cause[c];
    if (t.total == 0) continue;
    std::string extra;
    if (t.not_removed > 0) extra += fmt::format(", {} NOT removed", t.not_removed);
    if (t.blocked > 0) extra += fmt::format(", {} removed only by keeping the message from finishing", t.blocked);
    if (t.errors > 0) extra += fmt::format(", {} replay errors", t.errors);
    if (t.not_verifiable > 0) {
      extra += fmt::format(", {} not verifiable ({})", t.not_verifiable, t.not_verifiable_reason);
    }
    if (t.not_replayed > 0) extra += fmt::format(", {} not replayed (--verify-limit)", t.not_replayed);
    text += fmt::format("  {:<22} {} of {} verified{}  (intervention: {})\n", lethe::kCauses[c].name, t.verified,
                        t.total, extra, lethe::kCauses[c].intervention_text);
  }
  return text;
}

// The verified duplicates `line` describes (it returns "" for the others): "NAME: COUNT (WHY)", the first kShown of
// them, and how many were left out.
template <class Line>
std::string verified_lines(const VerifyReport& report, std::string_view name, std::string_view why, Line&& line) {
  std::string text;
  std::size_t count = 0;
  for (const auto& v : report.duplicates) {
    if (v.verdict != VerifyVerdict::Verified) continue;
    std::string one = line(v);
    if (one.empty()) continue;
    if (++count <= kShown) text += "  " + one + "\n";
  }
  if (count == 0) return "";
  if (count > kShown) text += fmt::format("  ({} of {} shown)\n", kShown, count);
  return fmt::format("{}: {} ({})\n", name, count, why) + text;
}

std::string joint_window_lines(const VerifyReport& report) {
  return verified_lines(report, "two windows at once",
                        "closing either alone leaves the duplicate, closing both removes it",
                        [](const VerifiedDuplicate& v) {
                          if (!v.together_with) return std::string();
                          return fmt::format("message {}: {} and [{}]: {}", v.duplicate.id, pair_text(v.duplicate),
                                             lethe::to_string(v.together_with->cause), v.together_with->because);
                        });
}

std::string second_window_lines(const VerifyReport& report) {
  return verified_lines(report, "second windows",
                        "closing the cause's window let the message be duplicated through another",
                        [](const VerifiedDuplicate& v) {
                          if (v.after.empty() || v.together_with) return std::string();
                          return fmt::format("message {}: {} closed; the replay duplicates it by {}: {}",
                                             v.duplicate.id, pair_text(v.duplicate), pair_text(v.after.front()),
                                             v.after.front().because);
                        });
}

const char* failure_words(VerifyVerdict verdict) {
  switch (verdict) {
    case VerifyVerdict::Error: return "could not be replayed";
    case VerifyVerdict::Blocked: return "is gone only because the message never finished";
    default: return "is still there";
  }
}

std::string failure_lines(const VerifyReport& report) {
  std::string text;
  std::size_t shown = 0;
  std::size_t failures = 0;
  for (const auto& v : report.duplicates) {
    if (v.verdict != VerifyVerdict::NotRemoved && v.verdict != VerifyVerdict::Blocked &&
        v.verdict != VerifyVerdict::Error) {
      continue;
    }
    ++failures;
    if (shown == kShown) continue;
    ++shown;
    const auto& row = lethe::cause_row(v.duplicate.cause);
    text += fmt::format("  message {}: {} {} with \"{}\"\n", v.duplicate.id, pair_text(v.duplicate),
                        failure_words(v.verdict), row.intervention_text);
    text += fmt::format("    run:    {}\n", v.duplicate.because);
    if (v.verdict == VerifyVerdict::Error) {
      text += fmt::format("    replay: internal error: {}\n", v.error);
      continue;
    }
    if (v.verdict == VerifyVerdict::Blocked) {
      text += fmt::format("    replay: the duplicate is gone, but message {} did not finish: {}\n", v.duplicate.id,
                          lethe::to_string(v.fate));
      continue;
    }
    for (const auto& y : v.after) {
      if (same_pair(v.duplicate, y)) text += fmt::format("    replay: {}\n", y.because);
    }
  }
  if (failures == 0) return "";
  return fmt::format("causes NOT verified: {} (a lethe bug: the cause named is not the window that opened)\n",
                     failures) +
         text + (shown < failures ? fmt::format("  ({} of {} shown)\n", shown, failures) : "");
}

}  // namespace

std::string verify_summary(const VerifyReport& report) {
  CauseTally all;
  for (const CauseTally& t : report.by_cause) {
    all.total += t.total;
    all.verified += t.verified;
    all.not_verifiable += t.not_verifiable;
    all.not_replayed += t.not_replayed;
  }
  std::string extra;
  if (all.not_verifiable > 0) extra += fmt::format(", {} not verifiable", all.not_verifiable);
  if (all.not_replayed > 0) extra += fmt::format(", {} not replayed", all.not_replayed);
  return fmt::format("\ncauses verified: {} of {}{} ({} counterfactual replays)\n", all.verified, all.total, extra,
                     report.replays) +
         cause_lines(report);
}

std::string verify_text(const VerifyReport& report) {
  return verify_summary(report) + second_window_lines(report) + joint_window_lines(report) + failure_lines(report);
}

void add_tallies(VerifyReport& into, const VerifyReport& from) {
  for (std::size_t c = 0; c < lethe::kCauseCount; ++c) {
    CauseTally& t = into.by_cause[c];
    const CauseTally& f = from.by_cause[c];
    t.total += f.total;
    t.verified += f.verified;
    t.not_removed += f.not_removed;
    t.blocked += f.blocked;
    t.not_verifiable += f.not_verifiable;
    if (t.not_verifiable_reason.empty()) t.not_verifiable_reason = f.not_verifiable_reason;
    t.not_replayed += f.not_replayed;
    t.errors += f.errors;
  }
  into.replays += from.replays;
  into.second_windows += from.second_windows;
  into.joint_windows += from.joint_windows;
}

}  // namespace runner
