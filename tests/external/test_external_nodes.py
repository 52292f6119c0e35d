"""The node libraries and the examples of examples/external/, without lethe: each test spawns a node and plays
a scripted transcript of lethe's side (tests/external/lethe_side.py checks the turn protocol on every turn).

Run: python3 tests/external/test_external_nodes.py [-v] [-k NAME]   (ctest: external_node_libraries)
With LETHE_EXAMPLES_DIR set (an installed share/lethe/examples/external), the installed copy is tested.
"""
import os
import shutil
import sys
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
EXAMPLES = Path(os.environ.get("LETHE_EXAMPLES_DIR", ROOT / "examples" / "external"))
sys.path.insert(0, str(HERE))
from lethe_side import ProtocolViolation, ScriptedLethe  # noqa: E402

NODE = shutil.which("node") or shutil.which("nodejs")


def only(envelopes, **fields):
    """The one envelope whose body has these fields."""
    found = [e for e in envelopes if all(e["body"].get(k) == v for k, v in fields.items())]
    if len(found) != 1:
        raise AssertionError(f"expected one envelope with {fields}, got {envelopes}")
    return found[0]


class NodeCase(unittest.TestCase):
    ARGV: list = []
    ENV: dict = {}

    def setUp(self):
        if not self.ARGV:
            self.skipTest("abstract")
        self.lethe = ScriptedLethe(self.ARGV, env=self.ENV)
        self.addCleanup(self.lethe.kill)
        out = self.lethe.init()
        self.assertEqual(out, [{"src": "billing-0", "dest": "lethe",
                                "body": {"type": "init_ok", "in_reply_to": 1, "lethe_turns": True}}])

    def assertOnly(self, envelopes, dest, **fields):
        """The node wrote exactly one envelope this turn, to `dest`, whose body has these fields."""
        self.assertEqual(len(envelopes), 1, envelopes)
        self.assertEqual(envelopes[0]["dest"], dest, envelopes)
        for key, value in fields.items():
            self.assertEqual(envelopes[0]["body"].get(key), value, envelopes)
        return envelopes[0]

    def assertAck(self, envelopes, value):
        return self.assertOnly(envelopes, "source", type="deliver_ok", value=value,
                               in_reply_to=self.lethe.last_delivery["msg_id"])

    def assertReject(self, envelopes, delivery):
        return self.assertOnly(envelopes, "source", type="error", code=11, in_reply_to=delivery["msg_id"])

    def tearDown(self):
        code, stderr = self.lethe.close()
        self.assertEqual(code, 0, stderr)


