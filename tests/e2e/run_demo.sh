#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# run_demo.sh — what `make run` runs (scripts/run-demo.sh), non-interactive:
# the radar chain on the CPU backend over moving targets at four speeds must
# print detections (range, velocity, SNR) as they arrive, give the live
# view's URL (which answers while the demo runs), detect every target at its
# velocity, write the PNG of the last map with detections circled, stop
# cleanly (chirpd exit 0) and leave no ring or socket behind.
. "$(dirname "$0")/lib.sh"
e2e_init demo
e2e_need chirp-feed
e2e_need chirp-tap
[ -x "$PY" ] || e2e_skip "$PY not found"
"$PY" -c 'import matplotlib' 2>/dev/null || e2e_skip "matplotlib not installed for $PY"

port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
before=$(ls /dev/shm | grep -c '^chirpd-demo-' || true)
RUN_SECONDS=$((6 * E2E_SLOW)) RUN_PLOT="$T/demo.png" RUN_PY="$PY" RUN_PORT=$port \
	timeout -k 5 $((90 * E2E_SLOW)) "$(cd "$(dirname "$0")/../.." && pwd)/scripts/run-demo.sh" "$BUILD" </dev/null >"$T/demo.log" 2>&1 &
DEMO=$!
e2e_track $DEMO
e2e_wait $((20 * E2E_SLOW)) grep -q "stats:" "$T/demo.log" || e2e_fail "the demo did not start: $(tail "$T/demo.log")"
curl -sS -f -m 5 "http://127.0.0.1:$port/live/frame.json" >"$T/frame.json" ||
	e2e_fail "the live view did not answer while the demo ran"
"$PY" -c 'import json, sys; f = json.load(open(sys.argv[1])); assert f["map"] and f["maps"] == 1 and f["det"], f' \
	"$T/frame.json" || e2e_fail "the live view's frame: $(head -c 300 "$T/frame.json")"
wait $DEMO
rc=$?
[ $rc -eq 0 ] || e2e_fail "run-demo exited $rc: $(tail -n 15 "$T/demo.log")"
grep -q "^live view: http://127.0.0.1:$port/live" "$T/demo.log" || e2e_fail "no live view URL"
grep -Eq '^ +range +[0-9.]+ m +velocity +\+12[0-9]\.[0-9] m/s +SNR +[0-9.]+ dB' "$T/demo.log" ||
	e2e_fail "no detection line for the +120 m/s target: $(grep -m3 range "$T/demo.log")"
grep -q '^every target detected at its velocity (m/s): +120 +60 -45 +15' "$T/demo.log" ||
	e2e_fail "targets not detected: $(tail -n 5 "$T/demo.log")"
grep -q 'chirpd stopped (exit 0)' "$T/demo.log" || e2e_fail "chirpd did not stop cleanly: $(tail -n 5 "$T/demo.log")"
grep -Eq "^picture: $T/demo.png \(the last map; [1-9][0-9]* detections circled\)" "$T/demo.log" ||
	e2e_fail "picture not made: $(grep picture "$T/demo.log")"
[ "$(head -c 8 "$T/demo.png" | od -An -c | tr -d ' ')" = '211PNG\r\n032\n' ] || e2e_fail "$T/demo.png is not a PNG"
lines=$(grep -c ' stats: ' "$T/demo.log")
[ "$lines" -ge 3 ] || e2e_fail "expected a stats line per second, got $lines"
grep -q 'lost [1-9]' "$T/demo.log" && e2e_fail "the demo lost CPIs: $(grep -m1 'lost [1-9]' "$T/demo.log")"
after=$(ls /dev/shm | grep -c '^chirpd-demo-' || true)
[ "$after" -le "$before" ] || e2e_fail "run-demo left rings in /dev/shm"
e2e_pass
