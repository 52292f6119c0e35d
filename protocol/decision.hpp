// protocol/decision.hpp — the dedupe decision table, as a pure function.
//
// The record is the store Item kept under make_key(Table::Dedupe, processor, id):
// started_at (when the owning attempt began, on ITS clock), completed_at (absent
// while in flight), expires_on (when the memory may be forgotten), owner (the
// attempt id that holds it: the fencing token) and memoized (the effect's result).
//
// The four-row table (what an attempt finds -> what it does):
//   nothing                                    -> Process (never seen)
//   completed_at set                           -> Skip    (already done; the memoized result is returned)
//   in flight, age >= max_processing_time      -> Process (the previous attempt is presumed dead: take over)
//   in flight, age <  max_processing_time      -> Wait    (somebody is on it; re-read later)
// where age = now - started_at, `now` being the DECIDING node's local clock.
//
// Contract:
// - Boundary: an age exactly equal to max_processing_time is stale (Process). A record is recent only while
//   its age is strictly below the threshold.
// - Clock skew: a negative age (started_at is in the decider's future) is recent: Wait, never Process.
//   This holds for every max_processing_time, also a non-positive one.
// - A record with neither completed_at nor started_at (no attempt ever claimed it) counts as absent.
// - Expiry: decide() reads the record as it says (an expired record that is still present is judged like any
//   other). decide_with_basis(..., expired_wins = true) first treats a record whose expires_on <= now as absent
//   (Process; basis ExpiredCompleted when it was completed, Absent when it was in flight); with
//   expired_wins = false it is judged as it says. Expiry is checked before everything else, with the same
//   predicate the store uses (Item::expired_at), so a caller that writes Update::replace_expired_at = now
//   and decides with the same `now` agrees with the store on what was replaced.
// - Total and exact for every int64 value of started_at, now and max_processing_time: no overflow.
//
// Does not: read clocks, touch the store, or know about ownership. Whether a Process decision may run the
// effect (did OUR write create the record? did our fenced takeover land?) is the protocol's business
// (protocol/strategies.hpp).
#pragma once

#include <optional>

#include "core/config.hpp"
#include "protocol/env.hpp"
#include "protocol/store_ops.hpp"
#include "sim/time.hpp"

namespace lethe {

struct DecisionAndBasis {
  Decision decision = Decision::Process;
  Basis basis = Basis::Absent;  // Absent, ExpiredCompleted, Completed, StaleTakeover or InFlightRecent
  bool operator==(const DecisionAndBasis&) const = default;
};

// The four-row table; the record is judged as it says (expired_wins = false).
Decision decide(const std::optional<Item>& previous, sim::Time now, sim::Duration max_processing_time);

// The table with the basis of the decision, and the expired_wins switch (docs/scenarios.md protocol.expired_wins).
DecisionAndBasis decide_with_basis(const std::optional<Item>& previous, sim::Time now,
                                   sim::Duration max_processing_time, bool expired_wins);

// The table under a precedence (effective_precedence(): never Precedence::ExpiredWins). ExpiredFirst is
// expired_wins = true, ExpiryIgnored is expired_wins = false; CompletedFirst skips a completed record even when
// it is expired and decides an expired in-flight record Process with basis StaleTakeover (it is dead: the
// caller takes it over by the fenced takeover write, whatever its age).
DecisionAndBasis decide_with_precedence(const std::optional<Item>& previous, sim::Time now,
                                        sim::Duration max_processing_time, Precedence precedence);

// True if a record started at `started_at` is stale at `now`: now - started_at >= max_processing_time, with a
// negative age never stale. Exact for all int64 inputs.
bool is_stale(sim::Time started_at, sim::Time now, sim::Duration max_processing_time);

}  // namespace lethe
