// An event log sorted by spilled runs and merged as it is written (check/event_spool.hpp).
#include "check/event_spool.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <ostream>
#include <queue>
#include <stdexcept>
#include <tuple>
#include <unistd.h>

#include "protocol/strategies.hpp"

namespace lethe::events {

namespace {

using OrderedJson = nlohmann::ordered_json;

// The kinds in the order write_events ranks lines of one instant.
enum Kind : std::uint8_t { kPublish, kDelivery, kDecision, kWait, kExecution, kEffect, kCompletion, kOverwrite,
                           kOutcome, kEvict, kCapacityEvict, kAck, kDue, kMember, kRefused, kNode };

constexpr std::uint8_t kFlag = 1;         // completion: applied; outcome: a value; ack: accepted; decision: seen
constexpr std::size_t kReadBlock = 1024;  // entries read at a time from each spilled run while merging

std::string temporary_directory() {
  const char* dir = std::getenv("TMPDIR");
  return dir != nullptr && *dir != '\0' ? dir : "/tmp";
}

}  // namespace

std::vector<std::string_view> event_trace_kinds() { return {"attempt", "ack", "crash", "restart", "pause", "skew"}; }

EventSpool::~EventSpool() {
  if (fd_ >= 0) ::close(fd_);
}

bool EventSpool::before(const Entry& x, const Entry& y) {
  return std::tie(x.at, x.kind, x.seq) < std::tie(y.at, y.kind, y.seq);
}

void EventSpool::add(const Entry& entry) {
  buffer_.push_back(entry);
  if (buffer_.size() >= buffer_entries_ && spill_error_.empty()) spill();
}

// Sorts the buffer and appends it to the temporary file as one run; on failure keeps it (and every later entry)
// in memory.
void EventSpool::spill() {
  if (fd_ < 0) {
    std::string path = temporary_directory() + "/lethe-events-XXXXXX";
    fd_ = ::mkstemp(path.data());
    if (fd_ < 0) {
      spill_error_ = fmt::format("cannot make a temporary file in {}: {}", temporary_directory(), std::strerror(errno));
      return;
    }
    ::unlink(path.c_str());
  }
  std::sort(buffer_.begin(), buffer_.end(), before);
  const auto* bytes = reinterpret_cast<const char*>(buffer_.data());
  std::size_t left = buffer_.size() * sizeof(Entry);
  auto offset = static_cast<off_t>(spilled_ * sizeof(Entry));
  while (left > 0) {
    const ssize_t n = ::pwrite(fd_, bytes, left, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      spill_error_ = fmt::format("cannot write a temporary file in {}: {}", temporary_directory(),
                                 n < 0 ? std::strerror(errno) : "no room");
      return;
    }
    bytes += n;
    left -= static_cast<std::size_t>(n);
    offset += n;
  }
  runs_.push_back(Run{spilled_, buffer_.size()});
  spilled_ += buffer_.size();
  buffer_.clear();
}

// ---------------------------------------------------------------- entries

EventSpool::Entry EventSpool::make(sim::Time at, std::uint8_t kind, std::uint64_t seq,
                                   std::initializer_list<std::uint64_t> fields, std::uint32_t node,
                                   std::uint32_t processor, std::uint8_t flags) {
  Entry e;
  e.at = at;
  e.kind = kind;
  e.seq = seq;
  std::copy(fields.begin(), fields.end(), std::begin(e.u));
  e.node = node;
  e.processor = processor;
  e.flags = flags;
  return e;
}

namespace {
std::uint64_t raw(MaybeTime time) { return static_cast<std::uint64_t>(time.value_or(MaybeTime::kNone)); }
std::uint64_t raw(sim::Time time) { return static_cast<std::uint64_t>(time); }
}  // namespace

void EventSpool::add_attempt(const AttemptRecord& a, const std::optional<ProcessDecision>& d, sim::Time delivered_at) {
  add(make(delivered_at, kDelivery, a.attempt, {a.id, a.attempt}, a.node, a.processor));
  if (d) {
    add(make(d->at, kDecision, a.attempt,
             {a.attempt, raw(d->local_time), d->seen_owner, raw(d->seen_started_at), raw(d->seen_expires_on)},
             static_cast<std::uint32_t>(d->basis), 0, d->seen ? kFlag : 0));
  }
  const bool applied = a.completion_applied && a.completed_at;
  if (applied || (a.completion_failed && a.ended_at)) {
    // A failed write's own instant is not kept: it returned before protect() did, so it is logged there.
    add(make(applied ? *a.completed_at : *a.ended_at, kCompletion, a.attempt, {a.attempt}, 0, 0, applied ? kFlag : 0));
  }
  if (a.ended_at && a.outcome >= 0) {
    add(make(*a.ended_at, kOutcome, a.attempt, {a.attempt, a.returned}, static_cast<std::uint32_t>(a.outcome), 0,
             a.has_returned_value ? kFlag : 0));
  }
}

void EventSpool::add_ack(const AckEvent& a) {
  add(make(a.at, kAck, acks_++, {a.id}, a.node, a.processor, a.accepted ? kFlag : 0));
}

void EventSpool::add_node_event(const NodeEvent& n) {
  add(make(n.at, kNode, node_events_++, {static_cast<std::uint64_t>(n.kind), raw(n.amount)}, n.node));
}

void EventSpool::add_wait(const WaitRecord& w, sim::Time delivered_at) {
  add(make(delivered_at, kWait, waits_++, {w.attempt, raw(w.waited)}));
}

TraceFacts trace_facts(const sim::TraceRecord& r) {
  const std::string_view kind = r.kind_name;
  TraceFacts facts;
  if (kind == "attempt") {
    facts.delivered = std::pair{AttemptId{r.c}, r.time};
  } else if (kind == "ack") {
    facts.ack = AckEvent{r.time, r.a, static_cast<ProcessorId>(r.b), r.node, r.c != 0};
  } else if (kind == "crash") {
    facts.node = NodeEvent{NodeEventKind::Crash, r.time, r.node, 0};
  } else if (kind == "restart") {
    facts.node = NodeEvent{NodeEventKind::Restart, r.time, r.node, 0};
  } else if (kind == "pause") {
    facts.node = NodeEvent{NodeEventKind::Pause, r.time, r.node, static_cast<sim::Duration>(r.a)};
  } else if (kind == "skew") {
    facts.node = NodeEvent{NodeEventKind::Skew, r.time, static_cast<std::uint32_t>(r.a), static_cast<sim::Duration>(r.b)};
  }
  return facts;
}

void EventSpool::trace_record(const sim::TraceRecord& r) {
  const TraceFacts facts = trace_facts(r);
  if (facts.delivered) delivered_[facts.delivered->first] = facts.delivered->second;
  if (facts.ack) add_ack(*facts.ack);
  if (facts.node) add_node_event(*facts.node);
}

void EventSpool::attempt_folded(const AttemptRecord& record, const std::optional<ProcessDecision>& decision) {
  const auto delivered = delivered_.find(record.attempt);
  add_attempt(record, decision, delivered == delivered_.end() ? 0 : delivered->second);
  if (delivered != delivered_.end()) delivered_.erase(delivered);
}

void EventSpool::execution(const ExecutionRecord& x) {
  add(make(x.at, kExecution, executions_++, {x.id, x.attempt, x.call_number, x.value}));
}

void EventSpool::eviction(const EvictionRecord& x) { add(make(x.at, kEvict, evictions_++, {x.key})); }

void EventSpool::wait(const WaitRecord& w) {
  const auto delivered = delivered_.find(w.attempt);
  add_wait(w, delivered == delivered_.end() ? 0 : delivered->second);
}

// What a whole log holds beyond the streamed kinds (and, unless `streamed`, those too).
void EventSpool::add_whole_ledger_rest(const EventLog& log, bool streamed) {
  const Ledger& l = log.ledger;
  std::uint64_t seq = 0;
  // Published ids carry no time in the ledger: each is owed from the start.
  l.expected.for_each([&](MessageId id, ProcessorId p) {
    if (p == 0) add(make(INT64_MIN, kPublish, seq++, {id}));
  });
  const BTreeMap<AttemptId, sim::Time>& times = streamed ? delivered_ : log.delivered_at;
  const auto delivered_at = [&times](AttemptId attempt) {
    const auto found = times.find(attempt);
    return found == times.end() ? sim::Time{0} : found->second;
  };
  l.attempts.for_each([&](const AttemptRecord& a) { add_attempt(a, l.process_decision(a), delivered_at(a.attempt)); });
  if (!streamed) {
    for (const WaitRecord& w : l.waits) add_wait(w, delivered_at(w.attempt));
    for (const ExecutionRecord& x : l.executions) execution(x);
    for (const EvictionRecord& x : l.evictions) eviction(x);
    for (const AckEvent& a : log.acks) add_ack(a);
    for (const NodeEvent& n : log.node_events) add_node_event(n);
  }
  seq = 0;
  for (const EvictionRecord& x : l.capacity_evictions) {
    add(make(x.at, kCapacityEvict, seq++, {x.key, raw(x.written_at), x.writes_since}));
  }
  seq = 0;
  for (const MemoOverwrite& m : l.memo_overwrites) {
    add(make(m.at, kOverwrite, seq++, {m.id, m.attempt, m.replaced, m.written}, 0, m.processor));
  }
  for (std::size_t i = 0; i < l.member_removals.size(); ++i) add(make(l.member_removals[i].at, kMember, i, {i}));
  for (std::size_t i = 0; i < l.payload_refusals.size(); ++i) {
    add(make(l.payload_refusals[i].first, kRefused, i, {l.payload_refusals[i].second}));
  }
  seq = 0;
  for (const auto& [pair, at] : l.due_after_end) add(make(at, kDue, seq++, {pair.first}, 0, pair.second));
}

void EventSpool::write_whole(std::ostream& out, const EventLog& log) {
  add_whole_ledger_rest(log, /*streamed=*/false);
  write(out, log);
}

void EventSpool::write_rest(std::ostream& out, const EventLog& log) {
  add_whole_ledger_rest(log, /*streamed=*/true);
  write(out, log);
}

// ---------------------------------------------------------------- rendering

namespace {

class Renderer {
 public:
  explicit Renderer(const EventLog& log) : log_(log) {}

