#include "reports/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <optional>
#include <regex>
#include <sstream>
#include <system_error>

#include "protocol/decision.hpp"
#include "protocol/env.hpp"
#include "reports/junit.hpp"
#include "reports/output_file.hpp"
#include "reports/summary.hpp"
#include "sim/time.hpp"

namespace reports {

namespace fs = std::filesystem;

// ---------------------------------------------------------------- small text helpers

std::string html_escape(std::string_view text) { return xml_escape(text); }  // XML's entities are HTML5's too

std::string shell_quote(const std::string& text) {
  if (!text.empty() &&
      text.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,%+@") ==
          std::string::npos) {
    return text;
  }
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::optional<double> numeric_value(std::string_view text) {
  std::string error;
  if (auto d = sim::parse_duration(text, error, /*allow_negative=*/true)) {
    // A bare "0" parses as a duration too; it is the same number either way.
    return static_cast<double>(*d) / 1e9;
  }
  double value = 0.0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec == std::errc() && ptr == end && std::isfinite(value)) return value;
  return std::nullopt;
}

std::string inline_svg(std::string_view svg_document, std::string_view id_prefix) {
  std::string svg(svg_document);
  const auto start = svg.find("<svg");
  if (start != std::string::npos) svg.erase(0, start);
  // Comments (Graphviz writes its version and the graph's title in them).
  for (auto open = svg.find("<!--"); open != std::string::npos; open = svg.find("<!--", open)) {
    const auto close = svg.find("-->", open);
    if (close == std::string::npos) {
      svg.erase(open);
      break;
    }
    svg.erase(open, close + 3 - open);
  }
  static const std::regex kNamespace(R"re(\s+xmlns(:[A-Za-z]+)?\s*=\s*("[^"]*"|'[^']*'))re");
  svg = std::regex_replace(svg, kNamespace, "");
  const std::string prefix(id_prefix);
  static const std::regex kId(R"re((\s)id=(["']))re");
  svg = std::regex_replace(svg, kId, "$1id=$2" + prefix + "-");
  static const std::regex kHref(R"re(((?:xlink:)?href=["'])#)re");
  svg = std::regex_replace(svg, kHref, "$1#" + prefix + "-");
  static const std::regex kUrl(R"re(url\(#)re");
  svg = std::regex_replace(svg, kUrl, "url(#" + prefix + "-");
  while (!svg.empty() && (svg.back() == '\n' || svg.back() == ' ')) svg.pop_back();
  return svg;
}

namespace {

std::string gnuplot_string(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

// A string column of a gnuplot data file (double quotes may not appear inside one).
std::string data_string(std::string_view text) {
  std::string out = "\"";
  for (char c : text) out += (c == '"' ? '\'' : c);
  return out + "\"";
}

std::string number(double v) {
  if (!std::isfinite(v)) return "NaN";
  return fmt::format("{:.10g}", v);
}

std::string short_key(std::string_view key) {
  const auto dot = key.rfind('.');
  return std::string(dot == std::string_view::npos ? key : key.substr(dot + 1));
}


bool tool_available(const std::string& name) {
  return std::system(("command -v " + name + " >/dev/null 2>&1").c_str()) == 0;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}


std::string first_lines(const std::string& text, std::size_t lines) {
  std::string out;
  std::size_t count = 0;
  for (char c : text) {
    if (c == '\n' && ++count >= lines) break;
    out += c;
  }
  return out;
}

const std::string* param(const CellSummary& cell, const std::string& key) {
  for (const auto& [k, v] : cell.params) {
    if (k == key) return &v;
  }
  return nullptr;
}

std::string param_or_empty(const CellSummary& cell, const std::string& key) {
  const auto* v = param(cell, key);
  return v == nullptr ? std::string() : *v;
}

// ---------------------------------------------------------------- axes and groups

struct Axis {
  std::string key;
  std::vector<std::string> values;  // distinct, in display order
  std::vector<double> numbers;      // when numeric: the value of each entry of `values`
  bool numeric = false;

  std::size_t position(const std::string& value) const {
    return static_cast<std::size_t>(std::find(values.begin(), values.end(), value) - values.begin());
  }
  double coordinate(const std::string& value) const {
    const std::size_t i = position(value);
    return numeric ? numbers[i] : static_cast<double>(i);
  }
  bool log_scale() const {
    if (!numeric || numbers.size() < 3) return false;
    const auto [lo, hi] = std::minmax_element(numbers.begin(), numbers.end());
    return *lo > 0 && *hi / *lo >= 20.0;
  }
};

Axis make_axis(const std::vector<CellSummary>& cells, const std::string& key) {
  Axis axis;
  axis.key = key;
  for (const auto& cell : cells) {
    const std::string v = param_or_empty(cell, key);
    if (std::find(axis.values.begin(), axis.values.end(), v) == axis.values.end()) axis.values.push_back(v);
  }
  axis.numeric = !axis.values.empty();
  for (const auto& v : axis.values) {
    const auto n = numeric_value(v);
    if (!n) {
      axis.numeric = false;
      break;
    }
    axis.numbers.push_back(*n);
  }
  if (axis.numeric) {
    std::vector<std::size_t> order(axis.values.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return axis.numbers[a] < axis.numbers[b]; });
    Axis sorted;
    sorted.key = key;
    sorted.numeric = true;
    for (std::size_t i : order) {
      sorted.values.push_back(axis.values[i]);
      sorted.numbers.push_back(axis.numbers[i]);
    }
    return sorted;
  } else {
    axis.numbers.clear();
  }
  return axis;
}

// gnuplot tics: the values as written, at their coordinates.
std::string tics(const Axis& axis) {
  std::string out = "(";
  for (std::size_t i = 0; i < axis.values.size(); ++i) {
    if (i > 0) out += ", ";
    out += gnuplot_string(axis.values[i].empty() ? "-" : axis.values[i]) + " " +
           number(axis.numeric ? axis.numbers[i] : static_cast<double>(i));
  }
  return out + ")";
}

// Cells grouped by the values of every varied key except `fixed`: label ("ttl=7d, consumers=4") -> cells.
struct Group {
  std::string label;
  std::vector<const CellSummary*> cells;
};

std::vector<Group> group_cells(const std::vector<CellSummary>& cells, const std::vector<std::string>& varied,
                               const std::vector<std::string>& fixed) {
  std::vector<Group> groups;
  for (const auto& cell : cells) {
    std::string label;
    for (const auto& key : varied) {
      if (std::find(fixed.begin(), fixed.end(), key) != fixed.end()) continue;
      if (!label.empty()) label += ", ";
      label += short_key(key) + "=" + param_or_empty(cell, key);
    }
    auto it = std::find_if(groups.begin(), groups.end(), [&](const Group& g) { return g.label == label; });
    if (it == groups.end()) {
      groups.push_back(Group{label, {}});
      it = groups.end() - 1;
    }
    it->cells.push_back(&cell);
  }
  return groups;
}

std::string cell_label(const CellSummary& cell) {
  if (cell.params.empty()) return "the scenario";
  std::string label;
  for (const auto& [k, v] : cell.params) {
    if (!label.empty()) label += " ";
    label += short_key(k) + "=" + v;
  }
  return label;
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr std::size_t kMaxHeatmaps = 6;
constexpr std::size_t kMaxSeries = 8;
constexpr std::size_t kMaxBars = 60;
// One colour per cause, in lethe::Cause order (max_wait_exceeded the third, completion_lost the sixth).
constexpr const char* kCauseColors[] = {"#7f7f7f", "#d62728", "#ff9896", "#ff7f0e", "#9467bd", "#e377c2",
                                        "#1f77b4", "#aec7e8", "#2ca02c", "#8c564b", "#17becf", "#c49c94",
                                        "#bcbd22"};
static_assert(std::size(kCauseColors) == lethe::kCauseCount, "kCauseColors needs exactly one colour per lethe::Cause");
// Series that coincide stay apart by their dash and point types, not by colour alone (a curve drawn exactly
// under another would otherwise hide it).
constexpr std::array<int, kMaxSeries> kSeriesDashes = {1, 2, 3, 4, 5, 1, 2, 3};
constexpr std::array<int, kMaxSeries> kSeriesPoints = {7, 5, 9, 13, 11, 4, 6, 8};
constexpr std::array<const char*, kMaxSeries> kSeriesColors = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                                               "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

std::string preamble(const std::string& name, int width, int height) {
  return fmt::format(
      "# Written by lethe (reports/report.cpp). Re-render with: gnuplot {0}.gp\n"
      "set terminal svg size {1},{2} dynamic noenhanced font \"sans,11\" background \"#ffffff\"\n"
      "set output \"{0}.svg\"\n"
      "set datafile missing \"NaN\"\n"
      "set grid lc rgb \"#dddddd\"\n",
      name, width, height);
}

// ---------------------------------------------------------------- figures

struct Figure {
  std::string name;      // file stem under DIR/report/
  std::string heading;   // shown above the figure
  std::string caption;   // HTML, shown below
  std::string script;    // gnuplot script, or DOT source for the decision table
  std::string data;      // the .dat file ("" for none)
  std::string svg;       // the inlined SVG once rendered
  std::string note;      // HTML shown instead of the SVG when it could not be rendered
  int width = 0;         // the SVG's natural width in px (0: the page's width); it is never drawn wider
};

// The words under a heatmap: what a square is, the targets when there are any, the log scale, and (on the last
// heatmap drawn, `groups` > 0) how many were left out.
std::string heatmap_caption(const ReportInput& in, bool log_scale, std::size_t groups) {
  std::string caption = "Each square is one cell: duplicate effects divided by the (message, processor) pairs owed "
                        "an execution, over every seed of the cell. The full numbers and intervals are in the cells table.";
  if (!in.targets.empty()) {
    std::string targets;
    for (const auto& t : in.targets) targets += (targets.empty() ? "" : ", ") + html_escape(t);  // caption is HTML
    caption += " Each square also says whether the cell meets every target (" + targets +
               "): pass, FAIL, or undecided when a rate's 95% interval contains its limit (targets.json).";
  }
  if (log_scale) {
    caption += " The colour scale is logarithmic (the bar on the right gives the values); a cell without a "
               "duplicate has the bottom colour.";
  }
  if (groups > kMaxHeatmaps) {
    caption += fmt::format(" Only the first {} of {} heatmaps are drawn; the table has every cell.", kMaxHeatmaps,
                           groups);
  }
  return caption;
}


// The colour bar's labels on a log scale: 1, 2 and 5 times each power of ten within [bottom, highest], and the two
// ends when fewer than three of those fall inside (a range within one decade would show one label, or none).
// Curves that coincide (a key that changes nothing) would hide the earlier series' points under the later ones:
// earlier series get larger points, so each shows as a ring around the next.
std::string series_point_size(std::size_t g, std::size_t count) {
  const double steps = static_cast<double>(std::min<std::size_t>(count - 1 - g, 4));
  return fmt::format("{:.1f}", 1.1 + 0.5 * steps);
}

std::string log_colour_tics(double bottom, double highest) {
  std::vector<double> at;
  for (double decade = std::pow(10.0, std::floor(std::log10(bottom))); decade <= highest; decade *= 10.0) {
    for (const double m : {1.0, 2.0, 5.0}) {
      if (m * decade >= bottom * (1 - 1e-9) && m * decade <= highest * (1 + 1e-9)) at.push_back(m * decade);
    }
  }
  if (at.size() < 3) {
    at.insert(at.begin(), bottom);
    at.push_back(highest);
  }
  std::string out = "set cbtics (";
  for (std::size_t i = 0; i < at.size(); ++i) {
    out += fmt::format("{}\"{:.2g}\" {}", i > 0 ? ", " : "", at[i], number(at[i]));
  }
  return out + ")\n";
}

std::vector<Figure> heatmaps(const ReportInput& in) {
  std::vector<Figure> figures;
  if (in.varied_keys.size() < 2) return figures;
  std::string kx = in.varied_keys[0];
  std::string ky = in.varied_keys[1];
  const auto has = [&](const char* key) {
    return std::find(in.varied_keys.begin(), in.varied_keys.end(), key) != in.varied_keys.end();
  };
  if (has("protocol.max_processing_time") && has("protocol.ttl")) {
    kx = "protocol.max_processing_time";
    ky = "protocol.ttl";
  }
  const Axis ax = make_axis(in.cells, kx);
  const Axis ay = make_axis(in.cells, ky);
  const auto groups = group_cells(in.cells, in.varied_keys, {kx, ky});
  for (std::size_t g = 0; g < groups.size() && g < kMaxHeatmaps; ++g) {
    Figure f;
    f.name = fmt::format("heatmap-{}", g + 1);
    f.heading = groups[g].label.empty() ? "Duplicate rate over " + short_key(kx) + " x " + short_key(ky)
                                        : "Duplicate rate over " + short_key(kx) + " x " + short_key(ky) + " (" +
                                              groups[g].label + ")";
    double highest = 0.0;
    double lowest = std::numeric_limits<double>::infinity();  // the smallest positive rate
    for (const auto* cell : groups[g].cells) {
      if (cell->trials == 0) continue;
      highest = std::max(highest, cell->duplicate_rate);
      if (cell->duplicate_rate > 0) lowest = std::min(lowest, cell->duplicate_rate);
    }
    // A logarithmic colour scale when the rates span a decade or more, so 1e-2 and 3e-5 are not both white;
    // a cell without a duplicate takes the bottom colour (its label says 0).
    const bool log_scale = highest > 0 && highest / lowest >= 10.0;
    const double bottom = log_scale ? lowest / 2.0 : 0.0;
    for (const auto* cell : groups[g].cells) {
      const double rate = cell->trials > 0 ? std::max(cell->duplicate_rate, bottom) : kNaN;
      std::string label = cell->trials > 0 ? fmt::format("{:.3g}", cell->duplicate_rate) : "n/a";
      if (const auto verdict = in.cell_verdicts.find(cell->index); verdict != in.cell_verdicts.end()) {
        label += " " + (verdict->second == "fail" ? std::string("FAIL") : verdict->second);
      }
      f.data += fmt::format("{} {} {} {}\n", ax.position(param_or_empty(*cell, kx)),
                            ay.position(param_or_empty(*cell, ky)), number(rate), data_string(label));
    }
    // Categorical positions on both axes: every cell gets the same area, whatever the spacing of the values.
    Axis cx = ax;
    Axis cy = ay;
    cx.numeric = false;
    cy.numeric = false;
    const int width = static_cast<int>(std::clamp<std::size_t>(180 + 90 * ax.values.size(), 480, 1000));
    const int height = static_cast<int>(std::clamp<std::size_t>(140 + 60 * ay.values.size(), 320, 800));
    f.width = width;
    f.script = preamble(f.name, width, height);
    f.script += fmt::format(
        "set title {}\n"
        "set xlabel {}\nset ylabel {}\n"
        "set xrange [-0.5:{}]\nset yrange [-0.5:{}]\n"
        "set xtics {}\nset ytics {}\nset tics scale 0\nunset grid\n"
        "set palette defined (0 \"#ffffff\", 1 \"#fee8c8\", 2 \"#fdbb84\", 3 \"#e34a33\")\n"
        "{}set cblabel \"duplicate effects per (message, processor)\"\n"
        "unset key\n"
        "plot \"{}.dat\" using 1:2:(0.5):(0.5):3 with boxxyerror fillstyle solid 1.0 noborder lc palette, \\\n"
        "     \"\" using 1:2:4 with labels font \"sans,10\"\n",
        gnuplot_string(f.heading), gnuplot_string(kx), gnuplot_string(ky),
        number(static_cast<double>(ax.values.size()) - 0.5), number(static_cast<double>(ay.values.size()) - 0.5),
        tics(cx), tics(cy),
        log_scale ? fmt::format("set logscale cb\nset cbrange [{}:{}]\n{}", number(bottom), number(highest),
                                log_colour_tics(bottom, highest))
                  : fmt::format("set cbrange [0:{}]\nset format cb \"%.2g\"\n", number(highest > 0 ? highest : 1.0)),
        f.name);
    f.caption = heatmap_caption(in, log_scale, g + 1 == kMaxHeatmaps ? groups.size() : 0);
    figures.push_back(std::move(f));
  }
  return figures;
}

// The x axis of the curves: max_processing_time if varied, else the first numeric varied key, else the first.
std::optional<std::string> curve_key(const ReportInput& in) {
  if (in.varied_keys.empty()) return std::nullopt;
  const auto mpt = std::find(in.varied_keys.begin(), in.varied_keys.end(), "protocol.max_processing_time");
  if (mpt != in.varied_keys.end()) return *mpt;
  for (const auto& key : in.varied_keys) {
    if (make_axis(in.cells, key).numeric) return key;
  }
  return in.varied_keys.front();
}

std::string x_axis_settings(const Axis& axis) {
  // Durations are plotted in seconds; their ticks keep the text the user wrote ("500ms").
  const bool durations = axis.numeric && std::all_of(axis.values.begin(), axis.values.end(), [](const std::string& v) {
    return !v.empty() && std::isalpha(static_cast<unsigned char>(v.back())) != 0;
  });
  std::string s = fmt::format("set xlabel {}\n", gnuplot_string(axis.key + (durations ? " (seconds)" : "")));
  if (axis.log_scale()) s += "set logscale x\n";
  // A margin above the highest value too, so a target or patience line at a round value is not drawn on the top
  // border.
  if (axis.numeric) {
    s += "set offsets graph 0.04, graph 0.04, graph 0.08, 0\n";
  } else {
    s += fmt::format("set xrange [-0.5:{}]\nset offsets 0, 0, graph 0.08, 0\n",
                     number(static_cast<double>(axis.values.size()) - 0.5));
  }
  if (axis.values.size() <= 14) s += fmt::format("set xtics {}\n", tics(axis));
  const std::size_t longest = std::max_element(axis.values.begin(), axis.values.end(),
                                               [](const auto& a, const auto& b) { return a.size() < b.size(); })
                                  ->size();
  if (longest > 6 && axis.values.size() > 4) s += "set xtics rotate by -30\n";
  return s;
}

// The series of the curves: the cells grouped by every varied key but the x axis, each sorted along it.
struct CurveSeries {
  std::string key;
  Axis axis;
  std::vector<Group> groups;
  bool truncated = false;
};

CurveSeries curve_series(const ReportInput& in, const std::string& key) {
  CurveSeries s{key, make_axis(in.cells, key), group_cells(in.cells, in.varied_keys, {key}), false};
  s.truncated = s.groups.size() > kMaxSeries;
  if (s.truncated) s.groups.resize(kMaxSeries);
  for (auto& group : s.groups) {
    std::stable_sort(group.cells.begin(), group.cells.end(), [&](const auto* a, const auto* b) {
      return s.axis.position(param_or_empty(*a, key)) < s.axis.position(param_or_empty(*b, key));
    });
  }
  return s;
}

// The smallest and largest positive value the duplicate-rate curve draws: rates, their intervals' upper ends,
// the analytic rates and the target. (infinity, 0) when there is none.
std::pair<double, double> positive_rate_range(const ReportInput& in) {
  double lowest_positive = std::numeric_limits<double>::infinity();
  double highest = 0.0;
  for (const auto& cell : in.cells) {
    std::vector<double> values;
    if (cell.trials > 0) values = {cell.duplicate_rate, cell.duplicate_interval.high};
    const auto analytic = in.analytic_duplicate_rate.find(cell.index);
    if (analytic != in.analytic_duplicate_rate.end()) values.push_back(analytic->second);
    if (in.target_rate) values.push_back(*in.target_rate);
    for (double v : values) {
      if (v > 0 && std::isfinite(v)) {
        lowest_positive = std::min(lowest_positive, v);
        highest = std::max(highest, v);
      }
    }
  }
  return {lowest_positive, highest};
}

// Duplicate rate with Wilson intervals (and the analytic rate, when given).
Figure duplicate_rate_curve(const ReportInput& in, const CurveSeries& series) {
  const std::string* key = &series.key;
  const Axis& axis = series.axis;
  const auto& groups = series.groups;
  const bool truncated = series.truncated;
  Figure rate;
  rate.name = "curve-duplicate-rate";
  rate.heading = "Duplicate rate against " + *key;
  // A logarithmic y axis when the rates span two decades or more (a tuning sweep: 3e-2 .. 1e-6), so the small
  // ones do not sit on the x axis. A zero rate has no place on it: it is drawn at the bottom edge, a decade below
  // the lowest positive value, so its series keeps its points and its legend entry.
  const auto [lowest_positive, highest] = positive_rate_range(in);
  const bool log_y = highest > 0 && highest / lowest_positive >= 100.0;
  const double floor = lowest_positive / 10.0;
  const auto on_axis = [&](double v) { return log_y && !(v > 0) ? kNaN : v; };
  const auto measured_on_axis = [&](double v) { return log_y && !(v > 0) ? floor : v; };
  bool any_analytic = false;
  bool any_zero = false;
  for (const auto& group : groups) {
    for (const auto* cell : group.cells) {
      const auto analytic = in.analytic_duplicate_rate.find(cell->index);
      const double a = analytic == in.analytic_duplicate_rate.end() ? kNaN : analytic->second;
      any_analytic = any_analytic || std::isfinite(a);
      const bool measured = cell->trials > 0;
      any_zero = any_zero || (measured && cell->duplicate_rate == 0.0);
      const double low = measured ? cell->duplicate_interval.low : kNaN;
      rate.data += fmt::format("{} {} {} {} {}\n", number(axis.coordinate(param_or_empty(*cell, *key))),
                               number(measured ? measured_on_axis(cell->duplicate_rate) : kNaN),
                               number(log_y && low <= 0 ? floor : low),
                               number(measured ? cell->duplicate_interval.high : kNaN), number(on_axis(a)));
    }
    rate.data += "\n\n";
  }
  rate.width = 860;
  rate.script = preamble(rate.name, rate.width, 460);
  rate.script += fmt::format("set title {}\n", gnuplot_string(rate.heading + " (bars: 95% Wilson interval)"));
  rate.script += x_axis_settings(axis);
  rate.script += "set ylabel \"duplicate effects per (message, processor)\"\nset key outside right top\n";
  rate.script += log_y ? fmt::format("set logscale y\nset format y \"%.0e\"\nset yrange [{}:*]\n", number(floor))
                       : "set yrange [0:*]\n";
  std::string plot = "plot ";
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (g > 0) plot += ", \\\n     ";
    plot += fmt::format("\"{}.dat\" index {} using 1:2:3:4 with yerrorlines lw 2 dt {} pt {} ps {} lc rgb \"{}\" "
                        "title {}",
                        rate.name, g, kSeriesDashes[g], kSeriesPoints[g], series_point_size(g, groups.size()),
                        kSeriesColors[g], gnuplot_string(groups[g].label.empty() ? "measured" : groups[g].label));
  }
  if (any_analytic) {
    for (std::size_t g = 0; g < groups.size(); ++g) {
      plot += fmt::format(", \\\n     \"{}.dat\" index {} using 1:5 with lines dt 2 lw 1.5 lc rgb \"{}\" title {}",
                          rate.name, g, kSeriesColors[g],
                          gnuplot_string(in.analytic_label + (groups[g].label.empty() ? "" : " " + groups[g].label)));
    }
  }
  if (in.target_rate) {
    plot += fmt::format(", \\\n     {} with lines dt 4 lw 2 lc rgb \"#c0392b\" title {}", number(*in.target_rate),
                        gnuplot_string(in.target_label));
  }
  rate.script += plot + "\n";
  rate.caption = "Points: duplicate effects / (message, processor) pairs over every seed of the cell; bars: the 95% "
                 "Wilson score interval of that proportion.";
  if (any_analytic) rate.caption += " Dashed: " + html_escape(in.analytic_label) + ".";
  if (in.target_rate) rate.caption += " Red: " + html_escape(in.target_label) + ".";
  if (log_y) {
    rate.caption += " The y axis is logarithmic (the rates and their intervals span two decades or more)";
    rate.caption += any_zero ? fmt::format("; a cell without a duplicate is drawn on the bottom edge ({}), its bar up "
                                           "to the upper end of its interval.", fmt::format("{:.3g}", floor))
                             : ".";
  }
  if (truncated) rate.caption += fmt::format(" Only the first {} series are drawn; the table has every cell.", kMaxSeries);
  return rate;
}

// Recovery latency: p50 with a bar up to p99.
Figure recovery_curve(const ReportInput& in, const CurveSeries& series) {
  const std::string* key = &series.key;
  const Axis& axis = series.axis;
  const auto& groups = series.groups;
  const bool is_mpt = *key == "protocol.max_processing_time";
  Figure recovery;
  recovery.name = "curve-recovery-latency";
  recovery.heading = "Recovery latency against " + *key;
  bool any_recovery = false;
  for (const auto& group : groups) {
    for (const auto* cell : group.cells) {
      const bool has = cell->recovery_latency.count > 0;
      any_recovery = any_recovery || has;
      recovery.data += fmt::format("{} {} {}\n", number(axis.coordinate(param_or_empty(*cell, *key))),
                                   number(has ? static_cast<double>(cell->recovery_latency.p50) / 1e9 : kNaN),
                                   number(has ? static_cast<double>(cell->recovery_latency.p99) / 1e9 : kNaN));
    }
    recovery.data += "\n\n";
  }
  if (!any_recovery) {
    recovery.note = "No crash of an attempt was followed by a completion by another attempt in any cell: there is "
                    "no recovery latency to plot (the scenario has no crashes, or none hit an attempt).";
  } else {
    recovery.width = 860;
    recovery.script = preamble(recovery.name, recovery.width, 460);
    recovery.script += fmt::format("set title {}\n", gnuplot_string(recovery.heading + " (point: p50, bar: up to p99)"));
    recovery.script += x_axis_settings(axis);
    recovery.script += "set ylabel \"crash -> completion by another attempt (s)\"\nset yrange [0:*]\n"
                       "set key outside right top\n";
    std::string rplot = "plot ";
    for (std::size_t g = 0; g < groups.size(); ++g) {
      if (g > 0) rplot += ", \\\n     ";
      rplot += fmt::format("\"{}.dat\" index {} using 1:2:2:3 with yerrorlines lw 2 dt {} pt {} ps {} lc rgb \"{}\" "
                           "title {}",
                           recovery.name, g, kSeriesDashes[g], kSeriesPoints[g], series_point_size(g, groups.size()),
                           kSeriesColors[g],
                           gnuplot_string(groups[g].label.empty() ? "p50 .. p99" : groups[g].label));
    }
    if (is_mpt && axis.numeric) rplot += ", \\\n     x with lines dt 3 lc rgb \"#555555\" title \"y = max_processing_time\"";
    if (in.patience_seconds) {
      rplot += fmt::format(", \\\n     {} with lines dt 4 lw 2 lc rgb \"#c0392b\" title {}", number(*in.patience_seconds),
                           gnuplot_string(in.patience_label));
    }
    recovery.script += rplot + "\n";
    recovery.caption = "From the crash of an attempt to that message's completion by another attempt. Across seeds, "
                       "p50 is the median of the per-seed medians and p99 the median of the per-seed p99s (this bar "
                       "is a spread, not a confidence interval).";
    if (in.patience_seconds) recovery.caption += " Red: " + html_escape(in.patience_label) + ".";
    if (is_mpt) {
      recovery.caption += " A crashed message waits until its record is older than max_processing_time (dotted line) "
                          "before anyone takes it over.";
    }
  }
  return recovery;
}

std::vector<Figure> curves(const ReportInput& in) {
  const auto key = curve_key(in);
  if (!key) return {};
  const CurveSeries series = curve_series(in, *key);
  return {duplicate_rate_curve(in, series), recovery_curve(in, series)};
}

Figure cause_bars(const ReportInput& in) {
  Figure f;
  f.name = "duplicates-by-cause";
  f.heading = "Duplicates by cause";
  if (in.cells.empty()) {
    f.note = "No cells: nothing was simulated.";
    return f;
  }
  if (in.cells.size() > kMaxBars) {
    f.note = fmt::format("{} cells are too many bars to read; the table below has every cell.", in.cells.size());
    return f;
  }
  double highest = 0.0;
  for (const auto& cell : in.cells) {
    f.data += data_string(cell_label(cell));
    double sum = 0.0;
    for (std::size_t c = 0; c < lethe::kCauseCount; ++c) {
      const double r = cell.trials > 0 ? static_cast<double>(cell.by_cause[c]) / static_cast<double>(cell.trials) : 0.0;
      sum += r;
      f.data += " " + number(r);
    }
    highest = std::max(highest, sum);
    f.data += "\n";
  }
  const int width = static_cast<int>(std::clamp<std::size_t>(360 + 40 * in.cells.size(), 700, 1400));
  f.width = width;
  f.script = preamble(f.name, width, 480);
  f.script += fmt::format(
      "set title {}\nset style data histograms\nset style histogram rowstacked\n"
      "set style fill solid 0.9 border rgb \"#444444\"\nset boxwidth 0.7\n"
      "set xtics rotate by -35 scale 0 font \"sans,9\"\nset key outside right top\n"
      "set ylabel \"duplicate effects per (message, processor)\"\nset yrange [0:{}]\n",
      gnuplot_string("Duplicates by cause, per cell"), highest > 0 ? "*" : "1");
  std::string plot = "plot ";
  for (std::size_t c = 0; c < lethe::kCauseCount; ++c) {
    if (c > 0) plot += ", \\\n     ";
    plot += fmt::format("\"{}.dat\" using {}{} title {} lc rgb \"{}\"", f.name, c + 2, c == 0 ? ":xtic(1)" : "",
                        gnuplot_string(std::string(lethe::kCauseNames[c])), kCauseColors[c]);
  }
  f.script += plot + "\n";
  f.caption = "Each bar is one cell, split by the cause the oracle assigned to each duplicate (docs/results.md, "
              "duplicates.&lt;cause&gt;); the stack sums to the cell's duplicate rate.";
  if (highest == 0) f.caption += " No cell had a duplicate.";
  return f;
}

// ---------------------------------------------------------------- the decision table

struct StateExample {
  const char* id;
  const char* label;
  std::optional<lethe::Item> record;
};

std::string decision_word(const lethe::DecisionAndBasis& d) {
  // The article's words: Process / Skip / Wait (lethe::to_string gives the lower-case trace names).
  std::string word = lethe::to_string(d.decision);
  if (!word.empty()) word[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(word[0])));
  if (d.decision == lethe::Decision::Process && d.basis == lethe::Basis::StaleTakeover) word += " (take over)";
  return word;
}

}  // namespace

std::string decision_table_dot() {
  // Representative records, judged at `now` with max_processing_time `mpt` and expired_wins = true (the default).
  constexpr sim::Time now = 1000 * sim::kSecond;
  constexpr sim::Duration mpt = 30 * sim::kSecond;
  constexpr sim::Duration ttl = 7 * sim::kDay;
  lethe::Item recent;
  recent.started_at = now - mpt / 2;
  recent.owner = 1;
  lethe::Item stale = recent;
  stale.started_at = now - mpt;  // the boundary: age == max_processing_time is already stale
  lethe::Item completed = recent;
  completed.completed_at = now - mpt / 4;
  completed.expires_on = now + ttl;
  lethe::Item expired = completed;
  expired.expires_on = now;  // expires_on <= now
  const std::array<StateExample, 5> states = {{
      {"absent", "absent\\n(no record)", std::nullopt},
      {"recent", "in flight, recent\\nage < max_processing_time", recent},
      {"stale", "in flight, stale\\nage >= max_processing_time", stale},
      {"completed", "completed\\ncompletedAt set", completed},
      {"expired", "expired\\nnow >= expiresOn", expired},
  }};
  const auto decide = [&](const StateExample& s) {
    return decision_word(lethe::decide_with_basis(s.record, now, mpt, /*expired_wins=*/true));
  };
  std::string dot;
  dot += "digraph decision_table {\n";
  dot += "  graph [rankdir=TB, fontname=\"Helvetica\", fontsize=12, nodesep=0.6, ranksep=0.9, pad=0.3];\n";
  dot += "  node [shape=box, style=\"rounded,filled\", fillcolor=\"#f4f6fb\", color=\"#4a5a80\", fontname=\"Helvetica\","
         " fontsize=12];\n";
  dot += "  edge [fontname=\"Helvetica\", fontsize=10, color=\"#333333\"];\n";
  for (const auto& s : states) dot += fmt::format("  {} [label=\"{}\"];\n", s.id, s.label);
  // An attempt reads the record (conditional upsert returning the previous value) and acts on the decision.
  const auto attempt_edge = [&](const StateExample& from, const char* to, const char* what) {
    dot += fmt::format("  {} -> {} [label=\"attempt: {}\\n{}\", color=\"#1f4e9e\", fontcolor=\"#1f4e9e\", penwidth=1.6];\n",
                       from.id, to, decide(from), what);
  };
  attempt_edge(states[0], "recent", "never seen: write startedAt\\nrun the effect");
  attempt_edge(states[1], "recent", "somebody is on it:\\nre-read after poll");
  attempt_edge(states[2], "recent", "owner presumed dead: new startedAt (fenced)\\nrun the effect");
  attempt_edge(states[3], "completed", "already done:\\nreturn the memoized result");
  attempt_edge(states[4], "recent", "memory is gone\\n(expired_wins):\\nrun the effect again");
  // What moves a record without a new attempt.
  dot += "  recent -> completed [label=\"owner finishes:\\ncompletedAt, expiresOn = now + ttl\", style=dashed];\n";
  dot += "  recent -> stale [label=\"time passes:\\nage reaches max_processing_time\\n(owner crashed, or is slow)\", "
         "style=dashed];\n";
  dot += "  completed -> expired [label=\"time passes:\\nnow >= expiresOn (ttl)\", style=dashed];\n";
  dot += "  expired -> absent [constraint=false, label=\"store evicts\\n(ttl_eviction)\", style=dashed];\n";
  dot += "}\n";
  return dot;
}

namespace {

// ---------------------------------------------------------------- rendering

// Runs `command` in `dir` with stdout and stderr to LOG; returns "" or what went wrong.
std::string run_tool(const fs::path& dir, const std::string& command, const std::string& log) {
  const std::string full = "cd " + shell_quote(dir.string()) + " && " + command + " >" + shell_quote(log) + " 2>&1";
  const int status = std::system(full.c_str());
  if (status == 0) return "";
  return fmt::format("`{}` failed: {}", command, first_lines(read_text(dir / log), 6));
}

void render(Figure& f, const fs::path& work, const char* tool, bool available, const std::string& package,
            std::vector<std::string>& warnings, std::string& error) {
  if (!f.note.empty()) return;
  const bool dot = std::string(tool) == "dot";
  const std::string source = f.name + (dot ? ".dot" : ".gp");
  if (!f.data.empty()) error = write_file(work / (f.name + ".dat"), f.data);
  if (error.empty()) error = write_file(work / source, f.script);
  if (!error.empty()) return;
  if (!available) {
    f.note = fmt::format("Not drawn: <code>{}</code> is not installed (Debian package <code>{}</code>; scripts/setup "
                         "installs it). The source is in <code>report/{}</code>.",
                         tool, package, html_escape(source));
    return;
  }
  const std::string command = dot ? fmt::format("dot -Tsvg {}.dot -o {}.svg", f.name, f.name)
                                  : fmt::format("gnuplot {}.gp", f.name);
  const std::string failed = run_tool(work, command, f.name + ".log");
  if (!failed.empty()) {
    warnings.push_back(failed);
    f.note = "Not drawn: " + html_escape(failed);
    return;
  }
  fs::remove(work / (f.name + ".log"));
  f.svg = inline_svg(read_text(work / (f.name + ".svg")), f.name);
  if (f.svg.find("<svg") == std::string::npos) {
    warnings.push_back(fmt::format("{} wrote no SVG for {}", tool, f.name));
    f.svg.clear();
    f.note = "Not drawn: the tool wrote no SVG.";
  }
}

std::string figure_html(const Figure& f) {
  std::string out = fmt::format("<figure id=\"{}\">\n<figcaption class=\"title\">{}</figcaption>\n", f.name,
                                html_escape(f.heading));
  if (!f.svg.empty()) {
    out += (f.width > 0 ? fmt::format("<div class=\"plot\" style=\"max-width: {}px\">\n", f.width)
                        : std::string("<div class=\"plot\">\n")) +
           f.svg + "\n</div>\n";
  } else {
    out += "<p class=\"note\">" + f.note + "</p>\n";
  }
  if (!f.caption.empty()) out += "<figcaption>" + f.caption + "</figcaption>\n";
  return out + "</figure>\n";
}

std::string rate_text(const CellSummary& cell) {
  if (cell.trials == 0) return "n/a";
  return fmt::format("{:.3g}", cell.duplicate_rate);
}

std::string interval_text(const CellSummary& cell) {
  if (cell.trials == 0) return "n/a";
  return fmt::format("[{:.3g}, {:.3g}]", cell.duplicate_interval.low, cell.duplicate_interval.high);
}

std::string latency_text(const lethe::Quantiles& q) {
  if (q.count == 0) return "&ndash;";
  return fmt::format("{} / {}", format_time(q.p50), format_time(q.p99));
}

std::string cells_table(const ReportInput& in) {
  std::string out = "<table class=\"cells\">\n<thead><tr><th>#</th>";
  for (const auto& key : in.varied_keys) out += "<th>" + html_escape(key) + "</th>";
  out += "<th>seeds</th><th>pairs</th><th>duplicates</th><th>rate</th><th>95% interval</th>";
  if (!in.analytic_duplicate_rate.empty()) out += "<th>" + html_escape(in.analytic_label) + "</th>";
  out += "<th>lost</th><th>waits</th><th>memo mismatches</th><th>recovery p50 / p99</th><th>wait p50 / p99</th>"
         "<th>failed seeds</th></tr></thead>\n<tbody>\n";
  for (const auto& cell : in.cells) {
    out += fmt::format("<tr{}><td>{}</td>", cell.failed_seeds > 0 ? " class=\"failed\"" : "", cell.index);
    for (const auto& key : in.varied_keys) out += "<td>" + html_escape(param_or_empty(cell, key)) + "</td>";
    out += fmt::format("<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>", cell.seeds, cell.trials,
                       cell.duplicates, rate_text(cell), interval_text(cell));
    if (!in.analytic_duplicate_rate.empty()) {
      const auto a = in.analytic_duplicate_rate.find(cell.index);
      out += "<td>" + (a == in.analytic_duplicate_rate.end() ? std::string("&ndash;") : fmt::format("{:.3g}", a->second)) +
             "</td>";
    }
    out += fmt::format("<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n", cell.lost,
                       cell.waits, cell.memo_mismatches, latency_text(cell.recovery_latency),
                       latency_text(cell.wait_time), cell.failed_seeds);
  }
  return out + "</tbody>\n</table>\n";
}

// The causes seen in some cell, one column each (a header may break after '_'), and a line naming the causes no
// cell saw: eleven columns of zeros would not fit the page's width.
std::string causes_table(const ReportInput& in) {
  std::vector<std::size_t> seen;
  std::string unseen;
  for (std::size_t c = 0; c < lethe::kCauseCount; ++c) {
    const bool any = std::any_of(in.cells.begin(), in.cells.end(), [c](const auto& cell) { return cell.by_cause[c] > 0; });
    if (any) seen.push_back(c);
    else unseen += (unseen.empty() ? "" : ", ") + std::string(lethe::kCauseNames[c]);
  }
  std::string out = "<table class=\"causes\">\n<thead><tr><th>cell</th>";
  for (const auto c : seen) {
    std::string name = html_escape(lethe::kCauseNames[c]);
    for (std::size_t at = name.find('_'); at != std::string::npos; at = name.find('_', at + 6)) name.insert(at + 1, "<wbr>");
    out += "<th>" + name + "</th>";
  }
  out += "<th>total</th></tr></thead>\n<tbody>\n";
  for (const auto& cell : in.cells) {
    out += "<tr><td>" + html_escape(cell_label(cell)) + "</td>";
    for (const auto c : seen) out += fmt::format("<td>{}</td>", cell.by_cause[c]);
    out += fmt::format("<td>{}</td></tr>\n", cell.duplicates);
  }
  out += "</tbody>\n</table>\n";
  if (!unseen.empty()) out += "<p>0 in every cell: " + html_escape(unseen) + ".</p>\n";
  return out;
}

std::string decision_rows_table() {
  return "<table class=\"decision\">\n<thead><tr><th>What the attempt finds</th><th>What it means</th>"
         "<th>Decision</th></tr></thead>\n<tbody>\n"
         "<tr><td>nothing</td><td>never seen</td><td>Process</td></tr>\n"
         "<tr><td>completedAt set</td><td>already done</td><td>Skip (memoized result)</td></tr>\n"
         "<tr><td>no completedAt, age &gt;= max_processing_time</td><td>the previous attempt is presumed dead</td>"
         "<td>Process (take over)</td></tr>\n"
         "<tr><td>no completedAt, age &lt; max_processing_time</td><td>another node is on it</td><td>Wait</td></tr>\n"
         "<tr><td>expiresOn &lt;= now (expired_wins)</td><td>the memory is gone</td><td>Process</td></tr>\n"
         "</tbody>\n</table>\n";
}

constexpr const char* kReportStyle = R"css(
body { font-family: system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 24px auto;
       max-width: 1400px; color: #1d2330; background: #ffffff; line-height: 1.45; padding: 0 16px; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.25em; margin-top: 1.8em; border-bottom: 1px solid #d5d9e2; padding-bottom: 0.2em; }
p.meta { color: #4a5266; margin-top: 0; }
figure { margin: 1em 0 1.6em 0; }
figure svg { max-width: 100%; height: auto; display: block; }
p.verdict-side { font-weight: bold; padding: 0.3em 0.6em; border-left: 4px solid; }
p.verdict-side.confirmed { color: #1b5e20; border-color: #2e7d32; }
p.verdict-side.not-confirmed { color: #8e1c12; border-color: #c0392b; }
table.inputs th { text-align: left; padding-right: 1em; }
figcaption { color: #4a5266; font-size: 0.92em; margin-top: 0.3em; }
figcaption.title { font-weight: 600; color: #1d2330; font-size: 1em; margin-bottom: 0.3em; }
p.note { background: #fff6e0; border: 1px solid #e8c66a; padding: 8px 12px; }
table { border-collapse: collapse; font-size: 0.88em; margin: 0.6em 0 1.2em 0; }
th, td { border: 1px solid #d5d9e2; padding: 3px 8px; text-align: right; }
th { background: #eef1f7; }
td:first-child, th:first-child { text-align: left; }
table.text-last td:last-child { text-align: left; }
tr.failed td { background: #fdecec; }
pre.verdict { white-space: pre-wrap; font-size: 0.95em; }
pre { background: #f6f7fa; border: 1px solid #d5d9e2; padding: 10px 12px; overflow-x: auto; font-size: 0.86em; }
.scroll { overflow-x: auto; }
)css";

}  // namespace

ReportOutcome write_report(const fs::path& dir, const ReportInput& in) {
  ReportOutcome outcome;
  std::error_code ec;
  const fs::path work = dir / "report";
  fs::create_directories(work, ec);
  if (ec) {
    outcome.error = fmt::format("cannot create {}: {}", work.string(), ec.message());
    return outcome;
  }
  const bool have_gnuplot = tool_available("gnuplot");
  const bool have_dot = tool_available("dot");
  if (!have_gnuplot) {
    outcome.warnings.push_back("gnuplot is not installed (Debian package gnuplot-nox): the report has tables but no plots");
  }
  if (!have_dot) {
    outcome.warnings.push_back("Graphviz dot is not installed (Debian package graphviz): the decision table is not drawn");
  }

  auto maps = in.cells.empty() ? std::vector<Figure>{} : heatmaps(in);
  auto lines = in.cells.empty() ? std::vector<Figure>{} : curves(in);
  Figure bars = cause_bars(in);
  Figure decision;
  decision.name = "decision-table";
  decision.heading = "The decision table as a state machine";
  decision.script = decision_table_dot();
  decision.caption = "Solid blue edges: what an attempt decides when it finds the record in that state (computed by "
                     "lethe::decide_with_basis on a representative record). Dashed edges: what moves the record "
                     "without a new attempt. age = now - startedAt on the deciding node's clock.";
  for (auto* list : {&maps, &lines}) {
    for (auto& f : *list) {
      render(f, work, "gnuplot", have_gnuplot, "gnuplot-nox", outcome.warnings, outcome.error);
      if (!outcome.ok()) return outcome;
    }
  }
  render(bars, work, "gnuplot", have_gnuplot, "gnuplot-nox", outcome.warnings, outcome.error);
  if (!outcome.ok()) return outcome;
  render(decision, work, "dot", have_dot, "graphviz", outcome.warnings, outcome.error);
  if (!outcome.ok()) return outcome;

  std::size_t seeds = 0;
  std::uint64_t trials = 0;
  std::uint64_t duplicates = 0;
  for (const auto& cell : in.cells) {
    seeds = std::max(seeds, cell.seeds);
    trials += cell.trials;
    duplicates += cell.duplicates;
  }
  std::string html;
  html += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  html += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  html += "<title>" + html_escape(in.title) + "</title>\n<style>" + kReportStyle + "</style>\n</head>\n<body>\n";
  html += "<h1>" + html_escape(in.title) + "</h1>\n";
  html += fmt::format("<p class=\"meta\">{}{} cells &middot; up to {} seeds per cell &middot; {} (message, processor) "
                      "pairs &middot; {} duplicate effects{}</p>\n",
                      in.scenario_path.empty() ? "" : "scenario <code>" + html_escape(in.scenario_path) + "</code> &middot; ",
                      in.cells.size(), seeds, trials, duplicates,
                      in.varied_keys.empty() ? "" : " &middot; varied: " + html_escape([&] {
                        std::string keys;
                        for (const auto& k : in.varied_keys) keys += (keys.empty() ? "" : ", ") + k;
                        return keys;
                      }()));
  html += in.intro_html;
  if (!maps.empty()) {
    html += "<h2>Duplicate rate: heatmap</h2>\n";
    for (const auto& f : maps) html += figure_html(f);
  }
  if (!lines.empty()) {
    html += "<h2>Curves</h2>\n";
    for (const auto& f : lines) html += figure_html(f);
  }
  html += "<h2>Duplicates by cause</h2>\n" + figure_html(bars) + "<div class=\"scroll\">" + causes_table(in) +
          "</div>\n";
  html += "<h2>Cells</h2>\n<p>Rate: duplicate effects / (message, processor) pairs owed an execution, summed over the "
          "cell's seeds; interval: 95% Wilson score. Latencies: median over seeds of the per-seed p50 / p99. Rows in "
          "red had seeds whose [expect] lines failed.</p>\n<div class=\"scroll\">" + cells_table(in) + "</div>\n";
  html += "<h2>The decision table</h2>\n" + figure_html(decision) + decision_rows_table();
  html += "<h2>Scenario</h2>\n";
  if (!in.scenario_path.empty()) html += "<p><code>" + html_escape(in.scenario_path) + "</code></p>\n";
  html += "<pre class=\"scenario\">" + html_escape(in.scenario_toml) + "</pre>\n";
  html += "<h2>Reproduce</h2>\n<pre class=\"command\">" + html_escape(in.command) + "</pre>\n";
  html += "<p class=\"meta\">Plots: gnuplot (svg terminal) and Graphviz; their sources are in <code>report/</code> "
          "next to this file.</p>\n";
  html += "</body>\n</html>\n";

  outcome.html_path = dir / "report.html";
  outcome.error = write_file(outcome.html_path, html);
  if (!outcome.error.empty()) outcome.html_path.clear();
  return outcome;
}

}  // namespace reports
