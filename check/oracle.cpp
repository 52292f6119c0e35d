#include "check/oracle.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <compare>
#include <cstdint>
#include <stdexcept>

#include "protocol/registry.hpp"
#include "protocol/strategies.hpp"
#include "sim/time.hpp"

namespace lethe {

Quantiles quantiles(std::vector<std::int64_t>& values) {
  Quantiles q;
  q.count = values.size();
  if (values.empty()) return q;
  std::sort(values.begin(), values.end());
  auto rank = [&values](double p) {
    auto index = static_cast<std::size_t>(p * static_cast<double>(values.size()) + 0.999999);
    if (index == 0) index = 1;
    return values[std::min(index, values.size()) - 1];
  };
  q.p50 = rank(0.50);
  q.p99 = rank(0.99);
  q.max = values.back();
  return q;
}

namespace {

// Every instant in an explanation is read by a person: rounded, one unit each (sim::format_human).
std::string t(sim::Time time) { return sim::format_human(time); }

class Judge {
 public:
  Judge(const OracleInput& input, RunResult& result)
      : in_(input), strategy_(strategy_info(input.protocol)), ledger_(input.ledger), result_(result) {
    // Evictions by (key, time), for evicted_before's binary search (a scan of every eviction per duplicate
    // was quadratic in long runs with a TTL).
    const auto by_key_and_time = [](const EvictionRecord& x, const EvictionRecord& y) {
      return x.key != y.key ? x.key < y.key : x.at < y.at;
    };
    evictions_.assign(ledger_.evictions.begin(), ledger_.evictions.end());
    std::sort(evictions_.begin(), evictions_.end(), by_key_and_time);
    room_evictions_.assign(ledger_.capacity_evictions.begin(), ledger_.capacity_evictions.end());
    std::sort(room_evictions_.begin(), room_evictions_.end(), by_key_and_time);
  }

  void run() {
    count_executions();
    count_lost();
    count_unanswered();
    count_memo_mismatches();
    count_memo_overwrites();
    count_waits();
    count_recovery();
    result_.sink_calls = in_.sink_calls;
    result_.calls_per_success =
        result_.effects > 0 ? static_cast<double>(in_.sink_calls) / static_cast<double>(result_.effects) : 0.0;
  }

 private:
  std::string node(std::uint32_t id) const { return in_.node_name ? in_.node_name(id) : fmt::format("node{}", id); }
  std::string processor(ProcessorId p) const {
    return in_.processor_name ? in_.processor_name(p) : fmt::format("processor{}", p);
  }
  std::string who(AttemptId a) const {
    const std::optional<AttemptRecord> r = record(a);
    if (!r) return fmt::format("attempt {}", a);
    return fmt::format("attempt {} on {}", a, node(r->node));
  }

  // The record of attempt `a`: held by the ledger, or rebuilt from the settled group it ran the effect of (as
  // the oracle sees it: executed once, completed, alive; its decision is not kept, and the oracle asks a settled
  // attempt's decision nothing it could answer: it was not a takeover). nullopt for an attempt folded as a skip.
  std::optional<AttemptRecord> record(AttemptId a) const {
    if (ledger_.has_attempt(a)) return ledger_.attempt(a);
    if (a == 0 || ledger_.settled.empty()) return std::nullopt;
    if (settled_by_attempt_.empty()) {  // built on first need: only to explain a duplicate in a settled group
      settled_by_attempt_.reserve(ledger_.settled.size());
      for (const auto& [key, group] : ledger_.settled) settled_by_attempt_.emplace_back(group.attempt, key);
      std::sort(settled_by_attempt_.begin(), settled_by_attempt_.end());
    }
    const auto it = std::lower_bound(settled_by_attempt_.begin(), settled_by_attempt_.end(),
                                     std::make_pair(a, std::uint64_t{0}));
    if (it == settled_by_attempt_.end() || it->first != a) return std::nullopt;
    const SettledGroup& group = ledger_.settled.at(it->second);
    AttemptRecord r;
    r.attempt = a;
    r.id = group_message(it->second);
    r.processor = group_processor(it->second);
    r.node = group.node;
    r.outcome = static_cast<std::int8_t>(Outcome::Executed);
    r.executed = true;
    r.completion_applied = true;
    r.completed_at = group.completed_at;
    r.set_returned_value(group.value);
    return r;
  }

  // The decision on which the attempt ran its effect (the last process-type one).
  std::optional<ProcessDecision> process_decision(AttemptId a) const { return ledger_.process_decision(a); }

  // The attempt ran its effect (or had its call in flight) and died by `time` without its completion record.
  bool crashed_after_effect(AttemptId a, sim::Time time) const {
    if (!ledger_.has_attempt(a)) return false;  // a settled attempt did not crash
    const auto& r = ledger_.attempt(a);
    return r.crashed_at.has_value() && *r.crashed_at <= time && r.executed && !r.completion_applied;
  }

  // The attempt ran its effect, then ended (protect() returned, e.g. failed after a provider call whose
  // response was lost) before `time` without its completion record: like a crash after the effect, the record
  // was abandoned while the effect had happened. (One that failed because its completion write went unanswered,
  // on_completion_failure = "fail", lost its completion: completion_lost_by.)
  bool gave_up_after_effect(AttemptId a, sim::Time time) const {
    if (!ledger_.has_attempt(a)) return false;  // a settled attempt completed
    const auto& r = ledger_.attempt(a);
    return r.executed && !r.crashed_at && r.outcome == static_cast<int>(Outcome::Failed) && !r.completion_failed &&
           r.ended_at &&
           *r.ended_at <= time &&
           (!r.completed_at || *r.completed_at > time);
  }

