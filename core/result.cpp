#include "core/result.hpp"

namespace lethe {

namespace {
std::optional<double> quantile_field(const Quantiles& q, std::string_view which) {
  if (which == "p50") return static_cast<double>(q.p50);
  if (which == "p99") return static_cast<double>(q.p99);
  if (which == "max") return static_cast<double>(q.max);
  return std::nullopt;
}
}  // namespace

std::optional<double> RunResult::field(std::string_view dotted) const {
  if (dotted == "sim_time") return static_cast<double>(sim_time);
  if (dotted == "messages") return static_cast<double>(messages);
  if (dotted == "deliveries") return static_cast<double>(deliveries);
  if (dotted == "effects") return static_cast<double>(effects);
  if (dotted == "duplicate_effects") return static_cast<double>(duplicate_effects);
  if (dotted == "lost_messages") return static_cast<double>(lost_messages);
  if (dotted == "memo_mismatches") return static_cast<double>(memo_mismatches);
  if (dotted == "memo_overwrites") return static_cast<double>(memo_overwrites);
  if (dotted == "waits") return static_cast<double>(waits);
  if (dotted == "sink_calls") return static_cast<double>(sink_calls);
  if (dotted == "calls_per_success") return calls_per_success;
  if (dotted == "linearizable") {
    if (!linearizable.has_value()) return std::nullopt;
    return *linearizable ? 1.0 : 0.0;
  }
  if (dotted == "ok") return ok ? 1.0 : 0.0;
  const auto dot = dotted.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  const std::string_view head = dotted.substr(0, dot);
  const std::string_view tail = dotted.substr(dot + 1);
  if (head == "duplicates") {
    for (std::size_t i = 0; i < kCauseCount; ++i) {
      if (kCauseNames[i] == tail) return static_cast<double>(duplicates[i]);
    }
    return std::nullopt;
  }
  if (head == "wait_time") return quantile_field(wait_time, tail);
  if (head == "recovery_latency") return quantile_field(recovery_latency, tail);
  if (head == "coverage") {
    auto it = coverage.find(std::string(tail));
    if (it == coverage.end()) return 0.0;
    return static_cast<double>(it->second);
  }
  return std::nullopt;
}

const std::vector<std::string>& result_field_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n = {"sim_time", "messages", "deliveries", "effects", "duplicate_effects",
                                  "lost_messages", "memo_mismatches", "memo_overwrites", "waits", "sink_calls", "calls_per_success",
                                  "linearizable", "ok"};
    for (auto cause : kCauseNames) n.push_back("duplicates." + std::string(cause));
    for (const char* q : {"p50", "p99", "max"}) {
      n.push_back(std::string("wait_time.") + q);
      n.push_back(std::string("recovery_latency.") + q);
    }
    return n;
  }();
  return names;
}

}  // namespace lethe
