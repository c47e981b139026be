#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench-publish.sh — what [publish] costs: chirpd's capacity with the radar
# chain detecting, without and with publishing its detection lists on
# ZeroMQ, side by side in one run. Each run: chirp-feed --prefilled --block
# (as fast as the input ring frees slots) -> chirpd (the chain, CFAR lists
# to the detection ring; [output] mode none) -> chirp-tap --drain on the
# detection ring; with publishing, doc/example_subscriber.py --summary on
# the same host subscribes to topic det. Delivered CPIs are counted over
# MEASURE_S seconds after the feeder's first pass; runs alternate off, on,
# REPEATS times, and the table shows each run, the median of each side and
# the cost (1 - on / off). The subscriber's line says how many lists it
# received and how many seq gaps it saw; chirpd's publish_det_drops counts
# the lists it could not send (a subscriber slower than the CPIs).
#
# Environment: CHIRP_BUILD (default build), CHIRP_TEST_BACKEND (cpu or
# cuda; default cpu), GEOM (default 4x128x4096), MEASURE_S (default 10),
# REPEATS (default 2), RATE (chirp-feed --rate CPI/s; default none =
# capacity), EXTRA_CFG (more section.key=value settings, e.g.
# "processing.cpu_threads=4" or "processing.streams=auto"), OUT (a
# FILE.tsv: the runs as raw results, one row each — run, publish (off/on),
# cpi_per_s, sent, drops, sub_det (lists the subscriber received, the
# whole run), sub_gaps (its seq gaps), geometry, backend — and FILE.meta
# beside it (scripts/bench-meta.sh, kind publish); default none).
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-}
case $OUT in ''|*.tsv) ;; *) echo "bench-publish: OUT '$OUT': want a FILE.tsv" >&2; exit 2;; esac
export CHIRP_BUILD=${CHIRP_BUILD:-build}
. tests/e2e/lib.sh
e2e_init bench_publish
e2e_need chirp-feed chirp-tap
"$PY" -c 'import zmq' 2>/dev/null || e2e_skip "python3-zmq (pyzmq) is not installed"

GEOM=${GEOM:-4x128x4096}
MEASURE_S=${MEASURE_S:-10}
REPEATS=${REPEATS:-2}
RATE=${RATE:-}
IFS=x read -r C P R <<<"$GEOM"
DET_RING=/$E2E_UNIQ-det
now() { date +%s.%N; }

# run PUBLISH(0|1) N — one daemon run; prints "cps sent drops subscriber".
run() {
	local pub=$1 n=$2 c0 c1 t0 t1 tap feed sub= islots sent=0 drops=0 summ=-
	local p=()
	[ "$pub" = 1 ] && p=(publish.listen='tcp://127.0.0.1:*' publish.status_hz=0)
	e2e_config cpi.channels="$C" cpi.pulses="$P" cpi.samples="$R" \
		waveform.pulse_width_s=2e-6 waveform.bandwidth_hz=5e6 \
		input.ring="$IN_RING-$n" input.slots= output.slots= output.mode=none \
		radar.prf_hz=10000 radar.carrier_hz=1e9 doppler.enable=true \
		cfar.enable=true cfar.pfa=1e-5 detections.ring="$DET_RING-$n" detections.slots= \
		"${p[@]}" ${EXTRA_CFG:-}
	: >"$CHIRPD_LOG"
	E2E_SLOW=4 e2e_start_chirpd
	if [ "$pub" = 1 ]; then
		local ep
		ep=$(e2e_json status | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["publish"]["endpoint"])')
		rm -f "$T/ready"
		"$PY" doc/example_subscriber.py "$ep" --topics det --summary --ready-file "$T/ready" \
			--timeout 100000 >"$T/sub-$n.json" 2>"$T/sub-$n.log" &
		sub=$!
		e2e_track $sub
	fi
	"$CHIRP_TAP" -c "$CONF" -r "$DET_RING-$n" --drain -q 2>"$T/tap.log" &
	tap=$!
	e2e_track $tap
	"$CHIRP_FEED" -c "$CONF" --target 300,-6,2500 --snr-db 10 --prefilled --block \
		${RATE:+--rate "$RATE"} -q 2>"$T/feed.log" &
	feed=$!
	e2e_track $feed
	e2e_wait 60 e2e_stat_ge cpis_out 10 || e2e_fail "no output after 60 s"
	islots=$(e2e_json status | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["rings"]["input_slots"])')
	e2e_wait 120 e2e_stat_ge cpis_out $((2 * islots)) || e2e_log "feeder's first pass not over after 120 s"
	[ -z "$sub" ] || [ -e "$T/ready" ] || e2e_log "the subscriber has received nothing yet"
	c0=$(e2e_stat cpis_out); t0=$(now)
	[ "$pub" = 1 ] && { sent=$(e2e_stat publish_det_messages); drops=$(e2e_stat publish_det_drops); }
	sleep "$MEASURE_S"
	c1=$(e2e_stat cpis_out); t1=$(now)
	if [ "$pub" = 1 ]; then
		sent=$(($(e2e_stat publish_det_messages) - sent))
		drops=$(($(e2e_stat publish_det_drops) - drops))
	fi
	kill $feed 2>/dev/null; wait $feed 2>/dev/null
	e2e_stop_chirpd >/dev/null 2>&1
	kill $tap 2>/dev/null; wait $tap 2>/dev/null
	if [ -n "$sub" ]; then
		kill -TERM $sub 2>/dev/null; wait $sub 2>/dev/null
		summ=$(tail -1 "$T/sub-$n.json" 2>/dev/null)
		[ -n "$summ" ] || summ="(no summary: $(tail -1 "$T/sub-$n.log"))"
	fi
	"$PY" -c "import sys; print('%.1f' % ((int(sys.argv[2]) - int(sys.argv[1])) / (float(sys.argv[4]) - float(sys.argv[3]))))" \
		"$c0" "$c1" "$t0" "$t1" | tr -d '\n'
	echo " $sent $drops $summ"
}