  template <class Entry>
  OrderedJson render(const Entry& e) const {
    switch (static_cast<Kind>(e.kind)) {
      case kPublish:
        return OrderedJson{{"event", "publish"}, {"id", e.u[0]}};
      case kDelivery:
        return OrderedJson{{"event", "delivery"}, {"at", e.at}, {"id", e.u[0]},
                           {"processor", processor_name(log_, e.processor)}, {"node", node(e.node)},
                           {"attempt", e.u[1]}};
      case kDecision:
        return decision(e);
      case kWait:
        return OrderedJson{{"event", "wait"}, {"at", e.at}, {"attempt", e.u[0]},
                           {"waited", static_cast<sim::Duration>(e.u[1])}};
      case kExecution:
        return OrderedJson{{"event", "execution"}, {"at", e.at}, {"id", e.u[0]}, {"attempt", e.u[1]},
                           {"call", static_cast<std::uint32_t>(e.u[2])}, {"value", e.u[3]}};
      case kCompletion:
        return OrderedJson{{"event", "completion"}, {"at", e.at}, {"attempt", e.u[0]}, {"applied", e.flags == kFlag}};
      case kOverwrite:
        return OrderedJson{{"event", "memo_overwrite"}, {"at", e.at}, {"id", e.u[0]},
                           {"processor", processor_name(log_, e.processor)}, {"attempt", e.u[1]},
                           {"replaced", e.u[2]}, {"written", e.u[3]}};
      case kOutcome: {
        OrderedJson outcome = {{"event", "outcome"}, {"at", e.at}, {"attempt", e.u[0]},
                               {"outcome", to_string(static_cast<Outcome>(e.node))}};
        if (e.flags == kFlag) outcome["value"] = e.u[1];
        return outcome;
      }
      case kEvict:
      case kCapacityEvict:
        return eviction(e);
      case kAck:
        return OrderedJson{{"event", "ack"}, {"at", e.at}, {"id", e.u[0]},
                           {"processor", processor_name(log_, e.processor)}, {"node", node(e.node)},
                           {"accepted", e.flags == kFlag}};
      case kDue:
        return OrderedJson{{"event", "due"}, {"at", e.at}, {"id", e.u[0]},
                           {"processor", processor_name(log_, e.processor)}};
      case kMember:
        return member(log_.ledger.member_removals.at(e.u[0]));
      case kRefused:
        return OrderedJson{{"event", "refused"}, {"at", e.at}, {"attempt", e.u[0]}};
      case kEffect:
      case kNode:
        break;
    }
    return node_event(e);
  }

