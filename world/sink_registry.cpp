#include "world/names.hpp"
#include "world/sink.hpp"

namespace lethe {

// The built-in effect providers (world/effects.cpp).
void register_counter_sink(SinkRegistry& registry);
void register_payment_sink(SinkRegistry& registry);
void register_email_sink(SinkRegistry& registry);

namespace {

SinkRegistry make_sink_registry() {
  SinkRegistry registry;
  register_counter_sink(registry);
  register_payment_sink(registry);
  register_email_sink(registry);
  return registry;
}

}  // namespace

SinkRegistry& sink_registry() {
  static SinkRegistry registry = make_sink_registry();
  return registry;
}

void register_sink(std::string name, SinkEntry entry) { sink_registry().add(std::move(name), std::move(entry)); }

std::vector<std::string> sink_names() { return sink_registry().names(); }

}  // namespace lethe
