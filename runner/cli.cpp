#include "runner/cli.hpp"

#include <CLI/CLI.hpp>
#include <chrono>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <iostream>
#include <memory>
#include <mutex>
#include <system_error>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/version.hpp"
#include "reports/json.hpp"
#include "reports/junit.hpp"
#include "reports/output_file.hpp"
#include "reports/summary.hpp"
#include "reports/timeline.hpp"
#include "sim/trace.hpp"
#include "runner/bench.hpp"
#include "runner/check.hpp"
#include "runner/command.hpp"
#include "runner/command_line.hpp"
#include "external/child_process.hpp"
#include "runner/determinism.hpp"
#include "runner/events.hpp"
#include "runner/verify.hpp"
#include "runner/execute.hpp"
#include "runner/explore.hpp"
#include "runner/live.hpp"
#include "runner/output_path.hpp"
#include "runner/progress.hpp"
#include "scenario/explore.hpp"
#include "scenario/loader.hpp"
#include "scenario/text.hpp"
#include "runner/sweep.hpp"
#include "runner/replay.hpp"
#include "runner/report.hpp"
#include "runner/shrink.hpp"
#include "runner/tune.hpp"
#include "check/history.hpp"

namespace fs = std::filesystem;

namespace {

using runner::replay_command;
using runner::shell_quote;

using runner::kExitBadInput;
using runner::kExitExpectation;
using runner::kExitInternal;
using runner::kExitOk;
using runner::kExitResources;

bool stderr_is_terminal() { return isatty(fileno(stderr)) != 0; }


// Loads a scenario or prints every error (FILE:LINE:COL: key: ...) and returns nullopt.
std::optional<lethe::ScenarioConfig> load_or_report(const std::string& file, const std::vector<std::string>& sets) {
  auto loaded = scenario::load_scenario(file, sets);
  if (auto* errors = std::get_if<std::vector<scenario::LoadError>>(&loaded)) {
    for (const auto& e : *errors) std::cerr << e.message << "\n";
    return std::nullopt;
  }
  return std::get<lethe::ScenarioConfig>(std::move(loaded));
}

// A file written while the run goes (--trace, --history), through a temporary file: its stream, or nullptr
// ("" asks for none, or it cannot be written: then `file` is null and *failed says so, after saying why).
std::ostream* open_during_run(const std::string& path, std::unique_ptr<reports::OutputFile>& file, bool& failed) {
  if (path.empty()) return nullptr;
  file = std::make_unique<reports::OutputFile>(path);
  if (file->is_open()) return &file->stream();
  std::cerr << "lethe: " << file->finish() << "\n";
  file.reset();
  failed = true;
  return nullptr;
}

// --trace FILE: the world's trace written to it; --history FILE: the store's operations, each as it ends (nothing
// held). False (after saying why) when one cannot be written.
bool open_run_files(const std::string& trace_path, const std::string& history_path,
                    std::unique_ptr<reports::OutputFile>& trace_file, std::unique_ptr<reports::OutputFile>& history_file,
                    lethe::WorldOptions& options) {
  bool failed = false;
  options.trace_out = open_during_run(trace_path, trace_file, failed);
  if (std::ostream* out = failed ? nullptr : open_during_run(history_path, history_file, failed)) {
    options.on_store_operation = [out](const lethe::StoreOperation& operation) {
      lethe::history::write_store_operation(*out, operation);
    };
  }
  return !failed;
}

// After the run: a file of open_during_run written to its end, or false after saying why (a full disk).
bool finish_run_file(std::unique_ptr<reports::OutputFile>& file) {
  if (!file) return true;
  const auto error = file->finish();
  if (error.empty()) return true;
  std::cerr << "lethe: " << error << "\n";
  return false;
}

// ---------------------------------------------------------------- run

struct RunOptions {
  std::string file;
  std::uint64_t seed = 1;
  std::vector<std::string> sets;
  bool json = false;
  std::string trace_path;
  std::string dot_path;
  std::string history_path;
  std::string save_drawn_path;
  std::string events_path;
  bool check_determinism = false;
  bool verify = false;
  std::size_t verify_limit = 0;  // duplicates replayed per cause by --verify (0: all)
};

// --verify: every duplicate's cause proven by replaying the seed with its window closed (runner/verify.hpp). The
// text follows the summary (on stderr after --json's object); exit 3 when a duplicate is not removed, else
// `verdict`, the run's own exit code.
int verify_run(const RunOptions& o, const lethe::ScenarioConfig& config, const lethe::RunResult& result,
               int verdict) {
  const runner::VerifyReport report = runner::verify_causes(config, o.seed, result, o.verify_limit);
  (o.json ? std::cerr : std::cout) << runner::verify_text(report);
  return report.failed() ? kExitInternal : verdict;
}

// [explore]: the seed's configuration replaces `config` (scenario/explore.hpp), its values go to `drawn`, and
// --save-drawn writes it as a plain scenario. False (after saying why) on a draw that does not load or a file
// that cannot be written.
bool draw_configuration(const RunOptions& o, std::optional<lethe::ScenarioConfig>& config,
                        std::vector<std::string>& drawn) {
  scenario::Draw draw = scenario::draw_configuration(config->explore, o.seed);
  auto loaded = scenario::load_drawn(o.file, o.sets, draw);
  if (auto* errors = std::get_if<std::vector<scenario::LoadError>>(&loaded)) {
    std::cerr << fmt::format("lethe run: seed {} drew a configuration that does not load:\n", o.seed);
    for (const auto& e : *errors) std::cerr << e.message << "\n";
    return false;
  }
  config = std::get<lethe::ScenarioConfig>(std::move(loaded));
  drawn = scenario::describe(draw);
  if (o.save_drawn_path.empty()) return true;
  std::string header = fmt::format("# Drawn from {} at seed {}:\n", o.file, o.seed);
  for (const auto& word : drawn) header += "#   " + word + "\n";
  header += fmt::format("# Reproduce: {} run THIS_FILE --seed {}\n\n", runner::program_name(), o.seed);
  if (const auto error = reports::write_file(o.save_drawn_path, header + runner::scenario_file_text(*config, o.file));
      !error.empty()) {
    std::cerr << "lethe run: " << error << "\n";
    return false;
  }
  return true;
}

int command_run(const RunOptions& o) {
  if (const auto error = o.dot_path.empty() ? "" : runner::dot_path_error(o.dot_path); !error.empty()) {
    std::cerr << "lethe run: " << error << "\n";
    return kExitBadInput;
  }
  auto config = load_or_report(o.file, o.sets);
  if (!config) return kExitBadInput;
  std::vector<std::string> drawn;
  if (scenario::explores(*config) && !draw_configuration(o, config, drawn)) return kExitBadInput;
  if (o.check_determinism) return runner::check_determinism(*config, o.seed, o.file, o.sets);
  lethe::WorldOptions options;
  std::unique_ptr<reports::OutputFile> trace_file;
  const bool keep_record = !o.dot_path.empty() || !o.events_path.empty();
  options.keep_trace = !o.dot_path.empty();
  // The events stream out of the run as it goes (the ledger folds as without them): the record then holds what
  // was not folded.
  lethe::events::EventSpool spool;
  if (!o.events_path.empty()) runner::stream_events(spool, options);
  if (o.verify) options.max_explanations = SIZE_MAX;  // every duplicate is replayed
  std::unique_ptr<reports::OutputFile> history_file;
  if (!open_run_files(o.trace_path, o.history_path, trace_file, history_file, options)) return kExitBadInput;
  lethe::WorldRecord record;
  if (stderr_is_terminal()) std::cerr << fmt::format("running {} seed {}...\n", config->scenario.name, o.seed);
  // The record only for --dot (the whole trace) and --events (what the ledger did not fold).
  auto run = runner::run_seed(*config, o.seed, options, keep_record ? &record : nullptr);
  run.result.drawn = drawn;
  if (run.bad_input || run.out_of_memory()) {  // out of memory: not lethe's bug nor the scenario's, no replay
    std::cerr << fmt::format("lethe: {}: seed {}: {}{}\n", o.file, o.seed, run.prefix(), run.error);
    return run.bad_input ? kExitBadInput : kExitResources;
  }
  if (!run.error.empty()) {
    std::cerr << fmt::format("lethe: internal error in {} seed {}: {}\nreplay: {}\n", config->scenario.name, o.seed,
                             run.error, replay_command(o.file, o.seed, o.sets));
    return kExitInternal;
  }
  // Every file first: a verdict is printed only when everything it refers to was written.
  if (!finish_run_file(trace_file) || !finish_run_file(history_file)) return kExitBadInput;
  if (!o.events_path.empty()) {
    if (const auto error =
            runner::write_streamed_event_file(o.events_path, *config, record, run.result, spool, std::cerr);
        !error.empty()) {
      std::cerr << "lethe run: " << error << "\n";
      return kExitBadInput;
    }
  }
  if (!o.dot_path.empty()) {
    if (run.result.explanations.empty()) {
      std::cerr << "lethe run: --dot: this run has no duplicate to draw (lethe replay --dot --message ID draws any)\n";
      return kExitBadInput;
    }
    const int rc = runner::write_message_dot(record.trace, record.node_names, run.result.explanations.front().id,
                                             run.result, o.dot_path);
    if (rc != kExitOk) return rc;
  }
  if (o.json) {
    std::cout << reports::to_json(run.result).dump() << "\n";
  } else {
    std::cout << reports::run_summary(run.result);
    if (!drawn.empty()) std::cout << "  drawn: " << scenario::text::join(drawn, ", ") << "\n";
    std::cout << "  replay: " << replay_command(o.file, o.seed, o.sets) << " --explain\n";
  }
  const int verdict = run.result.ok ? kExitOk : kExitExpectation;
  return o.verify ? verify_run(o, *config, run.result, verdict) : verdict;
}

// ---------------------------------------------------------------- suite

struct SuiteOptions {
  std::vector<std::string> paths;
  std::int64_t seeds = 0;  // 0: each scenario's run.seeds
  unsigned jobs = 0;
  std::string junit_path;
  std::string json_path;
  bool json_to_stdout = false;  // --json without FILE: the JSON lines on stdout, the table on stderr
  std::string fingerprint_path;  // --fingerprint: the behaviour fingerprint scripts/baseline compares
  std::vector<std::string> sets;
  bool verify = false;           // every duplicate's cause proven by a counterfactual replay (exit 3 if not)
  std::size_t verify_limit = 0;  // duplicates replayed per cause and seed (0: all)
};

// The files before the table: no verdict is printed for results that did not reach their files. Returns
// whether every file was written (after saying on stderr which one was not).
bool write_suite_files(const SuiteOptions& o, const std::string& json_lines, const std::string& fingerprint_lines,
                       const std::vector<reports::JunitCase>& cases) {
  std::string error;
  if (!o.json_path.empty()) error = reports::write_file(o.json_path, json_lines);
  if (error.empty() && !o.fingerprint_path.empty()) error = reports::write_file(o.fingerprint_path, fingerprint_lines);
  if (error.empty() && !o.junit_path.empty()) error = reports::write_file(o.junit_path, reports::junit_xml(cases));
  if (!error.empty()) std::cerr << "lethe suite: " << error << "\n";
  return error.empty();
}

std::vector<std::string> collect_scenarios(const std::vector<std::string>& paths, bool& ok) {
  std::vector<std::string> files;
  ok = true;
  for (const auto& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> found;
      for (auto it = fs::recursive_directory_iterator(p, ec); it != fs::recursive_directory_iterator(); ++it) {
        // Benchmark scenarios (a folder named "bench") are run by scripts/bench-peers, and planted bugs (a
        // folder named "explore") by lethe explore and scripts/bench-explore, not by suites.
        if (it->is_directory() && (it->path().filename() == "bench" || it->path().filename() == "explore")) {
          it.disable_recursion_pending();
          continue;
        }
        if (it->is_regular_file() && it->path().extension() == ".toml") found.push_back(it->path().string());
      }
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(p, ec)) {
      files.push_back(p);
    } else {
      std::cerr << fmt::format("lethe suite: {}: no such file or directory\n", p);
      ok = false;
    }
  }
  if (ok && files.empty()) {
    std::cerr << "lethe suite: no scenario files (*.toml) found\n";
    ok = false;
  }
  return files;
}

