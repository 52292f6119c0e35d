#include "reports/cells.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "reports/json.hpp"
#include "reports/summary.hpp"

namespace reports {

Interval wilson_interval(std::uint64_t successes, std::uint64_t trials, double z) {
  if (trials == 0) return Interval{0.0, 1.0};
  const double n = static_cast<double>(trials);
  const double p = static_cast<double>(std::min(successes, trials)) / n;
  const double z2 = z * z;
  const double denominator = 1.0 + z2 / n;
  const double centre = (p + z2 / (2.0 * n)) / denominator;
  const double half = z * std::sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n)) / denominator;
  // No success has a lower bound of exactly 0 and all successes an upper bound of exactly 1 (the formula gives
  // them up to rounding: 1e-18 instead of 0).
  const double low = successes == 0 ? 0.0 : std::max(0.0, centre - half);
  const double high = successes >= trials ? 1.0 : std::min(1.0, centre + half);
  return Interval{low, high};
}

namespace {

// The quantile fields of a cell, in cells.json's and cells.csv's order.
struct CellQuantiles {
  const char* name;
  lethe::Quantiles CellSummary::*member;
};
constexpr std::array<CellQuantiles, 2> kCellQuantiles = {{
    {"wait_time", &CellSummary::wait_time},
    {"recovery_latency", &CellSummary::recovery_latency},
}};

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string percent(double fraction) { return fmt::format("{:.3g}%", fraction * 100.0); }

}  // namespace

nlohmann::ordered_json cell_json(const CellSummary& cell) {
  nlohmann::ordered_json j;
  j["index"] = cell.index;
  nlohmann::ordered_json params = nlohmann::ordered_json::object();
  for (const auto& [key, value] : cell.params) params[key] = value;
  j["params"] = params;
  j["seeds"] = cell.seeds;
  j["trials"] = cell.trials;
  j["duplicates"] = cell.duplicates;
  j["duplicate_rate"] = cell.duplicate_rate;
  j["duplicate_interval"] = {{"low", cell.duplicate_interval.low}, {"high", cell.duplicate_interval.high}};
  nlohmann::ordered_json causes = nlohmann::ordered_json::object();
  for (std::size_t i = 0; i < lethe::kCauseCount; ++i) causes[std::string(lethe::kCauseNames[i])] = cell.by_cause[i];
  j["by_cause"] = causes;
  j["lost"] = cell.lost;
  j["waits"] = cell.waits;
  j["memo_mismatches"] = cell.memo_mismatches;
  for (const CellQuantiles& q : kCellQuantiles) j[q.name] = quantiles_json(cell.*q.member);
  j["failed_seeds"] = cell.failed_seeds;
  j["error_seeds"] = cell.error_seeds;
  return j;
}

CellSummary cell_from_json(const nlohmann::json& j) {
  CellSummary cell;
  cell.index = j.at("index").get<std::size_t>();
  // In the object's key order: sorted for a plain nlohmann::json (sweep_cells_from_json restores axis order).
  for (const auto& [key, value] : j.at("params").items()) cell.params.emplace_back(key, value.get<std::string>());
  cell.seeds = j.at("seeds").get<std::size_t>();
  cell.trials = j.at("trials").get<std::uint64_t>();
  cell.duplicates = j.at("duplicates").get<std::uint64_t>();
  cell.duplicate_rate = j.at("duplicate_rate").get<double>();
  cell.duplicate_interval.low = j.at("duplicate_interval").at("low").get<double>();
  cell.duplicate_interval.high = j.at("duplicate_interval").at("high").get<double>();
  for (std::size_t i = 0; i < lethe::kCauseCount; ++i) {
    cell.by_cause[i] = j.at("by_cause").at(std::string(lethe::kCauseNames[i])).get<std::uint64_t>();
  }
  cell.lost = j.at("lost").get<std::uint64_t>();
  cell.waits = j.at("waits").get<std::uint64_t>();
  cell.memo_mismatches = j.at("memo_mismatches").get<std::uint64_t>();
  for (const CellQuantiles& q : kCellQuantiles) cell.*q.member = quantiles_from_json(j.at(q.name), /*required=*/true);
  cell.failed_seeds = j.at("failed_seeds").get<std::size_t>();
  cell.error_seeds = j.value("error_seeds", std::size_t{0});
  return cell;
}

nlohmann::ordered_json sweep_cells_json(const SweepCells& sweep) {
  nlohmann::ordered_json j;
  j["scenario"] = sweep.scenario;
  nlohmann::ordered_json axes = nlohmann::ordered_json::array();
  for (const auto& axis : sweep.axes) axes.push_back({{"key", axis.key}, {"values", axis.values}});
  j["axes"] = axes;
  nlohmann::ordered_json cells = nlohmann::ordered_json::array();
  for (const auto& cell : sweep.cells) cells.push_back(cell_json(cell));
  j["cells"] = cells;
  return j;
}

