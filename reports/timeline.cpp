#include "reports/timeline.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <set>

#include "protocol/strategies.hpp"
#include "protocol/env.hpp"
#include "protocol/store_ops.hpp"
#include "reports/summary.hpp"

namespace reports {

namespace {
bool starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }

// Kinds whose first field is the message id.
bool message_kind(std::string_view kind) {
  if (kind == "kafka.commit" || kind == "kafka.rebalance") return false;  // their first field is a processor
  static const char* prefixes[] = {"attempt", "decision", "outcome", "ack", "publish", "producer.", "crash_point",
                                   "sink.", "queue.", "kafka.", "client.", "request."};
  for (const char* p : prefixes) {
    if (starts_with(kind, p)) return true;
  }
  return false;
}

bool about_message_key(const sim::TraceRecord& r, std::uint64_t id) {
  if (r.kind_name == "store.execute") return r.a != 0 && lethe::key_message(r.b) == id;
  if (r.kind_name == "store.evict" || r.kind_name == "store.evict_capacity" || r.kind_name == "store.replica") {
    return lethe::key_message(r.a) == id;
  }
  return false;
}

bool node_lifecycle(std::string_view kind) { return kind == "crash" || kind == "restart" || kind == "pause"; }

const char* op_name(std::uint64_t operation) {
  static const char* kinds[] = {"get", "put", "delete", "upsert", "transaction", "evict"};
  const auto kind = operation / 2;
  return kind < 6 ? kinds[kind] : "operation";
}
bool op_applied(std::uint64_t operation) { return (operation & 1) != 0; }
bool op_writes(std::uint64_t operation) {
  const auto kind = operation / 2;
  return kind == 1 || kind == 3 || kind == 4;  // put, upsert, transaction
}

// "message=14 attempt=15 value=16": the kind's named fields (node fields by name), for kinds without words.
std::string named_fields(const sim::TraceRecord& r, const std::vector<std::string>& names) {
  const std::uint64_t values[] = {r.a, r.b, r.c};
  std::string out;
  for (std::size_t i = 0; i < 3; ++i) {
    std::string_view field = r.fields[i];
    std::string value = std::to_string(values[i]);
    if (field.empty()) {
      if (values[i] == 0) continue;
      field = i == 0 ? "a" : i == 1 ? "b" : "c";
    } else if (const auto slash = field.find('/'); slash != std::string_view::npos) {
      out += fmt::format(" {}={} {}={}", field.substr(0, slash), values[i] >> 32, field.substr(slash + 1),
                         values[i] & 0xffffffffull);
      continue;
    } else if (field.size() > 5 && field.substr(field.size() - 5) == "_node") {
      field = field.substr(0, field.size() - 5);
      value = node_label(names, static_cast<std::uint32_t>(values[i]));
    }
    out += fmt::format(" {}={}", field, value);
  }
  return out;
}

struct Words {
  std::string text;
  std::string short_text;
};

Words words(const sim::TraceRecord& r, const std::vector<std::string>& names) {
  const std::string_view k = r.kind_name;
  if (k == "decision") {
    const char* basis = lethe::to_string(static_cast<lethe::Basis>(r.c));
    return {fmt::format("decision {} (attempt {})", basis, r.b), basis};
  }
  if (k == "attempt") return {fmt::format("attempt {} begins (processor {})", r.c, r.b), fmt::format("attempt {}", r.c)};
  if (k == "outcome") {
    const char* outcome = r.c < 3 ? lethe::to_string(static_cast<lethe::Outcome>(r.c)) : "?";
    return {fmt::format("attempt {} ends: {}", r.b, outcome), outcome};
  }
  if (k == "crash_point") {
    const char* point = lethe::to_string(static_cast<lethe::CrashPoint>(r.b));
    return {fmt::format("crash point {} fired (attempt {})", point, r.c), "crash point"};
  }
  if (k == "ack") {
    return {fmt::format("acknowledged the delivery (processor {}){}", r.b, r.c != 0 ? "" : ": refused"),
            r.c != 0 ? "ack" : "ack refused"};
  }
  if (k == "sink.execute") {
    return {fmt::format("the provider executed the effect (attempt {}, value {})", r.b, r.c), "effect"};
  }
  if (k == "sink.call") return {fmt::format("provider call #{} arrives (attempt {})", r.c & 0xffffffffull, r.b), "call"};
  if (k == "sink.ok") return {fmt::format("the provider's answer arrives (attempt {}, value {})", r.b, r.c), "answer"};
  if (k == "sink.retry") return {fmt::format("retries the provider call (attempt {})", r.b), "retry"};
  if (k == "sink.give_up") return {fmt::format("gives up the provider call after {} calls (attempt {})", r.c, r.b), "gave up"};
  if (k == "publish") return {fmt::format("published (copy {})", r.b), "publish"};
  if (k == "queue.publish") return {fmt::format("stored in the queue (number {})", r.b), "queued"};
  if (k == "queue.receive") return {fmt::format("a worker receives it (receipt {})", r.c), "receive"};
  if (k == "queue.deliver") return {fmt::format("delivered (receive #{})", r.c), "delivery"};
  if (k == "queue.visible") return {"visible again: the visibility timeout ran out", "visible again"};
  if (k == "queue.delete") return {"deleted from the queue", "deleted"};
  if (k == "crash") return {fmt::format("crashes (incarnation {})", r.a), "crash"};
  if (k == "restart") return {fmt::format("restarts (incarnation {})", r.a), "restart"};
  if (k == "pause") return {fmt::format("pauses for {}", format_time(static_cast<std::int64_t>(r.a))), "pause"};
  if (k == "store.evict") {
    return {fmt::format("TTL evicts the record (expires_on {})", format_time(static_cast<std::int64_t>(r.b))), "evicted"};
  }
  if (k == "store.evict_capacity") {
    return {fmt::format("the store evicts the record for room (store.capacity = {}: the least recently written goes)",
                        r.b),
            "evicted for room"};
  }
  std::string text = std::string(k) + named_fields(r, names);
  if (!r.detail.empty()) text += " (" + r.detail + ")";
  return {text, std::string(k)};
}

StoryRole role_of(std::string_view k) {
  if (k == "attempt") return StoryRole::Attempt;
  if (k == "decision") return StoryRole::Decision;
  if (k == "outcome") return StoryRole::Outcome;
  if (k == "sink.execute") return StoryRole::Effect;
  if (starts_with(k, "sink.")) return StoryRole::Call;
  if (k == "ack") return StoryRole::Ack;
  if (k == "crash_point" || node_lifecycle(k) || starts_with(k, "drop.") || starts_with(k, "rpc.")) {
    return StoryRole::Fault;
  }
  if (starts_with(k, "store.")) return StoryRole::Store;
  return StoryRole::Source;
}

struct AttemptSpan {
  std::uint64_t attempt = 0;
  std::uint32_t node = 0;
  sim::Time start = 0;
  sim::Time end = 0;
  sim::Time effect = -1;  // when its effect's answer (or execution) was seen, -1 before any
};

// A store call: invocation (the caller's send), execution, response (the caller's delivery) or its loss.
struct StoreCall {
  const char* op = "operation";  // get, put, upsert, ...: what a timeout of it names
  std::uint32_t caller = UINT32_MAX;
  sim::Time invoked = -1;
  sim::Time answered = -1;
};

// The attempt of the message running on `node` at `time`, 0 when none.
std::uint64_t attempt_at(const std::vector<AttemptSpan>& spans, std::uint32_t node, sim::Time time) {
  for (const auto& s : spans) {
    if (s.node == node && s.start <= time && time <= s.end) return s.attempt;
  }
  return 0;
}

// Folds runs of the same poll (decision of one attempt and basis) and of the same store read (caller, kind,
// result) into one event with a count and an end: a wait of 48 polls is one span, not 96 boxes.
std::vector<StoryEvent> fold(std::vector<StoryEvent> events) {
  std::vector<StoryEvent> out;
  std::map<std::pair<std::uint32_t, std::string>, std::size_t> open;  // (node, text) -> index in out
  for (auto& e : events) {
    const bool foldable = e.role == StoryRole::Decision || (e.role == StoryRole::Store && e.short_text == "get");
    const auto key = std::make_pair(e.node, e.text);
    if (foldable) {
      const auto it = open.find(key);
      if (it != open.end()) {
        StoryEvent& run = out[it->second];
        run.end = std::max(run.end, e.end);
        ++run.count;
        continue;
      }
    }
    // Another event on a lane ends the runs open on it (a new decision, a crash), except that reads of
    // different callers interleave on the store's lane: only a write ends those.
    const bool store_lane = e.role == StoryRole::Store || e.role == StoryRole::Completion;
    for (auto it = open.begin(); it != open.end();) {
      const bool ends = it->first.first == e.node && (!store_lane || !foldable);
      it = ends ? open.erase(it) : std::next(it);
    }
    if (foldable) open[key] = out.size();
    out.push_back(std::move(e));
  }
  return out;
}
}  // namespace

