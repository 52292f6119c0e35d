// check/oracle.hpp — counts every duplicate effect and names the clause that broke.
//
// Verifies (after a run, from the Ledger):
//   - executions per (message id, processor): the first is the effect, every
//     later one is a duplicate;
//   - each duplicate gets exactly one cause (docs/results.md), so the causes sum
//     to duplicate_effects:
//       provider_key_expired  an idempotent provider had pruned the key (sink.idempotency_window): the
//                             duplicate came at least the window after the execution before it
//       sink_retry            the same attempt called the provider again (a retried call whose ACK was lost)
//       unprotected           the strategy gives no guarantee (it checks nothing), or raced (two attempts both
//                             found no record), or the attempt that ran the effect recorded no decision
//       expired               the attempt found no record (or an expired one) because TTL removed it
//       herd_takeover         several attempts took over the same stale record (startedAt never refreshed)
//       crash_after_effect    the record's owner died between its effect and its completion record
//       takeover_while_alive  the owner was alive (work slower than max_processing_time, a pause, clock
//                             skew, or on_max_wait = "process")
//     Precedence when several could apply: provider_key_expired, sink_retry, then the attempt's own
//     decision (unprotected / expired / herd / crash / alive), as listed.
//   - every cause but the provider's two (provider_key_expired, sink_retry) is one the strategy's registry entry names in
//     its duplicate windows (protocol/registry.hpp): another one throws
//     StrategyContractError, as does an execution whose recorded decision is
//     not one to run the effect on (std::logic_error). Whether the window was
//     open under the run's settings is not judged here (live mode does).
//   - lost messages: expected (id, processor) pairs never executed by the end;
//   - memo mismatches: callers handed a value other than the first execution's;
//   - memo overwrites: completions that landed on a live record holding a different memoized result, as the
//     store's replies showed them (Ledger::memo_overwrites, recorded by the world; see memo_overwrite);
//   - waits and wait times; recovery latency (a crash of an attempt that held
//     the record -> the completion of that message by another attempt).
//
// Does not verify: that the store is linearizable (check/linearizability.hpp
// does), that effects outside the provider's log happened, or anything about
// message order. It trusts the Ledger: a world that forgets to record an
// execution hides a duplicate (the provider's own log is copied verbatim to
// avoid that).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "core/config.hpp"
#include "check/ledger.hpp"
#include "core/result.hpp"

namespace lethe {

struct OracleInput {
  const Ledger& ledger;
  std::string protocol;  // the registered strategy's name (ProtocolSection::kind)
  std::uint64_t sink_calls = 0;
  std::function<std::string(std::uint32_t node)> node_name;
  std::function<std::string(ProcessorId)> processor_name;
  std::size_t max_explanations = 1000;  // beyond it only the first duplicate of each cause is explained
  // An idempotent provider that prunes its keys this long after storing them (sink.idempotency_window);
  // nullopt: no provider idempotency, or keys kept forever.
  std::optional<sim::Duration> provider_key_window = std::nullopt;
};

// Fills the counting fields of `result` (effects .. recovery_latency, explanations).
void judge(const OracleInput& input, RunResult& result);

// Nearest-rank quantiles of a sample (sorted in place).
Quantiles quantiles(std::vector<std::int64_t>& values);

}  // namespace lethe
