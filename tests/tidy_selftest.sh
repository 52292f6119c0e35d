#!/usr/bin/env bash
# The tidy check must flag each kind of violation in the fixture (a check that never fires is a false green).
set -u
out=$("$1/scripts/tidy" "$1/tests/tidy-fixture" 2>&1)
rc=$?
fail=0
[ $rc -ne 0 ] || { echo "tidy passed on the fixture"; fail=1; }
for what in "real clock read" "std::rand" "random_device" "std distribution" "real-time sleep" "threads are banned" "iteration over unordered container 'table'"; do
  grep -qF "$what" <<< "$out" || { echo "tidy missed: $what"; fail=1; }
done
[ $fail -eq 0 ] && echo "tidy self-test: ok"
exit $fail
