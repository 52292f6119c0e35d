// world/sink.hpp — external effect providers (a counter, a payment gateway, an
// email provider, or one registered at runtime) and the client a worker uses to
// call them.
//
// Sink: the provider, on its own node (group "sink"). It is durable: its log
// of executions is the ground truth of effects (the oracle counts duplicates
// from it) and nothing in it is lost if a worker crashes. It is reached only
// through the simulated network as a sim::Service with the sink.latency
// distribution as service time (serial = false: calls overlap). Each call is
// decided atomically at the provider at the instant its service time ends, in
// this order:
//   1. calls() counts it (every call that reached the provider, whatever follows);
//   2. an [[sink.outage]] window [at, at + for) containing that instant: 503;
//   3. sink.capacity "N/s" (N > 0): a token bucket (GCRA form), refilled at one
//      token every round(1e9 / N) ns, full at time 0; a call finding no token
//      gets a 503. Rejected calls take no token; idempotent replays do take one
//      (they are calls like any other). The bucket holds the burst: by default
//      100 ms worth of capacity, max(1, floor(N / 10)) calls (set_burst() changes
//      it). Why not a whole second's worth: a provider's throughput does not
//      bank a second of idle time, and a one-second bucket absorbs the
//      synchronized waves of retries that make a retry storm (with it, the 200
//      clients of tests/world/sink_test.cpp need no more calls without jitter
//      than with full jitter; with 100 ms, no jitter needs ~6x more);
//   4. idempotent = true: the call's idempotency key is (message id, processor,
//      key generation; the generation is 0 unless the client made a new key, see
//      on_conflict below). In this order:
//      a. sink.in_progress = "conflict": a call that arrived (Sink::arrive, at the
//         instant its request reached the provider) while another call with its
//         key was in service and no result was stored under it gets a 409
//         (the IETF Idempotency-Key draft), answered at the end of its own service
//         time; nothing executes. "serialize" (the default): no 409; whichever
//         call is decided first executes, the others replay its result;
//      b. a key stored sink.idempotency_window ago or longer is pruned (Stripe
//         prunes keys at least 24h old): the call starts a new request (step 5)
//         and stores the key anew. "none" (the default): keys are kept forever;
//      c. a stored key whose payload differs from the call's gets a 422 (a reused
//         key with other parameters; Stripe's idempotency_error), nothing executes;
//      d. otherwise a stored key returns the stored execution's value and records
//         nothing (Stripe's Idempotency-Key);
//   5. otherwise the EffectProvider of sink.kind decides: it refuses the call
//      (recorded as sink.refuse, nothing executes; not retried by the caller),
//      or the effect executes: one Execution is appended, with the provider's
//      value. The built-in providers (world/effects.cpp) never refuse; their values:
//        counter: the provider's running count of executions (1, 2, ...),
//        payment: a charge id, the provider's running count of charges (1, 2, ...),
//        email:   a message id drawn from the provider's own Rng (non-zero); it
//                 cannot be recomputed from anything the caller knows.
// A 503 records no execution and is retryable. The response then crosses the
// network back and may be lost (ack_loss): the effect happened, the caller
// cannot tell. A call that arrives after its caller gave up still executes.
//
// SinkClient: one effect call from a worker fiber. Tries the call, and on a
// timeout (sink.timeout) or a 503 retries up to sink.retries times, sleeping
// RetryPolicy(sink.backoff, sink.jitter).delay(n) before retry n. Every try
// carries the same (message id, processor, attempt) and its call_number
// (1 = the first try). So when a response is lost, a retry of the same attempt
// executes the effect again at a non-idempotent provider: the lost-ACK double
// charge (oracle cause `sink_retry`); with idempotent = true it does not.
// A refused call is not retried (call() returns nullopt at once). A 409 (in
// progress) is handled as sink.on_conflict says: "retry" (the default; Stripe's
// clients retry a 409): like a 503, a later try of the same key, which replays
// the original's result once it is stored; "fail": the call fails for good
// (nullopt, like sink.fail: the strategy's failed effect, the message is
// redelivered and decided again); "new-key": the client takes the 409 as a
// broken key and sends the remaining tries under a new key generation, which the
// provider has never seen: it executes again (a double charge, cause sink_retry).
// A 422 (payload mismatch) fails the call for good. sink.payload = "per-attempt":
// the payload a call sends is its attempt id (the parameters are rebuilt per
// delivery, e.g. with a fresh timestamp), so a redelivery reusing the key gets a
// 422; "stable" (the default): every call of a message sends the same payload.
// A crash of
// the caller's node unwinds the call (sim::Crash propagates); calls already
// sent still reach the provider.
//
// Registry: sink_registry() maps each sink.kind word to a SinkEntry whose
// factory makes the EffectProvider. The built-ins ("counter", "payment",
// "email", in that order) are listed explicitly in world/sink_registry.cpp;
// register_sink() adds more at runtime (a program linking the library may
// register its own provider before it runs anything). The scenario loader
// accepts exactly sink_names(). A provider sees every SinkRequest field,
// among them the fencing token the strategy handed its effect (a provider that
// refuses calls older than the newest token it has seen is a fencing provider;
// the built-in strategies pass none) and the attempt id.
//
// Trace kinds (node = the provider for provider-side kinds, the caller for client-side ones):
//   sink.call     provider  a = message id, b = attempt, c = processor << 32 | call_number
//   sink.execute  provider  a = message id, b = attempt, c = value
//   sink.replay   provider  a = message id, b = attempt, c = value returned (idempotent replay)
//   sink.reject   provider  a = message id, b = attempt, c = RejectReason
//   sink.refuse   provider  a = message id, b = attempt, c = processor << 32 | call_number
//   sink.retry    caller    a = message id, b = attempt, c = the backoff slept (ns), recorded before sleeping
//   sink.ok       caller    a = message id, b = attempt, c = value received
//   sink.give_up  caller    a = message id, b = attempt, c = tries made
//   sink.fail     caller    a = message id, b = attempt, c = the time the failing call took (ns)
//   sink.conflict provider  a = message id, b = attempt, c = processor << 32 | call_number (a 409)
//   sink.key_expired provider a = message id, b = attempt, c = the pruned key's age (ns)
//   sink.mismatch provider  a = message id, b = attempt, c = the stored payload (a 422)
//   sink.new_key  caller    a = message id, b = attempt, c = the new key generation
//
// Failing effects (sink.fail = P, sink.fail_after = DIST): each call() fails
// with probability P, drawn from the client's own "sink.fail" stream (no draw
// when P = 0, so runs without it are unchanged). A failing call takes a
// fail_after sample and ends with a non-retryable error (a 4xx, or the work's
// own exception, as the real libraries' tests raise): nothing executes at the
// provider, no try is retried, call() returns nullopt. Unlike an outage's 503
// it is never retried, and it does not depend on time; Sink::failed() counts
// them (coverage "sink.failed").
//
// Does not: model partial effects, provider crashes, or a payload's content (it
// is one number to compare; result_size is the memo's business);
// a provider kind changes only what executing a call gives, not the steps
// before it.
#pragma once