class LibraryContract:
    """The same transcripts for both libraries' test nodes (tests/external/echo_node.*)."""

    def effect_of(self, out, attempt):
        request = self.assertOnly(out, "sink", type="effect", processor="billing", attempt=attempt)
        self.assertIsInstance(request["body"]["msg_id"], int)
        return request

    def test_delivery_calls_the_sink_then_acks_with_its_value(self):
        effect = self.effect_of(self.lethe.deliver(14, 307), 307)
        self.assertEqual(effect["body"]["message"], 14)
        self.assertAck(self.lethe.reply(effect, {"type": "effect_ok", "value": 99}), 99)

    def test_sleep_is_answered_later_and_the_clock_is_that_turns_time_ns(self):
        effect = self.effect_of(self.lethe.deliver(1, 1, payload="sleep", time_ns=100), 1)
        sleep = self.assertOnly(self.lethe.reply(effect, {"type": "effect_ok", "value": 5}, time_ns=200),
                                "clock", type="sleep", duration_ns=1000)
        self.assertAck(self.lethe.reply(sleep, {"type": "sleep_ok"}, time_ns=1234), 1234)

    def test_two_concurrent_deliveries_whose_replies_come_in_the_other_order(self):
        first_delivery = None
        first = self.effect_of(self.lethe.deliver(1, 11), 11)
        first_delivery = self.lethe.last_delivery
        second = self.effect_of(self.lethe.deliver(2, 12), 12)
        second_delivery = self.lethe.last_delivery
        self.assertNotEqual(first["body"]["msg_id"], second["body"]["msg_id"])
        out = self.lethe.reply(second, {"type": "effect_ok", "value": 2})
        self.assertOnly(out, "source", type="deliver_ok", value=2, in_reply_to=second_delivery["msg_id"])
        out = self.lethe.reply(first, {"type": "effect_ok", "value": 1})
        self.assertOnly(out, "source", type="deliver_ok", value=1, in_reply_to=first_delivery["msg_id"])

    def test_two_calls_of_one_handler_leave_in_one_turn_and_resume_it_when_both_are_back(self):
        out = self.lethe.deliver(5, 50, payload="both")
        self.assertEqual([(e["dest"], e["body"]["type"]) for e in out], [("sink", "effect"), ("clock", "sleep")])
        effect, sleep = out
        self.assertEqual(self.lethe.reply(sleep, {"type": "sleep_ok"}), [])
        self.assertAck(self.lethe.reply(effect, {"type": "effect_ok", "value": 6}), 6)

    def test_a_timeout_of_the_sink_rejects_the_delivery_with_error_11(self):
        effect = self.effect_of(self.lethe.deliver(3, 5), 5)
        self.assertReject(self.lethe.error(effect, 0, "timeout"), self.lethe.last_delivery)

    def test_an_exception_answers_error_11_and_writes_its_traceback(self):
        self.assertReject(self.lethe.deliver(3, 5, payload="fail"), self.lethe.last_delivery)
        self.assertIn("the handler failed", self.lethe.stderr())

    def test_reject_answers_error_11_without_a_traceback(self):
        self.assertReject(self.lethe.deliver(3, 5, payload="reject"), self.lethe.last_delivery)
        self.assertNotIn("Traceback", self.lethe.stderr())

    def test_a_request_without_a_handler_answers_error_10(self):
        out = self.lethe.turn("c1", {"type": "frobnicate", "msg_id": 77})
        self.assertOnly(out, "c1", type="error", code=10, in_reply_to=77)

    def test_a_handler_for_another_type_replies_with_its_body(self):
        out = self.lethe.turn("c1", {"type": "echo", "msg_id": 78, "echo": "hi"}, time_ns=4242)
        self.assertOnly(out, "c1", type="echo_ok", echo="hi", now=4242, in_reply_to=78)

    def test_msg_ids_stay_unique_over_many_deliveries(self):
        for message in range(1, 41):
            effect = self.effect_of(self.lethe.deliver(message, 1000 + message), 1000 + message)
            self.assertAck(self.lethe.reply(effect, {"type": "effect_ok", "value": message}), message)
        self.assertEqual(len(self.lethe.requests), 40)


class PythonLibrary(LibraryContract, NodeCase):
    ARGV = [sys.executable, str(HERE / "echo_node.py")]

    def test_gather_with_a_failing_coroutine_rejects_once_every_call_is_back(self):
        effect = self.effect_of(self.lethe.deliver(5, 50, payload="both-fail"), 50)
        delivery = self.lethe.last_delivery
        self.assertReject(self.lethe.reply(effect, {"type": "effect_ok", "value": 6}), delivery)
        self.assertIn("a gathered coroutine failed", self.lethe.stderr())

    def test_awaiting_a_foreign_awaitable_fails_the_delivery(self):
        self.assertReject(self.lethe.deliver(3, 5, payload="asyncio"), self.lethe.last_delivery)
        self.assertIn("may await only", self.lethe.stderr())


@unittest.skipIf(NODE is None, "nodejs is not installed (scripts/setup installs it)")
class JavaScriptLibrary(LibraryContract, NodeCase):
    ARGV = [NODE or "node", str(HERE / "echo_node.js")]

    def test_promise_all_with_a_failing_promise_rejects_in_the_same_turn(self):
        out = self.lethe.deliver(5, 50, payload="both-fail")
        self.assertEqual([(e["dest"], e["body"]["type"]) for e in out], [("sink", "effect"), ("source", "error")])
        self.assertEqual(out[1]["body"]["code"], 11)
        self.assertEqual(self.lethe.reply(out[0], {"type": "effect_ok", "value": 6}), [])  # nobody awaits it

    def test_a_handler_blocked_on_a_promise_that_never_settles_still_ends_the_turn(self):
        self.assertEqual(self.lethe.deliver(3, 5, payload="asyncio"), [])
        effect = self.effect_of(self.lethe.deliver(4, 6), 6)
        self.assertAck(self.lethe.reply(effect, {"type": "effect_ok", "value": 8}), 8)


