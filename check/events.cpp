// A consumer's dedupe events as JSON lines (check/events.hpp; docs/formats.md "Event logs").
#include "check/events.hpp"

#include <algorithm>
#include <array>
#include <deque>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>

#include "check/event_spool.hpp"
#include "check/ledger_folding.hpp"
#include "check/oracle.hpp"
#include "check/store_json.hpp"  // parse_bounded_json
#include "check/saga_oracle.hpp"
#include "protocol/registry.hpp"
#include "protocol/saga.hpp"
#include "protocol/strategies.hpp"
#include "sim/time.hpp"

namespace lethe::events {

namespace {

using Json = nlohmann::json;

// One line's JSON, or a discarded value when it is not JSON, nests too deep or holds a number beyond a double.
// One line as JSON; `why` says what is wrong when it is not JSON.
Json parse_line(std::string_view content, std::string& why) {
  try {
    return history::parse_bounded_json(content);
  } catch (const std::exception& e) {
    why = history::json_error_reason(e);
    return Json(Json::value_t::discarded);
  }
}

// A value for an error message: at most a few hundred bytes of its JSON text.
std::string quoted(const Json& value) {
  std::string text = value.dump();
  if (text.size() <= 200) return text;
  std::size_t cut = 200;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
  text = text.substr(0, cut) + "...";
  return text;
}
using history::Error;

constexpr std::array<std::string_view, 4> kNodeEventNames = {"crash", "restart", "pause", "skew"};
constexpr std::array<Outcome, 3> kOutcomes = {Outcome::Executed, Outcome::Skipped, Outcome::Failed};
constexpr int kBasisCount = static_cast<int>(Basis::WeakStore) + 1;

// ---------------------------------------------------------------- one line, its fields

struct Line {
  const std::string* file = nullptr;
  std::size_t number = 0;
  Json json;

  [[noreturn]] void fail(const std::string& what) const { throw Error(*file, number, what); }
  [[noreturn]] void expected(std::string_view field, std::string_view what) const {
    if (!json.contains(field)) fail(fmt::format("field \"{}\" is missing: expected {}", field, what));
    fail(fmt::format("field \"{}\": expected {}, found {}", field, what, quoted(json.at(std::string(field)))));
  }
  bool has(std::string_view field) const { return json.contains(field) && !json.at(std::string(field)).is_null(); }

  std::uint64_t unsigned_field(std::string_view field) const {
    if (!has(field) || !json.at(std::string(field)).is_number_unsigned()) expected(field, "an unsigned integer");
    return json.at(std::string(field)).get<std::uint64_t>();
  }
  // Times and durations: integer nanoseconds.
  std::int64_t nanoseconds(std::string_view field) const {
    const bool integer = has(field) && json.at(std::string(field)).is_number_integer();
    if (!integer || (json.at(std::string(field)).is_number_unsigned() &&
                     json.at(std::string(field)).get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))) {
      expected(field, "integer nanoseconds");
    }
    return json.at(std::string(field)).get<std::int64_t>();
  }
  std::optional<std::int64_t> optional_nanoseconds(std::string_view field) const {
    return has(field) ? std::optional(nanoseconds(field)) : std::nullopt;
  }
  std::string text(std::string_view field) const {
    if (!has(field) || !json.at(std::string(field)).is_string() || json.at(std::string(field)).get<std::string>().empty()) {
      expected(field, "a non-empty string");
    }
    return json.at(std::string(field)).get<std::string>();
  }
  bool boolean(std::string_view field, bool fallback) const {
    if (!has(field)) return fallback;
    if (!json.at(std::string(field)).is_boolean()) expected(field, "true or false");
    return json.at(std::string(field)).get<bool>();
  }
  std::string kind() const { return text("event"); }
};

// ---------------------------------------------------------------- building the log

// A line of a log read folding that the folding cannot take as the whole reading would (it names an attempt that
// is not held, ends one that is over, or is bad input): the log is read again whole.
struct NotFoldable {};

class Reader {
 public:
  explicit Reader(bool fold) : fold_(fold) {}

