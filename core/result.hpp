// core/result.hpp — the result of one simulated run (one scenario, one seed), and the table of its fields.
//
// Field names follow docs/results.md exactly. result_fields() is the one list of them: name, kind, whether
// [expect] may name it, a one-line description and the member that holds it. The loader takes the names and
// kinds [expect] allows from it, RunResult::field() looks names up in it, reports/json.cpp writes and reads
// the JSON document by walking it, and docs/result-fields.md is generated from it. A new result field is one
// row here plus the code that computes it. Times are integer virtual nanoseconds.
//
// Does not: compute anything (world/ fills the struct) or render anything (reports/ does).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace lethe {

// Duplicate causes, in the order docs/results.md lists them.
enum class Cause : std::uint8_t {
  Unprotected,
  TakeoverWhileAlive,
  HerdTakeover,
  CrashAfterEffect,
  Expired,
  SinkRetry,
  ProviderKeyExpired,
  NotAttributable,
};
inline constexpr std::size_t kCauseCount = 8;
struct CauseRow {
  std::string_view name;         // the key under "duplicates" (JSON, [expect], CSV)
  std::string_view description;  // one line, for the generated reference
};
inline constexpr std::array<CauseRow, kCauseCount> kCauses = {{
    {"unprotected", "no guarantee, or a read-then-write race"},
    {"takeover_while_alive", "taken over while the owner was alive (processing time above max_processing_time, "
                             "a pause, clock skew)"},
    {"herd_takeover", "several callers took over the same stale record"},
    {"crash_after_effect", "the owner died between the effect and its completion record"},
    {"expired", "the record was gone (TTL)"},
    {"sink_retry", "the same attempt retried a sink call whose ACK was lost"},
    {"provider_key_expired", "the provider had pruned the idempotency key (sink.idempotency_window): a later "
                             "call started a new request"},
    {"not_attributable", "an external node ran the effect and what lethe observed of it (its store traffic) does "
                         "not tell which clause broke"},
}};
inline constexpr std::array<std::string_view, kCauseCount> kCauseNames = [] {
  std::array<std::string_view, kCauseCount> names{};
  for (std::size_t i = 0; i < kCauseCount; ++i) names[i] = kCauses[i].name;
  return names;
}();
inline std::string_view to_string(Cause cause) { return kCauseNames[static_cast<std::size_t>(cause)]; }

struct Quantiles {
  std::int64_t p50 = 0;
  std::int64_t p99 = 0;
  std::int64_t max = 0;
  std::uint64_t count = 0;
};

// The parts of a Quantiles value, in JSON order. [expect] may name the time parts (NAME.p50, ...), not count.
struct QuantilePart {
  std::string_view name;
  std::variant<std::int64_t Quantiles::*, std::uint64_t Quantiles::*> member;
  bool expectable;
};
inline constexpr std::array<QuantilePart, 4> kQuantileParts = {{
    {"p50", &Quantiles::p50, true},
    {"p99", &Quantiles::p99, true},
    {"max", &Quantiles::max, true},
    {"count", &Quantiles::count, false},  // extension: how many samples the quantiles are over
}};

struct ExpectationResult {
  std::string key;
  std::string op;      // "==", "<=", ...
  std::string want;    // as written ("0", "5%", "3"), for people
  double got = 0.0;    // NaN: the value could not be had (linearizable when unchecked)
  bool ok = false;
  int line = 0;        // in the scenario file
  double threshold = 0.0;  // the number `got` was compared with: `want`, a percent resolved against `messages`
};

// One explained duplicate: which execution, why, and the evidence.
struct DuplicateExplanation {
  std::uint64_t id = 0;
  std::uint32_t processor = 0;
  Cause cause = Cause::Unprotected;
  std::uint64_t attempt = 0;          // the attempt whose execution was the duplicate
  std::uint64_t first_attempt = 0;    // the attempt that executed first
  std::int64_t at = 0;                // virtual time of the duplicate execution
  std::string because;                // plain words: which clause broke, when, on which nodes
};

// Why a caller was handed a value other than the first execution's (a memo mismatch), in plain words.
struct MemoMismatchExplanation {
  std::uint64_t id = 0;
  std::uint32_t processor = 0;
  std::uint64_t attempt = 0;  // the attempt that handed its caller the other value
  std::int64_t at = 0;        // virtual time it returned
  std::string because;        // who got which value, from which execution, and why it differs from the first
};

struct RunResult {
  std::string scenario;
  std::uint64_t seed = 0;
  std::uint64_t trace_hash = 0;
  std::int64_t sim_time = 0;
  std::uint64_t messages = 0;
  std::uint64_t deliveries = 0;
  std::uint64_t effects = 0;
  std::uint64_t duplicate_effects = 0;
  std::array<std::uint64_t, kCauseCount> duplicates{};
  std::uint64_t lost_messages = 0;
  std::uint64_t memo_mismatches = 0;
  std::uint64_t waits = 0;
  Quantiles wait_time;
  std::uint64_t sink_calls = 0;
  double calls_per_success = 0.0;
  Quantiles recovery_latency;
  std::optional<bool> linearizable;
  std::vector<ExpectationResult> expectations;
  bool ok = true;

