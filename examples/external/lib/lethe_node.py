"""lethe_node: write a consumer node for lethe's external nodes in Python (3.11, standard library only).

The wire protocol is docs/external.md; this module speaks it so that a node is a few async handlers:

    from lethe_node import Node, RPCError, Reject

    node = Node()

    @node.on("deliver")
    async def deliver(body):                      # one delivery of the source
        reply = await node.rpc("sink", {"type": "effect", "message": body["message"],
                                        "processor": body["processor"], "attempt": body["attempt"]})
        return reply["value"]                     # -> deliver_ok with this value

    node.run()

Contract:
- One single-threaded loop, no threads, no real timers, no asyncio: handlers are coroutines that the loop
  drives with coroutine.send(). Only the awaitables of this module may be awaited (node.rpc, node.sleep and
  the helpers built on them); awaiting anything else (asyncio.sleep, ...) raises a TypeError in the handler.
- Each line lethe writes opens a turn. The loop hands it to its handler or to the coroutine awaiting that
  reply, runs every coroutine until each is blocked on a reply or finished, then writes the turn's output and
  `turn_end` in one write (stdout is flushed once per turn, nothing is written between turns).
- node.now() is the node's clock (`time_ns` of the line being handled): it does not move within a turn.
  A deterministic node reads no other clock and no unseeded random (docs/external-nodes.md).
- A "deliver" handler returns the value to acknowledge with (an int or None). Raising Reject, or any other
  exception, answers error 11 (redeliver later); any exception but Reject also writes its traceback to stderr.
  A handler for another request type returns a reply body (a dict; the library adds `in_reply_to`) or None
  (no reply); an exception answers error 13 (RPCError: its own code).
- A crash is SIGKILL: nothing here needs cleanup.
"""
from __future__ import annotations

import json
import sys

__all__ = ["Node", "RPCError", "Reject", "dedupe_key", "parse_duration", "TIMEOUT", "NOT_SUPPORTED", "TEMPORARILY_UNAVAILABLE", "CRASH",
           "KEY_DOES_NOT_EXIST", "KEY_ALREADY_EXISTS", "PRECONDITION_FAILED"]

TIMEOUT, NOT_SUPPORTED, TEMPORARILY_UNAVAILABLE, CRASH = 0, 10, 11, 13
KEY_DOES_NOT_EXIST, KEY_ALREADY_EXISTS, PRECONDITION_FAILED = 20, 21, 22

_CO_COROUTINE = 0x80  # inspect.CO_COROUTINE (importing inspect costs more than the rest of this module)
_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
_loads = json.JSONDecoder().decode  # of a str: skips json.loads's encoding detection


class RPCError(Exception):
    """An error reply to node.rpc(): .code is Maelstrom's error code (0 timeout: the outcome is unknown)."""

    def __init__(self, code: int, text: str = ""):
        super().__init__(f"error {code}: {text}")
        self.code = code
        self.text = text


class Reject(Exception):
    """Raised by a deliver handler: answer error 11, the source redelivers later. No traceback is printed."""


def dedupe_key(processor: str, message: int, table: str = "dedupe") -> dict:
    """The lethe-store key of (processor, message) in a table: "dedupe", "inbox", "domain" or "outbox"."""
    return {"table": table, "processor": processor, "message": message}


_UNITS = {"ns": 1, "us": 10**3, "ms": 10**6, "s": 10**9, "m": 60 * 10**9, "h": 3600 * 10**9, "d": 86400 * 10**9}


def parse_duration(text: str) -> int:
    """Nanoseconds of "250ms", "5s", "7d" (an integer and one of ns, us, ms, s, m, h, d); ValueError otherwise."""
    number = text.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = text[len(number):]
    if not number.isdigit() or unit not in _UNITS:
        raise ValueError(f"{text!r} is not a duration: an integer with a unit ({', '.join(_UNITS)})")
    return int(number) * _UNITS[unit]


class _Wait:
    """What a coroutine yields to the loop: 'resume me with the reply to msg_id'."""

    __slots__ = ("msg_id",)

    def __init__(self, msg_id: int):
        self.msg_id = msg_id

    def __await__(self):
        return (yield self)


class _Gather:
    """What node.gather yields: 'run these coroutines, resume me with their results'."""

    __slots__ = ("children", "results", "error", "remaining", "parent")

    def __init__(self, children: list):
        self.children = children
        self.results = [None] * len(children)
        self.error = None
        self.remaining = len(children)
        self.parent = None

    def __await__(self):
        return (yield self)


