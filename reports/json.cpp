#include "reports/json.hpp"

#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <type_traits>

#include "core/config.hpp"

namespace reports {

namespace {

using lethe::FieldKind;
using lethe::ResultField;
using lethe::RunResult;
using Causes = std::array<std::uint64_t, lethe::kCauseCount>;
using CountMap = std::map<std::string, std::uint64_t>;
using Words = std::vector<std::string>;
using Expectations = std::vector<lethe::ExpectationResult>;

// A number of an expectation: an integer unless the field is a Ratio or the value has a fraction (a percent of
// messages), so a counter reads 18, not 18.0; NaN (a value that could not be had) is null.
nlohmann::ordered_json expectation_number(const std::string& key, double value) {
  if (std::isnan(value)) return nullptr;
  const auto kind = lethe::expectation_kind(key);
  const bool whole = std::floor(value) == value && std::fabs(value) < 9007199254740992.0;  // 2^53
  if (whole && kind != FieldKind::Ratio) return static_cast<std::int64_t>(value);
  return value;
}

nlohmann::ordered_json expectations_json(const Expectations& expectations) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& e : expectations) {
    nlohmann::ordered_json x;
    x["key"] = e.key;
    x["op"] = e.op;
    x["want"] = expectation_number(e.key, e.threshold);
    x["want_text"] = e.want;
    x["got"] = expectation_number(e.key, e.got);
    x["ok"] = e.ok;
    x["default"] = e.by_default;
    out.push_back(x);
  }
  return out;
}

Expectations expectations_from(const nlohmann::json& j) {
  Expectations out;
  for (const auto& x : j) {
    lethe::ExpectationResult e;
    e.key = x.value("key", std::string{});
    e.op = x.value("op", std::string{});
    // Before want_text, "want" was the text as written; both forms read back.
    const nlohmann::json want = x.contains("want") ? x["want"] : nlohmann::json();
    if (want.is_string()) e.want = want.get<std::string>();
    if (want.is_number()) e.threshold = want.get<double>();
    e.want = x.value("want_text", e.want);
    // "got": null is an expectation that could not be evaluated (NaN when written).
    e.got = x.contains("got") && x["got"].is_number() ? x["got"].get<double>()
                                                     : std::numeric_limits<double>::quiet_NaN();
    e.ok = x.value("ok", false);
    e.by_default = x.value("default", false);
    out.push_back(e);
  }
  return out;
}

void write_field(nlohmann::ordered_json& j, const RunResult& r, const ResultField& field) {
  const std::string key(field.name);
  std::visit(
      [&](auto member) {
        const auto& value = r.*member;
        using T = std::remove_cvref_t<decltype(value)>;
        if constexpr (std::is_same_v<T, std::uint64_t>) {
          if (field.kind == FieldKind::Hash) {
            j[key] = fmt::format("{:016x}", value);
          } else {
            j[key] = value;
          }
        } else if constexpr (std::is_same_v<T, std::optional<bool>>) {
          if (value.has_value()) {
            j[key] = *value;
          } else {
            j[key] = nullptr;
          }
        } else if constexpr (std::is_same_v<T, lethe::Quantiles>) {
          j[key] = quantiles_json(value);
        } else if constexpr (std::is_same_v<T, Causes>) {
          nlohmann::ordered_json causes = nlohmann::ordered_json::object();
          for (std::size_t i = 0; i < lethe::kCauseCount; ++i) causes[std::string(lethe::kCauses[i].name)] = value[i];
          j[key] = causes;
        } else if constexpr (std::is_same_v<T, CountMap>) {
          nlohmann::ordered_json counts = nlohmann::ordered_json::object();
          for (const auto& [name, count] : value) counts[name] = count;
          j[key] = counts;
        } else if constexpr (std::is_same_v<T, Words>) {
          if (!value.empty()) j[key] = value;  // FieldKind::Words: left out when empty
        } else if constexpr (std::is_same_v<T, Expectations>) {
          j[key] = expectations_json(value);
        } else {
          j[key] = value;
        }
      },
      field.member);
}

