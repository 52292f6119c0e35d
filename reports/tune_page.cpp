#include "reports/tune_page.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "reports/report.hpp"
#include "sim/time.hpp"

namespace reports {

std::string survival_svg(const SurvivalPlot& plot) {
  constexpr double kWidth = 860, kHeight = 400, kLeft = 70, kRight = 250, kTop = 40, kBottom = 50;
  const double plot_w = kWidth - kLeft - kRight;
  const double plot_h = kHeight - kTop - kBottom;
  std::int64_t t_last = 1;
  for (const auto& [t, p] : plot.points) t_last = std::max(t_last, t);
  // Time tics on a 1-2-5 step, so each reads as a round duration.
  const double raw_step = static_cast<double>(t_last) / 5.0;
  const double decade = std::pow(10.0, std::floor(std::log10(std::max(raw_step, 1.0))));
  double step_ns = decade;
  for (const double m : {1.0, 2.0, 5.0, 10.0}) {
    step_ns = m * decade;
    if (step_ns >= raw_step) break;
  }
  const auto step = static_cast<std::int64_t>(step_ns);
  const int tics = static_cast<int>((t_last + step - 1) / step);
  const std::int64_t t_max = step * tics;
  // The y axis: decades from below the target (or the smallest rate drawn) up to 1.
  double lowest = plot.target > 0 ? plot.target / 10.0 : 1e-6;
  for (const auto& [t, p] : plot.points) {
    if (p > 0) lowest = std::min(lowest, p);
  }
  const int decades = std::clamp(static_cast<int>(std::ceil(-std::log10(lowest))), 1, 12);
  const auto x_of = [&](std::int64_t t) { return kLeft + plot_w * static_cast<double>(t) / static_cast<double>(t_max); };
  const auto y_of = [&](double p) {
    const double clamped = std::max(p, std::pow(10.0, -decades));
    return kTop + plot_h * (-std::log10(clamped)) / decades;
  };
  std::string out = fmt::format(
      "<svg class=\"survival\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" role=\"img\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n<title>{2}</title>\n"
      "<rect x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\" fill=\"#ffffff\"/>\n"
      "<text x=\"{3}\" y=\"20\" font-size=\"13\">{2}</text>\n",
      kWidth, kHeight, html_escape(plot.title), kLeft);
  // Grid and axes: one line per decade, five time tics.
  for (int d = 0; d <= decades; ++d) {
    const double y = kTop + plot_h * d / decades;
    out += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#e3e3e3\"/>"
                       "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
                       kLeft, y, kLeft + plot_w, kLeft - 6, y + 4, d == 0 ? std::string("1") : fmt::format("1e-{}", d));
  }
  for (int i = 0; i <= tics; ++i) {
    const auto t = step * i;
    const double x = x_of(t);
    out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#e3e3e3\"/>"
                       "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
                       x, kTop, kTop + plot_h, kTop + plot_h + 16, html_escape(sim::format_duration(t)));
  }
  out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333333\"/>\n", kLeft,
                     kTop, plot_w, plot_h);
  out += fmt::format("<text x=\"{0:.1f}\" y=\"{1}\" text-anchor=\"middle\">{2} t</text>\n<text transform=\"translate(16 "
                     "{3:.1f}) rotate(-90)\" text-anchor=\"middle\">P({2} &gt; t) = takeover rate at max_processing_time "
                     "t</text>\n", kLeft + plot_w / 2, kHeight - 10, html_escape(plot.variable), kTop + plot_h / 2);
  // The curve: a step function through the points (empirical samples are steps; a smooth law has many points).
  std::string path;
  for (std::size_t i = 0; i < plot.points.size(); ++i) {
    const auto& [t, p] = plot.points[i];
    if (p <= 0) break;  // beyond the largest sample: nothing to draw on a log axis
    path += fmt::format("{}{:.1f},{:.1f} ", i == 0 ? "M" : "L", x_of(t), y_of(p));
  }
  out += fmt::format("<path class=\"curve\" d=\"{}\" fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\"/>\n", path);
  // Target rate and recommended max_processing_time.
  const double target_y = y_of(plot.target);
  const double right = kLeft + plot_w;
  out += fmt::format("<line class=\"target\" x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#c0392b\" "
                     "stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>"
                     "<text x=\"{3}\" y=\"{4:.1f}\" fill=\"#c0392b\">target rate {5:.3g}</text>\n",
                     kLeft, target_y, right, right + 8, target_y + 4, plot.target);
  const double q_x = x_of(plot.target_quantile);
  out += fmt::format("<circle class=\"target-quantile\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"#c0392b\"/>"
                     "<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"#c0392b\">the {:.6g} quantile: {}</text>\n",
                     q_x, target_y, right + 8, target_y + 18, 1.0 - plot.target, html_escape(sim::format_human(plot.target_quantile)));
  double label_y = kTop + 12;
  const auto vertical = [&](std::int64_t t, const std::string& css, const std::string& color, const std::string& label) {
    const double x = x_of(t);
    out += fmt::format("<line class=\"{0}\" x1=\"{1:.1f}\" y1=\"{2}\" x2=\"{1:.1f}\" y2=\"{3}\" stroke=\"{4}\" "
                       "stroke-width=\"2\"/><text x=\"{5}\" y=\"{6:.1f}\" fill=\"{4}\">{7}</text>\n",
                       css, x, kTop, kTop + plot_h, color, right + 8, label_y, html_escape(label));
    label_y += 16;
  };
  if (plot.recommended) {
    vertical(*plot.recommended, "recommended", "#2e7d32",
             "recommended max_processing_time " + sim::format_duration(*plot.recommended));
  }
  if (plot.patience_limit && *plot.patience_limit <= t_max) {
    vertical(*plot.patience_limit, "patience", "#8e44ad", "patience limit " + sim::format_duration(*plot.patience_limit));
  }
  return out + "</svg>\n";
}

