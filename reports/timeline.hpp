// reports/timeline.hpp — the story of one message: its trace records, as text, as a Graphviz timeline and as the
// events an incident page draws (reports/incident.hpp).
//
// Selects the records that concern a message id: the world's own kinds (attempt, decision, outcome, ack,
// publish, crash_point, ...), the sources' and the sink's kinds whose first field is the message id, the store's
// operations on the message's keys with their invocation and response, lost packets and timeouts of those calls,
// and the crashes, restarts and pauses of the nodes that worked on it while it was being worked on. Renders only:
// runs nothing.
//
// Does not: know why a duplicate happened (the oracle's explanations say; they are passed in), or follow a
// message through an outbox or a second processor's key space beyond its records' message id.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "sim/trace.hpp"

namespace reports {

std::vector<sim::TraceRecord> message_records(const std::vector<sim::TraceRecord>& trace, std::uint64_t message_id);

// What one event of the story is, for drawing.
enum class StoryRole : std::uint8_t {
  Source,      // publish, queue and log events, client requests
  Attempt,     // an attempt's start (its bar runs to `end`)
  Decision,    // a decision (a collapsed run of polls has count > 1 and an `end`)
  Effect,      // the provider executed the effect (duplicate: it was a duplicate)
  Call,        // the provider call's other events (sink.call, sink.ok, retries)
  Store,       // a store operation: invoked at `time`, answered at `end` (collapsed reads: count > 1)
  Completion,  // the store operation that recorded the attempt's completion
  Ack,         // the source acknowledged (or refused the acknowledgment of) the delivery
  Fault,       // crash, crash point, restart, pause, lost packet, timeout
  Outcome,     // the attempt ended (executed, skipped, failed)
};

struct StoryEvent {
  sim::Time time = 0;
  sim::Time end = 0;         // == time for an instant
  std::uint32_t node = 0;    // the lane
  StoryRole role = StoryRole::Source;
  std::string text;          // one line for people, named fields and node names
  std::string short_text;    // a few words, for a mark's label
  std::uint64_t attempt = 0; // the attempt it belongs to, 0 when none
  std::size_t count = 1;     // records folded into it (polls, repeated reads)
  bool duplicate = false;    // an Effect that was a duplicate execution
  std::string cause;         // its cause (lethe::to_string(Cause)), for a duplicate
  std::string because;       // the oracle's sentence, for a duplicate
};

struct Story {
  std::uint64_t message = 0;
  std::vector<StoryEvent> events;      // time order; repeated polls and reads folded
  std::vector<std::uint32_t> lanes;    // sources, consumers (first appearance), store, sink
  std::size_t omitted_faults = 0;      // crashes, restarts and pauses of those nodes outside the message's work
};

// The story of `message_id` from the whole trace. `duplicates`: the oracle's explanations (those of other
// messages are ignored). Empty events when the message has no record in the trace.
Story message_story(const std::vector<sim::TraceRecord>& trace, const std::vector<std::string>& node_names,
                    std::uint64_t message_id, const std::vector<lethe::DuplicateExplanation>& duplicates);

std::string node_label(const std::vector<std::string>& names, std::uint32_t node);

// One line per event: "   1.203s  billing-1       decision stale_takeover (attempt 15)".
std::string timeline_text(const Story& story, const std::vector<std::string>& node_names);

// Graphviz DOT: a lane (cluster) per node, the story's events in time order along each lane (left to right),
// polls folded, the duplicate execution filled red with its cause, dashed edges for the hand-offs between lanes.
std::string timeline_dot(const Story& story, const std::vector<std::string>& node_names);

}  // namespace reports
