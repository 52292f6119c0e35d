// The JavaScript library's test node: the same behaviour as echo_node.py (see its header), for the same
// transcripts of tests/external/test_external_nodes.py.
"use strict";
const path = require("path");
// LETHE_NODE_PACKAGES=1: the lethe-node package that npm installed (scripts/package-check); else the tree's.
const { Node, Reject } = process.env.LETHE_NODE_PACKAGES === "1"
  ? require("lethe-node")
  : require(path.join(process.env.LETHE_EXAMPLES_DIR || path.join(__dirname, "..", "..", "examples", "external"),
                      "lib", "lethe_node.js"));

const node = new Node();

node.on("deliver", async (body) => {
  const payload = body.payload;
  if (payload === "fail") throw new Error("the handler failed");
  if (payload === "reject") throw new Reject("not now");
  if (payload === "asyncio") await new Promise(() => {});  // never settles: stays blocked, like a lost reply
  if (payload === "both" || payload === "both-fail") {
    const failing = async () => { throw new Error("a gathered promise failed"); };
    const [value] = await Promise.all([node.effect(body), payload === "both" ? node.sleep(5) : failing()]);
    return value;
  }
  const value = await node.effect(body);
  if (payload === "sleep") {
    await node.sleep(1000);
    return node.now();
  }
  return value;
});

node.on("echo", async (body) => ({ type: "echo_ok", echo: body.echo, now: node.now() }));

node.run();