  // How the group's record was gone: not evicted, evicted by TTL (the store's sweeper), or evicted for room
  // (store.capacity).
  enum class Gone : std::uint8_t { No, Ttl, Room };
  using When = std::optional<sim::Time>;
  static When later(When x, When y) { return !x ? y : !y ? x : std::max(*x, *y); }
  static When earlier(When x, When y) { return !x ? y : !y ? x : std::min(*x, *y); }
  // The one of a TTL eviction at `ttl` and one for room at `room` that `pick` chooses (both absent: No).
  static Gone which(When ttl, When room, When (*pick)(When, When)) {
    if (!ttl && !room) return Gone::No;
    return pick(ttl, room) == room && room != ttl ? Gone::Room : Gone::Ttl;
  }
  // The latest eviction of `key` in `sorted` (by key, then time) at or before `time`, or null.
  static const EvictionRecord* latest_in(const std::vector<EvictionRecord>& sorted, Key key, sim::Time time) {
    const auto it = std::upper_bound(sorted.begin(), sorted.end(), std::make_pair(key, time),
                                     [](const std::pair<Key, sim::Time>& k, const EvictionRecord& e) {
                                       return k.first != e.key ? k.first < e.key : k.second < e.at;
                                     });
    if (it == sorted.begin() || std::prev(it)->key != key) return nullptr;
    return &*std::prev(it);
  }
  // The earliest eviction of `key` in `sorted` in (from, to], or null.
  static const EvictionRecord* first_in(const std::vector<EvictionRecord>& sorted, Key key, sim::Time from,
                                        sim::Time to) {
    const auto it = std::upper_bound(sorted.begin(), sorted.end(), std::make_pair(key, from),
                                     [](const std::pair<Key, sim::Time>& k, const EvictionRecord& e) {
                                       return k.first != e.key ? k.first < e.key : k.second < e.at;
                                     });
    if (it == sorted.end() || it->key != key || it->at > to) return nullptr;
    return &*it;
  }
  static When at_of(const EvictionRecord* e) { return e != nullptr ? When{e->at} : When{}; }
  static When latest_by(const std::vector<EvictionRecord>& sorted, Key key, sim::Time time) {
    return at_of(latest_in(sorted, key, time));
  }
  static When first_between(const std::vector<EvictionRecord>& sorted, Key key, sim::Time from, sim::Time to) {
    return at_of(first_in(sorted, key, from, to));
  }
  // The group's latest eviction for room at or before `time` (its dedupe or inbox record), or null.
  const EvictionRecord* room_eviction_before(MessageId id, ProcessorId p, sim::Time time) const {
    const EvictionRecord* found = nullptr;
    for (const Key key : {make_key(Table::Dedupe, p, id), make_key(Table::Inbox, p, id)}) {
      const EvictionRecord* e = latest_in(room_evictions_, key, time);
      if (e != nullptr && (found == nullptr || e->at > found->at)) found = e;
    }
    return found;
  }
  // The group's first eviction for room in (from, to], or null.
  const EvictionRecord* room_eviction_between(MessageId id, ProcessorId p, sim::Time from, sim::Time to) const {
    const EvictionRecord* found = nullptr;
    for (const Key key : {make_key(Table::Dedupe, p, id), make_key(Table::Inbox, p, id)}) {
      const EvictionRecord* e = first_in(room_evictions_, key, from, to);
      if (e != nullptr && (found == nullptr || e->at < found->at)) found = e;
    }
    return found;
  }
  // When an eviction for room happened and what made its record the least recently written, from the store's facts.
  std::string room_text(const EvictionRecord* e) const {
    if (e == nullptr) return "for room (store.capacity)";
    if (!e->written_at || e->writes_since == EvictionRecord::kUnknown) {
      return fmt::format("for room at {} (store.capacity; when it was last written is unknown: the log does not say)",
                         t(e->at));
    }
    return fmt::format("for room at {} (store.capacity: last written at {}, then {} writes of other records made it "
                       "the least recently written)",
                       t(e->at), t(*e->written_at), e->writes_since);
  }
  // A settled group's folded TTL eviction (evictions for room are never folded).
  When settled_eviction(MessageId id, ProcessorId p) const {
    const auto settled = ledger_.settled.find(group_key(id, p));
    if (settled == ledger_.settled.end() || !settled->second.evicted_at) return std::nullopt;
    return *settled->second.evicted_at;
  }

  // What removed the group's record last at or before `time`, if anything did.
  Gone evicted_before(MessageId id, ProcessorId p, sim::Time time) const {
    When ttl;
    When room;
    for (const Key key : {make_key(Table::Dedupe, p, id), make_key(Table::Inbox, p, id)}) {
      ttl = later(ttl, latest_by(evictions_, key, time));
      room = later(room, latest_by(room_evictions_, key, time));
    }
    const When settled_ttl = settled_eviction(id, p);
    if (settled_ttl && *settled_ttl <= time) ttl = later(ttl, settled_ttl);
    return which(ttl, room, later);
  }

  // What evicted the group's record first in (from, to]: while the attempt that decided at `from` was at work.
  Gone evicted_between(MessageId id, ProcessorId p, sim::Time from, sim::Time to) const {
    When ttl;
    When room;
    for (const Key key : {make_key(Table::Dedupe, p, id), make_key(Table::Inbox, p, id)}) {
      ttl = earlier(ttl, first_between(evictions_, key, from, to));
      room = earlier(room, first_between(room_evictions_, key, from, to));
    }
    const auto in_window = [from, to](When at) { return at && *at > from && *at <= to ? at : When{}; };
    ttl = earlier(ttl, in_window(settled_eviction(id, p)));
    return which(ttl, room, earlier);
  }

  // The attempt ran its effect and ended alive by `time` (protect() returned Executed: acknowledged; or Failed,
  // on_completion_failure = "fail"), but its completion write never landed: the record it owned stayed in flight
  // although its work was done.
  bool completion_lost_by(AttemptId a, sim::Time time) const {
    if (!ledger_.has_attempt(a)) return false;  // a settled attempt's completion landed
    const auto& r = ledger_.attempt(a);
    // A completion refused because TTL (or capacity) had already evicted the record is the eviction's doing, not a
    // lost write.
    return r.executed && !r.crashed_at && r.outcome != static_cast<int>(Outcome::Skipped) && r.completion_failed &&
           !r.completion_applied && r.ended_at && *r.ended_at <= time &&
           evicted_between(r.id, r.processor, r.decided_at, *r.ended_at) == Gone::No;
  }

