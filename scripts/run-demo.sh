#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# run-demo.sh BUILD — what `make run` runs: chirpd on conf/chirpd.conf
# (backend auto), fed by chirp-feed with synthetic targets, results read by
# chirp-tap into a small peak finder; prints one line of stats per second
# and the range gates where targets were found. Ctrl-C stops everything
# cleanly.
#
# It ends by itself after RUN_SECONDS (default: 10 when stdin is not a
# terminal, e.g. in CI; otherwise it runs until Ctrl-C). Exit 0 when every
# target was found at its gate, 1 otherwise.
#
# Environment:
#   RUN_SECONDS=N     stop after N seconds
#   RUN_RATE=R        CPIs per second from chirp-feed (default 10)
#   RUN_TARGETS=LIST  GATE,AMP_DB[,DOPPLER] ..., one chirp-feed --target each,
#                     space-separated (default "500,-10 1500,-20 3000,-25")
#   RUN_SNR_DB=X      per-sample SNR of the strongest target (default 10)
#   RUN_CONF=FILE     configuration to start from (default conf/chirpd.conf)
#   RUN_SOCKET=PATH   control socket (default: a fresh one under
#                     $XDG_RUNTIME_DIR, or /tmp — also when run as root, so a
#                     production instance's /run/chirpd socket is never touched)
#   RUN_PLOT=FILE.png at the end, capture RUN_PLOT_CPIS (default 16) more CPIs
#                     as SigMF and draw them with scripts/chirp-plot (range-time
#                     intensity and range profile with the peaks annotated)
# Rings are /chirpd-demo-PID-in/-out, never the production names.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
BIN=$BUILD/bin
PY=${RUN_PY:-/usr/bin/python3}   # with numpy
for b in chirpd chirpctl chirp-feed chirp-tap; do
	[ -x "$BIN/$b" ] || { echo "run-demo: $BIN/$b is not built (run make)" >&2; exit 1; }
done
[ -x "$PY" ] || { echo "run-demo: needs $PY with numpy (make deps)" >&2; exit 1; }

RATE=${RUN_RATE:-10}
TARGETS=${RUN_TARGETS:-500,-10 1500,-20 3000,-25}
TARGET_ARGS=()
for t in $TARGETS; do TARGET_ARGS+=(--target "$t"); done
SNR=${RUN_SNR_DB:-10}
SRC_CONF=${RUN_CONF:-conf/chirpd.conf}
SECONDS_LIMIT=${RUN_SECONDS:-}
if [ -z "$SECONDS_LIMIT" ] && ! [ -t 0 ]; then
	SECONDS_LIMIT=10
fi

D=$(mktemp -d "${TMPDIR:-/tmp}/chirpd-demo.XXXXXX") || exit 1
if [ -n "${RUN_SOCKET:-}" ]; then
	SOCK=$RUN_SOCKET
elif [ "$(id -u)" != 0 ] && [ -n "${XDG_RUNTIME_DIR:-}" ] && [ -d "$XDG_RUNTIME_DIR" ]; then
	SOCK=$XDG_RUNTIME_DIR/chirpd-demo-$$.sock
else
	SOCK=$D/control.sock
fi
IN=/chirpd-demo-$$-in
OUT=/chirpd-demo-$$-out
CONF=$D/chirpd.conf
PIDS=()

cleanup() {
	trap - EXIT INT TERM
	local p
	[ -n "${FEED:-}" ] && kill -TERM "$FEED" 2>/dev/null
	[ -n "${TAP:-}" ] && kill -TERM "$TAP" 2>/dev/null
	if [ -n "${CHIRPD:-}" ] && kill -0 "$CHIRPD" 2>/dev/null; then
		kill -TERM "$CHIRPD"
		wait "$CHIRPD" 2>/dev/null
		echo "chirpd stopped (exit $?)"
	fi
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	rm -f "/dev/shm${IN}" "/dev/shm${OUT}" "$SOCK"
	rm -rf "$D"
}
trap cleanup EXIT
trap 'echo; echo "stopping..."; exit 0' INT TERM
trap 'exit 1' HUP PIPE   # a closed terminal or pipe still cleans up

