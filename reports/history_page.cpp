#include "reports/history_page.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>

#include "reports/report.hpp"
#include "sim/time.hpp"

namespace reports {

namespace {

constexpr double kLeft = 110;    // lane labels
constexpr double kWidth = 1100;  // the drawing's width
constexpr double kLane = 26;     // lane height

std::string time_text(bool timed, std::int64_t at) { return timed ? sim::format_human(at) : fmt::format("line {}", at); }

std::string lanes_svg(const HistoryPage& page) {
  std::map<std::uint32_t, std::size_t> lane;  // process -> lane, in process order
  std::int64_t first = INT64_MAX;
  std::int64_t last = INT64_MIN;
  for (const HistoryPageOp& op : page.ops) {
    lane.emplace(op.process, 0);
    first = std::min(first, op.invoked_at);
    last = std::max(last, op.answered ? op.returned_at : op.invoked_at);
  }
  std::size_t number = 0;
  for (auto& [process, index] : lane) index = number++;
  if (page.ops.empty()) return "";
  const double span = static_cast<double>(std::max<std::int64_t>(last - first, 1));
  const double right = kLeft + kWidth;
  auto x = [&](std::int64_t at) { return kLeft + kWidth * 0.97 * static_cast<double>(at - first) / span; };
  const double height = static_cast<double>(lane.size()) * kLane + 30;
  std::string svg = fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" role="img">)",
                                right + 10, height);
  for (const auto& [process, index] : lane) {
    const double y = 20 + static_cast<double>(index) * kLane;
    svg += fmt::format(R"(<text class="lane" x="4" y="{:.1f}">process {}</text>)", y + 15, process);
    svg += fmt::format(R"(<line class="lane" x1="{}" x2="{}" y1="{:.1f}" y2="{:.1f}"/>)", kLeft, right, y + kLane - 2,
                       y + kLane - 2);
  }
  svg += fmt::format(R"(<text class="axis" x="{}" y="12">{}</text><text class="axis" x="{}" y="12" text-anchor="end">{}</text>)",
                     kLeft, html_escape(time_text(page.timed, first)), right, html_escape(time_text(page.timed, last)));
  for (std::size_t index = 0; index < page.ops.size(); ++index) {
    const HistoryPageOp& op = page.ops[index];
    const double y = 20 + static_cast<double>(lane.at(op.process)) * kLane + 3;
    const double from = x(op.invoked_at);
    const double to = op.answered ? std::max(x(op.returned_at), from + 2) : right;
    const std::string kind = op.failing ? "op window failing" : op.in_window ? "op window" : "op";
    svg += fmt::format(R"(<g class="{}" id="op-{}"><rect class="{}{}" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{}"><title>{}</title></rect>)",
                       kind, index, kind, op.answered ? "" : " unknown", from, y, to - from, kLane - 8,
                       html_escape(op.text + "  " + op.when));
    if (to - from > 60) {
      svg += fmt::format(R"(<text class="label" x="{:.1f}" y="{:.1f}">{}</text>)", from + 3, y + 13,
                         html_escape(op.text.substr(0, static_cast<std::size_t>((to - from) / 6.5))));
    }
    svg += "</g>";
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
  html += fmt::format("<p>Linearizable: every partition has an order of its operations, each taking effect between "
                      "its invocation and its response, that the model accepts. Keys {}; all {} operations, one lane "
                      "per process, each a bar from its invocation to its response (dashed: outcome unknown).</p>\n",
                      html_escape(page.key), page.ops.size());
  html += "<p class=\"legend\"><span style=\"background:#c9d6e8\">operation</span></p>\n";
  html += lanes_svg(page);
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
  html += lanes_svg(page);
  html += fmt::format("\n<h2>Longest linearizable prefix found ({} steps)</h2>\n", page.prefix.size());
  if (!page.prefix_note.empty()) html += "<p class=\"note\">" + html_escape(page.prefix_note) + "</p>\n";
  html += prefix_table(page);
  html += "\n<h2>Explanation</h2>\n<pre>" + html_escape(page.explanation) + "</pre>\n</body></html>\n";
  return html;
}

}  // namespace reports