// Every loader message of a file that did not load, one a line ("" when it loaded into `out`).
std::string load_for_suite(const std::string& file, const std::vector<std::string>& sets,
                           std::optional<lethe::ScenarioConfig>& out) {
  auto loaded = scenario::load_scenario(file, sets);
  if (auto* errors = std::get_if<std::vector<scenario::LoadError>>(&loaded)) {
    std::string text;
    for (const auto& e : *errors) text += e.message + "\n";
    return text.empty() ? file + ": did not load\n" : text;
  }
  out = std::get<lethe::ScenarioConfig>(std::move(loaded));
  return "";
}

// Every output path before the first seed: a folder that is missing is created, one that cannot be written
// stops the suite now instead of losing its results at the end. The previous run's reports are removed: a
// suite stopped before its end (SIGINT) leaves none that passes for its.
bool prepare_suite_outputs(const SuiteOptions& o) {
  for (const auto& [path, flag] : {std::pair{o.junit_path, "--junit"}, std::pair{o.json_path, "--json"},
                                   std::pair{o.fingerprint_path, "--fingerprint"}}) {
    if (const auto error = runner::prepare_output_path(path, flag); !error.empty()) {
      std::cerr << "lethe suite: " << error << "\n";
      return false;
    }
    std::error_code stale;
    if (!path.empty() && fs::is_regular_file(path, stale)) fs::remove(path, stale);
  }
  return true;
}

