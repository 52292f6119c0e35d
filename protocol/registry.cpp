#include "protocol/registry.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <optional>
#include <utility>

#include "core/registry.hpp"
#include "protocol/builtin_strategies.hpp"

namespace lethe {

namespace {

void add(Registry<StrategyInfo>& registry, StrategyInfo info) {
  std::string name = info.name;
  registry.add(std::move(name), std::move(info));
}

// The one list of built-ins, in the order strategy_names() and the loader's "allowed:" message give them.
Registry<StrategyInfo> builtins() {
  Registry<StrategyInfo> registry;
  add(registry, none_strategy());
  add(registry, check_then_insert_strategy());
  add(registry, record_after_strategy());
  add(registry, mnemosyne_strategy());
  add(registry, inbox_strategy());
  add(registry, saga_state_strategy());
  add(registry, external_strategy());
  return registry;
}

Registry<StrategyInfo>& entries() {
  static Registry<StrategyInfo> registered = builtins();
  return registered;
}

// The [protocol] keys without a default: the only ones a strategy can require.
const std::optional<sim::Duration>* requirable_key(const ProtocolSection& settings, std::string_view key) {
  if (key == "max_processing_time") return &settings.max_processing_time;
  if (key == "ttl") return &settings.ttl;
  return nullptr;
}

bool contains(const std::vector<std::string>& list, std::string_view word) {
  return std::find(list.begin(), list.end(), word) != list.end();
}

bool well_formed_name(std::string_view name) {
  if (name.empty()) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; });
}

// Why `info` cannot be registered, or "" when it can.
std::string refusal(const StrategyInfo& info) {
  if (!well_formed_name(info.name)) return "a name of lowercase letters, digits and '-' is required";
  if (find_strategy(info.name) != nullptr) return "the name is already registered";
  if (!info.factory) return "no factory";
  for (const std::string& key : info.required) {
    ProtocolSection probe;
    if (requirable_key(probe, key) == nullptr) {
      return fmt::format("required key \"{}\" has a default (only max_processing_time and ttl can be required)", key);
    }
    if (!contains(info.reads, key)) return fmt::format("required key \"{}\" is not among the keys it reads", key);
  }
  for (const DuplicateWindow& window : info.windows) {
    if (window.cause == Cause::SinkRetry) return "a window names sink_retry (the sink's retries are no strategy's)";
    if (window.opens == WindowOpens::WithSettings && !window.open_with) return "a WithSettings window has no open_with";
    if (window.opens == WindowOpens::WithSlowOwner && !contains(info.required, "max_processing_time")) {
      return "a WithSlowOwner window needs max_processing_time required (a slow owner is measured against it)";
    }
  }
  return {};
}

// The entry's strategy behind the basis check (the hooks it was made with live as long as it does).
class CheckedStrategy final : public Strategy {
 public:
  CheckedStrategy(const StrategyInfo& info, const ProtocolSection& settings, StoreClient& store, Clock& clock,
                  ProtocolHooks& hooks, sim::Rng rng)
      : hooks_(info, hooks), strategy_(info.factory(settings, store, clock, hooks_, std::move(rng))) {
    if (!strategy_) throw StrategyContractError("strategy \"" + info.name + "\": its factory made nothing");
  }

  ProtectResult protect(MessageId id, ProcessorId processor, AttemptId attempt, const Effect& effect) override {
    return strategy_->protect(id, processor, attempt, effect);
  }

 private:
  DeclaredBasesHooks hooks_;
  std::unique_ptr<Strategy> strategy_;
};

}  // namespace

void register_strategy(StrategyInfo info) {
  const std::string why = refusal(info);
  if (!why.empty()) throw std::invalid_argument(fmt::format("register_strategy \"{}\": {}", info.name, why));
  add(entries(), std::move(info));
}

const StrategyInfo* find_strategy(std::string_view name) { return entries().find(name); }

const StrategyInfo& strategy_info(std::string_view name) {
  const StrategyInfo* info = find_strategy(name);
  if (info == nullptr) {
    std::string names;
    for (const std::string& known : strategy_names()) names += (names.empty() ? "" : ", ") + known;
    throw std::invalid_argument(fmt::format("unknown protocol.kind \"{}\" (registered: {})", name, names));
  }
  return *info;
}

std::vector<std::string> strategy_names() { return entries().names(); }

bool declares_basis(const StrategyInfo& strategy, Basis basis) {
  return std::find(strategy.bases.begin(), strategy.bases.end(), basis) != strategy.bases.end();
}

DeclaredBasesHooks::DeclaredBasesHooks(const StrategyInfo& info, ProtocolHooks& hooks, std::string_view subject)
    : info_(info), hooks_(hooks), subject_(subject) {
  for (const Basis basis : info.bases) declared_.set(static_cast<std::size_t>(basis));
}

void DeclaredBasesHooks::crash_point(CrashPoint point, MessageId id, AttemptId attempt) {
  hooks_.crash_point(point, id, attempt);
}

void DeclaredBasesHooks::decided(const DecisionNote& note) {
  if (!declared_.test(static_cast<std::size_t>(note.basis))) {
    throw StrategyContractError(fmt::format(
        "strategy \"{}\" reported decision basis \"{}\" for {} {} (attempt {}), which its registry entry does not "
        "declare",
        info_.name, to_string(note.basis), subject_, note.id, note.attempt));
  }
  hooks_.decided(note);
}

void DeclaredBasesHooks::waited(MessageId id, ProcessorId processor, AttemptId attempt, sim::Duration waited) {
  hooks_.waited(id, processor, attempt, waited);
}

void DeclaredBasesHooks::completed(MessageId id, ProcessorId processor, AttemptId attempt, bool applied) {
  hooks_.completed(id, processor, attempt, applied);
}

bool declares_cause(const StrategyInfo& strategy, Cause cause) {
  return std::any_of(strategy.windows.begin(), strategy.windows.end(),
                     [cause](const DuplicateWindow& window) { return window.cause == cause; });
}

bool window_open(const StrategyInfo& strategy, Cause cause, const ProtocolSection& settings, bool slow_owner) {
  return std::any_of(strategy.windows.begin(), strategy.windows.end(), [&](const DuplicateWindow& window) {
    if (window.cause != cause) return false;
    switch (window.opens) {
      case WindowOpens::Always: return true;
      case WindowOpens::WithSettings: return window.open_with(settings);
      case WindowOpens::WithSlowOwner: return slow_owner;
      case WindowOpens::BrokenStore: return false;
    }
    return false;
  });
}

bool needs_slow_owner_evidence(const StrategyInfo& strategy) {
  return std::any_of(strategy.windows.begin(), strategy.windows.end(),
                     [](const DuplicateWindow& window) { return window.opens == WindowOpens::WithSlowOwner; });
}

std::unique_ptr<Strategy> make_strategy(const ProtocolSection& settings, StoreClient& store, Clock& clock,
                                        ProtocolHooks& hooks, sim::Rng rng) {
  const StrategyInfo& info = strategy_info(settings.kind);
  for (const std::string& key : info.required) {
    const std::optional<sim::Duration>* value = requirable_key(settings, key);
    if (!value->has_value() || **value <= 0) {
      throw std::invalid_argument("make_strategy: protocol." + key + " must be set and positive for \"" + info.name +
                                  "\"");
    }
  }
  return std::make_unique<CheckedStrategy>(info, settings, store, clock, hooks, std::move(rng));
}

}  // namespace lethe
