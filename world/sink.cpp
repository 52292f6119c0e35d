#include "world/sink.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>

#include "sim/assert.hpp"

namespace lethe {
namespace {

std::uint64_t pack_processor_call(ProcessorId processor, std::uint32_t call_number) {
  return (static_cast<std::uint64_t>(processor) << 32) | call_number;
}

// A NoCrash counterfactual (the attempt does not give up): the provider's answer to one try, handed to the
// caller when the provider gives it, whatever becomes of its response on the wire.
struct Answer {
  sim::Simulation* simulation = nullptr;
  std::optional<SinkResponse> response;
  std::optional<sim::Waker> waiter;  // the caller, parked past its timeout
  void settle(const SinkResponse& given) {
    if (response) return;  // a duplicated request: the caller takes the first answer
    response = given;
    if (waiter) simulation->wake(*waiter);
  }
};

// How often a caller waiting past its timeout looks whether the network still holds its request.
constexpr sim::Duration kLossCheck = sim::kMillisecond;

// The request as the network carries it: told when it reaches the provider (Sink::arrive, for the 409).
struct Request {
  Sink* sink;
  SinkRequest request;
  std::shared_ptr<Answer> answer;  // a NoCrash counterfactual only
  void arrive() { request.key_busy = sink->arrive(request); }
  SinkResponse operator()() const {
    SinkResponse response = sink->handle(request);
    if (answer) answer->settle(response);
    return response;
  }
};

// The answer to a try that timed out: waits while the network holds a copy of the request (on its way, or in
// service); none left and no answer given means the request was dropped.
std::optional<SinkResponse> await_answer(const std::shared_ptr<Answer>& answer) {
  sim::Simulation& simulation = *answer->simulation;
  while (!answer->response && answer.use_count() > 1) {
    answer->waiter = simulation.waker();
    simulation.park(sim::saturating_add(simulation.now(), kLossCheck));
  }
  answer->waiter.reset();
  return answer->response;
}

}  // namespace

Sink::Sink(sim::Simulation& simulation, sim::Network& network, sim::Node& node, const SinkSection& section,
           sim::Rng rng)
    : simulation_(simulation),
      network_(network),
      node_(node),
      section_(section),
      provider_(sink_registry().at(section.kind, "sink.kind").make(EffectContext{section_, rng})),
      service_{&node, section.latency, /*serial=*/false, 0, simulation.rng("sink.service")} {
  const double per_second = section.capacity.per_second;
  LETHE_ASSERT(per_second >= 0.0 && std::isfinite(per_second), "Sink: capacity must be a finite rate >= 0");
  for (const SinkOutage& outage : section.outages) {
    LETHE_ASSERT(outage.at >= 0 && outage.for_duration > 0, "Sink: an outage needs at >= 0 and for > 0");
  }
  if (per_second > 0.0) {
    const double interval = std::round(static_cast<double>(sim::kSecond) / per_second);
    LETHE_ASSERT(interval <= static_cast<double>(sim::kTimeMax / 2), "Sink: capacity too small");
    emission_interval_ns_ = std::max<sim::Duration>(1, static_cast<sim::Duration>(interval));
    // (N * window) / 1 s, in this order: exact for whole N, so N = 70 gives 7, not 6.999...
    const double window_calls = std::floor(per_second * static_cast<double>(kDefaultBurstWindow) /
                                           static_cast<double>(sim::kSecond));
    LETHE_ASSERT(window_calls <= 1e9, "Sink: capacity too large");
    set_burst(std::max<std::uint64_t>(1, static_cast<std::uint64_t>(window_calls)));
  }
}

void Sink::set_burst(std::uint64_t calls) {
  LETHE_ASSERT(calls >= 1, "Sink: the burst must be at least one call");
  LETHE_ASSERT(calls_ == 0, "Sink: set the burst before the first call");
  LETHE_ASSERT(calls <= 1'000'000'000, "Sink: burst too large");
  LETHE_ASSERT(emission_interval_ns_ == 0 ||
              static_cast<sim::Duration>(calls - 1) <= sim::kTimeMax / emission_interval_ns_,
          "Sink: burst too large for this capacity");
  burst_calls_ = calls;
  burst_tolerance_ns_ = (static_cast<sim::Duration>(calls) - 1) * emission_interval_ns_;
}

bool Sink::in_outage(sim::Time now) const {
  return std::any_of(section_.outages.begin(), section_.outages.end(), [now](const SinkOutage& outage) {
    return now >= outage.at && now - outage.at < outage.for_duration;
  });
}

// GCRA: a call conforms if the bucket's theoretical arrival time is at most
// burst_tolerance ahead of now; a conforming call moves it one interval on.
bool Sink::take_token(sim::Time now) {
  if (emission_interval_ns_ == 0) return true;
  const sim::Time arrival = std::max(theoretical_arrival_, now);
  if (arrival - now > burst_tolerance_ns_) return false;
  theoretical_arrival_ = arrival + emission_interval_ns_;
  return true;
}

bool Sink::arrive(const SinkRequest& request) {
  if (!tracks_in_progress()) return false;
  const IdempotencyKey key = key_of(request);
  std::uint32_t& serving = in_service_[key];
  const auto stored = idempotency_.find(key);
  const bool has_result = stored != idempotency_.end() && !key_expired(key, stored->second, simulation_.now());
  const bool busy = serving > 0 && !has_result;
  ++serving;
  return busy;
}

SinkResponse Sink::handle(const SinkRequest& request) {
  const sim::Time now = simulation_.now();
  sim::Trace& trace = simulation_.trace();
  const sim::NodeId provider = node_.id();
  ++calls_;
  if (tracks_in_progress()) {
    // This request is no longer in service, whatever follows.
    const auto serving = in_service_.find(key_of(request));
    if (serving != in_service_.end() && --serving->second == 0) in_service_.erase(serving);
  }
  trace.record(now, sink_kinds::kCall, provider, request.id, request.attempt,
               pack_processor_call(request.processor, request.call_number));

  const bool outage = in_outage(now);
  if (outage || !take_token(now)) {
    const RejectReason reason = outage ? RejectReason::Outage : RejectReason::Capacity;
    ++rejected_;
    ++(outage ? rejected_for_outage_ : rejected_for_capacity_);
    trace.record(now, sink_kinds::kReject, provider, request.id, request.attempt, static_cast<std::uint64_t>(reason));
    return SinkResponse{true, 0};
  }

  const IdempotencyKey key = key_of(request);
  if (section_.idempotent) {
    if (request.key_busy) {
      ++conflicts_;
      trace.record(now, sink_kinds::kConflict, provider, request.id, request.attempt,
                   pack_processor_call(request.processor, request.call_number));
      return SinkResponse{.unavailable = false, .value = 0, .refused = false, .conflict = true};
    }
    const auto found = idempotency_.find(key);
    if (found != idempotency_.end() && key_expired(key, found->second, now)) {
      ++keys_expired_;
      trace.record(now, sink_kinds::kKeyExpired, provider, request.id, request.attempt,
                   static_cast<std::uint64_t>(now - found->second.stored_at));
      idempotency_.erase(found);  // pruned: this call starts a new request
    } else if (found != idempotency_.end() && found->second.payload != request.payload) {
      ++mismatches_;
      trace.record(now, sink_kinds::kMismatch, provider, request.id, request.attempt, found->second.payload);
      return SinkResponse{.unavailable = false, .value = 0, .refused = false, .conflict = false, .mismatch = true};
    } else if (found != idempotency_.end()) {
      ++replays_;
      trace.record(now, sink_kinds::kReplay, provider, request.id, request.attempt, found->second.value);
      return SinkResponse{false, found->second.value};
    }
  }

  const EffectOutcome outcome = provider_->execute(request, now);
  if (outcome.refused) {
    ++refused_;
    trace.record(now, sink_kinds::kRefuse, provider, request.id, request.attempt,
                 pack_processor_call(request.processor, request.call_number));
    return SinkResponse{.unavailable = false, .value = 0, .refused = true};
  }
  if (const auto replayed = deduped(request, outcome.value, now)) return *replayed;
  const std::uint64_t value = outcome.value;
  const Execution execution{request.id, request.processor, request.attempt, request.call_number,
                            request.caller, now, value};
  if (on_execute_) {
    on_execute_(execution);
  } else {
    executions_.push_back(execution);
  }
  if (section_.idempotent) idempotency_.emplace(key, StoredKey{value, now, request.payload});
  trace_execution(request, value, now);
  return SinkResponse{false, value};
}

void Sink::trace_execution(const SinkRequest& request, std::uint64_t value, sim::Time now) {
  sim::Trace& trace = simulation_.trace();
  if (trace.detailed()) {
    trace.record_detail(now, sink_kinds::kExecute, node_.id(), request.id, request.attempt, value,
                        section_.kind + " processor " + std::to_string(request.processor) + " call " +
                            std::to_string(request.call_number) + " from " + simulation_.node(request.caller).name());
  } else {
    trace.record(now, sink_kinds::kExecute, node_.id(), request.id, request.attempt, value);
  }
}

std::optional<SinkResponse> Sink::deduped(const SinkRequest& request, std::uint64_t value, sim::Time now) {
  if (intervener_ == nullptr || !intervener_->acts(Intervention::ProviderDedupes, request.id, request.processor)) {
    return std::nullopt;
  }
  // The provider's own draws for this call are made; a key it has executed is answered, not run again.
  if (!deduped_value_) {
    deduped_value_ = value;
    return std::nullopt;
  }
  ++replays_;
  simulation_.trace().record(now, sink_kinds::kReplay, node_.id(), request.id, request.attempt, *deduped_value_);
  return SinkResponse{false, *deduped_value_};
}

SinkClient::SinkClient(Sink& sink, sim::Network& network, const SinkSection& section, sim::Rng rng)
    : sink_(sink),
      network_(network),
      timeout_ns_(section.timeout),
      retries_(section.retries),
      policy_(section.backoff, section.jitter),
      rng_(rng),
      fail_(section.fail),
      on_conflict_(section.on_conflict),
      payload_(section.payload),
      fail_after_(section.fail_after),
      fail_rng_(rng.derive("sink.fail")) {
  LETHE_ASSERT(timeout_ns_ > 0, "SinkClient: timeout must be > 0");
  LETHE_ASSERT(fail_ >= 0.0 && fail_ <= 1.0, "SinkClient: fail must be a probability");
  LETHE_ASSERT(retries_ >= 0, "SinkClient: retries must be >= 0");
}

std::optional<std::uint64_t> SinkClient::call(MessageId id, ProcessorId processor, AttemptId attempt,
                                             FencingToken token) {
  sim::Simulation& simulation = sim::Simulation::current();
  const sim::NodeId caller = simulation.this_node().id();
  RetryPolicy policy = policy_;
  ++stats_.effects;
  if (fail_ > 0.0 && fail_rng_.bernoulli(fail_)) {
    const sim::Duration took = std::max<sim::Duration>(0, fail_after_.sample(fail_rng_));
    ++stats_.failed;
    sink_.count_failure();
    simulation.trace().record(simulation.now(), sink_kinds::kFail, caller, id, attempt,
                              static_cast<std::uint64_t>(took));
    sim::sleep(took);
    return std::nullopt;  // for good: the effect did not happen, and the caller is not to retry it
  }
  const bool keeps_waiting =
      sink_.intervener() != nullptr && sink_.intervener()->acts(Intervention::NoCrash, id, processor);
  const int tries = retries_ + 1;
  int made = tries;  // tries made when the call gives up
  std::uint32_t key_generation = 0;  // on_conflict = "new-key": the key the remaining tries use
  // The parameters this call sends: the same for every call of the message, or rebuilt per attempt.
  const std::uint64_t payload = payload_ == SinkPayload::PerAttempt ? attempt : 0;
  for (int try_number = 1; try_number <= tries; ++try_number) {
    if (try_number > 1) {
      const sim::Duration backoff_ns = policy.delay(try_number - 1, rng_);
      simulation.trace().record(simulation.now(), sink_kinds::kRetry, caller, id, attempt,
                                static_cast<std::uint64_t>(backoff_ns));
      sim::sleep(backoff_ns);
    }
    SinkRequest request{id, processor, attempt, static_cast<std::uint32_t>(try_number), caller, token};
    request.key_generation = key_generation;
    request.payload = payload;
    ++stats_.tries;
    const std::optional<SinkResponse> response = send(request, keeps_waiting);
    if (!response.has_value()) {
      ++stats_.timeouts;
      continue;
    }
    if (response->unavailable) {
      ++stats_.unavailable;
      continue;
    }
    if (response->refused) {
      ++stats_.refused;
      made = try_number;
      break;  // for good: another try would be refused too
    }
    if (response->mismatch) {
      ++stats_.mismatches;
      made = try_number;
      break;  // for good: the key is bound to other parameters
    }
    if (response->conflict) {
      ++stats_.conflicts;
      if (on_conflict_ == OnConflict::Fail) {
        made = try_number;
        break;  // for good: the failed effect is the strategy's (the message is redelivered)
      }
      if (on_conflict_ == OnConflict::NewKey) {
        ++key_generation;
        simulation.trace().record(simulation.now(), sink_kinds::kNewKey, caller, id, attempt, key_generation);
      }
      continue;  // retry: the same key (a replay once the original stored its result), or the new one
    }
    ++stats_.successes;
    simulation.trace().record(simulation.now(), sink_kinds::kOk, caller, id, attempt, response->value);
    return response->value;
  }
  ++stats_.failures;
  simulation.trace().record(simulation.now(), sink_kinds::kGiveUp, caller, id, attempt,
                            static_cast<std::uint64_t>(made));
  return std::nullopt;
}

std::optional<SinkResponse> SinkClient::send(const SinkRequest& request, bool keeps_waiting) {
  if (!keeps_waiting) return network_.call(sink_.service(), Request{&sink_, request, nullptr}, timeout_ns_, request.id);
  auto answer = std::make_shared<Answer>();
  answer->simulation = &sim::Simulation::current();
  std::optional<SinkResponse> response =
      network_.call(sink_.service(), Request{&sink_, request, answer}, timeout_ns_, request.id);
  if (!response) response = await_answer(answer);
  return response;
}

}  // namespace lethe
