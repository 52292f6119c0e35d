#include "world/topology.hpp"

#include <fmt/format.h>

#include <string>

namespace lethe {

Topology::Topology(const ScenarioConfig& config, sim::Simulation& simulation, sim::Network& network,
                   const FaultSwitches& switches, Ledger& ledger, Observations& observations)
    : config_(config),
      simulation_(simulation),
      network_(network),
      observations_(observations),
      source_entry_(source_registry().at(config.topology.source, "topology.source")) {
  build_network(switches);
  build_nodes(ledger);
}

void Topology::build_network(const FaultSwitches& switches) {
  sim::LinkConfig link;
  link.latency = config_.network.latency;
  link.loss = switches.loss ? config_.network.loss : 0.0;
  link.ack_loss = switches.ack_loss ? config_.network.ack_loss : 0.0;
  link.duplicate = switches.duplication ? config_.network.duplicate : 0.0;
  network_.set_default_link(link);
  set_links(link, switches.ack_loss);
  // The fault injector is not part of the system: its links are perfect and instant.
  sim::LinkConfig perfect;
  perfect.latency = sim::Distribution::constant(0);
  network_.set_link(simulation_.group_id("chaos"), simulation_.group_id("chaos"), perfect);
  if (switches.partitions) {
    for (const auto& p : config_.network.partitions) {
      network_.add_partition(simulation_.group_id(to_string(p.first)), simulation_.group_id(to_string(p.second)),
                              p.at, p.at + p.for_duration);
      observations_.cover("partition.scheduled");
    }
  }
}

void Topology::set_links(const sim::LinkConfig& base, bool ack_loss) {
  for (const NetworkLink& entry : config_.network.links) {
    sim::LinkConfig link = base;
    if (entry.latency) link.latency = *entry.latency;
    if (ack_loss && entry.ack_loss) link.ack_loss = *entry.ack_loss;
    network_.set_link(simulation_.group_id(to_string(entry.first)), simulation_.group_id(to_string(entry.second)),
                       link);
  }
}

void Topology::heal_network() {
  sim::LinkConfig link;
  link.latency = config_.network.latency;
  network_.set_default_link(link);
  set_links(link, false);
}

void Topology::build_nodes(Ledger& ledger) {
  store_node_ = &simulation_.add_node("store", "store");
  sink_node_ = &simulation_.add_node("sink", "sink");
  broker_node_ = &simulation_.add_node("broker", "broker");
  producer_node_ = &simulation_.add_node("producer", "clients");
  chaos_node_ = &simulation_.add_node("chaos", "chaos");
  store_ = make_store_server(config_, simulation_, network_, *store_node_);
  sink_ = std::make_unique<Sink>(simulation_, network_, *sink_node_, config_.sink, simulation_.rng("sink"));
  broker_service_ = std::make_unique<sim::Service>(sim::Service{broker_node_, {}, false, 0});
  build_workers();
  source_ = source_entry_.make(SourceContext{config_, simulation_, network_, *broker_node_, workers_, ledger,
                                             observations_});
}

void Topology::build_workers() {
  const auto processors = config_.topology.processors.size();
  const auto consumers = static_cast<std::size_t>(config_.topology.consumers);
  // PerProcessor (kafka, queue): `consumers` nodes per processor (a consumer group, or a queue, per processor);
  // Shared (clients): `consumers` API nodes that run every processor for each request.
  const bool api = source_entry_.workers == WorkerLayout::Shared;
  const std::size_t groups = api ? 1 : processors;
  for (std::size_t p = 0; p < groups; ++p) {
    for (std::size_t c = 0; c < consumers; ++c) {
      const std::string name = api ? fmt::format("api-{}", c) : fmt::format("{}-{}", config_.topology.processors[p], c);
      auto& node = simulation_.add_node(name, "consumers");
      workers_.push_back(WorkerSlot{&node, static_cast<ProcessorId>(p), c});
    }
  }
}

ProducerParts Topology::producer_parts() {
  return ProducerParts{producer_node_, broker_node_, broker_service_.get(), store_.get(), source_.get()};
}

FaultTargets Topology::fault_targets() { return FaultTargets{chaos_node_, producer_node_, &workers_, source_.get()}; }

}  // namespace lethe
