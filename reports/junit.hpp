// reports/junit.hpp — JUnit XML for CI systems (GitLab, Jenkins, GitHub test reporters).
// One <testsuite> per scenario, one <testcase> per (scenario, seed); a failed
// expectation is a <failure>, an internal error an <error>; the replay command
// is in the failure text. A scenario file that did not load is one testcase
// named "load" with an <error type="load"> holding the loader's messages, so a
// CI test report shows it beside the scenarios that did run. Renders only.
#pragma once

#include <string>
#include <vector>

#include "core/result.hpp"

namespace reports {

struct JunitCase {
  std::string scenario;
  std::string file;
  lethe::RunResult result;
  std::string error;        // internal error text, if any
  std::string replay;       // the command that reproduces it
  double seconds = 0.0;     // wall time of the seed
  std::string load_error;   // non-empty: the file did not load (every message, one a line); no seed ran
};

std::string junit_xml(const std::vector<JunitCase>& cases);
// XML character data / attribute text: markup characters escaped, control characters but tab and line breaks a
// space, bytes outside well-formed UTF-8 "\xNN" (core/utf8.hpp): the document is well-formed whatever `text` is.
std::string xml_escape(std::string_view text);

}  // namespace reports
