// LETHE_ASSERT: a broken REQUIRES is reported, in every build, with the contract, the condition and FILE:LINE.
#include <gtest/gtest.h>

#include <string>

#include "sim/assert.hpp"
#include "sim/random.hpp"

namespace assert_test {

std::string message_of(void (*broken)()) {
  try {
    broken();
  } catch (const lethe::ContractViolation& e) {
    return e.what();
  }
  return "(no ContractViolation)";
}

TEST(LetheAssert, ABrokenContractNamesTheContractTheConditionAndItsFileAndLine) {
  const std::string what = message_of([] { LETHE_ASSERT(1 + 1 == 3, "arithmetic REQUIRES two and two"); });
  EXPECT_EQ(what.rfind("contract broken: arithmetic REQUIRES two and two (1 + 1 == 3 is false at sim/assert_test.cpp:",
                       0), 0u)
      << what;
}

TEST(LetheAssert, AKeptContractDoesNothing) {
  EXPECT_NO_THROW(LETHE_ASSERT(2 + 2 == 4, "arithmetic"));
}

// Release builds (NDEBUG) check it too: the REQUIRES of Rng::between holds in every build type.
TEST(LetheAssert, RngBetweenChecksItsRequiresInEveryBuild) {
  const std::string what = message_of([] {
    sim::Rng rng(1);
    (void)rng.between(2, 1);
  });
  EXPECT_NE(what.find("contract broken: Rng::between: low must be <= high (low <= high is false at sim/random.cpp:"),
            std::string::npos)
      << what;
}

}  // namespace assert_test
