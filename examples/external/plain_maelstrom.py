"""A plain Maelstrom node: no lethe library, no turn markers, no `lethe_turns` in its init_ok.

What it shows: a node written the way Maelstrom's own demos are (a read loop, a callback per outstanding
request, one flushed line per message) still runs in lethe. Because it never says when it has finished
reacting, lethe cannot know when to advance virtual time: it waits for a wall-clock quiet period after each
line instead. The dedupe is a lin-kv read-then-write (as examples/external/linkv_read_then_write.py).

What lethe should find: the same kind of result as for linkv_read_then_write.py (`unprotected` duplicates
when attempts overlap), with the result marked "not guaranteed reproducible": a node slower than the quiet
period would be seen as finished too early.
"""
import json
import sys

node_id = None
next_msg_id = 0
callbacks = {}  # msg_id of a request -> function called with the reply body


def send(dest, body):
    print(json.dumps({"src": node_id, "dest": dest, "body": body}), flush=True)


def rpc(dest, body, callback):
    global next_msg_id
    next_msg_id += 1
    callbacks[next_msg_id] = callback
    send(dest, {**body, "msg_id": next_msg_id})


def deliver(src, body):
    key = f"{body['processor']}/{body['message']}"

    def ack(value):
        send(src, {"type": "deliver_ok", "in_reply_to": body["msg_id"], "value": value})

    def reject(reply):
        send(src, {"type": "error", "in_reply_to": body["msg_id"], "code": 11, "text": json.dumps(reply)})

    def after_effect(reply):
        if reply["type"] != "effect_ok":
            return reject(reply)
        rpc("lin-kv", {"type": "write", "key": key, "value": reply["value"]},
            lambda written: ack(reply["value"]) if written["type"] == "write_ok" else reject(written))

    def after_read(reply):
        if reply["type"] == "read_ok":
            return ack(reply["value"])
        if reply.get("code") != 20:
            return reject(reply)
        rpc("sink", {"type": "effect", "message": body["message"], "processor": body["processor"],
                     "attempt": body["attempt"]}, after_effect)

    rpc("lin-kv", {"type": "read", "key": key}, after_read)


for line in sys.stdin:
    message = json.loads(line)
    body = message["body"]
    if body["type"] == "init":
        node_id = body["node_id"]
        send(message["src"], {"type": "init_ok", "in_reply_to": body["msg_id"]})
    elif "in_reply_to" in body and body["in_reply_to"] in callbacks:
        callbacks.pop(body["in_reply_to"])(body)
    elif body["type"] == "deliver":
        deliver(message["src"], body)
