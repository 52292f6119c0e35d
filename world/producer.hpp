// world/producer.hpp — the producer of a kafka or queue scenario: direct, dual-write or outbox, with the relay.
//
// The producer node publishes workload.messages ids 0, 1, ... at workload.rate. direct: publish only.
// dual-write: put the domain row, then publish (a crash between the two, producer.crash_between_commit_and_
// publish, loses the publish). outbox: one transaction writes the domain row and the outbox row; the relay (a
// second fiber on the producer node) publishes committed outbox rows in order, at least once, and marks each
// published (its durable cursor moves only after the mark, so a crash between publish and mark republishes).
// A store write without an answer is retried with the same id (an idempotent write). From the moment an id is
// committed (direct: taken) it is owed: Ledger::messages and Ledger::expected count it for every processor.
// Publishing is an RPC to the broker's service (retried up to 20 times, 100 ms apart; a lost ACK publishes a
// duplicate); at the broker the source gets one publish per copy. workload.redelivery schedules extra copies of
// an id (stream "redelivery"). The producer's durable state (positions, cursor) survives its crashes.
//
// A source that makes its own requests has no producer (hand_over_to_source); it owes what its callers requested
// (MessageSource::account_requests).
// Lifetime: everything passed in outlives the producer, which outlives every run of the simulation.
// Does not: decide what a publish means at the broker (the source does).
#pragma once

#include <cstdint>

#include "core/config.hpp"
#include "check/ledger.hpp"
#include "protocol/env.hpp"
#include "sim/network.hpp"
#include "sim/node.hpp"
#include "sim/random.hpp"
#include "sim/simulation.hpp"
#include "world/faults.hpp"
#include "world/observations.hpp"
#include "world/source.hpp"
#include "world/store_server.hpp"

namespace lethe {

// What the producer uses, built by the topology.
struct ProducerParts {
  sim::Node* node = nullptr;              // the producer's node (group "clients")
  sim::Node* broker = nullptr;            // the broker's node (publish traces carry it)
  sim::Service* broker_service = nullptr; // the broker's RPC service
  StoreServer* store = nullptr;
  MessageSource* source = nullptr;
};

class Producer {
 public:
  Producer(const ScenarioConfig& config, sim::Simulation& simulation, sim::Network& network, ProducerParts parts,
           Ledger& ledger, Observations& observations, FaultInjector& faults);
  Producer(const Producer&) = delete;
  Producer& operator=(const Producer&) = delete;

  // Sets the producer node's main (the producer, and the relay for outbox) and starts it. Once.
  void start();
  // No producer: the source makes the requests and owes them.
  void hand_over_to_source();
  // Every message published (and, for outbox, relayed) and every redelivery copy published.
  bool done() const;
  // What the producer still owed the broker when the run ended at `end`: messages not yet published (each due at
  // its place in workload.rate) and redelivery copies whose timer had not fired. Reads only, changes nothing.
  struct Unsent {
    std::uint64_t count = 0;
    sim::Time latest = 0;  // the latest due time among them (0 when none)
  };
  Unsent unsent(sim::Time end) const;

 private:
  void main();
  void relay();
  // Takes `id` (direct) or commits it to the store (dual-write, outbox). False: the write got no answer.
  bool take(MessageId id, StoreClient& store);
  void owe(MessageId id);
  void schedule_copies(MessageId id, sim::Rng& copies_rng);
  void publish(MessageId id, std::uint32_t copy);  // at the broker
  bool publish_with_retries(MessageId id);

  const ScenarioConfig& config_;
  sim::Simulation& simulation_;
  sim::Network& network_;
  ProducerParts parts_;
  Ledger& ledger_;
  Observations& observations_;
  FaultInjector& faults_;
  std::int64_t next_to_publish_ = 0;  // durable producer position
  std::int64_t committed_ = 0;        // ids committed by the producer (dual-write / outbox)
  std::int64_t relay_cursor_ = 0;     // durable outbox relay position
  bool producer_done_ = false;
  std::int64_t pending_copies_ = 0;   // redelivery copies scheduled but not yet published
  sim::Time latest_copy_due_ = 0;     // the latest due time of every copy scheduled
};

}  // namespace lethe
