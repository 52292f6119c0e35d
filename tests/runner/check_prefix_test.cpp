// The longest linearizable prefix drawn by `lethe check --html` (runner/check_prefix.hpp): windows of any length,
// and the linearized-set form the search memoizes on.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "check/register_model.hpp"
#include "runner/check_prefix.hpp"

namespace check_prefix_test {

using lethe::RegisterInput;
using lethe::RegisterOperation;
using lethe::RegisterOpKind;
using lethe::RegisterOutput;
namespace prefix = runner::prefix;

// n strictly sequential ops, writes and reads of the value just written, then a read of a value never written.
std::vector<RegisterOperation> sequential_then_bad_read(std::size_t n) {
  std::vector<RegisterOperation> ops;
  for (std::size_t i = 0; i < n; ++i) {
    RegisterOperation op;
    op.client = static_cast<std::uint32_t>(i % 5);
    op.invoked_at = static_cast<lethe::lin::Time>(2 * i);
    op.returned_at = op.invoked_at + 1;
    const auto value = static_cast<std::int64_t>(i / 2);
    op.input = i % 2 == 0 ? RegisterInput{RegisterOpKind::Write, value, 0} : RegisterInput{RegisterOpKind::Read, 0, 0};
    op.output = i % 2 == 0 ? RegisterOutput{} : RegisterOutput{true, value, true};
    ops.push_back(op);
  }
  RegisterOperation bad;
  bad.invoked_at = static_cast<lethe::lin::Time>(2 * n);
  bad.returned_at = bad.invoked_at + 1;
  bad.output = RegisterOutput{true, -7, true};
  ops.push_back(bad);
  return ops;
}

TEST(CheckPrefix, ASequentialWindowOf200000OpsHasEveryOpBeforeTheFailingOneInItsPrefix) {
  const std::vector<RegisterOperation> ops = sequential_then_bad_read(200'000);
  std::vector<const RegisterOperation*> window;
  for (const auto& op : ops) window.push_back(&op);
  const auto found = prefix::longest_prefix<lethe::RegisterModel>(window, 2'000'000);
  EXPECT_EQ(found.note, "");
  ASSERT_EQ(found.steps.size(), 200'000u);
  for (std::size_t i = 0; i < found.steps.size(); i += 997) EXPECT_EQ(found.steps[i].first, i);
  EXPECT_EQ(found.steps.back().second, std::optional<std::int64_t>(99'999));
}

TEST(CheckPrefix, ABudgetTooSmallSaysTheDrawnPrefixMayNotBeTheLongest) {
  const std::vector<RegisterOperation> ops = sequential_then_bad_read(1000);
  std::vector<const RegisterOperation*> window;
  for (const auto& op : ops) window.push_back(&op);
  const auto found = prefix::longest_prefix<lethe::RegisterModel>(window, 100);
  EXPECT_LT(found.steps.size(), 1000u);
  EXPECT_NE(found.note.find("stopped at its budget of 100 steps"), std::string::npos) << found.note;
}

// The search memoizes on the set: the same set must have one form whatever order its operations were added in.
TEST(CheckPrefix, ALinearizedSetHasOneFormWhateverTheOrderItsOperationsWereAddedIn) {
  std::vector<std::size_t> members = {0, 1, 2, 5, 63, 64, 65, 130, 131, 200};
  prefix::Linearized sorted;
  for (std::size_t i : members) sorted = sorted.with(i);
  EXPECT_EQ(sorted.low, 3u);
  for (std::size_t rotation = 0; rotation < members.size(); ++rotation) {
    std::vector<std::size_t> order = members;
    std::rotate(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(rotation), order.end());
    std::reverse(order.begin() + 1, order.end());
    prefix::Linearized built;
    for (std::size_t i : order) built = built.with(i);
    EXPECT_EQ(built, sorted) << "rotation " << rotation;
    for (std::size_t i = 0; i < 260; ++i) {
      EXPECT_EQ(built.has(i), std::find(members.begin(), members.end(), i) != members.end()) << i;
    }
  }
}

}  // namespace check_prefix_test
