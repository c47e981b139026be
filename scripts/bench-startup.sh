#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench-startup.sh [N] [TSV] — what chirpd decides at start-up, N times
# (default 5) in a row on one machine: the shipped conf/chirpd.conf with the
# CUDA backend and streams = auto, 4x128x4096 cf32 -> complex (GEOM=CxPxR to
# change), started, asked for `chirpctl status` once ready, stopped, and
# started again. Per start: the capacity (rings.capacity_cpi_per_s), the depth
# and what was measured for it (depth_choice), the input ring's slots and
# where the capacity came from (capacity_source, when the build reports it).
# Summary: each capacity's distance from the median, and how many starts chose
# the most common depth. Writes "start capacity depth slots source" lines to
# TSV (default $CHIRP_BUILD/startup.tsv). Exit 77 without a GPU or a CUDA
# build; 0 otherwise (a report, not a test).
#
# As under the shipped unit, [processing] capacity_cache = auto keeps the
# decisions in $STATE_DIRECTORY/capacity: here a fresh folder of the run
# (STATE_DIRECTORY=DIR to use another, e.g. one a previous run filled), so
# the first start measures and the others find its entry.
set -u
cd "$(dirname "$0")/.." || exit 1
export CHIRP_BUILD=${CHIRP_BUILD:-build}
. tests/e2e/lib.sh
. tests/e2e/lib_gpu.inc

N=${1:-5}
TSV=${2:-$CHIRP_BUILD/startup.tsv}
case $TSV in /*) ;; *) TSV=$(pwd)/$TSV;; esac
[[ $N =~ ^[0-9]+$ ]] && [ "$N" -ge 1 ] || { echo "bench-startup: N '$N': want a count >= 1" >&2; exit 2; }
e2e_init bench_startup
gpu_need
IFS=x read -r c p r <<<"${GEOM:-4x128x4096}"
l=$([ "$r" -ge 9000 ] && echo 1000 || echo 512)
export STATE_DIRECTORY=${STATE_DIRECTORY:-$T/state}
mkdir -p "$STATE_DIRECTORY" || e2e_fail "cannot create $STATE_DIRECTORY"
printf 'start\tcapacity_cpi_per_s\tdepth\tinput_slots\tsource\tdepth_choice\n' >"$TSV"
for i in $(seq 1 "$N"); do
	e2e_config processing.backend=cuda processing.streams=auto cpi.channels="$c" cpi.pulses="$p" \
		cpi.samples="$r" waveform.pulse_width_s="$(gpu_pw "$l")" input.slots= output.slots= \
		input.ring="$IN_RING-$i" \
		output.ring="$OUT_RING-$i" ${EXTRA_CFG:-}
	: >"$CHIRPD_LOG"
	E2E_SLOW=4 e2e_start_chirpd
	e2e_json status | "$PY" -c '
import json, sys
s = json.load(sys.stdin)
r = s.get("rings", {})
print("%s\t%.1f\t%s\t%s\t%s\t%s" % (sys.argv[1], r.get("capacity_cpi_per_s", 0), s.get("depth"),
      r.get("input_slots"), r.get("capacity_source", "measured"), s.get("depth_choice", "")))' "$i" >>"$TSV" ||
		e2e_fail "start $i: no status"
	e2e_stop_chirpd >/dev/null 2>&1
	tail -1 "$TSV"
done
"$PY" - "$TSV" <<'PY'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])][1:]
cap = [float(r[1]) for r in rows]
med = statistics.median(cap)
dev = max(abs(c - med) / med for c in cap) if med > 0 else float("inf")
depths = [r[2] for r in rows]
common = max(set(depths), key=depths.count)
print("bench-startup: %d starts: capacity median %.0f CPI/s, farthest %.1f %% from it; "
      "depth %s in %d of %d" % (len(rows), med, 100 * dev, common, depths.count(common), len(rows)))
PY
e2e_pass
