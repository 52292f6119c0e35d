// protocol/local_cache.hpp — a consumer's own cache of the dedupe records it saw completed (protocol.local_cache,
// as AWS Lambda Powertools' use_local_cache): consulted before the store, so a redelivery to the same consumer is
// skipped with the cached result without a store call.
//
// Holds completed records only: an in-flight record changes outside the consumer (completed, taken over,
// released), a completed one does not, unless a blind completion or a later run after expiry replaces it. An
// entry is trusted until the earlier of its cache ttl (from when it was cached) and the record's own expires_on,
// both on the consumer's clock; past `size` entries the least recently used goes first. It lives in the
// strategy, so in the consumer's memory: a crash empties it and another consumer (after a rebalance) has its own.
//
// Does not: read the store, know what a decision is, or outlive its strategy.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

#include "core/settings.hpp"
#include "protocol/store_ops.hpp"

namespace lethe {

class LocalRecordCache {
 public:
  explicit LocalRecordCache(LocalCache setting) : setting_(setting) {}

  bool enabled() const { return setting_.size > 0; }
  // The completed record cached under `key`, if still trusted at `now` (the consumer's clock); marks it used.
  std::optional<Item> find(Key key, sim::Time now);
  // Caches `record` under `key` at `now`. REQUIRES: record.completed_at is set. Does nothing when disabled.
  void put(Key key, const Item& record, sim::Time now);
  void erase(Key key);
  std::size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    Item record;
    sim::Time trusted_until = 0;
    std::uint64_t used = 0;  // the use counter when last found or put: the lowest is the least recently used
  };
  void forget(std::map<Key, Entry>::iterator entry);

  LocalCache setting_;
  std::map<Key, Entry> entries_;
  std::map<std::uint64_t, Key> by_use_;  // Entry::used -> key
  std::uint64_t uses_ = 0;
};

}  // namespace lethe
