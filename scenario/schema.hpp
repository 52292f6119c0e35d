// scenario/schema.hpp — the one table of scenario keys.
//
// visit_schema() lists every TOML table and key of a scenario file, in docs/scenarios.md's order: for each key
// its name, its value type (which gives the parser, the renderer and the allowed values), the config field it
// fills (whose initializer in core/config.hpp is the default) and a one-line description. Three visitors walk
// it: the loader (scenario/loader_rows.cpp: reads and validates each key, registers it for the unknown-key and
// did-you-mean checks of files and --set), the renderer (scenario/render.cpp) and the reference page
// (scenario/reference.cpp, docs/scenario-reference.md). A new key is one row here plus the code that uses it
// (a strategy's key: one SettingKey in its registry entry).
//
// The keys of [protocol] other than kind belong to the strategy that reads them: its registry entry declares
// them, and this table names them through v.strategy_keys.
//
// Row forms a visitor provides (Config is lethe::ScenarioConfig, const for the renderer and the page):
//   v.table(PATH)                          the keys that follow are in table PATH ("workload.redelivery")
//   v.key(NAME, TYPE, FIELD, DESCRIPTION)  a key of the current table; FIELD a std::optional is "absent = off"
//   v.required_key(...)                    the same, for a key every entry of an array of tables needs
//   v.array(PATH, ENTRIES, KEYS)           an array of tables [[PATH]]; KEYS(v, entry) lists an entry's keys
//   v.strategy_keys(PROTOCOL)              the other keys of [protocol]: those its kind's registry entry declares
//                                          (protocol/registry.hpp StrategyInfo::keys, core/settings.hpp)
//   v.rule(RULE, OBJECT)                   a cross-field rule over OBJECT, checked here in the read order
//   v.expect(EXPECTATIONS, DESCRIPTION)    the [expect] table (its keys are the result fields)
//
// Does not: read TOML or report errors (the loader does), or hold defaults (core/config.hpp does).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/config.hpp"

