// A deliver handler on Maelstrom's own demo library (node.js, from jepsen-io/maelstrom's demo folder, copied
// next to this file, unchanged): the lin-kv read-then-write dedupe. A plain Maelstrom node: no lethe_turns.
var node = require('./node');
node.on('deliver', async function(req) {
  const b = req.body;
  const key = `${b.processor}/${b.message}`;
  try {
    const r = await node.rpc('lin-kv', {type: 'read', key: key});
    node.reply(req, {type: 'deliver_ok', value: r.value});
    return;
  } catch (err) {
    if (err.code != 20) { node.reply(req, {type: 'error', code: 11, text: 'read failed'}); return; }
  }
  try {
    const e = await node.rpc('sink', {type: 'effect', message: b.message, processor: b.processor, attempt: b.attempt});
    await node.rpc('lin-kv', {type: 'write', key: key, value: e.value});
    node.reply(req, {type: 'deliver_ok', value: e.value});
  } catch (err) {
    node.reply(req, {type: 'error', code: 11, text: 'failed'});
  }
});
node.main();
