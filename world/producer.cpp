#include "world/producer.hpp"

#include <algorithm>
#include <memory>

namespace lethe {
namespace {

constexpr sim::TraceKind kTracePublish{"publish", "message", "copy"};
constexpr sim::TraceKind kTraceCommit{"producer.commit", "message"};

constexpr ProcessorId kProducerProcessor = 0xffff;

}  // namespace

Producer::Producer(const ScenarioConfig& config, sim::Simulation& simulation, sim::Network& network,
                   ProducerParts parts, Ledger& ledger, Observations& observations, FaultInjector& faults)
    : config_(config),
      simulation_(simulation),
      network_(network),
      parts_(parts),
      ledger_(ledger),
      observations_(observations),
      faults_(faults) {}

void Producer::start() {
  sim::Node* node = parts_.node;
  node->set_main([this, node] {
    if (config_.producer.mode == ProducerMode::Outbox) node->spawn([this] { relay(); });
    if (!producer_done_) main();
  });
  node->start();
}

void Producer::hand_over_to_source() {
  producer_done_ = true;
}

bool Producer::done() const {
  if (!producer_done_ || pending_copies_ > 0) return false;
  return config_.producer.mode != ProducerMode::Outbox || relay_cursor_ >= committed_;
}

Producer::Unsent Producer::unsent(sim::Time end) const {
  Unsent out;
  if (pending_copies_ > 0) {
    out.count += static_cast<std::uint64_t>(pending_copies_);
    out.latest = latest_copy_due_;
  }
  const std::int64_t messages = config_.workload.messages;
  if (!producer_done_ && next_to_publish_ < messages) {
    out.count += static_cast<std::uint64_t>(messages - next_to_publish_);
    const double rate = config_.workload.rate.per_second;
    const sim::Duration spacing = rate > 0.0 ? static_cast<sim::Duration>(1e9 / rate) : 0;  // as main() spaces them
    const sim::Time last_due = static_cast<sim::Time>(messages - 1) * spacing;
    out.latest = std::max({out.latest, last_due, end});
  }
  return out;
}

void Producer::main() {
  sim::Node& self = *parts_.node;
  const std::unique_ptr<StoreClient> store_client = parts_.store->connect(self);
  const auto messages = config_.workload.messages;
  const double rate = config_.workload.rate.per_second;
  const sim::Duration spacing = rate > 0.0 ? static_cast<sim::Duration>(1e9 / rate) : 0;
  sim::Rng copies_rng = simulation_.rng("redelivery");
  while (next_to_publish_ < messages) {
    const MessageId id = static_cast<MessageId>(next_to_publish_);
    if (spacing > 0) sim::sleep_until(static_cast<sim::Time>(next_to_publish_) * spacing);
    if (!take(id, *store_client)) continue;  // unknown: try the same order again (an idempotent write)
    owe(id);
    if (config_.producer.mode != ProducerMode::Direct &&
        faults_.producer_crashes(config_.producer.crash_between_commit_and_publish,
                                 "producer.crash_between_commit_and_publish")) {
      self.crash();
      faults_.schedule_restart(self);
      simulation_.checkpoint();
    }
    if (config_.producer.mode != ProducerMode::Outbox) {
      publish_with_retries(id);
      observations_.active(sim::now());
    }
    schedule_copies(id, copies_rng);
  }
  producer_done_ = true;
}

bool Producer::take(MessageId id, StoreClient& store) {
  if (config_.producer.mode == ProducerMode::Direct) {
    ++next_to_publish_;
    return true;
  }
  Item row;
  row.counter = 1;
  Op op = config_.producer.mode == ProducerMode::DualWrite
              ? put_op(make_key(Table::Domain, kProducerProcessor, id), row)
              : transaction_op({TransactionPart{make_key(Table::Domain, kProducerProcessor, id), {}, [] {
                                  Update u;
                                  u.counter_add = 1;
                                  return u;
                                }()},
                                TransactionPart{make_key(Table::Outbox, kProducerProcessor, id), {}, {}}});
  auto reply = store.execute(op);
  if (!reply.has_value()) return false;
  ++next_to_publish_;
  ++committed_;
  simulation_.trace().record(sim::now(), kTraceCommit, parts_.node->id(), id);
  return true;
}

void Producer::owe(MessageId id) {
  // The message is owed from here on: every processor must act on it once.
  ledger_.messages += 1;
  ledger_.expected.add(id, static_cast<ProcessorId>(config_.topology.processors.size()));
}

void Producer::schedule_copies(MessageId id, sim::Rng& copies_rng) {
  // Extra deliveries of the same id from the producer side (workload.redelivery).
  const auto& redelivery = config_.workload.redelivery;
  if (redelivery.fraction <= 0.0 || !copies_rng.bernoulli(redelivery.fraction)) return;
  for (int copy = 1; copy <= redelivery.copies; ++copy) {
    // Copy i draws from [[workload.redelivery.copy]] entry i when there is one (sequential redeliveries: the
    // third call after the second completed), otherwise from `delay`; one draw per copy either way.
    const auto entry = static_cast<std::size_t>(copy - 1);
    const sim::Distribution& distribution =
        entry < redelivery.copy_delays.size() ? redelivery.copy_delays[entry].delay : redelivery.delay;
    const sim::Duration delay = distribution.sample(copies_rng);
    ++pending_copies_;
    latest_copy_due_ = std::max(latest_copy_due_, simulation_.now() + delay);
    simulation_.after(delay, [this, id, copy] {
      --pending_copies_;
      publish(id, static_cast<std::uint32_t>(copy));
    });
  }
}

void Producer::relay() {
  // The outbox relay: publishes committed outbox rows in order, at least once. Its cursor is durable and is
  // advanced only after the row is marked published, so a crash between publish and mark republishes.
  sim::Node& self = *parts_.node;
  const std::unique_ptr<StoreClient> store_client = parts_.store->connect(self);
  while (true) {
    if (relay_cursor_ >= committed_) {
      if (producer_done_) return;
      sim::sleep(10 * sim::kMillisecond);
      continue;
    }
    const MessageId id = static_cast<MessageId>(relay_cursor_);
    if (!publish_with_retries(id)) continue;
    Update mark;
    mark.counter_add = 1;
    auto reply = store_client->execute(upsert_op(make_key(Table::Outbox, kProducerProcessor, id), {}, mark));
    if (!reply.has_value()) continue;
    ++relay_cursor_;
    observations_.active(sim::now());
  }
}

void Producer::publish(MessageId id, std::uint32_t copy) {
  simulation_.trace().record(simulation_.now(), kTracePublish, parts_.broker->id(), id, copy);
  // A copy carries another payload under the same id when workload.redelivery.payload = "changed".
  const bool changed = copy > 0 && config_.workload.redelivery.payload == RedeliveryPayload::Changed;
  parts_.source->publish(id, changed ? copy : 0);
  if (copy > 0) observations_.cover("redelivery.copy");
}

bool Producer::publish_with_retries(MessageId id) {
  // The producer's publish crosses the network: a lost request is retried harmlessly, a lost ACK is retried
  // and appends a duplicate (producer retries).
  for (int attempt = 0; attempt < 20; ++attempt) {
    if (attempt > 0) {
      observations_.cover("producer.retry");
      sim::sleep(100 * sim::kMillisecond);
    }
    auto ack = network_.call(*parts_.broker_service, [this, id] {
      publish(id, 0);
      return true;
    }, config_.network.rpc_timeout, id);
    if (ack.has_value()) return true;
  }
  observations_.cover("producer.gave_up");
  return false;
}

}  // namespace lethe