class Node:
    """One consumer node. Attributes after init: node_id, node_ids, seed, incarnation, processors."""

    def __init__(self, stdin=None, stdout=None, stderr=None):
        self._in = stdin or sys.stdin.buffer
        self._out = stdout or sys.stdout.buffer
        self._err = stderr or sys.stderr
        self._handlers: dict = {}  # request type -> async def handler(body)
        self._waiting: dict = {}  # msg_id of an outstanding request -> the coroutine awaiting it
        self._meta: dict = {}  # coroutine -> (request type, src, msg_id) it answers, or (_Gather, index)
        self._pending: list[str] = []  # this turn's output lines
        self._next_msg_id = 0
        self._time_ns = 0
        self.node_id = ""
        self._turn_end_prefix = self._marker_prefix()
        self.node_ids: list[str] = []
        self.seed = 0
        self.incarnation = 0
        self.processors: list[str] = []

    # ---- the API ---------------------------------------------------------------------------------------
    def on(self, type_: str, handler=None):
        """Register `async def handler(body)` for requests of this type; usable as a decorator."""
        if handler is None:
            return lambda h: self.on(type_, h) or h
        if not getattr(getattr(handler, "__code__", None), "co_flags", 0) & _CO_COROUTINE:
            raise TypeError(f"the handler of {type_!r} must be an async def function")
        self._handlers[type_] = handler
        return handler

    def now(self) -> int:
        """The node's clock in nanoseconds (lethe's virtual time plus this node's skew)."""
        return self._time_ns

    async def rpc(self, dest: str, body: dict) -> dict:
        """Send a request (msg_id is added) and return the reply body; an error reply raises RPCError."""
        self._next_msg_id += 1
        msg_id = self._next_msg_id
        self.send(dest, {**body, "msg_id": msg_id})
        reply = await _Wait(msg_id)
        if reply.get("type") == "error":
            raise RPCError(reply.get("code", CRASH), reply.get("text", ""))
        return reply

    async def gather(self, *coroutines) -> list:
        """Run coroutines (node.rpc, node.effect, your own async functions...) concurrently: the requests each
        writes before its first wait leave in this turn. Returns their results in order once all have
        finished; if any raised, raises the first such exception (by position) then."""
        if not coroutines:
            return []
        return await _Gather(list(coroutines))

    async def sleep(self, duration_ns: int) -> None:
        """Sleep `duration_ns` of the node's clock (answered by lethe's clock service in virtual time)."""
        await self.rpc("clock", {"type": "sleep", "duration_ns": int(duration_ns)})

    async def store_op(self, op: dict) -> dict:
        """One lethe-store operation (docs/formats.md "Store histories"); returns its `reply` object."""
        return (await self.rpc("lethe-store", {"type": "op", "op": op}))["reply"]

    async def store_step(self, op: dict, tries: int = 3) -> tuple[dict | None, int]:
        """store_op, tried again while the reply is lost (error 0) or the store is unavailable (11), as lethe's
        built-in strategies do: (reply, tries used); reply None when no try was answered. After tries > 1
        an earlier try may have landed: the reply's `previous` tells (e.g. owner == our attempt)."""
        for attempt in range(1, tries + 1):
            try:
                return await self.store_op(op), attempt
            except RPCError as error:
                if error.code not in (TIMEOUT, TEMPORARILY_UNAVAILABLE):
                    raise
        return None, tries

    async def kv_read(self, key, service: str = "lin-kv"):
        """lin-kv read: the value; RPCError 20 when the key does not exist."""
        return (await self.rpc(service, {"type": "read", "key": key}))["value"]

    async def kv_write(self, key, value, service: str = "lin-kv") -> None:
        await self.rpc(service, {"type": "write", "key": key, "value": value})

    async def kv_cas(self, key, from_, to, create_if_not_exists: bool = False, service: str = "lin-kv") -> None:
        """lin-kv cas: RPCError 22 when the value is not `from_`, 20 when absent (and not create_if_not_exists)."""
        body = {"type": "cas", "key": key, "from": from_, "to": to}
        if create_if_not_exists:
            body["create_if_not_exists"] = True
        await self.rpc(service, body)

    async def effect(self, body: dict, **extra):
        """Call the sink for a delivery's (message, processor, attempt); extra: idempotency_key, fencing_token."""
        request = {"type": "effect", "message": body["message"], "processor": body["processor"],
                   "attempt": body["attempt"], **extra}
        return (await self.rpc("sink", request))["value"]

    def send(self, dest: str, body: dict) -> None:
        """Queue one envelope for this turn's output."""
        self._pending.append(_dumps({"src": self.node_id, "dest": dest, "body": body}))

    def log(self, *parts) -> None:
        """A line of free text on stderr (lethe keeps its tail)."""
        print(*parts, file=self._err)

    def run(self) -> None:
        """Serve until stdin closes."""
        readline = self._in.readline
        while True:
            line = readline()
            if not line:
                return
            if line.strip():
                self._turn(_loads(line.decode()))

    # ---- the loop --------------------------------------------------------------------------------------
    def _turn(self, envelope: dict) -> None:
        if "time_ns" in envelope:
            self._time_ns = envelope["time_ns"]
        body = envelope["body"]
        waiter = self._waiting.pop(body.get("in_reply_to"), None) if "in_reply_to" in body else None
        if waiter is not None:
            self._step(waiter, body)
        elif body.get("type") == "init":
            self._init(envelope["src"], body)
        else:
            self._dispatch(envelope["src"], body)
        turn = envelope.get("turn")
        if turn is not None:
            self._pending.append(f'{self._turn_end_prefix}{turn}}}}}')
        if self._pending:
            self._pending.append("")
            self._out.write("\n".join(self._pending).encode())
            self._out.flush()
            self._pending.clear()

    def _init(self, src: str, body: dict) -> None:
        self.node_id = body["node_id"]
        self.node_ids = body.get("node_ids", [])
        meta = body.get("lethe", {})
        self.seed = meta.get("seed", 0)
        self.incarnation = meta.get("incarnation", 0)
        self.processors = meta.get("processors", [])
        self._turn_end_prefix = self._marker_prefix()
        self.send(src, {"type": "init_ok", "in_reply_to": body["msg_id"], "lethe_turns": True})

    def _marker_prefix(self) -> str:
        """The turn marker up to its number (written per turn without a JSON encoder)."""
        return f'{{"src":{_dumps(self.node_id)},"dest":"lethe","body":{{"type":"turn_end","turn":'

    def _dispatch(self, src: str, body: dict) -> None:
        type_ = body.get("type")
        handler = self._handlers.get(type_)
        if handler is None:
            if "in_reply_to" in body:
                self.log(f"lethe_node: a reply nobody awaits: {_dumps(body)}")
            elif "msg_id" in body:
                self.send(src, {"type": "error", "in_reply_to": body["msg_id"], "code": NOT_SUPPORTED,
                                "text": f"no handler for {type_!r}"})
            return
        coro = handler(body)
        self._meta[coro] = (type_, src, body.get("msg_id"))
        self._step(coro, None)

    def _step(self, coro, value, error: BaseException | None = None) -> None:
        """Run `coro` until it awaits a reply (registered in _waiting) or a gather, or finishes (_finish)."""
        try:
            awaited = coro.send(value) if error is None else coro.throw(error)
            while not isinstance(awaited, (_Wait, _Gather)):
                awaited = coro.throw(TypeError(
                    f"a lethe node may await only node.rpc/node.sleep and their helpers, not {awaited!r}"))
            if isinstance(awaited, _Wait):
                self._waiting[awaited.msg_id] = coro
                return
            awaited.parent = coro
            for index, child in enumerate(awaited.children):
                self._meta[child] = (awaited, index)
                self._step(child, None)
        except StopIteration as done:
            self._finish(coro, done.value, None)
        except Exception as error:  # noqa: BLE001 - any handler failure becomes an error reply
            self._finish(coro, None, error)

    def _finish(self, coro, result, error) -> None:
        owner = self._meta.pop(coro)
        if isinstance(owner[0], _Gather):
            self._child_finished(owner[0], owner[1], result, error)
            return
        type_, src, msg_id = owner
        if msg_id is None:
            if error is not None:
                self._print_traceback(error)
            return
        if error is None:
            if type_ == "deliver":
                self.send(src, {"type": "deliver_ok", "in_reply_to": msg_id, "value": result})
            elif result is not None:
                self.send(src, {**result, "in_reply_to": msg_id})
            return
        if not isinstance(error, Reject):
            self._print_traceback(error)
        code = TEMPORARILY_UNAVAILABLE if type_ == "deliver" else error.code if isinstance(error, RPCError) else CRASH
        self.send(src, {"type": "error", "in_reply_to": msg_id, "code": code, "text": str(error) or type(error).__name__})

    def _child_finished(self, gather: _Gather, index: int, result, error) -> None:
        gather.results[index] = result
        if error is not None and (gather.error is None or index < gather.error[0]):
            gather.error = (index, error)
        gather.remaining -= 1
        if gather.remaining == 0:
            self._step(gather.parent, gather.results, gather.error[1] if gather.error else None)

    def _print_traceback(self, error: BaseException) -> None:
        import traceback  # only on a failure: keeps the start of a (re)started node short

        traceback.print_exception(error, file=self._err)
        self._err.flush()
