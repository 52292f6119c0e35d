#include "world/external_node.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>
#include <vector>

#include "check/history.hpp"
#include "core/utf8.hpp"
#include "check/store_json.hpp"
#include "external/child_process.hpp"
#include "external/node_clock.hpp"
#include "sim/channel.hpp"
#include "sim/random.hpp"

namespace lethe {

using Json = nlohmann::json;

namespace {

constexpr sim::TraceKind kTraceLine{"node_line", "turn", "hash", "sent"};
// A plain node's timer firing in virtual time: the turn it opens and the deadline on the node's clock.
constexpr sim::TraceKind kTraceTimer{"node_timer", "turn", "deadline"};
// A node's message to a peer, when the sender wrote it (its network tag, the receiving node, a hash of the body),
// and one that reached a node with no process to read it (a node between a crash and its next init_ok).
constexpr sim::TraceKind kTracePeer{"peer_message", "tag", "to_node", "hash"};
constexpr sim::TraceKind kTracePeerDropped{"peer_dropped", "tag", "from_node"};
constexpr std::uint64_t kInitMessage = 1;
constexpr int kProtocolVersion = 1;
// The most requests one node may have in flight (each is a fiber with its own stack): a node that floods valid
// requests stops the run as a bad node instead of exhausting memory.
constexpr std::size_t kMaxRequestsInFlight = 1024;
// Once a node failed to start, the time the other first incarnations share to answer init beyond node_timeout
// since their spawn: they got their init line only after the failed node's turn.
constexpr std::chrono::milliseconds kInitGrace{200};
// How long the run's bad nodes, together, may take to exit before their status is read: a node that wrote a bad
// line and exits is reported as exited (with its status) on every run, not as running on some.
constexpr std::chrono::milliseconds kExitGrace{500};

// Maelstrom's error codes (docs/external.md).
constexpr int kErrorTimeout = 0;
constexpr int kErrorUnavailable = 11;
constexpr int kErrorMalformed = 12;
constexpr int kErrorKeyMissing = 20;
constexpr int kErrorPrecondition = 22;

Json error_body(int code, std::string text) {
  return Json{{"type", "error"}, {"code", code}, {"text", std::move(text)}};
}

// A node's line as quoted in an error: its first 300 bytes, not cut inside a UTF-8 character.
std::string quoted(const std::string& line) { return std::string(utf8_prefix(line, 300)); }

// Integers beyond 64 bits (lin-kv holds any JSON value, and Maelstrom keeps integers exact at any size): the
// parser would make them doubles, so they are kept as their digits, in a binary value of this subtype (a JSON
// text never yields a binary value).
constexpr std::uint8_t kExactInteger = 0x69;

bool is_integer_text(const std::string& text) {
  const std::size_t digits = !text.empty() && text.front() == '-' ? 1 : 0;
  if (digits == text.size()) return false;
  return std::all_of(text.begin() + static_cast<std::ptrdiff_t>(digits), text.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

bool is_exact_integer(const Json& value) {
  return value.is_binary() && value.get_binary().has_subtype() && value.get_binary().subtype() == kExactInteger;
}

bool holds_exact_integer(const Json& value) {
  if (is_exact_integer(value)) return true;
  if (!value.is_structured()) return false;
  return std::any_of(value.begin(), value.end(), [](const Json& part) { return holds_exact_integer(part); });
}

// `value` as JSON text with its exact integers as their digits; Json::dump() for a value without one.
std::string exact_dump(const Json& value) {
  if (is_exact_integer(value)) return std::string(value.get_binary().begin(), value.get_binary().end());
  if (!holds_exact_integer(value)) return value.dump();
  std::string out(1, value.is_object() ? '{' : '[');
  for (auto part = value.begin(); part != value.end(); ++part) {
    if (part != value.begin()) out += ',';
    if (value.is_object()) out += Json(part.key()).dump() + ":";
    out += exact_dump(part.value());
  }
  out += value.is_object() ? '}' : ']';
  return out;
}

// nlohmann's own tree builder, but for integers beyond 64 bits (kept exact) and values nested deeper than
// history::kMaxJsonDepth (refused, as history::parse_bounded_json does).
class ExactJsonBuilder {
 public:
  explicit ExactJsonBuilder(Json& root) : tree_(root, true) {}
  bool null() { return tree_.null(); }
  bool boolean(bool value) { return tree_.boolean(value); }
  bool number_integer(Json::number_integer_t value) { return tree_.number_integer(value); }
  bool number_unsigned(Json::number_unsigned_t value) { return tree_.number_unsigned(value); }
  bool number_float(Json::number_float_t value, const std::string& text) {
    if (!is_integer_text(text)) return tree_.number_float(value, text);
    exact_ = true;
    Json::binary_t digits(std::vector<std::uint8_t>(text.begin(), text.end()), kExactInteger);
    return tree_.binary(digits);
  }
  bool string(std::string& value) { return tree_.string(value); }
  bool binary(Json::binary_t& value) { return tree_.binary(value); }
  bool start_object(std::size_t size) {
    deeper();
    return tree_.start_object(size);
  }
  bool key(std::string& value) { return tree_.key(value); }
  bool end_object() {
    --depth_;
    return tree_.end_object();
  }
  bool start_array(std::size_t size) {
    deeper();
    return tree_.start_array(size);
  }
  bool end_array() {
    --depth_;
    return tree_.end_array();
  }
  template <class Exception>
  bool parse_error(std::size_t position, const std::string& token, const Exception& error) {
    return tree_.parse_error(position, token, error);
  }
  bool exact() const { return exact_; }  // an integer beyond 64 bits was read

 private:
  void deeper() {
    if (depth_++ >= history::kMaxJsonDepth) throw history::JsonTooDeep(history::kMaxJsonDepth);
  }
  nlohmann::detail::json_sax_dom_parser<Json> tree_;
  int depth_ = 0;
  bool exact_ = false;
};

// `text` as one JSON value, its integers beyond 64 bits exact; throws as history::parse_bounded_json does.
Json parse_exact_json(const std::string& text, bool* exact = nullptr) {
  Json value;
  ExactJsonBuilder builder(value);
  Json::sax_parse(text, &builder);
  if (exact != nullptr) *exact = builder.exact();
  return value;
}

bool is_service(const std::string& name) {
  return name == "lethe-store" || name == "sink" || name == "clock" || name == "lin-kv" || name == "lin-tso" ||
         name == "seq-kv" || name == "lww-kv";
}

// A line a node wrote. The kv services' values and messages to peers (any destination that is not a service,
// "source" or "lethe") keep integers beyond 64 bits exact, as Maelstrom does; the messages lethe reads itself
// read them as doubles.
Json parse_node_line(const std::string& line) {
  bool exact = false;
  Json envelope = parse_exact_json(line, &exact);
  const Json dest = envelope.is_object() ? envelope.value("dest", Json()) : Json();
  const bool kv = dest == "lin-kv" || dest == "seq-kv" || dest == "lww-kv";
  const bool peer = dest.is_string() && !is_service(dest.get<std::string>()) && dest != "source" && dest != "lethe";
  if (exact && !kv && !peer) envelope = history::parse_bounded_json(line);
  return envelope;
}

bool is_kv_type(const std::string& type) { return type == "read" || type == "write" || type == "cas"; }

// The write of an op (or of one transaction part) on one key, with what the store answered about that key.
struct KeyWrite {
  Key key = 0;
  bool is_read = false;
  bool applied = false;
  bool sets_owner = false;      // a start write: it sets owner or started_at
  bool sets_completed = false;  // a completion: it sets completed_at
  std::optional<Item> previous;
};

bool sets(Assign mode) { return mode == Assign::Set || mode == Assign::SetIfAbsent; }

std::vector<KeyWrite> key_writes(const Op& op, const Reply& reply) {
  std::vector<KeyWrite> writes;
  switch (op.kind) {
    case OpKind::Get: writes.push_back(KeyWrite{op.key, true, reply.applied, false, false, reply.previous}); break;
    case OpKind::Put:
      writes.push_back(KeyWrite{op.key, false, reply.applied, op.item.owner != 0 || op.item.started_at.has_value(),
                                op.item.completed_at.has_value(), reply.previous});
      break;
    case OpKind::Upsert:
      writes.push_back(KeyWrite{op.key, false, reply.applied,
                                sets(op.update.owner_mode) || sets(op.update.started_at_mode),
                                sets(op.update.completed_at_mode), reply.previous});
      break;
    case OpKind::Transaction:
      for (std::size_t i = 0; i < op.parts.size(); ++i) {
        const TransactionPart& part = op.parts[i];
        writes.push_back(KeyWrite{part.key, false, reply.applied,
                                  sets(part.update.owner_mode) || sets(part.update.started_at_mode),
                                  sets(part.update.completed_at_mode),
                                  i < reply.previous_parts.size() ? reply.previous_parts[i] : std::nullopt});
      }
      break;
    case OpKind::Delete:
    case OpKind::Evict: break;
  }
  return writes;
}

}  // namespace

// One process of one node incarnation, shared by the node's fibers (each holds it while it serves a request).
class ExternalSession final : public std::enable_shared_from_this<ExternalSession> {
 public:
  ExternalSession(const WorkerEnvironment& environment, ExternalShared& shared, sim::Node& self,
                  ExternalNodeParts parts, std::vector<ProcessorId> processors)
      : environment_(environment),
        shared_(shared),
        self_(self),
        store_(std::move(parts.store)),
        sink_(std::move(parts.sink)),
        hooks_(std::move(parts.hooks)),
        processors_(std::move(processors)),
        incarnation_(self.incarnation()),
        work_(environment.simulation.rng(fmt::format("work:{}:{}", self.name(), self.incarnation()))) {}

  ~ExternalSession() {
    if (process_) std::erase(shared_.processes, process_.get());
    const auto registered = shared_.sessions.find(self_.name());
    if (registered != shared_.sessions.end() && registered->second.expired()) shared_.sessions.erase(registered);
  }
  ExternalSession(const ExternalSession&) = delete;
  ExternalSession& operator=(const ExternalSession&) = delete;

  void start();
  ProtectResult deliver(MessageId id, ProcessorId processor, AttemptId attempt);
  // A peer's message arriving at node `to` (on a fiber of `to`, at the arrival instant): the next turn of the
  // node's current process, or dropped (traced "peer_dropped") when it has none that answered init.
  static void arrive_peer(ExternalShared& shared, sim::Node& to, std::uint64_t tag, const std::string& from,
                          sim::NodeId from_id, const Json& body);

 private:
  // One delivery awaiting the node's reply.
  struct Delivery {
    MessageId id = 0;
    ProcessorId processor = 0;
    AttemptId attempt = 0;
    bool answered = false;
    bool ok = false;
    std::optional<std::uint64_t> value;
    bool store_touched = false;  // the node read or wrote the message's record during this attempt
    bool store_used = false;     // the node sent a store operation on no open delivery's record meanwhile
    bool weak_kv_stale = false;  // a seq-kv or lww-kv answer to the node meanwhile was stale (lin-kv's would differ)
    bool read_absent = false;    // its latest read of the record found none (a check before an insert)
    bool decided = false;        // a process-type decision was inferred
    bool effect_called = false;
    sim::Signal signal;
  };

  // Writes `body` from `src` as the next turn and reads the node's reaction to its end.
  void turn(const std::string& src, Json body);
  // What the node wrote: true when it was the turn's end.
  bool dispatch(const std::string& line, std::uint64_t turn);
  void answer_init(const Json& body, const std::string& line);
  void answer_delivery(const Json& body, const std::string& line);
  sim::Node* peer_node(const std::string& name) const;  // the consumer node of that name; null when none is
  void send_peer(sim::Node& peer, const Json& body);
  // A crash point the traffic reached: the named point of one attempt.
  struct CrashAt {
    CrashPoint point;
    MessageId id;
    AttemptId attempt;
  };
  void serve(const std::string& service, const Json& body);
  Json serve_sleep(const Json& body);
  Json serve_store(const Json& body, std::optional<CrashAt>& crash);
  Json serve_sink(const Json& body, std::optional<CrashAt>& crash);
  Json serve_linkv(const Json& body);
  sim::Service& services();  // the service lin-tso, seq-kv and lww-kv answer from, on the store's node
  Json serve_tso();
  Json serve_weak_kv(const std::string& service, const Json& body);
  void infer(const Op& op, const Reply& reply, std::optional<CrashAt>& crash);
  // Marks `flag` on every delivery open on this node: traffic that may be any of theirs.
  void used_meanwhile(bool Delivery::*flag);
  // KvLinearizable (a counterfactual replay): one of the pair's attempts is open on this node.
  bool linearized_here() const;
  Delivery* open_delivery(MessageId id, ProcessorId processor);
  void decide(Delivery& delivery, Basis basis, const std::optional<Item>& seen);
  Json convert_keys(Json op) const;
  ProcessorId processor_of(const Json& value) const;
  std::uint64_t intern(std::map<std::string, std::uint64_t>& table, const Json& value);
  Json linkv_value(std::uint64_t owner) const;  // the JSON value numbered `owner`; null when none is
  std::optional<std::string> read_line(std::chrono::microseconds timeout);
  // A plain node's next line in this turn; nullopt once the turn is over (its threads still, or silence), which it
  // counts in shared_.plain_nodes. `left`: the turn's wall-clock budget.
  std::optional<std::string> next_plain_line(std::chrono::milliseconds left);
  // Reads and dispatches what the node writes in turn `turn` until the turn is over.
  void react(std::uint64_t turn);
  // A plain node's timers in virtual time: once it is still, a fiber that wakes at its earliest deadline (if not
  // armed already) and runs timer_turn() there.
  void arm_timer();
  void timer_turn(std::int64_t deadline);
  void open_timer_turn();  // the node wrote in a timer's wake: the timer is a turn, numbered and traced
  // The process for this incarnation: one of the first processes spawned together, or a new one; with its clock.
  NodeProcess take_process(const external::ChildSpec& spec);
  NodeProcess spawn_process(external::ChildSpec spec, bool wait_for_exec, std::int64_t now_ns);
  void note_wall_clock(const std::string& why);  // a plain node's clock is the machine's, for `why`
  void record_line(std::uint64_t turn, bool sent, const std::string& text);
  // Stops the run on a bad node; with `await_exit` once the node ended or the run's exit grace is spent.
  [[noreturn]] void fail(const std::string& what, const std::string& expected, bool await_exit = true);

  const WorkerEnvironment& environment_;
  ExternalShared& shared_;
  sim::Node& self_;
  // Owned here, not by the worker's main fiber: a request's fiber may outlive it while the node crashes.
  std::unique_ptr<StoreClient> store_;
  std::unique_ptr<SinkClient> sink_;
  std::shared_ptr<ProtocolHooks> hooks_;
  std::vector<ProcessorId> processors_;
  std::uint32_t incarnation_;  // the node's incarnation this process is
  sim::Rng work_;  // workload.processing_time of the effect calls
  std::unique_ptr<external::NodeClock> clock_;  // null: the node reads the machine's clock
  std::optional<std::int64_t> armed_;           // the deadline a timer fiber waits for (the node's clock)
  std::optional<std::int64_t> pending_timer_;   // a timer woke the node, which has written nothing yet
  std::unique_ptr<external::ChildProcess> process_;
  bool turns_ = true;         // init_ok said lethe_turns
  bool initialized_ = false;  // init_ok came
  std::uint64_t turn_ = 0;
  std::uint64_t next_message_ = kInitMessage + 1;
  std::string last_sent_;
  std::map<std::uint64_t, Delivery> deliveries_;  // by the deliver's msg_id
  std::size_t in_flight_ = 0;                     // requests whose fiber has not ended (kMaxRequestsInFlight)
};

// ---------------------------------------------------------------- the process and its turns

void ExternalSession::fail(const std::string& what, const std::string& expected, bool await_exit) {
  if (process_ && await_exit) {
    if (!shared_.exit_grace.has_value()) shared_.exit_grace.emplace(kExitGrace);
    process_->await_exit(shared_.exit_grace->left());
  }
  const std::string status = process_ ? process_->status() : "not started";
  std::string tail = process_ ? process_->stderr_tail() : "";
  if (tail.empty()) tail = "(empty)";
  // The node's words (its lines, its stderr) may be any bytes: printed as UTF-8, the rest as \xNN.
  std::string text = printable_utf8(fmt::format(
      "external node {} (incarnation {}, process {}): {}; expected {}\n  last line lethe sent: {}\n  stderr tail:\n{}",
      self_.name(), self_.incarnation() + 1, status, what, expected, last_sent_.empty() ? "(none)" : last_sent_, tail));
  if (process_) process_->kill();
  // Every node that failed is named; one whose init turn failed as the first node's did, silently, only by name.
  const std::string reason = fmt::format("{}; expected {}", what, expected);
  if (shared_.failure.empty()) {
    shared_.failure = text;
    shared_.first_reason = reason;
  } else if (turn_ <= 1 && tail == "(empty)" && reason == shared_.first_reason) {
    shared_.same_failures.push_back(
        printable_utf8(fmt::format("{} (incarnation {}, process {})", self_.name(), self_.incarnation() + 1, status)));
  } else {
    shared_.failure += "\n" + text;
  }
  if (turn_ <= 1 && !shared_.init_grace.has_value()) {
    // One grace for all the nodes still to answer init, from now: not one each, in turn.
    shared_.init_grace.emplace(std::min(std::chrono::milliseconds(environment_.config.external.node_timeout / 1'000'000),
                                        kInitGrace));
  }
  throw ExternalNodeError(text);
}

void ExternalSession::record_line(std::uint64_t turn, bool sent, const std::string& text) {
  environment_.simulation.trace().record(environment_.simulation.now(), kTraceLine, self_.id(), turn,
                                         sim::hash_name(text), sent ? 1 : 0);
  if (shared_.lines != nullptr) shared_.lines->push_back(ExternalLine{self_.name(), self_.incarnation(), turn, sent, text});
}

std::optional<std::string> ExternalSession::read_line(std::chrono::microseconds timeout) {
  try {
    return process_->read_line(timeout);
  } catch (const external::LineTooLong& e) {
    fail(e.what(), fmt::format("lines of at most {} bytes, each one JSON message", external::kMaxLineBytes));
  } catch (const external::ChildProcessError& e) {
    fail(e.what(), "its reaction and a turn_end");  // the process's status heads the message
  }
}

void ExternalSession::start() {
  const ExternalSection& settings = environment_.config.external;
  external::ChildSpec spec;
  spec.argv = settings.command;
  const std::filesystem::path base = std::filesystem::path(settings.base_dir.empty() ? std::string(".") : settings.base_dir);
  if (spec.argv.front().find('/') != std::string::npos) spec.argv.front() = (base / spec.argv.front()).string();
  spec.env = settings.env;
  spec.cwd = (base / settings.cwd).lexically_normal().string();
  try {
    NodeProcess taken = take_process(spec);
    clock_ = std::move(taken.clock);
    process_ = std::move(taken.process);
    shared_.processes.push_back(process_.get());
    process_->wait_for_exec();
  } catch (const external::ChildProcessError& e) {
    fail(e.what(), fmt::format("a program lethe can run (external.command {})", Json(settings.command).dump()));
  }
  Json node_ids = Json::array();
  for (const WorkerSlot& slot : environment_.topology.workers()) node_ids.push_back(slot.node->name());
  Json processors = Json::array();
  for (ProcessorId p : processors_) processors.push_back(environment_.config.topology.processors[p]);
  turn("lethe", Json{{"type", "init"},
                     {"msg_id", kInitMessage},
                     {"node_id", self_.name()},
                     {"node_ids", node_ids},
                     {"lethe", {{"protocol", kProtocolVersion},
                                {"seed", environment_.simulation.seed()},
                                {"incarnation", self_.incarnation() + 1},
                                {"processors", processors}}}});
  if (!initialized_) fail("ended its first turn without init_ok", "init_ok with in_reply_to 1, then turn_end");
  shared_.sessions[self_.name()] = weak_from_this();
}

// Every worker's first process is spawned when the first one is needed, none waiting for another's exec: they
// start up side by side, and each node's init turn has external.node_timeout from its spawn. Later incarnations
// spawn their own. Until its first turn a node's clock reads the instant it was spawned at (the first processes:
// the run's, without the node's skew, which is not known for a process none has taken yet).
NodeProcess ExternalSession::take_process(const external::ChildSpec& spec) {
  if (self_.incarnation() != 0) return spawn_process(spec, true, self_.local_now());
  if (!shared_.first_spawned) {
    shared_.first_spawned = true;
    for (std::size_t i = 0; i < environment_.topology.workers().size(); ++i) {
      shared_.first_processes.push_back(spawn_process(spec, false, environment_.simulation.now()));
    }
  }
  if (shared_.first_processes.empty()) return spawn_process(spec, true, self_.local_now());
  NodeProcess taken = std::move(shared_.first_processes.back());
  shared_.first_processes.pop_back();
  return taken;
}

NodeProcess ExternalSession::spawn_process(external::ChildSpec spec, bool wait_for_exec, std::int64_t now_ns) {
  NodeProcess made;
  if (environment_.config.external.clock == NodeClockKind::Virtual) {
    if (!shared_.vclock_looked) {
      shared_.vclock_looked = true;
      shared_.vclock_library = external::find_vclock_library(shared_.vclock_searched).value_or("");
    }
    if (!shared_.vclock_library.empty()) {
      made.clock = std::make_unique<external::NodeClock>(now_ns);
      // Until init_ok says the node is plain, its waits are the kernel's: a node that sleeps before answering
      // init (a turn-speaking one may) must not wait for a timer lethe fires only for plain nodes.
      made.clock->set_timers_virtual(false);
      std::string preload;
      for (const std::string& entry : spec.env) {
        if (entry.starts_with("LD_PRELOAD=")) preload = entry.substr(11);
      }
      for (std::string& entry : made.clock->environment(shared_.vclock_library, preload)) {
        spec.env.push_back(std::move(entry));
      }
      spec.inherited_fd = made.clock->fd();
    }
  }
  made.process = std::make_unique<external::ChildProcess>(spec, wait_for_exec);
  return made;
}

void ExternalSession::turn(const std::string& src, Json body) {
  const std::uint64_t turn = ++turn_;
  const Json envelope{{"src", src}, {"dest", self_.name()}, {"body", std::move(body)}, {"turn", turn},
                      {"time_ns", self_.local_now()}};
  last_sent_ = exact_dump(envelope);
  record_line(turn, true, last_sent_);
  if (clock_) clock_->set_now(self_.local_now());
  // A plain node that wrote since its last turn ended reacted to something of its own (a timer, a thread): what it
  // wrote is read in this turn, as if it were this turn's.
  if (!turns_ && initialized_ && process_->output_pending()) ++shared_.plain_nodes[self_.name()].wrote_between;
  try {
    process_->write_line(last_sent_);
  } catch (const external::ChildProcessError& e) {
    fail(e.what(), "it to read the line");
  }
  react(turn);
}

void ExternalSession::react(std::uint64_t turn) {
  const ExternalSection& settings = environment_.config.external;
  const auto node_timeout = std::chrono::milliseconds(settings.node_timeout / 1'000'000);
  // Once a node of the run failed to start (the run is lost), another's init turn has what is left of
  // node_timeout since its spawn (the processes started together) or of the grace all of them share, whichever
  // ends later: nodes that never start cost one node_timeout and one grace for the run, not one each. Otherwise
  // a turn has node_timeout from its line.
  const bool judged_from_spawn = turn == 1 && shared_.init_grace.has_value();
  const external::WallBudget budget(judged_from_spawn ? std::max(node_timeout - process_->age(), shared_.init_grace->left())
                                                      : node_timeout);
  for (;;) {
    const std::chrono::milliseconds left = budget.left();
    if (left.count() <= 0) {
      // Not awaited: a node that says nothing for node_timeout is taken to be running.
      fail(fmt::format("no turn_end within external.node_timeout ({} ms of wall-clock time)", node_timeout.count()),
           fmt::format("{{\"type\":\"turn_end\",\"turn\":{}}} to \"lethe\"", turn), false);
    }
    const bool exact = turns_ || !initialized_;  // a plain node's turns end by themselves, once it answered init
    const std::optional<std::string> line = exact ? read_line(left) : next_plain_line(left);
    if (!line.has_value()) {
      if (exact) continue;  // the timeout check above reports it
      arm_timer();          // a plain Maelstrom node's turn is over
      return;
    }
    if (pending_timer_) open_timer_turn();
    record_line(turn, false, *line);
    if (dispatch(*line, turn)) return;
  }
}

std::optional<std::string> ExternalSession::next_plain_line(std::chrono::milliseconds left) {
  const ExternalSection& settings = environment_.config.external;
  const auto quiet = std::chrono::milliseconds(std::max<sim::Duration>(1, settings.quiet_period / 1'000'000));
  PlainNodeTurns& ended = shared_.plain_nodes[self_.name()];
  const auto by_silence = [&](const std::string& why) {
    std::optional<std::string> line = read_line(std::min(quiet, left));
    if (line.has_value()) return line;
    ++ended.turns;
    if (ended.by_silence++ == 0) ended.silence_why = why;
    return line;
  };
  if (settings.plain_turn_end == PlainTurnEnd::Silence) return by_silence("external.plain_turn_end = \"silence\"");
  // Waits for a line in short steps while the kernel shows the node at work; a node that never falls still (a
  // thread that keeps running, a line left unfinished) ends its turn after quiet_period of silence.
  const external::WallBudget silence(quiet);
  std::chrono::microseconds wait{0};
  for (;;) {
    if (std::optional<std::string> line = read_line(wait)) return line;
    const external::Stillness stillness = process_->stillness();
    if (stillness.kind == external::Stillness::Kind::unknown) {
      return by_silence(fmt::format("the kernel could not tell whether it had finished: {}", stillness.why));
    }
    if (stillness.kind == external::Stillness::Kind::still) {
      ++ended.turns;
      if (!stillness.timers_known) ++ended.timers_unread;
      if (!stillness.timer.empty() && ended.with_timer++ == 0) ended.first_timer = stillness.timer;
      return std::nullopt;
    }
    if (silence.left().count() <= 0) {
      return by_silence("it never fell still: a thread kept running, or a line it wrote stayed unfinished");
    }
    wait = std::min(std::max(wait * 2, std::chrono::microseconds(50)), std::chrono::microseconds(2000));
  }
}

// ---------------------------------------------------------------- what the node writes

bool ExternalSession::dispatch(const std::string& line, std::uint64_t turn) {
  // Bounded: copies and dumps of a value recurse as deep as it nests, on a fiber's small stack.
  Json envelope;
  try {
    envelope = parse_node_line(line);
  } catch (const std::exception& e) {
    fail(fmt::format("wrote a line that is not a message ({}): {}", history::json_error_reason(e), quoted(line)),
         "one JSON object per line: {\"src\", \"dest\", \"body\": {\"type\", ...}}");
  }
  if (!envelope.is_object() || !envelope.contains("body") || !envelope["body"].is_object() ||
      !envelope.contains("dest") || !envelope["dest"].is_string() || !envelope["body"].contains("type") ||
      !envelope["body"]["type"].is_string()) {
    fail(fmt::format("wrote a line that is not a message: {}", quoted(line)),
         "one JSON object per line: {\"src\", \"dest\", \"body\": {\"type\", ...}}");
  }
  if (!envelope.contains("src") || envelope["src"] != self_.name()) {
    fail(fmt::format("wrote a message whose src is {}: {}", exact_dump(envelope.value("src", Json())), quoted(line)),
         fmt::format("\"src\": \"{}\" (its node id)", self_.name()));
  }
  const std::string dest = envelope["dest"].get<std::string>();
  const Json& body = envelope["body"];
  const std::string type = body["type"].get<std::string>();
  if (turn == 1 && type == "init_ok") {
    answer_init(body, line);
    return false;  // a turn-speaking node ends the init turn with turn_end; a plain one with silence
  }
  if (dest == "lethe") {
    if (type != "turn_end" || !body.contains("turn") || body["turn"] != turn) {
      fail(fmt::format("wrote {} to lethe", quoted(line)),
           fmt::format("{{\"type\":\"turn_end\",\"turn\":{}}} (the turn of the line it reacted to)", turn));
    }
    return true;
  }
  if (dest == "source") {
    answer_delivery(body, line);
    return false;
  }
  if (sim::Node* peer = is_service(dest) ? nullptr : peer_node(dest)) {
    send_peer(*peer, body);
    return false;
  }
  if (!is_service(dest)) {
    fail(fmt::format("wrote to an unknown destination \"{}\": {}", dest, quoted(line)),
         "a service (lethe-store, sink, clock, lin-kv, seq-kv, lww-kv, lin-tso), a node of node_ids (a peer), \"source\" (a delivery's "
         "reply) or \"lethe\" (turn_end)");
  }
  if (!body.contains("msg_id") || !body["msg_id"].is_number_unsigned()) {
    fail(fmt::format("sent a request without an integer msg_id: {}", quoted(line)),
         "a body with \"msg_id\": N (N >= 0) on every request");
  }
  if (in_flight_ >= kMaxRequestsInFlight) {
    fail(fmt::format("has {} requests in flight, the most a node may have, and sent another: {}", in_flight_,
                     quoted(line)),
         fmt::format("at most {} requests awaiting their replies", kMaxRequestsInFlight));
  }
  // The request leaves at this turn's virtual instant; its reply is a later turn.
  ++in_flight_;
  self_.spawn([session = shared_from_this(), dest, body] {
    struct InFlight {
      ExternalSession& session;
      ~InFlight() { --session.in_flight_; }
    } in_flight{*session};
    session->serve(dest, body);
  });
  return false;
}

void ExternalSession::answer_init(const Json& body, const std::string& line) {
  if (!body.contains("in_reply_to") || body["in_reply_to"] != kInitMessage) {
    fail(fmt::format("answered init with {}", quoted(line)), "init_ok with in_reply_to 1");
  }
  const Json turns = body.value("lethe_turns", Json(false));
  if (!turns.is_boolean()) {
    fail(fmt::format("answered init with lethe_turns {}", turns.dump()), "\"lethe_turns\": true or false, or none");
  }
  turns_ = turns.get<bool>();
  initialized_ = true;
  // A node that speaks turns is told the time in every line and ends its turns itself: its clock stays virtual,
  // its timed waits its own (a timer of its own cannot open a turn).
  if (turns_) return;
  shared_.plain_nodes.try_emplace(self_.name());
  if (clock_) clock_->set_timers_virtual(true);
  if (environment_.config.external.clock == NodeClockKind::Wall) {
    note_wall_clock("external.clock = \"wall\"");
  } else if (!clock_) {
    note_wall_clock(fmt::format("the virtual-clock library liblethe-vclock.so was not found or cannot be preloaded "
                                "({})",
                                shared_.vclock_searched));
  } else if (!clock_->loaded()) {
    note_wall_clock("the virtual-clock library was not loaded: " +
                    external::why_not_preloaded(fmt::format("/proc/{}/exe", process_->node_pid())));
  }
}

void ExternalSession::note_wall_clock(const std::string& why) {
  PlainNodeTurns& ended = shared_.plain_nodes[self_.name()];
  if (ended.wall_clock_why.empty()) ended.wall_clock_why = why;
}

// ---------------------------------------------------------------- a plain node's timers, in virtual time

void ExternalSession::arm_timer() {
  if (!clock_ || turns_) return;
  PlainNodeTurns& ended = shared_.plain_nodes[self_.name()];
  ended.slots_missed = std::max<std::uint64_t>(ended.slots_missed, clock_->slots_missed());
  const std::optional<std::int64_t> deadline = clock_->next_deadline();
  if (deadline == armed_) return;
  armed_ = deadline;
  if (!deadline.has_value()) return;
  // The deadline is on the node's clock (virtual time plus its skew): it comes at that instant minus the skew.
  const sim::Time at = std::max(environment_.simulation.now(), *deadline - self_.clock_skew());
  self_.spawn([weak = weak_from_this(), at, deadline = *deadline] {
    sim::sleep_until(at);
    const std::shared_ptr<ExternalSession> session = weak.lock();
    if (session == nullptr || !session->process_ || session->armed_ != deadline) return;  // disarmed meanwhile
    session->timer_turn(deadline);
  });
}

// Like a line's turn, but nothing is written: the clock moves to the deadline and the threads waiting for it are
// woken; what the node writes is read until it is still again. A timer after which the node writes nothing is no
// turn (neither numbered nor traced): a runtime's own timers (V8's delayed tasks follow its garbage collector,
// which runs on threads of its own) come and go from run to run without changing what the node does.
void ExternalSession::timer_turn(std::int64_t deadline) {
  armed_.reset();
  pending_timer_ = deadline;
  clock_->set_now(self_.local_now());
  clock_->wake_due();
  react(turn_ + 1);
  pending_timer_.reset();
}

void ExternalSession::open_timer_turn() {
  const std::uint64_t turn = ++turn_;
  environment_.simulation.trace().record(environment_.simulation.now(), kTraceTimer, self_.id(), turn,
                                         static_cast<std::uint64_t>(*pending_timer_));
  pending_timer_.reset();
}

void ExternalSession::answer_delivery(const Json& body, const std::string& line) {
  const std::string type = body["type"].get<std::string>();
  const auto found = body.contains("in_reply_to") && body["in_reply_to"].is_number_unsigned()
                         ? deliveries_.find(body["in_reply_to"].get<std::uint64_t>())
                         : deliveries_.end();
  if (found == deliveries_.end() || found->second.answered) {
    fail(fmt::format("answered a delivery lethe never sent (or answered twice): {}", quoted(line)),
         "deliver_ok or error with in_reply_to = the msg_id of a deliver not yet answered");
  }
  Delivery& delivery = found->second;
  if (type == "deliver_ok") {
    const Json value = body.value("value", Json());
    if (!value.is_null() && !value.is_number_unsigned()) {
      fail(fmt::format("acknowledged with value {}: {}", value.dump(), quoted(line)),
           "\"value\": an integer >= 0 or null");
    }
    delivery.ok = true;
    if (value.is_number_unsigned()) delivery.value = value.get<std::uint64_t>();
  } else if (type != "error") {
    fail(fmt::format("answered a delivery with type \"{}\": {}", type, quoted(line)), "deliver_ok or error");
  }
  delivery.answered = true;
  delivery.signal.notify_one();
}

// ---------------------------------------------------------------- peers

sim::Node* ExternalSession::peer_node(const std::string& name) const {
  for (const WorkerSlot& slot : environment_.topology.workers()) {
    if (slot.node->name() == name) return slot.node;
  }
  return nullptr;
}

// One way, as Maelstrom's messages between nodes: the consumers-to-consumers link's latency, network.loss and
// network.duplicate, and its partitions apply; the network drops it when the receiver is down at its arrival.
void ExternalSession::send_peer(sim::Node& peer, const Json& body) {
  const std::uint64_t tag = ++shared_.peer_messages;
  environment_.simulation.trace().record(environment_.simulation.now(), kTracePeer, self_.id(), tag, peer.id(),
                                         sim::hash_name(exact_dump(body)));
  ExternalShared* shared = &shared_;
  sim::Node* to = &peer;
  environment_.network.send(
      self_, peer,
      [shared, to, tag, from = self_.name(), from_id = self_.id(), body] {
        // A fiber of the receiver, as a request's: the turn may fail (a bad node) or spawn the node's requests.
        to->spawn([shared, to, tag, from, from_id, body] { arrive_peer(*shared, *to, tag, from, from_id, body); });
      },
      tag);
}

void ExternalSession::arrive_peer(ExternalShared& shared, sim::Node& to, std::uint64_t tag, const std::string& from,
                                  sim::NodeId from_id, const Json& body) {
  const auto found = shared.sessions.find(to.name());
  const std::shared_ptr<ExternalSession> session = found == shared.sessions.end() ? nullptr : found->second.lock();
  if (session == nullptr || !to.alive() || session->incarnation_ != to.incarnation() || !session->process_) {
    sim::Simulation& simulation = to.simulation();
    simulation.trace().record(simulation.now(), kTracePeerDropped, to.id(), tag, from_id);
    return;
  }
  session->turn(from, body);
}

// ---------------------------------------------------------------- deliveries

ProtectResult ExternalSession::deliver(MessageId id, ProcessorId processor, AttemptId attempt) {
  const std::uint64_t message = next_message_++;
  Delivery& delivery = deliveries_[message];
  delivery.id = id;
  delivery.processor = processor;
  delivery.attempt = attempt;
  const std::uint32_t delivery_number = ++shared_.deliveries[group_key(id, processor)];
  turn("source", Json{{"type", "deliver"},
                      {"msg_id", message},
                      {"message", id},
                      {"processor", environment_.config.topology.processors[processor]},
                      {"attempt", attempt},
                      {"delivery", delivery_number},
                      {"payload", nullptr}});
  while (!delivery.answered) delivery.signal.wait();
  ProtectResult result;
  result.outcome = !delivery.ok ? Outcome::Failed : delivery.effect_called ? Outcome::Executed : Outcome::Skipped;
  result.value = delivery.value;
  deliveries_.erase(message);
  return result;
}

// ---------------------------------------------------------------- services

void ExternalSession::serve(const std::string& service, const Json& body) {
  std::optional<CrashAt> crash;
  Json reply;
  const std::string type = body["type"].get<std::string>();
  if (service == "lethe-store" && type == "op") {
    reply = serve_store(body, crash);
  } else if (service == "sink" && type == "effect") {
    reply = serve_sink(body, crash);
  } else if (service == "clock" && type == "sleep") {
    reply = serve_sleep(body);
  } else if (service == "lin-kv" && is_kv_type(type)) {
    reply = serve_linkv(body);
  } else if ((service == "seq-kv" || service == "lww-kv") && is_kv_type(type)) {
    reply = serve_weak_kv(service, body);
  } else if (service == "lin-tso" && type == "ts") {
    reply = serve_tso();
  } else {
    fail(fmt::format("sent a request of unknown type \"{}\" to {}", type, service),
         "lethe-store: op; sink: effect; clock: sleep; lin-kv, seq-kv, lww-kv: read, write, cas; lin-tso: ts");
  }
  if (service == "lethe-store" && reply["type"] == "error" && reply["code"] == kErrorMalformed) {
    // A store operation lethe could not run: counted, so a node speaking the store protocol wrong shows as such.
    Ledger& ledger = environment_.ledger;
    if (ledger.store_errors++ == 0) ledger.first_store_error = reply["text"].get<std::string>();
  }
  reply["in_reply_to"] = body["msg_id"];
  // A named crash point, recognised from the traffic: the node dies before it reads the reply.
  if (crash.has_value()) hooks_->crash_point(crash->point, crash->id, crash->attempt);
  turn(service, std::move(reply));
}

// A sleep the run can see to its end: from 0 to what is left until the run's last instant (run.duration, then
// at most the drain's max(run.duration, 1h): World::simulate_until_done). Any other duration, 2^64 - 1 read as
// -1 included, is a malformed request rather than an answer at once or never.
Json ExternalSession::serve_sleep(const Json& body) {
  const RunSection& run = environment_.config.run;
  const sim::Time last = run.duration + (run.drain ? std::max<sim::Duration>(run.duration, sim::kHour) : 0);
  const sim::Duration left = std::max<sim::Duration>(0, last - environment_.simulation.now());
  const Json duration = body.value("duration_ns", Json());
  std::optional<sim::Duration> sleep;
  if (duration.is_number_unsigned() && duration.get<std::uint64_t>() <= static_cast<std::uint64_t>(left)) {
    sleep = static_cast<sim::Duration>(duration.get<std::uint64_t>());
  }
  if (!sleep.has_value()) {
    return error_body(kErrorMalformed, fmt::format("sleep needs \"duration_ns\": an integer from 0 to {} (the "
                                                   "nanoseconds left until the run's last instant), found {}",
                                                   left, duration.is_null() ? "none" : exact_dump(duration)));
  }
  sim::sleep(*sleep);
  return Json{{"type", "sleep_ok"}};
}

Json ExternalSession::serve_store(const Json& body, std::optional<CrashAt>& crash) {
  if (!body.contains("op")) return error_body(kErrorMalformed, "op needs \"op\": an operation of lethe's store history");
  Op op;
  try {
    op = history::store_op_from_json(convert_keys(body["op"]));
  } catch (const std::exception& e) {
    return error_body(kErrorMalformed, e.what());
  }
  if (op.kind == OpKind::Evict) return error_body(kErrorMalformed, "evict is the store's own sweeper's operation");
  const std::optional<Reply> reply = store_->execute(op);
  if (!reply.has_value()) return error_body(kErrorTimeout, "timeout");
  infer(op, *reply, crash);
  return Json{{"type", "op_ok"}, {"reply", history::store_reply_to_json(*reply, op.kind == OpKind::Transaction)}};
}

Json ExternalSession::serve_sink(const Json& body, std::optional<CrashAt>& crash) {
  if (!body.contains("message") || !body["message"].is_number_unsigned() || !body.contains("attempt") ||
      !body["attempt"].is_number_unsigned()) {
    return error_body(kErrorMalformed, "effect needs \"message\", \"processor\" and \"attempt\"");
  }
  const MessageId id = body["message"].get<MessageId>();
  const ProcessorId processor = processor_of(body.value("processor", Json()));
  const AttemptId attempt = body["attempt"].get<AttemptId>();
  Delivery* delivery = open_delivery(id, processor);
  if (delivery == nullptr || delivery->attempt != attempt) {
    return error_body(kErrorMalformed, fmt::format("attempt {} is not an open delivery of message {} for processor "
                                                   "{} on this node", attempt, id, processor));
  }
  // An effect with no store traffic before it: the node checked nothing; when seq-kv or lww-kv gave it a stale
  // answer meanwhile, it decided on a store that is not linearizable. After a read of the record that found none
  // (and no start write): it decided on an absent record, as check-then-insert does. Store traffic elsewhere
  // (another table, another key) may be the node's own record: no decision is inferred, and the oracle calls a
  // duplicate of it not_attributable rather than guess "checked nothing".
  if (!delivery->decided && !delivery->store_touched && !delivery->store_used) {
    decide(*delivery, delivery->weak_kv_stale ? Basis::WeakStore : Basis::Unprotected, std::nullopt);
  }
  if (!delivery->decided && delivery->read_absent) decide(*delivery, Basis::Absent, std::nullopt);
  delivery->effect_called = true;
  const FencingToken token = body.value("fencing_token", Json(kNoFencingToken)).is_number_unsigned()
                                 ? body.value("fencing_token", Json(kNoFencingToken)).get<FencingToken>()
                                 : kNoFencingToken;
  const std::uint64_t timeouts = sink_->stats().timeouts;
  sim::sleep(environment_.config.workload.processing_time.sample(work_));
  const std::optional<std::uint64_t> value = sink_->call(id, processor, attempt, token);
  if (!value.has_value()) {
    return sink_->stats().timeouts > timeouts ? error_body(kErrorTimeout, "timeout")
                                             : error_body(kErrorUnavailable, "the provider refused or was unavailable");
  }
  crash = CrashAt{CrashPoint::AfterEffectBeforeComplete, id, attempt};
  return Json{{"type", "effect_ok"}, {"value", *value}};
}

// lin-kv over the store: key i is the domain record (processor 0xffff, message i), its value the owner field
// (value j is owner j), both numbered in the order the run first sees them.
Json ExternalSession::serve_linkv(const Json& body) {
  if (!body.contains("key")) return error_body(kErrorMalformed, "lin-kv requests need \"key\"");
  const Key key = make_key(Table::Domain, 0xffffu, intern(shared_.linkv_keys, body["key"]));
  const std::string type = body["type"].get<std::string>();
  if (type == "read") {
    const std::optional<Reply> reply = store_->execute(get_op(key));
    if (!reply.has_value()) return error_body(kErrorTimeout, "timeout");
    if (!reply->previous.has_value()) return error_body(kErrorKeyMissing, "key does not exist");
    return Json{{"type", "read_ok"}, {"value", linkv_value(reply->previous->owner)}};
  }
  if (!body.contains(type == "write" ? "value" : "to") || (type == "cas" && !body.contains("from"))) {
    return error_body(kErrorMalformed, type == "write" ? "write needs \"value\"" : "cas needs \"from\" and \"to\"");
  }
  const Json create = body.value("create_if_not_exists", Json(false));
  if (!create.is_boolean()) return error_body(kErrorMalformed, "create_if_not_exists is true or false");
  Update update;
  update.owner_mode = Assign::Set;
  update.owner = intern(shared_.linkv_values, body[type == "write" ? "value" : "to"]);
  if (type == "write") {
    const std::optional<Reply> reply = store_->execute(upsert_op(key, Condition{}, update));
    if (!reply.has_value()) return error_body(kErrorTimeout, "timeout");
    return Json{{"type", "write_ok"}};
  }
  Condition condition;
  condition.owner_equals = intern(shared_.linkv_values, body["from"]);
  const std::optional<Reply> reply = store_->execute(upsert_op(key, condition, update));
  if (!reply.has_value()) return error_body(kErrorTimeout, "timeout");
  if (reply->applied) return Json{{"type", "cas_ok"}};
  if (reply->previous.has_value()) {
    return error_body(kErrorPrecondition, fmt::format("expected {}, found {}", exact_dump(body["from"]),
                                                      exact_dump(linkv_value(reply->previous->owner))));
  }
  if (!create.get<bool>()) return error_body(kErrorKeyMissing, "key does not exist");
  Condition absent;
  absent.require_absent = true;
  const std::optional<Reply> created = store_->execute(upsert_op(key, absent, update));
  if (!created.has_value()) return error_body(kErrorTimeout, "timeout");
  if (created->applied) return Json{{"type", "cas_ok"}};
  return error_body(kErrorPrecondition, "the key was created meanwhile");
}

sim::Service& ExternalSession::services() {
  if (!shared_.services.has_value()) {
    sim::Simulation& simulation = environment_.simulation;
    sim::Node* store = nullptr;
    for (std::size_t id = 0; id < simulation.node_count() && store == nullptr; ++id) {
      sim::Node& node = simulation.node(static_cast<sim::NodeId>(id));
      if (node.name() == "store") store = &node;
    }
    shared_.services.emplace(sim::Service{store, {}, false, 0});
  }
  return *shared_.services;
}

Json ExternalSession::serve_tso() {
  LinTso* tso = &shared_.lin_tso;
  const std::optional<std::uint64_t> ts =
      environment_.network.call(services(), [tso] { return tso->next(); }, environment_.config.network.rpc_timeout);
  if (!ts.has_value()) return error_body(kErrorTimeout, "timeout");
  return Json{{"type", "ts_ok"}, {"ts", *ts}};
}

// seq-kv and lww-kv: lin-kv's requests, answered by their own states (world/external_services.hpp) at the store's
// node, so the store's links, partitions and the RPC timeout apply.
Json ExternalSession::serve_weak_kv(const std::string& service, const Json& body) {
  const std::string type = body["type"].get<std::string>();
  if (!body.contains("key")) return error_body(kErrorMalformed, service + " requests need \"key\"");
  if (type != "read" && (!body.contains(type == "write" ? "value" : "to") || (type == "cas" && !body.contains("from")))) {
    return error_body(kErrorMalformed, type == "write" ? "write needs \"value\"" : "cas needs \"from\" and \"to\"");
  }
  const Json create = body.value("create_if_not_exists", Json(false));
  if (!create.is_boolean()) return error_body(kErrorMalformed, "create_if_not_exists is true or false");
  if (service == "seq-kv" && !shared_.seq_kv.has_value()) shared_.seq_kv.emplace(environment_.simulation.rng("seq-kv"));
  if (service == "lww-kv" && !shared_.lww_kv.has_value()) {
    shared_.lww_kv.emplace(environment_.simulation, environment_.simulation.rng("lww-kv"));
  }
  SeqKv* seq = service == "seq-kv" ? &*shared_.seq_kv : nullptr;
  LwwKv* lww = service == "lww-kv" ? &*shared_.lww_kv : nullptr;
  const std::string key = exact_dump(body["key"]);
  const std::string value = type == "read" ? std::string() : exact_dump(body[type == "write" ? "value" : "to"]);
  const std::string from = type == "cas" ? exact_dump(body["from"]) : std::string();
  const bool create_key = create.get<bool>();
  const std::string node = self_.name();
  const bool linear = linearized_here();
  WeakKvOp record{static_cast<std::uint32_t>(self_.id()), environment_.simulation.now(), lin::kNever, key,
                  type == "read" ? WeakKvType::Read : type == "write" ? WeakKvType::Write : WeakKvType::Cas,
                  value, from, create_key, 0, std::nullopt};
  const std::optional<KvAnswer> answer = environment_.network.call(
      services(),
      [=] {
        if (type == "read") return seq != nullptr ? seq->read(node, key, linear) : lww->read(key, linear);
        if (type == "write") return seq != nullptr ? seq->write(node, key, value) : lww->write(key, value);
        return seq != nullptr ? seq->cas(node, key, from, value, create_key)
                              : lww->cas(key, from, value, create_key, linear);
      },
      environment_.config.network.rpc_timeout);
  if (answer.has_value()) {
    record.returned_at = environment_.simulation.now();
    record.code = answer->code;
    record.found = answer->value;
  }
  shared_.weak_kv_history[service].push_back(std::move(record));
  if (!answer.has_value()) return error_body(kErrorTimeout, "timeout");
  if (answer->stale) used_meanwhile(&Delivery::weak_kv_stale);
  if (answer->code == kErrorKeyMissing) return error_body(kErrorKeyMissing, "key does not exist");
  if (answer->code == kErrorPrecondition) {
    return error_body(kErrorPrecondition, fmt::format("expected {}, found {}", from, answer->value.value_or("")));
  }
  if (type == "read") return Json{{"type", "read_ok"}, {"value", parse_exact_json(answer->value.value_or("null"))}};
  return Json{{"type", type + "_ok"}};
}

bool ExternalSession::linearized_here() const {
  if (environment_.intervener == nullptr) return false;
  for (const auto& entry : deliveries_) {
    if (!entry.second.answered && environment_.intervener->linearizes(entry.second.attempt)) return true;
  }
  return false;
}

Json ExternalSession::linkv_value(std::uint64_t owner) const {
  if (owner == 0 || owner > shared_.linkv_value_text.size()) return Json();  // not a lin-kv write's record
  return parse_exact_json(shared_.linkv_value_text[owner - 1]);
}

std::uint64_t ExternalSession::intern(std::map<std::string, std::uint64_t>& table, const Json& value) {
  const std::string text = exact_dump(value);  // 2^64 and 2^64 + 1 are two values, not one double
  const auto [entry, added] = table.try_emplace(text, table.size() + 1);
  if (added && &table == &shared_.linkv_values) shared_.linkv_value_text.push_back(text);
  return entry->second;
}

// ---------------------------------------------------------------- what lethe infers from the store traffic

ExternalSession::Delivery* ExternalSession::open_delivery(MessageId id, ProcessorId processor) {
  Delivery* found = nullptr;
  for (auto& [message, delivery] : deliveries_) {
    if (!delivery.answered && delivery.id == id && delivery.processor == processor) found = &delivery;
  }
  return found;  // the latest one
}

void ExternalSession::decide(Delivery& delivery, Basis basis, const std::optional<Item>& seen) {
  if (is_process_basis(basis)) delivery.decided = true;
  hooks_->decided(DecisionNote{delivery.id, delivery.processor, delivery.attempt, basis, seen, self_.local_now()});
}

void ExternalSession::infer(const Op& op, const Reply& reply, std::optional<CrashAt>& crash) {
  bool on_a_delivery = false;
  for (const KeyWrite& write : key_writes(op, reply)) {
    const Table table = key_table(write.key);
    if (table != Table::Dedupe && table != Table::Inbox) continue;
    Delivery* delivery = open_delivery(key_message(write.key), key_processor(write.key));
    if (delivery == nullptr) continue;
    on_a_delivery = true;
    delivery->store_touched = true;
    if (!write.applied && write.sets_completed && !write.is_read) {
      hooks_->completed(delivery->id, delivery->processor, delivery->attempt, false);
    }
    const std::optional<Item>& seen = write.previous;
    if (write.is_read) delivery->read_absent = !seen.has_value();
    const bool completed = seen.has_value() && seen->completed_at.has_value();
    if (write.applied && write.sets_completed && !write.is_read) {
      hooks_->completed(delivery->id, delivery->processor, delivery->attempt, true);
      crash = CrashAt{CrashPoint::AfterCompleteBeforeAck, delivery->id, delivery->attempt};
    } else if (!write.applied && write.sets_owner && seen.has_value() && seen->owner == delivery->attempt &&
               !completed) {
      // An earlier try of this attempt's start write landed (its reply was lost): the record is ours.
      decide(*delivery, Basis::Absent, std::nullopt);
      crash = CrashAt{CrashPoint::AfterStartBeforeEffect, delivery->id, delivery->attempt};
    } else if (write.applied && write.sets_owner && !write.is_read) {
      const bool expired = completed && seen->expires_on.has_value() && *seen->expires_on <= self_.local_now();
      decide(*delivery, !seen.has_value() ? Basis::Absent : !completed ? Basis::StaleTakeover
                        : expired         ? Basis::ExpiredCompleted
                                          : Basis::Unprotected,
             seen);
      crash = CrashAt{CrashPoint::AfterStartBeforeEffect, delivery->id, delivery->attempt};
    } else if ((write.is_read || !write.applied) && seen.has_value() && !delivery->decided) {
      decide(*delivery, completed ? Basis::Completed : table == Table::Inbox ? Basis::InboxDuplicate
                                                                              : Basis::InFlightRecent,
             seen);
    }
  }
  if (!on_a_delivery) used_meanwhile(&Delivery::store_used);
}

void ExternalSession::used_meanwhile(bool Delivery::*flag) {
  for (auto& entry : deliveries_) {
    if (!entry.second.answered) entry.second.*flag = true;
  }
}

// ---------------------------------------------------------------- keys

ProcessorId ExternalSession::processor_of(const Json& value) const {
  if (value.is_number_unsigned()) return static_cast<ProcessorId>(value.get<std::uint64_t>());
  const auto& names = environment_.config.topology.processors;
  for (std::size_t p = 0; p < names.size(); ++p) {
    if (value.is_string() && value.get<std::string>() == names[p]) return static_cast<ProcessorId>(p);
  }
  return processors_.empty() ? 0 : processors_.front();
}

// {"table", "processor", "message"} keys to the store's integer keys (protocol/store_ops.hpp make_key).
Json ExternalSession::convert_keys(Json op) const {
  const auto convert = [this](Json& key) {
    if (!key.is_object()) return;
    static const std::map<std::string, Table> kTables{
        {"dedupe", Table::Dedupe}, {"inbox", Table::Inbox}, {"domain", Table::Domain}, {"outbox", Table::Outbox}};
    const auto table = kTables.find(key.value("table", std::string()));
    if (table == kTables.end() || !key.contains("message") || !key["message"].is_number_unsigned()) {
      throw std::invalid_argument(fmt::format("key {} needs \"table\" (dedupe, inbox, domain or outbox), "
                                              "\"processor\" and \"message\"", key.dump()));
    }
    key = make_key(table->second, processor_of(key.value("processor", Json())), key["message"].get<MessageId>());
  };
  if (op.is_object() && op.contains("key")) convert(op["key"]);
  if (op.is_object() && op.contains("parts") && op["parts"].is_array()) {
    for (Json& part : op["parts"]) {
      if (part.is_object() && part.contains("key")) convert(part["key"]);
    }
  }
  return op;
}

// ---------------------------------------------------------------- ExternalNode

ExternalNode::ExternalNode(const WorkerEnvironment& environment, ExternalShared& shared, sim::Node& self,
                           ExternalNodeParts parts, std::vector<ProcessorId> processors)
    : session_(std::make_shared<ExternalSession>(environment, shared, self, std::move(parts), processors)),
      processors_(std::move(processors)),
      environment_(environment),
      self_(self) {
  session_->start();
}

ExternalNode::~ExternalNode() = default;

Handled ExternalNode::handle(MessageId id) {
  Handled handled{true, std::nullopt};
  for (std::size_t i = 0; i < processors_.size(); ++i) {
    ExternalSession* session = session_.get();
    const ProcessorId processor = processors_[i];
    const ProtectResult result = run_attempt(environment_, id, processor, self_, [session, id, processor](AttemptId attempt) {
      return session->deliver(id, processor, attempt);
    });
    if (result.outcome == Outcome::Failed) handled.ok = false;
    if (i == 0) handled.value = result.value;
  }
  return handled;
}

}  // namespace lethe
