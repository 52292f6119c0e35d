#!/usr/bin/env bash
# The regression corpus of hostile inputs: every input that once crashed, hung or exhausted lethe (deep keys,
# huge lists and keys, durations near the largest time, special files as input, UTF-8 that toml++ mishandles,
# tune's extreme options). Each case runs the lethe binary under a time limit and an address-space limit and
# must end with one of the exit codes it allows (0, 1 or 2 unless it says otherwise), never by a signal or
# the time limit. Prints one line per case.
#   tests/fuzz/hostile_inputs.sh LETHE SOURCE_DIR [--no-memory-limit] [CASE_PATTERN]
# --no-memory-limit: for sanitizer builds, whose shadow memory needs terabytes of address space.
set -uo pipefail
lethe=$(realpath "$1")
source_dir=$(realpath "$2")
memory_limit=4000000000  # bytes of address space
seconds=120  # a hang detector: the slowest case takes about 11 s on an idle core
shift 2
if [ "${1:-}" = "--no-memory-limit" ]; then
  memory_limit=""
  seconds=180
  shift
fi
pattern=${1:-}
S=$source_dir/scenarios
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

LETHE_SOURCE_DIR=$source_dir python3 - <<'PY'
base = '[scenario]\nname = "t"\n\n[protocol]\nkind = "mnemosyne"\nmax_processing_time = "30s"\nttl = "7d"\n\n'
def write(name, text, mode="w"):
    with open(name, mode) as f:
        f.write(text)
write("dotted-key.toml", base + ".".join(["a"] * 60000) + " = 1\n")
write("table-header.toml", base + "[" + ".".join(["a"] * 60000) + "]\nx = 1\n")
write("array-of-tables-header.toml", base + "[[" + ".".join(["a"] * 60000) + "]]\nx = 1\n")
write("nested-arrays.toml", base + "[topology]\nx = " + "[" * 100000 + "]" * 100000 + "\n")
write("nested-inline-tables.toml", base + "[topology]\nx = " + "{a=" * 100000 + "1" + "}" * 100000 + "\n")
names = ", ".join('"p%d"' % i for i in range(100000))
write("processors.toml", base + "[topology]\nprocessors = [%s, \"p5\"]\n" % names)
write("partitions.toml", base + "".join('[[network.partition]]\nat = "1s"\nfor = "1s"\nbetween = ["consumers", "store"]\n'
                                        for _ in range(20000)))
write("long-key.toml", base + "x" * 3000000 + " = 1\n")
write("too-large.toml", base + "# " + "x" * (5 << 20) + "\n")
write("utf8-unreachable.toml", b"\xc7\x9b", "wb")
write("utf8-invalid.toml", base.encode() + b"\xff\xfe = 1\n", "wb")
write("control-in-header.toml", b"[\t\x00\x01]\n", "wb")
write("garbage-samples.txt", bytes(range(256)) * 64, "wb")
write("huge-samples.txt", "1ms\n" * 100 + "9223372036854775807ns\n-5ms\nnan\n1e308s\n")
write("bom-samples.txt", b"\xef\xbb\xbf" + b"12ms\n" * 200, "wb")
write("explore-inner.toml", base + '[explore]\n"saga.steps" = "0..8"\n')
write("explore-wide.toml", base + '[explore]\n"workload.messages" = "1..100000000"\n')
import pathlib, os
source = os.environ["LETHE_SOURCE_DIR"]
write("bom-scenario.toml", b"\xef\xbb\xbf" + pathlib.Path(source, "scenarios/blind-completion.toml").read_bytes(), "wb")
PY
mkfifo fifo.toml fifo-samples
# One argument may hold at most 128 KiB (Linux's MAX_ARG_STRLEN): 15,000 names.
huge_processors=$(python3 -c 'print(",".join("p%d" % i for i in range(15000)))')
deep_set_key=$(python3 -c 'print(".".join(["a"] * 60000))')