  // Two passes over the lines, each line parsed when it is read and dropped after: a log's lines are never all
  // held as JSON nor, from a file, as text. The first pass checks every line's JSON and collects the deliveries
  // (a few words each); then the run line, the deliveries in attempt order, and every other line in order. What
  // is wrong is said in that order too: a line that is not JSON first, then the run line, then the deliveries.
  // A log in time order read folding goes through a LedgerFolding instead (read_folding); whatever it cannot
  // take, it leaves to a whole reading of the log.
  EventLog read(const std::vector<EventFile>& files) {
    for (const EventFile& file : files) names_.push_back(file.name);
    TimeOrder order;
    std::optional<Line> first;
    std::optional<Error> other_run;  // the first run line unlike the first one
    std::optional<Error> bad_delivery;
    std::vector<Delivered> deliveries;
    for_each_line(files, [&](Line& line) {
      const std::string kind = line.kind();
      if (!first) {
        if (kind != "run") {
          line.fail(fmt::format("the first event is \"{}\": expected the run line ({{\"event\":\"run\", ...}})",
                                kind));
        }
        first = std::move(line);
      } else if (kind == "run" && !other_run) {
        try {
          check_same_run(*first, line);
        } catch (const Error& e) {
          other_run = e;
        }
      } else if (kind == "delivery" && !bad_delivery) {
        try {
          deliveries.push_back(delivered(line));
          order.delivery(deliveries.back().attempt);
        } catch (const Error& e) {
          bad_delivery = e;
        }
      }
      if (kind == "execution") ++log_.execution_lines;
      order.line(line.json);
    });
    if (!first) throw Error(files.empty() ? std::string("(no file)") : files.front().name, 0,
                            "no event: expected a run line ({\"event\":\"run\", ...}) first");
    read_run(*first);
    if (other_run) throw *other_run;
    if (bad_delivery) throw *bad_delivery;
    if (fold_ && order.ordered) {
      try {
        return read_folding(files, deliveries);
      } catch (const Error&) {
      } catch (const NotFoldable&) {
      }
      return Reader(false).read(files);  // says what is wrong, or holds what folding could not
    }
    check_deliveries(deliveries, /*hold=*/true);
    bool past_run = false;
    for_each_line(files, [&](const Line& line) {
      if (past_run) apply(line);
      past_run = true;
    });
    apply_crashes();
    // Without the provider's log, the workers' calls stand in for it.
    if (!log_.provider_log) log_.ledger.executions.assign(effects_.begin(), effects_.end());
    return finish();
  }

 private:
  // A delivery line's fields, until every delivery is read (attempts are added in id order); its node by the
  // order of first appearance among deliveries (numbered again in attempt order when added).
  struct Delivered {
    AttemptId attempt = 0;
    MessageId id = 0;
    sim::Time at = 0;
    ProcessorId processor = 0;
    std::uint32_t node = 0;
    std::uint32_t file = 0;
    std::size_t number = 0;
  };

  // Whether the lines, in the order of the files, are in time order (every "at" at or after the one before) with
  // attempt ids growing from one delivery line to the next, as `lethe run --events` writes them.
  struct TimeOrder {
    bool ordered = true;
    sim::Time last_at = INT64_MIN;
    AttemptId last_attempt = 0;

    void line(const Json& json) {
      const auto at = json.find("at");
      if (at == json.end()) return;
      if (!at->is_number_integer() || (at->is_number_unsigned() && at->get<std::uint64_t>() > INT64_MAX)) {
        ordered = false;
        return;
      }
      const sim::Time t = at->get<sim::Time>();
      if (t < last_at) ordered = false;
      last_at = t;
    }
    void delivery(AttemptId attempt) {
      if (attempt <= last_attempt) ordered = false;
      last_attempt = attempt;
    }
  };

  // The erased attempts' span (span_of) and delivery times, as folding erases them.
  class FoldedSpan : public LedgerObserver {
   public:
    explicit FoldedSpan(EventLog& log) : log_(log) {}
    void attempt_folded(const AttemptRecord& record, const std::optional<ProcessDecision>&) override {
      const auto delivered = log_.delivered_at.find(record.attempt);
      log_.folded_first = std::min(log_.folded_first, delivered->second);
      log_.folded_last = std::max({log_.folded_last, delivered->second, record.ended_at.value_or(INT64_MIN),
                                   record.completed_at.value_or(INT64_MIN), record.crashed_at.value_or(INT64_MIN)});
      log_.delivered_at.erase(delivered);
    }
    void execution(const ExecutionRecord& execution) override {
      log_.folded_last = std::max(log_.folded_last, execution.at);
    }
    void eviction(const EvictionRecord&) override {}
    void wait(const WaitRecord&) override {}

