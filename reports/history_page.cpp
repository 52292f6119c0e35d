#include "reports/history_page.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "reports/report.hpp"
#include "sim/time.hpp"

namespace reports {

namespace {

constexpr double kLeft = 110;    // lane labels
constexpr double kWidth = 1100;  // the drawing's width
constexpr double kLane = 26;     // lane height
constexpr std::size_t kMostKeyLanes = 60;

std::string time_text(bool timed, std::int64_t at) { return timed ? sim::format_human(at) : fmt::format("line {}", at); }

// Where each operation is drawn: its lane (a process, or a key on a page of several keys) and its row in the lane.
// Operations of one lane that overlap in time go to different rows, so no bar hides another.
struct Layout {
  std::vector<std::string> lanes;                    // lane names, top to bottom
  std::vector<std::size_t> rows;                     // rows of each lane
  std::vector<std::optional<std::size_t>> lane_of;   // per op; nullopt: not drawn (a key past kMostKeyLanes)
  std::vector<std::size_t> row_of;                   // per op
  std::size_t keys_left_out = 0;
};

Layout layout(const HistoryPage& page, bool by_key, const std::function<double(const HistoryPageOp&)>& end_x,
              const std::function<double(const HistoryPageOp&)>& start_x) {
  Layout l;
  std::map<std::string, std::size_t> lane_index;
  std::vector<std::vector<double>> row_ends;  // per lane, per row: where its last bar ends
  std::set<std::string> left_out;
  for (const HistoryPageOp& op : page.ops) {
    const std::string name = by_key ? op.key : fmt::format("process {}", op.process);
    auto found = lane_index.find(name);
    if (found == lane_index.end() && (!by_key || l.lanes.size() < kMostKeyLanes)) {
      found = lane_index.emplace(name, l.lanes.size()).first;
      l.lanes.push_back(name);
      row_ends.emplace_back();
    }
    if (found == lane_index.end()) {
      left_out.insert(name);
      l.lane_of.emplace_back();
      l.row_of.push_back(0);
      continue;
    }
    auto& ends = row_ends[found->second];
    std::size_t row = 0;
    while (row < ends.size() && ends[row] > start_x(op) - 2) ++row;
    if (row == ends.size()) ends.push_back(0);
    ends[row] = end_x(op);
    l.lane_of.emplace_back(found->second);
    l.row_of.push_back(row);
  }
  for (const auto& ends : row_ends) l.rows.push_back(std::max<std::size_t>(ends.size(), 1));
  l.keys_left_out = left_out.size();
  return l;
}

// The time span of the whole page, or of each key on a page drawn by key: each key's lane has its own scale, so the
// few operations on one key are wide enough to read.
using Span = std::pair<std::int64_t, std::int64_t>;
std::map<std::string, Span> spans(const HistoryPage& page, bool by_key) {
  std::map<std::string, Span> out;
  for (const HistoryPageOp& op : page.ops) {
    auto [it, inserted] = out.try_emplace(by_key ? op.key : std::string(), Span{INT64_MAX, INT64_MIN});
    it->second.first = std::min(it->second.first, op.invoked_at);
    it->second.second = std::max(it->second.second, op.answered ? op.returned_at : op.invoked_at);
  }
  return out;
}

std::string lanes_svg(const HistoryPage& page, bool by_key) {
  if (page.ops.empty()) return "";
  const std::map<std::string, Span> span_of = spans(page, by_key);
  const auto [first, last] = by_key ? Span{0, 0} : span_of.at(std::string());  // the page's one axis
  const double right = kLeft + kWidth;
  auto x = [&](const HistoryPageOp& op, std::int64_t at) {
    const Span s = span_of.at(by_key ? op.key : std::string());
    return kLeft + kWidth * 0.97 * static_cast<double>(at - s.first) /
                       static_cast<double>(std::max<std::int64_t>(s.second - s.first, 1));
  };
  const auto start_x = [&](const HistoryPageOp& op) { return x(op, op.invoked_at); };
  const auto end_x = [&](const HistoryPageOp& op) {
    return op.answered ? std::max(x(op, op.returned_at), start_x(op) + 2) : right;
  };
  const Layout l = layout(page, by_key, end_x, start_x);
  std::vector<double> lane_top;
  double y_next = 20;
  for (std::size_t lane = 0; lane < l.lanes.size(); ++lane) {
    if (by_key && lane > 0) y_next += 14;  // room for the lane's own time labels
    lane_top.push_back(y_next);
    y_next += static_cast<double>(l.rows[lane]) * kLane;
  }
  std::string svg = fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" role="img">)",
                                right + 10, y_next + 10);
  for (std::size_t lane = 0; lane < l.lanes.size(); ++lane) {
    const double bottom = lane_top[lane] + static_cast<double>(l.rows[lane]) * kLane;
    svg += fmt::format(R"(<text class="lane" x="4" y="{:.1f}">{}</text>)", lane_top[lane] + 15, html_escape(l.lanes[lane]));
    if (by_key) {  // the lane's own scale: its first and last instants at its ends
      const Span s = span_of.at(l.lanes[lane]);
      svg += fmt::format(R"(<text class="axis" x="{}" y="{:.1f}">{}</text><text class="axis" x="{}" y="{:.1f}" text-anchor="end">{}</text>)",
                         kLeft, lane_top[lane] - 1, html_escape(time_text(page.timed, s.first)), right,
                         lane_top[lane] - 1, html_escape(time_text(page.timed, s.second)));
    }
    svg += fmt::format(R"(<line class="lane" x1="{}" x2="{}" y1="{:.1f}" y2="{:.1f}"/>)", kLeft, right, bottom - 2,
                       bottom - 2);
  }
  if (!by_key) {
    svg += fmt::format(R"(<text class="axis" x="{}" y="12">{}</text><text class="axis" x="{}" y="12" text-anchor="end">{}</text>)",
                       kLeft, html_escape(time_text(page.timed, first)), right, html_escape(time_text(page.timed, last)));
  }
  for (std::size_t index = 0; index < page.ops.size(); ++index) {
    const HistoryPageOp& op = page.ops[index];
    if (!l.lane_of[index]) continue;
    const double y = lane_top[*l.lane_of[index]] + static_cast<double>(l.row_of[index]) * kLane + 3;
    const double from = start_x(op);
    const double to = end_x(op);
    const std::string kind = op.failing ? "op window failing" : op.in_window ? "op window" : "op";
    svg += fmt::format(R"(<g class="{}" id="op-{}"><rect class="{}{}" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{}"><title>{}</title></rect>)",
                       kind, index, kind, op.answered ? "" : " unknown", from, y, to - from, kLane - 8,
                       html_escape(op.text + "  " + op.when));
    // A label only where it fits whole: a cut label reads as another operation.
    const std::string label = by_key ? fmt::format("p{} {}", op.process, op.text.substr(0, op.text.find('('))) : op.text;
    if (static_cast<double>(label.size()) * 6.7 + 6 < to - from) {
      svg += fmt::format(R"(<text class="label" x="{:.1f}" y="{:.1f}">{}</text>)", from + 3, y + 13, html_escape(label));
    }
    svg += "</g>";
  }
  if (l.keys_left_out > 0) {
    svg += fmt::format(R"(<text class="axis" x="{}" y="{:.1f}">{} more keys not drawn</text>)", kLeft, y_next + 4,
                       l.keys_left_out);
  }
  return svg + "</svg>";
}

