// What the scenario fuzz target (tests/fuzz/scenario_fuzzer.cpp) found, as loader tests: each input is refused
// by the input check (scenario/input_check.hpp) before toml++ sees it, with the message that names why. The
// fuzz target's replay (FuzzCorpusRoundTrips) runs the same files under the sanitizers; this test fails in any
// build when the check lets them through.
#include <gtest/gtest.h>

#include <string>
#include <variant>
#include <vector>

#include "scenario/loader.hpp"
#include "tests/runner/support.hpp"

namespace fuzz_findings_test {

std::string errors_of_file(const std::string& name) {
  const std::string path = std::string(LETHE_SOURCE_DIR) + "/tests/fuzz/regressions/" + name;
  scenario::LoadResult result = scenario::load_scenario(path, {});
  if (!std::holds_alternative<std::vector<scenario::LoadError>>(result)) return "(loaded)";
  std::string joined;
  for (const scenario::LoadError& e : std::get<std::vector<scenario::LoadError>>(result)) {
    joined += e.message.substr(e.message.find("regressions/") + 12) + "\n";
  }
  return joined;
}

// toml++ 3.3.0 reads `-"..."` as one bare word and tests each character after the quote for whitespace, which
// is undefined behaviour for U+045C (TOML_UNREACHABLE under UBSan); the check took the quote for a string.
TEST(FuzzFindings, AQuoteInsideABareValueDoesNotHideTheNonAsciiCharacterAfterIt) {
  EXPECT_EQ(errors_of_file("quote-inside-a-bare-value.toml"),
            "quote-inside-a-bare-value.toml:3:12: toml: found a non-ASCII character at byte offset 33 outside a "
            "string or comment; allowed: ASCII outside strings and comments (TOML 1.0)\n");
}

}  // namespace fuzz_findings_test
