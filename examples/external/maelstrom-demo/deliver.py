# A deliver handler on Maelstrom's own demo library (maelstrom.py, from jepsen-io/maelstrom's demo folder, copied
# next to this file, unchanged): the lin-kv read-then-write dedupe. A plain Maelstrom node: no lethe_turns.
from maelstrom import Node, Body, Request

node = Node()


@node.handler
async def deliver(req: Request) -> Body:
    b = req.body
    key = f"{b['processor']}/{b['message']}"
    r = await node.rpc("lin-kv", {"type": "read", "key": key})
    if r["type"] == "read_ok":
        return {"type": "deliver_ok", "value": r["value"]}
    if r.get("code") != 20:
        return {"type": "error", "code": 11, "text": "read failed"}
    e = await node.rpc("sink", {"type": "effect", "message": b["message"], "processor": b["processor"],
                                "attempt": b["attempt"]})
    if e["type"] != "effect_ok":
        return {"type": "error", "code": 11, "text": "effect failed"}
    await node.rpc("lin-kv", {"type": "write", "key": key, "value": e["value"]})
    return {"type": "deliver_ok", "value": e["value"]}


node.run()
