#include "core/result.hpp"

#include <algorithm>

namespace lethe {

namespace {

using K = FieldKind;

// The rows. [expect]'s "allowed" list follows this order; the JSON puts the extensions (the flag after
// `expectable`) after the rest, in this order: coverage, swarm, schedule, memo_overwrites, store_peak_records,
// trace_events, linearizable_unknown, the saga fields, drawn, not_reproducible, defaults_replaced,
// lost_examples, store_errors, store_error_first, undelivered, undelivered_latest, unanswered, unanswered_examples,
// commit_failed, payload_mismatches, payload_ignored, kv_consistent, kv_checks.
constexpr std::array<ResultField, 49> kResultFields = {{
    {"scenario", K::Text, false, false, "scenario.name of the run", &RunResult::scenario},
    {"seed", K::Count, false, false, "the seed of the run", &RunResult::seed},
    {"trace_hash", K::Hash, false, false, "the determinism fingerprint: a hash of every trace record",
     &RunResult::trace_hash},
    {"coverage", K::CountMap, true, true,
     "how often each fault point fired (\"coverage.crash_point.after_effect_before_complete.fired\", "
     "\"coverage.pause\")",
     &RunResult::coverage},
    {"swarm", K::Words, false, true, "the fault kinds switched on for this seed (swarm mode)", &RunResult::swarm},
    {"schedule", K::Words, false, true,
     "run.schedule when it is not \"fifo\": [\"random\"] or [\"pct(depth=D)\"] (left out for fifo)",
     &RunResult::schedule},
    {"sim_time", K::Time, true, false, "simulated nanoseconds at the end", &RunResult::sim_time},
    {"messages", K::Count, true, false, "distinct message ids published", &RunResult::messages},
    {"deliveries", K::Count, true, false, "deliveries to workers, copies and replays included",
     &RunResult::deliveries},
    {"effects", K::Count, true, false, "executions recorded by the sink", &RunResult::effects},
    {"duplicate_effects", K::Count, true, false, "executions beyond the first per (message id, processor)",
     &RunResult::duplicate_effects},
    {"duplicates", K::PerCause, true, false, "duplicate effects by cause, summing to duplicate_effects",
     &RunResult::duplicates},
    {"lost_messages", K::Count, true, false,
     "(message id, processor) pairs never executed by the end of the drain", &RunResult::lost_messages},
    {"memo_mismatches", K::Count, true, false,
     "callers handed a result different from the one the first execution produced", &RunResult::memo_mismatches},
    {"memo_overwrites", K::Count, true, true,
     "completions that landed on a live record whose memoized result was different",
     &RunResult::memo_overwrites},
    {"store_peak_records", K::Count, true, true,
     "the most records the store held at once, every table (the table's growth when ttl = \"none\")",
     &RunResult::store_peak_records},
    {"waits", K::Count, true, false, "callers that had to wait on an in-flight record", &RunResult::waits},
    {"wait_time", K::Quantiles, true, false, "how long those callers waited", &RunResult::wait_time},
    {"sink_calls", K::Count, true, false, "calls that reached the provider", &RunResult::sink_calls},
    {"calls_per_success", K::Ratio, true, false, "sink calls per successful effect (retry storms)",
     &RunResult::calls_per_success},
    {"recovery_latency", K::Quantiles, true, false,
     "from the crash of an attempt to that message's completion by another", &RunResult::recovery_latency},
    {"linearizable", K::Boolean, true, false, "the store history passed the checker (null when not checked)",
     &RunResult::linearizable},
    {"expectations", K::Expectations, false, false, "each [expect] entry: key, op, want, want_text, got, ok",
     &RunResult::expectations},
    {"ok", K::Boolean, false, false, "every expectation held", &RunResult::ok},
    {"trace_events", K::Count, false, true, "trace records the run produced", &RunResult::trace_events},
    {"linearizable_unknown", K::Words, false, true,
     "why linearizable is null although the history was checked: the checker's budget ran out (left out otherwise)",
     &RunResult::linearizable_unknown},
    {"saga_completed", K::Count, true, true, "sagas whose every step ran once and nothing was compensated",
     &RunResult::saga_completed},
    {"saga_compensated", K::Count, true, true, "sagas whose every step that ran was compensated after it ran",
     &RunResult::saga_compensated},
    {"saga_stuck", K::Count, true, true, "sagas left half-done at the end (no late step explains it)",
     &RunResult::saga_stuck},
    {"saga_duplicate_steps", K::Count, true, true, "step executions beyond the first per (saga, step)",
     &RunResult::saga_duplicate_steps},
    {"saga_duplicate_compensations", K::Count, true, true,
     "compensation executions beyond the first per (saga, step): a double refund", &RunResult::saga_duplicate_compensations},
    {"saga_orphan_compensations", K::Count, true, true, "compensations of a step that never ran",
     &RunResult::saga_orphan_compensations},
    {"saga_late_steps", K::Count, true, true,
     "step executions after that step's compensation: the compensation raced a late step", &RunResult::saga_late_steps},
    {"saga_violations", K::Words, false, true, "each saga violation, cause first (at most 100)",
     &RunResult::saga_violations},
    {"drawn", K::Words, false, true,
     "[explore]: the values this seed drew, \"KEY=VALUE\", then \"swarm_off=KIND,...\" (left out without [explore])",
     &RunResult::drawn},
    {"not_reproducible", K::Words, false, true,
     "why the same seed may not give the same run: external nodes without the turn protocol (left out otherwise)",
     &RunResult::not_reproducible},
    {"defaults_replaced", K::Words, false, true,
     "the default invariants (duplicate_effects == 0, ...) that an [expect] entry of the scenario replaces, so "
     "lethe did not check them (left out when none)",
     &RunResult::defaults_replaced},
    {"lost_examples", K::Words, false, true,
     "the first (message, processor) pairs counted in lost_messages, \"message ID (PROCESSOR)\", at most 20 (left "
     "out when none)",
     &RunResult::lost_examples},
    {"store_errors", K::Count, true, true,
     "store operations of external nodes that lethe rejected as malformed (each answered with an error)",
     &RunResult::store_errors},
    {"store_error_first", K::Words, false, true, "the first such rejection: the operation's error text (left out "
     "when none)", &RunResult::store_error_first},
    {"undelivered", K::Count, true, true,
     "message copies due after the run ended (producer copies, redeliveries, queue messages whose visibility "
     "timeout expires later), so never delivered: a longer run.duration delivers them",
     &RunResult::undelivered},
    {"undelivered_latest", K::Time, false, true, "the latest due time of those copies (0 when none)",
     &RunResult::undelivered_latest},
    {"unanswered", K::Count, true, true,
     "deliveries a consumer never answered (no ack, no rejection): still held when the run ended; one cut by a "
     "crash lethe injected is not counted",
     &RunResult::unanswered},
    {"unanswered_examples", K::Words, false, true,
     "the first such deliveries, \"message ID (PROCESSOR) attempt A on NODE\", at most 20 (left out "
     "when none)",
     &RunResult::unanswered_examples},
    {"commit_failed", K::Count, true, true,
     "kafka: offset commits the consumer group refused because the committing member had been removed from it "
     "(session_timeout, max_poll_interval, a crash) or a rebalance had moved on; its records are replayed",
     &RunResult::commit_failed},
    {"payload_mismatches", K::Count, true, true,
     "deliveries refused unprocessed because the id's record was kept for another payload (protocol.payload_check "
     "= \"fingerprint\": Powertools' IdempotencyValidationError, an HTTP 422); acknowledged, not retried",
     &RunResult::payload_mismatches},
    {"payload_ignored", K::Count, true, true,
     "workload.redelivery.payload = \"changed\": deliveries skipped as duplicates although their payload was not "
     "the one whose effect ran (the intent they carried was lost)",
     &RunResult::payload_ignored},
    {"kv_consistent", K::Boolean, true, true,
     "external nodes: the seq-kv and lww-kv histories held their own models (seq-kv sequentially consistent per key, "
     "lww-kv's reads read from writes); null when no node used them or the check was not run",
     &RunResult::kv_consistent},
    {"kv_checks", K::Words, false, true,
     "external nodes: one line per kv service used (seq-kv, lww-kv): its operations, its own model's verdict and "
     "linearizability's (left out otherwise)",
     &RunResult::kv_checks},
}};

const ResultField* find_field(std::string_view name) {
  const auto it = std::find_if(kResultFields.begin(), kResultFields.end(),
                               [name](const ResultField& field) { return field.name == name; });
  return it == kResultFields.end() ? nullptr : &*it;
}

// A whole-field value as a number, for the kinds that are one number.
template <class... Handlers>
struct Overloaded : Handlers... {
  using Handlers::operator()...;
};
// Spelled out for compilers without aggregate deduction (clang 14, which builds the fuzz target).
template <class... Handlers>
Overloaded(Handlers...) -> Overloaded<Handlers...>;

std::optional<double> number_of(const RunResult& result, const ResultField& field) {
  return std::visit(
      Overloaded{
          [&](std::uint64_t RunResult::*member) -> std::optional<double> {
            if (field.kind == FieldKind::Hash) return std::nullopt;
            return static_cast<double>(result.*member);
          },
          [&](std::int64_t RunResult::*member) -> std::optional<double> { return static_cast<double>(result.*member); },
          [&](double RunResult::*member) -> std::optional<double> { return result.*member; },
          [&](bool RunResult::*member) -> std::optional<double> { return result.*member ? 1.0 : 0.0; },
          [&](std::optional<bool> RunResult::*member) -> std::optional<double> {
            if (!(result.*member).has_value()) return std::nullopt;
            return *(result.*member) ? 1.0 : 0.0;
          },
          [](auto) -> std::optional<double> { return std::nullopt; },
      },
      field.member);
}

// The value of one part ("p99", "expired", "pause") of a field with parts.
std::optional<double> part_of(const RunResult& result, const ResultField& field, std::string_view part) {
  switch (field.kind) {
    case FieldKind::Quantiles: {
      const Quantiles& quantiles = result.*std::get<Quantiles RunResult::*>(field.member);
      for (const QuantilePart& q : kQuantileParts) {
        if (q.name != part || !q.expectable) continue;
        return std::visit([&](auto member) { return static_cast<double>(quantiles.*member); }, q.member);
      }
      return std::nullopt;
    }
    case FieldKind::PerCause: {
      const auto& counts = result.*std::get<std::array<std::uint64_t, kCauseCount> RunResult::*>(field.member);
      for (std::size_t i = 0; i < kCauseCount; ++i) {
        if (kCauses[i].name == part) return static_cast<double>(counts[i]);
      }
      return std::nullopt;
    }
    case FieldKind::CountMap: {
      const auto& counts = result.*std::get<std::map<std::string, std::uint64_t> RunResult::*>(field.member);
      const auto it = counts.find(std::string(part));
      return it == counts.end() ? 0.0 : static_cast<double>(it->second);
    }
    default: return std::nullopt;
  }
}

}  // namespace

std::span<const ResultField> result_fields() { return kResultFields; }

std::optional<double> RunResult::field(std::string_view dotted) const {
  if (const ResultField* whole = find_field(dotted)) return number_of(*this, *whole);
  const auto dot = dotted.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  const ResultField* field = find_field(dotted.substr(0, dot));
  if (field == nullptr) return std::nullopt;
  return part_of(*this, *field, dotted.substr(dot + 1));
}

std::optional<FieldKind> expectation_kind(std::string_view dotted) {
  const auto& names = expectation_field_names();
  if (std::find(names.begin(), names.end(), dotted) != names.end()) {
    const ResultField* whole = find_field(dotted);
    if (whole != nullptr) return whole->kind;
    return find_field(dotted.substr(0, dotted.find('.')))->kind == FieldKind::Quantiles ? FieldKind::Time
                                                                                         : FieldKind::Count;
  }
  const auto dot = dotted.find('.');
  if (dot == std::string_view::npos || dot + 1 == dotted.size()) return std::nullopt;
  const ResultField* field = find_field(dotted.substr(0, dot));
  if (field != nullptr && field->expectable && field->kind == FieldKind::CountMap) return FieldKind::Count;
  return std::nullopt;
}

const std::vector<std::string>& expectation_field_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const ResultField& field : kResultFields) {
      if (!field.expectable) continue;
      const std::string name(field.name);
      switch (field.kind) {
        case FieldKind::Quantiles:
          for (const QuantilePart& part : kQuantileParts) {
            if (part.expectable) out.push_back(name + "." + std::string(part.name));
          }
          break;
        case FieldKind::PerCause:
          for (const CauseRow& cause : kCauses) out.push_back(name + "." + std::string(cause.name));
          break;
        case FieldKind::CountMap: break;  // open-ended: any part
        default: out.push_back(name);
      }
    }
    return out;
  }();
  return names;
}

}  // namespace lethe
