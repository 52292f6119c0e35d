// Tests of check/history.hpp (the readers and the lethe writer) and of the register, key-value and observed-store
// models, checked with lethe::lin::check.
#include "check/history.hpp"
#include "check/linearizability_batch.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <variant>

namespace history_test {

namespace history = lethe::history;
using lethe::lin::kNever;
using lethe::lin::Verdict;

template <class Model, class H>
Verdict verdict_of(const H& recorded) {
  return lethe::lin::check<Model>(recorded.ops).verdict;
}

history::RegisterHistory register_edn(const std::string& text) {
  // Porcupine's etcd reading: a failed cas found another value (Knossos's readings: tests/check/jepsen_test.cpp).
  return std::get<history::RegisterHistory>(
      history::read_history("h.edn", text, history::Format::JepsenEdn, history::ModelKind::EtcdRegister));
}

TEST(HistoryJepsen, InfoIsAnUnknownOutcomeThatMayHaveTakenEffect) {
  const auto recorded = register_edn(
      "{:process 0, :type :invoke, :f :write, :value 3}\n"
      "{:process 0, :type :info, :f :write, :value 3}\n"
      "{:process 1, :type :invoke, :f :read, :value nil}\n"
      "{:process 1, :type :ok, :f :read, :value 3}\n");
  ASSERT_EQ(recorded.ops.size(), 2u);
  EXPECT_EQ(recorded.ops[0].returned_at, kNever);
  EXPECT_EQ(recorded.origins[0].return_line, 2u);
  EXPECT_EQ(verdict_of<lethe::RegisterModel>(recorded), Verdict::Linearizable);
}

TEST(HistoryJepsen, AFailedWriteDidNotApplyAndIsDropped) {
  const auto recorded = register_edn(
      "{:process 0, :type :invoke, :f :write, :value 5}\n"
      "{:process 0, :type :fail, :f :write, :value 5}\n"
      "{:process 1, :type :invoke, :f :read, :value nil}\n"
      "{:process 1, :type :ok, :f :read, :value 5}\n");
  ASSERT_EQ(recorded.ops.size(), 1u);
  EXPECT_EQ(verdict_of<lethe::RegisterModel>(recorded), Verdict::NotLinearizable);
}

TEST(HistoryJepsen, AFailedCasIsACasThatFoundAnotherValue) {
  const std::string prefix =
      "{:process 0, :type :invoke, :f :write, :value 1}\n"
      "{:process 0, :type :ok, :f :write, :value 1}\n";
  // cas(1, 2) failing while the value is 1 cannot be explained; failing on 7 can.
  const auto wrong = register_edn(prefix +
                                  "{:process 1, :type :invoke, :f :cas, :value [1 2]}\n"
                                  "{:process 1, :type :fail, :f :cas, :value [1 2]}\n");
  const auto right = register_edn(prefix +
                                  "{:process 1, :type :invoke, :f :cas, :value [7 2]}\n"
                                  "{:process 1, :type :fail, :f :cas, :value [7 2]}\n");
  EXPECT_EQ(verdict_of<lethe::RegisterModel>(wrong), Verdict::NotLinearizable);
  EXPECT_EQ(verdict_of<lethe::RegisterModel>(right), Verdict::Linearizable);
}

TEST(HistoryJepsen, TimeIsUsedWhenEveryLineHasItOtherwiseTheLinePosition) {
  const auto timed = register_edn(
      "{:process 0, :type :invoke, :f :read, :value nil, :time 100}\n"
      "{:process 0, :type :ok, :f :read, :value nil, :time 250}\n");
  EXPECT_TRUE(timed.timed);
  EXPECT_EQ(timed.ops[0].invoked_at, 100);
  EXPECT_EQ(timed.ops[0].returned_at, 250);
  const auto positions = std::get<history::RegisterHistory>(history::read_history(
      "h.log", "junk line\nINFO  jepsen.util - 4\t:invoke\t:read\tnil\nINFO  jepsen.util - 4\t:ok\t:read\tnil\n"));
  EXPECT_FALSE(positions.timed);
  EXPECT_EQ(positions.ops[0].invoked_at, 2);
  EXPECT_EQ(positions.ops[0].returned_at, 3);
  EXPECT_EQ(positions.ops[0].client, 4u);
}

TEST(HistoryJepsen, KeyValueOpsArePartitionedByKeyInSortedOrderOfNames) {
  const auto recorded = std::get<history::KvHistory>(history::read_history(
      "kv.txt",
      "{:process 0, :type :invoke, :f :append, :key \"b\", :value \"x\"}\n"
      "{:process 0, :type :ok, :f :append, :key \"b\", :value \"x\"}\n"
      "{:process 1, :type :invoke, :f :put, :key \"a\", :value \"y\"}\n"
      "{:process 1, :type :ok, :f :put, :key \"a\", :value \"y\"}\n"
      "{:process 0, :type :invoke, :f :get, :key \"b\", :value nil}\n"
      "{:process 0, :type :ok, :f :get, :key \"b\", :value \"x\"}\n"));
  ASSERT_EQ(recorded.key_names, (std::vector<std::string>{"\"a\"", "\"b\""}));
  EXPECT_EQ(recorded.ops[0].keys, (std::vector<std::uint64_t>{1}));
  EXPECT_EQ(verdict_of<lethe::KvModel>(recorded), Verdict::Linearizable);
  auto changed = recorded;
  changed.ops[2].output.value = "xx";
  EXPECT_EQ(verdict_of<lethe::KvModel>(changed), Verdict::NotLinearizable);
}

TEST(HistoryJepsen, BadInputNamesTheLineAndWhatWasExpected) {
  const auto message = [](const std::string& text) {
    try {
      history::read_history("bad.edn", text, history::Format::JepsenEdn);
    } catch (const history::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("{:process 0, :type :invoke, :f :write, :value 1}\n{:process 0, :type :invoke, :f :read, :value nil}\n"),
            "bad.edn:2: process 0 invokes :read while its invocation on line 1 has no response yet; expected :ok, "
            ":fail or :info for it first");
  EXPECT_EQ(message("{:process 0, :type :invoke, :f :write, :value \"one\"}\n"),
            "bad.edn:1:47: the value of a write is \"one\"; expected an integer (register models hold 64-bit integers)");
  EXPECT_EQ(message("{:process 0, :type :begun, :f :write, :value 1}\n"),
            "bad.edn:1:20: :type is :begun; allowed: :invoke, :ok, :fail, :info");
  EXPECT_EQ(message("{:process 0, :type :invoke, :f :write, :value 1}\n{:process 0, :type :ok, :f :read, :value 1}\n"),
            "bad.edn:2: a response :read to the invocation :write on line 1; expected :write");
}

// ---------------------------------------------------------------- the lethe format and the observed store model

lethe::StoreOperation answered(std::uint32_t client, lethe::lin::Time from, lethe::lin::Time to, lethe::Op op,
                               lethe::Reply reply) {
  lethe::StoreOperation operation;
  operation.client = client;
  operation.keys = op.keys();
  operation.invoked_at = from;
  operation.returned_at = to;
  operation.input = std::move(op);
  operation.output = std::move(reply);
  return operation;
}

std::vector<lethe::StoreOperation> every_kind() {
  using namespace lethe;
  Item item;
  item.started_at = 5;
  item.owner = 9;
  item.memoized = 3;
  item.counter = -2;
  Condition condition;
  condition.require_absent = true;
  condition.owner_equals = 4;
  condition.absent_or_expired_at = 11;
  Update update;
  update.started_at_mode = Assign::SetIfAbsent;
  update.started_at = 12;
  update.owner_mode = Assign::Remove;
  update.memoized_mode = Assign::Set;
  update.memoized = 8;
  update.counter_add = 3;
  update.replace_expired_at = 13;
  std::vector<StoreOperation> ops;
  ops.push_back(answered(1, 10, 20, put_op(7, item), Reply{true, std::nullopt, {}}));
  ops.push_back(answered(2, 30, 40, get_op(7), Reply{true, item, {}}));
  ops.push_back(answered(3, 50, 60, upsert_op(7, condition, update), Reply{false, item, {}}));
  ops.push_back(answered(1, 70, 80, transaction_op({TransactionPart{7, Condition{}, update}, TransactionPart{8, condition, Update{}}}),
                         Reply{true, std::nullopt, {item, std::nullopt}}));
  ops.push_back(answered(0, 90, 90, evict_op(8, 90), Reply{false, std::nullopt, {}}));
  StoreOperation lost = answered(2, 95, kNever, delete_op(7), Reply{});
  ops.push_back(lost);
  return ops;
}

TEST(HistoryLethe, AWrittenStoreHistoryReadsBackAsTheSameOperations) {
  const auto ops = every_kind();
  std::ostringstream out;
  history::write_store_history(out, ops);
  const auto recorded = std::get<history::StoreHistory>(history::read_history("h.jsonl", out.str()));
  ASSERT_EQ(recorded.ops.size(), ops.size());
  EXPECT_TRUE(recorded.timed);
  for (std::size_t index = 0; index < ops.size(); ++index) {
    const auto& read = recorded.ops[index];
    EXPECT_EQ(read.client, ops[index].client) << index;
    EXPECT_EQ(read.keys, ops[index].keys) << index;
    EXPECT_EQ(read.invoked_at, ops[index].invoked_at) << index;
    EXPECT_EQ(read.returned_at, ops[index].returned_at) << index;
    EXPECT_EQ(read.input, ops[index].input) << index;
    if (read.returned_at == kNever) continue;
    EXPECT_EQ(read.output.reply, ops[index].output) << index;
    EXPECT_TRUE(read.output.applied_observed && read.output.previous_observed) << index;
  }
}

std::string store_line(const std::string& op, const std::string& reply, int from, int to) {
  return "{\"client\":1,\"invoked_at\":" + std::to_string(from) + ",\"returned_at\":" + std::to_string(to) +
         ",\"op\":" + op + ",\"reply\":" + reply + "}\n";
}

Verdict store_verdict(const std::string& text) {
  const auto recorded = std::get<history::StoreHistory>(history::read_history("h.jsonl", text));
  return verdict_of<lethe::ObservedStoreModel>(recorded);
}

TEST(ObservedStoreModel, AWriteWhosePreviousItemWasNotObservedIsStillChecked) {
  const std::string put = R"({"kind":"put","key":7,"item":{"counter":4}})";
  const std::string get = R"({"kind":"get","key":7})";
  // The put's reply says only that it applied; the read after it must still see its item.
  EXPECT_EQ(store_verdict(store_line(put, R"({"applied":true})", 1, 2) + store_line(get, R"({"previous":{"counter":4}})", 3, 4)),
            Verdict::Linearizable);
  EXPECT_EQ(store_verdict(store_line(put, R"({"applied":true})", 1, 2) + store_line(get, R"({"previous":{"counter":5}})", 3, 4)),
            Verdict::NotLinearizable);
  // Observed, a wrong previous item is caught; a reply with nothing observed matches any.
  EXPECT_EQ(store_verdict(store_line(put, R"({"applied":true,"previous":{"counter":1}})", 1, 2)), Verdict::NotLinearizable);
  EXPECT_EQ(store_verdict(store_line(put, "{}", 1, 2) + store_line(get, R"({"previous":{"counter":4}})", 3, 4)),
            Verdict::Linearizable);
}

}  // namespace history_test
