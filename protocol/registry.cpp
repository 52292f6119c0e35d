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

bool contains(const std::vector<std::string>& list, std::string_view word) {
  return std::find(list.begin(), list.end(), word) != list.end();
}

bool well_formed_name(std::string_view name) {
  if (name.empty()) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; });
}

bool well_formed_key(std::string_view name) {
  if (name.empty() || name == "kind") return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; });
}

// Why `key` cannot be declared, or "" when it can.
std::string key_refusal(const SettingKey& key) {
  if (!well_formed_key(key.name)) return "a name of lowercase letters, digits and '_' (not \"kind\") is required";
  if (key.default_value && key.default_value->index() != value_index(key.language)) {
    return "its default is not a value of its language";
  }
  if (key.language == SettingLanguage::Word) {
    if (key.words.empty()) return "a Word key needs its allowed words";
    const std::string* word = key.default_value ? std::get_if<std::string>(&*key.default_value) : nullptr;
    if (word != nullptr && !contains(key.words, *word)) return "its default is not among its words";
  }
  return {};
}

bool requires_positive_duration(const StrategyInfo& info, std::string_view name) {
  const SettingKey* key = find_key(info, name);
  return key != nullptr && !key->default_value && key->language == SettingLanguage::Duration;
}

// Why `info` cannot be registered, or "" when it can.
std::string refusal(const StrategyInfo& info) {
  if (!well_formed_name(info.name)) return "a name of lowercase letters, digits and '-' is required";
  if (find_strategy(info.name) != nullptr) return "the name is already registered";
  if (!info.factory) return "no factory";
  for (std::size_t i = 0; i < info.keys.size(); ++i) {
    const std::string why = key_refusal(info.keys[i]);
    if (!why.empty()) return fmt::format("key \"{}\": {}", info.keys[i].name, why);
    for (std::size_t j = 0; j < i; ++j) {
      if (info.keys[j].name == info.keys[i].name) return fmt::format("key \"{}\" is declared twice", info.keys[i].name);
    }
  }
  for (const DuplicateWindow& window : info.windows) {
    if (window.cause == Cause::SinkRetry) return "a window names sink_retry (the sink's retries are no strategy's)";
    if (window.opens == WindowOpens::WithSettings && !window.open_with) return "a WithSettings window has no open_with";
    if (window.opens == WindowOpens::WithSlowOwner && !requires_positive_duration(info, info.slow_owner_key)) {
      return fmt::format("a WithSlowOwner window needs a required Duration key \"{}\" (slow_owner_key: a slow "
                         "owner is measured against it)",
                         info.slow_owner_key);
    }
  }
  return {};
}

// Why `value` is not a value of `key` ("" when it is).
std::string value_problem(const SettingKey& key, const SettingValue& value) {
  if (value.index() != value_index(key.language)) return "holds a value of another type than its language's";
  if (const sim::Duration* duration = std::get_if<sim::Duration>(&value); duration && *duration < key.min) {
    return key.min > 0 ? "must be positive" : fmt::format("must be at least {}", sim::format_duration(key.min));
  }
  if (const std::string* word = std::get_if<std::string>(&value); word && !contains(key.words, *word)) {
    return fmt::format("has \"{}\", not one of its words", *word);
  }
  return {};
}

// The entry's strategy behind the basis check (the hooks it was made with live as long as it does).
class CheckedStrategy final : public Strategy {
 public:
  CheckedStrategy(const StrategyInfo& info, std::shared_ptr<const ProtocolSection> settings, StoreClient& store,
                  Clock& clock, ProtocolHooks& hooks, sim::Rng rng)
      : settings_(std::move(settings)),
        hooks_(info, hooks),
        strategy_(info.factory(*settings_, store, clock, hooks_, std::move(rng))) {
    if (!strategy_) throw StrategyContractError("strategy \"" + info.name + "\": its factory made nothing");
  }

  ProtectResult protect(MessageId id, ProcessorId processor, AttemptId attempt, const Effect& effect) override {
    return strategy_->protect(id, processor, attempt, effect);
  }
  ProtectResult protect_payload(MessageId id, ProcessorId processor, AttemptId attempt, PayloadFingerprint payload,
                                const Effect& effect) override {
    return strategy_->protect_payload(id, processor, attempt, payload, effect);
  }

 private:
  std::shared_ptr<const ProtocolSection> settings_;  // the factory's strategy may keep a reference to it
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

void DeclaredBasesHooks::released(MessageId id, ProcessorId processor, AttemptId attempt, bool applied) {
  hooks_.released(id, processor, attempt, applied);
}

void DeclaredBasesHooks::payload_refused(MessageId id, ProcessorId processor, AttemptId attempt) {
  hooks_.payload_refused(id, processor, attempt);
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

const SettingKey* find_key(const StrategyInfo& strategy, std::string_view name) {
  for (const SettingKey& key : strategy.keys) {
    if (key.name == name) return &key;
  }
  return nullptr;
}

std::vector<std::string> strategies_reading(std::string_view name) {
  std::vector<std::string> kinds;
  for (const std::string& kind : strategy_names()) {
    if (find_key(strategy_info(kind), name) != nullptr) kinds.push_back(kind);
  }
  return kinds;
}

ProtocolSection with_defaults(const ProtocolSection& settings) {
  ProtocolSection filled = settings;
  for (const SettingKey& key : strategy_info(settings.kind).keys) {
    if (key.default_value && !filled.settings.has(key.name)) filled.settings.set(key.name, *key.default_value);
  }
  return filled;
}

std::string settings_problem(const ProtocolSection& settings) {
  const StrategyInfo& info = strategy_info(settings.kind);
  for (const auto& [name, value] : settings.settings.values()) {
    const SettingKey* key = find_key(info, name);
    if (key == nullptr) return fmt::format("protocol.{} is not read by \"{}\"", name, info.name);
    const std::string why = value_problem(*key, value);
    if (!why.empty()) return fmt::format("protocol.{} {}", name, why);
  }
  for (const SettingKey& key : info.keys) {
    if (key.default_value || settings.settings.has(key.name)) continue;
    const bool positive = key.language == SettingLanguage::Duration && key.min > 0;
    return fmt::format("protocol.{} must be set{} for \"{}\"", key.name, positive ? " and positive" : "", info.name);
  }
  return {};
}

std::shared_ptr<const ProtocolSection> strategy_settings(const ProtocolSection& settings) {
  auto filled = std::make_shared<const ProtocolSection>(with_defaults(settings));
  const std::string why = settings_problem(*filled);
  if (!why.empty()) throw std::invalid_argument("make_strategy: " + why);
  return filled;
}

std::unique_ptr<Strategy> make_strategy(std::shared_ptr<const ProtocolSection> settings, StoreClient& store,
                                        Clock& clock, ProtocolHooks& hooks, sim::Rng rng) {
  const StrategyInfo& info = strategy_info(settings->kind);
  return std::make_unique<CheckedStrategy>(info, std::move(settings), store, clock, hooks, std::move(rng));
}

std::unique_ptr<Strategy> make_strategy(const ProtocolSection& settings, StoreClient& store, Clock& clock,
                                        ProtocolHooks& hooks, sim::Rng rng) {
  return make_strategy(strategy_settings(settings), store, clock, hooks, std::move(rng));
}

}  // namespace lethe
