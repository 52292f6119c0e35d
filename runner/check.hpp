// runner/check.hpp — `lethe check`: judge histories recorded outside the simulator (docs/check.md).
//
//   lethe check FILE... [--format auto|lethe|jepsen-edn|jepsen-log] [--model auto|store|register|kv] [-j N]
//                       [--budget STEPS] [--timeout D] [--json] [--html OUT.html]
//
// Reads each file (check/history.hpp), partitions it by key, checks the partitions on N threads (the recorded
// data only: nothing simulated runs here) and prints one verdict per file, in the order given, with the shortest
// failing window of the first failing partition in key order.
//
// Determinism: the verdict and the window depend only on the file and the budget, never on thread timing: a
// failing partition cancels only the partitions after it in key order, so the first failing one is always
// checked to its end. --timeout is the one exception (what a wall clock cuts short is "unknown").
//
// --html (one FILE): the failing partition drawn (reports/history_page.hpp), with the longest linearizable prefix
// of the window's operations and the model state after each step.
//
// Exit code (the worst over the files): 3 internal error, 2 bad input, 1 not linearizable, 4 unknown (a budget
// or the timeout ran out and no partition failed), 0 every file linearizable.
#pragma once

namespace CLI {
class App;
}

namespace runner {

struct ExtraCommand;

inline constexpr int kExitUnknown = 4;

ExtraCommand register_check(CLI::App& app);

}  // namespace runner
