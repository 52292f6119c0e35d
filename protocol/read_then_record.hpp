// protocol/read_then_record.hpp — what the two one-phase strategies share (protocol/check_then_insert.cpp and
// protocol/record_after.cpp): read, run, record; no in-flight mark.
//
// protect(): read the record (a consistent get, retried on unknown outcomes like every step); skip a completed
// record (returning its memoized value when memoize), unless it is expired and expired_wins; otherwise (no
// record, an expired one, or one that is not completed: these strategies never wait) run the effect between the
// two crash points, then write a completed record (record(), the one step the two differ in) and report through
// hooks.completed whether it landed. The decision basis is Completed (skip), ExpiredCompleted (a completed record
// that expired) or Absent (anything else: no record, or one that is not completed), StoreUnavailable when the read
// never answered. Nothing marks the work as in flight, so a crash after the effect, or a concurrent caller, runs
// it again.
//
// read_then_record_entry<S>(name, description) is the registry entry of such a strategy S: what they read,
// require, report and let through is the same.
//
// Does not: wait, take over, or retry the effect.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "protocol/registry.hpp"
#include "protocol/strategy_support.hpp"

namespace lethe {

class ReadThenRecordStrategy : public Strategy {
 public:
  // REQUIRES: settings holds the keys of read_then_record_keys() (make_strategy checks it).
  ReadThenRecordStrategy(const ProtocolSection& settings, StoreClient& store, Clock& clock, ProtocolHooks& hooks);

  ProtectResult protect(MessageId id, ProcessorId processor, AttemptId attempt, const Effect& effect) final;

 protected:
  // Writes the completed record of `call` (read at `read_at`, the effect gave `value`); true if it landed.
  virtual bool record(const Call& call, sim::Time read_at, std::uint64_t value) = 0;

  sim::Duration ttl() const { return ttl_; }
  bool memoize() const { return memoize_; }
  // Precedence expired-first (expired_wins). Their records are completed ones only, so completed-first is
  // expiry-ignored here.
  bool expired_wins() const { return expired_wins_; }
  StoreClient& store() { return store_; }
  Clock& clock() { return clock_; }

 private:
  sim::Duration ttl_;
  bool memoize_;
  bool expired_wins_;
  StoreClient& store_;
  Clock& clock_;
  Reporter reporter_;
};

// The [protocol] keys they read, the bases they report and the windows they leave open.
std::vector<SettingKey> read_then_record_keys();
std::vector<Basis> read_then_record_bases();
std::vector<DuplicateWindow> read_then_record_windows();

// The registry entry of S, a ReadThenRecordStrategy constructible from (settings, store, clock, hooks).
template <class S>
StrategyInfo read_then_record_entry(std::string name, std::string description) {
  StrategyInfo info;
  info.name = std::move(name);
  info.description = std::move(description);
  info.keys = read_then_record_keys();
  info.factory = [](const ProtocolSection& settings, StoreClient& store, Clock& clock, ProtocolHooks& hooks,
                    sim::Rng /*rng*/) -> std::unique_ptr<Strategy> {
    return std::make_unique<S>(settings, store, clock, hooks);
  };
  info.bases = read_then_record_bases();
  info.windows = read_then_record_windows();
  return info;
}

}  // namespace lethe
