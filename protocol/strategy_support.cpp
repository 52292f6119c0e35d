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

SettingKey max_processing_time_key() {
  return {"max_processing_time", SettingLanguage::Duration, std::nullopt,
          "how long an owner may work before its record may be taken over", {}, 1, false};
}

SettingKey ttl_key() {
  return {"ttl", SettingLanguage::Duration, std::nullopt, "how long a record is kept (\"none\": forever, no expiry)",
          {}, 1, true};
}

SettingKey poll_key() {
  return {"poll", SettingLanguage::Poll, SettingValue{Poll{}},
          "the re-read interval while waiting on an in-flight record", {}, 0, false};
}

SettingKey max_wait_key() {
  return {"max_wait", SettingLanguage::Duration, SettingValue{sim::Duration{60'000'000'000}},
          "how long a caller waits on an in-flight record", {}, 0, false};
}

SettingKey memoize_key() {
  return {"memoize", SettingLanguage::Boolean, SettingValue{true},
          "callers of a completed record get its stored result", {}, 0, false};
}

SettingKey expired_wins_key() {
  return {"expired_wins", SettingLanguage::Boolean, SettingValue{true},
          "an expired, not yet evicted completed record counts as absent (true) or as completed", {}, 0, false};
}

SettingKey precedence_key() {
  return {"precedence", SettingLanguage::Word, SettingValue{to_string(Precedence::ExpiredWins)},
          "how an expired, not yet evicted record ranks against completed, stale and running; expired-wins: as "
          "expired_wins says",
          words_of_values({Precedence::ExpiredWins, Precedence::ExpiredFirst, Precedence::CompletedFirst,
                           Precedence::ExpiryIgnored}),
          0, false};
}

Precedence precedence_setting(const StrategySettings& settings) {
  const Precedence precedence =
      word_setting(settings, "precedence",
                   {Precedence::ExpiredWins, Precedence::ExpiredFirst, Precedence::CompletedFirst,
                    Precedence::ExpiryIgnored});
  return effective_precedence(precedence, settings.get<bool>("expired_wins"));
}

}  // namespace lethe
