#include "reports/incident.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>

#include "reports/report.hpp"
#include "reports/summary.hpp"

namespace reports {

namespace {

constexpr double kIncidentLeft = 110;       // the lane names' gutter
constexpr double kPlot = 1000;      // the time axis' width
constexpr double kRight = 130;      // room for the labels of the last marks
constexpr double kLaneHeight = 70;
constexpr double kTop = 40;         // room for the axis
constexpr double kBreak = 34;       // the width of a cut-out idle stretch
constexpr double kCharWidth = 6.2;  // 11px sans-serif, roughly
constexpr std::size_t kListedPerCause = 200;  // past it, the command that prints the others
constexpr std::size_t kMostEventsDrawn = 400;  // per message, in the drawing and in each table; keeps a page small
constexpr std::size_t kMostWhys = 5;             // duplicates of one message explained in full on the page

// Width of a label in px: capitals are wider than the 11px sans-serif average.
double label_width(std::string_view text) {
  double width = 0;
  for (const char c : text) width += (c >= 'A' && c <= 'Z') ? 8.0 : kCharWidth;
  return width;
}

// The events a message's drawing shows: kMostEventsDrawn consecutive ones in time order, from the first, or,
// when the first duplicate effect (the reason the page exists) comes later, from a quarter of the window before
// it. The others are counted, and the page says how to see them.
std::pair<std::size_t, std::size_t> drawn_window(const Story& story) {
  const auto& events = story.events;
  const auto first_duplicate = static_cast<std::size_t>(
      std::find_if(events.begin(), events.end(), [](const StoryEvent& ev) { return ev.duplicate; }) - events.begin());
  std::size_t from = 0;
  if (first_duplicate < events.size() && first_duplicate >= kMostEventsDrawn * 3 / 4) {
    from = first_duplicate - kMostEventsDrawn / 4;
  }
  return {from, std::min(events.size(), from + kMostEventsDrawn)};
}

std::vector<const StoryEvent*> drawn_events(const Story& story) {
  const auto [from, to] = drawn_window(story);
  std::vector<const StoryEvent*> out;
  for (std::size_t i = from; i < to; ++i) out.push_back(&story.events[i]);
  return out;
}

// Virtual time -> x, with idle stretches cut out: events closer than `gap` form a segment drawn to scale; each
// longer silence between segments is a fixed-width break labelled with its length.
class TimeAxis {
 public:
  explicit TimeAxis(std::vector<sim::Time> times) {
    std::sort(times.begin(), times.end());
    times.erase(std::unique(times.begin(), times.end()), times.end());
    if (times.empty()) times.push_back(0);
    const sim::Time span = std::max<sim::Time>(times.back() - times.front(), 1);
    const sim::Time gap = std::max<sim::Time>(span / 12, 1);
    segments_.push_back({times.front(), times.front(), 0, 0});
    for (std::size_t i = 1; i < times.size(); ++i) {
      if (times[i] - times[i - 1] > gap) segments_.push_back({times[i], times[i], 0, 0});
      segments_.back().end = times[i];
    }
    // Each segment's share of the width follows its length, with a floor so a burst of events stays readable.
    const double floor = static_cast<double>(span) / 8;
    double total = 0;
    for (const auto& s : segments_) total += std::max(static_cast<double>(s.end - s.start), floor);
    const double usable = kPlot - kBreak * static_cast<double>(segments_.size() - 1);
    double x = kIncidentLeft;
    for (auto& s : segments_) {
      s.x = x;
      s.width = usable * std::max(static_cast<double>(s.end - s.start), floor) / total;
      x += s.width + kBreak;
    }
  }

  double x(sim::Time t) const {
    for (std::size_t i = 0; i < segments_.size(); ++i) {
      const Segment& s = segments_[i];
      if (t < s.start) return i == 0 ? s.x : segments_[i - 1].x + segments_[i - 1].width + kBreak / 2;
      if (t <= s.end) {
        const double length = static_cast<double>(std::max<sim::Time>(s.end - s.start, 1));
        // A segment of one instant is drawn at its middle.
        return s.end == s.start ? s.x + s.width / 2 : s.x + s.width * static_cast<double>(t - s.start) / length;
      }
    }
    return segments_.back().x + segments_.back().width;
  }