constexpr std::size_t kShownSteps = 1000;

std::string prefix_table(const HistoryPage& page) {
  std::string html = "<table class=\"prefix\"><tr><th>step</th><th>process</th><th>operation</th><th>when</th>"
                     "<th>state after</th></tr>";
  html += fmt::format("<tr><td>0</td><td></td><td>(initial)</td><td></td><td><code>{}</code></td></tr>",
                      html_escape(page.initial_state));
  // A long prefix shows its last kShownSteps steps, the ones that lead to the response nothing explains.
  const std::size_t first = page.prefix.size() > kShownSteps ? page.prefix.size() - kShownSteps : 0;
  if (first > 0) {
    html += fmt::format("<tr><td colspan=\"5\">steps 1 to {} not shown: the last {} of {} follow</td></tr>", first,
                        kShownSteps, page.prefix.size());
  }
  for (std::size_t step = first; step < page.prefix.size(); ++step) {
    const HistoryPageOp& op = page.ops.at(page.prefix[step].op);
    html += fmt::format("<tr><td>{}</td><td>{}</td><td><a href=\"#op-{}\">{}</a></td><td>{}</td><td><code>{}</code></td></tr>",
                        step + 1, op.process, page.prefix[step].op, html_escape(op.text), html_escape(op.when),
                        html_escape(page.prefix[step].state));
  }
  return html + "</table>";
}

