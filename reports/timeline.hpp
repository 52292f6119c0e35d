// reports/timeline.hpp — the story of one message: its trace records, as text and as a Graphviz timeline.
//
// Selects the records that concern a message id: the world's own kinds
// (attempt, decision, outcome, ack, publish, crash_point, ...), the sources'
// and the sink's kinds whose first field is the message id, the store's
// operations on the message's keys, and the crashes, restarts and pauses of
// the nodes that worked on it. Renders only: runs nothing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/trace.hpp"

namespace reports {

std::vector<sim::TraceRecord> message_records(const std::vector<sim::TraceRecord>& trace, std::uint64_t message_id);

// One line per record: "   1.203s  billing-1     decision  stale_takeover ...".
std::string timeline_text(const std::vector<sim::TraceRecord>& records, const std::vector<std::string>& node_names);

// Graphviz DOT: a lane (cluster) per node, the message's events in time order
// along each lane, and dashed edges for the hand-offs between lanes.
std::string timeline_dot(const std::vector<sim::TraceRecord>& records, const std::vector<std::string>& node_names,
                         std::uint64_t message_id);

}  // namespace reports
