// lethe_node.js: write a consumer node for lethe's external nodes in JavaScript (Node.js 18+, no packages).
//
// The wire protocol is docs/external.md; this module speaks it so that a node is a few async handlers:
//
//   const { Node, RPCError, Reject } = require("./lib/lethe_node.js");
//   const node = new Node();
//   node.on("deliver", async (body) => {                 // one delivery of the source
//     return await node.effect(body);                    // -> deliver_ok with the effect's value
//   });
//   node.run();
//
// Contract:
// - One single-threaded loop, no worker threads, no real timers. Each line lethe writes opens a turn: the line
//   goes to its handler or resolves the promise of the request it answers; the turn ends when the microtask
//   queue is drained (checked with setImmediate, which runs only after every microtask), i.e. when every
//   handler awaits a reply or has finished. Then the turn's output and `turn_end` go out in one write.
//   Lines are handled one at a time, in order, even when several arrive in one read.
// - A handler may await only node.rpc/node.sleep, the helpers built on them, and promises derived from those
//   (Promise.all of them is fine). Awaiting a real timer, a file or the network breaks the turn protocol.
// - node.now() is the node's clock (`time_ns` of the line being handled), constant within a turn.
//   A deterministic node reads no other clock (Date.now, performance.now) and no Math.random
//   (docs/external-nodes.md).
// - A "deliver" handler returns the value to acknowledge with (an integer or null). Throwing Reject, or any
//   other error, answers error 11 (redeliver later); any error but Reject also writes its stack to stderr.
//   A handler for another request type returns a reply body (the library adds in_reply_to) or undefined
//   (no reply); a thrown error answers error 13 (RPCError: its own code).
// - A crash is SIGKILL: nothing here needs cleanup.
"use strict";

const TIMEOUT = 0, NOT_SUPPORTED = 10, TEMPORARILY_UNAVAILABLE = 11, CRASH = 13;
const KEY_DOES_NOT_EXIST = 20, KEY_ALREADY_EXISTS = 21, PRECONDITION_FAILED = 22;

// An error reply to node.rpc(): .code is Maelstrom's error code (0 timeout: the outcome is unknown).
class RPCError extends Error {
  constructor(code, text) {
    super(`error ${code}: ${text || ""}`);
    this.code = code;
    this.text = text || "";
  }
}

// Thrown by a deliver handler: answer error 11, the source redelivers later. No stack is printed.
class Reject extends Error {}

// The lethe-store key of (processor, message) in a table: "dedupe", "inbox", "domain" or "outbox".
function dedupeKey(processor, message, table = "dedupe") {
  return { table, processor, message };
}

const UNITS = { ns: 1n, us: 1000n, ms: 1000000n, s: 1000000000n, m: 60000000000n, h: 3600000000000n,
                d: 86400000000000n };

// Nanoseconds of "250ms", "5s", "7d" (an integer and one of ns, us, ms, s, m, h, d) as a Number; throws
// otherwise. Exact up to 2^53 ns (104 days); a longer duration is rounded to a double.
function parseDuration(text) {
  const match = /^([0-9]+)([a-z]+)$/.exec(String(text));
  if (match === null || !(match[2] in UNITS)) {
    throw new Error(`${JSON.stringify(text)} is not a duration: an integer with a unit (${Object.keys(UNITS).join(", ")})`);
  }
  return Number(BigInt(match[1]) * UNITS[match[2]]);
}

class Node {
  constructor({ input = process.stdin, output = process.stdout, error = process.stderr } = {}) {
    this._input = input;
    this._output = output;
    this._error = error;
    this._handlers = new Map();
    this._waiting = new Map();  // msg_id of an outstanding request -> resolve function of its promise
    this._pending = [];  // this turn's output lines
    this._lines = [];  // lines read; those from _nextLine on are not handled yet
    this._nextLine = 0;
    this._partial = "";
    this._busy = false;  // a turn is open
    this._nextMsgId = 0;
    this._timeNs = 0;
    this.nodeId = "";
    this.nodeIds = [];
    this.seed = 0;
    this.incarnation = 0;
    this.processors = [];
  }

  // ---- the API ---------------------------------------------------------------------------------------
  // Register `async (body) => ...` for requests of this type.
  on(type, handler) {
    this._handlers.set(type, handler);
    return this;
  }

  // The node's clock in nanoseconds (lethe's virtual time plus this node's skew).
  now() {
    return this._timeNs;
  }

  // Send a request (msg_id is added); resolves to the reply body, rejects with RPCError on an error reply.
  rpc(dest, body) {
    const msgId = ++this._nextMsgId;
    this.send(dest, { ...body, msg_id: msgId });
    return new Promise((resolve, reject) => {
      this._waiting.set(msgId, (reply) =>
        reply.type === "error" ? reject(new RPCError(reply.code ?? CRASH, reply.text)) : resolve(reply));
    });
  }

  // Sleep `durationNs` of the node's clock (answered by lethe's clock service in virtual time).
  async sleep(durationNs) {
    await this.rpc("clock", { type: "sleep", duration_ns: Math.trunc(durationNs) });
  }

  // One lethe-store operation (docs/formats.md "Store histories"); resolves to its `reply` object.
  async storeOp(op) {
    return (await this.rpc("lethe-store", { type: "op", op })).reply;
  }

