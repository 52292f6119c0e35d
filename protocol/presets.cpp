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

// The keys every two-phase-record preset sets, in the order the presets list them; what differs per library is a
// field here, the rest is what they all do (a blind completion, consistent reads, an expired record replaced, an
// unanswered completion failing the attempt, no local cache: Powertools' is off unless asked for).
struct TwoPhase {
  SettingValue poll = kLethePoll;
  sim::Duration max_wait = 0;
  const char* on_max_wait = "error";
  bool memoize = true;
  const char* takeover = "conditional";
  const char* poll_with = "read";
  const char* expires_on = "at-complete";
  const char* precedence = "expired-first";
  const char* on_failure = "release";
  bool memoize_failures = false;
  const char* payload_check = "off";
};

// `first` (the keys a library sets before the shared ones), then the shared keys with `t`'s values.
Settings two_phase(Settings first, const TwoPhase& t) {
  Settings all = std::move(first);
  all.insert(all.end(), {{"poll", t.poll},
                         {"max_wait", duration(t.max_wait)},
                         {"on_max_wait", word(t.on_max_wait)},
                         {"memoize", SettingValue{t.memoize}},
                         {"takeover", word(t.takeover)},
                         {"complete", word("blind")},
                         {"poll_read", kConsistentReads},
                         {"poll_with", word(t.poll_with)},
                         {"expires_on", word(t.expires_on)},
                         {"expired_wins", SettingValue{true}},
                         {"precedence", word(t.precedence)},
                         {"on_failure", word(t.on_failure)},
                         {"on_completion_failure", word("fail")},
                         {"memoize_failures", SettingValue{t.memoize_failures}},
                         {"payload_check", word(t.payload_check)},
                         {"local_cache", SettingValue{LocalCache{}}}});
  return all;
}

// AWS Lambda Powertools (Python) idempotency, as configured by default (no payload_validation_jmespath). Its
// in-progress expiry is the Lambda's remaining time, the deployment's: max_processing_time is the file's.
Settings powertools() { return two_phase({{"ttl", duration(sim::kHour)}}, TwoPhase{}); }

// Apache Camel's idempotent consumer, eager (the default), over MemoryIdempotentRepository with
// removeOnFailure = true: a key never goes stale (no takeover, so a year stands for "never") and never expires.
Settings camel_eager() {
  TwoPhase t;
  t.on_max_wait = "skip";  // a key already present, in flight or not, is a duplicate: filtered at once
  t.memoize = false;
  t.precedence = "expired-wins";
  return two_phase({{"max_processing_time", duration(365 * sim::kDay)}, {"ttl", duration(kTtlNone)}}, t);
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
  TwoPhase t;
  t.expires_on = "at-start";
  t.precedence = "expiry-ignored";
  t.memoize_failures = true;
  t.payload_check = "fingerprint";
  return two_phase({{"max_processing_time", duration(90 * sim::kSecond)}, {"ttl", duration(72 * sim::kHour)}}, t);
}

// The mnemosyne libraries: maxProcessingTime and the TTL are their user's (no default there), the poll is
// PollStrategy.linear()'s defaults (50 ms, for at most 3 s) of the Scala ones.
Settings mnemosyne_library(bool memoize, const char* on_max_wait, const char* takeover, const char* poll_with,
                           const char* precedence) {
  TwoPhase t;
  t.poll = poll_every(50 * sim::kMillisecond);
  t.max_wait = 3 * sim::kSecond;
  t.on_max_wait = on_max_wait;
  t.memoize = memoize;
  t.takeover = takeover;
  t.poll_with = poll_with;
  t.precedence = precedence;
  t.on_failure = "keep";
  return two_phase({}, t);
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
