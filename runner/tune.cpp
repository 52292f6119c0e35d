#include "runner/tune.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "reports/cells.hpp"
#include "reports/output_file.hpp"
#include "reports/report.hpp"
#include "reports/summary.hpp"
#include "reports/tune_page.hpp"
#include "runner/command_line.hpp"
#include "runner/execute.hpp"
#include "scenario/loader.hpp"
#include "runner/sweep.hpp"
#include "runner/tune_input.hpp"
#include "runner/tune_scenario.hpp"
#include "runner/tune_verdict.hpp"

namespace fs = std::filesystem;

namespace runner {

namespace {

std::string d(sim::Duration v) { return tune_duration_text(v); }
std::string rate_text(double p) { return tune_rate_text(p); }

reports::SurvivalPlot survival_plot(const TuneInput& in, const TuneAnalysis& a) {
  reports::SurvivalPlot plot;
  plot.title = a.law->exact() ? "Processing time: P(T > t), the takeover rate of max_processing_time = t"
                              : "P(" + a.law->name() + " > t), the takeover rate of max_processing_time = t";
  plot.variable = a.law->name();
  plot.target = in.target_duplicates;
  plot.target_quantile = a.target_mpt_exact;
  plot.recommended = a.recommended_mpt;
  plot.patience_limit = a.patience_mpt;
  // Up to a little past the 2x cell, in 400 steps (an empirical law's steps show at this resolution too).
  sim::Duration last = std::max<sim::Duration>(sim::saturating_add(a.target_mpt, a.target_mpt) / 10 * 11, 1);
  // The patience limit too, unless it is so far out that the curve would shrink to the left edge.
  if (a.patience_mpt && *a.patience_mpt > last && *a.patience_mpt / 5 < last) last = *a.patience_mpt / 10 * 11;
  for (int i = 0; i <= 400; ++i) {
    const sim::Duration t = last / 400 * i;
    plot.points.emplace_back(t, a.law->survival(t));
  }
  return plot;
}

// tune.json keeps every duration as integer nanoseconds under KEY_ns, its text beside it under KEY_text;
// both null when there is none.
void put_duration(nlohmann::ordered_json& j, const std::string& key, std::optional<sim::Duration> value) {
  j[key + "_ns"] = value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json();
  j[key + "_text"] = value ? nlohmann::ordered_json(sim::format_duration(*value)) : nlohmann::ordered_json();
}

nlohmann::ordered_json inputs_json(const TuneInput& in) {
  nlohmann::ordered_json j;
  j["processing_time"] = in.processing_time_text;
  j["samples"] = in.sample_count;
  j["crash_rate_per_second"] = in.crash_rate_per_second;
  j["target_duplicates"] = in.target_duplicates;
  put_duration(j, "patience", in.patience);
  put_duration(j, "redelivery_window", in.redelivery_window);
  put_duration(j, "poll", in.poll);
  const auto law_text = [](const std::optional<sim::Distribution>& law) {
    return law ? nlohmann::ordered_json(law->to_string()) : nlohmann::ordered_json();
  };
  j["pause_every"] = law_text(in.pause_every);
  j["pause_for"] = law_text(in.pause_for);
  j["clock_skew"] = law_text(in.clock_skew);
  if (in.sample_count > 0) {
    nlohmann::ordered_json summary;
    summary["count"] = in.sample_count;
    for (const auto& [name, level] : {std::pair{"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}, {"max", 1.0}}) {
      put_duration(summary, name, in.processing_time.quantile(level));
    }
    j["samples_summary"] = summary;
  }
  return j;
}

std::vector<std::pair<std::string, std::string>> inputs_rows(const TuneInput& in, const ConfirmationSize& size,
                                                             const TuneOptions& o, const std::string& world) {
  const std::int64_t seeds = o.seeds;
  const std::int64_t messages = o.messages;
  std::vector<std::pair<std::string, std::string>> rows;
  rows.emplace_back("processing time", in.processing_time_text);
  if (in.sample_count > 0) {
    const auto& law = in.processing_time;
    rows.emplace_back("samples", fmt::format("{} values: p50 {}, p90 {}, p99 {}, largest {}", in.sample_count,
                                             d(law.quantile(0.5)), d(law.quantile(0.9)), d(law.quantile(0.99)),
                                             d(law.quantile(1.0))));
  }
  rows.emplace_back("crash rate", fmt::format("{:.3g} per worker per hour{}", in.crash_rate_per_second * 3600.0,
                                              size.crash_rate_raised
                                                  ? fmt::format(" (the confirmation runs {:.3g}/h to see enough crashes)",
                                                                size.crash_rate_per_second * 3600.0)
                                                  : std::string()));
  rows.emplace_back("target duplicate rate", rate_text(in.target_duplicates) + " (takeovers of live work per message)");
  rows.emplace_back("patience", in.patience ? d(*in.patience) : "none given");
  rows.emplace_back("redelivery window",
                    in.redelivery_window ? d(*in.redelivery_window) : "none given (no ttl recommended)");
  rows.emplace_back("poll", d(in.poll));
  rows.emplace_back("pauses", in.pause_every ? fmt::format("every {}, lasting {}", in.pause_every->to_string(),
                                                           in.pause_for->to_string())
                                             : "none given");
  rows.emplace_back("clock skew", in.clock_skew ? in.clock_skew->to_string() + " per worker" : "none given");
  if (!o.scenario.empty()) {
    rows.emplace_back("confirmation", fmt::format("{} seeds x {} messages a cell. {}", seeds, size.messages, world));
    return rows;
  }
  rows.emplace_back("confirmation",
                    fmt::format("{} seeds x {} messages a cell{}, {:.3g} messages/s, about {:.0f} recoveries "
                                "expected a seed (a p99 needs {})", seeds, size.messages,
                                size.messages_raised ? fmt::format(" (--messages {} raised for the crash side)", messages)
                                                     : std::string(),
                                size.message_rate_per_second, size.expected_recoveries, kRecoveriesForP99));
  return rows;
}

std::vector<reports::TuneCandidateRow> candidate_rows(const TuneInput& in, const TuneAnalysis& a) {
  std::vector<reports::TuneCandidateRow> rows;
  for (const auto& c : a.candidates) {
    rows.push_back({d(c.mpt), candidate_rate_text(in, a, c), d(c.recovery),
                    reports::format_time(static_cast<std::int64_t>(std::llround(c.crash_delay_ns))), c.label,
                    c.meets_target, c.within_patience});
  }
  return rows;
}

nlohmann::ordered_json analysis_json(const TuneInput& in, const TuneAnalysis& a) {
  nlohmann::ordered_json json;
  json["inputs"] = inputs_json(in);
  json["recommended"] = nlohmann::ordered_json::object();
  put_duration(json["recommended"], "max_processing_time", a.recommended_mpt);
  put_duration(json["recommended"], "ttl", a.ttl);
  put_duration(json, "target_mpt", a.target_mpt);
  json["target_mpt_exact_ns"] = a.target_mpt_exact;
  put_duration(json, "patience_mpt", a.patience_mpt);
  nlohmann::ordered_json candidates = nlohmann::ordered_json::array();
  for (const auto& c : a.candidates) {
    nlohmann::ordered_json candidate;
    put_duration(candidate, "max_processing_time", c.mpt);
    candidate["label"] = c.label;
    candidate["takeover_duplicate_rate"] = c.takeover_rate;
    candidate["takeover_share"] = {{"work", c.work_rate},
                                   {"pauses", c.pause_rate},
                                   {"clock_skew", c.skew_rate}};
    candidate["recovery_ns"] = c.recovery;
    candidate["crash_delay_per_message_ns"] = static_cast<std::int64_t>(std::llround(c.crash_delay_ns));
    candidate["meets_target"] = c.meets_target;
    candidate["within_patience"] = c.within_patience;
    candidates.push_back(candidate);
  }
  json["candidates"] = candidates;
  // The shares of pauses and skew are differences of Monte Carlo survivals: below this, 0 means "not seen".
  json["takeover_share_resolution"] = a.law->resolution();
  json["notes"] = a.notes;
  return json;
}

void print_analysis(const TuneInput& in, const TuneAnalysis& a, const Verdict& v) {
  std::cout << fmt::format("processing time: {}{}\n", in.processing_time_text,
                           in.sample_count > 0 ? fmt::format(" ({} samples)", in.sample_count) : "");
  std::cout << fmt::format("crash rate: {:.3g} per worker per hour; target duplicate rate: {}; patience: {}; poll: {}\n",
                           in.crash_rate_per_second * 3600.0, rate_text(in.target_duplicates),
                           in.patience ? d(*in.patience) : "none given", d(in.poll));
  if (!a.law->exact()) {
    std::cout << fmt::format("a live owner looks stale when its {} passes mpt{}{}\n", a.law->name(),
                             in.pause_every ? fmt::format("; pauses every {} lasting {}", in.pause_every->to_string(),
                                                          in.pause_for->to_string())
                                            : "",
                             in.clock_skew ? "; clock offset per worker " + in.clock_skew->to_string() : "");
  }
  std::cout << "\n" << v.text << "\n";
  std::cout << "trade-off: duplicates from taking over live work against recovery latency after a crash\n";
  std::cout << candidates_text(in, a);
  std::cout << fmt::format("  (an attempt of typical length {} is hit by a crash with probability {})\n",
                           d(static_cast<sim::Duration>(std::llround(a.typical_processing_ns))),
                           rate_text(a.crash_hit_probability));
  for (const auto& note : a.notes) std::cout << "note: " << note << "\n";
}

// The cells of the confirmation sweep: around the recommendation, or the two closest options.
std::vector<sim::Duration> confirmation_mpts(const TuneAnalysis& a) {
  std::vector<sim::Duration> mpts;
  if (a.recommended_mpt) {
    mpts = {round_up_significant(*a.recommended_mpt / 2), *a.recommended_mpt,
            round_up_significant(sim::saturating_add(*a.recommended_mpt, *a.recommended_mpt))};
  } else {
    if (a.patience_mpt) mpts.push_back(*a.patience_mpt);
    mpts.push_back(a.target_mpt);
  }
  return mpts;
}

// What the confirmation sweep measured, and the verdict per side.
struct Confirmation {
  std::vector<reports::CellSummary> cells;
  std::vector<reports::TuneMeasuredRow> rows;
  std::string text;
  nlohmann::ordered_json json = nlohmann::ordered_json::array();
  std::map<std::size_t, double> analytic;  // by cell index
  std::vector<SeedSpread> spreads;         // by cell index
  double crash_rate_per_second = 0.0;      // the confirmation world's (raised for samples): the analytic recovery's
  std::uint64_t takeovers = 0;             // at the recommendation, over every round of the sequential test
  std::uint64_t trials = 0;
  std::array<std::uint64_t, lethe::kCauseCount> causes{};  // duplicates by cause, over the same rounds
  int looks = 0;
  SideVerdict takeover{false, false, "takeover rate not confirmed: --no-confirm skipped the confirmation",
                       "not confirmed", "run without --no-confirm"};
  SideVerdict recovery{false, false, "recovery not confirmed: --no-confirm skipped the confirmation",
                       "not confirmed", "run without --no-confirm"};
  std::optional<SideVerdict> ttl;          // when a ttl is recommended (--redelivery-window)
};

// Each cell's spread of the per-seed recovery p50 / p99, read back from the sweep's results.jsonl.
std::vector<SeedSpread> seed_spreads(const fs::path& results, std::size_t cells) {
  std::vector<SeedSpread> spreads(cells);
  std::ifstream file(results);
  std::string text;
  while (std::getline(file, text)) {
    std::string error;
    const auto line = parse_result_line(text, error);
    if (!line || line->cell >= cells || !line->run.error.empty()) continue;
    const auto& q = line->run.result.recovery_latency;
    if (q.count == 0) continue;
    auto& s = spreads[line->cell];
    const bool first = s.seeds++ == 0;
    s.p50_low = first ? q.p50 : std::min(s.p50_low, q.p50);
    s.p50_high = first ? q.p50 : std::max(s.p50_high, q.p50);
    s.p99_low = first ? q.p99 : std::min(s.p99_low, q.p99);
    s.p99_high = first ? q.p99 : std::max(s.p99_high, q.p99);
  }
  return spreads;
}

void add_measured(const TuneInput& in, const TakeoverLaw& law, sim::Duration mpt, const reports::CellSummary& cell,
                  Confirmation& c) {
  const double analytic = law.survival(mpt);
  const RecoveryEstimate recovery_model =
      analytic_recovery(in.processing_time, mpt, in.poll, c.crash_rate_per_second);
  const SeedSpread spread = cell.index < c.spreads.size() ? c.spreads[cell.index] : SeedSpread{};
  c.analytic[cell.index] = analytic;
  const auto takeover_count = cell.by_cause[static_cast<std::size_t>(lethe::Cause::TakeoverWhileAlive)];
  const double takeovers =
      cell.trials == 0 ? 0.0 : static_cast<double>(takeover_count) / static_cast<double>(cell.trials);
  const std::string recovery =
      cell.recovery_latency.count == 0
          ? std::string("none")
          : fmt::format("{} [{}..{}] / {} [{}..{}] ({})", d(cell.recovery_latency.p50), d(spread.p50_low),
                        d(spread.p50_high), d(cell.recovery_latency.p99), d(spread.p99_low), d(spread.p99_high),
                        cell.recovery_latency.count);
  const std::string analytic_recovery_text = d(recovery_model.p50) + " / " + d(recovery_model.p99);
  c.text += fmt::format("  {:>10}  {:>10}  {:>10}  {:>24}  {:>10}  {:>17}  {}\n", d(mpt),
                        takeover_rate_text(in, analytic), rate_text(cell.duplicate_rate),
                        fmt::format("[{}, {}]", rate_text(cell.duplicate_interval.low),
                                    rate_text(cell.duplicate_interval.high)),
                        rate_text(takeovers), analytic_recovery_text, recovery);
  c.rows.push_back({d(mpt), takeover_rate_text(in, analytic), rate_text(cell.duplicate_rate),
                    rate_text(cell.duplicate_interval.low), rate_text(cell.duplicate_interval.high),
                    rate_text(takeovers), analytic_recovery_text, recovery});
  nlohmann::ordered_json cell_json;
  put_duration(cell_json, "max_processing_time", mpt);
  c.json.push_back({{"max_processing_time_ns", cell_json["max_processing_time_ns"]},
                    {"max_processing_time_text", cell_json["max_processing_time_text"]},
                    {"analytic_duplicate_rate", analytic},
                    {"measured_duplicate_rate", cell.duplicate_rate},
                    {"interval", {cell.duplicate_interval.low, cell.duplicate_interval.high}},
                    {"duplicates", cell.duplicates},
                    {"trials", cell.trials},
                    {"takeover_while_alive", takeover_count},
                    {"recovery_latency_p50_ns", cell.recovery_latency.p50},
                    {"recovery_latency_p99_ns", cell.recovery_latency.p99},
                    {"recovery_samples", cell.recovery_latency.count},
                    {"recovery_seeds_p50_low_ns", spread.p50_low},
                    {"recovery_seeds_p50_high_ns", spread.p50_high},
                    {"recovery_seeds_p99_low_ns", spread.p99_low},
                    {"recovery_seeds_p99_high_ns", spread.p99_high},
                    {"analytic_recovery_p50_ns", recovery_model.p50},
                    {"analytic_recovery_p99_ns", recovery_model.p99}});
}

// The takeover side's sequential test (kMostLooks): while the interval contains the target, run the
// recommendation's cell on the next seeds (as many again as so far) and add their takeovers and trials. False
// after printing why when lethe broke on a seed.
bool sequential_takeover(const TuneOptions& o, const TuneInput& in, const SweepSpec& spec, sim::Duration centre,
                         Confirmation& c) {
  std::int64_t seeds = o.seeds;
  for (c.looks = 1;; ++c.looks) {
    c.takeover = takeover_verdict(in, c.takeovers, c.trials, c.looks, c.looks < kMostLooks);
    if (c.takeover.state != "undecided") return true;
    std::vector<std::string> overrides = spec.sets;
    overrides.push_back("protocol.max_processing_time=" + sim::format_duration(centre));
    const auto loaded = scenario::load_scenario_text(*spec.scenario_text, spec.scenario_file.string(),
                                                     spec.scenario_file.parent_path(), overrides);
    const auto* config = std::get_if<lethe::ScenarioConfig>(&loaded);
    if (config == nullptr) {
      std::cerr << "lethe tune: the confirmation scenario did not load for the next round\n";
      return false;
    }
    std::cout << fmt::format("takeover side undecided after {} trials (round {} of at most {}): seeds {}..{} at {}\n",
                             c.trials, c.looks, kMostLooks, seeds + 1, 2 * seeds, d(centre));
    std::vector<SeedRun> runs(static_cast<std::size_t>(seeds));
    parallel_for(runs.size(), o.jobs == 0 ? default_jobs() : o.jobs, [&](std::size_t i) {
      runs[i] = run_seed(*config, static_cast<std::uint64_t>(seeds) + 1 + i);
    });
    for (const auto& run : runs) {
      if (!run.error.empty()) {
        std::cerr << fmt::format("lethe tune: seed {} of the confirmation broke: {}\n", run.result.seed, run.error);
        return false;
      }
      c.takeovers += run.result.duplicates[static_cast<std::size_t>(lethe::Cause::TakeoverWhileAlive)];
      c.trials += run.result.messages * config->topology.processors.size();
      for (std::size_t k = 0; k < lethe::kCauseCount; ++k) c.causes[k] += run.result.duplicates[k];
    }
    seeds *= 2;
  }
}

// Runs the confirmation sweep; nullopt after printing why when lethe broke or refused the scenario (or could not
// write its files), with the sweep's exit code in failed_exit.
std::optional<Confirmation> confirm(const TuneOptions& o, const TuneInput& in, const TakeoverLaw& law,
                                    const ConfirmationSize& size, const RecoveryWorld& world,
                                    const std::vector<sim::Duration>& mpts, sim::Duration centre,
                                    const SweepSpec& spec, int& failed_exit) {
  std::cout << fmt::format("\nconfirmation sweep: {} cells x {} seeds x {} messages{} ({})\n", mpts.size(), o.seeds,
                           size.messages,
                           size.messages_raised ? fmt::format(" (raised from {} for the crash side's p99)", o.messages)
                                                : std::string(),
                           spec.out_dir.string());
  const SweepOutcome outcome = run_sweep(spec);
  if (outcome.exit_code == kExitBadInput || outcome.exit_code == kExitInternal ||
      outcome.exit_code == kExitResources) {
    std::cerr << fmt::format("lethe tune: the confirmation sweep failed (exit {}); the generated scenario is {}\n",
                             outcome.exit_code, spec.scenario_file.string());
    failed_exit = outcome.exit_code;
    return std::nullopt;
  }
  Confirmation c;
  c.crash_rate_per_second = size.crash_rate_per_second;
  c.cells = outcome.cells.cells;
  c.text = fmt::format("  {:>10}  {:>10}  {:>10}  {:>24}  {:>10}  {:>17}  {}\n", "mpt", "analytic", "measured",
                       "95% interval", "takeovers", "analytic rec p50/99", "measured rec. p50 [seeds] / p99 [seeds] (n)");
  c.spreads = seed_spreads(spec.out_dir / "results.jsonl", c.cells.size());
  for (std::size_t i = 0; i < c.cells.size() && i < mpts.size(); ++i) add_measured(in, law, mpts[i], c.cells[i], c);
  std::cout << "measured in the simulator (duplicates: every cause; the analytic rate is an upper bound of the "
               "takeovers, a waiter notices a stale record only at its next re-read; recovery: the median over seeds "
               "of each seed's p50 / p99, with the seeds' range):\n"
            << c.text;
  // The verdicts are on the cell of the recommendation (or of the target, when there is none).
  for (std::size_t i = 0; i < c.cells.size() && i < mpts.size(); ++i) {
    if (mpts[i] != centre) continue;
    c.recovery = recovery_verdict(in, size, c.cells[i], o.seeds, size.messages,
                                  analytic_recovery(in.processing_time, centre, in.poll, size.crash_rate_per_second),
                                  c.spreads[i], centre, world);
    c.takeovers = c.cells[i].by_cause[static_cast<std::size_t>(lethe::Cause::TakeoverWhileAlive)];
    c.trials = c.cells[i].trials;
    c.causes = c.cells[i].by_cause;
    if (!sequential_takeover(o, in, spec, centre, c)) return std::nullopt;
  }
  return c;
}

nlohmann::ordered_json confirmation_plan_json(const TuneOptions& o, const ConfirmationSize& size) {
  return {{"seeds", o.seeds},
          {"messages", size.messages},
          {"messages_given", o.messages},
          {"message_rate_per_second", size.message_rate_per_second},
          {"crash_rate_per_second", size.crash_rate_per_second},
          {"crash_rate_raised", size.crash_rate_raised},
          {"expected_recoveries_per_seed", size.expected_recoveries},
          {"recoveries_needed_per_seed_for_p99", kRecoveriesForP99}};
}

// The ttl side (only when a ttl is recommended): a sweep of ttl_scenario() over ttl = half the redelivery window
// and the recommendation, in DIR/ttl-confirmation. False after printing why when the sweep failed (its exit code
// in failed_exit).
bool confirm_ttl(const TuneOptions& o, const TuneInput& in, const TuneAnalysis& a, sim::Duration mpt,
                 const fs::path& dir, std::optional<SideVerdict>& verdict, int& failed_exit) {
  if (!a.ttl || !in.redelivery_window) return true;
  const std::string text = ttl_scenario(in, a, mpt, o.seeds);
  const fs::path path = dir / "ttl-scenario.toml";
  const fs::path out = dir / "ttl-confirmation";
  if (const auto error = reports::write_file(path, text); !error.empty()) {
    std::cerr << "lethe tune: " << error << "\n";
    failed_exit = kExitBadInput;
    return false;
  }
  std::error_code ec;
  fs::remove_all(out, ec);
  SweepSpec spec;
  spec.scenario_file = path;
  spec.scenario_text = text;
  spec.vary = {VarySpec{"protocol.ttl", {d(*in.redelivery_window / 2), d(*a.ttl)}}};
  spec.seeds = o.seeds;
  spec.jobs = o.jobs;
  spec.out_dir = out;
  spec.command_line = fmt::format("lethe sweep {} --vary protocol.ttl={},{} --seeds {} --out {}",
                                  shell_quote(path.string()), spec.vary[0].values[0], spec.vary[0].values[1], o.seeds,
                                  shell_quote(out.string()));
  spec.progress = stderr_progress_mode();
  spec.messages_out = &std::cerr;
  std::cout << fmt::format("\nttl confirmation: {} x {} seeds x {} messages, each copied once up to {} late ({})\n",
                           spec.vary[0].values.size(), o.seeds, kTtlMessages, d(*in.redelivery_window), out.string());
  const SweepOutcome outcome = run_sweep(spec);
  if (outcome.exit_code == kExitBadInput || outcome.exit_code == kExitInternal ||
      outcome.exit_code == kExitResources || outcome.cells.cells.size() != 2) {
    std::cerr << fmt::format("lethe tune: the ttl confirmation sweep failed (exit {}); the generated scenario is {}\n",
                             outcome.exit_code, path.string());
    failed_exit = outcome.exit_code == kExitBadInput || outcome.exit_code == kExitResources ? outcome.exit_code
                                                                                           : kExitInternal;
    return false;
  }
  verdict = ttl_verdict(in, a, outcome.cells.cells[1], outcome.cells.cells[0]);
  return true;
}

// Where the confirmation runs: the generated scenario (written to DIR/scenario.toml) or the user's --scenario file
// with the recommended values set.
struct ConfirmationWorld {
  fs::path path;
  std::string text;
  std::vector<std::string> sets;  // --set overrides in every cell (the user's scenario: the recommended ttl)
  RecoveryWorld recovery;
  std::string sentence;           // for the report
};

// The user's scenario as the confirmation world; `size` becomes its own (messages, crash rate). nullopt after
// printing why (exit 2).
// What the user's scenario has that the analysis was not given: the analytic figures leave it out.
void warn_unweighed(const TuneInput& in, const lethe::ScenarioConfig& config, const std::string& file) {
  const auto note = [&](const std::string& what, const std::string& option) {
    std::cerr << fmt::format("lethe tune: note: {} {} but tune was given no {}: the analytic figures leave it out, "
                             "the measured ones do not\n", file, what, option);
  };
  if (config.faults.pause_every && !in.pause_every) note("pauses its workers (faults.pause_every)", "--pause-every");
  if (config.faults.clock_skew && !in.clock_skew) note("skews its workers' clocks (faults.clock_skew)", "--clock-skew");
  if (in.sample_count == 0 && config.workload.processing_time.to_string() != in.processing_time.to_string()) {
    note("has workload.processing_time = " + config.workload.processing_time.to_string(),
         "--processing-time of that law");
  }
}

std::optional<ConfirmationWorld> user_world(const TuneOptions& o, const TuneInput& in, const TuneAnalysis& a,
                                            ConfirmationSize& size) {
  auto user = load_tune_scenario(o.scenario, a.ttl, std::cerr);
  if (!user) return std::nullopt;
  const auto& config = user->config;
  warn_unweighed(in, config, o.scenario);
  size = ConfirmationSize{};
  size.messages = config.workload.messages;
  if (config.faults.crash_every) size.crash_rate_per_second = 1e9 / config.faults.crash_every->mean_ns();
  ConfirmationWorld w{user->file, user->text, user->sets, {}, {}};
  w.recovery.redelivery = user->redelivery + ", so recovery is the longer of that and the wait for the record to age";
  w.recovery.messages_setting = "workload.messages =";
  w.recovery.messages_where = " in " + o.scenario;
  w.recovery.no_recoveries = config.faults.crash_every
                                 ? "more crashes (faults.crash_every) or more workload.messages in " + o.scenario
                                 : "faults.crash_every in " + o.scenario + " (it crashes no worker)";
  w.sentence = fmt::format("Your scenario {} as written (its source, consumers, workload and faults){}.", o.scenario,
                           a.ttl ? ", with protocol.ttl = " + d(*a.ttl) : std::string());
  return w;
}

std::optional<ConfirmationWorld> confirmation_world(const TuneOptions& o, const TuneInput& in, const TuneAnalysis& a,
                                                    const std::vector<sim::Duration>& mpts, ConfirmationSize& size) {
  if (!o.scenario.empty()) return user_world(o, in, a, size);
  const sim::Duration centre = a.recommended_mpt.value_or(a.target_mpt);
  const sim::Duration largest = *std::max_element(mpts.begin(), mpts.end());
  const sim::Duration smallest = *std::min_element(mpts.begin(), mpts.end());
  ConfirmationWorld w;
  w.path = fs::path(o.out) / "scenario.toml";
  w.text = confirmation_scenario(in, a, centre, o.messages, o.seeds, largest, smallest);
  if (const auto error = reports::write_file(w.path, w.text); !error.empty()) {
    std::cerr << "lethe tune: " << error << "\n";
    return std::nullopt;
  }
  w.recovery.redelivery = fmt::format(
      "the queue redelivers a crashed attempt's message after its visibility_timeout {}, before the record is "
      "stale, so the wait for the record to age bounds recovery", d(std::max<sim::Duration>(smallest, sim::kMillisecond)));
  w.sentence = "The generated scenario below, every message redelivered while in flight.";
  return w;
}

// The expected duplicate rate of each cause at the recommendation, with its 95% Wilson interval: the causes seen,
// then one row for every other cause (0, with the interval a count of 0 allows). `crash_scale` (given crash rate /
// the confirmation's, 1 when not raised) scales the causes a crash opens (intervention NoCrash): at most
// kMostAttemptsHit of attempts are hit, so their rate is proportional to the crash rate.
std::vector<reports::TuneCauseRow> cause_rows(const Confirmation& c, double crash_scale, nlohmann::ordered_json& json) {
  std::vector<reports::TuneCauseRow> rows;
  json = nlohmann::ordered_json::array();
  const auto add = [&](const std::string& name, const std::string& what, std::uint64_t n, bool by_crash) {
    const auto interval = reports::wilson_interval(std::min(n, c.trials), c.trials);
    const double rate = c.trials == 0 ? 0.0 : static_cast<double>(n) / static_cast<double>(c.trials);
    rows.push_back({name, what, std::to_string(n), rate_text(rate), rate_text(interval.low), rate_text(interval.high),
                    ""});
    json.push_back({{"cause", name}, {"duplicates", n}, {"rate", rate}, {"interval", {interval.low, interval.high}}});
    if (by_crash && crash_scale < 1.0) {
      rows.back().at_given_rate = fmt::format("{} [{}, {}]", rate_text(rate * crash_scale),
                                              rate_text(interval.low * crash_scale),
                                              rate_text(interval.high * crash_scale));
      json.back()["at_given_crash_rate"] = {{"rate", rate * crash_scale},
                                            {"interval", {interval.low * crash_scale, interval.high * crash_scale}}};
    }
  };
  std::size_t unseen = 0;
  for (std::size_t k = 0; k < lethe::kCauseCount; ++k) {
    const auto& cause = lethe::kCauses[k];
    if (c.causes[k] == 0) ++unseen;
    else add(std::string(cause.name), std::string(cause.description), c.causes[k],
             cause.intervention == lethe::Intervention::NoCrash);
  }
  if (unseen > 0) add("every other cause", fmt::format("none of the other {} causes happened", unseen), 0, false);
  return rows;
}

void print_causes(const std::vector<reports::TuneCauseRow>& rows, const std::string& caption) {
  std::cout << "\n" << caption << ":\n";
  for (const auto& r : rows) {
    std::cout << fmt::format("  {:<24} {:>6}  {:>10}  [{}, {}]{}\n", r.cause, r.duplicates, r.rate, r.interval_low,
                             r.interval_high, r.at_given_rate.empty() ? "" : "; at the given crash rate " + r.at_given_rate);
  }
}

void add_verdicts(const Confirmation& measured, bool confirmed, nlohmann::ordered_json& json, reports::TunePage& page) {
  const auto verdict_json = [](const SideVerdict& side) {
    return nlohmann::ordered_json{
        {"confirmed", side.confirmed}, {"state", side.state}, {"text", side.text}, {"change", side.change}};
  };
  json["verdict"] = {{"takeover", verdict_json(measured.takeover)}, {"recovery", verdict_json(measured.recovery)}};
  if (measured.ttl) json["verdict"]["ttl"] = verdict_json(*measured.ttl);
  if (confirmed) {
    json["sequential_test"] = {{"looks", measured.looks},
                               {"most_looks", kMostLooks},
                               {"takeovers", measured.takeovers},
                               {"trials", measured.trials},
                               {"confidence_per_look", 0.99}};
  }
  std::cout << "\nverdict:\n  " << measured.takeover.text << "\n  " << measured.recovery.text << "\n"
            << (measured.ttl ? "  " + measured.ttl->text + "\n" : "");
  page.verdicts = {{measured.takeover.confirmed, measured.takeover.text},
                   {measured.recovery.confirmed, measured.recovery.text}};
  if (measured.ttl) page.verdicts.push_back({measured.ttl->confirmed, measured.ttl->text});
}

// Runs the confirmation (both sweeps) and fills the report, the JSON and the page; 0, or the exit code to end with.
int run_confirmation(const TuneOptions& o, const TuneInput& in, const TuneAnalysis& a, const ConfirmationSize& size,
                     const ConfirmationWorld& world, const VarySpec& axis, const std::string& sweep_command,
                     reports::ReportInput& report, nlohmann::ordered_json& json, reports::TunePage& page) {
  const std::vector<sim::Duration> mpts = confirmation_mpts(a);
  const sim::Duration centre = a.recommended_mpt.value_or(a.target_mpt);
  const fs::path confirmation = fs::path(o.out) / "confirmation";
  std::error_code ec;
  fs::remove_all(confirmation, ec);
  SweepSpec spec;
  spec.scenario_file = world.path;
  spec.scenario_text = world.text;
  spec.sets = world.sets;
  spec.vary = {axis};
  spec.seeds = o.seeds;
  spec.jobs = o.jobs;
  spec.out_dir = confirmation;
  spec.command_line = sweep_command;
  spec.progress = stderr_progress_mode();
  spec.messages_out = &std::cerr;
  // The sweep's own exit code: one that could not write its files (a full disk) is exit 2, not an internal error.
  int failed_exit = kExitInternal;
  auto measured = confirm(o, in, *a.law, size, world.recovery, mpts, centre, spec, failed_exit);
  if (!measured) return failed_exit;
  if (!o.scenario.empty() && measured->takeover.state == "not confirmed") {
    const std::string also = "; or give tune what stalls a live owner in " + o.scenario +
                             " (--pause-every/--pause-for, --clock-skew) so the recommendation weighs it";
    measured->takeover.change += also;
    measured->takeover.text += also;
  }
  report.cells = measured->cells;
  report.analytic_duplicate_rate = measured->analytic;
  json["confirmation"] = measured->json;
  page.measured = measured->rows;
  if (!confirm_ttl(o, in, a, centre, o.out, measured->ttl, failed_exit)) return failed_exit;
  page.causes_caption = fmt::format(
      "expected duplicate rate per cause at max_processing_time = {} ({} trials, 95% Wilson interval)", d(centre),
      measured->trials);
  double crash_scale = 1.0;
  if (size.crash_rate_raised) {
    crash_scale = in.crash_rate_per_second / size.crash_rate_per_second;
    page.causes_caption += fmt::format("; a cause a crash opens (crash_after_effect) comes here at the confirmation's "
                                       "{:.3g} crashes an hour per worker, and is also given scaled to the given {:.3g}/h "
                                       "(its rate is proportional to the crash rate)",
                                       size.crash_rate_per_second * 3600.0, in.crash_rate_per_second * 3600.0);
  }
  nlohmann::ordered_json causes;
  page.causes = cause_rows(*measured, crash_scale, causes);
  json["expected_duplicates_by_cause"] = {{"max_processing_time_ns", centre}, {"trials", measured->trials},
                                          {"causes", causes}};
  print_causes(page.causes, page.causes_caption);
  add_verdicts(*measured, true, json, page);
  return kExitOk;
}

int run_tune(const TuneOptions& o) {
  // The folder first: the samples are copied into it, and nothing is computed for a folder that cannot be had.
  std::error_code ec;
  const fs::path dir = o.out;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir, ec)) {
    std::cerr << fmt::format("lethe tune: --out {}: cannot create the folder{}\n", dir.string(),
                             ec ? ": " + ec.message() : std::string());
    return kExitBadInput;
  }
  const auto input = tune_input(o);
  if (!input) return kExitBadInput;
  const TuneInput& in = *input;
  const TuneAnalysis a = analyze_tuning(in);
  const std::vector<sim::Duration> mpts = confirmation_mpts(a);
  ConfirmationSize size = size_confirmation(in, a, o.messages, o.seeds);
  const auto world = confirmation_world(o, in, a, mpts, size);
  if (!world) return kExitBadInput;
  const Verdict v = verdict(in, a);
  print_analysis(in, a, v);

  VarySpec axis;
  axis.key = "protocol.max_processing_time";
  for (const auto mpt : mpts) axis.values.push_back(sim::format_duration(mpt));
  std::string vary_text = axis.key + "=";
  for (std::size_t i = 0; i < axis.values.size(); ++i) vary_text += (i > 0 ? "," : "") + axis.values[i];
  std::string sets_text;
  for (const auto& set : world->sets) sets_text += " --set " + shell_quote(set);
  const std::string sweep_command = fmt::format("lethe sweep {}{} --vary {} --seeds {} --out {}",
                                                shell_quote(world->path.string()), sets_text, vary_text, o.seeds,
                                                shell_quote((dir / "confirmation").string()));

  nlohmann::ordered_json json = analysis_json(in, a);
  json["confirmation_plan"] = confirmation_plan_json(o, size);
  json["confirmation_plan"]["scenario"] = o.scenario.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(o.scenario);

  reports::ReportInput report;
  report.title = fmt::format("lethe tune: max_processing_time for {}", in.processing_time_text);
  report.varied_keys = {axis.key};
  report.scenario_path = world->path.string();
  report.scenario_toml = world->text;
  report.command = this_command_line() + "\n\n# the confirmation sweep alone:\n" + sweep_command;
  report.analytic_label = a.law->exact() ? "analytic P(T > mpt)" : "analytic P(" + a.law->name() + " > mpt)";
  report.target_rate = in.target_duplicates;
  report.target_label = "target " + rate_text(in.target_duplicates);
  if (in.patience) {
    report.patience_seconds = static_cast<double>(*in.patience) / 1e9;
    report.patience_label = "patience " + d(*in.patience);
  }
  reports::TunePage page;
  page.world = world->sentence;
  if (o.no_confirm) {
    add_verdicts(Confirmation{}, false, json, page);
  } else if (const int failed = run_confirmation(o, in, a, size, *world, axis, sweep_command, report, json, page);
             failed != kExitOk) {
    return failed;
  }
  page.recommendation = v.text;
  page.inputs = inputs_rows(in, size, o, world->sentence);
  page.survival = survival_plot(in, a);
  page.notes = a.notes;
  page.candidates = candidate_rows(in, a);
  if (!a.law->exact()) page.age = a.law->name();
  report.intro_html = reports::tune_intro_html(page);
  const auto rendered = reports::write_report(dir, report);
  for (const auto& w : rendered.warnings) std::cerr << "lethe tune: " << w << "\n";
  if (!rendered.ok()) {
    std::cerr << "lethe tune: " << rendered.error << "\n";
    return kExitBadInput;
  }
  if (const auto error = reports::write_file(dir / "tune.json", json.dump(2) + "\n"); !error.empty()) {
    std::cerr << "lethe tune: " << error << "\n";
    return kExitBadInput;
  }
  std::cout << fmt::format("\nreport: {}\n", rendered.html_path.string());
  return v.feasible ? kExitOk : kExitExpectation;
}

}  // namespace

ExtraCommand register_tune(CLI::App& app) {
  auto o = std::make_shared<TuneOptions>();
  auto* command = app.add_subcommand(
      "tune", "Recommend max_processing_time and ttl from the processing time, crash rate, duplicate target and "
              "patience; confirm it in the simulator");
  auto* dist = command->add_option("--processing-time", o->processing_time,
                                   "The domain's processing time as a distribution (\"exponential(mean=200ms)\")");
  auto* samples = command->add_option("--samples", o->samples, "Measured processing times: one duration per line, or a CSV file with a header (--column)");
  dist->excludes(samples);
  command->add_option("--samples-unit", o->samples_unit, "Unit of plain numbers in --samples (ns us ms s m h d)");
  command->add_option("--column", o->column, "The column of a --samples CSV file to read, by its header name");
  command->add_option("--crash-rate", o->crash_rate,
                      "Crashes per worker, with a unit: N/s, N/m, N/h or N/d (default 1/h)");
  command->add_option("--target-duplicates", o->target,
                      "Acceptable rate of duplicates from taking over live work, in (0, 1) (default 0.001)");
  command->add_option("--patience", o->patience, "The longest a crashed message may wait for a retry (a duration)");
  command->add_option("--redelivery-window", o->redelivery_window,
                      "How late a duplicate delivery can turn up (ttl = 2x this)");
  command->add_option("--poll", o->poll, "The protocol's re-read interval while waiting (default 100ms)");
  command->add_option("--pause-every", o->pause_every,
                      "How often a worker stops the world (a distribution of the interval; with --pause-for)");
  command->add_option("--pause-for", o->pause_for, "How long a pause lasts (a distribution; with --pause-every)");
  command->add_option("--clock-skew", o->clock_skew,
                      "A fixed clock offset drawn per worker (a distribution; negative values allowed)");
  command->add_option("--seeds", o->seeds, "Seeds per cell of the confirmation sweep (default 5)")
      ->check(CLI::Range(1, 100000));
  auto* messages =
      command->add_option("--messages", o->messages, "Messages per seed of the confirmation sweep (default 2000)")
          ->check(CLI::Range(1, 10000000));
  command->add_option("-j,--jobs", o->jobs, "Threads (default: all cores)")->check(CLI::Range(0, 1024));
  command->add_flag("--no-confirm", o->no_confirm, "Skip the confirmation sweep (analysis and report only)");
  auto* scenario_option = command->add_option(
      "--scenario", o->scenario,
      "Confirm on this scenario (its source, consumers, workload, faults) with the recommended max_processing_time "
      "and ttl set, instead of the generated one");
  scenario_option->excludes(messages);
  command->add_option("--out", o->out, "Output folder (report.html, tune.json, scenario.toml, confirmation/)")
      ->required();
  return ExtraCommand{command, [o] { return run_tune(*o); }};
}

}  // namespace runner
