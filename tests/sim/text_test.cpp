#include "sim/text.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace text_test {

using lethe::text::split_top_level;
using lethe::text::trim;

TEST(Text, TrimRemovesEveryAsciiWhitespaceAtBothEndsAndNothingInside) {
  EXPECT_EQ(trim(" \t\r\n\f\va b\v\f\n\r\t "), "a b");
  EXPECT_EQ(trim("   "), "");
  EXPECT_EQ(trim(""), "");
  EXPECT_EQ(trim("x"), "x");
}

TEST(Text, SplitTopLevelCutsOnlyAtCommasOutsideBracketsAndQuotes) {
  const auto parts = split_top_level(" a , f(x, y) ,[1,2], {k: 1, j: 2}, \"p,q\", 'r,s' ");
  ASSERT_TRUE(parts.has_value());
  EXPECT_EQ(*parts, (std::vector<std::string>{"a", "f(x, y)", "[1,2]", "{k: 1, j: 2}", "\"p,q\"", "'r,s'"}));
  EXPECT_EQ(*split_top_level(""), std::vector<std::string>{""});
  EXPECT_EQ(*split_top_level("a,,b"), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(*split_top_level("uniform(1ms, 5ms)"), std::vector<std::string>{"uniform(1ms, 5ms)"});
}

TEST(Text, SplitTopLevelRefusesUnbalancedOrCrossedBracketsAndOpenQuotes) {
  EXPECT_FALSE(split_top_level("f(a, b").has_value());
  EXPECT_FALSE(split_top_level("a), b").has_value());
  EXPECT_FALSE(split_top_level("f(a, b]").has_value());
  EXPECT_FALSE(split_top_level("[a, (b], c)").has_value());
  EXPECT_FALSE(split_top_level("\"a, b").has_value());
  EXPECT_TRUE(split_top_level("\"(\", \")\"").has_value()) << "brackets inside quotes do not count";
}

}  // namespace text_test
