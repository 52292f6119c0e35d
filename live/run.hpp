// live/run.hpp — live mode: the protocol for real, on real threads, against a real store, judged by the
// simulator's oracle and linearizability checker.
//
// What a run does: `workers` threads take deliveries from one in-process queue (ids 0..messages-1; a fraction
// `duplicates` of them delivered 1 + `copies` times, the copies queued back to back so that several workers
// process the same id at the same moment) and call Strategy::protect (protocol/strategies.hpp, made by the same
// make_strategy as the simulator) with a real clock (steady, nanoseconds since the run began) and a connection
// of their own to the store. The effect sleeps `processing_time`, then appends (id, attempt, value) to an
// in-process effect log that outlives the worker; its value is unique per execution. A delivery whose attempt
// failed, or whose worker was killed, comes back after `visibility_timeout` (at most kMaxDeliveryAttempts times);
// one that was executed or skipped is acknowledged (after the AfterCompleteBeforeAck crash point).
//
// Faults (all optional, drawn from per-worker generators seeded by `seed`; thread timing is real, so a seed does
// not replay a run):
//   crash points     at each named point (after_start_before_effect, after_effect_before_complete,
//                    after_complete_before_ack) the worker is killed with the given probability: its connection
//                    is closed without a goodbye, it "restarts" after restart_after with a new connection and a
//                    new strategy, and its delivery comes back after the visibility timeout;
//   drop             per store operation: the connection is closed abruptly before the request is sent or right
//                    after one of its requests was sent (the outcome is unknown to the caller);
//   stalls           every stall_every (uniform in [1/2, 3/2] of it), a separate connection blocks the store's
//                    writers for stall_for (Postgres: EXCLUSIVE table lock; Redis: a busy script), so statements
//                    hit the store timeout;
//   slow effects     with probability `slow`, the effect takes slow_for more (past max_processing_time: another
//                    attempt takes over while the owner is alive).
//
// Server loss: a worker whose connection attempts fail waits before the next one (live/server_watch.hpp: 5 ms
// doubling to 500 ms); once failures alone, with no answer of the server in between, span server_timeout (plus
// stall_for when stalls are on), the run is abandoned: the queue stops, every worker stops at its next store
// operation (its attempt counts as crashed there), and what happened until then is judged as usual; the outcome
// says why it was abandoned and carries no verdict.
//
// Judging: every store operation is recorded with its real invocation and response instants (kNever when the
// outcome is unknown) and the history is checked with lethe::check_store_history (the simulator's checker and
// StoreModel). The ledger (attempts, decisions, waits, effect executions, crashes) is judged by lethe::judge into
// the same RunResult as `lethe run` (duplicates by cause, lost messages, memo mismatches, waits, recovery).
// `unexplained_duplicates` counts the duplicates that no duplicate window of the strategy's registry entry
// (protocol/registry.hpp) explains: a duplicate of cause C is explained when the entry has a window for C that
// opens Always, WithSettings under these settings, or WithSlowOwner when some attempt of that message that ran
// the effect while alive held its record in flight for at least max_processing_time, as seen in the run: an
// injected slow effect, a completion that never landed although it was not killed (every try unknown, e.g.
// during a stall), or a measured span >= max_processing_time from its decision to run until its completion
// landed (a stall delaying the completion, a real pause: scheduling, a loaded machine). A BrokenStore window
// (e.g. two attempts both saw no record: the store's conditional write did not hold) never explains one.
// sink_retry is never counted (no sink in live mode). The strategies that are unprotected by design open every
// window they have Always, so they have none.
// Coverage "completion.not_recorded" counts the attempts whose completion never landed.
// passed() = linearizable, no unexplained duplicate, no lost message.
//
// Does not: simulate the network or time (everything is real), use a sink (the effect log is the provider),
// support a strategy whose effect is a store transaction (no Transaction in live stores), evict expired records (no TTL sweeper), or
// replay a run.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "live/store.hpp"
#include "core/config.hpp"
#include "check/events.hpp"
#include "check/ledger.hpp"
#include "check/linearizability.hpp"
#include "core/result.hpp"
#include "check/store_model.hpp"
#include "sim/distribution.hpp"
#include "sim/time.hpp"