SweepCells sweep_cells_from_json(const nlohmann::json& j) {
  SweepCells sweep;
  sweep.scenario = j.at("scenario").get<std::string>();
  for (const auto& axis : j.at("axes")) {
    sweep.axes.push_back(SweepAxis{axis.at("key").get<std::string>(), axis.at("values").get<std::vector<std::string>>()});
  }
  for (const auto& cell : j.at("cells")) {
    CellSummary summary = cell_from_json(cell);
    // Params in axis order (a plain nlohmann::json object lists its keys sorted).
    std::vector<std::pair<std::string, std::string>> ordered;
    for (const auto& axis : sweep.axes) {
      const auto it = std::find_if(summary.params.begin(), summary.params.end(),
                                   [&axis](const auto& p) { return p.first == axis.key; });
      if (it != summary.params.end()) ordered.push_back(*it);
    }
    if (ordered.size() == summary.params.size()) summary.params = std::move(ordered);
    sweep.cells.push_back(std::move(summary));
  }
  return sweep;
}

std::string cells_csv(const std::vector<SweepAxis>& axes, const std::vector<CellSummary>& cells) {
  std::string out = "index";
  for (const auto& axis : axes) out += "," + csv_field(axis.key);
  out += ",seeds,trials,duplicates,duplicate_rate,ci_low,ci_high";
  for (const auto cause : lethe::kCauseNames) out += fmt::format(",duplicates.{}", cause);
  out += ",lost,waits,memo_mismatches";
  for (const CellQuantiles& q : kCellQuantiles) {
    for (const lethe::QuantilePart& part : lethe::kQuantileParts) out += fmt::format(",{}.{}", q.name, part.name);
  }
  out += ",failed_seeds,error_seeds\n";
  for (const auto& cell : cells) {
    out += fmt::format("{}", cell.index);
    for (const auto& axis : axes) {
      std::string value;
      for (const auto& [key, v] : cell.params) {
        if (key == axis.key) value = v;
      }
      out += "," + csv_field(value);
    }
    out += fmt::format(",{},{},{},{},{},{}", cell.seeds, cell.trials, cell.duplicates, cell.duplicate_rate,
                       cell.duplicate_interval.low, cell.duplicate_interval.high);
    for (const auto n : cell.by_cause) out += fmt::format(",{}", n);
    out += fmt::format(",{},{},{}", cell.lost, cell.waits, cell.memo_mismatches);
    for (const CellQuantiles& q : kCellQuantiles) {
      for (const lethe::QuantilePart& part : lethe::kQuantileParts) {
        std::visit([&](auto member) { out += fmt::format(",{}", (cell.*q.member).*member); }, part.member);
      }
    }
    out += fmt::format(",{},{}\n", cell.failed_seeds, cell.error_seeds);
  }
  return out;
}

std::string cells_table(const std::vector<SweepAxis>& axes, const std::vector<CellSummary>& cells) {
  std::vector<std::string> header{"cell"};
  for (const auto& axis : axes) header.push_back(axis.key);
  for (const char* h : {"seeds", "trials", "dups", "rate", "95% interval", "lost", "waits", "recovery p50/p99",
                        "failed", "by cause"}) {
    header.emplace_back(h);
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& cell : cells) {
    if (cell.seeds == 0 && cell.error_seeds == 0) continue;
    std::vector<std::string> row{fmt::format("{}", cell.index)};
    for (const auto& axis : axes) {
      std::string value;
      for (const auto& [key, v] : cell.params) {
        if (key == axis.key) value = v;
      }
      row.push_back(value);
    }
    row.push_back(fmt::format("{}", cell.seeds));
    row.push_back(fmt::format("{}", cell.trials));
    row.push_back(fmt::format("{}", cell.duplicates));
    row.push_back(percent(cell.duplicate_rate));
    row.push_back(fmt::format("[{}, {}]", percent(cell.duplicate_interval.low), percent(cell.duplicate_interval.high)));
    row.push_back(fmt::format("{}", cell.lost));
    row.push_back(fmt::format("{}", cell.waits));
    row.push_back(cell.recovery_latency.count == 0 ? "-"
                                                   : fmt::format("{} / {}", format_time(cell.recovery_latency.p50),
                                                                 format_time(cell.recovery_latency.p99)));
    row.push_back(cell.error_seeds == 0 ? fmt::format("{}", cell.failed_seeds)
                                        : fmt::format("{} (+{} errors)", cell.failed_seeds, cell.error_seeds));
    std::string causes;
    for (std::size_t i = 0; i < lethe::kCauseCount; ++i) {
      if (cell.by_cause[i] == 0) continue;
      causes += fmt::format("{}{} {}", causes.empty() ? "" : ", ", lethe::kCauseNames[i], cell.by_cause[i]);
    }
    row.push_back(causes.empty() ? "-" : causes);
    rows.push_back(std::move(row));
  }
  std::vector<std::size_t> widths(header.size(), 0);
  for (std::size_t c = 0; c < header.size(); ++c) widths[c] = header[c].size();
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  auto line = [&widths](const std::vector<std::string>& cells_of_row) {
    std::string out;
    for (std::size_t c = 0; c < cells_of_row.size(); ++c) {
      const bool last = c + 1 == cells_of_row.size();
      out += last ? cells_of_row[c] : fmt::format("{:<{}}  ", cells_of_row[c], widths[c]);
    }
    return out + "\n";
  };
  std::string out = line(header);
  for (const auto& row : rows) out += line(row);
  if (rows.empty()) out += "(no cell has a result)\n";
  return out;
}

}  // namespace reports
