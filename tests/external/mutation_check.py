"""Checks that the transcript tests can fail: each mutation breaks one line of a library or an example (in a
copy of examples/external/ and tests/external/ under a temporary directory; the tree is not touched), runs the
tests it should break, and expects them red. Prints one line per mutation; exit 1 if any stayed green.

Run: python3 tests/external/mutation_check.py [INDEX...]   (not a ctest test: it runs the suite 20+ times)
"""
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[2]
M = [
 ("examples/external/lib/lethe_node.py", "f'{self._turn_end_prefix}{turn}}}}}'", "f'{self._turn_end_prefix}{turn + 1}}}}}'", "PythonLibrary"),
 ("examples/external/lib/lethe_node.py", 'code = TEMPORARILY_UNAVAILABLE if type_', 'code = CRASH if type_', "PythonLibrary"),
 ("examples/external/lib/lethe_node.py", '        self._next_msg_id += 1\n', '', "PythonLibrary"),
 ("examples/external/lib/lethe_node.py", '"lethe_turns": True', '"lethe_turns": False', "PythonLibrary"),
 ("examples/external/lib/lethe_node.py", '            self._waiting[awaited.msg_id] = coro\n', '            self._waiting[awaited.msg_id] = coro\n            self._out.write(b"\\n")\n', "PythonLibrary.test_delivery"),
 ("examples/external/lib/lethe_node.py", 'gather.remaining -= 1', 'gather.remaining -= 2', "PythonLibrary"),
 ("examples/external/lib/lethe_node.js", 'setImmediate(() => this._close(envelope));', 'this._close(envelope);', "JavaScriptLibrary"),
 ("examples/external/lib/lethe_node.js", 'code: NOT_SUPPORTED,', 'code: CRASH,', "JavaScriptLibrary"),
 ("examples/external/lib/lethe_node.js", 'const msgId = ++this._nextMsgId;', 'const msgId = this._nextMsgId + 1;', "JavaScriptLibrary"),
 ("examples/external/lib/lethe_node.js", 'const code = body.type === "deliver" ? TEMPORARILY_UNAVAILABLE', 'const code = body.type === "deliver" ? CRASH', "JavaScriptLibrary"),
 ("examples/external/mnemosyne.py", 'now - started_at >= CONFIG["max_processing_time"]', 'now - started_at > CONFIG["max_processing_time"]', "MnemosynePython"),
 ("examples/external/mnemosyne.py", '        condition["started_at_equals"] = stale["started_at"]\n', '        pass\n', "MnemosynePython"),
 ("examples/external/mnemosyne.py", '                return seen.get("memoized")', '                return None', "MnemosynePython"),
 ("examples/external/mnemosyne.py", 'condition = {"owner_equals": attempt, "require_not_completed": True}', 'condition = {}', "MnemosynePython"),
 ("examples/external/mnemosyne.py", '            if wait_began is None:', '            return await run(body, key, "owner", seen, decided_at)\n            if wait_began is None:', "MnemosynePython"),
 ("examples/external/mnemosyne.py", '        if ours(reply, tries, attempt):', '        if False:', "MnemosynePython"),
 ("examples/external/mnemosyne.js", 'now - seen.started_at >= CONFIG["max-processing-time"]', 'now - seen.started_at > CONFIG["max-processing-time"]', "MnemosyneJavaScript"),
 ("examples/external/mnemosyne.js", 'if (decision === "skip") return seen.memoized ?? null;', 'if (decision === "skip") return null;', "MnemosyneJavaScript"),
 ("examples/external/mnemosyne.js", 'if (isSet(stale.started_at)) condition.started_at_equals = stale.started_at;', '', "MnemosyneJavaScript"),
 ("examples/external/mnemosyne.js", 'if (waitBegan === null) waitBegan = decidedAt;', 'return await run(body, key, "owner", decidedAt);', "MnemosyneJavaScript"),
 ("examples/external/linkv_read_then_write.py", '    await node.kv_write(key, value)', '', "LinKvReadThenWrite"),
 ("examples/external/linkv_cas.py", 'create_if_not_exists=True)', 'create_if_not_exists=False)', "LinKvCas"),
 ("examples/external/linkv_cas.py", '        if current != mark:', '        if False:', "LinKvCas"),
 ("examples/external/check_then_insert.js", 'return seen.memoized ?? null;', 'return null;', "CheckThenInsert"),
 ("examples/external/unique_constraint.js", 'condition: { require_absent: true }', 'condition: {}', "UniqueConstraint"),
 ("examples/external/unique_constraint.js", 'const ours = insert.applied || (previous && previous.owner === body.attempt);', 'const ours = true;', "UniqueConstraint"),
 ("examples/external/nondeterministic.py", 'random.randint(1_000_000, 50_000_000)', '5_000_000', "Nondeterministic"),
 ("examples/external/plain_maelstrom.py", '"in_reply_to": body["msg_id"]})\n    elif', '"in_reply_to": body["msg_id"], "lethe_turns": True})\n    elif', "PlainMaelstrom"),
]


def main() -> int:
    only = sys.argv[1:]
    green = 0
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        for part in ("examples/external", "tests/external"):
            shutil.copytree(SOURCE / part, root / part, ignore=shutil.ignore_patterns("__pycache__"))
        for i, (path, old, new, k) in enumerate(M):
            if only and str(i) not in only:
                continue
            full = root / path
            text = full.read_text()
            assert text.count(old) == 1, (i, path, old)
            full.write_text(text.replace(old, new))
            try:
                r = subprocess.run([sys.executable, str(root / "tests/external/test_external_nodes.py"), "-k", k],
                                   capture_output=True, text=True, timeout=600)
            finally:
                full.write_text(text)
            green += r.returncode == 0
            fails = [line for line in r.stderr.splitlines() if line.startswith(("FAIL:", "ERROR:"))]
            print(f"{i:2} {'red  ' if r.returncode else 'GREEN'} {path}: {old.strip()[:48]!r} -> {new.strip()[:32]!r}: "
                  f"{r.stderr.strip().splitlines()[-1]}; first: {fails[:1]}", flush=True)
    return 1 if green else 0


if __name__ == "__main__":
    sys.exit(main())