# name | allowed exit codes | lethe arguments (eval'd: quote what has spaces) [| address-space limit]
# Exit 5 (resources exhausted) is allowed only where running out of memory is the expected end, and then
# standard error must say "out of memory"; those cases get a smaller limit to get there quickly. Exit 3 (lethe
# broke) is never allowed.
cases=()
near_max=9223372036s  # 2^63 ns, just under: once an overflow of virtual time
for key_and_file in network.latency:blind-completion network.rpc_timeout:blind-completion \
  workload.processing_time:blind-completion workload.redelivery.delay:blind-completion \
  topology.visibility_timeout:queue-visibility-timeout topology.client_timeout:webhook-dedupe-inbox \
  faults.restart_after:mnemosyne-lossy-crashes faults.pause_for:gc-pause-takeover store.latency:blind-completion \
  protocol.max_processing_time:herd-takeover-conditional protocol.ttl:ttl-lazy-eviction \
  sink.latency:memoized-email-120-callers sink.timeout:memoized-email-120-callers; do
  key=${key_and_file%%:*}
  file=${key_and_file#*:}
  cases+=("near-max $key|0 1 2|run $S/$file.toml --set $key=$near_max")
  case $key in
    # Polling for 3650 days records a history that grows with the run (the memory a long run needs).
    protocol.max_processing_time)
      cases+=("largest $key|0 1 2 5|run $S/$file.toml --set $key=3650d|1000000000") ;;
    # 120 callers each wait out the 60 s visibility timeout, for two simulated hours: a 1 s poll keeps the
    # same waits (and the same bound on memory) at a fiftieth of the polls, about 1 s instead of a minute.
    sink.latency)
      cases+=("largest $key|0 1 2 5|run $S/$file.toml --set $key=3650d --set protocol.poll=1s|1000000000") ;;
    *) cases+=("largest $key|0 1 2|run $S/$file.toml --set $key=3650d") ;;
  esac
