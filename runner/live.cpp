#include "runner/live.hpp"

#include <cstdlib>
#include <fmt/format.h>
#include <iostream>
#include <memory>
#include <string_view>

#include "live/credentials.hpp"
#include "live/run.hpp"
#include "check/events.hpp"
#include "check/history.hpp"
#include "reports/json.hpp"
#include "reports/output_file.hpp"
#include "reports/summary.hpp"
#include "scenario/loader.hpp"

namespace runner {

namespace {

// The protocol a live run uses unless --set says otherwise: mnemosyne at live time scales.
constexpr const char* kBaseScenario = R"toml(
[scenario]
name = "live"
[protocol]
kind = "mnemosyne"
max_processing_time = "300ms"
ttl = "1h"
poll = "5ms"
max_wait = "5s"
)toml";

struct LiveOptions {
  std::string store = "memory";
  std::string variant;
  std::string target;
  int workers = 8;
  std::int64_t messages = 300;
  double duplicates = 1.0;
  int copies = 2;
  std::string processing_time = "uniform(0s, 2ms)";
  std::string timeout = "100ms";
  double crash_after_start = 0.0;
  double crash_after_effect = 0.0;
  double crash_before_ack = 0.0;
  double drop = 0.0;
  std::string stall_every;
  std::string stall_for = "60ms";
  double slow = 0.0;
  std::string slow_for;
  std::string visibility_timeout = "20ms";
  std::string max_duration = "120s";
  std::string server_timeout = "3s";
  std::uint64_t seed = 1;
  std::vector<std::string> sets;
  std::string table;
  std::string key_prefix;
  bool json = false;
  bool list = false;
  std::string history_path;
  std::string events_path;
};

bool parse_duration_option(const std::string& name, const std::string& text, sim::Duration& out) {
  std::string error;
  const auto parsed = sim::parse_duration(text, error);
  if (!parsed) {
    std::cerr << fmt::format("lethe live: --{}: {}\n", name, error);
    return false;
  }
  out = *parsed;
  return true;
}

void print_variants() {
  std::string store;
  for (const auto& v : live::store_variants()) {
    if (v.store != store) {
      store = v.store;
      std::cout << store << ":\n";
    }
    std::cout << fmt::format("  {:18} {:8} {}\n", v.name, v.atomic ? "correct" : "UNSAFE", v.summary);
  }
}

// Builds the settings from the options; prints the problem and returns nullopt on bad input.
std::optional<live::LiveSettings> settings_from(const LiveOptions& o) {
  live::LiveSettings s;
  s.store = o.store;
  try {
    s.store_options.variant = o.variant.empty() ? live::default_variant(o.store) : o.variant;
  } catch (const std::invalid_argument& e) {
    std::cerr << "lethe live: " << live::mask_words(e.what()) << "\n";  // quotes --store, --variant as given
    return std::nullopt;
  }
  s.store_options.target = o.target;
  if (s.store_options.target.empty() && o.store != "memory") {
    const char* variable = o.store == "postgres" ? "LETHE_PG_DSN" : "LETHE_REDIS_URL";
    const char* value = std::getenv(variable);
    if (value == nullptr || *value == '\0') {
      std::cerr << fmt::format("lethe live: no server given: pass --target or set {} (scripts/live-servers start "
                               "runs throwaway servers)\n",
                               variable);
      return std::nullopt;
    }
    s.store_options.target = value;
  }
  s.store_options.table = o.table;
  s.store_options.key_prefix = o.key_prefix;
  for (const auto& set : o.sets) {
    if (set.rfind("protocol.", 0) != 0) {
      std::cerr << fmt::format("lethe live: --set {}: only protocol.* keys apply to live runs\n", set);
      return std::nullopt;
    }
  }
  auto loaded = scenario::load_scenario_text(kBaseScenario, "live", ".", o.sets);
  if (auto* errors = std::get_if<std::vector<scenario::LoadError>>(&loaded)) {
    for (const auto& e : *errors) std::cerr << "lethe live: " << e.message << "\n";
    return std::nullopt;
  }
  s.protocol = std::get<lethe::ScenarioConfig>(loaded).protocol;
  s.workers = o.workers;
  s.messages = o.messages;
  s.duplicates = o.duplicates;
  s.copies = o.copies;
  std::string error;
  const auto processing = sim::Distribution::parse(o.processing_time, ".", error);
  if (!processing) {
    std::cerr << fmt::format("lethe live: --processing-time: {}\n", error);
    return std::nullopt;
  }
  s.processing_time = *processing;
  if (!parse_duration_option("timeout", o.timeout, s.store_options.timeout) ||
      !parse_duration_option("stall-for", o.stall_for, s.faults.stall_for) ||
      !parse_duration_option("visibility-timeout", o.visibility_timeout, s.visibility_timeout) ||
      !parse_duration_option("max-duration", o.max_duration, s.max_duration) ||
      !parse_duration_option("server-timeout", o.server_timeout, s.server_timeout)) {
    return std::nullopt;
  }
  if (!o.stall_every.empty() && !parse_duration_option("stall-every", o.stall_every, s.faults.stall_every)) {
    return std::nullopt;
  }
  if (!o.slow_for.empty()) {
    sim::Duration slow_for = 0;
    if (!parse_duration_option("slow-for", o.slow_for, slow_for)) return std::nullopt;
    s.faults.slow_for = slow_for;
  }
  s.faults.crash_after_start = o.crash_after_start;
  s.faults.crash_after_effect = o.crash_after_effect;
  s.faults.crash_before_ack = o.crash_before_ack;
  s.faults.drop = o.drop;
  s.faults.slow = o.slow;
  s.seed = o.seed;
  const std::string problem = live::validate(s);
  if (!problem.empty()) {
    std::cerr << "lethe live: " << live::mask_words(problem) << "\n";  // may quote an option as given
    return std::nullopt;
  }
  return s;
}

std::uint64_t coverage(const lethe::RunResult& r, const std::string& key) {
  const auto it = r.coverage.find(key);
  return it == r.coverage.end() ? 0 : it->second;
}

std::string live_summary(const live::LiveSettings& s, const live::LiveOutcome& o) {
  const lethe::RunResult& r = o.result;
  std::string out;
  out += fmt::format("  live: store {} variant {} ({}), {}, {} workers, {} wall time\n", o.store, o.variant,
                     o.variant_atomic ? "expected correct" : "expected UNSAFE", o.location, s.workers,
                     reports::format_time(o.wall_time));
  out += fmt::format("  live: {} store operations, {} with an unknown outcome; history {} ({} search steps)\n",
                     o.operations, o.unknown_outcomes, lethe::lin::to_string(o.verdict), o.check_steps);
  out += fmt::format("  live: operation latency p50 {}, p99 {}, max {}\n", reports::format_time(o.latency.p50),
                     reports::format_time(o.latency.p99), reports::format_time(o.latency.max));
  std::uint64_t timeouts = coverage(r, "store.statement_timeouts") + coverage(r, "store.client_timeouts");
  out += fmt::format("  live: faults fired: kills {} (after start {}, after effect {}, before ack {}), connection "
                     "drops {}, store stalls {}, timeouts {}, slow effects {}\n",
                     coverage(r, "crash"), coverage(r, "crash_point.after_start_before_effect.fired"),
                     coverage(r, "crash_point.after_effect_before_complete.fired"),
                     coverage(r, "crash_point.after_complete_before_ack.fired"),
                     coverage(r, "fault.connection_drop.fired"), coverage(r, "fault.store_stall.fired"), timeouts,
                     coverage(r, "fault.slow_effect.fired"));
  const std::uint64_t retries = coverage(r, "store.insert_race_retries") + coverage(r, "store.watch_conflicts");
  if (retries > 0) out += fmt::format("  live: the store variant retried {} time(s) after a detected race\n", retries);
  out += fmt::format("  live: unexplained duplicates {} (unprotected, or herd_takeover under a conditional "
                     "takeover: the store's conditional write did not hold)\n",
                     o.unexplained_duplicates);
  if (o.verdict == lethe::lin::Verdict::NotLinearizable) {
    out += "  live: the history is not linearizable; the offending window:\n";
    std::string explanation = o.check_explanation;
    std::size_t start = 0;
    int lines = 0;
    while (start < explanation.size() && lines < 40) {
      const auto end = explanation.find('\n', start);
      out += "    " + explanation.substr(start, end == std::string::npos ? std::string::npos : end - start) + "\n";
      if (end == std::string::npos) break;
      start = end + 1;
      ++lines;
    }
  }
  if (!r.explanations.empty()) {
    out += "  live: first duplicates:\n";
    for (std::size_t i = 0; i < r.explanations.size() && i < 5; ++i) {
      out += fmt::format("    [{}] {}\n", lethe::to_string(r.explanations[i].cause), r.explanations[i].because);
    }
  }
  if (!o.abandoned.empty()) {
    out += fmt::format("  live: NO VERDICT: the run was abandoned after {}: {}; the figures above cover the run "
                       "until then (messages it did not finish count as lost)\n",
                       reports::format_time(o.wall_time), o.abandoned);
  } else {
    out += fmt::format("  live: {}\n", o.passed() ? "PASS: the store held" : "CAUGHT: this store/variant is not safe");
  }
  return out;
}

// The run's summary: `lethe run`'s, whose last line (OK / FAILED) gives way to live mode's own verdict line.
std::string summary_text(const live::LiveSettings& s, const live::LiveOutcome& o) {
  std::string text = reports::run_summary(o.result, /*live=*/true);
  constexpr std::string_view kFailedLine = "  FAILED\n";
  if (!o.abandoned.empty() && text.ends_with(kFailedLine)) text.erase(text.size() - kFailedLine.size());
  return text + live_summary(s, o);
}

// --history and --events, written before any verdict is printed.
int write_files(const LiveOptions& o, const live::LiveOutcome& outcome) {
  std::string error;
  if (!o.history_path.empty()) {
    error = reports::write_file_with(
        o.history_path, [&outcome](std::ostream& out) { lethe::history::write_store_history(out, outcome.history); });
  }
  if (error.empty() && !o.events_path.empty() && outcome.events) {
    error = reports::write_file_with(
        o.events_path, [&outcome](std::ostream& out) { lethe::events::write_events(out, *outcome.events); });
  }
  if (error.empty()) return kExitOk;
  std::cerr << "lethe live: " << error << "\n";
  return kExitBadInput;
}

int command_live(const LiveOptions& o) {
  if (o.list) {
    print_variants();
    return kExitOk;
  }
  auto settings = settings_from(o);
  if (!settings) return kExitBadInput;
  settings->keep_history = settings->keep_history || !o.history_path.empty();
  settings->keep_events = !o.events_path.empty();
  live::LiveOutcome outcome;
  try {
    outcome = live::run_live(*settings);
  } catch (const std::invalid_argument& e) {
    std::cerr << "lethe live: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const std::runtime_error& e) {
    std::cerr << "lethe live: " << e.what() << "\n";
    return kExitBadInput;
  }
  if (const int rc = write_files(o, outcome); rc != kExitOk) return rc;
  if (o.json) {
    nlohmann::ordered_json j = reports::to_json(outcome.result);
    nlohmann::ordered_json l;
    l["store"] = outcome.store;
    l["variant"] = outcome.variant;
    l["variant_expected_correct"] = outcome.variant_atomic;
    l["workers"] = settings->workers;
    l["operations"] = outcome.operations;
    l["unknown_outcomes"] = outcome.unknown_outcomes;
    l["verdict"] = std::string(lethe::lin::to_string(outcome.verdict));
    l["check_steps"] = outcome.check_steps;
    l["latency"] = {{"p50", outcome.latency.p50}, {"p99", outcome.latency.p99}, {"max", outcome.latency.max}};
    l["unexplained_duplicates"] = outcome.unexplained_duplicates;
    l["wall_time"] = outcome.wall_time;
    l["passed"] = outcome.passed();
    if (outcome.verdict == lethe::lin::Verdict::NotLinearizable) l["offending_window"] = outcome.check_explanation;
    if (!outcome.abandoned.empty()) l["abandoned"] = outcome.abandoned;
    if (!outcome.left_behind.empty()) l["left_behind"] = outcome.left_behind;
    j["live"] = l;
    std::cout << j.dump() << "\n";
  } else {
    std::cout << summary_text(*settings, outcome);
  }
  if (!outcome.left_behind.empty()) std::cerr << "lethe live: could not remove " << outcome.left_behind << "\n";
  if (!outcome.abandoned.empty()) {
    std::cerr << "lethe live: the run was abandoned: " << outcome.abandoned << "\n";
    return kExitBadInput;
  }
  return outcome.passed() ? kExitOk : kExitExpectation;
}

}  // namespace