  // storeOp, tried again while the reply is lost (error 0) or the store is unavailable (11), as lethe's
  // built-in strategies do: resolves to {reply, tries}; reply null when no try was answered. After tries > 1
  // an earlier try may have landed: the reply's `previous` tells (e.g. owner === our attempt).
  async storeStep(op, tries = 3) {
    for (let attempt = 1; attempt <= tries; ++attempt) {
      try {
        return { reply: await this.storeOp(op), tries: attempt };
      } catch (error) {
        if (!(error instanceof RPCError) || (error.code !== TIMEOUT && error.code !== TEMPORARILY_UNAVAILABLE)) throw error;
      }
    }
    return { reply: null, tries };
  }

  // lin-kv read: the value; RPCError 20 when the key does not exist.
  async kvRead(key, service = "lin-kv") {
    return (await this.rpc(service, { type: "read", key })).value;
  }

  async kvWrite(key, value, service = "lin-kv") {
    await this.rpc(service, { type: "write", key, value });
  }

  // lin-kv cas: RPCError 22 when the value is not `from`, 20 when absent (and not createIfNotExists).
  async kvCas(key, from, to, createIfNotExists = false, service = "lin-kv") {
    const body = { type: "cas", key, from, to };
    if (createIfNotExists) body.create_if_not_exists = true;
    await this.rpc(service, body);
  }

  // Call the sink for a delivery's (message, processor, attempt); extra: idempotency_key, fencing_token.
  async effect(body, extra = {}) {
    const request = { type: "effect", message: body.message, processor: body.processor, attempt: body.attempt };
    return (await this.rpc("sink", { ...request, ...extra })).value;
  }

  // Queue one envelope for this turn's output.
  send(dest, body) {
    this._pending.push(JSON.stringify({ src: this.nodeId, dest, body }));
  }

  // A line of free text on stderr (lethe keeps its tail).
  log(...parts) {
    this._error.write(parts.join(" ") + "\n");
  }

  // Serve until stdin closes.
  run() {
    this._input.setEncoding("utf8");
    this._input.on("data", (chunk) => {
      const parts = (this._partial + chunk).split("\n");
      this._partial = parts.pop();
      for (const line of parts) if (line.trim() !== "") this._lines.push(line);
      this._next();
    });
  }

  // ---- the loop --------------------------------------------------------------------------------------
  _next() {
    if (this._busy || this._nextLine === this._lines.length) return;
    this._busy = true;
    const envelope = JSON.parse(this._lines[this._nextLine++]);
    if (this._nextLine === this._lines.length) {
      this._lines = [];
      this._nextLine = 0;
    }
    this._open(envelope);
    setImmediate(() => this._close(envelope));  // after every microtask the line set off
  }

  _open(envelope) {
    if (envelope.time_ns !== undefined) this._timeNs = envelope.time_ns;
    const body = envelope.body;
    const resume = body.in_reply_to !== undefined ? this._waiting.get(body.in_reply_to) : undefined;
    if (resume !== undefined) {
      this._waiting.delete(body.in_reply_to);
      resume(body);
    } else if (body.type === "init") {
      this._init(envelope.src, body);
    } else {
      this._dispatch(envelope.src, body);
    }
  }

  _close(envelope) {
    if (envelope.turn !== undefined) {
      this._pending.push(JSON.stringify({ src: this.nodeId, dest: "lethe",
                                          body: { type: "turn_end", turn: envelope.turn } }));
    }
    if (this._pending.length > 0) {
      this._pending.push("");
      this._output.write(this._pending.join("\n"));
      this._pending = [];
    }
    this._busy = false;
    this._next();
  }

  _init(src, body) {
    this.nodeId = body.node_id;
    this.nodeIds = body.node_ids || [];
    const meta = body.lethe || {};
    this.seed = meta.seed || 0;
    this.incarnation = meta.incarnation || 0;
    this.processors = meta.processors || [];
    this.send(src, { type: "init_ok", in_reply_to: body.msg_id, lethe_turns: true });
  }

  _dispatch(src, body) {
    const handler = this._handlers.get(body.type);
    if (handler === undefined) {
      if (body.in_reply_to !== undefined) {
        this.log(`lethe_node: a reply nobody awaits: ${JSON.stringify(body)}`);
      } else if (body.msg_id !== undefined) {
        this.send(src, { type: "error", in_reply_to: body.msg_id, code: NOT_SUPPORTED,
                         text: `no handler for ${JSON.stringify(body.type)}` });
      }
      return;
    }
    let running;
    try {
      running = Promise.resolve(handler(body));
    } catch (error) {
      running = Promise.reject(error);
    }
    running.then((result) => this._finish(src, body, result, undefined),
                 (error) => this._finish(src, body, undefined, error === undefined ? new Error("undefined") : error));
  }

  _finish(src, body, result, error) {
    if (body.msg_id === undefined) {
      if (error !== undefined) this._printStack(error);
      return;
    }
    if (error === undefined) {
      if (body.type === "deliver") {
        this.send(src, { type: "deliver_ok", in_reply_to: body.msg_id, value: result === undefined ? null : result });
      } else if (result !== undefined && result !== null) {
        this.send(src, { ...result, in_reply_to: body.msg_id });
      }
      return;
    }
    if (!(error instanceof Reject)) this._printStack(error);
    const code = body.type === "deliver" ? TEMPORARILY_UNAVAILABLE : (error.code ?? CRASH);
    this.send(src, { type: "error", in_reply_to: body.msg_id, code, text: String(error.message || error) });
  }

  _printStack(error) {
    this._error.write(`${(error && error.stack) || String(error)}\n`);
  }
}

module.exports = {
  Node, RPCError, Reject, dedupeKey, parseDuration,
  TIMEOUT, NOT_SUPPORTED, TEMPORARILY_UNAVAILABLE, CRASH, KEY_DOES_NOT_EXIST, KEY_ALREADY_EXISTS,
  PRECONDITION_FAILED,
};
