// tests/live/live_support.hpp — shared helpers of the live tests: server settings from the environment, the
// settings of a faulty run, and checks with readable failure messages.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <fmt/format.h>
#include <string>

#include "live/run.hpp"
#include "protocol/registry.hpp"

namespace live_test {

// The server a test talks to, from LETHE_PG_DSN / LETHE_REDIS_URL; empty when unset (the test skips).
inline std::string server_target(const std::string& store) {
  if (store == "memory") return "memory";
  const char* value = std::getenv(store == "postgres" ? "LETHE_PG_DSN" : "LETHE_REDIS_URL");
  return value == nullptr ? std::string() : std::string(value);
}

inline std::string skip_reason(const std::string& store) {
  return fmt::format("{} is not set: no {} server to test against (scripts/live-servers test starts throwaway "
                     "servers and runs these tests)",
                     store == "postgres" ? "LETHE_PG_DSN" : "LETHE_REDIS_URL", store);
}

#define LIVE_REQUIRE_SERVER(store)                                            \
  do {                                                                        \
    if (::live_test::server_target(store).empty()) {                          \
      GTEST_SKIP() << ::live_test::skip_reason(store);                        \
    }                                                                         \
  } while (0)

inline lethe::ProtocolSection live_protocol(sim::Duration max_processing_time) {
  lethe::ProtocolSection protocol;
  protocol.kind = "mnemosyne";
  protocol.settings.set("max_processing_time", max_processing_time);
  protocol.settings.set("ttl", sim::Duration{sim::kHour});
  lethe::Poll poll;
  poll.interval = sim::Distribution::constant(5 * sim::kMillisecond);
  protocol.settings.set("poll", poll);
  protocol.settings.set("max_wait", sim::Duration{5 * sim::kSecond});
  return protocol;
}

// `protocol` under another kind: the settings that kind reads are kept, the others dropped (a kind refuses a key
// it does not read). REQUIRES: `kind` is registered.
inline void set_kind(lethe::ProtocolSection& protocol, const std::string& kind) {
  protocol.kind = kind;
  const lethe::StrategyInfo& info = lethe::strategy_info(kind);
  std::vector<std::string> unread;
  for (const auto& [key, value] : protocol.settings.values()) {
    if (lethe::find_key(info, key) == nullptr) unread.push_back(key);
  }
  for (const std::string& key : unread) protocol.settings.erase(key);
}

// A run with no injected faults (races only: every id delivered 1 + copies times, back to back).
inline live::LiveSettings quiet_settings(const std::string& store, const std::string& variant) {
  live::LiveSettings s;
  s.store = store;
  s.store_options.target = server_target(store);
  s.store_options.variant = variant;
  s.store_options.timeout = 2 * sim::kSecond;
  s.protocol = live_protocol(150 * sim::kMillisecond);
  s.workers = 8;
  s.messages = 150;
  s.duplicates = 1.0;
  s.copies = 3;
  s.processing_time = sim::Distribution::constant(500 * sim::kMicrosecond);
  s.max_duration = 60 * sim::kSecond;
  return s;
}

// Every fault at once: kills at the three named points, dropped connections, store stalls past the statement
// timeout, slow effects past max_processing_time.
inline live::LiveSettings faulty_settings(const std::string& store, const std::string& variant) {
  live::LiveSettings s = quiet_settings(store, variant);
  s.messages = 400;
  s.copies = 2;
  s.store_options.timeout = 50 * sim::kMillisecond;
  s.faults.crash_after_start = 0.03;
  s.faults.crash_after_effect = 0.03;
  s.faults.crash_before_ack = 0.03;
  s.faults.drop = 0.02;
  s.faults.stall_every = 400 * sim::kMillisecond;
  s.faults.stall_for = 70 * sim::kMillisecond;
  s.faults.slow = 0.01;
  return s;
}

inline std::uint64_t coverage(const live::LiveOutcome& o, const std::string& key) {
  const auto it = o.result.coverage.find(key);
  return it == o.result.coverage.end() ? 0 : it->second;
}

inline std::uint64_t duplicates(const live::LiveOutcome& o, lethe::Cause cause) {
  return o.result.duplicates[static_cast<std::size_t>(cause)];
}

inline std::string describe(const live::LiveOutcome& o) {
  std::string causes;
  for (std::size_t i = 0; i < lethe::kCauseCount; ++i) {
    causes += fmt::format("{}{} {}", i == 0 ? "" : ", ", lethe::kCauseNames[i], o.result.duplicates[i]);
  }
  std::string text = fmt::format(
      "{} {}: {} operations ({} unknown), history {}, effects {}, duplicates {} ({}), unexplained {}, lost {}, "
      "wall {} ms",
      o.store, o.variant, o.operations, o.unknown_outcomes, lethe::lin::to_string(o.verdict), o.result.effects,
      o.result.duplicate_effects, causes, o.unexplained_duplicates, o.result.lost_messages, o.wall_time / 1'000'000);
  if (o.verdict == lethe::lin::Verdict::NotLinearizable) text += "\n" + o.check_explanation;
  for (std::size_t i = 0; i < o.result.explanations.size() && i < 3; ++i) {
    text += "\n  " + o.result.explanations[i].because;
  }
  for (const auto id : o.unexplained_ids) {
    for (const auto& x : o.result.explanations) {
      if (x.id == id) text += fmt::format("\n  unexplained [{}] {}", lethe::to_string(x.cause), x.because);
    }
  }
  return text;
}

// A correct variant under every fault: a linearizable history over thousands of operations, every fault fired,
// no unexplained duplicate, nothing lost, and every duplicate caused by an injected fault.
inline void expect_correct_under_faults(const live::LiveOutcome& o) {
  SCOPED_TRACE(describe(o));
  std::cout << "[ live     ] " << describe(o) << "\n";
  EXPECT_EQ(o.verdict, lethe::lin::Verdict::Linearizable);
  EXPECT_EQ(o.unexplained_duplicates, 0u);
  EXPECT_EQ(o.result.lost_messages, 0u);
  EXPECT_TRUE(o.passed());
  EXPECT_GE(o.operations, 2000u);
  EXPECT_GT(o.unknown_outcomes, 0u);
  EXPECT_EQ(o.result.messages, 400u);
  EXPECT_GE(o.result.effects, 400u);
  EXPECT_EQ(duplicates(o, lethe::Cause::Unprotected), 0u);
  EXPECT_EQ(duplicates(o, lethe::Cause::HerdTakeover), 0u);
  EXPECT_EQ(duplicates(o, lethe::Cause::Expired), 0u);
  EXPECT_EQ(duplicates(o, lethe::Cause::SinkRetry), 0u);
  for (const char* fired : {"crash_point.after_start_before_effect.fired",
                            "crash_point.after_effect_before_complete.fired",
                            "crash_point.after_complete_before_ack.fired", "fault.connection_drop.fired",
                            "fault.store_stall.fired"}) {
    EXPECT_GT(coverage(o, fired), 0u) << fired << " never fired";
  }
  EXPECT_GT(coverage(o, "store.statement_timeouts") + coverage(o, "store.client_timeouts"), 0u)
      << "no statement timed out";
}

// An unsafe variant: caught (a non-linearizable history or an unexplained duplicate) within `attempts` runs of
// the quiet workload (seeds 1..attempts). Returns the runs it took.
inline int expect_caught_within(const std::string& store, const std::string& variant, int attempts) {
  for (int attempt = 1; attempt <= attempts; ++attempt) {
    live::LiveSettings s = quiet_settings(store, variant);
    s.seed = static_cast<std::uint64_t>(attempt);
    const live::LiveOutcome o = live::run_live(s);
    std::cout << "[ live     ] run " << attempt << ": " << describe(o) << "\n";
    if (!o.passed()) {
      EXPECT_TRUE(o.verdict == lethe::lin::Verdict::NotLinearizable || o.unexplained_duplicates > 0);
      return attempt;
    }
  }
  ADD_FAILURE() << store << " " << variant << " was not caught in " << attempts << " runs";
  return attempts + 1;
}

}  // namespace live_test
