// render_scenario_toml: a config back to canonical TOML (see scenario/loader.hpp).
//
// Walks the table of keys (scenario/schema.hpp), so every key is written in the table's order and the output
// documents the effective values; optional keys that are off (nullopt) are left out, which is how the loader
// reads "off". Values use the loader's own languages (scenario/values.hpp) so they read back exactly.
#include <fmt/format.h>

#include <optional>
#include <string>
#include <type_traits>
#include <variant>

#include "core/result.hpp"
#include "protocol/registry.hpp"
#include "scenario/loader.hpp"
#include "scenario/schema.hpp"
#include "scenario/text.hpp"
#include "scenario/values.hpp"

namespace scenario {

namespace values {

using text::toml_quote;

std::string toml_word(const std::string& word) { return toml_quote(word); }
std::string toml_value(const schema::Text&, const std::string& value) { return toml_quote(value); }
std::string toml_value(const schema::Name&, const std::string& value) { return toml_quote(value); }
std::string toml_value(const schema::Names&, const std::vector<std::string>& value) {
  std::vector<std::string> quoted;
  for (const std::string& item : value) quoted.push_back(toml_quote(item));
  return "[" + text::join(quoted, ", ") + "]";
}
std::string toml_value(const schema::Boolean&, bool value) { return value ? "true" : "false"; }
std::string toml_value(const schema::Probability&, double value) { return text::format_number(value); }
std::string toml_value(const schema::Duration& type, sim::Duration value) {
  if (type.none && value == lethe::kTtlNone) return toml_quote("none");
  return toml_quote(sim::format_duration(value));
}
std::string toml_value(const schema::Distribution&, const sim::Distribution& value) {
  return toml_quote(value.to_string());
}
std::string toml_value(const schema::Rate&, const lethe::Rate& value) {
  return toml_quote(fmt::format("{}/s", value.per_second));
}

std::string toml_value(const schema::Bound&, const std::optional<std::uint64_t>& value) {
  return value.has_value() ? fmt::format("{}", *value) : toml_word("unbounded");
}

std::string toml_value(const schema::Language&, const lethe::Commit& value) {
  if (value.mode == lethe::CommitMode::AfterEach) return toml_word(lethe::to_string(value.mode));
  return toml_quote(fmt::format("interval({})", sim::format_duration(value.interval)));
}

std::string toml_value(const schema::Language&, const lethe::TtlEviction& value) {
  if (value.kind == lethe::TtlEvictionKind::Exact) return toml_word(lethe::to_string(value.kind));
  return toml_quote(fmt::format("lazy(max={})", sim::format_duration(value.lazy_max)));
}

std::string toml_value(const schema::Language&, const lethe::Poll& value) {
  if (value.kind == lethe::PollKind::Distribution) return toml_quote(value.interval.to_string());
  return toml_quote(fmt::format("backoff(base={}, factor={}, cap={})", sim::format_duration(value.backoff_base),
                                value.backoff_factor, sim::format_duration(value.backoff_cap)));
}

std::string toml_value(const schema::Language&, const lethe::PollRead& value) {
  if (value.kind == lethe::PollReadKind::Consistent) return toml_word(lethe::to_string(value.kind));
  return toml_quote(fmt::format("eventual(lag={})", value.lag.to_string()));
}

std::string toml_value(const schema::Language&, const lethe::LocalCache& value) {
  if (value.size == 0) return toml_word("off");
  return toml_quote(fmt::format("lru(size={}, ttl={})", value.size, sim::format_duration(value.ttl)));
}

std::string toml_value(const schema::Language&, const lethe::Backoff& value) {
  switch (value.kind) {
    case lethe::BackoffKind::None: return toml_word(lethe::to_string(value.kind));
    case lethe::BackoffKind::Constant:
      return toml_quote(fmt::format("constant({})", sim::format_duration(value.delay)));
    case lethe::BackoffKind::Exponential:
      return toml_quote(fmt::format("exponential(base={}, cap={})", sim::format_duration(value.base),
                                    sim::format_duration(value.cap)));
  }
  return toml_word(lethe::to_string(value.kind));
}

std::string toml_value(const schema::Language&, const lethe::Schedule& value) {
  if (value.kind != lethe::ScheduleKind::Pct) return toml_word(lethe::to_string(value.kind));
  return toml_quote(lethe::to_string(value));
}

std::string toml_value(const schema::Groups&, schema::GroupPair<const lethe::PartitionGroup> value) {
  return toml_value(schema::Names{}, {lethe::to_string(value.first), lethe::to_string(value.second)});
}

std::string toml_setting(const lethe::SettingKey& key, const lethe::SettingValue& value) {
  return schema::with_setting_type(key, [&value](const auto& type, auto* value_type) {
    return toml_value(type, std::get<std::remove_pointer_t<decltype(value_type)>>(value));
  });
}

}  // namespace values

namespace {

using text::toml_quote;

// Time result fields take a duration in [expect] ("< 5s"); write whole, non-negative ns values that way.
std::string expectation_number(const lethe::Expectation& expectation) {
  bool time_field = lethe::expectation_kind(expectation.key) == lethe::FieldKind::Time;
  double value = expectation.number;
  if (time_field && value >= 0 && value < 9e18 && value == static_cast<double>(static_cast<sim::Duration>(value))) {
    return sim::format_duration(static_cast<sim::Duration>(value));
  }
  return fmt::format("{}{}", value, expectation.percent ? "%" : "");
}

// The row forms of schema::visit_schema, writing TOML.
class Renderer {
 public:
  // expect_defaults: ScenarioConfig::expect_defaults, written as "defaults = false" in [expect] when off.
  explicit Renderer(bool expect_defaults) : expect_defaults_(expect_defaults) {}

