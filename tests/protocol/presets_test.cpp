// protocol/presets.hpp: every preset names a registered strategy and sets only keys that strategy declares, with
// values it accepts; the names are distinct.
#include "protocol/presets.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "protocol/registry.hpp"

namespace presets_test {

TEST(Presets, EveryPresetSetsOnlyKeysItsKindDeclaresWithValuesItAccepts) {
  ASSERT_EQ(lethe::presets().size(), 7U);
  std::set<std::string> names;
  for (const lethe::Preset& preset : lethe::presets()) {
    SCOPED_TRACE(preset.name);
    EXPECT_TRUE(names.insert(preset.name).second) << "the name is taken twice";
    EXPECT_EQ(lethe::find_preset(preset.name), &preset);
    const lethe::StrategyInfo* strategy = lethe::find_strategy(preset.kind);
    ASSERT_NE(strategy, nullptr);
    lethe::ProtocolSection section;
    section.kind = preset.kind;
    for (const auto& [key, value] : preset.settings) {
      EXPECT_NE(lethe::find_key(*strategy, key), nullptr) << key << " is not a key of " << preset.kind;
      EXPECT_FALSE(section.settings.has(key)) << key << " is set twice";
      section.settings.set(key, value);
    }
    // The keys the library leaves to its user, as a scenario would write them.
    for (const lethe::SettingKey& key : strategy->keys) {
      if (!key.default_value && !section.settings.has(key.name)) section.settings.set(key.name, sim::Duration{1});
    }
    EXPECT_EQ(lethe::settings_problem(section), "");
  }
  EXPECT_EQ(lethe::find_preset("none"), nullptr);
  EXPECT_EQ(lethe::find_preset("Powertools"), nullptr);
}

}  // namespace presets_test
