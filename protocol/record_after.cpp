// protocol/record_after.cpp — strategy "record-after": one phase: read (to skip completed records); if none, run
// the effect, then insert a completed record only if there is none (a conditional upsert; an expired one is
// replaced when expired_wins). Nothing marks the work as in flight, so a crash after the effect, or a concurrent
// caller, runs it again. The shared read / skip / run part is protocol/read_then_record.hpp.
#include "protocol/builtin_strategies.hpp"
#include "protocol/read_then_record.hpp"

namespace lethe {

namespace {

class RecordAfterStrategy final : public ReadThenRecordStrategy {
 public:
  using ReadThenRecordStrategy::ReadThenRecordStrategy;

 private:
  bool record(const Call& call, sim::Time read_at, std::uint64_t value) override {
    const sim::Time now = clock().now();
    Condition condition;
    Update update;
    if (expired_wins()) {
      condition.absent_or_expired_at = now;
      update.replace_expired_at = now;
    } else {
      condition.require_absent = true;
    }
    update.started_at_mode = Assign::Set;
    update.started_at = read_at;
    update.owner_mode = Assign::Set;
    update.owner = call.attempt;
    update.completed_at_mode = Assign::Set;
    update.completed_at = now;
    update.expires_on_mode = Assign::Set;
    update.expires_on = saturating_add(now, ttl());
    if (memoize()) {
      update.memoized_mode = Assign::Set;
      update.memoized = value;
    }
    const StepReply step = execute_step(store(), upsert_op(call.key, condition, update));
    if (!step.reply.has_value()) return false;
    if (step.reply->applied) return true;
    // Rejected: a record exists. Ours only if an earlier try of this step landed.
    return step.tries > 1 && step.reply->previous.has_value() && step.reply->previous->owner == call.attempt;
  }
};

}  // namespace

StrategyInfo record_after_strategy() {
  return read_then_record_entry<RecordAfterStrategy>(
      "record-after", "read the record, run the effect if there is none, then insert a completed record if none yet");
}

}  // namespace lethe