   private:
    EventLog& log_;
  };

  // The second pass of a log in time order: every line applied in order through a LedgerFolding, so that each
  // settled group is folded as it settles (as a run folds it) and crashes end the attempts active on their node.
  // Throws NotFoldable (or Error) where the whole reading must decide.
  EventLog read_folding(const std::vector<EventFile>& files, std::vector<Delivered>& deliveries) {
    check_deliveries(deliveries, /*hold=*/false);
    log_.provider_log = log_.execution_lines > 0;
    LedgerFolding folding(log_.ledger);
    FoldedSpan span(log_);
    folding.set_folding(true);
    folding.set_observer(&span);
    folding_ = &folding;
    bool past_run = false;
    for_each_line(files, [&](const Line& line) {
      if (past_run) apply(line);
      past_run = true;
    });
    folding.flush();
    folding_ = nullptr;
    return finish();
  }

  // Member removals in time order, and every attempt held that executed marked (a folded one is not held).
  EventLog finish() {
    std::stable_sort(log_.ledger.member_removals.begin(), log_.ledger.member_removals.end(),
                     [](const MemberRemoval& x, const MemberRemoval& y) { return x.at < y.at; });
    for (const ExecutionRecord& e : log_.ledger.executions) {
      if (log_.ledger.has_attempt(e.attempt)) log_.ledger.attempt(e.attempt).executed = true;
    }
    return std::move(log_);
  }

  Line parsed(std::size_t file, std::size_t number, std::string_view content) const {
    std::string why;
    Line line{&names_[file], number, parse_line(content, why)};
    if (line.json.is_discarded() || !line.json.is_object()) {
      line.fail(fmt::format("not a JSON object{}: expected one event per line ({{\"event\": KIND, ...}})",
                            why.empty() ? "" : " (" + why + ")"));
    }
    return line;
  }

  // f(line) for every non-blank line of the files, in order.
  template <class F>
  void for_each_line(const std::vector<EventFile>& files, F&& f) const {
    for (std::size_t file = 0; file < files.size(); ++file) {
      const auto each = [&](std::size_t number, std::string_view content) {
        if (content.find_first_not_of(" \t\r") == std::string_view::npos) return;
        Line line = parsed(file, number, content);
        f(line);
      };
      if (files[file].lines != nullptr) {
        sim::FileReadFailure failure;
        if (!files[file].lines->for_each_line(each, failure)) {
          throw Error(names_[file], 0, "cannot read: " + sim::describe(failure, 0));
        }
        continue;
      }
      std::size_t number = 0;
      std::size_t begin = 0;
      const std::string_view text = files[file].text;
      while (begin < text.size()) {
        std::size_t end = text.find('\n', begin);
        if (end == std::string_view::npos) end = text.size();
        each(++number, text.substr(begin, end - begin));
        begin = end + 1;
      }
    }
  }

  void read_run(const Line& line) {
    log_.protocol = line.text("protocol");
    if (find_strategy(log_.protocol) == nullptr) {
      line.fail(fmt::format("field \"protocol\": unknown strategy \"{}\"; allowed: {}", log_.protocol,
                            fmt::join(strategy_names(), ", ")));
    }
    if (!line.json.contains("processors") || !line.json["processors"].is_array() || line.json["processors"].empty()) {
      line.expected("processors", "a non-empty array of processor names");
    }
    for (const Json& name : line.json["processors"]) {
      if (!name.is_string() || name.get<std::string>().empty()) line.expected("processors", "an array of names");
      log_.processors.push_back(name.get<std::string>());
    }
    if (line.has("saga_steps")) {
      const std::uint64_t steps = line.unsigned_field("saga_steps");
      if (steps < 2 || steps > 8) line.expected("saga_steps", "2..8 (a saga's steps, as [saga] steps)");
      log_.saga_steps = static_cast<int>(steps);
    }
    log_.provider_key_window = line.optional_nanoseconds("provider_key_window");
    if (line.has("provider_calls")) log_.provider_calls = line.unsigned_field("provider_calls");
    if (line.has("scenario")) log_.scenario = line.text("scenario");
    if (line.has("seed")) log_.seed = line.unsigned_field("seed");
    for (ProcessorId p = 0; p < log_.processors.size(); ++p) processor_ids_.emplace(log_.processors[p], p);
    if (log_.saga_steps > 0) {
      for (int s = 0; s < log_.saga_steps; ++s) {
        processor_ids_.emplace(saga_call_name(static_cast<ProcessorId>(s)), static_cast<ProcessorId>(s));
        processor_ids_.emplace(saga_call_name(compensation_processor(s)), compensation_processor(s));
      }
    }
  }

