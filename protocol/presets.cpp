// protocol/presets.cpp — the presets of protocol/presets.hpp. What each library does, and so each value, is in
// docs/libraries.md (read from each library's own source).
#include "protocol/presets.hpp"

#include "core/config.hpp"
#include "sim/time.hpp"

namespace lethe {

namespace {

using Settings = std::vector<std::pair<std::string, SettingValue>>;

SettingValue word(const char* text) { return SettingValue{std::string(text)}; }
SettingValue duration(sim::Duration value) { return SettingValue{value}; }
SettingValue poll_every(sim::Duration interval) {
  Poll poll;
  poll.interval = sim::Distribution::constant(interval);
  return SettingValue{poll};
}
const SettingValue kConsistentReads{PollRead{}};
const SettingValue kLethePoll{Poll{}};  // lethe's default: for a library that never waits, the value is unused

// AWS Lambda Powertools (Python) idempotency, as configured by default (no payload_validation_jmespath). Its
// in-progress expiry is the Lambda's remaining time, the deployment's: max_processing_time is the file's.
Settings powertools() {
  return {{"ttl", duration(sim::kHour)},
          {"poll", kLethePoll},
          {"max_wait", duration(0)},
          {"on_max_wait", word("error")},
          {"memoize", SettingValue{true}},
          {"takeover", word("conditional")},
          {"complete", word("blind")},
          {"poll_read", kConsistentReads},
          {"poll_with", word("read")},
          {"expires_on", word("at-complete")},
          {"expired_wins", SettingValue{true}},
          {"precedence", word("expired-first")},
          {"on_failure", word("release")},
          {"on_completion_failure", word("fail")},
          {"memoize_failures", SettingValue{false}},
          {"payload_check", word("off")}};
}

// Apache Camel's idempotent consumer, eager (the default), over MemoryIdempotentRepository with
// removeOnFailure = true: a key never goes stale (no takeover, so a year stands for "never") and never expires.
Settings camel_eager() {
  return {{"max_processing_time", duration(365 * sim::kDay)},
          {"ttl", duration(kTtlNone)},
          {"poll", kLethePoll},
          {"max_wait", duration(60 * sim::kSecond)},
          {"on_max_wait", word("error")},
          {"memoize", SettingValue{false}},
          {"takeover", word("conditional")},
          {"complete", word("blind")},
          {"poll_read", kConsistentReads},
          {"poll_with", word("read")},
          {"expires_on", word("at-complete")},
          {"expired_wins", SettingValue{true}},
          {"precedence", word("expired-wins")},
          {"on_failure", word("release")},
          {"on_completion_failure", word("fail")},
          {"memoize_failures", SettingValue{false}},
          {"payload_check", word("off")}};
}

// Camel with eager = false: contains before the route, add after it.
Settings camel_lazy() {
  return {{"ttl", duration(kTtlNone)},
          {"memoize", SettingValue{false}},
          {"expired_wins", SettingValue{true}},
          {"precedence", word("expired-wins")}};
}

// Idempotency keys on PostgreSQL (rocket-rides-atomic): a 90 s lock, keys reaped 72 h after they were created.
Settings idempotency_keys() {
  return {{"max_processing_time", duration(90 * sim::kSecond)},
          {"ttl", duration(72 * sim::kHour)},
          {"poll", kLethePoll},
          {"max_wait", duration(0)},
          {"on_max_wait", word("error")},
          {"memoize", SettingValue{true}},
          {"takeover", word("conditional")},
          {"complete", word("blind")},
          {"poll_read", kConsistentReads},
          {"poll_with", word("read")},
          {"expires_on", word("at-start")},
          {"expired_wins", SettingValue{true}},
          {"precedence", word("expiry-ignored")},
          {"on_failure", word("release")},
          {"on_completion_failure", word("fail")},
          {"memoize_failures", SettingValue{true}},
          {"payload_check", word("fingerprint")}};
}

// The mnemosyne libraries: maxProcessingTime and the TTL are their user's (no default there), the poll is
// PollStrategy.linear()'s defaults (50 ms, for at most 3 s) of the Scala ones.
Settings mnemosyne_library(bool memoize, const char* on_max_wait, const char* takeover, const char* poll_with,
                           const char* precedence) {
  return {{"poll", poll_every(50 * sim::kMillisecond)},
          {"max_wait", duration(3 * sim::kSecond)},
          {"on_max_wait", word(on_max_wait)},
          {"memoize", SettingValue{memoize}},
          {"takeover", word(takeover)},
          {"complete", word("blind")},
          {"poll_read", kConsistentReads},
          {"poll_with", word(poll_with)},
          {"expires_on", word("at-complete")},
          {"expired_wins", SettingValue{true}},
          {"precedence", word(precedence)},
          {"on_failure", word("keep")},
          {"on_completion_failure", word("fail")},
          {"memoize_failures", SettingValue{false}},
          {"payload_check", word("off")}};
}

std::vector<Preset> make_presets() {
  return {
      {"powertools", "AWS Lambda Powertools (Python) idempotency", "mnemosyne", powertools()},
      {"camel-eager", "Apache Camel idempotent consumer, eager (the default), removeOnFailure", "mnemosyne",
       camel_eager()},
      {"camel-lazy", "Apache Camel idempotent consumer, eager = false", "check-then-insert", camel_lazy()},
      {"idempotency-keys", "idempotency keys on PostgreSQL (rocket-rides-atomic)", "mnemosyne",
       idempotency_keys()},
      // Its start write is if_not_exists(startedAt) and is also its poll; duplicates get no stored result.
      {"mnemosyne-scala", "mnemosyne (Scala)", "mnemosyne",
       mnemosyne_library(false, "error", "if-not-exists", "start-write", "expired-first")},
      // The Scala library's write, a memoized result, Completed ranked above Expired, and a poll that runs out
      // goes ahead.
      {"mnemosyne-rs", "mnemosyne (Rust port)", "mnemosyne",
       mnemosyne_library(true, "process", "if-not-exists", "start-write", "completed-first")},
      // The predecessor: a takeover conditional on the old startedAt, waiters re-read the record.
      {"comms-deduplication", "comms-deduplication (Scala, the predecessor of mnemosyne)", "mnemosyne",
       mnemosyne_library(true, "error", "conditional", "read", "expired-first")},
  };
}

}  // namespace

const std::vector<Preset>& presets() {
  static const std::vector<Preset> all = make_presets();
  return all;
}

const Preset* find_preset(std::string_view name) {
  for (const Preset& preset : presets()) {
    if (preset.name == name) return &preset;
  }
  return nullptr;
}

}  // namespace lethe