// The scenarios that loaded, with their files; a file that does not load is reported (stderr, a JUnit case) and
// the others still run.
struct SuiteScenarios {
  std::vector<lethe::ScenarioConfig> configs;
  std::vector<std::string> files;
  std::vector<reports::JunitCase> load_cases;
};

SuiteScenarios load_suite(const SuiteOptions& o, const std::vector<std::string>& all_files) {
  SuiteScenarios loaded;
  for (const auto& f : all_files) {
    std::optional<lethe::ScenarioConfig> config;
    const std::string errors = load_for_suite(f, o.sets, config);
    if (!errors.empty()) {
      std::cerr << errors;
      reports::JunitCase c;
      c.scenario = fs::path(f).stem().string();  // the name it would have had is unknown
      c.file = f;
      c.load_error = errors;
      loaded.load_cases.push_back(std::move(c));
      continue;
    }
    loaded.configs.push_back(std::move(*config));
    loaded.files.push_back(f);
  }
  return loaded;
}

// What the seeds gave, in job order (scenario by scenario, seeds ascending).
struct SuiteRuns {
  struct Job {
    std::size_t scenario;
    std::uint64_t seed;
  };
  std::vector<Job> jobs;
  std::vector<runner::SeedRun> runs;
  std::vector<double> seconds;
  std::vector<runner::VerifyReport> verified;  // --verify: each seed's counterfactual replays (else empty)
};

