#include "world/names.hpp"
#include "world/source.hpp"

namespace lethe {

// The built-in sources, each registered by its own file.
void register_kafka_source(SourceRegistry& registry);
void register_queue_source(SourceRegistry& registry);
void register_clients_source(SourceRegistry& registry);

namespace {

SourceRegistry make_source_registry() {
  SourceRegistry registry;
  register_kafka_source(registry);
  register_queue_source(registry);
  register_clients_source(registry);
  return registry;
}

}  // namespace

SourceRegistry& source_registry() {
  static SourceRegistry registry = make_source_registry();
  return registry;
}

void register_source(std::string name, SourceEntry entry) { source_registry().add(std::move(name), std::move(entry)); }

std::vector<std::string> source_names() { return source_registry().names(); }

}  // namespace lethe