S = 10**9
MS = 10**6
KEY = {"table": "dedupe", "processor": "billing", "message": 14}


class MnemosyneContract:
    """examples/external/mnemosyne.{py,js}: the ops of each row of the decision table, in order."""
    ENV = {"LETHE_TTL": "1h", "LETHE_MAX_WAIT": "1s"}
    BAD_POLL_ERROR = ""

    def start(self, attempt=307, at=10 * S):
        out = self.lethe.deliver(14, attempt, time_ns=at)
        return self.assertOnly(out, "lethe-store", type="op", op={
            "kind": "upsert", "key": KEY, "condition": {},
            "update": {"started_at": {"set_if_absent": at}, "owner": {"set_if_absent": attempt},
                       "replace_expired_at": at}})

    def effect_then_completion(self, out, attempt, value, at):
        effect = self.assertOnly(out, "sink", type="effect", message=14, processor="billing", attempt=attempt)
        out = self.lethe.reply(effect, {"type": "effect_ok", "value": value}, time_ns=at)
        return self.assertOnly(out, "lethe-store", type="op")["body"]["op"]

    def test_absent_runs_the_effect_completes_fenced_on_the_owner_and_acks_the_value(self):
        start = self.start()
        out = self.lethe.reply(start, {"type": "op_ok", "reply": {"applied": True, "previous": None}})
        completion = self.effect_then_completion(out, 307, 7, 11 * S)
        self.assertEqual(completion, {
            "kind": "upsert", "key": KEY, "condition": {"owner_equals": 307, "require_not_completed": True},
            "update": {"started_at": {"set_if_absent": 10 * S}, "owner": {"set_if_absent": 307},
                       "completed_at": {"set": 11 * S}, "expires_on": {"set": 11 * S + 3600 * S},
                       "memoized": {"set": 7}}})
        request = self.lethe.requests[max(self.lethe.requests)]
        self.assertAck(self.lethe.reply(request, {"type": "op_ok", "reply": {"applied": True, "previous": None}}), 7)

    def test_completed_skips_without_an_effect_and_acks_the_memoized_value(self):
        done = {"started_at": 1 * S, "completed_at": 2 * S, "expires_on": 9999 * S, "owner": 3, "memoized": 5}
        out = self.lethe.reply(self.start(), {"type": "op_ok", "reply": {"applied": True, "previous": done}})
        self.assertAck(out, 5)
        self.assertFalse([r for r in self.lethe.requests.values() if r["dest"] == "sink"])

    def test_stale_in_flight_is_taken_over_fenced_on_its_started_at(self):
        stale = {"started_at": 5 * S, "owner": 3}  # age 5s = max_processing_time: stale
        out = self.lethe.reply(self.start(), {"type": "op_ok", "reply": {"applied": True, "previous": stale}})
        takeover = self.assertOnly(out, "lethe-store", type="op", op={
            "kind": "upsert", "key": KEY,
            "condition": {"require_present": True, "require_not_completed": True, "started_at_equals": 5 * S},
            "update": {"started_at": {"set": 10 * S}, "owner": {"set": 307}}})
        out = self.lethe.reply(takeover, {"type": "op_ok", "reply": {"applied": True, "previous": stale}})
        completion = self.effect_then_completion(out, 307, 8, 12 * S)
        self.assertEqual(completion["condition"], {"owner_equals": 307, "require_not_completed": True})

    def test_a_lost_takeover_decides_again_on_what_it_found(self):
        stale = {"started_at": 5 * S, "owner": 3}
        out = self.lethe.reply(self.start(), {"type": "op_ok", "reply": {"applied": True, "previous": stale}})
        takeover = self.assertOnly(out, "lethe-store", type="op")
        winner = {"started_at": 10 * S, "owner": 4, "completed_at": 10 * S, "memoized": 6}
        self.assertAck(self.lethe.reply(takeover, {"type": "op_ok", "reply": {"applied": False,
                                                                              "previous": winner}}), 6)

    def test_recent_in_flight_sleeps_a_poll_then_reads_and_decides_again(self):
        recent = {"started_at": 9 * S, "owner": 3}  # age 1s < 5s
        out = self.lethe.reply(self.start(), {"type": "op_ok", "reply": {"applied": True, "previous": recent}})
        sleep = self.assertOnly(out, "clock", type="sleep", duration_ns=100 * MS)
        read = self.assertOnly(self.lethe.reply(sleep, {"type": "sleep_ok"}, time_ns=10 * S + 100 * MS),
                               "lethe-store", type="op", op={"kind": "get", "key": KEY})
        out = self.lethe.reply(read, {"type": "op_ok", "reply": {"applied": True, "previous": recent}})
        sleep = self.assertOnly(out, "clock", type="sleep", duration_ns=100 * MS)
        read = self.assertOnly(self.lethe.reply(sleep, {"type": "sleep_ok"}, time_ns=10 * S + 200 * MS),
                               "lethe-store", type="op", op={"kind": "get", "key": KEY})
        done = {**recent, "completed_at": 10 * S, "memoized": 4}
        self.assertAck(self.lethe.reply(read, {"type": "op_ok", "reply": {"applied": True, "previous": done}}), 4)
        self.assertFalse([r for r in self.lethe.requests.values() if r["dest"] == "sink"])

    def test_waiting_past_max_wait_rejects_the_delivery(self):
        recent = {"started_at": 9 * S, "owner": 3}
        out = self.lethe.reply(self.start(), {"type": "op_ok", "reply": {"applied": True, "previous": recent}})
        delivery = self.lethe.last_delivery
        for tick in range(1, 11):  # max_wait 1s = 10 polls of 100ms
            sleep = self.assertOnly(out, "clock", type="sleep")
            read = self.assertOnly(self.lethe.reply(sleep, {"type": "sleep_ok"}, time_ns=10 * S + tick * 100 * MS),
                                   "lethe-store", type="op")
            out = self.lethe.reply(read, {"type": "op_ok", "reply": {"applied": True, "previous": recent}})
        self.assertReject(out, delivery)

    def test_a_lost_start_reply_is_tried_again_and_our_own_record_is_recognised(self):
        start = self.start()
        again = self.assertOnly(self.lethe.error(start, 0, "timeout"), "lethe-store", type="op",
                                op=start["body"]["op"])
        mine = {"started_at": 10 * S, "owner": 307}
        out = self.lethe.reply(again, {"type": "op_ok", "reply": {"applied": True, "previous": mine}})
        self.assertOnly(out, "sink", type="effect", attempt=307)

    def test_a_store_that_never_answers_rejects_after_three_tries(self):
        request = self.start()
        delivery = self.lethe.last_delivery
        for _ in range(2):
            request = self.assertOnly(self.lethe.error(request, 0), "lethe-store", type="op")
        self.assertReject(self.lethe.error(request, 0), delivery)

    def test_a_failed_effect_rejects_and_writes_no_completion(self):
        out = self.lethe.reply(self.start(), {"type": "op_ok", "reply": {"applied": True, "previous": None}})
        effect = self.assertOnly(out, "sink", type="effect")
        self.assertReject(self.lethe.error(effect, 11, "provider unavailable"), self.lethe.last_delivery)

    def test_bad_settings_exit_2_naming_the_setting(self):
        lethe = ScriptedLethe(self.ARGV[:2] + ["--poll", "fast"])
        self.addCleanup(lethe.kill)
        self.assertEqual(lethe.proc.wait(timeout=10), 2)
        self.assertIn(self.BAD_POLL_ERROR, lethe.stderr())