// Every operation, one lane per process, and the verdict: no window, nothing failing.
std::string linearizable_body(const HistoryPage& page) {
  std::string html = fmt::format("<h1>{}</h1>\n<p class=\"verdict ok\">{}</p>\n", html_escape(page.file),
                                 html_escape(page.summary));
  std::set<std::string> keys;
  for (const HistoryPageOp& op : page.ops) keys.insert(op.key);
  const bool by_key = keys.size() > 1;
  html += fmt::format("<p>Linearizable: every partition has an order of its operations, each taking effect between "
                      "its invocation and its response, that the model accepts. Keys {}; all {} operations, {}, each a "
                      "bar from its invocation to its response (dashed: outcome unknown; hover a bar for the "
                      "operation, its reply and its times).</p>\n",
                      html_escape(page.key), page.ops.size(),
                      by_key ? fmt::format("one lane per key (the first {} keys), its operations labelled with the "
                                           "process (p5) and the kind where the bar has room",
                                           std::min(keys.size(), kMostKeyLanes))
                             : std::string("one lane per process"));
  html += "<p class=\"legend\"><span style=\"background:#c9d6e8\">operation</span></p>\n";
  html += lanes_svg(page, by_key);
  html += "\n<h2>Explanation</h2>\n<pre>" + html_escape(page.explanation) + "</pre>\n</body></html>\n";
  return html;
}

}  // namespace

std::string history_page_html(const HistoryPage& page) {
  std::string html = R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>)" + html_escape(page.file) + R"( - lethe check</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 20px; color: #222; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 28px; }
.verdict { color: #b00020; font-weight: 600; }
.verdict.ok { color: #1b7a2e; }
svg text.lane, svg text.axis { font: 12px monospace; fill: #444; }
svg line.lane { stroke: #ddd; }
svg rect.op { fill: #c9d6e8; stroke: #7f97b8; }
svg rect.op.window { fill: #ffd98a; stroke: #c08a00; }
svg rect.op.failing { fill: #e53935; stroke: #8e0000; }
svg rect.unknown { fill-opacity: 0.45; stroke-dasharray: 4 2; }
svg text.label { font: 11px monospace; fill: #111; pointer-events: none; }
table.prefix { border-collapse: collapse; font: 12px monospace; }
table.prefix td, table.prefix th { border: 1px solid #ddd; padding: 2px 8px; text-align: left; }
pre { background: #f6f6f6; padding: 10px; overflow-x: auto; }
.legend span { display: inline-block; padding: 0 8px; margin-right: 8px; border: 1px solid #999; }
</style></head><body>
)";
  if (page.linearizable) return html + linearizable_body(page);
  html += fmt::format("<h1>{}</h1>\n<p class=\"verdict\">{}</p>\n", html_escape(page.file), html_escape(page.summary));
  html += fmt::format("<p>Failing partition: key {} ({} operations). One lane per process; each operation is a bar "
                      "from its invocation to its response (dashed: outcome unknown).</p>\n",
                      html_escape(page.key), page.ops.size());
  html += "<p class=\"legend\"><span style=\"background:#c9d6e8\">operation</span><span style=\"background:#ffd98a\">"
          "in the shortest failing window</span><span style=\"background:#e53935;color:#fff\">the response nothing "
          "explains</span></p>\n";
  html += lanes_svg(page, false);
  if (!page.recorded_answer.empty()) {
    html += fmt::format("\n<h2>The response nothing explains</h2>\n<p>The longest linearizable prefix found ({} of "
                        "the window's operations, below) leaves the state <code>{}</code>. From it the model answers "
                        "the red operation</p>\n<pre>{}</pre>\n<p>but the history says</p>\n<pre>{}</pre>\n<p>and no "
                        "other order of the window's operations, with or without the ones whose outcome is unknown, "
                        "reaches a state that gives that answer: the check tried them all.</p>\n",
                        page.prefix.size(), html_escape(page.state_before_failing), html_escape(page.model_answer),
                        html_escape(page.recorded_answer));
  }
  html += fmt::format("\n<h2>Longest linearizable prefix found ({} steps)</h2>\n", page.prefix.size());
  if (!page.prefix_note.empty()) html += "<p class=\"note\">" + html_escape(page.prefix_note) + "</p>\n";
  html += prefix_table(page);
  html += "\n<h2>Explanation</h2>\n<pre>" + html_escape(page.explanation) + "</pre>\n</body></html>\n";
  return html;
}

}  // namespace reports