e2e_log "bench-publish: $GEOM, backend ${CHIRP_TEST_BACKEND:-cpu}, ${MEASURE_S} s per run, $REPEATS repeats${RATE:+, paced at $RATE CPI/s}"
off=() on=()
if [ -n "$OUT" ]; then
	mkdir -p "$(dirname "$OUT")" &&
		scripts/bench-meta.sh "${OUT%.tsv}.meta.tmp" publish GEOM="$GEOM" MEASURE_S="$MEASURE_S" \
			REPEATS="$REPEATS" ${RATE:+RATE="$RATE"} ${EXTRA_CFG:+EXTRA_CFG="$EXTRA_CFG"} \
			CHIRP_TEST_BACKEND="${CHIRP_TEST_BACKEND:-cpu}" scripts/bench-publish.sh || exit 1
	printf 'run\tpublish\tcpi_per_s\tsent\tdrops\tsub_det\tsub_gaps\tgeometry\tbackend\n' >"$T/publish.tsv"
fi
printf '%-8s %-7s %12s %10s %10s  %s\n' run publish cpi_per_s sent drops subscriber
k=0
for rep in $(seq 1 "$REPEATS"); do
	for pub in 0 1; do
		k=$((k + 1))
		read -r cps sent drops summ <<<"$(run $pub $k)"
		printf '%-8s %-7s %12s %10s %10s  %s\n' "$rep" "$([ $pub = 1 ] && echo on || echo off)" \
			"$cps" "$sent" "$drops" "$summ"
		if [ $pub = 1 ]; then on+=("$cps"); else off+=("$cps"); fi
		[ -n "$OUT" ] && "$PY" - "$rep" "$pub" "$cps" "$sent" "$drops" "$summ" "$GEOM" \
			"${CHIRP_TEST_BACKEND:-cpu}" >>"$T/publish.tsv" <<'EOF'
import json, sys
rep, pub, cps, sent, drops, summ, geom, backend = sys.argv[1:]
det = gaps = ""
if pub == "1":
    try:
        s = json.loads(summ)
        det, gaps = s["messages"].get("det", 0), s["det_seq_gaps"]
    except ValueError:
        pass   # no summary: the subscriber's figures stay empty
print("\t".join(map(str, (rep, "on" if pub == "1" else "off", cps, sent, drops, det, gaps, geom, backend))))
EOF
	done
done
if [ -n "$OUT" ]; then
	cp "$T/publish.tsv" "$OUT" && mv "${OUT%.tsv}.meta.tmp" "${OUT%.tsv}.meta" || e2e_fail "cannot write $OUT"
fi
"$PY" - "${off[*]}" "${on[*]}" <<'EOF'
import statistics, sys
off = [float(x) for x in sys.argv[1].split()]
on = [float(x) for x in sys.argv[2].split()]
mo, mn = statistics.median(off), statistics.median(on)
print(f"median: off {mo:.1f} CPI/s (min {min(off):.1f} max {max(off):.1f}), "
      f"on {mn:.1f} CPI/s (min {min(on):.1f} max {max(on):.1f}); "
      f"cost {100 * (1 - mn / mo):.2f} % of capacity")
EOF
