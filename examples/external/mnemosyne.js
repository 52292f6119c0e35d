// mnemosyne in JavaScript: the two-phase dedupe record over lethe's store service, as an external node.
//
// The same protocol, step for step, as examples/external/mnemosyne.py (read its header for the steps and the
// decision table); the same settings, from the command line or the environment:
//   --max-processing-time / LETHE_MAX_PROCESSING_TIME   default 5s
//   --ttl                 / LETHE_TTL                   default 7d (no "none": JavaScript numbers are exact
//                                                                  only up to 2^53 ns, about 104 days)
//   --poll                / LETHE_POLL                  default 100ms
//   --max-wait            / LETHE_MAX_WAIT              default 1m
// A bad value exits with code 2.
//
// What lethe should find: what it finds for mnemosyne.py and for the built-in mnemosyne with the same settings.
"use strict";
const path = require("path");
const { Node, Reject, RPCError, dedupeKey, parseDuration } = require(path.join(__dirname, "lib", "lethe_node.js"));

const SETTINGS = {  // flag: [environment variable, default]
  "max-processing-time": ["LETHE_MAX_PROCESSING_TIME", "5s"],
  ttl: ["LETHE_TTL", "7d"],
  poll: ["LETHE_POLL", "100ms"],
  "max-wait": ["LETHE_MAX_WAIT", "1m"],
};

function settings(argv) {
  const given = {};
  for (let i = 0; i < argv.length; i += 2) {
    const flag = argv[i].replace(/^--/, "");
    if (!(flag in SETTINGS) || i + 1 >= argv.length) {
      process.stderr.write(`mnemosyne.js: unknown argument ${JSON.stringify(argv[i])}; allowed: ` +
                           `${Object.keys(SETTINGS).map((f) => `--${f} DURATION`).join(", ")}\n`);
      process.exit(2);
    }
    given[flag] = argv[i + 1];
  }
  const out = {};
  for (const [flag, [variable, fallback]] of Object.entries(SETTINGS)) {
    try {
      out[flag] = parseDuration(given[flag] || process.env[variable] || fallback);
    } catch (error) {
      process.stderr.write(`mnemosyne.js: ${flag}: ${error.message}\n`);
      process.exit(2);
    }
  }
  return out;
}

const CONFIG = settings(process.argv.slice(2));
const node = new Node();
const isSet = (value) => value !== undefined && value !== null;

// The four-row table (protocol/decision.cpp, expired first): "process" | "skip" | "takeover" | "wait".
function decide(seen, now) {
  if (!isSet(seen)) return "process";
  if (isSet(seen.expires_on) && seen.expires_on <= now) return "process";  // the start write replaced it
  if (isSet(seen.completed_at)) return "skip";
  if (!isSet(seen.started_at)) return "process";
  if (seen.started_at > now) return "wait";  // negative age (clock skew): recent
  return now - seen.started_at >= CONFIG["max-processing-time"] ? "takeover" : "wait";
}

// After a lost reply, the record shows whether an earlier try of our own write landed.
function ours(reply, tries, attempt) {
  return tries > 1 && isSet(reply.previous) && (reply.previous.owner ?? 0) === attempt;
}

function startWrite(key, attempt, now) {
  return { kind: "upsert", key, condition: {},
           update: { started_at: { set_if_absent: now }, owner: { set_if_absent: attempt }, replace_expired_at: now } };
}

function takeoverWrite(key, attempt, stale, now) {
  const condition = { require_present: true, require_not_completed: true };
  if (isSet(stale.started_at)) condition.started_at_equals = stale.started_at;
  return { kind: "upsert", key, condition, update: { started_at: { set: now }, owner: { set: attempt } } };
}

function completion(key, attempt, claim, decidedAt, now, value) {
  const update = { started_at: { set_if_absent: decidedAt }, owner: { set_if_absent: attempt },
                   completed_at: { set: now }, expires_on: { set: now + CONFIG.ttl } };
  if (isSet(value)) update.memoized = { set: value };
  let condition = { owner_equals: attempt, require_not_completed: true };
  if (claim !== "owner") {  // a poll read showed no live record: complete only if there is still none
    condition = { absent_or_expired_at: now };
    update.replace_expired_at = now;
  }
  return { kind: "upsert", key, condition, update };
}

async function run(body, key, claim, decidedAt) {
  const value = await node.effect(body);  // an error rejects the delivery: the record stays in flight
  const { reply } = await node.storeStep(completion(key, body.attempt, claim, decidedAt, node.now(), value));
  if (reply === null || !reply.applied) {
    node.log(`message ${body.message} attempt ${body.attempt}: the completion did not land`);
  }
  return value;
}

// Sleep a poll interval and read the record (consistent get) until a read answers; null past max_wait.
async function waitAndRead(key, waitBegan) {
  const deadline = waitBegan + CONFIG["max-wait"];
  for (;;) {
    const now = node.now();
    if (now >= deadline) return null;
    await node.sleep(Math.min(CONFIG.poll, deadline - now));
    try {
      return await node.storeOp({ kind: "get", key });
    } catch (error) {
      if (!(error instanceof RPCError) || (error.code !== 0 && error.code !== 11)) throw error;
    }
  }
}

node.on("deliver", async (body) => {
  const key = dedupeKey(body.processor, body.message);
  const attempt = body.attempt;
  let waitBegan = null;
  for (;;) {  // one start write per iteration
    const startAt = node.now();
    const start = await node.storeStep(startWrite(key, attempt, startAt));
    if (start.reply === null) throw new Reject("the store did not answer the start write");
    if (ours(start.reply, start.tries, attempt)) return await run(body, key, "owner", startAt);
    let seen = start.reply.previous, decidedAt = startAt, source = "start";
    for (;;) {  // decide on `seen`, act, decide again after a wait or a lost takeover
      const decision = decide(seen, decidedAt);
      if (decision === "skip") return seen.memoized ?? null;
      if (decision === "takeover") {
        const takeoverAt = node.now();
        const taken = await node.storeStep(takeoverWrite(key, attempt, seen, takeoverAt));
        if (taken.reply === null) throw new Reject("the store did not answer the takeover");
        if (taken.reply.applied || ours(taken.reply, taken.tries, attempt)) {
          return await run(body, key, "owner", takeoverAt);
        }
        [seen, decidedAt, source] = [taken.reply.previous, takeoverAt, "takeover"];
        continue;
      }
      if (decision === "process") {
        if (source === "start") return await run(body, key, "owner", decidedAt);
        if (source === "takeover") break;  // the record vanished under our fenced write: a new start write
        return await run(body, key, "no-record", decidedAt);
      }
      if (waitBegan === null) waitBegan = decidedAt;
      const read = await waitAndRead(key, waitBegan);
      if (read === null) throw new Reject("max_wait passed while another attempt held the record");
      [seen, decidedAt, source] = [read.previous, node.now(), "poll"];
    }
  }
});

node.run();