done
cases+=(
  "dotted key of 60,000 parts|2|run dotted-key.toml"
  "table header of 60,000 parts|2|run table-header.toml"
  "[[header]] of 60,000 parts|2|run array-of-tables-header.toml"
  "arrays nested 100,000 deep|2|run nested-arrays.toml"
  "inline tables nested 100,000 deep|2|run nested-inline-tables.toml"
  "--set key of 60,000 parts|2|run $S/blind-completion.toml --set $deep_set_key=1"
  "100,000-entry processors list|2|run processors.toml"
  "15,000 processors in --set|2|run $S/blind-completion.toml --set topology.processors=$huge_processors"
  "20,000 [[network.partition]]|2|run partitions.toml"
  "3 MB unknown key|2|run long-key.toml"
  "5 MiB scenario file|2|run too-large.toml"
  "2-byte file \\xc7\\x9b|2|run utf8-unreachable.toml"
  "invalid UTF-8|2|run utf8-invalid.toml"
  "control characters in a header|2|run control-in-header.toml"
  "scenario /dev/zero|2|run /dev/zero"
  "scenario FIFO|2|run fifo.toml"
  "scenario folder|2|run ."
  "empirical(file=/dev/zero)|2|run $S/blind-completion.toml --set 'network.latency=empirical(file=/dev/zero)'"
  "empirical(file=FIFO)|2|run $S/blind-completion.toml --set 'network.latency=empirical(file=$work/fifo-samples)'"
  "empirical(file=garbage)|2|run $S/blind-completion.toml --set 'network.latency=empirical(file=$work/garbage-samples.txt)'"
  # Kafka members keep their fibers while idle, so their stacks alone exceed 4 GB: refused at load, at the key,
  # with the number that fits. A queue's idle consumers hold no stack: a million of them run under the limit.
  "100,000 kafka members (stacks past the limit)|2|run $S/kafka-gc-pause-evicted-none.toml --set topology.consumers=100000"
  "1,000,000 kafka members (stacks past the limit)|2|run $S/kafka-gc-pause-evicted-none.toml --set topology.consumers=1000000"
  "suite -j 2 of 200,000 kafka members|2|suite $S/kafka-gc-pause-evicted-none.toml --seeds 2 -j 2 --set topology.consumers=200000"
  "1,000,000 queue consumers (idle ones hold no stack)|0|run $S/check-then-insert-race.toml --set topology.consumers=1000000"
  # Within the load's bound, beyond the memory the run needs: resources exhausted, not an internal error.
  "run out of memory mid-run|5|run $S/kafka-gc-pause-evicted-none.toml --set topology.consumers=5000 --set workload.messages=100000 --set workload.rate=1000000/s|400000000"
  "tune --target-duplicates 1e-17|2|tune --processing-time 'exponential(mean=200ms)' --target-duplicates 1e-17 --no-confirm --out tune1"
  "tune --crash-rate 1e308/s|2|tune --processing-time 'exponential(mean=200ms)' --crash-rate 1e308/s --no-confirm --out tune2"
  "tune --samples /dev/zero|2|tune --samples /dev/zero --no-confirm --out tune3"
  "tune --samples FIFO|2|tune --samples fifo-samples --no-confirm --out tune4"
  "tune --samples garbage|2|tune --samples garbage-samples.txt --no-confirm --out tune5"
  "tune --samples near-max values|0 1 2|tune --samples huge-samples.txt --no-confirm --out tune6"
  # A case whose name starts with "secret" must also print no S3cr3tPW (live mode's credentials are masked).
  "secret: unquoted conninfo password|2|live --store postgres --target host=127.0.0.1 port=1 password=S3cr3tPW"
  "secret: unquoted conninfo password = value|2|live --store postgres --target host=127.0.0.1 password = S3cr3tPW"
  "secret: conninfo password, bad option|2|live --store postgres --target 'host=127.0.0.1 port=1 password=S3cr3tPW' --workers x"
  "secret: URI password|2|live --store postgres --target 'postgresql://u:S3cr3tPW@127.0.0.1:1/db'"
  "secret: URI password, extra word|2|live --store postgres --target 'postgresql://u:S3cr3tPW@127.0.0.1:1/db' extra"
  "secret: Redis URL password|2|live --store redis --target 'redis://:S3cr3tPW@127.0.0.1:1'"
  "secret: password as the store|2|live --store password=S3cr3tPW"
  "secret: unix socket URL ?password=|2|live --store redis --target 'unix:///nonexistent/redis.sock?password=S3cr3tPW'"
  "secret: unix socket URL :PW@|2|live --store redis --target 'unix://:S3cr3tPW@/nonexistent/redis.sock'"
  "secret: unix socket URL in LETHE_REDIS_URL|2|live --store redis LETHE_REDIS_URL=unix://alice:S3cr3tPW@/nonexistent/redis.sock"
  "secret: Redis ACL user|2|live --store redis --target 'redis://alice:S3cr3tPW@127.0.0.1:1'"
  # Fault loops: a tiny interval would wake the loop billions of times.
  "faults.pause_every = 1ns|2|run $S/gc-pause-takeover.toml --set faults.pause_every=1ns"
  "faults.rebalance_every = 1ns|2|run $S/check-then-insert-race.toml --set topology.source=kafka --set faults.rebalance_every=1ns"
  "faults.crash_every = 1ns|2|run $S/blind-completion.toml --set faults.crash_every=1ns"
  # [explore]: every value a range can draw is checked at load.
  "[explore] range with a bad inner value|2|run explore-inner.toml"
  "[explore] range of 10^8 values|0 1 2|run explore-wide.toml"
  # A UTF-8 byte order mark at the start of an input file is not its first character.
  "scenario starting with a BOM|0 1|run bom-scenario.toml"
  "tune --samples starting with a BOM|0 1|tune --samples bom-samples.txt --target-duplicates 0.01 --no-confirm --out tune7"
  # Callers make requests as they go: memory follows the requests made, not workload.messages.
  "clients source, 10^12 messages|0 1|run $S/webhook-no-dedupe.toml --set workload.messages=1000000000000 --seed 1"
  # Work that grew faster than the run: a rebalance per pause of 5,000 members over 8 partitions (each woke every
  # member), and a heavy tail that leaves thousands of store calls unanswered for the linearizability check.
  "kafka: 5,000 members paused past session_timeout|0 1|run $S/kafka-gc-pause-evicted-none.toml --set topology.consumers=5000 --set workload.messages=5 --set 'topology.commit=interval(1h)' --seed 1"
  "network.latency = pareto(shape=0.01), store checked|0 1|run $S/producer-retry-mnemosyne.toml --set 'network.latency=pareto(scale=1ms, shape=0.01)' --seed 1"
  # External nodes (tests/external-engine/raw_node.py): bad output ends with exit 2 naming the node.
  "external node floods requests|2|run $source_dir/tests/external-engine/raw-effect.toml --set external.command=python3,raw_node.py,flood"
  "external node writes a 20 MiB line|2|run $source_dir/tests/external-engine/raw-effect.toml --set external.command=python3,raw_node.py,long-line"
  "external node writes non-UTF-8|2|run $source_dir/tests/external-engine/raw-effect.toml --set external.command=python3,raw_node.py,bad-utf8"
  "30 external nodes that never start|2|run $source_dir/tests/external-engine/raw-effect.toml --set topology.consumers=30 --set external.command=sleep,3600 --set external.node_timeout=1s"
)

