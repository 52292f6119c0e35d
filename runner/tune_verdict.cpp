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

std::string candidates_text(const TuneInput& in, const TuneAnalysis& a) {
  std::string out = fmt::format("  {:>10}  {:>22}  {:>19}  {:>18}  {}\n", "mpt", "takeover dup rate", "recovery ~ mpt+poll",
                                "crash delay/msg", "");
  for (const auto& c : a.candidates) {
    std::string flags = c.label;
    if (!c.meets_target) flags += "; over target";
    if (!c.within_patience) flags += "; beyond patience";
    out += fmt::format("  {:>10}  {:>22}  {:>19}  {:>18}  {}\n", d(c.mpt), takeover_rate_text(in, c.takeover_rate), d(c.recovery),
                       reports::format_time(static_cast<std::int64_t>(std::llround(c.crash_delay_ns))), flags);
  }
  return out;
}

Verdict verdict(const TuneInput& in, const TuneAnalysis& a) {
  Verdict v;
  const std::string target = rate_text(in.target_duplicates);
  if (a.recommended_mpt) {
    v.feasible = true;
    v.text += fmt::format("recommended max_processing_time = {}\n", sim::format_duration(*a.recommended_mpt));
    v.text += fmt::format("  the smallest value with P(processing time > mpt) <= {} (the {} quantile is {}; rounded "
                          "up to {} takes over live work with probability {})\n",
                          target, level_label(1.0 - in.target_duplicates), d(a.target_mpt_exact),
                          sim::format_duration(a.target_mpt), rate_text(in.processing_time.survival(a.target_mpt)));
    v.text += fmt::format("  a crashed message waits about {} (mpt + poll {}) for a retry{}\n",
                          d(a.target_mpt + in.poll), d(in.poll),
                          in.patience ? fmt::format("; patience {}", d(*in.patience)) : "");
  } else {
    v.text += fmt::format("no max_processing_time meets both the target duplicate rate {} and the patience {}:\n",
                          target, d(*in.patience));
    v.text += fmt::format("  the target needs mpt >= {} (P(T > mpt) = {}), so a crashed message waits about {}, "
                          "longer than the patience {}\n",
                          sim::format_duration(a.target_mpt), rate_text(in.processing_time.survival(a.target_mpt)),
                          d(a.target_mpt + in.poll), d(*in.patience));
    v.text += "closest options:\n";
    v.text += fmt::format("  (a) keep the target: max_processing_time = {}; crashed messages wait about {} ({} over "
                          "the patience)\n",
                          sim::format_duration(a.target_mpt), d(a.target_mpt + in.poll),
                          d(a.target_mpt + in.poll - *in.patience));
    if (a.patience_mpt) {
      const double rate = in.processing_time.survival(*a.patience_mpt);
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

// Takeovers of live work at the recommended mpt: confirmed only when the whole 95% interval is below the target.
SideVerdict takeover_verdict(const TuneInput& in, const reports::CellSummary& cell) {
  SideVerdict v;
  const auto takeovers = cell.by_cause[static_cast<std::size_t>(lethe::Cause::TakeoverWhileAlive)];
  const auto interval = reports::wilson_interval(takeovers, cell.trials);
  const double rate = cell.trials == 0 ? 0.0 : static_cast<double>(takeovers) / static_cast<double>(cell.trials);
  const std::string measured = fmt::format("{} takeovers in {} trials = {} [95%: {}, {}]", takeovers, cell.trials,
                                           rate_text(rate), rate_text(interval.low), rate_text(interval.high));
  const std::string target = rate_text(in.target_duplicates);
  v.measured = cell.trials > 0;
  // With no takeover at all, n trials bound the rate to about 3.84 / n: the fewest that can show the target.
  const double needed = std::ceil(3.84 / in.target_duplicates);
  if (interval.high <= in.target_duplicates) {
    v.confirmed = true;
    v.text = fmt::format("takeover rate confirmed: measured interval below the target {} ({})", target, measured);
  } else if (interval.low > in.target_duplicates) {
    v.text = fmt::format("takeover rate not confirmed: the measured interval is above the target {} ({}); the "
                         "processing time in the simulator exceeds max_processing_time more often than the input says",
                         target, measured);
  } else {
    v.text = fmt::format("takeover rate not confirmed: the measured interval contains the target {} ({}); the "
                         "recommendation sits at the target by construction, so only more trials can narrow the "
                         "interval{}", target, measured,
                         static_cast<double>(cell.trials) < needed
                             ? fmt::format(", and fewer than {:.0f} trials cannot show any rate below it", needed)
                             : std::string());
  }
  return v;
}

// Recovery after a crash at the recommended mpt: a p99 needs kRecoveriesForP99 recoveries in each seed (the
// cell's p99 is the median of the seeds' p99s).
SideVerdict recovery_verdict(const TuneInput& in, const ConfirmationSize& size, const reports::CellSummary& cell,
                             std::int64_t seeds, std::int64_t messages) {
  SideVerdict v;
  const auto n = cell.recovery_latency.count;
  const double per_seed = static_cast<double>(n) / static_cast<double>(std::max<std::int64_t>(seeds, 1));
  if (in.crash_rate_per_second == 0.0) {
    v.text = "recovery not measured: --crash-rate 0 gives no crashes";
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
    v.text = fmt::format("recovery not confirmed: {} recoveries over {} seeds (about {:.0f} a seed){}; a p99 needs at "
                         "least {} a seed, with fewer it is one of the few largest values{}", n, seeds, per_seed, raised,
                         kRecoveriesForP99,
                         scale > 0 ? fmt::format("; --messages {:.0f} would give about {}",
                                                 std::ceil(static_cast<double>(messages) * scale * 1.2),
                                                 kRecoveriesForP99)
                                   : std::string("; no crash hit an attempt at work"));
    return v;
  }
  const std::string p99 = fmt::format("p99 {} over {} recoveries, about {:.0f} a seed{}", d(cell.recovery_latency.p99), n,
                                      per_seed, raised);
  if (!in.patience) {
    v.text = "recovery measured: " + p99 + "; no --patience to compare it with";
    return v;
  }
  v.confirmed = cell.recovery_latency.p99 <= *in.patience;
  v.text = fmt::format("recovery {}: measured {} {} the patience {}", v.confirmed ? "confirmed" : "not confirmed",
                       p99, v.confirmed ? "within" : "above", d(*in.patience));
  return v;
}

}  // namespace runner