  // The axis: ticks at round times in each segment, and each break with the silence it hides.
  std::string svg(double bottom) const {
    std::string out;
    for (std::size_t i = 0; i < segments_.size(); ++i) {
      const Segment& s = segments_[i];
      out += fmt::format("<line class=\"axis\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>\n", s.x, kTop - 8,
                         s.x + s.width, kTop - 8);
      const std::vector<sim::Time> at_ticks = ticks(s);
      const std::vector<std::string> labels = tick_labels(at_ticks);
      for (std::size_t k = 0; k < at_ticks.size(); ++k) {
        out += fmt::format("<line class=\"tick\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\"/>"
                           "<text class=\"tick-label\" x=\"{0:.1f}\" y=\"{3:.1f}\">{4}</text>\n",
                           x(at_ticks[k]), kTop - 8, bottom, kTop - 13, labels[k]);
      }
      // Each stretch between cuts has its own scale: say how long it is.
      out += fmt::format("<text class=\"segment-label\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", s.x + s.width / 2,
                         bottom + 27, s.end > s.start ? "this stretch: " + format_time(s.end - s.start) : "one instant");
      if (i + 1 < segments_.size()) {
        const double bx = s.x + s.width + kBreak / 2;
        out += fmt::format("<text class=\"break\" x=\"{:.1f}\" y=\"{:.1f}\">//</text>"
                           "<text class=\"break-label\" x=\"{:.1f}\" y=\"{:.1f}\">+{}</text>\n",
                           bx, kTop - 4, bx, bottom + 14, format_time(segments_[i + 1].start - s.end));
      }
    }
    return out;
  }

 private:
  struct Segment {
    sim::Time start, end;
    double x, width;
  };

  // The ticks' labels: their times, or, where two would read the same (ticks 10us apart at 17.29s), the first
  // tick's time and the others as offsets from it ("+10us").
  static std::vector<std::string> tick_labels(const std::vector<sim::Time>& at) {
    std::vector<std::string> labels;
    for (const sim::Time t : at) labels.push_back(format_time(t));
    const bool repeats = std::adjacent_find(labels.begin(), labels.end()) != labels.end();
    if (!repeats) return labels;
    for (std::size_t k = 1; k < at.size(); ++k) labels[k] = "+" + format_time(at[k] - at.front());
    return labels;
  }

  // Round times inside a segment, about one per 120px.
  static std::vector<sim::Time> ticks(const Segment& s) {
    if (s.end == s.start) return {s.start};
    const double wanted = std::max(1.0, s.width / 120);
    const double raw = static_cast<double>(s.end - s.start) / wanted;
    const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
    double step = magnitude;
    for (const double m : {1.0, 2.0, 5.0, 10.0}) {
      if (m * magnitude >= raw) {
        step = m * magnitude;
        break;
      }
    }
    const auto step_ns = static_cast<sim::Time>(std::max(step, 1.0));
    std::vector<sim::Time> out;
    for (sim::Time t = (s.start / step_ns + 1) * step_ns; t < s.end; t += step_ns) out.push_back(t);
    if (out.empty()) out.push_back(s.start);
    return out;
  }

  std::vector<Segment> segments_;
};

// Where labels go on a lane: three rows under the bar, each taken up to an x; a label that fits nowhere is left
// to the mark's tooltip.
class LabelRows {
 public:
  std::optional<int> place(std::uint32_t lane, double x, double width) {
    auto& rows = taken_[lane];
    for (int row = 0; row < 3; ++row) {
      if (rows[row] <= x) {
        rows[row] = x + width + 6;
        return row;
      }
    }
    return std::nullopt;
  }

