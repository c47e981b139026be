#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench-daemon-gpu.sh [--soak] [TSV] — benchmark (d): the whole daemon on the
# CUDA backend. For each configuration: chirp-feed --prefilled (as fast as
# the input ring frees slots, like a digitizer's DMA) -> chirpd (backend =
# cuda) -> chirp-tap --drain; chirpd's delivered CPIs are counted over
# MEASURE_S seconds after a warm-up. Writes "geometry format output gsps"
# lines (best over DAEMON_STREAMS) to TSV for bench_gpu --daemon-tsv, and a
# table with the stage times chirpd measured.
#
# --soak: SOAK_S seconds (default 300) of 16x128x9000 cf32->complex with
# SOAK_STREAMS (default 1) and SOAK_CFG (default "input.slots=16": ~60 ms of
# input buffering), paced at 90 % of the capacity measured first with the
# same settings (SOAK_MEASURE_S, default 10 s). The window starts once the
# feeder is on schedule (its --prefilled first pass is slow and is followed
# by a catch-up burst; those drops are the feeder's, reported separately);
# passes only with zero input overruns and output drops inside the window
# and zero consumer gaps.
#
# A configuration of output mode none (EXTRA_CFG with the radar chain and
# CONFIGS "...:none"): detections only, drained from the detection ring.
#
# Environment: CHIRP_BUILD (default build), FEED_EXTRA (more chirp-feed
# options, e.g. "--block": wait for a free slot instead of spinning on a
# full ring and counting each failed try as an input overrun),
# DAEMON_STREAMS (default "auto 2 4";
# auto is the shipped default: the streams column then shows the depth it
# chose, e.g. auto=3),
# MEASURE_S (default 5), CONFIGS ("4x128x4096:cf32:complex ..." to pick),
# DAEMON_SLOTS (default empty: the shipped slots = auto, 100 ms of CPIs at
# the capacity chirpd measures at start, on both rings: an output ring of a
# few ms, e.g. "input.slots=8 output.slots=8", turns the draining
# consumer's scheduling hiccups into output drops; set it to compare).
# Exit 77 without a GPU or a CUDA build.
set -u
cd "$(dirname "$0")/.." || exit 1
export CHIRP_BUILD=${CHIRP_BUILD:-build}
. tests/e2e/lib.sh
. tests/e2e/lib_gpu.inc

