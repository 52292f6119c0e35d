// protocol/store_ops.hpp — the store's data and operations, as a pure sequential specification.
//
// The store is a map Key -> Item. Operations are plain values; apply() executes
// one atomically on a state and returns the reply. The same apply() is used by
// the simulated store server (world/store_server.hpp), by the linearizability
// checker's model of the store, and as the reference for real stores (live
// mode): one definition of what each operation means.
//
// Operations (what real databases offer, DynamoDB / Postgres terms):
//   Get         read one item (an expired item that was not evicted yet is returned, as DynamoDB does)
//   Put         unconditional overwrite
//   Delete      delete, unconditional, or only if `condition` holds (DeleteItem with a ConditionExpression;
//               DELETE .. WHERE): a rejected delete changes nothing and replies applied = false
//   Upsert      conditional update-or-insert returning the previous item (UpdateItem with a
//               ConditionExpression and ReturnValues=ALL_OLD; INSERT .. ON CONFLICT .. RETURNING)
//   Transaction several keys, all conditions checked first, then all updates applied, atomically
//               (TransactWriteItems; BEGIN .. COMMIT) — the inbox and outbox patterns
//   Evict       the TTL sweeper: delete the item if it exists and expires_on <= at
//
// Times inside operations (started_at, expires_on, `now` of a condition) come
// from the caller's clock, as in real systems: the store never reads a clock.
//
// Does not: model item size limits, throttling, or partial failures inside a
// transaction (a transaction is all or nothing).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/btree.hpp"
#include "sim/time.hpp"

namespace lethe {

using MessageId = std::uint64_t;
using ProcessorId = std::uint32_t;
using AttemptId = std::uint64_t;  // unique per protect() attempt: the fencing token
using Key = std::uint64_t;

enum class Table : std::uint8_t { Dedupe = 1, Inbox = 2, Domain = 3, Outbox = 4 };

// Key layout: table (8 bits) | processor (16 bits) | message id (40 bits).
inline Key make_key(Table table, ProcessorId processor, MessageId id) {
  return (static_cast<Key>(table) << 56) | (static_cast<Key>(processor & 0xffffu) << 40) | (id & 0xffffffffffull);
}
inline Table key_table(Key key) { return static_cast<Table>(key >> 56); }
inline ProcessorId key_processor(Key key) { return static_cast<ProcessorId>((key >> 40) & 0xffffu); }
inline MessageId key_message(Key key) { return key & 0xffffffffffull; }

// A virtual time that may be absent, in 8 bytes: the subset of std::optional<sim::Time> the
// ledger and the store's items use (an Item's three times in 24 bytes, not 48).
// kNone (INT64_MIN) is never an instant of a run (virtual time starts at 0).
class MaybeTime {
 public:
  static constexpr sim::Time kNone = INT64_MIN;
  MaybeTime() = default;
  MaybeTime(std::nullopt_t) {}                                  // NOLINT(google-explicit-constructor)
  MaybeTime(sim::Time time) : value_(time) {}                   // NOLINT(google-explicit-constructor)
  MaybeTime(const std::optional<sim::Time>& time) : value_(time ? *time : kNone) {}  // NOLINT
  bool has_value() const { return value_ != kNone; }
  explicit operator bool() const { return has_value(); }
  sim::Time operator*() const { return value_; }  // REQUIRES: has_value()
  sim::Time value_or(sim::Time fallback) const { return has_value() ? value_ : fallback; }
  sim::Time value() const { return value_; }      // REQUIRES: has_value()
  void reset() { value_ = kNone; }
  std::optional<sim::Time> optional() const { return has_value() ? std::optional<sim::Time>(value_) : std::nullopt; }
  bool operator==(const MaybeTime&) const = default;

 private:
  sim::Time value_ = kNone;
};

// One stored item. The dedupe record uses started_at / completed_at / expires_on /
// owner / memoized; domain rows use counter; outbox rows use counter as a "published" flag.
struct Item {
  MaybeTime started_at;
  MaybeTime completed_at;
  MaybeTime expires_on;
  AttemptId owner = 0;
  std::optional<std::uint64_t> memoized;
  std::int64_t counter = 0;
  // The fingerprint of the payload the record was written for (protocol.payload_check); absent: none kept.
  std::optional<std::uint64_t> payload;

