// Tests of check/linearizability.hpp with a register model defined here: read, write, compare-and-set, upsert that
// returns the previous value (the store's primitive), and two-key read/write transactions.
#include "check/linearizability.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <fmt/format.h>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace linearizability_test {

using lethe::lin::kNever;
using lethe::lin::Time;
using lethe::lin::Verdict;

enum class Kind { Read, Write, CompareAndSet, Upsert, ReadPair, WritePair };

struct RegisterInput {
  Kind kind = Kind::Read;
  std::uint64_t key = 0;
  std::int64_t value = 0;     // Write, Upsert, WritePair (for `key`); CompareAndSet: the new value
  std::int64_t expected = 0;  // CompareAndSet
  std::uint64_t second_key = 0;    // ReadPair, WritePair
  std::int64_t second_value = 0;   // WritePair (for `second_key`)
};

struct RegisterOutput {
  std::optional<std::int64_t> value;         // Read, Upsert (previous value), ReadPair (of `key`)
  std::optional<std::int64_t> second_value;  // ReadPair (of `second_key`)
  bool ok = true;                            // CompareAndSet: whether it swapped
  bool operator==(const RegisterOutput&) const = default;
};

std::string show(const std::optional<std::int64_t>& value) {
  return value ? std::to_string(*value) : std::string("absent");
}

// Sequential specification: a map from key to value; a key never written is absent.
struct RegisterModel {
  using State = std::vector<std::pair<std::uint64_t, std::int64_t>>;  // sorted by key

  static State initial() { return {}; }

  static std::optional<std::int64_t> get(const State& state, std::uint64_t key) {
    auto found = std::lower_bound(state.begin(), state.end(), key,
                                  [](const auto& entry, std::uint64_t wanted) { return entry.first < wanted; });
    if (found == state.end() || found->first != key) return std::nullopt;
    return found->second;
  }

  static void set(State& state, std::uint64_t key, std::int64_t value) {
    auto found = std::lower_bound(state.begin(), state.end(), key,
                                  [](const auto& entry, std::uint64_t wanted) { return entry.first < wanted; });
    if (found != state.end() && found->first == key) {
      found->second = value;
    } else {
      state.insert(found, {key, value});
    }
  }

  static std::pair<State, RegisterOutput> step(const State& state, const RegisterInput& input) {
    State next = state;
    RegisterOutput output;
    switch (input.kind) {
      case Kind::Read: output.value = get(state, input.key); break;
      case Kind::Write: set(next, input.key, input.value); break;
      case Kind::CompareAndSet:
        output.ok = get(state, input.key) == input.expected;
        if (output.ok) set(next, input.key, input.value);
        break;
      case Kind::Upsert:
        output.value = get(state, input.key);
        set(next, input.key, input.value);
        break;
      case Kind::ReadPair:
        output.value = get(state, input.key);
        output.second_value = get(state, input.second_key);
        break;
      case Kind::WritePair:
        set(next, input.key, input.value);
        set(next, input.second_key, input.second_value);
        break;
    }
    return {std::move(next), output};
  }

  static std::uint64_t hash(const State& state) {
    std::uint64_t hash = 1469598103934665603ULL;
    for (const auto& [key, value] : state) {
      hash = (hash ^ key) * 1099511628211ULL;
      hash = (hash ^ static_cast<std::uint64_t>(value)) * 1099511628211ULL;
    }
    return hash;
  }

  static bool output_matches(const RegisterOutput& expected, const RegisterOutput& observed) {
    return expected == observed;
  }

  // For the incremental checker.
  static bool read_only(const RegisterInput& input) { return input.kind == Kind::Read || input.kind == Kind::ReadPair; }
  static void merge(State& into, const State& from) {
    for (const auto& [key, value] : from) set(into, key, value);
  }

  static std::string describe(const RegisterInput& input, const RegisterOutput& output) {
    const std::string key = "k" + std::to_string(input.key);
    switch (input.kind) {
      case Kind::Read: return "read(" + key + ") -> " + show(output.value);
      case Kind::Write: return "write(" + key + ", " + std::to_string(input.value) + ") -> ok";
      case Kind::CompareAndSet:
        return "cas(" + key + ", " + std::to_string(input.expected) + " -> " + std::to_string(input.value) +
               ") -> " + (output.ok ? "swapped" : "refused");
      case Kind::Upsert:
        return "upsert(" + key + ", " + std::to_string(input.value) + ") -> previous " + show(output.value);
      case Kind::ReadPair:
        return "read(" + key + ", k" + std::to_string(input.second_key) + ") -> " + show(output.value) + ", " +
               show(output.second_value);
      case Kind::WritePair:
        return "write(" + key + " = " + std::to_string(input.value) + ", k" + std::to_string(input.second_key) +
               " = " + std::to_string(input.second_value) + ") -> ok";
    }
    return "?";
  }
};

using Op = lethe::lin::Operation<RegisterInput, RegisterOutput>;
using History = std::vector<Op>;

lethe::lin::Result check(const History& history, std::uint64_t budget = 10'000'000) {
  return lethe::lin::check<RegisterModel>(history, budget);
}

Op read(std::uint32_t client, std::uint64_t key, Time invoked, Time returned, std::optional<std::int64_t> seen) {
  return Op{client, {key}, invoked, returned, RegisterInput{Kind::Read, key}, RegisterOutput{seen, {}, true}};
}
Op write(std::uint32_t client, std::uint64_t key, std::int64_t value, Time invoked, Time returned) {
  return Op{client, {key}, invoked, returned, RegisterInput{Kind::Write, key, value}, RegisterOutput{}};
}
Op cas(std::uint32_t client, std::uint64_t key, std::int64_t expected, std::int64_t value, Time invoked, Time returned,
       bool swapped) {
  return Op{client, {key}, invoked, returned, RegisterInput{Kind::CompareAndSet, key, value, expected},
            RegisterOutput{{}, {}, swapped}};
}
Op upsert(std::uint32_t client, std::uint64_t key, std::int64_t value, Time invoked, Time returned,
          std::optional<std::int64_t> previous) {
  return Op{client, {key}, invoked, returned, RegisterInput{Kind::Upsert, key, value}, RegisterOutput{previous, {}, true}};
}
Op read_pair(std::uint32_t client, std::uint64_t key, std::uint64_t second_key, Time invoked, Time returned,
             std::optional<std::int64_t> seen, std::optional<std::int64_t> second_seen) {
  return Op{client, {key, second_key}, invoked, returned, RegisterInput{Kind::ReadPair, key, 0, 0, second_key, 0},
            RegisterOutput{seen, second_seen, true}};
}
Op write_pair(std::uint32_t client, std::uint64_t key, std::int64_t value, std::uint64_t second_key,
              std::int64_t second_value, Time invoked, Time returned) {
  return Op{client, {key, second_key}, invoked, returned,
            RegisterInput{Kind::WritePair, key, value, 0, second_key, second_value}, RegisterOutput{}};
}

