// The scenario loader's protocol.preset (scenario/loader_impl.hpp): a library's settings (protocol/presets.hpp)
// written into the parsed [protocol] table, so that every check of the file's own keys applies to them and a
// preset loads exactly as its keys written out by hand.
#include "scenario/loader_impl.hpp"

#include "protocol/presets.hpp"
#include "scenario/values.hpp"

namespace scenario::detail {

void Loader::apply_preset(toml::table& root) {
  toml::table* protocol = root.get_as<toml::table>("protocol");
  if (protocol == nullptr) return;
  const toml::node* name_node = protocol->get("preset");
  const lethe::Preset* preset =
      name_node != nullptr && name_node->is_string() ? lethe::find_preset(name_node->as_string()->get()) : nullptr;
  if (preset == nullptr) return;  // "none", or refused by the `preset` row
  // Where the preset was written: the origin its keys report (a --set's keys report the --set).
  const Where where = where_node("protocol.preset", name_node);
  const std::string origin =
      where.set_text.empty() ? fmt::format("{}:{}:{}", display_name_, where.line, where.column) : where.set_text;
  if (protocol->get("kind") == nullptr) {
    protocol->insert_or_assign("kind", preset->kind);
    set_origin_["protocol.kind"] = origin;
    preset_kind_ = preset->name;
  }
  const toml::node* kind_node = protocol->get("kind");
  const lethe::StrategyInfo* strategy =
      kind_node->is_string() ? lethe::find_strategy(kind_node->as_string()->get()) : nullptr;
  if (strategy == nullptr) return;  // the kind's own error stands alone
  for (const auto& [key_name, value] : preset->settings) {
    const lethe::SettingKey* key = lethe::find_key(*strategy, key_name);
    // Written (or left out by --set KEY=off) wins; a key the chosen kind does not read is not the preset's to set.
    if (key == nullptr || protocol->contains(key_name) || protocol_left_out_.count(key_name) != 0) continue;
    toml::table parsed = toml::parse("v = " + values::toml_setting(*key, value));
    parsed.get("v")->visit([&, &name = key_name](const auto& node) { protocol->insert_or_assign(name, node); });
    set_origin_["protocol." + key_name] = origin;
  }
}

}  // namespace scenario::detail
