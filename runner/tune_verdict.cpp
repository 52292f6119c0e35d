#include "runner/tune_verdict.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "reports/summary.hpp"

namespace runner {

namespace {

std::string d(sim::Duration v) { return tune_duration_text(v); }
std::string rate_text(double p) { return tune_rate_text(p); }
std::string level_label(double level) { return tune_level_label(level); }

}  // namespace

std::string tune_duration_text(sim::Duration v) { return v == sim::kTimeMax ? "inf" : reports::format_time(v); }

std::string takeover_rate_text(const TuneInput& in, double rate) {
  if (rate == 0.0 && in.sample_count > 0) return fmt::format("< 1/{}", in.sample_count);
  return rate_text(rate);
}

namespace {

// A share the Monte Carlo draws weigh: none of them landing between the two survivals says the share is below
// one draw in all of them, not that it is zero.
std::string share_text(const TakeoverLaw& law, double share) {
  if (share == 0.0 && law.resolution() > 0.0) return "< " + rate_text(law.resolution());
  return rate_text(share);
}

}  // namespace

std::string candidate_rate_text(const TuneInput& in, const TuneAnalysis& a, const TuneCandidate& c) {
  if (a.law->exact()) return takeover_rate_text(in, c.takeover_rate);
  std::string shares = "work " + rate_text(c.work_rate);
  if (in.pause_every && in.pause_for) shares += ", pauses " + share_text(*a.law, c.pause_rate);
  if (in.clock_skew) shares += ", skew " + share_text(*a.law, c.skew_rate);
  return fmt::format("{} ({})", rate_text(c.takeover_rate), shares);
}

std::string candidates_text(const TuneInput& in, const TuneAnalysis& a) {
  std::size_t rate_width = 22;  // the column fits its longest rate (with pauses or skew, a rate and its shares)
  for (const auto& c : a.candidates) rate_width = std::max(rate_width, candidate_rate_text(in, a, c).size());
  std::string out = fmt::format("  {:>10}  {:>{}}  {:>19}  {:>18}\n", "mpt", "takeover dup rate", rate_width,
                                "recovery ~ mpt+poll", "crash delay/msg");
  for (const auto& c : a.candidates) {
    std::string flags = c.label;
    if (!c.meets_target) flags += "; over target";
    if (!c.within_patience) flags += "; beyond patience";
    out += fmt::format("  {:>10}  {:>{}}  {:>19}  {:>18}  {}\n", d(c.mpt), candidate_rate_text(in, a, c), rate_width,
                       d(c.recovery), reports::format_time(static_cast<std::int64_t>(std::llround(c.crash_delay_ns))),
                       flags);
  }
  return out;
}

Verdict verdict(const TuneInput& in, const TuneAnalysis& a) {
  Verdict v;
  const std::string target = rate_text(in.target_duplicates);
  if (a.recommended_mpt) {
    v.feasible = true;
    v.text += fmt::format("recommended max_processing_time = {}\n", sim::format_duration(*a.recommended_mpt));
    const sim::Duration mpt = *a.recommended_mpt;
    v.text += fmt::format("  takes over live work with probability P({} > mpt) = {}, {:.3g}x the target "
                          "{} (the {} quantile, {}, only meets it: a rate at the target can never be confirmed below "
                          "it, so the recommendation aims at 1/{} of it{})\n",
                          a.law->name(), rate_text(a.law->survival(mpt)),
                          a.law->survival(mpt) / in.target_duplicates, target,
                          level_label(1.0 - in.target_duplicates), d(a.target_mpt_exact), kDesignMargin,
                          mpt < a.design_mpt ? fmt::format("; the patience allows no more than {}", d(mpt)) : "");
    const RecoveryEstimate recovery = analytic_recovery(in.processing_time, mpt, in.poll, in.crash_rate_per_second);
    v.text += fmt::format("  a crashed message waits at most about {} (mpt + poll {}) for a retry, and is done again "
                          "after p50 {} / p99 {} (the wait, less the work done before the crash, plus the work run "
                          "again){}\n",
                          d(mpt + in.poll), d(in.poll), d(recovery.p50), d(recovery.p99),
                          in.patience ? fmt::format("; patience {}", d(*in.patience)) : "");
  } else {
    v.text += fmt::format("no max_processing_time meets both the target duplicate rate {} and the patience {}:\n",
                          target, d(*in.patience));
    v.text += fmt::format("  the target needs mpt >= {} (P({} > mpt) = {}), so a crashed message waits about {}, "
                          "longer than the patience {}\n",
                          sim::format_duration(a.target_mpt), a.law->name(), rate_text(a.law->survival(a.target_mpt)),
                          d(a.target_mpt + in.poll), d(*in.patience));
    v.text += "closest options:\n";
    v.text += fmt::format("  (a) keep the target: max_processing_time = {}; crashed messages wait about {} ({} over "
                          "the patience)\n",
                          sim::format_duration(a.target_mpt), d(a.target_mpt + in.poll),
                          d(a.target_mpt + in.poll - *in.patience));
    if (a.patience_mpt) {
      const double rate = a.law->survival(*a.patience_mpt);
      v.text += fmt::format("  (b) keep the patience: max_processing_time = {}; live work is taken over with "
                            "probability {} ({:.3g}x the target)\n",
                            sim::format_duration(*a.patience_mpt), rate_text(rate), rate / in.target_duplicates);
    } else {
      v.text += fmt::format("  (b) the patience {} is not even one poll interval ({}): no max_processing_time fits "
                            "it\n", d(*in.patience), d(in.poll));
    }
    v.text += "  (c) or make the effect idempotent at the provider (keyed by message id), so a takeover of live work "
              "is harmless, and choose mpt for the patience alone\n";
  }
  if (a.ttl) {
    v.text += fmt::format("recommended ttl = {}\n  2 x the redelivery window {}: a duplicate arriving after its "
                          "record expired is processed again, and twice the window covers an underestimate of it\n",
                          sim::format_duration(*a.ttl), d(*in.redelivery_window));
  }
  return v;
}

// Takeovers of live work at the recommended mpt: confirmed only when the whole 99% interval is below the target.
SideVerdict takeover_verdict(const TuneInput& in, std::uint64_t takeovers, std::uint64_t trials, int looks,
                             bool budget_left) {
  SideVerdict v;
  const auto interval = reports::wilson_interval(takeovers, trials, kLookZ);
  const double rate = trials == 0 ? 0.0 : static_cast<double>(takeovers) / static_cast<double>(trials);
  const std::string measured =
      fmt::format("{} takeovers in {} trials = {} [99%: {}, {}]{}", takeovers, trials, rate_text(rate),
                  rate_text(interval.low), rate_text(interval.high),
                  looks > 1 ? fmt::format(", after {} rounds", looks) : std::string());
  const std::string target = rate_text(in.target_duplicates);
  v.measured = trials > 0;
  if (interval.high <= in.target_duplicates) {
    v.confirmed = true;
    v.state = "confirmed";
    v.text = fmt::format("takeover rate confirmed: the measured interval is below the target {} ({})", target, measured);
  } else if (interval.low > in.target_duplicates) {
    v.change = "raise max_processing_time, and check the processing-time input against production: the simulated "
               "work outlasts max_processing_time more often than the input says";
    v.text = fmt::format("takeover rate not confirmed: the measured interval is above the target {} ({}); {}", target,
                         measured, v.change);
  } else if (budget_left) {
    v.state = "undecided";
    v.text = fmt::format("takeover rate undecided: the interval contains the target {} ({})", target, measured);
  } else {
    // With a rate r below the target t, about z^2 r / (t - r)^2 trials put the interval below t.
    const double r = std::max(rate, 1.0 / static_cast<double>(std::max<std::uint64_t>(trials, 1)));
    const double gap = std::max(in.target_duplicates - r, in.target_duplicates / 100.0);
    const double needed = std::ceil(kLookZ * kLookZ * std::max(r, in.target_duplicates / kDesignMargin) / (gap * gap));
    v.state = "unreachable";
    v.change = fmt::format("raise max_processing_time for more margin below the target, or give the confirmation "
                           "about {:.0f} trials (--seeds, --messages)", needed);
    v.text = fmt::format("takeover rate unreachable within the budget of {} rounds: the interval still contains the "
                         "target {} ({}); {}", kMostLooks, target, measured, v.change);
  }
  return v;
}

namespace {

// What bounds recovery in the confirmation world, and the analytic value beside the measured one.
std::string recovery_comparison(const TuneInput& in, const reports::CellSummary& cell, const RecoveryEstimate& analytic,
                                const SeedSpread& spread, sim::Duration mpt, const RecoveryWorld& world) {
  const auto where = [](sim::Duration value, sim::Duration low, sim::Duration high) {
    return value >= low && value <= high ? "within" : "outside";
  };
  const std::string p50 = where(analytic.p50, spread.p50_low, spread.p50_high);
  const std::string p99 = where(analytic.p99, spread.p99_low, spread.p99_high);
  const std::string agreement = p50 == p99 ? fmt::format("both {} the seeds' range", p50)
                                           : fmt::format("p50 {} and p99 {} the seeds' range", p50, p99);
  return fmt::format(
      "measured p50 {} (seeds {}..{}) and p99 {} (seeds {}..{}); analytic p50 {} and p99 {}, {} (mpt {} less the "
      "work done before the crash, plus up to one poll {}, plus the work run again; {})",
      d(cell.recovery_latency.p50), d(spread.p50_low), d(spread.p50_high), d(cell.recovery_latency.p99),
      d(spread.p99_low), d(spread.p99_high), d(analytic.p50), d(analytic.p99), agreement, d(mpt), d(in.poll),
      world.redelivery);
}

}  // namespace

// Recovery after a crash at the recommended mpt: a p99 needs kRecoveriesForP99 recoveries in each seed (the
// cell's p99 is the median of the seeds' p99s).
SideVerdict ttl_verdict(const TuneInput& in, const TuneAnalysis& a, const reports::CellSummary& at_ttl,
                        const reports::CellSummary& at_half) {
  const auto expired = [](const reports::CellSummary& cell) {
    return cell.by_cause[static_cast<std::size_t>(lethe::Cause::Expired)];
  };
  const std::string window = d(*in.redelivery_window);
  const std::string half = d(*in.redelivery_window / 2);
  SideVerdict v;
  v.measured = true;
  if (expired(at_ttl) > 0) {
    v.state = "not confirmed";
    v.text = fmt::format("ttl not confirmed: {} of {} messages were run again after their record expired at ttl {} "
                         "(copies up to {} late)", expired(at_ttl), at_ttl.trials, d(*a.ttl), window);
    v.change = "raise protocol.ttl above the latest redelivery, or look at ttl_eviction and expires_on";
  } else if (expired(at_half) == 0) {
    v.state = "not confirmed";
    v.text = fmt::format("ttl not confirmed: no copy found its record expired even at ttl {} (half the window {}), "
                         "so the run never met the expiry it should test", half, window);
    v.change = "look at the generated ttl-scenario.toml: its copies should come up to the window late";
  } else {
    v.confirmed = true;
    v.state = "confirmed";
    v.text = fmt::format("ttl confirmed: 0 of {} messages whose copies came up to {} late were run again at ttl {} "
                         "(at ttl {}, {} were: duplicates.expired)", at_ttl.trials, window, d(*a.ttl), half,
                         expired(at_half));
  }
  return v;
}

SideVerdict recovery_verdict(const TuneInput& in, const ConfirmationSize& size, const reports::CellSummary& cell,
                             std::int64_t seeds, std::int64_t messages, const RecoveryEstimate& analytic,
                             const SeedSpread& spread, sim::Duration mpt, const RecoveryWorld& world) {
  SideVerdict v;
  const auto n = cell.recovery_latency.count;
  const double per_seed = static_cast<double>(n) / static_cast<double>(std::max<std::int64_t>(seeds, 1));
  if (in.crash_rate_per_second == 0.0) {
    v.state = "unreachable";
    v.change = "give --crash-rate";
    v.text = "recovery unreachable: --crash-rate 0 gives no crashes to measure";
    return v;
  }
  v.measured = n > 0;
  const std::string raised = size.crash_rate_raised
                                 ? fmt::format(" (crashes run at {:.3g}/h per worker instead of the given {:.3g}/h, "
                                               "for samples)", size.crash_rate_per_second * 3600.0,
                                               in.crash_rate_per_second * 3600.0)
                                 : std::string();
  if (per_seed < static_cast<double>(kRecoveriesForP99)) {
    const double scale = per_seed > 0 ? static_cast<double>(kRecoveriesForP99) / per_seed : 0.0;
    v.state = "unreachable";
    v.change = scale > 0 ? fmt::format("{} {:.0f}{}", world.messages_setting,
                                       std::ceil(static_cast<double>(messages) * scale * 1.2), world.messages_where)
                         : world.no_recoveries;
    v.text = fmt::format("recovery unreachable: {} recoveries over {} seeds (about {:.0f} a seed){}; a p99 needs at "
                         "least {} a seed, with fewer it is one of the few largest values; give {}", n, seeds, per_seed,
                         raised, kRecoveriesForP99, v.change);
    return v;
  }
  const std::string measured = fmt::format("{} over {} recoveries, about {:.0f} a seed{}",
                                           recovery_comparison(in, cell, analytic, spread, mpt, world), n,
                                           per_seed, raised);
  if (!in.patience) {
    v.state = "unreachable";
    v.change = "give --patience";
    v.text = "recovery measured, nothing to decide: no --patience to compare it with; " + measured;
    return v;
  }
  v.confirmed = cell.recovery_latency.p99 <= *in.patience;
  v.state = v.confirmed ? "confirmed" : "not confirmed";
  if (!v.confirmed) {
    v.change = "lower max_processing_time (recovery grows with it one for one), or accept a longer patience";
  }
  v.text = fmt::format("recovery {}: p99 {} {} the patience {}: {}{}", v.state, d(cell.recovery_latency.p99),
                       v.confirmed ? "within" : "above", d(*in.patience), measured,
                       v.change.empty() ? std::string() : "; " + v.change);
  return v;
}

}  // namespace runner