  static void check_same_run(const Line& first, const Line& again) {
    if (again.json != first.json) {
      again.fail(fmt::format("a second run line that differs from the first ({}:{}): expected one run per log",
                             *first.file, first.number));
    }
  }

  ProcessorId processor(const Line& line) const {
    const std::string name = line.text("processor");
    const auto it = processor_ids_.find(name);
    if (it == processor_ids_.end()) line.fail(unknown_processor(name));
    return it->second;
  }

  std::string unknown_processor(const std::string& name) const {
    std::vector<std::string> allowed;
    for (const auto& [known, id] : processor_ids_) allowed.push_back(known);
    return fmt::format("field \"processor\": unknown processor \"{}\"; allowed (the run line's): {}", name,
                       fmt::join(allowed, ", "));
  }

  std::uint32_t node(const Line& line) {
    const std::string name = line.text("node");
    const auto [it, added] = node_ids_.emplace(name, static_cast<std::uint32_t>(log_.nodes.size()));
    if (added) log_.nodes.push_back(name);
    return it->second;
  }

  Delivered delivered(const Line& line) {
    Delivered d;
    d.attempt = line.unsigned_field("attempt");
    if (d.attempt == 0) line.expected("attempt", "an attempt id of at least 1");
    d.id = line.unsigned_field("id");
    const auto [name, new_name] = delivery_processors_.emplace(
        line.text("processor"), static_cast<std::uint32_t>(delivery_processor_names_.size()));
    if (new_name) delivery_processor_names_.push_back(name->first);
    d.processor = name->second;  // the run line is read after this pass: resolved then
    const auto [it, added] =
        delivery_nodes_.emplace(line.text("node"), static_cast<std::uint32_t>(delivery_node_names_.size()));
    if (added) delivery_node_names_.push_back(it->first);
    d.node = it->second;
    d.at = line.nanoseconds("at");
    while (&names_[d.file] != line.file) ++d.file;  // the line's file, by its name's address
    d.number = line.number;
    return d;
  }

  // Checks the deliveries (one per attempt id, processors of the run line) and numbers their nodes in attempt
  // order, before any other line's; with `hold`, adds every attempt, in attempt-id order, before anything refers
  // to one. Frees the deliveries.
  void check_deliveries(std::vector<Delivered>& deliveries, bool hold) {
    std::stable_sort(deliveries.begin(), deliveries.end(),
                     [](const Delivered& x, const Delivered& y) { return x.attempt < y.attempt; });
    for (std::size_t i = 0; i < deliveries.size(); ++i) {
      const Delivered& d = deliveries[i];
      if (i > 0 && deliveries[i - 1].attempt == d.attempt) {
        const Delivered& before = deliveries[i - 1];
        throw Error(names_[d.file], d.number,
                    fmt::format("field \"attempt\": attempt {} was delivered already ({}:{}): expected one delivery "
                                "line per attempt",
                                d.attempt, names_[before.file], before.number));
      }
      AttemptRecord record;
      record.id = d.id;
      const std::string& processor_name = delivery_processor_names_[d.processor];
      const auto processor = processor_ids_.find(processor_name);
      if (processor == processor_ids_.end()) throw Error(names_[d.file], d.number, unknown_processor(processor_name));
      record.processor = processor->second;
      const auto [it, added] =
          node_ids_.emplace(delivery_node_names_[d.node], static_cast<std::uint32_t>(log_.nodes.size()));
      if (added) log_.nodes.push_back(it->first);
      record.node = it->second;
      if (!hold) continue;
      log_.ledger.attempts.add_with_id(d.attempt, record);
      log_.delivered_at[d.attempt] = d.at;
    }
    std::vector<Delivered>().swap(deliveries);  // its memory, not only its elements (= {} keeps the capacity)
    delivery_nodes_.clear();
    delivery_node_names_.clear();
    delivery_processors_.clear();
    delivery_processor_names_.clear();
  }

