"""Dedupe with Maelstrom's lin-kv by read-then-write: the race lethe exists to catch.

What it shows: the most common hand-written dedupe. Read the message's key; if it holds a value, the message
was processed: acknowledge with that value. Otherwise run the effect, write its value under the key, and
acknowledge. The read and the write are two separate operations: two attempts of one message (a redelivery
after a lost ACK or a visibility timeout, a rebalance, a producer retry) that both read before either writes
both run the effect.

What lethe should find: duplicate effects with cause `unprotected` (two attempts both found no record)
whenever two attempts of one message overlap; compare examples/external/linkv_cas.py.

Settings: the kv service as the first argument: lin-kv (the default), seq-kv or lww-kv. Over seq-kv a read
may be stale: a copy that comes long after the first one was written can still find the key absent
(scenarios/external-seqkv-read-then-write.toml, cause `weak_store`). Keys are "PROCESSOR/MESSAGE"; values the
effect's integer value.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "lib"))
from lethe_node import Node, Reject, RPCError, KEY_DOES_NOT_EXIST  # noqa: E402

SERVICE = sys.argv[1] if len(sys.argv) > 1 else "lin-kv"

node = Node()


@node.on("deliver")
async def deliver(body):
    key = f"{body['processor']}/{body['message']}"
    try:
        return await node.kv_read(key, service=SERVICE)  # processed before: skip, with the value it had
    except RPCError as error:
        if error.code != KEY_DOES_NOT_EXIST:
            raise Reject(f"{SERVICE} read failed: {error}")
    value = await node.effect(body)
    await node.kv_write(key, value, service=SERVICE)  # a lost write: the ACK is not sent, the redelivery runs the effect again
    return value


node.run()
