"""Dedupe with Maelstrom's lin-kv by compare-and-set: claim the key before the effect.

What it shows: one atomic claim instead of read-then-write. `cas(key, from=FREE, to="claimed:ATTEMPT",
create_if_not_exists=true)` succeeds only for the attempt that finds the key absent (FREE is never a
stored value, so a present key always fails with error 22). The winner runs the effect and writes
"done:VALUE" (VALUE in JSON); an attempt whose claim fails reads the key:
  "done:V"              -> skip, acknowledge with V;
  "claimed:OUR_ATTEMPT" -> our own earlier claim landed (its reply was lost): go on as the owner;
  "claimed:OTHER"       -> somebody is at work: reject (error 11), the source redelivers later.
A claim whose reply is lost (error 0) is tried again (the read then tells whether it landed).

What lethe should find: no duplicate effects. The price: there is no takeover, so an owner that crashes
between its claim and its "done" write leaves the message claimed for ever: every redelivery is rejected
and lethe reports the message as never acknowledged (lost) instead of duplicated. mnemosyne.py adds the
takeover of a stale claim.

Settings: the kv service as the first argument: lin-kv (the default), seq-kv or lww-kv. Over lww-kv the
claim is no claim: each cas compares one lagging replica, two attempts both find the key absent and both
charge (scenarios/external-lwwkv-cas.toml). Keys are "PROCESSOR/MESSAGE".
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "lib"))
from lethe_node import Node, Reject, RPCError, PRECONDITION_FAILED, TIMEOUT  # noqa: E402

SERVICE = sys.argv[1] if len(sys.argv) > 1 else "lin-kv"
FREE = "free"  # never written: a cas from FREE fails on every present key
CLAIM_TRIES = 3

node = Node()


async def claim(key: str, mark: str) -> bool:
    """True if this attempt holds the key (now or from an earlier try); False if another attempt does."""
    for _ in range(CLAIM_TRIES):
        try:
            await node.kv_cas(key, FREE, mark, create_if_not_exists=True, service=SERVICE)
            return True
        except RPCError as error:
            if error.code == PRECONDITION_FAILED:
                return False
            if error.code != TIMEOUT:
                raise Reject(f"{SERVICE} cas failed: {error}")
    raise Reject(f"{SERVICE} did not answer the claim")


@node.on("deliver")
async def deliver(body):
    key = f"{body['processor']}/{body['message']}"
    mark = f"claimed:{body['attempt']}"
    if not await claim(key, mark):
        current = await node.kv_read(key, service=SERVICE)
        if current.startswith("done:"):
            return json.loads(current[len("done:"):])
        if current != mark:
            raise Reject(f"{key} is held by {current}")
    value = await node.effect(body)
    await node.kv_write(key, f"done:{json.dumps(value)}", service=SERVICE)
    return value


node.run()
