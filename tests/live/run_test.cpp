// Live runs: the mnemosyne protocol on real threads against real stores, judged by the oracle and the
// linearizability checker. Correct statement variants pass under every fault; unsafe ones are caught within a
// bounded number of runs. The memory store needs no server (it checks the harness itself).
#include <gtest/gtest.h>

#include "live_support.hpp"

namespace run_test {

using live_test::expect_caught_within;
using live_test::expect_correct_under_faults;
using live_test::faulty_settings;

// --- the in-process store: the harness, without servers ---

TEST(LiveMemory, AtomicStorePassesUnderEveryFault) {
  live::LiveSettings s = faulty_settings("memory", "atomic");
  s.faults.stall_every = 0;  // the in-process store cannot stall
  s.protocol.settings.set("max_processing_time", sim::Duration{50 * sim::kMillisecond});
  s.messages = 200;
  const live::LiveOutcome o = live::run_live(s);
  SCOPED_TRACE(live_test::describe(o));
  EXPECT_TRUE(o.passed());
  EXPECT_EQ(o.verdict, lethe::lin::Verdict::Linearizable);
  EXPECT_EQ(o.unexplained_duplicates, 0u);
  EXPECT_GE(o.operations, 1000u);
  EXPECT_GT(live_test::coverage(o, "crash_point.after_effect_before_complete.fired"), 0u);
  EXPECT_GT(live_test::coverage(o, "fault.connection_drop.fired"), 0u);
}

TEST(LiveMemory, ReadThenWriteStoreIsCaughtWithinFiveRuns) {
  EXPECT_LE(expect_caught_within("memory", "read-then-write", 5), 5);
}

// The checker separates a broken store from a broken strategy: check-then-insert races on a correct store
// (duplicates, cause unprotected) while the store's history stays linearizable.
TEST(LiveMemory, CheckThenInsertDuplicatesOnACorrectStoreWhoseHistoryIsLinearizable) {
  live::LiveSettings s = live_test::quiet_settings("memory", "atomic");
  live_test::set_kind(s.protocol, "check-then-insert");
  const live::LiveOutcome o = live::run_live(s);
  SCOPED_TRACE(live_test::describe(o));
  EXPECT_EQ(o.verdict, lethe::lin::Verdict::Linearizable);
  EXPECT_GT(live_test::duplicates(o, lethe::Cause::Unprotected), 0u);
  EXPECT_EQ(o.unexplained_duplicates, 0u);  // not the store's fault: the strategy promises nothing
}

TEST(LiveSettings, UnsupportedProtocolsVariantsAndValuesAreRefused) {
  live::LiveSettings s = live_test::quiet_settings("memory", "atomic");
  EXPECT_TRUE(live::validate(s).empty());
  live_test::set_kind(s.protocol, "inbox");
  EXPECT_NE(live::validate(s).find("inbox"), std::string::npos);
  s = live_test::quiet_settings("memory", "no-such-variant");
  EXPECT_NE(live::validate(s).find("unknown variant"), std::string::npos);
  s = live_test::quiet_settings("memory", "atomic");
  s.faults.drop = 1.5;
  EXPECT_FALSE(live::validate(s).empty());
  s = live_test::quiet_settings("memory", "atomic");
  lethe::PollRead eventual;
  eventual.kind = lethe::PollReadKind::Eventual;
  s.protocol.settings.set("poll_read", eventual);
  EXPECT_FALSE(live::validate(s).empty());
  EXPECT_THROW(live::run_live(s), std::invalid_argument);
}

// --- PostgreSQL ---

TEST(LivePostgres, CteInsertRetryPassesUnderEveryFault) {
  LIVE_REQUIRE_SERVER("postgres");
  expect_correct_under_faults(live::run_live(faulty_settings("postgres", "cte-insert-retry")));
}

TEST(LivePostgres, AdvisoryLockPassesUnderEveryFault) {
  LIVE_REQUIRE_SERVER("postgres");
  expect_correct_under_faults(live::run_live(faulty_settings("postgres", "advisory-lock")));
}

TEST(LivePostgres, CteUpsertIsCaughtWithinFiveRuns) {
  LIVE_REQUIRE_SERVER("postgres");
  EXPECT_LE(expect_caught_within("postgres", "cte-upsert", 5), 5);
}

TEST(LivePostgres, ReadThenUpsertIsCaughtWithinFiveRuns) {
  LIVE_REQUIRE_SERVER("postgres");
  EXPECT_LE(expect_caught_within("postgres", "read-then-upsert", 5), 5);
}

// --- Redis ---

TEST(LiveRedis, LuaScriptPassesUnderEveryFault) {
  LIVE_REQUIRE_SERVER("redis");
  expect_correct_under_faults(live::run_live(faulty_settings("redis", "lua")));
}

TEST(LiveRedis, WatchMultiExecPassesUnderEveryFault) {
  LIVE_REQUIRE_SERVER("redis");
  expect_correct_under_faults(live::run_live(faulty_settings("redis", "watch")));
}

TEST(LiveRedis, GetThenSetIsCaughtWithinFiveRuns) {
  LIVE_REQUIRE_SERVER("redis");
  EXPECT_LE(expect_caught_within("redis", "get-then-set", 5), 5);
}

}  // namespace run_test