 private:
  std::map<std::uint32_t, std::array<double, 3>> taken_;
};

std::string e(std::string_view text) { return html_escape(text); }

const char* role_class(const StoryEvent& ev) {
  if (ev.duplicate) return "duplicate";
  switch (ev.role) {
    case StoryRole::Source: return "source";
    case StoryRole::Attempt: return "attempt";
    case StoryRole::Decision: return ev.count > 1 ? "poll" : "decision";
    case StoryRole::Effect: return "effect";
    case StoryRole::Call: return "call";
    case StoryRole::Store: return "store";
    case StoryRole::Completion: return "completion";
    case StoryRole::Ack: return "ack";
    case StoryRole::Fault: return "fault";
    case StoryRole::Outcome: return "outcome";
  }
  return "source";
}

bool labelled(const StoryEvent& ev) {
  switch (ev.role) {
    case StoryRole::Call:
      return ev.short_text == "retry" || ev.short_text == "gave up";
    case StoryRole::Outcome:
      return false;
    case StoryRole::Store:
      return ev.count > 1;
    default:
      return true;
  }
}

std::string when(const StoryEvent& ev) {
  return ev.end > ev.time ? format_time(ev.time) + " to " + format_time(ev.end) : format_time(ev.time);
}

// The axis through the instants and ends of the events drawn.
TimeAxis axis_of(const std::vector<const StoryEvent*>& drawn) {
  std::vector<sim::Time> times;
  for (const auto* ev : drawn) {
    times.push_back(ev->time);
    times.push_back(ev->end);
  }
  return TimeAxis(times);
}

std::string story_svg(const Story& story, const std::vector<std::string>& names) {
  const std::vector<const StoryEvent*> drawn = drawn_events(story);
  const TimeAxis axis = axis_of(drawn);
  std::map<std::uint32_t, double> lane_y;  // a lane's bar centre
  for (std::size_t i = 0; i < story.lanes.size(); ++i) {
    lane_y[story.lanes[i]] = kTop + kLaneHeight * static_cast<double>(i) + 22;
  }
  const double bottom = kTop + kLaneHeight * static_cast<double>(story.lanes.size());
  const double width = kIncidentLeft + kPlot + kRight;
  std::string out = fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"timeline\" width=\"{:.0f}\" "
                                "height=\"{:.0f}\" viewBox=\"0 0 {:.0f} {:.0f}\" role=\"img\" aria-label=\"timeline "
                                "of message {}\">\n",
                                width, bottom + 34, width, bottom + 34, story.message);
  for (std::size_t i = 0; i < story.lanes.size(); ++i) {
    const double top = kTop + kLaneHeight * static_cast<double>(i);
    out += fmt::format("<rect class=\"lane{}\" x=\"0\" y=\"{:.1f}\" width=\"{:.0f}\" height=\"{:.0f}\"/>"
                       "<text class=\"lane-name\" x=\"8\" y=\"{:.1f}\">{}</text>\n",
                       i % 2, top, width, kLaneHeight, top + 26, e(node_label(names, story.lanes[i])));
  }
  out += axis.svg(bottom);
  LabelRows rows;
  // Spans first (attempts, polls, store calls), then marks on top of them.
  for (const int pass : {0, 1}) {
    for (const auto* drawn_event : drawn) {
      const StoryEvent& ev = *drawn_event;
      const bool span = ev.role == StoryRole::Attempt || ev.end > ev.time;
      if ((pass == 0) != span) continue;
      const double y = lane_y[ev.node];
      const double x0 = axis.x(ev.time);
      const double x1 = std::max(axis.x(ev.end), x0 + 3);
      const std::string title = fmt::format("<title>{} {}: {}</title>", when(ev), e(node_label(names, ev.node)), e(ev.text));
      const char* cls = role_class(ev);
      std::string id;
      if (ev.duplicate) id = fmt::format(" id=\"{}\"", duplicate_mark_id(story.message, ev.attempt));
      if (span) {
        const double height = ev.role == StoryRole::Attempt ? 20 : 12;
        const double top = ev.role == StoryRole::Attempt ? y - 10 : y - 6;
        out += fmt::format("<g class=\"{}\"{}><rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.0f}\" "
                           "rx=\"3\"/>{}</g>\n",
                           cls, id, x0, top, x1 - x0, height, title);
      } else if (ev.duplicate) {
        out += fmt::format("<g class=\"{}\"{}><circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"9\"/>{}</g>\n", cls, id, x0, y,
                           title);
      } else if (ev.role == StoryRole::Fault && ev.short_text == "restart") {
        out += fmt::format("<g class=\"restart\"><path d=\"M{:.1f},{:.1f}l6,10h-12z\"/>{}</g>\n", x0, y - 5, title);
      } else if (ev.role == StoryRole::Fault) {
        out += fmt::format("<g class=\"{}\"><path d=\"M{:.1f},{:.1f}l10,10m0,-10l-10,10\"/>{}</g>\n", cls, x0 - 5,
                           y - 5, title);
      } else {
        const double r = ev.role == StoryRole::Effect ? 6 : ev.role == StoryRole::Source ? 3 : 4.5;
        out += fmt::format("<g class=\"{}\"><circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{:.1f}\"/>{}</g>\n", cls, x0, y, r,
                           title);
      }
      if (!labelled(ev)) continue;
      const std::string label = ev.duplicate ? fmt::format("DUPLICATE ({})", ev.cause) : ev.short_text;
      // A label that would run off the right edge ends at its mark instead of starting there.
      const double wide = label_width(label);
      const bool flip = x0 + wide > width - 4;
      const double start = flip ? x0 - wide : x0;
      if (const auto row = rows.place(ev.node, start, wide)) {
        out += fmt::format("<text class=\"label {}\" x=\"{:.1f}\" y=\"{:.1f}\"{}>{}</text>\n", cls, x0,
                           y + 24 + 12 * *row, flip ? " text-anchor=\"end\"" : "", e(label));
      }
    }
  }
  out += "</svg>\n";
  return out;
}

std::string anchor(std::uint64_t message) { return fmt::format("message-{}", message); }

std::string story_section(const Story& story, const IncidentInput& in) {
  std::string out = fmt::format("<section id=\"{}\">\n<h2>Message {}</h2>\n", anchor(story.message), story.message);
  std::size_t whys = 0;
  for (const auto& ev : story.events) {
    if (!ev.duplicate || ++whys > kMostWhys) continue;
    out += fmt::format("<div class=\"why\" id=\"why-{}-{}\"><b>Duplicate execution by attempt {} at {} ({})</b>"
                       "<br>{}</div>\n",
                       story.message, ev.attempt, ev.attempt, format_time(ev.time), e(ev.cause), e(ev.because));
  }
  if (whys == 0) out += "<p>No duplicate execution of this message.</p>\n";
  if (whys > kMostWhys) {
    out += fmt::format("<p class=\"note\">{} more duplicate executions of this message: <code>{} --message {} "
                       "--explain</code> explains each.</p>\n", whys - kMostWhys, e(in.replay_command), story.message);
  }
  std::string memo;
  std::size_t memos = 0;
  for (const auto& x : in.result.memo_explanations) {
    if (x.id != story.message || ++memos > kMostWhys) continue;
    memo += fmt::format("<li>at {}: {}</li>\n", format_time(x.at), e(x.because));
  }
  if (memos > kMostWhys) memo += fmt::format("<li>and {} more</li>\n", memos - kMostWhys);
  if (!memo.empty()) out += "<p>Callers handed another value than the first execution's:</p>\n<ul class=\"memo\">\n" + memo + "</ul>\n";
  out += "<div class=\"scroll\">" + story_svg(story, in.node_names) + "</div>\n";
  out += "<p class=\"legend\"><span class=\"k attempt\"></span>attempt (delivery to end) "
         "<span class=\"k poll\"></span>polls, folded "
         "<span class=\"k store\"></span>store call (invocation to response) "
         "<span class=\"k effect\"></span>effect <span class=\"k duplicate\"></span>duplicate effect "
         "<span class=\"k completion\"></span>completion <span class=\"k ack\"></span>acknowledgment "
         "<span class=\"k fault\"></span>crash, restart, pause, lost packet, timeout. "
         "Hover a mark for its details; <code>//</code> cuts out an idle stretch, its length below.</p>\n";
  if (const auto [from, to] = drawn_window(story); to - from < story.events.size()) {
    out += fmt::format("<p class=\"note\">Drawn and listed here: events {} to {} of this message's {}, from {} to {}. "
                       "<code>{} --message {}</code> prints them all.</p>\n", from + 1, to, story.events.size(),
                       format_time(story.events[from].time), format_time(story.events[to - 1].time),
                       e(in.replay_command), story.message);
  }
  if (story.omitted_faults > 0) {
    out += fmt::format("<p class=\"note\">{} other crashes, restarts or pauses of these nodes in this span happened "
                       "while they were not working on this message (not drawn).</p>\n",
                       story.omitted_faults);
  }
  out += "<details><summary>Store operations on its keys</summary>\n<table>\n<tr><th>invoked</th><th>answered"
         "</th><th>node</th><th>operation</th></tr>\n";
  for (const auto* drawn_event : drawn_events(story)) {
    const StoryEvent& ev = *drawn_event;
    if (ev.role != StoryRole::Store && ev.role != StoryRole::Completion) continue;
    out += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n", format_time(ev.time),
                       format_time(ev.end), e(node_label(in.node_names, ev.node)), e(ev.text));
  }
  out += "</table></details>\n<details><summary>Every event, in time order</summary>\n<table>\n"
         "<tr><th>time</th><th>node</th><th>what happened</th></tr>\n";
  for (const auto* drawn_event : drawn_events(story)) {
    const StoryEvent& ev = *drawn_event;
    out += fmt::format("<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td></tr>\n", role_class(ev), when(ev),
                       e(node_label(in.node_names, ev.node)), e(ev.text));
  }
  out += "</table></details>\n</section>\n";
  return out;
}