namespace {

std::string candidates_html(const std::vector<TuneCandidateRow>& rows, const std::string& age) {
  std::string out = "<table class=\"tune text-last\">\n<thead><tr><th>max_processing_time</th><th>takeover duplicate rate "
                    "P(" + html_escape(age) + " &gt; mpt)</th><th>recovery after a crash &asymp; mpt + poll</th><th>mean crash delay per "
                    "message</th><th>meets target</th><th>within patience</th><th>note</th></tr></thead>\n<tbody>\n";
  for (const auto& c : rows) {
    out += fmt::format("<tr{}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                       c.meets_target && c.within_patience ? "" : " class=\"failed\"", html_escape(c.mpt),
                       html_escape(c.takeover_rate), html_escape(c.recovery), html_escape(c.crash_delay),
                       c.meets_target ? "yes" : "no", c.within_patience ? "yes" : "no", html_escape(c.label));
  }
  return out + "</tbody>\n</table>\n";
}

std::string inputs_html(const std::vector<std::pair<std::string, std::string>>& rows) {
  std::string out = "<table class=\"tune inputs\">\n<tbody>\n";
  for (const auto& [name, value] : rows) {
    out += "<tr><th>" + html_escape(name) + "</th><td>" + html_escape(value) + "</td></tr>\n";
  }
  return out + "</tbody>\n</table>\n";
}

std::string measured_html(const std::vector<TuneMeasuredRow>& rows, const std::string& age) {
  std::string out = "<table class=\"tune\">\n<thead><tr><th>max_processing_time</th><th>analytic P(" +
                    html_escape(age) + " &gt; mpt)</th>"
                    "<th>measured duplicate rate (every cause)</th><th>95% interval</th><th>of which takeovers of live "
                    "work</th><th>analytic recovery &asymp; mpt + poll</th>"
                    "<th>measured recovery p50 / p99 (samples)</th></tr></thead>\n<tbody>\n";
  for (const auto& r : rows) {
    out += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>[{}, {}]</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                       html_escape(r.mpt), html_escape(r.analytic_rate), html_escape(r.measured_rate),
                       html_escape(r.interval_low), html_escape(r.interval_high), html_escape(r.takeovers),
                       html_escape(r.analytic_recovery), html_escape(r.measured_recovery));
  }
  return out + "</tbody>\n</table>\n";
}

std::string causes_html(const std::vector<TuneCauseRow>& rows) {
  std::string out = "<table class=\"tune text-last\">\n<thead><tr><th>cause</th><th>duplicates</th><th>expected rate per "
                    "message</th><th>95% interval</th><th>at the given crash rate</th><th>what happened</th></tr>"
                    "</thead>\n<tbody>\n";
  for (const auto& r : rows) {
    out += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>[{}, {}]</td><td>{}</td><td>{}</td></tr>\n",
                       html_escape(r.cause), html_escape(r.duplicates), html_escape(r.rate),
                       html_escape(r.interval_low), html_escape(r.interval_high),
                       r.at_given_rate.empty() ? "as measured" : html_escape(r.at_given_rate),
                       html_escape(r.description));
  }
  return out + "</tbody>\n</table>\n";
}

std::string verdict_html(const TuneVerdictLine& side) {
  return fmt::format("<p class=\"verdict-side {}\">{}</p>\n", side.confirmed ? "confirmed" : "not-confirmed",
                     html_escape(side.text));
}

}  // namespace

std::string tune_intro_html(const TunePage& page) {
  std::string html = "<h2>Recommendation</h2>\n<pre class=\"verdict\">" + html_escape(page.recommendation) + "</pre>\n";
  html += "<h2>Verdict</h2>\n";
  for (const auto& side : page.verdicts) html += verdict_html(side);
  html += "<h2>Inputs</h2>\n" + inputs_html(page.inputs);
  html += "<h2>Processing time</h2>\n<figure>\n" + survival_svg(page.survival) +
          "<figcaption>The measured or given processing time as P(" + html_escape(page.age) +
          " &gt; t): a max_processing_time of t "
          "takes over live work at this rate. Red: the target rate and the quantile that meets it; "
          "green: the recommended max_processing_time (rounded up); purple: the patience limit."
          "</figcaption>\n</figure>\n";
  for (const auto& note : page.notes) html += "<p class=\"note\">" + html_escape(note) + "</p>\n";
  html += "<h2>Trade-off</h2>\n<p>Duplicates from taking over live work (the record looks dead while "
          "its owner is only slow) against the time a crashed message waits before anyone retries "
          "it.</p>\n" + candidates_html(page.candidates, page.age);
  if (page.measured) {
    html += "<h2>Confirmation in the simulator</h2>\n<p>" + html_escape(page.world) +
            " At 0.5x, 1x and 2x the recommendation (or at the closest options). The analytic rate is an upper "
            "bound of the takeovers: a waiting copy notices a stale record only at its next re-read.</p>\n" +
            measured_html(*page.measured, page.age);
  }
  if (!page.causes.empty()) {
    html += "<h2>Expected duplicates per cause</h2>\n<p>" + html_escape(page.causes_caption) + "</p>\n" +
            causes_html(page.causes);
  }
  return html;
}

}  // namespace reports