  AttemptRecord& attempt(const Line& line) {
    const AttemptId id = line.unsigned_field("attempt");
    if (!log_.ledger.has_attempt(id)) {
      if (folding_ != nullptr) throw NotFoldable{};  // folded away, or not delivered yet: the whole reading decides
      line.fail(fmt::format("field \"attempt\": attempt {} has no delivery line: expected a delivery of it", id));
    }
    return log_.ledger.attempt(id);
  }

  void apply(const Line& line) {
    const std::string kind = line.kind();
    if (kind == "run") return;
    if (kind == "delivery") {
      if (folding_ != nullptr) deliver(line);
      return;
    }
    if (kind == "publish") return publish(line);
    if (kind == "decision") return decision(line);
    if (kind == "wait") return wait(line);
    if (kind == "outcome") return outcome(line);
    if (kind == "completion") return completion(line);
    if (kind == "effect") return effect(line);
    if (kind == "execution") return execution(line);
    if (kind == "evict") return evict(line);
    if (kind == "memo_overwrite") return memo_overwrite(line);
    if (kind == "ack") return ack(line);
    if (kind == "due") return due(line);
    if (kind == "member") return member(line);
    if (kind == "refused") return refused(line);
    for (std::size_t k = 0; k < kNodeEventNames.size(); ++k) {
      if (kind == kNodeEventNames[k]) return node_event(line, static_cast<NodeEventKind>(k));
    }
    line.fail(fmt::format("field \"event\": unknown kind \"{}\"; allowed: run, publish, delivery, decision, wait, "
                          "outcome, completion, effect, execution, evict, memo_overwrite, ack, due, member, "
                          "refused, crash, restart, pause, skew",
                          kind));
  }

  // A delivery, in the order of the lines (reading folding). A delivery at the instant of a crash of its node
  // that came before it is one the whole reading crashes: left to it.
  void deliver(const Line& line) {
    const AttemptId attempt = line.unsigned_field("attempt");
    const std::uint32_t on = node(line);
    const sim::Time at = line.nanoseconds("at");
    const auto crash = last_crash_.find(on);
    if (crash != last_crash_.end() && crash->second == at) throw NotFoldable{};
    folding_->begin_recorded(attempt, line.unsigned_field("id"), processor(line), on);
    log_.delivered_at[attempt] = at;
  }

  void publish(const Line& line) {
    log_.ledger.expected.add(line.unsigned_field("id"), static_cast<ProcessorId>(log_.processors.size()));
    ++log_.ledger.messages;
  }

  static Basis basis(const Line& line) {
    const std::string name = line.text("basis");
    for (int b = 0; b < kBasisCount; ++b) {
      if (name == to_string(static_cast<Basis>(b))) return static_cast<Basis>(b);
    }
    std::vector<std::string> allowed;
    for (int b = 0; b < kBasisCount; ++b) allowed.emplace_back(to_string(static_cast<Basis>(b)));
    line.fail(fmt::format("field \"basis\": unknown basis \"{}\"; allowed: {}", name, fmt::join(allowed, ", ")));
  }

  void decision(const Line& line) {
    AttemptRecord& record = attempt(line);
    DecisionNote note{record.id, record.processor, record.attempt, basis(line), std::nullopt, 0};
    const sim::Time at = line.nanoseconds("at");
    note.local_time = line.optional_nanoseconds("local_time").value_or(at);
    if (line.has("seen")) {
      if (!line.json["seen"].is_object()) line.expected("seen", "an object {owner, started_at, expires_on}");
      Line seen{line.file, line.number, line.json["seen"]};
      Item item;
      if (seen.has("owner")) item.owner = seen.unsigned_field("owner");
      item.started_at = seen.optional_nanoseconds("started_at");
      item.expires_on = seen.optional_nanoseconds("expires_on");
      note.seen = item;
    }
    log_.ledger.decided(note, at);
    ++log_.decision_lines;
  }

  void wait(const Line& line) {
    const AttemptRecord& record = attempt(line);
    const WaitRecord waited{record.id, record.processor, record.attempt, line.nanoseconds("waited")};
    if (folding_ != nullptr) return folding_->record_wait(waited);
    log_.ledger.waits.push_back(waited);
  }

