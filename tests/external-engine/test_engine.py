#!/usr/bin/env python3
"""lethe's engine side of external nodes (docs/external.md), end to end with the lethe binary.

Usage: test_engine.py LETHE. Runs tests/external-engine/raw_node.py (the wire protocol alone) as the consumer
nodes of small scenarios: a run end to end, crashes and restarts, the crash points, determinism and its check,
plain Maelstrom nodes, every kind of bad node (exit code 2 and a message naming the node, the last line sent,
what was expected and the stderr tail), that no node process survives, lethe killed by SIGTERM or SIGINT
included, messages between nodes over the consumers' link and its partitions, and Maelstrom's lin-tso, seq-kv
and lww-kv.
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import uuid
import xml.etree.ElementTree as ElementTree
from pathlib import Path

HERE = Path(__file__).resolve().parent
LETHE = None
EFFECT = HERE / "raw-effect.toml"
RECORD = HERE / "raw-record.toml"
PEERS = HERE / "raw-peers.toml"
MS = 1_000_000
# The consumers cannot reach each other from 2 s to 5 s.
PARTITION = ["--set", "network.partition[0].at=2s", "--set", "network.partition[0].for=3s",
             "--set", "network.partition[0].between=consumers,consumers"]


def marked_processes(mark):
    """The pids of live processes whose environment carries `mark` (lethe's children inherit it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            status = (entry / "status").read_text()
        except OSError:
            continue
        if f"LETHE_TEST_MARK={mark}".encode() in environ.split(b"\0") and "State:\tZ" not in status:
            found.append(int(entry.name))
    return found


def lethe(*args, mark=None, extra_env=None, timeout=300):
    env = dict(os.environ)
    env["LETHE_TEST_MARK"] = mark or uuid.uuid4().hex
    env.update(extra_env or {})
    return subprocess.run([LETHE, *map(str, args)], capture_output=True, text=True, env=env, timeout=timeout)


def syscalls_readable():
    """Whether this machine lets a process read what its child sleeps in (/proc/PID/syscall: Yama, containers)."""
    child = subprocess.Popen(["sleep", "5"])
    try:
        Path(f"/proc/{child.pid}/syscall").read_text()
        return True
    except OSError:
        return False
    finally:
        child.kill()
        child.wait()


def command(mode):
    return f"external.command=python3,raw_node.py,{mode}"


def c_node(folder, *flags):
    """effect_node.c built with cc into `folder` (flags such as -static), its path."""
    binary = Path(folder) / "effect_node"
    subprocess.run(["cc", "-O2", *flags, "-o", str(binary), str(HERE / "effect_node.c")], check=True)
    return binary


def the_one_mark(test, run):
    """The one not_reproducible reason of a run that lost nothing (the test fails otherwise)."""
    test.assertEqual(run.returncode, 0, run.stderr)
    result = json.loads(run.stdout)
    test.assertEqual(result["lost_messages"], 0)
    [why] = result["not_reproducible"]
    return why


class EndToEnd(unittest.TestCase):
    def test_a_node_runs_end_to_end_and_the_same_seed_gives_the_same_trace(self):
        first = lethe("run", EFFECT, "--seed", 2, "--json")
        second = lethe("run", EFFECT, "--seed", 2, "--json")
        self.assertEqual(first.returncode, 0, first.stderr)
        a, b = json.loads(first.stdout), json.loads(second.stdout)
        self.assertEqual(a["trace_hash"], b["trace_hash"])
        self.assertEqual(a["messages"], 40)
        self.assertEqual(a["lost_messages"], 0)
        self.assertEqual(a["effects"], 40 + a["duplicate_effects"])
        # The node checks nothing: every duplicate is unprotected, none is left unattributed.
        self.assertEqual(a["duplicates"]["unprotected"], a["duplicate_effects"])

    def test_the_benchmarks_c_node_runs_as_raw_node_effect_does_with_the_same_counts(self):
        # scripts/bench-external --nodes times effect_node.c as lethe's share of a turn: it must be a real node.
        with tempfile.TemporaryDirectory() as scratch:
            runs = [lethe("run", EFFECT, "--json", "--seed", 1, "--set", f"external.command={node}")
                    for node in (c_node(scratch), "python3,raw_node.py,effect")]
        for run in runs:
            self.assertEqual(run.returncode, 0, run.stderr)
        in_c, in_python = (json.loads(run.stdout) for run in runs)
        self.assertEqual(in_c["messages"], 40)
        self.assertEqual(in_c["duplicate_effects"], 1)  # seed 1: one (the node dedupes nothing)
        for key in ("deliveries", "effects", "duplicate_effects", "lost_messages", "sink_calls", "duplicates"):
            self.assertEqual(in_c[key], in_python[key], key)

    def test_a_crashed_node_restarts_as_a_fresh_process_with_the_next_incarnation(self):
        with tempfile.TemporaryDirectory() as scratch:
            log = Path(scratch) / "inits"
            run = lethe("run", EFFECT, "--json", extra_env={"RAW_NODE_LOG": str(log)})
            self.assertEqual(run.returncode, 0, run.stderr)
            inits = log.read_text().split("\n")
        by_node = {}
        for line in filter(None, inits):
            node, _, incarnation = line.split()
            by_node.setdefault(node, []).append(int(incarnation))
        self.assertTrue(by_node)
        for node, incarnations in by_node.items():
            self.assertEqual(incarnations, list(range(1, len(incarnations) + 1)), node)
        self.assertTrue(any(len(i) > 1 for i in by_node.values()), by_node)

    def test_the_named_crash_points_are_recognised_from_the_record_nodes_traffic(self):
        run = lethe("run", RECORD, "--json", "--set", "faults.crash_every=1h",
                    *[arg for point in ("after_start_before_effect", "after_effect_before_complete",
                                        "after_complete_before_ack")
                      for arg in ("--set", f"faults.crash_points.{point}=0.3")])
        self.assertIn(run.returncode, (0, 1), run.stderr)
        result = json.loads(run.stdout)
        for point in ("after_start_before_effect", "after_effect_before_complete", "after_complete_before_ack"):
            self.assertGreaterEqual(result["coverage"][f"crash_point.{point}.fired"], 1, point)
        self.assertTrue(result["linearizable"])

    @unittest.skipUnless(syscalls_readable(), "this machine hides /proc/PID/syscall: lethe then says timers are unread")
    def test_a_plain_node_the_kernel_sees_finish_each_turn_runs_reproducibly_and_unmarked(self):
        runs = [lethe("run", EFFECT, "--json", "--seed", 3, "--set", command("plain"), "--set", "faults.crash_every=1h")
                for _ in range(2)]
        for run in runs:
            self.assertEqual(run.returncode, 0, run.stderr)
        first, second = (json.loads(run.stdout) for run in runs)
        self.assertEqual(first["lost_messages"], 0)
        self.assertNotIn("not_reproducible", first)  # written only when something is not reproducible
        self.assertEqual(first["trace_hash"], second["trace_hash"])

    @unittest.skipUnless(syscalls_readable(), "this machine hides /proc/PID/syscall: lethe then says timers are unread")
    def test_a_plain_node_started_through_a_shell_that_waits_for_it_is_watched_with_the_shell(self):
        # The shell waits for python3 (not exec'd: `||` follows); the node's process group is watched instead.
        run = lethe("run", EFFECT, "--json", "--set", "external.command=sh,-c,python3 raw_node.py plain || exit 1",
                    "--set", "faults.crash_every=1h")
        self.assertEqual(run.returncode, 0, run.stderr)
        result = json.loads(run.stdout)
        self.assertEqual(result["lost_messages"], 0)
        self.assertNotIn("not_reproducible", result)

    @unittest.skipUnless(syscalls_readable(), "this machine hides /proc/PID/syscall: lethe then says timers are unread")
    def test_a_plain_node_with_a_wall_clock_timer_of_its_own_is_marked_naming_the_timer(self):
        run = lethe("run", EFFECT, "--json", "--set", command("plain-timer"), "--set", "faults.crash_every=1h")
        self.assertEqual(run.returncode, 0, run.stderr)
        [why] = json.loads(run.stdout)["not_reproducible"]
        self.assertRegex(why, r"\d+ of \d+ turns ended with a wall-clock timer of the node's own pending "
                              r"\(thread \d+ in nanosleep; a wait lethe did not serve: one the "
                              r"virtual-clock library does not cover .* or one begun before init_ok\)")
        self.assertNotIn("no free slot", why)  # none was counted: not a cause

    def test_a_plain_node_whose_turns_end_by_silence_is_marked_not_reproducible(self):
        run = lethe("run", EFFECT, "--json", "--set", command("plain"), "--set", "faults.crash_every=1h",
                    "--set", "external.plain_turn_end=silence")
        self.assertRegex(the_one_mark(self, run), r"no lethe_turns.*: (\d+) of \1 turns ended after "
                                                  r"external.quiet_period of silence "
                                                  r"\(external.plain_turn_end = \"silence\"\)")


class VirtualClock(unittest.TestCase):
    """A plain node's clock and timers in virtual time (external.clock = "virtual", the default): raw_node.py's
    plain-clock mode runs each delivery's effect 2 s after it came, timed by poll() and time.monotonic()."""

    def run_plain_clock(self, *extra, extra_env=None, mode="plain-clock"):
        with tempfile.TemporaryDirectory() as scratch:
            log = Path(scratch) / "log"
            started = time.monotonic()
            run = lethe("run", EFFECT, "--json", "--seed", 4, "--set", command(mode),
                        "--set", "faults.crash_every=1h", "--set", "workload.messages=20",
                        "--set", "topology.visibility_timeout=30s", *extra,
                        extra_env={"RAW_NODE_LOG": str(log), **(extra_env or {})})
            wall = time.monotonic() - started
            lines = log.read_text().split("\n") if log.exists() else []
        return run, wall, [line.split() for line in lines if line]

    @unittest.skipUnless(syscalls_readable(), "this machine hides /proc/PID/syscall: lethe then says timers are unread")
    def test_a_plain_nodes_poll_timeout_fires_in_virtual_time_and_its_clock_reads_virtual_time(self):
        self.expect_effects_two_seconds_after_their_delivery(*self.run_plain_clock())

    @unittest.skipUnless(syscalls_readable(), "this machine hides /proc/PID/syscall: lethe then says timers are unread")
    def test_a_plain_nodes_threading_timers_fire_in_virtual_time(self):
        # threading.Timer waits in sem_clockwait on a thread of its own; the effect is written from that thread.
        self.expect_effects_two_seconds_after_their_delivery(*self.run_plain_clock(mode="plain-thread-clock"))

    @unittest.skipUnless(syscalls_readable(), "this machine hides /proc/PID/syscall: lethe then says timers are unread")
    def test_a_plain_node_with_threading_timers_passes_the_determinism_check(self):
        run, _, _ = self.run_plain_clock("--check-determinism", mode="plain-thread-clock")
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)

    def expect_effects_two_seconds_after_their_delivery(self, run, wall, log):
        self.assertEqual(run.returncode, 0, run.stderr)
        result = json.loads(run.stdout)
        self.assertEqual(result["lost_messages"], 0)
        self.assertNotIn("not_reproducible", result)
        came = {(entry[0], entry[2]): entry for entry in log if entry[1] == "clock"}
        fired = {(entry[0], entry[2]): entry for entry in log if entry[1] == "fired"}
        self.assertEqual(len(came), 20, log)
        self.assertEqual(set(fired), set(came))
        offsets = set()
        for key, entry in came.items():
            line_ns, monotonic_ns, realtime_ns = map(int, entry[3:6])
            offsets.add((monotonic_ns - line_ns, realtime_ns - line_ns))
            # Each effect fires 2 s of the node's own clock after its delivery came (poll's ms rounding: up to 1 ms).
            waited = int(fired[key][3]) - monotonic_ns
            self.assertTrue(2_000 * MS <= waited <= 2_001 * MS, (key, waited))
        # The node's clocks are the line's time_ns plus fixed bases: the monotonic 10^6 s, the realtime 2000-01-01.
        self.assertEqual(offsets, {(10**6 * 10**9, 946684800 * 10**9)})
        # 20 deliveries each waiting 2 s of their own clock, run in far less wall time than one such wait each.
        self.assertLess(wall, 20.0)

    @unittest.skipUnless(syscalls_readable(), "this machine hides /proc/PID/syscall: lethe then says timers are unread")
    def test_a_plain_node_with_virtual_timers_passes_the_determinism_check(self):
        run, _, _ = self.run_plain_clock("--check-determinism")
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)

    @unittest.skipUnless(syscalls_readable(), "this machine hides /proc/PID/syscall: lethe then says timers are unread")
    def test_without_the_library_a_plain_nodes_timers_are_the_machines_and_the_run_says_why(self):
        run, _, _ = self.run_plain_clock("--set", "workload.messages=1",
                                         extra_env={"LETHE_VCLOCK_LIBRARY": "/nonexistent/liblethe-vclock.so"})
        self.assertIn(run.returncode, (0, 1), run.stderr)
        [why] = json.loads(run.stdout)["not_reproducible"]
        self.assertRegex(why, r"turns ended with a wall-clock timer of the node's own pending \(thread \d+ in poll "
                              r"with a \d+ ms timeout; the node's clock is the machine's: the virtual-clock library "
                              r"liblethe-vclock.so was not found or cannot be preloaded "
                              r"\(.*/nonexistent/liblethe-vclock.so")

    @unittest.skipUnless(syscalls_readable(), "this machine hides /proc/PID/syscall: lethe then says timers are unread")
    def test_a_static_plain_nodes_timers_are_the_machines_and_the_run_names_its_static_program(self):
        # effect_node.c's plain mode waits in poll() with an hour's timeout; built static, nothing preloads into it.
        with tempfile.TemporaryDirectory() as scratch:
            static = c_node(scratch, "-static")
            run = lethe("run", EFFECT, "--json", "--seed", 1, "--set", f"external.command={static},plain",
                        "--set", "faults.crash_every=1h")
        self.assertRegex(the_one_mark(self, run), r"(\d+) of \1 turns ended with a wall-clock timer of the node's "
                                                  r"own pending \(thread \d+ in poll with a 3600000 ms timeout; the "
                                                  r"node's clock is the machine's: the virtual-clock library was "
                                                  r"not loaded: its program is a static binary")

    @unittest.skipUnless(syscalls_readable(), "this machine hides /proc/PID/syscall: lethe then says timers are unread")
    def test_with_external_clock_wall_a_plain_nodes_timers_are_the_machines_and_the_run_says_so(self):
        run, _, _ = self.run_plain_clock("--set", "workload.messages=1", "--set", "external.clock=wall")
        self.assertIn(run.returncode, (0, 1), run.stderr)
        [why] = json.loads(run.stdout)["not_reproducible"]
        self.assertRegex(why, r"ms timeout; the node's clock is the machine's: external.clock = \"wall\"\)")


