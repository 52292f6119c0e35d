#!/usr/bin/env python3
"""A consumer node written against the wire protocol alone (docs/external.md), for lethe's own tests.

Usage: raw_node.py MODE. With RAW_NODE_LOG set, every init is logged there ("NODE incarnation K"). Modes:
  effect            on each delivery: call the sink, acknowledge with its value (no record: unprotected)
  record            the two-phase record: a conditional start write on the dedupe record, the effect, the
                    completion; a completed record is skipped with its memoized value
  random            like effect, but sleeps a random (unseeded) time first: not deterministic
  plain             like effect, without lethe_turns in init_ok (a plain Maelstrom node)
  plain-timer       like plain, with a thread of its own started at init that sleeps an hour in a bare
                    nanosleep system call (a wall-clock timer: a wait lethe does not serve in virtual time)
  plain-clock       like plain, but sleeps 50 ms at start-up, then runs each delivery's effect 2 s after it came,
                    by its own clock: its main loop waits in poll() with a timeout (time.monotonic); logs to
                    RAW_NODE_LOG, per delivery, "NODE clock MSG LINE_TIME_NS MONOTONIC_NS REALTIME_NS" when it
                    came and "NODE fired MSG MONOTONIC_NS REALTIME_NS" when its effect was asked for
  plain-thread-clock
                    like plain-clock, but each delivery's effect is run by a threading.Timer of 2 s (a thread
                    waiting in a semaphore with a timeout); logs as plain-clock does
  unknown-type      sends a request of an unknown type to the store
  reply-to-nothing  answers a delivery lethe never sent
  wrong-src         writes a message whose src is another node
  exit              exits on its first delivery
  hang              never ends its first delivery's turn
  silent            ends every turn but never answers a delivery (holds every message it is sent)
  forks             like hang, but at init starts a plain child and a daemon (forked twice, setsid()), each
                    sleeping an hour; their pids go to RAW_NODE_LOG ("NODE child PID", "NODE daemon PID")
  flood             on its first delivery sends 100,000 valid clock requests in one turn
  long-line         on its first delivery writes a line of 20 MiB (no newline until its end)
  bad-utf8          writes bytes that are not UTF-8 to stderr (a 4 KiB tail cut inside a character too), then
                    a line that is not JSON
  bad-exit          writes a line that is not JSON on its first delivery and exits with status 1 at once
  linkv-big         on its first delivery writes, reads and compare-and-sets lin-kv integers beyond 64 bits
                    (2^64, 2^64 + 1, 2^100, -2^70), then runs the effect; each reply's line goes to RAW_NODE_LOG
                    ("NODE linkv STEP LINE")
  sleep-bad         on its first delivery asks the clock for sleeps of 2^64 - 1 ns, -5 ns, 1.5 ns, 10^18 ns (past
                    the run's end) and 1 ms, then runs the effect once the 1 ms one answered; each reply's line
                    goes to RAW_NODE_LOG ("NODE sleep DURATION LINE")
  services          on its first delivery: three lin-tso ts; on seq-kv and on lww-kv a write, a read, a cas
                    that holds, a cas from a stale value and a read; then the effect. Each reply's line goes to
                    RAW_NODE_LOG ("NODE service STEP LINE")
  ping              on each delivery: the effect, the acknowledgement, and a ping to the next node of node_ids
                    (a ring), sent again every second until that node answers ping_ok; each ping that arrives goes
                    to RAW_NODE_LOG ("NODE ping FROM SEQ FIRST_SENT_NS SENT_NS ARRIVED_NS", the node's times);
                    each ping carries big = 2^64 + its first_sent_ns, and its receiver logs what arrived ("NODE big
                    FROM FIRST_SENT_NS BIG")
  gossip            on each delivery: the effect, the acknowledgement, and the set of message ids this node knows
                    to be done (its own and what peers told it) sent to every other node; a node that learns an id
                    from a peer logs it ("NODE learned ID from FROM"), and at each delivery it logs what it knows
                    ("NODE knows ID,ID,...")
"""
import json
import os
import random
import select
import sys
import threading

