// The scenario loader's [protocol] keys beyond `kind`: those the chosen kind's registry entry declares
// (protocol/registry.hpp), each read by its value type; a key only another kind reads is refused, and a
// required key left out is reported (scenario/loader_impl.hpp).
#include "scenario/loader_impl.hpp"

#include <algorithm>
#include <type_traits>
#include <variant>

#include "protocol/registry.hpp"

namespace scenario::detail {

void Loader::check(schema::Rule, const lethe::ProtocolSection& section) {
  const lethe::StrategyInfo* strategy = lethe::find_strategy(section.kind);
  if (!valid("protocol.kind") || !current_.valid || strategy == nullptr) return;
  const Where kind_where = where_in(current_, "kind");
  // When the kind is not written, say that mnemosyne is the default: the user may not know they chose it.
  // A preset that chose the kind leaves this key to the file, as the library leaves it to its user.
  const std::string kind_note =
      !preset_kind_.empty() ? fmt::format(" by protocol.preset \"{}\", which leaves this key to the file", preset_kind_)
      : has(current_, "kind") ? ""
                              : ", the default kind";
  for (const lethe::SettingKey& key : strategy->keys) {
    if (key.default_value || has(current_, key.name)) continue;
    const std::string allowed = schema::with_setting_type(key, [](const auto& type, auto*) { return schema::allowed(type); });
    missing(current_, key.name, kind_where,
            fmt::format("it is required when protocol.kind is \"{}\"{} (no default, by design): {}; {}: {}",
                        section.kind, kind_note, allowed, key.name, key.description));
  }
}

void Loader::strategy_keys(lethe::ProtocolSection& protocol) {
  const lethe::StrategyInfo* strategy = valid("protocol.kind") ? lethe::find_strategy(protocol.kind) : nullptr;
  if (strategy == nullptr) {
    // The kind is refused already: every strategy's keys are known, so that the kind's error stands alone.
    for (const std::string& kind : lethe::strategy_names()) {
      for (const lethe::SettingKey& key : lethe::strategy_info(kind).keys) get(current_, key.name);
    }
    return;
  }
  for (const lethe::SettingKey& key : strategy->keys) {
    schema::with_setting_type(key, [&](const auto& type, auto* value_type) {
      read_setting<std::remove_pointer_t<decltype(value_type)>>(key, type, protocol.settings);
    });
  }
  check_unread_keys(*strategy);
}

template <class T, class Type>
void Loader::read_setting(const lethe::SettingKey& key, const Type& type, lethe::StrategySettings& settings) {
  T value{};
  if (key.default_value) value = std::get<T>(*key.default_value);
  const bool written = has(current_, key.name);
  if (!read_value(current_, key.name, type, value)) {
    invalid_.insert(join_path(current_.path, key.name));
    return;
  }
  if (written || key.default_value) settings.set(key.name, std::move(value));  // a required key left out: unset
}

void Loader::check_unread_keys(const lethe::StrategyInfo& strategy) {
  if (current_.node == nullptr) return;
  std::vector<std::string> known{"kind", "preset"};
  for (const lethe::SettingKey& key : strategy.keys) known.push_back(key.name);
  for (auto&& [key, value] : *current_.node) {
    const std::string name(key.str());
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    const std::vector<std::string> readers = lethe::strategies_reading(name);
    if (readers.empty()) continue;  // no kind reads it: an unknown key (check_unknown_keys)
    const std::string path = join_path(current_.path, name);
    invalid_.insert(path);  // reported here, not again as unknown
    error(where_key(path, key), path,
          fmt::format("found a key that protocol.kind \"{}\" does not read (read by {}); allowed in [protocol] with "
                      "kind \"{}\": {}",
                      strategy.name, schema::quoted_words(readers), strategy.name, text::join(known, ", ")));
  }
}

}  // namespace scenario::detail
