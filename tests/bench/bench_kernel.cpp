// Benchmarks of the virtual-time kernel (sim/simulation.hpp, sim/network.hpp).
//
// - BM_SleepWake/fibers/random_durations/fast_path: `fibers` fibers each loop sim::sleep(d) forever; d is either
//   a constant 100 us (every fiber wakes at the same instants, in lockstep) or uniform in [1 ns, 200 us] per sleep
//   (wake-ups interleave, mostly one fiber per instant). Items are sleep/wake events (one sleep that returned).
//   fast_path=0 shows what the kernel's fast path (no dispatcher round trip when the parking fiber is next) buys.
//   Counter switches_per_event: Simulation::context_switches() per event (that counter counts a direct
//   fiber-to-fiber hand-off twice: once when one fiber suspends, once when the next is picked).
// - BM_RpcRoundTrip/clients: `clients` client nodes call a zero-service-time Service over a 1 ms constant-latency
//   link, one call after another with a 1 s timeout, measured after one timeout of warm-up (the steady state).
//   Items are completed round trips.
// - BM_IdleFiberMemory/fibers/fibers_per_node: resident memory (RSS from /proc/self/statm) added by `fibers` fibers
//   parked forever, spread over nodes of `fibers_per_node` fibers each (1: one node per consumer). Counter
//   bytes_per_fiber; one iteration per repetition (it spawns, measures, then tears everything down: items per
//   second counts fibers spawned, parked and unwound, which the teardown dominates).
//
// Each timed iteration runs the simulation for a slice of virtual time worth about 10,000 events; the setup
// (spawning) and the teardown (unwinding every fiber) are outside the timed region.
#include <benchmark/benchmark.h>
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "sim/distribution.hpp"
#include "sim/network.hpp"
#include "sim/node.hpp"
#include "sim/simulation.hpp"

