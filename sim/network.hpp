// sim/network.hpp — messages and RPC between simulated nodes.
//
// Every message crosses a link chosen by the (sender group, receiver group)
// pair: a latency distribution (random latency reorders messages), a loss
// probability for requests and one-way messages, an ack_loss probability for
// responses (the lost ACK), and a duplication probability. Partitions between
// two groups are scheduled windows [from, until): a message across a partition
// at its send or its arrival instant is dropped; messages within a group or
// between other groups are untouched. A group paired with itself (a link or a
// partition) is the messages between its own nodes. A message to or from a crashed node is
// dropped (a crashed process sends nothing, even before its fibers unwind).
//
// RPC: call() sends a request from the calling fiber's node to a Service; the
// service's handler runs atomically at one virtual instant (arrival + service
// time: the instant the operation takes effect), and the response travels
// back. A handler with an arrive() member is also told when its request
// reaches the server, before the service time (a server that tracks the
// requests it is still working on needs it; a duplicated request arrives
// twice). An instant call (both legs on a link with constant zero latency and no
// loss, ack loss or duplication, no partition, both nodes up and the server
// not paused, zero service time, not serial) runs the handler on the caller's
// fiber and returns without parking: the same virtual instant and the same
// draws as a trip through the timer queue, without its two timers and its
// fiber switch (the broker, producer and sink links of the benchmarks are
// such links). Its trace still records both sends and both deliveries. A caller that times out cannot tell a lost request from a lost
// response: the trace records which it was. A duplicated request runs the
// handler twice (the server sees both), and the caller takes the first
// response.
//
// All randomness comes from the Network's own Rng stream, so adding nodes that
// do not send does not reshuffle the network's draws.
//
// Does not: model bandwidth, connection state or TCP retransmission; the model
// layer adds retries where real clients have them.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "sim/distribution.hpp"
#include "sim/node.hpp"
#include "sim/random.hpp"
#include "sim/simulation.hpp"
#include "sim/trace.hpp"

namespace sim {

struct LinkConfig {
  Distribution latency = Distribution::constant(kMillisecond);
  double loss = 0.0;       // request or one-way message dropped
  double ack_loss = 0.0;   // response dropped
  double duplicate = 0.0;  // message delivered twice
};

// A server endpoint: where a call's handler runs, and how long it takes.
// Service times are drawn from the service's own stream, so changing one
// service's latency never shifts the network's (or another service's) draws:
// give each service `simulation.rng("<name>.service")`.
struct Service {
  Node* node = nullptr;
  Distribution service_time;  // default: zero
  bool serial = false;        // true: one request at a time, FIFO (a single-threaded server)
  Time busy_until = 0;
  Rng rng = Rng(0x5e7f1ce);   // service-time draws only
};

struct NetworkStats {
  std::uint64_t sent = 0;
  std::uint64_t delivered = 0;
  std::uint64_t lost = 0;
  std::uint64_t ack_lost = 0;
  std::uint64_t partitioned = 0;
  std::uint64_t to_down_node = 0;
  std::uint64_t duplicated = 0;
  std::uint64_t rpc_timeouts = 0;
  std::uint64_t late_responses = 0;
};

class Network {
 public:
  Network(Simulation& simulation, Rng rng) : simulation_(simulation), rng_(rng) {}
  Network(const Network&) = delete;
  Network& operator=(const Network&) = delete;

  void set_default_link(LinkConfig link) { default_link_ = std::move(link); }
  // Override for messages between two groups (either direction).
  void set_link(GroupId a, GroupId b, LinkConfig link);
  // Drops every message between groups a and b sent or arriving in [from, until).
  void add_partition(GroupId a, GroupId b, Time from, Time until);
  bool partitioned(const Node& a, const Node& b, Time time) const;
  const LinkConfig& link(const Node& a, const Node& b) const;
  // A message from `from` to `to` sent now would arrive now, surely and once (see call()).
  bool instant(const Node& from, const Node& to, bool is_response) const;

  // One-way message: `on_deliver` runs at the destination's arrival instant,
  // unless the message is lost, crosses a partition, or `to` is down.
  void send(Node& from, Node& to, std::function<void()> on_deliver, std::uint64_t tag = 0) {
    transmit(from, to, std::move(on_deliver), tag, false);
  }

