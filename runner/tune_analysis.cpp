#include "runner/tune_analysis.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "scenario/text.hpp"
#include "sim/random.hpp"

namespace runner {

sim::Duration round_up_significant(sim::Duration d, int digits) {
  if (d <= 0) return 0;
  if (digits >= 19) return d;  // every int64 has at most 19 digits
  // Integer arithmetic only (a floating log10 near a power of ten, or of a wrapped value, gave a wrong step).
  sim::Duration limit = 1;  // 10^digits
  for (int i = 0; i < std::max(digits, 1); ++i) limit *= 10;
  sim::Duration step = 1;  // the power of ten below the last kept digit; at most 10^18
  while (d / step >= limit) step *= 10;
  const sim::Duration rounded = (d / step) * step;
  if (rounded == d) return d;
  if (rounded > sim::kTimeMax - step) return sim::kTimeMax;
  return rounded + step;
}

namespace {

constexpr double kRelativeSlack = 1e-9;  // survival() is a double: the quantile may land a hair above the target

}  // namespace

std::string tune_rate_text(double p) { return fmt::format("{:.3g}", p); }

std::string tune_level_label(double level) {
  // 0.999 -> "p99.9"
  std::string digits = fmt::format("{:.6f}", level * 100.0);
  while (!digits.empty() && digits.back() == '0') digits.pop_back();
  if (!digits.empty() && digits.back() == '.') digits.pop_back();
  return "p" + digits;
}

bool tune_meets(double rate, double target) { return rate <= target * (1.0 + kRelativeSlack); }

namespace {

// The pauses an owner meets while its work of `length` ns runs, as the simulator's pause loop makes them (an
// interval, a pause, an interval, ... from time 0): the work starts at a uniform time within the first
// `horizon` ns (several mean cycles, so where it starts in a cycle is near the loop's steady state, and a long
// interval is met more often than a short one, as at any real instant); a pause lengthens the work it
// interrupts, so later pauses can land in it too.
double paused_length(double length, const sim::Distribution& every, const sim::Distribution& pause, double horizon,
                     sim::Rng& rng) {
  double start = rng.uniform() * horizon;
  const auto draw = [&rng](const sim::Distribution& law, sim::Duration least) {
    return static_cast<double>(std::max<sim::Duration>(law.sample(rng), least));
  };
  double at = draw(every, 1);  // the next pause's start
  for (int i = 0; i < 100000; ++i) {  // a bound on pathological laws (mean interval >= 1ms)
    if (at >= start) break;
    const double ends = at + draw(pause, 0);
    if (ends > start) {  // the work was waiting for this pause to end: it starts when the pause ends
      start = ends;
      at = ends + draw(every, 1);
      break;
    }
    at = ends + draw(every, 1);
  }
  double total = length;
  for (int i = 0; at < start + total && i < 1000; ++i) {
    const double paused = draw(pause, 0);
    total += paused;
    at += paused + draw(every, 1);
  }
  return total;
}

double sorted_survival(const std::vector<double>& sorted, sim::Duration x) {
  const auto above = sorted.end() - std::upper_bound(sorted.begin(), sorted.end(), static_cast<double>(x));
  return static_cast<double>(above) / static_cast<double>(sorted.size());
}

}  // namespace

TakeoverLaw::TakeoverLaw(const TuneInput& in) : work_(in.processing_time) {
  const bool pauses = in.pause_every && in.pause_for;
  if (!pauses && !in.clock_skew) return;
  if (pauses) name_ += " + pauses";
  if (in.clock_skew) name_ += " + clock offset";
  sim::Rng rng(0x736b6577);  // "skew": a fixed stream, so the law is a function of its inputs
  double horizon = 0.0;      // where work starts: within 8 mean cycles of the pause loop (paused_length)
  if (pauses) {
    const auto mean_or_median = [](const sim::Distribution& law) {
      const double mean = law.mean_ns();
      return std::isfinite(mean) ? mean : static_cast<double>(law.quantile(0.5));
    };
    horizon = 8.0 * (mean_or_median(*in.pause_every) + mean_or_median(*in.pause_for));
  }
  work_draws_.reserve(kApparentAgeDraws);
  paused_.reserve(kApparentAgeDraws);
  total_.reserve(kApparentAgeDraws);
  for (int i = 0; i < kApparentAgeDraws; ++i) {
    const auto work = static_cast<double>(std::max<sim::Duration>(work_.sample(rng), 0));
    const double paused = pauses ? paused_length(work, *in.pause_every, *in.pause_for, horizon, rng) : work;
    double offsets = 0.0;
    if (in.clock_skew) {
      offsets = static_cast<double>(in.clock_skew->sample(rng)) - static_cast<double>(in.clock_skew->sample(rng));
    }
    work_draws_.push_back(work);
    paused_.push_back(paused);
    total_.push_back(paused + offsets);
  }
  std::sort(work_draws_.begin(), work_draws_.end());
  std::sort(paused_.begin(), paused_.end());
  std::sort(total_.begin(), total_.end());
}

double TakeoverLaw::pause_share(sim::Duration mpt) const {
  return exact() ? 0.0 : sorted_survival(paused_, mpt) - sorted_survival(work_draws_, mpt);
}

double TakeoverLaw::skew_share(sim::Duration mpt) const {
  return exact() ? 0.0 : sorted_survival(total_, mpt) - sorted_survival(paused_, mpt);
}

double TakeoverLaw::survival(sim::Duration mpt) const {
  if (exact()) return work_.survival(mpt);
  return std::clamp(work_share(mpt) + pause_share(mpt) + skew_share(mpt), 0.0, 1.0);
}

sim::Duration TakeoverLaw::quantile(double level) const {
  if (exact()) return work_.quantile(level);
  // The smallest mpt whose survival is at most 1 - level, by bisection (survival falls with mpt, up to the
  // Monte Carlo's noise in the shares).
  sim::Duration low = 0;
  sim::Duration high = sim::kTimeMax;
  if (survival(high) > 1.0 - level) return sim::kTimeMax;
  while (high - low > 1) {
    const sim::Duration middle = low + (high - low) / 2;
    (survival(middle) <= 1.0 - level ? high : low) = middle;
  }
  return high;
}

double TakeoverLaw::resolution() const { return exact() ? 0.0 : 1.0 / static_cast<double>(kApparentAgeDraws); }

namespace {

// The caveats of an analysis: too few samples, a Monte Carlo share near the design rate, a heavy tail, ttl.
void add_notes(const TuneInput& in, TuneAnalysis& a) {
  const TakeoverLaw& law = *a.law;
  const double mean = in.processing_time.mean_ns();
  if (in.sample_count > 0) {
    const double resolution = 1.0 / static_cast<double>(in.sample_count);
    if (resolution > in.target_duplicates) {
      a.notes.push_back(fmt::format(
          "only {} samples: a rate below 1/{} = {} cannot be told apart from zero, so the recommendation is the "
          "largest sample seen; collect at least {:.0f} samples (10 / target) for a trustworthy tail",
          in.sample_count, in.sample_count, tune_rate_text(resolution), std::ceil(10.0 / in.target_duplicates)));
    } else if (resolution * 10.0 > in.target_duplicates) {
      a.notes.push_back(fmt::format("{} samples: the {} quantile rests on fewer than 10 values of the tail", in.sample_count,
                                    tune_level_label(1.0 - in.target_duplicates)));
    }
  }
  if (law.resolution() * 10.0 > a.design_rate) {
    a.notes.push_back(fmt::format(
        "what pauses and clock skew add to the takeover rate is weighed by {} draws, so it is known only to about "
        "{}, not much below the rate the recommendation aims at ({}): the confirmation's measured rate decides",
        kApparentAgeDraws, tune_rate_text(law.resolution()), tune_rate_text(a.design_rate)));
  }
  if (!std::isfinite(mean)) {
    a.notes.push_back("the processing time has an infinite mean (heavy tail): every max_processing_time leaves a "
                      "real chance of taking over live work; the table uses the median as the typical duration");
  }
  if (!in.redelivery_window) {
    a.notes.push_back("no --redelivery-window given: ttl is not recommended (the confirmation scenario uses 7d). "
                      "Give how late a duplicate can turn up: the producer's retry budget, the broker's replay "
                      "window, how far back an operator may rewind offsets");
  } else if (a.ttl && *a.ttl < 10 * (a.target_mpt + in.poll)) {
    a.notes.push_back(fmt::format("ttl {} is not much longer than max_processing_time {}: with expires_on = "
                                  "\"at-start\" a record could expire while its attempt is still running",
                                  sim::format_duration(*a.ttl), sim::format_duration(a.target_mpt)));
  }
}

}  // namespace

TuneAnalysis analyze_tuning(const TuneInput& in) {
  TuneAnalysis a;
  a.law = std::make_shared<const TakeoverLaw>(in);
  const TakeoverLaw& law = *a.law;
  a.target_mpt_exact = law.quantile(1.0 - in.target_duplicates);
  a.target_mpt = std::max<sim::Duration>(round_up_significant(a.target_mpt_exact), sim::kMillisecond);
  // The rounded value must meet the target (it does for any monotone survival; guard against rounding in
  // survival()) — step up until it does.
  for (int i = 0; i < 8 && !tune_meets(law.survival(a.target_mpt), in.target_duplicates); ++i) {
    a.target_mpt = round_up_significant(sim::saturating_add(a.target_mpt, a.target_mpt / 100));
  }
  if (in.patience) {
    const sim::Duration limit = *in.patience - in.poll;
    if (limit > 0) a.patience_mpt = limit;
  }
  a.design_rate = in.target_duplicates / kDesignMargin;
  a.design_mpt = std::clamp<sim::Duration>(round_up_significant(law.quantile(1.0 - a.design_rate)), a.target_mpt,
                                           std::max(a.target_mpt, sim::kDurationMax / 4));
  if (!in.patience || (a.patience_mpt && a.design_mpt <= *a.patience_mpt)) {
    a.recommended_mpt = a.design_mpt;
  } else if (a.patience_mpt && a.target_mpt <= *a.patience_mpt) {
    a.recommended_mpt = *a.patience_mpt;
  }
  if (in.redelivery_window) {
    a.ttl = *in.redelivery_window > sim::kTimeMax / 2 ? sim::kTimeMax : 2 * *in.redelivery_window;
  }
  const double mean = in.processing_time.mean_ns();
  a.typical_processing_ns = std::isfinite(mean) ? mean : static_cast<double>(in.processing_time.quantile(0.5));
  a.crash_hit_probability = 1.0 - std::exp(-in.crash_rate_per_second * a.typical_processing_ns / 1e9);

  // Candidates: quantile levels, the recommendation and its neighbours, and the patience limit.
  std::map<sim::Duration, std::string> labels;
  const auto add = [&](sim::Duration mpt, const std::string& label) {
    if (mpt <= 0 || mpt == sim::kTimeMax) return;
    auto& l = labels[mpt];
    l += (l.empty() ? "" : ", ") + label;
  };
  for (double level : {0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999, 0.999999}) {
    add(std::max<sim::Duration>(round_up_significant(law.quantile(level)), sim::kMillisecond), tune_level_label(level));
  }
  add(a.target_mpt, "meets the target");
  if (a.recommended_mpt) {
    add(*a.recommended_mpt, "recommended");
    add(round_up_significant(*a.recommended_mpt / 2), "0.5x");
    add(round_up_significant(sim::saturating_add(*a.recommended_mpt, *a.recommended_mpt)), "2x");
  }
  if (a.patience_mpt) add(*a.patience_mpt, "patience limit");
  for (const auto& [mpt, label] : labels) {
    TuneCandidate c;
    c.mpt = mpt;
    c.label = label;
    c.takeover_rate = law.survival(mpt);
    c.work_rate = law.work_share(mpt);
    c.pause_rate = law.pause_share(mpt);
    c.skew_rate = law.skew_share(mpt);
    c.recovery = mpt > sim::kTimeMax - in.poll ? sim::kTimeMax : mpt + in.poll;
    c.crash_delay_ns = a.crash_hit_probability * static_cast<double>(c.recovery);
    c.meets_target = tune_meets(c.takeover_rate, in.target_duplicates);
    c.within_patience = !in.patience || c.recovery <= *in.patience;
    a.candidates.push_back(c);
  }

  add_notes(in, a);
  return a;
}

constexpr int kConsumers = 8;

ConfirmationSize size_confirmation(const TuneInput& in, const TuneAnalysis& a, std::int64_t messages,
                                   std::int64_t seeds) {
  (void)seeds;  // the p99 is per seed: the number of seeds does not change what one seed needs
  constexpr std::int64_t kMostMessages = 100000;
  ConfirmationSize size;
  // Keep the workers about 30% busy: each message costs its processing time plus, for the redelivered copy,
  // up to as long again spent waiting on the in-flight record.
  const double typical_s = std::max(a.typical_processing_ns / 1e9, 1e-4);
  double rate = 0.3 * kConsumers / (2.0 * typical_s + 0.02);
  rate = std::clamp(rate, 0.05, 500.0);
  size.message_rate_per_second = std::stod(fmt::format("{:.3g}", rate));
  // A crash gives a recovery sample when it hits an attempt at work: the share of a worker's time spent
  // processing a first delivery.
  const double busy = std::min(1.0, size.message_rate_per_second * typical_s / kConsumers);
  const auto recoveries = [&](double crash_rate, std::int64_t n) {
    return crash_rate * kConsumers * busy * static_cast<double>(n) / size.message_rate_per_second;
  };
  const double wanted = 1.2 * static_cast<double>(kRecoveriesForP99);
  size.messages = messages;
  size.crash_rate_per_second = in.crash_rate_per_second;
  if (in.crash_rate_per_second > 0 && recoveries(in.crash_rate_per_second, messages) < wanted) {
    const double needed = wanted / recoveries(1.0, messages);
    // At most 0.5% of attempts hit: a rerun is then hit as rarely, and the p99 stays the one wait a crash
    // costs at the given rate, not a second wait that only the raised rate makes (that needs 1% of reruns hit).
    const double ceiling = kMostAttemptsHit / typical_s;
    const double raised = std::stod(fmt::format("{:.3g}", std::min(needed, ceiling)));
    if (raised > in.crash_rate_per_second) {
      size.crash_rate_per_second = raised;
      size.crash_rate_raised = true;
    }
    const double short_by = wanted / recoveries(size.crash_rate_per_second, messages);
    if (short_by > 1.0) {
      size.messages = std::min<std::int64_t>(
          kMostMessages, std::max<std::int64_t>(messages, static_cast<std::int64_t>(
                                                              std::ceil(static_cast<double>(messages) * short_by))));
      size.messages_raised = size.messages > messages;
    }
  }
  size.workload_seconds = static_cast<double>(size.messages) / size.message_rate_per_second;
  size.expected_recoveries = recoveries(size.crash_rate_per_second, size.messages);
  return size;
}

RecoveryEstimate analytic_recovery(const sim::Distribution& law, sim::Duration mpt, sim::Duration poll,
                                   double crash_rate_per_second) {
  constexpr int kDraws = 200000;
  sim::Rng rng(0x74756e65);  // "tune": a fixed stream, so the estimate is a function of its inputs
  std::vector<std::pair<double, double>> draws;  // (R in ns, weight = the crashed attempt's length)
  draws.reserve(kDraws);
  double total = 0.0;
  const double crashes_per_ns = crash_rate_per_second / 1e9;
  for (int i = 0; i < kDraws; ++i) {
    const auto length = static_cast<double>(std::max<sim::Duration>(law.sample(rng), 1));
    double age = rng.uniform() * length;
    double recovery = 0.0;
    // Each rerun is hit by a crash of its own worker with probability 1 - e^(-rate x its length) (at most 100
    // crashes in a row: a bound on pathological inputs); the wait then starts over from that rerun's record.
    for (int crashes = 0; crashes < 100; ++crashes) {
      const double phase = rng.uniform() * static_cast<double>(poll);
      const auto rerun = static_cast<double>(law.sample(rng));
      const double hit = rng.uniform();
      const double wait = std::max(static_cast<double>(mpt) - age, 0.0) + phase;
      if (hit >= 1.0 - std::exp(-crashes_per_ns * rerun)) {
        recovery += wait + rerun;
        break;
      }
      age = rng.uniform() * rerun;
      recovery += wait + age;
    }
    draws.emplace_back(recovery, length);
    total += length;
  }
  std::sort(draws.begin(), draws.end());
  const auto quantile = [&](double q) {
    double seen = 0.0;
    for (const auto& [r, w] : draws) {
      seen += w;
      if (seen >= q * total) return static_cast<sim::Duration>(std::llround(r));
    }
    return static_cast<sim::Duration>(std::llround(draws.back().first));
  };
  return RecoveryEstimate{quantile(0.5), quantile(0.99)};
}

// tune measures duplicates, it does not forbid them: the default invariants (no duplicate, ...) would fail
// every seed of its sweeps.
constexpr const char* kMeasuredNotAsserted = "\n[expect]\ndefaults = false  # measured, not asserted\n";

std::string confirmation_scenario(const TuneInput& in, const TuneAnalysis& a, sim::Duration mpt, std::int64_t messages,
                                  std::int64_t seeds, sim::Duration largest_mpt, sim::Duration smallest_mpt) {
  const ConfirmationSize size = size_confirmation(in, a, messages, seeds);
  messages = size.messages;
  const double rate = size.message_rate_per_second;
  const double workload_s = size.workload_seconds;
  const sim::Duration duration = static_cast<sim::Duration>(std::ceil(workload_s + 60.0)) * sim::kSecond;
  // At most every mpt the sweep runs: a crashed attempt's message is back before its record is stale, and the
  // copy waits for the record to age (what tune recommends bounds recovery, not the queue's timeout).
  const sim::Duration visibility = std::max<sim::Duration>(smallest_mpt, sim::kMillisecond);
  const sim::Duration max_wait =
      std::min<sim::Duration>(2 * largest_mpt + 10 * in.poll + 10 * sim::kSecond, sim::kDurationMax);
  const sim::Duration ttl = a.ttl.value_or(7 * sim::kDay);
  std::string crash;
  if (size.crash_rate_per_second > 0) {
    const auto mean = static_cast<sim::Duration>(std::llround(1e9 / size.crash_rate_per_second));
    crash = fmt::format("crash_every = {}\n", scenario::text::toml_quote(fmt::format("exponential(mean={})", sim::format_duration(mean))));
  }
  std::string out;
  out += "# Generated by lethe tune: the confirmation scenario of its recommendation.\n";
  out += "[scenario]\nname = \"tune-confirmation\"\n";
  out += "description = \"\"\"\n"
         "A queue whose every message is delivered a second time while the first delivery is still being\n"
         "processed, so a waiting copy takes the record over exactly when it is older than max_processing_time\n"
         "(duplicates.takeover_while_alive measures P(processing time > max_processing_time)); consumers crash at\n"
         "the given rate (recovery_latency measures how long a crashed message waits). The visibility timeout is at\n"
         "most max_processing_time: a crashed attempt's message comes back before its record is stale.\"\"\"\n";
  out += "tags = [\"generated\", \"tune\"]\n\n";
  out += fmt::format("[run]\nseeds = {}\nduration = {}\ndrain = true\n\n", seeds,
                     scenario::text::toml_quote(sim::format_duration(duration)));
  out += fmt::format("[topology]\nsource = \"queue\"\nconsumers = {}\nvisibility_timeout = {}\n\n", kConsumers,
                     scenario::text::toml_quote(sim::format_duration(visibility)));
  out += fmt::format("[workload]\nmessages = {}\nrate = {}\nprocessing_time = {}\n\n", messages,
                     scenario::text::toml_quote(fmt::format("{}/s", scenario::text::format_number(rate))),
                     scenario::text::toml_quote(in.processing_time_text));
  out += fmt::format("[workload.redelivery]\nfraction = 1.0\ncopies = 1\ndelay = {}\n\n",
                     scenario::text::toml_quote(fmt::format("uniform(0s, {})", sim::format_duration(in.poll))));
  std::string stale;  // what else makes a live owner look stale: the same laws the analysis weighed
  if (in.pause_every && in.pause_for) {
    stale += fmt::format("pause_every = {}\npause_for = {}\n", scenario::text::toml_quote(in.pause_every->to_string()),
                         scenario::text::toml_quote(in.pause_for->to_string()));
  }
  if (in.clock_skew) stale += fmt::format("clock_skew = {}\n", scenario::text::toml_quote(in.clock_skew->to_string()));
  out += "[faults]\n" + crash + stale + "restart_after = \"1s\"\n\n";
  out += fmt::format("[protocol]\nkind = \"mnemosyne\"\nmax_processing_time = {}\nttl = {}\npoll = {}\nmax_wait = {}\n\n",
                     scenario::text::toml_quote(sim::format_duration(mpt)), scenario::text::toml_quote(sim::format_duration(ttl)),
                     scenario::text::toml_quote(sim::format_duration(in.poll)), scenario::text::toml_quote(sim::format_duration(max_wait)));
  out += "[sink]\nkind = \"counter\"\nlatency = \"1ms\"\n";
  out += kMeasuredNotAsserted;
  return out;
}
std::string ttl_scenario(const TuneInput& in, const TuneAnalysis& a, sim::Duration mpt, std::int64_t seeds) {
  const sim::Duration window = *in.redelivery_window;
  const double rate = std::clamp(0.3 * kConsumers / std::max(a.typical_processing_ns / 1e9, 1e-4), 0.05, 500.0);
  const auto workload = static_cast<sim::Duration>(std::ceil(static_cast<double>(kTtlMessages) / rate + 60.0));
  const sim::Duration duration = sim::saturating_add(window, workload * sim::kSecond);
  const auto q = [](const std::string& text) { return scenario::text::toml_quote(text); };
  std::string out;
  out += "# Generated by lethe tune: the scenario that confirms its ttl.\n";
  out += "[scenario]\nname = \"tune-ttl-confirmation\"\n";
  out += "description = \"\"\"\n"
         "Every message comes again once, uniformly up to the redelivery window late; the run lasts past the latest\n"
         "copy. A copy that finds its record gone (or expired) runs the effect again: duplicates.expired.\"\"\"\n";
  out += "tags = [\"generated\", \"tune\"]\n\n";
  out += fmt::format("[run]\nseeds = {}\nduration = {}\ndrain = true\n\n", seeds, q(sim::format_duration(duration)));
  out += fmt::format("[topology]\nsource = \"queue\"\nconsumers = {}\n\n", kConsumers);
  out += fmt::format("[workload]\nmessages = {}\nrate = {}\nprocessing_time = {}\n\n", kTtlMessages,
                     q(fmt::format("{}/s", scenario::text::format_number(std::stod(fmt::format("{:.3g}", rate))))),
                     q(in.processing_time_text));
  out += fmt::format("[workload.redelivery]\nfraction = 1.0\ncopies = 1\ndelay = {}\n\n",
                     q(fmt::format("uniform(0s, {})", sim::format_duration(window))));
  out += fmt::format("[protocol]\nkind = \"mnemosyne\"\nmax_processing_time = {}\nttl = {}\npoll = {}\n\n",
                     q(sim::format_duration(mpt)), q(sim::format_duration(*a.ttl)), q(sim::format_duration(in.poll)));
  out += "[sink]\nkind = \"counter\"\nlatency = \"1ms\"\n";
  out += kMeasuredNotAsserted;
  return out;
}

}  // namespace runner
