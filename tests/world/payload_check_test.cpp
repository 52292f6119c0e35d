// Changed payloads end to end (workload.redelivery.payload, protocol.payload_check): the producer's copies carry
// their payload version through the queue and kafka sources to the strategy; without the check a changed copy is
// skipped as a duplicate (payload_ignored), with it the copy is refused (payload_mismatches); unchanged copies
// are neither.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/world/verdict_scenarios.hpp"
#include "world/world.hpp"

namespace payload_check_test {

using test_support::load_library;

lethe::RunResult run(const std::string& scenario, const std::vector<std::string>& sets = {}) {
  return lethe::run_world(load_library(scenario, sets), 1);
}

TEST(PayloadCheckWorld, ChangedCopiesAreIgnoredWithoutTheCheckAndRefusedWithItOneForOne) {
  const lethe::RunResult off = run("payload-changed-ignored");
  const lethe::RunResult on = run("payload-check-fingerprint");
  EXPECT_GT(off.payload_ignored, 0u);
  EXPECT_EQ(off.payload_mismatches, 0u);
  EXPECT_EQ(on.payload_ignored, 0u);
  EXPECT_EQ(on.payload_mismatches, off.payload_ignored);  // the same copies, refused instead of skipped
  EXPECT_EQ(on.duplicate_effects, 0u);
  EXPECT_EQ(on.lost_messages, 0u);
  EXPECT_EQ(on.coverage.at("protocol.payload_refused"), on.payload_mismatches);
}

TEST(PayloadCheckWorld, UnchangedCopiesAreNeitherRefusedNorCountedAsIgnored) {
  for (const std::string scenario : {"payload-changed-ignored", "payload-check-fingerprint"}) {
    const lethe::RunResult same = run(scenario, {"workload.redelivery.payload=\"same\""});
    EXPECT_EQ(same.payload_ignored, 0u) << scenario;
    EXPECT_EQ(same.payload_mismatches, 0u) << scenario;
    EXPECT_GT(same.coverage.at("redelivery.copy"), 0u) << scenario;
  }
}

TEST(PayloadCheckWorld, KafkaRecordsCarryTheirPayloadVersionToTheConsumer) {
  const std::vector<std::string> kafka = {"topology.source=\"kafka\"", "topology.partitions=16"};
  const lethe::RunResult off = run("payload-changed-ignored", kafka);
  const lethe::RunResult on = run("payload-check-fingerprint", kafka);
  EXPECT_GT(off.payload_ignored, 0u);
  EXPECT_GT(on.payload_mismatches, 0u);
  EXPECT_EQ(on.payload_ignored, 0u);
}

}  // namespace payload_check_test
