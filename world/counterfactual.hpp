// world/counterfactual.hpp — a counterfactual replay: the seed run again with one cause's window closed for one
// message, so that the duplicate the oracle blamed on that window must be gone (runner/verify.hpp).
//
// A Counterfactual names the intervention (core/result.hpp, Intervention: each cause's row declares its own) and
// the duplicate it is to remove: its (message id, processor), its attempt and the attempt that executed first.
// The Intervener applies it at exactly the points of the simulated world where that window opens, and nowhere
// else; a run without one never builds an Intervener, so nothing of this changes a normal run (its trace hash):
//   NoCrash            the fault injector spares the node of an attempt of the message that has decided to run
//                      its effect and has no completion landed (random crashes, and the crash point
//                      after_effect_before_complete: its draw is still made, its crash not done); and no attempt
//                      of the message gives up on a provider call: past its timeout it waits while the request is
//                      on its way or in service, and takes the provider's answer even when the response is late
//                      or lost (SinkClient);
//   CompletionArrives  a completion write of the message that got no reply (lost or timed out every time) is
//                      re-sent until it lands: the store reply the owner gets is the landed one;
//   NeverExpires       the store never evicts the message's records, and every read of them shows no expires_on
//                      (writes that replace an expired record, or accept one as absent, only accept absence);
//   NeverEvicted       a bounded store (store.capacity) does not evict the message's records for room: when one's
//                      turn comes it stays, and stops counting toward the capacity, so every other record is
//                      evicted when it would be without it (Store::set_never_evict_for_room);
//   OwnerNeverStale    every reply showing the message's record in flight while its owner attempt is still at work
//                      (neither ended nor crashed) shows it started at the reader's own clock and not expired: no
//                      taker finds it old while its owner works; a record its owner abandoned is shown as it is
//                      (else the intervention would block the message for good);
//   WaitOutlastsOwner  a reply to another attempt of the message showing its record in flight while the owner is at
//                      work is held until the owner ends, and the op is then sent again: a waiter's max_wait runs
//                      out only on a record its owner left (the caller sees a slow store, nothing else);
//   TakeoverFenced     once an attempt has read the message's record stale (older than max_processing_time on its
//                      clock), replies to any other attempt showing that same record (owner, started_at) show it
//                      as a conditional takeover by the first would have left it: owned by it, started at its
//                      clock then (one taker wins, the others wait on it); a write fenced on a started_at so
//                      shown is fenced on the stored record's (the takeover is shown, not written);
//   RecordSeen         a read by either attempt of the pair that finds no record finds the other's (the first of
//                      the two to miss it, and from then on only that one: shown to both, each would skip): in
//                      flight, started at the reader's clock, or, for a strategy whose records are written
//                      completed (check-then-insert, record-after), completed then;
//   ProviderDedupes    the provider answers every call of the message after its first execution with that
//                      execution's value (it still executes the call for its own draws, and logs nothing);
//   ProviderKeyKept    the provider never prunes the message's idempotency key;
//   KvLinearizable     the seq-kv and lww-kv operations an external node sends while one of the pair's two attempts
//                      is open on it are answered as lin-kv answers them: a seq-kv read at the head of its order,
//                      an lww-kv read or cas from the replicas' latest write (world/external_services.hpp).
// Every random draw stays where it was: an intervention changes what is done with a draw, never whether it is
// made. The protocol never learns of it: the store replies and the provider's answers are what it sees.
//
// Lifetime: an Intervener outlives every fiber of its run (the World owns it). Does not: judge anything.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "core/config.hpp"
#include "core/result.hpp"
#include "protocol/env.hpp"
#include "protocol/store_ops.hpp"
#include "sim/node.hpp"

