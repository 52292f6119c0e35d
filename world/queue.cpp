#include "world/queue.hpp"

#include <set>
#include <stdexcept>

#include "world/source_support.hpp"
#include "sim/assert.hpp"

namespace lethe {

using source_support::zero_time_service;


QueueSettings QueueSettings::from(const ScenarioConfig& config, std::uint32_t index) {
  QueueSettings settings;
  settings.visibility_timeout = config.topology.visibility_timeout;
  settings.rpc_timeout = config.network.rpc_timeout;
  settings.index = index;
  return settings;
}

Queue::Queue(sim::Simulation& simulation, sim::Network& network, sim::Node& broker, QueueSettings settings,
             Ledger& ledger)
    : simulation_(simulation),
      network_(network),
      broker_(broker),
      settings_(settings),
      ledger_(ledger),
      service_(zero_time_service(broker)) {
  LETHE_ASSERT(settings_.visibility_timeout > 0, "Queue: visibility_timeout must be > 0");
  LETHE_ASSERT(settings_.rpc_timeout > 0, "Queue: rpc_timeout must be > 0");
}

std::uint64_t Queue::publish(MessageId id, std::uint32_t payload) {
  const std::uint64_t number = published_++;
  entries_.push_back(Entry{id, 0, 0, 0, State::Visible});
  if (payload != 0) changed_payloads_.emplace(number, payload);
  simulation_.trace().record(simulation_.now(), source_kinds::kQueuePublish, broker_.id(), id, number,
                             settings_.index);
  changed();
  return number;
}

void Queue::changed() {
  // One message became visible: hand it to one waiting receiver (waking every idle consumer for each message
  // made a queue with N consumers cost O(N) per message: 16,000 consumers took 408 s for 20,000 messages).
  // A receiver whose poll is in flight sees the version change and polls again.
  // Nobody asleep to hand it to (every receiver is busy or has a poll in flight): leave a claim, so that the
  // next receiver whose poll comes back empty polls again instead of sleeping past it.
  if (!changed_.notify_one()) ++unclaimed_;
}

Queue::ReceiveResponse Queue::serve_receive() {
  std::uint64_t number = 0;
  if (!revisible_.empty()) {  // older than every never-received message
    number = *revisible_.begin();
    revisible_.erase(revisible_.begin());
  } else if (fresh_ < published_) {
    number = fresh_++;
  } else {
    return ReceiveResponse{};
  }
  Entry& entry = this->entry(number);
  if (entry.state != State::Visible) throw sim::InternalError("Queue: a visible message was not in state Visible");
  entry.state = State::InFlight;
  entry.receipt = next_receipt_++;
  ++entry.receive_count;
  ++receives_;
  const sim::Time now = simulation_.now();
  const sim::Time invisible_until = now + settings_.visibility_timeout;
  entry.invisible_until = invisible_until;
  const std::uint64_t receipt = entry.receipt;
  simulation_.trace().record(now, source_kinds::kQueueReceive, broker_.id(), entry.id, number, receipt);
  pending_expiries_.push_back(PendingExpiry{invisible_until, simulation_.reserve_timer_place(), number, receipt});
  arm_expiry();
  const auto changed = changed_payloads_.find(number);
  const std::uint32_t payload = changed == changed_payloads_.end() ? 0 : changed->second;
  return ReceiveResponse{Delivery{entry.id, number, receipt, entry.receive_count, invisible_until, payload}};
}

bool Queue::in_flight_under(std::uint64_t message, std::uint64_t receipt) const {
  if (message < first_entry_) return false;  // deleted (and dropped)
  const Entry& entry = entries_[static_cast<std::size_t>(message - first_entry_)];
  return entry.state == State::InFlight && entry.receipt == receipt;
}

void Queue::arm_expiry() {
  if (expiry_armed_) return;  // the armed one is the earliest: later receives expire later
  while (!pending_expiries_.empty() &&
         !in_flight_under(pending_expiries_.front().message, pending_expiries_.front().receipt)) {
    pending_expiries_.pop_front();
  }
  if (pending_expiries_.empty()) return;
  const PendingExpiry& next = pending_expiries_.front();
  expiry_armed_ = true;
  simulation_.at(next.at, next.place, [this] { run_armed_expiry(); });
}

void Queue::run_armed_expiry() {
  expiry_armed_ = false;
  const PendingExpiry due = pending_expiries_.front();
  pending_expiries_.pop_front();
  expire(due.message, due.receipt);  // nothing if deleted or received again since it was armed
  arm_expiry();
}

void Queue::expire(std::uint64_t message, std::uint64_t receipt) {
  if (!in_flight_under(message, receipt)) return;  // deleted or received again since
  Entry& entry = this->entry(message);
  entry.state = State::Visible;
  revisible_.insert(message);
  ++expiries_;
  simulation_.trace().record(simulation_.now(), source_kinds::kQueueVisible, broker_.id(), entry.id, message,
                             receipt);
  changed();
}

Queue::DeleteResult Queue::serve_delete(MessageId id, std::uint64_t message, std::uint64_t receipt) {
  if (message >= published_) throw std::out_of_range("Queue: delete of a message never published");
  DeleteResult result = DeleteResult::Stale;
  if (message < first_entry_) {
    result = DeleteResult::AlreadyDeleted;  // deleted, and dropped since
  } else {
    Entry& entry = this->entry(message);
    if (entry.state == State::Deleted) {
      result = DeleteResult::AlreadyDeleted;
    } else if (entry.receipt == receipt) {
      // The latest receipt deletes the message, also after its timeout expired if nobody received it again
      // (a visible message with a receipt was received before: it is in revisible_).
      if (entry.state == State::Visible) revisible_.erase(message);
      entry.state = State::Deleted;
      ++deleted_;
      result = DeleteResult::Deleted;
      while (!entries_.empty() && entries_.front().state == State::Deleted) {
        entries_.pop_front();
        ++first_entry_;
      }
    }
  }
  // `id` is the delivery's, which came from this message: the same as the entry's.
  simulation_.trace().record(simulation_.now(), source_kinds::kQueueDelete, broker_.id(), id, message,
                             static_cast<std::uint64_t>(result));
  return result;
}

std::optional<Queue::ReceiveResponse> Queue::poll() {
  Queue* self = this;
  return network_.call(service_, [self] { return self->serve_receive(); }, settings_.rpc_timeout, 0);
}

// A long poll: each message that becomes visible wakes one sleeping receiver, or, when none sleeps, leaves a claim
// that the next empty poll takes to poll again (if anything is still visible) instead of sleeping. So every newly
// visible message gets at least one poll after it, and no more than one: re-polling whenever anything had changed
// during the poll made receivers spin while messages arrived, O(consumers) polls per message (16,000 consumers:
// 408 s for 20,000 messages).
Queue::AfterPoll Queue::after_poll(const std::optional<ReceiveResponse>& response, sim::Time deadline) {
  if (response.has_value() && response->delivery.has_value()) return AfterPoll::Delivered;
  if (simulation_.now() >= deadline) return AfterPoll::DeadlinePassed;
  if (!response.has_value()) return AfterPoll::PollAgain;  // lost or partitioned: the failed call took rpc_timeout
  if (unclaimed_ > 0) {
    --unclaimed_;
    if (has_visible()) return AfterPoll::PollAgain;
  }
  return AfterPoll::Sleep;
}

Delivery Queue::delivered(const Delivery& delivery) {
  ++ledger_.deliveries;
  simulation_.trace().record(simulation_.now(), source_kinds::kQueueDeliver, simulation_.this_node().id(),
                             delivery.id, delivery.message, delivery.receive_count);
  return delivery;
}

std::optional<Delivery> Queue::receive(sim::Time deadline) {
  while (true) {
    const std::optional<ReceiveResponse> response = poll();
    switch (after_poll(response, deadline)) {
      case AfterPoll::Delivered: return delivered(*response->delivery);
      case AfterPoll::DeadlinePassed: return std::nullopt;
      case AfterPoll::PollAgain: continue;
      case AfterPoll::Sleep: changed_.wait(deadline); continue;
    }
  }
}

bool Queue::receive_or_then(sim::Time deadline, std::optional<Delivery>& received, ReceiveThen then) {
  return run_receive(std::make_shared<Receiving>(Receiving{deadline, std::move(then)}), std::nullopt, received);
}

bool Queue::run_receive(const std::shared_ptr<Receiving>& receiving, std::optional<std::optional<ReceiveResponse>> polled,
                        std::optional<Delivery>& received) {
  Queue* self = this;
  while (true) {
    if (!polled.has_value()) {
      std::optional<ReceiveResponse> instant = network_.call_or_then(
          service_, [self] { return self->serve_receive(); }, settings_.rpc_timeout, 0,
          [self, receiving](std::optional<ReceiveResponse> response) {
            self->resume_receive(receiving, std::optional<std::optional<ReceiveResponse>>(std::in_place, std::move(response)));
          });
      if (!instant.has_value()) return false;
      polled.emplace(std::move(instant));
    }
    const std::optional<ReceiveResponse> response = std::move(*polled);
    polled.reset();
    switch (after_poll(response, receiving->deadline)) {
      case AfterPoll::Delivered: received = delivered(*response->delivery); return true;
      case AfterPoll::DeadlinePassed: received.reset(); return true;
      case AfterPoll::PollAgain: continue;
      case AfterPoll::Sleep:
        if (changed_.wait_then(receiving->deadline,
                               [self, receiving](bool) { self->resume_receive(receiving, std::nullopt); })) {
          return false;
        }
        continue;
    }
  }
}

void Queue::resume_receive(const std::shared_ptr<Receiving>& receiving,
                           std::optional<std::optional<ReceiveResponse>> polled) {
  std::optional<Delivery> received;
  if (run_receive(receiving, std::move(polled), received)) receiving->then(std::move(received));
}

bool Queue::acknowledge(const Delivery& delivery) {
  Queue* self = this;
  const MessageId id = delivery.id;
  const std::uint64_t message = delivery.message;
  const std::uint64_t receipt = delivery.receipt;
  const std::optional<DeleteResult> response = network_.call(
      service_, [self, id, message, receipt] { return self->serve_delete(id, message, receipt); },
      settings_.rpc_timeout, id);
  return response.has_value() && *response != DeleteResult::Stale;
}

// ======================================================================== QueueSource

QueueSource::QueueSource(const SourceContext& context) : workers_(context.workers) {
  const std::size_t processors = context.config.topology.processors.size();
  for (std::size_t p = 0; p < processors; ++p) {
    queues_.push_back(std::make_unique<Queue>(context.simulation, context.network, context.broker,
                                              QueueSettings::from(context.config, static_cast<std::uint32_t>(p)),
                                              context.ledger));
  }
}

void QueueSource::publish(MessageId id, std::uint32_t payload) {
  for (auto& queue : queues_) queue->publish(id, payload);
}

void QueueSource::consume(SourceWorker& worker) {
  serve(*queues_[workers_[worker.index()].processor], worker.shared(), std::nullopt);
}

void QueueSource::serve(Queue& queue, const std::shared_ptr<SourceWorker>& worker,
                        std::optional<std::optional<Delivery>> received) {
  // A long poll (a 100 ms re-poll made 100,000 idle consumers cost two million RPCs per simulated second), waited
  // for without the worker's stack: an idle consumer is a slot and its state, not a parked fiber.
  constexpr sim::Duration kLongPoll = 20 * sim::kSecond;
  QueueSource* self = this;
  Queue* from = &queue;
  while (true) {
    if (!received.has_value()) {
      std::optional<Delivery> delivery;
      const bool finished =
          queue.receive_or_then(sim::now() + kLongPoll, delivery, [self, from, worker](std::optional<Delivery> got) {
            self->serve(*from, worker, std::optional<std::optional<Delivery>>(std::in_place, std::move(got)));
          });
      if (!finished) return;
      received.emplace(std::move(delivery));
    }
    const std::optional<Delivery> delivery = std::move(*received);
    received.reset();
    if (!delivery) continue;
    if (!worker->handle(delivery->id, delivery->payload).ok) continue;  // not deleted: redelivered after the visibility timeout
    worker->before_ack(delivery->id);
    const bool acknowledged = queue.acknowledge(*delivery);
    worker->acknowledged(delivery->id, acknowledged);
  }
}

bool QueueSource::drained() const {
  for (const auto& queue : queues_) {
    if (!queue->drained()) return false;
  }
  return true;
}

void QueueSource::account_due_after(Ledger& ledger, sim::Time end) const {
  // A copy whose consumer is still at work when the run ends is that consumer's (counted unanswered): it comes back
  // only if the consumer does not delete it in time.
  std::set<std::pair<MessageId, ProcessorId>> held;
  ledger.attempts.for_each([&held](const AttemptRecord& a) {
    if (a.at_work()) held.emplace(a.id, a.processor);
  });
  for (std::size_t p = 0; p < queues_.size(); ++p) {
    queues_[p]->for_each_due_after(end, [&](MessageId id, sim::Time due) {
      if (held.contains({id, static_cast<ProcessorId>(p)})) return;
      ++ledger.undelivered;
      ledger.undelivered_latest = std::max(ledger.undelivered_latest, due);
      sim::Time& latest = ledger.due_after_end[{id, static_cast<ProcessorId>(p)}];
      latest = std::max(latest, due);
    });
  }
}

void register_queue_source(SourceRegistry& registry) {
  registry.add("queue", SourceEntry{WorkerLayout::PerProcessor,
                                    [](const SourceContext& context) { return std::make_unique<QueueSource>(context); },
                                    true});
}

}  // namespace lethe
