#include "protocol/read_then_record.hpp"

#include <optional>

namespace lethe {

ReadThenRecordStrategy::ReadThenRecordStrategy(const ProtocolSection& settings, StoreClient& store, Clock& clock,
                                               ProtocolHooks& hooks)
    : ttl_(settings.settings.get<sim::Duration>("ttl")),
      memoize_(settings.settings.get<bool>("memoize")),
      expired_wins_(precedence_setting(settings.settings) == Precedence::ExpiredFirst),
      store_(store),
      clock_(clock),
      reporter_(hooks, clock) {}

ProtectResult ReadThenRecordStrategy::protect(MessageId id, ProcessorId processor, AttemptId attempt,
                                              const Effect& effect) {
  Call call{id, processor, attempt, make_key(Table::Dedupe, processor, id), {}, false, 0};
  const sim::Time read_at = clock_.now();
  const StepReply read = execute_step(store_, get_op(call.key));
  if (!read.reply.has_value()) {
    reporter_.note(call, Basis::StoreUnavailable, std::nullopt, read_at);
    return reporter_.failed(call);
  }
  const std::optional<Item>& seen = read.reply->previous;
  const bool expired = seen.has_value() && expired_wins_ && seen->expired_at(read_at);
  if (seen.has_value() && seen->completed_at.has_value() && !expired) {
    reporter_.note(call, Basis::Completed, seen, read_at);
    return reporter_.skipped(call, memoize_ ? seen->memoized : std::nullopt);
  }
  // No record, an expired one (expired_wins), or one that is not completed: these strategies do not wait.
  const Basis basis = seen.has_value() && seen->completed_at.has_value() ? Basis::ExpiredCompleted : Basis::Absent;
  reporter_.note(call, basis, seen, read_at);
  reporter_.hooks().crash_point(CrashPoint::AfterStartBeforeEffect, id, attempt);
  const std::optional<std::uint64_t> value = effect(kNoFencingToken);
  if (!value.has_value()) return reporter_.failed(call);
  reporter_.hooks().crash_point(CrashPoint::AfterEffectBeforeComplete, id, attempt);
  const bool applied = record(call, read_at, *value);
  reporter_.hooks().completed(id, processor, attempt, applied);
  call.result.outcome = Outcome::Executed;
  call.result.value = value;
  return call.result;
}

std::vector<SettingKey> read_then_record_keys() {
  return {ttl_key(), memoize_key(), expired_wins_key(), precedence_key()};
}

std::vector<Basis> read_then_record_bases() {
  return {Basis::Absent, Basis::Completed, Basis::ExpiredCompleted, Basis::StoreUnavailable};
}

std::vector<DuplicateWindow> read_then_record_windows() {
  return {
      {Cause::Unprotected, WindowOpens::Always, {},
       "two callers both read no completed record before either wrote one: the read-then-write race"},
      {Cause::CrashAfterEffect, WindowOpens::Always, {},
       "a caller died, or gave up, between its effect and its record: the redelivery finds nothing"},
      {Cause::CompletionLost, WindowOpens::Always, {},
       "a caller finished but its record write never landed: the redelivery finds nothing"},
      {Cause::CapacityEvicted, WindowOpens::Always, {},
       "a bounded store (store.capacity) evicted the record for room before a late redelivery read it"},
      {Cause::Expired, WindowOpens::Always, {},
       "the record expired (ttl) or was evicted before a late redelivery read it"},
  };
}

}  // namespace lethe
