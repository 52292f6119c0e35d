#include "runner/check.hpp"

#include "sim/regular_file.hpp"
#include "protocol/key_text.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fmt/format.h>
#include <iostream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <map>
#include <optional>
#include <thread>

#include "check/history.hpp"
#include "check/linearizability_batch.hpp"
#include "check/total_queue_model.hpp"
#include "reports/history_page.hpp"
#include "reports/output_file.hpp"
#include "runner/check_events.hpp"
#include "runner/check_prefix.hpp"
#include "runner/command.hpp"
#include "runner/execute.hpp"
#include "sim/time.hpp"

namespace runner {

namespace {

namespace history = lethe::history;
namespace lin = lethe::lin;
using Clock = std::chrono::steady_clock;

struct CheckOptions {
  std::vector<std::string> files;
  std::string format = "auto";
  std::string model = "auto";
  std::optional<std::string> initial;
  unsigned jobs = 0;
  std::uint64_t budget = 10'000'000;
  std::string timeout;
  bool json = false;
  std::string html;
  bool events = false;
};

// ---------------------------------------------------------------- stopping a partition's search from outside

struct TimedOut {};

// What the search of the partition on this thread answers to: the deadline.
struct StopContext {
  std::size_t partition = 0;
  std::optional<Clock::time_point> deadline;
  std::uint64_t calls = 0;