class MnemosynePython(MnemosyneContract, NodeCase):
    ARGV = [sys.executable, str(EXAMPLES / "mnemosyne.py"), "--max-processing-time", "5s", "--poll", "100ms"]
    BAD_POLL_ERROR = "poll: 'fast' is not a duration"


@unittest.skipIf(NODE is None, "nodejs is not installed (scripts/setup installs it)")
class MnemosyneJavaScript(MnemosyneContract, NodeCase):
    ARGV = [NODE or "node", str(EXAMPLES / "mnemosyne.js"), "--max-processing-time", "5s", "--poll", "100ms"]
    BAD_POLL_ERROR = 'poll: "fast" is not a duration'


class LinKvReadThenWrite(NodeCase):
    """examples/external/linkv_read_then_write.py: read, effect, write; a present key skips."""
    ARGV = [sys.executable, str(EXAMPLES / "linkv_read_then_write.py")]

    def test_absent_key_runs_the_effect_then_writes_its_value(self):
        read = self.assertOnly(self.lethe.deliver(14, 307), "lin-kv", type="read", key="billing/14")
        effect = self.assertOnly(self.lethe.error(read, 20, "key does not exist"), "sink", type="effect")
        write = self.assertOnly(self.lethe.reply(effect, {"type": "effect_ok", "value": 3}), "lin-kv",
                                type="write", key="billing/14", value=3)
        self.assertAck(self.lethe.reply(write, {"type": "write_ok"}), 3)

    def test_present_key_skips_with_its_value(self):
        read = self.assertOnly(self.lethe.deliver(14, 307), "lin-kv", type="read")
        self.assertAck(self.lethe.reply(read, {"type": "read_ok", "value": 9}), 9)

    def test_two_attempts_that_both_read_before_either_writes_both_run_the_effect(self):
        first = self.assertOnly(self.lethe.deliver(14, 1), "lin-kv", type="read")
        second = self.assertOnly(self.lethe.deliver(14, 2), "lin-kv", type="read")
        self.assertOnly(self.lethe.error(first, 20), "sink", type="effect", attempt=1)
        self.assertOnly(self.lethe.error(second, 20), "sink", type="effect", attempt=2)

    def test_a_read_timeout_rejects(self):
        read = self.assertOnly(self.lethe.deliver(14, 307), "lin-kv", type="read")
        self.assertReject(self.lethe.error(read, 0, "timeout"), self.lethe.last_delivery)