MODE = sys.argv[1] if len(sys.argv) > 1 else "effect"
node_id = None
next_id = 1000
waiting = {}  # msg_id of a request -> (continuation, the delivery's body)
LINE = [""]  # the line being handled, as lethe wrote it
first_delivery = [True]
node_ids = []
pings = {}  # seq -> (dest, first sent_ns): pings not yet answered
known = set()  # gossip: message ids known to be done


def send(dest, body):
    sys.stdout.write(json.dumps({"src": node_id, "dest": dest, "body": body}) + "\n")


def request(dest, body, continuation, delivery):
    global next_id
    next_id += 1
    body["msg_id"] = next_id
    waiting[next_id] = (continuation, delivery)
    send(dest, body)


def ack(delivery, value):
    send("source", {"type": "deliver_ok", "in_reply_to": delivery["msg_id"], "value": value})


def effect(delivery, then):
    request("sink", {"type": "effect", "message": delivery["message"], "processor": delivery["processor"],
                     "attempt": delivery["attempt"]}, then, delivery)


def key_of(delivery):
    return {"table": "dedupe", "processor": delivery["processor"], "message": delivery["message"]}


def start_descendants():
    """A plain child and a daemon that outlive this node unless lethe ends them (the forks mode)."""
    log = os.environ.get("RAW_NODE_LOG")
    child = os.fork()
    if child == 0:
        os.execvp("sleep", ["sleep", "3600"])
    reader, writer = os.pipe()
    middle = os.fork()
    if middle == 0:
        os.setsid()
        daemon = os.fork()
        if daemon == 0:
            os.close(reader)
            os.write(writer, f"{os.getpid()}\n".encode())
            os.close(writer)
            for fd in (0, 1, 2):
                os.close(fd)
            os.execvp("sleep", ["sleep", "3600"])
        os._exit(0)
    os.close(writer)
    daemon_pid = os.read(reader, 64).decode().strip()
    os.close(reader)
    os.waitpid(middle, 0)
    if log:
        with open(log, "a") as out:
            out.write(f"{node_id} child {child}\n{node_id} daemon {daemon_pid}\n")


def raw_nanosleep(seconds):
    """A sleep made as a bare system call, as Go's runtime makes its waits: no C library call the virtual-clock
    library could serve."""
    import ctypes
    number = {"x86_64": 35, "aarch64": 101}[os.uname().machine]

    class Time(ctypes.Structure):
        _fields_ = [("s", ctypes.c_long), ("ns", ctypes.c_long)]

    ctypes.CDLL(None).syscall(number, ctypes.byref(Time(seconds, 0)), None)


def log_line(text):
    if os.environ.get("RAW_NODE_LOG"):
        with open(os.environ["RAW_NODE_LOG"], "a") as out:
            out.write(f"{node_id} {text}\n")


# lin-kv integers beyond 64 bits: (step, request body), each sent once the previous one answered.
LINKV_STEPS = [
    ("write-2^64", {"type": "write", "key": "big", "value": 2**64}),
    ("read-2^64", {"type": "read", "key": "big"}),
    ("cas-from-2^64+1", {"type": "cas", "key": "big", "from": 2**64 + 1, "to": 2**100}),
    ("cas-from-2^64", {"type": "cas", "key": "big", "from": 2**64, "to": 2**100}),
    ("read-2^100", {"type": "read", "key": "big"}),
    ("write--2^70", {"type": "write", "key": "big", "value": -2**70}),
    ("read--2^70", {"type": "read", "key": "big"}),
]


