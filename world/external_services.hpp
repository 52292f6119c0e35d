// world/external_services.hpp — Maelstrom's services besides lin-kv for external nodes (docs/external.md,
// "Services"): lin-tso, a timestamp oracle; seq-kv, sequentially consistent; lww-kv, last write wins over replicas
// that lag. Each is a state of its own beside lethe's store (their operations are not in the store's history, so
// the store's linearizability check does not judge them: check/weak_kv.hpp's judge_weak_kv does, each against its
// own model); the node reaches them over the network on the store's node.
//
// Keys and values are JSON texts, compared as written. Every choice (the replica an operation reaches, how stale a
// read is, how long a replica lags) is drawn from the run's seeded stream of the service; maps are ordered.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "check/weak_kv.hpp"
#include "sim/random.hpp"
#include "sim/simulation.hpp"

namespace lethe {

// The outcome of one kv operation: ok (with the value a read found), or Maelstrom's error 20 (absent) or 22 (the
// value differs from cas's `from`; `found` is the value there).
struct KvAnswer {
  int code = 0;                      // 0: ok; 20 or 22
  std::optional<std::string> value;  // read: the value's JSON text; cas refused with 22: the value found
  bool stale = false;  // it saw a value (or an absence) other than the latest write's: lin-kv would differ
};

// lin-tso: each ts is above every one before it in the run.
class LinTso {
 public:
  std::uint64_t next() { return ++last_; }

 private:
  std::uint64_t last_ = 0;
};

// seq-kv: one total order of writes (versions 1, 2, ...). A write, and a cas that holds, takes effect at the head
// (cas compares at the head). A read sees the store as of a version drawn from the last one its node saw to the
// head, which the node has then seen: a node may read stale values, never older than what it read or wrote
// before, and every node sees the writes in one order (sequential consistency, not linearizability).
class SeqKv {
 public:
  explicit SeqKv(sim::Rng rng) : rng_(rng) {}
  // `linearizable` (a counterfactual replay, KvLinearizable): the read is at the head, its draw still made.
  KvAnswer read(const std::string& node, const std::string& key, bool linearizable = false);
  KvAnswer write(const std::string& node, const std::string& key, const std::string& value);
  KvAnswer cas(const std::string& node, const std::string& key, const std::string& from, const std::string& to,
               bool create);

 private:
  std::optional<std::string> at(const std::string& key, std::uint64_t version) const;
  void put(const std::string& node, const std::string& key, const std::string& value);

  sim::Rng rng_;
  std::uint64_t head_ = 0;
  std::map<std::string, std::vector<std::pair<std::uint64_t, std::string>>> versions_;  // key -> (version, value)
  std::map<std::string, std::uint64_t> seen_;                                           // node -> version seen
};

// lww-kv: kReplicas replicas. Each operation reaches one replica, drawn at random, and runs there alone (a cas
// compares that replica's value). A write, and a cas that holds, is stamped (later writes, higher stamps) and
// reaches each other replica after a lag drawn from 0 to kMaxLag, where it replaces only a lower stamp: replicas
// disagree for a while, two cas on two replicas may both hold, and the last write wins in the end.
class LwwKv {
 public:
  static constexpr std::size_t kReplicas = 3;
  static constexpr sim::Duration kMaxLag = 500 * sim::kMillisecond;

  LwwKv(sim::Simulation& simulation, sim::Rng rng) : simulation_(simulation), rng_(rng) {}
  // `linearizable` (a counterfactual replay, KvLinearizable): the read or cas sees the latest write of any replica,
  // its replica still drawn and a cas's write still made there.
  KvAnswer read(const std::string& key, bool linearizable = false);
  KvAnswer write(const std::string& key, const std::string& value);
  KvAnswer cas(const std::string& key, const std::string& from, const std::string& to, bool create,
               bool linearizable = false);

 private:
  struct Entry {
    std::string value;
    std::uint64_t stamp = 0;
  };
  std::size_t replica();
  const Entry* latest(std::size_t replica, const std::string& key, bool linearizable) const;
  bool stale(const Entry* seen, const std::string& key) const;
  void put(std::size_t replica, const std::string& key, const std::string& value);
  void apply(std::size_t replica, const std::string& key, const Entry& entry);

  sim::Simulation& simulation_;
  sim::Rng rng_;
  std::uint64_t stamps_ = 0;
  std::array<std::map<std::string, Entry>, kReplicas> replicas_;
};

}  // namespace lethe
