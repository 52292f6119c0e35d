#include "runner/execute.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <fmt/format.h>
#include <new>
#include <sched.h>
#include <sys/resource.h>
#include <thread>

#include "sim/simulation.hpp"

namespace runner {

namespace {
bool compare(double got, lethe::ExpectationOp op, double want) {
  switch (op) {
    case lethe::ExpectationOp::Equal: return got == want;
    case lethe::ExpectationOp::NotEqual: return got != want;
    case lethe::ExpectationOp::Less: return got < want;
    case lethe::ExpectationOp::LessEqual: return got <= want;
    case lethe::ExpectationOp::Greater: return got > want;
    case lethe::ExpectationOp::GreaterEqual: return got >= want;
  }
  return false;
}

std::string number_text(double value) {
  if (std::floor(value) == value && std::fabs(value) < 1e15) return fmt::format("{}", static_cast<long long>(value));
  return fmt::format("{}", value);
}

bool overridden(const lethe::ScenarioConfig& config, const lethe::DefaultExpectation& d) {
  return std::any_of(config.expect.begin(), config.expect.end(), [&d](const lethe::Expectation& e) {
    return e.key == d.key || (!d.overridden_by.empty() && e.key.rfind(d.overridden_by, 0) == 0);
  });
}

// The default invariants no [expect] entry replaces. linearizable is checked only when the run checked the
// history: a default does not fail a run for a check it did not ask for.
void check_defaults(const lethe::ScenarioConfig& config, lethe::RunResult& result) {
  result.defaults_replaced.clear();
  if (!config.expect_defaults) return;
  for (const lethe::DefaultExpectation& d : lethe::kDefaultExpectations) {
    if (overridden(config, d)) {
      result.defaults_replaced.emplace_back(d.key);
      continue;
    }
    if (config.saga.steps == 0 && std::string_view(d.key).rfind("saga_", 0) == 0) continue;  // no sagas ran
    const std::optional<double> got = result.field(d.key);
    if (!got.has_value()) continue;
    lethe::ExpectationResult x;
    x.key = d.key;
    x.op = d.op;
    x.want = number_text(d.want);
    x.threshold = d.want;
    x.got = *got;
    x.ok = *got == d.want;
    x.by_default = true;
    result.ok = result.ok && x.ok;
    result.expectations.push_back(x);
  }
}
}  // namespace

Story scenario_story(const lethe::ScenarioConfig& config) {
  struct Violation {
    std::string_view key;
    double clean;
    std::string_view parts;  // a prefix of keys that name a part of it ("duplicates.")
  };
  std::vector<Violation> violations;
  for (const lethe::DefaultExpectation& d : lethe::kDefaultExpectations) {
    violations.push_back({d.key, d.want, d.overridden_by});
  }
  for (std::string_view key : lethe::kViolationsBeyondDefaults) violations.push_back({key, 0.0, ""});
  bool named = false;
  bool required = false;
  bool allowed = false;
  for (const lethe::Expectation& e : config.expect) {
    for (const Violation& v : violations) {
      if (e.key != v.key && (v.parts.empty() || e.key.rfind(v.parts, 0) != 0)) continue;
      named = true;
      const double want =
          e.percent ? e.number / 100.0 * static_cast<double>(config.workload.messages) : e.number;
      const double smallest_violation = v.clean == 0.0 ? 1.0 : 0.0;  // one more of a count; linearizable false
      if (!compare(v.clean, e.op, want)) {
        required = true;
      } else if (compare(smallest_violation, e.op, want)) {
        allowed = true;
      }
    }
  }
  if (required) return Story::Failure;
  if (allowed) return Story::BoundedFix;
  if (!named && !config.expect_defaults) return Story::Unchecked;
  return Story::Fix;
}

std::string_view to_string(Story story) {
  switch (story) {
    case Story::Failure: return "failure";
    case Story::BoundedFix: return "bounded fix";
    case Story::Fix: return "fix";
    case Story::Unchecked: return "unchecked";
  }
  return "unchecked";
}

std::string out_of_memory_text() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    return fmt::format("out of memory: an allocation failed (std::bad_alloc; address-space limit {} MiB)",
                       limit.rlim_cur / (1024 * 1024));
  }
  return "out of memory: an allocation failed (std::bad_alloc)";
}

void check_expectations(const lethe::ScenarioConfig& config, lethe::RunResult& result) {
  result.expectations.clear();
  result.ok = true;
  for (const auto& e : config.expect) {
    lethe::ExpectationResult x;
    x.key = e.key;
    x.op = lethe::to_string(e.op);
    x.want = number_text(e.number) + (e.percent ? "%" : "");
    x.line = e.line;
    const auto got = result.field(e.key);
    const double want = e.percent ? e.number / 100.0 * static_cast<double>(result.messages) : e.number;
    x.threshold = want;
    if (!got.has_value()) {
      // e.g. `linearizable` when it was not checked: the expectation cannot hold.
      x.got = std::nan("");
      x.ok = false;
    } else {
      x.got = *got;
      x.ok = compare(*got, e.op, want);
    }
    result.ok = result.ok && x.ok;
    result.expectations.push_back(x);
  }
  check_defaults(config, result);  // after the written ones: a failing written entry is the first to show
}

SeedRun run_seed(const lethe::ScenarioConfig& config, std::uint64_t seed, const lethe::WorldOptions& options,
                 lethe::WorldRecord* record) {
  SeedRun run;
  try {
    run.result = lethe::run_world(config, seed, options, record);
    check_expectations(config, run.result);
  } catch (const lethe::ExternalNodeError& e) {
    run.error = e.what();
    run.bad_input = true;
  } catch (const sim::InternalError& e) {
    run.error = e.what();
  } catch (const std::bad_alloc&) {
    run.error = out_of_memory_text();
  } catch (const std::exception& e) {
    run.error = std::string("internal error: ") + e.what();
  }
  if (!run.error.empty()) {
    run.result.scenario = config.scenario.name;
    run.result.seed = seed;
    run.result.ok = false;
  }
  return run;
}

void parallel_for(std::size_t count, unsigned threads, const std::function<void(std::size_t)>& f) {
  if (threads <= 1 || count <= 1) {
    for (std::size_t i = 0; i < count; ++i) f(i);
    return;
  }
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> pool;
  const unsigned n = static_cast<unsigned>(std::min<std::size_t>(threads, count));
  pool.reserve(n);
  for (unsigned t = 0; t < n; ++t) {
    pool.emplace_back([&] {
      for (std::size_t i = next.fetch_add(1); i < count; i = next.fetch_add(1)) f(i);
    });
  }
  for (auto& thread : pool) thread.join();
}

unsigned default_jobs() {
  // The CPUs this process may run on (taskset, a container's cpuset), not every CPU of the machine.
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (::sched_getaffinity(0, sizeof(allowed), &allowed) == 0 && CPU_COUNT(&allowed) > 0) {
    return static_cast<unsigned>(CPU_COUNT(&allowed));
  }
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n;
}

}  // namespace runner
