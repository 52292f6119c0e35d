// Tests of the loader's input limits: what it refuses before toml++ sees the text (sizes, nesting, file
// kinds, encodings), and that loading does no work that grows faster than the input (suggestions skip
// pathological keys; the distinctness of a list does not compare every pair).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <variant>
#include <vector>

#include "scenario/loader.hpp"
#include "scenario/text.hpp"
#include "sim/distribution.hpp"
#include "tests/runner/support.hpp"

namespace input_limits_test {

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

// A scenario whose processing time is drawn from FILE.
std::string with_empirical(const std::string& file) {
  return kMinimal + "\n[workload]\nprocessing_time = \"empirical(file=" + file + ")\"\n";
}

TEST(ScenarioLoaderLimits, AnEmpiricalDeviceFifoOrOversizedFileIsRefusedBeforeAnyRead) {
  fs::path dir = test_support::temp_dir("limits", "empirical");
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  std::ofstream(dir / "huge.txt") << "1ms\n";
  fs::resize_file(dir / "huge.txt", sim::kMaxSampleFileBytes + 1);  // sparse: nothing written
  for (const std::string& file : {std::string("/dev/zero"), (dir / "fifo").string()}) {
    std::string errors = errors_of(with_empirical(file));
    EXPECT_NE(errors.find("is a device, FIFO or socket, not a regular file"), std::string::npos) << errors;
  }
  std::string errors = errors_of(with_empirical((dir / "huge.txt").string()));
  EXPECT_NE(errors.find("over the limit of 67108864 bytes"), std::string::npos) << errors;
  fs::remove_all(dir);
}

TEST(ScenarioLoaderLimits, AScenarioPathThatIsADeviceFifoOrOversizedFileExitsTwoWithoutWaiting) {
  fs::path dir = test_support::temp_dir("limits", "scenario");
  ASSERT_EQ(::mkfifo((dir / "fifo.toml").c_str(), 0600), 0);
  std::ofstream(dir / "huge.toml") << "# big\n";
  fs::resize_file(dir / "huge.toml", scenario::kMaxScenarioBytes + 1);
  // `timeout`: a reader that waited on the FIFO would hang the test instead of failing it.
  test_support::Outcome o = test_support::shell("timeout 20 " + std::string(LETHE_BINARY_DIR) + "/lethe run " +
                                                (dir / "fifo.toml").string());
  EXPECT_EQ(o.exit_code, 2) << o.out;
  EXPECT_NE(o.out.find("fifo.toml:1:1: scenario: found a device, FIFO or socket, not a regular file"),
            std::string::npos)
      << o.out;
  o = test_support::run_lethe("run /dev/zero");
  EXPECT_EQ(o.exit_code, 2) << o.out;
  o = test_support::run_lethe("run " + (dir / "huge.toml").string());
  EXPECT_EQ(o.exit_code, 2) << o.out;
  EXPECT_NE(o.out.find("over the limit of 4194304 bytes"), std::string::npos) << o.out;
  fs::remove_all(dir);
}

TEST(ScenarioLoaderLimits, SeventyThousandPartKeysAndHeadersAreRefusedBeforeParsingAtTheirLine) {
  std::string parts = "a";
  for (int i = 1; i < 70000; ++i) parts += ".a";
  std::string errors = errors_of(kMinimal + parts + " = 1\n");
  EXPECT_EQ(errors.rfind("limits.toml:7:", 0), 0u) << errors.substr(0, 200);
  EXPECT_NE(errors.find(": scenario: found a key of more than 32 dotted parts"), std::string::npos);
  errors = errors_of(kMinimal + "[" + parts + "]\n");
  EXPECT_EQ(errors.rfind("limits.toml:7:", 0), 0u) << errors.substr(0, 200);
  errors = errors_of(kMinimal + "x = {" + parts + " = 1}\n");
  EXPECT_EQ(errors.rfind("limits.toml:7:", 0), 0u) << errors.substr(0, 200);
  errors = errors_of(kMinimal, {"workload.x={" + parts + "=1}"});
  EXPECT_NE(errors.find(": workload.x: found a key of more than 32 dotted parts"), std::string::npos)
      << errors.substr(0, 200);
  errors = errors_of(kMinimal, {parts + "=1"});
  EXPECT_NE(errors.find("found a key of more than 256 bytes"), std::string::npos) << errors.substr(0, 200);
}

TEST(ScenarioLoaderLimits, TheLimitsCountOnlyKeysAndNestingNotDotsOrBracketsInStringsAndComments) {
  std::string dots(40, '.');
  std::string text = kMinimal + "# " + dots + " [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\n" + "[network]\n" +
                     "\"quoted.key.with.many.dots." + dots + "\" = 1\n" + "[scenario.x]\nv = [\"" +
                     std::string(40, '[') + "\",  + dots + , \"\"\"\n" + dots + "\"\"\"]\n";
  std::string errors = errors_of(text);
  EXPECT_EQ(errors.find("scenario: found"), std::string::npos) << errors;
}

TEST(ScenarioLoaderLimits, AHugelyDeepKeyFileExitsTwoWithNoSignal) {
  fs::path dir = test_support::temp_dir("limits", "deep");
  std::string parts = "a";
  for (int i = 1; i < 70000; ++i) parts += ".a";
  std::ofstream(dir / "key.toml") << kMinimal << parts << " = 1\n";
  std::ofstream(dir / "header.toml") << kMinimal << "[" << parts << "]\n";
  for (const char* name : {"key.toml", "header.toml"}) {
    test_support::Outcome o = test_support::run_lethe("run " + (dir / name).string());
    EXPECT_EQ(o.exit_code, 2) << o.out.substr(0, 300);
    EXPECT_NE(o.out.find(":7:"), std::string::npos) << o.out.substr(0, 300);
  }
  fs::remove_all(dir);
}

TEST(ScenarioLoaderEncoding, TheTwoByteFileThatReachedUndefinedBehaviourInTomlPlusPlusIsRefusedAtByteZero) {
  EXPECT_EQ(errors_of("\xc7\x9b"),
            "limits.toml:1:1: toml: found a non-ASCII character at byte offset 0 outside a string or comment; "
            "allowed: ASCII outside strings and comments (TOML 1.0)\n");
}

TEST(ScenarioLoaderEncoding, MalformedUtf8OverlongFormsAndSurrogatesAreRefusedWithTheirOffset) {
  for (const std::string bad : {"\xff", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x80"}) {
    std::string errors = errors_of("# " + bad + "\n" + kMinimal);
    EXPECT_EQ(errors.rfind("limits.toml:1:3: toml: found byte 0x", 0), 0u) << errors;
    EXPECT_NE(errors.find("at byte offset 2, which is not UTF-8"), std::string::npos) << errors;
  }
}

TEST(ScenarioLoaderEncoding, NonAsciiInStringsCommentsAndVerbatimSetValuesStillLoads) {
  std::string text = "\xef\xbb\xbf# caf\xc3\xa9 \xe2\x80\x94 \xc7\x9b\n" + kMinimal +
                     "[scenario.x]\n\"k\xc3\xa9\" = 'caf\xc3\xa9'\nm = \"\"\"\xc7\x9b\n\\n\xc3\xa9\"\"\"\n";
  std::string errors = errors_of(text);
  EXPECT_EQ(errors.find(": toml:"), std::string::npos) << errors;  // only the unknown table [scenario.x]
  EXPECT_NE(errors.find("scenario.x: found an unknown"), std::string::npos) << errors;
  EXPECT_EQ(errors_of(kMinimal, {"scenario.description=caf\xc3\xa9 \xc7\x9b"}), "(loaded)");
  EXPECT_NE(errors_of(kMinimal, {"scenario.description=\xff"}).find("byte offset 0 of the value that is not UTF-8"),
            std::string::npos);
}

// Both reach the parser's whitespace test with a non-ASCII character (scenario/toml.hpp).
TEST(ScenarioLoaderEncoding, NonAsciiAfterABackslashIsAnEscapeErrorAndAfterALineEndingBackslashIsText) {
  std::string errors = errors_of(kMinimal + "[scenario.x]\nm = \"\"\"\\\xc2\xa1\"\"\"\n");
  EXPECT_EQ(errors.rfind("limits.toml:8:9: toml:", 0), 0u) << errors;
  EXPECT_NE(errors.find("escape"), std::string::npos) << errors;
  std::string text = kMinimal;
  text.replace(text.find("\"t\""), 3, "\"\"\"\\  \n\n  \xc2\xa1\xc7\x9b\"\"\"");
  EXPECT_EQ(errors_of(text), "(loaded)");
}

TEST(ScenarioLoaderEncoding, AControlCharacterAnywhereIsRefusedBeforeTomlPlusPlusAssumesThereIsNone) {
  std::string errors = errors_of(kMinimal + "[\t" + std::string(1, '\0') + "x]\n");
  EXPECT_EQ(errors.rfind("limits.toml:7:3: toml: found control character U+0000 at byte offset", 0), 0u) << errors;
  errors = errors_of(kMinimal + "[scenario.x]\nm = \"a\x7f\"\n");
  EXPECT_NE(errors.find("found control character U+007F"), std::string::npos) << errors;
}

}  // namespace input_limits_test