class LinKvCas(NodeCase):
    """examples/external/linkv_cas.py: claim by cas with create_if_not_exists before the effect."""
    ARGV = [sys.executable, str(EXAMPLES / "linkv_cas.py")]

    def claim(self, out, attempt):
        return self.assertOnly(out, "lin-kv", type="cas", key="billing/14", to=f"claimed:{attempt}",
                               create_if_not_exists=True)

    def test_a_won_claim_runs_the_effect_and_writes_done(self):
        cas = self.claim(self.lethe.deliver(14, 307), 307)
        effect = self.assertOnly(self.lethe.reply(cas, {"type": "cas_ok"}), "sink", type="effect")
        write = self.assertOnly(self.lethe.reply(effect, {"type": "effect_ok", "value": 5}), "lin-kv",
                                type="write", key="billing/14", value="done:5")
        self.assertAck(self.lethe.reply(write, {"type": "write_ok"}), 5)

    def test_a_lost_claim_on_a_done_key_skips_with_its_value(self):
        cas = self.claim(self.lethe.deliver(14, 307), 307)
        read = self.assertOnly(self.lethe.error(cas, 22, "precondition failed"), "lin-kv", type="read")
        self.assertAck(self.lethe.reply(read, {"type": "read_ok", "value": "done:5"}), 5)
        self.assertFalse([r for r in self.lethe.requests.values() if r["dest"] == "sink"])

    def test_a_lost_claim_on_a_key_another_attempt_holds_rejects_without_an_effect(self):
        cas = self.claim(self.lethe.deliver(14, 307), 307)
        read = self.assertOnly(self.lethe.error(cas, 22), "lin-kv", type="read")
        self.assertReject(self.lethe.reply(read, {"type": "read_ok", "value": "claimed:9"}), self.lethe.last_delivery)
        self.assertFalse([r for r in self.lethe.requests.values() if r["dest"] == "sink"])

    def test_a_timed_out_claim_that_landed_is_recognised_as_ours(self):
        cas = self.claim(self.lethe.deliver(14, 307), 307)
        again = self.claim(self.lethe.error(cas, 0, "timeout"), 307)
        read = self.assertOnly(self.lethe.error(again, 22), "lin-kv", type="read")
        self.assertOnly(self.lethe.reply(read, {"type": "read_ok", "value": "claimed:307"}), "sink", type="effect")