  // Some execution before the duplicate's had its completion land by `time`: the group's record was completed.
  bool completed_by(const std::vector<const ExecutionRecord*>& earlier, sim::Time time) const {
    for (const auto* prior : earlier) {
      const std::optional<AttemptRecord> r = record(prior->attempt);
      if (r && r->completion_applied && r->completed_at && *r->completed_at <= time) return true;
    }
    return false;
  }

  // The effect at `effect_at` and how the attempt stopped at `stopped_at` ("died", "gave up"), every instant in
  // the order it happened: "ran the effect at T and then <how> at U", or, when the attempt stopped while its
  // provider call was in flight (the provider executed it afterwards), "called the provider, <how> at U while
  // the call was in flight, and the provider executed it at T".
  std::string stopped_after(sim::Time effect_at, std::string_view how, sim::Time stopped_at) const {
    if (stopped_at < effect_at) {
      return fmt::format("called the provider, {} at {} while the call was in flight, and the provider executed "
                         "it at {}",
                         how, t(stopped_at), t(effect_at));
    }
    return fmt::format("ran the effect at {} and {} at {}", t(effect_at), how == "died" ? how : "then failed",
                       t(stopped_at));
  }
  std::string died_after(AttemptId a, sim::Time effect_at) const {
    return stopped_after(effect_at, "died", *ledger_.attempt(a).crashed_at);
  }
  std::string failed_after(AttemptId a, sim::Time effect_at) const {
    return stopped_after(effect_at, "gave up", *ledger_.attempt(a).ended_at);
  }

  // The first executor abandoned the group's record after its effect, before the duplicate's decision at
  // `decided_at` and with no completion landed by then: it crashed, it failed, or its completion write was lost.
  // That is the window, whatever became of the record afterwards (released, expired, evicted, found stale).
  std::optional<Cause> abandoned(AttemptId owner, const ExecutionRecord& effect, const ExecutionRecord& e,
                                 sim::Time decided_at, std::string_view found, std::string& why) const {
    if (crashed_after_effect(owner, decided_at)) {
      why = fmt::format("{} {} before its completion record; {} {} at {} and ran it again", who(owner),
                        died_after(owner, effect.at), who(e.attempt), found, t(decided_at));
      return Cause::CrashAfterEffect;
    }
    if (gave_up_after_effect(owner, decided_at)) {
      why = fmt::format("{} {} without its completion record; {} {} at {} and ran it again", who(owner),
                        failed_after(owner, effect.at), who(e.attempt), found, t(decided_at));
      return Cause::CrashAfterEffect;
    }
    if (completion_lost_by(owner, decided_at)) {
      const bool failed = ledger_.attempt(owner).outcome == static_cast<int>(Outcome::Failed);
      why = fmt::format("{} ran the effect at {} and {} at {}, but its completion write never landed; "
                        "{} {} at {} and ran it again",
                        who(owner), t(effect.at), failed ? "failed the message (on_completion_failure)" : "acknowledged",
                        t(*ledger_.attempt(owner).ended_at), who(e.attempt), found, t(decided_at));
      return Cause::CompletionLost;
    }
    return std::nullopt;
  }

  // The consumer group removed a live member, or that member rejoined (Ledger::member_removals: each an eager
  // rebalance), while a live member held the message uncommitted, and the pair straddles that change: one
  // attempt decided before it, the other at or after it (the replay from the committed offset).
  std::optional<Cause> member_removed(const ExecutionRecord& e, const std::vector<const ExecutionRecord*>& earlier,
                                      std::string& why) const {
    if (ledger_.member_removals.empty() || !declares_cause(strategy_, Cause::MemberRemoved)) return std::nullopt;
    const std::optional<AttemptRecord> mine = record(e.attempt);
    if (!mine || !mine->decided_to_process) return std::nullopt;
    for (const MemberRemoval& removal : ledger_.member_removals) {
      if (removal.processor != e.processor ||
          !std::binary_search(removal.held.begin(), removal.held.end(), e.id)) {
        continue;
      }
      for (const auto* prior : earlier) {
        const std::optional<AttemptRecord> theirs = record(prior->attempt);
        if (!theirs || !theirs->decided_to_process || theirs->attempt == mine->attempt) continue;
        const bool replayed_mine = straddles(*theirs, *mine, removal);
        if (!replayed_mine && !straddles(*mine, *theirs, removal)) continue;
        const ExecutionRecord& held = replayed_mine ? *prior : e;
        const ExecutionRecord& replay = replayed_mine ? e : *prior;
        why = fmt::format("{} while the message was held uncommitted by {} (effect at {}); the rebalance replayed "
                          "it from the last committed offset: {} decided at {} and ran the effect at {}, and "
                          "strategy \"{}\" checks nothing",
                          change_text(removal), who(held.attempt), t(held.at), who(replay.attempt),
                          t(record(replay.attempt)->decided_at), t(replay.at), strategy_.name);
        return Cause::MemberRemoved;
      }
    }
    return std::nullopt;
  }
  // `held` decided before the membership change and `replay` at or after it.
  static bool straddles(const AttemptRecord& held, const AttemptRecord& replay, const MemberRemoval& change) {
    return held.decided_at < change.at && replay.decided_at >= change.at;
  }
  std::string change_text(const MemberRemoval& change) const {
    const std::string why = change.reason == RemovalReason::SessionTimeout
                                ? fmt::format("no heartbeat since {} for topology.session_timeout: its process was "
                                              "paused", t(change.since))
                                : fmt::format("no poll since {} for topology.max_poll_interval: its work was slow",
                                              t(change.since));
    if (!change.rejoin) {
      return fmt::format("the consumer group removed live member {} at {} ({})", node(change.node), t(change.at), why);
    }
    return fmt::format("member {}, removed from the consumer group earlier, rejoined it at {}", node(change.node),
                       t(change.at));
  }

  Cause unprotected(const ExecutionRecord& e, const ExecutionRecord& first, std::string& why) const {
    why = fmt::format("strategy \"{}\" checks nothing: {} ran the effect again (first run by {} at {})",
                      strategy_.name, who(e.attempt), who(first.attempt), t(first.at));
    return Cause::Unprotected;
  }

