// Running out of resources: memory beyond an address-space limit ends a run with exit 5 (resources exhausted)
// and a message saying which resource and how much, never a signal, never "internal error" nor a replay hint; a
// topology whose consumers' fiber stacks alone exceed the limit is refused at load (exit 2 at the key), unless
// its source's idle consumers wait without a stack (the queue's). (prlimit is util-linux's, installed on every Debian system.)
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

TEST(Resources, ARunBeyondTheAddressSpaceLimitExitsFiveWithoutInternalErrorOrReplayNotASignal) {
  if (!can_limit_memory()) GTEST_SKIP() << "prlimit missing or a sanitizer build";
  // 5,000 kafka members pass the load's check of their stacks (about 5,200 fit); with 100,000 messages at once the
  // fibers of the requests in flight do not.
  const auto outcome = run_lethe_limited(
      400'000'000, "run scenarios/kafka-gc-pause-evicted-none.toml --set topology.consumers=5000 --set workload.messages=100000 "
                   "--set workload.rate=1000000/s");
  EXPECT_EQ(outcome.exit_code, 5) << outcome.out;  // -1: ended by a signal
  EXPECT_NE(outcome.out.find("out of memory: "), std::string::npos) << outcome.out;
  EXPECT_EQ(outcome.out.find("internal error"), std::string::npos) << outcome.out;
  EXPECT_EQ(outcome.out.find("replay:"), std::string::npos) << outcome.out;
  EXPECT_EQ(outcome.out.find("OK"), std::string::npos) << outcome.out;
}

TEST(Resources, ConsumersWhoseStacksExceedTheAddressSpaceLimitAreRefusedAtLoadNamingHowManyFit) {
  if (!can_limit_memory()) GTEST_SKIP() << "prlimit missing or a sanitizer build";
  // Kafka's idle members keep their fibers (a queue's idle consumers do not: see the next test).
  const auto outcome =
      run_lethe_limited(400'000'000, "run scenarios/kafka-gc-pause-evicted-none.toml --set topology.consumers=20000");
  EXPECT_EQ(outcome.exit_code, 2) << outcome.out;
  EXPECT_NE(outcome.out.find("--set topology.consumers=20000: topology.consumers: found 20000; allowed: at most "),
            std::string::npos)
      << outcome.out;
  EXPECT_NE(outcome.out.find("fiber stack of 64 KiB"), std::string::npos) << outcome.out;
  // Without the limit the same topology loads (it is not bad in itself).
  const auto unlimited = shell(std::string("cd ") + LETHE_SOURCE_DIR + " && " + LETHE_BINARY_DIR +
                               "/lethe run scenarios/kafka-gc-pause-evicted-none.toml --set topology.consumers=20000 "
                               "--set workload.messages=0 --set run.duration=1ms");
  EXPECT_NE(unlimited.exit_code, 2) << unlimited.out;
  EXPECT_EQ(unlimited.out.find("allowed: at most"), std::string::npos) << unlimited.out;
}

TEST(Resources, QueueConsumersWaitWithoutStacksSoTenTimesMoreThanStacksAllowRunUnderTheLimit) {
  if (!can_limit_memory()) GTEST_SKIP() << "prlimit missing or a sanitizer build";
  // 64 KiB stacks for 200,000 consumers would be 12.2 GiB of address space; idle queue consumers hold none.
  const auto outcome = run_lethe_limited(
      1'500'000'000, "bench scenarios/bench/consumers-100k.toml --set topology.consumers=200000 "
                     "--set workload.messages=2000");
  EXPECT_EQ(outcome.exit_code, 0) << outcome.out;
  EXPECT_NE(outcome.out.find(" effects=2000 "), std::string::npos) << outcome.out;
}

TEST(Resources, ASuiteWhoseFiberStacksRunOutExitsFiveSayingHowMuchWithoutAReplay) {
  if (!can_limit_memory()) GTEST_SKIP() << "prlimit missing or a sanitizer build";
  const auto outcome = run_lethe_limited(
      400'000'000, "suite scenarios/kafka-gc-pause-evicted-none.toml --seeds 2 -j 2 --set topology.consumers=5000 "
                   "--set workload.messages=100000 --set workload.rate=1000000/s");
  EXPECT_EQ(outcome.exit_code, 5) << outcome.out;
  EXPECT_NE(outcome.out.find("RESOURCES kafka-gc-pause-evicted-none seed "), std::string::npos) << outcome.out;
  EXPECT_NE(outcome.out.find("out of memory: could not map 16384 KiB more of fiber stacks"), std::string::npos)
      << outcome.out;
  EXPECT_NE(outcome.out.find("MiB of stacks mapped"), std::string::npos) << outcome.out;
  EXPECT_EQ(outcome.out.find("replay:"), std::string::npos) << outcome.out;
}

TEST(Resources, ABenchWhoseFiberStacksRunOutExitsFiveWithoutInternalError) {
  if (!can_limit_memory()) GTEST_SKIP() << "prlimit missing or a sanitizer build";
  const auto outcome = run_lethe_limited(
      400'000'000, "bench scenarios/kafka-gc-pause-evicted-none.toml --seeds 2 -j 2 --set topology.consumers=5000 "
                   "--set workload.messages=100000 --set workload.rate=1000000/s");
  EXPECT_EQ(outcome.exit_code, 5) << outcome.out;
  EXPECT_NE(outcome.out.find("out of memory: could not map"), std::string::npos) << outcome.out;
  EXPECT_EQ(outcome.out.find("internal error"), std::string::npos) << outcome.out;
}

TEST(Resources, AHeapBeyondTheAddressSpaceLimitExitsFiveNamingTheLimitNotASignal) {
  if (!can_limit_memory()) GTEST_SKIP() << "prlimit missing or a sanitizer build";
  const auto outcome = run_lethe_limited(
      150'000'000, "run scenarios/check-then-insert-race.toml --set workload.messages=3000000");
  EXPECT_EQ(outcome.exit_code, 5) << outcome.out;
  EXPECT_NE(outcome.out.find("lethe: out of memory"), std::string::npos) << outcome.out;
  EXPECT_NE(outcome.out.find("address-space limit 143 MiB"), std::string::npos) << outcome.out;
}

}  // namespace resources_test