// ---------------------------------------------------------------------------------------------------------------
// Hand-written histories.

TEST(Linearizability, EmptyHistoryIsLinearizable) {
  const auto result = check({});
  EXPECT_EQ(result.verdict, Verdict::Linearizable);
  EXPECT_EQ(result.partitions, 0U);
  EXPECT_EQ(result.steps, 0U);
}

TEST(Linearizability, SequentialHistoryOfEveryOperationIsAccepted) {
  const History history = {
      read(0, 1, 0, 5, std::nullopt),   write(0, 1, 5, 10, 20),       read(1, 1, 30, 40, 5),
      cas(1, 1, 5, 6, 50, 60, true),    cas(0, 1, 5, 7, 70, 80, false), upsert(1, 1, 8, 90, 100, 6),
      upsert(0, 1, 9, 110, 120, 8),     read(0, 1, 130, 140, 9),
  };
  const auto result = check(history);
  EXPECT_EQ(result.verdict, Verdict::Linearizable) << result.explanation;
  EXPECT_EQ(result.partitions, 1U);
  EXPECT_TRUE(result.offending_ops.empty());
  EXPECT_TRUE(result.explanation.empty());
  EXPECT_GE(result.steps, history.size());
}

TEST(Linearizability, SequentialHistoryWithAWrongCompareAndSetAnswerIsRejected) {
  const History history = {write(0, 1, 5, 0, 10), cas(1, 1, 5, 6, 20, 30, false)};
  EXPECT_EQ(check(history).verdict, Verdict::NotLinearizable);
}

TEST(Linearizability, OverlappingWritesMayTakeEffectInEitherOrder) {
  for (const std::int64_t seen : {1, 2}) {
    const History history = {write(0, 1, 1, 0, 10), write(1, 1, 2, 5, 20), read(2, 1, 30, 40, seen)};
    EXPECT_EQ(check(history).verdict, Verdict::Linearizable) << "read saw " << seen;
  }
}

TEST(Linearizability, ReadOverlappingAWriteMaySeeTheOldOrTheNewValue) {
  for (const auto seen : {std::optional<std::int64_t>{}, std::optional<std::int64_t>{7}}) {
    const History history = {write(0, 1, 7, 0, 100), read(1, 1, 10, 20, seen)};
    EXPECT_EQ(check(history).verdict, Verdict::Linearizable) << "read saw " << show(seen);
  }
}

TEST(Linearizability, OnceANewValueIsSeenAnOverlappingLaterReadCannotSeeTheOldOne) {
  // Both reads overlap the write, but the first read returned before the second began.
  const History history = {write(0, 1, 7, 0, 100), read(1, 1, 10, 20, 7), read(2, 1, 30, 40, std::nullopt)};
  EXPECT_EQ(check(history).verdict, Verdict::NotLinearizable);
}

TEST(Linearizability, StaleReadIsRejected) {
  const History history = {write(0, 1, 1, 0, 10), write(0, 1, 2, 20, 30), read(1, 1, 40, 50, 1)};
  const auto result = check(history);
  EXPECT_EQ(result.verdict, Verdict::NotLinearizable);
  EXPECT_EQ(result.offending_ops, (std::vector<std::size_t>{0, 1, 2}));
}

TEST(Linearizability, LostWriteIsRejected) {
  // The write was acknowledged, yet a read that began afterwards does not see it.
  const History history = {write(0, 1, 1, 0, 10), write(1, 1, 2, 20, 30), read(2, 1, 40, 50, 1),
                           read(2, 1, 60, 70, 1)};
  EXPECT_EQ(check(history).verdict, Verdict::NotLinearizable);
  const History into_nothing = {write(0, 1, 3, 0, 10), read(1, 1, 20, 30, std::nullopt)};
  EXPECT_EQ(check(into_nothing).verdict, Verdict::NotLinearizable);
}

TEST(Linearizability, NonAtomicUpsertWhereTwoOverlappingUpsertsBothSeeAbsentIsRejected) {
  const History history = {upsert(0, 1, 10, 0, 100, std::nullopt), upsert(1, 1, 11, 5, 90, std::nullopt)};
  const auto result = check(history);
  EXPECT_EQ(result.verdict, Verdict::NotLinearizable);
  EXPECT_EQ(result.offending_ops, (std::vector<std::size_t>{0, 1}));
  const History atomic = {upsert(0, 1, 10, 0, 100, std::nullopt), upsert(1, 1, 11, 5, 90, 10)};
  EXPECT_EQ(check(atomic).verdict, Verdict::Linearizable);
}

TEST(Linearizability, OperationWithoutResponseMayOrMayNotHaveTakenEffect) {
  const History took_effect = {write(0, 1, 1, 0, kNever), read(1, 1, 10, 20, 1)};
  EXPECT_EQ(check(took_effect).verdict, Verdict::Linearizable);
  const History never_did = {write(0, 1, 1, 0, kNever), read(1, 1, 10, 20, std::nullopt)};
  EXPECT_EQ(check(never_did).verdict, Verdict::Linearizable);
  // It can take effect long after the caller gave up: after other operations of the same client.
  const History late = {write(0, 1, 1, 0, kNever), read(0, 1, 10, 20, std::nullopt), read(0, 1, 30, 40, 1)};
  EXPECT_EQ(check(late).verdict, Verdict::Linearizable);
  // Its recorded output is ignored: this upsert "says" absent but took effect after the read of 1.
  const History output_ignored = {write(0, 1, 1, 0, 10), upsert(1, 1, 2, 20, kNever, std::nullopt),
                                  read(2, 1, 30, 40, 2)};
  EXPECT_EQ(check(output_ignored).verdict, Verdict::Linearizable);
}