  void outcome(const Line& line) {
    AttemptRecord& record = attempt(line);
    // A second end, or an end after its node crashed: the whole reading keeps the last line's.
    if (folding_ != nullptr && (record.ended_at || record.crashed_at)) throw NotFoldable{};
    const std::string name = line.text("outcome");
    const auto it = std::find_if(kOutcomes.begin(), kOutcomes.end(),
                                 [&name](Outcome o) { return name == to_string(o); });
    if (it == kOutcomes.end()) line.expected("outcome", "executed, skipped or failed");
    record.outcome = static_cast<std::int8_t>(*it);
    record.ended_at = line.nanoseconds("at");
    if (line.has("value")) record.set_returned_value(line.unsigned_field("value"));
    if (folding_ != nullptr) folding_->ended(record.attempt);
  }

  void completion(const Line& line) {
    AttemptRecord& record = attempt(line);
    const sim::Time at = line.nanoseconds("at");
    if (!line.boolean("applied", true)) {
      record.completion_failed = true;
      return;
    }
    record.completion_applied = true;
    record.completed_at = at;
  }

  ExecutionRecord call_of(const Line& line) {
    const AttemptRecord& record = attempt(line);
    ExecutionRecord e;
    e.id = record.id;
    e.processor = record.processor;
    e.attempt = record.attempt;
    e.node = record.node;
    e.at = line.nanoseconds("at");
    e.value = line.unsigned_field("value");
    e.call_number = line.has("call") ? static_cast<std::uint32_t>(line.unsigned_field("call")) : 1;
    if (e.call_number == 0) line.expected("call", "a call number of at least 1");
    if (line.has("id") && line.unsigned_field("id") != e.id) {
      line.fail(fmt::format("field \"id\": {} differs from message {} of attempt {}'s delivery",
                            line.unsigned_field("id"), e.id, e.attempt));
    }
    return e;
  }

  // Reading folding, the effects stand in for the provider's log as they come when the log has no execution line.
  void effect(const Line& line) {
    const ExecutionRecord call = call_of(line);
    ++log_.effect_lines;
    if (folding_ == nullptr) return effects_.push_back(call);
    if (!log_.provider_log) folding_->record_execution(call);
  }

  void execution(const Line& line) {
    const ExecutionRecord executed = call_of(line);
    log_.provider_log = true;
    if (folding_ != nullptr) return folding_->record_execution(executed);
    log_.ledger.executions.push_back(executed);
  }

  // A copy of a published message that the source hands out only after the log ends (at `at`): if the message is
  // not done, it is undelivered, not lost.
  void due(const Line& line) {
    sim::Time& latest = log_.ledger.due_after_end[{line.unsigned_field("id"), processor(line)}];
    latest = std::max(latest, line.nanoseconds("at"));
  }

  // reason "ttl" (the default): the TTL sweeper removed the record; "capacity": the store evicted it for room.
  void evict(const Line& line) {
    ++log_.evict_lines;
    EvictionRecord record{make_key(Table::Dedupe, processor(line), line.unsigned_field("id")), line.nanoseconds("at"),
                          {}, EvictionRecord::kUnknown};
    const std::string reason = line.has("reason") ? line.text("reason") : "ttl";
    if (reason == "ttl" && folding_ != nullptr) {
      folding_->record_eviction(record.key, record.at);
    } else if (reason == "ttl") {
      log_.ledger.evictions.push_back(record);
    } else if (reason == "capacity") {
      // What made the record the least recently written, when the log says (both or neither).
      if (line.has("written_at") != line.has("writes_since")) {
        line.fail("fields \"written_at\" and \"writes_since\": give both (the record's last write and the writes "
                  "of other records since) or neither");
      }
      if (line.has("written_at")) {
        record.written_at = line.nanoseconds("written_at");
        record.writes_since = line.unsigned_field("writes_since");
      }
      log_.ledger.capacity_evictions.push_back(record);
    } else {
      line.fail(fmt::format("field \"reason\": expected \"ttl\" or \"capacity\", found {}",
                            quoted(line.json.at("reason"))));
    }
  }

