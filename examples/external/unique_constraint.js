// The unique-constraint fix of check-then-insert, over lethe's store service, in JavaScript.
//
// What it shows: insert the message's record FIRST, with a require-absent condition (the store's unique
// constraint on the key), and run the effect only if the insert landed; on a conflict skip. Step by step:
//   1. upsert {require_absent} setting started_at = now and owner = attempt; the reply returns the previous item;
//   2. applied -> run the effect, then complete the record (completed_at, memoized; fenced on owner = attempt)
//      and acknowledge with the effect's value;
//      conflict (not applied) -> skip: acknowledge with the memoized value of a completed record, or null
//      when the other attempt is still at work (the article's fix does not wait). A conflict whose record
//      is ours (owner = attempt) means an earlier try of our insert landed: go on as in 2.
//
// What lethe should find: no `unprotected` duplicates (the race of check_then_insert.js is closed). What is
// left: an owner that dies between its insert and its effect leaves a record nobody takes over, so the
// message is acknowledged by a later attempt without any effect (lethe counts it lost, not duplicated), and
// a crash between the effect and the completion is not retried either. mnemosyne.py adds the takeover.
//
// Settings: LETHE_TTL (environment; default "7d"): the completed record's lifetime.
"use strict";
const path = require("path");
const { Node, Reject, dedupeKey, parseDuration } = require(path.join(__dirname, "lib", "lethe_node.js"));

const TTL = parseDuration(process.env.LETHE_TTL || "7d");
const node = new Node();

node.on("deliver", async (body) => {
  const key = dedupeKey(body.processor, body.message);
  const { reply: insert } = await node.storeStep({
    kind: "upsert", key, condition: { require_absent: true },
    update: { started_at: { set: node.now() }, owner: { set: body.attempt } },
  });
  if (insert === null) throw new Reject("the store did not answer the insert");  // redelivered later
  const previous = insert.previous;
  const ours = insert.applied || (previous && previous.owner === body.attempt);
  if (!ours) return previous && previous.completed_at !== undefined ? (previous.memoized ?? null) : null;
  const value = await node.effect(body);
  const now = node.now();
  const update = { completed_at: { set: now }, expires_on: { set: now + TTL } };
  if (value !== null && value !== undefined) update.memoized = { set: value };
  const condition = { owner_equals: body.attempt, require_not_completed: true };
  const { reply: done } = await node.storeStep({ kind: "upsert", key, condition, update });
  if (done === null || !done.applied) node.log(`message ${body.message}: the completion did not land`);
  return value;
});

node.run();
