// check/saga_oracle.hpp — judges every saga as a whole, from the provider's log of executions.
//
// A saga run ([saga] steps > 0, protocol/saga.hpp) calls step s as processor s and its compensation as processor
// kCompensationBase + s; every saga id the producer published (the ledger's expected pairs) is judged. Verifies,
// per saga, and names the cause of each violation (RunResult::saga_violations, cause first):
//   duplicate_step          a step executed more than once (each execution beyond the first counts)
//   duplicate_compensation  a compensation executed more than once: a double refund (each beyond the first)
//   orphan_compensation     a compensation executed for a step that never executed (one per saga and step)
//   late_step               a step executed after its own compensation had executed: the compensation raced a
//                           late step and undid nothing (each such execution)
//   stuck                   the saga ended neither completed nor compensated, and no late step explains it
// and classes each saga's end: completed (every step executed, no compensation executed), compensated (some
// compensation executed, and every step that executed has a compensation executed at or after its last
// execution), otherwise half-done (stuck, or explained by its late steps).
//
// Does not verify: that a saga that could have completed did (a decline is the provider's), the order of
// steps within the forward path, values, or why a duplicate happened (check/oracle.hpp explains every duplicate
// step and compensation like any other duplicate effect). It trusts the Ledger's executions.
#pragma once

#include <cstddef>

#include "core/config.hpp"
#include "check/ledger.hpp"
#include "core/result.hpp"

namespace lethe {

struct SagaOracleInput {
  const Ledger& ledger;
  int steps = 0;                     // [saga] steps: 2..8
  std::size_t max_violations = 100;  // lines kept in saga_violations (every violation is counted)
};

// Fills the saga fields of `result` (saga_completed .. saga_violations).
void judge_sagas(const SagaOracleInput& input, RunResult& result);

}  // namespace lethe
