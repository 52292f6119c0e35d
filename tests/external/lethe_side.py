"""lethe's side of the external-node wire protocol, scripted: spawns one node process and plays turns to it.

Used by tests/external/test_external_nodes.py and scripts/bench-external-libs. Every turn is checked against
docs/external.md as it happens (a ProtocolViolation names what broke):
- the node's output for a turn ends with exactly one turn_end, carrying that turn's number, and nothing
  follows it before lethe's next line (checked again when the node's stdin is closed);
- every line is a JSON envelope from this node; the msg_ids of its requests are unique.
Does not: simulate anything. The script decides every reply and every clock value.
"""
from __future__ import annotations

import json
import os
import select
import subprocess
import tempfile

SERVICES = ("lin-kv", "lethe-store", "sink", "clock", "source")
TURN_TIMEOUT_S = 10.0


class ProtocolViolation(AssertionError):
    pass


class ScriptedLethe:
    """One node process and the turns played to it. `turn()` returns the envelopes the node wrote, minus
    its turn_end; `requests` keeps every request envelope it sent, by msg_id."""

    def __init__(self, argv: list[str], node_id: str = "billing-0", env: dict | None = None, checks: bool = True):
        self.node_id = node_id
        self.checks = checks
        self._stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
                                     env={**os.environ, **(env or {})})
        self._fd = self.proc.stdout.fileno()
        self._buffer = b""
        self.turn_number = 0
        self.time_ns = 0
        self.requests: dict[int, dict] = {}
        self._next_msg_id = 0

    # ---- playing turns ---------------------------------------------------------------------------------
    def turn(self, src: str, body: dict, time_ns: int | None = None) -> list[dict]:
        if time_ns is not None:
            self.time_ns = time_ns
        self.turn_number += 1
        line = {"src": src, "dest": self.node_id, "body": body, "turn": self.turn_number, "time_ns": self.time_ns}
        self.proc.stdin.write((json.dumps(line, separators=(",", ":")) + "\n").encode())
        self.proc.stdin.flush()
        return self._read_turn()

    def line_quiet(self, src: str, body: dict, expect: int = 1, quiet_s: float = 0.2) -> list[dict]:
        """For a plain Maelstrom node (no turn markers): write a line, read `expect` lines (waiting up to
        TURN_TIMEOUT_S), then whatever else comes before quiet_s of silence."""
        self.turn_number += 1
        line = {"src": src, "dest": self.node_id, "body": body, "turn": self.turn_number, "time_ns": self.time_ns}
        self.proc.stdin.write((json.dumps(line, separators=(",", ":")) + "\n").encode())
        self.proc.stdin.flush()
        out = [json.loads(self._read_line()) for _ in range(expect)]
        while True:
            while b"\n" in self._buffer:
                line, self._buffer = self._buffer.split(b"\n", 1)
                out.append(json.loads(line))
            ready, _, _ = select.select([self._fd], [], [], quiet_s)
            if not ready:
                return out
            chunk = os.read(self._fd, 1 << 16)
            if not chunk:
                return out
            self._buffer += chunk

    def init(self, incarnation: int = 1) -> list[dict]:
        return self.turn("lethe", {"type": "init", "msg_id": self._msg_id(), "node_id": self.node_id,
                                   "node_ids": [self.node_id],
                                   "lethe": {"protocol": 1, "seed": 1, "incarnation": incarnation,
                                             "processors": ["billing"]}})

    def deliver(self, message: int, attempt: int, payload=None, delivery: int = 1, time_ns=None) -> list[dict]:
        body = {"type": "deliver", "msg_id": self._msg_id(), "message": message, "processor": "billing",
                "attempt": attempt, "delivery": delivery, "payload": payload}
        self.last_delivery = body
        return self.turn("source", body, time_ns)

    def reply(self, request: dict, body: dict, time_ns: int | None = None) -> list[dict]:
        """Answer a request envelope the node sent, from the service it was sent to."""
        return self.turn(request["dest"], {**body, "in_reply_to": request["body"]["msg_id"]}, time_ns)

    def error(self, request: dict, code: int, text: str = "", time_ns: int | None = None) -> list[dict]:
        return self.reply(request, {"type": "error", "code": code, "text": text or f"error {code}"}, time_ns)

    def close(self) -> tuple[int, str]:
        """Close stdin; the node must exit without writing anything more. Returns (exit code, stderr)."""
        self.proc.stdin.close()
        rest = self._buffer + self.proc.stdout.read()
        code = self.proc.wait(timeout=TURN_TIMEOUT_S)
        self.proc.stdout.close()
        if self.checks and rest.strip():
            raise ProtocolViolation(f"output after the last turn_end: {rest[:300]!r}")
        return code, self.stderr()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if not stream.closed:
                stream.close()
        self._stderr.close()

    def stderr(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")

    # ---- reading and checking --------------------------------------------------------------------------
    def _msg_id(self) -> int:
        self._next_msg_id += 1
        return self._next_msg_id

    def _read_line(self) -> bytes:
        while b"\n" not in self._buffer:
            ready, _, _ = select.select([self._fd], [], [], TURN_TIMEOUT_S)
            if not ready:
                raise ProtocolViolation(f"turn {self.turn_number}: no turn_end within {TURN_TIMEOUT_S}s; "
                                        f"stderr: {self.stderr()[-500:]}")
            chunk = os.read(self._fd, 1 << 16)
            if not chunk:
                raise ProtocolViolation(f"turn {self.turn_number}: the node exited (code {self.proc.wait()}) "
                                        f"before its turn_end; stderr: {self.stderr()[-500:]}")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line

    def _read_turn(self) -> list[dict]:
        out = []
        while True:
            envelope = json.loads(self._read_line())
            body = envelope["body"]
            if body.get("type") == "turn_end":
                if self.checks:
                    self._check_turn_end(envelope)
                return out
            if self.checks:
                self._check_envelope(envelope)
            out.append(envelope)

    def _check_turn_end(self, envelope: dict) -> None:
        if envelope["dest"] != "lethe" or envelope["body"].get("turn") != self.turn_number:
            raise ProtocolViolation(f"turn {self.turn_number}: wrong turn marker {envelope}")
        ready, _, _ = select.select([self._fd], [], [], 0)
        if self._buffer or ready:
            raise ProtocolViolation(f"turn {self.turn_number}: output after turn_end: "
                                    f"{(self._buffer or os.read(self._fd, 300))[:300]!r}")

    def _check_envelope(self, envelope: dict) -> None:
        body = envelope["body"]
        if envelope.get("src") != self.node_id or "type" not in body:
            raise ProtocolViolation(f"turn {self.turn_number}: not an envelope of {self.node_id}: {envelope}")
        if "msg_id" in body:
            if body["msg_id"] in self.requests:
                raise ProtocolViolation(f"turn {self.turn_number}: msg_id {body['msg_id']} used twice: {envelope}")
            if envelope["dest"] not in SERVICES:
                raise ProtocolViolation(f"turn {self.turn_number}: a request to an unknown service: {envelope}")
            self.requests[body["msg_id"]] = envelope
