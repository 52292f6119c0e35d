#include "world/clients.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "world/source_support.hpp"
#include "sim/assert.hpp"

namespace lethe {
namespace {

using source_support::pack;

// Removes `tag`'s pending entry when the waiting try ends, also when it unwinds on a crash.
struct PendingGuard {
  std::map<std::uint64_t, sim::Channel<std::uint64_t>>& pending;
  std::uint64_t tag;
  ~PendingGuard() { pending.erase(tag); }
};

}  // namespace


ClientsSource::ClientsSource(sim::Simulation& simulation, sim::Network& network, std::vector<sim::Node*> workers,
                             ClientsSettings settings, MessageId first_id, std::uint64_t requests, Ledger& ledger,
                             sim::Rng rng)
    : simulation_(simulation),
      network_(network),
      workers_(std::move(workers)),
      settings_(settings),
      ledger_(ledger),
      mailboxes_(workers_.size()),
      first_id_(first_id),
      requests_(requests) {
  LETHE_ASSERT(settings_.clients >= 1, "ClientsSource: clients must be >= 1");
  LETHE_ASSERT(settings_.rate_per_second > 0.0 && std::isfinite(settings_.rate_per_second),
          "ClientsSource: rate_per_second must be finite and > 0");
  LETHE_ASSERT(settings_.timeout > 0, "ClientsSource: timeout must be > 0");
  LETHE_ASSERT(settings_.retries >= 0, "ClientsSource: retries must be >= 0");
  LETHE_ASSERT(!workers_.empty(), "ClientsSource: no workers");
  for (const sim::Node* worker : workers_) LETHE_ASSERT(worker != nullptr, "ClientsSource: null worker node");
  RetryPolicy check(settings_.backoff, settings_.jitter);  // validates the backoff (throws on a bad one)
  (void)check;
  for (int i = 0; i < settings_.clients; ++i) {
    const std::string name = "client-" + std::to_string(i);
    auto client = std::make_unique<Client>(Client{&simulation_.add_node(name, "clients"),
                                                  rng.derive(name + "/arrivals"), rng.derive(name + "/routing"),
                                                  rng.derive(name + "/jitter"), ClientStats{}, {}, {}, 1});
    clients_.push_back(std::move(client));
  }
}

void ClientsSource::start() {
  LETHE_ASSERT(!started_, "ClientsSource::start: already started");
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
  const std::uint64_t stride = clients_.size();
  for (std::uint64_t number = client_index; number < requests_; number += stride) {
    const double gap = std::round(client.arrivals.exponential(mean_gap_ns));
    sim::sleep(gap >= static_cast<double>(sim::kTimeMax / 2) ? sim::kTimeMax / 2 : static_cast<sim::Duration>(gap));
    RequestOutcome& outcome = outcomes_.emplace_back();
    outcome.id = first_id_ + number;
    outcome.client = client_index;
    ++client.started;
    client.node->spawn([this, client_index, &outcome] { run_request(client_index, outcome); });
  }
}

void ClientsSource::account_requests(Ledger& ledger, ProcessorId processors, sim::Time end) const {
  // Request number n (id first + n) was started iff its client started more than n / clients requests.
  const std::uint64_t stride = clients_.size();
  std::uint64_t most = 0;
  for (const auto& client : clients_) most = std::max(most, client->started);
  for (std::uint64_t number = 0; number < std::min(requests_, most * stride); ++number) {
    if (number / stride >= clients_[number % stride]->started) continue;
    ledger.expected.add(first_id_ + number, processors);
    ++ledger.messages;
  }
  const double per_client_rate = settings_.rate_per_second / static_cast<double>(sim::kSecond);  // per ns
  double latest = static_cast<double>(end);
  for (std::uint64_t c = 0; c < stride; ++c) {
    const std::uint64_t share = requests_ / stride + (c < requests_ % stride ? 1 : 0);
    const auto unstarted = static_cast<double>(share - clients_[c]->started);
    if (unstarted == 0.0) continue;
    ledger.undelivered += share - clients_[c]->started;
    latest = std::max(latest, static_cast<double>(end) + (unstarted + 6.0 * std::sqrt(unstarted)) / per_client_rate);
  }
  const auto cap = static_cast<double>(sim::kTimeMax);
  if (latest > static_cast<double>(end)) {
    ledger.undelivered_latest = std::max(ledger.undelivered_latest,
                                         latest >= cap ? sim::kTimeMax : static_cast<sim::Time>(std::ceil(latest)));
  }
}

std::uint32_t ClientsSource::choose_worker(Client& client, MessageId id) {
  const auto count = static_cast<std::uint64_t>(workers_.size());
  if (settings_.worker_choice == WorkerChoice::ById) return static_cast<std::uint32_t>(id % count);
  return static_cast<std::uint32_t>(client.routing.below(count));
}

void ClientsSource::run_request(std::uint32_t client_index, RequestOutcome& outcome) {
  Client& client = *clients_[client_index];
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
  LETHE_ASSERT(worker >= 0 && static_cast<std::size_t>(worker) < workers_.size(), "ClientsSource: no such worker");
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
  LETHE_ASSERT(request.worker < workers_.size() && request.client < clients_.size(), "ClientsSource::respond: bad request");
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
  LETHE_ASSERT(client >= 0 && static_cast<std::size_t>(client) < clients_.size(), "ClientsSource: no such client");
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
  LETHE_ASSERT(client >= 0 && static_cast<std::size_t>(client) < clients_.size(), "ClientsSource: no such client");
  return *clients_[static_cast<std::size_t>(client)]->node;
}

void ClientsSource::consume(SourceWorker& worker) {
  constexpr sim::Duration kPollWait = 100 * sim::kMillisecond;
  while (true) {
    auto request = next_request(static_cast<int>(worker.index()), sim::now() + kPollWait);
    if (!request) continue;
    const Request req = *request;
    worker.node().spawn([this, req, &worker] {
      const Handled handled = worker.handle(req.id, 0);  // a caller resends its own request
      if (!handled.ok) return;  // no response: the client times out and retries
      worker.before_ack(req.id);
      respond(req, handled.value.value_or(0));
      worker.answered(req.id);
    });
  }
}

namespace {

std::unique_ptr<MessageSource> make_clients_source(const SourceContext& context) {
  const ScenarioConfig& config = context.config;
  ClientsSettings clients;
  clients.clients = config.topology.clients;
  clients.rate_per_second = config.workload.rate.per_second / static_cast<double>(config.topology.clients);
  clients.timeout = config.topology.client_timeout;
  clients.retries = config.topology.client_retries;
  clients.backoff = config.topology.client_backoff;
  clients.jitter = config.topology.client_jitter;
  std::vector<sim::Node*> workers;
  for (const WorkerSlot& slot : context.workers) workers.push_back(slot.node);
  return std::make_unique<ClientsSource>(context.simulation, context.network, std::move(workers), clients, 0,
                                         static_cast<std::uint64_t>(config.workload.messages), context.ledger, context.simulation.rng("clients"));
}

}  // namespace

void register_clients_source(SourceRegistry& registry) {
  registry.add("clients", SourceEntry{WorkerLayout::Shared, make_clients_source});
}

}  // namespace lethe
