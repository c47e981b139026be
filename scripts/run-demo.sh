#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# run-demo.sh BUILD — what `make run` runs: the radar chain on the CPU
# backend (pulse compression, Doppler, CFAR) over moving targets in noise.
#   - scripts/demo-scene.py makes a scene of targets at several speeds
#     (closing and opening), which chirp-feed replays in a loop;
#   - chirpd runs conf/chirpd.conf with the demo's radar (every other key
#     as shipped) and serves the live view: its URL is printed at the start
#     (open it in a browser: the map, the detections, the range-time tracks);
#   - the detections are printed as they arrive (once a second, the newest
#     CPI's: range, velocity, SNR), with a line of stats;
#   - at the end, a PNG of the last map with its detections circled
#     (scripts/chirp-plot --map) is written to RUN_PLOT.
# Ctrl-C stops everything cleanly.
#
# It ends by itself after RUN_SECONDS (default: 10 when stdin is not a
# terminal, e.g. in CI; otherwise it runs until Ctrl-C). Exit 0 when every
# target was detected at its velocity in the last seconds and the picture
# was made, 1 otherwise.
#
# Environment:
#   RUN_SECONDS=N     stop after N seconds
#   RUN_RATE=R        CPIs per second (default 20)
#   RUN_TARGETS=LIST  RANGE_M:VELOCITY_MPS:AMP_DBFS ..., space-separated,
#                     velocity positive closing (default "4000:120:-38
#                     7000:60:-42 11000:-45:-40 13000:15:-44"); noise -40 dBFS
#   RUN_PORT=P        the live view's port on 127.0.0.1 (default 9464, or a
#                     free one when 9464 is taken)
#   RUN_PLOT=FILE.png the last map's picture (default BUILD/demo-map.png;
#                     empty: none)
#   RUN_CONF=FILE     configuration to start from (default conf/chirpd.conf)
#   RUN_SOCKET=PATH   control socket (default: a fresh one under
#                     $XDG_RUNTIME_DIR, or /tmp — also when run as root, so a
#                     production instance's /run/chirpd socket is never touched)
# Rings are /chirpd-demo-PID-in/-out/-det, never the production names.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
BIN=$BUILD/bin
PY=${RUN_PY:-/usr/bin/python3}   # with numpy and matplotlib
for b in chirpd chirpctl chirp-feed chirp-tap; do
	[ -x "$BIN/$b" ] || { echo "run-demo: $BIN/$b is not built (run make)" >&2; exit 1; }
done
[ -x "$PY" ] && "$PY" -c 'import numpy' 2>/dev/null ||
	{ echo "run-demo: needs $PY with numpy (make deps)" >&2; exit 1; }

RATE=${RUN_RATE:-20}
TARGETS=${RUN_TARGETS:-4000:120:-38 7000:60:-42 11000:-45:-40 13000:15:-44}
SRC_CONF=${RUN_CONF:-conf/chirpd.conf}
PLOT=${RUN_PLOT-$BUILD/demo-map.png}
SECONDS_LIMIT=${RUN_SECONDS:-}
if [ -z "$SECONDS_LIMIT" ] && ! [ -t 0 ]; then
	SECONDS_LIMIT=10
fi
# The demo's radar: 1 channel, 32 pulses at 2 kHz PRF, 1024 gates of 15 m
# (10 MS/s), a 10 us LFM of 5 MHz, carrier 1 GHz: 9.37 m/s per Doppler
# bin, +-150 m/s unambiguous, 15.4 km of range.
CH=1 PULSES=32 GATES=1024 FS=10e6 BW=5e6 TAU=10e-6 PRF=2000 FC=1e9

port_free() { "$PY" -c 'import socket, sys; s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1])))' "$1" 2>/dev/null; }
PORT=${RUN_PORT:-9464}
if [ -z "${RUN_PORT:-}" ] && ! port_free "$PORT"; then
	PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
fi
URL=http://127.0.0.1:$PORT/live

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
DET=/chirpd-demo-$$-det
CONF=$D/chirpd.conf
PIDS=()

