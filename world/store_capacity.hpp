// world/store_capacity.hpp — store.capacity's order of use (docs/scenarios.md store.capacity), a part of Store
// (world/store_server.hpp): which of the store's dedupe records was written least recently, so that the store
// evicts that one when a write takes it past its capacity.
//
// A use is a write that changes the record (its start write, its completion write, a takeover). A read is not
// one, nor a conditional write that was refused: Apache Camel's MemoryIdempotentRepository keeps its keys in
// an LRU map (SimpleLRUCache) whose order is that of the last write of each key, and its add() of a key it
// holds reads it and writes nothing.
//
// Memory: two B-tree entries per record held. Deterministic: the order is by a counter, never by pointer or
// hash. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "core/btree.hpp"
#include "protocol/store_ops.hpp"
#include "sim/time.hpp"

namespace lethe {

class RecentWrites {
 public:
  // `key` was written at `at`: it is now the most recent.
  void written(Key key, sim::Time at);
  // `key` left the store (deleted or evicted), or stops counting (a counterfactual keeps it): no longer ordered.
  void removed(Key key);
  // Records ordered (held and counting).
  std::size_t size() const { return stamp_.size(); }
  // The least recently written record, if any.
  std::optional<Key> least_recent() const;
  // Of a record ordered: when it was last written, and how many writes of other records came since.
  struct LastWrite {
    sim::Time at = 0;
    std::uint64_t writes_since = 0;
  };
  std::optional<LastWrite> last_write(Key key) const;

 private:
  struct Stamp {
    std::uint64_t number = 0;  // the write's number (1, 2, ... over every write)
    sim::Time at = 0;
  };
  BTreeMap<Key, Stamp> stamp_;          // key -> its last write
  BTreeMap<std::uint64_t, Key> order_;  // that number -> key: the first entry is the least recent
  std::uint64_t next_ = 1;
};

// The tables whose records store.capacity bounds: the dedupe records (a strategy's own, and the inbox's rows).
inline bool bounded_by_capacity(Key key) {
  const Table table = key_table(key);
  return table == Table::Dedupe || table == Table::Inbox;
}

}  // namespace lethe
