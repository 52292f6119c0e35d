// protocol/presets.hpp — protocol.preset: the [protocol] settings of the dedupe libraries teams run, by name.
//
// A preset names a library ("powertools", "camel-eager", ...) and gives the strategy that models it (its kind)
// and a value for each key of that strategy's registry entry (protocol/registry.hpp) the library decides.
// docs/libraries.md says, per library, why each value is what it is.
//
// Contract: every preset's kind is a built-in strategy and every key it sets is one that kind declares, with a
// value of the key's language that settings_problem accepts (tests/protocol/presets_test.cpp holds them to it).
// A key the library leaves to its user (no default there either: mnemosyne's maxProcessingTime, its TTL) is not
// set: the scenario writes it, and the loader asks for it as it does without a preset.
//
// The scenario loader expands a preset (scenario/loader_preset.cpp): the keys the file or --set write win, and
// only keys the resulting kind reads are filled in.
//
// Does not: read scenarios, register anything, or know the loader.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/settings.hpp"

namespace lethe {

struct Preset {
  std::string name;     // the protocol.preset word
  std::string library;  // one line: the library and the mode it models
  std::string kind;     // the strategy that models it (protocol.kind)
  std::vector<std::pair<std::string, SettingValue>> settings;  // in the kind's key order
};

// Every preset, in the order docs and messages list them.
const std::vector<Preset>& presets();

// The preset named `name`, or nullptr.
const Preset* find_preset(std::string_view name);

}  // namespace lethe