namespace live {

inline constexpr int kMaxDeliveryAttempts = 50;

struct LiveFaults {
  double crash_after_start = 0.0;         // probability per attempt reaching the point
  double crash_after_effect = 0.0;
  double crash_before_ack = 0.0;
  double drop = 0.0;                      // probability per store operation
  sim::Duration stall_every = 0;          // mean interval between stalls; 0 = none
  sim::Duration stall_for = 0;
  double slow = 0.0;                      // probability per effect
  std::optional<sim::Duration> slow_for;  // default: 2 * max_processing_time
};

struct LiveSettings {
  std::string store = "memory";  // postgres | redis | memory
  StoreOptions store_options;     // target, variant, timeout, table / key prefix
  lethe::ProtocolSection protocol;
  int workers = 8;                                    // >= 1
  std::int64_t messages = 300;                        // >= 1
  double duplicates = 1.0;                            // fraction of ids delivered more than once
  int copies = 1;                                     // extra deliveries of such an id (>= 1)
  sim::Distribution processing_time = sim::Distribution::constant(sim::kMillisecond);
  sim::Duration visibility_timeout = 20 * sim::kMillisecond;
  sim::Duration restart_after = 2 * sim::kMillisecond;
  sim::Duration max_duration = 120 * sim::kSecond;    // the run stops taking deliveries after this
  sim::Duration server_timeout = 3 * sim::kSecond;    // the server is gone after failures alone for this long
                                                      // (plus stall_for when stalls are on); > 0
  std::uint64_t seed = 1;
  LiveFaults faults;
  std::uint64_t linearizability_budget = 20'000'000;
  bool keep_history = false;                          // copy the history and the ledger into the outcome
  bool keep_events = false;                           // the run's dedupe events into the outcome (check/events.hpp)
};

struct LiveOutcome {
  lethe::RunResult result;             // the same fields as `lethe run` (sim_time = wall time of the run)
  std::string store;
  std::string variant;
  bool variant_atomic = false;         // the catalogue's claim (store_variants)
  std::string location;                // where the data lived
  std::uint64_t operations = 0;        // store operations recorded
  std::uint64_t unknown_outcomes = 0;  // of which the outcome is unknown
  lethe::Quantiles latency;            // response time of the answered operations (ns)
  std::uint64_t unexplained_duplicates = 0;
  lethe::lin::Verdict verdict = lethe::lin::Verdict::Unknown;
  std::uint64_t check_steps = 0;
  std::string check_explanation;       // the offending window when not linearizable
  sim::Duration wall_time = 0;
  std::vector<lethe::StoreOperation> history;  // when keep_history
  lethe::Ledger ledger;                         // when keep_history: what the oracle judged
  std::optional<lethe::events::EventLog> events;  // when keep_events
  std::vector<std::uint64_t> unexplained_ids;   // the messages of the unexplained duplicates
  // Why the run was abandoned before its end (the server stopped answering); empty when it ran to its end. An
  // abandoned run has no verdict: its figures say what happened until then (unfinished messages count as lost).
  std::string abandoned;
  // What the best-effort cleanup could not remove, and why ("table public.lethe_live_1_1_a (cannot connect ...)");
  // empty when everything lethe created is gone.
  std::string left_behind;

  bool passed() const {
    return abandoned.empty() && verdict == lethe::lin::Verdict::Linearizable && unexplained_duplicates == 0 &&
           result.lost_messages == 0;
  }
};

// Runs the workload against the store (opened, used and torn down here). Throws std::invalid_argument for bad
// settings (an unsupported protocol kind included) and std::runtime_error when the store cannot be reached or
// set up, or stops being usable during the run (the message then names what the cleanup could not remove). A
// server that stops answering during the run does not throw: the run is abandoned within about server_timeout
// (workers reconnect with a growing delay, live/server_watch.hpp) and the outcome says so (`abandoned`), with
// what happened until then and `left_behind`.
LiveOutcome run_live(const LiveSettings& settings);

// The same validation run_live does first (empty = fine), for the command line.
std::string validate(const LiveSettings& settings);

}  // namespace live