#include <compare>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/config.hpp"
#include "check/ledger.hpp"
#include "world/counterfactual.hpp"
#include "world/retry.hpp"
#include "protocol/store_ops.hpp"
#include "protocol/strategies.hpp"
#include "sim/network.hpp"
#include "sim/node.hpp"
#include "sim/random.hpp"
#include "sim/simulation.hpp"
#include "sim/trace.hpp"
#include "core/registry.hpp"

namespace lethe {

namespace sink_kinds {
inline constexpr sim::TraceKind kCall{"sink.call", "message", "attempt", "processor/call"};
inline constexpr sim::TraceKind kExecute{"sink.execute", "message", "attempt", "value"};
inline constexpr sim::TraceKind kReplay{"sink.replay", "message", "attempt", "value"};
inline constexpr sim::TraceKind kReject{"sink.reject", "message", "attempt", "reason"};
inline constexpr sim::TraceKind kRefuse{"sink.refuse", "message", "attempt", "processor/call"};
inline constexpr sim::TraceKind kRetry{"sink.retry", "message", "attempt", "backoff_ns"};
inline constexpr sim::TraceKind kOk{"sink.ok", "message", "attempt", "value"};
inline constexpr sim::TraceKind kGiveUp{"sink.give_up", "message", "attempt", "calls"};
inline constexpr sim::TraceKind kFail{"sink.fail", "message", "attempt", "after_ns"};
inline constexpr sim::TraceKind kConflict{"sink.conflict", "message", "attempt", "processor/call"};
inline constexpr sim::TraceKind kKeyExpired{"sink.key_expired", "message", "attempt", "age_ns"};
inline constexpr sim::TraceKind kMismatch{"sink.mismatch", "message", "attempt", "stored_payload"};
inline constexpr sim::TraceKind kNewKey{"sink.new_key", "message", "attempt", "generation"};
}  // namespace sink_kinds

enum class RejectReason : std::uint8_t { Capacity = 1, Outage = 2 };

// One execution of the effect at the provider: the ledger's record (node = the node that sent the call), so the
// world hands the provider's log to the oracle without copying it.
using Execution = ExecutionRecord;

// What one call asks of the provider.
struct SinkRequest {
  MessageId id = 0;
  ProcessorId processor = 0;
  AttemptId attempt = 0;          // also the fencing token: issued in the order attempts begin
  std::uint32_t call_number = 1;
  sim::NodeId caller = 0;
  FencingToken fencing_token = kNoFencingToken;  // what the strategy passed to its effect (protocol/strategies.hpp)
  std::uint32_t key_generation = 0;  // part of the idempotency key: 0, or the n-th new key (on_conflict "new-key")
  std::uint64_t payload = 0;         // the call's parameters, as one number (sink.payload)
  bool key_busy = false;             // set by Sink::arrive: another call was processing the key (-> 409)
};

// What the provider answers: a value, a retryable 503, or a refusal.
struct SinkResponse {
  bool unavailable = false;  // true: 503 (capacity or outage), `value` is meaningless
  std::uint64_t value = 0;
  bool refused = false;      // true: the provider refused the call for good, `value` is meaningless
  bool conflict = false;     // true: 409, another call with the key was in progress (in_progress = "conflict")
  bool mismatch = false;     // true: 422, the key was used with another payload (not retried)
};

// What an EffectProvider decides for one call.
struct EffectOutcome {
  bool refused = false;     // true: nothing executes (the caller is told, and does not retry)
  std::uint64_t value = 0;  // the effect's value, when it executes
};

// The semantics of one kind of provider (sink.kind): what executing a call gives. The Sink around it keeps
// what every kind shares (outages, capacity, idempotency, the log of executions, the trace).
class EffectProvider {
 public:
  virtual ~EffectProvider() = default;
  // Decides a call that was neither rejected (outage, capacity) nor answered from the idempotency table, at
  // the provider's instant `now`. Runs on the event loop: never blocks, draws only from its own Rng.
  virtual EffectOutcome execute(const SinkRequest& request, sim::Time now) = 0;
};

// What a provider's factory may use.
struct EffectContext {
  const SinkSection& section;  // the scenario's [sink] table
  sim::Rng rng;                // the provider's own stream (Sink's constructor argument)
};

using EffectFactory = std::function<std::unique_ptr<EffectProvider>(EffectContext)>;

struct SinkEntry {
  EffectFactory make;
};

using SinkRegistry = Registry<SinkEntry>;

// The process-wide registry, with the built-ins registered on first use.
SinkRegistry& sink_registry();
// sink_registry().add(name, entry): throws std::invalid_argument on an empty or taken name. Call before any run.
void register_sink(std::string name, SinkEntry entry);

class Sink {
 public:
  // `node` is the provider's node (group "sink"); `rng` is the provider's own stream (email draws its ids).
  // The EffectProvider is the one registered under section.kind (throws std::invalid_argument if none is).
  // REQUIRES: simulation, network and node outlive the Sink, and the Sink outlives every call to it.
  Sink(sim::Simulation& simulation, sim::Network& network, sim::Node& node, const SinkSection& section,
       sim::Rng rng);
  Sink(const Sink&) = delete;
  Sink& operator=(const Sink&) = delete;