class Determinism(unittest.TestCase):
    def test_the_replay_line_of_a_failed_check_runs_as_printed_through_a_shell(self):
        # A --set value with a space and a quote: the line must quote it for the shell, not elide it.
        sets = ["--set", command("random"), "--set", "scenario.description=it's random"]
        run = lethe("run", EFFECT, "--check-determinism", *sets)
        self.assertEqual(run.returncode, 1, run.stdout + run.stderr)
        replay = re.search(r"^  replay: (.*)$", run.stdout, re.MULTILINE)
        self.assertIsNotNone(replay, run.stdout)
        env = dict(os.environ, PATH=f"{Path(LETHE).resolve().parent}{os.pathsep}{os.environ['PATH']}",
                   LETHE_TEST_MARK=uuid.uuid4().hex)
        again = subprocess.run(["sh", "-c", replay.group(1)], capture_output=True, text=True, env=env, timeout=300)
        # The random node again, so the check fails again: the --set reached the command.
        self.assertEqual(again.returncode, 1, replay.group(1) + "\n" + again.stdout + again.stderr)
        self.assertIn("NOT deterministic", again.stdout)

    def test_the_check_passes_a_deterministic_node(self):
        run = lethe("run", EFFECT, "--check-determinism")
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertIn("deterministic:", run.stdout)

    def test_the_check_names_the_first_line_where_a_random_node_differed(self):
        run = lethe("run", EFFECT, "--check-determinism", "--set", command("random"))
        self.assertEqual(run.returncode, 1, run.stdout + run.stderr)
        self.assertIn("NOT deterministic", run.stdout)
        self.assertRegex(run.stdout, r"node \S+ \(incarnation \d+\), turn \d+")
        self.assertIn("run 1:", run.stdout)
        self.assertIn("run 2:", run.stdout)