def linkv_step(index, delivery):
    if index == len(LINKV_STEPS):
        effect(delivery, lambda reply, d: ack(d, reply.get("value")))
        return
    step, body = LINKV_STEPS[index]

    def then(reply, d):
        log_line(f"linkv {step} {LINE[0]}")
        linkv_step(index + 1, d)
    request("lin-kv", dict(body), then, delivery)


def send_ping(seq, now):
    dest, first_sent = pings[seq]
    send(dest, {"type": "ping", "seq": seq, "first_sent_ns": first_sent, "sent_ns": now, "big": 2**64 + first_sent})
    request("clock", {"type": "sleep", "duration_ns": 10**9}, lambda reply, d: retry_ping(seq), None)


def retry_ping(seq):
    if seq in pings:
        send_ping(seq, NOW[0])


def on_peer(envelope, now):
    body = envelope["body"]
    src = envelope["src"]
    if body["type"] == "ping":
        log_line(f"ping {src} {body['seq']} {body['first_sent_ns']} {body['sent_ns']} {now}")
        log_line(f"big {src} {body['first_sent_ns']} {body['big']}")
        send(src, {"type": "ping_ok", "seq": body["seq"]})
    elif body["type"] == "ping_ok":
        pings.pop(body["seq"], None)
    elif body["type"] == "gossip":
        for done in body["done"]:
            if done not in known:
                known.add(done)
                log_line(f"learned {done} from {src}")


SERVICE_STEPS = [("ts-1", "lin-tso", {"type": "ts"}), ("ts-2", "lin-tso", {"type": "ts"}),
                 ("ts-3", "lin-tso", {"type": "ts"})]
for kv in ("seq-kv", "lww-kv"):
    SERVICE_STEPS += [
        (f"{kv}-read-absent", kv, {"type": "read", "key": "k"}),
        (f"{kv}-write", kv, {"type": "write", "key": "k", "value": 1}),
        (f"{kv}-cas", kv, {"type": "cas", "key": "k", "from": 1, "to": 2}),
        (f"{kv}-cas-stale", kv, {"type": "cas", "key": "k", "from": 1, "to": 3}),
        (f"{kv}-cas-create", kv, {"type": "cas", "key": "new", "from": 0, "to": 5, "create_if_not_exists": True}),
        (f"{kv}-read", kv, {"type": "read", "key": "k"}),
    ]


def service_step(index, delivery):
    if index == len(SERVICE_STEPS):
        effect(delivery, lambda reply, d: ack(d, reply.get("value")))
        return
    step, service, body = SERVICE_STEPS[index]

    def then(reply, d):
        log_line(f"service {step} {LINE[0]}")
        service_step(index + 1, d)
    request(service, dict(body), then, delivery)


