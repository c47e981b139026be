#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# python_chirpring.sh — the chirpring Python package (src/ring/python/chirpring) on
# this build's libchirpring: tests/python/test_chirpring.py, with a chirpd
# (CPU backend) running for the test that compares the package's view of
# chirpd's output with what chirp-tap writes. The Python file's closing
# "counts: N passed, N failed, N skipped" line is what scripts/test-all.sh
# adds to its total. In the ASan build the instrumented library is loaded
# into python3 with the sanitizer runtimes preloaded (leak checks off:
# CPython keeps its allocations to exit).
. "$(dirname "$0")/lib.sh"
e2e_init python_chirpring
e2e_need chirp-feed chirp-tap
[ -x "$PY" ] || e2e_skip "$PY not found"
"$PY" -c 'import numpy' 2>/dev/null || e2e_skip "$PY has no numpy (apt-get install python3-numpy)"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
LIB=$BUILD/lib/libchirpring.so.3
[ -f "$LIB" ] || e2e_fail "$LIB was not built"

e2e_python_preload

e2e_config output.slots=32
e2e_start_chirpd

env ${PRE:+LD_PRELOAD=$PRE} PYTHONPATH="$SRC/src/ring/python" CHIRPRING_LIBRARY="$LIB" CHIRP_BIN="$BIN" \
	CHIRP_UNIQ="$E2E_UNIQ-py" CHIRPD_CONF="$CONF" CHIRPD_OUT_RING="$OUT_RING" \
	PYTHONDONTWRITEBYTECODE=1 "$PY" "$SRC/tests/python/test_chirpring.py"
rc=$?
[ $rc -eq 0 ] || e2e_fail "test_chirpring.py exited $rc"

# scripts/chirp-plot --ring: the picture straight from chirpd's output ring
# through the package; the strongest peak is the target's gate. Then --live
# redraws until SIGINT. (Normal build only: the ASan runtime is not preloaded
# into matplotlib's python here, and the plot adds nothing under ASan.)
if [ -z "$PRE" ] && "$PY" -c 'import matplotlib' 2>/dev/null; then
	plot() { env PYTHONPATH="$SRC/src/ring/python" CHIRPRING_LIBRARY="$LIB" "$PY" "$SRC/scripts/chirp-plot" "$@"; }
	plot --ring "$OUT_RING" --count 6 --peaks 1 -o "$T/rti.png" --json "$T/peaks.json" --timeout 30 \
		>"$T/plot.log" 2>&1 &
	pp=$!; e2e_track $pp
	e2e_wait_consumer "$OUT_RING" $pp
	"$CHIRP_FEED" -c "$CONF" --target 300,-6 --snr-db 10 --count 6 --block -q 2>"$T/feed.log" ||
		e2e_fail "feed for chirp-plot: $(cat "$T/feed.log")"
	wait $pp || e2e_fail "chirp-plot --ring exited $?: $(cat "$T/plot.log")"
	grep -q '^peak 1: gate 300 ' "$T/plot.log" || e2e_fail "chirp-plot --ring peaks: $(cat "$T/plot.log")"
	[ "$(head -c 8 "$T/rti.png" | od -An -tx1 | tr -d ' ')" = 89504e470d0a1a0a ] || e2e_fail "rti.png is not a PNG"
	"$PY" -c 'import json, sys; p = json.load(open(sys.argv[1])); assert p["capture"] == sys.argv[2] and p["peaks"][0]["gate"] == 300, p' \
		"$T/peaks.json" "$OUT_RING" || e2e_fail "peaks.json: $(cat "$T/peaks.json")"
	# --live: at least two pictures from a running feed, then Ctrl-C ends it cleanly.
	"$CHIRP_FEED" -c "$CONF" --target 300,-6 --rate 40 -q 2>"$T/feed.log" &
	fp=$!; e2e_track $fp
	# (A background job of a script starts with SIGINT ignored, and python
	# then leaves it so; restore the default before exec, as a terminal has it.)
	"$PY" -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])' \
		env PYTHONPATH="$SRC/src/ring/python" CHIRPRING_LIBRARY="$LIB" "$PY" "$SRC/scripts/chirp-plot" \
		--ring "$OUT_RING" --count 4 --live --interval 0.3 --peaks 1 -o "$T/live.png" >"$T/live.log" 2>&1 &
	pp=$!; e2e_track $pp
	pictures_ge() { [ "$(grep -c '^wrote ' "$T/live.log")" -ge "$1" ]; }   # read inside e2e_wait
	e2e_wait 30 pictures_ge 3 || e2e_fail "chirp-plot --live: $(cat "$T/live.log")"
	kill -INT $pp; wait $pp; rc=$?
	[ $rc -eq 0 ] || e2e_fail "chirp-plot --live after SIGINT exited $rc: $(tail -5 "$T/live.log")"
	kill $fp; wait $fp 2>/dev/null
	[ -f "$T/live.png" ] && [ ! -e "$T/live.png.tmp.png" ] || e2e_fail "chirp-plot --live left no picture, or a temporary"
	e2e_log "chirp-plot --ring and --live ok"
fi
e2e_stop_chirpd || e2e_fail "chirpd exited $?"
e2e_pass
