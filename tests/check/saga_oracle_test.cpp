// Tests of check/saga_oracle.hpp: each violation is detected and named, and clean sagas pass.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "check/saga_oracle.hpp"
#include "protocol/saga.hpp"

namespace saga_oracle_test {

using lethe::compensation_processor;
using lethe::step_processor;

constexpr int kSteps = 3;

// A ledger of sagas 1..count (processor 0 is what the producer owes), executions added by the test.
struct Sagas {
  explicit Sagas(lethe::MessageId count) {
    for (lethe::MessageId id = 1; id <= count; ++id) ledger.expected.add(id, 1);
  }
  Sagas& run(lethe::MessageId saga, int step, sim::Time at) { return add(saga, step_processor(step), at); }
  Sagas& undo(lethe::MessageId saga, int step, sim::Time at) { return add(saga, compensation_processor(step), at); }
  lethe::RunResult judge() {
    lethe::RunResult result;
    lethe::judge_sagas(lethe::SagaOracleInput{ledger, kSteps}, result);
    return result;
  }

  lethe::Ledger ledger;

 private:
  Sagas& add(lethe::MessageId saga, lethe::ProcessorId processor, sim::Time at) {
    ledger.executions.push_back(lethe::ExecutionRecord{saga, processor, ++attempt_, 1, 0, at, 7});
    return *this;
  }
  lethe::AttemptId attempt_ = 0;
};

bool names(const lethe::RunResult& result, const std::string& cause) {
  for (const std::string& line : result.saga_violations) {
    if (line.rfind(cause + ":", 0) == 0) return true;
  }
  return false;
}

TEST(SagaOracle, ACompletedSagaAndACompensatedSagaPassClean) {
  Sagas sagas(2);
  sagas.run(1, 0, 10).run(1, 1, 20).run(1, 2, 30);     // completed
  sagas.run(2, 0, 10).run(2, 1, 20).undo(2, 1, 40).undo(2, 0, 50);  // step 2 declined, compensated in reverse
  const lethe::RunResult result = sagas.judge();
  EXPECT_EQ(result.saga_completed, 1u);
  EXPECT_EQ(result.saga_compensated, 1u);
  EXPECT_EQ(result.saga_stuck, 0u);
  EXPECT_EQ(result.saga_duplicate_steps, 0u);
  EXPECT_EQ(result.saga_duplicate_compensations, 0u);
  EXPECT_EQ(result.saga_orphan_compensations, 0u);
  EXPECT_EQ(result.saga_late_steps, 0u);
  EXPECT_TRUE(result.saga_violations.empty());
}

TEST(SagaOracle, AStepExecutedTwiceIsADuplicateStep) {
  Sagas sagas(1);
  sagas.run(1, 0, 10).run(1, 1, 20).run(1, 1, 25).run(1, 2, 30);
  const lethe::RunResult result = sagas.judge();
  EXPECT_EQ(result.saga_duplicate_steps, 1u);
  EXPECT_TRUE(names(result, "duplicate_step"));
  EXPECT_EQ(result.saga_completed, 1u);  // every step ran, nothing compensated: its end is completed
}

TEST(SagaOracle, ARefundExecutedTwiceIsADuplicateCompensation) {
  Sagas sagas(1);
  sagas.run(1, 0, 10).run(1, 1, 20).undo(1, 1, 40).undo(1, 1, 45).undo(1, 0, 50);
  const lethe::RunResult result = sagas.judge();
  EXPECT_EQ(result.saga_duplicate_compensations, 1u);
  EXPECT_TRUE(names(result, "duplicate_compensation"));
  EXPECT_EQ(result.saga_compensated, 1u);
}

TEST(SagaOracle, ACompensationOfAStepThatNeverRanIsAnOrphan) {
  Sagas sagas(1);
  sagas.run(1, 0, 10).run(1, 1, 20).undo(1, 2, 35).undo(1, 1, 40).undo(1, 0, 50);
  const lethe::RunResult result = sagas.judge();
  EXPECT_EQ(result.saga_orphan_compensations, 1u);
  EXPECT_TRUE(names(result, "orphan_compensation"));
  EXPECT_EQ(result.saga_compensated, 1u);
}

TEST(SagaOracle, AStepLandingAfterItsCompensationIsALateStepNotAStuckSaga) {
  Sagas sagas(1);
  sagas.run(1, 0, 10).undo(1, 1, 40).undo(1, 0, 50).run(1, 1, 60);  // the refund came before the charge
  const lethe::RunResult result = sagas.judge();
  EXPECT_EQ(result.saga_late_steps, 1u);
  EXPECT_TRUE(names(result, "late_step"));
  EXPECT_EQ(result.saga_compensated, 0u);
  EXPECT_EQ(result.saga_stuck, 0u);
}

TEST(SagaOracle, ASagaLeftHalfDoneOrNeverStartedIsStuck) {
  Sagas sagas(2);
  sagas.run(1, 0, 10).run(1, 1, 20);  // nothing shipped, nothing compensated
  const lethe::RunResult result = sagas.judge();  // saga 2 never ran a step
  EXPECT_EQ(result.saga_stuck, 2u);
  EXPECT_TRUE(names(result, "stuck"));
  EXPECT_EQ(result.saga_completed + result.saga_compensated, 0u);
}

TEST(SagaOracle, PartlyCompensatedIsStuck) {
  Sagas sagas(1);
  sagas.run(1, 0, 10).run(1, 1, 20).undo(1, 1, 40);  // the stock was never released
  EXPECT_EQ(sagas.judge().saga_stuck, 1u);
}

TEST(SagaOracle, SettledGroupsCountAsExecutions) {
  Sagas sagas(1);
  for (int step = 0; step < kSteps; ++step) {
    lethe::SettledGroup settled;
    settled.attempt = static_cast<lethe::AttemptId>(step + 1);
    settled.executed_at = 10 * (step + 1);
    sagas.ledger.settled[lethe::group_key(1, step_processor(step))] = settled;
  }
  EXPECT_EQ(sagas.judge().saga_completed, 1u);
}

}  // namespace saga_oracle_test