  // weak_store for an attempt that checked nothing lethe could read when the first executor's claim was itself
  // answered stale: of two claims made both ways, the stale one may have been the first to run its effect.
  std::optional<Cause> stale_first_claim(const ExecutionRecord& e, const ExecutionRecord& first,
                                         std::string& why) const {
    const std::optional<ProcessDecision> d = process_decision(first.attempt);
    if (!d || d->basis != Basis::WeakStore) return std::nullopt;
    why = fmt::format("{} got a stale answer from seq-kv or lww-kv (not linearizable) and ran the effect first; {} "
                      "ran it again (at {})", who(first.attempt), who(e.attempt), t(e.at));
    return Cause::WeakStore;
  }

  Cause weak_store(const ExecutionRecord& e, const ExecutionRecord& first, std::string& why) const {
    why = fmt::format("{} got a stale answer from seq-kv or lww-kv (not linearizable) and ran the effect again "
                      "(first run by {} at {})", who(e.attempt), who(first.attempt), t(first.at));
    return Cause::WeakStore;
  }

  // Each duplicate gets the first cause that applies: the provider's (whatever the strategy decided), this
  // attempt's ownership overtaken, then the basis of this attempt's own decision.
  Cause classify(const ExecutionRecord& e, const std::vector<const ExecutionRecord*>& earlier, std::string& why) {
    read_nothing_ = false;
    if (const std::optional<Cause> cause = provider_cause(e, earlier, why)) return *cause;
    const ExecutionRecord& first = *earlier.front();
    const std::optional<ProcessDecision> d = process_decision(e.attempt);
    // An attempt that checked nothing is unprotected whatever the others did: no search of the group (a
    // strategy without a record can run the effect thousands of times per message).
    read_nothing_ = (d && d->basis == Basis::Unprotected) || (!d && !strategy_.decisions_inferred);
    if (d && d->basis == Basis::Unprotected) {
      if (const std::optional<Cause> cause = member_removed(e, earlier, why)) return *cause;
      if (const std::optional<Cause> cause = stale_first_claim(e, first, why)) return *cause;
      return unprotected(e, first, why);
    }
    if (const std::optional<Cause> cause = owner_overtaken(e, earlier, why)) return *cause;
    if (!d) return undecided(e, why);
    switch (d->basis) {
      case Basis::Unprotected: return unprotected(e, first, why);
      case Basis::ExpiredCompleted: return on_expired_completed(e, first, *d, why);
      case Basis::Absent: return on_absent(e, earlier, *d, why);
      case Basis::StaleTakeover: return on_stale_takeover(e, earlier, *d, why);
      case Basis::MaxWaitProcess: return on_max_wait_process(e, *earlier.back(), *d, why);
      case Basis::WeakStore: return weak_store(e, first, why);
      case Basis::Completed:
      case Basis::InFlightRecent:
      case Basis::TakeoverLost:
      case Basis::MaxWaitError:
      case Basis::StoreUnavailable:
      case Basis::InboxDuplicate:
        break;  // not a basis to run the effect on: the ledger keeps none of these as a process decision
    }
    throw std::logic_error(fmt::format("oracle: {} ran the effect on decision \"{}\", which runs nothing",
                                       who(e.attempt), to_string(d->basis)));
  }

  // provider_key_expired and sink_retry: the provider executed a call it should have recognised.
  std::optional<Cause> provider_cause(const ExecutionRecord& e, const std::vector<const ExecutionRecord*>& earlier,
                                      std::string& why) const {
    // An idempotent provider executes a key once while it keeps it: a duplicate a window or more after the
    // execution that stored the key got through because the provider had pruned it, whatever the strategy did.
    const ExecutionRecord& previous = *earlier.back();
    if (in_.provider_key_window && e.at - previous.at >= *in_.provider_key_window) {
      why = fmt::format("{} called the provider at {}, {} after {} had executed it at {}: the provider keeps an "
                        "idempotency key for {} (sink.idempotency_window), had pruned it, and started a new request",
                        who(e.attempt), t(e.at), sim::format_human(e.at - previous.at), who(previous.attempt),
                        t(previous.at), sim::format_human(*in_.provider_key_window));
      return Cause::ProviderKeyExpired;
    }
    for (const auto* prior : earlier) {
      if (prior->attempt != e.attempt) continue;
      if (e.call_number < prior->call_number) {
        // The earlier call was decided later (a slow original overtaken by its retry, or a retry the provider
        // did not recognise as the same call: a new idempotency key).
        why = fmt::format("{} called the provider (call #{}) and, without its response in time, again (call #{}); "
                          "the provider executed call #{} at {} and then the slower call #{} too",
                          who(e.attempt), e.call_number, prior->call_number, prior->call_number, t(prior->at),
                          e.call_number);
      } else {
        why = fmt::format("{} called the provider again (call #{}) after a call whose response never arrived; "
                          "the provider had already executed call #{} at {}",
                          who(e.attempt), e.call_number, prior->call_number, t(prior->at));
      }
      return Cause::SinkRetry;
    }
    return std::nullopt;
  }

  // This attempt owned the record, and an earlier executor took it over from it: the owner was alive (it went on
  // to run the effect), so the record was declared dead too early.
  std::optional<Cause> owner_overtaken(const ExecutionRecord& e, const std::vector<const ExecutionRecord*>& earlier,
                                       std::string& why) const {
    for (const auto* prior : earlier) {
      const std::optional<ProcessDecision> pd = process_decision(prior->attempt);
      if (!pd || !pd->seen || pd->seen_owner != e.attempt) continue;
      if (pd->basis != Basis::StaleTakeover && pd->basis != Basis::MaxWaitProcess) continue;
      const bool stale = pd->basis == Basis::StaleTakeover;
      why = fmt::format("{} owned the record ({}); {} {} at {} (its clock {}) and ran the effect at {}, but the "
                        "owner was alive and ran it too at {}: {}",
                        who(e.attempt), started_at_text(pd->seen_started_at), who(prior->attempt),
                        stale ? "found it older than max_processing_time"
                              : "waited max_wait for it and went ahead (on_max_wait = \"process\")",
                        t(pd->at), t(pd->local_time), t(prior->at), t(e.at),
                        stale ? "slow work, a pause or clock skew" : "the wait ran out before the work did");
      return stale ? Cause::TakeoverWhileAlive : Cause::MaxWaitExceeded;
    }
    return std::nullopt;
  }

