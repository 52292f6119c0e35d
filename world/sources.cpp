#include "world/sources.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace lethe {
namespace {

void require(bool condition, const char* message) {
  if (!condition) throw std::invalid_argument(message);
}

std::uint64_t pack(std::uint64_t high, std::uint64_t low) { return (high << 32) | (low & 0xffffffffull); }

sim::Service zero_time_service(sim::Node& node) { return sim::Service{&node, sim::Distribution{}, false, 0}; }

// Removes `tag`'s pending entry when the waiting try ends, also when it unwinds on a crash.
struct PendingGuard {
  std::map<std::uint64_t, sim::Channel<std::uint64_t>>& pending;
  std::uint64_t tag;
  ~PendingGuard() { pending.erase(tag); }
};

}  // namespace

// ======================================================================== Queue

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
  require(settings_.visibility_timeout > 0, "Queue: visibility_timeout must be > 0");
  require(settings_.rpc_timeout > 0, "Queue: rpc_timeout must be > 0");
}

std::uint64_t Queue::publish(MessageId id) {
  const std::uint64_t number = published_++;
  entries_.push_back(Entry{id, 0, 0, State::Visible});
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
  const std::uint64_t receipt = entry.receipt;
  simulation_.trace().record(now, source_kinds::kQueueReceive, broker_.id(), entry.id, number, receipt);
  simulation_.at(invisible_until, [this, number, receipt] { expire(number, receipt); });
  return ReceiveResponse{Delivery{entry.id, number, receipt, entry.receive_count, invisible_until}};
}