BAD_NODES = {
    "garbage": "not a message",
    "unknown-type": "unknown type",
    "reply-to-nothing": "never sent",
    "wrong-src": "src",
    "exit": "exiting on purpose",
    "hang": "node_timeout",
    "flood": "requests in flight, the most a node may have",
    "long-line": "wrote a line longer than 16777216 bytes",
}


class BadNodes(unittest.TestCase):
    def test_each_bad_node_stops_the_run_with_exit_2_naming_it_and_leaves_no_process(self):
        for mode, says in BAD_NODES.items():
            with self.subTest(mode=mode):
                mark = uuid.uuid4().hex
                # Only "hang" waits for the timeout; the others are told apart by what the node does, so a
                # loaded machine (a 16 MiB line takes a while to write) must not turn them into timeouts.
                timeout = "1s" if mode == "hang" else "20s"
                run = lethe("run", EFFECT, "--set", command(mode), "--set", f"external.node_timeout={timeout}",
                            mark=mark)
                self.assertEqual(run.returncode, 2, run.stderr)
                self.assertIn(says, run.stderr)
                self.assertRegex(run.stderr, r"external node [a-z]+-\d")
                self.assertIn("last line lethe sent: {", run.stderr)
                self.assertIn("expected", run.stderr)
                self.assertIn("stderr tail", run.stderr)
                self.assertEqual(marked_processes(mark), [])

    def test_nodes_that_never_start_cost_one_node_timeout_for_the_run_and_are_all_named(self):
        # 30 nodes that never read their init share one grace beyond the timeout; a grace each, in turn, cost
        # 29 x 200 ms more than one such node (8 s in all, against 1.1 s). What is left per node is spawning and
        # ending a process: about 10 and 8 ms (25 and 20 ms under the sanitizers, on a loaded machine).
        def never_starting(nodes):
            mark = uuid.uuid4().hex
            start = time.monotonic()
            run = lethe("run", EFFECT, "--set", f"topology.consumers={nodes}", "--set", "external.command=sleep,3600",
                        "--set", "external.node_timeout=1s", mark=mark)
            elapsed = time.monotonic() - start
            self.assertEqual(run.returncode, 2, run.stderr)
            named = set(re.findall(r"(billing-\d+) \(incarnation 1, process", run.stderr))
            self.assertEqual(len(named), nodes, run.stderr)
            # The first node's error in full; the others, alike but for their node_id, in one line naming them.
            self.assertEqual(run.stderr.count("last line lethe sent"), 1, run.stderr)
            # Counted from lethe's first line: a sanitizer build writes its own warnings before it.
            self.assertIn("lethe:", run.stderr)
            self.assertLessEqual(len(run.stderr[run.stderr.index("lethe:"):].splitlines()), 6, run.stderr)
            self.assertEqual(marked_processes(mark), [])
            return elapsed

        one = never_starting(1)
        thirty = never_starting(30)
        self.assertLess(thirty - one, 3.0, f"30 nodes: {thirty:.2f} s, one: {one:.2f} s")

    def test_a_program_that_cannot_start_is_bad_input(self):
        run = lethe("run", EFFECT, "--set", "external.command=./no-such-program")
        self.assertEqual(run.returncode, 2, run.stderr)
        self.assertIn("cannot start", run.stderr)

    def test_the_scenario_keys_are_checked(self):
        with tempfile.TemporaryDirectory() as scratch:
            missing = Path(scratch) / "missing.toml"
            missing.write_text(EFFECT.read_text().replace('command = ["python3", "raw_node.py", "effect"]', ""))
            run = lethe("run", missing)
            self.assertEqual(run.returncode, 2)
            self.assertIn("external.command", run.stderr)
            self.assertIn("missing", run.stderr)
        run = lethe("run", EFFECT, "--set", "protocol.kind=none")
        self.assertEqual(run.returncode, 2)
        self.assertIn("allowed only with protocol.kind = \"external\"", run.stderr)