TEST(Linearizability, OperationWithoutResponseCannotTakeEffectBeforeItsInvocationNorBeUndone) {
  const History too_early = {read(1, 1, 0, 5, 1), write(0, 1, 1, 10, kNever)};
  EXPECT_EQ(check(too_early).verdict, Verdict::NotLinearizable);
  const History undone = {write(0, 1, 1, 0, kNever), read(1, 1, 10, 20, 1), read(1, 1, 30, 40, std::nullopt)};
  EXPECT_EQ(check(undone).verdict, Verdict::NotLinearizable);
}

TEST(Linearizability, ResponseAndInvocationAtTheSameInstantCountAsConcurrent) {
  const History history = {write(0, 1, 1, 0, 10), read(1, 1, 10, 20, std::nullopt)};
  EXPECT_EQ(check(history).verdict, Verdict::Linearizable);
  const History one_later = {write(0, 1, 1, 0, 10), read(1, 1, 11, 20, std::nullopt)};
  EXPECT_EQ(check(one_later).verdict, Verdict::NotLinearizable);
}

TEST(Linearizability, OffendingWindowIsTheShortestFailingPrefixByInvocationTime) {
  // Listed out of invocation order on purpose; the stale read is op #1 (invoked 4th), and op #4 (invoked 5th)
  // would also fail, but later.
  const History history = {
      write(0, 1, 2, 20, 30),      // #0, invoked 2nd
      read(1, 1, 40, 50, 1),       // #1, invoked 4th: stale, op #0 returned before it began
      write(0, 1, 1, 0, 10),       // #2, invoked 1st
      read(2, 1, 35, 38, 2),       // #3, invoked 3rd
      read(2, 1, 60, 70, 1),       // #4, invoked 5th: stale too
      write(1, 1, 3, 80, 90),      // #5
  };
  const auto result = check(history);
  ASSERT_EQ(result.verdict, Verdict::NotLinearizable);
  EXPECT_EQ(result.offending_ops, (std::vector<std::size_t>{2, 0, 3, 1}));
  // The explanation names each op of the window with its client, times, input and output.
  EXPECT_NE(result.explanation.find("#1 client 1 [40ns, 50ns] read(k1) -> 1"), std::string::npos)
      << result.explanation;
  EXPECT_NE(result.explanation.find("#2 client 0 [0s, 10ns] write(k1, 1) -> ok"), std::string::npos);
  EXPECT_EQ(result.explanation.find("#4 "), std::string::npos);
  EXPECT_NE(result.explanation.find("keys {1}"), std::string::npos);
}

TEST(Linearizability, OffendingWindowOnlyCountsOpsOfTheFailingPartition) {
  const History history = {
      write(0, 7, 1, 0, 10),                 // #0 other key, fine
      write(0, 3, 1, 0, 10),                 // #1
      read(1, 7, 15, 18, 1),                 // #2 other key, fine
      read(1, 3, 20, 30, std::nullopt),      // #3 lost write of #1
  };
  const auto result = check(history);
  ASSERT_EQ(result.verdict, Verdict::NotLinearizable);
  EXPECT_EQ(result.partitions, 2U);
  EXPECT_EQ(result.offending_ops, (std::vector<std::size_t>{1, 3}));
}

TEST(Linearizability, WindowTreatsLaterInvokedOpsAsPossiblyEffective) {
  // The read (invoked first) sees 5, written by a write invoked later but overlapping it: linearizable, and the
  // one-op prefix {read} alone must not be reported as failing when a later op fails.
  const History history = {
      read(0, 1, 0, 100, 5),          // #0
      write(1, 1, 5, 10, 20),         // #1
      read(2, 1, 200, 210, std::nullopt),  // #2: the write is lost
  };
  const auto result = check(history);
  ASSERT_EQ(result.verdict, Verdict::NotLinearizable);
  EXPECT_EQ(result.offending_ops, (std::vector<std::size_t>{0, 1, 2}));
}

TEST(Linearizability, StepBudgetExhaustionGivesUnknown) {
  // Twelve overlapping writes and a read of a value nobody wrote: the search must rule out every order.
  History history;
  for (std::uint32_t client = 0; client < 12; ++client) {
    history.push_back(write(client, 1, client + 1, static_cast<Time>(client), 1000));
  }
  history.push_back(read(99, 1, 2000, 2010, 99));
  const auto limited = check(history, 100);
  EXPECT_EQ(limited.verdict, Verdict::Unknown);
  EXPECT_LE(limited.steps, 100U);
  EXPECT_TRUE(limited.offending_ops.empty());
  EXPECT_NE(limited.explanation.find("budget"), std::string::npos);
  const auto full = check(history);
  EXPECT_EQ(full.verdict, Verdict::NotLinearizable);
  EXPECT_GT(full.steps, 100U);
}

TEST(Linearizability, BudgetIsSharedByAllPartitions) {
  History history;
  for (std::uint64_t key = 0; key < 10; ++key) {
    history.push_back(write(0, key, 1, static_cast<Time>(10 * key), static_cast<Time>(10 * key + 5)));
  }
  EXPECT_EQ(check(history, 10).verdict, Verdict::Linearizable);
  EXPECT_EQ(check(history, 9).verdict, Verdict::Unknown);
}