namespace scenario::schema {

// ---------------------------------------------------------------- words of the choices

template <class E>
using Words = std::vector<std::pair<std::string, E>>;

template <class E>
Words<E> words_of(std::initializer_list<E> values) {
  Words<E> words;
  for (E value : values) words.emplace_back(lethe::to_string(value), value);
  return words;
}

// The kinds whose words are names in a registry (one function each): the registered sources and sinks
// (world/names.hpp: the built-ins, then any registered at runtime) and the strategies.
Words<std::string> source_kind_words();
Words<std::string> protocol_kind_words();
// "none", then the names of protocol/presets.hpp.
Words<std::string> protocol_preset_words();
Words<std::string> sink_kind_words();

// ---------------------------------------------------------------- value types

inline constexpr char kDurationAllowed[] =
    "a duration such as \"250ms\", \"1.5s\" or \"7d\" (units ns us ms s m h d)";
inline constexpr char kDistributionAllowed[] =
    "a distribution: a duration (\"5ms\"), \"uniform(1ms, 5ms)\", \"exponential(mean=200ms)\", "
    "\"normal(mean=1s, sd=200ms)\", \"lognormal(median=200ms, p99=2s)\", \"pareto(scale=100ms, shape=1.5)\" "
    "or \"empirical(file=latencies.csv)\"";
inline constexpr char kRateAllowed[] =
    "a rate such as \"50/s\" or \"30/m\" (a number >= 0, then / and a unit ns us ms s m h d): 0, or from "
    "one per 3650 days (\"0.000274/d\") to ten per nanosecond (\"10/ns\")";
// What every duration of a scenario may be at most (sim::kDurationMax), as the messages say it.
inline constexpr char kDurationMaxAllowed[] = "at most 3650d (about 10 years)";
inline constexpr char kExpectationAllowed[] =
    "\"OP NUMBER\" with OP one of == != < <= > >= and NUMBER optionally ending in % (of messages), e.g. \"<= 3\"";
inline constexpr char kPollAllowed[] =
    "a distribution with a mean above 0 (\"100ms\", \"uniform(50ms, 150ms)\", ...), or "
    "\"backoff(base=50ms, factor=1.5, cap=5s)\"";
inline constexpr char kPollReadAllowed[] =
    "\"consistent\" or \"eventual(lag=DISTRIBUTION)\", e.g. \"eventual(lag=50ms)\"";
inline constexpr char kLocalCacheAllowed[] =
    "\"off\" or \"lru(size=N, ttl=DURATION)\" with N from 1 to 1000000, e.g. \"lru(size=256, ttl=1h)\"";
inline constexpr char kBackoffAllowed[] =
    "\"none\", \"constant(DURATION)\" or \"exponential(base=DURATION, cap=DURATION)\", e.g. "
    "\"exponential(base=100ms, cap=10s)\"";

struct Text {};  // any string
struct Name {    // a non-empty string that must be written
  std::string_view example;
};
struct Names {  // an array of distinct non-empty strings
  bool at_least_one = false;
  bool distinct = true;  // false: an entry may repeat (a command's arguments)
};
struct Integer {
  std::int64_t min = 0;
  std::int64_t max = std::numeric_limits<std::int64_t>::max();
};
struct Boolean {};
struct Probability {};  // a number from 0 to 1
struct Duration {
  sim::Duration min = 0;  // 1: more than 0
  bool none = false;      // the word "none" is allowed too and means lethe::kTtlNone (no expiry)
};
struct Distribution {
  bool allow_negative = false;
  bool positive_mean = false;  // a mean above 0 (it times something that repeats)
  sim::Duration min_mean = 0;  // a mean of at least this (the interval of a fault loop)
};
// The smallest mean of a fault loop's interval (faults.*_every): each draw is one wake-up of the loop.
inline constexpr sim::Duration kMinFaultIntervalMean = sim::kMillisecond;
struct Rate {};
// An integer >= 1, or the word "unbounded" (no bound: the field's nullopt).
struct Bound {};
template <class E>
struct Choice {
  Words<E> words;
};
// A value in a small language of its own; the field's type (lethe::Commit, lethe::Backoff, ...) picks the parser.
struct Language {
  std::string allowed;
};
// `between`: two different partition groups. `producer_clients`: "clients" is also allowed when the source
// is not "clients" (the producer sits there).
struct Groups {
  bool producer_clients = false;
};
template <class Group>
struct GroupPair {
  Group& first;
  Group& second;
};
template <class Group>
GroupPair(Group&, Group&) -> GroupPair<Group>;

// Calls f(TYPE, (T*)nullptr) with the schema type of a strategy key's language (core/settings.hpp) and the
// C++ type of its values, and returns what f returns.
template <class F>
decltype(auto) with_setting_type(const lethe::SettingKey& key, F&& f) {
  switch (key.language) {
    case lethe::SettingLanguage::Boolean: return f(Boolean{}, static_cast<bool*>(nullptr));
    case lethe::SettingLanguage::Word: {
      Words<std::string> words;
      for (const std::string& word : key.words) words.emplace_back(word, word);
      return f(Choice<std::string>{std::move(words)}, static_cast<std::string*>(nullptr));
    }
    case lethe::SettingLanguage::Poll: return f(Language{kPollAllowed}, static_cast<lethe::Poll*>(nullptr));
    case lethe::SettingLanguage::PollRead:
      return f(Language{kPollReadAllowed}, static_cast<lethe::PollRead*>(nullptr));
    case lethe::SettingLanguage::LocalCache:
      return f(Language{kLocalCacheAllowed}, static_cast<lethe::LocalCache*>(nullptr));
    case lethe::SettingLanguage::Duration: break;
  }
  return f(Duration{key.min, key.none}, static_cast<sim::Duration*>(nullptr));
}

// The partition groups `between` may name.
Words<lethe::PartitionGroup> group_words();

std::string quoted_words(const std::vector<std::string>& words);
template <class E>
std::string quoted_words(const Words<E>& words) {
  std::vector<std::string> names;
  for (const auto& word : words) names.push_back(word.first);
  return quoted_words(names);
}

// What a value of the type may be, as error messages and the reference page say it.
std::string allowed(const Text&);
std::string allowed(const Name&);
std::string allowed(const Names& type);
std::string allowed(const Integer& type);
std::string allowed(const Boolean&);
std::string allowed(const Probability&);
std::string allowed(const Duration& type);
std::string allowed(const Distribution& type);
std::string allowed(const Rate&);
std::string allowed(const Bound&);
std::string allowed(const Language& type);
std::string allowed(const Groups&);
template <class E>
std::string allowed(const Choice<E>& type) {
  return quoted_words(type.words);
}
// The problem with a duration above sim::kDurationMax: "it is 4000d, above 3650d, the largest duration ...".
std::string above_duration_max(sim::Duration value);
// A rate is 0, or from one event per sim::kDurationMax to ten per nanosecond (a sink's burst window of
// 100 ms then holds at most 10^9 calls).
bool rate_in_range(double per_second);
// The value language alone, ranges aside: what "every [[TABLE]] needs `KEY`: ..." says.
std::string language(const Duration&);
std::string language(const Distribution&);
std::string language(const Groups& type);

// ---------------------------------------------------------------- cross-field rules

enum class Rule {
  TopologyCounts,  // partitions >= 1 for kafka, clients >= 1 for clients
  WorkloadRate,    // a rate above 0 when there are messages
  WindowFits,      // at + for of an outage or partition stays representable
  ProtocolKind,    // the keys protocol.kind requires (its registry entry's keys without a default)
  SagaRuns,        // sagas: one processor, a kind whose effect is a provider call
  RedeliveryCopies,  // at most `copies` [[workload.redelivery.copy]] entries
  ExternalNodes,     // protocol.kind "external" needs external.command, and runs plain messages
};
// The rule in one sentence, for the reference page.
std::string_view describe(Rule rule);

// ---------------------------------------------------------------- the table

// The shared value languages of retries (topology.client_* and sink.*).
inline Words<lethe::RedeliveryPayload> redelivery_payload_words() {
  return words_of({lethe::RedeliveryPayload::Same, lethe::RedeliveryPayload::Changed});
}
inline Words<lethe::Jitter> jitter_words() {
  return words_of({lethe::Jitter::None, lethe::Jitter::Full, lethe::Jitter::Equal, lethe::Jitter::Decorrelated});
}

// [scenario], [run] and [topology].
template <class V, class Config>
void visit_run_and_topology(V& v, Config& c) {
  const Words<lethe::Jitter> jitter = jitter_words();
  const Language backoff{kBackoffAllowed};

  v.table("scenario");
  v.key("name", Name{"\"lost-ack-payment\""}, c.scenario.name, "the scenario's name, in results and reports");
  v.key("description", Text{}, c.scenario.description, "what the scenario shows, in plain words");
  v.key("tags", Names{}, c.scenario.tags, "labels to select scenarios by");

  v.table("run");
  v.key("seeds", Integer{1, 1'000'000'000}, c.run.seeds, "the seeds a suite runs by default (1..N)");
  v.key("duration", Duration{1}, c.run.duration, "the simulated-time cap for the workload");
  v.key("drain", Boolean{}, c.run.drain,
        "after the workload, heal every fault and run until in-flight work settles");
  v.key("schedule", Language{"\"fifo\", \"random\" or \"pct(depth=N)\" with N from 1 to 100, e.g. \"pct(depth=3)\""},
        c.run.schedule,
        "which fiber runs first among those ready at the same virtual instant (timer ties, zero-latency calls, "
        "wake-ups): fifo, random, or PCT priorities; virtual time is unchanged");

  v.table("topology");
  v.key("source", Choice<std::string>{source_kind_words()}, c.topology.source,
        "where messages come from: a kafka topic, a queue, or request/response clients");
  v.key("consumers", Integer{1, 1'000'000}, c.topology.consumers, "worker nodes running the protocol");
  v.key("processors", Names{true}, c.topology.processors,
        "independent processor ids; each must act on every message once");
  v.key("partitions", Integer{0, 1'000'000}, c.topology.partitions, "kafka: the topic's partitions (>= 1 for kafka)");
  v.key("partitioner", Choice<lethe::Partitioner>{words_of({lethe::Partitioner::ByKey, lethe::Partitioner::Random})},
        c.topology.partitioner, "kafka: how a message picks its partition");
  v.key("commit", Language{"\"after-each\" or \"interval(DURATION)\", e.g. \"interval(5s)\""}, c.topology.commit,
        "kafka: when consumers commit their offsets");
  v.key("session_timeout", Duration{1}, c.topology.session_timeout,
        "kafka: a member whose process sends no heartbeat for this long (a pause, a crash) is removed from its "
        "group; its partitions move and their new owners replay from the last committed offset");
  v.key("max_poll_interval", Duration{1}, c.topology.max_poll_interval,
        "kafka: a member that does not poll again within this long (slow work, retries in place) leaves its "
        "group; its partitions move, its later commits fail, and it rejoins at its next poll");
  v.key("visibility_timeout", Duration{1}, c.topology.visibility_timeout,
        "queue: how long a received message stays invisible to other consumers");
  v.key("clients", Integer{0, 1'000'000}, c.topology.clients, "clients: request sources (>= 1 for clients)");
  v.key("client_timeout", Duration{1}, c.topology.client_timeout, "clients: how long a caller waits for a response");
  v.key("client_retries", Integer{0, 1000}, c.topology.client_retries,
        "clients: how often a caller retries the same id after a timeout");
  v.key("client_backoff", backoff, c.topology.client_backoff, "clients: the delay before each retry");
  v.key("client_jitter", Choice<lethe::Jitter>{jitter}, c.topology.client_jitter,
        "clients: the randomness added to that delay");
  v.rule(Rule::TopologyCounts, c.topology);

}

// [workload] with its redelivery.
template <class V, class Config>
void visit_workload(V& v, Config& c) {
  v.table("workload");
  v.key("messages", Integer{0, 1'000'000'000'000}, c.workload.messages, "distinct message ids published");
  v.key("rate", Rate{}, c.workload.rate, "how fast they are published (above 0 when there are messages)");
  v.key("processing_time", Distribution{}, c.workload.processing_time, "how long one execution of the work takes");
  v.key("result_size", Integer{0, 1'000'000'000}, c.workload.result_size,
        "bytes of the value an effect returns (memoized)");
  v.rule(Rule::WorkloadRate, c.workload);
  v.table("workload.redelivery");
  v.key("fraction", Probability{}, c.workload.redelivery.fraction,
        "the share of messages the producer delivers again");
  v.key("copies", Integer{1, 1000}, c.workload.redelivery.copies, "extra copies of each such message");
  v.key("delay", Distribution{}, c.workload.redelivery.delay, "the delay of each copy after the first publish");
  v.key("payload", Choice<lethe::RedeliveryPayload>{redelivery_payload_words()}, c.workload.redelivery.payload,
        "same: a copy carries the message's payload; changed: copy i carries another payload under the same id");
  v.array("workload.redelivery.copy", c.workload.redelivery.copy_delays, [](auto& entry_visitor, auto& copy) {
    entry_visitor.required_key("delay", Distribution{}, copy.delay,
                               "this copy's delay after the first publish (entry i is copy i), instead of delay");
  });
  v.rule(Rule::RedeliveryCopies, c.workload.redelivery);
}

// [workload] with its redelivery, [network], [faults], [store] and [protocol].
template <class V, class Config>
void visit_workload_to_protocol(V& v, Config& c) {
  visit_workload(v, c);

  v.table("network");
  v.key("latency", Distribution{}, c.network.latency, "one-way latency of every link unless a [[network.link]] says");
  v.key("loss", Probability{}, c.network.loss, "a request is dropped");
  v.key("ack_loss", Probability{}, c.network.ack_loss, "a response is dropped (the lost ACK)");
  v.key("duplicate", Probability{}, c.network.duplicate, "a message is delivered twice");
  v.key("rpc_timeout", Duration{1}, c.network.rpc_timeout, "how long a caller waits for a store or broker reply");
  v.array("network.partition", c.network.partitions, [](auto& entry_visitor, auto& partition) {
    entry_visitor.required_key("at", Duration{0}, partition.at, "when the link is cut");
    entry_visitor.required_key("for", Duration{1}, partition.for_duration, "how long it stays cut");
    entry_visitor.rule(Rule::WindowFits, partition);
    entry_visitor.required_key("between", Groups{false}, GroupPair{partition.first, partition.second},
                               "the two groups it separates (each one this topology has)");
  });
  v.array("network.link", c.network.links, [](auto& entry_visitor, auto& link) {
    entry_visitor.required_key("between", Groups{true}, GroupPair{link.first, link.second},
                               "the two groups the link joins (both directions)");
    entry_visitor.key("latency", Distribution{}, link.latency, "its one-way latency, instead of network.latency");
    entry_visitor.key("ack_loss", Probability{}, link.ack_loss,
                      "a response on this link is dropped, instead of network.ack_loss");
  });

  v.table("faults");
  v.key("crash_every", Distribution{false, true, kMinFaultIntervalMean}, c.faults.crash_every,
        "per consumer node, the time between crashes; absent = no random crashes");
  v.key("restart_after", Distribution{}, c.faults.restart_after, "how long a crashed node stays down");
  v.key("pause_every", Distribution{false, true, kMinFaultIntervalMean}, c.faults.pause_every,
        "GC-like stop-the-world pauses (the node stays alive); absent = none");
  v.key("pause_for", Distribution{}, c.faults.pause_for, "how long a pause lasts");
  v.key("clock_skew", Distribution{true, false}, c.faults.clock_skew,
        "a fixed clock offset drawn per node; absent = none");
  v.key("rebalance_every", Distribution{false, true, kMinFaultIntervalMean}, c.faults.rebalance_every,
        "the time between consumer-group rebalances; absent = none");
  v.key("swarm", Boolean{}, c.faults.swarm, "each seed switches fault kinds on or off at random");
  v.table("faults.crash_points");
  v.key("after_start_before_effect", Probability{}, c.faults.crash_points.after_start_before_effect,
        "per attempt: a crash after the start record, before the effect");
  v.key("after_effect_before_complete", Probability{}, c.faults.crash_points.after_effect_before_complete,
        "per attempt: a crash after the effect, before the completion record");
  v.key("after_complete_before_ack", Probability{}, c.faults.crash_points.after_complete_before_ack,
        "per attempt: a crash after the completion record, before the ACK");

  v.table("store");
  v.key("latency", Distribution{}, c.store.latency, "service time per store operation");
  v.key("ttl_eviction", Language{"\"exact\" or \"lazy(max=DURATION)\", e.g. \"lazy(max=48h)\""},
        c.store.ttl_eviction, "when expired records go: at once, or lingering up to max");
  v.key("capacity", Bound{}, c.store.capacity,
        "the most dedupe records the store holds; each record past it evicts the least recently written one");

  v.table("protocol");
  v.key("kind", Choice<std::string>{protocol_kind_words()}, c.protocol.kind, "the dedupe strategy");
  v.key("preset", Choice<std::string>{protocol_preset_words()}, c.protocol.preset,
        "a library's settings (docs/libraries.md): sets kind and the keys the library decides; keys written in "
        "the file or by --set win");
  v.strategy_keys(c.protocol);
  v.rule(Rule::ProtocolKind, c.protocol);

}

// [sink], [producer] and [saga].
template <class V, class Config>
void visit_sink_to_saga(V& v, Config& c) {
  const Words<lethe::Jitter> jitter = jitter_words();
  const Language backoff{kBackoffAllowed};
  v.table("sink");
  v.key("kind", Choice<std::string>{sink_kind_words()}, c.sink.kind, "the provider the effect calls");
  v.key("idempotent", Boolean{}, c.sink.idempotent, "the provider dedupes calls by message id");
  v.key("latency", Distribution{}, c.sink.latency, "the provider's service time per call");
  v.key("timeout", Duration{1}, c.sink.timeout, "the worker's timeout on a sink call");
  v.key("retries", Integer{0, 1000}, c.sink.retries, "the worker's retries of a sink call");
  v.key("backoff", backoff, c.sink.backoff, "the delay before each retry");
  v.key("jitter", Choice<lethe::Jitter>{jitter}, c.sink.jitter, "the randomness added to that delay");
  v.key("capacity", Rate{}, c.sink.capacity,
        "calls per second the provider accepts; beyond it a retryable 503 (\"0/s\" = unlimited)");
  v.key("fail", Probability{}, c.sink.fail,
        "an effect call fails for good: a non-retryable error (4xx), nothing executes, not retried");
  v.key("fail_after", Distribution{}, c.sink.fail_after, "how long a failing call takes before its error arrives");
  v.key("idempotency_window", Duration{1, true}, c.sink.idempotency_window,
        "idempotent: how long the provider keeps a key; a call after it starts a new request (\"none\": forever)");
  v.key("in_progress",
        Choice<lethe::KeyInProgress>{words_of({lethe::KeyInProgress::Serialize, lethe::KeyInProgress::Conflict})},
        c.sink.in_progress,
        "idempotent: a call whose key another call is still processing waits for its result, or gets a 409");
  v.key("on_conflict",
        Choice<lethe::OnConflict>{
            words_of({lethe::OnConflict::Retry, lethe::OnConflict::Fail, lethe::OnConflict::NewKey})},
        c.sink.on_conflict,
        "the worker's client on a 409: retry the same key, fail the call for good, or retry under a new key");
  v.key("payload", Choice<lethe::SinkPayload>{words_of({lethe::SinkPayload::Stable, lethe::SinkPayload::PerAttempt})},
        c.sink.payload,
        "idempotent: every call of a message sends the same parameters, or each attempt its own (a reused key "
        "with other parameters gets a 422)");
  v.array("sink.outage", c.sink.outages, [](auto& entry_visitor, auto& outage) {
    entry_visitor.required_key("at", Duration{0}, outage.at, "when the provider starts failing every call");
    entry_visitor.required_key("for", Duration{1}, outage.for_duration, "how long it fails (retryable)");
    entry_visitor.rule(Rule::WindowFits, outage);
  });

  v.table("producer");
  v.key("mode",
        Choice<lethe::ProducerMode>{
            words_of({lethe::ProducerMode::Direct, lethe::ProducerMode::DualWrite, lethe::ProducerMode::Outbox})},
        c.producer.mode, "how the producer publishes alongside its own database write");
  v.key("crash_between_commit_and_publish", Probability{}, c.producer.crash_between_commit_and_publish,
        "the producer crashes after its commit, before the publish");

  v.table("saga");
  v.key("steps", Integer{0, 8}, c.saga.steps,
        "every message is a saga of this many steps, each with a compensation (0 = plain messages; 2 to 8)");
  v.key("decline", Probability{}, c.saga.decline,
        "per saga and step after the first: the provider declines the step for good, the saga compensates");
  v.key("decline_last", Probability{}, c.saga.decline_last,
        "the same for the last step, instead of decline (0: decline applies to it too)");
  v.rule(Rule::SagaRuns, c.saga);
}

// [external] and [expect].
template <class V, class Config>
void visit_external_and_expect(V& v, Config& c) {
  v.table("external");
  v.key("command", Names{false, false}, c.external.command,
        "protocol.kind = \"external\": the program each consumer node runs and its arguments (a program path "
        "with '/' is relative to the scenario file; a bare name is looked up in PATH)");
  v.key("env", Names{}, c.external.env, "\"NAME=VALUE\" entries added to the nodes' environment");
  v.key("cwd", Text{}, c.external.cwd, "the nodes' working directory, relative to the scenario file (\"\": its folder)");
  v.key("node_timeout", Duration{1}, c.external.node_timeout,
        "wall-clock limit for one reaction of a node (its turn); beyond it the run stops with exit code 2");
  v.key("plain_turn_end", Choice<lethe::PlainTurnEnd>{words_of({lethe::PlainTurnEnd::Kernel,
                                                                 lethe::PlainTurnEnd::Silence})},
        c.external.plain_turn_end,
        "a node without lethe_turns in init_ok: its turn ends when the kernel shows all its threads asleep and its "
        "input read (kernel), or after quiet_period of silence (silence; not reproducible)");
  v.key("clock", Choice<lethe::NodeClockKind>{words_of({lethe::NodeClockKind::Virtual, lethe::NodeClockKind::Wall})},
        c.external.clock,
        "the clock a node's processes read and time their waits by: lethe's virtual time, through a preloaded "
        "library (virtual; a plain node's timers then fire in virtual time), or the machine's (wall)");
  v.key("quiet_period", Duration{1}, c.external.quiet_period,
        "a node without lethe_turns in init_ok: wall-clock silence that ends its turn when plain_turn_end = "
        "\"silence\" or when the kernel cannot tell (not reproducible)");
  v.rule(Rule::ExternalNodes, c.external);

  v.expect(c.expect, "\"RESULT_FIELD\" = \"OP NUMBER\", checked for every seed");
}

template <class V, class Config>
void visit_schema(V& v, Config& c) {
  visit_run_and_topology(v, c);
  visit_workload_to_protocol(v, c);
  visit_sink_to_saga(v, c);
  visit_external_and_expect(v, c);
}

}  // namespace scenario::schema