soak=0
if [ "${1:-}" = --soak ]; then soak=1; shift; fi
TSV=${1:-$CHIRP_BUILD/daemon.tsv}
case $TSV in /*) ;; *) TSV=$(pwd)/$TSV;; esac
e2e_init bench_daemon
e2e_need chirp-feed chirp-tap
gpu_need
STREAMS=${DAEMON_STREAMS:-auto 2 4}
MEASURE_S=${MEASURE_S:-5}
CONFIGS=${CONFIGS:-4x128x4096:cf32:complex 4x128x4096:cf32:magnitude 4x128x4096:sc16:complex 4x128x4096:sc16:magnitude 16x128x9000:cf32:complex 16x128x9000:cf32:magnitude 16x128x9000:sc16:complex 16x128x9000:sc16:magnitude}
TARGETS=(--target 300,-6 --target 1700,-12 --target 3100,-20)
now() { date +%s.%N; }
case_no=0

# run_daemon GEOM FMT MODE STREAMS SECONDS [RATE] — one daemon run; sets
# R_GSPS R_CPIS R_STAGES R_DROPS (feeder dropped + input overruns + output
# drops + consumer gaps).
run_daemon() {
	local geom=$1 fmt=$2 mode=$3 s=$4 secs=$5 rate=${6:-} c p r l c0 c1 t0 t1 feed tap
	IFS=x read -r c p r <<<"$geom"
	l=$([ "$r" -ge 9000 ] && echo 1000 || echo 512)
	case_no=$((case_no + 1))
	# output mode none (detections only): no output ring; the consumer
	# drains the detection ring instead
	local det=() tapring=()
	if [ "$mode" = none ]; then
		det=(detections.ring="$OUT_RING-det-$case_no")
		tapring=(-r "$OUT_RING-det-$case_no")
	fi
	e2e_config processing.backend=cuda processing.streams="$s" input.format="$fmt" output.mode="$mode" \
		cpi.channels="$c" cpi.pulses="$p" cpi.samples="$r" waveform.pulse_width_s="$(gpu_pw "$l")" \
		${DAEMON_SLOTS:-input.slots= output.slots=} input.ring="$IN_RING-$case_no" output.ring="$OUT_RING-$case_no" \
		${EXTRA_CFG:-} "${det[@]}"
	: >"$CHIRPD_LOG"
	# Up to 40 s to answer: registering 100 ms of rings (GiBs) and, with
	# streams = auto, measuring three depths before the first ping.
	E2E_SLOW=4 e2e_start_chirpd
	R_DEPTH=$s
	[ "$s" = auto ] && R_DEPTH="auto=$(e2e_json status | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["depth"])' 2>/dev/null)"
	"$CHIRP_TAP" -c "$CONF" "${tapring[@]}" --drain -q 2>"$T/tap.log" &
	tap=$!
	e2e_track $tap
	"$CHIRP_FEED" -c "$CONF" "${TARGETS[@]}" --snr-db 10 --prefilled ${rate:+--rate "$rate"} ${FEED_EXTRA:-} -q \
		2>"$T/feed.log" &
	feed=$!
	e2e_track $feed
	e2e_wait 60 e2e_stat_ge cpis_out 10 || e2e_fail "$geom $fmt $mode: no output after 60 s"
	# chirp-feed --prefilled writes each slot's synthetic data the first
	# time it reserves it: a slow first pass, after which a paced feeder
	# is behind its schedule and bursts. Measure only after that: unpaced,
	# once the ring has overflowed (first pass done); paced, once the input
	# overruns have stood still for 10 s (back on schedule).
	local o0 o1 waited=0
	if [ -z "$rate" ] && [[ ${FEED_EXTRA:-} == *--block* ]]; then
		# a blocking feeder never overruns: its first pass is over once
		# twice the input ring's slots have come out
		local islots
		islots=$(e2e_json status | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["rings"]["input_slots"])')
		e2e_wait 120 e2e_stat_ge cpis_out $((2 * islots)) || e2e_log "feeder's first pass not over after 120 s"
		sleep 1
	elif [ -z "$rate" ]; then
		e2e_wait 120 e2e_stat_gt input_overruns 0 || e2e_log "feeder never filled the ring"
		sleep 1
	else
		o0=$(e2e_stat input_overruns)
		while [ $waited -lt 180 ]; do
			sleep 10; waited=$((waited + 10))
			o1=$(e2e_stat input_overruns)
			[ "$o1" = "$o0" ] && break
			o0=$o1
		done
		e2e_log "  feeder on schedule after ${waited} s; $o1 overruns before the measured window"
	fi
	local ovr0 odrop0
	ovr0=$(e2e_stat input_overruns) odrop0=$(e2e_stat output_drops)
	c0=$(e2e_stat cpis_out); t0=$(now)
	if [ "$secs" -gt 30 ]; then
		# long runs: a line every 30 s, so a drop shows when it happened
		local left=$secs o=$ovr0 v
		while [ "$left" -gt 0 ]; do
			sleep $((left < 30 ? left : 30)); left=$((left - 30))
			v=$(e2e_stat input_overruns)
			e2e_log "  cpis_out $(e2e_stat cpis_out), input_overruns $v (+$((v - o))), output_drops $(e2e_stat output_drops)"
			o=$v
		done
	else
		sleep "$secs"
	fi
	c1=$(e2e_stat cpis_out); t1=$(now)
	# a CPI skipped for its pointing (beams) is cheaper: say how many
	e2e_log "bad_pointing_cpis $(e2e_stat bad_pointing_cpis 2>/dev/null || echo '?')"
	R_STAGES=$(e2e_ctl --json stats | "$PY" -c '
import json, sys
s = json.load(sys.stdin)
st = s.get("stages", {})
def ms(k):
    v = st.get(k, {})
    for key in ("mean_ns", "avg_ns", "p50_ns"):
        if key in v:
            return "%.2f" % (v[key] / 1e6)
    return "?"
print("in %s / compute %s / out %s ms" % (ms("input"), ms("compute"), ms("output")))' 2>/dev/null)
	kill -TERM $feed 2>/dev/null; wait $feed 2>/dev/null
	sleep 1
	kill -TERM $tap 2>/dev/null; wait $tap 2>/dev/null
	local fdrop ovr odrop gaps
	fdrop=$(sed -n 's/^chirp-feed: sent [0-9]*, dropped \([0-9]*\) .*/\1/p' "$T/feed.log" | tail -n 1)
	ovr=$(e2e_stat input_overruns) odrop=$(e2e_stat output_drops)
	R_WIN_DROPS=$(( (ovr - ovr0) + (odrop - odrop0) ))
	gaps=$(sed -n 's/^chirp-tap: received [0-9]*, gaps \([0-9]*\) .*/\1/p' "$T/tap.log" | tail -n 1)
	R_DROPS="feeder ${fdrop:-?}, input_overruns $ovr, output_drops $odrop, consumer gaps ${gaps:-?}"
	R_CPIS=$(awk -v a="$c0" -v b="$c1" -v x="$t0" -v y="$t1" 'BEGIN { printf "%.2f", (b - a) / (y - x) }')
	R_GSPS=$(awk -v k="$R_CPIS" -v n=$((c * p * r)) 'BEGIN { printf "%.4f", k * n / 1e9 }')
	R_SUM="${fdrop:-x}:$ovr:$odrop:${gaps:-x}"
	e2e_stop_chirpd >/dev/null 2>&1
	grep -E "error|warning" "$CHIRPD_LOG" | grep -v realtime | head -5
}

