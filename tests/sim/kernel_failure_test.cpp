// Kernel failures: a broken invariant, a callback timer that throws and a fiber stack that cannot be mapped
// all end the run with sim::InternalError (exit 3 in the runner) and leave the kernel able to unwind, never an
// abort.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "sim/node.hpp"
#include "sim/simulation.hpp"

namespace kernel_failure_test {

using sim::kMillisecond;

std::string internal_error_of(sim::Simulation& simulation) {
  try {
    simulation.run();
  } catch (const sim::InternalError& e) {
    return e.what();
  }
  return "";
}

TEST(KernelFailure, AFiberStackThatCannotBeMappedIsAnOutOfMemoryErrorNamingTheNodeAndCountsNoFiber) {
  // 1 TiB stacks: a chunk of them is larger than any address space, so the mapping fails.
  sim::Simulation simulation({.seed = 1, .stack_bytes = std::size_t{1} << 40});
  auto& node = simulation.add_node("billing-7", "workers");
  node.set_main([] { sim::sleep(kMillisecond); });
  node.start();  // the stack is taken when the fiber first runs
  const std::string message = internal_error_of(simulation);
  EXPECT_NE(message.find("out of memory: could not map"), std::string::npos) << message;
  EXPECT_NE(message.find("node billing-7"), std::string::npos) << message;
  EXPECT_NE(message.find("KiB more of fiber stacks"), std::string::npos) << message;
  EXPECT_EQ(simulation.live_fibers(), 0u);  // the destructor (at the end of this test) has nothing to wait for
}

TEST(KernelFailure, ABrokenInvariantOutsideTheSchedulerThrowsAnInternalErrorInsteadOfAborting) {
  sim::Simulation simulation({.seed = 1});
  try {
    static_cast<void>(simulation.waker());  // no fiber is running
    ADD_FAILURE() << "waker() outside a fiber did not fail";
  } catch (const sim::InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("assertion failed"), std::string::npos) << e.what();
  }
}

class ThrowingCallback : public ::testing::TestWithParam<bool> {};

TEST_P(ThrowingCallback, ACallbackTimerThatThrowsEndsTheRunWithAnInternalErrorAndTheFibersUnwind) {
  sim::Simulation simulation({.seed = 1, .fast_path = GetParam()});
  auto& node = simulation.add_node("a", "workers");
  bool ran_past_the_failure = false;
  node.set_main([&] {
    sim::sleep(10 * kMillisecond);
    ran_past_the_failure = true;
  });
  node.start();
  simulation.at(5 * kMillisecond, [] { throw std::runtime_error("boom"); });
  const std::string message = internal_error_of(simulation);
  EXPECT_NE(message.find("a callback timer failed: boom"), std::string::npos) << message;
  EXPECT_FALSE(ran_past_the_failure);
}

INSTANTIATE_TEST_SUITE_P(FastPathOnAndOff, ThrowingCallback, ::testing::Bool());

TEST(KernelFailure, ACallbackTimerThatThrowsBeforeAnyFiberRunsIsAnInternalErrorAndTheKernelStillUnwinds) {
  sim::Simulation simulation({.seed = 1});
  auto& node = simulation.add_node("a", "workers");
  simulation.at(0, [] { throw std::runtime_error("boom"); });
  const std::string message = internal_error_of(simulation);
  EXPECT_NE(message.find("a callback timer failed: boom"), std::string::npos) << message;
  node.set_main([] { sim::sleep(kMillisecond); });
  node.start();  // a fiber left for the destructor to unwind: it must not find the run still marked running
}

}  // namespace kernel_failure_test