  // The ground truth of effects: one entry per execution, in execution order.
  // A deque: it grows in fixed blocks (a vector's growth copied the whole log and doubled it for a moment).
  const std::deque<Execution>& executions() const { return executions_; }
  // Hands the log over (the world moves it into its ledger when the run is over). executions() is empty
  // afterwards.
  std::deque<Execution> take_executions() { return std::exchange(executions_, {}); }
  // Hands every later execution to `record` as it happens instead of keeping it in the log (the world folds
  // settled groups as they settle; see check/ledger.hpp).
  void set_on_execute(std::function<void(const Execution&)> record) { on_execute_ = std::move(record); }
  // A counterfactual replay (world/counterfactual.hpp): ProviderDedupes and ProviderKeyKept act here.
  void set_intervener(const Intervener* intervener) { intervener_ = intervener; }
  // The counterfactual replay's intervener, or nullptr (SinkClient: NoCrash's "the attempt does not give up").
  const Intervener* intervener() const { return intervener_; }
  // Calls that reached the provider (including rejected 503s and idempotent replays).
  std::uint64_t calls() const { return calls_; }
  // 503s (capacity or outage).
  std::uint64_t rejected() const { return rejected_; }
  std::uint64_t rejected_for_capacity() const { return rejected_for_capacity_; }
  std::uint64_t rejected_for_outage() const { return rejected_for_outage_; }
  // Calls answered from the idempotency table without executing.
  std::uint64_t replays() const { return replays_; }
  // Calls the EffectProvider refused.
  std::uint64_t refused() const { return refused_; }
  // Effect calls that failed with a non-retryable error (sink.fail), counted by the clients.
  std::uint64_t failed() const { return failed_; }
  void count_failure() { ++failed_; }
  // 409s (in_progress = "conflict"), 422s (payload mismatch), and keys pruned after idempotency_window.
  std::uint64_t conflicts() const { return conflicts_; }
  std::uint64_t mismatches() const { return mismatches_; }
  std::uint64_t keys_expired() const { return keys_expired_; }
  // The token bucket's depth in calls (0 when capacity is unlimited).
  std::uint64_t burst() const { return emission_interval_ns_ == 0 ? 0 : burst_calls_; }
  // Sets the bucket's depth. REQUIRES: calls >= 1, and no call has reached the provider yet.
  // No effect on an unlimited provider.
  void set_burst(std::uint64_t calls);