ExtraCommand register_live(CLI::App& app) {
  auto options = std::make_shared<LiveOptions>();
  // The parser's errors quote the words it did not expect: an unquoted conninfo's "password=SECRET" among them.
  app.failure_message([](const CLI::App* failed, const CLI::Error& error) {
    return live::mask_words(CLI::FailureMessage::simple(failed, error));
  });
  auto* cmd = app.add_subcommand(
      "live", "Run the protocol for real against PostgreSQL, Redis or the in-process store, with real threads and "
              "faults, and check it with the oracle and the linearizability checker");
  LiveOptions& o = *options;
  cmd->add_option("--store", o.store, "postgres | redis | memory (default memory)");
  cmd->add_option("--variant", o.variant, "Statement variant (default: the store's first correct one; see --list)");
  cmd->add_flag("--list", o.list, "List the stores and their variants, and exit");
  cmd->add_option("--target", o.target,
                  "Server: a libpq conninfo/URI (default $LETHE_PG_DSN) or redis://[:password@]host[:port][/db] / "
                  "unix:///path (default $LETHE_REDIS_URL)");
  cmd->add_option("--table", o.table, "Postgres table to use (created if missing; must be empty; kept afterwards)");
  cmd->add_option("--key-prefix", o.key_prefix, "Redis key prefix to use (no keys may exist; kept afterwards)");
  cmd->add_option("--workers", o.workers, "Worker threads (default 8)");
  cmd->add_option("--messages", o.messages, "Distinct message ids (default 300)");
  cmd->add_option("--duplicates", o.duplicates, "Fraction of ids delivered more than once (default 1.0)");
  cmd->add_option("--copies", o.copies, "Extra deliveries of such an id, queued back to back (default 2)");
  cmd->add_option("--processing-time", o.processing_time, "The effect's duration, a distribution (default "
                                                          "uniform(0s, 2ms))");
  cmd->add_option("--timeout", o.timeout, "Statement timeout (Postgres) / command timeout (Redis) (default 100ms)");
  cmd->add_option("--crash-after-start", o.crash_after_start, "Kill probability after the start write");
  cmd->add_option("--crash-after-effect", o.crash_after_effect, "Kill probability after the effect, before completion");
  cmd->add_option("--crash-before-ack", o.crash_before_ack, "Kill probability after completion, before the ack");
  cmd->add_option("--drop", o.drop, "Probability per store operation of dropping the connection mid-operation");
  cmd->add_option("--stall-every", o.stall_every, "Mean interval between store stalls (lock / busy script)");
  cmd->add_option("--stall-for", o.stall_for, "How long a store stall lasts (default 60ms)");
  cmd->add_option("--slow", o.slow, "Probability of a slow effect (past max_processing_time)");
  cmd->add_option("--slow-for", o.slow_for, "Extra duration of a slow effect (default 2 x max_processing_time)");
  cmd->add_option("--visibility-timeout", o.visibility_timeout, "Redelivery delay of a failed delivery (default 20ms)");
  cmd->add_option("--max-duration", o.max_duration, "Stop taking deliveries after this (default 120s)");
  cmd->add_option("--server-timeout", o.server_timeout,
                  "Abandon the run (exit 2) when the server answers nothing for this long, plus --stall-for when "
                  "stalls are on (default 3s)");
  cmd->add_option("--seed", o.seed, "Seed of the workload and the fault draws (default 1)")->check(runner::seed_check());
  cmd->add_option("--set", o.sets, "Override a protocol key: protocol.KEY=VALUE (repeatable); defaults: mnemosyne, "
                                   "max_processing_time 300ms, ttl 1h, poll 5ms, max_wait 5s");
  cmd->add_flag("--json", o.json, "Print the result as one JSON object (lethe run's fields plus \"live\")");
  cmd->add_option("--history", o.history_path, "Write the store's history as JSON lines (lethe check reads it)");
  cmd->add_option("--events", o.events_path, "Write the run's dedupe events as JSON lines (lethe check --events reads them)");
  return ExtraCommand{cmd, [options] { return command_live(*options); }};
}

}  // namespace runner