  // The store's reply showed a completion replacing another memoized result (the writer need not be delivered
  // in this log: it is the owner token the write carried).
  void memo_overwrite(const Line& line) {
    log_.ledger.memo_overwrites.push_back(MemoOverwrite{line.unsigned_field("id"), processor(line),
                                                        line.unsigned_field("attempt"), line.nanoseconds("at"),
                                                        line.unsigned_field("replaced"), line.unsigned_field("written")});
  }

  // A consumer group's membership change (a live member removed, or rejoining), with the ids its live members
  // held uncommitted then: the replay from the committed offset that member_removed names.
  void member(const Line& line) {
    MemberRemoval change;
    change.processor = processor(line);
    change.node = node(line);
    const std::string reason = line.text("reason");
    if (reason == "session_timeout") {
      change.reason = RemovalReason::SessionTimeout;
    } else if (reason == "max_poll_interval") {
      change.reason = RemovalReason::MaxPollInterval;
    } else {
      line.expected("reason", "\"session_timeout\" or \"max_poll_interval\"");
    }
    change.rejoin = line.boolean("rejoin", false);
    change.at = line.nanoseconds("at");
    change.since = line.has("since") ? line.nanoseconds("since") : change.at;
    if (line.has("held")) {
      const Json& held = line.json.at("held");
      if (!held.is_array()) line.expected("held", "an array of message ids");
      for (const Json& id : held) {
        if (!id.is_number_unsigned()) line.expected("held", "an array of message ids");
        change.held.push_back(id.get<MessageId>());
      }
      std::sort(change.held.begin(), change.held.end());
    }
    log_.ledger.member_removals.push_back(std::move(change));
  }

  // A delivery refused unprocessed: the record was kept for another payload (payload_check).
  void refused(const Line& line) {
    const AttemptId attempt = line.unsigned_field("attempt");
    if (!log_.ledger.has_attempt(attempt)) {
      if (folding_ != nullptr) throw NotFoldable{};
      line.fail(fmt::format("field \"attempt\": attempt {} has no delivery line: expected a delivery of it", attempt));
    }
    log_.ledger.payload_refusals.emplace_back(line.nanoseconds("at"), attempt);
  }

  void ack(const Line& line) {
    log_.acks.push_back(AckEvent{line.nanoseconds("at"), line.unsigned_field("id"), processor(line), node(line),
                                 line.boolean("accepted", true)});
  }

  void node_event(const Line& line, NodeEventKind kind) {
    NodeEvent event{kind, line.nanoseconds("at"), node(line), 0};
    if (kind == NodeEventKind::Pause) event.amount = line.nanoseconds("duration");
    if (kind == NodeEventKind::Skew) event.amount = line.nanoseconds("skew");
    log_.node_events.push_back(event);
    if (folding_ != nullptr && kind == NodeEventKind::Crash) {
      folding_->node_crashed(event.node, event.at);
      last_crash_[event.node] = event.at;
    }
  }

  // A crash ends every attempt of its node delivered at or before it that has not ended (nor crashed already).
  void apply_crashes() {
    std::vector<NodeEvent> crashes;
    for (const NodeEvent& e : log_.node_events) {
      if (e.kind == NodeEventKind::Crash) crashes.push_back(e);
    }
    std::stable_sort(crashes.begin(), crashes.end(), [](const NodeEvent& x, const NodeEvent& y) { return x.at < y.at; });
    for (const NodeEvent& crash : crashes) {
      log_.ledger.attempts.for_each([&](AttemptRecord& a) {
        if (a.node != crash.node || a.ended_at || a.crashed_at) return;
        if (log_.delivered_at.at(a.attempt) <= crash.at) a.crashed_at = crash.at;
      });
    }
  }

  bool fold_ = false;
  LedgerFolding* folding_ = nullptr;   // while reading folding
  std::map<std::uint32_t, sim::Time> last_crash_;  // reading folding: each node's latest crash so far
  EventLog log_;
  std::deque<std::string> names_;  // the file names the lines point to (stable addresses)
  std::map<std::string, ProcessorId> processor_ids_;
  std::map<std::string, std::uint32_t> node_ids_;
  std::map<std::string, std::uint32_t> delivery_nodes_;  // the deliveries' nodes while they are collected
  std::vector<std::string> delivery_node_names_;
  std::map<std::string, std::uint32_t> delivery_processors_;  // and their processors, by name
  std::vector<std::string> delivery_processor_names_;
  std::vector<ExecutionRecord> effects_;
};

}  // namespace

