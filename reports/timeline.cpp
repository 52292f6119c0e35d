#include "reports/timeline.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <set>

#include "protocol/env.hpp"
#include "protocol/store_ops.hpp"
#include "reports/summary.hpp"

namespace reports {

namespace {
bool starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }

bool message_kind(std::string_view kind) {
  static const char* prefixes[] = {"attempt", "decision", "outcome", "ack", "publish", "producer.", "crash_point",
                                   "sink.", "queue.", "kafka.", "client.", "request."};
  for (const char* p : prefixes) {
    if (starts_with(kind, p)) return true;
  }
  return false;
}

bool about_message_key(const sim::TraceRecord& r, std::uint64_t id) {
  if (r.kind_name == "store.execute") return r.a != 0 && lethe::key_message(r.b) == id;
  if (r.kind_name == "store.evict" || r.kind_name == "store.replica") return lethe::key_message(r.a) == id;
  return false;
}

std::string node_name(const std::vector<std::string>& names, std::uint32_t node) {
  return node < names.size() ? names[node] : fmt::format("node{}", node);
}

std::string describe(const sim::TraceRecord& r) {
  if (r.kind_name == "decision") {
    return fmt::format("decision {} (attempt {})", lethe::to_string(static_cast<lethe::Basis>(r.c)), r.b);
  }
  if (r.kind_name == "attempt") return fmt::format("attempt {} begins (processor {})", r.c, r.b);
  if (r.kind_name == "outcome") {
    static const char* outcomes[] = {"executed", "skipped", "failed"};
    return fmt::format("attempt {} {}", r.b, r.c < 3 ? outcomes[r.c] : "?");
  }
  if (r.kind_name == "crash_point") {
    return fmt::format("crash point {} fired (attempt {})", lethe::to_string(static_cast<lethe::CrashPoint>(r.b)),
                       r.c);
  }
  if (r.kind_name == "store.execute") {
    static const char* kinds[] = {"get", "put", "delete", "upsert", "transaction", "evict"};
    const auto kind = r.c / 2;
    return fmt::format("store {} {} ({})", kind < 6 ? kinds[kind] : "?", (r.c & 1) ? "applied" : "rejected",
                       r.a == 0 ? "sweeper" : fmt::format("request {}", r.a));
  }
  if (r.kind_name == "store.evict") return fmt::format("TTL evicts the record (expires_on {})", format_time(static_cast<std::int64_t>(r.b)));
  if (!r.detail.empty()) return fmt::format("{} {}", r.kind_name, r.detail);
  return fmt::format("{} a={} b={} c={}", r.kind_name, r.a, r.b, r.c);
}

std::string dot_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}
}  // namespace

std::vector<sim::TraceRecord> message_records(const std::vector<sim::TraceRecord>& trace, std::uint64_t id) {
  std::vector<sim::TraceRecord> out;
  std::set<std::uint32_t> nodes;
  for (const auto& r : trace) {
    if ((message_kind(r.kind_name) && r.a == id) || about_message_key(r, id)) {
      out.push_back(r);
      if (r.kind_name == "attempt") nodes.insert(r.node);
    }
  }
  // Crashes, restarts and pauses of the nodes that worked on the message.
  for (const auto& r : trace) {
    if ((r.kind_name == "crash" || r.kind_name == "restart" || r.kind_name == "pause") && nodes.count(r.node) > 0) {
      out.push_back(r);
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.time < y.time; });
  return out;
}

std::string timeline_text(const std::vector<sim::TraceRecord>& records, const std::vector<std::string>& names) {
  std::string out;
  for (const auto& r : records) {
    out += fmt::format("  {:>10}  {:<14}  {}\n", format_time(r.time), node_name(names, r.node), describe(r));
  }
  return out;
}

std::string timeline_dot(const std::vector<sim::TraceRecord>& records, const std::vector<std::string>& names,
                         std::uint64_t id) {
  std::string out = fmt::format("digraph \"message {}\" {{\n  rankdir=LR;\n  node [shape=box, fontsize=10];\n", id);
  out += fmt::format("  label=\"lethe: timeline of message {} (virtual time)\"; labelloc=t;\n", id);
  std::vector<std::uint32_t> lanes;
  for (const auto& r : records) {
    if (std::find(lanes.begin(), lanes.end(), r.node) == lanes.end()) lanes.push_back(r.node);
  }
  for (std::size_t lane = 0; lane < lanes.size(); ++lane) {
    out += fmt::format("  subgraph cluster_{} {{\n    label=\"{}\"; style=rounded;\n", lane,
                       dot_escape(node_name(names, lanes[lane])));
    std::string previous;
    for (std::size_t i = 0; i < records.size(); ++i) {
      const auto& r = records[i];
      if (r.node != lanes[lane]) continue;
      const std::string color = r.kind_name == "crash" || r.kind_name == "crash_point" ? "red"
                                : r.kind_name == "sink.execute"                        ? "darkgreen"
                                : r.kind_name == "decision"                            ? "blue"
                                                                                       : "black";
      out += fmt::format("    e{} [label=\"{}\\n{}\", color={}];\n", i, format_time(r.time), dot_escape(describe(r)),
                         color);
      if (!previous.empty()) out += fmt::format("    {} -> e{} [style=bold];\n", previous, i);
      previous = fmt::format("e{}", i);
    }
    out += "  }\n";
  }
  // Hand-offs: each event to the next event on another lane.
  for (std::size_t i = 0; i + 1 < records.size(); ++i) {
    if (records[i].node != records[i + 1].node) out += fmt::format("  e{} -> e{} [style=dashed, color=gray];\n", i, i + 1);
  }
  out += "}\n";
  return out;
}

}  // namespace reports
