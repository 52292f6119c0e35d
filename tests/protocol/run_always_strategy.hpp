// tests/protocol/run_always_strategy.hpp — a strategy for the registry tests, registered at runtime as code
// linking the library would: it decides nothing, reports one fixed decision basis, and runs the effect between
// the two crash points on every call (so every redelivery is a duplicate), handing the effect no fencing token, or
// with `token_offset` > 0 the token attempt + token_offset. Used by tests/protocol, tests/live and tests/runner.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "protocol/registry.hpp"

namespace registry_test {

class RunAlways final : public lethe::Strategy {
 public:
  RunAlways(lethe::Clock& clock, lethe::ProtocolHooks& hooks, lethe::Basis reported, lethe::FencingToken token_offset)
      : clock_(clock), hooks_(hooks), reported_(reported), token_offset_(token_offset) {}

  lethe::ProtectResult protect(lethe::MessageId id, lethe::ProcessorId processor, lethe::AttemptId attempt,
                               const lethe::Effect& effect) override {
    lethe::DecisionNote note;
    note.id = id;
    note.processor = processor;
    note.attempt = attempt;
    note.basis = reported_;
    note.local_time = clock_.now();
    hooks_.decided(note);
    hooks_.crash_point(lethe::CrashPoint::AfterStartBeforeEffect, id, attempt);
    lethe::ProtectResult result;
    result.value = effect(token_offset_ == 0 ? lethe::kNoFencingToken : attempt + token_offset_);
    if (!result.value.has_value()) return result;  // Failed
    hooks_.crash_point(lethe::CrashPoint::AfterEffectBeforeComplete, id, attempt);
    result.outcome = lethe::Outcome::Executed;
    return result;
  }

 private:
  lethe::Clock& clock_;
  lethe::ProtocolHooks& hooks_;
  lethe::Basis reported_;
  lethe::FencingToken token_offset_;
};

// An entry for RunAlways named `name`: it reports `reported` and declares `declared` and `windows`. It reads
// and requires ttl (so the loader's required-key rule has something to ask), and declares a key of its own,
// run_label (a word, "plain" or "loud"; no built-in reads it), as an out-of-tree strategy would.
inline lethe::StrategyInfo run_always_entry(std::string name, lethe::Basis reported, std::vector<lethe::Basis> declared,
                                            std::vector<lethe::DuplicateWindow> windows,
                                            lethe::FencingToken token_offset = 0) {
  lethe::StrategyInfo info;
  info.name = std::move(name);
  info.description = "run the effect every time (a test strategy)";
  info.keys = {
      {"ttl", lethe::SettingLanguage::Duration, std::nullopt, "how long a record is kept", {}, 1, true},
      {"run_label", lethe::SettingLanguage::Word, lethe::SettingValue{std::string("plain")},
       "a word the test strategy is given", {"plain", "loud"}, 0, false},
  };
  info.factory = [reported, token_offset](const lethe::ProtocolSection& /*settings*/, lethe::StoreClient& /*store*/,
                                          lethe::Clock& clock, lethe::ProtocolHooks& hooks,
                                          sim::Rng /*rng*/) -> std::unique_ptr<lethe::Strategy> {
    return std::make_unique<RunAlways>(clock, hooks, reported, token_offset);
  };
  info.bases = std::move(declared);
  info.windows = std::move(windows);
  return info;
}

// Registers `info` unless its name already is (the tests of one executable may share a process).
inline const lethe::StrategyInfo& ensure_registered(lethe::StrategyInfo info) {
  const std::string name = info.name;
  if (lethe::find_strategy(name) == nullptr) lethe::register_strategy(std::move(info));
  return lethe::strategy_info(name);
}

inline lethe::DuplicateWindow window(lethe::Cause cause, lethe::WindowOpens opens) {
  return lethe::DuplicateWindow{cause, opens, {}, "a test window"};
}

}  // namespace registry_test
