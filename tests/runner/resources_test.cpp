// Running out of resources: memory beyond an address-space limit ends a run with exit 3 and a message saying
// which resource and how much, never a signal. (prlimit is util-linux's, installed on every Debian system.)
#include <gtest/gtest.h>

#include <string>

#include "support.hpp"

namespace resources_test {

using test_support::shell;

// Runs `lethe ARGS` with its address space limited to `bytes`; skips where that cannot be measured.
test_support::Outcome run_lethe_limited(long long bytes, const std::string& args) {
  return shell(std::string("cd ") + LETHE_SOURCE_DIR + " && prlimit --as=" + std::to_string(bytes) + " " +
               LETHE_BINARY_DIR + "/lethe " + args);
}

bool can_limit_memory() {
#ifdef LETHE_SANITIZE
  return false;  // the sanitizers' shadow memory needs terabytes of address space
#else
  return shell("command -v prlimit").exit_code == 0;
#endif
}

TEST(Resources, FiberStacksBeyondTheAddressSpaceLimitExitThreeSayingHowMuchNotASignal) {
  if (!can_limit_memory()) GTEST_SKIP() << "prlimit missing or a sanitizer build";
  const auto outcome = run_lethe_limited(
      400'000'000, "run scenarios/check-then-insert-race.toml --set topology.consumers=20000");
  EXPECT_EQ(outcome.exit_code, 3) << outcome.out;  // -1: ended by a signal
  EXPECT_NE(outcome.out.find("out of memory: could not map 16384 KiB more of fiber stacks"), std::string::npos)
      << outcome.out;
  EXPECT_NE(outcome.out.find("MiB of stacks mapped"), std::string::npos) << outcome.out;
  EXPECT_NE(outcome.out.find("replay: lethe replay scenarios/check-then-insert-race.toml --seed 1"),
            std::string::npos)
      << outcome.out;
  EXPECT_EQ(outcome.out.find("OK"), std::string::npos) << outcome.out;
}

TEST(Resources, AHeapBeyondTheAddressSpaceLimitExitsThreeNamingTheLimitNotASignal) {
  if (!can_limit_memory()) GTEST_SKIP() << "prlimit missing or a sanitizer build";
  const auto outcome = run_lethe_limited(
      150'000'000, "run scenarios/check-then-insert-race.toml --set workload.messages=3000000");
  EXPECT_EQ(outcome.exit_code, 3) << outcome.out;
  EXPECT_NE(outcome.out.find("lethe: out of memory"), std::string::npos) << outcome.out;
  EXPECT_NE(outcome.out.find("address-space limit 143 MiB"), std::string::npos) << outcome.out;
}

}  // namespace resources_test