std::string node_label(const std::vector<std::string>& names, std::uint32_t node) {
  if (node == sim::kSimulationNode) return "simulation";
  return node < names.size() && !names[node].empty() ? names[node] : fmt::format("node{}", node);
}

std::vector<sim::TraceRecord> message_records(const std::vector<sim::TraceRecord>& trace, std::uint64_t id) {
  std::vector<sim::TraceRecord> out;
  std::set<std::uint32_t> nodes;
  for (const auto& r : trace) {
    if ((message_kind(r.kind_name) && r.a == id) || about_message_key(r, id)) {
      out.push_back(r);
      if (r.kind_name == "attempt") nodes.insert(r.node);
    }
  }
  // Crashes, restarts and pauses of the nodes that worked on the message.
  for (const auto& r : trace) {
    if (node_lifecycle(r.kind_name) && nodes.count(r.node) > 0) out.push_back(r);
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.time < y.time; });
  return out;
}

namespace {
// What message_story gathers from the trace about one message before it turns records into events.
struct StoryFacts {
  std::vector<const sim::TraceRecord*> records;  // the message's own records, then the faults that touched it
  std::map<std::uint64_t, StoreCall> calls;      // store request -> its call
  std::optional<std::uint32_t> store_node;
  std::optional<std::uint32_t> sink_node;
  std::vector<AttemptSpan> spans;
  std::set<std::uint32_t> consumers;  // the nodes that ran an attempt of the message
};

// Pass 1: the message's own records, its store requests, its attempts (each until the trace's end for now).
void collect_own(const std::vector<sim::TraceRecord>& trace, std::uint64_t id, StoryFacts& facts) {
  const sim::Time last = trace.empty() ? 0 : trace.back().time;
  for (const auto& r : trace) {
    if (!((message_kind(r.kind_name) && r.a == id) || about_message_key(r, id))) continue;
    facts.records.push_back(&r);
    if (r.kind_name == "store.execute") {
      facts.calls[r.a].op = op_name(r.c);
      facts.store_node = r.node;
    }
    if (r.kind_name == "sink.call") facts.sink_node = r.node;
    if (r.kind_name == "attempt") facts.spans.push_back(AttemptSpan{r.c, r.node, r.time, last, -1});
  }
  for (const auto& s : facts.spans) facts.consumers.insert(s.node);
}

// An attempt's end (its outcome, or the first crash of its node) and its effect, from record `r`.
void settle_spans(const sim::TraceRecord& r, std::uint64_t id, StoryFacts& facts) {
  const std::string_view k = r.kind_name;
  if (k == "outcome" && r.a == id) {
    for (auto& s : facts.spans) if (s.attempt == r.b) s.end = std::min(s.end, r.time);
  } else if (k == "crash" && facts.consumers.count(r.node) > 0) {
    for (auto& s : facts.spans) if (s.node == r.node && s.start <= r.time && r.time < s.end) s.end = r.time;
  } else if ((k == "sink.ok" || k == "sink.execute") && r.a == id) {
    for (auto& s : facts.spans) if (s.attempt == r.b && s.effect < 0) s.effect = r.time;
  }
}

// A store call's invocation (the caller's send) and response (the caller's delivery), from record `r`.
void settle_call(const sim::TraceRecord& r, StoryFacts& facts) {
  const std::string_view k = r.kind_name;
  if (!facts.store_node || (k != "send" && k != "deliver") || facts.calls.count(r.a) == 0 ||
      r.b != *facts.store_node || r.node == *facts.store_node) {
    return;
  }
  StoreCall& call = facts.calls[r.a];
  if (k == "send" && call.invoked < 0) {
    call.invoked = r.time;
    call.caller = r.node;
  } else if (k == "deliver") {
    call.answered = r.time;
  }
}

// Whether `r` is a lost packet or a timeout of one of the message's store or sink calls.
bool fault_of_a_call(const sim::TraceRecord& r, std::uint64_t id, const StoryFacts& facts) {
  const std::string_view k = r.kind_name;
  if (!starts_with(k, "drop.") && k != "rpc.timeout") return false;
  const bool timeout = k == "rpc.timeout";
  const bool store_call = facts.store_node && facts.calls.count(r.a) > 0 &&
                          (timeout ? facts.consumers.count(r.node) > 0 : r.b == *facts.store_node);
  const bool sink_call =
      facts.sink_node && r.a == id &&
      (timeout ? facts.consumers.count(r.node) > 0 : r.b == *facts.sink_node || r.node == *facts.sink_node);
  return store_call || sink_call;
}

// Crashes, restarts and pauses of the consumers: those inside one of their attempts of this message, and the
// restart after a crash that ended one; the others are counted in `omitted`, not drawn.
void collect_lifecycle(const std::vector<sim::TraceRecord>& trace, const StoryFacts& facts,
                       std::vector<const sim::TraceRecord*>& extra, std::size_t& omitted) {
  const sim::Time first = facts.records.front()->time;
  const sim::Time last = facts.records.back()->time;
  std::set<std::uint32_t> restart_due;
  for (const auto& r : trace) {
    if (!node_lifecycle(r.kind_name) || facts.consumers.count(r.node) == 0) continue;
    bool inside = false;
    for (const auto& s : facts.spans) inside = inside || (s.node == r.node && s.start <= r.time && r.time <= s.end);
    if (r.kind_name == "restart" && restart_due.erase(r.node) > 0) inside = true;
    if (r.kind_name == "crash" && inside) restart_due.insert(r.node);
    if (inside) {
      extra.push_back(&r);
    } else if (r.time >= first && r.time <= last) {
      ++omitted;
    }
  }
}

// The sink execution `e` marked as a duplicate when the oracle judged it one.
void mark_duplicate(StoryEvent& e, const sim::TraceRecord& r, std::uint64_t id,
                    const std::vector<lethe::DuplicateExplanation>& duplicates) {
  for (const auto& d : duplicates) {
    if (d.id == id && d.attempt == r.b && d.at == r.time) {
      e.duplicate = true;
      e.cause = std::string(lethe::to_string(d.cause));
      e.because = d.because;
      e.short_text = "DUPLICATE effect";
      e.text = fmt::format("DUPLICATE execution ({}): {}", e.cause, e.text);
    }
  }
}

// A store execution drawn from its invocation to its response, named as the completion write where it is one.
void describe_store_call(StoryEvent& e, const sim::TraceRecord& r, const std::vector<std::string>& names,
                         const StoryFacts& facts) {
  const StoreCall& call = facts.calls.at(r.a);
  const std::uint32_t caller = call.caller;
  e.attempt = caller == UINT32_MAX ? 0 : attempt_at(facts.spans, caller, r.time);
  e.time = call.invoked >= 0 ? call.invoked : r.time;
  e.end = call.answered >= 0 ? call.answered : r.time;
  const std::string who = caller == UINT32_MAX ? "?" : node_label(names, caller);
  const char* op = op_name(r.c);
  const std::string answer = call.answered >= 0 ? "answered " + format_time(call.answered) : "no answer";
  e.short_text = op;
  e.text = fmt::format("store {} {} by {} (request {}): invoked {}, executed {}, {}", op,
                       op_applied(r.c) ? "applied" : "rejected", who, r.a, format_time(e.time), format_time(r.time),
                       answer);
  if (op_writes(r.c) && op_applied(r.c) && e.attempt != 0) {
    for (const auto& s : facts.spans) {
      if (s.attempt == e.attempt && s.effect >= 0 && r.time >= s.effect) {
        e.role = StoryRole::Completion;
        e.short_text = "completion";
        e.text = fmt::format("completion record ({}) of attempt {}: invoked {}, executed {}, {}", op, e.attempt,
                             format_time(e.time), format_time(r.time), answer);
      }
    }
  }
  // A read's text names its caller and result only, so that repeated polls fold into one.
  if (std::string_view(op) == "get") {
    e.text = fmt::format("store get {} by {}", op_applied(r.c) ? "found" : "not found", who);
  }
}

// A lost packet or a timeout in words; a timeout names the call that timed out (a store operation by its
// request tag, else the provider call of the message).
void describe_fault(StoryEvent& e, const sim::TraceRecord& r, const StoryFacts& facts) {
  static const std::map<std::string_view, std::pair<const char*, const char*>> faults = {
      {"drop.loss", {"the request was lost in the network", "lost request"}},
      {"drop.ack", {"the response was lost in the network (lost ACK)", "lost ACK"}},
      {"drop.partition", {"a partition cut the message", "partitioned"}},
      {"drop.down", {"the message reached a node that was down", "to a down node"}},
      {"rpc.timeout", {"the call timed out", "timeout"}},
      {"rpc.late", {"the response arrived after the caller gave up", "late answer"}}};
  if (const auto it = faults.find(r.kind_name); it != faults.end()) {
    e.text = fmt::format("{} (tag {})", it->second.first, r.a);
    e.short_text = it->second.second;
  }
  if (r.kind_name == "rpc.timeout" || r.kind_name == "rpc.late") {
    const auto call = facts.calls.find(r.a);
    const std::string what = call != facts.calls.end() ? fmt::format("store {}", call->second.op) : "provider call";
    e.text = fmt::format("the {} {} (tag {})", what,
                         r.kind_name == "rpc.timeout" ? "timed out" : "was answered after the caller gave up", r.a);
    e.short_text = fmt::format("{} {}", what, r.kind_name == "rpc.timeout" ? "timeout" : "late answer");
  }
}

StoryEvent story_event(const sim::TraceRecord& r, const std::vector<std::string>& names, std::uint64_t id,
                       const std::vector<lethe::DuplicateExplanation>& duplicates, const StoryFacts& facts) {
  StoryEvent e;
  e.time = e.end = r.time;
  e.node = r.node;
  e.role = role_of(r.kind_name);
  Words w = words(r, names);
  e.text = std::move(w.text);
  e.short_text = std::move(w.short_text);
  const std::string_view k = r.kind_name;
  if (k == "attempt") {
    e.attempt = r.c;
    for (const auto& s : facts.spans) if (s.attempt == r.c) e.end = s.end;
  } else if (k == "decision" || k == "outcome" || starts_with(k, "sink.")) {
    e.attempt = r.b;
  } else if (k == "crash_point") {
    e.attempt = r.c;
  } else if (k == "pause") {
    e.end = sim::saturating_add(r.time, static_cast<sim::Duration>(r.a));
  }
  if (k == "sink.execute") mark_duplicate(e, r, id, duplicates);
  if (k == "store.execute") describe_store_call(e, r, names, facts);
  if (starts_with(k, "drop.") || starts_with(k, "rpc.")) describe_fault(e, r, facts);
  return e;
}

// Lanes: sources, then consumers in order of appearance, then the store, then the sink.
std::vector<std::uint32_t> story_lanes(const std::vector<StoryEvent>& events, const StoryFacts& facts) {
  std::vector<std::uint32_t> sources;
  std::vector<std::uint32_t> workers;
  for (const auto& e : events) {
    auto& lane = facts.consumers.count(e.node) > 0 ? workers : sources;
    if (e.node == facts.store_node || e.node == facts.sink_node) continue;
    if (std::find(lane.begin(), lane.end(), e.node) == lane.end()) lane.push_back(e.node);
  }
  std::vector<std::uint32_t> lanes = sources;
  lanes.insert(lanes.end(), workers.begin(), workers.end());
  if (facts.store_node) lanes.push_back(*facts.store_node);
  if (facts.sink_node) lanes.push_back(*facts.sink_node);
  return lanes;
}
}  // namespace