# The shipped configuration with the demo's names (every other key as shipped).
awk -v sock="$SOCK" -v in_ring="$IN" -v out_ring="$OUT" '
	/^\[/ { sec = $0 }
	sec == "[daemon]" && /^control_socket[ =]/ { print "control_socket = " sock; next }
	sec == "[input]" && /^ring[ =]/ { print "ring = " in_ring; next }
	sec == "[output]" && /^ring[ =]/ { print "ring = " out_ring; next }
	sec == "[output]" && /^file[ =]/ { print "file ="; next }
	sec == "[metrics]" && /^listen[ =]/ { print "listen ="; next }
	{ print }' "$SRC_CONF" >"$CONF"
"$BIN/chirpd" --check -c "$CONF" >"$D/effective.conf" || { echo "run-demo: $SRC_CONF is not valid" >&2; exit 1; }

echo "chirpd demo: config $SRC_CONF, socket $SOCK, rings $IN -> $OUT"
echo "             targets $TARGETS at $RATE CPI/s, SNR $SNR dB; $( [ -n "$SECONDS_LIMIT" ] && echo "stops after $SECONDS_LIMIT s" || echo "Ctrl-C to stop")"
"$BIN/chirpd" -c "$CONF" 2>"$D/chirpd.log" &
CHIRPD=$!
for _ in $(seq 100); do
	"$BIN/chirpctl" -s "$SOCK" ping >/dev/null 2>&1 && break
	kill -0 "$CHIRPD" 2>/dev/null || { echo "chirpd failed to start:"; cat "$D/chirpd.log"; exit 1; }
	sleep 0.1
done
"$BIN/chirpctl" -s "$SOCK" status | grep -E "^(state|backend|device):" | sed "s/^/  /"

# Results: chirp-tap writes raw CPIs to a pipe; the peak finder keeps up,
# looks at the newest CPI once a second and writes the gates it found.
mkfifo "$D/results"
"$PY" - "$D/effective.conf" "$D/results" "$D/gates" <<'PYEOF' &
import configparser, os, signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C: the script stops us, no traceback
import numpy as np
cfg = configparser.ConfigParser(inline_comment_prefixes=("#",))
cfg.read(sys.argv[1])
C, P, R = (int(cfg["cpi"][k]) for k in ("channels", "pulses", "samples"))
mode = cfg["output"]["mode"]
dt = np.complex64 if mode == "complex" else np.float32
cpi = C * P * R * np.dtype(dt).itemsize
last = 0.0
with open(sys.argv[2], "rb", buffering=0) as f:
    buf = bytearray(cpi)
    view = memoryview(buf)
    while True:
        got = 0
        while got < cpi:
            n = f.readinto(view[got:])
            if not n:
                sys.exit(0)
            got += n
        now = time.monotonic()
        if now - last < 1.0:
            continue
        last = now
        y = np.frombuffer(buf, dtype=dt).reshape(C * P, R)
        if mode == "power_db":
            p = 10 ** (y.astype(np.float64) / 10)
        else:
            p = np.abs(y).astype(np.float64) ** 2
        prof = 10 * np.log10(p.mean(axis=0) + 1e-30)        # integrate the pulses
        floor = np.median(prof)
        peaks = [g for g in range(1, R - 1)
                 if prof[g] > floor + 15 and prof[g] >= prof[g - 1] and prof[g] > prof[g + 1]
                 and prof[g] == prof[max(0, g - 20):g + 21].max()]
        tmp = sys.argv[3] + ".tmp"
        with open(tmp, "w") as o:
            o.write(" ".join("%d(%+.0f dB)" % (g, prof[g] - floor) for g in peaks))
        os.replace(tmp, sys.argv[3])
PYEOF
PIDS+=($!)
"$BIN/chirp-tap" -c "$CONF" --out "$D/results" -q 2>"$D/tap.log" &
TAP=$!
sleep 0.5   # the consumer attaches first: no result meets an empty output ring
"$BIN/chirp-feed" -c "$CONF" "${TARGET_ARGS[@]}" --snr-db "$SNR" --rate "$RATE" -q 2>"$D/feed.log" &
FEED=$!

start=$(date +%s)
while :; do
	sleep 1
	kill -0 "$CHIRPD" 2>/dev/null || { echo "chirpd exited:"; tail "$D/chirpd.log"; exit 1; }
	"$BIN/chirpctl" -s "$SOCK" --json stats 2>/dev/null | "$PY" -c '
import json, sys
s = json.load(sys.stdin)
l = s["latency_last_interval"]
g = open(sys.argv[1]).read() if __import__("os").path.exists(sys.argv[1]) else "-"
print("%4ds  in %6d  out %6d  %6.1f CPI/s %7.2f MS/s  p50 %6.2f ms p99 %6.2f ms  drops %d overruns %d gaps %d | targets at %s"
      % (int(sys.argv[2]), s["cpis_in"], s["cpis_out"], s["cpis_per_s"], s["samples_per_s"] / 1e6,
         l["p50_ns"] / 1e6, l["p99_ns"] / 1e6, s["output_drops"], s["input_overruns"],
         s["sequence_gaps"], g or "-"))' "$D/gates" $(( $(date +%s) - start ))
	if [ -n "$SECONDS_LIMIT" ] && [ $(( $(date +%s) - start )) -ge "$SECONDS_LIMIT" ]; then
		break
	fi
done

# Optional picture: the live tap lets go of the output ring (one consumer
# per ring), a second tap records a short SigMF capture, chirp-plot draws it.
if [ -n "${RUN_PLOT:-}" ]; then
	kill -TERM "$TAP" 2>/dev/null; wait "$TAP" 2>/dev/null; TAP=
	if "$BIN/chirp-tap" -c "$CONF" -n "${RUN_PLOT_CPIS:-16}" --sigmf "$D/capture" \
		--timeout 30 -q 2>"$D/plot-tap.log" &&
	   "$PY" scripts/chirp-plot "$D/capture" -o "$RUN_PLOT" >"$D/plot.log" 2>&1; then
		echo "picture: $RUN_PLOT ($(head -n 1 "$D/plot.log"))"
	else
		echo "picture: failed: $(cat "$D/plot-tap.log" "$D/plot.log" 2>/dev/null | tail -n 3)"
		plot_failed=1
	fi
fi

found=$(cat "$D/gates" 2>/dev/null)
missing=
for t in $TARGETS; do
	g=${t%%,*}
	echo " $found" | grep -q " $g(" || missing="$missing $g"
done
if [ -z "$missing" ] && [ -z "${plot_failed:-}" ]; then
	echo "every target found at its gate: $found"
	exit 0
fi
echo "targets not found at gates:$missing (found: ${found:-none})"
exit 1