  // The default bucket depth, as a span of capacity: 100 ms worth of calls.
  static constexpr sim::Duration kDefaultBurstWindow = 100 * sim::kMillisecond;

  const SinkSection& section() const { return section_; }
  sim::Node& node() { return node_; }
  sim::Network& network() { return network_; }
  sim::Service& service() { return service_; }

  // Decides one call at the current instant (see the header comment). Runs on the
  // event loop, never blocks. Public so the network handler (and tests) can reach it.
  SinkResponse handle(const SinkRequest& request);
  // The request has just reached the provider (before its service time). Returns whether another call with its
  // key is in service with no result stored under it (the caller puts that in SinkRequest::key_busy). Only
  // with idempotent = true and in_progress = "conflict"; otherwise false and nothing is kept. Every arrive()
  // is followed by one handle() of the same request (the provider never crashes).
  bool arrive(const SinkRequest& request);

 private:
  bool in_outage(sim::Time now) const;
  bool take_token(sim::Time now);
  void trace_execution(const SinkRequest& request, std::uint64_t value, sim::Time now);
  // ProviderDedupes (a counterfactual replay): the first execution's value for a later call of the message.
  std::optional<SinkResponse> deduped(const SinkRequest& request, std::uint64_t value, sim::Time now);

  sim::Simulation& simulation_;
  sim::Network& network_;
  sim::Node& node_;
  SinkSection section_;
  std::unique_ptr<EffectProvider> provider_;
  sim::Service service_;
  // Token bucket as GCRA: the theoretical arrival time of the next conforming call.
  sim::Duration emission_interval_ns_ = 0;  // 0 = unlimited
  sim::Duration burst_tolerance_ns_ = 0;
  std::uint64_t burst_calls_ = 1;
  sim::Time theoretical_arrival_ = 0;
  struct IdempotencyKey {
    MessageId id;
    ProcessorId processor;
    std::uint32_t generation;
    auto operator<=>(const IdempotencyKey&) const = default;
  };
  struct StoredKey {
    std::uint64_t value = 0;
    sim::Time stored_at = 0;
    std::uint64_t payload = 0;
  };
  static IdempotencyKey key_of(const SinkRequest& request) {
    return IdempotencyKey{request.id, request.processor, request.key_generation};
  }
  bool tracks_in_progress() const { return section_.idempotent && section_.in_progress == KeyInProgress::Conflict; }
  bool key_expired(const IdempotencyKey& key, const StoredKey& stored, sim::Time now) const {
    if (intervener_ != nullptr && intervener_->acts(Intervention::ProviderKeyKept, key.id, key.processor)) return false;
    return section_.idempotency_window != kTtlNone && now - stored.stored_at >= section_.idempotency_window;
  }
  std::map<IdempotencyKey, StoredKey> idempotency_;
  std::map<IdempotencyKey, std::uint32_t> in_service_;  // in_progress = "conflict": requests arrived, not decided
  std::deque<Execution> executions_;
  std::function<void(const Execution&)> on_execute_;
  const Intervener* intervener_ = nullptr;
  std::optional<std::uint64_t> deduped_value_;  // ProviderDedupes: the message's first execution's value
  std::uint64_t calls_ = 0;
  std::uint64_t rejected_ = 0;
  std::uint64_t rejected_for_capacity_ = 0;
  std::uint64_t rejected_for_outage_ = 0;
  std::uint64_t replays_ = 0;
  std::uint64_t refused_ = 0;
  std::uint64_t failed_ = 0;
  std::uint64_t conflicts_ = 0;
  std::uint64_t mismatches_ = 0;
  std::uint64_t keys_expired_ = 0;
};

// What one SinkClient has seen, summed over its calls.
struct SinkClientStats {
  std::uint64_t effects = 0;      // call() invocations
  std::uint64_t tries = 0;        // requests sent (first tries and retries)
  std::uint64_t successes = 0;    // call() returned a value
  std::uint64_t failures = 0;     // call() returned nullopt (every try failed)
  std::uint64_t timeouts = 0;     // tries that got no answer in time
  std::uint64_t unavailable = 0;  // tries answered 503
  std::uint64_t refused = 0;      // calls the provider refused (not retried)
  std::uint64_t failed = 0;       // calls that failed with a non-retryable error (sink.fail)
  std::uint64_t conflicts = 0;    // tries answered 409
  std::uint64_t mismatches = 0;   // calls answered 422 (not retried)
};

class SinkClient {
 public:
  // `rng` draws the retry jitter. REQUIRES: `sink` and `network` outlive the client.
  // Several fibers may share one client: each call() runs its own copy of the retry policy.
  SinkClient(Sink& sink, sim::Network& network, const SinkSection& section, sim::Rng rng);

