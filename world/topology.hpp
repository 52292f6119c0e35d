// world/topology.hpp — the topology builder: the simulated system's network links and nodes for a scenario.
//
// The constructor builds, in this order (node ids, and so the trace, depend on it):
//   1. links: the default link with network.latency and the network.* faults the fault switches allow, each
//      [[network.link]] pair's own latency and ack_loss, perfect instant links inside the group "chaos", and every
//      [[network.partition]] window (when partitions are switched on; counted "partition.scheduled");
//   2. nodes: "store", "sink", "broker", "producer" (group "clients"), "chaos"; then the store server (on
//      "store"), the sink (on "sink", stream "sink"), the broker's RPC service; then the workers (group
//      "consumers") laid out as the source's registry entry says: PerProcessor gives "<processor>-<c>" for every
//      processor and c < topology.consumers, Shared gives "api-<c>"; then the source (which may add nodes of its
//      own: the clients).
// heal_network() (the drain): every link without loss, lost ACKs or duplication; partitions stay scheduled.
//
// Owns the store server, the sink, the source and the broker's service; the simulation owns the nodes.
// REQUIRES: topology.source names a registered source (the loader guarantees it; otherwise the constructor
// throws std::invalid_argument). Everything passed in outlives the topology.
// Does not: start nodes, set their mains, or wire the store's and sink's hooks (the world does).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "core/config.hpp"
#include "check/ledger.hpp"
#include "sim/network.hpp"
#include "sim/node.hpp"
#include "sim/simulation.hpp"
#include "world/faults.hpp"
#include "world/observations.hpp"
#include "world/producer.hpp"
#include "world/sink.hpp"
#include "world/source.hpp"
#include "world/store_server.hpp"

namespace lethe {

class Topology {
 public:
  Topology(const ScenarioConfig& config, sim::Simulation& simulation, sim::Network& network,
           const FaultSwitches& switches, Ledger& ledger, Observations& observations);
  Topology(const Topology&) = delete;
  Topology& operator=(const Topology&) = delete;

  void heal_network();

  sim::Node& producer_node() { return *producer_node_; }
  sim::Node& chaos_node() { return *chaos_node_; }
  const std::vector<WorkerSlot>& workers() const { return workers_; }
  WorkerLayout worker_layout() const { return source_entry_.workers; }
  StoreServer& store() { return *store_; }
  Sink& sink() { return *sink_; }
  MessageSource& source() { return *source_; }
  ProducerParts producer_parts();
  FaultTargets fault_targets();

 private:
  void build_network(const FaultSwitches& switches);
  // Each [[network.link]]: `base` with the entry's latency and (when `ack_loss`: lost ACKs are on) its ack_loss.
  void set_links(const sim::LinkConfig& base, bool ack_loss);
  void build_nodes(Ledger& ledger);
  void build_workers();

  const ScenarioConfig& config_;
  sim::Simulation& simulation_;
  sim::Network& network_;
  Observations& observations_;
  const SourceEntry& source_entry_;
  sim::Node* store_node_ = nullptr;
  sim::Node* sink_node_ = nullptr;
  sim::Node* broker_node_ = nullptr;
  sim::Node* producer_node_ = nullptr;
  sim::Node* chaos_node_ = nullptr;
  std::vector<WorkerSlot> workers_;  // in index order
  std::unique_ptr<StoreServer> store_;
  std::unique_ptr<Sink> sink_;
  std::unique_ptr<MessageSource> source_;
  std::unique_ptr<sim::Service> broker_service_;
};

}  // namespace lethe
