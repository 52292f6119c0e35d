// Live mode's judgement comes from the strategy's registry entry: a strategy registered at runtime
// (tests/protocol/run_always_strategy.hpp) runs live, and its duplicates count as unexplained exactly when none
// of its windows for their cause is open (Always, WithSettings under the run's settings).
#include <gtest/gtest.h>

#include <string>

#include "live_support.hpp"
#include "tests/protocol/run_always_strategy.hpp"

namespace registry_test {

using lethe::Basis;
using lethe::Cause;
using lethe::WindowOpens;

// Every delivery of every id runs the effect: the copies, delivered back to back, are duplicates.
live::LiveOutcome run_always_live(const std::string& kind, bool loud) {
  live::LiveSettings s = live_test::quiet_settings("memory", "atomic");
  live_test::set_kind(s.protocol, kind);
  s.protocol.settings.set("run_label", std::string(loud ? "loud" : "plain"));
  s.messages = 40;
  return live::run_live(s);
}

TEST(LiveRegistry, DuplicatesAreUnexplainedExactlyWhenNoWindowOfTheirCauseIsOpen) {
  const lethe::DuplicateWindow crash = registry_test::window(Cause::CrashAfterEffect, WindowOpens::Always);
  registry_test::ensure_registered(
      registry_test::run_always_entry("live-test-always", Basis::Absent, {Basis::Absent},
                                      {registry_test::window(Cause::Unprotected, WindowOpens::Always), crash}));
  registry_test::ensure_registered(registry_test::run_always_entry(
      "live-test-broken-store", Basis::Absent, {Basis::Absent},
      {registry_test::window(Cause::Unprotected, WindowOpens::BrokenStore), crash}));
  lethe::DuplicateWindow without_memo{Cause::Unprotected, WindowOpens::WithSettings,
                                      [](const lethe::ProtocolSection& p) {
                                        return p.settings.get<std::string>("run_label") == "loud";
                                      },
                                      "a test window"};
  registry_test::ensure_registered(registry_test::run_always_entry("live-test-with-settings", Basis::Absent,
                                                                   {Basis::Absent}, {without_memo, crash}));

  const live::LiveOutcome always = run_always_live("live-test-always", false);
  SCOPED_TRACE(live_test::describe(always));
  EXPECT_GT(live_test::duplicates(always, Cause::Unprotected), 0u);
  EXPECT_EQ(always.unexplained_duplicates, 0u);

  const live::LiveOutcome broken = run_always_live("live-test-broken-store", false);
  SCOPED_TRACE(live_test::describe(broken));
  EXPECT_GT(live_test::duplicates(broken, Cause::Unprotected), 0u);
  EXPECT_EQ(broken.unexplained_duplicates, live_test::duplicates(broken, Cause::Unprotected));
  EXPECT_FALSE(broken.passed());

  const live::LiveOutcome closed = run_always_live("live-test-with-settings", false);
  SCOPED_TRACE(live_test::describe(closed));
  EXPECT_EQ(closed.unexplained_duplicates, live_test::duplicates(closed, Cause::Unprotected));
  EXPECT_GT(closed.unexplained_duplicates, 0u);
  const live::LiveOutcome open = run_always_live("live-test-with-settings", true);
  SCOPED_TRACE(live_test::describe(open));
  EXPECT_GT(live_test::duplicates(open, Cause::Unprotected), 0u);
  EXPECT_EQ(open.unexplained_duplicates, 0u);
}

TEST(LiveRegistry, AStrategyWhoseEffectIsAStoreTransactionIsRefused) {
  lethe::StrategyInfo info =
      registry_test::run_always_entry("live-test-transaction", Basis::Absent, {Basis::Absent}, {});
  info.effect_in_store_transaction = true;
  registry_test::ensure_registered(std::move(info));
  live::LiveSettings s = live_test::quiet_settings("memory", "atomic");
  live_test::set_kind(s.protocol, "live-test-transaction");
  EXPECT_NE(live::validate(s).find("\"live-test-transaction\" needs store transactions"), std::string::npos)
      << live::validate(s);
  s.protocol.kind = "no-such-strategy";
  EXPECT_NE(live::validate(s).find("unknown protocol.kind"), std::string::npos) << live::validate(s);
}

}  // namespace registry_test
