// reports/incident.hpp — the incident page: what happened to one message (or to each duplicated one), drawn.
//
// One self-contained HTML page (inline SVG and CSS, no script, nothing fetched): per message, one lane per node
// that touched it (sources, consumers, the store, the sink), x = virtual time with idle stretches cut out and
// labelled, each attempt a bar from its delivery to its end, its decisions, effect, completion and
// acknowledgment marked, polls folded into one span with a count, crashes, restarts, pauses, lost packets and
// timeouts as marks, the store operations of its keys from invocation to response, and every duplicate
// execution in red with its cause and the oracle's sentence beside it. Above: every duplicate of the run by
// cause, each a link to its drawing (or, past the drawn ones, the command that draws it); past 200 of a cause,
// the command that prints them all.
//
// Renders only; the same input gives the same bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "reports/timeline.hpp"

namespace reports {

struct IncidentInput {
  const lethe::RunResult& result;        // counts and every explanation
  std::vector<Story> stories;            // the messages drawn, the first one on top
  std::vector<std::string> node_names;
  std::string replay_command;            // "lethe replay FILE --seed N [--set ...]", to draw another message
  bool from_events = false;              // drawn from an event log (lethe check --events): replay_command is the
                                         // check command; no trace hash, no command that draws another message
};

std::string incident_html(const IncidentInput& input);

// The element id of a duplicate execution's mark in the page: "duplicate-<message>-<attempt>".
std::string duplicate_mark_id(std::uint64_t message, std::uint64_t attempt);

}  // namespace reports