  void table(std::string_view path) { out_ += fmt::format("{}[{}]\n", out_.empty() ? "" : "\n", path); }

  template <class Type, class Field>
  void key(std::string_view name, const Type& type, const Field& field, std::string_view /*description*/) {
    write(name, type, field);
  }
  template <class Type, class Field>
  void required_key(std::string_view name, const Type& type, const Field& field, std::string_view description) {
    key(name, type, field, description);
  }
  template <class Entry, class Keys>
  void array(std::string_view path, const std::vector<Entry>& entries, Keys keys) {
    for (const Entry& entry : entries) {
      out_ += fmt::format("\n[[{}]]\n", path);
      keys(*this, entry);
    }
  }
  template <class Object>
  void rule(schema::Rule, const Object&) {}
  // The kind's keys in the order its entry declares them; a kind not registered has none to write.
  void strategy_keys(const lethe::ProtocolSection& protocol) {
    const lethe::StrategyInfo* strategy = lethe::find_strategy(protocol.kind);
    if (strategy == nullptr) return;
    for (const lethe::SettingKey& key : strategy->keys) {
      auto value = protocol.settings.values().find(key.name);
      if (value != protocol.settings.values().end()) line(key.name, values::toml_setting(key, value->second));
    }
  }
  void expect(const std::vector<lethe::Expectation>& expectations, std::string_view) {
    table("expect");
    if (!expect_defaults_) line("defaults", "false");
    for (const lethe::Expectation& expectation : expectations) {
      line(toml_quote(expectation.key),
           toml_quote(fmt::format("{} {}", lethe::to_string(expectation.op), expectation_number(expectation))));
    }
  }

  std::string take() { return std::move(out_); }

 private:
  template <class Type, class Value>
  void write(std::string_view name, const Type& type, const Value& value) {
    line(name, values::toml_value(type, value));
  }
  template <class Type, class Value>
  void write(std::string_view name, const Type& type, const std::optional<Value>& value) {
    if (value) write(name, type, *value);  // absent = off
  }
  void line(std::string_view name, const std::string& value) { out_ += fmt::format("{} = {}\n", name, value); }

  bool expect_defaults_;
  std::string out_;
};

}  // namespace

std::string render_scenario_toml(const lethe::ScenarioConfig& config) {
  Renderer renderer(config.expect_defaults);
  schema::visit_schema(renderer, config);
  return renderer.take();
}

}  // namespace scenario