  static std::string started_at_text(MaybeTime started_at) {
    return started_at ? "started_at " + t(*started_at) + " on its clock" : "with no started_at";
  }

  Cause undecided(const ExecutionRecord& e, std::string& why) const {
    if (strategy_.decisions_inferred) {
      why = fmt::format("{} ran the effect, and its store traffic before it shows no decision lethe recognises (no "
                        "applied start write on the delivery's record): the observations cannot tell which clause "
                        "broke",
                        who(e.attempt));
      return Cause::NotAttributable;
    }
    why = fmt::format("{} ran the effect without a recorded decision", who(e.attempt));
    return Cause::Unprotected;
  }

  Cause on_expired_completed(const ExecutionRecord& e, const ExecutionRecord& first, const ProcessDecision& d,
                             std::string& why) const {
    why = fmt::format("{} found the completed record expired at {} ({}) and treated it as absent (expired_wins); "
                      "the first run was by {} at {}",
                      who(e.attempt), t(d.at), d.seen && d.seen_expires_on ? "expires_on " + t(*d.seen_expires_on)
                                                                           : "expires_on unknown",
                      who(first.attempt), t(first.at));
    return Cause::Expired;
  }

  // The attempt found no record, or an expired one it replaced as absent (precedence expired-first).
  Cause on_absent(const ExecutionRecord& e, const std::vector<const ExecutionRecord*>& earlier,
                  const ProcessDecision& d, std::string& why) const {
    const ExecutionRecord& first = *earlier.front();
    const ExecutionRecord& previous = *earlier.back();
    const bool replaced_expired = d.seen && d.seen_expires_on && *d.seen_expires_on <= d.local_time;
    const std::string found = replaced_expired ? "found the record expired (expires_on " + t(*d.seen_expires_on) +
                                                     ") and replaced it as absent"
                                               : "found no record";
    if (!completed_by(earlier, d.at)) {
      if (auto cause = abandoned(previous.attempt, previous, e, d.at, found, why)) return *cause;
    }
    if (replaced_expired) {
      why = fmt::format("{} {} at {} (precedence expired-first: the TTL ran out, {}); the first run was by {} at {}",
                        who(e.attempt), found, t(d.at), d.seen_owner != 0 ? "owner " + who(d.seen_owner) : "no owner",
                        who(first.attempt), t(first.at));
      return Cause::Expired;
    }
    if (const std::optional<Cause> cause = on_evicted(e, first, previous, d, why)) return *cause;
    why = fmt::format("{} found no record at {} while {} (effect at {}) {}: a race the strategy does not prevent",
                      who(e.attempt), t(d.at), who(previous.attempt), t(previous.at), state_at(previous.attempt, d.at));
    return Cause::Unprotected;
  }

  // The record was gone because the store evicted it: by TTL (expired) or for room (capacity_evicted), before
  // this attempt's decision or while its work ran.
  std::optional<Cause> on_evicted(const ExecutionRecord& e, const ExecutionRecord& first,
                                  const ExecutionRecord& previous, const ProcessDecision& d, std::string& why) const {
    const Gone before = evicted_before(e.id, e.processor, d.at);
    if (before == Gone::Ttl) {
      why = fmt::format("{} found no record at {}: TTL had evicted it; the first run was by {} at {} "
                        "(ttl shorter than this late redelivery)",
                        who(e.attempt), t(d.at), who(first.attempt), t(first.at));
      return Cause::Expired;
    }
    if (before == Gone::Room) {
      why = fmt::format("{} found no record at {}: the store had evicted it {}; the first run was by {} at {}",
                        who(e.attempt), t(d.at), room_text(room_eviction_before(e.id, e.processor, d.at)),
                        who(first.attempt), t(first.at));
      return Cause::CapacityEvicted;
    }
    const Gone during = evicted_between(e.id, e.processor, d.at, e.at);
    if (during == Gone::Ttl) {
      why = fmt::format("{} created the record at {}, but TTL evicted it while the work ran (the TTL runs from "
                        "the start write); {} found no record and ran the effect at {}, before {} ran it at {}",
                        who(e.attempt), t(d.at), who(previous.attempt), t(previous.at), who(e.attempt), t(e.at));
      return Cause::Expired;
    }
    if (during == Gone::Room) {
      why = fmt::format("{} created the record at {}, but the store evicted it {}, while the work ran; {} found no "
                        "record and ran the effect at {}, before {} ran it at {}",
                        who(e.attempt), t(d.at), room_text(room_eviction_between(e.id, e.processor, d.at, e.at)),
                        who(previous.attempt), t(previous.at), who(e.attempt), t(e.at));
      return Cause::CapacityEvicted;
    }
    return std::nullopt;
  }

  // What attempt `a` was doing at `time`, as the ledger shows it.
  std::string state_at(AttemptId a, sim::Time time) const {
    const std::optional<AttemptRecord> r = record(a);
    if (!r) return "was in an unknown state";
    if (r->completion_applied && r->completed_at && *r->completed_at <= time) {
      return "had completed its record at " + t(*r->completed_at) + ", which was gone";
    }
    if (r->crashed_at && *r->crashed_at <= time) return "had died at " + t(*r->crashed_at);
    if (r->ended_at && *r->ended_at <= time) return "had ended at " + t(*r->ended_at) + " and left no record";
    return "had not recorded it yet";
  }

