// protocol/strategies.hpp — the dedupe strategies, compared side by side (docs/scenarios.md [protocol]).
//
// A Strategy wraps an effect: protect(id, processor, attempt, effect) runs the effect at most as often as the
// strategy can guarantee and hands back its result. Strategies are generic over protocol/env.hpp: they read time
// from a Clock, reach the store through a StoreClient, report through ProtocolHooks, and never ask whether they
// are simulated (the same code runs against a real store in live mode).
//
// The strategies are registered by name (protocol/registry.hpp): ProtocolSection::kind names one, and
// make_strategy builds it from its registry entry. Each built-in lives in a file of its own under protocol/,
// with its description, its implementation and its entry (protocol/builtin_strategies.hpp lists them).
//
// Reporting: every decision goes to hooks.decided (several per attempt when it waits), with the record the
// decision was based on (seen) and the local time it was taken; a finished wait goes to hooks.waited once per
// protect() call (wait_time = local time from the first Wait decision to leaving the wait; ProtectResult.waited
// says an in-flight record was found); a completion write goes to hooks.completed. Crash points (which may throw
// sim::Crash or any other exception through the hooks) are called around the effect by every built-in that calls
// `effect`, at the same places, so the same fault schedule hits every strategy; a strategy whose effect is its
// store transaction (StrategyInfo::effect_in_store_transaction) has no window between its record and its effect
// and calls neither point (AfterCompleteBeforeAck is the caller's).
//
// Unknown store outcomes (StoreClient::execute returned nullopt): every write step is safe to repeat, so it is
// retried as the same operation up to kStoreAttemptsPerStep times in all (no extra delay: the unknown outcome
// already cost the client's timeout). A retry recognises that an earlier try of the same step landed: a start
// write or takeover whose reply shows owner == attempt, a completion whose reply shows the completed_at and
// memoized value it wrote. When every try is unknown: before the effect -> Failed (Basis::StoreUnavailable) and
// the effect is not run; a completion -> Executed with hooks.completed(applied = false) (the record stays in
// flight and a later attempt takes it over when stale). A poll read with an unknown outcome is not retried: the
// waiter waits another poll interval (still bounded by max_wait). A transaction that is the effect is not
// retried (Failed).
//
// Does not: retry the effect, ack messages, sleep outside Clock::sleep, or draw randomness outside the Rng given
// to make_strategy (used for poll intervals only). A Strategy may be shared by several fibers of one node: the
// per-call state lives in protect()'s frame.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "core/config.hpp"
#include "protocol/decision.hpp"
#include "protocol/env.hpp"
#include "protocol/store_ops.hpp"
#include "sim/random.hpp"
#include "sim/time.hpp"

namespace lethe {

// A fencing token: what a strategy that leases its record hands the effect, so that the provider can refuse a
// holder whose lease was taken over (a larger token was seen). Tokens grow with each lease of one record.
using FencingToken = std::uint64_t;
inline constexpr FencingToken kNoFencingToken = 0;  // the strategy fences nothing: providers never refuse it

// Runs the side effect with the strategy's fencing token (kNoFencingToken when it has none) and returns its
// result; nullopt = it failed (a provider's refusal included).
using Effect = std::function<std::optional<std::uint64_t>(FencingToken token)>;

// The fingerprint of a delivery's payload (a hash of its body, as a library hashes the request it validates).
// Version 0 is the payload the message was first published with; a copy published with a changed payload
// (workload.redelivery.payload = "changed") carries its copy number. Never 0.
using PayloadFingerprint = std::uint64_t;
PayloadFingerprint payload_fingerprint(MessageId id, std::uint32_t version);

// Failed: the attempt gave up; the message must be redelivered later.
enum class Outcome { Executed, Skipped, Failed };
const char* to_string(Outcome outcome);

struct ProtectResult {
  Outcome outcome = Outcome::Failed;
  std::optional<std::uint64_t> value;  // Executed: the effect's; Skipped: the memoized one (nullopt without memo)
  bool waited = false;                 // a Wait decision was taken (an in-flight record was found)
  sim::Duration wait_time = 0;         // local time spent waiting (0 when !waited)
  bool memoized_failure = false;       // Skipped: the record holds a failure (memoize_failures), handed back
  // Skipped: the record was written for another payload of this id and the delivery was refused unprocessed
  // (payload_check = "fingerprint"; Powertools' IdempotencyValidationError, an HTTP 422). Acknowledged, not retried.
  bool payload_mismatch = false;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  // REQUIRES: `attempt` is unique per call (it is the fencing token) and nonzero.
  virtual ProtectResult protect(MessageId id, ProcessorId processor, AttemptId attempt, const Effect& effect) = 0;
  // protect() for a delivery whose payload has the fingerprint `payload`. A strategy that checks payloads
  // overrides it (and its protect() means the payload of version 0); the default does not read the payload.
  virtual ProtectResult protect_payload(MessageId id, ProcessorId processor, AttemptId attempt,
                                        PayloadFingerprint /*payload*/, const Effect& effect) {
    return protect(id, processor, attempt, effect);
  }
};

// How many times a write step is tried when its outcome is unknown (first try included).
inline constexpr int kStoreAttemptsPerStep = 3;

// The strategy registered as settings.kind (protocol/registry.hpp), made by its entry's factory, wrapped so that a
// decision basis its entry does not declare throws StrategyContractError.
// REQUIRES (the scenario loader guarantees them; a violation throws std::invalid_argument): settings.kind is
// registered; every key its entry requires is set and positive; max_wait >= 0.
// `store`, `clock` and `hooks` must outlive the strategy. Defined with the registry (protocol/registry.cpp).
std::unique_ptr<Strategy> make_strategy(const ProtocolSection& settings, StoreClient& store, Clock& clock,
                                        ProtocolHooks& hooks, sim::Rng rng);
// The settings make_strategy() makes a strategy with: `settings` with its kind's defaults filled in, checked (a
// violation of make_strategy's REQUIRES throws std::invalid_argument). Made once, they are shared by every
// strategy made from them (a million consumers share one copy, not a million).
std::shared_ptr<const ProtocolSection> strategy_settings(const ProtocolSection& settings);
// make_strategy() with settings from strategy_settings(): the strategy keeps them alive.
std::unique_ptr<Strategy> make_strategy(std::shared_ptr<const ProtocolSection> settings, StoreClient& store,
                                        Clock& clock, ProtocolHooks& hooks, sim::Rng rng);

}  // namespace lethe
