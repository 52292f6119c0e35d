// core/config.hpp — the scenario, as plain data.
//
// One ScenarioConfig mirrors one scenario file (docs/scenarios.md, "Scenario file"):
// one nested struct per TOML table, one field per key, with the same names.
// The loader (scenario/loader.hpp) fills it and guarantees, when it
// returns a config, that every value is in range and every cross-field rule
// holds (required keys present, counts positive where they must be, ...); the
// rules are listed with each field. Code that builds a config by hand must
// keep them too.
//
// Defaults: an optional key that the file leaves out takes the initializer of its
// field here, written next to each field below (docs/scenario-reference.md lists them,
// generated from scenario/schema.hpp). Keys whose absence
// means "off" are std::optional (nullopt = off). The keys of [protocol] other
// than kind belong to the strategy that reads them (core/settings.hpp): their
// defaults and rules are in its registry entry, not here.
//
// Units: durations are sim::Duration (int64 nanoseconds); rates are events per
// simulated second (double); probabilities are doubles in [0, 1].
//
// Does not: parse TOML, validate, or know about files (it only remembers where
// each key came from, so later errors can point at the line).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/settings.hpp"
#include "sim/distribution.hpp"
#include "sim/time.hpp"

namespace lethe {

// ---------------------------------------------------------------- values

// A rate such as "50/s" or "30/m", as events per simulated second.
struct Rate {
  double per_second = 0.0;
};

// A default distribution, written in the scenario language (the texts here are
// constants, so parsing cannot fail: a failure is a bug in this header).
inline sim::Distribution default_distribution(std::string_view text) {
  std::string error;
  std::optional<sim::Distribution> parsed = sim::Distribution::parse(text, {}, error, /*allow_negative=*/false);
  if (!parsed) std::abort();
  return *parsed;
}

// Where a key was written. line 0 means "given on the command line (--set)".
struct SourcePosition {
  int line = 0;
  int column = 0;
};

// ---------------------------------------------------------------- enums

enum class Partitioner { ByKey, Random };         // "key" | "random"
enum class CommitMode { AfterEach, Interval };    // "after-each" | "interval(5s)"
enum class TtlEvictionKind { Exact, Lazy };       // "exact" | "lazy(max=48h)"
enum class Takeover { Conditional, IfNotExists };        // "conditional" | "if-not-exists"
enum class Complete { Fenced, Blind };                   // "fenced" | "blind"
enum class PollWith { Read, StartWrite };                // "read" | "start-write"
enum class KeyInProgress { Serialize, Conflict };        // "serialize" | "conflict"
enum class OnConflict { Retry, Fail, NewKey };           // "retry" | "fail" | "new-key"
enum class SinkPayload { Stable, PerAttempt };           // "stable" | "per-attempt"
// How an expired record that is still present is judged (protocol.precedence):
//   ExpiredWins:    as protocol.expired_wins says (true: ExpiredFirst, false: ExpiryIgnored);
//   ExpiredFirst:   Expired > Completed > Timeout > Running (an expired record is new, whatever it says);
//   CompletedFirst: Completed > Expired > Timeout > Running (the Rust port: a completed expired record is
//                   still completed, an in-flight expired one is new);
//   ExpiryIgnored:  Completed > Timeout > Running (an expired record counts as what it says until evicted).
enum class Precedence { ExpiredWins, ExpiredFirst, CompletedFirst, ExpiryIgnored };
enum class ExpiresOn { AtComplete, AtStart };            // "at-complete" | "at-start"
enum class OnMaxWait { Error, Process, Skip };           // "error" | "process" | "skip"
enum class BackoffKind { None, Constant, Exponential };  // "none" | "constant(d)" | "exponential(base, cap)"
enum class Jitter { None, Full, Equal, Decorrelated };   // "none" | "full" | "equal" | "decorrelated"
// How lethe tells that a node without lethe_turns (a plain Maelstrom node) has finished reacting.
enum class PlainTurnEnd { Kernel, Silence };              // "kernel" | "silence"
// Whose clock a node process reads and waits on: lethe's virtual time (a preloaded library) or the machine's.
enum class NodeClockKind { Virtual, Wall };               // "virtual" | "wall"
enum class ProducerMode { Direct, DualWrite, Outbox };   // "direct" | "dual-write" | "outbox"
enum class PartitionGroup { Consumers, Store, Broker, Sink, Clients };
enum class ExpectationOp { Equal, NotEqual, Less, LessEqual, Greater, GreaterEqual };  // == != < <= > >=
enum class ScheduleKind { Fifo, Random, Pct };          // "fifo" | "random" | "pct(depth=3)"
enum class RedeliveryPayload { Same, Changed };         // "same" | "changed"

// The word used in scenario files (the bare kind word for the kinds that take
// arguments: "interval", "lazy", "eventual", "constant", "backoff", ...).
inline std::string to_string(Partitioner v) {
  switch (v) {
    case Partitioner::ByKey: return "key";
    case Partitioner::Random: return "random";
  }
  return "?";
}
inline std::string to_string(CommitMode v) {
  switch (v) {
    case CommitMode::AfterEach: return "after-each";
    case CommitMode::Interval: return "interval";
  }
  return "?";
}
inline std::string to_string(TtlEvictionKind v) {
  switch (v) {
    case TtlEvictionKind::Exact: return "exact";
    case TtlEvictionKind::Lazy: return "lazy";
  }
  return "?";
}
inline std::string to_string(Takeover v) {
  switch (v) {
    case Takeover::Conditional: return "conditional";
    case Takeover::IfNotExists: return "if-not-exists";
  }
  return "?";
}
inline std::string to_string(Complete v) {
  switch (v) {
    case Complete::Fenced: return "fenced";
    case Complete::Blind: return "blind";
  }
  return "?";
}
inline std::string to_string(PollReadKind v) {
  switch (v) {
    case PollReadKind::Consistent: return "consistent";
    case PollReadKind::Eventual: return "eventual";
  }
  return "?";
}
inline std::string to_string(KeyInProgress v) {
  switch (v) {
    case KeyInProgress::Serialize: return "serialize";
    case KeyInProgress::Conflict: return "conflict";
  }
  return "?";
}
inline std::string to_string(OnConflict v) {
  switch (v) {
    case OnConflict::Retry: return "retry";
    case OnConflict::Fail: return "fail";
    case OnConflict::NewKey: return "new-key";
  }
  return "?";
}
inline std::string to_string(SinkPayload v) {
  switch (v) {
    case SinkPayload::Stable: return "stable";
    case SinkPayload::PerAttempt: return "per-attempt";
  }
  return "?";
}
inline std::string to_string(ScheduleKind v) {
  switch (v) {
    case ScheduleKind::Fifo: return "fifo";
    case ScheduleKind::Random: return "random";
    case ScheduleKind::Pct: return "pct";
  }
  return "?";
}
inline std::string to_string(PollWith v) {
  switch (v) {
    case PollWith::Read: return "read";
    case PollWith::StartWrite: return "start-write";
  }
  return "?";
}
inline std::string to_string(Precedence v) {
  switch (v) {
    case Precedence::ExpiredWins: return "expired-wins";
    case Precedence::ExpiredFirst: return "expired-first";
    case Precedence::CompletedFirst: return "completed-first";
    case Precedence::ExpiryIgnored: return "expiry-ignored";
  }
  return "?";
}
inline std::string to_string(ExpiresOn v) {
  switch (v) {
    case ExpiresOn::AtComplete: return "at-complete";
    case ExpiresOn::AtStart: return "at-start";
  }
  return "?";
}
inline std::string to_string(OnMaxWait v) {
  switch (v) {
    case OnMaxWait::Error: return "error";
    case OnMaxWait::Process: return "process";
    case OnMaxWait::Skip: return "skip";
  }
  return "?";
}
inline std::string to_string(BackoffKind v) {
  switch (v) {
    case BackoffKind::None: return "none";
    case BackoffKind::Constant: return "constant";
    case BackoffKind::Exponential: return "exponential";
  }
  return "?";
}
inline std::string to_string(RedeliveryPayload v) { return v == RedeliveryPayload::Same ? "same" : "changed"; }
inline std::string to_string(PlainTurnEnd v) { return v == PlainTurnEnd::Kernel ? "kernel" : "silence"; }
inline std::string to_string(NodeClockKind v) { return v == NodeClockKind::Virtual ? "virtual" : "wall"; }
inline std::string to_string(Jitter v) {
  switch (v) {
    case Jitter::None: return "none";
    case Jitter::Full: return "full";
    case Jitter::Equal: return "equal";
    case Jitter::Decorrelated: return "decorrelated";
  }
  return "?";
}
inline std::string to_string(ProducerMode v) {
  switch (v) {
    case ProducerMode::Direct: return "direct";
    case ProducerMode::DualWrite: return "dual-write";
    case ProducerMode::Outbox: return "outbox";
  }
  return "?";
}
inline std::string to_string(PollKind v) {
  switch (v) {
    case PollKind::Distribution: return "distribution";
    case PollKind::Backoff: return "backoff";
  }
  return "?";
}
inline std::string to_string(PartitionGroup v) {
  switch (v) {
    case PartitionGroup::Consumers: return "consumers";
    case PartitionGroup::Store: return "store";
    case PartitionGroup::Broker: return "broker";
    case PartitionGroup::Sink: return "sink";
    case PartitionGroup::Clients: return "clients";
  }
  return "?";
}
inline std::string to_string(ExpectationOp v) {
  switch (v) {
    case ExpectationOp::Equal: return "==";
    case ExpectationOp::NotEqual: return "!=";
    case ExpectationOp::Less: return "<";
    case ExpectationOp::LessEqual: return "<=";
    case ExpectationOp::Greater: return ">";
    case ExpectationOp::GreaterEqual: return ">=";
  }
  return "?";
}

// ---------------------------------------------------------------- compound values

// topology.commit: "after-each" | "interval(5s)".
struct Commit {
  CommitMode mode = CommitMode::AfterEach;
  sim::Duration interval = 0;  // > 0 when mode == Interval; 0 otherwise
};

// store.ttl_eviction: "exact" | "lazy(max=48h)": expired items linger up to `lazy_max`.
struct TtlEviction {
  TtlEvictionKind kind = TtlEvictionKind::Exact;
  sim::Duration lazy_max = 0;  // >= 0 when kind == Lazy; 0 otherwise
};

// protocol.poll and protocol.poll_read (lethe::Poll, lethe::PollRead): core/settings.hpp.

// sink.backoff: "none" | "constant(100ms)" | "exponential(base=100ms, cap=10s)".
struct Backoff {
  BackoffKind kind = BackoffKind::None;
  sim::Duration delay = 0;  // Constant: the delay between retries (>= 0)
  sim::Duration base = 0;   // Exponential: first delay (> 0), doubling per retry
  sim::Duration cap = 0;    // Exponential: the largest delay (>= base)
};

// run.schedule: which of the fibers ready at one virtual instant runs first (sim::SchedulePolicy):
// "fifo" | "random" | "pct(depth=3)".
struct Schedule {
  ScheduleKind kind = ScheduleKind::Fifo;
  int depth = 3;  // Pct: 1..kMaxPctDepth (depth - 1 priority change points); 3 otherwise
};
inline constexpr int kMaxPctDepth = 100;
// As written in a scenario file: "fifo", "random", "pct(depth=3)".
inline std::string to_string(const Schedule& v) {
  if (v.kind != ScheduleKind::Pct) return to_string(v.kind);
  return "pct(depth=" + std::to_string(v.depth) + ")";
}

// ---------------------------------------------------------------- tables

struct ScenarioSection {
  std::string name;               // required, non-empty
  std::string description;        // default ""
  std::vector<std::string> tags;  // default []
};

struct RunSection {
  std::int64_t seeds = 20;                     // default 20; >= 1
  sim::Duration duration = 3'600'000'000'000;  // default "1h"; > 0
  bool drain = true;                           // default true
  Schedule schedule;                           // default "fifo"
};

struct TopologySection {
  // default "kafka"; a registered source name (world/source.hpp): "kafka" | "queue" | "clients" built in
  std::string source = "kafka";
  int consumers = 4;                                  // default 4; >= 1
  std::vector<std::string> processors{"billing"};     // default ["billing"]; >= 1 entry, distinct, non-empty
  int partitions = 8;                                 // default 8; >= 1 when source is kafka (>= 0 otherwise)
  Partitioner partitioner = Partitioner::ByKey;         // default "key"
  Commit commit;                                      // default "after-each"
  // kafka: a member whose process sends no heartbeat for this long (paused, or dead) is removed from its group,
  // and one that does not poll again within max_poll_interval (slow work) leaves it (the Kafka client's
  // session.timeout.ms and max.poll.interval.ms defaults).
  sim::Duration session_timeout = 45'000'000'000;     // default "45s"; > 0
  sim::Duration max_poll_interval = 300'000'000'000;  // default "5m"; > 0
  sim::Duration visibility_timeout = 30'000'000'000;  // default "30s"; > 0
  int clients = 10;                                   // default 10; >= 1 when source is clients (>= 0 otherwise)
  // Extensions (documented in docs/scenarios.md, [topology]): the request/response callers of
  // source "clients" time out, retry the same id, back off and jitter like real HTTP clients.
  sim::Duration client_timeout = 1'000'000'000;  // default "1s"; > 0
  int client_retries = 5;                        // default 5; >= 0
  // default "exponential(base=100ms, cap=10s)"
  Backoff client_backoff{BackoffKind::Exponential, 0, 100'000'000, 10'000'000'000};
  Jitter client_jitter = Jitter::Full;  // default "full"
};

// One [[workload.redelivery.copy]]: the delay of one copy, in order (the first entry is copy 1's).
struct RedeliveryCopy {
  sim::Distribution delay = sim::Distribution::constant(0);  // required
};

struct RedeliverySection {
  double fraction = 0.0;                                     // default 0.0; probability
  int copies = 1;                                            // default 1; >= 1
  sim::Distribution delay = sim::Distribution::constant(0);  // default "0s"
  // [[workload.redelivery.copy]], default none: copy i draws its delay from entry i, copies past the last
  // entry from `delay` (the loader: at most `copies` entries).
  std::vector<RedeliveryCopy> copy_delays;
  // default "same"; "changed": copy i carries payload version i (another body under the same id, as a client that
  // edits its request and resends it with the same idempotency key)
  RedeliveryPayload payload = RedeliveryPayload::Same;
};

struct WorkloadSection {
  std::int64_t messages = 1000;  // default 1000; >= 0
  Rate rate{50.0};               // default "50/s"; > 0 when messages > 0
  sim::Distribution processing_time = default_distribution("exponential(mean=200ms)");  // default
  std::int64_t result_size = 64;                                                        // default 64 (bytes); >= 0
  RedeliverySection redelivery;
};

// One [[network.partition]]: the link between two groups is cut from `at` for `for_duration`.
struct NetworkPartition {
  sim::Duration at = 0;                              // required; >= 0
  sim::Duration for_duration = 0;                    // required (key "for"); > 0
  // required: between = [first, second], distinct groups or consumers twice (the consumer nodes' peer messages)
  PartitionGroup first = PartitionGroup::Consumers;
  PartitionGroup second = PartitionGroup::Store;
};

// One [[network.link]] (extension, documented in docs/scenarios.md): the link between two groups, in both
// directions, where it differs from [network]: its one-way latency, its lost ACKs. Loss and duplication stay
// network.*'s. The group "clients" is also where the producer of a kafka or queue source sits.
struct NetworkLink {
  // required: between = [first, second], distinct groups or consumers twice (the consumer nodes' peer messages)
  PartitionGroup first = PartitionGroup::Consumers;
  PartitionGroup second = PartitionGroup::Store;
  std::optional<sim::Distribution> latency;  // absent = network.latency
  std::optional<double> ack_loss;            // absent = network.ack_loss; probability
};

struct NetworkSection {
  sim::Distribution latency = default_distribution("uniform(500us, 2ms)");  // default; one-way
  double loss = 0.0;                                                        // default 0.0; probability
  double ack_loss = 0.0;                                                    // default 0.0; probability
  double duplicate = 0.0;                                                   // default 0.0; probability
  sim::Duration rpc_timeout = 1'000'000'000;                                // default "1s"; > 0
  std::vector<NetworkPartition> partitions;                                 // [[network.partition]], default none
  std::vector<NetworkLink> links;                                           // [[network.link]], default none
};

struct CrashPointsSection {
  double after_start_before_effect = 0.0;     // default 0.0; probability per attempt
  double after_effect_before_complete = 0.0;  // default 0.0
  double after_complete_before_ack = 0.0;     // default 0.0
};

struct FaultsSection {
  std::optional<sim::Distribution> crash_every;                                  // absent = no random crashes; mean > 0
  sim::Distribution restart_after = sim::Distribution::constant(5'000'000'000);  // default "5s"
  std::optional<sim::Distribution> pause_every;                                  // absent = no pauses; mean > 0
  sim::Distribution pause_for = default_distribution("exponential(mean=2s)");    // default
  std::optional<sim::Distribution> clock_skew;                                   // absent = no skew (may be negative)
  std::optional<sim::Distribution> rebalance_every;                              // absent = no rebalances; mean > 0
  bool swarm = false;                                                            // default false
  CrashPointsSection crash_points;
};

struct StoreSection {
  sim::Distribution latency = sim::Distribution::constant(200'000);  // default "200us"
  TtlEviction ttl_eviction;                                          // default "exact"
  // store.capacity: at most this many dedupe records (tables dedupe and inbox, every processor), the least
  // recently written evicted first for each one past it. nullopt: "unbounded" (the default). >= 1.
  std::optional<std::uint64_t> capacity;
};

// protocol.ttl = "none": a store without expiry. expires_on = now + kTtlNone saturates to sim::kTimeMax,
// "never" (Item::expired_at is false at every instant of a run, and the store arms no eviction for it).
inline constexpr sim::Duration kTtlNone = sim::kTimeMax;

// [protocol]: the strategy and the values of the keys it declares (protocol/registry.hpp StrategyInfo::keys).
// The loader sets every declared key (the written value, else its default) and no other; a config built by hand
// may leave keys with a default out (make_strategy fills them in).
struct ProtocolSection {
  // A registered strategy's name (protocol/registry.hpp). default "mnemosyne"
  std::string kind = "mnemosyne";
  // "none", or a preset's name (protocol/presets.hpp): the loader filled kind and settings from it. default "none"
  std::string preset = "none";
  StrategySettings settings;
};

// The precedence a strategy applies: `precedence`, or the one `expired_wins` names. Never ExpiredWins.
inline Precedence effective_precedence(Precedence precedence, bool expired_wins) {
  if (precedence != Precedence::ExpiredWins) return precedence;
  return expired_wins ? Precedence::ExpiredFirst : Precedence::ExpiryIgnored;
}

// One [[sink.outage]]: every call fails (retryable) from `at` for `for_duration`.
struct SinkOutage {
  sim::Duration at = 0;            // required; >= 0
  sim::Duration for_duration = 0;  // required (key "for"); > 0
};

struct SinkSection {
  std::string kind = "counter";  // default "counter"; a registered sink name (world/sink.hpp): "counter" |
                                 // "payment" | "email" built in
  bool idempotent = false;                                              // default false
  sim::Distribution latency = sim::Distribution::constant(20'000'000);  // default "20ms"
  sim::Duration timeout = 1'000'000'000;                                // default "1s"; > 0
  int retries = 0;                                                      // default 0; >= 0
  Backoff backoff;                                                      // default "none"
  Jitter jitter = Jitter::None;                                         // default "none"
  Rate capacity{0.0};                                                   // default "0/s" = unlimited
  std::vector<SinkOutage> outages;                                      // [[sink.outage]], default none
  double fail = 0.0;                                                    // default 0.0; probability per call
  sim::Distribution fail_after = sim::Distribution::constant(0);        // default "0ms"
  // The provider's idempotency keys (idempotent = true; world/sink.hpp, steps 4a-4c):
  sim::Duration idempotency_window = kTtlNone;          // default "none" = kept forever; > 0
  KeyInProgress in_progress = KeyInProgress::Serialize;  // default "serialize"
  OnConflict on_conflict = OnConflict::Retry;            // default "retry" (what the worker's client does on 409)
  SinkPayload payload = SinkPayload::Stable;             // default "stable"
};

struct ProducerSection {
  ProducerMode mode = ProducerMode::Direct;       // default "direct"
  double crash_between_commit_and_publish = 0.0;  // default 0.0; probability
};

// [saga] (extension, docs/sagas.md): every message is a saga of `steps` steps, each an effect with a
// compensation; a step the provider declines for good (a terminal failure) sends the saga backward.
struct SagaSection {
  int steps = 0;              // default 0 = plain messages; 2..8 otherwise (the loader: one processor, a kind
                              // whose effect is a provider call)
  double decline = 0.0;       // default 0.0; probability, per saga, that a step after the first declines
  double decline_last = 0.0;  // default 0.0; probability for the last step instead of `decline`
};

// One [expect] entry: `key = "OP NUMBER"`. `key` is a result field (dotted for
// nested ones, e.g. "duplicates.expired"). `percent`: NUMBER ended in % and is
// a percentage of `messages` (then `number` is the percentage, e.g. 5 for 5%).
// For time fields NUMBER may be written as a duration; `number` is then in ns.
// [external]: the consumer nodes are OS processes (protocol.kind = "external"; docs/external.md).
struct ExternalSection {
  std::vector<std::string> command;          // no default: required when protocol.kind = "external"
  std::vector<std::string> env;              // default []; "NAME=VALUE" entries added to lethe's environment
  std::string cwd;                           // default "" = the scenario file's folder; relative to it
  sim::Duration node_timeout = 10'000'000'000;  // default "10s"; > 0; wall-clock limit for one reaction
  sim::Duration quiet_period = 50'000'000;      // default "50ms"; > 0; wall clock that ends a plain node's turn
  PlainTurnEnd plain_turn_end = PlainTurnEnd::Kernel;  // default "kernel"
  NodeClockKind clock = NodeClockKind::Virtual;        // default "virtual"
  std::string base_dir;  // not a key: the scenario file's folder (the loader sets it), "" = lethe's own
};

struct Expectation {
  std::string key;
  ExpectationOp op = ExpectationOp::Equal;
  double number = 0.0;
  bool percent = false;
  int line = 0;  // where it was written (0 = --set)
  int column = 0;
};

// One entry of [explore] (scenario/explore.hpp): a scenario key and what a seed draws its value from. The
// loader checks that every value the entry can give loads as that key would with --set KEY=VALUE.
struct ExploreEntry {
  enum class Kind { Integers, Reals, Choices };
  std::string key;      // a scenario key, dotted ("topology.consumers")
  std::string written;  // the entry as written, for messages ("1..16")
  Kind kind = Kind::Choices;
  std::int64_t integer_low = 0;  // Integers: low..high, both included
  std::int64_t integer_high = 0;
  double real_low = 0.0;  // Reals: low..high
  double real_high = 0.0;
  std::vector<std::string> choices;  // Choices: each a --set value ("off": an optional key left out)
  int line = 0;
  int column = 0;
};

// [explore]: the ranges a seed draws its configuration from; empty = every seed runs the file as written.
struct ExploreSection {
  std::vector<ExploreEntry> entries;  // in file order
  bool swarm = true;                  // each seed also switches fault kinds off at random (swarm testing)
  int swarm_line = 0;                 // where `swarm` was written (0: default)
};

struct ScenarioConfig {
  ScenarioSection scenario;
  RunSection run;
  TopologySection topology;
  WorkloadSection workload;
  NetworkSection network;
  FaultsSection faults;
  StoreSection store;
  ProtocolSection protocol;
  SinkSection sink;
  ProducerSection producer;
  SagaSection saga;
  ExternalSection external;
  std::vector<Expectation> expect;  // in file order, then --set ones
  bool expect_defaults = true;      // [expect] defaults: check lethe's default invariants (kDefaultExpectations)
  ExploreSection explore;           // not a table of the schema: scenario/explore.hpp reads and draws it

  // Where each key was written, by dotted key ("protocol.ttl",
  // "network.partition[0].at", "expect.duplicates.expired"); tables too
  // ("protocol"). Keys left at their default are absent.
  std::map<std::string, SourcePosition> positions;
  // The name the file was loaded under (for messages: "FILE:LINE"), "" if built by hand.
  std::string source_name;
};

}  // namespace lethe