failures=0
ran=0
for entry in "${cases[@]}"; do
  IFS='|' read -r name allowed arguments case_limit <<<"$entry"
  if [ -n "$pattern" ] && [[ "$name" != *$pattern* ]]; then continue; fi
  if [ -z "$memory_limit" ] && [ -n "$case_limit" ]; then
    printf 'skip %-45s (needs a memory limit)\n' "$name"
    continue
  fi
  ran=$((ran + 1))
  limit=()
  [ -n "$memory_limit" ] && limit=(prlimit --as="${case_limit:-$memory_limit}" --)
  start=${EPOCHREALTIME/./}
  environment=()
  if [[ "$arguments" == *" LETHE_REDIS_URL="* ]]; then  # a variable for lethe, not an argument
    environment=("${arguments##* }")
    arguments=${arguments% *}
  fi
  eval "env ${environment[*]} timeout -s KILL $seconds ${limit[*]} \"\$lethe\" $arguments" >out.log 2>err.log </dev/null
  code=$?
  elapsed_ms=$(((${EPOCHREALTIME/./} - start) / 1000))
  elapsed=$(printf '%d.%02d' $((elapsed_ms / 1000)) $((elapsed_ms % 1000 / 10)))
  verdict=ok
  what="exit $code"
  if [ "$code" -ge 128 ]; then
    what="signal $((code - 128))$([ "$code" -eq 137 ] && echo " (killed at the ${seconds}s limit, or by the OOM killer)")"
  fi
  if [[ " $allowed " != *" $code "* ]] || { [ "$code" -eq 5 ] && ! grep -q "out of memory" err.log; } ||
    grep -q "internal error" err.log ||
    { [[ "$name" == secret* ]] && grep -q S3cr3tPW out.log err.log; } ||
    ! iconv -f UTF-8 -t UTF-8 err.log >/dev/null 2>&1; then  # what lethe prints is UTF-8, whatever it read
    verdict=FAIL
    failures=$((failures + 1))
  fi
  first=$(head -c 300 err.log | tr -d '\0' | head -n 1)
  printf '%-4s %-45s %-10s %6ss  %s\n' "$verdict" "$name" "$what" "$elapsed" "${first:0:140}"
done
echo "hostile inputs: $ran cases, $failures failed"
[ "$ran" -gt 0 ] && [ "$failures" -eq 0 ]
