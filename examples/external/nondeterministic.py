"""A node that is not deterministic: an unseeded random and the real clock in its decisions.

What it shows: the two mistakes lethe's determinism rules forbid (docs/external-nodes.md). Before the effect
it sleeps a "jitter" drawn from Python's unseeded `random` (the duration it asks lethe's clock for differs
from run to run), and it builds the sink's idempotency key from the real clock (`time.time_ns()`), so even
the same seed sends different requests. Otherwise it is a plain node: effect, then acknowledge.

What lethe should find: `lethe run --check-determinism` runs the scenario twice with the same seed and names
the first message where this node's behaviour differed: its first `sleep` request to `clock` (another
duration_ns). The fix: node.now() for time, and a random seeded from init's `lethe.seed` (node.seed) when a
random is really wanted.
"""
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "lib"))
from lethe_node import Node  # noqa: E402

node = Node()


@node.on("deliver")
async def deliver(body):
    await node.sleep(random.randint(1_000_000, 50_000_000))  # WRONG: unseeded, differs on every run
    key = f"{body['message']}-{time.time_ns()}"  # WRONG: the real clock; node.now() is the node's clock
    return await node.effect(body, idempotency_key=key)


node.run()