std::string_view to_string(NodeEventKind kind) { return kNodeEventNames[static_cast<std::size_t>(kind)]; }

EventLog read_events(const std::vector<EventFile>& files, bool fold) { return Reader(fold).read(files); }

void write_events(std::ostream& out, const EventLog& log) {
  EventSpool spool;
  spool.write_whole(out, log);
}

std::string processor_name(const EventLog& log, ProcessorId processor) {
  if (log.saga_steps > 0) return saga_call_name(processor);
  return processor < log.processors.size() ? log.processors[processor] : fmt::format("processor{}", processor);
}

namespace {
// From the first delivery to the last instant an attempt ended, completed or a provider executed.
sim::Duration span_of(const EventLog& log) {
  if (log.delivered_at.empty() && log.ledger.folded_attempts == 0) return 0;
  sim::Time first = log.folded_first;
  sim::Time last = log.folded_last;
  for (const auto& [attempt, at] : log.delivered_at) {
    first = std::min(first, at);
    last = std::max(last, at);
  }
  log.ledger.attempts.for_each([&last](const AttemptRecord& a) {
    last = std::max({last, a.ended_at.value_or(last), a.completed_at.value_or(last), a.crashed_at.value_or(last)});
  });
  for (const ExecutionRecord& e : log.ledger.executions) last = std::max(last, e.at);
  return last - first;
}
}  // namespace

RunResult judge_events(const EventLog& log) {
  RunResult result;
  result.scenario = log.scenario;
  result.seed = log.seed;
  const std::uint64_t calls =
      log.provider_calls.value_or(log.effect_lines > 0 ? log.effect_lines : log.execution_lines);
  OracleInput input{log.ledger, log.protocol, calls,
                    [&log](std::uint32_t node) {
                      return node < log.nodes.size() ? log.nodes[node] : fmt::format("node{}", node);
                    },
                    [&log](ProcessorId p) { return processor_name(log, p); }};
  input.provider_key_window = log.provider_key_window;
  judge(input, result);
  if (log.saga_steps > 0) judge_sagas(SagaOracleInput{log.ledger, log.saga_steps}, result);
  result.deliveries = log.ledger.attempts.size() + log.ledger.folded_attempts;
  result.payload_mismatches = log.ledger.payload_refusals.size();  // its refused lines
  result.sim_time = span_of(log);
  return result;
}

std::vector<std::string> limits_of(const EventLog& log, const RunResult& result) {
  std::vector<std::string> limits;
  const auto has = [&log](NodeEventKind kind) {
    return std::any_of(log.node_events.begin(), log.node_events.end(),
                       [kind](const NodeEvent& e) { return e.kind == kind; });
  };
  if (!log.provider_log) {
    limits.emplace_back("no execution lines (the provider's own log): the workers' effect lines stand in, so a call "
                        "the provider executed but whose answer was lost is missing, and sink_retry cannot be told "
                        "from a second execution");
  }
  if (result.duplicates[static_cast<std::size_t>(Cause::TakeoverWhileAlive)] > 0) {
    limits.emplace_back(has(NodeEventKind::Pause) || has(NodeEventKind::Skew)
                            ? "takeover_while_alive is not split by reason: its sentence names slow work, a pause or "
                              "clock skew together; the log's pause and skew lines are drawn on the --html page, to "
                              "tell them apart by eye"
                            : "takeover_while_alive is not split by reason: the log has no pause or skew lines, so "
                              "slow work, a pause and clock skew look alike");
  }
  if (log.evict_lines == 0 &&
      result.duplicates[static_cast<std::size_t>(Cause::Unprotected)] > 0) {
    limits.emplace_back("no evict lines: a record that TTL (or a bounded store, for room) removed looks like one that "
                        "was never written, so expired and capacity_evicted duplicates may be classed unprotected");
  }
  if (log.decision_lines == 0 && log.ledger.attempts.size() + log.ledger.folded_attempts > 0) {
    limits.emplace_back("no decision lines: every duplicate of an attempt without a recorded decision is classed "
                        "unprotected");
  }
  limits.emplace_back("deliveries counts the attempts (one per processor of a delivery), not the hand-overs to a "
                      "worker; linearizable needs the store's history (lethe check FILE)");
  return limits;
}

}  // namespace lethe::events
