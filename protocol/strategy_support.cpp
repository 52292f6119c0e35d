#include "protocol/strategy_support.hpp"

#include <algorithm>

namespace lethe {

StepReply execute_step(StoreClient& store, const Op& op) {
  StepReply step;
  while (step.tries < kStoreAttemptsPerStep) {
    ++step.tries;
    step.reply = store.execute(op);
    if (step.reply.has_value()) return step;
  }
  return step;
}

void Reporter::note(const Call& call, Basis basis, const std::optional<Item>& seen, sim::Time local_time) {
  DecisionNote note;
  note.id = call.id;
  note.processor = call.processor;
  note.attempt = call.attempt;
  note.basis = basis;
  note.seen = seen;
  note.local_time = local_time;
  hooks_.decided(note);
}

void Reporter::begin_wait(Call& call, sim::Time local_time) {
  if (call.waiting) return;
  call.waiting = true;
  call.wait_began = local_time;
  call.result.waited = true;
}

void Reporter::finish_wait(Call& call) {
  if (!call.waiting) return;
  call.waiting = false;
  call.result.wait_time = std::max<sim::Duration>(clock_.now() - call.wait_began, 0);
  hooks_.waited(call.id, call.processor, call.attempt, call.result.wait_time);
}

ProtectResult Reporter::failed(Call& call) {
  finish_wait(call);
  call.result.outcome = Outcome::Failed;
  call.result.value.reset();
  return call.result;
}

ProtectResult Reporter::skipped(Call& call, std::optional<std::uint64_t> value) {
  finish_wait(call);
  call.result.outcome = Outcome::Skipped;
  call.result.value = value;
  return call.result;
}

}  // namespace lethe