SuiteRuns run_suite(const SuiteOptions& o, const std::vector<lethe::ScenarioConfig>& configs,
                    std::chrono::nanoseconds interval) {
  SuiteRuns out;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const auto seeds = o.seeds > 0 ? o.seeds : configs[i].run.seeds;
    for (std::int64_t s = 1; s <= seeds; ++s) out.jobs.push_back(SuiteRuns::Job{i, static_cast<std::uint64_t>(s)});
  }
  out.runs.resize(out.jobs.size());
  out.seconds.assign(out.jobs.size(), 0.0);
  out.verified.resize(out.jobs.size());
  lethe::WorldOptions options;
  // --verify replays every duplicate; --fingerprint digests what replay --explain prints, which has them all.
  if (o.verify || !o.fingerprint_path.empty()) options.max_explanations = SIZE_MAX;
  runner::Progress progress("lethe suite", out.jobs.size(), std::cerr, runner::stderr_progress_mode(), interval);
  runner::parallel_for(out.jobs.size(), o.jobs == 0 ? runner::default_jobs() : o.jobs, [&](std::size_t i) {
    const auto started = std::chrono::steady_clock::now();
    const auto& config = configs[out.jobs[i].scenario];
    progress.seed_started(fmt::format("{} seed {}", config.scenario.name, out.jobs[i].seed));
    out.runs[i] = runner::run_seed(config, out.jobs[i].seed, options);
    if (o.verify && out.runs[i].error.empty()) {
      out.verified[i] = runner::verify_causes(config, out.jobs[i].seed, out.runs[i].result, o.verify_limit);
    }
    out.seconds[i] = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    progress.seed_done(!out.runs[i].error.empty() || !out.runs[i].result.ok || out.verified[i].failed());
  });
  return out;
}