namespace lethe {

class LedgerFolding;
struct Ledger;

struct Counterfactual {
  Intervention intervention = Intervention::None;
  MessageId id = 0;
  ProcessorId processor = 0;
  AttemptId attempt = 0;        // the duplicate's attempt
  AttemptId first_attempt = 0;  // the attempt whose execution came first
  // A second window closed in the same replay, for a duplicate two windows opened at once (each would have let it
  // through without the other: runner/verify.hpp). None: one window.
  Intervention also = Intervention::None;
  bool closes(Intervention kind) const { return kind != Intervention::None && (intervention == kind || also == kind); }
};

// What the intervention needs of the strategy under test (the world reads it from its registry entry and
// settings): whether it keeps records in flight, and after how long such a record is stale.
struct StrategyShape {
  bool in_flight_records = true;             // it reports InFlightRecent (read-then-record strategies do not)
  sim::Duration max_processing_time = 0;     // its protocol.max_processing_time (0: none)
  // StrategyInfo::message_record_processor: the processor of the one record it keeps per message, if it does
  // (that record is then the record of every processor of the message).
  std::optional<ProcessorId> message_record_processor;
};

// How one (message, processor) pair stood when a run ended: a counterfactual replay must close a window without
// keeping the message from finishing (a record never stale to a dead owner removes any duplicate by blocking it).
enum class PairFate : std::uint8_t {
  Done,           // executed, and its latest attempt ended executed or skipped
  NeverExecuted,  // no attempt ran its effect
  LastFailed,     // its latest attempt gave up (waited out, refused, its effect failed)
  LastCrashed,    // its latest attempt was cut by a crash, and no copy came after it
  Held,           // its latest attempt was still running or waiting when the run ended
};
const char* to_string(PairFate fate);

// The fate of (id, processor) in `ledger` at the end of its run; its latest attempt is the one delivered last
// (attempt ids are issued in delivery order). An attempt folded into a settled group ended executed.
PairFate pair_fate(const Ledger& ledger, MessageId id, ProcessorId processor);

// The counterfactual of one run, consulted by the fault injector, the sink, the store and the workers' store
// clients. REQUIRES: `ledger` and `folding` outlive it.
class Intervener {
 public:
  Intervener(const Counterfactual& counterfactual, const StrategyShape& shape, const Ledger& ledger,
             const LedgerFolding& folding)
      : cf_(counterfactual), shape_(shape), ledger_(ledger), folding_(folding) {}

  const Counterfactual& counterfactual() const { return cf_; }
  // The intervention is `kind` and (id, processor) is its message.
  bool acts(Intervention kind, MessageId id, ProcessorId processor) const {
    return cf_.closes(kind) && cf_.id == id && cf_.processor == processor;
  }
  // KvLinearizable: `attempt` is one of the pair's two attempts.
  bool linearizes(AttemptId attempt) const {
    return cf_.closes(Intervention::KvLinearizable) && (attempt == cf_.attempt || attempt == cf_.first_attempt);
  }
  // `key` is the message's dedupe or inbox record and the intervention is `kind`.
  bool acts_on_record(Intervention kind, Key key) const { return cf_.closes(kind) && record_of_message(key); }
  // `key` is a dedupe or inbox record of the message: its (message, processor) record, or the one record a
  // strategy keeps for all its processors (StrategyShape::message_record_processor).
  bool record_of_message(Key key) const;

  // NoCrash: `node` runs an attempt of the message between its decision to run the effect and its completion.
  bool spares(const sim::Node& node) const;
  // NoCrash: the crash point `point` of attempt `attempt` is in the window.
  bool spares_crash_point(CrashPoint point, AttemptId attempt) const;

  // The op as the store is to execute it (NeverExpires: expiry is not honoured on the message's records).
  Op sent(const Op& op) const;
  // The reply as `reader` is to see it, for a single-key op on `key` (`read`: a Get or a replica read).
  void seen(Key key, bool read, Reply& reply, sim::Node& reader);

  // WaitOutlastsOwner: `reply`, to the attempt running on `reader`, shows the message's record in flight under
  // another attempt that is still at work.
  bool holds_for_owner(Key key, const Reply& reply, const sim::Node& reader) const;

  // A worker's store connection, seen through the intervention.
  std::unique_ptr<StoreClient> wrap(std::unique_ptr<StoreClient> inner, sim::Node& node);

 private:
  AttemptId running_on(const sim::Node& node) const;  // the attempt of the message running on `node`, or 0
  bool at_work(AttemptId owner) const;                 // `owner` began and has neither ended nor crashed
  void seen_through(Intervention kind, std::optional<Item>& item, bool read, sim::Node& reader);
  void fence_takeover(Item& item, sim::Node& reader);
  void show_first_record(bool read, std::optional<Item>& item, sim::Node& reader) const;
  // TakeoverFenced: a condition on a started_at that a fenced takeover only showed, on the stored one instead.
  void fence_on_stored(Condition& condition) const;

  Counterfactual cf_;
  StrategyShape shape_;
  const Ledger& ledger_;
  const LedgerFolding& folding_;
  // TakeoverFenced: (owner, started_at) of a stale record -> (the first attempt that read it stale, its clock then):
  // the conditional takeover that attempt's read leads to is the one that wins.
  std::map<std::pair<AttemptId, sim::Time>, std::pair<AttemptId, sim::Time>> takeovers_;
  // TakeoverFenced: the started_at each claim shows (its taker's clock) -> the started_at of the record it claimed.
  std::map<sim::Time, sim::Time> shown_;
  // RecordSeen: the attempt of the pair that was shown the other's record (0: none yet).
  mutable AttemptId shown_to_ = 0;
};

}  // namespace lethe
