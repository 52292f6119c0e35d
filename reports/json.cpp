#include "reports/json.hpp"

#include <fmt/format.h>
#include <limits>

namespace reports {

namespace {
std::string fmt_hash(std::uint64_t h) { return fmt::format("{:016x}", h); }
nlohmann::ordered_json quantiles_json(const lethe::Quantiles& q) {
  nlohmann::ordered_json j;
  j["p50"] = q.p50;
  j["p99"] = q.p99;
  j["max"] = q.max;
  j["count"] = q.count;  // extension: how many samples the quantiles are over
  return j;
}
lethe::Quantiles quantiles_from(const nlohmann::json& j) {
  lethe::Quantiles q;
  q.p50 = j.value("p50", std::int64_t{0});
  q.p99 = j.value("p99", std::int64_t{0});
  q.max = j.value("max", std::int64_t{0});
  q.count = j.value("count", std::uint64_t{0});
  return q;
}
}  // namespace

nlohmann::ordered_json to_json(const lethe::RunResult& r) {
  nlohmann::ordered_json j;
  j["scenario"] = r.scenario;
  j["seed"] = r.seed;
  j["trace_hash"] = fmt_hash(r.trace_hash);
  j["sim_time"] = r.sim_time;
  j["messages"] = r.messages;
  j["deliveries"] = r.deliveries;
  j["effects"] = r.effects;
  j["duplicate_effects"] = r.duplicate_effects;
  nlohmann::ordered_json causes;
  for (std::size_t i = 0; i < lethe::kCauseCount; ++i) causes[std::string(lethe::kCauseNames[i])] = r.duplicates[i];
  j["duplicates"] = causes;
  j["lost_messages"] = r.lost_messages;
  j["memo_mismatches"] = r.memo_mismatches;
  j["waits"] = r.waits;
  j["wait_time"] = quantiles_json(r.wait_time);
  j["sink_calls"] = r.sink_calls;
  j["calls_per_success"] = r.calls_per_success;
  j["recovery_latency"] = quantiles_json(r.recovery_latency);
  if (r.linearizable.has_value()) {
    j["linearizable"] = *r.linearizable;
  } else {
    j["linearizable"] = nullptr;
  }
  nlohmann::ordered_json expectations = nlohmann::ordered_json::array();
  for (const auto& e : r.expectations) {
    nlohmann::ordered_json x;
    x["key"] = e.key;
    x["op"] = e.op;
    x["want"] = e.want;
    x["got"] = e.got;
    x["ok"] = e.ok;
    expectations.push_back(x);
  }
  j["expectations"] = expectations;
  j["ok"] = r.ok;
  nlohmann::ordered_json coverage = nlohmann::ordered_json::object();
  for (const auto& [k, v] : r.coverage) coverage[k] = v;
  j["coverage"] = coverage;
  if (!r.swarm.empty()) j["swarm"] = r.swarm;
  j["memo_overwrites"] = r.memo_overwrites;
  j["trace_events"] = r.trace_events;
  return j;
}

lethe::RunResult result_from_json(const nlohmann::json& j) {
  lethe::RunResult r;
  r.scenario = j.value("scenario", std::string{});
  r.seed = j.value("seed", std::uint64_t{0});
  r.trace_hash = std::stoull(j.value("trace_hash", std::string("0")), nullptr, 16);
  r.sim_time = j.value("sim_time", std::int64_t{0});
  r.messages = j.value("messages", std::uint64_t{0});
  r.deliveries = j.value("deliveries", std::uint64_t{0});
  r.effects = j.value("effects", std::uint64_t{0});
  r.duplicate_effects = j.value("duplicate_effects", std::uint64_t{0});
  if (j.contains("duplicates")) {
    for (std::size_t i = 0; i < lethe::kCauseCount; ++i) {
      r.duplicates[i] = j["duplicates"].value(std::string(lethe::kCauseNames[i]), std::uint64_t{0});
    }
  }
  r.lost_messages = j.value("lost_messages", std::uint64_t{0});
  r.memo_mismatches = j.value("memo_mismatches", std::uint64_t{0});
  r.waits = j.value("waits", std::uint64_t{0});
  if (j.contains("wait_time")) r.wait_time = quantiles_from(j["wait_time"]);
  r.sink_calls = j.value("sink_calls", std::uint64_t{0});
  r.calls_per_success = j.value("calls_per_success", 0.0);
  if (j.contains("recovery_latency")) r.recovery_latency = quantiles_from(j["recovery_latency"]);
  if (j.contains("linearizable") && j["linearizable"].is_boolean()) r.linearizable = j["linearizable"].get<bool>();
  if (j.contains("expectations")) {
    for (const auto& x : j["expectations"]) {
      lethe::ExpectationResult e;
      e.key = x.value("key", std::string{});
      e.op = x.value("op", std::string{});
      e.want = x.value("want", std::string{});
      // "got": null is an expectation that could not be evaluated (NaN when written).
      e.got = x.contains("got") && x["got"].is_number() ? x["got"].get<double>()
                                                       : std::numeric_limits<double>::quiet_NaN();
      e.ok = x.value("ok", false);
      r.expectations.push_back(e);
    }
  }
  r.ok = j.value("ok", true);
  if (j.contains("coverage")) {
    for (const auto& [k, v] : j["coverage"].items()) r.coverage[k] = v.get<std::uint64_t>();
  }
  if (j.contains("swarm")) r.swarm = j["swarm"].get<std::vector<std::string>>();
  r.memo_overwrites = j.value("memo_overwrites", std::uint64_t{0});
  r.trace_events = j.value("trace_events", std::uint64_t{0});
  return r;
}

}  // namespace reports