// The table's rows, the JUnit cases, the failure lines and the JSON lines of a finished suite.
struct SuiteTally {
  std::vector<reports::SuiteRow> rows;
  std::vector<reports::JunitCase> cases;
  std::string failures;
  std::string json_lines;
  std::string fingerprint_lines;
  runner::VerifyReport verified;  // --verify: every seed's tallies added
  bool any_error = false;
  bool any_out_of_memory = false;
  bool any_bad_node = false;
  bool any_failure = false;
  bool any_unverified = false;
};

std::string failed_expectations(const lethe::RunResult& result) {
  std::string what;
  for (const auto& x : result.expectations) {
    if (!x.ok) what += (what.empty() ? "" : "; ") + reports::expectation_text(x);
  }
  return what;
}

// One line of --fingerprint: the file, the seed, a digest (64-bit FNV-1a) of what `lethe replay FILE --seed N
// --explain` prints for it, then its JSON result (trace hash included) or its error.
std::string fingerprint_line(const std::string& file, std::uint64_t seed, const runner::SeedRun& run) {
  if (!run.error.empty()) return fmt::format("{} seed={} error: {}\n", file, seed, run.error);
  const std::string explained =
      reports::run_summary(run.result) + runner::explanations_text(runner::ExplainSelection{}, run.result);
  return fmt::format("{} seed={} explain={:016x} {}\n", file, seed, sim::TraceKind::fnv1a(explained),
                     reports::to_json(run.result).dump());
}

// One seed into the tally: its row, its failure lines (an error, failed expectations, causes not verified).
void tally_seed(const SuiteOptions& o, const SuiteScenarios& loaded, const SuiteRuns& runs, std::size_t i,
                SuiteTally& t) {
  const auto& run = runs.runs[i];
  const auto& job = runs.jobs[i];
  auto& row = t.rows[job.scenario];
  const std::string& file = loaded.files[job.scenario];
  ++row.seeds;
  row.messages += run.result.messages;
  row.effects += run.result.effects;
  row.duplicates += run.result.duplicate_effects;
  row.lost += run.result.lost_messages;
  for (std::size_t c = 0; c < lethe::kCauseCount; ++c) row.causes[c] += run.result.duplicates[c];
  const std::string replay = replay_command(file, job.seed, o.sets);
  if (run.out_of_memory()) {
    ++row.errors;
    t.any_out_of_memory = true;
    row.failed_seeds.push_back(job.seed);
    t.failures += fmt::format("RESOURCES {} seed {}: {}\n", row.scenario, job.seed, run.error);
  } else if (!run.error.empty()) {
    ++row.errors;
    t.any_error = t.any_error || !run.bad_input;
    t.any_bad_node = t.any_bad_node || run.bad_input;
    row.failed_seeds.push_back(job.seed);
    t.failures += fmt::format("ERROR {} seed {}: {}\n  replay: {}\n", row.scenario, job.seed, run.error, replay);
  } else if (!run.result.ok) {
    t.any_failure = true;
    row.failed_seeds.push_back(job.seed);
    t.failures += fmt::format("FAIL {} seed {}: {}\n  replay: {} --explain\n  draw it: {} --html {}-seed{}.html\n",
                              row.scenario, job.seed, failed_expectations(run.result), replay, replay, row.scenario,
                              job.seed);
  } else {
    ++row.passed;
  }
  if (runs.verified[i].failed()) {
    t.any_unverified = true;
    t.failures += fmt::format("UNVERIFIED {} seed {}:{}  replay: {} --verify\n", row.scenario, job.seed,
                              runner::verify_text(runs.verified[i]), replay);
  }
  runner::add_tallies(t.verified, runs.verified[i]);
  t.cases.push_back(reports::JunitCase{row.scenario, file, run.result, run.error, replay, runs.seconds[i], ""});
  if (!o.json_path.empty() || o.json_to_stdout) t.json_lines += reports::to_json(run.result).dump() + "\n";
  if (!o.fingerprint_path.empty()) t.fingerprint_lines += fingerprint_line(file, job.seed, run);
}