  // One effect, from a simulated fiber (see the header comment). Returns the provider's
  // value, or nullopt when every try failed. Throws sim::Crash if the caller's node crashes.
  // `token` travels with every try (SinkRequest::fencing_token).
  std::optional<std::uint64_t> call(MessageId id, ProcessorId processor, AttemptId attempt,
                                    FencingToken token = kNoFencingToken);

  const SinkClientStats& stats() const { return stats_; }

 private:
  // One try: the request sent, and its answer or nullopt (none in time). `keeps_waiting` (a NoCrash
  // counterfactual on the request's message: the attempt does not give up) waits past the timeout for as long
  // as the request is on its way or in service, and takes the provider's answer when it is given, even if its
  // response is late or lost; it still gives up on a request the network dropped.
  std::optional<SinkResponse> send(const SinkRequest& request, bool keeps_waiting);

  Sink& sink_;
  sim::Network& network_;
  sim::Duration timeout_ns_;
  int retries_;
  RetryPolicy policy_;  // copied per call(): the decorrelated jitter's state is per call
  sim::Rng rng_;
  double fail_;
  OnConflict on_conflict_;
  SinkPayload payload_;
  sim::Distribution fail_after_;
  sim::Rng fail_rng_;   // sink.fail's draws only: the jitter's stream is the same with or without it
  SinkClientStats stats_;
};

}  // namespace lethe