def on_deliver(delivery, now):
    first = first_delivery[0]
    first_delivery[0] = False
    if MODE == "services" and first:
        service_step(0, delivery)
        return
    if MODE == "ping":
        def then(reply, d):
            ack(d, reply.get("value"))
            seq = f"{node_id}:{d['msg_id']}"
            pings[seq] = (node_ids[(node_ids.index(node_id) + 1) % len(node_ids)], NOW[0])
            send_ping(seq, NOW[0])
        effect(delivery, then)
        return
    if MODE == "gossip":
        def gossip(reply, d):
            ack(d, reply.get("value"))
            known.add(d["message"])
            log_line("knows " + ",".join(str(done) for done in sorted(known)))
            for peer in node_ids:
                if peer != node_id:
                    send(peer, {"type": "gossip", "done": sorted(known)})
        effect(delivery, gossip)
        return
    if MODE == "silent":
        return
    if MODE == "bad-exit" and first:
        sys.stdout.write("this is not a message\n")
        sys.stdout.flush()
        os._exit(1)
    if MODE == "linkv-big" and first:
        linkv_step(0, delivery)
        return
    if MODE == "sleep-bad" and first:
        for duration in (2**64 - 1, -5, 1.5, 10**18, 10**6):
            def then(reply, d, duration=duration):
                log_line(f"sleep {duration} {LINE[0]}")
                if duration == 10**6:
                    effect(d, lambda r, d2: ack(d2, r.get("value")))
            request("clock", {"type": "sleep", "duration_ns": duration}, then, delivery)
        return
    if MODE == "flood":
        for _ in range(100000):
            request("clock", {"type": "sleep", "duration_ns": 10**9}, None, delivery)
        return
    if MODE == "long-line":
        sys.stdout.write("x" * (20 << 20) + "\n")
        return
    if MODE == "bad-utf8":
        sys.stdout.flush()
        sys.stderr.flush()
        # 4,203 bytes: the last 4,096 start inside an "\u00e9" and end with bytes that are not UTF-8.
        os.write(2, "\u00e9".encode() * 2100 + b"\xff\xfe\xc3")
        sys.stdout.write("not json \xe9\n")
        return
    if MODE == "garbage":
        sys.stdout.write("this is not a message\n")
        return
    if MODE == "unknown-type":
        request("lethe-store", {"type": "frobnicate"}, None, delivery)
        return
    if MODE == "reply-to-nothing":
        send("source", {"type": "deliver_ok", "in_reply_to": 999999, "value": 1})
        return
    if MODE == "wrong-src":
        sys.stdout.write(json.dumps({"src": "someone-else", "dest": "source",
                                     "body": {"type": "deliver_ok", "in_reply_to": delivery["msg_id"]}}) + "\n")
        return
    if MODE == "exit":
        sys.stderr.write("raw_node: exiting on purpose\n")
        sys.stderr.flush()
        os._exit(3)
    if MODE in ("hang", "forks"):
        sys.stdout.flush()
        if os.environ.get("RAW_NODE_LOG"):  # the signal test waits for a node that hangs
            with open(os.environ["RAW_NODE_LOG"], "a") as log:
                log.write(f"{node_id} hangs\n")
        import time
        time.sleep(3600)
    if MODE == "random":
        request("clock", {"type": "sleep", "duration_ns": random.randint(1, 10**9)},
                lambda reply, d: effect(d, lambda r, d2: ack(d2, r.get("value"))), delivery)
        return
    if MODE == "record":
        start = {"kind": "upsert", "key": key_of(delivery),
                 "condition": {"require_absent": True},
                 "update": {"started_at": {"set": now}, "owner": {"set": delivery["attempt"]}}}
        request("lethe-store", {"type": "op", "op": start}, after_start, delivery)
        return
    effect(delivery, lambda reply, d: ack(d, reply.get("value")))


def after_start(reply, delivery):
    if reply["type"] != "op_ok":
        send("source", {"type": "error", "in_reply_to": delivery["msg_id"], "code": 11, "text": "store"})
        return
    result = reply["reply"]
    previous = result.get("previous")
    if not result["applied"]:
        if previous and "completed_at" in previous:
            ack(delivery, previous.get("memoized"))
        else:
            send("source", {"type": "error", "in_reply_to": delivery["msg_id"], "code": 11, "text": "in flight"})
        return
    effect(delivery, after_effect)


def after_effect(reply, delivery):
    if reply["type"] != "effect_ok":
        send("source", {"type": "error", "in_reply_to": delivery["msg_id"], "code": 11, "text": "effect"})
        return
    value = reply["value"]
    complete = {"kind": "upsert", "key": key_of(delivery), "condition": {"owner_equals": delivery["attempt"]},
                "update": {"completed_at": {"set": NOW[0]}, "memoized": {"set": value}}}
    request("lethe-store", {"type": "op", "op": complete}, lambda r, d: ack(d, value), delivery)


NOW = [0]
DELAY_NS = 2 * 10**9


