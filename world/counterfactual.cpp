#include "world/counterfactual.hpp"

#include <algorithm>

#include "check/ledger.hpp"
#include "protocol/decision.hpp"
#include "protocol/strategies.hpp"
#include "check/ledger_folding.hpp"

namespace lethe {
namespace {

// A completion write is re-sent at most this many times (CompletionArrives): a store cut off for good does not
// hang the run; the attempt then sees the write unanswered, as without the intervention.
constexpr int kMaxResends = 1000;
// A reply is held for an owner at work at most this many waits (WaitOutlastsOwner), the last ones a second each.
constexpr int kMaxHolds = 100000;

bool in_flight(const Item& item) { return item.started_at.has_value() && !item.completed_at.has_value(); }

// NeverExpires: a condition or update that honours expiry honours only absence on the message's record.
void ignore_expiry(Condition& condition, Update& update) {
  if (condition.absent_or_expired_at.has_value()) {
    condition.absent_or_expired_at.reset();
    condition.require_absent = true;
  }
  update.replace_expired_at.reset();
}

bool writes_completion(const Op& op) {
  if (op.kind == OpKind::Upsert) return op.update.completed_at_mode == Assign::Set;
  if (op.kind == OpKind::Put) return op.item.completed_at.has_value();
  if (op.kind != OpKind::Transaction) return false;
  for (const TransactionPart& part : op.parts) {
    if (part.update.completed_at_mode == Assign::Set) return true;
  }
  return false;
}

// The store connection of a worker, through the intervention: what it sends and what it is answered.
class InterveningStoreClient final : public StoreClient {
 public:
  InterveningStoreClient(std::unique_ptr<StoreClient> inner, Intervener& intervener, sim::Node& node)
      : inner_(std::move(inner)), intervener_(intervener), node_(node) {}

  std::optional<Reply> execute(const Op& op) override {
    const Op sent = intervener_.sent(op);
    std::optional<Reply> reply = inner_->execute(sent);
    if (!reply && completion_must_land(op)) {
      for (int i = 0; i < kMaxResends && !reply; ++i) reply = inner_->execute(sent);
    }
    if (op.kind == OpKind::Transaction) return reply;
    if (reply && outlast_owner(op.key, *reply)) reply = inner_->execute(sent);
    if (reply) intervener_.seen(op.key, op.kind == OpKind::Get, *reply, node_);
    return reply;
  }

  std::optional<Reply> read_eventual(Key key) override {
    std::optional<Reply> reply = inner_->read_eventual(key);
    if (reply && outlast_owner(key, *reply)) reply = inner_->read_eventual(key);
    if (reply) intervener_.seen(key, true, *reply, node_);
    return reply;
  }

 private:
  // WaitOutlastsOwner: a reply showing the message's record in flight under an owner at work is held until that
  // owner ends (the caller sees a slow store); true when it was, and the op is then to be sent again. Waits grow
  // from 1 ms to 1 s, so the waiter learns of the end within a second of it, as a poll would.
  bool outlast_owner(Key key, const Reply& reply) {
    int holds = 0;
    for (sim::Duration wait = sim::kMillisecond; holds < kMaxHolds && intervener_.holds_for_owner(key, reply, node_);
         ++holds, wait = std::min<sim::Duration>(wait * 2, sim::kSecond)) {
      sim::sleep(wait);
    }
    return holds > 0;
  }

  bool completion_must_land(const Op& op) const {
    if (!writes_completion(op)) return false;
    for (const Key key : op.keys()) {
      if (intervener_.acts_on_record(Intervention::CompletionArrives, key)) return true;
    }
    return false;
  }