Story message_story(const std::vector<sim::TraceRecord>& trace, const std::vector<std::string>& names,
                    std::uint64_t id, const std::vector<lethe::DuplicateExplanation>& duplicates) {
  Story story;
  story.message = id;
  StoryFacts facts;
  collect_own(trace, id, facts);
  if (facts.records.empty()) return story;
  // Pass 2: each attempt's end and effect, the store calls' invocations and responses, the calls' faults.
  std::vector<const sim::TraceRecord*> extra;
  for (const auto& r : trace) {
    settle_spans(r, id, facts);
    settle_call(r, facts);
    if (fault_of_a_call(r, id, facts)) extra.push_back(&r);
  }
  collect_lifecycle(trace, facts, extra, story.omitted_faults);
  facts.records.insert(facts.records.end(), extra.begin(), extra.end());
  std::stable_sort(facts.records.begin(), facts.records.end(),
                   [](const auto* x, const auto* y) { return x->time < y->time; });
  std::vector<StoryEvent> events;
  for (const auto* r : facts.records) events.push_back(story_event(*r, names, id, duplicates, facts));
  std::stable_sort(events.begin(), events.end(), [](const auto& x, const auto& y) { return x.time < y.time; });
  story.events = fold(std::move(events));
  for (auto& e : story.events) {
    if (e.count > 1) {
      e.text = fmt::format("{} ({} times, {} to {})", e.text, e.count, format_time(e.time), format_time(e.end));
      e.short_text = fmt::format("{} x{}", e.short_text, e.count);
    }
  }
  story.lanes = story_lanes(story.events, facts);
  return story;
}

