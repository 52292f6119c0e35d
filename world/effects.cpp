// world/effects.cpp — the built-in effect providers: counter, payment, email (step 5 of a call, world/sink.hpp).
//
// None refuses a call. counter and payment answer their running count of executions (a counter's value, a
// charge id); email answers a message id drawn from the provider's own Rng (non-zero), which the caller
// cannot recompute.
//
// Does not: keep anything but what the value needs.
#include <memory>

#include "world/sink.hpp"

namespace lethe {
namespace {

// counter and payment: the provider's running count of executions (1, 2, ...).
class CountingProvider final : public EffectProvider {
 public:
  EffectOutcome execute(const SinkRequest& /*request*/, sim::Time /*now*/) override {
    return EffectOutcome{.refused = false, .value = ++executions_};
  }

 private:
  std::uint64_t executions_ = 0;
};

class EmailProvider final : public EffectProvider {
 public:
  explicit EmailProvider(sim::Rng rng) : rng_(rng) {}
  EffectOutcome execute(const SinkRequest& /*request*/, sim::Time /*now*/) override {
    std::uint64_t message_id = rng_.next();
    while (message_id == 0) message_id = rng_.next();
    return EffectOutcome{.refused = false, .value = message_id};
  }

 private:
  sim::Rng rng_;
};

std::unique_ptr<EffectProvider> make_counting(const EffectContext& /*context*/) {
  return std::make_unique<CountingProvider>();
}

}  // namespace

void register_counter_sink(SinkRegistry& registry) { registry.add("counter", SinkEntry{make_counting}); }
void register_payment_sink(SinkRegistry& registry) { registry.add("payment", SinkEntry{make_counting}); }
void register_email_sink(SinkRegistry& registry) {
  registry.add("email", SinkEntry{[](const EffectContext& context) {
                 return std::make_unique<EmailProvider>(context.rng);
               }});
}

}  // namespace lethe