cleanup() {
	trap - EXIT INT TERM
	local p
	[ -n "${FEED:-}" ] && kill -TERM "$FEED" 2>/dev/null
	[ -n "${TAP:-}" ] && kill -TERM "$TAP" 2>/dev/null
	[ -n "${DETTAP:-}" ] && kill -TERM "$DETTAP" 2>/dev/null
	if [ -n "${CHIRPD:-}" ] && kill -0 "$CHIRPD" 2>/dev/null; then
		kill -TERM "$CHIRPD"
		wait "$CHIRPD" 2>/dev/null
		echo "chirpd stopped (exit $?)"
	fi
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	rm -f "/dev/shm${IN}" "/dev/shm${OUT}" "/dev/shm${DET}" "$SOCK"
	rm -rf "$D"
}
trap cleanup EXIT
trap 'echo; echo "stopping..."; exit 0' INT TERM
trap 'exit 1' HUP PIPE   # a closed terminal or pipe still cleans up

# The shipped configuration with the demo's radar and names.
cat >"$D/overrides" <<EOF
daemon.control_socket=$SOCK
input.ring=$IN
cpi.channels=$CH
cpi.pulses=$PULSES
cpi.samples=$GATES
waveform.type=lfm
waveform.sample_rate_hz=$FS
waveform.bandwidth_hz=$BW
waveform.pulse_width_s=$TAU
processing.backend=cpu
output.mode=map_power
output.ring=$OUT
output.file=
radar.prf_hz=$PRF
radar.carrier_hz=$FC
doppler.enable=true
cfar.enable=true
cfar.max_detections=64
detections.ring=$DET
detections.file=
metrics.listen=127.0.0.1:$PORT
live.enable=true
EOF
awk -F= 'NR == FNR { v[$1] = substr($0, length($1) + 2); next }
	/^\[/ { sec = substr($0, 2, length($0) - 2) }
	{ k = $1; sub(/[ \t]+$/, "", k) }
	(sec "." k) in v { print k " = " v[sec "." k]; next }
	{ print }' "$D/overrides" "$SRC_CONF" >"$CONF"
"$BIN/chirpd" --check -c "$CONF" >"$D/effective.conf" || { echo "run-demo: $SRC_CONF is not valid" >&2; exit 1; }

SCENE_ARGS=()
for t in $TARGETS; do SCENE_ARGS+=(--target "$t"); done
"$PY" scripts/demo-scene.py "$D/scene.cf32" --channels $CH --pulses $PULSES --samples $GATES \
	--fs $FS --bandwidth $BW --pulse-width $TAU --prf $PRF --carrier $FC --rate "$RATE" \
	--seconds 10 "${SCENE_ARGS[@]}" >"$D/scene.log" || { cat "$D/scene.log"; exit 1; }

echo "chirpd demo: radar chain on the CPU backend, config $SRC_CONF with the demo's radar, socket $SOCK"
echo "             targets (range m:velocity m/s:dBFS) $TARGETS in -40 dBFS noise, $RATE CPI/s; $( [ -n "$SECONDS_LIMIT" ] && echo "stops after $SECONDS_LIMIT s" || echo "Ctrl-C to stop")"
"$BIN/chirpd" -c "$CONF" 2>"$D/chirpd.log" &
CHIRPD=$!
for _ in $(seq 100); do
	"$BIN/chirpctl" -s "$SOCK" ping >/dev/null 2>&1 && break
	kill -0 "$CHIRPD" 2>/dev/null || { echo "chirpd failed to start:"; cat "$D/chirpd.log"; exit 1; }
	sleep 0.1
done
"$BIN/chirpctl" -s "$SOCK" status | grep -E "^(state|backend|device):" | sed "s/^/  /"
echo "live view: $URL  (open it in a browser while the demo runs)"

# Detections: chirp-tap prints each CPI's list as JSON; the printer shows the
# newest once a second, keeps every line for the picture, and notes the
# velocities seen lately.
"$BIN/chirp-tap" -c "$CONF" --jsonl 2>"$D/dettap.log" | "$PY" -u -c '
import json, os, signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C: the script stops us
keep, seen_path = open(sys.argv[1], "w", buffering=1), sys.argv[2]
start = last = time.monotonic()
seen = []
for line in sys.stdin:
    keep.write(line)
    d = json.loads(line)
    now = time.monotonic()
    dets = d.get("detections", [])
    seen = [s for s in seen if now - s[0] < 3] + [(now, x["velocity_mps"]) for x in dets
                                                  if x.get("snr_db", 0) >= 13 and x.get("velocity_mps") is not None]
    if now - last < 1.0:
        continue
    last = now
    with open(seen_path + ".tmp", "w") as o:
        o.write(" ".join("%.2f" % v for _, v in seen))
    os.replace(seen_path + ".tmp", seen_path)
    print("%4ds  CPI %d: %d detection%s" % (now - start, d["seq"], len(dets), "" if len(dets) == 1 else "s"))
    for x in sorted(dets, key=lambda x: x["range_m"]):
        v = x["velocity_mps"]
        print("        range %8.1f m   velocity %+7.1f m/s   SNR %5.1f dB"
              % (x["range_m"], v if v is not None else float("nan"), x["snr_db"]))
' "$D/det.jsonl" "$D/seen" &
DETTAP=$!   # the printer; its chirp-tap ends at its next write once it is gone
"$BIN/chirp-tap" -c "$CONF" --drain -q 2>"$D/tap.log" &
TAP=$!
sleep 0.5   # the consumers attach first: no result meets an empty ring
"$BIN/chirp-feed" -c "$CONF" --file "$D/scene.cf32" --loop --rate "$RATE" -q 2>"$D/feed.log" &
FEED=$!

start=$(date +%s)
while :; do
	sleep 1
	kill -0 "$CHIRPD" 2>/dev/null || { echo "chirpd exited:"; tail "$D/chirpd.log"; exit 1; }
	"$BIN/chirpctl" -s "$SOCK" --json stats 2>/dev/null | "$PY" -c '
import json, sys
s = json.load(sys.stdin)
l = s["latency_last_interval"]
print("%4ds  stats: %6.1f CPI/s  p99 %6.2f ms  in %d out %d  lost %d (drops %d overruns %d gaps %d)  live view %s"
      % (int(sys.argv[1]), s["cpis_per_s"], l["p99_ns"] / 1e6, s["cpis_in"], s["cpis_out"],
         s["output_drops"] + s["input_overruns"] + s["sequence_gaps"], s["output_drops"],
         s["input_overruns"], s["sequence_gaps"], sys.argv[2]))' $(( $(date +%s) - start )) "$URL"
	if [ -n "$SECONDS_LIMIT" ] && [ $(( $(date +%s) - start )) -ge "$SECONDS_LIMIT" ]; then
		break
	fi
done

# The picture: the drain lets go of the output ring (one consumer per
# ring), a tap records the next map, the detection printer gets its list,
# and chirp-plot --map draws the map with the detections circled.
if [ -n "$PLOT" ]; then
	kill -TERM "$TAP" 2>/dev/null; wait "$TAP" 2>/dev/null; TAP=
	if "$BIN/chirp-tap" -c "$CONF" -n 1 --sigmf "$D/map" --timeout 10 -q 2>"$D/plot-tap.log"; then
		sleep 0.5   # its list reaches det.jsonl
		kill -TERM "$DETTAP" 2>/dev/null; DETTAP=
		sleep 0.2
		if "$PY" scripts/chirp-plot --map "$D/map" --detections "$D/det.jsonl" --prf $PRF \
			--carrier $FC -o "$PLOT" >"$D/plot.log" 2>&1; then
			echo "picture: $PLOT (the last map; $(grep -c '^detection:' "$D/plot.log") detections circled)"
		else
			plot_failed=1
		fi
	else
		plot_failed=1
	fi
	[ -n "${plot_failed:-}" ] &&
		echo "picture: failed: $(cat "$D/plot-tap.log" "$D/plot.log" 2>/dev/null | tail -n 3)"
fi

seen=$(cat "$D/seen" 2>/dev/null)
missing=
for t in $TARGETS; do
	v=$(echo "$t" | cut -d: -f2)
	"$PY" -c 'import sys; v = float(sys.argv[1]); sys.exit(0 if any(abs(float(s) - v) <= 9.4 for s in sys.argv[2:]) else 1)' \
		"$v" $seen || missing="$missing $v"
done
if [ -z "$missing" ] && [ -z "${plot_failed:-}" ]; then
	echo "every target detected at its velocity (m/s):$(for t in $TARGETS; do printf ' %+g' "$(echo "$t" | cut -d: -f2)"; done)"
	exit 0
fi
echo "targets not detected at velocities (m/s):${missing:-none missing}"
exit 1