  // Beyond the contract (extensions, documented in the README):
  std::map<std::string, std::uint64_t> coverage;   // fault point / crash point -> times it fired
  std::vector<std::string> swarm;                  // fault kinds switched on for this seed (swarm mode)
  std::vector<std::string> schedule;               // run.schedule when it is not "fifo" (one word), empty for fifo
  std::uint64_t memo_overwrites = 0;               // completions that landed on a live record with another memoized result
  std::uint64_t store_peak_records = 0;            // the most items the store held at once (every table)
  std::vector<DuplicateExplanation> explanations;  // one per duplicate (capped)
  std::vector<MemoMismatchExplanation> memo_explanations;  // one per memo mismatch (same cap)
  std::uint64_t trace_events = 0;
  std::vector<std::string> linearizable_unknown;   // why linearizable is null although checked (empty otherwise)
  // Sagas ([saga] steps > 0; check/saga_oracle.hpp), all 0 for plain messages.
  std::uint64_t saga_completed = 0;                // every step ran once, nothing compensated
  std::uint64_t saga_compensated = 0;              // every step that ran was undone afterwards
  std::uint64_t saga_stuck = 0;                    // left half-done, no late step to blame
  std::uint64_t saga_duplicate_steps = 0;          // step executions beyond the first
  std::uint64_t saga_duplicate_compensations = 0;  // compensation executions beyond the first
  std::uint64_t saga_orphan_compensations = 0;     // compensations of a step that never ran
  std::uint64_t saga_late_steps = 0;               // step executions after that step's compensation
  std::vector<std::string> saga_violations;        // one line per violation, cause first (capped)
  std::vector<std::string> drawn;                  // [explore]: the seed's drawn values, KEY=VALUE (empty without)
  std::vector<std::string> not_reproducible;       // why a seed may not repeat (external nodes without turns)

  // A numeric result field by its dotted name ("duplicates.expired", "wait_time.p99", "ok"); nullopt if the
  // name is not a numeric field of result_fields() or (linearizable) the value is absent.
  std::optional<double> field(std::string_view dotted) const;
};

// ---------------------------------------------------------------- the table of result fields

// What a field holds. Count, Time, Ratio and Boolean are single numbers; the others have parts.
enum class FieldKind : std::uint8_t {
  Count,         // how many (std::uint64_t)
  Time,          // virtual nanoseconds (std::int64_t); [expect] also takes a duration ("< 5s")
  Ratio,         // a real number (double)
  Boolean,       // true/false (bool), or also null (std::optional<bool>: not checked)
  Quantiles,     // NAME.p50, NAME.p99, NAME.max: Time parts (kQuantileParts)
  PerCause,      // NAME.<cause>: one Count per duplicate cause (kCauses)
  CountMap,      // NAME.<anything>: a Count, 0 when the name never occurred
  Text,          // a string
  Hash,          // a std::uint64_t written as 16 hex digits
  Words,         // a list of strings, left out of the JSON when empty
  Expectations,  // the verdict of each [expect] entry
};

using ResultMember =
    std::variant<std::string RunResult::*, std::uint64_t RunResult::*, std::int64_t RunResult::*, double RunResult::*,
                 bool RunResult::*, std::optional<bool> RunResult::*, Quantiles RunResult::*,
                 std::array<std::uint64_t, kCauseCount> RunResult::*, std::map<std::string, std::uint64_t> RunResult::*,
                 std::vector<std::string> RunResult::*, std::vector<ExpectationResult> RunResult::*>;

struct ResultField {
  std::string_view name;         // the JSON key; [expect] names it, or NAME.PART for kinds with parts
  FieldKind kind;
  bool expectable;               // [expect] may name it (its parts, for kinds with parts)
  bool extension;                // beyond docs/results.md: the JSON lists extensions after every other field
  std::string_view description;  // one line, for the generated reference
  ResultMember member;
};

// Every field of RunResult that the JSON result carries. The JSON document (and docs/result-fields.md) is the
// non-extension rows in table order, then the extension rows in table order; [expect]'s "allowed" list is in
// table order, which is why memo_overwrites sits beside memo_mismatches and coverage, swarm come early.
std::span<const ResultField> result_fields();

// The kind [expect] compares a dotted name as (Count, Time, Ratio or Boolean); nullopt if [expect] may not
// name it. A CountMap field takes any non-empty part ("coverage.pause").
std::optional<FieldKind> expectation_kind(std::string_view dotted);

// Every dotted name [expect] may name, in table order (the open-ended CountMap parts aside).
const std::vector<std::string>& expectation_field_names();

}  // namespace lethe
