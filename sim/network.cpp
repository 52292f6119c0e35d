#include "sim/network.hpp"

namespace sim {

void Network::set_link(GroupId a, GroupId b, LinkConfig link) {
  for (auto& o : overrides_) {
    if ((o.a == a && o.b == b) || (o.a == b && o.b == a)) {
      o.link = std::move(link);
      return;
    }
  }
  overrides_.push_back(Override{a, b, std::move(link)});
}

void Network::add_partition(GroupId a, GroupId b, Time from, Time until) {
  partitions_.push_back(Partition{a, b, from, until});
}

bool Network::partitioned(const Node& a, const Node& b, Time time) const {
  const GroupId ga = a.group();
  const GroupId gb = b.group();
  for (const auto& p : partitions_) {
    if (time < p.from || time >= p.until) continue;
    if ((p.a == ga && p.b == gb) || (p.a == gb && p.b == ga)) return true;
  }
  return false;
}

const LinkConfig& Network::link(const Node& a, const Node& b) const {
  const GroupId ga = a.group();
  const GroupId gb = b.group();
  for (const auto& o : overrides_) {
    if ((o.a == ga && o.b == gb) || (o.a == gb && o.b == ga)) return o.link;
  }
  return default_link_;
}

bool Network::instant(const Node& from, const Node& to, bool is_response) const {
  if (!from.alive() || !to.alive() || to.paused()) return false;
  const LinkConfig& cfg = link(from, to);
  if (!cfg.latency.is_constant() || cfg.latency.mean_ns() != 0.0) return false;
  if ((is_response ? cfg.ack_loss : cfg.loss) > 0.0 || cfg.duplicate > 0.0) return false;
  return partitions_.empty() || !partitioned(from, to, simulation_.now());
}

void Network::transmit(Node& from, Node& to, std::function<void()> on_deliver, std::uint64_t tag,
                       bool is_response) {
  Simulation& simulation = simulation_;
  Trace& trace = simulation.trace();
  const Time now = simulation.now();
  if (!from.alive()) {
    ++stats_.to_down_node;
    trace.record(now, kinds::kDropDown, from.id(), tag, to.id(), 3);
    return;
  }
  ++stats_.sent;
  trace.record(now, kinds::kSend, from.id(), tag, to.id(), is_response ? 1 : 0);
  if (partitioned(from, to, now)) {
    ++stats_.partitioned;
    trace.record(now, kinds::kDropPartition, from.id(), tag, to.id(), is_response ? 1 : 0);
    return;
  }
  const LinkConfig& cfg = link(from, to);
  const double drop_probability = is_response ? cfg.ack_loss : cfg.loss;
  if (drop_probability > 0.0 && rng_.bernoulli(drop_probability)) {
    if (is_response) {
      ++stats_.ack_lost;
      trace.record(now, kinds::kDropAck, from.id(), tag, to.id(), 1);
    } else {
      ++stats_.lost;
      trace.record(now, kinds::kDropLoss, from.id(), tag, to.id(), 0);
    }
    return;
  }
  const bool duplicated = cfg.duplicate > 0.0 && rng_.bernoulli(cfg.duplicate);
  if (duplicated) {
    ++stats_.duplicated;
    trace.record(now, kinds::kDuplicate, from.id(), tag, to.id(), is_response ? 1 : 0);
    const Duration second_latency = cfg.latency.sample(rng_);
    schedule_arrival(saturating_add(now, second_latency), hold(from, to, on_deliver, tag));
  }
  const Duration latency = cfg.latency.sample(rng_);
  schedule_arrival(saturating_add(now, latency), hold(from, to, std::move(on_deliver), tag));
}

std::uint32_t Network::hold(Node& from, Node& to, std::function<void()> on_deliver, std::uint64_t tag) {
  std::uint32_t index;
  if (!free_in_flight_.empty()) {
    index = free_in_flight_.back();
    free_in_flight_.pop_back();
  } else {
    index = static_cast<std::uint32_t>(in_flight_.size());
    in_flight_.emplace_back();
  }
  InFlight& message = in_flight_[index];
  message.on_deliver = std::move(on_deliver);
  message.from = &from;
  message.to = &to;
  message.tag = tag;
  return index;
}

void Network::schedule_arrival(Time time, std::uint32_t message) {
  // [this, message] fits std::function's small buffer: a message's timer allocates nothing.
  simulation_.at(time, [this, message] { arrive(message); });
}

void Network::arrive(std::uint32_t message) {
  Simulation& simulation = simulation_;
  Trace& trace = simulation.trace();
  const Time now = simulation.now();
  InFlight& m = in_flight_[message];
  Node& from = *m.from;
  Node& to = *m.to;
  const std::uint64_t tag = m.tag;
  bool deliver = false;
  if (partitioned(from, to, now)) {
    ++stats_.partitioned;
    trace.record(now, kinds::kDropPartition, to.id(), tag, from.id(), 2);
  } else if (!to.alive()) {
    ++stats_.to_down_node;
    trace.record(now, kinds::kDropDown, to.id(), tag, from.id());
  } else if (to.paused()) {
    // A paused process does not read its socket until the pause ends.
    schedule_arrival(to.paused_until(), message);
    return;
  } else {
    ++stats_.delivered;
    trace.record(now, kinds::kDeliver, to.id(), tag, from.id());
    deliver = true;
  }
  // Free the slot before running the callback: it may send (and reuse the slot, or grow the pool).
  std::function<void()> on_deliver = std::move(m.on_deliver);
  m.on_deliver = nullptr;
  free_in_flight_.push_back(message);
  if (deliver) on_deliver();
}

void Network::finish_service(Node& server, std::uint32_t incarnation, std::uint64_t tag,
                             std::function<void()> serve) {
  Simulation& simulation = simulation_;
  if (!server.alive() || server.incarnation() != incarnation) {
    ++stats_.to_down_node;
    simulation.trace().record(simulation.now(), kinds::kDropDown, server.id(), tag, 0, 4);
    return;
  }
  if (server.paused()) {
    Node* target = &server;
    simulation.at(server.paused_until(), [this, target, incarnation, tag, serve = std::move(serve)]() mutable {
      finish_service(*target, incarnation, tag, std::move(serve));
    });
    return;
  }
  serve();
}

}  // namespace sim