  // RPC from the calling fiber's node. `handle` is a copyable callable with no
  // arguments returning the response; it must not block. Returns nullopt on timeout.
  template <class Handler>
  auto call(Service& service, Handler handle, Duration timeout, std::uint64_t tag = 0)
      -> std::optional<std::invoke_result_t<Handler&>>;
  // call() without holding the fiber's stack while the RPC is out: an instant call returns its response at once
  // (`then` is dropped); otherwise it returns nullopt after Simulation::park_then(), so the calling fiber must
  // return at once, and then(what call() would have returned) runs in a new fiber of its slot. The same sends,
  // draws, timers and trace as call().
  template <class Handler>
  auto call_or_then(Service& service, Handler handle, Duration timeout, std::uint64_t tag,
                    std::function<void(std::optional<std::invoke_result_t<Handler&>>)> then)
      -> std::optional<std::invoke_result_t<Handler&>>;

  const NetworkStats& stats() const { return stats_; }

 private:
  struct Override {
    GroupId a, b;
    LinkConfig link;
  };
  struct Partition {
    GroupId a, b;
    Time from, until;
  };
  // A message on the wire. Messages wait in a pool and their timers carry only the pool index, so a message
  // costs no allocation beyond its own callback (the pool's slots are reused).
  struct InFlight {
    std::function<void()> on_deliver;
    Node* from = nullptr;
    Node* to = nullptr;
    std::uint64_t tag = 0;
  };
  // The part of call() before its wait: sends the request (its response will be written to *result while the
  // caller's next wait lasts), or serves an instant call at once and returns its response.
  template <class Handler>
  auto begin_call(Service& service, Handler handle, std::uint64_t tag,
                  std::optional<std::invoke_result_t<Handler&>>* result)
      -> std::optional<std::invoke_result_t<Handler&>>;
  // The part after: `result` if the wait was answered with one, else a timeout (counted and traced).
  template <class Response>
  std::optional<Response> end_call(bool answered, std::optional<Response> result, const Node& caller,
                                   std::uint64_t tag);
  // Sends with loss/partition/duplication; is_response selects ack_loss.
  void transmit(Node& from, Node& to, std::function<void()> on_deliver, std::uint64_t tag, bool is_response);
  std::uint32_t hold(Node& from, Node& to, std::function<void()> on_deliver, std::uint64_t tag);
  void schedule_arrival(Time time, std::uint32_t message);
  // The message's arrival instant: delivers it (and frees its slot), drops it, or waits for a pause to end.
  void arrive(std::uint32_t message);
  // Runs a served request's handler at the end of its service time, unless the server crashed meanwhile.
  void finish_service(Node& server, std::uint32_t incarnation, std::uint64_t tag, std::function<void()> serve);

