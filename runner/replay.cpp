#include "runner/replay.hpp"

#include "runner/events.hpp"

#include <algorithm>
#include <cstdlib>
#include <fmt/format.h>
#include <iostream>
#include <memory>
#include <optional>

#include "reports/incident.hpp"
#include "reports/output_file.hpp"
#include "reports/summary.hpp"
#include "reports/timeline.hpp"
#include "runner/command_line.hpp"
#include "runner/execute.hpp"
#include "runner/verify.hpp"
#include "scenario/loader.hpp"

namespace runner {

namespace {

constexpr std::size_t kDefaultLimit = 1000;
constexpr std::size_t kMessagesDrawn = 10;  // an incident page without --message draws this many duplicated messages

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

struct ReplayOptions {
  std::string file;
  std::uint64_t seed = 1;
  std::vector<std::string> sets;
  std::optional<std::uint64_t> message;
  bool explain = false;
  std::optional<std::string> cause;
  std::optional<std::size_t> limit;
  std::string dot_path;
  std::string html_path;
  std::string trace_path;
  std::string events_path;
  bool verify = false;
  std::optional<std::size_t> verify_limit;
};

// Refuses what cannot work before the seed runs: a wrong extension, an unknown cause, a selection without
// --explain. "" when everything is usable.
std::string options_error(const ReplayOptions& o) {
  if (!o.dot_path.empty()) {
    if (auto error = dot_path_error(o.dot_path); !error.empty()) return error;
  }
  if (!o.html_path.empty() && !ends_with(o.html_path, ".html") && !ends_with(o.html_path, ".htm")) {
    return fmt::format("--html {}: the incident page is HTML; name it .html", o.html_path);
  }
  if ((o.cause || o.limit) && !o.explain) {
    return fmt::format("{} selects what --explain prints: add --explain", o.cause ? "--cause" : "--limit");
  }
  if (o.cause) {
    std::string allowed;
    for (const auto& row : lethe::kCauses) {
      if (row.name == *o.cause) return "";
      allowed += (allowed.empty() ? "" : ", ") + std::string(row.name);
    }
    return fmt::format("--cause {}: not a duplicate cause (allowed: {})", *o.cause, allowed);
  }
  if (o.limit && *o.limit == 0) return "--limit 0: give at least 1 (how many explanations to print)";
  if (o.verify_limit && !o.verify) return "--verify-limit bounds what --verify replays: add --verify";
  if (o.verify_limit && *o.verify_limit == 0) {
    return "--verify-limit 0: give at least 1 (duplicates replayed per cause)";
  }
  return "";
}

std::optional<lethe::ScenarioConfig> load(const ReplayOptions& o) {
  auto loaded = scenario::load_scenario(o.file, o.sets);
  if (auto* errors = std::get_if<std::vector<scenario::LoadError>>(&loaded)) {
    for (const auto& e : *errors) std::cerr << e.message << "\n";
    return std::nullopt;
  }
  return std::get<lethe::ScenarioConfig>(std::move(loaded));
}

// The messages an incident page draws: the one asked for, or the first duplicated ones.
std::vector<std::uint64_t> messages_to_draw(const ReplayOptions& o, const lethe::RunResult& result) {
  if (o.message) return {*o.message};
  std::vector<std::uint64_t> ids;
  for (const auto& x : result.explanations) {
    if (ids.size() == kMessagesDrawn) break;
    if (std::find(ids.begin(), ids.end(), x.id) == ids.end()) ids.push_back(x.id);
  }
  return ids;
}

int write_html(const ReplayOptions& o, const lethe::RunResult& result, const lethe::WorldRecord& record) {
  reports::IncidentInput input{result, {}, record.node_names, replay_command(o.file, o.seed, o.sets)};
  for (const std::uint64_t id : messages_to_draw(o, result)) {
    input.stories.push_back(reports::message_story(record.trace, record.node_names, id, result.explanations));
  }
  if (const auto error = reports::write_file(o.html_path, reports::incident_html(input)); !error.empty()) {
    std::cerr << "lethe replay: " << error << "\n";
    return kExitBadInput;
  }
  std::string drawn;
  for (const auto& s : input.stories) drawn += (drawn.empty() ? "" : ", ") + std::to_string(s.message);
  std::cout << fmt::format("incident page: {} ({})\n", o.html_path,
                           drawn.empty() ? "no duplicates to draw" : "message " + drawn);
  return kExitOk;
}

// --explain, after the duplicates: why callers were handed a value other than the first execution's.
std::string memo_mismatches_text(const ExplainSelection& o, const lethe::RunResult& r, std::size_t limit) {
  if (r.memo_mismatches == 0 || o.cause) return "";
  std::string text = fmt::format("\nwhy callers got another value than the first execution's: {} memo mismatches\n",
                                 r.memo_mismatches);
  std::size_t selected = 0;
  std::size_t shown = 0;
  for (const auto& x : r.memo_explanations) {
    if (o.message && x.id != *o.message) continue;
    ++selected;
    if (shown == limit) continue;
    ++shown;
    text += fmt::format("  [memo] at {}: {}\n", reports::format_time(x.at), x.because);
  }
  if (shown < selected) text += fmt::format("  ({} of {} shown: --limit N shows more)\n", shown, selected);
  return text;
}

// --explain, last: which (message, processor) pairs were never executed (the result keeps the first ones).
std::string lost_text(const ExplainSelection& o, const lethe::RunResult& r) {
  if (r.lost_messages == 0 || o.cause) return "";
  std::string text = fmt::format("\nnever executed: {} lost (message, processor) pairs\n", r.lost_messages);
  for (const auto& x : r.lost_examples) text += "  " + x + "\n";
  if (r.lost_messages > r.lost_examples.size()) {
    text += fmt::format("  ({} of {} listed)\n", r.lost_examples.size(), r.lost_messages);
  }
  return text;
}

// --explain, first: each cause's count with its first duplicate.
std::string causes_text(const lethe::RunResult& r) {
  std::string text = fmt::format("\nwhy each duplicate happened: {} duplicate effects\n", r.duplicate_effects);
  for (std::size_t c = 0; c < lethe::kCauseCount; ++c) {
    if (r.duplicates[c] == 0) continue;
    const auto cause = static_cast<lethe::Cause>(c);
    const auto first = std::find_if(r.explanations.begin(), r.explanations.end(),
                                    [cause](const auto& x) { return x.cause == cause; });
    text += fmt::format("  {:<22} {:>6}  first: message {} at {}\n", lethe::to_string(cause), r.duplicates[c],
                        first == r.explanations.end() ? std::string("?") : std::to_string(first->id),
                        first == r.explanations.end() ? std::string("?") : reports::format_time(first->at));
  }
  return text;
}

}  // namespace

std::string explanations_text(const ExplainSelection& o, const lethe::RunResult& r) {
  std::string text = causes_text(r);
  const std::size_t limit = o.limit;
  std::size_t selected = 0;
  std::size_t shown = 0;
  std::string lines;
  for (const auto& x : r.explanations) {
    if (o.message && x.id != *o.message) continue;
    if (o.cause && lethe::to_string(x.cause) != *o.cause) continue;
    ++selected;
    if (shown == limit) continue;
    ++shown;
    lines += fmt::format("  [{}] at {}: {}\n", lethe::to_string(x.cause), reports::format_time(x.at), x.because);
  }
  std::string what = o.cause ? " " + *o.cause : "";
  if (o.message) what += fmt::format(" of message {}", *o.message);
  text += fmt::format("\ndetails{}:\n", what);
  if (selected == 0) text += "  no duplicates" + what + "\n";
  text += lines;
  if (shown < selected) {
    text += fmt::format("  ({} of {} shown: --limit N shows more, --cause C selects one cause)\n", shown, selected);
  }
  return text + memo_mismatches_text(o, r, limit) + lost_text(o, r);
}

void print_explanations(const ExplainSelection& o, const lethe::RunResult& r) { std::cout << explanations_text(o, r); }

namespace {

// The exit code of the run, after --verify: 3 when a duplicate's intervention did not remove it.
int verified_exit(const ReplayOptions& o, const lethe::ScenarioConfig& config, const lethe::RunResult& result) {
  if (o.verify) {
    const VerifyReport report = verify_causes(config, o.seed, result, o.verify_limit.value_or(0));
    std::cout << verify_text(report);
    if (report.failed()) return kExitInternal;
  }
  return result.ok ? kExitOk : kExitExpectation;
}

int command_replay(const ReplayOptions& o) {
  if (const auto error = options_error(o); !error.empty()) {
    std::cerr << "lethe replay: " << error << "\n";
    return kExitBadInput;
  }
  auto config = load(o);
  if (!config) return kExitBadInput;
  lethe::WorldOptions options;
  options.keep_trace = true;
  options.max_explanations = SIZE_MAX;  // the summary, the selection and the page need every one
  std::unique_ptr<reports::OutputFile> trace_file;
  if (!o.trace_path.empty()) {
    trace_file = std::make_unique<reports::OutputFile>(o.trace_path);
    if (!trace_file->is_open()) {
      std::cerr << "lethe replay: " << trace_file->finish() << "\n";
      return kExitBadInput;
    }
    options.trace_out = &trace_file->stream();
  }
  lethe::WorldRecord record;
  const auto run = run_seed(*config, o.seed, options, &record);
  if (run.bad_input || run.out_of_memory()) {
    std::cerr << fmt::format("lethe: {} seed {}: {}{}\n", config->scenario.name, o.seed, run.prefix(), run.error);
    return run.bad_input ? kExitBadInput : kExitResources;
  }
  if (!run.error.empty()) {
    std::cerr << fmt::format("lethe: internal error in {} seed {}: {}\n", config->scenario.name, o.seed, run.error);
    return kExitInternal;
  }
  if (trace_file) {
    if (const auto error = trace_file->finish(); !error.empty()) {
      std::cerr << "lethe replay: " << error << "\n";
      return kExitBadInput;
    }
  }
  if (!o.events_path.empty()) {
    if (const auto error = write_event_file(o.events_path, *config, record, run.result); !error.empty()) {
      std::cerr << "lethe replay: " << error << "\n";
      return kExitBadInput;
    }
  }
  std::optional<reports::Story> story;
  if (o.message) {
    story = reports::message_story(record.trace, record.node_names, *o.message, run.result.explanations);
    if (story->events.empty()) {
      std::cerr << fmt::format("lethe replay: --message {}: no such message in {} seed {} (its {} messages are "
                               "0..{})\n",
                               *o.message, config->scenario.name, o.seed, run.result.messages,
                               run.result.messages == 0 ? 0 : run.result.messages - 1);
      return kExitBadInput;
    }
  }
  if (!o.dot_path.empty()) {
    const std::optional<std::uint64_t> id =
        o.message ? o.message
                  : (run.result.explanations.empty() ? std::nullopt
                                                     : std::optional<std::uint64_t>(run.result.explanations.front().id));
    if (!id) {
      std::cerr << "lethe replay: --dot: this run has no duplicate to draw; name a message with --message ID\n";
      return kExitBadInput;
    }
    if (const int rc = write_message_dot(record.trace, record.node_names, *id, run.result, o.dot_path); rc != kExitOk) {
      return rc;
    }
  }
  if (!o.html_path.empty()) {
    if (const int rc = write_html(o, run.result, record); rc != kExitOk) return rc;
  }
  std::cout << reports::run_summary(run.result);
  if (story) {
    std::cout << fmt::format("\nstory of message {} ({} events, polls folded):\n", *o.message, story->events.size());
    std::cout << reports::timeline_text(*story, record.node_names);
  }
  if (o.explain) print_explanations(ExplainSelection{o.message, o.cause, o.limit.value_or(kDefaultLimit)}, run.result);
  return verified_exit(o, *config, run.result);
}

}  // namespace

std::string dot_path_error(const std::string& path) {
  if (ends_with(path, ".dot") || ends_with(path, ".svg") || ends_with(path, ".png")) return "";
  return fmt::format("--dot {}: unknown extension (allowed: .dot for the Graphviz text, .svg or .png rendered by "
                     "`dot`)",
                     path);
}

int write_message_dot(const std::vector<sim::TraceRecord>& trace, const std::vector<std::string>& node_names,
                      std::uint64_t message, const lethe::RunResult& result, const std::string& path) {
  const auto story = reports::message_story(trace, node_names, message, result.explanations);
  const std::string text = reports::timeline_dot(story, node_names);
  const bool rendered = !ends_with(path, ".dot");
  const std::string dot_path = rendered ? path.substr(0, path.size() - 4) + ".dot" : path;
  if (const auto error = reports::write_file(dot_path, text); !error.empty()) {
    std::cerr << "lethe: " << error << "\n";
    return kExitBadInput;
  }
  if (!rendered) return kExitOk;
  if (std::system("command -v dot >/dev/null 2>&1") != 0) {
    std::cerr << fmt::format("lethe: --dot {}: Graphviz `dot` is not installed (scripts/setup installs it); wrote "
                             "the DOT text to {}\n",
                             path, dot_path);
    return kExitBadInput;
  }
  const std::string format = path.substr(path.size() - 3);
  const std::string command =
      fmt::format("dot -T{} {} -o {} 2>&1", format, shell_quote(dot_path), shell_quote(path));
  if (std::system(command.c_str()) != 0) {
    std::cerr << fmt::format("lethe: `dot` failed to render {}\n", path);
    return kExitBadInput;
  }
  return kExitOk;
}

ExtraCommand register_replay(CLI::App& app) {
  struct Replay {
    ReplayOptions options;
    std::uint64_t message_id = 0;
    std::string cause;
    std::size_t limit = 0;
    std::size_t verify_limit = 0;
    CLI::Option* verify_limit_option = nullptr;
    CLI::Option* message = nullptr;
    CLI::Option* cause_option = nullptr;
    CLI::Option* limit_option = nullptr;
  };
  auto replay = std::make_shared<Replay>();
  auto* command = app.add_subcommand("replay", "Reproduce one seed bit for bit and explain it");
  command->add_option("FILE", replay->options.file, "Scenario file (TOML)")->required();
  command->add_option("--seed", replay->options.seed, "Seed")->required()->check(runner::seed_check());
  command->add_option("--set", replay->options.sets, "Override a scenario key: KEY=VALUE (repeatable)");
  replay->message = command->add_option("--message", replay->message_id, "Print the story of this message id");
  command->add_flag("--explain", replay->options.explain,
                    "Say in plain words why each duplicate happened: a summary by cause, then one sentence each");
  replay->cause_option = command->add_option("--cause", replay->cause, "With --explain: only duplicates of this cause");
  replay->limit_option =
      command->add_option("--limit", replay->limit, "With --explain: at most N sentences (default 1000)");
  command->add_flag("--verify", replay->options.verify,
                    "Prove each duplicate's cause: replay the seed once per duplicated message with the cause's "
                    "window closed, check the duplicate is gone (exit 3 if one is not)");
  replay->verify_limit_option = command->add_option(
      "--verify-limit", replay->verify_limit, "With --verify: replay at most N duplicates per cause (default all)");
  command->add_option("--html", replay->options.html_path,
                      "Write the incident page: the message (or the first duplicated ones) drawn in virtual time");
  command->add_option("--dot", replay->options.dot_path,
                      "Write a Graphviz timeline of the message (.dot, or .svg / .png rendered by dot)");
  command->add_option("--trace", replay->options.trace_path, "Write the full trace as JSON lines");
  command->add_option("--events", replay->options.events_path,
                      "Write the run's dedupe events as JSON lines (lethe check --events reads them)");
  return {command, [replay] {
            if (replay->message->count() > 0) replay->options.message = replay->message_id;
            if (replay->cause_option->count() > 0) replay->options.cause = replay->cause;
            if (replay->limit_option->count() > 0) replay->options.limit = replay->limit;
            if (replay->verify_limit_option->count() > 0) replay->options.verify_limit = replay->verify_limit;
            return command_replay(replay->options);
          }};
}

}  // namespace runner