SuiteTally tally_suite(const SuiteOptions& o, const SuiteScenarios& loaded, const SuiteRuns& runs) {
  SuiteTally t;
  t.rows.resize(loaded.configs.size());
  for (std::size_t i = 0; i < loaded.configs.size(); ++i) {
    t.rows[i].scenario = loaded.configs[i].scenario.name;
    t.rows[i].file = loaded.files[i];
    t.rows[i].shows = std::string(runner::to_string(runner::scenario_story(loaded.configs[i])));
  }
  t.cases = loaded.load_cases;
  for (const auto& c : loaded.load_cases) t.failures += fmt::format("ERROR {}: did not load (messages above)\n", c.file);
  for (std::size_t i = 0; i < runs.jobs.size(); ++i) tally_seed(o, loaded, runs, i, t);
  return t;
}

int command_suite(const SuiteOptions& o) {
  bool ok = true;
  const auto all_files = collect_scenarios(o.paths, ok);
  if (!ok) return kExitBadInput;
  std::string progress_error;
  const auto interval = runner::progress_interval(progress_error);
  if (!interval) {
    std::cerr << "lethe suite: " << progress_error << "\n";
    return kExitBadInput;
  }
  if (!prepare_suite_outputs(o)) return kExitBadInput;
  const SuiteScenarios loaded = load_suite(o, all_files);
  const SuiteRuns runs = run_suite(o, loaded.configs, *interval);
  const SuiteTally t = tally_suite(o, loaded, runs);
  if (!write_suite_files(o, t.json_lines, t.fingerprint_lines, t.cases)) return kExitBadInput;
  if (o.json_to_stdout) std::cout << t.json_lines;
  std::ostream& summary = o.json_to_stdout ? std::cerr : std::cout;
  summary << reports::suite_table(t.rows);
  if (!t.failures.empty()) summary << "\n" << t.failures;
  if (o.verify) summary << runner::verify_summary(t.verified);
  if (t.any_error || t.any_unverified) return kExitInternal;
  if (t.any_out_of_memory) return kExitResources;
  if (!loaded.load_cases.empty() || t.any_bad_node) return kExitBadInput;
  return t.any_failure ? kExitExpectation : kExitOk;
}

// ---------------------------------------------------------------- the commands

// --verify and --verify-limit N, as replay has them; a limit without --verify is bad input (exit 2).
void add_verify_options(CLI::App& command, bool& verify, std::size_t& limit) {
  auto* flag = command.add_flag("--verify", verify,
                                "Prove each duplicate's cause: replay the seed once per duplicated message with the "
                                "cause's window closed, check the duplicate is gone (exit 3 if one is not)");
  command.add_option("--verify-limit", limit, "With --verify: replay at most N duplicates per cause (default all)")
      ->check(CLI::Range(std::size_t{1}, SIZE_MAX))
      ->needs(flag);
}

