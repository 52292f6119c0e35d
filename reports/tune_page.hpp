// reports/tune_page.hpp — the parts of `lethe tune`'s report.html that only tune has: the recommendation, the
// verdicts, the inputs, the processing time as P(T > t), the trade-off table and the confirmation table. The
// runner computes every value and hands it over as text; this file only lays it out (HTML-escaped) and draws the
// survival plot. tune_intro_html() is given to write_report() (reports/report.hpp) as ReportInput::intro_html.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace reports {

// The processing-time distribution as lethe tune draws it: P(T > t) against t on a logarithmic y axis (the
// complementary CDF: the takeover rate a max_processing_time of t gives), with the target rate and the
// recommended max_processing_time marked where they meet. Times in nanoseconds.
struct SurvivalPlot {
  std::vector<std::pair<std::int64_t, double>> points;  // (t, P(T > t)), t ascending
  double target = 0.0;                                  // the target rate (a horizontal line)
  std::int64_t target_quantile = 0;                     // the exact (1 - target) quantile (marked on the curve)
  std::optional<std::int64_t> recommended;              // the recommended max_processing_time (a vertical line)
  std::optional<std::int64_t> patience_limit;           // the largest mpt within the patience (a vertical line)
  std::string title;
  std::string variable = "processing time";             // what t is: "processing time + pauses", ...
};

// A self-contained inline <svg> of `plot` (no script, no external reference). Deterministic.
std::string survival_svg(const SurvivalPlot& plot);

// One row of the trade-off table, every value already in words.
struct TuneCandidateRow {
  std::string mpt;
  std::string takeover_rate;
  std::string recovery;
  std::string crash_delay;
  std::string label;
  bool meets_target = false;
  bool within_patience = false;
};

// One row of the confirmation table (one cell of the confirmation sweep), every value already in words.
struct TuneMeasuredRow {
  std::string mpt;
  std::string analytic_rate;
  std::string measured_rate;
  std::string interval_low;
  std::string interval_high;
  std::string takeovers;
  std::string analytic_recovery;
  std::string measured_recovery;
};

// One row of the expected duplicate rate per cause at the recommendation, every value already in words.
struct TuneCauseRow {
  std::string cause;        // the key under "duplicates" ("takeover_while_alive"), or "every other cause"
  std::string description;  // one line
  std::string duplicates;   // the count
  std::string rate;
  std::string interval_low;
  std::string interval_high;
  // A cause a crash opens, when the confirmation crashed more often than given: the rate and interval scaled to
  // the given crash rate ("" otherwise).
  std::string at_given_rate;
};

struct TuneVerdictLine {
  bool confirmed = false;
  std::string text;
};

struct TunePage {
  std::string recommendation;                                // plain text, several lines
  std::vector<TuneVerdictLine> verdicts;                     // one per side
  std::vector<std::pair<std::string, std::string>> inputs;   // (name, value)
  SurvivalPlot survival;
  std::vector<std::string> notes;
  std::vector<TuneCandidateRow> candidates;
  std::optional<std::vector<TuneMeasuredRow>> measured;      // nullopt: no confirmation ran
  // The confirmation's world in one sentence (the generated scenario, or the user's --scenario file).
  std::string world = "The generated scenario below, every message redelivered while in flight.";
  // The expected duplicate rate per cause at the recommendation (empty: no confirmation), and what it rests on.
  std::vector<TuneCauseRow> causes;
  std::string causes_caption;
  // What T, the age at which a live owner is taken over, adds up: "T" is the processing time alone; with pauses
  // or clock skew, e.g. "T + pauses + clock offset" (the survival plot and the tables' rate columns).
  std::string age = "T";
};

// The page's sections as trusted HTML (every text from `page` is escaped). Deterministic.
std::string tune_intro_html(const TunePage& page);

}  // namespace reports
