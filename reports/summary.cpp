#include "reports/summary.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>
#include <optional>

#include "sim/time.hpp"

namespace reports {

std::string format_time(std::int64_t ns) { return sim::format_human(ns); }

namespace {
// -1, 0 or 1: where `value` lies against `threshold`.
int side(double value, double threshold) { return (value > threshold) - (value < threshold); }

// `value` as an integer when it is one that int64 holds.
std::optional<std::int64_t> whole(double value) {
  if (!(value >= -9.2e18 && value <= 9.2e18) || std::floor(value) != value) return std::nullopt;
  return static_cast<std::int64_t>(value);
}

std::string want_text(const lethe::ExpectationResult& x, std::optional<lethe::FieldKind> kind) {
  if (kind == lethe::FieldKind::Time && !x.want.ends_with('%')) {
    if (const auto ns = whole(x.threshold)) return sim::format_duration(*ns);
  }
  return x.want;
}

// Rounded for reading, exact when rounding would move the value onto or across the threshold it was compared with.
std::string got_text(const lethe::ExpectationResult& x, std::optional<lethe::FieldKind> kind) {
  if (std::isnan(x.got)) return "n/a";
  const auto number = whole(x.got);
  if (kind == lethe::FieldKind::Time && number) {
    const std::string rounded = sim::format_human(*number);
    std::string error;
    const auto back = sim::parse_duration_rounded(rounded, error, /*allow_negative=*/true);
    if (back && side(static_cast<double>(*back), x.threshold) == side(x.got, x.threshold)) return rounded;
    return sim::format_duration(*number);
  }
  if (kind == lethe::FieldKind::Ratio) {
    const std::string rounded = fmt::format("{:.4g}", x.got);
    if (side(std::strtod(rounded.c_str(), nullptr), x.threshold) == side(x.got, x.threshold)) return rounded;
    return fmt::format("{}", x.got);
  }
  return number ? fmt::format("{}", *number) : fmt::format("{}", x.got);
}
}  // namespace

std::string expectation_text(const lethe::ExpectationResult& x) {
  const auto kind = lethe::expectation_kind(x.key);
  return fmt::format("{} {} {} (got {})", x.key, x.op, want_text(x, kind), got_text(x, kind));
}

namespace {
std::string quantiles_text(const lethe::Quantiles& q) {
  if (q.count == 0) return "none";
  return fmt::format("{} (p50 {}, p99 {}, max {})", q.count, format_time(q.p50), format_time(q.p99),
                     format_time(q.max));
}

// Each expectation (a default invariant marked as such), the defaults the scenario replaced, or that nothing was
// checked: an OK must say what it rests on.
std::string expectations_text(const lethe::RunResult& r) {
  if (r.expectations.empty()) {
    return r.ok ? "  expectations: none checked (OK means only that the run ended)\n"
                : "  expectations: none checked (the verdict below is the run's own)\n";
  }
  std::string out = "  expectations:\n";
  for (const auto& e : r.expectations) {
    out += fmt::format("    {:4} {}{}\n", e.ok ? "ok" : "FAIL", expectation_text(e), e.by_default ? "  [default]" : "");
  }
  if (!r.defaults_replaced.empty()) {
    std::string fields;
    for (const auto& f : r.defaults_replaced) fields += (fields.empty() ? "" : ", ") + f;
    out += fmt::format("    defaults replaced by [expect]: {}\n", fields);
  }
  return out;
}

// A run.duration at least `at`, in the largest unit that keeps it short ("3d", "5h", "90m" -> "2h"), rounded up.
std::string duration_at_least(std::int64_t at) {
  constexpr std::int64_t kSecond = 1'000'000'000;
  struct Unit {
    std::int64_t ns;
    const char* suffix;
  };
  constexpr Unit kUnits[] = {{86'400 * kSecond, "d"}, {3'600 * kSecond, "h"}, {60 * kSecond, "m"}, {kSecond, "s"}};
  for (const Unit& unit : kUnits) {
    if (at >= unit.ns || unit.ns == kSecond) return fmt::format("{}{}", (std::max<std::int64_t>(at, 1) + unit.ns - 1) / unit.ns, unit.suffix);
  }
  return "1s";
}

// What the run never saw: copies due after it ended, deliveries still unanswered when it ended.
std::string unseen_text(const lethe::RunResult& r) {
  std::string out;
  if (r.undelivered > 0) {
    out += fmt::format("  undelivered {}: message copies due after the run ended, the latest at {}; "
                       "run.duration = \"{}\" delivers them\n",
                       r.undelivered, format_time(r.undelivered_latest), duration_at_least(r.undelivered_latest));
  }
  if (r.unanswered > 0) {
    std::string held;
    for (const auto& x : r.unanswered_examples) held += (held.empty() ? "" : ", ") + x;
    out += fmt::format("  unanswered {}: deliveries the consumer held without an ack or a rejection when the run "
                       "ended: {}{}\n",
                       r.unanswered, held, r.unanswered > r.unanswered_examples.size() ? ", ..." : "");
  }
  return out;
}

std::string saga_text(const lethe::RunResult& r) {
  if (r.saga_completed + r.saga_compensated + r.saga_stuck + r.saga_duplicate_steps +
          r.saga_duplicate_compensations + r.saga_orphan_compensations + r.saga_late_steps ==
      0) {
    return "";
  }
  return fmt::format("  sagas: completed {}  compensated {}  stuck {}  duplicate steps {}  duplicate compensations "
                     "{}  orphan compensations {}  late steps {}\n",
                     r.saga_completed, r.saga_compensated, r.saga_stuck, r.saga_duplicate_steps,
                     r.saga_duplicate_compensations, r.saga_orphan_compensations, r.saga_late_steps);
}
// The fault points the run armed that never fired: a silent green made visible (points left at 0 are not news).
std::string never_fired_text(const lethe::RunResult& r) {
  std::string never;
  for (const auto& [key, count] : r.coverage) {
    if (count == 0 && std::find(r.armed_fault_points.begin(), r.armed_fault_points.end(), key) !=
                          r.armed_fault_points.end()) {
      never += (never.empty() ? "" : ", ") + key;
    }
  }
  return never.empty() ? "" : fmt::format("  fault points that never fired: {}\n", never);
}
}  // namespace

std::string run_summary(const lethe::RunResult& r, bool live) {
  std::string out;
  if (live) {
    out += fmt::format("scenario {}  seed {}\n", r.scenario, r.seed);
  } else {
    out += fmt::format("scenario {}  seed {}  trace {:016x}\n", r.scenario, r.seed, r.trace_hash);
  }
  out += fmt::format("  messages {}  deliveries {}  effects {}  {} {}\n", r.messages, r.deliveries, r.effects,
                     live ? "elapsed" : "simulated", format_time(r.sim_time));
  out += fmt::format("  duplicate effects {}", r.duplicate_effects);
  if (r.duplicate_effects > 0) {
    std::string causes;
    for (std::size_t i = 0; i < lethe::kCauseCount; ++i) {
      if (r.duplicates[i] == 0) continue;
      if (!causes.empty()) causes += ", ";
      causes += fmt::format("{} {}", lethe::kCauseNames[i], r.duplicates[i]);
    }
    out += ": " + causes;
  }
  out += "\n";
  out += fmt::format("  lost messages {}  memo mismatches {}  memo overwrites {}\n", r.lost_messages, r.memo_mismatches,
                     r.memo_overwrites);
  if (!r.lost_examples.empty()) {
    std::string ids;
    for (const auto& x : r.lost_examples) ids += (ids.empty() ? "" : ", ") + x;
    out += fmt::format("  lost: {}{}\n", ids, r.lost_messages > r.lost_examples.size() ? ", ..." : "");
  }
  if (r.store_errors > 0) {
    out += fmt::format("  store operations rejected: {} (first: {})\n", r.store_errors,
                       r.store_error_first.empty() ? std::string("?") : r.store_error_first.front());
  }
  out += unseen_text(r);
  if (r.commit_failed > 0) {
    out += fmt::format("  commit failed {}: offset commits the consumer group refused (the member had been removed "
                       "from it, or a rebalance had moved on)\n",
                       r.commit_failed);
  }
  if (r.payload_mismatches > 0) {
    out += fmt::format("  payload mismatches {}: deliveries refused unprocessed, their id's record was kept for "
                       "another payload (payload_check)\n",
                       r.payload_mismatches);
  }
  if (r.payload_ignored > 0) {
    out += fmt::format("  payloads ignored {}: deliveries skipped as duplicates although they carried another "
                       "payload than the one that ran (their intent was lost)\n",
                       r.payload_ignored);
  }
  out += saga_text(r);
  out += fmt::format("  waits {}\n", quantiles_text(r.wait_time));
  out += fmt::format("  recovery latency {}\n", quantiles_text(r.recovery_latency));
  out += fmt::format("  sink calls {} ({:.3f} per successful effect)\n", r.sink_calls, r.calls_per_success);
  out += fmt::format("  store history linearizable: {}\n",
                     r.linearizable.has_value()          ? (*r.linearizable ? "yes" : "NO")
                     : r.linearizable_unknown.empty() ? "not checked"
                                                      : r.linearizable_unknown.front());
  for (const std::string& line : r.kv_checks) out += fmt::format("  {}\n", line);
  if (!r.swarm.empty()) {
    std::string kinds;
    for (const auto& k : r.swarm) kinds += (kinds.empty() ? "" : " ") + k;
    out += fmt::format("  swarm: faults on for this seed: {}\n", kinds.empty() ? "none" : kinds);
  }
  out += never_fired_text(r);
  for (const auto& why : r.not_reproducible) out += fmt::format("  NOT GUARANTEED REPRODUCIBLE: {}\n", why);
  out += expectations_text(r);
  out += fmt::format("  {}\n", r.ok ? "OK" : "FAILED");
  return out;
}

namespace {
// "crash_after_effect 14, expired 3" (causes in kCauses order, none: ""), broken after a comma into lines of at
// most `width` characters each (a single cause longer than that stays whole).
std::vector<std::string> cause_lines(const std::array<std::uint64_t, lethe::kCauseCount>& causes, std::size_t width) {
  std::vector<std::string> lines(1);
  for (std::size_t i = 0; i < lethe::kCauseCount; ++i) {
    if (causes[i] == 0) continue;
    const std::string part = fmt::format("{} {}", lethe::kCauseNames[i], causes[i]);
    std::string& line = lines.back();
    if (line.empty()) {
      line = part;
    } else if (line.size() + 2 + part.size() + 1 <= width) {  // + 1: the comma this part may be followed by
      line += ", " + part;
    } else {
      line += ",";
      lines.push_back(part);
    }
  }
  return lines;
}
}  // namespace

std::string suite_table(const std::vector<SuiteRow>& rows) {
  std::size_t width = 8;
  std::size_t shows = 5;
  for (const auto& row : rows) {
    width = std::max(width, row.scenario.size());
    shows = std::max(shows, row.shows.size());
  }
  const auto line = [&](std::string_view scenario, std::string_view what, auto seeds, auto passed, auto messages,
                        auto effects, auto duplicates, auto lost, std::string_view verdict) {
    return fmt::format("{:<{}}  {:<{}}  {:>5}  {:>6}  {:>8}  {:>8}  {:>10}  {:>6}  {:<6}  ", scenario, width, what,
                       shows, seeds, passed, messages, effects, duplicates, lost, verdict);
  };
  std::string out = line("scenario", "shows", "seeds", "passed", "messages", "effects", "duplicates", "lost", "result");
  const std::size_t indent = out.size();
  const std::size_t room = kSuiteTableWidth > indent + 20 ? kSuiteTableWidth - indent : 20;
  out += "duplicates by cause\n";
  std::size_t total = 0;
  std::size_t passed = 0;
  for (const auto& row : rows) {
    total += row.seeds;
    passed += row.passed;
    const char* verdict = row.errors > 0 ? "ERROR" : (row.passed == row.seeds ? "ok" : "FAIL");
    std::string text = line(row.scenario, row.shows, row.seeds, row.passed, row.messages, row.effects,
                            row.duplicates, row.lost, verdict);
    const std::vector<std::string> causes = cause_lines(row.causes, room);
    for (std::size_t k = 0; k < causes.size(); ++k) {
      text += (k == 0 ? "" : "\n" + std::string(indent, ' ')) + causes[k];
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out += text + "\n";
  }
  out += fmt::format("{} scenarios, {} seeds: {} passed, {} failed\n", rows.size(), total, passed, total - passed);
  return out;
}

}  // namespace reports