std::string timeline_text(const Story& story, const std::vector<std::string>& names) {
  std::string out;
  for (const auto& e : story.events) {
    out += fmt::format("  {:>10}  {:<14}  {}\n", format_time(e.time), node_label(names, e.node), e.text);
  }
  return out;
}

namespace {
// Breaks a label into lines of about 30 characters at spaces (Graphviz "\\n"), so boxes grow down, not across.
std::string wrap(const std::string& text) {
  std::string out;
  std::size_t line = 0;
  for (char c : text) {
    if (c == ' ' && line >= 30) {
      out += "\\n";
      line = 0;
      continue;
    }
    out += c;
    ++line;
  }
  return out;
}

std::string dot_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}
}  // namespace

std::string timeline_dot(const Story& story, const std::vector<std::string>& names) {
  std::string out = fmt::format("digraph \"message {}\" {{\n  rankdir=LR;\n  newrank=true;\n"
                                "  node [shape=box, fontsize=10, style=rounded];\n",
                                story.message);
  out += fmt::format("  label=\"lethe: message {}, left to right in virtual time\"; labelloc=t;\n", story.message);
  for (std::size_t lane = 0; lane < story.lanes.size(); ++lane) {
    out += fmt::format("  subgraph cluster_{} {{\n    label=\"{}\"; style=rounded;\n", lane,
                       dot_escape(node_label(names, story.lanes[lane])));
    std::string previous;
    for (std::size_t i = 0; i < story.events.size(); ++i) {
      const auto& e = story.events[i];
      if (e.node != story.lanes[lane]) continue;
      const std::string color = e.duplicate                     ? "red"
                                : e.role == StoryRole::Fault    ? "red"
                                : e.role == StoryRole::Effect   ? "darkgreen"
                                : e.role == StoryRole::Decision ? "blue"
                                                                : "black";
      const std::string when = e.end > e.time ? format_time(e.time) + " to " + format_time(e.end) : format_time(e.time);
      const std::string fill = e.duplicate ? ", style=\"rounded,filled\", fillcolor=\"#f8d0d0\", penwidth=2" : "";
      out += fmt::format("    e{} [label=\"{}\\n{}\", color={}{}];\n", i, when, wrap(dot_escape(e.text)), color, fill);
      if (!previous.empty()) out += fmt::format("    {} -> e{} [style=bold];\n", previous, i);
      previous = fmt::format("e{}", i);
    }
    out += "  }\n";
  }
  // Time order across lanes: each event is ranked after every event of the instant before it (events of one
  // instant may share a rank); a change of lane is a dashed hand-off.
  std::size_t group = 0;  // the first event of the previous instant
  std::size_t current = 0;
  for (std::size_t i = 1; i < story.events.size(); ++i) {
    if (story.events[i].time != story.events[current].time) {
      group = current;
      current = i;
    }
    if (current == 0) continue;
    for (std::size_t j = group; j < current; ++j) {
      const bool hand_off = j + 1 == i && story.events[j].node != story.events[i].node;
      out += fmt::format("  e{} -> e{} [{}];\n", j, i, hand_off ? "style=dashed, color=gray" : "style=invis");
    }
  }
  out += "}\n";
  return out;
}

}  // namespace reports
