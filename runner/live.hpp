// runner/live.hpp — `lethe live`: the protocol for real against a real PostgreSQL, Redis or the in-process store,
// with real threads and injected faults, judged by the simulator's oracle and linearizability checker
// (live/run.hpp). Prints the same summary (or JSON) as `lethe run`, plus the live facts (operations, unknown
// outcomes, unexplained duplicates, the offending window when the history is not linearizable).
//
// Exit codes: 0 the history is linearizable, no duplicate is unexplained and no message was lost; 1 otherwise
// (the statement variant is caught); 2 bad input, a table or prefix live mode cannot use, or a server that cannot
// be reached or stops answering (the run abandoned: its summary ends in NO VERDICT); 3 an internal error. What
// the cleanup could not remove is named on stderr.
#pragma once

#include <CLI/CLI.hpp>

#include "runner/command.hpp"

namespace runner {

ExtraCommand register_live(CLI::App& app);

}  // namespace runner
