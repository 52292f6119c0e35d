// lease_strategy.hpp — "fenced-lease": a dedupe record that is a lease carrying a fencing token.
//
// The record is the same item as mnemosyne's (protocol/store_ops.hpp); its `counter` is the lease generation:
//   1. Start: an Upsert that succeeds only if there is no record (require_absent), creating it in flight with
//      started_at = now, owner = attempt, counter = 1. The previous item (ALL_OLD) says what was there instead.
//   2. On a completed record: skip, returning its memoized value.
//      On an in-flight record whose lease ran out (started_at + lease <= now, protocol.lease): take the lease
//      over with an Upsert fenced on the previous holder (started_at and owner equal, not completed), adding 1
//      to counter. The winner's fencing token is the new counter; a loser polls again.
//      On a lease still held: sleep a poll interval (protocol.poll) and look again, for at most max_wait; then
//      give up (the message is redelivered later).
//   3. Run the effect with the fencing token. The provider is expected to refuse a token older than the newest
//      it has executed for the message ("fencing-payment", fencing_sink.hpp): a holder that paused past its lease
//      and resumes after a takeover is stopped there instead of charging twice.
//   4. Complete: an Upsert fenced on owner = attempt and not completed, setting completed_at, the memoized value
//      and expires_on = now + ttl.
// Tokens grow with each lease of one record and restart at 1 when the record is evicted: the provider's memory of
// tokens and the record's ttl must cover the same redeliveries (the example's ttl is a week).
//
// Duplicates it still lets through (its declared windows): an owner that dies between the effect and the
// completion (crash_after_effect); an owner that ran the effect and then stalled past its lease before
// completing, so that a takeover runs it again with a newer token (takeover_while_alive: the fence cannot undo
// a charge already made); and a redelivery after the ttl evicted the record (expired).
//
// Does not: retry the effect, or write anything on a failed effect (the lease runs out and is taken over).
#pragma once

namespace fencing {

// Adds "fenced-lease" to lethe's strategy registry. Call once, before any run.
void register_lease_strategy();

}  // namespace fencing
