#include "scenario/reference.hpp"

#include <fmt/format.h>

#include <optional>
#include <string_view>

#include "core/result.hpp"
#include "protocol/registry.hpp"
#include "scenario/schema.hpp"
#include "scenario/text.hpp"
#include "scenario/values.hpp"

namespace scenario {
namespace {

struct RuleReference {
  std::string table;
  std::string text;
};

KeyReference setting_reference(const lethe::SettingKey& key) {
  const std::string allowed =
      schema::with_setting_type(key, [](const auto& type, auto*) { return schema::allowed(type); });
  const std::string default_value =
      key.default_value ? "`" + values::toml_setting(key, *key.default_value) + "`" : "required";
  return {"protocol", false, key.name, allowed, default_value, key.description};
}

// The row forms of schema::visit_schema, collecting what the page shows (over the default config).
class Collector {
 public:
  void table(std::string_view path) {
    table_ = path;
    array_ = false;
  }
  template <class Type, class Field>
  void key(std::string_view name, const Type& type, const Field& field, std::string_view description) {
    add(name, schema::allowed(type), default_of(type, field), description);
  }
  template <class Type, class Field>
  void required_key(std::string_view name, const Type& type, const Field&, std::string_view description) {
    add(name, schema::allowed(type), "required in every entry", description);
  }
  template <class Entry, class Keys>
  void array(std::string_view path, const std::vector<Entry>&, Keys entry_keys) {
    const std::string outer = table_;
    table(path);
    array_ = true;
    const Entry entry{};
    entry_keys(*this, entry);
    table(outer);
  }
  template <class Object>
  void rule(schema::Rule rule, const Object&) {
    rules.push_back({table_, std::string(schema::describe(rule))});
  }
  void expect(const std::vector<lethe::Expectation>&, std::string_view description) {
    table("expect");
    add("RESULT_FIELD", schema::kExpectationAllowed, "none", description);
    add("defaults", "`true` or `false`", "`true`",
        "check lethe's default invariants (duplicate_effects, lost_messages, linearizable when checked, saga_stuck "
        "and saga_duplicate_compensations when sagas run, undelivered, unanswered, kv_consistent when external nodes "
        "used seq-kv or lww-kv) on every field no entry names");
  }
  // The default kind's keys: the page lists every kind's under [protocol] (strategy_keys_section).
  void strategy_keys(const lethe::ProtocolSection& protocol) {
    for (const lethe::SettingKey& key : lethe::strategy_info(protocol.kind).keys) {
      default_kind_keys.push_back(setting_reference(key));
    }
  }

  std::vector<KeyReference> keys;
  std::vector<KeyReference> default_kind_keys;
  std::vector<RuleReference> rules;

 private:
  template <class Type, class Field>
  static std::string default_of(const Type& type, const Field& field) {
    return "`" + values::toml_value(type, field) + "`";
  }
  template <class Type, class Field>
  static std::string default_of(const Type& type, const std::optional<Field>& field) {
    return field ? default_of(type, *field) : "absent";
  }
  static std::string default_of(const schema::Name&, const std::string&) { return "required"; }

  void add(std::string_view name, std::string allowed, std::string default_value, std::string_view description) {
    keys.push_back({table_, array_, std::string(name), std::move(allowed), std::move(default_value),
                    std::string(description)});
  }

