// world/clients.hpp — request/response callers that time out and retry the same id.
//
// Its durable state (the clients' progress) lives in the object and survives
// crashes of worker nodes. Requests and responses cross the simulated
// network, so loss, lost ACKs, duplication and partitions between the groups
// "clients" and "consumers" apply to them. Every request handed to a worker
// increments Ledger::deliveries (retries included). Memory grows with the
// requests started, not with the requests the workload names: a request is
// materialized when its client starts it. Nothing here reads a
// clock or draws a random number except through the kernel and the sim::Rng
// streams passed in.
//
// `clients` client nodes (group "clients", named "client-<i>") are created by
// the constructor. The ids are dealt round-robin: id first + k goes to client
// k % clients. After start(), each client starts its requests as a Poisson
// process at rate_per_second (open loop: a new request does not wait for the
// previous one), each request in its own fiber: a try is a one-way message to
// a worker's request mailbox; the worker answers with a one-way response
// carrying the try's tag; the client waits up to `timeout` for the response of
// THAT try (a late response to an earlier try is dropped, as by an HTTP client
// that opened a new connection), then sleeps RetryPolicy(backoff,
// jitter).delay(n) and sends retry n with the SAME message id, up to `retries`
// retries; then it gives up. So a lost response makes the worker see the id
// again: the lost-ACK duplicate. Worker choice per try: WorkerChoice::ById
// sends every try of an id to worker id % workers (sticky routing);
// WorkerChoice::RandomPerTry (the default) draws the worker for every try, as
// a load balancer spreads retries. Requests queued at a worker that crashes
// are lost with it (they belonged to the dead incarnation).
// Randomness: client i uses three sub-streams of the constructor's Rng,
// "client-<i>/arrivals", "client-<i>/routing" and "client-<i>/jitter", so
// changing the jitter never shifts the arrivals and clients never share draws.
// Clients are assumed never to crash (no fault targets the "clients" group).
//
// Trace kinds (node: client-side kinds carry the client, worker-side kinds the worker):
//   client.send      client  a = id, b = tag, c = worker << 32 | try number
//   client.retry     client  a = id, b = retry number, c = backoff slept (ns)
//   client.ok        client  a = id, b = tries, c = value received
//   client.give_up   client  a = id, b = tries
//   request.deliver  worker  a = id, b = tag, c = client
//
// Lifetime: the simulation, the network and every node passed in must outlive
// the source, and the source must outlive every call into it and every run of
// the simulation (it schedules timers and network callbacks that point at it).
//
// Does not: model client crashes.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "core/config.hpp"
#include "check/ledger.hpp"
#include "world/retry.hpp"
#include "protocol/store_ops.hpp"
#include "sim/channel.hpp"
#include "sim/network.hpp"
#include "sim/node.hpp"
#include "sim/random.hpp"
#include "sim/simulation.hpp"
#include "sim/trace.hpp"
#include "world/source.hpp"

namespace lethe {

namespace source_kinds {
inline constexpr sim::TraceKind kClientSend{"client.send", "request", "tag", "worker/try"};
inline constexpr sim::TraceKind kClientRetry{"client.retry", "request", "try", "backoff_ns"};
inline constexpr sim::TraceKind kClientOk{"client.ok", "request", "try", "value"};
inline constexpr sim::TraceKind kClientGiveUp{"client.give_up", "request", "tries"};
inline constexpr sim::TraceKind kRequestDeliver{"request.deliver", "request", "tag", "client"};
}  // namespace source_kinds

enum class WorkerChoice : std::uint8_t {
  ById,          // every try of id goes to worker id % workers
  RandomPerTry,  // each try draws its worker (a load balancer)
};

struct ClientsSettings {
  int clients = 10;                       // >= 1
  double rate_per_second = 5.0;           // requests started per second by EACH client (Poisson); > 0, finite
  sim::Duration timeout = sim::kSecond;   // a client's wait for the response of one try; > 0
  int retries = 0;                        // retries after the first try; >= 0
  Backoff backoff;                        // the delay before each retry ...
  Jitter jitter = Jitter::None;           // ... and its jitter (RetryPolicy)
  WorkerChoice worker_choice = WorkerChoice::RandomPerTry;
};

// One try of one request, as the worker sees it.
struct Request {
  MessageId id = 0;
  std::uint32_t client = 0;
  std::uint32_t worker = 0;     // the worker index it was sent to
  std::uint32_t try_number = 1; // 1 = first try, 2 = first retry, ...
  std::uint64_t tag = 0;        // unique per try: the response must carry it
  sim::Time sent_at = 0;
  bool operator==(const Request&) const = default;
};

struct ClientStats {
  std::uint64_t requests = 0;        // requests started (one per id)
  std::uint64_t retries = 0;         // tries beyond the first (sends = requests + retries)
  std::uint64_t successes = 0;       // requests that got a response
  std::uint64_t gave_up = 0;         // requests whose every try timed out
  std::uint64_t late_responses = 0;  // responses that arrived after their try was abandoned
};

// What happened to one request (one id of one client).
struct RequestOutcome {
  MessageId id = 0;
  std::uint32_t client = 0;
  std::uint32_t tries = 0;
  bool finished = false;
  bool succeeded = false;
  std::optional<std::uint64_t> value;  // the value the client received
  sim::Time started_at = 0;
  sim::Time finished_at = 0;
};

class ClientsSource final : public MessageSource {
 public:
  // Creates settings.clients client nodes (group "clients"). `workers` are the worker nodes, by worker index;
  // the message ids to request are first_id .. first_id + requests - 1; `rng` the root of the clients' streams.
  // Throws std::invalid_argument on bad settings or no workers.
  ClientsSource(sim::Simulation& simulation, sim::Network& network, std::vector<sim::Node*> workers,
                ClientsSettings settings, MessageId first_id, std::uint64_t requests, Ledger& ledger, sim::Rng rng);
  ClientsSource(const ClientsSource&) = delete;
  ClientsSource& operator=(const ClientsSource&) = delete;

