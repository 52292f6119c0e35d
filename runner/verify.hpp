// runner/verify.hpp — `--verify`: every duplicate's cause proven by a counterfactual replay.
//
// For each duplicate of a run, the seed runs again with its cause's intervention (core/result.hpp, kCauses:
// Intervention) applied to its message (world/counterfactual.hpp); the cause is verified when that duplicate
// (the same message and processor, the same pair of attempts) is gone from the replay and the message still
// finished there (its latest attempt ended executed or skipped: an intervention that blocks the message, such as a
// record never stale to a dead owner, removes any duplicate and proves nothing). A duplicate of the
// message that the replay shows instead, through another pair of attempts, is a second window: reported, and
// the cause still verified. The same pair left in the replay but blamed there on another window B is verified
// together with B when closing B alone leaves it too and closing both removes it (two windows open at once, each
// enough without the other); when closing B alone removes it, the cause named was wrong. A cause whose intervention is Intervention::None (not_attributable), a RecordSeen
// duplicate whose attempt read no record (the strategy checks nothing), or a RecordSeen duplicate of an external
// node (lethe does not know the record its first executor would have left) is not verifiable: reported with the
// reason, never a failure, never counted as verified. A duplicate still there, or gone only with its message
// blocked, is a lethe bug (the oracle named the wrong window, or the intervention does not close it): the command
// ends with exit 3.
//
// Cost: one replay per intervened message (a message-wide intervention verifies every duplicate of its message
// and cause in one replay; RecordSeen targets one attempt, so one replay per duplicate). Replays check no
// linearizability. `limit` bounds the duplicates replayed per cause (the others are counted as not replayed).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/result.hpp"
#include "world/counterfactual.hpp"

namespace runner {

// Blocked: the duplicate is gone from the replay, but so is the message's finishing (world/counterfactual.hpp,
// PairFate): an intervention that keeps the message from ever completing removes any duplicate and proves nothing.
enum class VerifyVerdict : std::uint8_t { Verified, NotRemoved, Blocked, NotVerifiable, NotReplayed, Error };

struct VerifiedDuplicate {
  lethe::DuplicateExplanation duplicate;
  VerifyVerdict verdict = VerifyVerdict::Verified;
  std::vector<lethe::DuplicateExplanation> after;  // the message's duplicates in the replay (its other windows)
  std::string error;                               // VerifyVerdict::Error: the replay's internal error
  lethe::PairFate fate = lethe::PairFate::Done;    // the message's fate at the replay's end (when replayed)
  // Verified with a second window open at once: closing the cause's window alone left this pair through
  // `together_with` (the replay's explanation), closing that one alone left it too, closing both removed it.
  std::optional<lethe::DuplicateExplanation> together_with;
};

struct CauseTally {
  std::uint64_t total = 0;
  std::uint64_t verified = 0;
  std::uint64_t not_removed = 0;
  std::uint64_t blocked = 0;
  std::uint64_t not_verifiable = 0;
  std::string not_verifiable_reason;  // why (the first not verifiable duplicate's reason)
  std::uint64_t not_replayed = 0;
  std::uint64_t errors = 0;
};

struct VerifyReport {
  std::vector<VerifiedDuplicate> duplicates;  // in the run's explanation order
  std::array<CauseTally, lethe::kCauseCount> by_cause{};
  std::uint64_t replays = 0;
  std::uint64_t second_windows = 0;  // verified duplicates whose message was duplicated again another way
  std::uint64_t joint_windows = 0;   // verified duplicates two windows opened at once (VerifiedDuplicate::together_with)
  bool failed() const;               // a duplicate not removed, or removed only by blocking, or a failed replay
};

// Replays `seed` of `config` once per intervened message of `result` (the normal run's result, with every
// explanation: WorldOptions::max_explanations = SIZE_MAX). `limit`: duplicates replayed per cause (0: all).
VerifyReport verify_causes(const lethe::ScenarioConfig& config, std::uint64_t seed, const lethe::RunResult& result,
                           std::size_t limit = 0);

// "causes verified: K of N" with the breakdown per cause, the second windows and every failure with both runs'
// explanations.
std::string verify_text(const VerifyReport& report);

// "causes verified: K of N" and the breakdown per cause only (a suite's total, after its failing seeds).
std::string verify_summary(const VerifyReport& report);

// Adds `from`'s tallies, replay count and second windows to `into`; its duplicates are not copied (a suite's
// total: each seed's failures are printed with that seed's own report).
void add_tallies(VerifyReport& into, const VerifyReport& from);

}  // namespace runner
