// runner/replay.hpp — `lethe replay`: one seed again, bit for bit, and what happened in it.
//
//   lethe replay FILE --seed N [--set K=V ...] [--message ID] [--explain [--cause C] [--limit N]]
//                [--html OUT.html] [--dot OUT.dot|.svg|.png] [--trace OUT.jsonl] [--verify [--verify-limit N]]
//
// Prints the run's summary; --message the story of one message (its records, polls folded); --explain a summary
// of the duplicates by cause (counts, the first message of each) and then one sentence per duplicate and per memo
// mismatch (--cause selects one cause, --limit caps the sentences, 1000 by default, and says how many it left
// out); --html the incident page (reports/incident.hpp) of the message, or of the first duplicated messages;
// --dot the message's Graphviz timeline, rendered by `dot` for .svg and .png; --verify replays the seed once per
// duplicated message with its cause's window closed and checks each duplicate is gone (runner/verify.hpp).
// Exit codes: 0/1 the run's expectations held/failed; 2 bad input: an unknown extension, an unknown message or
// cause, --cause or --limit without --explain, --dot with no message to draw, a file that cannot be written, or
// Graphviz missing for .svg/.png; 3 an internal error of lethe, or (--verify) a duplicate its cause's intervention
// did not remove.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "runner/command.hpp"
#include "sim/trace.hpp"

namespace runner {

// The extension check of --dot: "" when `path` ends in .dot, .svg or .png, otherwise the error sentence.
std::string dot_path_error(const std::string& path);

// Writes the Graphviz timeline of `message` to `path` (.dot as text; .svg and .png rendered through `dot`, the
// .dot kept beside them). Returns an exit code, after saying what went wrong on stderr.
int write_message_dot(const std::vector<sim::TraceRecord>& trace, const std::vector<std::string>& node_names,
                      std::uint64_t message, const lethe::RunResult& result, const std::string& path);

// Which --explain sentences to print: of one message, of one cause, at most `limit` of them.
struct ExplainSelection {
  std::optional<std::uint64_t> message;
  std::optional<std::string> cause;
  std::size_t limit = 1000;
};

// What --explain prints after the run's summary: the duplicates by cause with the first of each, the selected
// sentences, the memo mismatches, then the lost pairs.
std::string explanations_text(const ExplainSelection& selection, const lethe::RunResult& result);

// Prints explanations_text on stdout.
void print_explanations(const ExplainSelection& selection, const lethe::RunResult& result);

ExtraCommand register_replay(CLI::App& app);

}  // namespace runner