  Cause on_stale_takeover(const ExecutionRecord& e, const std::vector<const ExecutionRecord*>& earlier,
                          const ProcessDecision& d, std::string& why) const {
    const ExecutionRecord& previous = *earlier.back();
    const AttemptId owner = d.seen ? d.seen_owner : 0;
    // Another attempt took over the same stale record (same startedAt and owner) before us and ran it.
    for (const auto* prior : earlier) {
      const std::optional<ProcessDecision> pd = process_decision(prior->attempt);
      if (pd && pd->basis == Basis::StaleTakeover && pd->seen && d.seen &&
          pd->seen_started_at == d.seen_started_at && pd->seen_owner == d.seen_owner) {
        why = fmt::format("{} and {} both took over the same stale record ({} by {}): the start time was never "
                          "refreshed, so every waiter that found it stale ran the effect",
                          who(prior->attempt), who(e.attempt), started_at_text(d.seen_started_at), who(owner));
        return Cause::HerdTakeover;
      }
    }
    const AttemptId blamed = executor_of(owner, previous);
    if (auto cause = abandoned(blamed, previous, e, d.at, "found the record stale", why)) return *cause;
    if (blamed != owner) {
      if (auto cause = owner_began_after_eviction(e, previous, owner, d, why)) return *cause;
    }
    const AttemptRecord owner_record = record(blamed).value_or(AttemptRecord{});
    const std::string alive = owner_record.completed_at ? " and completed at " + t(*owner_record.completed_at) : "";
    if (d.seen && d.seen_expires_on && *d.seen_expires_on <= d.local_time) {
      why = fmt::format("{} found the in-flight record of {} expired at {} (expires_on {}) and took it over as new "
                        "(precedence = \"completed-first\"), but {} was alive{}: its work outlived the TTL",
                        who(e.attempt), who(owner), t(d.at), t(*d.seen_expires_on), who(blamed), alive);
      return Cause::TakeoverWhileAlive;
    }
    why = fmt::format("{} found the record of {} ({}) older than max_processing_time at {} (its local clock {}), "
                      "but {} was alive{}: slow work, a pause or clock skew",
                      who(e.attempt), who(owner), started_at_text(d.seen_started_at), t(d.at), t(d.local_time),
                      who(blamed), alive);
    return Cause::TakeoverWhileAlive;
  }

  // The stale record's owner never ran the effect, and the record it took the place of was the earlier
  // executor's completed one, which the store evicted before the takeover (by TTL, or for room): the owner
  // started afresh because the key was gone, and taking over from an owner that died or gave up is the decision
  // table working. The window is the eviction's, not the takeover's.
  std::optional<Cause> owner_began_after_eviction(const ExecutionRecord& e, const ExecutionRecord& previous,
                                                  AttemptId owner, const ProcessDecision& d, std::string& why) const {
    const std::optional<AttemptRecord> executor = record(previous.attempt);
    if (!executor || !executor->completed_at) return std::nullopt;
    const Gone gone = evicted_between(e.id, e.processor, *executor->completed_at, d.at);
    if (gone == Gone::No) return std::nullopt;
    why = fmt::format("{} found the record of {} ({}) older than max_processing_time at {} and took it over; {} "
                      "never ran the effect and {}. That record was new because {} the completed record of {} "
                      "(effect at {}, completed at {}): {}",
                      who(e.attempt), who(owner), started_at_text(d.seen_started_at), t(d.at), who(owner),
                      state_at(owner, d.at), gone == Gone::Ttl ? "TTL had evicted" : "the store had evicted for room",
                      who(previous.attempt), t(previous.at), t(*executor->completed_at),
                      gone == Gone::Ttl ? "ttl shorter than this late redelivery"
                                        : "store.capacity: more ids were recorded since than the store holds");
    return gone == Gone::Ttl ? Cause::Expired : Cause::CapacityEvicted;
  }

  // Whom a decision on `owner`'s in-flight record blames: the owner, or the earlier executor `previous` when the
  // owner never ran the effect (it started afresh over a record that was gone).
  AttemptId executor_of(AttemptId owner, const ExecutionRecord& previous) const {
    const std::optional<AttemptRecord> found = record(owner);
    return found && found->executed ? owner : previous.attempt;
  }

  // The attempt waited max_wait for an in-flight record and went ahead (on_max_wait = "process"). The record's
  // owner (or the earlier executor, when the owner never ran the effect) may have died or lost its completion
  // after its effect: that window opened first, the wait only let the copy through.
  Cause on_max_wait_process(const ExecutionRecord& e, const ExecutionRecord& previous, const ProcessDecision& d,
                            std::string& why) const {
    const AttemptId owner = d.seen ? d.seen_owner : 0;
    const AttemptId blamed = executor_of(owner, previous);
    if (auto cause = abandoned(blamed, previous, e, d.at, "waited max_wait for the record", why)) return *cause;
    why = fmt::format("{} waited max_wait for the in-flight record of {} and went ahead anyway "
                      "(on_max_wait = \"process\") at {}, while {} {}",
                      who(e.attempt), who(owner != 0 ? owner : previous.attempt), t(d.at), who(blamed),
                      work_at(blamed, d.at));
    return Cause::MaxWaitExceeded;
  }

  // What attempt `a`, alive, was doing at `time`: still at work, or done since the waiter last read its record.
  std::string work_at(AttemptId a, sim::Time time) const {
    const std::optional<AttemptRecord> r = record(a);
    if (!r) return "was in an unknown state";
    if (r->completed_at) {
      return fmt::format("{} (it completed its record at {})",
                         *r->completed_at > time ? "was still at work" : "had finished after the waiter's last read",
                         t(*r->completed_at));
    }
    if (r->ended_at && *r->ended_at <= time) return "had ended at " + t(*r->ended_at);
    return "was still at work";
  }
  // A cause outside the strategy's declared windows (sink_retry, the sink's, aside) is a broken promise.
  void check_declared(Cause cause, const ExecutionRecord& e, const std::string& why) const {
    if (cause == Cause::SinkRetry || cause == Cause::ProviderKeyExpired || declares_cause(strategy_, cause)) return;
    throw StrategyContractError(fmt::format("strategy \"{}\": a duplicate of message {} classed {}, a cause none of "
                                            "its registered duplicate windows names: {}",
                                            strategy_.name, e.id, to_string(cause), why));
  }