  std::string table_;
  bool array_ = false;
};

Collector collected() {
  Collector collector;
  const lethe::ScenarioConfig defaults;
  schema::visit_schema(collector, defaults);
  return collector;
}

// Markdown table cells: a | would end the cell.
std::string cell(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

std::string header(const KeyReference& key) {
  return key.array ? fmt::format("[[{}]]", key.table) : fmt::format("[{}]", key.table);
}

std::string strategy_keys_section();

std::string keys_section(const Collector& collector) {
  std::string out;
  for (std::size_t i = 0; i < collector.keys.size(); ++i) {
    const KeyReference& key = collector.keys[i];
    if (i == 0 || key.table != collector.keys[i - 1].table) {
      out += fmt::format("\n## `{}`\n\n", header(key));
      if (key.array) out += "An array of tables: any number of entries, each written under its own header.\n\n";
      out += "| key | allowed | default | description |\n| --- | --- | --- | --- |\n";
    }
    out += fmt::format("| `{}` | {} | {} | {} |\n", key.key, cell(key.allowed), cell(key.default_value),
                       cell(key.description));
    const bool last_of_table = i + 1 == collector.keys.size() || collector.keys[i + 1].table != key.table;
    if (!last_of_table) continue;
    for (const RuleReference& rule : collector.rules) {
      if (rule.table == key.table) out += fmt::format("\nRule: {}.\n", rule.text);
    }
    if (key.table == "protocol") out += strategy_keys_section();
    if (key.table == "expect") {
      out += "\nRESULT_FIELD is one of the result fields [expect] may name (docs/result-fields.md): ";
      std::vector<std::string> names;
      for (const std::string& name : lethe::expectation_field_names()) names.push_back("`" + name + "`");
      out += text::join(names, ", ") + ", or `coverage.NAME` for any fault point NAME.\n";
    }
  }
  return out;
}

// Each registered kind's keys, from its registry entry (protocol/registry.hpp): a key no entry of the kind
// declares is refused in [protocol] with that kind.
std::string strategy_keys_section() {
  std::string out =
      "\nThe other keys of `[protocol]` belong to the kind: each kind reads the keys listed under it, and a key "
      "it does not read is an error (naming the kinds that do). \"required\": the kind has no default for it.\n";
  for (const std::string& kind : lethe::strategy_names()) {
    const lethe::StrategyInfo& info = lethe::strategy_info(kind);
    out += fmt::format("\n### `kind = \"{}\"`\n\n{}.\n\n", kind, cell(info.description));
    if (info.keys.empty()) {
      out += "It reads no other key.\n";
      continue;
    }
    out += "| key | allowed | default | description |\n| --- | --- | --- | --- |\n";
    for (const lethe::SettingKey& key : info.keys) {
      const KeyReference row = setting_reference(key);
      out += fmt::format("| `{}` | {} | {} | {} |\n", row.key, cell(row.allowed), cell(row.default_value),
                         cell(row.description));
    }
  }
  return out;
}

std::string required_by_kind_section() {
  std::string out = "\n## Keys each protocol kind requires\n\n";
  out += "These keys of `[protocol]` have no default; the kind named by `protocol.kind` requires them.\n\n";
  out += "| kind | requires |\n| --- | --- |\n";
  for (const auto& [word, kind] : schema::protocol_kind_words()) {
    std::vector<std::string> required;
    for (const lethe::SettingKey& key : lethe::strategy_info(kind).keys) {
      if (!key.default_value) required.push_back(fmt::format("`{}`", key.name));
    }
    out += fmt::format("| `\"{}\"` | {} |\n", word, required.empty() ? "nothing" : text::join(required, ", "));
  }
  return out;
}

std::string_view kind_name(lethe::FieldKind kind) {
  switch (kind) {
    case lethe::FieldKind::Count: return "count";
    case lethe::FieldKind::Time: return "time (ns)";
    case lethe::FieldKind::Ratio: return "ratio";
    case lethe::FieldKind::Boolean: return "boolean";
    case lethe::FieldKind::Quantiles: return "quantiles of times (ns)";
    case lethe::FieldKind::PerCause: return "count per cause";
    case lethe::FieldKind::CountMap: return "count per name";
    case lethe::FieldKind::Text: return "string";
    case lethe::FieldKind::Hash: return "16 hex digits";
    case lethe::FieldKind::Words: return "list of strings";
    case lethe::FieldKind::Expectations: return "list of verdicts";
  }
  return "";
}

// How [expect] may name the field, if at all.
std::string expect_names(const lethe::ResultField& field) {
  if (!field.expectable) return "no";
  const std::string name(field.name);
  switch (field.kind) {
    case lethe::FieldKind::Quantiles: {
      std::vector<std::string> parts;
      for (const lethe::QuantilePart& part : lethe::kQuantileParts) {
        if (part.expectable) parts.push_back(fmt::format("`{}.{}`", name, part.name));
      }
      return text::join(parts, ", ");
    }
    case lethe::FieldKind::PerCause: return fmt::format("`{}.CAUSE`", name);
    case lethe::FieldKind::CountMap: return fmt::format("`{}.NAME`", name);
    default: return fmt::format("`{}`", name);
  }
}

}  // namespace

std::vector<KeyReference> scenario_key_references() {
  Collector collector = collected();
  std::vector<KeyReference> keys = collector.keys;
  keys.insert(keys.end(), collector.default_kind_keys.begin(), collector.default_kind_keys.end());
  return keys;
}

std::string scenario_reference_markdown() {
  std::string out =
      "# Scenario file reference\n\n"
      "Every table and key of a scenario file (TOML), generated from the table of keys in scenario/schema.hpp:\n"
      "do not edit by hand; `cmake --build build --target scenario-reference` rewrites it, and a test fails when\n"
      "it differs from the table. \"allowed\" says what the loader accepts, in the words of its error messages;\n"
      "\"default\" is the value a key takes when the file leaves it out (\"absent\": the key is off unless\n"
      "written). Any key can also be given on the command line, `--set TABLE.KEY=VALUE`, with the same checks.\n";
  out += keys_section(collected());
  out += required_by_kind_section();
  return out;
}

std::string result_fields_markdown() {
  std::string out =
      "# Result fields\n\n"
      "The fields of one run's result (one scenario, one seed), as `lethe run --json` writes them, generated\n"
      "from the table in core/result.hpp: do not edit by hand; `cmake --build build --target scenario-reference`\n"
      "rewrites it, and a test fails when it differs from the table. Fields with parts are nested objects in\n"
      "JSON: `duplicates.expired` is `{\"duplicates\": {\"expired\": 3}}`. Extensions (beyond the original\n"
      "contract) come after the other fields in the JSON.\n\n"
      "| field | kind | [expect] names | extension | description |\n| --- | --- | --- | --- | --- |\n";
  for (const bool extensions : {false, true}) {  // in the JSON's order
    for (const lethe::ResultField& field : lethe::result_fields()) {
      if (field.extension != extensions) continue;
      out += fmt::format("| `{}` | {} | {} | {} | {} |\n", field.name, kind_name(field.kind), expect_names(field),
                         field.extension ? "yes" : "no", cell(field.description));
    }
  }
  out += "\n## Duplicate causes\n\nThe parts of `duplicates`, summing to `duplicate_effects`.\n\n";
  out += "| cause | description |\n| --- | --- |\n";
  for (const lethe::CauseRow& cause : lethe::kCauses) {
    out += fmt::format("| `{}` | {} |\n", cause.name, cell(cause.description));
  }
  out += "\n## Quantile parts\n\n| part | [expect] |\n| --- | --- |\n";
  for (const lethe::QuantilePart& part : lethe::kQuantileParts) {
    out += fmt::format("| `{}` | {} |\n", part.name, part.expectable ? "yes" : "no (JSON only: samples)");
  }
  return out;
}

}  // namespace scenario