// Each add_<name>_command adds a subcommand to `app` and returns how to run it, like runner/<name>.cpp's
// register_<name>(); its options live as long as the returned function.
runner::ExtraCommand add_run_command(CLI::App& app) {
  auto run = std::make_shared<RunOptions>();
  auto* command = app.add_subcommand("run", "Run one seed of a scenario and print its result");
  command->add_option("FILE", run->file, "Scenario file (TOML)")->required();
  command->add_option("--seed", run->seed, "Seed (default 1)")->check(runner::seed_check());
  command->add_option("--set", run->sets, "Override a scenario key: KEY=VALUE (repeatable)");
  command->add_flag("--json", run->json, "Print the result as one JSON object");
  command->add_option("--trace", run->trace_path, "Write the full trace as JSON lines");
  command->add_option("--history", run->history_path, "Write the store's history as JSON lines (lethe check reads it)");
  command->add_option("--events", run->events_path, "Write the run's dedupe events as JSON lines (lethe check --events reads them)");
  command->add_option("--dot", run->dot_path, "Write a Graphviz timeline of the first duplicated message (.dot, or .svg / .png rendered by dot)");
  command->add_option("--save-drawn", run->save_drawn_path,
                      "[explore]: write the seed's drawn configuration as a plain scenario file");
  command->add_flag("--check-determinism", run->check_determinism,
                    "Run the seed twice and compare; name the first line where an external node behaved differently");
  add_verify_options(*command, run->verify, run->verify_limit);
  return {command, [run] { return command_run(*run); }};
}

runner::ExtraCommand add_suite_command(CLI::App& app) {
  auto suite = std::make_shared<SuiteOptions>();
  auto* command = app.add_subcommand("suite", "Run every scenario over its seeds, in parallel");
  command->add_option("PATHS", suite->paths, "Scenario files or folders (searched recursively; bench/ and explore/ skipped)")->required();
  command->add_option("--seeds", suite->seeds, "Seeds 1..N per scenario (default: each scenario's run.seeds)")
      ->check(CLI::Range(1, 1000000));
  command->add_option("-j,--jobs", suite->jobs, "Threads (default: the CPUs lethe may run on)")->check(CLI::Range(0, 1024));
  command->add_option("--junit", suite->junit_path, "Write JUnit XML (one testcase per scenario and seed)");
  // --json alone is run's --json (JSON on stdout, the table on stderr); with FILE it writes them there.
  auto* json = command->add_option("--json", suite->json_path,
                                   "Print every result as JSON lines instead of the table (which goes to stderr), "
                                   "or with FILE write them to FILE")
                   ->expected(0, 1);
  command->add_option("--fingerprint", suite->fingerprint_path,
                      "Write each run's behaviour fingerprint to FILE, one line per run: the file, the seed, a digest "
                      "of what replay --explain prints, the JSON result (scripts/baseline compares them)");
  command->add_option("--set", suite->sets, "Override a key in every scenario: KEY=VALUE (repeatable)");
  add_verify_options(*command, suite->verify, suite->verify_limit);
  return {command, [suite, json] {
            suite->json_to_stdout = json->count() > 0 && suite->json_path.empty();
            return command_suite(*suite);
          }};
}

// Every subcommand, in the order `lethe --help` lists them; the extra commands (runner/<name>.cpp) one line each.
std::vector<runner::ExtraCommand> add_commands(CLI::App& app) {
  std::vector<runner::ExtraCommand> commands;
  commands.push_back(add_run_command(app));
  commands.push_back(add_suite_command(app));
  commands.push_back(runner::register_replay(app));
  // commands.push_back(runner::register_<name>(app));
  commands.push_back(runner::register_sweep(app));
  commands.push_back(runner::register_merge(app));
  commands.push_back(runner::register_report(app));
  commands.push_back(runner::register_tune(app));
  commands.push_back(runner::register_shrink(app));
  commands.push_back(runner::register_bench(app));
  commands.push_back(runner::register_live(app));
  commands.push_back(runner::register_check(app));
  commands.push_back(runner::register_explore(app));
  return commands;
}

