// The list-length limit (scenario/input_check.hpp: kMaxListEntries): a list over it is refused before toml++
// parses the text, at the list's start and under its key; a --set list and a --set that adds one [[table]]
// too many are refused by the loader the same way; a list at the limit loads.
#include <gtest/gtest.h>

#include <string>
#include <variant>
#include <vector>

#include "scenario/input_check.hpp"
#include "scenario/loader.hpp"

namespace list_limit_test {

const std::string kMinimal = "[scenario]\nname = \"t\"\n\n[protocol]\nmax_processing_time = \"30s\"\nttl = \"7d\"\n";
constexpr std::size_t kLimit = scenario::kMaxListEntries;

std::string errors_of(const std::string& text, const std::vector<std::string>& overrides = {}) {
  scenario::LoadResult result = scenario::load_scenario_text(text, "lists.toml", ".", overrides);
  if (!std::holds_alternative<std::vector<scenario::LoadError>>(result)) return "(loaded)";
  std::string joined;
  for (const scenario::LoadError& e : std::get<std::vector<scenario::LoadError>>(result)) joined += e.message + "\n";
  return joined;
}

std::string names(std::size_t count, const std::string& separator = ", ", const std::string& quote = "\"") {
  std::string out;
  for (std::size_t i = 0; i < count; ++i) out += (i == 0 ? "" : separator) + quote + "p" + std::to_string(i) + quote;
  return out;
}

std::string partitions(std::size_t count) {
  std::string out;
  for (std::size_t i = 0; i < count; ++i) {
    out += "[[network.partition]]\nat = \"1s\"\nfor = \"1s\"\nbetween = [\"consumers\", \"store\"]\n";
  }
  return out;
}

TEST(ScenarioListLimit, AListOfOneEntryOverTheLimitIsRefusedAtItsStartUnderItsKeyAndOneAtItLoads) {
  const std::string head = kMinimal + "\n[topology]\nprocessors = [\n";
  std::string errors = errors_of(head + names(kLimit + 1, ",\n") + "\n]\n");
  EXPECT_EQ(errors, "lists.toml:9:14: topology.processors: found more than 10000 entries in a list; allowed: at most "
                    "10000 entries\n");
  // A trailing comma is not an entry.
  EXPECT_EQ(errors_of(head + names(kLimit, ",\n") + ",\n]\n"), "(loaded)");
}

TEST(ScenarioListLimit, ANestedOrUnknownListIsCountedToo) {
  std::string errors = errors_of(kMinimal + "x = [[" + names(kLimit + 1) + "]]\n");
  EXPECT_NE(errors.find("lists.toml:7:6: protocol.x: found more than 10000 entries in a list"), std::string::npos)
      << errors.substr(0, 300);
  std::string zeros;
  for (std::size_t i = 0; i <= kLimit; ++i) zeros += "0,";
  errors = errors_of(kMinimal + "\n[workload]\nn = [" + zeros + "]\n");
  EXPECT_NE(errors.find("lists.toml:9:5: workload.n: found more than 10000 entries"), std::string::npos)
      << errors.substr(0, 300);
}

TEST(ScenarioListLimit, ArraysOfTablesOverTheLimitAreRefusedAtTheFirstHeaderOverIt) {
  EXPECT_EQ(errors_of(kMinimal + partitions(kLimit)), "(loaded)");
  std::string errors = errors_of(kMinimal + partitions(kLimit + 1));
  const std::size_t line = 7 + 4 * kLimit;  // the (limit + 1)th header
  EXPECT_EQ(errors, "lists.toml:" + std::to_string(line) +
                        ":1: network.partition: found more than 10000 entries in a list; allowed: at most 10000 "
                        "entries\n");
  // One more added by --set.
  errors = errors_of(kMinimal + partitions(kLimit), {"network.partition[10000].at=1s"});
  EXPECT_NE(errors.find("network.partition: found more than 10000 entries in a list"), std::string::npos)
      << errors.substr(0, 300);
}

TEST(ScenarioListLimit, ASetListOverTheLimitIsRefusedInEitherForm) {
  std::string errors = errors_of(kMinimal, {"topology.processors=" + names(kLimit + 1, ",", "")});
  EXPECT_NE(errors.find(": topology.processors: found more than 10000 entries in a list"), std::string::npos)
      << errors.substr(0, 300);
  errors = errors_of(kMinimal, {"topology.processors=[" + names(kLimit + 1) + "]"});
  EXPECT_NE(errors.find(": topology.processors: found more than 10000 entries in a list"), std::string::npos)
      << errors.substr(0, 300);
  EXPECT_EQ(errors_of(kMinimal, {"topology.processors=" + names(kLimit, ",", "")}), "(loaded)");
}

}  // namespace list_limit_test
