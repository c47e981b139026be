#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# run_demo.sh — what `make run` runs (scripts/run-demo.sh), non-interactive:
# chirpd on conf/chirpd.conf with chirp-feed's three targets must find every
# target at its gate, save the picture asked for with RUN_PLOT, stop cleanly
# (chirpd exit 0) and leave no ring or socket behind.
. "$(dirname "$0")/lib.sh"
e2e_init demo
e2e_need chirp-feed
e2e_need chirp-tap
[ -x "$PY" ] || e2e_skip "$PY not found"
"$PY" -c 'import matplotlib' 2>/dev/null || e2e_skip "matplotlib not installed for $PY"

before=$(ls /dev/shm | grep -c '^chirpd-demo-' || true)
RUN_SECONDS=$((4 * E2E_SLOW)) RUN_PLOT="$T/demo.png" RUN_PY="$PY" \
	timeout -k 5 $((60 * E2E_SLOW)) "$(cd "$(dirname "$0")/../.." && pwd)/scripts/run-demo.sh" "$BUILD" </dev/null >"$T/demo.log" 2>&1
rc=$?
[ $rc -eq 0 ] || e2e_fail "run-demo exited $rc: $(tail -n 15 "$T/demo.log")"
grep -q '^every target found at its gate: 500(.*1500(.*3000(' "$T/demo.log" ||
	e2e_fail "targets not reported at their gates: $(tail -n 5 "$T/demo.log")"
grep -q 'chirpd stopped (exit 0)' "$T/demo.log" || e2e_fail "chirpd did not stop cleanly: $(tail -n 5 "$T/demo.log")"
grep -q "^picture: $T/demo.png (peak 1: gate 500 " "$T/demo.log" ||
	e2e_fail "picture not made or strongest peak not at gate 500: $(grep picture "$T/demo.log")"
[ "$(head -c 8 "$T/demo.png" | od -An -c | tr -d ' ')" = '211PNG\r\n032\n' ] || e2e_fail "$T/demo.png is not a PNG"
lines=$(grep -c ' CPI/s ' "$T/demo.log")
[ "$lines" -ge 2 ] || e2e_fail "expected a stats line per second, got $lines"
after=$(ls /dev/shm | grep -c '^chirpd-demo-' || true)
[ "$after" -le "$before" ] || e2e_fail "run-demo left rings in /dev/shm"
e2e_pass