@unittest.skipIf(NODE is None, "nodejs is not installed (scripts/setup installs it)")
class CheckThenInsert(NodeCase):
    """examples/external/check_then_insert.js: get, effect, blind put."""
    ARGV = [NODE or "node", str(EXAMPLES / "check_then_insert.js")]
    ENV = {"LETHE_TTL": "1h"}

    def test_no_record_runs_the_effect_then_puts_a_completed_record(self):
        get = self.assertOnly(self.lethe.deliver(14, 307, time_ns=10 * S), "lethe-store", type="op",
                              op={"kind": "get", "key": KEY})
        out = self.lethe.reply(get, {"type": "op_ok", "reply": {"applied": True, "previous": None}})
        effect = self.assertOnly(out, "sink", type="effect", attempt=307)
        put = self.assertOnly(self.lethe.reply(effect, {"type": "effect_ok", "value": 4}, time_ns=11 * S),
                              "lethe-store", type="op", op={"kind": "put", "key": KEY, "item": {
                                  "started_at": 10 * S, "completed_at": 11 * S, "expires_on": 11 * S + 3600 * S,
                                  "owner": 307, "memoized": 4}})
        self.assertAck(self.lethe.reply(put, {"type": "op_ok", "reply": {"applied": True, "previous": None}}), 4)

    def test_a_completed_record_skips_with_its_memoized_value(self):
        get = self.assertOnly(self.lethe.deliver(14, 307, time_ns=10 * S), "lethe-store", type="op")
        done = {"started_at": 1, "completed_at": 2, "owner": 3, "memoized": 6}
        self.assertAck(self.lethe.reply(get, {"type": "op_ok", "reply": {"applied": True, "previous": done}}), 6)

    def test_two_attempts_that_both_check_before_either_inserts_both_run_the_effect(self):
        first = self.assertOnly(self.lethe.deliver(14, 1), "lethe-store", type="op")
        second = self.assertOnly(self.lethe.deliver(14, 2), "lethe-store", type="op")
        absent = {"type": "op_ok", "reply": {"applied": True, "previous": None}}
        self.assertOnly(self.lethe.reply(first, absent), "sink", type="effect", attempt=1)
        self.assertOnly(self.lethe.reply(second, absent), "sink", type="effect", attempt=2)


@unittest.skipIf(NODE is None, "nodejs is not installed (scripts/setup installs it)")
class UniqueConstraint(NodeCase):
    """examples/external/unique_constraint.js: insert with require_absent first; on conflict skip."""
    ARGV = [NODE or "node", str(EXAMPLES / "unique_constraint.js")]
    ENV = {"LETHE_TTL": "1h"}

    def insert(self, attempt, at=10 * S):
        return self.assertOnly(self.lethe.deliver(14, attempt, time_ns=at), "lethe-store", type="op", op={
            "kind": "upsert", "key": KEY, "condition": {"require_absent": True},
            "update": {"started_at": {"set": at}, "owner": {"set": attempt}}})

    def test_a_landed_insert_runs_the_effect_and_completes_fenced_on_the_owner(self):
        out = self.lethe.reply(self.insert(307), {"type": "op_ok", "reply": {"applied": True, "previous": None}})
        effect = self.assertOnly(out, "sink", type="effect", attempt=307)
        done = self.assertOnly(self.lethe.reply(effect, {"type": "effect_ok", "value": 2}, time_ns=11 * S),
                               "lethe-store", type="op", op={
                                   "kind": "upsert", "key": KEY,
                                   "condition": {"owner_equals": 307, "require_not_completed": True},
                                   "update": {"completed_at": {"set": 11 * S}, "expires_on": {"set": 3611 * S},
                                              "memoized": {"set": 2}}})
        self.assertAck(self.lethe.reply(done, {"type": "op_ok", "reply": {"applied": True, "previous": None}}), 2)

    def test_a_conflict_skips_without_an_effect(self):
        insert = self.insert(307)
        other = {"started_at": 1, "owner": 9}
        self.assertAck(self.lethe.reply(insert, {"type": "op_ok", "reply": {"applied": False, "previous": other}}),
                       None)
        self.assertFalse([r for r in self.lethe.requests.values() if r["dest"] == "sink"])

    def test_a_conflict_with_a_completed_record_acks_its_memoized_value(self):
        done = {"started_at": 1, "completed_at": 2, "owner": 9, "memoized": 12}
        self.assertAck(self.lethe.reply(self.insert(307),
                                        {"type": "op_ok", "reply": {"applied": False, "previous": done}}), 12)

    def test_a_conflict_with_our_own_earlier_insert_goes_on_as_the_owner(self):
        insert = self.insert(307)
        again = self.assertOnly(self.lethe.error(insert, 0, "timeout"), "lethe-store", type="op")
        mine = {"started_at": 10 * S, "owner": 307}
        out = self.lethe.reply(again, {"type": "op_ok", "reply": {"applied": False, "previous": mine}})
        self.assertOnly(out, "sink", type="effect", attempt=307)


