// protocol/check_then_insert.cpp — strategy "check-then-insert": read the record; if there is none, run the
// effect, then Put a completed record (a blind overwrite, as naive code against a key-value store does). The
// read-then-write race is the point: two concurrent callers both read "absent" and both run the effect.
// The shared read / skip / run part is protocol/read_then_record.hpp.
#include "protocol/builtin_strategies.hpp"
#include "protocol/read_then_record.hpp"

namespace lethe {

namespace {

class CheckThenInsertStrategy final : public ReadThenRecordStrategy {
 public:
  using ReadThenRecordStrategy::ReadThenRecordStrategy;

 private:
  bool record(const Call& call, sim::Time read_at, std::uint64_t value) override {
    const sim::Time now = clock().now();
    Item item;
    item.started_at = read_at;
    item.completed_at = now;
    item.expires_on = saturating_add(now, ttl());
    item.owner = call.attempt;
    if (memoize()) item.memoized = value;
    return execute_step(store(), put_op(call.key, item)).reply.has_value();
  }
};

}  // namespace

StrategyInfo check_then_insert_strategy() {
  return read_then_record_entry<CheckThenInsertStrategy>(
      "check-then-insert", "read the record, run the effect if there is none, then overwrite a completed record");
}

}  // namespace lethe