  std::unique_ptr<StoreClient> inner_;
  Intervener& intervener_;
  sim::Node& node_;
};

}  // namespace

bool Intervener::at_work(AttemptId owner) const {
  if (!ledger_.has_attempt(owner)) return false;  // never issued, or folded into a settled group: it ended
  return ledger_.attempt(owner).at_work();
}

const char* to_string(PairFate fate) {
  switch (fate) {
    case PairFate::Done: return "done";
    case PairFate::NeverExecuted: return "never executed";
    case PairFate::LastFailed: return "its latest attempt gave up";
    case PairFate::LastCrashed: return "its latest attempt crashed and no copy came after it";
    case PairFate::Held: return "its latest attempt was still running or waiting at the end";
  }
  return "unknown";
}

PairFate pair_fate(const Ledger& ledger, MessageId id, ProcessorId processor) {
  bool executed = ledger.settled.find(group_key(id, processor)) != ledger.settled.end() ||
                  std::any_of(ledger.executions.begin(), ledger.executions.end(),
                              [&](const ExecutionRecord& e) { return e.id == id && e.processor == processor; });
  const AttemptRecord* latest = nullptr;
  ledger.attempts.for_each([&](const AttemptRecord& a) {
    if (a.id != id || a.processor != processor) return;
    executed = executed || a.executed;
    if (latest == nullptr || a.attempt > latest->attempt) latest = &a;
  });
  if (latest != nullptr) {
    if (latest->crashed_at) return PairFate::LastCrashed;
    if (!latest->ended_at) return PairFate::Held;
    if (latest->outcome == static_cast<std::int8_t>(Outcome::Failed)) return PairFate::LastFailed;
  }
  return executed ? PairFate::Done : PairFate::NeverExecuted;
}

bool Intervener::holds_for_owner(Key key, const Reply& reply, const sim::Node& reader) const {
  if (!acts_on_record(Intervention::WaitOutlastsOwner, key) || !reply.previous) return false;
  const Item& item = *reply.previous;
  if (!in_flight(item) || !at_work(item.owner)) return false;
  const AttemptId reading = running_on(reader);
  return reading != 0 && reading != item.owner;
}

bool Intervener::record_of_message(Key key) const {
  const Table table = key_table(key);
  if ((table != Table::Dedupe && table != Table::Inbox) || key_message(key) != cf_.id) return false;
  return key_processor(key) == cf_.processor || key_processor(key) == shape_.message_record_processor;
}

AttemptId Intervener::running_on(const sim::Node& node) const {
  return folding_.running(node.id(), cf_.id, cf_.processor);
}

bool Intervener::spares(const sim::Node& node) const {
  if (!cf_.closes(Intervention::NoCrash)) return false;
  const AttemptId attempt = running_on(node);
  if (attempt == 0) return false;
  const AttemptRecord& record = ledger_.attempt(attempt);
  return record.decided_to_process && !record.completion_applied;
}

bool Intervener::spares_crash_point(CrashPoint point, AttemptId attempt) const {
  if (point != CrashPoint::AfterEffectBeforeComplete || !ledger_.has_attempt(attempt)) return false;
  const AttemptRecord& record = ledger_.attempt(attempt);
  return acts(Intervention::NoCrash, record.id, record.processor);
}

void Intervener::fence_takeover(Item& item, sim::Node& reader) {
  const AttemptId reading = running_on(reader);
  if (reading == 0 || reading == item.owner) return;
  // A record shown as claimed may be stale again (its claimer died before taking it over): the first reader to
  // find that one stale claims it in turn, so each record shown has one taker. Claims chain at most once per read.
  for (std::size_t hop = 0; hop <= takeovers_.size(); ++hop) {
    const auto key = std::make_pair(item.owner, *item.started_at);
    const auto claimed = takeovers_.find(key);
    if (claimed == takeovers_.end()) {
      if (is_stale(*item.started_at, reader.local_now(), shape_.max_processing_time)) {
        takeovers_.emplace(key, std::make_pair(reading, reader.local_now()));
        shown_.emplace(reader.local_now(), *item.started_at);
      }
      return;
    }
    if (claimed->second.first == reading) return;
    item.owner = claimed->second.first;
    item.started_at = claimed->second.second;
  }
}

void Intervener::show_first_record(bool read, std::optional<Item>& item, sim::Node& reader) const {
  if (!read || item) return;
  // Either attempt of the racing pair may be the one whose read missed the other's record: the duplicate's, or
  // (a lagging replica read) the first executor's, which decided later than the duplicate's attempt created it.
  const AttemptId reading = running_on(reader);
  if (reading == 0 || (reading != cf_.attempt && reading != cf_.first_attempt)) return;
  // Only to the first of the two whose read misses: shown to both (a plain race, where both read before either
  // wrote), each would skip for the other and the message would never run.
  if (shown_to_ != 0 && shown_to_ != reading) return;
  shown_to_ = reading;
  Item record;
  record.started_at = reader.local_now();
  record.owner = reading == cf_.attempt ? cf_.first_attempt : cf_.attempt;
  if (!shape_.in_flight_records) record.completed_at = reader.local_now();
  item = record;
}

Op Intervener::sent(const Op& op) const {
  if (!cf_.closes(Intervention::NeverExpires) && !cf_.closes(Intervention::TakeoverFenced)) return op;
  Op sent = op;
  const auto adjust = [this](Key key, Condition& condition, Update& update) {
    if (!record_of_message(key)) return;
    if (cf_.closes(Intervention::NeverExpires)) ignore_expiry(condition, update);
    if (cf_.closes(Intervention::TakeoverFenced)) fence_on_stored(condition);
  };
  if (op.kind == OpKind::Transaction) {
    for (TransactionPart& part : sent.parts) adjust(part.key, part.condition, part.update);
  } else {
    adjust(sent.key, sent.condition, sent.update);
  }
  return sent;
}

void Intervener::fence_on_stored(Condition& condition) const {
  // A fenced takeover is shown, not written: a write fenced on a started_at only a reply showed is fenced on the
  // started_at the store holds under it (through every takeover shown on top of it).
  for (std::size_t hop = 0; hop < shown_.size() && condition.started_at_equals; ++hop) {
    const auto under = shown_.find(*condition.started_at_equals);
    if (under == shown_.end()) return;
    condition.started_at_equals = under->second;
  }
}

void Intervener::seen(Key key, bool read, Reply& reply, sim::Node& reader) {
  if (!record_of_message(key)) return;
  seen_through(cf_.intervention, reply.previous, read, reader);
  if (cf_.also != Intervention::None) seen_through(cf_.also, reply.previous, read, reader);
}

void Intervener::seen_through(Intervention kind, std::optional<Item>& item, bool read, sim::Node& reader) {
  switch (kind) {
    case Intervention::NeverExpires:
      if (item) item->expires_on = MaybeTime();
      return;
    case Intervention::OwnerNeverStale:
      if (item && in_flight(*item) && at_work(item->owner)) {
        item->started_at = reader.local_now();
        item->expires_on = MaybeTime();
      }
      return;
    case Intervention::TakeoverFenced:
      if (item && in_flight(*item)) fence_takeover(*item, reader);
      return;
    case Intervention::RecordSeen:
      show_first_record(read, item, reader);
      return;
    default:
      return;
  }
}

std::unique_ptr<StoreClient> Intervener::wrap(std::unique_ptr<StoreClient> inner, sim::Node& node) {
  return std::make_unique<InterveningStoreClient>(std::move(inner), *this, node);
}

}  // namespace lethe
