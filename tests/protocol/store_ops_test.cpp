// Tests of protocol/store_ops.hpp: the conditional delete (a release of one's own record).
#include "protocol/store_ops.hpp"

#include <gtest/gtest.h>

namespace store_ops_test {

using lethe::Condition;
using lethe::Item;
using lethe::StoreState;

constexpr lethe::Key kKey = 7;

StoreState with_record(lethe::AttemptId owner, bool completed) {
  StoreState state;
  Item item;
  item.started_at = 10;
  item.owner = owner;
  if (completed) item.completed_at = 20;
  state[kKey] = item;
  return state;
}

Condition still_owned_by(lethe::AttemptId owner) {
  Condition condition;
  condition.owner_equals = owner;
  condition.require_not_completed = true;
  return condition;
}

TEST(StoreOpsDelete, AConditionalDeleteRemovesTheRecordOnlyWhileItIsStillTheCallersOwnAndInFlight) {
  StoreState state = with_record(1, false);
  const lethe::Reply refused = lethe::apply(state, lethe::delete_op(kKey, still_owned_by(2)));
  EXPECT_FALSE(refused.applied);
  ASSERT_TRUE(refused.previous.has_value());
  EXPECT_EQ(refused.previous->owner, 1u);
  EXPECT_EQ(state.count(kKey), 1u);  // taken over by another attempt: nothing deleted

  const lethe::Reply deleted = lethe::apply(state, lethe::delete_op(kKey, still_owned_by(1)));
  EXPECT_TRUE(deleted.applied);
  EXPECT_EQ(state.count(kKey), 0u);
}

TEST(StoreOpsDelete, AConditionalDeleteOfACompletedRecordChangesNothing) {
  StoreState state = with_record(1, true);
  EXPECT_FALSE(lethe::apply(state, lethe::delete_op(kKey, still_owned_by(1))).applied);
  EXPECT_EQ(state.count(kKey), 1u);
}

TEST(StoreOpsDelete, AnUnconditionalDeleteRemovesWhateverIsThere) {
  StoreState state = with_record(1, true);
  EXPECT_TRUE(lethe::apply(state, lethe::delete_op(kKey)).applied);
  EXPECT_EQ(state.count(kKey), 0u);
  EXPECT_EQ(lethe::describe(lethe::delete_op(kKey)), "delete(0x7)");
  EXPECT_EQ(lethe::describe(lethe::delete_op(kKey, still_owned_by(1))), "delete(0x7, conditional)");
}

}  // namespace store_ops_test
