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

TuneAnalysis analyze_tuning(const TuneInput& in) {
  TuneAnalysis a;
  const auto& law = in.processing_time;
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
  const double mean = law.mean_ns();
  a.typical_processing_ns = std::isfinite(mean) ? mean : static_cast<double>(law.quantile(0.5));
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
    c.recovery = mpt > sim::kTimeMax - in.poll ? sim::kTimeMax : mpt + in.poll;
    c.crash_delay_ns = a.crash_hit_probability * static_cast<double>(c.recovery);
    c.meets_target = tune_meets(c.takeover_rate, in.target_duplicates);
    c.within_patience = !in.patience || c.recovery <= *in.patience;
    a.candidates.push_back(c);
  }

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
    const double ceiling = 0.02 / typical_s;  // 2% of attempts hit
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

RecoveryEstimate analytic_recovery(const sim::Distribution& law, sim::Duration mpt, sim::Duration poll) {
  constexpr int kDraws = 200000;
  sim::Rng rng(0x74756e65);  // "tune": a fixed stream, so the estimate is a function of its inputs
  std::vector<std::pair<double, double>> draws;  // (R in ns, weight = the crashed attempt's length)
  draws.reserve(kDraws);
  double total = 0.0;
  for (int i = 0; i < kDraws; ++i) {
    const auto length = static_cast<double>(std::max<sim::Duration>(law.sample(rng), 1));
    const double age = rng.uniform() * length;
    const double phase = rng.uniform() * static_cast<double>(poll);
    const auto rerun = static_cast<double>(law.sample(rng));
    draws.emplace_back(std::max(static_cast<double>(mpt) - age, 0.0) + phase + rerun, length);
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
  out += "[faults]\n" + crash + "restart_after = \"1s\"\n\n";
  out += fmt::format("[protocol]\nkind = \"mnemosyne\"\nmax_processing_time = {}\nttl = {}\npoll = {}\nmax_wait = {}\n\n",
                     scenario::text::toml_quote(sim::format_duration(mpt)), scenario::text::toml_quote(sim::format_duration(ttl)),
                     scenario::text::toml_quote(sim::format_duration(in.poll)), scenario::text::toml_quote(sim::format_duration(max_wait)));
  out += "[sink]\nkind = \"counter\"\nlatency = \"1ms\"\n";
  return out;
}
}  // namespace runner
