#include "runner/sweep_targets.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <set>

#include "sim/time.hpp"

namespace runner {

namespace {

// Every numeric dotted path of a cell in cells.json (params and the interval excepted).
void numeric_paths(const nlohmann::ordered_json& j, const std::string& prefix, std::vector<std::string>& out) {
  for (const auto& [key, value] : j.items()) {
    if (prefix.empty() && (key == "params" || key == "index" || key == "duplicate_interval")) continue;
    const std::string path = prefix.empty() ? key : prefix + "." + key;
    if (value.is_object()) {
      numeric_paths(value, path, out);
    } else if (value.is_number()) {
      out.push_back(path);
    }
  }
}

nlohmann::ordered_json cell_document(const reports::CellSummary& cell) {
  reports::SweepCells sweep;
  sweep.cells.push_back(cell);
  return reports::sweep_cells_json(sweep).at("cells").at(0);
}

const std::vector<std::string>& allowed_fields() {
  static const std::vector<std::string> fields = [] {
    std::vector<std::string> out;
    numeric_paths(cell_document(reports::CellSummary{}), "", out);
    return out;
  }();
  return fields;
}

bool is_latency(const std::string& field) {
  return field.rfind("wait_time.", 0) == 0 || field.rfind("recovery_latency.", 0) == 0;
}

std::string value_text(const std::string& field, double v) {
  return is_latency(field) ? sim::format_human(static_cast<sim::Duration>(v)) : fmt::format("{:.3g}", v);
}

}  // namespace

std::optional<SweepTarget> parse_sweep_target(std::string_view text, std::string& error) {
  SweepTarget t;
  t.text = std::string(text);
  auto op = text.find("<=");
  if (op == std::string_view::npos) {
    op = text.find(">=");
    t.at_most = false;
  }
  std::string fields;
  for (const auto& f : allowed_fields()) fields += (fields.empty() ? "" : ", ") + f;
  if (op == std::string_view::npos) {
    error = fmt::format("--target {}: found no FIELD<=X or FIELD>=X; allowed: e.g. --target duplicate_rate<=0.001",
                        text);
    return std::nullopt;
  }
  t.field = std::string(text.substr(0, op));
  const std::string limit(text.substr(op + 2));
  const auto& allowed = allowed_fields();
  if (std::find(allowed.begin(), allowed.end(), t.field) == allowed.end()) {
    error = fmt::format("--target {}: found the field \"{}\"; allowed: {}", text, t.field, fields);
    return std::nullopt;
  }
  char* end = nullptr;
  const double number = std::strtod(limit.c_str(), &end);
  if (!limit.empty() && end == limit.c_str() + limit.size()) {
    t.limit = number;
    return t;
  }
  std::string problem;
  const auto duration = sim::parse_duration(limit, problem);
  if (duration && is_latency(t.field)) {
    t.limit = static_cast<double>(*duration);
    return t;
  }
  error = fmt::format("--target {}: found the limit \"{}\"; allowed: a number{}", text, limit,
                      is_latency(t.field) ? " or a duration (\"5s\")" : "");
  return std::nullopt;
}

TargetVerdict judge_target(const SweepTarget& target, const reports::CellSummary& cell) {
  TargetVerdict v;
  if (cell.trials == 0) {
    v.verdict = "n/a";
    v.reason = "no trials";
    return v;
  }
  // A quantile of no samples is no value to judge.
  if (target.field.rfind("wait_time.", 0) == 0 && cell.wait_time.count == 0) v.reason = "no waits";
  if (target.field.rfind("recovery_latency.", 0) == 0 && cell.recovery_latency.count == 0) v.reason = "no recoveries";
  if (!v.reason.empty()) {
    v.verdict = "n/a";
    return v;
  }
  const bool cause = target.field.rfind("by_cause.", 0) == 0;
  if (target.field == "duplicate_rate" || cause) {
    const std::uint64_t count = cause ? cell_document(cell).at("by_cause").at(target.field.substr(9)).get<std::uint64_t>()
                                      : std::min(cell.duplicates, cell.trials);
    v.value = static_cast<double>(count) / static_cast<double>(cell.trials);
    v.interval = reports::wilson_interval(std::min(count, cell.trials), cell.trials);
  } else {
    nlohmann::ordered_json j = cell_document(cell);
    const nlohmann::ordered_json* node = &j;
    std::size_t start = 0;
    while (true) {
      const auto dot = target.field.find('.', start);
      node = &node->at(target.field.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    v.value = node->get<double>();
  }
  const double low = v.interval ? v.interval->low : v.value;
  const double high = v.interval ? v.interval->high : v.value;
  const bool pass = target.at_most ? high <= target.limit : low >= target.limit;
  const bool fail = target.at_most ? low > target.limit : high < target.limit;
  v.verdict = pass ? "pass" : (fail ? "fail" : "undecided");
  return v;
}

std::string targets_table(const std::vector<SweepTarget>& targets, const std::vector<reports::CellSummary>& cells,
                          bool& all_pass) {
  all_pass = true;
  // The params and target columns as wide as their longest entry, so the rows line up.
  const auto params_text = [](const reports::CellSummary& cell) {
    std::string params;
    for (const auto& [key, value] : cell.params) params += (params.empty() ? "" : " ") + key + "=" + value;
    return params;
  };
  std::size_t params_width = 6, target_width = 6;
  for (const auto& cell : cells) params_width = std::max(params_width, params_text(cell).size());
  for (const auto& t : targets) target_width = std::max(target_width, t.text.size());
  std::string out = fmt::format("\ntargets:\n  {:>4}  {:<{}}  {:<{}}  {:>10}  {:>24}  {}\n", "cell", "params",
                                params_width, "target", target_width, "value", "95% interval", "verdict");
  for (const auto& cell : cells) {
    const std::string params = params_text(cell);
    for (const auto& t : targets) {
      const auto v = judge_target(t, cell);
      all_pass = all_pass && v.verdict == "pass";
      const std::string spread = !v.reason.empty() ? "(" + v.reason + ")"
                                 : v.interval ? fmt::format("[{}, {}]", value_text(t.field, v.interval->low),
                                                            value_text(t.field, v.interval->high))
                                              : std::string("(point value)");
      out += fmt::format("  {:>4}  {:<{}}  {:<{}}  {:>10}  {:>24}  {}\n", cell.index, params, params_width, t.text,
                         target_width, v.reason.empty() ? value_text(t.field, v.value) : "-", spread, v.verdict);
    }
  }
  return out;
}

nlohmann::ordered_json targets_json(const std::vector<SweepTarget>& targets,
                                    const std::vector<reports::CellSummary>& cells) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& cell : cells) {
    for (const auto& t : targets) {
      const auto v = judge_target(t, cell);
      nlohmann::ordered_json row{{"cell", cell.index}, {"target", t.text}, {"field", t.field},
                                 {"at_most", t.at_most}, {"limit", t.limit}, {"value", v.value},
                                 {"verdict", v.verdict}};
      if (!v.reason.empty()) {
        row["value"] = nullptr;  // no value was measured
        row["reason"] = v.reason;
      }
      row["interval"] = v.interval ? nlohmann::ordered_json{v.interval->low, v.interval->high}
                                   : nlohmann::ordered_json();
      out.push_back(row);
    }
  }
  return out;
}

}  // namespace runner
