// check-then-insert over lethe's store service: the anti-pattern of the reference article, in JavaScript.
//
// What it shows: read the message's record (get); if a completed record is there, skip and acknowledge with
// its memoized value; otherwise run the effect, then insert a completed record (a blind put) and acknowledge.
// The check and the insert are two operations with the effect between them: two attempts of one message that
// both check before either inserts both run the effect. (The built-in strategy "check-then-insert",
// protocol/check_then_insert.cpp, does the same.)
//
// What lethe should find: duplicate effects with cause `unprotected` whenever two attempts of one message
// overlap (scenarios/check-then-insert-race.toml's redelivered copies), and `crash-after-effect` when an
// attempt dies between its effect and its insert. The fix: examples/external/unique_constraint.js.
//
// Settings: LETHE_TTL (environment; default "7d"): the record's lifetime after its insert.
"use strict";
const path = require("path");
const { Node, Reject, dedupeKey, parseDuration } = require(path.join(__dirname, "lib", "lethe_node.js"));

const TTL = parseDuration(process.env.LETHE_TTL || "7d");
const node = new Node();

node.on("deliver", async (body) => {
  const key = dedupeKey(body.processor, body.message);
  const readAt = node.now();
  const { reply: read } = await node.storeStep({ kind: "get", key });
  if (read === null) throw new Reject("the store did not answer the check");  // redelivered later
  const seen = read.previous;
  const expired = seen && seen.expires_on !== undefined && seen.expires_on !== null && seen.expires_on <= readAt;
  if (seen && seen.completed_at !== undefined && seen.completed_at !== null && !expired) {
    return seen.memoized ?? null;  // checked: done before
  }
  const value = await node.effect(body);
  const now = node.now();
  const item = { started_at: readAt, completed_at: now, expires_on: now + TTL, owner: body.attempt };
  if (value !== null && value !== undefined) item.memoized = value;
  const { reply: put } = await node.storeStep({ kind: "put", key, item });  // blind: nothing stops a second one
  if (put === null) node.log(`message ${body.message}: the insert was not answered`);
  return value;  // the effect happened, whether or not the insert landed
});

node.run();