def handle(line):
    """Handles one line lethe wrote (the plain-clock mode's loop and main()'s share it)."""
    LINE[0] = line
    envelope = json.loads(line)
    body = envelope["body"]
    NOW[0] = envelope["time_ns"]
    if body["type"] == "init":
        init(envelope)
    elif body["type"] == "deliver":
        on_deliver(body, envelope["time_ns"])
    elif envelope["src"] in node_ids:
        on_peer(envelope, envelope["time_ns"])
    elif "in_reply_to" in body and body["in_reply_to"] in waiting:
        continuation, delivery = waiting.pop(body["in_reply_to"])
        continuation(body, delivery)
    return envelope


def init(envelope):
    global node_id
    body = envelope["body"]
    node_id = body["node_id"]
    node_ids[:] = body["node_ids"]
    if os.environ.get("RAW_NODE_LOG"):  # the test of crashes and restarts reads it
        with open(os.environ["RAW_NODE_LOG"], "a") as log:
            log.write(f"{node_id} incarnation {body['lethe']['incarnation']}\n")
    reply = {"type": "init_ok", "in_reply_to": body["msg_id"]}
    if not MODE.startswith("plain"):
        reply["lethe_turns"] = True
    send(envelope["src"], reply)
    if MODE == "plain-timer":
        threading.Thread(target=raw_nanosleep, args=(3600,), daemon=True).start()
    if MODE == "forks":
        start_descendants()


def main_plain_clock():
    """Deliveries wait DELAY_NS on the node's own monotonic clock, kept by poll()'s timeout, before their effect."""
    import time
    due = []  # (deadline on time.monotonic_ns(), delivery), in arrival order
    poller = select.poll()
    poller.register(0, select.POLLIN)
    pending = b""
    # Before init_ok a node's waits are the kernel's (lethe serves timers only once a node said it is plain): a
    # node that sleeps at start-up must not hang.
    time.sleep(0.05)
    while True:
        timeout = None
        if due:
            timeout = max(0, -(-(min(d for d, _ in due) - time.monotonic_ns()) // 10**6))
        if poller.poll(timeout):
            chunk = os.read(0, 65536)
            if not chunk:
                return
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                envelope = json.loads(line)
                body = envelope["body"]
                if body["type"] == "deliver":
                    log_line(f"clock {body['message']} {envelope['time_ns']} {time.monotonic_ns()} {time.time_ns()}")
                    due.append((time.monotonic_ns() + DELAY_NS, body))
                else:
                    handle(line.decode())
        now = time.monotonic_ns()
        for entry in [e for e in due if e[0] <= now]:
            due.remove(entry)
            log_line(f"fired {entry[1]['message']} {now} {time.time_ns()}")
            effect(entry[1], lambda reply, d: ack(d, reply.get("value")))
        sys.stdout.flush()


def main_plain_thread_clock():
    """Each delivery's effect runs in a threading.Timer of DELAY_NS, on its own thread; the main thread reads."""
    import time
    out = threading.Lock()  # the timers' threads and the main thread write whole lines, one at a time

    def fire(delivery):
        with out:
            log_line(f"fired {delivery['message']} {time.monotonic_ns()} {time.time_ns()}")
            effect(delivery, lambda reply, d: ack(d, reply.get("value")))
            sys.stdout.flush()

    for line in sys.stdin:
        with out:
            envelope = json.loads(line)
            body = envelope["body"]
            if body["type"] == "deliver":
                log_line(f"clock {body['message']} {envelope['time_ns']} {time.monotonic_ns()} {time.time_ns()}")
                threading.Timer(DELAY_NS / 10**9, fire, (body,)).start()
            else:
                handle(line.rstrip("\n"))
            sys.stdout.flush()


def main():
    if MODE == "plain-clock":
        main_plain_clock()
        return
    if MODE == "plain-thread-clock":
        main_plain_thread_clock()
        return
    for line in sys.stdin:
        envelope = handle(line.rstrip("\n"))
        if not MODE.startswith("plain"):
            send("lethe", {"type": "turn_end", "turn": envelope["turn"]})
        sys.stdout.flush()


main()
