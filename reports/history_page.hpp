// reports/history_page.hpp — the page of a non-linearizable history (`lethe check --html`).
//
// One self-contained HTML page (inline SVG and CSS, no script, nothing fetched) for the failing partition of a
// checked history: one lane per process, each operation a bar from its invocation to its response (to the right
// edge when its outcome is unknown), the shortest failing window highlighted and its last operation (the first
// response nothing explains) in red; below, the longest linearizable prefix found, one row per step with the
// model state after it, as Porcupine's visualization shows it, and before it the red operation against the
// state that prefix leaves (the model's answer beside the recorded one). A linearizable history's page
// (linearizable set) draws one lane per key instead when it has several (the keys are independent), at most 60
// of them, each key's operations in as many rows as their overlaps need; it says it is linearizable and how many
// keys it left out.
// A bar is labelled only when its label fits in it; every bar's tooltip holds its whole text.
//
// Renders only; the same input gives the same bytes. Text from the input is HTML-escaped.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace reports {

struct HistoryPageOp {
  std::uint32_t process = 0;
  std::string key;               // the key it touches, named ("message 14"; the first of several)
  std::int64_t invoked_at = 0;
  std::int64_t returned_at = 0;  // ignored when !answered
  bool answered = true;
  std::string when;              // the invocation and response, as the text explanation writes them
  std::string text;              // "cas(1, 2) -> ok"
  bool in_window = false;
  bool failing = false;          // the window's last operation
};

struct HistoryPageStep {
  std::size_t op = 0;            // index into HistoryPage::ops
  std::string state;             // the model state after it
};

struct HistoryPage {
  std::string file;
  std::string summary;           // "not linearizable (jepsen-log, register model, 85 ops, 1 partition)"
  std::string key;               // the failing partition's keys
  bool timed = false;            // times are nanoseconds (else line numbers)
  std::vector<HistoryPageOp> ops;            // the failing partition's operations, in invocation order
  std::vector<HistoryPageStep> prefix;       // the longest linearizable prefix found
  std::string prefix_note;       // why the prefix may not be the longest ("" when it is), said beside it
  std::string initial_state;
  // The failing operation against the state the longest prefix leaves: that state, what the model answers the
  // operation from it, and what the history says it answered ("" when there is no failing operation).
  std::string state_before_failing;
  std::string model_answer;
  std::string recorded_answer;
  std::string explanation;       // the text explanation
  bool linearizable = false;     // the whole history, linearizable: ops are every operation, no window, no prefix
};

std::string history_page_html(const HistoryPage& page);

}  // namespace reports
