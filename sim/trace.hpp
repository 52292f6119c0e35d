// sim/trace.hpp — structured trace records and the determinism fingerprint.
//
// Every event that changes what happens in a simulation (a send, a delivery, a
// drop, a crash, a store operation, an effect, a decision) is recorded here as
// a fixed-shape record: virtual time, kind, node, and three integer fields.
// The trace hash is a stable 64-bit hash over all records in order; two runs
// with the same seed must produce the same hash on every build (it is the
// determinism fingerprint). Kind names are hashed at compile time, so adding a
// kind never changes the hash of runs that do not use it.
//
// Keeping the records in memory and writing JSON lines are optional and cost
// more; the hash is always computed.
//
// Does not: interpret records (the model layer gives them meaning), or hash the
// optional free-text detail (it is for people and may change wording freely).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "sim/time.hpp"

namespace sim {

// A trace record kind: a name, its stable 64-bit FNV-1a hash, and what its three integer fields hold.
// Field names are for people (JSON lines, timelines) and are not hashed, so naming or renaming a field never
// changes a trace hash. A field name:
//   ""            the field is unused (written only if it is not zero, under "a", "b" or "c");
//   "x_node"      a node id, written as the node's name under "x";
//   "high/low"    two 32-bit halves, written as "high" (bits 63..32) and "low" (bits 31..0);
//   anything else the integer itself under that name.
struct TraceKind {
  std::string_view name;
  std::uint64_t id;
  std::array<std::string_view, 3> fields;
  constexpr explicit TraceKind(std::string_view kind_name, std::string_view a = {}, std::string_view b = {},
                               std::string_view c = {})
      : name(kind_name), id(fnv1a(kind_name)), fields{a, b, c} {}

  static constexpr std::uint64_t fnv1a(std::string_view text) {
    std::uint64_t hash = 0xcbf29ce484222325ull;
    for (char c : text) {
      hash ^= static_cast<unsigned char>(c);
      hash *= 0x100000001b3ull;
    }
    return hash;
  }
};

// The node of a record that belongs to no node but to the simulation itself (the schedule policy): written as
// "simulation" where a node's name goes.
inline constexpr std::uint32_t kSimulationNode = 0xffffffffu;

// Kernel kinds (model code defines its own TraceKind constants).
namespace kinds {
inline constexpr TraceKind kSpawn{"spawn", "incarnation"};
inline constexpr TraceKind kCrash{"crash", "incarnation"};
inline constexpr TraceKind kRestart{"restart", "incarnation"};
inline constexpr TraceKind kPause{"pause", "duration_ns"};
inline constexpr TraceKind kSend{"send", "tag", "to_node", "response"};
inline constexpr TraceKind kDeliver{"deliver", "tag", "from_node"};
inline constexpr TraceKind kDropLoss{"drop.loss", "tag", "to_node", "response"};          // request lost in the network
inline constexpr TraceKind kDropAck{"drop.ack", "tag", "to_node", "response"};            // response lost (the lost ACK)
inline constexpr TraceKind kDropPartition{"drop.partition", "tag", "peer_node", "where"};
inline constexpr TraceKind kDropDown{"drop.down", "tag", "peer_node", "where"};          // destination crashed
inline constexpr TraceKind kDuplicate{"duplicate", "tag", "to_node", "response"};         // network duplicated a message
inline constexpr TraceKind kRpcTimeout{"rpc.timeout", "tag"};
inline constexpr TraceKind kLateResponse{"rpc.late", "tag"};       // response arrived after the caller gave up
// The schedule policy, recorded once at the first run_until when it is not FIFO (so FIFO runs keep their hash):
// policy 1 = random, 2 = pct (with its depth and step bound).
inline constexpr TraceKind kSchedule{"schedule", "policy", "depth", "steps"};
}  // namespace kinds

struct TraceRecord {
  Time time = 0;
  std::uint64_t kind = 0;
  std::string_view kind_name;
  std::uint32_t node = 0;
  std::uint64_t a = 0, b = 0, c = 0;
  std::string detail;  // not hashed
  std::array<std::string_view, 3> fields{};  // the kind's field names (TraceKind::fields)
};

class Trace {
 public:
  // Records one event. Cheap when neither keeping nor writing: a few multiplies.
  void record(Time time, const TraceKind& kind, std::uint32_t node, std::uint64_t a = 0, std::uint64_t b = 0,
              std::uint64_t c = 0) {
    mix(static_cast<std::uint64_t>(time));
    mix(kind.id);
    mix(node);
    mix(a);
    mix(b);
    mix(c);
    ++count_;
    if (detailed_) store(time, kind, node, a, b, c, {});
  }
  // Same, with a human-readable detail kept only when detailed() (build it only then).
  void record_detail(Time time, const TraceKind& kind, std::uint32_t node, std::uint64_t a, std::uint64_t b,
                     std::uint64_t c, std::string detail) {
    record_hash_only(time, kind, node, a, b, c);
    if (detailed_) store(time, kind, node, a, b, c, std::move(detail));
  }

