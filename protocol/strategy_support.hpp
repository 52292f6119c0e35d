// protocol/strategy_support.hpp — what the built-in strategies share: a write step retried on unknown outcomes,
// the identity of one protect() call, and the reporting of its decisions, waits and result.
//
// execute_step tries one operation up to kStoreAttemptsPerStep times while its outcome is unknown (nullopt) and
// says how many tries it took (a reply after several tries may show an earlier try's effect). Reporter turns a
// Call into hook calls: note() for every decision, begin_wait()/finish_wait() around a wait (finish_wait reports
// the wait once per call), failed()/skipped() to end a call. saturating_add (sim/time.hpp) caps a time at sim::kTimeMax.
//
// Does not: decide anything, or touch the store except through execute_step.
#pragma once

#include <cstdint>
#include <optional>

#include "core/config.hpp"
#include "protocol/env.hpp"
#include "protocol/store_ops.hpp"
#include "protocol/strategies.hpp"
#include "sim/time.hpp"

namespace lethe {

// The reply of a write step and how many tries it took (a reply after more than one try may show the effect of
// an earlier try whose outcome was unknown).
struct StepReply {
  std::optional<Reply> reply;
  int tries = 0;
};

// time + duration, capped at kTimeMax: a huge ttl or max_wait never wraps around (the kernel's own sum).
using sim::saturating_add;

StepReply execute_step(StoreClient& store, const Op& op);

// The identity of one protect() call, and what it reports through the hooks.
struct Call {
  MessageId id = 0;
  ProcessorId processor = 0;
  AttemptId attempt = 0;
  Key key = 0;
  ProtectResult result;
  bool waiting = false;
  sim::Time wait_began = 0;  // local time of the first Wait decision
  PayloadFingerprint payload = 0;  // the delivery's payload (read by strategies that check it)
};

class Reporter {
 public:
  Reporter(ProtocolHooks& hooks, Clock& clock) : hooks_(hooks), clock_(clock) {}

  void note(const Call& call, Basis basis, const std::optional<Item>& seen, sim::Time local_time);
  void begin_wait(Call& call, sim::Time local_time);
  // Leaves the wait for good (once per call): records the wait time and reports it.
  void finish_wait(Call& call);
  ProtectResult failed(Call& call);
  ProtectResult skipped(Call& call, std::optional<std::uint64_t> value);

  ProtocolHooks& hooks() { return hooks_; }

 private:
  ProtocolHooks& hooks_;
  Clock& clock_;
};

// The [protocol] keys several strategies read, declared once; each strategy lists in its entry the ones it reads.
SettingKey max_processing_time_key();  // required, a duration above 0
SettingKey ttl_key();                  // required, a duration above 0 or "none"
SettingKey poll_key();                 // default "100ms"
SettingKey max_wait_key();             // default "1m"
SettingKey memoize_key();              // default true
SettingKey expired_wins_key();         // default true
SettingKey precedence_key();           // default "expired-wins"

// The precedence that the precedence and expired_wins settings give (effective_precedence: never ExpiredWins).
// REQUIRES: both keys set.
Precedence precedence_setting(const StrategySettings& settings);

}  // namespace lethe
