#include "check/saga_oracle.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "protocol/saga.hpp"

namespace lethe {

namespace {

struct Executed {
  MessageId saga = 0;
  ProcessorId processor = 0;
  sim::Time at = 0;
  AttemptId attempt = 0;
};

// Every execution of the run, settled groups included, in (saga, processor, time, attempt) order.
std::vector<Executed> executions_of(const Ledger& ledger) {
  std::vector<Executed> all;
  all.reserve(ledger.executions.size() + ledger.settled.size());
  for (const ExecutionRecord& e : ledger.executions) all.push_back({e.id, e.processor, e.at, e.attempt});
  for (const auto& [group, settled] : ledger.settled) {
    all.push_back({group_message(group), group_processor(group), settled.executed_at, settled.attempt});
  }
  std::sort(all.begin(), all.end(), [](const Executed& a, const Executed& b) {
    return std::tie(a.saga, a.processor, a.at, a.attempt) < std::tie(b.saga, b.processor, b.at, b.attempt);
  });
  return all;
}

std::string seconds(sim::Time at) { return fmt::format("{:.3f}s", static_cast<double>(at) / 1e9); }

// The executions of one saga: per step, the times of its executions and of its compensation's.
struct SagaExecutions {
  MessageId saga = 0;
  std::vector<std::vector<sim::Time>> steps;
  std::vector<std::vector<sim::Time>> compensations;
};

class SagaJudge {
 public:
  SagaJudge(const SagaOracleInput& input, RunResult& result) : input_(input), result_(result) {}

  void judge(const SagaExecutions& saga) {
    bool late = false;
    for (int step = 0; step < input_.steps; ++step) late = judge_step(saga, step) || late;
    judge_end(saga, late);
  }

 private:
  // The step's own violations; true when it executed after its compensation.
  bool judge_step(const SagaExecutions& saga, int step) {
    const std::vector<sim::Time>& ran = saga.steps[static_cast<std::size_t>(step)];
    const std::vector<sim::Time>& undone = saga.compensations[static_cast<std::size_t>(step)];
    if (ran.size() > 1) {
      result_.saga_duplicate_steps += ran.size() - 1;
      violation(fmt::format("duplicate_step: saga {} step {} executed {} times (first at {}, last at {})", saga.saga,
                            step, ran.size(), seconds(ran.front()), seconds(ran.back())));
    }
    if (undone.size() > 1) {
      result_.saga_duplicate_compensations += undone.size() - 1;
      violation(fmt::format("duplicate_compensation: saga {} step {} compensated {} times (first at {}, last at {})",
                            saga.saga, step, undone.size(), seconds(undone.front()), seconds(undone.back())));
    }
    if (!undone.empty() && ran.empty()) {
      ++result_.saga_orphan_compensations;
      violation(fmt::format("orphan_compensation: saga {} step {} compensated at {} but never executed", saga.saga,
                            step, seconds(undone.front())));
    }
    if (undone.empty()) return false;
    const auto late = static_cast<std::uint64_t>(
        std::count_if(ran.begin(), ran.end(), [&](sim::Time at) { return at > undone.front(); }));
    if (late == 0) return false;
    result_.saga_late_steps += late;
    violation(fmt::format("late_step: saga {} step {} executed at {}, after its compensation at {}", saga.saga, step,
                          seconds(ran.back()), seconds(undone.front())));
    return true;
  }

  void judge_end(const SagaExecutions& saga, bool late) {
    bool all_ran = true;
    bool any_ran = false;
    bool any_undone = false;
    bool every_ran_undone = true;
    for (int step = 0; step < input_.steps; ++step) {
      const auto& ran = saga.steps[static_cast<std::size_t>(step)];
      const auto& undone = saga.compensations[static_cast<std::size_t>(step)];
      all_ran = all_ran && !ran.empty();
      any_ran = any_ran || !ran.empty();
      any_undone = any_undone || !undone.empty();
      if (!ran.empty() && (undone.empty() || undone.back() < ran.back())) every_ran_undone = false;
    }
    if (all_ran && !any_undone) {
      ++result_.saga_completed;
    } else if (any_undone && every_ran_undone) {
      ++result_.saga_compensated;
    } else if (!late) {
      ++result_.saga_stuck;
      violation(any_ran ? fmt::format("stuck: saga {} ended half-done ({})", saga.saga, progress(saga))
                        : fmt::format("stuck: saga {} never ran a step", saga.saga));
    }
  }

  // "steps 0 1 ran, compensations 1": what executed.
  std::string progress(const SagaExecutions& saga) const {
    std::string ran;
    std::string undone;
    for (int step = 0; step < input_.steps; ++step) {
      if (!saga.steps[static_cast<std::size_t>(step)].empty()) ran += fmt::format(" {}", step);
      if (!saga.compensations[static_cast<std::size_t>(step)].empty()) undone += fmt::format(" {}", step);
    }
    return fmt::format("steps executed:{}; compensated:{}", ran.empty() ? " none" : ran,
                       undone.empty() ? " none" : undone);
  }

  void violation(std::string line) {
    if (result_.saga_violations.size() < input_.max_violations) result_.saga_violations.push_back(std::move(line));
  }

  const SagaOracleInput& input_;
  RunResult& result_;
};

}  // namespace

void judge_sagas(const SagaOracleInput& input, RunResult& result) {
  const std::vector<Executed> all = executions_of(input.ledger);
  const auto steps = static_cast<std::size_t>(input.steps);
  SagaJudge judge(input, result);
  std::size_t next = 0;  // the first execution not yet given to a saga (sagas come in id order below)
  std::vector<MessageId> sagas;
  input.ledger.expected.for_each([&sagas](MessageId id, ProcessorId processor) {
    if (processor == 0) sagas.push_back(id);
  });
  std::sort(sagas.begin(), sagas.end());
  sagas.erase(std::unique(sagas.begin(), sagas.end()), sagas.end());
  for (const MessageId id : sagas) {
    SagaExecutions saga{id, std::vector<std::vector<sim::Time>>(steps), std::vector<std::vector<sim::Time>>(steps)};
    while (next < all.size() && all[next].saga < id) ++next;  // executions of no published saga are not judged
    for (; next < all.size() && all[next].saga == id; ++next) {
      const int step = saga_step_of(all[next].processor);
      if (step < 0 || step >= input.steps) continue;
      auto& times = is_compensation(all[next].processor) ? saga.compensations : saga.steps;
      times[static_cast<std::size_t>(step)].push_back(all[next].at);
    }
    judge.judge(saga);
  }
}

}  // namespace lethe