  // Keep records in memory (for replay, explain, DOT timelines) and/or write JSON lines.
  void keep_records(bool keep) {
    keep_ = keep;
    detailed_ = keep_ || out_ != nullptr || observer_ != nullptr;
  }
  // Keep (and observe) only the records of these kinds (by name; empty: every kind). A run that needs a few kinds
  // (`lethe run --events` reads 6 of them) then holds a few records per message instead of its whole trace.
  void keep_only(std::vector<std::string_view> kind_names) { keep_kinds_ = std::move(kind_names); }
  // Hands each record of the kept kinds to `observer` as it is recorded, kept or not: a reader of a few kinds
  // streams them instead of holding them. The observer must not record into this trace.
  void observe(std::function<void(const TraceRecord&)> observer) {
    observer_ = std::move(observer);
    detailed_ = keep_ || out_ != nullptr || observer_ != nullptr;
  }
  void write_jsonl(std::ostream* out);
  void set_node_name(std::uint32_t node, std::string name);
  bool detailed() const { return detailed_; }

  std::uint64_t hash() const { return finalize(hash_); }
  std::uint64_t count() const { return count_; }
  const std::vector<TraceRecord>& records() const { return records_; }

 private:
  void record_hash_only(Time time, const TraceKind& kind, std::uint32_t node, std::uint64_t a, std::uint64_t b,
                        std::uint64_t c) {
    mix(static_cast<std::uint64_t>(time));
    mix(kind.id);
    mix(node);
    mix(a);
    mix(b);
    mix(c);
    ++count_;
  }
  void mix(std::uint64_t value) {
#ifndef LETHE_NO_TRACE_HASH  // only for measuring the hash's cost (cmake -DLETHE_TRACE_HASH=OFF); always on otherwise
    hash_ ^= value;
    hash_ *= 0x9E3779B97F4A7C15ull;
    hash_ ^= hash_ >> 29;
#else
    (void)value;
#endif
  }
  static std::uint64_t finalize(std::uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
  }
  void write_field(std::ostream& out, std::string_view field, char letter, std::uint64_t value) const;
  void write_node(std::ostream& out, std::uint64_t node) const;
  void store(Time time, const TraceKind& kind, std::uint32_t node, std::uint64_t a, std::uint64_t b,
             std::uint64_t c, std::string detail);

  std::uint64_t hash_ = 0x6c657468652d7631ull;  // "lethe-v1"
  std::uint64_t count_ = 0;
  bool detailed_ = false;
  bool keep_ = false;
  std::ostream* out_ = nullptr;
  std::vector<std::string> node_names_;
  std::vector<std::string_view> keep_kinds_;
  std::function<void(const TraceRecord&)> observer_;
  std::vector<TraceRecord> records_;
};

}  // namespace sim