  Simulation& simulation_;
  Rng rng_;
  LinkConfig default_link_;
  std::vector<Override> overrides_;
  std::vector<Partition> partitions_;
  NetworkStats stats_;
  std::vector<InFlight> in_flight_;
  std::vector<std::uint32_t> free_in_flight_;
};

template <class Handler>
auto Network::call(Service& service, Handler handle, Duration timeout, std::uint64_t tag)
    -> std::optional<std::invoke_result_t<Handler&>> {
  using Response = std::invoke_result_t<Handler&>;
  std::optional<Response> result;
  if (std::optional<Response> response = begin_call(service, std::move(handle), tag, &result)) return response;
  Simulation& simulation = simulation_;
  const bool answered = simulation.park(saturating_add(simulation.now(), std::max<Duration>(timeout, 0)));
  return end_call(answered, std::move(result), simulation.this_node(), tag);
}

template <class Handler>
auto Network::call_or_then(Service& service, Handler handle, Duration timeout, std::uint64_t tag,
                           std::function<void(std::optional<std::invoke_result_t<Handler&>>)> then)
    -> std::optional<std::invoke_result_t<Handler&>> {
  using Response = std::invoke_result_t<Handler&>;
  // The response is written here while the slot waits: the continuation owns it, and a late response finds the
  // wait over and writes nothing.
  auto result = std::make_shared<std::optional<Response>>();
  if (std::optional<Response> response = begin_call(service, std::move(handle), tag, result.get())) return response;
  Simulation& simulation = simulation_;
  Node* caller = &simulation.this_node();
  simulation.park_then(saturating_add(simulation.now(), std::max<Duration>(timeout, 0)),
                       [this, result, caller, tag, then = std::move(then)](bool answered) {
                         then(end_call(answered, std::move(*result), *caller, tag));
                       });
  return std::nullopt;
}

template <class Response>
std::optional<Response> Network::end_call(bool answered, std::optional<Response> result, const Node& caller,
                                          std::uint64_t tag) {
  if (!answered || !result.has_value()) {
    ++stats_.rpc_timeouts;
    simulation_.trace().record(simulation_.now(), kinds::kRpcTimeout, caller.id(), tag);
    return std::nullopt;
  }
  return result;
}

template <class Handler>
auto Network::begin_call(Service& service, Handler handle, std::uint64_t tag,
                         std::optional<std::invoke_result_t<Handler&>>* result_pointer)
    -> std::optional<std::invoke_result_t<Handler&>> {
  using Response = std::invoke_result_t<Handler&>;
  Simulation& simulation = simulation_;
  Node& caller = simulation.this_node();
  Node& server = *service.node;
  const Waker waker = simulation.waker();
  Network* network = this;
  Service* service_pointer = &service;
  Node* caller_pointer = &caller;
  Node* server_pointer = &server;

  // Sends the response back to the caller (runs at the server, at the instant the handler ran).
  auto respond = [network, caller_pointer, server_pointer, result_pointer, waker, tag](Response response) {
    network->transmit(
        *server_pointer, *caller_pointer,
        [network, caller_pointer, result_pointer, waker, tag, response = std::move(response)]() mutable {
          Simulation& s = network->simulation_;
          if (s.waiting(waker)) {
            *result_pointer = std::move(response);
            s.wake(waker);
          } else {
            ++network->stats_.late_responses;
            s.trace().record(s.now(), kinds::kLateResponse, caller_pointer->id(), tag);  // the caller gave up
          }
        },
        tag, true);
  };
  const bool instant_service = !service.serial && service.service_time.is_constant() &&
                                service.service_time.mean_ns() == 0.0;
  if (instant_service && instant(caller, server, false)) {
    Trace& trace = simulation.trace();
    const Time now = simulation.now();
    stats_.sent += 1;
    stats_.delivered += 1;
    trace.record(now, kinds::kSend, caller.id(), tag, server.id(), 0);
    trace.record(now, kinds::kDeliver, server.id(), tag, caller.id());
    if constexpr (requires { handle.arrive(); }) handle.arrive();
    Response response = handle();
    if (instant(server, caller, true)) {
      stats_.sent += 1;
      stats_.delivered += 1;
      trace.record(now, kinds::kSend, server.id(), tag, caller.id(), 1);
      trace.record(now, kinds::kDeliver, caller.id(), tag, server.id());
      return response;
    }
    respond(std::move(response));  // the handler changed a node's state: the response takes the usual path
  } else {
    auto on_request = [network, service_pointer, server_pointer, tag, respond, handle]() mutable {
      Simulation& sim = network->simulation_;
      Service& svc = *service_pointer;
      if constexpr (requires { handle.arrive(); }) handle.arrive();
      const Duration service_ns = svc.service_time.is_constant() && svc.service_time.mean_ns() == 0.0
                                      ? 0
                                      : svc.service_time.sample(svc.rng);
      if (!svc.serial && service_ns == 0) {
        respond(handle());  // no copy of the handler (and of what it captured) on the common path
        return;
      }
      auto serve = [respond, handle]() mutable { respond(handle()); };
      Time start = sim.now();
      if (svc.serial) start = std::max(start, svc.busy_until);
      const Time finish = saturating_add(start, service_ns);
      if (svc.serial) svc.busy_until = finish;
      // A server that crashes during the service time loses the request (even if it restarted meanwhile);
      // a paused server finishes it when the pause ends.
      const std::uint32_t incarnation = server_pointer->incarnation();
      sim.at(finish, [network, server_pointer, incarnation, tag, serve = std::move(serve)]() mutable {
        network->finish_service(*server_pointer, incarnation, tag, std::move(serve));
      });
    };
    transmit(caller, server, std::move(on_request), tag, false);
  }
  return std::nullopt;
}

}  // namespace sim
