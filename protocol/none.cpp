// protocol/none.cpp — strategy "none": run the effect, always (Basis::Unprotected). The baseline every other
// strategy is compared against: every redelivery runs the effect again.
#include <memory>
#include <optional>

#include "protocol/builtin_strategies.hpp"
#include "protocol/strategy_support.hpp"

namespace lethe {

namespace {

class NoneStrategy final : public Strategy {
 public:
  NoneStrategy(Clock& clock, ProtocolHooks& hooks) : clock_(clock), reporter_(hooks, clock) {}

  ProtectResult protect(MessageId id, ProcessorId processor, AttemptId attempt, const Effect& effect) override {
    Call call{id, processor, attempt, make_key(Table::Dedupe, processor, id), {}, false, 0};
    reporter_.note(call, Basis::Unprotected, std::nullopt, clock_.now());
    reporter_.hooks().crash_point(CrashPoint::AfterStartBeforeEffect, id, attempt);
    const std::optional<std::uint64_t> value = effect(kNoFencingToken);
    if (!value.has_value()) return reporter_.failed(call);
    reporter_.hooks().crash_point(CrashPoint::AfterEffectBeforeComplete, id, attempt);
    call.result.outcome = Outcome::Executed;
    call.result.value = value;
    return call.result;
  }

 private:
  Clock& clock_;
  Reporter reporter_;
};

}  // namespace

StrategyInfo none_strategy() {
  StrategyInfo info;
  info.name = "none";
  info.description = "run the effect on every delivery: no record, no check";
  info.factory = [](const ProtocolSection& /*settings*/, StoreClient& /*store*/, Clock& clock, ProtocolHooks& hooks,
                    sim::Rng /*rng*/) -> std::unique_ptr<Strategy> {
    return std::make_unique<NoneStrategy>(clock, hooks);
  };
  info.bases = {Basis::Unprotected};
  info.windows = {{Cause::Unprotected, WindowOpens::Always, {},
                   "it checks nothing: every redelivery and every concurrent copy runs the effect again"},
                  {Cause::MemberRemoved, WindowOpens::Always, {},
                   "it checks nothing: a consumer group that removes a live member replays what it held"}};
  return info;
}

}  // namespace lethe
