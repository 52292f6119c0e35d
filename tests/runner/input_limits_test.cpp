// Tests of the loader's input limits: what it refuses before toml++ sees the text (sizes, nesting, file
// kinds, encodings), and that loading does no work that grows faster than the input (suggestions skip
// pathological keys; the distinctness of a list does not compare every pair).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <variant>
#include <vector>

#include "scenario/loader.hpp"
#include "scenario/text.hpp"

namespace {

namespace fs = std::filesystem;

const std::string kMinimal = "[scenario]\nname = \"t\"\n\n[protocol]\nmax_processing_time = \"30s\"\nttl = \"7d\"\n";

// The errors of a load that must fail, one message per line ("(loaded)" when it loaded).
std::string errors_of(const std::string& text, const std::vector<std::string>& overrides = {}) {
  scenario::LoadResult result = scenario::load_scenario_text(text, "limits.toml", ".", overrides);
  if (!std::holds_alternative<std::vector<scenario::LoadError>>(result)) return "(loaded)";
  std::string joined;
  for (const scenario::LoadError& e : std::get<std::vector<scenario::LoadError>>(result)) joined += e.message + "\n";
  return joined;
}

TEST(ScenarioText, NearestSkipsWordsLongerThanTheLimitEvenWhenOneEditAway) {
  const std::size_t limit = scenario::text::kMaxSuggestedWordLength;
  std::string candidate(limit + 1, 'a');
  std::string typo = candidate;
  typo.back() = 'b';
  EXPECT_EQ(scenario::text::nearest(typo, {candidate}), "");
  std::string short_candidate(limit, 'a');
  std::string short_typo = short_candidate;
  short_typo.back() = 'b';
  EXPECT_EQ(scenario::text::nearest(short_typo, {short_candidate}), short_candidate);
}

TEST(ScenarioText, NearestPicksTheFirstOfTheClosestAmongCandidatesOfAnyLength) {
  // Candidates too long or too short to be near are skipped; the choice among the rest is unchanged.
  std::vector<std::string> keys = {"a_very_long_key_that_is_nowhere_near", "ttl", "x", "tl", "ttx"};
  EXPECT_EQ(scenario::text::nearest("ttk", keys), "ttl");
  EXPECT_EQ(scenario::text::nearest("max_procesing_time", {"kind", "max_processing_time", "max_wait"}),
            "max_processing_time");
}

TEST(ScenarioLoaderLimits, AnUnknownKeyLongerThanTheSuggestionLimitIsReportedWithoutASuggestion) {
  std::string key = "max_processing_time" + std::string(scenario::text::kMaxSuggestedWordLength, 'e');
  std::string errors = errors_of(kMinimal + key + " = 1\n");
  EXPECT_NE(errors.find("protocol." + key + ": found an unknown key; allowed in [protocol]"), std::string::npos)
      << errors;
  EXPECT_EQ(errors.find("did you mean"), std::string::npos) << errors;
}

TEST(ScenarioLoaderLimits, ARepeatedNameInALongListIsReportedAtItsSecondOccurrence) {
  std::string names;
  for (int i = 0; i < 5000; ++i) names += "\"p" + std::to_string(i) + "\", ";
  std::string text = kMinimal + "\n[topology]\nprocessors = [" + names + "\"p4321\", \"p7\"]\n";
  std::string errors = errors_of(text);
  EXPECT_NE(errors.find("topology.processors[5000]: found \"p4321\" twice"), std::string::npos) << errors;
  EXPECT_EQ(errors.find("[5001]"), std::string::npos) << errors;
}

}  // namespace
