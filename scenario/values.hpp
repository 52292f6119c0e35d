// scenario/values.hpp — one value of the table of keys (scenario/schema.hpp) as canonical TOML text.
//
// toml_value(TYPE, FIELD) writes the field in the language its row reads (format_duration,
// Distribution::to_string, "N/s" rates, the call forms of the Language types), so the loader reads it back
// to the same value. Used by the renderer and by the reference page (a key's default is the TOML of the
// default config's field). Optional fields are the caller's: nullopt is written as nothing.
//
// Does not: know tables or keys, or validate anything.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "scenario/schema.hpp"

namespace scenario::values {

std::string toml_value(const schema::Text&, const std::string& value);
std::string toml_value(const schema::Name&, const std::string& value);
std::string toml_value(const schema::Names&, const std::vector<std::string>& value);
std::string toml_value(const schema::Boolean&, bool value);
std::string toml_value(const schema::Probability&, double value);
std::string toml_value(const schema::Duration&, sim::Duration value);
std::string toml_value(const schema::Distribution&, const sim::Distribution& value);
std::string toml_value(const schema::Rate&, const lethe::Rate& value);
std::string toml_value(const schema::Bound&, const std::optional<std::uint64_t>& value);
std::string toml_value(const schema::Language&, const lethe::Commit& value);
std::string toml_value(const schema::Language&, const lethe::TtlEviction& value);
std::string toml_value(const schema::Language&, const lethe::Poll& value);
std::string toml_value(const schema::Language&, const lethe::PollRead& value);
std::string toml_value(const schema::Language&, const lethe::LocalCache& value);
std::string toml_value(const schema::Language&, const lethe::Backoff& value);
std::string toml_value(const schema::Language&, const lethe::Schedule& value);
std::string toml_value(const schema::Groups&, schema::GroupPair<const lethe::PartitionGroup> value);
// A choice as its word ("\"mnemosyne\"").
std::string toml_word(const std::string& word);
// A strategy key's value (core/settings.hpp) in its language. REQUIRES: `value` holds its language's type.
std::string toml_setting(const lethe::SettingKey& key, const lethe::SettingValue& value);

template <class T>
std::string toml_value(const schema::Integer&, T value) {
  return fmt::format("{}", value);
}
template <class E>
std::string toml_value(const schema::Choice<E>&, E value) {
  return toml_word(lethe::to_string(value));
}
// A registered name is its own word.
inline std::string toml_value(const schema::Choice<std::string>&, const std::string& value) { return toml_word(value); }

}  // namespace scenario::values
