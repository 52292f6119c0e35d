// check/weak_kv.hpp: seq-kv and lww-kv histories judged against linearizability, sequential consistency per key
// and reads-from-writes. Each history below is small enough to see by eye which orders explain it.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "check/weak_kv.hpp"

namespace weak_kv_test {

using lethe::WeakKvOp;
using lethe::WeakKvType;

WeakKvOp read(std::uint32_t node, lethe::lin::Time sent, lethe::lin::Time answered, std::optional<std::string> value) {
  return WeakKvOp{node, sent, answered, "k", WeakKvType::Read, "", "", false, value ? 0 : 20, value};
}
WeakKvOp write(std::uint32_t node, lethe::lin::Time sent, lethe::lin::Time answered, const std::string& value) {
  return WeakKvOp{node, sent, answered, "k", WeakKvType::Write, value, "", false, 0, std::nullopt};
}
WeakKvOp claim(std::uint32_t node, lethe::lin::Time sent, lethe::lin::Time answered, const std::string& to,
               int code, std::optional<std::string> found = std::nullopt) {
  return WeakKvOp{node, sent, answered, "k", WeakKvType::Cas, to, "free", true, code, found};
}

TEST(WeakKv, TwoClaimsFromAbsentThatBothHeldAreNeitherLinearizableNorSequential) {
  const std::vector<WeakKvOp> h = {claim(1, 0, 10, "a", 0), claim(2, 5, 15, "b", 0)};
  EXPECT_EQ(lethe::check_weak_kv_linearizable(h).holds, false);
  EXPECT_EQ(lethe::check_weak_kv_sequential(h).holds, false);
  EXPECT_EQ(lethe::check_weak_kv_reads_from_writes(h).holds, true);  // nothing was read
  EXPECT_NE(lethe::check_weak_kv_linearizable(h).why.find("key k"), std::string::npos);
}

TEST(WeakKv, AClaimRefusedOnTheOtherClaimsValueIsLinearizable) {
  const std::vector<WeakKvOp> h = {claim(1, 0, 10, "a", 0), claim(2, 5, 15, "b", 22, "a")};
  EXPECT_EQ(lethe::check_weak_kv_linearizable(h).holds, true);
  EXPECT_EQ(lethe::check_weak_kv_sequential(h).holds, true);
}

// A stale read: another node's write was answered before the read was sent, and the read missed it. Sequential
// consistency may order the read first (it is another node's); linearizability may not.
TEST(WeakKv, AnotherNodesStaleReadIsSequentiallyConsistentButNotLinearizable) {
  const std::vector<WeakKvOp> h = {write(1, 0, 10, "x"), read(2, 20, 30, std::nullopt)};
  EXPECT_EQ(lethe::check_weak_kv_linearizable(h).holds, false);
  EXPECT_EQ(lethe::check_weak_kv_sequential(h).holds, true);
}

TEST(WeakKv, ANodeThatMissesItsOwnAnsweredWriteIsNotSequentiallyConsistent) {
  const std::vector<WeakKvOp> h = {write(1, 0, 10, "x"), read(1, 20, 30, std::nullopt)};
  EXPECT_EQ(lethe::check_weak_kv_sequential(h).holds, false);
}

TEST(WeakKv, AReadThatGoesBackToAnOlderValueOnTheSameNodeIsNotSequentiallyConsistent) {
  const std::vector<WeakKvOp> h = {write(1, 0, 10, "x"), write(1, 20, 30, "y"), read(2, 40, 50, "y"),
                                   read(2, 60, 70, "x")};
  EXPECT_EQ(lethe::check_weak_kv_sequential(h).holds, false);
  EXPECT_EQ(lethe::check_weak_kv_reads_from_writes(h).holds, true);  // both values were written before
}

TEST(WeakKv, AWriteWithoutAnswerMayOrMayNotHaveTakenEffect) {
  EXPECT_EQ(lethe::check_weak_kv_linearizable({write(1, 0, lethe::lin::kNever, "x"), read(2, 20, 30, "x")}).holds,
            true);
  EXPECT_EQ(
      lethe::check_weak_kv_linearizable({write(1, 0, lethe::lin::kNever, "x"), read(2, 20, 30, std::nullopt)}).holds,
      true);
}

TEST(WeakKv, AValueNoWriteSentByTheAnswerWroteIsNotReadFromAWrite) {
  EXPECT_EQ(lethe::check_weak_kv_reads_from_writes({read(2, 0, 10, "x")}).holds, false);
  EXPECT_EQ(lethe::check_weak_kv_reads_from_writes({read(2, 0, 10, "x"), write(1, 20, 30, "x")}).holds, false);
  EXPECT_EQ(lethe::check_weak_kv_reads_from_writes({read(2, 0, 10, "x"), write(1, 5, 30, "x")}).holds, true);
  // A claim refused with 22 read the value it found.
  EXPECT_EQ(lethe::check_weak_kv_reads_from_writes({claim(2, 0, 10, "b", 22, "a")}).holds, false);
}

TEST(WeakKv, AKeyWithMoreOperationsThanTheSearchTakesIsUnknownNamingIt) {
  std::vector<WeakKvOp> h;
  for (lethe::lin::Time t = 0; t < static_cast<lethe::lin::Time>(lethe::kMaxOpsPerKey) + 1; ++t) {
    h.push_back(write(1, t * 10, t * 10 + 5, "x"));
  }
  const lethe::WeakKvVerdict verdict = lethe::check_weak_kv_sequential(h);
  EXPECT_FALSE(verdict.holds.has_value());
  EXPECT_NE(verdict.why.find("key k has 25 operations"), std::string::npos) << verdict.why;
}

}  // namespace weak_kv_test