  void poll() {
    if ((++calls & 1023U) != 0) return;
    if (deadline && Clock::now() > *deadline) throw TimedOut{};
  }
};

thread_local StopContext* current_stop = nullptr;

// Model, whose step() gives way when the partition's search is no longer wanted (unwinding the search: it holds
// only containers).
template <class Model>
struct Stoppable {
  using State = typename Model::State;
  static State initial() { return Model::initial(); }
  template <class Input>
  static auto step(const State& state, const Input& input) {
    if (current_stop != nullptr) current_stop->poll();
    return Model::step(state, input);
  }
  static std::uint64_t hash(const State& state) { return Model::hash(state); }
  template <class Output>
  static bool output_matches(const Output& a, const Output& b) { return Model::output_matches(a, b); }
  template <class Input, class Output>
  static std::string describe(const Input& input, const Output& output) { return Model::describe(input, output); }
};

// ---------------------------------------------------------------- checking one history

enum class PartitionStatus { Linearizable, NotLinearizable, OutOfBudget, TimedOut, Cancelled };

struct PartitionOutcome {
  PartitionStatus status = PartitionStatus::Cancelled;
  std::uint64_t steps = 0;
  std::vector<std::size_t> window;  // indices into the history (NotLinearizable)
  bool minimal = true;
};

// One failing key partition and its shortest failing window.
struct Failure {
  std::string key;
  std::size_t partition_ops = 0;
  std::vector<nlohmann::json> window_json;
  std::vector<std::string> window_text;
  bool minimal = true;
};

struct FileReport {
  std::string file;
  std::string format;
  std::string model;
  lin::Verdict verdict = lin::Verdict::Linearizable;
  std::size_t ops = 0;
  std::size_t partitions = 0;
  std::uint64_t steps = 0;
  double elapsed_ms = 0;
  std::vector<Failure> failures;  // every failing partition, in key order
  std::optional<lethe::QueueVerdict> queue;  // total-queue: the counts instead of partitions
  std::vector<std::pair<std::string, std::string>> unknown;  // key, why
  std::optional<reports::HistoryPage> page;                  // --html, when not linearizable or linearizable
};

// ---------------------------------------------------------------- the longest linearizable prefix (--html)

// Steps of the prefix search (runner/check_prefix.hpp): a sequential window of 200,000 operations takes about 600,000.
constexpr std::uint64_t kPrefixSteps = 20'000'000;

std::string state_text(const lethe::StoreState& state) {
  std::string text = "{";
  for (const auto& [key, item] : state) text += fmt::format("{}{}: {}", text.size() > 1 ? ", " : "", lethe::key_text(key), lethe::describe(std::optional<lethe::Item>(item)));
  return text + "}";
}
template <class State>
std::string state_text(const State& state) {
  if constexpr (std::is_same_v<State, std::string>) {
    return lethe::KvModel::describe_state(state);
  } else if constexpr (std::is_same_v<State, lethe::ObjectState>) {
    return lethe::ObjectModel::describe_state(state);
  } else {
    return lethe::RegisterModel::describe_state(state);
  }
}

// An output of which nothing was observed: what an operation whose outcome is unknown is described with.
lethe::RegisterOutput unobserved(const lethe::RegisterOutput&) { return lethe::RegisterOutput{false, std::nullopt, true}; }
lethe::KvOutput unobserved(const lethe::KvOutput&) { return lethe::KvOutput{false, ""}; }
lethe::ObservedReply unobserved(const lethe::ObservedReply&) { return lethe::ObservedReply{lethe::Reply{}, false, false}; }
lethe::ObjectOutput unobserved(const lethe::ObjectOutput& output) { return output; }

template <class Model, class Input, class Output>
std::string describe_op(const lin::Operation<Input, Output>& op) {
  if (op.returned_at != lin::kNever) return Model::describe(op.input, op.output);
  return Model::describe(op.input, unobserved(op.output)) + " (outcome unknown)";
}

template <class Input, class Output>
std::string key_name(const history::History<Input, Output>& recorded, std::uint64_t key) {
  if (recorded.raw_keys) return lethe::key_text(key);
  return recorded.key_names.at(key);  // "" for a Jepsen history without keys
}

template <class Input, class Output>
std::string partition_name(const history::History<Input, Output>& recorded, const lin::detail::Partition& partition) {
  if (!recorded.raw_keys && recorded.key_names.size() == 1 && recorded.key_names.front().empty()) {
    return "(none: one register)";
  }
  std::string text;
  for (std::size_t index = 0; index < partition.keys.size() && index < 8; ++index) {
    text += (index == 0 ? "" : ", ") + key_name(recorded, partition.keys[index]);
  }
  if (partition.keys.size() > 8) text += fmt::format(", ... ({} keys)", partition.keys.size());
  return text;
}

std::string instant(bool timed, lin::Time at, std::size_t line) {
  if (at == lin::kNever) return line == 0 ? "no response" : fmt::format("line {}: unknown outcome", line);
  return timed ? sim::format_human(at) : fmt::format("line {}", line);
}

// When an operation was invoked and answered; the initial value (--initial) has no line.
std::string when(bool timed, const lin::Time invoked_at, lin::Time returned_at, const history::OpOrigin& origin) {
  if (origin.invoke_line == 0) return "initial value";
  return fmt::format("{}, {}", instant(timed, invoked_at, origin.invoke_line), instant(timed, returned_at, origin.return_line));
}

template <class Model, class Input, class Output>
PartitionOutcome check_partition(const history::History<Input, Output>& recorded, const lin::detail::Partition& partition,
                                 std::uint64_t budget) {
  std::vector<lin::Operation<Input, Output>> ops;
  ops.reserve(partition.ops.size());
  for (std::size_t index : partition.ops) ops.push_back(recorded.ops[index]);
  const lin::Result result = lin::check<Stoppable<Model>, Input, Output>(ops, budget);
  PartitionOutcome outcome;
  outcome.steps = result.steps;
  switch (result.verdict) {
    case lin::Verdict::Linearizable: outcome.status = PartitionStatus::Linearizable; break;
    case lin::Verdict::Unknown: outcome.status = PartitionStatus::OutOfBudget; break;
    case lin::Verdict::NotLinearizable:
      outcome.status = PartitionStatus::NotLinearizable;
      for (std::size_t index : result.offending_ops) outcome.window.push_back(partition.ops[index]);
      outcome.minimal = result.explanation.find("Not proven shortest") == std::string::npos;
      break;
  }
  return outcome;
}

// Checks partitions[index] for each of `which` on up to options.jobs threads with `budget` steps each. Every
// partition is decided (a failing one cancels none: each failing key is reported), so the outcome does not depend
// on the threads' timing; only the deadline stops a search early.
template <class Model, class Input, class Output>
void check_partitions(const history::History<Input, Output>& recorded,
                      const std::vector<lin::detail::Partition>& partitions, const std::vector<std::size_t>& which,
                      std::uint64_t budget, unsigned jobs, std::optional<Clock::time_point> deadline,
                      std::vector<PartitionOutcome>& outcomes) {
  std::atomic<std::size_t> next{0};
  std::mutex error_mutex;
  std::string error;
  auto work = [&] {
    while (true) {
      const std::size_t slot = next.fetch_add(1);
      if (slot >= which.size()) return;
      const std::size_t index = which[slot];
      StopContext stop{index, deadline, 0};
      current_stop = &stop;
      PartitionOutcome outcome;
      try {
        outcome = check_partition<Model>(recorded, partitions[index], budget);
      } catch (const TimedOut&) {
        outcome.status = PartitionStatus::TimedOut;
      } catch (const std::exception& e) {
        const std::lock_guard lock(error_mutex);
        if (error.empty()) error = e.what();
      }
      current_stop = nullptr;
      outcome.steps += outcomes[index].steps;  // an earlier round's steps count too
      outcomes[index] = std::move(outcome);
    }
  };
  const unsigned threads = std::max(1U, std::min<unsigned>(jobs, static_cast<unsigned>(which.size())));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& thread : pool) thread.join();
  if (!error.empty()) throw std::runtime_error(error);
}

template <class Model, class Input, class Output>
reports::HistoryPage page_of(const history::History<Input, Output>& recorded, const lin::detail::Partition& partition,
                             const std::vector<std::size_t>& window) {
  reports::HistoryPage page;
  page.key = partition_name(recorded, partition);
  page.timed = recorded.timed;
  page.initial_state = state_text(Model::initial());
  std::map<std::size_t, std::size_t> drawn;  // history index -> index into page.ops
  std::vector<bool> in_window(recorded.ops.size(), false);  // not a search of the window per op: windows are long
  for (std::size_t index : window) in_window[index] = true;
  for (std::size_t index : partition.ops) {
    const auto& op = recorded.ops[index];
    const history::OpOrigin& origin = recorded.origins[index];
    reports::HistoryPageOp entry;
    entry.process = op.client;
    if (!op.keys.empty()) entry.key = key_name(recorded, op.keys.front());
    entry.invoked_at = op.invoked_at;
    entry.answered = op.returned_at != lin::kNever;
    entry.returned_at = entry.answered ? op.returned_at : op.invoked_at;
    entry.when = fmt::format("[{}, {}]", instant(recorded.timed, op.invoked_at, origin.invoke_line),
                             instant(recorded.timed, op.returned_at, origin.return_line));
    entry.text = describe_op<Model>(op);
    entry.in_window = in_window[index];
    entry.failing = !window.empty() && index == window.back();
    drawn.emplace(index, page.ops.size());
    page.ops.push_back(std::move(entry));
  }
  std::vector<const lin::Operation<Input, Output>*> ops;
  for (std::size_t index : window) ops.push_back(&recorded.ops[index]);
  const auto prefix = prefix::longest_prefix<Model>(ops, kPrefixSteps);
  for (const auto& [position, state] : prefix.steps) {
    page.prefix.push_back(reports::HistoryPageStep{drawn.at(window[position]), state_text(state)});
  }
  page.prefix_note = prefix.note;
  if (!window.empty()) {
    const auto state = prefix.steps.empty() ? Model::initial() : prefix.steps.back().second;
    const auto& failing = recorded.ops[window.back()];
    page.state_before_failing = state_text(state);
    page.model_answer = Model::describe(failing.input, Model::step(state, failing.input).second);
    page.recorded_answer = describe_op<Model>(failing);
  }
  return page;
}

// The page of a linearizable history: every operation of every partition, no window.
template <class Model, class Input, class Output>
reports::HistoryPage whole_page(const history::History<Input, Output>& recorded,
                                const std::vector<lin::detail::Partition>& partitions) {
  lin::detail::Partition all;
  for (const lin::detail::Partition& partition : partitions) all.keys.insert(all.keys.end(), partition.keys.begin(), partition.keys.end());
  std::sort(all.keys.begin(), all.keys.end());
  all.ops.resize(recorded.ops.size());
  for (std::size_t index = 0; index < all.ops.size(); ++index) all.ops[index] = index;
  reports::HistoryPage page = page_of<Model>(recorded, all, {});
  page.linearizable = true;
  return page;
}

// The first round's budget per partition: a violation usually shows within it, and a hard linearizable partition
// (or one that needs the whole budget) does not hold up a failing one found in another partition.
constexpr std::uint64_t kFirstRoundSteps = 1U << 17;

template <class Model, class Input, class Output>
Failure failure_of(const history::History<Input, Output>& recorded, const lin::detail::Partition& partition,
                   const PartitionOutcome& outcome) {
  Failure failure;
  failure.key = partition_name(recorded, partition);
  failure.partition_ops = partition.ops.size();
  failure.minimal = outcome.minimal;
  for (std::size_t index : outcome.window) {
    const auto& op = recorded.ops[index];
    const history::OpOrigin& origin = recorded.origins[index];
    const std::string described = describe_op<Model>(op);
    failure.window_text.push_back(fmt::format("process {:<3} [{}]  {}", op.client,
                                              when(recorded.timed, op.invoked_at, op.returned_at, origin), described));
    nlohmann::json entry{{"process", op.client}, {"invoke_line", origin.invoke_line}, {"op", described}};
    if (origin.invoke_line == 0) entry["initial"] = true;
    if (origin.return_line != 0) entry["return_line"] = origin.return_line;
    if (recorded.timed) entry["invoked_at"] = op.invoked_at;
    if (recorded.timed && op.returned_at != lin::kNever) entry["returned_at"] = op.returned_at;
    entry["answered"] = op.returned_at != lin::kNever;
    failure.window_json.push_back(std::move(entry));
  }
  return failure;
}

// Round 1: every partition with a small step budget; round 2, with the whole budget: the failing ones whose
// window is not proven shortest, and, when none failed, those round 1 left undecided. Both budgets count steps, not time, so the verdicts do not
// depend on the threads' timing.
template <class Model, class Input, class Output>
void run_rounds(const history::History<Input, Output>& recorded, const std::vector<lin::detail::Partition>& partitions,
                const CheckOptions& options, std::optional<Clock::time_point> deadline, std::vector<PartitionOutcome>& outcomes) {
  std::vector<std::size_t> which(partitions.size());
  for (std::size_t index = 0; index < which.size(); ++index) which[index] = index;
  const std::uint64_t first_budget = std::min(options.budget, kFirstRoundSteps);
  check_partitions<Model>(recorded, partitions, which, first_budget, options.jobs, deadline, outcomes);
  if (first_budget >= options.budget) return;
  // Once a key has failed, the undecided ones stay undecided (the verdict is known; deciding them could take the
  // whole budget each): only failing windows not yet proven shortest get the whole budget.
  const bool failed = std::any_of(outcomes.begin(), outcomes.end(), [](const PartitionOutcome& outcome) {
    return outcome.status == PartitionStatus::NotLinearizable;
  });
  which.clear();
  for (std::size_t index = 0; index < outcomes.size(); ++index) {
    const PartitionOutcome& outcome = outcomes[index];
    if ((outcome.status == PartitionStatus::OutOfBudget && !failed) ||
        (outcome.status == PartitionStatus::NotLinearizable && !outcome.minimal)) {
      which.push_back(index);
    }
  }
  if (!which.empty()) check_partitions<Model>(recorded, partitions, which, options.budget, options.jobs, deadline, outcomes);
}

template <class Model, class Input, class Output>
FileReport check_history(const history::History<Input, Output>& recorded, const CheckOptions& options,
                         std::optional<Clock::time_point> deadline) {
  const auto started = Clock::now();
  FileReport report;
  report.ops = recorded.ops.size();
  const std::vector<lin::detail::Partition> partitions = lin::detail::partition_by_key(recorded.ops);
  report.partitions = partitions.size();
  std::vector<PartitionOutcome> outcomes(partitions.size());
  run_rounds<Model>(recorded, partitions, options, deadline, outcomes);
  for (const PartitionOutcome& outcome : outcomes) report.steps += outcome.steps;
  report.elapsed_ms = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
  std::optional<std::size_t> first_failed;
  for (std::size_t index = 0; index < outcomes.size(); ++index) {
    const PartitionOutcome& outcome = outcomes[index];
    const std::string key = partition_name(recorded, partitions[index]);
    if (outcome.status == PartitionStatus::NotLinearizable) {
      if (!first_failed) first_failed = index;
      report.failures.push_back(failure_of<Model>(recorded, partitions[index], outcome));
    } else if (outcome.status == PartitionStatus::OutOfBudget) {
      report.unknown.emplace_back(key, outcome.steps < options.budget
                                           ? fmt::format("not decided in the first round ({} steps); not searched "
                                                         "further once a key failed", kFirstRoundSteps)
                                           : fmt::format("the step budget of {} ran out", options.budget));
    } else if (outcome.status == PartitionStatus::TimedOut || outcome.status == PartitionStatus::Cancelled) {
      report.unknown.emplace_back(key, fmt::format("the timeout of {} ran out", options.timeout));
    }
  }
  if (first_failed) {
    report.verdict = lin::Verdict::NotLinearizable;
    if (!options.html.empty()) report.page = page_of<Model>(recorded, partitions[*first_failed], outcomes[*first_failed].window);
    return report;
  }
  if (!report.unknown.empty()) report.verdict = lin::Verdict::Unknown;
  if (report.verdict == lin::Verdict::Linearizable && !options.html.empty()) report.page = whole_page<Model>(recorded, partitions);
  return report;
}

// ---------------------------------------------------------------- output

std::string queue_lines(std::string_view name, const std::vector<lethe::QueueCount>& counts, std::string_view what) {
  if (counts.empty()) return "";
  std::string text = fmt::format("  {} {} ({}):\n", counts.size(), name, what);
  for (std::size_t index = 0; index < counts.size() && index < 50; ++index) {
    const lethe::QueueCount& count = counts[index];
    text += fmt::format("    {}{} (line {})\n", count.value, count.count > 1 ? fmt::format(" x{}", count.count) : "", count.line);
  }
  if (counts.size() > 50) text += fmt::format("    ... {} more (--json lists every one)\n", counts.size() - 50);
  return text;
}

std::string queue_text(const FileReport& report) {
  const lethe::QueueVerdict& queue = *report.queue;
  std::string text = fmt::format("{}: {} ({}, total-queue model: {} enqueues attempted, {} acknowledged, {} dequeued)\n",
                                 report.file, queue.valid ? "valid" : "not valid", report.format, queue.attempted,
                                 queue.acknowledged, queue.dequeued);
  text += queue_lines("lost", queue.lost, "acknowledged, never dequeued");
  text += queue_lines("unexpected", queue.unexpected, "dequeued more often than enqueued");
  text += queue_lines("duplicated", queue.duplicated, "dequeued more than once; extra copies");
  text += queue_lines("recovered", queue.recovered, "enqueue outcome unknown, dequeued");
  return text;
}

std::string text_of(const FileReport& report) {
  if (report.queue) return queue_text(report);
  const std::string what = fmt::format("{}, {} model, {} ops, {} {}", report.format, report.model, report.ops,
                                       report.partitions, report.partitions == 1 ? "partition" : "partitions");
  if (report.verdict == lin::Verdict::Linearizable && report.ops == 0) {
    // Knossos calls such a history valid; say that nothing was there to order, not that an order was found.
    return fmt::format("{}: linearizable ({}): no client operation that took or may have taken effect (nemesis ops "
                       "and :fail ops are not operations), so there was nothing to order\n", report.file, what);
  }
  if (report.verdict == lin::Verdict::Linearizable) return fmt::format("{}: linearizable ({})\n", report.file, what);
  std::string text;
  if (report.verdict == lin::Verdict::Unknown) {
    text = fmt::format("{}: unknown ({}): no partition failed, {} not decided:\n", report.file, what, report.unknown.size());
  } else {
    text = fmt::format("{}: not linearizable ({}): {} failing {}\n", report.file, what, report.failures.size(),
                       report.failures.size() == 1 ? "key" : "keys");
  }
  for (const Failure& failure : report.failures) {
    text += fmt::format("  key {} ({} ops): the shortest failing window, {} ops by invocation (ops invoked later count "
                        "as unanswered):\n", failure.key, failure.partition_ops, failure.window_text.size());
    for (const std::string& line : failure.window_text) text += "    " + line + "\n";
    text += "  No order of these operations that respects real time explains every response";
    text += failure.minimal ? "; without the response of the last one they can be explained.\n"
                            : " (not proven shortest: the step budget for shrinking ran out).\n";
  }
  if (!report.unknown.empty() && report.verdict != lin::Verdict::Unknown) text += fmt::format("  {} keys not decided:\n", report.unknown.size());
  for (const auto& [key, why] : report.unknown) text += fmt::format("  key {}: {}\n", key, why);
  if (!report.unknown.empty()) text += "  (raise --budget or --timeout)\n";
  return text;
}

nlohmann::json queue_json(const std::vector<lethe::QueueCount>& counts) {
  nlohmann::json list = nlohmann::json::array();
  for (const lethe::QueueCount& count : counts) list.push_back({{"value", count.value}, {"count", count.count}, {"line", count.line}});
  return list;
}

nlohmann::json json_of(const FileReport& report) {
  if (report.queue) {
    const lethe::QueueVerdict& queue = *report.queue;
    return nlohmann::json{{"file", report.file}, {"format", report.format}, {"model", report.model},
                          {"verdict", queue.valid ? "valid" : "not valid"}, {"attempted", queue.attempted},
                          {"acknowledged", queue.acknowledged}, {"dequeued", queue.dequeued},
                          {"lost", queue_json(queue.lost)}, {"unexpected", queue_json(queue.unexpected)},
                          {"duplicated", queue_json(queue.duplicated)}, {"recovered", queue_json(queue.recovered)}};
  }
  nlohmann::json object{{"file", report.file},         {"format", report.format},
                        {"model", report.model},       {"verdict", std::string(lin::to_string(report.verdict))},
                        {"ops", report.ops},           {"partitions", report.partitions},
                        {"steps", report.steps},       {"elapsed_ms", report.elapsed_ms}};
  if (!report.failures.empty()) {
    nlohmann::json failing = nlohmann::json::array();
    for (const Failure& failure : report.failures) {
      failing.push_back(nlohmann::json{{"key", failure.key}, {"partition_ops", failure.partition_ops},
                                       {"window", failure.window_json}, {"minimal", failure.minimal}});
    }
    object["failing"] = failing.front();  // the first failing key, as before
    object["failing_keys"] = std::move(failing);
  }
  if (!report.unknown.empty()) {
    nlohmann::json unknown = nlohmann::json::array();
    for (const auto& [key, why] : report.unknown) unknown.push_back({{"key", key}, {"why", why}});
    object["unknown"] = std::move(unknown);
  }
  return object;
}

// ---------------------------------------------------------------- the command

template <class Kind, std::size_t N>
std::optional<Kind> parse_kind(const std::string& text, const Kind (&kinds)[N]) {
  for (Kind kind : kinds) {
    if (history::to_string(kind) == text) return kind;
  }
  return std::nullopt;
}

template <class Kind, std::size_t N>
std::string allowed(const Kind (&kinds)[N]) {
  std::string text;
  for (Kind kind : kinds) text += (text.empty() ? "" : ", ") + std::string(history::to_string(kind));
  return text;
}

int exit_code_of(lin::Verdict verdict) {
  switch (verdict) {
    case lin::Verdict::Linearizable: return kExitOk;
    case lin::Verdict::NotLinearizable: return kExitExpectation;
    case lin::Verdict::Unknown: return kExitUnknown;
  }
  return kExitInternal;
}

// The worst of two exit codes: internal error, bad input, not linearizable, unknown, linearizable.
int worse(int a, int b) {
  auto rank = [](int code) {
    switch (code) {
      case kExitInternal: return 4;
      case kExitBadInput: return 3;
      case kExitExpectation: return 2;
      case kExitUnknown: return 1;
      default: return 0;
    }
  };
  return rank(a) >= rank(b) ? a : b;
}

// Histories are read whole; Porcupine's largest is under 1 MiB.
constexpr std::uintmax_t kMaxHistoryBytes = std::uintmax_t{1} << 30;

FileReport judge(const history::QueueHistory& recorded, const CheckOptions&, std::optional<Clock::time_point>) {
  FileReport report;
  report.queue = lethe::judge_total_queue(recorded);
  report.ops = recorded.attempted.size() + recorded.dequeued.size();
  report.verdict = report.queue->valid ? lin::Verdict::Linearizable : lin::Verdict::NotLinearizable;
  return report;
}

FileReport judge(const history::RegisterHistory& recorded, const CheckOptions& options, std::optional<Clock::time_point> deadline) {
  return check_history<lethe::RegisterModel>(recorded, options, deadline);
}
FileReport judge(const history::KvHistory& recorded, const CheckOptions& options, std::optional<Clock::time_point> deadline) {
  return check_history<lethe::KvModel>(recorded, options, deadline);
}
FileReport judge(const history::StoreHistory& recorded, const CheckOptions& options, std::optional<Clock::time_point> deadline) {
  return check_history<lethe::ObservedStoreModel>(recorded, options, deadline);
}
FileReport judge(const history::ObjectHistory& recorded, const CheckOptions& options, std::optional<Clock::time_point> deadline) {
  return check_history<lethe::ObjectModel>(recorded, options, deadline);
}

int check_file(const std::string& file, history::Format format, history::ModelKind model, const CheckOptions& options,
               std::optional<Clock::time_point> deadline) {
  // Through read_regular_file: a FIFO would block and a device never end.
  sim::FileReadFailure failure;
  const std::optional<std::string> content = sim::read_regular_file(file, kMaxHistoryBytes, failure);
  if (!content) {
    std::cerr << fmt::format("lethe check: {}: {}; allowed: a regular file of at most {} MiB\n", file,
                             sim::describe(failure, kMaxHistoryBytes), kMaxHistoryBytes >> 20);
    return kExitBadInput;
  }
  const std::string& text = *content;
  FileReport report;
  try {
    history::Options read{format, model, options.initial, history::Independent::Auto};
    read.format = format == history::Format::Auto ? history::detect_format(file, text) : format;
    const history::AnyHistory recorded = history::read_history(file, text, read);
    report = std::visit([&](const auto& h) { return judge(h, options, deadline); }, recorded);
    report.format = std::string(history::to_string(read.format));
    report.model = std::string(history::to_string(history::model_of(recorded)));
  } catch (const history::Error& e) {
    std::cerr << "lethe check: " << e.what() << "\n";
    return kExitBadInput;
  }
  report.file = file;
  if (!options.html.empty()) {
    if (!report.page) {
      std::cerr << fmt::format("lethe check: --html: {} is {}: there is nothing to draw\n", file,
                               lin::to_string(report.verdict));
    } else {
      report.page->file = file;
      report.page->summary = text_of(report).substr(0, text_of(report).find('\n'));
      report.page->summary.erase(0, file.size() + 2);
      report.page->explanation = text_of(report);
      if (const auto error = reports::write_file(options.html, reports::history_page_html(*report.page)); !error.empty()) {
        std::cerr << "lethe check: " << error << "\n";
        return kExitBadInput;
      }
    }
  }
  std::cout << (options.json ? json_of(report).dump() + "\n" : text_of(report));
  return exit_code_of(report.verdict);
}

int command_check(const CheckOptions& options) {
  if (options.events) {
    if (options.format != "auto" || options.model != "auto" || !options.timeout.empty() || options.initial) {
      std::cerr << "lethe check: --events judges event logs: --format, --model, --initial and --timeout apply to "
                   "histories only\n";
      return kExitBadInput;
    }
    return check_events(CheckEventsOptions{options.files, options.json, options.html});
  }
  const auto format = parse_kind(options.format, history::kFormats);
  if (!format) {
    std::cerr << fmt::format("lethe check: --format {}: allowed: {}\n", options.format, allowed(history::kFormats));
    return kExitBadInput;
  }
  const auto model = parse_kind(options.model, history::kModels);
  if (!model) {
    std::cerr << fmt::format("lethe check: --model {}: allowed: {}\n", options.model, allowed(history::kModels));
    return kExitBadInput;
  }
  if (!options.html.empty() && options.files.size() != 1) {
    std::cerr << fmt::format("lethe check: --html draws one history: give one FILE ({} given)\n", options.files.size());
    return kExitBadInput;
  }
  if (options.budget == 0) {
    std::cerr << "lethe check: --budget 0: expected at least 1 step\n";
    return kExitBadInput;
  }
  std::optional<Clock::time_point> deadline;
  if (!options.timeout.empty()) {
    std::string error;
    const auto timeout = sim::parse_duration(options.timeout, error);
    if (!timeout) {
      std::cerr << fmt::format("lethe check: --timeout {}: {}\n", options.timeout, error);
      return kExitBadInput;
    }
    deadline = Clock::now() + std::chrono::nanoseconds(*timeout);
  }
  CheckOptions resolved = options;
  if (resolved.jobs == 0) resolved.jobs = default_jobs();  // the CPUs this process may run on, as the other commands
  int code = kExitOk;
  for (const std::string& file : options.files) code = worse(code, check_file(file, *format, *model, resolved, deadline));
  return code;
}

}  // namespace