void Queue::expire(std::uint64_t message, std::uint64_t receipt) {
  if (message < first_entry_) return;  // deleted (and dropped)
  Entry& entry = this->entry(message);
  if (entry.state != State::InFlight || entry.receipt != receipt) return;  // deleted or received again since
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

std::optional<Delivery> Queue::receive(sim::Time deadline) {
  Queue* self = this;
  while (true) {
    const std::optional<ReceiveResponse> response =
        network_.call(service_, [self] { return self->serve_receive(); }, settings_.rpc_timeout, 0);
    if (response.has_value() && response->delivery.has_value()) {
      const Delivery& delivery = *response->delivery;
      ++ledger_.deliveries;
      simulation_.trace().record(simulation_.now(), source_kinds::kQueueDeliver, simulation_.this_node().id(),
                                 delivery.id, delivery.message, delivery.receive_count);
      return delivery;
    }
    if (simulation_.now() >= deadline) return std::nullopt;
    if (!response.has_value()) continue;        // lost or partitioned: the failed call already took rpc_timeout
    // A long poll: each message that becomes visible wakes one sleeping receiver, or, when none sleeps, leaves
    // a claim that the next empty poll takes to poll again (if anything is still visible) instead of sleeping.
    // So every newly visible message gets at least one poll after it, and no more than one: re-polling
    // whenever anything had changed during the poll made receivers spin while messages arrived, O(consumers)
    // polls per message (16,000 consumers: 408 s for 20,000 messages).
    if (unclaimed_ > 0) {
      --unclaimed_;
      if (has_visible()) continue;
    }
    changed_.wait(deadline);
  }
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

// ======================================================================== Kafka

KafkaSettings KafkaSettings::from(const ScenarioConfig& config) {
  KafkaSettings settings;
  settings.partitions = config.topology.partitions;
  settings.partitioner = config.topology.partitioner;
  settings.commit = config.topology.commit;
  settings.processors = static_cast<int>(config.topology.processors.size());
  settings.rpc_timeout = config.network.rpc_timeout;
  return settings;
}

Kafka::Kafka(sim::Simulation& simulation, sim::Network& network, sim::Node& broker, KafkaSettings settings,
             Ledger& ledger, sim::Rng rng)
    : simulation_(simulation),
      network_(network),
      broker_(broker),
      settings_(settings),
      ledger_(ledger),
      rng_(rng),
      service_(zero_time_service(broker)) {
  require(settings_.partitions >= 1, "Kafka: partitions must be >= 1");
  require(settings_.processors >= 1, "Kafka: processors must be >= 1");
  require(settings_.rpc_timeout > 0, "Kafka: rpc_timeout must be > 0");
  require(settings_.commit.mode != CommitMode::Interval || settings_.commit.interval > 0,
          "Kafka: a commit interval must be > 0");
  logs_.resize(static_cast<std::size_t>(settings_.partitions));
  for (int processor = 0; processor < settings_.processors; ++processor) {
    groups_.push_back(std::make_unique<ConsumerGroup>(*this, static_cast<ProcessorId>(processor)));
  }
}

int Kafka::partition_for_key(MessageId id, int partitions) {
  require(partitions >= 1, "Kafka::partition_for_key: partitions must be >= 1");
  std::uint64_t state = id;
  return static_cast<int>(sim::splitmix64(state) % static_cast<std::uint64_t>(partitions));
}

KafkaAppend Kafka::publish(MessageId id) {
  const int partition = settings_.partitioner == Partitioner::Key
                            ? partition_for_key(id, settings_.partitions)
                            : static_cast<int>(rng_.below(static_cast<std::uint64_t>(settings_.partitions)));
  std::vector<MessageId>& log = logs_[static_cast<std::size_t>(partition)];
  const auto offset = static_cast<std::int64_t>(log.size());
  log.push_back(id);
  ++records_;
  simulation_.trace().record(simulation_.now(), source_kinds::kKafkaAppend, broker_.id(), id,
                             static_cast<std::uint64_t>(partition), static_cast<std::uint64_t>(offset));
  for (const auto& group : groups_) {
    const int owner = group->owner_[static_cast<std::size_t>(partition)];
    if (owner >= 0) group->notify(owner);
  }
  return KafkaAppend{partition, offset};
}

ConsumerGroup& Kafka::group(ProcessorId processor) {
  require(processor < groups_.size(), "Kafka::group: no such processor");
  return *groups_[processor];
}

const ConsumerGroup& Kafka::group(ProcessorId processor) const {
  require(processor < groups_.size(), "Kafka::group: no such processor");
  return *groups_[processor];
}

const std::vector<MessageId>& Kafka::log(int partition) const {
  require(partition >= 0 && partition < settings_.partitions, "Kafka::log: no such partition");
  return logs_[static_cast<std::size_t>(partition)];
}

bool Kafka::drained() const {
  return std::all_of(groups_.begin(), groups_.end(), [](const auto& group) { return group->drained(); });
}

// ------------------------------------------------------------------------ ConsumerGroup: coordinator

ConsumerGroup::ConsumerGroup(Kafka& kafka, ProcessorId processor)
    : kafka_(kafka),
      processor_(processor),
      owner_(static_cast<std::size_t>(kafka.settings_.partitions), -1),
      committed_(static_cast<std::size_t>(kafka.settings_.partitions), 0),
      high_water_(static_cast<std::size_t>(kafka.settings_.partitions), 0) {}

void ConsumerGroup::check_partition(int partition) const {
  require(partition >= 0 && partition < kafka_.settings_.partitions, "ConsumerGroup: no such partition");
}

int ConsumerGroup::owner(int partition) const {
  check_partition(partition);
  return owner_[static_cast<std::size_t>(partition)];
}

std::int64_t ConsumerGroup::committed(int partition) const {
  check_partition(partition);
  return committed_[static_cast<std::size_t>(partition)];
}

std::vector<int> ConsumerGroup::assignment(int member) const {
  std::vector<int> partitions;
  for (std::size_t p = 0; p < owner_.size(); ++p) {
    if (owner_[p] == member) partitions.push_back(static_cast<int>(p));
  }
  return partitions;
}

bool ConsumerGroup::drained() const {
  for (std::size_t p = 0; p < committed_.size(); ++p) {
    if (committed_[p] != kafka_.end_offset(static_cast<int>(p))) return false;
  }
  return true;
}

void ConsumerGroup::join(int member) {
  require(member >= 0, "ConsumerGroup::join: member must be >= 0");
  members_.insert(member);
  bump();
}

void ConsumerGroup::leave(int member) {
  require(member >= 0, "ConsumerGroup::leave: member must be >= 0");
  if (members_.erase(member) == 0) return;
  bump();
}

void ConsumerGroup::rebalance() { bump(); }

// A new generation with the range assignment over the live members.
void ConsumerGroup::bump() {
  ++generation_;
  std::fill(owner_.begin(), owner_.end(), -1);
  const std::size_t partitions = owner_.size();
  const std::size_t count = members_.size();
  if (count > 0) {
    const std::size_t each = partitions / count;
    const std::size_t extra = partitions % count;
    std::size_t next = 0;
    std::size_t rank = 0;
    for (int member : members_) {
      const std::size_t share = each + (rank < extra ? 1 : 0);
      for (std::size_t i = 0; i < share; ++i) owner_[next++] = member;
      ++rank;
    }
  }
  sim::Simulation& simulation = kafka_.simulation_;
  simulation.trace().record(simulation.now(), source_kinds::kKafkaRebalance, kafka_.broker_.id(), processor_,
                            generation_, count);
  notify_all();
}

void ConsumerGroup::notify(int member) {
  ++member_version_[member];
  sim::Simulation& simulation = kafka_.simulation_;
  std::vector<Waiter> keep;
  for (const Waiter& waiter : waiters_) {
    if (waiter.member == member) {
      simulation.wake(waiter.waker);
    } else if (simulation.waiting(waiter.waker)) {
      keep.push_back(waiter);
    }
  }
  waiters_.swap(keep);
}

void ConsumerGroup::notify_all() {
  ++group_version_;
  sim::Simulation& simulation = kafka_.simulation_;
  std::vector<Waiter> waiters;
  waiters.swap(waiters_);
  for (const Waiter& waiter : waiters) simulation.wake(waiter.waker);
}

std::uint64_t ConsumerGroup::wake_version(int member) const {
  auto found = member_version_.find(member);
  return group_version_ + (found == member_version_.end() ? 0 : found->second);
}

void ConsumerGroup::wait(int member, sim::Time deadline) {
  sim::Simulation& simulation = kafka_.simulation_;
  if (simulation.now() >= deadline) return;
  std::erase_if(waiters_, [&simulation](const Waiter& waiter) { return !simulation.waiting(waiter.waker); });
  waiters_.push_back(Waiter{member, simulation.waker()});
  simulation.park(deadline);
}

ConsumerGroup::FetchResponse ConsumerGroup::serve_fetch(
    int member, std::uint64_t generation, const std::vector<std::pair<int, std::int64_t>>& candidates) const {
  FetchResponse response;
  response.generation = generation_;
  if (!is_member(member)) {
    response.kind = FetchKind::NotMember;
    return response;
  }
  if (generation != generation_) {
    response.kind = FetchKind::Sync;
    for (int partition : assignment(member)) {
      response.assignment.emplace_back(partition, committed_[static_cast<std::size_t>(partition)]);
    }
    return response;
  }
  for (const auto& [partition, position] : candidates) {
    const std::vector<MessageId>& log = kafka_.log(partition);
    if (position >= 0 && position < static_cast<std::int64_t>(log.size())) {
      response.kind = FetchKind::Record;
      response.record = KafkaRecord{partition, position, log[static_cast<std::size_t>(position)], generation_};
      return response;
    }
  }
  response.kind = FetchKind::Empty;
  return response;
}

bool ConsumerGroup::serve_commit(int member, std::uint64_t generation,
                                 const std::vector<std::pair<int, std::int64_t>>& offsets) {
  sim::Simulation& simulation = kafka_.simulation_;
  const bool current = is_member(member) && generation == generation_;
  bool accepted_all = true;
  for (const auto& [partition, next_offset] : offsets) {
    const auto p = static_cast<std::size_t>(partition);
    const bool accepted = current && owner_[p] == member;
    if (accepted) {
      committed_[p] = std::max(committed_[p], next_offset);
      ++accepted_commits_;
    } else {
      ++rejected_commits_;
      accepted_all = false;
    }
    simulation.trace().record(simulation.now(), source_kinds::kKafkaCommit, kafka_.broker_.id(),
                              pack(processor_, static_cast<std::uint64_t>(partition)),
                              static_cast<std::uint64_t>(next_offset), accepted ? 1 : 0);
  }
  return accepted_all;
}

// ------------------------------------------------------------------------ ConsumerGroup: member side

ConsumerGroup::MemberState& ConsumerGroup::member_state(int member) {
  require(member >= 0, "ConsumerGroup: member must be >= 0");
  sim::Node& node = kafka_.simulation_.this_node();
  MemberState& state = member_states_[member];
  if (!state.known || state.node != node.id() || state.incarnation != node.incarnation()) {
    state = MemberState{};
    state.known = true;
    state.node = node.id();
    state.incarnation = node.incarnation();
  }
  return state;
}

// The member's partitions that have no record out, with their positions, round-robin from next_cursor.
std::vector<std::pair<int, std::int64_t>> ConsumerGroup::fetch_candidates(const MemberState& state) {
  std::vector<std::pair<int, std::int64_t>> candidates;
  const std::size_t count = state.cursors.size();
  for (std::size_t k = 0; k < count; ++k) {
    const Cursor& cursor = state.cursors[(state.next_cursor + k) % count];
    if (!cursor.out) candidates.emplace_back(cursor.partition, cursor.position);
  }
  return candidates;
}

// Adopts a generation: every position from the group's committed offset, nothing out, nothing pending
// (no commit on revocation). Generation 0 with no partitions: not a member.
void ConsumerGroup::sync(MemberState& state, std::uint64_t generation,
                         const std::vector<std::pair<int, std::int64_t>>& assignment) {
  state.generation = generation;
  state.cursors.clear();
  for (const auto& [partition, committed] : assignment) state.cursors.push_back(Cursor{partition, committed, false, 0});
  state.next_cursor = 0;
  state.finished.clear();
}

void ConsumerGroup::delivered(const KafkaRecord& record) {
  sim::Simulation& simulation = kafka_.simulation_;
  std::int64_t& high_water = high_water_[static_cast<std::size_t>(record.partition)];
  if (record.offset < high_water) ++replays_;
  high_water = std::max(high_water, record.offset + 1);
  ++kafka_.ledger_.deliveries;
  simulation.trace().record(simulation.now(), source_kinds::kKafkaDeliver, simulation.this_node().id(), record.id,
                            pack(processor_, static_cast<std::uint64_t>(record.partition)),
                            static_cast<std::uint64_t>(record.offset));
}

bool ConsumerGroup::accept(MemberState& state, const KafkaRecord& record) {
  if (record.generation != state.generation) return false;
  for (std::size_t i = 0; i < state.cursors.size(); ++i) {
    Cursor& cursor = state.cursors[i];
    if (cursor.partition != record.partition) continue;
    if (cursor.out || cursor.position != record.offset) return false;  // another fiber of the member took it
    cursor.out = true;
    cursor.out_offset = record.offset;
    cursor.position = record.offset + 1;
    state.next_cursor = (i + 1) % state.cursors.size();
    return true;
  }
  return false;
}

bool ConsumerGroup::finish(int member, MemberState& state, const KafkaRecord& record, bool rewind) {
  if (record.generation != state.generation) return false;
  for (Cursor& cursor : state.cursors) {
    if (cursor.partition != record.partition) continue;
    if (!cursor.out || cursor.out_offset != record.offset) return false;
    cursor.out = false;
    if (rewind) cursor.position = record.offset;
    notify(member);  // another fiber of this member may wait for the partition
    return true;
  }
  return false;
}

// Sends the member's finished-but-uncommitted offsets when they are due: interval mode every
// commit.interval; after-each mode only offsets whose own commit got no answer, retried at the next poll.
void ConsumerGroup::commit_pending(int member, MemberState& state) {
  const sim::Time now = kafka_.simulation_.now();
  const bool interval_mode = kafka_.settings_.commit.mode == CommitMode::Interval;
  if (interval_mode && state.next_commit_at == 0) state.next_commit_at = now + kafka_.settings_.commit.interval;
  if (now < state.next_commit_at) return;
  if (interval_mode) state.next_commit_at = now + kafka_.settings_.commit.interval;
  if (state.finished.empty()) return;
  const std::vector<std::pair<int, std::int64_t>> offsets(state.finished.begin(), state.finished.end());
  const std::uint64_t generation = state.generation;
  ConsumerGroup* self = this;
  const std::optional<bool> accepted = kafka_.network_.call(
      kafka_.service_, [self, member, generation, offsets] { return self->serve_commit(member, generation, offsets); },
      kafka_.settings_.rpc_timeout, 0);
  if (!accepted.has_value()) {
    // Outcome unknown: keep them. after-each retries one rpc_timeout later, interval at the next interval.
    if (!interval_mode) state.next_commit_at = kafka_.simulation_.now() + kafka_.settings_.rpc_timeout;
    return;
  }
  // Accepted, or rejected for good (a rejection means the generation moved on: the next sync drops them anyway).
  for (const auto& [partition, next_offset] : offsets) {
    auto found = state.finished.find(partition);
    if (found != state.finished.end() && found->second == next_offset) state.finished.erase(found);
  }
}

std::optional<KafkaRecord> ConsumerGroup::poll(int member, sim::Time deadline) {
  sim::Simulation& simulation = kafka_.simulation_;
  ConsumerGroup* self = this;
  while (true) {
    MemberState& state = member_state(member);
    commit_pending(member, state);
    const std::uint64_t seen_version = wake_version(member);
    const std::vector<std::pair<int, std::int64_t>> candidates = fetch_candidates(state);
    const std::uint64_t generation = state.generation;
    // A member that knows its assignment and has every partition out has nothing to ask for.
    const bool ask = generation == 0 || !candidates.empty() || generation != generation_;
    std::optional<FetchResponse> response;
    if (ask) {
      response = kafka_.network_.call(
          kafka_.service_,
          [self, member, generation, candidates] { return self->serve_fetch(member, generation, candidates); },
          kafka_.settings_.rpc_timeout, 0);
    }
    if (response.has_value()) {
      switch (response->kind) {
        case FetchKind::Record:
          if (accept(state, response->record)) {
            delivered(response->record);
            return response->record;
          }
          continue;  // stale: another fiber of the member took it; fetch again
        case FetchKind::Sync:
          // Generations only grow: a sync answered before a newer one (another fiber's) is ignored.
          if (response->generation > state.generation) sync(state, response->generation, response->assignment);
          continue;
        case FetchKind::NotMember:
          if (response->generation >= state.generation) sync(state, 0, {});
          break;
        case FetchKind::Empty:
          break;
      }
    }
    if (simulation.now() >= deadline) return std::nullopt;
    if (ask && !response.has_value()) continue;  // the failed call already took rpc_timeout
    if (wake_version(member) != seen_version) continue;  // woken while the fetch was in flight
    sim::Time wake_at = deadline;
    if (!state.finished.empty()) wake_at = std::min(wake_at, std::max(state.next_commit_at, simulation.now() + 1));
    wait(member, wake_at);
  }
}

bool ConsumerGroup::commit(int member, const KafkaRecord& record) {
  check_partition(record.partition);
  MemberState& state = member_state(member);
  const bool current = finish(member, state, record, /*rewind=*/false);
  if (kafka_.settings_.commit.mode == CommitMode::Interval) {
    if (!current) return false;
    std::int64_t& next_offset = state.finished[record.partition];
    next_offset = std::max(next_offset, record.offset + 1);
    return true;
  }
  ConsumerGroup* self = this;
  const std::uint64_t generation = record.generation;
  const std::int64_t next_offset = record.offset + 1;
  const std::vector<std::pair<int, std::int64_t>> offsets{{record.partition, next_offset}};
  const std::optional<bool> accepted = kafka_.network_.call(
      kafka_.service_, [self, member, generation, offsets] { return self->serve_commit(member, generation, offsets); },
      kafka_.settings_.rpc_timeout, record.id);
  auto pending = state.finished.find(record.partition);
  if (accepted.has_value()) {
    // A later offset covers an earlier unconfirmed one.
    if (*accepted && pending != state.finished.end() && pending->second <= next_offset) state.finished.erase(pending);
    return *accepted;
  }
  // No answer: the commit may or may not have landed. The member's next poll retries it.
  if (current && state.generation == generation) {
    std::int64_t& retry = state.finished[record.partition];
    retry = std::max(retry, next_offset);
    state.next_commit_at = kafka_.simulation_.now();
  }
  return false;
}

void ConsumerGroup::release(int member, const KafkaRecord& record) {
  check_partition(record.partition);
  MemberState& state = member_state(member);
  finish(member, state, record, /*rewind=*/true);
}

// ======================================================================== ClientsSource

ClientsSource::ClientsSource(sim::Simulation& simulation, sim::Network& network, std::vector<sim::Node*> workers,
                             ClientsSettings settings, std::vector<MessageId> ids, Ledger& ledger, sim::Rng rng)
    : simulation_(simulation),
      network_(network),
      workers_(std::move(workers)),
      settings_(settings),
      ledger_(ledger),
      mailboxes_(workers_.size()) {
  require(settings_.clients >= 1, "ClientsSource: clients must be >= 1");
  require(settings_.rate_per_second > 0.0 && std::isfinite(settings_.rate_per_second),
          "ClientsSource: rate_per_second must be finite and > 0");
  require(settings_.timeout > 0, "ClientsSource: timeout must be > 0");
  require(settings_.retries >= 0, "ClientsSource: retries must be >= 0");
  require(!workers_.empty(), "ClientsSource: no workers");
  for (const sim::Node* worker : workers_) require(worker != nullptr, "ClientsSource: null worker node");
  RetryPolicy check(settings_.backoff, settings_.jitter);  // validates the backoff (throws on a bad one)
  (void)check;
  for (int i = 0; i < settings_.clients; ++i) {
    const std::string name = "client-" + std::to_string(i);
    auto client = std::make_unique<Client>(Client{&simulation_.add_node(name, "clients"),
                                                  rng.derive(name + "/arrivals"), rng.derive(name + "/routing"),
                                                  rng.derive(name + "/jitter"), ClientStats{}, {}, {}, 1});
    clients_.push_back(std::move(client));
  }
  outcomes_.reserve(ids.size());
  for (std::size_t k = 0; k < ids.size(); ++k) {
    const auto client = static_cast<std::uint32_t>(k % clients_.size());
    RequestOutcome outcome;
    outcome.id = ids[k];
    outcome.client = client;
    outcomes_.push_back(outcome);
    clients_[client]->share.push_back(k);
  }
}

void ClientsSource::start() {
  require(!started_, "ClientsSource::start: already started");
  started_ = true;
  for (std::size_t i = 0; i < clients_.size(); ++i) {
    const auto client = static_cast<std::uint32_t>(i);
    clients_[i]->node->set_main([this, client] { run_client(client); });
    clients_[i]->node->start();
  }
}

void ClientsSource::run_client(std::uint32_t client_index) {
  Client& client = *clients_[client_index];
  const double mean_gap_ns = static_cast<double>(sim::kSecond) / settings_.rate_per_second;
  for (std::size_t outcome : client.share) {
    const double gap = std::round(client.arrivals.exponential(mean_gap_ns));
    sim::sleep(gap >= static_cast<double>(sim::kTimeMax / 2) ? sim::kTimeMax / 2 : static_cast<sim::Duration>(gap));
    client.node->spawn([this, client_index, outcome] { run_request(client_index, outcome); });
  }
}

std::uint32_t ClientsSource::choose_worker(Client& client, MessageId id) {
  const auto count = static_cast<std::uint64_t>(workers_.size());
  if (settings_.worker_choice == WorkerChoice::ById) return static_cast<std::uint32_t>(id % count);
  return static_cast<std::uint32_t>(client.routing.below(count));
}

void ClientsSource::run_request(std::uint32_t client_index, std::size_t outcome_index) {
  Client& client = *clients_[client_index];
  RequestOutcome& outcome = outcomes_[outcome_index];
  sim::Node& node = *client.node;
  RetryPolicy policy(settings_.backoff, settings_.jitter);
  outcome.started_at = simulation_.now();
  ++client.stats.requests;
  const int tries = settings_.retries + 1;
  for (int try_number = 1; try_number <= tries; ++try_number) {
    if (try_number > 1) {
      const sim::Duration backoff_ns = policy.delay(try_number - 1, client.jitter);
      ++client.stats.retries;
      simulation_.trace().record(simulation_.now(), source_kinds::kClientRetry, node.id(), outcome.id,
                                 static_cast<std::uint64_t>(try_number - 1), static_cast<std::uint64_t>(backoff_ns));
      sim::sleep(backoff_ns);
    }
    const std::uint32_t worker = choose_worker(client, outcome.id);
    const std::uint64_t tag = pack(client_index + 1u, client.next_tag++);
    const Request request{outcome.id, client_index, worker, static_cast<std::uint32_t>(try_number), tag,
                          simulation_.now()};
    client.pending.try_emplace(tag);
    const PendingGuard guard{client.pending, tag};
    outcome.tries = static_cast<std::uint32_t>(try_number);
    simulation_.trace().record(simulation_.now(), source_kinds::kClientSend, node.id(), outcome.id, tag,
                               pack(worker, static_cast<std::uint64_t>(try_number)));
    network_.send(node, *workers_[worker], [this, request] { arrive_request(request); }, outcome.id);
    const std::optional<std::uint64_t> value = client.pending.at(tag).pop_until(simulation_.now() + settings_.timeout);
    if (value.has_value()) {
      ++client.stats.successes;
      outcome.finished = true;
      outcome.succeeded = true;
      outcome.value = *value;
      outcome.finished_at = simulation_.now();
      ++finished_;
      simulation_.trace().record(simulation_.now(), source_kinds::kClientOk, node.id(), outcome.id,
                                 static_cast<std::uint64_t>(try_number), *value);
      return;
    }
  }
  ++client.stats.gave_up;
  outcome.finished = true;
  outcome.finished_at = simulation_.now();
  ++finished_;
  simulation_.trace().record(simulation_.now(), source_kinds::kClientGiveUp, node.id(), outcome.id,
                             static_cast<std::uint64_t>(tries));
}

void ClientsSource::arrive_request(const Request& request) {
  mailboxes_[request.worker].push(Queued{request, workers_[request.worker]->incarnation()});
}

std::optional<Request> ClientsSource::next_request(int worker, sim::Time deadline) {
  require(worker >= 0 && static_cast<std::size_t>(worker) < workers_.size(), "ClientsSource: no such worker");
  const auto index = static_cast<std::size_t>(worker);
  sim::Node& node = *workers_[index];
  while (true) {
    std::optional<Queued> queued = mailboxes_[index].pop_until(deadline);
    if (!queued.has_value()) return std::nullopt;
    if (queued->incarnation != node.incarnation()) continue;  // queued at an incarnation that crashed
    const Request& request = queued->request;
    ++ledger_.deliveries;
    simulation_.trace().record(simulation_.now(), source_kinds::kRequestDeliver, node.id(), request.id, request.tag,
                               request.client);
    return request;
  }
}

void ClientsSource::respond(const Request& request, std::uint64_t value) {
  require(request.worker < workers_.size() && request.client < clients_.size(), "ClientsSource::respond: bad request");
  const std::uint32_t client = request.client;
  const std::uint64_t tag = request.tag;
  network_.send(*workers_[request.worker], *clients_[client]->node,
                [this, client, tag, value] { arrive_response(client, tag, value); }, request.id);
}

void ClientsSource::arrive_response(std::uint32_t client_index, std::uint64_t tag, std::uint64_t value) {
  Client& client = *clients_[client_index];
  auto found = client.pending.find(tag);
  if (found == client.pending.end()) {
    ++client.stats.late_responses;
    return;
  }
  found->second.push(value);
}

const ClientStats& ClientsSource::stats(int client) const {
  require(client >= 0 && static_cast<std::size_t>(client) < clients_.size(), "ClientsSource: no such client");
  return clients_[static_cast<std::size_t>(client)]->stats;
}

ClientStats ClientsSource::totals() const {
  ClientStats total;
  for (const auto& client : clients_) {
    total.requests += client->stats.requests;
    total.retries += client->stats.retries;
    total.successes += client->stats.successes;
    total.gave_up += client->stats.gave_up;
    total.late_responses += client->stats.late_responses;
  }
  return total;
}

sim::Node& ClientsSource::client_node(int client) {
  require(client >= 0 && static_cast<std::size_t>(client) < clients_.size(), "ClientsSource: no such client");
  return *clients_[static_cast<std::size_t>(client)]->node;
}

}  // namespace lethe