  // Starts every client's main fiber. Call once.
  void start() override;

  // Worker side, from a fiber of worker `worker`: the next request sent to it, or nullopt at `deadline`.
  std::optional<Request> next_request(int worker, sim::Time deadline);
  // Worker side: a one-way response carrying `request.tag` and `value`, from the request's worker.
  void respond(const Request& request, std::uint64_t value);

  // Every request finished (succeeded or gave up).
  bool drained() const override { return finished_ == requests_; }

  // --- as a MessageSource (topology.source = "clients"): the clients request every message themselves.
  void publish(MessageId /*id*/, std::uint32_t /*payload*/) override {}  // never called: there is no producer
  bool makes_own_requests() const override { return true; }
  // Owes the requests started (in id order); the others are undelivered, the latest at the end plus the mean
  // plus six standard deviations of the Poisson arrivals still due (a bound they pass with odds under 1e-9).
  void account_requests(Ledger& ledger, ProcessorId processors, sim::Time end) const override;
  // Takes the requests sent to the worker (100 ms deadline per wait) and handles each in its own fiber (requests
  // overlap); a handled request is answered with the first strategy's value (0 when it has none), a failed one
  // gets no response (the client times out and retries).
  void consume(SourceWorker& worker) override;
  std::size_t finished() const { return finished_; }
  const ClientStats& stats(int client) const;
  ClientStats totals() const;
  const std::deque<RequestOutcome>& outcomes() const { return outcomes_; }  // the requests started, in start order
  sim::Node& client_node(int client);
  int clients() const { return static_cast<int>(clients_.size()); }
  const ClientsSettings& settings() const { return settings_; }

 private:
  struct Queued {
    Request request;
    std::uint32_t incarnation = 0;  // of the worker when it arrived
  };
  struct Client {
    sim::Node* node = nullptr;
    sim::Rng arrivals;
    sim::Rng routing;
    sim::Rng jitter;
    ClientStats stats;
    std::uint64_t started = 0;  // requests started; its k-th request is request number client + k * clients
    std::map<std::uint64_t, sim::Channel<std::uint64_t>> pending;  // tag -> the response of that try
    std::uint64_t next_tag = 1;
  };

  void run_client(std::uint32_t client);
  void run_request(std::uint32_t client, RequestOutcome& outcome);
  std::uint32_t choose_worker(Client& client, MessageId id);
  void arrive_request(const Request& request);
  void arrive_response(std::uint32_t client, std::uint64_t tag, std::uint64_t value);

  sim::Simulation& simulation_;
  sim::Network& network_;
  std::vector<sim::Node*> workers_;
  ClientsSettings settings_;
  Ledger& ledger_;
  std::vector<std::unique_ptr<Client>> clients_;
  std::vector<sim::Channel<Queued>> mailboxes_;  // by worker index
  MessageId first_id_ = 0;
  std::uint64_t requests_ = 0;
  std::deque<RequestOutcome> outcomes_;  // a deque: a running request keeps a reference to its outcome
  std::size_t finished_ = 0;
  bool started_ = false;
};

// Registers ClientsSource as "clients", with shared workers (called from the registry's list of built-ins):
// topology.clients callers at workload.rate in total, topology.client_* timeouts, retries and backoff, every
// workload message requested once.
void register_clients_source(SourceRegistry& registry);

}  // namespace lethe
