// live/store.hpp — real stores behind the protocol's StoreClient: what a live store and one connection offer.
//
// A LiveStore is a real server (PostgreSQL, Redis) or the in-process reference store, reached with one
// "statement variant": the way a conditional write that returns the previous item (lethe::OpKind::Upsert) is
// written for that server. Some variants are correct (atomic under concurrency), some are the naive code users
// write (a read, then a write); live mode runs the same protocol over each and lets the oracle and the
// linearizability checker say which ones hold (live/run.hpp).
//
// Semantics contract (every variant): for the ops it supports — Get, Put and Upsert (the ops of the built-in
// strategies live mode runs) — a connection's execute() returns exactly the Reply
// lethe::apply (protocol/store_ops.hpp) gives for the store's state at the instant the variant takes effect. A correct
// variant takes effect at one instant between invocation and response (atomic); a naive variant reads at one
// instant and writes at a later one, which is what the linearizability checker catches under concurrency.
// Delete, Evict and Transaction throw std::invalid_argument (live mode has no TTL sweeper and no inbox).
//
// Failure model: execute() returns std::nullopt when the outcome is unknown to the caller — the connection broke
// (a DropPlan, a client-side timeout, a socket error) or the server answered with an error (a statement
// timeout). The operation may or may not have taken effect, and the caller must treat it so. After a broken
// connection broken() is true and the caller opens a new one; after a server error the connection stays usable
// (Postgres rolls back a transaction left open; Redis closes the connection after any failure).
// execute() throws std::runtime_error when the store cannot be used at all any more (Postgres: the table was
// dropped or altered): a set-up error that ends the run, never an unknown outcome to be judged.
//
// Thread safety: one Connection per thread. LiveStore::connect(), stall() and counters() may be called from any
// thread. Values are int64 (times are nanoseconds since the run began; Redis keeps them as decimal strings).
//
// Does not: retry an unknown outcome (the protocol decides), read a clock, or keep a history (live/recorder.hpp).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "protocol/store_ops.hpp"
#include "sim/time.hpp"

namespace live {

// A fault injected into one operation: the connection is closed abruptly (no goodbye to the server) either
// before the operation's first request is sent (it never reaches the server) or right after its
// `after_request`-th request is sent, before its reply is read (the server may well execute it).
struct DropPlan {
  bool before_send = false;
  int after_request = 0;  // 0: no drop after a send; 1: after the first request; 2: after the second; ...
  bool any() const { return before_send || after_request > 0; }
};

// Thread-safe named counters (store-side events for the run's coverage: retries, timeouts, errors, ...).
class Counters {
 public:
  void add(const std::string& name, std::uint64_t n = 1) {
    std::lock_guard<std::mutex> lock(mutex_);
    counts_[name] += n;
  }
  std::map<std::string, std::uint64_t> snapshot() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return counts_;
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::uint64_t> counts_;
};

class Connection {
 public:
  virtual ~Connection() = default;
  // One operation (see the contract). REQUIRES: !broken().
  virtual std::optional<lethe::Reply> execute(const lethe::Op& op, const DropPlan& drop) = 0;
  // True once the connection died or gave up; it is never used again.
  virtual bool broken() const = 0;
};

// How long one connection attempt may take: short for a worker's (a frozen server is noticed, and a worker of
// an abandoned run stops, within seconds; libpq's least is 2 s), longer for set-up and teardown.
inline constexpr sim::Duration kWorkerConnectTimeout = 2 * sim::kSecond;
inline constexpr sim::Duration kAdminConnectTimeout = 5 * sim::kSecond;

struct StoreOptions {
  std::string target;                                 // PostgreSQL conninfo/URI, redis://host:port or unix://path
  std::string variant;                                // one of the store's variants (see store_variants)
  sim::Duration timeout = 100 * sim::kMillisecond;    // statement (Postgres) / command (Redis) timeout; > 0
  std::string table;                                  // Postgres: table to use ("" = a fresh one per run)
  std::string key_prefix;                             // Redis: key prefix ("" = a fresh one per run)
};

class LiveStore {
 public:
  virtual ~LiveStore() = default;
  // A new connection. Throws std::runtime_error when the server cannot be reached.
  virtual std::unique_ptr<Connection> connect() = 0;
  // Blocks the store's writers for about `duration` from a separate connection (Postgres: a transaction that
  // holds an EXCLUSIVE table lock; Redis: a busy server-side script), so that statements time out. Returns
  // false when the store cannot stall (the in-process store).
  virtual bool stall(sim::Duration duration) = 0;
  // Removes what setup created (the run's table or keys), unless the user named the table / prefix. Throws
  // std::runtime_error when it cannot (the server is gone): the caller names what is left.
  virtual void teardown() = 0;
  // Where the data lives, for messages ("table lethe_live_123_1", "keys lethe:live:123:1:*").
  virtual std::string location() const = 0;
  Counters& counters() { return counters_; }

 protected:
  Counters counters_;
};

struct VariantInfo {
  std::string store;     // "postgres" | "redis" | "memory"
  std::string name;
  bool atomic = false;   // expected to be linearizable (the correct statements)
  std::string summary;   // one line: the statement(s) and why they are (in)correct
};

// Every store and variant live mode supports, correct ones first per store.
const std::vector<VariantInfo>& store_variants();
// The variant used when none is given: the store's first correct one.
std::string default_variant(const std::string& store);
const VariantInfo* find_variant(const std::string& store, const std::string& variant);

// Opens `store` ("postgres" | "redis" | "memory"), checks the variant and creates the run's table / key space.
// Throws std::invalid_argument for an unknown store or variant, std::runtime_error when the server cannot be
// reached or set up.
std::unique_ptr<LiveStore> open_store(const std::string& store, const StoreOptions& options);

// Helpers shared by the variants that compute a write on the client (the naive ones, advisory-lock, watch):
// the reply and the item after `op`, by lethe::apply on the one item `current`. `changed` says whether the item
// must be written (an applied Put or Upsert).
struct LocalStep {
  lethe::Reply reply;
  std::optional<lethe::Item> after;
  bool changed = false;
};
LocalStep apply_locally(const lethe::Op& op, const std::optional<lethe::Item>& current);

// Throws std::invalid_argument unless the live stores support op.kind (Get, Put, Upsert).
void require_supported(const lethe::Op& op, const char* store);

}  // namespace live
