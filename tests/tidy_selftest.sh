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
for what in "seventy_one_lines is 71 lines (a new function may have at most 70)" \
            "a_hundred_and_one_lines is 101 lines (the limit is 100): split it"; do
  grep -qF "$what" <<< "$out" || { echo "tidy missed: $what"; fail=1; }
done
if grep -qF "seventy_lines is" <<< "$out"; then echo "tidy flagged a function of exactly 70 lines"; fail=1; fi
[ $fail -eq 0 ] && echo "tidy self-test: ok"
exit $fail