ExtraCommand register_check(CLI::App& app) {
  auto options = std::make_shared<CheckOptions>();
  auto* command = app.add_subcommand(
      "check", "Check recorded histories for linearizability (exit 0 yes, 1 no, 2 bad input, 3 internal, 4 unknown), "
               "or with --events judge a consumer's dedupe events (exit 0 effectively once, 1 not)");
  command->add_option("FILE", options->files, "History files (lethe JSON lines, Jepsen EDN, Jepsen log or history.txt)")->required();
  command->add_option("--format", options->format, "auto (default), lethe, jepsen-edn, jepsen-log, jepsen-txt");
  command->add_option("--model", options->model,
                      "auto (default: store for lethe files, else from the ops), store, register, cas-register, "
                      "etcd-register, kv, multi-register, mutex, set, unordered-queue, fifo-queue, total-queue");
  command->add_option("--initial", options->initial,
                      "The initial value of every key, as EDN (default nil; Knossos's cas-register tests use 0)");
  command->add_option("-j,--jobs", options->jobs, "Threads checking partitions (default: the CPUs lethe may run on)")->check(CLI::Range(0, 1024));
  command->add_option("--budget", options->budget, "Search steps per partition before it is unknown (default 10000000)");
  command->add_option("--timeout", options->timeout, "Wall-clock limit for all files, as a duration (5s, 500ms)");
  command->add_flag("--json", options->json, "One JSON object per file");
  command->add_option("--html", options->html, "Draw the (one) FILE as a self-contained page: its failing window, or every operation when linearizable");
  command->add_flag("--events", options->events,
                    "FILE... are a consumer's dedupe events (JSON lines): judge them as lethe run judges a run");
  return {command, [options] { return command_check(*options); }};
}

}  // namespace runner