class Precision(unittest.TestCase):
    def node_replies(self, mode, kind):
        """What the node logged of the replies of one kind: {what it asked: the reply's line}."""
        with tempfile.TemporaryDirectory() as scratch:
            log = Path(scratch) / "log"
            run = lethe("run", EFFECT, "--json", "--set", command(mode), "--set", "topology.consumers=1",
                        "--set", "faults.crash_every=1h", extra_env={"RAW_NODE_LOG": str(log)})
            self.assertEqual(run.returncode, 0, run.stderr)
            lines = [line.split(" ", 3) for line in log.read_text().splitlines()]
        return {parts[2]: parts[3] for parts in lines if len(parts) == 4 and parts[1] == kind}

    def test_lin_kv_integers_beyond_64_bits_are_kept_exact(self):
        replies = self.node_replies("linkv-big", "linkv")
        self.assertEqual(len(replies), 7, replies)
        body = {step: json.loads(text)["body"] for step, text in replies.items()}
        # The digits as written, not a double's 1.8446744073709552e+19.
        self.assertIn('"value":18446744073709551616', replies["read-2^64"])
        self.assertEqual(body["read-2^64"]["value"], 2**64)
        # 2^64 + 1 and 2^64 are the same double: compared exactly, the cas fails.
        self.assertEqual((body["cas-from-2^64+1"]["type"], body["cas-from-2^64+1"]["code"]), ("error", 22))
        self.assertIn("18446744073709551617", body["cas-from-2^64+1"]["text"])
        self.assertEqual(body["cas-from-2^64"]["type"], "cas_ok")
        self.assertIn('"value":1267650600228229401496703205376', replies["read-2^100"])
        self.assertIn('"value":-1180591620717411303424', replies["read--2^70"])

    def test_a_clock_sleep_that_cannot_be_slept_is_a_malformed_request(self):
        replies = {duration: json.loads(text)["body"] for duration, text in self.node_replies("sleep-bad", "sleep").items()}
        self.assertEqual(set(replies), {str(2**64 - 1), "-5", "1.5", str(10**18), str(10**6)}, replies)
        self.assertEqual(replies[str(10**6)]["type"], "sleep_ok")
        for duration in (str(2**64 - 1), "-5", "1.5", str(10**18)):
            with self.subTest(duration=duration):
                self.assertEqual((replies[duration]["type"], replies[duration]["code"]), ("error", 12))
                self.assertIn("duration_ns", replies[duration]["text"])
                self.assertIn("found " + duration, replies[duration]["text"])

    def test_a_node_that_exits_after_a_bad_line_is_reported_the_same_every_time(self):
        texts = set()
        for _ in range(6):
            run = lethe("run", EFFECT, "--set", command("bad-exit"), "--set", "topology.consumers=1",
                        "--set", "faults.crash_every=1h")
            self.assertEqual(run.returncode, 2, run.stderr)
            # lethe's message, from its first line on (a sanitizer build writes warnings naming its pid first).
            self.assertIn("lethe:", run.stderr)
            texts.add(run.stderr[run.stderr.index("lethe:"):])
        self.assertEqual(len(texts), 1, "\n----\n".join(texts))
        self.assertIn("process exited with status 1", texts.pop())

    def test_a_run_with_several_plain_nodes_says_it_is_not_reproducible_once(self):
        run = lethe("run", EFFECT, "--set", command("plain-timer"), "--set", "topology.consumers=3",
                    "--set", "faults.crash_every=1h")
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(run.stdout.count("NOT GUARANTEED REPRODUCIBLE"), 1, run.stdout)
        for node in ("0", "1", "2"):
            self.assertRegex(run.stdout, rf"NOT GUARANTEED REPRODUCIBLE:.*-{node}\b")


