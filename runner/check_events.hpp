// runner/check_events.hpp — `lethe check --events FILE...`: a consumer's dedupe events (check/events.hpp) judged
// by the oracle, printed as `lethe run` prints a run (or its result JSON), with what the events cannot tell apart.
// Exit codes: 0 every owed message executed once and every caller handed the first execution's value; 1
// duplicates, lost messages or memo mismatches (or a duplicate whose cause the strategy does not declare);
// 2 bad input (the file, line and field named); 3 lethe's internal error.
#pragma once

#include <string>
#include <vector>

namespace runner {

struct CheckEventsOptions {
  std::vector<std::string> files;
  bool json = false;
  std::string html;  // the incident page
};

int check_events(const CheckEventsOptions& options);

}  // namespace runner