TEST(Linearizability, MultiKeyTransactionsJoinTheirKeysIntoOnePartition) {
  const History history = {
      write_pair(0, 1, 1, 2, 1, 0, 100),            // joins keys 1 and 2
      read(1, 1, 10, 20, 1),                        // the transaction took effect before t = 20 ...
      read(2, 2, 30, 40, std::nullopt),             // ... yet key 2 still absent after t = 30
      write(3, 3, 1, 0, 10),                        // key 3 alone
      write_pair(4, 4, 1, 5, 1, 0, 10),             // keys 4, 5
      read_pair(4, 5, 6, 20, 30, 1, std::nullopt),  // keys 5, 6: chains 4-5-6
  };
  const auto result = check(history);
  EXPECT_EQ(result.partitions, 3U);
  ASSERT_EQ(result.verdict, Verdict::NotLinearizable);
  EXPECT_EQ(result.offending_ops, (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_NE(result.explanation.find("keys {1, 2}"), std::string::npos) << result.explanation;

  // Each key on its own would look fine: checked separately, both sub-histories are linearizable.
  const History key_one = {write(0, 1, 1, 0, 100), read(1, 1, 10, 20, 1)};
  const History key_two = {write(0, 2, 1, 0, 100), read(2, 2, 30, 40, std::nullopt)};
  EXPECT_EQ(check(key_one).verdict, Verdict::Linearizable);
  EXPECT_EQ(check(key_two).verdict, Verdict::Linearizable);

  const History consistent = {write_pair(0, 1, 1, 2, 1, 0, 100), read(1, 1, 10, 20, 1), read(2, 2, 30, 40, 1)};
  EXPECT_EQ(check(consistent).verdict, Verdict::Linearizable);
}

TEST(Linearizability, ManyOperationsWithoutResponseStayCheap) {
  // 40 lost writes and 40 lost reads overlapping everything, then reads that pin down a few of the writes.
  History history;
  for (std::uint32_t client = 0; client < 40; ++client) {
    history.push_back(write(client, 1, client + 1, static_cast<Time>(client), kNever));
    history.push_back(read(client + 100, 1, static_cast<Time>(client), kNever, std::nullopt));
  }
  for (std::int64_t seen = 1; seen <= 5; ++seen) {
    history.push_back(read(200, 1, 1000 + 10 * seen, 1005 + 10 * seen, seen * 7));
  }
  const auto result = check(history, 2'000'000);
  EXPECT_EQ(result.verdict, Verdict::Linearizable) << result.explanation;
  EXPECT_LT(result.steps, 200'000U);
}

TEST(Linearizability, ManyLostWritesDoNotMakeAFailingSearchExponential) {
  // 30 blind writes whose responses were lost, then reads: the last one sees a value nobody wrote, so the search
  // must rule out every placement of every lost write (2^30 subsets without pruning).
  History history;
  for (std::uint32_t client = 0; client < 30; ++client) {
    history.push_back(write(client, 1, client + 1, static_cast<Time>(client), kNever));
  }
  history.push_back(read(100, 1, 1000, 1010, 7));
  history.push_back(read(100, 1, 1020, 1030, 14));
  history.push_back(read(100, 1, 1040, 1050, 999));
  const auto result = check(history, 1'000'000);
  ASSERT_EQ(result.verdict, Verdict::NotLinearizable) << result.explanation;
  EXPECT_EQ(result.offending_ops.size(), history.size());
  EXPECT_LT(result.steps, 100'000U);
}

TEST(Linearizability, ExplanationOfALongWindowListsItsEndsAndEveryIndexIsKept) {
  History history;
  for (std::int64_t value = 1; value <= 100; ++value) {
    history.push_back(write(0, 1, value, 10 * value, 10 * value + 5));
  }
  history.push_back(read(1, 1, 2000, 2010, 1));
  const auto result = check(history);
  ASSERT_EQ(result.verdict, Verdict::NotLinearizable);
  ASSERT_EQ(result.offending_ops.size(), 101U);
  for (std::size_t index = 0; index < 101; ++index) EXPECT_EQ(result.offending_ops[index], index);
  EXPECT_NE(result.explanation.find("37 ops omitted"), std::string::npos) << result.explanation;
  EXPECT_NE(result.explanation.find("#0 client 0 [10ns, 15ns] write(k1, 1) -> ok"), std::string::npos);
  EXPECT_NE(result.explanation.find("#100 client 1 [2us, 2.01us] read(k1) -> 1"), std::string::npos);
  EXPECT_EQ(result.explanation.find("#20 "), std::string::npos);
}

// A counter whose State has no default constructor; adds accumulate, so lost adds are never absorbed.
struct Counter {
  explicit Counter(std::int64_t start) : total(start) {}
  std::int64_t total;
  bool operator==(const Counter&) const = default;
};
struct CounterInput {
  std::int64_t add = 0;  // 0: read
};
struct CounterModel {
  using State = Counter;
  static State initial() { return Counter{0}; }
  static std::pair<State, std::int64_t> step(const State& state, const CounterInput& input) {
    return {Counter{state.total + input.add}, state.total + input.add};
  }
  static std::uint64_t hash(const State& state) { return static_cast<std::uint64_t>(state.total); }
  static bool output_matches(std::int64_t expected, std::int64_t observed) { return expected == observed; }
  static std::string describe(const CounterInput& input, std::int64_t output) {
    return (input.add == 0 ? std::string("read") : "add(" + std::to_string(input.add) + ")") + " -> " +
           std::to_string(output);
  }
};

TEST(Linearizability, LostAddsOfACounterMayEachHaveTakenEffectOrNot) {
  using CounterOp = lethe::lin::Operation<CounterInput, std::int64_t>;
  std::vector<CounterOp> history = {
      CounterOp{0, {1}, 0, 10, CounterInput{1}, 1},
      CounterOp{1, {1}, 0, kNever, CounterInput{2}, 0},
      CounterOp{2, {1}, 5, kNever, CounterInput{4}, 0},
  };
  for (const std::int64_t seen : {1, 3, 5, 7}) {
    history.push_back(CounterOp{3, {1}, 20, 30, CounterInput{0}, seen});
    EXPECT_EQ(lethe::lin::check<CounterModel>(history).verdict, Verdict::Linearizable) << "read saw " << seen;
    history.pop_back();
  }
  for (const std::int64_t seen : {0, 2, 4, 6, 8}) {
    history.push_back(CounterOp{3, {1}, 20, 30, CounterInput{0}, seen});
    EXPECT_EQ(lethe::lin::check<CounterModel>(history).verdict, Verdict::NotLinearizable) << "read saw " << seen;
    history.pop_back();
  }
}

TEST(Linearizability, MalformedOperationsAreRefused) {
  History no_key = {write(0, 1, 1, 0, 10)};
  no_key[0].keys.clear();
  EXPECT_THROW(check(no_key), std::invalid_argument);
  const History backwards = {write(0, 1, 1, 10, 5)};
  EXPECT_THROW(check(backwards), std::invalid_argument);
}

TEST(Linearizability, VerdictToString) {
  EXPECT_EQ(lethe::lin::to_string(Verdict::Linearizable), "linearizable");
  EXPECT_EQ(lethe::lin::to_string(Verdict::NotLinearizable), "not linearizable");
  EXPECT_EQ(lethe::lin::to_string(Verdict::Unknown), "unknown");
}

// ---------------------------------------------------------------------------------------------------------------
// Generated histories: a correct atomic register applies each operation at one instant inside its interval.

struct Generated {
  History history;
  std::vector<Time> effect_at;  // instant the operation took effect (kNever: it never did)
};

// Every written value is unique: operation i writes 1000 * (i + 1) to its first key and that + 1 to its second.
std::int64_t unique_value(std::size_t index) { return 1000 * static_cast<std::int64_t>(index + 1); }

// Replays the operations in effect order through the model and fills in every output. `skip` (if any) takes no
// effect but still gets the output it would have had: that is a store that acknowledges a write and loses it.
void replay(Generated& generated, std::size_t skip = SIZE_MAX) {
  std::vector<std::size_t> order;
  for (std::size_t index = 0; index < generated.history.size(); ++index) {
    if (generated.effect_at[index] != kNever) order.push_back(index);
  }
  std::stable_sort(order.begin(), order.end(), [&generated](std::size_t left, std::size_t right) {
    return generated.effect_at[left] < generated.effect_at[right];
  });
  RegisterModel::State state = RegisterModel::initial();
  for (std::size_t index : order) {
    auto [next, output] = RegisterModel::step(state, generated.history[index].input);
    generated.history[index].output = output;
    if (index != skip) state = std::move(next);
  }
}

// Draws a history: `clients` clients, each running its operations one after another over `keys` keys; about one
// operation in `lost_one_in` loses its response.
Generated generate(int max_clients, int max_keys, int max_ops, bool allow_pairs, int lost_one_in = 10) {
  const int clients = *rc::gen::inRange(1, max_clients + 1);
  const int keys = *rc::gen::inRange(1, max_keys + 1);
  const int count = *rc::gen::inRange(0, max_ops + 1);
  Generated generated;
  std::vector<Time> free_at(static_cast<std::size_t>(clients), 0);
  for (int index = 0; index < count; ++index) {
    const auto i = static_cast<std::size_t>(index);
    const auto client = static_cast<std::uint32_t>(*rc::gen::inRange(0, clients));
    const int kinds = allow_pairs && keys >= 2 ? 6 : 4;
    const auto kind = static_cast<Kind>(*rc::gen::inRange(0, kinds));
    const auto key = static_cast<std::uint64_t>(*rc::gen::inRange(0, keys));
    const Time gap = *rc::gen::inRange<Time>(0, 20);
    const Time duration = *rc::gen::inRange<Time>(0, 40);
    const Time invoked = free_at[client] + gap;
    Time returned = invoked + duration;
    Time effect = invoked + duration * *rc::gen::inRange<Time>(0, 1001) / 1000;
    if (*rc::gen::inRange(0, lost_one_in) == 0) {  // lost response: takes effect any time after invocation, or never
      returned = kNever;
      effect = *rc::gen::inRange(0, 3) == 0 ? kNever : invoked + *rc::gen::inRange<Time>(0, 150);
    }
    free_at[client] = invoked + duration;  // a caller that lost its response moves on after its timeout

    RegisterInput input{kind, key, unique_value(i), 0, (key + 1) % static_cast<std::uint64_t>(keys),
                        unique_value(i) + 1};
    if (kind == Kind::CompareAndSet && index > 0) {  // expect a value written earlier: it may be current
      input.expected = unique_value(static_cast<std::size_t>(*rc::gen::inRange(0, index)));
    }
    Op op{client, {key}, invoked, returned, input, RegisterOutput{}};
    if (kind == Kind::ReadPair || kind == Kind::WritePair) op.keys.push_back(input.second_key);
    generated.history.push_back(std::move(op));
    generated.effect_at.push_back(effect);
  }
  replay(generated);
  return generated;
}

// A sufficient condition for non-linearizability that does not use the checker. An answered read or upsert R of
// key k saw value u; only one operation W1 ever writes u to k (values are unique), or u is "absent" and nobody
// writes that. If some answered operation W2 != W1 that certainly modified k (write, upsert, successful
// compare-and-set, pair write) returned before R began, and W1 returned before W2 began (or u is absent), then
// every real-time order puts W1 < W2 < R, so R cannot have seen u.
bool observably_broken(const History& history) {
  auto writes_to = [&history](std::size_t index, std::uint64_t key) -> std::optional<std::int64_t> {
    const Op& op = history[index];
    if (op.returned_at == kNever) return std::nullopt;
    const RegisterInput& in = op.input;
    switch (in.kind) {
      case Kind::Write:
      case Kind::Upsert:
        if (in.key == key) return in.value;
        break;
      case Kind::CompareAndSet:
        if (in.key == key && op.output.ok) return in.value;
        break;
      case Kind::WritePair:
        if (in.key == key) return in.value;
        if (in.second_key == key) return in.second_value;
        break;
      default: break;
    }
    return std::nullopt;
  };
  for (std::size_t r = 0; r < history.size(); ++r) {
    const Op& reader = history[r];
    if (reader.returned_at == kNever) continue;
    if (reader.input.kind != Kind::Read && reader.input.kind != Kind::Upsert) continue;
    const std::uint64_t key = reader.input.key;
    const std::optional<std::int64_t> seen = reader.output.value;
    std::optional<std::size_t> first_writer;
    if (seen) {
      for (std::size_t w = 0; w < history.size(); ++w) {
        if (writes_to(w, key) == seen) first_writer = w;
      }
      if (!first_writer) continue;  // not this sufficient condition
    }
    for (std::size_t w = 0; w < history.size(); ++w) {
      if (w == r || (first_writer && w == *first_writer) || !writes_to(w, key)) continue;
      const bool before_reader = history[w].returned_at < reader.invoked_at;
      const bool after_first = !first_writer || history[*first_writer].returned_at < history[w].invoked_at;
      if (before_reader && after_first) return true;
    }
  }
  return false;
}

// Exhaustive search with no memoization: the reference the checker is compared with on small histories.
bool brute_force_linearizable(const History& history, std::size_t answered_prefix) {
  std::vector<std::size_t> by_invocation(history.size());
  for (std::size_t index = 0; index < history.size(); ++index) by_invocation[index] = index;
  std::stable_sort(by_invocation.begin(), by_invocation.end(), [&history](std::size_t left, std::size_t right) {
    return history[left].invoked_at < history[right].invoked_at;
  });
  std::vector<bool> answered(history.size(), false);
  for (std::size_t rank = 0; rank < answered_prefix && rank < history.size(); ++rank) {
    answered[by_invocation[rank]] = history[by_invocation[rank]].returned_at != kNever;
  }
  std::vector<bool> done(history.size(), false);
  auto search = [&](auto&& self, const RegisterModel::State& state) -> bool {
    bool all_answered_done = true;
    for (std::size_t index = 0; index < history.size(); ++index) {
      if (answered[index] && !done[index]) all_answered_done = false;
    }
    if (all_answered_done) return true;
    for (std::size_t candidate = 0; candidate < history.size(); ++candidate) {
      if (done[candidate]) continue;
      bool blocked = false;
      for (std::size_t other = 0; other < history.size(); ++other) {
        if (!done[other] && answered[other] && history[other].returned_at < history[candidate].invoked_at) {
          blocked = true;
        }
      }
      if (blocked) continue;
      auto [next, output] = RegisterModel::step(state, history[candidate].input);
      if (answered[candidate] && !(output == history[candidate].output)) continue;
      done[candidate] = true;
      const bool found = self(self, next);
      done[candidate] = false;
      if (found) return true;
    }
    return false;
  };
  return search(search, RegisterModel::initial());
}

RC_GTEST_PROP(LinearizabilityProperty, HistoriesOfACorrectAtomicRegisterAreAlwaysLinearizable, ()) {
  const Generated generated = generate(6, 3, 60, true);
  const auto result = check(generated.history);
  RC_ASSERT(result.verdict == Verdict::Linearizable);
  RC_ASSERT(result.offending_ops.empty());
}

enum class Fault { StaleRead, LostWrite, DuplicateAbsentUpsert };

// Injects `fault` where it is observable (observably_broken says so); returns false if no such place exists.
bool inject_where_observable(Generated& generated, Fault fault) {
  History& history = generated.history;
  std::vector<History> candidates;
  for (std::size_t index = 0; index < history.size(); ++index) {
    const Op& op = history[index];
    if (op.returned_at == kNever) continue;
    if (fault == Fault::StaleRead && op.input.kind == Kind::Read) {
      // Any value this key held earlier, or absent.
      std::vector<std::optional<std::int64_t>> stale = {std::nullopt};
      for (std::size_t w = 0; w < history.size(); ++w) {
        if (history[w].input.kind == Kind::Write && history[w].input.key == op.input.key) {
          stale.push_back(history[w].input.value);
        }
      }
      for (const auto& value : stale) {
        History mutated = history;
        mutated[index].output.value = value;
        if (observably_broken(mutated)) candidates.push_back(std::move(mutated));
      }
    }
    if (fault == Fault::LostWrite && op.input.kind == Kind::Write) {
      Generated lost = generated;
      replay(lost, index);
      if (observably_broken(lost.history)) candidates.push_back(std::move(lost.history));
    }
    if (fault == Fault::DuplicateAbsentUpsert && op.input.kind == Kind::Upsert && op.output.value) {
      History mutated = history;
      mutated[index].output.value = std::nullopt;
      if (observably_broken(mutated)) candidates.push_back(std::move(mutated));
    }
  }
  if (candidates.empty()) return false;
  history = candidates[static_cast<std::size_t>(*rc::gen::inRange<std::size_t>(0, candidates.size()))];
  return true;
}

// Appends the fault on a fresh key after everything else has returned (for histories where it had no place).
void append_fault(History& history, Fault fault) {
  Time end = 0;
  for (const Op& op : history) end = std::max(end, op.returned_at == kNever ? op.invoked_at : op.returned_at);
  const std::uint64_t key = 1000;
  switch (fault) {
    case Fault::StaleRead:
      history.push_back(write(0, key, 1, end + 1, end + 2));
      history.push_back(write(0, key, 2, end + 3, end + 4));
      history.push_back(read(1, key, end + 5, end + 6, 1));
      break;
    case Fault::LostWrite:
      history.push_back(write(0, key, 1, end + 1, end + 2));
      history.push_back(read(1, key, end + 3, end + 4, std::nullopt));
      break;
    case Fault::DuplicateAbsentUpsert:
      history.push_back(upsert(0, key, 1, end + 1, end + 2, std::nullopt));
      history.push_back(upsert(1, key, 2, end + 3, end + 4, std::nullopt));
      break;
  }
}

RC_GTEST_PROP(LinearizabilityProperty, AnObservableStaleReadLostWriteOrDuplicateAbsentUpsertIsDetected, ()) {
  Generated generated = generate(6, 2, 40, false);
  const auto fault = *rc::gen::element(Fault::StaleRead, Fault::LostWrite, Fault::DuplicateAbsentUpsert);
  const bool inside = inject_where_observable(generated, fault);
  if (!inside) append_fault(generated.history, fault);
  RC_CLASSIFY(inside, "injected inside the history");
  RC_TAG(fault == Fault::StaleRead ? "stale read" : fault == Fault::LostWrite ? "lost write" : "duplicate absent");
  RC_ASSERT(observably_broken(generated.history));
  const auto result = check(generated.history);
  RC_ASSERT(result.verdict == Verdict::NotLinearizable);
  RC_ASSERT(!result.offending_ops.empty());
}

RC_GTEST_PROP(LinearizabilityProperty, VerdictAndShortestWindowAgreeWithBruteForceOnSmallHistories, ()) {
  Generated generated = generate(4, 2, 8, true, *rc::gen::element(2, 4, 10));
  // Corrupt some answers so that about half of the histories are not linearizable.
  for (Op& op : generated.history) {
    if (*rc::gen::inRange(0, 4) != 0) continue;
    op.output.value = *rc::gen::elementOf(std::vector<std::optional<std::int64_t>>{std::nullopt, 1000, 2000, 3000});
    op.output.ok = !op.output.ok;
  }
  const History& history = generated.history;
  const bool expected = brute_force_linearizable(history, history.size());
  const auto result = check(history);
  RC_CLASSIFY(expected, "linearizable");
  RC_ASSERT(result.verdict == (expected ? Verdict::Linearizable : Verdict::NotLinearizable));
  if (expected) return;

  // The window is a failing prefix of its partition, and one op shorter it is not failing.
  const std::size_t failing = result.offending_ops.size();
  RC_ASSERT(failing >= 1U);
  History partition_history;
  std::vector<std::size_t> partition_ops;
  std::vector<std::uint64_t> partition_keys(history[result.offending_ops.front()].keys);
  for (bool grew = true; grew;) {  // close the key set under "shares an op"
    grew = false;
    for (const Op& op : history) {
      const bool touches = std::any_of(op.keys.begin(), op.keys.end(), [&](std::uint64_t key) {
        return std::find(partition_keys.begin(), partition_keys.end(), key) != partition_keys.end();
      });
      if (!touches) continue;
      for (std::uint64_t key : op.keys) {
        if (std::find(partition_keys.begin(), partition_keys.end(), key) == partition_keys.end()) {
          partition_keys.push_back(key);
          grew = true;
        }
      }
    }
  }
  for (std::size_t index = 0; index < history.size(); ++index) {
    if (std::find(partition_keys.begin(), partition_keys.end(), history[index].keys.front()) != partition_keys.end()) {
      partition_history.push_back(history[index]);
      partition_ops.push_back(index);
    }
  }
  RC_ASSERT(!brute_force_linearizable(partition_history, failing));
  RC_ASSERT(brute_force_linearizable(partition_history, failing - 1));
  // offending_ops are the first `failing` ops of the partition by invocation time (ties by index).
  std::vector<std::size_t> by_invocation = partition_ops;
  std::stable_sort(by_invocation.begin(), by_invocation.end(), [&history](std::size_t left, std::size_t right) {
    return history[left].invoked_at < history[right].invoked_at;
  });
  by_invocation.resize(failing);
  RC_ASSERT(result.offending_ops == by_invocation);
}

RC_GTEST_PROP(LinearizabilityProperty, ResultIsDeterministic, ()) {
  Generated generated = generate(5, 3, 30, true);
  if (!generated.history.empty() && *rc::gen::arbitrary<bool>()) {
    generated.history.back().output.value = 424242;  // sometimes not linearizable
  }
  const auto first = check(generated.history);
  const auto second = check(generated.history);
  RC_ASSERT(first.verdict == second.verdict);
  RC_ASSERT(first.steps == second.steps);
  RC_ASSERT(first.partitions == second.partitions);
  RC_ASSERT(first.offending_ops == second.offending_ops);
  RC_ASSERT(first.explanation == second.explanation);
}

// ---------------------------------------------------------------- the incremental checker

using Incremental = lethe::lin::IncrementalChecker<RegisterModel, RegisterInput, RegisterOutput>;

// Streams `history` into the incremental checker as a recorder would: events in time order (an instant operation as
// instant()), each unanswered operation abandoned `abandon_after` after its invocation, the watermark following
// the clock. Returns the verdict of finish().
lethe::lin::Result check_incrementally(const History& history, lethe::lin::IncrementalBudget budget = {},
                                       Time abandon_after = 5, Incremental* checker_out = nullptr) {
  struct Event {
    Time at;
    int kind;  // 0 invoke, 1 respond, 2 abandon, 3 instant
    std::size_t op;
  };
  std::vector<Event> events;
  for (std::size_t index = 0; index < history.size(); ++index) {
    const Op& op = history[index];
    if (op.returned_at == op.invoked_at) {
      events.push_back({op.invoked_at, 3, index});
      continue;
    }
    events.push_back({op.invoked_at, 0, index});
    events.push_back(op.returned_at == kNever ? Event{op.invoked_at + abandon_after, 2, index}
                                              : Event{op.returned_at, 1, index});
  }
  std::stable_sort(events.begin(), events.end(), [](const Event& x, const Event& y) { return x.at < y.at; });
  Incremental local(budget);
  Incremental& checker = checker_out != nullptr ? *checker_out : local;
  std::vector<Incremental::OpId> ids(history.size());
  for (const Event& event : events) {
    const Op& op = history[event.op];
    checker.advance(event.at);
    switch (event.kind) {
      case 0: ids[event.op] = checker.invoke(op.client, op.keys, op.invoked_at, op.input); break;
      case 1: checker.respond(ids[event.op], event.at, op.output); break;
      case 2: checker.abandon(ids[event.op], event.at); break;
      case 3: checker.instant(op.client, op.keys, op.invoked_at, op.input, op.output); break;
    }
  }
  return checker.finish();
}

// Some outputs corrupted (about half of the histories are then not linearizable), some operations made instant.
void corrupt(Generated& generated, int one_in) {
  for (Op& op : generated.history) {
    if (*rc::gen::inRange(0, 12) == 0 && op.returned_at != kNever) op.returned_at = op.invoked_at;  // instant
    if (*rc::gen::inRange(0, one_in) != 0) continue;
    op.output.value = *rc::gen::elementOf(std::vector<std::optional<std::int64_t>>{std::nullopt, 1000, 2000, 3000});
    op.output.ok = !op.output.ok;
  }
}

RC_GTEST_PROP(IncrementalLinearizabilityProperty,
              VerdictEqualsTheWholeHistoryCheckersOnRandomHistoriesWithUnansweredOperations, ()) {
  Generated generated = generate(6, 3, 25, true, *rc::gen::element(2, 4, 10));
  if (*rc::gen::arbitrary<bool>()) corrupt(generated, *rc::gen::element(4, 20, 1000));
  const History& history = generated.history;
  const auto whole = check(history, 50'000'000);
  RC_PRE(whole.verdict != Verdict::Unknown);
  const Time abandon_after = *rc::gen::inRange<Time>(0, 200);
  // Many unanswered writes may exhaust the incremental checker's budget (it keeps every configuration, the whole
  // search needs one order): Unknown is allowed, a different decided verdict is not.
  const auto incremental = check_incrementally(history, lethe::lin::IncrementalBudget{2'000'000, 20'000}, abandon_after);
  RC_CLASSIFY(incremental.verdict == Verdict::Unknown, "incremental out of budget");
  RC_PRE(incremental.verdict != Verdict::Unknown);
  RC_CLASSIFY(whole.verdict == Verdict::Linearizable, "linearizable");
  RC_CLASSIFY(std::any_of(history.begin(), history.end(), [](const Op& op) { return op.returned_at == kNever; }),
              "with unanswered operations");
  RC_ASSERT(lethe::lin::to_string(incremental.verdict) == lethe::lin::to_string(whole.verdict));
}

RC_GTEST_PROP(IncrementalLinearizabilityProperty, VerdictEqualsBruteForceOnSmallHistories, ()) {
  Generated generated = generate(4, 2, 8, true, *rc::gen::element(2, 4, 10));
  corrupt(generated, 4);
  const History& history = generated.history;
  const bool expected = brute_force_linearizable(history, history.size());
  RC_CLASSIFY(expected, "linearizable");
  const auto incremental = check_incrementally(history, {}, *rc::gen::inRange<Time>(0, 60));
  RC_ASSERT(incremental.verdict == (expected ? Verdict::Linearizable : Verdict::NotLinearizable));
}

TEST(IncrementalLinearizability, ManyConcurrentReadersOfOneKeyDoNotMultiplyConfigurations) {
  // 200 readers overlapping one write, each seeing the old or the new value in an order that fits: the checker
  // must not branch on which reader went before the write (it matches readers against the states they may have
  // seen), so the search stays small.
  History history;
  history.push_back(write(0, 1, 1000, 0, 1));
  history.push_back(write(1, 1, 2000, 10, 500));
  for (std::uint32_t reader = 0; reader < 200; ++reader) {
    const Time invoked = 5 + reader;
    const bool sees_new = reader >= 100;
    history.push_back(read(2 + reader, 1, invoked, invoked + 400, sees_new ? 2000 : 1000));
  }
  const auto result = check_incrementally(history);
  EXPECT_EQ(result.verdict, Verdict::Linearizable) << result.explanation;
  EXPECT_LT(result.steps, 5'000u);
}

TEST(IncrementalLinearizability, MemoryBudgetRunningOutGivesUnknownWithTheReason) {
  // 8 concurrent writes of distinct values, then a read: the configurations multiply with every write (which of
  // them took effect before each response).
  History history;
  for (std::uint32_t writer = 0; writer < 8; ++writer) {
    history.push_back(write(writer, 1, 1000 * (writer + 1), 0, 100 + writer));
  }
  history.push_back(read(99, 1, 200, 210, 1000));
  const auto ample = check_incrementally(history);
  EXPECT_EQ(ample.verdict, Verdict::Linearizable) << ample.explanation;
  const auto small = check_incrementally(history, lethe::lin::IncrementalBudget{20'000'000, 200});
  EXPECT_EQ(small.verdict, Verdict::Unknown);
  EXPECT_NE(small.explanation.find("memory budget of 200 search states"), std::string::npos) << small.explanation;
  const auto few_steps = check_incrementally(history, lethe::lin::IncrementalBudget{50, 2'000'000});
  EXPECT_EQ(few_steps.verdict, Verdict::Unknown);
  EXPECT_NE(few_steps.explanation.find("step budget of 50 steps"), std::string::npos) << few_steps.explanation;
}

TEST(IncrementalLinearizability, TheWholeHistorysStepBudgetRunningOutGivesUnknownWithTheReason) {
  // Each response needs a little search; together they pass a small whole-history budget (each alone would not).
  History history;
  for (std::uint32_t writer = 0; writer < 8; ++writer) {
    history.push_back(write(writer, 1, 1000 * (writer + 1), 0, 100 + writer));
  }
  history.push_back(read(99, 1, 200, 210, 1000));
  const auto ample = check_incrementally(history);
  ASSERT_EQ(ample.verdict, Verdict::Linearizable) << ample.explanation;
  ASSERT_GT(ample.steps, 20u);
  const auto capped = check_incrementally(history, lethe::lin::IncrementalBudget{20'000'000, 2'000'000, ample.steps / 2});
  EXPECT_EQ(capped.verdict, Verdict::Unknown);
  EXPECT_NE(capped.explanation.find(fmt::format("step budget of {} steps for the whole history", ample.steps / 2)),
            std::string::npos) << capped.explanation;
}

TEST(IncrementalLinearizability, KeepsOnlyWhatIsInFlightOverALongHistory) {
  // 100,000 keys, each written, read and overwritten in turn: once a key has nothing pending, the checker keeps only
  // its one possible state, and no operation.
  Incremental checker;
  std::size_t most_operations = 0;
  for (std::uint64_t key = 0; key < 100'000; ++key) {
    const Time now = static_cast<Time>(key) * 10;
    checker.advance(now);
    const auto w = checker.invoke(0, {key}, now, RegisterInput{Kind::Write, key, 7});
    const auto r = checker.invoke(1, {key}, now + 1, RegisterInput{Kind::Read, key});
    most_operations = std::max(most_operations, checker.live_operations());
    checker.respond(w, now + 2, RegisterOutput{});
    checker.respond(r, now + 3, RegisterOutput{7, {}, true});
    checker.advance(now + 4);
    checker.instant(2, {key}, now + 4, RegisterInput{Kind::Upsert, key, 0}, RegisterOutput{7, {}, true});
  }
  checker.advance(1'000'000 * 10);
  EXPECT_LE(most_operations, 8u);
  EXPECT_EQ(checker.open_groups(), 0u);
  EXPECT_EQ(checker.settled_keys(), 100'000u);  // each key holds 0 now: one state per key, nothing else
  EXPECT_EQ(checker.live_operations(), 0u);
  EXPECT_EQ(checker.queued_events(), 0u);
  EXPECT_EQ(checker.finish().verdict, Verdict::Linearizable);
}

}  // namespace linearizability_test
