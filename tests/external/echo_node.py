"""The Python library's test node (tests/external/test_external_nodes.py plays lethe's side against it).

deliver: calls the sink, then acts on the payload: "sleep" sleeps 1000 ns first and acknowledges with
node.now() after the sleep; "fail" raises ValueError (error 11 and a traceback); "reject" raises Reject
(error 11, no traceback); "asyncio" awaits a foreign awaitable (a TypeError: error 11); "both" calls the
sink and sleeps 5 ns at once (node.gather) and acknowledges with the effect's value; "both-fail" does the
same with a failing coroutine instead of the sleep (error 11 once the effect is back). Otherwise it
acknowledges with the effect's value. A sink error answers error 11 (the RPCError propagates).
echo: Maelstrom's echo, with node.now().
"""
import os
import sys
from pathlib import Path

# LETHE_NODE_PACKAGES=1: the lethe_node that pip installed (scripts/package-check); else the tree's.
# LETHE_EXAMPLES_DIR: an installed share/lethe/examples/external, whose lib/ is the library under test.
if os.environ.get("LETHE_NODE_PACKAGES") != "1":
    examples = os.environ.get("LETHE_EXAMPLES_DIR") or str(Path(__file__).resolve().parents[2] / "examples" / "external")
    sys.path.insert(0, str(Path(examples) / "lib"))
from lethe_node import Node, Reject  # noqa: E402

node = Node()


class _Foreign:
    def __await__(self):
        yield "not a lethe awaitable"


async def fail():
    raise ValueError("a gathered coroutine failed")


@node.on("deliver")
async def deliver(body):
    payload = body.get("payload")
    if payload == "fail":
        raise ValueError("the handler failed")
    if payload == "reject":
        raise Reject("not now")
    if payload == "asyncio":
        await _Foreign()
    if payload in ("both", "both-fail"):
        value, _ = await node.gather(node.effect(body), node.sleep(5) if payload == "both" else fail())
        return value
    value = await node.effect(body)
    if payload == "sleep":
        await node.sleep(1000)
        return node.now()
    return value


@node.on("echo")
async def echo(body):
    return {"type": "echo_ok", "echo": body["echo"], "now": node.now()}


node.run()