  bool expired_at(sim::Time now) const { return expires_on.has_value() && *expires_on <= now; }
  bool operator==(const Item&) const = default;
};

// Every clause that is set must hold (a conjunction). Default: always true.
struct Condition {
  bool require_absent = false;                 // attribute_not_exists(pk)
  bool require_present = false;
  std::optional<sim::Time> absent_or_expired_at;  // absent, or expires_on <= this instant
  std::optional<sim::Time> started_at_equals;  // fencing on the previous startedAt
  std::optional<AttemptId> owner_equals;       // fencing on the owner token
  bool require_not_completed = false;          // attribute_not_exists(completedAt)

  bool holds(const std::optional<Item>& current) const;
  bool operator==(const Condition&) const = default;
};

enum class Assign : std::uint8_t { Keep, Set, SetIfAbsent /* if_not_exists(attr, value) */, Remove };

struct Update {
  Assign started_at_mode = Assign::Keep;
  sim::Time started_at = 0;
  Assign owner_mode = Assign::Keep;
  AttemptId owner = 0;
  Assign completed_at_mode = Assign::Keep;
  sim::Time completed_at = 0;
  Assign expires_on_mode = Assign::Keep;
  sim::Time expires_on = 0;
  Assign memoized_mode = Assign::Keep;
  std::uint64_t memoized = 0;
  Assign payload_mode = Assign::Keep;
  std::uint64_t payload = 0;
  std::int64_t counter_add = 0;
  // If set and the current item is expired at this instant, the update starts
  // from an absent item (the expired one is replaced, as if evicted first).
  std::optional<sim::Time> replace_expired_at;

  void apply_to(std::optional<Item>& item) const;
  bool operator==(const Update&) const = default;
};

struct TransactionPart {
  Key key = 0;
  Condition condition;
  Update update;
  bool operator==(const TransactionPart&) const = default;
};

enum class OpKind : std::uint8_t { Get, Put, Delete, Upsert, Transaction, Evict };

struct Op {
  OpKind kind = OpKind::Get;
  Key key = 0;                        // every kind but Transaction
  Item item;                          // Put
  Condition condition;                // Upsert, Delete (default: always holds)
  Update update;                      // Upsert
  std::vector<TransactionPart> parts; // Transaction
  sim::Time at = 0;                   // Evict

  // The keys the operation touches, sorted, no repeats.
  std::vector<Key> keys() const;
  bool operator==(const Op&) const = default;
};

struct Reply {
  bool applied = true;                         // false: a condition failed, nothing changed
  std::optional<Item> previous;                // Get: the item; Upsert/Put/Delete/Evict: the item before
  std::vector<std::optional<Item>> previous_parts;  // Transaction: the items before, per part
  bool operator==(const Reply&) const = default;
};

// Ordered by key (iteration order is part of the checker's state hash and of describe()). A B-tree, not
// std::map: many items per node instead of one node per item, so a lookup touches fewer cache lines (absl's
// B-tree with 1 KiB nodes, core/btree.hpp; references do not survive an insert or erase, and nothing here holds
// one across either).
using StoreState = BTreeMap<Key, Item>;  // 1 KiB nodes (core/btree.hpp)

// Executes `op` atomically on `state`. Pure: the same state and op give the same result. For a single-key op
// (every kind but Transaction) reply.previous is the item as it was before the op (Store::execute relies on it).
// With `after`, a single-key op also sets *after to the item as it is after the op (the store's TTL sweeper and
// replica versions need both sides of a change; reading it back cost one more B-tree descent per operation).
// Every single-key op finds its key once.
Reply apply(StoreState& state, const Op& op, std::optional<Item>* after = nullptr);
// Executes single-key `op` (REQUIRES: not a Transaction; throws std::invalid_argument) on its key's item (absent:
// nullopt), in place: what apply() does to that key. reply.previous is the item before.
Reply apply_to_item(std::optional<Item>& item, const Op& op);

std::string describe(const Op& op);
std::string describe(const Reply& reply);
std::string describe(const std::optional<Item>& item);

// Convenience constructors.
Op get_op(Key key);
Op put_op(Key key, const Item& item);
Op delete_op(Key key);
Op delete_op(Key key, const Condition& condition);  // only if `condition` holds
Op upsert_op(Key key, const Condition& condition, const Update& update);
Op evict_op(Key key, sim::Time at);
Op transaction_op(std::vector<TransactionPart> parts);

}  // namespace lethe
