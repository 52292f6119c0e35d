// Trace JSON lines: every field under its kind's name, node ids as names, packed halves split, and the hash
// blind to field names (they are for people).
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "sim/trace.hpp"

namespace sim {
namespace trace_test {

constexpr TraceKind kNamed{"test.named", "message", "to_node", "processor/call"};
constexpr TraceKind kSameNameUnnamed{"test.named"};

TEST(TraceJsonLines, WriteEachFieldUnderItsKindsNameWithNodesByNameAndPackedHalvesSplit) {
  std::ostringstream out;
  Trace trace;
  trace.set_node_name(0, "billing-0");
  trace.set_node_name(1, "store");
  trace.write_jsonl(&out);
  trace.record(5, kNamed, 0, 14, 1, (std::uint64_t{3} << 32) | 7);
  trace.record(6, kSameNameUnnamed, 1, 0, 9, 0);
  EXPECT_EQ(out.str(),
            "{\"t\":5,\"kind\":\"test.named\",\"node\":\"billing-0\",\"message\":14,\"to\":\"store\",\"processor\":3,"
            "\"call\":7}\n"
            "{\"t\":6,\"kind\":\"test.named\",\"node\":\"store\",\"b\":9}\n");
}

TEST(TraceHash, DoesNotDependOnFieldNames) {
  Trace named;
  Trace unnamed;
  named.record(5, kNamed, 0, 14, 1, 2);
  unnamed.record(5, kSameNameUnnamed, 0, 14, 1, 2);
  EXPECT_EQ(named.hash(), unnamed.hash());
  unnamed.record(6, kSameNameUnnamed, 0, 0, 0, 0);
  EXPECT_NE(named.hash(), unnamed.hash());
}

}  // namespace trace_test
}  // namespace sim