 private:
  std::string node(std::uint32_t id) const {
    return id < log_.nodes.size() ? log_.nodes[id] : fmt::format("node{}", id);
  }

  template <class Entry>
  OrderedJson decision(const Entry& e) const {
    OrderedJson json = {{"event", "decision"}, {"at", e.at}, {"attempt", e.u[0]},
                        {"basis", to_string(static_cast<Basis>(e.node))},
                        {"local_time", static_cast<sim::Time>(e.u[1])}};
    if (e.flags == kFlag) {
      OrderedJson seen = OrderedJson::object();
      if (e.u[2] != 0) seen["owner"] = e.u[2];
      if (const MaybeTime started(static_cast<sim::Time>(e.u[3])); started) seen["started_at"] = *started;
      if (const MaybeTime expires(static_cast<sim::Time>(e.u[4])); expires) seen["expires_on"] = *expires;
      json["seen"] = std::move(seen);
    }
    return json;
  }

  template <class Entry>
  OrderedJson eviction(const Entry& e) const {
    const Key key = e.u[0];
    OrderedJson json{{"event", "evict"}, {"at", e.at}, {"id", key_message(key)},
                     {"processor", processor_name(log_, key_processor(key))}};
    if (e.kind != kCapacityEvict) return json;
    json["reason"] = "capacity";
    if (const MaybeTime written(static_cast<sim::Time>(e.u[1])); written && e.u[2] != EvictionRecord::kUnknown) {
      json["written_at"] = *written;
      json["writes_since"] = e.u[2];
    }
    return json;
  }