std::string duplicate_list(const IncidentInput& in) {
  const lethe::RunResult& r = in.result;
  if (r.duplicate_effects == 0) {
    return "<p>No duplicate effects in this run. Draw any message with <code>--message ID</code>.</p>\n";
  }
  std::vector<std::uint64_t> drawn;
  for (const auto& s : in.stories) drawn.push_back(s.message);
  std::string out = fmt::format("<h2>Duplicates by cause ({} in all)</h2>\n", r.duplicate_effects);
  for (std::size_t c = 0; c < lethe::kCauseCount; ++c) {
    if (r.duplicates[c] == 0) continue;
    const auto cause = static_cast<lethe::Cause>(c);
    out += fmt::format("<h3>{} ({}): {}</h3>\n<ul class=\"duplicates\">\n", lethe::to_string(cause), r.duplicates[c],
                       e(lethe::kCauses[c].description));
    std::size_t listed = 0;
    for (const auto& x : r.explanations) {
      if (x.cause != cause) continue;
      if (++listed > kListedPerCause) continue;
      const bool here = std::find(drawn.begin(), drawn.end(), x.id) != drawn.end();
      if (here) {
        out += fmt::format("<li><a href=\"#{}\">message {}</a> at {}: {}</li>\n", anchor(x.id), x.id, format_time(x.at),
                           e(x.because));
      } else if (in.from_events) {
        out += fmt::format("<li>message {} at {}: {}</li>\n", x.id, format_time(x.at), e(x.because));
      } else {
        out += fmt::format("<li>message {} at {}: {} Drawn by <code>{} --message {} --html message-{}.html</code></li>\n",
                           x.id, format_time(x.at), e(x.because), e(in.replay_command), x.id, x.id);
      }
    }
    out += "</ul>\n";
    if (listed > kListedPerCause) {
      out += in.from_events
                 ? fmt::format("<p class=\"note\">{} more: <code>{}</code> prints them</p>\n",
                               listed - kListedPerCause, e(in.replay_command))
                 : fmt::format("<p class=\"note\">{} more: <code>{} --explain --cause {}</code></p>\n",
                               listed - kListedPerCause, e(in.replay_command), lethe::to_string(cause));
    }
  }
  if (r.explanations.size() < r.duplicate_effects) {
    out += fmt::format("<p class=\"note\">{} of {} duplicates listed.</p>\n", r.explanations.size(),
                       r.duplicate_effects);
  }
  return out;
}