  void count_executions() {
    const auto& ex = ledger_.executions;
    // Sorted by (id, processor, time), ties in log order: the sort keys are copied next to the index, so the
    // sort reads one flat array (comparing through indices into the deque missed the cache on every compare).
    struct SortKey {
      MessageId id;
      sim::Time at;
      ProcessorId processor;
      std::uint32_t index;
    };
    std::vector<SortKey> order;
    order.reserve(ex.size());
    for (std::size_t i = 0; i < ex.size(); ++i) {
      order.push_back(SortKey{ex[i].id, ex[i].at, ex[i].processor, static_cast<std::uint32_t>(i)});
    }
    std::sort(order.begin(), order.end(), [](const SortKey& x, const SortKey& y) {
      if (x.id != y.id) return x.id < y.id;
      if (x.processor != y.processor) return x.processor < y.processor;
      if (x.at != y.at) return x.at < y.at;
      return x.index < y.index;
    });
    result_.effects = ex.size() + ledger_.settled.size();  // a settled group's execution is an effect too
    first_value_.reserve(ex.size());  // at most one per execution: no growth copies of a million entries
    std::vector<const ExecutionRecord*> earlier;
    ExecutionRecord settled_first;  // a settled group's execution, rebuilt: before every logged one of its group
    for (std::size_t k = 0; k < order.size(); ++k) {
      const ExecutionRecord& e = ex[order[k].index];
      const bool same_group = k > 0 && order[k - 1].id == e.id && order[k - 1].processor == e.processor;
      if (!same_group) {
        earlier.clear();
        const auto settled = ledger_.settled.find(group_key(e.id, e.processor));
        if (settled == ledger_.settled.end()) {
          first_value_.push_back(FirstValue{e.id, e.processor, e.value});  // in (id, processor) order
          earlier.push_back(&e);
          continue;
        }
        const SettledGroup& g = settled->second;
        settled_first = ExecutionRecord{e.id, e.processor, g.attempt, 1, g.node, g.executed_at, g.value};
        earlier.push_back(&settled_first);  // and e, logged after the group settled, is a duplicate
      }
      std::string why;
      const Cause cause = classify(e, earlier, why);
      check_declared(cause, e, why);
      ++result_.duplicates[static_cast<std::size_t>(cause)];
      ++result_.duplicate_effects;
      // Past the cap, the first duplicate of each cause is still explained (the summary names it).
      if (result_.explanations.size() < in_.max_explanations || result_.duplicates[static_cast<std::size_t>(cause)] == 1) {
        result_.explanations.push_back(DuplicateExplanation{e.id, e.processor, cause, e.attempt,
                                                            earlier.front()->attempt, e.at,
                                                            fmt::format("message {} ({}): {}", e.id,
                                                                        processor(e.processor), why),
                                                            read_nothing_});
      }
      earlier.push_back(&e);
    }
  }

  static constexpr std::size_t kLostExamples = 20;  // lost pairs named in the result (the count is whole)

  void count_lost() {
    ledger_.expected.for_each([this](MessageId id, ProcessorId p) {
      if (first_value(id, p) != nullptr) return;
      if (ledger_.due_after_end.contains({id, p})) return;  // undelivered: its copy is due after the end
      ++result_.lost_messages;
      if (result_.lost_examples.size() < kLostExamples) {
        result_.lost_examples.push_back(fmt::format("message {} ({})", id, processor(p)));
      }
    });
    result_.messages = ledger_.messages;
    result_.deliveries = ledger_.deliveries;
  }

  // Deliveries the consumer still held unanswered at the end: attempts that neither ended nor were cut by a crash
  // (the crash answers for its attempts: the source redelivers by its own rules).
  void count_unanswered() {
    ledger_.attempts.for_each([this](const AttemptRecord& a) {
      if (a.ended_at || a.crashed_at) return;
      ++result_.unanswered;
      if (result_.unanswered_examples.size() < kLostExamples) {
        result_.unanswered_examples.push_back(
            fmt::format("message {} ({}) {}", a.id, processor(a.processor), who(a.attempt)));
      }
    });
  }

  void count_memo_mismatches() {
    // (An attempt folded into a settled group returned the group's value: no mismatch.)
    std::vector<const AttemptRecord*> mismatched;
    ledger_.attempts.for_each([this, &mismatched](const AttemptRecord& a) {
      if (!a.has_returned_value) return;
      const std::uint64_t* first = first_value(a.id, a.processor);
      if (first != nullptr && *first != a.returned) {
        ++result_.memo_mismatches;
        if (mismatched.size() < in_.max_explanations) mismatched.push_back(&a);
      }
    });
    explain_memo_mismatches(mismatched);
  }

  // Who was handed which value, and where that value came from: the attempt's own duplicate execution, the
  // memo a duplicate execution recorded, or no execution at all.
  void explain_memo_mismatches(const std::vector<const AttemptRecord*>& mismatched) {
    if (mismatched.empty()) return;
    std::vector<const ExecutionRecord*> by_group;  // sorted by (id, processor, at), as count_executions visits
    by_group.reserve(ledger_.executions.size());
    for (const auto& e : ledger_.executions) by_group.push_back(&e);
    std::stable_sort(by_group.begin(), by_group.end(), [](const ExecutionRecord* x, const ExecutionRecord* y) {
      if (x->id != y->id) return x->id < y->id;
      if (x->processor != y->processor) return x->processor < y->processor;
      return x->at < y->at;
    });
    for (const AttemptRecord* a : mismatched) {
      const auto begin = std::lower_bound(by_group.begin(), by_group.end(), std::make_pair(a->id, a->processor),
                                          [](const ExecutionRecord* e, const std::pair<MessageId, ProcessorId>& k) {
                                            return e->id != k.first ? e->id < k.first : e->processor < k.second;
                                          });
      auto end = begin;
      while (end != by_group.end() && (*end)->id == a->id && (*end)->processor == a->processor) ++end;
      std::string first_text;
      const auto settled = ledger_.settled.find(group_key(a->id, a->processor));
      if (settled != ledger_.settled.end()) {
        first_text = fmt::format("the first execution ({} at {}) gave {}", who(settled->second.attempt),
                                 t(settled->second.executed_at), settled->second.value);
      } else if (begin != end) {
        first_text = fmt::format("the first execution ({} at {}) gave {}", who((*begin)->attempt), t((*begin)->at),
                                 (*begin)->value);
      }
      const ExecutionRecord* source = nullptr;
      for (auto it = begin; it != end && source == nullptr; ++it) {
        if ((*it)->value == a->returned) source = *it;
      }
      std::string why;
      const bool retried = source != nullptr && source->attempt == a->attempt && begin != end &&
                           (*begin)->attempt == a->attempt && source != *begin;
      if (retried) {
        why = fmt::format("{} never got the answer of its first provider call (executed at {}, result {}), called "
                          "again, and handed its caller the second execution's result {} (at {})",
                          who(a->attempt), t((*begin)->at), (*begin)->value, a->returned, t(source->at));
      } else if (source != nullptr && source->attempt == a->attempt) {
        why = fmt::format("{} ran the effect again at {} (a duplicate) and handed its caller its own result {}; {}",
                          who(a->attempt), t(source->at), a->returned, first_text);
      } else if (source != nullptr) {
        why = fmt::format("{} was handed {}, the result of the duplicate execution by {} at {} (its completion "
                          "record, read as the memo); {}",
                          who(a->attempt), a->returned, who(source->attempt), t(source->at), first_text);
      } else {
        why = fmt::format("{} was handed {}, which no execution of this message produced; {}", who(a->attempt),
                          a->returned, first_text);
      }
      result_.memo_explanations.push_back(MemoMismatchExplanation{
          a->id, a->processor, a->attempt, a->ended_at.value_or(0),
          fmt::format("message {} ({}): {}", a->id, processor(a->processor), why)});
    }
    std::sort(result_.memo_explanations.begin(), result_.memo_explanations.end(),
              [](const MemoMismatchExplanation& x, const MemoMismatchExplanation& y) {
                return x.at != y.at ? x.at < y.at : x.attempt < y.attempt;
              });
  }

