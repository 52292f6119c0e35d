"""mnemosyne in Python: the two-phase dedupe record over lethe's store service, as an external node.

What it shows: the built-in strategy "mnemosyne" (protocol/mnemosyne.cpp, with its default settings:
conditional takeover, fenced completion, memoized value, consistent poll reads, expired-first precedence,
expires_on set at completion) written as a user would write it, one store round trip per phase:
  1. start write: an upsert that returns the previous item, setting started_at = now and owner = attempt only
     if absent (replacing an expired record);
  2. the decision table on the previous item (decided at the write's instant):
       absent (or expired)                     -> process: our write created the record, we own it;
       completed                               -> skip: acknowledge with the memoized value, no effect;
       in flight, age >= max_processing_time   -> take over with a write fenced on the stale started_at
                                                  (one waiter wins; a loser decides again on what it found);
       in flight, age <  max_processing_time   -> wait: sleep `poll`, read the record again, decide again
                                                  (for at most max_wait, then reject: redelivered later);
  3. the effect through the sink;
  4. the completion: completed_at, the memoized value and expires_on = now + ttl, fenced on our ownership;
  5. acknowledge with the effect's value.
A store step whose reply is lost (error 0) is tried again, up to 3 times, as the built-in does; a reply that
shows our own attempt as the owner means an earlier try of our write landed. A failed effect or an
unreachable store rejects the delivery (error 11) and leaves the record as it is.

What lethe should find: what it finds for the built-in mnemosyne with the same settings, e.g. zero duplicates
and nothing lost under scenarios/mnemosyne-lossy-crashes.toml's faults; a duplicate only in its documented
windows (a crash between the effect and the completion, an expired record, an owner slower than
max_processing_time).

Settings: command-line flags, else environment variables, else the defaults (those of
scenarios/mnemosyne-lossy-crashes.toml and the built-in's):
  --max-processing-time / LETHE_MAX_PROCESSING_TIME   default 5s
  --ttl                 / LETHE_TTL                   default 7d ("none": records never expire)
  --poll                / LETHE_POLL                  default 100ms
  --max-wait            / LETHE_MAX_WAIT              default 1m
Durations are an integer with a unit: ns, us, ms, s, m, h, d. A bad value exits with code 2.
"""
import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "lib"))
from lethe_node import Node, Reject, RPCError, dedupe_key, parse_duration  # noqa: E402

TIME_MAX = 2**63 - 1
SETTINGS = {  # flag name: (environment variable, default)
    "max-processing-time": ("LETHE_MAX_PROCESSING_TIME", "5s"),
    "ttl": ("LETHE_TTL", "7d"),
    "poll": ("LETHE_POLL", "100ms"),
    "max-wait": ("LETHE_MAX_WAIT", "1m"),
}


def duration(name: str, text: str) -> int:
    if name == "ttl" and text == "none":
        return TIME_MAX
    try:
        return parse_duration(text)
    except ValueError as error:
        print(f"mnemosyne.py: {name}: {error}" + (' or "none"' if name == "ttl" else ""), file=sys.stderr)
        sys.exit(2)


def settings() -> dict:
    parser = argparse.ArgumentParser(description="mnemosyne as a lethe external node")
    for flag in SETTINGS:
        parser.add_argument(f"--{flag}")
    given = vars(parser.parse_args())
    out = {}
    for flag, (variable, default) in SETTINGS.items():
        text = given[flag.replace("-", "_")] or os.environ.get(variable) or default
        out[flag.replace("-", "_")] = duration(flag, text)
    return out


CONFIG = settings()
node = Node()


def add(time: int, duration: int) -> int:
    return min(time + duration, TIME_MAX)


def decide(seen, now: int) -> str:
    """The four-row table (protocol/decision.cpp, expired first): process / skip / takeover / wait."""
    if seen is None:
        return "process"
    if seen.get("expires_on") is not None and seen["expires_on"] <= now:
        return "process"  # expired: the start write replaced it (replace_expired_at)
    if seen.get("completed_at") is not None:
        return "skip"
    started_at = seen.get("started_at")
    if started_at is None:
        return "process"
    if started_at > now:
        return "wait"  # negative age (clock skew): recent
    return "takeover" if now - started_at >= CONFIG["max_processing_time"] else "wait"