constexpr const char* kIncidentStyle = R"(
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px; color: #1d1d1f; max-width: 1400px; }
@media (max-width: 600px) { body { margin: 10px; } }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 18px; margin: 28px 0 8px; } h3 { font-size: 15px; margin: 14px 0 4px; }
code { background: #f2f2f4; padding: 1px 4px; border-radius: 3px; font-size: 12px; }
.scroll { overflow-x: auto; border: 1px solid #ddd; border-radius: 6px; }
.why { border-left: 5px solid #d62728; background: #fdecec; padding: 8px 12px; margin: 8px 0; }
.note { color: #666; } .legend { color: #444; font-size: 12px; }
table { border-collapse: collapse; font-size: 12px; margin: 6px 0; } td, th { border-bottom: 1px solid #eee; padding: 2px 8px; text-align: left; vertical-align: top; }
tr.duplicate td { background: #fdecec; font-weight: bold; } tr.fault td { color: #b3261e; }
ul.duplicates { margin: 4px 0; padding-left: 22px; } ul.duplicates li { margin: 3px 0; }
.k { display: inline-block; width: 14px; height: 10px; margin: 0 4px 0 10px; border-radius: 2px; vertical-align: middle; }
.k.attempt { background: #cfe0f7; border: 1px solid #3b6fb6; } .k.poll { background: #9ec5ee; }
.k.store { background: #d6d6d6; } .k.effect { background: #2ca02c; border-radius: 7px; }
.k.duplicate { background: #d62728; border-radius: 7px; } .k.completion { background: #fff; border: 2px solid #2ca02c; }
.k.ack { background: #8e44ad; border-radius: 7px; } .k.fault { background: #d62728; width: 8px; }
svg.timeline { font: 11px sans-serif; display: block; width: 100%; min-width: 960px; height: auto; }
svg .lane0 { fill: #fafafa; } svg .lane1 { fill: #f1f3f6; } svg .lane-name { font-weight: bold; fill: #333; }
svg .axis { stroke: #888; } svg .tick { stroke: #e0e0e0; } svg .tick-label { fill: #666; text-anchor: middle; font-size: 10px; }
svg .segment-label { fill: #999; text-anchor: middle; font-size: 10px; font-style: italic; }
svg .break { fill: #888; text-anchor: middle; font-weight: bold; } svg .break-label { fill: #888; text-anchor: middle; font-size: 10px; }
svg .attempt rect { fill: #cfe0f7; stroke: #3b6fb6; } svg .poll rect { fill: #9ec5ee; stroke: #5b8fc7; }
svg .store rect { fill: #d6d6d6; stroke: #999; } svg .completion rect { fill: #fff; stroke: #2ca02c; stroke-width: 2; }
svg .effect circle { fill: #2ca02c; } svg .duplicate circle { fill: #d62728; stroke: #7a0000; stroke-width: 2; }
svg .duplicate rect { fill: #d62728; }
svg .decision circle { fill: #1f5fbf; } svg .ack circle { fill: #8e44ad; } svg .call circle { fill: #999; }
svg .source circle { fill: #555; } svg .outcome circle { fill: #fff; stroke: #3b6fb6; stroke-width: 2; }
svg .fault path { stroke: #d62728; stroke-width: 2.5; } svg .fault rect { fill: #f4b183; }
svg .restart path { fill: #2e8b57; } svg .label { fill: #333; } svg .label.source { fill: #666; } svg .label.duplicate { fill: #b3261e; font-weight: bold; } svg .label.fault { fill: #b3261e; }
)";

}  // namespace

std::string duplicate_mark_id(std::uint64_t message, std::uint64_t attempt) {
  return fmt::format("duplicate-{}-{}", message, attempt);
}

std::string incident_html(const IncidentInput& in) {
  const lethe::RunResult& r = in.result;
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += fmt::format("<title>lethe incident: {} seed {}</title>\n<style>{}</style>\n</head>\n<body>\n", e(r.scenario),
                     r.seed, kIncidentStyle);
  out += fmt::format("<h1>What happened in {} seed {}</h1>\n", e(r.scenario), r.seed);
  std::string causes;
  for (std::size_t c = 0; c < lethe::kCauseCount; ++c) {
    if (r.duplicates[c] > 0) causes += fmt::format(", {} {}", lethe::to_string(static_cast<lethe::Cause>(c)), r.duplicates[c]);
  }
  const std::string source = in.from_events ? fmt::format("{} from the first delivery to the last event. Drawn from "
                                                           "an event log by",
                                                           format_time(r.sim_time))
                                             : fmt::format("{} of virtual time. Trace {:016x}. Reproduce:",
                                                           format_time(r.sim_time), r.trace_hash);
  out += fmt::format("<p>{} messages, {} effects, <b>{} duplicate effects</b>{}; {} lost, {} memo mismatches; "
                     "{} <code>{}</code></p>\n",
                     r.messages, r.effects, r.duplicate_effects, causes.empty() ? "" : " (" + causes.substr(2) + ")",
                     r.lost_messages, r.memo_mismatches, source, e(in.replay_command));
  for (const auto& story : in.stories) out += story_section(story, in);
  out += duplicate_list(in);
  out += "</body>\n</html>\n";
  return out;
}

}  // namespace reports