void read_field(const nlohmann::json& j, RunResult& r, const ResultField& field) {
  const std::string key(field.name);
  if (!j.contains(key)) return;
  const nlohmann::json& node = j[key];
  std::visit(
      [&](auto member) {
        auto& value = r.*member;
        using T = std::remove_cvref_t<decltype(value)>;
        if constexpr (std::is_same_v<T, std::uint64_t>) {
          value = field.kind == FieldKind::Hash ? std::stoull(node.get<std::string>(), nullptr, 16)
                                                : node.get<std::uint64_t>();
        } else if constexpr (std::is_same_v<T, std::optional<bool>>) {
          if (node.is_boolean()) value = node.get<bool>();
        } else if constexpr (std::is_same_v<T, lethe::Quantiles>) {
          value = quantiles_from_json(node, /*required=*/false);
        } else if constexpr (std::is_same_v<T, Causes>) {
          for (std::size_t i = 0; i < lethe::kCauseCount; ++i) {
            value[i] = node.value(std::string(lethe::kCauses[i].name), std::uint64_t{0});
          }
        } else if constexpr (std::is_same_v<T, CountMap>) {
          for (const auto& [name, count] : node.items()) value[name] = count.template get<std::uint64_t>();
        } else if constexpr (std::is_same_v<T, Expectations>) {
          value = expectations_from(node);
        } else {
          value = node.get<T>();
        }
      },
      field.member);
}

}  // namespace

nlohmann::ordered_json quantiles_json(const lethe::Quantiles& q) {
  nlohmann::ordered_json j;
  for (const lethe::QuantilePart& part : lethe::kQuantileParts) {
    std::visit([&](auto member) { j[std::string(part.name)] = q.*member; }, part.member);
  }
  return j;
}

lethe::Quantiles quantiles_from_json(const nlohmann::json& j, bool required) {
  lethe::Quantiles q;
  for (const lethe::QuantilePart& part : lethe::kQuantileParts) {
    std::visit(
        [&](auto member) {
          using T = std::remove_cvref_t<decltype(q.*member)>;
          const std::string name(part.name);
          q.*member = required ? j.at(name).get<T>() : j.value(name, T{0});
        },
        part.member);
  }
  return q;
}

nlohmann::ordered_json to_json(const RunResult& r) {
  nlohmann::ordered_json j;
  for (const bool extensions : {false, true}) {
    for (const ResultField& field : lethe::result_fields()) {
      if (field.extension == extensions) write_field(j, r, field);
    }
  }
  return j;
}

