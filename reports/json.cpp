#include "reports/json.hpp"

#include <fmt/format.h>
#include <limits>
#include <type_traits>

namespace reports {

namespace {

using lethe::FieldKind;
using lethe::ResultField;
using lethe::RunResult;
using Causes = std::array<std::uint64_t, lethe::kCauseCount>;
using CountMap = std::map<std::string, std::uint64_t>;
using Words = std::vector<std::string>;
using Expectations = std::vector<lethe::ExpectationResult>;

nlohmann::ordered_json expectations_json(const Expectations& expectations) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& e : expectations) {
    nlohmann::ordered_json x;
    x["key"] = e.key;
    x["op"] = e.op;
    x["want"] = e.want;
    x["got"] = e.got;
    x["ok"] = e.ok;
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
    e.want = x.value("want", std::string{});
    // "got": null is an expectation that could not be evaluated (NaN when written).
    e.got = x.contains("got") && x["got"].is_number() ? x["got"].get<double>()
                                                     : std::numeric_limits<double>::quiet_NaN();
    e.ok = x.value("ok", false);
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

RunResult result_from_json(const nlohmann::json& j) {
  RunResult r;
  for (const ResultField& field : lethe::result_fields()) read_field(j, r, field);
  return r;
}

}  // namespace reports
