// check-history: the linearizability checker alone. A put then a get that sees it is linearizable; a get that
// returns nothing after the put had returned is not. Exit 0 when the checker says exactly that.
#include <lethe/check/store_model.hpp>

#include <cstdio>
#include <vector>

namespace {

lethe::StoreOperation operation(lethe::Op op, lethe::Reply reply, lethe::lin::Time invoked, lethe::lin::Time returned) {
  lethe::StoreOperation operation;
  operation.keys = op.keys();
  operation.invoked_at = invoked;
  operation.returned_at = returned;
  operation.input = std::move(op);
  operation.output = std::move(reply);
  return operation;
}

lethe::lin::Verdict put_then_get(bool get_sees_the_put) {
  lethe::Item item;
  item.counter = 7;
  lethe::Reply got;
  if (get_sees_the_put) got.previous = item;
  const std::vector<lethe::StoreOperation> history = {
      operation(lethe::put_op(1, item), lethe::Reply{}, 0, 10),
      operation(lethe::get_op(1), got, 20, 30),
  };
  return lethe::check_store_history(history).verdict;
}

}  // namespace

int main() {
  const auto fresh = put_then_get(true);
  const auto stale = put_then_get(false);
  std::printf("fresh read: %s; stale read: %s\n", lethe::lin::to_string(fresh).data(),
              lethe::lin::to_string(stale).data());
  return fresh == lethe::lin::Verdict::Linearizable && stale == lethe::lin::Verdict::NotLinearizable ? 0 : 1;
}