class NodeOutput(unittest.TestCase):
    def test_a_long_line_is_read_in_linear_time_and_not_reported_as_a_missing_turn_end(self):
        start = time.time()
        run = lethe("run", EFFECT, "--set", command("long-line"), "--set", "external.node_timeout=60s")
        self.assertEqual(run.returncode, 2, run.stderr)
        self.assertNotIn("no turn_end", run.stderr)
        self.assertLess(time.time() - start, 30)

    def test_stderr_that_is_not_utf8_reaches_stderr_and_the_junit_xml_as_well_formed_text(self):
        with tempfile.TemporaryDirectory() as scratch:
            junit = Path(scratch) / "junit.xml"
            env = dict(os.environ, LETHE_TEST_MARK=uuid.uuid4().hex)
            run = subprocess.run([LETHE, "suite", str(EFFECT), "--set", command("bad-utf8"), "--junit", str(junit)],
                                 capture_output=True, env=env, timeout=300)
            self.assertEqual(run.returncode, 2, run.stderr)
            printed = (run.stdout + run.stderr).decode("utf-8")  # strict: raises on a byte that is not UTF-8
            self.assertIn("\\xff\\xfe\\xc3", printed)
            root = ElementTree.parse(junit).getroot()  # raises when the XML is not well-formed
            text = "".join(root.itertext()) + "".join(e.get("message", "") for e in root.iter("error"))
            self.assertIn("\\xff\\xfe\\xc3", text)
            self.assertIn("not a message", text)


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class Descendants(unittest.TestCase):
    """Every process a node started ends with lethe: a plain child and a daemon that forked twice and called
    setsid(), whether lethe ends the run itself, is interrupted, or is killed with SIGKILL."""

    def start(self, scratch, mark):
        log = Path(scratch) / "log"
        env = dict(os.environ, LETHE_TEST_MARK=mark, RAW_NODE_LOG=str(log))
        process = subprocess.Popen([LETHE, "run", str(EFFECT), "--set", command("forks"), "--set",
                                    "external.node_timeout=20s"], env=env, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
        deadline = time.time() + 60
        while not (log.exists() and "hangs" in log.read_text()) and time.time() < deadline:
            time.sleep(0.1)
        pids = [int(line.split()[-1]) for line in log.read_text().splitlines() if " child " in line or " daemon " in line]
        self.assertTrue(pids, "the node started no descendants")
        self.assertTrue(all(alive(pid) for pid in pids))
        return process, pids

    def assert_all_ended(self, mark, pids):
        deadline = time.time() + 10
        while (marked_processes(mark) or any(alive(pid) for pid in pids)) and time.time() < deadline:
            time.sleep(0.1)
        self.assertEqual(marked_processes(mark), [])
        self.assertEqual([pid for pid in pids if alive(pid)], [])

    def test_descendants_end_when_the_run_ends(self):
        with tempfile.TemporaryDirectory() as scratch:
            mark = uuid.uuid4().hex
            process, pids = self.start(scratch, mark)
            self.assertEqual(process.wait(timeout=120), 2)  # the node_timeout
            self.assert_all_ended(mark, pids)

    def test_descendants_end_when_lethe_is_interrupted_or_killed(self):
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
            with self.subTest(signal=sig.name), tempfile.TemporaryDirectory() as scratch:
                mark = uuid.uuid4().hex
                process, pids = self.start(scratch, mark)
                process.send_signal(sig)
                self.assertEqual(process.wait(timeout=30), -sig)
                self.assert_all_ended(mark, pids)


class Signals(unittest.TestCase):
    def test_no_node_process_survives_lethe_killed_by_sigterm_or_sigint(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            with self.subTest(signal=sig.name), tempfile.TemporaryDirectory() as scratch:
                mark = uuid.uuid4().hex
                log = Path(scratch) / "log"
                env = dict(os.environ, LETHE_TEST_MARK=mark, RAW_NODE_LOG=str(log))
                # Hanging nodes and a long node_timeout: lethe is still running when the signal comes, and a
                # node sleeps in its handler (it would outlive lethe unless lethe kills it).
                process = subprocess.Popen([LETHE, "run", str(EFFECT), "--set", command("hang"), "--set",
                                            "external.node_timeout=1h"], env=env, stdout=subprocess.DEVNULL,
                                           stderr=subprocess.DEVNULL)
                deadline = time.time() + 60
                while not (log.exists() and "hangs" in log.read_text()) and time.time() < deadline:
                    time.sleep(0.1)
                children = [pid for pid in marked_processes(mark) if pid != process.pid]
                self.assertTrue(children, "the nodes never started")
                process.send_signal(sig)
                process.wait(timeout=30)
                self.assertEqual(process.returncode, -sig)
                deadline = time.time() + 10
                while marked_processes(mark) and time.time() < deadline:
                    time.sleep(0.1)
                self.assertEqual(marked_processes(mark), [])


class Peers(unittest.TestCase):
    """Messages between nodes (dest: a node of node_ids) travel the consumers-to-consumers link."""

    def run_logged(self, *args, trace=None):
        with tempfile.TemporaryDirectory() as scratch:
            log = Path(scratch) / "log"
            extra = ["--trace", str(Path(scratch) / "trace.jsonl")] if trace is not None else []
            run = lethe("run", PEERS, "--json", *args, *extra, extra_env={"RAW_NODE_LOG": str(log)})
            self.assertEqual(run.returncode, 0, run.stderr)
            lines = log.read_text().splitlines() if log.exists() else []
            if trace is not None:
                trace.extend(json.loads(line) for line in (Path(scratch) / "trace.jsonl").read_text().splitlines())
        return json.loads(run.stdout), lines

    @staticmethod
    def pings(lines):
        """(receiver, sender, first sent, sent, arrived) of every ping that arrived, times in ns."""
        found = []
        for line in lines:
            node, what, *rest = line.split()
            if what == "ping":
                sender, _, first, sent, arrived = rest
                found.append((node, sender, int(first), int(sent), int(arrived)))
        return found

    def test_a_message_to_a_peer_arrives_with_the_links_latency(self):
        result, lines = self.run_logged()
        pings = self.pings(lines)
        self.assertEqual(result["messages"], 24)
        self.assertGreaterEqual(len(pings), 24)  # one per delivery at least
        ring = ["billing-0", "billing-1", "billing-2"]
        for receiver, sender, first, sent, arrived in pings:
            self.assertEqual(arrived - sent, 250 * MS)  # the consumers' link: a constant 250 ms
            self.assertEqual(first, sent)  # answered within the second: never sent again
            self.assertEqual(receiver, ring[(ring.index(sender) + 1) % 3])

    def test_integers_beyond_64_bits_reach_the_peer_exact(self):
        _, lines = self.run_logged()
        bigs = [line.split()[3:] for line in lines if line.split()[1] == "big"]
        self.assertGreaterEqual(len(bigs), 24)
        for first_sent, big in bigs:
            self.assertEqual(big, str(2**64 + int(first_sent)))  # a double arrives as 1.8446744073709552e+19

    def test_a_partition_between_consumers_drops_peer_messages_until_it_heals(self):
        _, lines = self.run_logged(*PARTITION)
        pings = self.pings(lines)
        arrivals = [arrived for _, _, _, _, arrived in pings]
        self.assertTrue(any(arrived < 2000 * MS for arrived in arrivals))
        self.assertEqual([arrived for arrived in arrivals if 2000 * MS <= arrived < 5000 * MS], [])
        # Pings first sent while cut are sent again each second and arrive once it healed.
        held = [(first, arrived) for _, _, first, _, arrived in pings if 2000 * MS <= first < 5000 * MS]
        self.assertTrue(held)
        for first, arrived in held:
            self.assertGreaterEqual(arrived, 5000 * MS)
        for _, _, _, sent, arrived in pings:
            self.assertEqual(arrived - sent, 250 * MS)

    def test_a_gossip_of_done_ids_under_a_partition_replays_bit_for_bit(self):
        sets = ["--seed", 7, "--set", command("gossip"), *PARTITION]
        first_trace, second_trace = [], []
        first, first_lines = self.run_logged(*sets, trace=first_trace)
        second, second_lines = self.run_logged(*sets, trace=second_trace)
        self.assertEqual(first["trace_hash"], second["trace_hash"])
        self.assertEqual(first_lines, second_lines)
        self.assertTrue(any(" learned " in line for line in first_lines))
        consumers = {"billing-0", "billing-1", "billing-2"}
        sent = [r for r in first_trace if r["kind"] == "peer_message"]
        self.assertTrue(sent)
        self.assertTrue(all(r["node"] in consumers and r["to"] in consumers for r in sent))
        cut = [r for r in first_trace if r["kind"] == "drop.partition"]
        self.assertTrue(cut)  # the partition dropped gossip
        self.assertTrue(all(r["node"] in consumers and r["peer"] in consumers for r in cut))
        check = lethe("run", PEERS, "--check-determinism", *sets)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
        self.assertIn("deterministic", check.stdout)

    def test_a_peer_message_to_a_crashed_node_is_dropped(self):
        trace = []
        _, lines = self.run_logged("--seed", 3, "--set", command("gossip"), "--set",
                                   "faults.crash_every=exponential(mean=1s)", "--set", "faults.restart_after=1s",
                                   trace=trace)
        consumers = {"billing-0", "billing-1", "billing-2"}
        down = [r for r in trace if r["kind"] == "drop.down" and r["node"] in consumers and r["peer"] in consumers]
        self.assertTrue(down)
        self.assertTrue(all(r["where"] == 0 for r in down))  # on arrival, at the receiver that was down
        self.assertTrue(any(" learned " in line for line in lines))

    def test_a_link_naming_an_unknown_group_is_bad_input_naming_file_line_key_and_groups(self):
        with tempfile.TemporaryDirectory() as scratch:
            bad = Path(scratch) / "bad.toml"
            bad.write_text(PEERS.read_text().replace('between = ["consumers", "consumers"]',
                                                     'between = ["consumers", "consumer"]'))
            run = lethe("run", bad)
        self.assertEqual(run.returncode, 2, run.stderr)
        line = PEERS.read_text().splitlines().index('between = ["consumers", "consumers"]') + 1
        self.assertIn(f"bad.toml:{line}", run.stderr)
        self.assertIn("network.link[0].between[1]", run.stderr)
        self.assertIn('found "consumer" (did you mean "consumers"?)', run.stderr)
        self.assertIn('allowed: "consumers", "store", "broker", "sink", "clients"', run.stderr)
        run = lethe("run", PEERS, "--set", "network.link[0].between=store,store")
        self.assertEqual(run.returncode, 2, run.stderr)
        self.assertIn('found "store" twice; allowed: two different groups', run.stderr)
        self.assertIn('or ["consumers", "consumers"]', run.stderr)


class MaelstromServices(unittest.TestCase):
    """lin-tso, seq-kv and lww-kv, as Maelstrom has them."""

    def replies(self, seed):
        """STEP -> reply body of the services node's first delivery, for one seed."""
        with tempfile.TemporaryDirectory() as scratch:
            log = Path(scratch) / "log"
            run = lethe("run", EFFECT, "--seed", seed, "--json", "--set", command("services"), "--set",
                        "topology.consumers=1", "--set", "faults.crash_every=1h",
                        extra_env={"RAW_NODE_LOG": str(log)})
            self.assertEqual(run.returncode, 0, run.stderr)
            found = {}
            for line in log.read_text().splitlines():
                parts = line.split(" ", 3)
                if parts[1] == "service":
                    found[parts[2]] = json.loads(parts[3])["body"]
        return found, json.loads(run.stdout)["trace_hash"]

    def test_lin_tso_seq_kv_and_lww_kv_answer_with_their_own_consistency(self):
        lagged = 0
        for seed in range(1, 6):
            replies, trace_hash = self.replies(seed)
            self.assertEqual(self.replies(seed)[1], trace_hash)  # the draws are the seed's
            stamps = [replies[f"ts-{i}"]["ts"] for i in (1, 2, 3)]
            self.assertEqual([replies[f"ts-{i}"]["type"] for i in (1, 2, 3)], ["ts_ok"] * 3)
            self.assertLess(stamps[0], stamps[1])
            self.assertLess(stamps[1], stamps[2])
            # seq-kv: this node's writes are its own next reads' floor, and cas compares at the head.
            self.assertEqual(replies["seq-kv-read-absent"]["code"], 20)
            self.assertEqual(replies["seq-kv-write"]["type"], "write_ok")
            self.assertEqual(replies["seq-kv-cas"]["type"], "cas_ok")
            self.assertEqual(replies["seq-kv-cas-stale"]["code"], 22)
            self.assertEqual(replies["seq-kv-cas-stale"]["text"], "expected 1, found 2")
            self.assertEqual(replies["seq-kv-cas-create"]["type"], "cas_ok")
            self.assertEqual((replies["seq-kv-read"]["type"], replies["seq-kv-read"]["value"]), ("read_ok", 2))
            # lww-kv: each call reaches one of three replicas, which learn a write up to 500 ms later.
            self.assertEqual(replies["lww-kv-read-absent"]["code"], 20)
            self.assertEqual(replies["lww-kv-write"]["type"], "write_ok")
            cas, stale = replies["lww-kv-cas"], replies["lww-kv-cas-stale"]
            self.assertIn(cas.get("code", "ok"), ("ok", 20))  # 20: a replica the write has not reached
            self.assertIn(stale.get("code", "ok"), ("ok", 20, 22))
            lagged += cas.get("code") == 20 or (cas["type"] == "cas_ok" and stale["type"] == "cas_ok")
        self.assertGreater(lagged, 0)  # some seed saw a replica behind: a stale cas held, or a write not there


if __name__ == "__main__":
    LETHE = sys.argv.pop(1)
    unittest.main(verbosity=2)