if [ $soak = 0 ]; then
	: >"$TSV"
	printf '%-12s %-5s %-9s %7s %9s %8s  %s\n' geometry in out streams "CPI/s" "GS/s" "chirpd stage means; drops while saturated"
	for cfg in $CONFIGS; do
		IFS=: read -r geom fmt mode <<<"$cfg"
		best=0
		for s in $STREAMS; do
			run_daemon "$geom" "$fmt" "$mode" "$s" "$MEASURE_S"
			printf '%-12s %-5s %-9s %7s %9s %8s  %s; %s\n' "$geom" "$fmt" "$mode" "$R_DEPTH" "$R_CPIS" "$R_GSPS" "$R_STAGES" "$R_DROPS"
			best=$(awk -v a="$best" -v b="$R_GSPS" 'BEGIN { print (b > a ? b : a) }')
		done
		printf '%s %s %s %s\n' "$geom" "$fmt" "$mode" "$best" >>"$TSV"
	done
	echo "(d) written to $TSV"
	e2e_pass
fi

# --soak: capacity measured first with the soak's own settings, then 90 %.
SOAK_S=${SOAK_S:-300}
geom=${SOAK_GEOM:-16x128x9000} fmt=cf32 mode=complex
bests=${SOAK_STREAMS:-1}
EXTRA_CFG=${SOAK_CFG:-input.slots=16}
e2e_log "soak settings: streams $bests, $EXTRA_CFG"
run_daemon $geom $fmt $mode "$bests" "${SOAK_MEASURE_S:-10}"
cap=$R_GSPS
e2e_log "soak: capacity $cap GS/s ($R_CPIS CPI/s; $R_STAGES)"
n=$(echo "$geom" | awk -Fx '{ print $1 * $2 * $3 }')
rate=$(awk -v g="$cap" -v n=$n 'BEGIN { printf "%.2f", 0.9 * g * 1e9 / n }')
e2e_log "soak: $geom $fmt->$mode, streams $bests, capacity $cap GS/s, paced at $rate CPI/s (90 %) for $SOAK_S s"
run_daemon $geom $fmt $mode $bests "$SOAK_S" "$rate"
e2e_log "soak: delivered $R_CPIS CPI/s ($R_GSPS GS/s); $R_STAGES; $R_DROPS"
e2e_log "soak: drops inside the measured $SOAK_S s: $R_WIN_DROPS (input overruns + output drops)"
[ "$R_WIN_DROPS" = 0 ] || e2e_fail "soak: $R_WIN_DROPS drops in the measured window ($R_DROPS)"
gaps=${R_SUM##*:}
[ "$gaps" = 0 ] || e2e_fail "soak: the consumer saw $gaps gaps"
e2e_pass