namespace {

nlohmann::ordered_json integer_schema(std::string_view description, bool counter) {
  nlohmann::ordered_json j = {{"type", "integer"}};
  if (counter) j["minimum"] = 0;
  j["description"] = description;
  return j;
}

nlohmann::ordered_json closed_object(nlohmann::ordered_json properties, std::string_view description) {
  nlohmann::ordered_json required = nlohmann::ordered_json::array();
  for (const auto& [name, _] : properties.items()) required.push_back(name);
  return {{"type", "object"},
          {"description", description},
          {"properties", std::move(properties)},
          {"required", std::move(required)},
          {"additionalProperties", false}};
}

nlohmann::ordered_json expectations_schema(std::string_view description) {
  nlohmann::ordered_json ops = nlohmann::ordered_json::array();
  for (const auto op : {lethe::ExpectationOp::Equal, lethe::ExpectationOp::NotEqual, lethe::ExpectationOp::Less,
                        lethe::ExpectationOp::LessEqual, lethe::ExpectationOp::Greater,
                        lethe::ExpectationOp::GreaterEqual}) {
    ops.push_back(lethe::to_string(op));
  }
  nlohmann::ordered_json item = closed_object(
      {{"key", {{"type", "string"}, {"description", "the result field, dotted (\"duplicates.expired\")"}}},
       {"op", {{"enum", ops}}},
       {"want", {{"type", "number"},
                 {"description", "the number got was compared with (a percent resolved against messages); an "
                                 "integer unless the field is a ratio or the percent has a fraction"}}},
       {"want_text", {{"type", "string"}, {"description", "want as written (\"5%\", \"0\")"}}},
       {"got", {{"type", {"number", "null"}},
                {"description", "the seed's value, an integer unless the field is a ratio; null when it could "
                                "not be had (linearizable not checked)"}}},
       {"ok", {{"type", "boolean"}}},
       {"default", {{"type", "boolean"},
                    {"description", "a default invariant lethe checked because no [expect] entry names the field"}}}},
      "one [expect] entry, or default invariant, and its verdict");
  return {{"type", "array"}, {"description", description}, {"items", std::move(item)}};
}

nlohmann::ordered_json field_schema(const ResultField& field) {
  const std::string_view d = field.description;
  switch (field.kind) {
    case FieldKind::Count: return integer_schema(d, true);
    case FieldKind::Time: return integer_schema(std::string(d) + " (integer nanoseconds)", false);
    case FieldKind::Ratio: return {{"type", "number"}, {"description", d}};
    case FieldKind::Boolean: {
      const bool nullable = std::holds_alternative<std::optional<bool> RunResult::*>(field.member);
      return {{"type", nullable ? nlohmann::ordered_json{"boolean", "null"} : nlohmann::ordered_json("boolean")},
              {"description", d}};
    }
    case FieldKind::Quantiles: {
      nlohmann::ordered_json parts = nlohmann::ordered_json::object();
      for (const lethe::QuantilePart& part : lethe::kQuantileParts) {
        const bool count = part.name == "count";
        parts[std::string(part.name)] =
            integer_schema(count ? "samples the quantiles are over" : "nearest-rank quantile, integer nanoseconds",
                           count);
      }
      return closed_object(std::move(parts), d);
    }
    case FieldKind::PerCause: {
      nlohmann::ordered_json causes = nlohmann::ordered_json::object();
      for (const auto& cause : lethe::kCauses) causes[std::string(cause.name)] = integer_schema(cause.description, true);
      return closed_object(std::move(causes), d);
    }
    case FieldKind::CountMap:
      return {{"type", "object"},
              {"description", d},
              {"additionalProperties", {{"type", "integer"}, {"minimum", 0}}}};
    case FieldKind::Text: return {{"type", "string"}, {"description", d}};
    case FieldKind::Hash: return {{"type", "string"}, {"pattern", "^[0-9a-f]{16}$"}, {"description", d}};
    case FieldKind::Words:
      return {{"type", "array"}, {"items", {{"type", "string"}}}, {"description", d}};
    case FieldKind::Expectations: return expectations_schema(d);
  }
  return {};
}

}  // namespace

nlohmann::ordered_json result_schema() {
  nlohmann::ordered_json properties = nlohmann::ordered_json::object();
  nlohmann::ordered_json required = nlohmann::ordered_json::array();
  // The order of to_json: the contract's fields, then the extensions.
  for (const bool extensions : {false, true}) {
    for (const ResultField& field : lethe::result_fields()) {
      if (field.extension != extensions) continue;
      properties[std::string(field.name)] = field_schema(field);
      if (field.kind != FieldKind::Words) required.push_back(field.name);
    }
  }
  return {{"$schema", "https://json-schema.org/draft/2020-12/schema"},
          {"title", "lethe result"},
          {"description", "One run of one seed, as lethe run --json, lethe suite --json and a sweep's results.jsonl "
                          "write it (docs/results.md). Generated from the result-field table (core/result.cpp)."},
          {"type", "object"},
          {"properties", std::move(properties)},
          {"required", std::move(required)},
          {"additionalProperties", false}};
}

RunResult result_from_json(const nlohmann::json& j) {
  RunResult r;
  for (const ResultField& field : lethe::result_fields()) read_field(j, r, field);
  return r;
}

}  // namespace reports
