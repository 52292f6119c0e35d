// The dedupe libraries' own protocol tests, translated into lethe runs: each TEST names the library test it
// translates (library, file, test name), runs a small scenario with that library's preset, and asserts what the
// library's test asserts, in lethe's terms (effects, duplicates by cause, the decisions taken, payload refusals,
// releases, lost messages). docs/libraries.md ("The libraries' own tests, translated") tables them, with the
// library tests lethe cannot express and why. What the libraries do was read from their tests; none of their
// code is here.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "core/result.hpp"
#include "scenario/loader.hpp"
#include "world/world.hpp"

namespace library_translations_test {

// The parts of a scenario a translation changes; the others are a small queue of payments.
struct Scenario {
  std::string protocol{};  // the [protocol] table's lines (the preset and the keys the test needs)
  std::string workload = "messages = 20\nrate = \"5/s\"\nprocessing_time = \"uniform(200ms, 400ms)\"\n";
  std::string redelivery{};  // the [workload.redelivery] table's lines, none when empty
  std::string copies{};    // [[workload.redelivery.copy]] tables, written as they are
  std::string topology = "source = \"queue\"\nconsumers = 4\nvisibility_timeout = \"5s\"\n";
  std::string sink = "kind = \"payment\"\nlatency = \"5ms\"\n";
  std::string run = "seeds = 1\n";
  std::string extra{};  // further tables, written as they are ([store], [faults.crash_points], [[network.partition]])
};

std::string toml(const Scenario& s) {
  std::string text = "[scenario]\nname = \"translation\"\n\n[run]\n" + s.run + "\n[topology]\n" + s.topology +
                     "\n[workload]\n" + s.workload + "\n";
  if (!s.redelivery.empty()) text += "[workload.redelivery]\n" + s.redelivery + "\n";
  text += s.copies + "\n[protocol]\n" + s.protocol + "\n[sink]\n" + s.sink + "\n" + s.extra;
  return text;
}

lethe::ScenarioConfig load(const Scenario& s, const std::vector<std::string>& sets = {}) {
  auto loaded = scenario::load_scenario_text(toml(s), "translation.toml",
                                             std::filesystem::path(LETHE_SOURCE_DIR) / "scenarios", sets);
  if (auto* errors = std::get_if<std::vector<scenario::LoadError>>(&loaded)) {
    std::string text;
    for (const auto& e : *errors) text += e.message + "\n";
    throw std::runtime_error(text + "in:\n" + toml(s));
  }
  return std::get<lethe::ScenarioConfig>(std::move(loaded));
}

lethe::RunResult run(const Scenario& s, const std::vector<std::string>& sets = {}) {
  return lethe::run_world(load(s, sets), 1);
}

std::uint64_t cause(const lethe::RunResult& r, lethe::Cause c) { return r.duplicates[static_cast<std::size_t>(c)]; }

// A coverage counter, 0 when it never fired.
std::uint64_t cov(const lethe::RunResult& r, const std::string& key) {
  auto it = r.coverage.find(key);
  return it == r.coverage.end() ? 0 : it->second;
}

std::string summary(const lethe::RunResult& r) {
  std::string text = "effects " + std::to_string(r.effects) + ", duplicates " + std::to_string(r.duplicate_effects) +
                     ", lost " + std::to_string(r.lost_messages) + ", payload_mismatches " +
                     std::to_string(r.payload_mismatches) + ", payload_ignored " + std::to_string(r.payload_ignored) +
                     ", memo_mismatches " + std::to_string(r.memo_mismatches) + ", deliveries " +
                     std::to_string(r.deliveries) + ", waits " + std::to_string(r.waits) + "\n";
  for (const auto& [key, value] : r.coverage) text += "  " + key + " " + std::to_string(value) + "\n";
  for (std::size_t c = 0; c < lethe::kCauseCount; ++c) {
    if (r.duplicates[c] == 0) continue;
    text += "  duplicates." + std::string(lethe::kCauses[c].name) + " " + std::to_string(r.duplicates[c]) + "\n";
  }
  return text;
}

// One message a second, each done in 50 ms, and the store cut off from the consumers from 2.5 s to 12.5 s: the
// start writes of the messages published at 3 s and 4 s go unanswered, and no work is in flight when the cut
// begins (so no completion write is cut).
Scenario store_cut_at_start(const std::string& protocol) {
  return {.protocol = protocol,
          .workload = "messages = 5\nrate = \"1/s\"\nprocessing_time = \"50ms\"\n",
          .extra = "[network]\nrpc_timeout = \"300ms\"\n\n[[network.partition]]\nat = \"2500ms\"\nfor = \"10s\"\n"
                   "between = [\"consumers\", \"store\"]\n"};
}

// ---------------------------------------------------------------- AWS Lambda Powertools (Python) idempotency

// Powertools leaves the in-progress expiry to the Lambda's remaining time: the scenario writes it.
const std::string kPowertools = "preset = \"powertools\"\nmax_processing_time = \"30s\"\n";

// Powertools (aws-powertools/powertools-lambda-python), tests/functional/idempotency/_boto3/test_idempotency.py ::
// test_idempotent_lambda_first_execution: an unknown key is saved in progress, the handler runs, the record is
// updated to completed.
TEST(LibraryTranslationPowertools, FirstExecutionOfAnUnknownKeyRunsTheHandlerOnceAndCompletesTheRecord) {
  const lethe::RunResult r = run({.protocol = kPowertools});
  EXPECT_EQ(r.effects, 20u) << summary(r);
  EXPECT_EQ(cov(r, "decision.absent"), 20u) << summary(r);
  EXPECT_EQ(r.duplicate_effects, 0u);
  EXPECT_EQ(r.lost_messages, 0u);
}

// Powertools, _boto3/test_idempotency.py :: test_idempotent_lambda_already_completed: a completed record with a
// future expiration: the handler is not run and the stored response is returned.
TEST(LibraryTranslationPowertools, AlreadyCompletedKeyIsSkippedAndHandedTheStoredResponse) {
  const lethe::RunResult r =
      run({.protocol = kPowertools, .redelivery = "fraction = 1.0\ncopies = 1\ndelay = \"uniform(3s, 5s)\"\n"});
  EXPECT_EQ(r.effects, 20u) << summary(r);
  EXPECT_EQ(cov(r, "decision.completed"), 20u) << summary(r);
  EXPECT_EQ(r.duplicate_effects, 0u);
  EXPECT_EQ(r.memo_mismatches, 0u) << "every copy is handed the response the first run stored";
}

// Powertools, _boto3/test_idempotency.py :: test_idempotent_lambda_in_progress (and _redis/test_redis_layer.py ::
// test_idempotent_lambda_redis_in_progress): a live INPROGRESS record makes the call raise
// IdempotencyAlreadyInProgressError at once, without running the handler and without waiting.
TEST(LibraryTranslationPowertools, InProgressKeyFailsTheCallAtOnceWithoutRunningTheHandler) {
  const lethe::RunResult r = run({.protocol = kPowertools,
                                  .workload = "messages = 20\nrate = \"5/s\"\nprocessing_time = \"1s\"\n",
                                  .redelivery = "fraction = 1.0\ncopies = 1\ndelay = \"uniform(10ms, 50ms)\"\n"});
  EXPECT_EQ(cov(r, "decision.max_wait_error"), 20u) << summary(r);
  EXPECT_EQ(r.waits, 0u) << "Powertools never waits on an in-progress record";
  EXPECT_EQ(r.duplicate_effects, 0u);
  EXPECT_EQ(r.effects, 20u);
  EXPECT_EQ(r.lost_messages, 0u) << "the failed call's message comes again and finds the record completed";
}

// Powertools, _boto3/test_idempotency.py :: test_idempotent_lambda_expired: a key handled successfully before, but
// outside the expiry window (expires_after_seconds, 1 hour by default): the handler runs again and the record is
// written anew.
TEST(LibraryTranslationPowertools, KeyPastItsExpiryRunsTheHandlerAgain) {
  const Scenario s{.protocol = kPowertools,
                   .workload = "messages = 5\nrate = \"5/s\"\nprocessing_time = \"200ms\"\n",
                   .redelivery = "fraction = 1.0\ncopies = 1\ndelay = \"2h\"\n",
                   .topology = "source = \"queue\"\nconsumers = 2\nvisibility_timeout = \"5s\"\n",
                   .run = "seeds = 1\nduration = \"3h\"\n"};
  const lethe::RunResult r = run(s);
  EXPECT_EQ(cause(r, lethe::Cause::Expired), 5u) << summary(r);
  EXPECT_EQ(r.duplicate_effects, 5u);
  // Within the hour, the same copy is skipped.
  const lethe::RunResult within = run(s, {"workload.redelivery.delay=\"30m\""});
  EXPECT_EQ(within.duplicate_effects, 0u) << summary(within);
  EXPECT_EQ(cov(within, "decision.completed"), 5u);
}

// Powertools, _boto3/test_idempotency.py :: test_idempotent_lambda_exception: the handler raises: the in-progress
// record is deleted (delete_item by key) and the exception re-raised, so the retry runs the handler at once.
TEST(LibraryTranslationPowertools, HandlerExceptionDeletesTheRecordAndTheRetryRunsAtOnce) {
  const Scenario s{.protocol = kPowertools, .sink = "kind = \"payment\"\nlatency = \"5ms\"\nfail = 0.3\n"};
  const lethe::RunResult r = run(s);
  EXPECT_GE(cov(r, "sink.failed"), 1u) << summary(r);
  EXPECT_EQ(cov(r, "protocol.released"), cov(r, "sink.failed")) << "every failed call deletes its record";
  EXPECT_EQ(cov(r, "decision.stale_takeover"), 0u) << "no retry waits for the record to go stale";
  EXPECT_EQ(r.duplicate_effects, 0u);
  EXPECT_EQ(r.lost_messages, 0u);
  // Keeping the record instead makes each retry wait for max_processing_time and take it over.
  const lethe::RunResult kept = run(s, {"protocol.on_failure=\"keep\""});
  EXPECT_GE(cov(kept, "decision.stale_takeover"), 1u) << summary(kept);
  EXPECT_EQ(cov(kept, "protocol.released"), 0u);
}

// Powertools, _boto3/test_idempotency.py :: test_idempotent_lambda_already_completed_with_validation_bad_payload (and
// _redis :: test_idempotent_function_and_lambda_handler_redis_validation): with payload_validation_jmespath, a
// completed record whose stored payload hash differs from the new event's raises IdempotencyValidationError; the
// handler does not run.
TEST(LibraryTranslationPowertools, CompletedKeyWithAnotherPayloadIsRefusedUnprocessed) {
  const Scenario s{.protocol = kPowertools + "payload_check = \"fingerprint\"\n",
                   .redelivery = "fraction = 1.0\ncopies = 1\ndelay = \"uniform(3s, 5s)\"\npayload = \"changed\"\n"};
  const lethe::RunResult r = run(s);
  EXPECT_EQ(r.payload_mismatches, 20u) << summary(r);
  EXPECT_EQ(r.payload_ignored, 0u);
  EXPECT_EQ(r.effects, 20u) << "the tampered copies run nothing";
  EXPECT_EQ(r.duplicate_effects, 0u);
  // Without payload validation (the preset's default) the same copies are returned the stored response.
  const lethe::RunResult off = run(s, {"protocol.payload_check=\"off\""});
  EXPECT_EQ(off.payload_mismatches, 0u);
  EXPECT_EQ(off.payload_ignored, 20u) << summary(off);
}

// Powertools, _boto3/test_idempotency.py :: test_idempotent_persistence_exception_updating: save_success fails: the
// call raises IdempotencyPersistenceLayerError, so the event is not acknowledged and comes again, finds its record in
// progress, and runs once the in-progress expiry has passed.
TEST(LibraryTranslationPowertools, FailedSuccessWriteFailsTheCallAndTheEventRunsAgain) {
  const Scenario s{.protocol = "preset = \"powertools\"\nmax_processing_time = \"5s\"\n",
                   .workload = "messages = 100\nrate = \"20/s\"\nprocessing_time = \"uniform(200ms, 600ms)\"\n",
                   .extra = "[network]\nrpc_timeout = \"300ms\"\n\n[[network.partition]]\nat = \"2s\"\nfor = \"3s\"\n"
                            "between = [\"consumers\", \"store\"]\n"};
  const lethe::RunResult r = run(s);
  EXPECT_GE(cause(r, lethe::Cause::CompletionLost), 1u) << summary(r);
  EXPECT_EQ(r.lost_messages, 0u);
  const lethe::RunResult acked = run(s, {"protocol.on_completion_failure=\"ack\""});
  EXPECT_EQ(cause(acked, lethe::Cause::CompletionLost), 0u) << summary(acked);
}

// Powertools, _boto3/test_idempotency.py :: test_idempotent_lambda_save_inprogress_error and
// test_idempotent_persistence_exception_getting: the persistence layer cannot be reached when the call starts:
// IdempotencyPersistenceLayerError, and the handler does not run without its record.
TEST(LibraryTranslationPowertools, UnreachableStoreAtStartFailsTheCallWithoutRunningTheHandler) {
  const lethe::RunResult r = run(store_cut_at_start(kPowertools));
  EXPECT_GE(cov(r, "decision.store_unavailable"), 1u) << summary(r);
  EXPECT_EQ(r.effects, 5u) << "no handler ran without its record";
  EXPECT_EQ(r.duplicate_effects, 0u);
  EXPECT_EQ(r.lost_messages, 0u) << "the events come again once the store answers";
}

// Powertools, _boto3/test_idempotency.py :: test_idempotent_lambda_expires_in_progress_after_expire (and _redis ::
// test_redis_orphan_record): an INPROGRESS record whose in_progress_expiration has passed (its Lambda died) is
// overwritten by the next call, which runs the handler; test_idempotent_lambda_expires_in_progress_before_expire:
// before that it is in progress.
TEST(LibraryTranslationPowertools, OrphanInProgressRecordIsTakenOverOnlyAfterItsInProgressExpiry) {
  const Scenario s{.protocol = "preset = \"powertools\"\nmax_processing_time = \"10s\"\n",
                   .extra = "[faults]\nrestart_after = \"1s\"\n\n[faults.crash_points]\n"
                            "after_start_before_effect = 0.3\n"};
  const lethe::RunResult r = run(s);
  EXPECT_GE(cov(r, "crash_point.after_start_before_effect.fired"), 1u) << summary(r);
  EXPECT_GE(cov(r, "decision.stale_takeover"), 1u) << summary(r);
  EXPECT_GE(cov(r, "decision.max_wait_error"), 1u) << "before the expiry the orphan is in progress";
  EXPECT_EQ(r.duplicate_effects, 0u);
  EXPECT_EQ(r.lost_messages, 0u);
}

// Powertools, _redis/test_redis_layer.py :: test_redis_race_condition and test_redis_orphan_record_race_condition:
// two handlers run at once for one event, on no record or on an expired one: only one runs the handler.
TEST(LibraryTranslationPowertools, TwoConcurrentCallsOnAnAbsentOrExpiredRecordRunTheHandlerOnce) {
  const Scenario s{.protocol = kPowertools,
                   .workload = "messages = 5\nrate = \"5/s\"\nprocessing_time = \"300ms\"\n",
                   .redelivery = "fraction = 1.0\ncopies = 3\n",
                   .copies = "[[workload.redelivery.copy]]\ndelay = \"uniform(0ms, 20ms)\"\n\n"
                             "[[workload.redelivery.copy]]\ndelay = \"2h\"\n\n"
                             "[[workload.redelivery.copy]]\ndelay = \"uniform(7200000ms, 7200020ms)\"\n",
                   .topology = "source = \"queue\"\nconsumers = 4\nvisibility_timeout = \"5s\"\n",
                   .run = "seeds = 1\nduration = \"3h\"\n"};
  const lethe::RunResult r = run(s);
  EXPECT_EQ(r.effects, 10u) << summary(r);
  EXPECT_EQ(cause(r, lethe::Cause::Expired), 5u) << "one run per message once its record expired, not two";
  EXPECT_EQ(r.duplicate_effects, 5u);
}

// Powertools, _boto3/test_idempotency.py :: test_idempotent_function_duplicates: two idempotent functions called with
// the same data keep records of their own (the key names the function): both run. lethe: two processors of one
// message.
TEST(LibraryTranslationPowertools, TwoFunctionsWithTheSameDataEachRunOnce) {
  const Scenario s{.protocol = kPowertools,
                   .topology = "source = \"queue\"\nconsumers = 2\nprocessors = [\"first\", \"second\"]\n"
                               "visibility_timeout = \"5s\"\n"};
  const lethe::RunResult r = run(s);
  EXPECT_EQ(r.effects, 40u) << summary(r);
  EXPECT_EQ(cov(r, "decision.absent"), 40u);
  EXPECT_EQ(r.duplicate_effects, 0u);
}

// ---------------------------------------------------------------- Apache Camel Idempotent Consumer

const std::string kCamelEager = "preset = \"camel-eager\"\n";
const std::string kCamelLazy = "preset = \"camel-lazy\"\n";
const std::string kCamelStore = "[store]\ncapacity = 200\n";

// Camel (apache/camel), core/camel-core/src/test/java/org/apache/camel/processor/IdempotentConsumerTest.java ::
// testDuplicateMessagesAreFilteredOut: ids 1, 2, 1, 2, 1, 3 sent one after another: the route receives one, two,
// three.
TEST(LibraryTranslationCamel, DuplicateMessagesAreFilteredOut) {
  const Scenario s{.protocol = kCamelEager,
                   .workload = "messages = 3\nrate = \"1/s\"\nprocessing_time = \"20ms\"\n",
                   .redelivery = "fraction = 1.0\ncopies = 2\ndelay = \"uniform(1s, 3s)\"\n",
                   .extra = "[store]\ncapacity = 10\n"};
  const lethe::RunResult r = run(s);
  EXPECT_EQ(r.effects, 3u) << summary(r);
  EXPECT_EQ(cov(r, "decision.completed"), 6u) << summary(r);
  EXPECT_EQ(r.duplicate_effects, 0u);
}

// Camel, IdempotentConsumerTest :: testFailedExchangesNotAdded (and ...DeadLetterChannel,
// IdempotentConsumerConcurrentTest's two): an exchange that fails has its key removed (removeOnFailure, true by
// default), so its id is not a duplicate when it comes again.
TEST(LibraryTranslationCamel, FailedExchangeRemovesItsKeySoTheNextCopyIsProcessed) {
  const Scenario s{.protocol = kCamelEager,
                   .sink = "kind = \"payment\"\nlatency = \"5ms\"\nfail = 0.3\n",
                   .extra = kCamelStore};
  const lethe::RunResult r = run(s);
  EXPECT_GE(cov(r, "sink.failed"), 1u) << summary(r);
  EXPECT_EQ(cov(r, "protocol.released"), cov(r, "sink.failed")) << summary(r);
  EXPECT_EQ(r.lost_messages, 0u) << "every failed id is processed when it comes again";
  EXPECT_EQ(r.duplicate_effects, 0u);
}

// Camel, IdempotentConsumerRemoveOnFailureTest :: testFailedExchangesNotRemoved: with removeOnFailure(false) the
// failed exchange's key stays, and every later copy of the id is a duplicate: "two" never reaches the route.
TEST(LibraryTranslationCamel, WithoutRemoveOnFailureAFailedIdIsNeverProcessedAgain) {
  const Scenario s{.protocol = kCamelEager + "on_failure = \"keep\"\n",
                   .sink = "kind = \"payment\"\nlatency = \"5ms\"\nfail = 0.3\n",
                   .run = "seeds = 1\nduration = \"2m\"\ndrain = false\n",
                   .extra = kCamelStore};
  const lethe::RunResult r = run(s);
  EXPECT_GE(cov(r, "sink.failed"), 1u) << summary(r);
  EXPECT_EQ(cov(r, "protocol.released"), 0u);
  EXPECT_EQ(cov(r, "decision.stale_takeover"), 0u) << "Camel's key never goes stale";
  EXPECT_EQ(r.lost_messages, cov(r, "sink.failed")) << "each failed id stays unprocessed";
  EXPECT_EQ(r.duplicate_effects, 0u);
}

// Camel, IdempotentConsumerEagerTest :: testEager and testNotEager: eager adds the key before the route runs (the
// route sees it in the repository), lazy only after. What that decides: a copy that arrives while the first
// exchange runs finds the key with eager and is filtered at once as a duplicate (no wait), and is processed a
// second time with lazy.
TEST(LibraryTranslationCamel, EagerAddFiltersACopyThatArrivesMidRouteAtOnceLazyLetsItRunAgain) {
  Scenario s{.protocol = kCamelEager,
             .workload = "messages = 20\nrate = \"5/s\"\nprocessing_time = \"300ms\"\n",
             .redelivery = "fraction = 1.0\ncopies = 1\ndelay = \"uniform(20ms, 100ms)\"\n",
             .extra = kCamelStore};
  const lethe::RunResult eager = run(s);
  EXPECT_EQ(eager.duplicate_effects, 0u) << summary(eager);
  EXPECT_EQ(eager.effects, 20u);
  EXPECT_EQ(cov(eager, "decision.in_flight_recent"), 20u) << summary(eager);
  EXPECT_EQ(eager.waits, 0u) << "Camel does not wait on a key in flight";
  s.protocol = kCamelLazy;
  const lethe::RunResult lazy = run(s);
  EXPECT_EQ(lazy.duplicate_effects, 20u) << summary(lazy);
  EXPECT_EQ(cause(lazy, lethe::Cause::Unprotected), 20u);
}

// Camel, IdempotentConsumerEagerTest :: testDuplicateMessagesAreFilteredOut with eager(false): sequential copies are
// still filtered once the first exchange added its key.
TEST(LibraryTranslationCamel, LazyAddStillFiltersCopiesThatComeAfterTheExchange) {
  const Scenario s{.protocol = kCamelLazy,
                   .workload = "messages = 3\nrate = \"1/s\"\nprocessing_time = \"20ms\"\n",
                   .redelivery = "fraction = 1.0\ncopies = 2\ndelay = \"uniform(1s, 3s)\"\n",
                   .extra = "[store]\ncapacity = 10\n"};
  const lethe::RunResult r = run(s);
  EXPECT_EQ(r.effects, 3u) << summary(r);
  EXPECT_EQ(r.duplicate_effects, 0u);
  EXPECT_EQ(cov(r, "decision.completed"), 6u) << summary(r);
}

// Camel, IdempotentConsumerEagerTest :: testFailedExchangesNotAdded with eager(false): a failed exchange adds
// nothing, so its id is processed when it comes again.
TEST(LibraryTranslationCamel, LazyFailedExchangeAddsNothingSoTheNextCopyIsProcessed) {
  const Scenario s{.protocol = kCamelLazy,
                   .sink = "kind = \"payment\"\nlatency = \"5ms\"\nfail = 0.3\n",
                   .extra = kCamelStore};
  const lethe::RunResult r = run(s);
  EXPECT_GE(cov(r, "sink.failed"), 1u) << summary(r);
  EXPECT_EQ(r.lost_messages, 0u);
  EXPECT_EQ(r.duplicate_effects, 0u);
  EXPECT_EQ(r.effects, 20u);
}

// Camel, IdempotentConsumerConcurrentTest :: testThreadedIdempotentConsumer: ten threads send the same hundred ids at
// once; the route receives each id once.
TEST(LibraryTranslationCamel, TenConcurrentSendersOfTheSameIdsReachTheRouteOncePerId) {
  const Scenario s{.protocol = kCamelEager,
                   .workload = "messages = 100\nrate = \"50/s\"\nprocessing_time = \"1ms\"\n",
                   .redelivery = "fraction = 1.0\ncopies = 9\ndelay = \"uniform(0ms, 50ms)\"\n",
                   .topology = "source = \"queue\"\nconsumers = 10\nvisibility_timeout = \"5s\"\n",
                   .extra = kCamelStore};
  const lethe::RunResult r = run(s);
  EXPECT_EQ(r.effects, 100u) << summary(r);
  EXPECT_EQ(r.duplicate_effects, 0u);
  EXPECT_EQ(r.deliveries, 1000u);
  EXPECT_EQ(r.waits, 0u) << "a copy of a key in flight is filtered at once";
}

// Camel, IdempotentConsumerCompletionEagerTest :: testCompletionEager: the key is confirmed when the idempotent block
// completes, so a failure after the block does not make the id new again: "two" is not processed twice.
// lethe: a crash after the completion write, before the acknowledgement.
TEST(LibraryTranslationCamel, FailureAfterTheConfirmedBlockDoesNotProcessTheIdAgain) {
  const Scenario s{.protocol = kCamelEager,
                   .extra = kCamelStore + "\n[faults]\nrestart_after = \"1s\"\n\n[faults.crash_points]\n"
                                          "after_complete_before_ack = 0.3\n"};
  const lethe::RunResult r = run(s);
  EXPECT_GE(cov(r, "crash_point.after_complete_before_ack.fired"), 1u) << summary(r);
  EXPECT_EQ(cov(r, "decision.completed"), cov(r, "crash_point.after_complete_before_ack.fired")) << summary(r);
  EXPECT_EQ(r.duplicate_effects, 0u);
}

// Camel, IdempotentConsumerRepoExceptionTest :: testRepoException: the repository throws on add for one id: that
// exchange fails (to the dead letter channel) without reaching the route, and the other ids are processed.
TEST(LibraryTranslationCamel, RepositoryErrorOnAddFailsTheExchangeWithoutRunningTheRoute) {
  const lethe::RunResult r = run(store_cut_at_start(kCamelEager));
  EXPECT_GE(cov(r, "decision.store_unavailable"), 1u) << summary(r);
  EXPECT_EQ(r.effects, 5u) << "no route ran without its key";
  EXPECT_EQ(r.duplicate_effects, 0u);
  EXPECT_EQ(r.lost_messages, 0u);
}

// Camel, camel-core/src/test/java/org/apache/camel/processor/idempotent/MemoryIdempotentRepositoryTest.java ::
// usesLRUSemantics (@Ignore'd there as non-deterministic): a..z sent twice through a memoryIdempotentRepository(20),
// an LRU map: the second round's early letters were evicted and reach the route again.
TEST(LibraryTranslationCamel, BoundedRepositoryForgetsTheOldestIdsAndTheirCopiesRunAgain) {
  const Scenario s{.protocol = kCamelEager,
                   .workload = "messages = 26\nrate = \"10/s\"\nprocessing_time = \"5ms\"\n",
                   .redelivery = "fraction = 1.0\ncopies = 1\ndelay = \"2700ms\"\n",
                   .topology = "source = \"queue\"\nconsumers = 1\nvisibility_timeout = \"5s\"\n",
                   .extra = "[store]\ncapacity = 20\n"};
  const lethe::RunResult r = run(s);
  EXPECT_GE(cause(r, lethe::Cause::CapacityEvicted), 1u) << summary(r);
  EXPECT_EQ(r.duplicate_effects, cause(r, lethe::Cause::CapacityEvicted));
  const lethe::RunResult roomy = run(s, {"store.capacity=200"});
  EXPECT_EQ(roomy.duplicate_effects, 0u) << summary(roomy);
}

// ---------------------------------------------------------------- rocket-rides-atomic (idempotency keys)

const std::string kKeys = "preset = \"idempotency-keys\"\n";

// rocket-rides-atomic (brandur/rocket-rides-atomic), spec/api_spec.rb :: "passes for a new key": a request with
// an unseen key is processed (201).
TEST(LibraryTranslationRocketRides, NewKeyIsProcessed) {
  const lethe::RunResult r = run({.protocol = kKeys});
  EXPECT_EQ(r.effects, 20u) << summary(r);
  EXPECT_EQ(cov(r, "decision.absent"), 20u);
  EXPECT_EQ(r.duplicate_effects, 0u);
}

// rocket-rides-atomic, spec/api_spec.rb :: "returns a stored result": a key whose recovery point is finished answers
// with its stored response, nothing runs.
TEST(LibraryTranslationRocketRides, FinishedKeyReturnsTheStoredResult) {
  const lethe::RunResult r =
      run({.protocol = kKeys, .redelivery = "fraction = 1.0\ncopies = 1\ndelay = \"uniform(3s, 5s)\"\n"});
  EXPECT_EQ(r.effects, 20u) << summary(r);
  EXPECT_EQ(cov(r, "decision.completed"), 20u) << summary(r);
  EXPECT_EQ(r.memo_mismatches, 0u);
  EXPECT_EQ(r.duplicate_effects, 0u);
}

// rocket-rides-atomic, spec/api_spec.rb :: "denies requests that have an equivalent in flight": a key locked less
// than IDEMPOTENCY_KEY_LOCK_TIMEOUT ago answers 409 Conflict at once.
TEST(LibraryTranslationRocketRides, KeyLockedByARequestInFlightIsRefusedAtOnce) {
  const lethe::RunResult r = run({.protocol = kKeys,
                                  .workload = "messages = 20\nrate = \"5/s\"\nprocessing_time = \"1s\"\n",
                                  .redelivery = "fraction = 1.0\ncopies = 1\ndelay = \"uniform(10ms, 50ms)\"\n"});
  EXPECT_EQ(cov(r, "decision.max_wait_error"), 20u) << summary(r);
  EXPECT_EQ(r.waits, 0u);
  EXPECT_EQ(r.duplicate_effects, 0u);
}

// rocket-rides-atomic, spec/api_spec.rb :: "passes for keys with a stale locked_at": a key locked more than 90 s ago
// (its request died) is taken by the next request, which is processed.
TEST(LibraryTranslationRocketRides, KeyWithAStaleLockIsTakenAndProcessed) {
  const Scenario s{.protocol = kKeys,
                   .extra = "[faults]\nrestart_after = \"1s\"\n\n[faults.crash_points]\n"
                            "after_start_before_effect = 0.3\n"};
  const lethe::RunResult r = run(s);
  EXPECT_GE(cov(r, "crash_point.after_start_before_effect.fired"), 1u) << summary(r);
  EXPECT_EQ(cov(r, "decision.stale_takeover"), cov(r, "crash_point.after_start_before_effect.fired")) << summary(r);
  EXPECT_EQ(r.lost_messages, 0u);
  EXPECT_EQ(r.duplicate_effects, 0u);
}

// rocket-rides-atomic, spec/api_spec.rb :: "unlocks a key and returns 500 on an internal error" and "... 429 on a
// serialization failure", then "passes for keys that are unlocked": an error that is not the request's final answer
// sets locked_at to NULL, and the next request with the key is processed at once.
TEST(LibraryTranslationRocketRides, InternalErrorUnlocksTheKeyAndTheNextRequestIsProcessed) {
  const Scenario s{.protocol = kKeys + "memoize_failures = false\n",
                   .sink = "kind = \"payment\"\nlatency = \"5ms\"\nfail = 0.3\n"};
  const lethe::RunResult r = run(s);
  EXPECT_GE(cov(r, "sink.failed"), 1u) << summary(r);
  EXPECT_EQ(cov(r, "protocol.released"), cov(r, "sink.failed"));
  EXPECT_EQ(cov(r, "decision.stale_takeover"), 0u);
  EXPECT_EQ(r.lost_messages, 0u);
  EXPECT_EQ(r.duplicate_effects, 0u);
}

// rocket-rides-atomic, spec/api_spec.rb :: "stores results for a permanent failure": Stripe declines the card: the
// 402 is stored as the key's response, and the request is not retried.
TEST(LibraryTranslationRocketRides, PermanentFailureIsStoredAsTheKeysResponse) {
  const Scenario s{.protocol = kKeys, .sink = "kind = \"payment\"\nlatency = \"5ms\"\nfail = 0.3\n"};
  const lethe::RunResult r = run(s);
  EXPECT_GE(cov(r, "sink.failed"), 1u) << summary(r);
  EXPECT_EQ(r.lost_messages, cov(r, "sink.failed")) << "a declined charge is never retried";
  EXPECT_EQ(cov(r, "protocol.released"), 0u) << "memoized, not unlocked";
  EXPECT_GE(cov(r, "decision.completed"), cov(r, "sink.failed")) << "later deliveries get the stored failure";
  EXPECT_EQ(r.duplicate_effects, 0u);
}

// rocket-rides-atomic, spec/api_spec.rb :: "denies requests where parameters don't match on an existing key": 409
// Conflict, nothing runs.
TEST(LibraryTranslationRocketRides, RequestWhoseParametersDifferFromTheKeysIsRefused) {
  const Scenario s{.protocol = kKeys,
                   .redelivery = "fraction = 1.0\ncopies = 1\ndelay = \"uniform(3s, 5s)\"\npayload = \"changed\"\n"};
  const lethe::RunResult r = run(s);
  EXPECT_EQ(r.payload_mismatches, 20u) << summary(r);
  EXPECT_EQ(r.payload_ignored, 0u);
  EXPECT_EQ(r.effects, 20u);
  EXPECT_EQ(r.duplicate_effects, 0u);
}

// rocket-rides-atomic, spec/reaper_spec.rb :: "pushes through an existing idempotency key" (a key created more than
// 72 hours ago is deleted) and "ignores keys not outside of reap threshold": a request after the reaper ran is new
// again, one before it finds its key.
TEST(LibraryTranslationRocketRides, KeyOlderThanTheReapThresholdIsGoneAndYoungerOnesAreKept) {
  const Scenario s{.protocol = kKeys,
                   .workload = "messages = 3\nrate = \"5/s\"\nprocessing_time = \"200ms\"\n",
                   .redelivery = "fraction = 1.0\ncopies = 1\ndelay = \"73h\"\n",
                   .topology = "source = \"queue\"\nconsumers = 1\nvisibility_timeout = \"5s\"\n",
                   .run = "seeds = 1\nduration = \"74h\"\n"};
  const lethe::RunResult reaped = run(s);
  EXPECT_EQ(cause(reaped, lethe::Cause::Expired), 3u) << summary(reaped);
  const lethe::RunResult kept = run(s, {"workload.redelivery.delay=\"71h\""});
  EXPECT_EQ(kept.duplicate_effects, 0u) << summary(kept);
  EXPECT_EQ(cov(kept, "decision.completed"), 3u);
}

}  // namespace library_translations_test