def ours(reply, tries: int, attempt: int) -> bool:
    """After a lost reply, the record shows whether an earlier try of our own write landed."""
    previous = reply.get("previous")
    return tries > 1 and previous is not None and previous.get("owner", 0) == attempt


def start_write(key, attempt: int, now: int) -> dict:
    return {"kind": "upsert", "key": key, "condition": {},
            "update": {"started_at": {"set_if_absent": now}, "owner": {"set_if_absent": attempt},
                       "replace_expired_at": now}}


def takeover_write(key, attempt: int, stale: dict, now: int) -> dict:
    condition = {"require_present": True, "require_not_completed": True}
    if stale.get("started_at") is not None:
        condition["started_at_equals"] = stale["started_at"]
    return {"kind": "upsert", "key": key, "condition": condition,
            "update": {"started_at": {"set": now}, "owner": {"set": attempt}}}


def completion(key, attempt: int, claim: str, seen, decided_at: int, now: int, value) -> dict:
    update = {"started_at": {"set_if_absent": decided_at}, "owner": {"set_if_absent": attempt},
              "completed_at": {"set": now}, "expires_on": {"set": add(now, CONFIG["ttl"])}}
    if value is not None:
        update["memoized"] = {"set": value}
    if claim == "owner":
        condition = {"owner_equals": attempt, "require_not_completed": True}
    else:  # a poll read showed no live record: complete only if there is still none
        condition = {"absent_or_expired_at": now}
        update["replace_expired_at"] = now
    return {"kind": "upsert", "key": key, "condition": condition, "update": update}


async def run(body, key, claim: str, seen, decided_at: int):
    value = await node.effect(body)  # an error rejects the delivery: the record stays in flight
    reply, _ = await node.store_step(completion(key, body["attempt"], claim, seen, decided_at, node.now(), value))
    if reply is None or not reply.get("applied"):
        node.log(f"message {body['message']} attempt {body['attempt']}: the completion did not land")
    return value


async def wait_and_read(key, wait_began: int):
    """Sleep a poll interval and read the record (consistent get) until a read answers; None past max_wait."""
    deadline = add(wait_began, CONFIG["max_wait"])
    while True:
        now = node.now()
        if now >= deadline:
            return None
        await node.sleep(min(CONFIG["poll"], deadline - now))
        try:
            return await node.store_op({"kind": "get", "key": key})
        except RPCError as error:
            if error.code not in (0, 11):
                raise


@node.on("deliver")
async def deliver(body):
    key = dedupe_key(body["processor"], body["message"])
    attempt = body["attempt"]
    wait_began = None
    while True:  # one start write per iteration
        start_at = node.now()
        reply, tries = await node.store_step(start_write(key, attempt, start_at))
        if reply is None:
            raise Reject("the store did not answer the start write")
        if ours(reply, tries, attempt):
            return await run(body, key, "owner", None, start_at)
        seen, decided_at, source = reply.get("previous"), start_at, "start"
        while True:  # decide on `seen`, act, decide again after a wait or a lost takeover
            decision = decide(seen, decided_at)
            if decision == "skip":
                return seen.get("memoized")
            if decision == "takeover":
                takeover_at = node.now()
                taken, tries = await node.store_step(takeover_write(key, attempt, seen, takeover_at))
                if taken is None:
                    raise Reject("the store did not answer the takeover")
                if taken.get("applied") or ours(taken, tries, attempt):
                    return await run(body, key, "owner", seen, takeover_at)
                seen, decided_at, source = taken.get("previous"), takeover_at, "takeover"
                continue
            if decision == "process":
                if source == "start":
                    return await run(body, key, "owner", seen, decided_at)
                if source == "takeover":
                    break  # the record vanished under our fenced write: a new start write
                return await run(body, key, "no-record", seen, decided_at)
            if wait_began is None:
                wait_began = decided_at
            read = await wait_and_read(key, wait_began)
            if read is None:
                raise Reject("max_wait passed while another attempt held the record")
            seen, decided_at, source = read.get("previous"), node.now(), "poll"


node.run()
