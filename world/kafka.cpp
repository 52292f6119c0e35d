#include "world/kafka.hpp"

#include <algorithm>
#include <stdexcept>

#include "world/counterfactual.hpp"
#include "world/source_support.hpp"
#include "sim/assert.hpp"
#include "sim/node.hpp"

namespace lethe {

using source_support::pack;
using source_support::zero_time_service;


KafkaSettings KafkaSettings::from(const ScenarioConfig& config) {
  KafkaSettings settings;
  settings.partitions = config.topology.partitions;
  settings.partitioner = config.topology.partitioner;
  settings.commit = config.topology.commit;
  settings.processors = static_cast<int>(config.topology.processors.size());
  settings.rpc_timeout = config.network.rpc_timeout;
  settings.session_timeout = config.topology.session_timeout;
  settings.max_poll_interval = config.topology.max_poll_interval;
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
  LETHE_ASSERT(settings_.partitions >= 1, "Kafka: partitions must be >= 1");
  LETHE_ASSERT(settings_.processors >= 1, "Kafka: processors must be >= 1");
  LETHE_ASSERT(settings_.rpc_timeout > 0, "Kafka: rpc_timeout must be > 0");
  LETHE_ASSERT(settings_.session_timeout > 0, "Kafka: session_timeout must be > 0");
  LETHE_ASSERT(settings_.max_poll_interval > 0, "Kafka: max_poll_interval must be > 0");
  LETHE_ASSERT(settings_.commit.mode != CommitMode::Interval || settings_.commit.interval > 0,
          "Kafka: a commit interval must be > 0");
  logs_.resize(static_cast<std::size_t>(settings_.partitions));
  for (int processor = 0; processor < settings_.processors; ++processor) {
    groups_.push_back(std::make_unique<ConsumerGroup>(*this, static_cast<ProcessorId>(processor)));
  }
}

int Kafka::partition_for_key(MessageId id, int partitions) {
  LETHE_ASSERT(partitions >= 1, "Kafka::partition_for_key: partitions must be >= 1");
  std::uint64_t state = id;
  return static_cast<int>(sim::splitmix64(state) % static_cast<std::uint64_t>(partitions));
}

std::uint32_t Kafka::payload(int partition, std::int64_t offset) const {
  const auto changed = changed_payloads_.find({partition, offset});
  return changed == changed_payloads_.end() ? 0 : changed->second;
}

KafkaAppend Kafka::publish(MessageId id, std::uint32_t payload) {
  const int partition = settings_.partitioner == Partitioner::ByKey
                            ? partition_for_key(id, settings_.partitions)
                            : static_cast<int>(rng_.below(static_cast<std::uint64_t>(settings_.partitions)));
  std::vector<MessageId>& log = logs_[static_cast<std::size_t>(partition)];
  const auto offset = static_cast<std::int64_t>(log.size());
  log.push_back(id);
  if (payload != 0) changed_payloads_.emplace(std::pair{partition, offset}, payload);
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
  LETHE_ASSERT(processor < groups_.size(), "Kafka::group: no such processor");
  return *groups_[processor];
}

const ConsumerGroup& Kafka::group(ProcessorId processor) const {
  LETHE_ASSERT(processor < groups_.size(), "Kafka::group: no such processor");
  return *groups_[processor];
}

const std::vector<MessageId>& Kafka::log(int partition) const {
  LETHE_ASSERT(partition >= 0 && partition < settings_.partitions, "Kafka::log: no such partition");
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
  LETHE_ASSERT(partition >= 0 && partition < kafka_.settings_.partitions, "ConsumerGroup: no such partition");
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
  const auto range = ranges_.find(member);
  if (range == ranges_.end()) return partitions;
  for (std::size_t p = range->second.first; p < range->second.second; ++p) partitions.push_back(static_cast<int>(p));
  return partitions;
}

bool ConsumerGroup::drained() const {
  for (std::size_t p = 0; p < committed_.size(); ++p) {
    if (committed_[p] != kafka_.end_offset(static_cast<int>(p))) return false;
  }
  // A live member still processing a record the group has since committed past (a replay overtook it after a
  // rebalance) is not done: its effect and its failed commit are still to come.
  return !holds_record();
}

void ConsumerGroup::join(int member) {
  LETHE_ASSERT(member >= 0, "ConsumerGroup::join: member must be >= 0");
  members_.insert(member);
  removed_.erase(member);
  bump();
}

std::vector<MessageId> ConsumerGroup::held_by(int member) const {
  std::vector<MessageId> held;
  const auto found = member_states_.find(member);
  if (found == member_states_.end()) return held;
  for (const Cursor& cursor : found->second.cursors) {
    const std::vector<MessageId>& log = kafka_.log(cursor.partition);
    const std::int64_t end = std::min<std::int64_t>(cursor.position, static_cast<std::int64_t>(log.size()));
    for (std::int64_t offset = committed_[static_cast<std::size_t>(cursor.partition)]; offset < end; ++offset) {
      held.push_back(log[static_cast<std::size_t>(offset)]);
    }
  }
  std::sort(held.begin(), held.end());
  held.erase(std::unique(held.begin(), held.end()), held.end());
  return held;
}

std::vector<MessageId> ConsumerGroup::held_by_live_members() const {
  std::vector<MessageId> held;
  for (const int member : with_cursors_) {
    const MemberState& state = member_states_.at(member);
    const sim::Node& node = kafka_.simulation_.node(state.node);
    if (!state.known || !node.alive() || node.incarnation() != state.incarnation) continue;
    const std::vector<MessageId> own = held_by(member);
    held.insert(held.end(), own.begin(), own.end());
  }
  std::sort(held.begin(), held.end());
  held.erase(std::unique(held.begin(), held.end()), held.end());
  return held;
}

bool ConsumerGroup::holds_record() const {
  for (const int member : with_cursors_) {
    const MemberState& state = member_states_.at(member);
    const sim::Node& node = kafka_.simulation_.node(state.node);
    if (!state.known || !node.alive() || node.incarnation() != state.incarnation) continue;
    for (const Cursor& cursor : state.cursors) {
      if (cursor.out) return true;
    }
  }
  return false;
}

void ConsumerGroup::record_change(sim::NodeId node, RemovalReason reason, bool rejoin, sim::Time since,
                                  std::vector<MessageId> held) {
  sim::Simulation& simulation = kafka_.simulation_;
  kafka_.ledger_.member_removals.push_back(
      MemberRemoval{processor_, node, reason, rejoin, simulation.now(), since, std::move(held)});
}

bool ConsumerGroup::remove(int member, sim::NodeId node, RemovalReason reason, sim::Time since) {
  LETHE_ASSERT(member >= 0, "ConsumerGroup::remove: member must be >= 0");
  if (!is_member(member)) return false;
  if (kept_for_counterfactual()) return false;
  sim::Simulation& simulation = kafka_.simulation_;
  members_.erase(member);
  wake_idle(member);
  removed_[member] = {node, reason};
  simulation.trace().record(simulation.now(), source_kinds::kKafkaRemove, kafka_.broker_.id(),
                            pack(processor_, static_cast<std::uint64_t>(member)), static_cast<std::uint64_t>(reason),
                            static_cast<std::uint64_t>(since));
  if (kafka_.observations_ != nullptr) {
    kafka_.observations_->cover(reason == RemovalReason::SessionTimeout ? "group.removed.session_timeout"
                                                                         : "group.removed.max_poll_interval");
  }
  record_change(node, reason, /*rejoin=*/false, since, held_by_live_members());
  bump();
  return true;
}

// MemberKept: no membership change of the group while one of its live members holds the message uncommitted.
bool ConsumerGroup::kept_for_counterfactual() const {
  const Intervener* intervener = kafka_.intervener_;
  if (intervener == nullptr || !intervener->counterfactual().closes(Intervention::MemberKept)) return false;
  for (MessageId id : held_by_live_members()) {
    if (intervener->acts(Intervention::MemberKept, id, processor_)) return true;
  }
  return false;
}

bool ConsumerGroup::rejoin(int member) {
  const auto found = removed_.find(member);
  if (found == removed_.end() || is_member(member)) return false;
  if (kept_for_counterfactual()) return false;  // it joins once the message is committed
  record_change(found->second.first, found->second.second, /*rejoin=*/true, kafka_.simulation_.now(),
                held_by_live_members());
  join(member);
  return true;
}

void ConsumerGroup::leave(int member) {
  LETHE_ASSERT(member >= 0, "ConsumerGroup::leave: member must be >= 0");
  if (members_.erase(member) == 0) return;
  wake_idle(member);
  bump();
}

void ConsumerGroup::rebalance() { bump(); }

// A new generation with the range assignment over the live members.
void ConsumerGroup::bump() {
  ++generation_;
  std::fill(owner_.begin(), owner_.end(), -1);
  ranges_.clear();
  const std::size_t partitions = owner_.size();
  const std::size_t count = members_.size();
  if (count > 0) {
    const std::size_t each = partitions / count;
    const std::size_t extra = partitions % count;
    std::size_t next = 0;
    std::size_t rank = 0;
    for (int member : members_) {
      const std::size_t share = each + (rank < extra ? 1 : 0);
      if (share == 0) break;  // so are the later members' shares: a rebalance costs work in the partitions
      ranges_[member] = {next, next + share};
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
  wake_idle(member);
}

void ConsumerGroup::notify_all() {
  ++group_version_;
  sim::Simulation& simulation = kafka_.simulation_;
  std::vector<Waiter> waiters;
  waiters.swap(waiters_);
  for (const Waiter& waiter : waiters) simulation.wake(waiter.waker);
  // Of the idle members only those the new generation concerns: the ones it gives partitions (at most one a
  // partition) and the ones no longer members (leave() and remove() woke them already).
  for (const auto& [member, range] : ranges_) wake_idle(member);
}

void ConsumerGroup::wake_idle(int member) {
  const auto found = idle_waiters_.find(member);
  if (found == idle_waiters_.end()) return;
  for (const sim::Waker& waker : found->second) kafka_.simulation_.wake(waker);
  idle_waiters_.erase(found);
}

bool ConsumerGroup::idle(int member, const MemberState& state) const {
  return state.generation == generation_ && state.cursors.empty() && state.finished.empty() && is_member(member) &&
         ranges_.count(member) == 0;
}

std::uint64_t ConsumerGroup::wake_version(int member) const {
  auto found = member_version_.find(member);
  return group_version_ + (found == member_version_.end() ? 0 : found->second);
}

void ConsumerGroup::wait(int member, const MemberState& state, sim::Time deadline) {
  sim::Simulation& simulation = kafka_.simulation_;
  if (simulation.now() >= deadline) return;
  if (idle(member, state)) {
    std::vector<sim::Waker>& wakers = idle_waiters_[member];
    std::erase_if(wakers, [&simulation](const sim::Waker& waker) { return !simulation.waiting(waker); });
    wakers.push_back(simulation.waker());
    simulation.park(deadline);
    return;
  }
  if (waiters_.size() >= compact_at_) {
    std::erase_if(waiters_, [&simulation](const Waiter& waiter) { return !simulation.waiting(waiter.waker); });
    compact_at_ = std::max(kMinCompaction, 2 * waiters_.size());
  }
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
      response.record = KafkaRecord{partition, position, log[static_cast<std::size_t>(position)], generation_,
                                    kafka_.payload(partition, position)};
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
      ++kafka_.ledger_.commit_failed;
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
  LETHE_ASSERT(member >= 0, "ConsumerGroup: member must be >= 0");
  sim::Node& node = kafka_.simulation_.this_node();
  MemberState& state = member_states_[member];
  if (!state.known || state.node != node.id() || state.incarnation != node.incarnation()) {
    state = MemberState{};
    with_cursors_.erase(member);
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
void ConsumerGroup::sync(int member, MemberState& state, std::uint64_t generation,
                         const std::vector<std::pair<int, std::int64_t>>& assignment) {
  state.generation = generation;
  state.cursors.clear();
  for (const auto& [partition, committed] : assignment) state.cursors.push_back(Cursor{partition, committed, false, 0});
  if (state.cursors.empty()) {
    with_cursors_.erase(member);
  } else {
    with_cursors_.insert(member);
  }
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

void ConsumerGroup::polled(int member) { poll_watches_[member].in_poll = true; }

void ConsumerGroup::handed_out(int member) {
  sim::Simulation& simulation = kafka_.simulation_;
  PollWatch& watch = poll_watches_[member];
  watch.in_poll = false;
  watch.last_exit = simulation.now();
  watch.node = simulation.this_node().id();
  watch.incarnation = simulation.this_node().incarnation();
  if (!watch.armed) arm_poll_watch(member, sim::saturating_add(watch.last_exit, kafka_.settings_.max_poll_interval));
}

void ConsumerGroup::arm_poll_watch(int member, sim::Time at) {
  poll_watches_[member].armed = true;
  kafka_.simulation_.at(at, [this, member] { poll_watch_fired(member); });
}

// The consumer's heartbeat thread: a member out of poll() for max_poll_interval leaves the group. A paused
// process's thread is frozen with it (it looks again when the pause ends); a dead one's session times out.
void ConsumerGroup::poll_watch_fired(int member) {
  sim::Simulation& simulation = kafka_.simulation_;
  PollWatch& watch = poll_watches_[member];
  watch.armed = false;
  if (watch.in_poll) return;  // the next record handed out arms it again
  sim::Node& node = simulation.node(watch.node);
  if (!node.alive() || node.incarnation() != watch.incarnation) return;
  if (node.paused()) {
    arm_poll_watch(member, node.paused_until());
    return;
  }
  const sim::Time due = sim::saturating_add(watch.last_exit, kafka_.settings_.max_poll_interval);
  if (simulation.now() < due) {
    arm_poll_watch(member, due);
    return;
  }
  remove(member, watch.node, RemovalReason::MaxPollInterval, watch.last_exit);
}

std::optional<KafkaRecord> ConsumerGroup::poll(int member, sim::Time deadline) {
  sim::Simulation& simulation = kafka_.simulation_;
  ConsumerGroup* self = this;
  polled(member);
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
            handed_out(member);
            return response->record;
          }
          continue;  // stale: another fiber of the member took it; fetch again
        case FetchKind::Sync:
          // Generations only grow: a sync answered before a newer one (another fiber's) is ignored.
          if (response->generation > state.generation) sync(member, state, response->generation, response->assignment);
          continue;
        case FetchKind::NotMember:
          if (response->generation >= state.generation) sync(member, state, 0, {});
          if (removed(member)) {  // removed while alive: it joins again (JoinGroup), then syncs
            const std::optional<bool> joined = kafka_.network_.call(
                kafka_.service_, [self, member] { return self->rejoin(member); }, kafka_.settings_.rpc_timeout, 0);
            if (joined.value_or(false)) continue;
          }
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
    wait(member, state, wake_at);
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

// ======================================================================== KafkaSource

namespace {

// How long a consumer waits before handling a failed record again: the protocol's own re-read interval
// (protocol.poll), or the interval a poll setting has by default when the strategy reads none.
sim::Duration retry_wait_of(const ProtocolSection& protocol) {
  const Poll* set = protocol.settings.find<Poll>("poll");
  const Poll poll = set != nullptr ? *set : Poll{};
  return poll.kind == PollKind::Distribution ? std::max<sim::Duration>(poll.interval.quantile(0.5), sim::kMillisecond)
                                             : std::max<sim::Duration>(poll.backoff_base, sim::kMillisecond);
}

}  // namespace

KafkaSource::KafkaSource(const SourceContext& context)
    : simulation_(context.simulation),
      workers_(context.workers),
      observations_(context.observations),
      retry_wait_(retry_wait_of(context.config.protocol)),
      kafka_(context.simulation, context.network, context.broker, KafkaSettings::from(context.config), context.ledger,
             context.simulation.rng("kafka")),
      pause_began_(context.workers.size(), 0),
      paused_until_(context.workers.size(), 0),
      paused_incarnation_(context.workers.size(), 0),
      expiry_scheduled_(context.workers.size(), false) {
  kafka_.set_observations(&observations_);
}

void KafkaSource::consume(SourceWorker& worker) {
  const WorkerSlot& slot = workers_[worker.index()];
  ConsumerGroup& group = kafka_.group(slot.processor);
  const int member = static_cast<int>(slot.member);
  while (true) {
    // No deadline: the group wakes a waiting member for whatever it could act on (a record on its partitions, a
    // rebalance, a commit due). Polls that came back empty on a timer only drew RPCs, and cost every idle member
    // (all but one per partition) ten wakes a simulated second.
    auto record = group.poll(member, sim::kTimeMax);
    if (!record) continue;
    while (!worker.handle(record->id, record->payload).ok) sim::sleep(retry_wait_);  // retried in place: the partition waits
    worker.before_ack(record->id);
    const bool committed = group.commit(member, *record);
    worker.acknowledged(record->id, committed);
  }
}

void KafkaSource::worker_started(std::size_t worker) {
  const WorkerSlot& slot = workers_[worker];
  kafka_.group(slot.processor).join(static_cast<int>(slot.member));
}

void KafkaSource::worker_crashed(std::size_t worker) {
  // The group notices the dead member after the session timeout, unless it came back meanwhile (its restart
  // rejoined the group: removing it then would leave a live consumer with no partitions).
  const WorkerSlot& slot = workers_[worker];
  const ProcessorId processor = slot.processor;
  const std::size_t member = slot.member;
  sim::Node* node = slot.node;
  const std::uint32_t incarnation = node->incarnation();
  simulation_.after(kafka_.settings().session_timeout, [this, processor, member, node, incarnation] {
    if (!node->alive() && node->incarnation() == incarnation) {
      kafka_.group(processor).leave(static_cast<int>(member));
      observations_.cover("rebalance.session_timeout");
    }
  });
}

// A paused process sends no heartbeat: past session_timeout from the pause's start the group removes the member
// (unless the pause ends first). An extended pause keeps the instant it began: the last heartbeat.
void KafkaSource::worker_paused(std::size_t worker) {
  const sim::Node& node = *workers_[worker].node;
  const sim::Time now = simulation_.now();
  if (paused_until_[worker] <= now || paused_incarnation_[worker] != node.incarnation()) {
    pause_began_[worker] = now;
    paused_incarnation_[worker] = node.incarnation();
    expiry_scheduled_[worker] = false;
  }
  paused_until_[worker] = node.paused_until();
  const sim::Time began = pause_began_[worker];
  const sim::Duration timeout = kafka_.settings().session_timeout;
  if (expiry_scheduled_[worker] || paused_until_[worker] - began <= timeout) return;
  expiry_scheduled_[worker] = true;
  const std::uint32_t incarnation = node.incarnation();
  simulation_.at(sim::saturating_add(began, timeout), [this, worker, began, incarnation] {
    const sim::Node& paused = *workers_[worker].node;
    if (paused.alive() && paused.incarnation() == incarnation && paused.paused() && pause_began_[worker] == began) {
      session_expired(worker, began);
    }
  });
}

void KafkaSource::session_expired(std::size_t worker, sim::Time pause_began) {
  const WorkerSlot& slot = workers_[worker];
  kafka_.group(slot.processor)
      .remove(static_cast<int>(slot.member), slot.node->id(), RemovalReason::SessionTimeout, pause_began);
}

void KafkaSource::rebalance() {
  for (int p = 0; p < kafka_.settings().processors; ++p) kafka_.group(static_cast<ProcessorId>(p)).rebalance();
}

void register_kafka_source(SourceRegistry& registry) {
  registry.add("kafka", SourceEntry{WorkerLayout::PerProcessor, [](const SourceContext& context) {
                                      return std::make_unique<KafkaSource>(context);
                                    }});
}

}  // namespace lethe