class Nondeterministic(unittest.TestCase):
    """examples/external/nondeterministic.py: the same transcript twice gives different requests."""

    def first_requests(self):
        lethe = ScriptedLethe([sys.executable, str(EXAMPLES / "nondeterministic.py")])
        self.addCleanup(lethe.kill)
        lethe.init()
        sleep = lethe.deliver(14, 307, time_ns=S)[0]
        effect = lethe.reply(sleep, {"type": "sleep_ok"}, time_ns=2 * S)[0]
        return sleep["body"]["duration_ns"], effect["body"]["idempotency_key"]

    def test_two_runs_of_one_transcript_send_different_requests(self):
        first, second = self.first_requests(), self.first_requests()
        self.assertNotEqual(first[0], second[0])  # unseeded random (equal with probability 1/49,000,001)
        self.assertNotEqual(first[1], second[1])  # the real clock


class PlainMaelstrom(unittest.TestCase):
    """examples/external/plain_maelstrom.py: no lethe_turns, no turn markers, a complete exchange."""

    def test_runs_without_turn_markers(self):
        lethe = ScriptedLethe([sys.executable, str(EXAMPLES / "plain_maelstrom.py")], checks=False)
        self.addCleanup(lethe.kill)
        out = lethe.line_quiet("lethe", {"type": "init", "msg_id": 1, "node_id": "billing-0",
                                         "node_ids": ["billing-0"], "lethe": {"protocol": 1}})
        self.assertEqual(out, [{"src": "billing-0", "dest": "lethe", "body": {"type": "init_ok", "in_reply_to": 1}}])
        deliver = {"type": "deliver", "msg_id": 2, "message": 14, "processor": "billing", "attempt": 7,
                   "delivery": 1, "payload": None}
        [read] = lethe.line_quiet("source", deliver)
        self.assertEqual(read["body"]["type"], "read")
        [effect] = lethe.line_quiet("lin-kv", {"type": "error", "code": 20, "in_reply_to": read["body"]["msg_id"]})
        self.assertEqual(effect["dest"], "sink")
        [write] = lethe.line_quiet("sink", {"type": "effect_ok", "value": 3, "in_reply_to": effect["body"]["msg_id"]})
        self.assertEqual(write["body"], {"type": "write", "key": "billing/14", "value": 3, "msg_id": 3})
        [ack] = lethe.line_quiet("lin-kv", {"type": "write_ok", "in_reply_to": 3})
        self.assertEqual(ack["body"], {"type": "deliver_ok", "in_reply_to": 2, "value": 3})
        self.assertFalse(any(e["body"]["type"] == "turn_end" for e in out + [read, effect, write, ack]))


class HarnessSelfCheck(unittest.TestCase):
    """The scripted side catches a node that breaks the turn protocol (so the tests above can fail)."""

    def run_bad(self, script):
        lethe = ScriptedLethe([sys.executable, "-c", script])
        self.addCleanup(lethe.kill)
        with self.assertRaises(ProtocolViolation) as caught:
            lethe.init()
        return str(caught.exception)

    def test_a_wrong_turn_number_is_caught(self):
        message = self.run_bad('import sys; sys.stdin.readline(); '
                               'print(\'{"src":"billing-0","dest":"lethe","body":{"type":"turn_end","turn":7}}\', '
                               'flush=True)')
        self.assertIn("wrong turn marker", message)

    def test_output_after_turn_end_is_caught(self):
        message = self.run_bad('import sys; sys.stdin.readline(); '
                               'print(\'{"src":"billing-0","dest":"lethe","body":{"type":"turn_end","turn":1}}\\n'
                               '{"src":"billing-0","dest":"sink","body":{"type":"effect","msg_id":1}}\', flush=True)')
        self.assertIn("output after turn_end", message)


if __name__ == "__main__":
    unittest.main()