  OrderedJson member(const MemberRemoval& m) const {
    return OrderedJson{{"event", "member"}, {"at", m.at}, {"processor", processor_name(log_, m.processor)},
                       {"node", node(m.node)},
                       {"reason", m.reason == RemovalReason::SessionTimeout ? "session_timeout" : "max_poll_interval"},
                       {"rejoin", m.rejoin}, {"since", m.since}, {"held", m.held}};
  }

  template <class Entry>
  OrderedJson node_event(const Entry& e) const {
    const auto kind = static_cast<NodeEventKind>(e.u[0]);
    OrderedJson json = {{"event", to_string(kind)}, {"at", e.at}, {"node", node(e.node)}};
    if (kind == NodeEventKind::Pause) json["duration"] = static_cast<sim::Duration>(e.u[1]);
    if (kind == NodeEventKind::Skew) json["skew"] = static_cast<sim::Duration>(e.u[1]);
    return json;
  }

  const EventLog& log_;
};

OrderedJson run_line(const EventLog& log) {
  OrderedJson run = {{"event", "run"}, {"protocol", log.protocol}, {"processors", log.processors}};
  if (log.saga_steps > 0) run["saga_steps"] = log.saga_steps;
  if (log.provider_key_window) run["provider_key_window"] = *log.provider_key_window;
  if (log.provider_calls) run["provider_calls"] = *log.provider_calls;
  if (!log.scenario.empty()) run["scenario"] = log.scenario;
  if (log.seed != 0) run["seed"] = log.seed;
  return run;
}

}  // namespace

// The spilled runs and the buffer, read in key order: each run a block at a time.
class EventSpool::Merge {
 public:
  Merge(const EventSpool& spool) : spool_(spool) {
    for (const Run& run : spool.runs_) sources_.push_back(Source{run.offset, run.offset + run.count, {}, 0});
    for (std::size_t i = 0; i < sources_.size(); ++i) {
      if (refill(sources_[i])) heap_.push(i);
    }
    if (!spool.buffer_.empty()) heap_.push(kBuffer);
  }

  // The next entry in key order, or null at the end.
  const Entry* next() {
    if (heap_.empty()) return nullptr;
    const std::size_t source = heap_.top();
    heap_.pop();
    if (source == kBuffer) {
      const Entry* e = &spool_.buffer_[buffer_at_++];
      if (buffer_at_ < spool_.buffer_.size()) heap_.push(kBuffer);
      return e;
    }
    Source& s = sources_[source];
    current_ = s.block[s.at++];
    if (s.at < s.block.size() || refill(s)) heap_.push(source);
    return &current_;
  }

 private:
  static constexpr std::size_t kBuffer = SIZE_MAX;
  struct Source {
    std::uint64_t next;  // entry index in the file of the block after the one held
    std::uint64_t end;
    std::vector<Entry> block;
    std::size_t at;
  };

  bool refill(Source& s) const {
    const std::uint64_t count = std::min<std::uint64_t>(kReadBlock, s.end - s.next);
    s.block.resize(count);
    s.at = 0;
    if (count == 0) return false;
    auto* bytes = reinterpret_cast<char*>(s.block.data());
    std::size_t left = count * sizeof(Entry);
    auto offset = static_cast<off_t>(s.next * sizeof(Entry));
    while (left > 0) {
      const ssize_t n = ::pread(spool_.fd_, bytes, left, offset);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw std::runtime_error(fmt::format("cannot read back the event log's temporary file: {}",
                                                       n < 0 ? std::strerror(errno) : "it is shorter than written"));
      bytes += n;
      left -= static_cast<std::size_t>(n);
      offset += n;
    }
    s.next += count;
    return true;
  }
  const Entry& head(std::size_t source) const {
    return source == kBuffer ? spool_.buffer_[buffer_at_] : sources_[source].block[sources_[source].at];
  }

  struct Later {
    const Merge* merge;
    bool operator()(std::size_t x, std::size_t y) const { return before(merge->head(y), merge->head(x)); }
  };

  const EventSpool& spool_;
  std::vector<Source> sources_;
  std::size_t buffer_at_ = 0;
  Entry current_;
  std::priority_queue<std::size_t, std::vector<std::size_t>, Later> heap_{Later{this}};
};

void EventSpool::write(std::ostream& out, const EventLog& log) {
  out << run_line(log).dump() << "\n";
  std::sort(buffer_.begin(), buffer_.end(), before);
  const Renderer renderer(log);
  Merge merge(*this);
  while (const Entry* e = merge.next()) out << renderer.render(*e).dump() << "\n";
}

}  // namespace lethe::events
