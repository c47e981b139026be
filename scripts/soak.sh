#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# soak.sh — the 10-minute soak recorded in doc/reliability.md (not part of
# make test). Measured once per release on a quiet machine if possible.
#
#   1. Capacity: chirpd (CPU backend) with a prefilled chirp-feed committing
#      as fast as it can and chirp-tap draining, for SOAK_CAPACITY_SECONDS
#      (20): capacity = CPIs chirpd took per second over that window.
#   2. Soak: a fresh chirpd, the feeder paced at SOAK_LOAD (0.8) x capacity,
#      for SOAK_SECONDS (600). Every 10 s a sample of the counters, VmRSS
#      and latency goes to soak.csv.
#   3. Summary (summary.txt): CPIs in/out, drops of every kind (goal 0),
#      VmRSS at start (after the first sample) and end (goal flat), latency
#      p50/p99/p99.9/max (producer commit -> result committed), host load.
#
# Usage: scripts/soak.sh [OUTDIR]   (default build-soak/)
# Environment: CHIRP_BUILD (build), SOAK_SECONDS, SOAK_CAPACITY_SECONDS,
#   SOAK_LOAD, SOAK_GEOMETRY (C,P,R; default 1,128,4000), SOAK_THREADS
#   (FFTW threads, default 1), SOAK_REALTIME ([numa] realtime: off (default)
#   or preferred = SCHED_FIFO data thread, as a deployment on a shared host
#   would run it).
# Exit 0 if there were no drops and RSS grew by less than 10 MiB.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
BUILD=${CHIRP_BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$root/$BUILD;; esac
out=${1:-build-soak}
mkdir -p "$out"
out=$(cd "$out" && pwd)
secs=${SOAK_SECONDS:-600}
cap_secs=${SOAK_CAPACITY_SECONDS:-20}
load=${SOAK_LOAD:-0.8}
IFS=, read -r C P R <<<"${SOAK_GEOMETRY:-1,128,4000}"
threads=${SOAK_THREADS:-1}
realtime=${SOAK_REALTIME:-off}
PY=/usr/bin/python3
for b in chirpd chirpctl chirp-feed chirp-tap; do
	[ -x "$BUILD/bin/$b" ] || { echo "soak: $BUILD/bin/$b not built"; exit 1; }
done

uniq=chirp-soak-$$
IN=/$uniq-in OUTR=/$uniq-out
SOCK=$out/control.sock
CONF=$out/chirpd.conf
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	sleep 0.5
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	rm -f /dev/shm/"$uniq"*
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cat >"$CONF" <<EOF
[daemon]
control_socket = $SOCK
log_level = notice
[numa]
node = none
realtime = $realtime
[input]
ring = $IN
slots = 64
format = cf32
[cpi]
channels = $C
pulses = $P
samples = $R
[waveform]
type = lfm
sample_rate_hz = 25e6
bandwidth_hz = 10e6
pulse_width_s = 10e-6
window = hamming
[processing]
backend = cpu
cpu_threads = $threads
[output]
mode = complex
ring = $OUTR
slots = 64
EOF

ctl() { "$BUILD/bin/chirpctl" -s "$SOCK" "$@"; }
# stats_fields — one line "cpis_in cpis_out input_overruns sequence_gaps
# output_drops bad_blocks p50_ns p99_ns p999_ns max_ns interval_p99_ns" from
# chirpctl --json stats (latency since start; interval = chirpd's last stats tick).
stats_fields() {
	ctl --json stats | "$PY" -c '
import json, sys
s = json.load(sys.stdin); l = s.get("latency", {}); li = s.get("latency_last_interval", {})
print(*[s.get(k, 0) for k in ("cpis_in", "cpis_out", "input_overruns", "sequence_gaps",
        "output_drops", "bad_blocks")], *[l.get(k, 0) for k in ("p50_ns", "p99_ns", "p999_ns", "max_ns")],
      li.get("p99_ns", 0))'
}
start_chirpd() {
	"$BUILD/bin/chirpd" -c "$CONF" >>"$out/chirpd.log" 2>&1 &
	CHIRPD=$!
	pids+=("$CHIRPD")
	for _ in $(seq 100); do ctl ping >/dev/null 2>&1 && return 0; sleep 0.1; done
	echo "soak: chirpd did not start"; tail "$out/chirpd.log"; exit 1
}
stop_all() {
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	pids=()
	rm -f /dev/shm/"$uniq"*
}
feed() {   # feed LOG [ARGS] — prefilled synthetic producer
	local log=$1
	shift
	"$BUILD/bin/chirp-feed" --ring "$IN" -c "$CONF" --target 500,0 --target 1200,-20 --snr-db 10 \
		--prefilled -q --wait 10 "$@" >"$log" 2>&1 &
	pids+=($!)
}
tap() {
	"$BUILD/bin/chirp-tap" --ring "$OUTR" -c "$CONF" --drain -q --wait 10 >"$1" 2>&1 &
	pids+=($!)
}

: >"$out/chirpd.log"
echo "soak: $(date -u +%FT%TZ) on $(hostname), $(nproc) cpus, geometry ${C}x${P}x${R} cf32, $threads FFTW thread(s), realtime $realtime"

# ---- 1. capacity ----
start_chirpd
tap "$out/tap-capacity.log"
feed "$out/feed-capacity.log"
sleep 3   # warm-up
read -r in0 _ < <(stats_fields); t0=$(date +%s.%N)
sleep "$cap_secs"
read -r in1 _ < <(stats_fields); t1=$(date +%s.%N)
cap=$(awk -v a="$in0" -v b="$in1" -v s="$t0" -v e="$t1" 'BEGIN { printf "%.1f", (b - a) / (e - s) }')
stop_all
rate=$(awk -v c="$cap" -v l="$load" 'BEGIN { printf "%.1f", c * l }')
echo "soak: capacity $cap CPI/s ($(awk -v c="$cap" -v n=$((C * P * R)) 'BEGIN { printf "%.1f", c * n / 1e6 }') MS/s); soak rate $rate CPI/s for ${secs}s"

# ---- 2. soak ----
start_chirpd
tap "$out/tap-soak.log"
feed "$out/feed-soak.log" --rate "$rate"
echo "t_s,cpis_in,cpis_out,input_overruns,sequence_gaps,output_drops,bad_blocks,p50_ns,p99_ns,p999_ns,max_ns,interval_p99_ns,rss_kb,loadavg1" >"$out/soak.csv"
t_start=$(date +%s)
rss_start=
while :; do
	sleep 10
	now=$(( $(date +%s) - t_start ))
	kill -0 "$CHIRPD" 2>/dev/null || { echo "soak: chirpd died"; tail "$out/chirpd.log"; exit 1; }
	f=$(stats_fields) || { echo "soak: chirpctl failed"; exit 1; }
	rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$CHIRPD/status")
	[ -n "$rss_start" ] || rss_start=$rss
	echo "$now,${f// /,},$rss,$(cut -d' ' -f1 /proc/loadavg)" >>"$out/soak.csv"
	[ "$now" -lt "$secs" ] || break
done
ctl --json stats >"$out/stats-final.json"
rss_end=$rss
# Stop the producer first, let chirpd drain, then stop chirpd (its log gets the summary).
kill -TERM "${pids[2]}" 2>/dev/null; wait "${pids[2]}" 2>/dev/null
sleep 1
ctl --json stats >"$out/stats-drained.json"
stop_all

read -r cin cout ovr gaps drops bad p50 p99 p999 max < <(tail -1 "$out/soak.csv" | cut -d, -f2-11 | tr , ' ')
growth=$((rss_end - rss_start))
loadavg=$(awk -F, 'NR > 1 { s += $14; n++ } END { printf "%.2f", s / n }' "$out/soak.csv")
# Median and worst of the per-sample interval p99 (steady state, without the start).
ip99=$(awk -F, 'NR > 1 { print $12 }' "$out/soak.csv" | sort -n | awk '{ a[NR] = $1 } END { printf "median %.2f ms, worst %.2f ms", a[int((NR + 1) / 2)] / 1e6, a[NR] / 1e6 }')
{
	echo "date            $(date -u +%F)"
	echo "machine         $(hostname), $(nproc) cpus ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), shared"
	echo "commit          $(git rev-parse --short HEAD 2>/dev/null)"
	echo "geometry        ${C}x${P}x${R} cf32 -> complex, CPU backend, $threads FFTW thread(s), realtime $realtime"
	grep -o 'realtime [A-Za-z_]*' "$out/chirpd.log" | tail -1 | sed 's/^/chirpd says     /'
	echo "capacity        $cap CPI/s (prefilled feed, ${cap_secs} s)"
	echo "soak            $rate CPI/s ($load x capacity) for ${secs} s"
	echo "cpis            in $cin, out $cout"
	echo "drops           input_overruns $ovr, sequence_gaps $gaps, output_drops $drops, bad_blocks $bad"
	echo "rss             start $rss_start kB (t=10 s), end $rss_end kB, growth $growth kB"
	awk -v a="$p50" -v b="$p99" -v c="$p999" -v d="$max" \
		'BEGIN { printf "latency         p50 %.2f ms, p99 %.2f ms, p99.9 %.2f ms, max %.2f ms\n", a/1e6, b/1e6, c/1e6, d/1e6 }'
	echo "interval p99    $ip99 (chirpd's last-interval p99, sampled every 10 s)"
	echo "host load       mean 1-min loadavg $loadavg over the soak"
	grep '^chirp-feed:' "$out/feed-soak.log" | tail -1 | sed 's/^/feeder          /'
} | tee "$out/summary.txt"
[ "$((ovr + gaps + drops + bad))" -eq 0 ] && [ "$growth" -lt 10240 ]