  // Completions that landed on a live record whose memoized result was different, as the store's replies
  // showed them (memo_overwrite in check/ledger.hpp): a landed completion after the record was evicted, or one
  // that wrote nothing memoized, is not one.
  void count_memo_overwrites() { result_.memo_overwrites = ledger_.memo_overwrites.size(); }

  void count_waits() {
    std::vector<std::int64_t> waited;
    waited.reserve(ledger_.waits.size());
    for (const auto& w : ledger_.waits) waited.push_back(w.waited);
    result_.waits = ledger_.waits.size();
    result_.wait_time = quantiles(waited);
  }

  void count_recovery() {
    // Recovery latency: from a crash of an attempt that had decided to run its effect to the first completion
    // of the same (id, processor) by another attempt. Only the pairs with such a crash are indexed (a run
    // without crashes builds nothing: indexing every completion was the oracle's largest temporary).
    const auto crashed_deciding = [](const AttemptRecord& a) {
      return a.crashed_at && a.decided_to_process;
    };
    // (A settled group's completion landed before any later attempt of the group began: never a recovery.)
    std::vector<std::pair<MessageId, ProcessorId>> crashed;
    ledger_.attempts.for_each([&](const AttemptRecord& a) {
      if (crashed_deciding(a)) crashed.emplace_back(a.id, a.processor);
    });
    std::sort(crashed.begin(), crashed.end());
    struct Completion {  // ordered by (id, processor, at, by)
      MessageId id;
      ProcessorId processor;
      sim::Time at;
      AttemptId by;
      auto operator<=>(const Completion&) const = default;
    };
    std::vector<Completion> completions;
    ledger_.attempts.for_each([&](const AttemptRecord& a) {
      if (a.completion_applied && a.completed_at &&
          std::binary_search(crashed.begin(), crashed.end(), std::make_pair(a.id, a.processor))) {
        completions.push_back({a.id, a.processor, *a.completed_at, a.attempt});
      }
    });
    std::sort(completions.begin(), completions.end());
    std::vector<std::int64_t> latencies;
    ledger_.attempts.for_each([&](const AttemptRecord& a) {
      if (!crashed_deciding(a)) return;
      for (auto it = std::lower_bound(completions.begin(), completions.end(), Completion{a.id, a.processor, INT64_MIN, 0});
           it != completions.end() && it->id == a.id && it->processor == a.processor; ++it) {
        if (it->by != a.attempt && it->at >= *a.crashed_at) {
          latencies.push_back(it->at - *a.crashed_at);
          break;
        }
      }
    });
    result_.recovery_latency = quantiles(latencies);
  }

  const OracleInput& in_;
  const StrategyInfo& strategy_;
  const Ledger& ledger_;
  RunResult& result_;
  // The first execution's value per (id, processor) of the groups not settled, sorted by (id, processor)
  // (count_executions visits them in that order).
  struct FirstValue {
    MessageId id;
    ProcessorId processor;
    std::uint64_t value;
  };
  static constexpr std::size_t kNoGroup = SIZE_MAX;
  // The group's index in first_value_, or kNoGroup when it has no execution.
  std::size_t group_of(MessageId id, ProcessorId processor) const {
    const auto it = std::lower_bound(first_value_.begin(), first_value_.end(), std::make_pair(id, processor),
                                     [](const FirstValue& f, const std::pair<MessageId, ProcessorId>& k) {
                                       return f.id != k.first ? f.id < k.first : f.processor < k.second;
                                     });
    if (it == first_value_.end() || it->id != id || it->processor != processor) return kNoGroup;
    return static_cast<std::size_t>(it - first_value_.begin());
  }
  // The first execution's value of the group: a settled group's, or the first logged one's; nullptr if none.
  const std::uint64_t* first_value(MessageId id, ProcessorId processor) const {
    const auto settled = ledger_.settled.find(group_key(id, processor));
    if (settled != ledger_.settled.end()) return &settled->second.value;
    const std::size_t group = group_of(id, processor);
    return group == kNoGroup ? nullptr : &first_value_[group].value;
  }
  bool read_nothing_ = false;  // the duplicate classify() judged last decided without reading a record
  std::vector<EvictionRecord> evictions_;       // TTL's, sorted by (key, at)
  std::vector<EvictionRecord> room_evictions_;  // store.capacity's, sorted by (key, at)
  mutable std::vector<std::pair<AttemptId, std::uint64_t>> settled_by_attempt_;  // (attempt, group key), sorted
  std::vector<FirstValue> first_value_;
};

}  // namespace

void judge(const OracleInput& input, RunResult& result) { Judge(input, result).run(); }

}  // namespace lethe
