// render_scenario_toml: a config back to canonical TOML (see scenario_loader.hpp).
//
// Every key is written, in docs/scenarios.md's order, so the output documents the
// effective values; optional keys that are off (nullopt) are left out, which
// is how the loader reads "off". Values use the loader's own languages
// (format_duration, Distribution::to_string, "N/s" rates) so they read back
// exactly.
#include <fmt/format.h>

#include <string>

#include "scenario/loader.hpp"
#include "scenario/text.hpp"

namespace scenario {
namespace {

using text::toml_quote;

std::string duration(sim::Duration value) { return toml_quote(sim::format_duration(value)); }
std::string distribution(const sim::Distribution& value) { return toml_quote(value.to_string()); }
std::string rate(const lethe::Rate& value) { return toml_quote(fmt::format("{}/s", value.per_second)); }
std::string boolean(bool value) { return value ? "true" : "false"; }
std::string number(double value) { return text::format_number(value); }

template <class E>
std::string word(E value) {
  return toml_quote(lethe::to_string(value));
}

std::string strings(const std::vector<std::string>& values) {
  std::vector<std::string> quoted;
  for (const std::string& value : values) quoted.push_back(toml_quote(value));
  return "[" + text::join(quoted, ", ") + "]";
}

std::string commit(const lethe::Commit& value) {
  if (value.mode == lethe::CommitMode::AfterEach) return word(value.mode);
  return toml_quote(fmt::format("interval({})", sim::format_duration(value.interval)));
}

std::string ttl_eviction(const lethe::TtlEviction& value) {
  if (value.kind == lethe::TtlEvictionKind::Exact) return word(value.kind);
  return toml_quote(fmt::format("lazy(max={})", sim::format_duration(value.lazy_max)));
}

std::string poll(const lethe::Poll& value) {
  if (value.kind == lethe::PollKind::Distribution) return distribution(value.interval);
  return toml_quote(fmt::format("backoff(base={}, factor={}, cap={})", sim::format_duration(value.backoff_base),
                                value.backoff_factor, sim::format_duration(value.backoff_cap)));
}

std::string poll_read(const lethe::PollRead& value) {
  if (value.kind == lethe::PollReadKind::Consistent) return word(value.kind);
  return toml_quote(fmt::format("eventual(lag={})", value.lag.to_string()));
}

std::string backoff(const lethe::Backoff& value) {
  switch (value.kind) {
    case lethe::BackoffKind::None: return word(value.kind);
    case lethe::BackoffKind::Constant:
      return toml_quote(fmt::format("constant({})", sim::format_duration(value.delay)));
    case lethe::BackoffKind::Exponential:
      return toml_quote(fmt::format("exponential(base={}, cap={})", sim::format_duration(value.base),
                                    sim::format_duration(value.cap)));
  }
  return word(value.kind);
}

// Time result fields take a duration in [expect] ("< 5s"); write whole, non-negative ns values that way.
std::string expectation_number(const lethe::Expectation& expectation) {
  const std::string& key = expectation.key;
  bool time_field = key == "sim_time" || key.rfind("wait_time.", 0) == 0 || key.rfind("recovery_latency.", 0) == 0;
  double value = expectation.number;
  if (time_field && value >= 0 && value < 9e18 && value == static_cast<double>(static_cast<sim::Duration>(value))) {
    return sim::format_duration(static_cast<sim::Duration>(value));
  }
  return fmt::format("{}{}", value, expectation.percent ? "%" : "");
}

class Writer {
 public:
  void table(std::string_view header) { out_ += fmt::format("{}[{}]\n", out_.empty() ? "" : "\n", header); }
  void array_entry(std::string_view header) { out_ += fmt::format("\n[[{}]]\n", header); }
  void key(std::string_view name, const std::string& value) { out_ += fmt::format("{} = {}\n", name, value); }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

}  // namespace

std::string render_scenario_toml(const lethe::ScenarioConfig& config) {
  Writer w;
  w.table("scenario");
  w.key("name", toml_quote(config.scenario.name));
  w.key("description", toml_quote(config.scenario.description));
  w.key("tags", strings(config.scenario.tags));

  w.table("run");
  w.key("seeds", fmt::format("{}", config.run.seeds));
  w.key("duration", duration(config.run.duration));
  w.key("drain", boolean(config.run.drain));

  const lethe::TopologySection& topology = config.topology;
  w.table("topology");
  w.key("source", word(topology.source));
  w.key("consumers", fmt::format("{}", topology.consumers));
  w.key("processors", strings(topology.processors));
  w.key("partitions", fmt::format("{}", topology.partitions));
  w.key("partitioner", word(topology.partitioner));
  w.key("commit", commit(topology.commit));
  w.key("visibility_timeout", duration(topology.visibility_timeout));
  w.key("clients", fmt::format("{}", topology.clients));
  w.key("client_timeout", duration(topology.client_timeout));
  w.key("client_retries", fmt::format("{}", topology.client_retries));
  w.key("client_backoff", backoff(topology.client_backoff));
  w.key("client_jitter", word(topology.client_jitter));

  const lethe::WorkloadSection& workload = config.workload;
  w.table("workload");
  w.key("messages", fmt::format("{}", workload.messages));
  w.key("rate", rate(workload.rate));
  w.key("processing_time", distribution(workload.processing_time));
  w.key("result_size", fmt::format("{}", workload.result_size));
  w.table("workload.redelivery");
  w.key("fraction", number(workload.redelivery.fraction));
  w.key("copies", fmt::format("{}", workload.redelivery.copies));
  w.key("delay", distribution(workload.redelivery.delay));

  const lethe::NetworkSection& network = config.network;
  w.table("network");
  w.key("latency", distribution(network.latency));
  w.key("loss", number(network.loss));
  w.key("ack_loss", number(network.ack_loss));
  w.key("duplicate", number(network.duplicate));
  w.key("rpc_timeout", duration(network.rpc_timeout));
  for (const lethe::NetworkPartition& partition : network.partitions) {
    w.array_entry("network.partition");
    w.key("at", duration(partition.at));
    w.key("for", duration(partition.for_duration));
    w.key("between", strings({lethe::to_string(partition.first), lethe::to_string(partition.second)}));
  }
  for (const lethe::NetworkLink& link : network.links) {
    w.array_entry("network.link");
    w.key("between", strings({lethe::to_string(link.first), lethe::to_string(link.second)}));
    w.key("latency", distribution(link.latency));
  }

  const lethe::FaultsSection& faults = config.faults;
  w.table("faults");
  if (faults.crash_every) w.key("crash_every", distribution(*faults.crash_every));
  w.key("restart_after", distribution(faults.restart_after));
  if (faults.pause_every) w.key("pause_every", distribution(*faults.pause_every));
  w.key("pause_for", distribution(faults.pause_for));
  if (faults.clock_skew) w.key("clock_skew", distribution(*faults.clock_skew));
  if (faults.rebalance_every) w.key("rebalance_every", distribution(*faults.rebalance_every));
  w.key("swarm", boolean(faults.swarm));
  w.table("faults.crash_points");
  w.key("after_start_before_effect", number(faults.crash_points.after_start_before_effect));
  w.key("after_effect_before_complete", number(faults.crash_points.after_effect_before_complete));
  w.key("after_complete_before_ack", number(faults.crash_points.after_complete_before_ack));

  w.table("store");
  w.key("latency", distribution(config.store.latency));
  w.key("ttl_eviction", ttl_eviction(config.store.ttl_eviction));

  const lethe::ProtocolSection& protocol = config.protocol;
  w.table("protocol");
  w.key("kind", toml_quote(protocol.kind));
  if (protocol.max_processing_time) w.key("max_processing_time", duration(*protocol.max_processing_time));
  if (protocol.ttl) w.key("ttl", duration(*protocol.ttl));
  w.key("poll", poll(protocol.poll));
  w.key("max_wait", duration(protocol.max_wait));
  w.key("on_max_wait", word(protocol.on_max_wait));
  w.key("memoize", boolean(protocol.memoize));
  w.key("takeover", word(protocol.takeover));
  w.key("complete", word(protocol.complete));
  w.key("poll_read", poll_read(protocol.poll_read));
  w.key("expires_on", word(protocol.expires_on));
  w.key("expired_wins", boolean(protocol.expired_wins));

  const lethe::SinkSection& sink = config.sink;
  w.table("sink");
  w.key("kind", word(sink.kind));
  w.key("idempotent", boolean(sink.idempotent));
  w.key("latency", distribution(sink.latency));
  w.key("timeout", duration(sink.timeout));
  w.key("retries", fmt::format("{}", sink.retries));
  w.key("backoff", backoff(sink.backoff));
  w.key("jitter", word(sink.jitter));
  w.key("capacity", rate(sink.capacity));
  for (const lethe::SinkOutage& outage : sink.outages) {
    w.array_entry("sink.outage");
    w.key("at", duration(outage.at));
    w.key("for", duration(outage.for_duration));
  }

  w.table("producer");
  w.key("mode", word(config.producer.mode));
  w.key("crash_between_commit_and_publish", number(config.producer.crash_between_commit_and_publish));

  w.table("expect");
  for (const lethe::Expectation& expectation : config.expect) {
    w.key(toml_quote(expectation.key),
          toml_quote(fmt::format("{} {}", lethe::to_string(expectation.op), expectation_number(expectation))));
  }
  return w.take();
}

}  // namespace scenario