namespace {

using sim::kMicrosecond;
using sim::kMillisecond;
using sim::kSecond;

constexpr std::int64_t kEventsPerIteration = 10000;

std::string numbered(const char* prefix, std::int64_t number) {
  std::string name(prefix);
  name += std::to_string(number);
  return name;
}

// --- sleep/wake through the scheduler ---

void BM_SleepWake(benchmark::State& state) {
  const std::int64_t fibers = state.range(0);
  const bool random_durations = state.range(1) != 0;
  const bool fast_path = state.range(2) != 0;
  constexpr sim::Duration kMeanSleep = 100 * kMicrosecond;
  auto simulation = std::make_unique<sim::Simulation>(sim::SimulationOptions{.seed = 1, .fast_path = fast_path});
  std::uint64_t events = 0;
  auto& node = simulation->add_node("sleepers", "workers");
  for (std::int64_t f = 0; f < fibers; ++f) {
    sim::Rng rng = simulation->rng(numbered("sleeper", f));
    node.spawn([&events, rng, random_durations]() mutable {
      for (;;) {
        sim::sleep(random_durations ? static_cast<sim::Duration>(1 + rng.below(2 * kMeanSleep)) : kMeanSleep);
        ++events;
      }
    });
  }
  simulation->run_until(0);  // every fiber starts and parks in its first sleep
  const sim::Duration slice = std::max<std::int64_t>(1, kEventsPerIteration / fibers) * kMeanSleep;
  const std::uint64_t events_before = events;
  const std::uint64_t switches_before = simulation->context_switches();
  for (auto _ : state) {
    simulation->run_until(simulation->now() + slice);
  }
  const auto total = static_cast<double>(events - events_before);
  state.SetItemsProcessed(static_cast<std::int64_t>(events - events_before));
  state.counters["switches_per_event"] =
      static_cast<double>(simulation->context_switches() - switches_before) / std::max(total, 1.0);
  simulation.reset();  // unwinds every fiber (after the timed loop)
}
BENCHMARK(BM_SleepWake)
    ->ArgNames({"fibers", "random_durations", "fast_path"})
    ->Args({1, 0, 1})
    ->Args({1, 1, 1})
    ->Args({100, 0, 1})
    ->Args({100, 1, 1})
    ->Args({10000, 0, 1})
    ->Args({10000, 1, 1})
    ->Args({1, 1, 0})
    ->Args({100, 1, 0})
    ->Args({10000, 1, 0})
    ->Unit(benchmark::kMillisecond);

// --- RPC round trips ---

void BM_RpcRoundTrip(benchmark::State& state) {
  const std::int64_t clients = state.range(0);
  constexpr sim::Duration kLatency = kMillisecond;
  constexpr sim::Duration kTimeout = kSecond;
  auto simulation = std::make_unique<sim::Simulation>(sim::SimulationOptions{.seed = 1});
  {
    sim::Network network(*simulation, simulation->rng("network"));
    sim::LinkConfig link;
    link.latency = sim::Distribution::constant(kLatency);
    network.set_default_link(link);
    auto& server = simulation->add_node("server", "store");
    sim::Service service{&server, sim::Distribution::constant(0), false, 0};
    std::uint64_t round_trips = 0;
    std::uint64_t answered = 0;
    for (std::int64_t c = 0; c < clients; ++c) {
      auto& client = simulation->add_node(numbered("client", c), "consumers");
      client.set_main([&network, &service, &round_trips, &answered] {
        for (std::uint64_t k = 0;; ++k) {
          auto response = network.call(service, [k] { return k; }, kTimeout, k);
          answered += response.has_value() && *response == k ? 1 : 0;
          ++round_trips;
        }
      });
      client.start();
    }
    // Warm up for one timeout: every answered call leaves its deadline timer in the kernel's queue until the
    // deadline passes, so the queue only reaches its steady size (calls per second x timeout) after that.
    simulation->run_until(kTimeout);
    const sim::Duration slice = std::max<std::int64_t>(1, kEventsPerIteration / clients) * 2 * kLatency;
    const std::uint64_t before = round_trips;
    for (auto _ : state) {
      simulation->run_until(simulation->now() + slice);
    }
    if (answered != round_trips) state.SkipWithError("a call was not answered with its own response");
    state.SetItemsProcessed(static_cast<std::int64_t>(round_trips - before));
    simulation.reset();  // unwinds the clients while the network and service still exist
  }
}
BENCHMARK(BM_RpcRoundTrip)->ArgName("clients")->Arg(1)->Arg(10)->Arg(100)->Arg(1000)->Unit(benchmark::kMillisecond);

// --- resident memory per idle fiber ---

std::int64_t resident_bytes() {
  std::FILE* statm = std::fopen("/proc/self/statm", "r");
  if (statm == nullptr) return -1;
  long size_pages = 0;
  long resident_pages = 0;
  const int read = std::fscanf(statm, "%ld %ld", &size_pages, &resident_pages);
  std::fclose(statm);
  if (read != 2) return -1;
  return static_cast<std::int64_t>(resident_pages) * static_cast<std::int64_t>(sysconf(_SC_PAGESIZE));
}

void BM_IdleFiberMemory(benchmark::State& state) {
  const std::int64_t fibers = state.range(0);
  const std::int64_t fibers_per_node = state.range(1);
  for (auto _ : state) {
    malloc_trim(0);  // give back what earlier benchmarks freed, so it is not reused invisibly
    const std::int64_t before = resident_bytes();
    auto simulation = std::make_unique<sim::Simulation>(sim::SimulationOptions{.seed = 1});
    sim::Node* node = nullptr;
    for (std::int64_t f = 0; f < fibers; ++f) {
      if (f % fibers_per_node == 0) {
        node = &simulation->add_node(numbered("consumer", f), "consumers");
        node->set_main([] { sim::Simulation::current().park(); });  // parks forever
        node->start();
      } else {
        node->spawn([] { sim::Simulation::current().park(); });
      }
    }
    simulation->run();
    const std::int64_t after = resident_bytes();
    if (simulation->live_fibers() != static_cast<std::size_t>(fibers)) state.SkipWithError("fibers did not all park");
    state.counters["bytes_per_fiber"] = static_cast<double>(after - before) / static_cast<double>(fibers);
    state.counters["resident_MiB"] = static_cast<double>(after) / (1024.0 * 1024.0);
    simulation.reset();
  }
  state.SetItemsProcessed(fibers * state.iterations());
}
BENCHMARK(BM_IdleFiberMemory)
    ->ArgNames({"fibers", "fibers_per_node"})
    ->Args({10000, 1})
    ->Args({100000, 1})
    ->Args({10000, 10000})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