// After a parse error: the nearest subcommand to an unknown first word, or the nearest option of the chosen
// subcommand to an unknown --flag ("did you mean `--junit`?"). "" when nothing is near enough to be a typo.
std::string suggestion(CLI::App& app, int argc, char** argv) {
  std::vector<std::string> commands;
  for (const auto* sub : app.get_subcommands([](const CLI::App*) { return true; })) commands.push_back(sub->get_name());
  int first = 1;
  while (first < argc && argv[first][0] == '-') ++first;
  if (first >= argc) return "";
  const std::string word = argv[first];
  CLI::App* sub = nullptr;
  for (auto* candidate : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (candidate->check_name(word)) sub = candidate;
  }
  if (sub == nullptr) {
    const std::string near = scenario::text::nearest(word, commands);
    return fmt::format("lethe: unknown command \"{}\"{}; allowed: {}", word,
                       near.empty() ? "" : fmt::format(" (did you mean `{}`?)", near),
                       scenario::text::join(commands, ", "));
  }
  std::vector<std::string> flags;
  for (const auto* option : sub->get_options()) {
    for (const auto& name : option->get_lnames()) flags.push_back("--" + name);
  }
  for (int i = first + 1; i < argc; ++i) {
    const std::string token = argv[i];
    if (token.rfind("--", 0) != 0 || token == "--") continue;
    const std::string name = token.substr(0, token.find('='));
    if (sub->get_option_no_throw(name) != nullptr) continue;
    const std::string near = scenario::text::nearest(name, flags);
    return fmt::format("lethe {}: unknown option {}{}", sub->get_name(), name,
                       near.empty() ? "; see lethe " + sub->get_name() + " --help"
                                    : fmt::format(" (did you mean `{}`?)", near));
  }
  return "";
}

// The parse's outcome as an exit code: help and --version exit 0, any other parse error is bad input.
std::optional<int> parse(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // A near miss says only what it is: CLI11's own sentence ("A subcommand is required") would come first.
    if (const auto hint = suggestion(app, argc, argv); !hint.empty()) {
      std::cerr << hint << "\n";
    } else {
      app.exit(e);
    }
    return kExitBadInput;
  }
}

// True when standard output is a pipe or socket whose reader has gone (`lethe ... | head -1`): poll() reports
// POLLERR on the write end of a pipe with no reader left.
bool reader_has_stopped() {
  struct stat info {};
  if (::fstat(STDOUT_FILENO, &info) != 0 || !(S_ISFIFO(info.st_mode) || S_ISSOCK(info.st_mode))) return false;
  pollfd out{STDOUT_FILENO, POLLOUT, 0};
  return ::poll(&out, 1, 0) == 1 && (out.revents & POLLERR) != 0;
}

// Standard output is a file too (`lethe suite ... > results.txt` on a full disk): a verdict that did not reach
// it is not a success. Keeps an internal error's 3; anything else becomes 2. A reader that stopped reading is
// not an error (as for `git log | head`): the command's own exit code stands and nothing is said.
int check_standard_output(int exit_code) {
  errno = 0;
  std::cout.flush();
  const bool flushed = std::fflush(stdout) == 0;
  if (flushed && std::ferror(stdout) == 0 && std::cout.good()) return exit_code;
  const int error = errno;
  if (error == EPIPE || reader_has_stopped()) return exit_code;
  std::cerr << "lethe: cannot write standard output"
            << (error != 0 ? ": " + std::error_code(error, std::generic_category()).message() : std::string()) << "\n";
  return exit_code == kExitInternal ? exit_code : kExitBadInput;
}

}  // namespace

namespace runner {

std::string version_line() { return fmt::format("lethe {}", lethe::kVersion); }

int run_command_line(int argc, char** argv) {
  if (argc > 0) set_program_name(argv[0]);
  // A write to a pipe whose reader left fails with EPIPE instead of killing lethe (check_standard_output then
  // ends quietly), --help included.
  std::signal(SIGPIPE, SIG_IGN);
  CLI::App app{"lethe: deterministic simulation of effectively-once message processing.\n" + exit_codes_line()};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Help for every command");
  app.set_version_flag("--version", version_line(), "Print the version and exit");
  auto commands = add_commands(app);
  if (const auto parsed = parse(app, argc, argv)) return *parsed;
  // External consumer nodes are child processes: none outlives lethe, a SIGINT or SIGTERM included.
  lethe::external::install_child_reaper_signal_handlers();
  try {
    for (auto& command : commands) {
      if (command.command->parsed()) return check_standard_output(command.run());
    }
    return kExitBadInput;
  } catch (const std::bad_alloc&) {
    std::cerr << "lethe: " << runner::out_of_memory_text() << "\n";
    return kExitResources;
  } catch (const std::exception& e) {
    std::cerr << "lethe: internal error: " << e.what() << "\n";
    return kExitInternal;
  }
}

}  // namespace runner
