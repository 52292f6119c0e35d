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

// keep_only keeps the records of the kinds named, in order, and nothing else; the hash and count cover every record.
TEST(TraceRecords, KeepOnlyKeepsTheKindsNamedAndHashesEveryRecord) {
  constexpr TraceKind kA{"test.a", "x"};
  constexpr TraceKind kB{"test.b", "x"};
  Trace all;
  all.keep_records(true);
  Trace some;
  some.keep_records(true);
  some.keep_only({"test.b"});
  for (std::uint64_t i = 0; i < 6; ++i) {
    all.record(static_cast<Time>(i), i % 2 == 0 ? kA : kB, 0, i);
    some.record(static_cast<Time>(i), i % 2 == 0 ? kA : kB, 0, i);
  }
  ASSERT_EQ(all.records().size(), 6u);
  ASSERT_EQ(some.records().size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(some.records()[i].kind_name, "test.b");
    EXPECT_EQ(some.records()[i].a, 2 * i + 1);
  }
  EXPECT_EQ(some.hash(), all.hash());
  EXPECT_EQ(some.count(), 6u);
}

}  // namespace trace_test
}  // namespace sim
