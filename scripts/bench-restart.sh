#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench-restart.sh [N] [TSV] — how long chirpd is gone after kill -9 and where
# its start-up time goes: chirpd on the CUDA backend (BACKEND=cpu for the CPU
# backend), 4x128x4096 cf32 -> complex (GEOM=CxPxR to change), slots = auto
# and a capacity cache, fed by chirp-feed at RATE CPI/s (default 1000;
# --prefilled, so the producer is never the bottleneck) and drained by
# chirp-tap; then N times (default 3): SIGKILL, start again at once, and
# time from the kill to the first CPI the new instance delivers. Per restart
# it writes "restart gone_ms startup_ms config_plan backend capacity rings
# pipeline threads reused" to TSV (default $CHIRP_BUILD/restart.tsv): gone_ms
# from the kill to output again, the rest chirpd's own `startup_ms` (status)
# and how many rings it adopted. The producer and the consumer must never
# re-attach (they keep the rings; a restart shows as a flagged gap).
# Exit 77 without a GPU (BACKEND=cuda); 0 with the table, 1 if a restart
# re-created a ring, measured the capacity again or made a peer re-attach.
set -u
cd "$(dirname "$0")/.." || exit 1
export CHIRP_BUILD=${CHIRP_BUILD:-build}
. tests/e2e/lib.sh
. tests/e2e/lib_gpu.inc

N=${1:-3}
TSV=${2:-$CHIRP_BUILD/restart.tsv}
case $TSV in /*) ;; *) TSV=$(pwd)/$TSV;; esac
BACKEND=${BACKEND:-cuda}
RATE=${RATE:-1000}
[[ $N =~ ^[0-9]+$ ]] && [ "$N" -ge 1 ] || { echo "bench-restart: N '$N': want a count >= 1" >&2; exit 2; }
e2e_init bench_restart
[ "$BACKEND" = cuda ] && gpu_need
IFS=x read -r c p r <<<"${GEOM:-4x128x4096}"
l=$([ "$r" -ge 9000 ] && echo 1000 || echo 512)
CACHE=$T/capacity
e2e_config processing.backend="$BACKEND" processing.streams=auto cpi.channels="$c" cpi.pulses="$p" \
	cpi.samples="$r" waveform.pulse_width_s="$(gpu_pw "$l")" input.slots=auto output.slots=auto \
	processing.capacity_cache="$CACHE" ${EXTRA_CFG:-}
E2E_SLOW=4 e2e_start_chirpd
"$CHIRP_TAP" --ring "$OUT_RING" -c "$CONF" --drain >"$T/tap.log" 2>&1 &
tap=$!
e2e_track "$tap"
e2e_wait_consumer "$OUT_RING" "$tap"
"$CHIRP_FEED" --ring "$IN_RING" -c "$CONF" --prefilled --noiseless --target 300,-6 --rate "$RATE" -q \
	>"$T/feed.log" 2>&1 &
feed=$!
e2e_track "$feed"

# out_again — wait (20 s at most) until the running chirpd delivered a CPI;
# prints the monotonic time it saw it at, ms.
out_again() {
	local i v
	for i in $(seq 1 4000); do
		v=$(e2e_stat cpis_out 2>/dev/null) && [ "${v:-0}" -ge 1 ] 2>/dev/null &&
			{ awk '{ printf "%.1f", $1 * 1000 }' /proc/uptime; return 0; }
		sleep 0.005
	done
	return 1
}
out_again >/dev/null || e2e_fail "no output before the first kill"
sleep 2

printf 'restart\tgone_ms\tstartup_ms\tconfig_plan\tbackend\tcapacity\trings\tpipeline\tthreads\treused\tcapacity_source\n' >"$TSV"
bad=0
for i in $(seq 1 "$N"); do
	t0=$(awk '{ printf "%.1f", $1 * 1000 }' /proc/uptime)
	kill -KILL "$CHIRPD_PID"
	wait "$CHIRPD_PID" 2>/dev/null
	: >"$CHIRPD_LOG"
	"$CHIRPD" -c "$CONF" 2>>"$CHIRPD_LOG" &
	CHIRPD_PID=$!
	e2e_track "$CHIRPD_PID"
	t1=$(out_again) || e2e_fail "restart $i: no output within 20 s: $(tail -5 "$CHIRPD_LOG")"
	e2e_json status | "$PY" -c '
import json, sys
s = json.load(sys.stdin)
m = s["startup_ms"]
print("%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%s\t%s" % (sys.argv[1], float(sys.argv[3]) - float(sys.argv[2]),
      m["total"], m["config_plan"], m["backend"], m["capacity"], m["rings"], m["pipeline"], m["threads"],
      sys.argv[4], s["rings"].get("capacity_source", "?")))' "$i" "$t0" "$t1" \
		"$(grep -c ': reused' "$CHIRPD_LOG")" >>"$TSV" || e2e_fail "restart $i: no status"
	grep -q "re-created\|capacity measured\|measured with depth" "$CHIRPD_LOG" && {
		echo "bench-restart: restart $i re-created a ring or measured again:"; grep "ring\|capacity" "$CHIRPD_LOG"; bad=1; }
	tail -1 "$TSV"
	sleep 2
done
grep -q "re-attach" "$T/feed.log" "$T/tap.log" && { echo "bench-restart: a peer re-attached"; bad=1; }
"$PY" - "$TSV" <<'PY'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
head, rows = rows[0], rows[1:]
print("bench-restart: %d restarts after kill -9: output again after %s ms (median %.0f); "
      "chirpd's start-up median %.0f ms:" % (len(rows), ", ".join(r[1] for r in rows),
      statistics.median(float(r[1]) for r in rows), statistics.median(float(r[2]) for r in rows)))
for k in range(3, 9):
    print("  %-12s median %8.1f ms" % (head[k], statistics.median(float(r[k]) for r in rows)))
PY
e2e_stop_chirpd >/dev/null 2>&1
[ "$bad" -eq 0 ] || exit 1
e2e_pass
