#include "runner/check_events.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <iostream>
#include <optional>

#include "check/events.hpp"
#include "protocol/registry.hpp"
#include "reports/incident.hpp"
#include "reports/timeline.hpp"
#include "reports/json.hpp"
#include "reports/output_file.hpp"
#include "reports/summary.hpp"
#include "runner/command.hpp"
#include "runner/replay.hpp"
#include "sim/regular_file.hpp"

namespace runner {

namespace {

namespace events = lethe::events;

// The files opened, to be read a line at a time (a log may be larger than memory), or nullopt after naming the
// one that cannot be opened.
std::optional<std::vector<sim::LineFile>> open_files(const std::vector<std::string>& files) {
  std::vector<sim::LineFile> opened;
  for (const std::string& file : files) {
    sim::FileReadFailure failure;
    std::optional<sim::LineFile> lines = sim::LineFile::open(file, failure);
    if (!lines) {
      std::cerr << fmt::format("lethe check: {}: {}; allowed: a regular file\n", file, sim::describe(failure, 0));
      return std::nullopt;
    }
    opened.push_back(std::move(*lines));
  }
  return opened;
}

constexpr std::size_t kMessagesDrawn = 5;

// The trace records the incident page draws (reports/timeline.hpp), as the events give them: deliveries as
// attempts, decisions, outcomes, the provider's executions (on a node "provider"), acknowledgments, crashes,
// restarts and pauses. Sorted by time, ties in that order.
struct DrawnTrace {
  std::vector<sim::TraceRecord> records;
  std::vector<std::string> node_names;
};

DrawnTrace trace_of(const events::EventLog& log) {
  DrawnTrace out{{}, log.nodes};
  const auto provider = static_cast<std::uint32_t>(out.node_names.size());
  out.node_names.emplace_back("provider");
  const auto add = [&out](sim::Time at, std::string_view kind, std::uint32_t node, std::uint64_t a, std::uint64_t b,
                          std::uint64_t c) { out.records.push_back(sim::TraceRecord{at, 0, kind, node, a, b, c, {}, {}}); };
  log.ledger.attempts.for_each([&](const lethe::AttemptRecord& r) {
    add(log.delivered_at.at(r.attempt), "attempt", r.node, r.id, r.processor, r.attempt);
    if (const auto d = log.ledger.process_decision(r)) add(d->at, "decision", r.node, r.id, r.attempt, static_cast<std::uint64_t>(d->basis));
    if (r.ended_at && r.outcome >= 0) add(*r.ended_at, "outcome", r.node, r.id, r.attempt, static_cast<std::uint64_t>(r.outcome));
  });
  for (const auto& e : log.ledger.executions) add(e.at, "sink.execute", provider, e.id, e.attempt, e.value);
  for (const auto& a : log.acks) add(a.at, "ack", a.node, a.id, a.processor, a.accepted ? 1 : 0);
  for (const auto& n : log.node_events) {
    if (n.kind == events::NodeEventKind::Skew) continue;
    add(n.at, events::to_string(n.kind), n.node, static_cast<std::uint64_t>(n.amount), 0, 0);
  }
  std::stable_sort(out.records.begin(), out.records.end(),
                   [](const sim::TraceRecord& x, const sim::TraceRecord& y) { return x.time < y.time; });
  return out;
}

std::string page_of(const CheckEventsOptions& options, const events::EventLog& log, const lethe::RunResult& result) {
  const DrawnTrace drawn = trace_of(log);
  std::string command = "lethe check --events";
  for (const std::string& file : options.files) command += " " + file;
  reports::IncidentInput input{result, {}, drawn.node_names, command, /*from_events=*/true};
  std::vector<std::uint64_t> ids;
  for (const auto& x : result.explanations) {
    if (ids.size() == kMessagesDrawn) break;
    if (std::find(ids.begin(), ids.end(), x.id) == ids.end()) ids.push_back(x.id);
  }
  for (const std::uint64_t id : ids) {
    input.stories.push_back(reports::message_story(drawn.records, drawn.node_names, id, result.explanations));
  }
  return reports::incident_html(input);
}

bool clean(const lethe::RunResult& r) {
  return r.duplicate_effects == 0 && r.lost_messages == 0 && r.memo_mismatches == 0;
}

void print_text(const lethe::RunResult& result, const std::vector<std::string>& limits) {
  std::cout << reports::run_summary(result, /*live=*/true);
  std::cout << "  what these events cannot tell apart:\n";
  for (const std::string& limit : limits) std::cout << "    - " << limit << "\n";
  if (result.duplicate_effects > 0 || result.memo_mismatches > 0) print_explanations(ExplainSelection{}, result);
}

}  // namespace

int check_events(const CheckEventsOptions& options) {
  if (!options.html.empty() && !options.html.ends_with(".html")) {
    std::cerr << fmt::format("lethe check: --html {}: the incident page is HTML; name it .html\n", options.html);
    return kExitBadInput;
  }
  const auto opened = open_files(options.files);
  if (!opened) return kExitBadInput;
  std::vector<events::EventFile> files;
  for (std::size_t i = 0; i < options.files.size(); ++i) files.push_back({options.files[i], {}, &(*opened)[i]});
  events::EventLog log;
  lethe::RunResult result;
  try {
    log = events::read_events(files, /*fold=*/options.html.empty());  // the page draws every attempt
    result = events::judge_events(log);
  } catch (const lethe::history::Error& e) {
    std::cerr << "lethe check: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const lethe::StrategyContractError& e) {
    std::cerr << "lethe check: " << e.what() << "\n";
    return kExitExpectation;
  }
  result.ok = clean(result);
  const std::vector<std::string> limits = events::limits_of(log, result);
  if (!options.html.empty()) {
    if (const auto error = reports::write_file(options.html, page_of(options, log, result));
        !error.empty()) {
      std::cerr << "lethe check: " << error << "\n";
      return kExitBadInput;
    }
  }
  if (options.json) {
    nlohmann::ordered_json json = reports::to_json(result);
    json["cannot_tell_apart"] = limits;
    std::cout << json.dump() << "\n";
  } else {
    print_text(result, limits);
  }
  return clean(result) ? kExitOk : kExitExpectation;
}

}  // namespace runner
