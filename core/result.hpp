// core/result.hpp — the result of one simulated run (one scenario, one seed).
//
// Field names follow docs/results.md exactly; reports/ renders
// this struct to JSON/CSV/JUnit and runner/ checks expectations against it.
// Times are integer virtual nanoseconds.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
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
};
inline constexpr std::size_t kCauseCount = 6;
inline constexpr std::array<std::string_view, kCauseCount> kCauseNames = {
    "unprotected", "takeover_while_alive", "herd_takeover", "crash_after_effect", "expired", "sink_retry"};
inline std::string_view to_string(Cause cause) { return kCauseNames[static_cast<std::size_t>(cause)]; }

struct Quantiles {
  std::int64_t p50 = 0;
  std::int64_t p99 = 0;
  std::int64_t max = 0;
  std::uint64_t count = 0;
};

struct ExpectationResult {
  std::string key;
  std::string op;      // "==", "<=", ...
  std::string want;    // as written ("0", "5%", "3")
  double got = 0.0;
  bool ok = false;
  int line = 0;        // in the scenario file
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
  std::uint64_t memo_overwrites = 0;               // completions that replaced an already memoized, different result
  std::vector<DuplicateExplanation> explanations;  // one per duplicate (capped)
  std::uint64_t trace_events = 0;

  // A result field by its dotted name ("duplicates.expired", "wait_time.p99"); nullopt if unknown.
  std::optional<double> field(std::string_view dotted) const;
};

// Every dotted field name field() knows (for validating [expect] keys).
const std::vector<std::string>& result_field_names();

}  // namespace lethe
