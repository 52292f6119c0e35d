// Tests of the Jepsen readers (check/history_edn.hpp, check/history_jepsen.cpp): EDN as Jepsen writes it,
// Knossos's models and meanings, independent keys, history.txt, the total-queue checker, and Knossos's own
// test histories (tests/data/knossos) judged as Knossos's tests expect.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <variant>

#include "check/events.hpp"
#include "check/history.hpp"
#include "check/history_edn.hpp"
#include "check/linearizability_batch.hpp"
#include "check/total_queue_model.hpp"

namespace jepsen_test {

namespace history = lethe::history;
namespace edn = lethe::history::edn;
using lethe::lin::Verdict;

std::string error_of(const std::string& text, history::Options options = {}) {
  try {
    history::read_history("h.edn", text, options);
  } catch (const history::Error& e) {
    return e.what();
  }
  return "no error";
}

// The checker's result for a history, whichever model it was read for.
lethe::lin::Result result_of(const history::AnyHistory& recorded) {
  if (const auto* registers = std::get_if<history::RegisterHistory>(&recorded)) {
    return lethe::lin::check<lethe::RegisterModel>(registers->ops);
  }
  if (const auto* objects = std::get_if<history::ObjectHistory>(&recorded)) {
    return lethe::lin::check<lethe::ObjectModel>(objects->ops);
  }
  if (const auto* map = std::get_if<history::KvHistory>(&recorded)) return lethe::lin::check<lethe::KvModel>(map->ops);
  ADD_FAILURE() << "not a linearizability history";
  return lethe::lin::Result{Verdict::Unknown, 0, 0, {}, ""};
}

Verdict verdict_of(const history::AnyHistory& recorded) { return result_of(recorded).verdict; }

Verdict verdict_of(const std::string& text, history::Options options = {}) {
  return verdict_of(history::read_history("h.edn", text, options));
}

history::Options with_model(history::ModelKind model, std::optional<std::string> initial = std::nullopt) {
  history::Options options;
  options.model = model;
  options.initial = std::move(initial);
  return options;
}

// ---------------------------------------------------------------- EDN

TEST(Edn, ReadsSetsListsTaggedLiteralsEscapesAndCommentsAnywhere) {
  const std::string text = "; a comment\n#jepsen.history.Op {:a #{1 2}, ; inside\n :b (x \"q\\\"\\u00e9\\n\"),\n :c \\c :d 2N}";
  edn::Reader reader("t.edn", text);
  ASSERT_FALSE(reader.at_end());
  const edn::Value value = reader.read();
  EXPECT_TRUE(reader.at_end());
  EXPECT_EQ(value.tag, "jepsen.history.Op");
  EXPECT_EQ(value.type, edn::Value::Type::Map);
  EXPECT_EQ(value.line, 2u);
  EXPECT_EQ(value.get("a")->type, edn::Value::Type::Set);
  EXPECT_EQ(value.get("b")->type, edn::Value::Type::List);
  EXPECT_EQ(value.get("b")->items[1].text, "q\"\xC3\xA9\n");
  EXPECT_EQ(value.get("c")->type, edn::Value::Type::Char);
  EXPECT_EQ(value.get("d")->type, edn::Value::Type::Int);
  EXPECT_EQ(edn::canonical(*value.get("a")), "#{1 2}");
}

TEST(Edn, CanonicalTextOfASetDoesNotDependOnTheOrderWritten) {
  edn::Reader a("a", "#{3 1 2}");
  edn::Reader b("b", "#{2 3 1}");
  EXPECT_EQ(edn::canonical(a.read()), edn::canonical(b.read()));
}

TEST(Edn, NestingPastTheBoundIsBadInputNotACrash) {
  const std::string deep(100'000, '[');
  edn::Reader reader("deep.edn", deep);
  try {
    (void)reader.read();
    FAIL() << "no error";
  } catch (const history::Error& e) {
    EXPECT_NE(std::string(e.what()).find("deep.edn:1:257: values nested deeper than 256 levels"), std::string::npos) << e.what();
  }
  const std::string ok = std::string(200, '[') + std::string(200, ']');
  edn::Reader fine("ok.edn", ok);
  EXPECT_EQ(fine.read().type, edn::Value::Type::Vector);
}

TEST(Edn, ShowQuotesAtMostItsLimit) {
  const std::string text = "[" + std::string(200, '[') + std::string(200, ']') + " \"" + std::string(5000, 'x') + "\"]";
  edn::Reader reader("t", text);
  const std::string shown = edn::show(reader.read(), 200);
  EXPECT_LE(shown.size(), 203u);
  EXPECT_EQ(shown.substr(shown.size() - 3), "...");
}

TEST(Edn, BadInputNamesLineAndColumn) {
  EXPECT_EQ(error_of("[{:process 0, :type :invoke, :f :read, :value nil}\n"),
            "h.edn:1:1: unclosed '[': the text ends before its closing ']'");
  EXPECT_EQ(error_of("{:process 0, :type :invoke,\n :f :read, :value 1e400}\n"),
            "h.edn:2:19: the number 1e400 is beyond the range of a 64-bit float");
  EXPECT_EQ(error_of("{:process 0, :type :invoke, :f :read, :value 99999999999999999999}"),
            "h.edn:1:46: the integer 99999999999999999999 is beyond 64 bits; write it with an N suffix for a big integer");
  EXPECT_EQ(error_of("{:process 0, :type :invoke, :f :read, :value \"\xFF\"}"),
            "h.edn:1:47: byte 0xFF is not valid UTF-8; expected UTF-8 text");
  EXPECT_EQ(error_of("{:process 0, :type :invoke, :f :read :value}"), "h.edn:1:1: a map with a key and no value");
  EXPECT_EQ(error_of("{:process 0, :type :invoke, :f :read, :value [1 2)}"),
            "h.edn:1:50: ')' closes the '[' opened at 1:46; expected ']'");
}

// ---------------------------------------------------------------- layouts and formats

const std::string kOneWriteOneRead =
    "{:process 0, :type :invoke, :f :write, :value 3}\n"
    "{:process 0, :type :ok, :f :write, :value 3}\n"
    "{:process 1, :type :invoke, :f :read, :value nil}\n"
    "{:process 1, :type :ok, :f :read, :value 3}\n";

TEST(JepsenLayouts, AVectorAListAMultiLineMapACommentFirstAndABomAllReadTheSame) {
  const auto ops = [](const std::string& text) {
    return std::get<history::RegisterHistory>(history::read_history("h", text)).ops.size();
  };
  EXPECT_EQ(ops(kOneWriteOneRead), 2u);
  EXPECT_EQ(ops("[" + kOneWriteOneRead + "]"), 2u);
  EXPECT_EQ(ops("(" + kOneWriteOneRead + ")"), 2u);
  EXPECT_EQ(ops("; Jepsen history\n" + kOneWriteOneRead), 2u);
  EXPECT_EQ(ops("\xEF\xBB\xBF" + kOneWriteOneRead), 2u);
  EXPECT_EQ(ops("{:process 0,\n :type :invoke,\n :f :write,\n :value 3}\n{:process 0, :type :ok, :f :write, :value 3}"), 1u);
  EXPECT_EQ(history::detect_format("h", "; comment\n\n[{:process 0}]"), history::Format::JepsenEdn);
}

TEST(JepsenLayouts, HistoryTxtIsReadWithItsErrorField) {
  const std::string text =
      "0\t:invoke\t:write\t3\n"
      "0\t:ok\t:write\t3\n"
      ":nemesis\t:info\t:start\t#{\"n1\" \"n2\"}\n"
      "1\t:invoke\t:cas\t[3 4]\n"
      "1\t:info\t:cas\t[3 4]\tindeterminate: timeout\n"
      "2\t:invoke\t:read\tnil\n"
      "2\t:ok\t:read\t4\n";
  EXPECT_EQ(history::detect_format("history.txt", text), history::Format::JepsenTxt);
  const auto recorded = std::get<history::RegisterHistory>(history::read_history("history.txt", text));
  EXPECT_EQ(recorded.model, history::ModelKind::CasRegister);
  ASSERT_EQ(recorded.ops.size(), 3u);
  EXPECT_EQ(recorded.ops[1].returned_at, lethe::lin::kNever);
  EXPECT_EQ(verdict_of(history::AnyHistory(recorded)), Verdict::Linearizable);
}

TEST(JepsenLayouts, NemesisSetsInAPartitionHistoryAreRead) {
  const std::string text = kOneWriteOneRead +
                           "{:process :nemesis, :type :info, :f :start, :value [:isolated {\"n1\" #{\"n2\" \"n3\"}}]}\n";
  EXPECT_EQ(verdict_of(text), Verdict::Linearizable);
}

TEST(JepsenLayouts, AHistoryOfNemesisOpsOnlyHasNoOperationsAndIsValid) {
  const auto recorded = history::read_history("h", "{:process :nemesis, :type :info, :f :start, :value nil}\n");
  EXPECT_EQ(std::get<history::RegisterHistory>(recorded).ops.size(), 0u);
  EXPECT_EQ(verdict_of(recorded), Verdict::Linearizable);
}

// ---------------------------------------------------------------- Knossos's meanings

const std::string kFailedCasOnItsOwnValue =
    "{:process 0, :type :invoke, :f :write, :value 1}\n"
    "{:process 0, :type :ok, :f :write, :value 1}\n"
    "{:process 1, :type :invoke, :f :cas, :value [1 2]}\n"
    "{:process 1, :type :fail, :f :cas, :value [1 2]}\n";

TEST(KnossosMeanings, AFailedCasDidNotHappenUnderCasRegisterButFoundAnotherValueUnderEtcdRegister) {
  EXPECT_EQ(verdict_of(kFailedCasOnItsOwnValue), Verdict::Linearizable);
  EXPECT_EQ(verdict_of(kFailedCasOnItsOwnValue, with_model(history::ModelKind::EtcdRegister)), Verdict::NotLinearizable);
}

TEST(KnossosMeanings, AnOkReadOfNilMatchesAnyValueUnderCasRegisterAndReadsAbsentUnderEtcdRegister) {
  const std::string text =
      "{:process 0, :type :invoke, :f :write, :value 1}\n"
      "{:process 0, :type :ok, :f :write, :value 1}\n"
      "{:process 1, :type :invoke, :f :read, :value nil}\n"
      "{:process 1, :type :ok, :f :read, :value nil}\n";
  EXPECT_EQ(verdict_of(text), Verdict::Linearizable);
  EXPECT_EQ(verdict_of(text, with_model(history::ModelKind::EtcdRegister)), Verdict::NotLinearizable);
}

TEST(KnossosMeanings, TheInitialValueIsWrittenBeforeEveryOperation) {
  const std::string text =
      "{:process 0, :type :invoke, :f :cas, :value [0 5]}\n"
      "{:process 0, :type :ok, :f :cas, :value [0 5]}\n";
  EXPECT_EQ(verdict_of(text), Verdict::NotLinearizable);  // from nil, cas(0, 5) cannot succeed
  EXPECT_EQ(verdict_of(text, with_model(history::ModelKind::CasRegister, "0")), Verdict::Linearizable);
  EXPECT_EQ(error_of(text, with_model(history::ModelKind::CasRegister, "\"zero\"")),
            "h.edn: --initial is \"zero\"; expected an integer (register models hold 64-bit integers)");
}

TEST(KnossosMeanings, RegisterRefusesCasAndNamesTheModelThatTakesIt) {
  EXPECT_EQ(error_of(kFailedCasOnItsOwnValue, with_model(history::ModelKind::Register)),
            "h.edn:3: unknown operation :cas for the register model; allowed: :read, :write (:cas needs cas-register)");
}

TEST(KnossosModels, MutexAcquiredTwiceWithoutReleaseIsNotLinearizable) {
  const std::string twice =
      "{:process 0, :type :invoke, :f :acquire}\n{:process 0, :type :ok, :f :acquire}\n"
      "{:process 1, :type :invoke, :f :acquire}\n{:process 1, :type :ok, :f :acquire}\n";
  EXPECT_EQ(verdict_of(twice), Verdict::NotLinearizable);
  const std::string released = "{:process 0, :type :invoke, :f :acquire}\n{:process 0, :type :ok, :f :acquire}\n"
                               "{:process 0, :type :invoke, :f :release}\n{:process 0, :type :ok, :f :release}\n"
                               "{:process 1, :type :invoke, :f :acquire}\n{:process 1, :type :ok, :f :acquire}\n";
  EXPECT_EQ(verdict_of(released), Verdict::Linearizable);
}

TEST(KnossosModels, ASetReadMustSeeExactlyWhatWasAdded) {
  const std::string adds = "{:process 0, :type :invoke, :f :add, :value 1}\n{:process 0, :type :ok, :f :add, :value 1}\n"
                           "{:process 0, :type :invoke, :f :add, :value 2}\n{:process 0, :type :ok, :f :add, :value 2}\n"
                           "{:process 1, :type :invoke, :f :read, :value nil}\n";
  EXPECT_EQ(verdict_of(adds + "{:process 1, :type :ok, :f :read, :value #{2 1}}\n"), Verdict::Linearizable);
  EXPECT_EQ(verdict_of(adds + "{:process 1, :type :ok, :f :read, :value #{1}}\n"), Verdict::NotLinearizable);
}

TEST(KnossosModels, AFifoQueueMustDequeueInOrderAnUnorderedOneNeedNot) {
  const std::string text =
      "{:process 0, :type :invoke, :f :enqueue, :value 1}\n{:process 0, :type :ok, :f :enqueue, :value 1}\n"
      "{:process 0, :type :invoke, :f :enqueue, :value 2}\n{:process 0, :type :ok, :f :enqueue, :value 2}\n"
      "{:process 1, :type :invoke, :f :dequeue, :value nil}\n{:process 1, :type :ok, :f :dequeue, :value 2}\n";
  EXPECT_EQ(verdict_of(text, with_model(history::ModelKind::UnorderedQueue)), Verdict::Linearizable);
  EXPECT_EQ(verdict_of(text, with_model(history::ModelKind::FifoQueue)), Verdict::NotLinearizable);
}

TEST(KnossosModels, AMultiRegisterTxnReadsWhatTheLastTxnWroteAcrossKeys) {
  const std::string text =
      "{:process 0, :type :invoke, :f :txn, :value [[:write :x 1] [:write :y 2]]}\n"
      "{:process 0, :type :ok, :f :txn, :value [[:write :x 1] [:write :y 2]]}\n"
      "{:process 1, :type :invoke, :f :txn, :value [[:read :x nil] [:read :y nil]]}\n";
  EXPECT_EQ(verdict_of(text + "{:process 1, :type :ok, :f :txn, :value [[:read :x 1] [:read :y 2]]}\n"), Verdict::Linearizable);
  EXPECT_EQ(verdict_of(text + "{:process 1, :type :ok, :f :txn, :value [[:read :x 1] [:read :y 0]]}\n"), Verdict::NotLinearizable);
}

// #_ discards its next form, which may start with #_ again: a chain of them is read without recursing as deep as
// the chain (it overflowed the stack at 100,000), and `#_ #_ 1 2 3` is 3 as in Clojure.
TEST(Edn, AChainOfDiscardsIsBoundedBadInputAndAShortOneDiscardsAsClojureDoes) {
  std::string deep = "{:process 0, :type :invoke, :f :write, :value ";
  for (int i = 0; i < 100'000; ++i) deep += "#_ ";
  deep += "1}\n";
  EXPECT_NE(error_of(deep).find("h.edn:1:818: #_ discards nested deeper than 256 levels"), std::string::npos)
      << error_of(deep);
  const std::string text = "{:process 0, :type :invoke, :f :write, :value #_ #_ 1 2 3}\n"
                           "{:process 0, :type :ok, :f :write, :value 3}\n";
  const auto recorded = std::get<history::RegisterHistory>(history::read_history("h.edn", text));
  ASSERT_EQ(recorded.ops.size(), 1u);
  EXPECT_EQ(recorded.ops[0].input.value, 3);
}

// ---------------------------------------------------------------- independent keys

TEST(IndependentKeys, TuplesAreSplitIntoKeysInSortedOrder) {
  const std::string text =
      "{:process 0, :type :invoke, :f :write, :value [\"b\" 1]}\n{:process 0, :type :ok, :f :write, :value [\"b\" 1]}\n"
      "{:process 1, :type :invoke, :f :cas, :value [\"a\" [0 1]]}\n{:process 1, :type :fail, :f :cas, :value [\"a\" [0 1]]}\n"
      "{:process 2, :type :invoke, :f :read, :value [\"b\" nil]}\n{:process 2, :type :ok, :f :read, :value [\"b\" 1]}\n";
  const auto recorded = std::get<history::RegisterHistory>(history::read_history("h", text));
  EXPECT_EQ(recorded.key_names, (std::vector<std::string>{"\"b\""}));  // the failed cas did not happen
  ASSERT_EQ(recorded.ops.size(), 2u);
  EXPECT_EQ(recorded.ops[1].output.value, 1);
}

TEST(IndependentKeys, TheStringTheIntegerAndTheKeywordOneAreThreeKeysNamedAsWritten) {
  std::string text;
  for (const std::string key : {"\"1\"", "1", ":1"}) {
    text += "{:process 0, :type :invoke, :f :get, :key " + key + ", :value nil}\n"
            "{:process 0, :type :ok, :f :get, :key " + key + ", :value \"\"}\n";
  }
  const auto recorded = std::get<history::KvHistory>(history::read_history("h", text));
  EXPECT_EQ(recorded.key_names, (std::vector<std::string>{"\"1\"", "1", ":1"}));
}

// ---------------------------------------------------------------- total-queue

TEST(TotalQueue, CountsLostDuplicatedRecoveredAndUnexpectedAsJepsenDoes) {
  const std::string text =
      "{:process 0, :type :invoke, :f :enqueue, :value 1}\n{:process 0, :type :ok, :f :enqueue, :value 1}\n"
      "{:process 0, :type :invoke, :f :enqueue, :value 2}\n{:process 0, :type :ok, :f :enqueue, :value 2}\n"
      "{:process 0, :type :invoke, :f :enqueue, :value 3}\n{:process 0, :type :info, :f :enqueue, :value 3}\n"
      "{:process 1, :type :invoke, :f :dequeue, :value nil}\n{:process 1, :type :ok, :f :dequeue, :value 1}\n"
      "{:process 1, :type :invoke, :f :dequeue, :value nil}\n{:process 1, :type :ok, :f :dequeue, :value 1}\n"
      "{:process 1, :type :invoke, :f :drain, :value nil}\n{:process 1, :type :ok, :f :drain, :value [3 9]}\n";
  const auto recorded = std::get<history::QueueHistory>(history::read_history("q.edn", text));
  const lethe::QueueVerdict verdict = lethe::judge_total_queue(recorded);
  EXPECT_FALSE(verdict.valid);
  ASSERT_EQ(verdict.lost.size(), 1u);
  EXPECT_EQ(verdict.lost[0].value, "2");
  ASSERT_EQ(verdict.duplicated.size(), 1u);
  EXPECT_EQ(verdict.duplicated[0].value, "1");
  ASSERT_EQ(verdict.unexpected.size(), 2u);  // the second 1 (offered once) and 9 (never offered)
  EXPECT_EQ(verdict.unexpected[0].value, "1");
  EXPECT_EQ(verdict.unexpected[1].value, "9");
  ASSERT_EQ(verdict.recovered.size(), 1u);
  EXPECT_EQ(verdict.recovered[0].value, "3");
}

TEST(TotalQueue, EverythingAcknowledgedAndDequeuedOnceIsValid) {
  const std::string text =
      "{:process 0, :type :invoke, :f :enqueue, :value 1}\n{:process 0, :type :ok, :f :enqueue, :value 1}\n"
      "{:process 1, :type :invoke, :f :dequeue, :value nil}\n{:process 1, :type :ok, :f :dequeue, :value 1}\n";
  EXPECT_TRUE(lethe::judge_total_queue(std::get<history::QueueHistory>(history::read_history("q", text))).valid);
}

// ---------------------------------------------------------------- Knossos's own histories

std::string file_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(KnossosGroundTruth, EveryKnossosHistoryGetsTheVerdictKnossossTestsExpect) {
  const std::filesystem::path root = std::filesystem::path(LETHE_SOURCE_DIR) / "tests/data/knossos";
  std::size_t checked = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (entry.path().extension() != ".edn") continue;
    const bool valid = entry.path().parent_path().filename() == "good";
    const auto recorded = history::read_history(entry.path().string(), file_text(entry.path()),
                                                with_model(history::ModelKind::Auto, "0"));
    const lethe::lin::Result result = result_of(recorded);
    EXPECT_EQ(result.verdict, valid ? Verdict::Linearizable : Verdict::NotLinearizable) << entry.path() << "\n"
                                                                                        << result.explanation;
    ++checked;
  }
  EXPECT_EQ(checked, 10u);
}

}  // namespace jepsen_test

namespace jepsen_test {

// ---------------------------------------------------------------- JSON lines: why a line is not JSON

// The lethe history reader and the event-log reader say why a line is not JSON (nested too deep, a number beyond a
// double, invalid UTF-8), with its file and line, and quote none of its bytes.
TEST(JsonLines, EveryJsonLineReaderSaysWhyALineIsNotJsonWithoutQuotingItsBytes) {
  const std::string run = "{\"event\":\"run\",\"protocol\":\"mnemosyne\",\"scenario\":\"s\",\"seed\":1}\n";
  // line, why, what the history reader says (it checks UTF-8 itself, with the column)
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {"{\"client\":" + std::string(100'000, '[') + std::string(100'000, ']') + "}", "values nested deeper than 64 levels",
       "h.jsonl:1: not a JSON object (values nested deeper than 64 levels)"},
      {"{\"client\":1e400}", "a number beyond a double (as 1e400)",
       "h.jsonl:1: not a JSON object (a number beyond a double (as 1e400))"},
      {"{\"client\":\"\xff\"}", "invalid UTF-8 at byte 12 of the line", "h.jsonl:1:12: byte 0xFF is not valid UTF-8"},
  };
  for (const auto& [line, why, history_says] : cases) {
    std::string history_error;
    try {
      history::read_history("h.jsonl", line + "\n");
    } catch (const history::Error& e) {
      history_error = e.what();
    }
    EXPECT_NE(history_error.find(history_says), std::string::npos) << history_error;
    EXPECT_EQ(history_error.find('\xff'), std::string::npos);
    std::string events_error;
    try {
      lethe::events::read_events({lethe::events::EventFile{"e.jsonl", run + line + "\n"}});
    } catch (const history::Error& e) {
      events_error = e.what();
    }
    EXPECT_NE(events_error.find("e.jsonl:2: not a JSON object (" + why + ")"), std::string::npos) << events_error;
    EXPECT_EQ(events_error.find('\xff'), std::string::npos);
  }
}

}  // namespace jepsen_test
