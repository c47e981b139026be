#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench-publish.sh — what [publish] costs: chirpd with the radar chain
# detecting, without and with publishing its detection lists on ZeroMQ to
# a subscriber on the same host (chirp-sub --summary, topic det), side by
# side in one run, two ways:
#   capacity  chirp-feed --prefilled --block (as fast as the input ring
#             frees slots): CPIs delivered per second; the cost is
#             1 - on / off of the medians (criterion: at most 1 %);
#   paced     chirp-feed --prefilled --rate PACED (default 2000 CPI/s, not
#             --block: a CPI finding the ring full is lost, as a
#             digitizer's would be): CPIs delivered per second, the
#             fraction lost (chirpd's input_overruns over the CPIs fed),
#             and chirpd's CPU time (cores busy) off and on.
# Each run: chirp-feed -> chirpd (the chain, CFAR lists to the detection
# ring; [output] mode none) -> chirp-tap --drain on the detection ring;
# with publishing, chirp-sub on the same host. Counted over MEASURE_S
# seconds after the feeder's first pass; runs alternate off, on, REPEATS
# times in each way. The subscriber's figures (lists received, seq gaps)
# cover its whole run; chirpd's publish_det_drops counts the lists it
# could not send (a subscriber slower than the CPIs).
#
# Environment: CHIRP_BUILD (default build), CHIRP_TEST_BACKEND (cpu or
# cuda; default cpu), GEOM (default 4x128x4096), MEASURE_S (default 8),
# REPEATS (default 2), PACED (CPI/s of the paced runs, default 2000; 0:
# none), CAPACITY (1: the capacity runs, default; 0: none), EXTRA_CFG
# (more section.key=value settings, e.g. "processing.cpu_threads=4"), OUT
# (a FILE.tsv: the runs as raw results, one row each — run, publish
# (off/on), cpi_per_s, sent, drops, sub_det (lists the subscriber
# received), sub_gaps (its seq gaps), geometry, backend, mode (capacity or
# paced), rate (the paced rate, or empty), loss (paced: the fraction of
# CPIs lost), chirpd_cpu (cores) — and FILE.meta beside it
# (scripts/bench-meta.sh, kind publish); default none).
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-}
case $OUT in ''|*.tsv) ;; *) echo "bench-publish: OUT '$OUT': want a FILE.tsv" >&2; exit 2;; esac
export CHIRP_BUILD=${CHIRP_BUILD:-build}
. tests/e2e/lib.sh
e2e_init bench_publish
e2e_need chirp-feed chirp-tap chirp-sub
CHIRP_SUB=$BIN/chirp-sub

GEOM=${GEOM:-4x128x4096}
MEASURE_S=${MEASURE_S:-8}
REPEATS=${REPEATS:-2}
PACED=${PACED:-2000}
CAPACITY=${CAPACITY:-1}
TCK=$(getconf CLK_TCK)
IFS=x read -r C P R <<<"$GEOM"
DET_RING=/$E2E_UNIQ-det
now() { date +%s.%N; }

# cpu_s PID — the process's CPU time so far (user + system), seconds.
cpu_s() { awk -v t="$TCK" '{ print ($14 + $15) / t }' "/proc/$1/stat"; }

# run PUBLISH(0|1) N RATE — one daemon run, unpaced (RATE empty) or paced;
# prints "cps sent drops loss cpu subscriber".
run() {
	local pub=$1 n=$2 rate=$3 c0 c1 t0 t1 i0 i1 o0 o1 u0 u1 tap feed sub= islots sent=0 drops=0 summ=-
	local p=() fopt=(--block)
	[ -n "$rate" ] && fopt=(--rate "$rate")
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
		"$CHIRP_SUB" "$ep" --topics det --summary --ready-file "$T/ready" \
			>"$T/sub-$n.json" 2>"$T/sub-$n.log" &
		sub=$!
		e2e_track $sub
	fi
	"$CHIRP_TAP" -c "$CONF" -r "$DET_RING-$n" --drain -q 2>"$T/tap.log" &
	tap=$!
	e2e_track $tap
	"$CHIRP_FEED" -c "$CONF" --target 300,-6,2500 --snr-db 10 --prefilled "${fopt[@]}" \
		-q 2>"$T/feed.log" &
	feed=$!
	e2e_track $feed
	e2e_wait 60 e2e_stat_ge cpis_out 10 || e2e_fail "no output after 60 s"
	islots=$(e2e_json status | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["rings"]["input_slots"])')
	e2e_wait 120 e2e_stat_ge cpis_out $((2 * islots)) || e2e_log "feeder's first pass not over after 120 s"
	[ -z "$sub" ] || [ -e "$T/ready" ] || e2e_log "the subscriber has received nothing yet"
	c0=$(e2e_stat cpis_out); i0=$(e2e_stat cpis_in); o0=$(e2e_stat input_overruns)
	u0=$(cpu_s "$CHIRPD_PID"); t0=$(now)
	[ "$pub" = 1 ] && { sent=$(e2e_stat publish_det_messages); drops=$(e2e_stat publish_det_drops); }
	sleep "$MEASURE_S"
	c1=$(e2e_stat cpis_out); i1=$(e2e_stat cpis_in); o1=$(e2e_stat input_overruns)
	u1=$(cpu_s "$CHIRPD_PID"); t1=$(now)
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
	"$PY" -c "
import sys
c0, c1, i0, i1, o0, o1 = map(int, sys.argv[1:7])
t0, t1, u0, u1 = map(float, sys.argv[7:11])
fed = (i1 - i0) + (o1 - o0)   # taken in, and lost for want of a slot
print('%.1f %.5f %.3f' % ((c1 - c0) / (t1 - t0), (o1 - o0) / fed if fed else 0,
                          (u1 - u0) / (t1 - t0)), end='')" \
		"$c0" "$c1" "$i0" "$i1" "$o0" "$o1" "$t0" "$t1" "$u0" "$u1"
	echo " $sent $drops $summ"
}

e2e_log "bench-publish: $GEOM, backend ${CHIRP_TEST_BACKEND:-cpu}, ${MEASURE_S} s per run, $REPEATS repeats$([ "$CAPACITY" = 1 ] && echo ", capacity")$([ "$PACED" != 0 ] && echo ", paced at $PACED CPI/s")"
[ "$CAPACITY" = 1 ] || [ "$PACED" != 0 ] || { echo "bench-publish: CAPACITY=0 and PACED=0: nothing to run" >&2; exit 2; }
if [ -n "$OUT" ]; then
	mkdir -p "$(dirname "$OUT")" &&
		scripts/bench-meta.sh "${OUT%.tsv}.meta.tmp" publish GEOM="$GEOM" MEASURE_S="$MEASURE_S" \
			REPEATS="$REPEATS" PACED="$PACED" CAPACITY="$CAPACITY" ${EXTRA_CFG:+EXTRA_CFG="$EXTRA_CFG"} \
			CHIRP_TEST_BACKEND="${CHIRP_TEST_BACKEND:-cpu}" scripts/bench-publish.sh || exit 1
fi
printf 'run\tpublish\tcpi_per_s\tsent\tdrops\tsub_det\tsub_gaps\tgeometry\tbackend\tmode\trate\tloss\tchirpd_cpu\n' >"$T/publish.tsv"
printf '%-9s %-4s %-7s %10s %8s %8s %8s %8s  %s\n' mode run publish cpi_per_s loss cpu sent drops subscriber
modes=()
[ "$CAPACITY" = 1 ] && modes+=(capacity)
[ "$PACED" != 0 ] && modes+=(paced)
k=0
for mode in "${modes[@]}"; do
	rate=
	[ "$mode" = paced ] && rate=$PACED
	for rep in $(seq 1 "$REPEATS"); do
		for pub in 0 1; do
			k=$((k + 1))
			read -r cps loss cpu sent drops summ <<<"$(run $pub $k "$rate")"
			printf '%-9s %-4s %-7s %10s %8s %8s %8s %8s  %s\n' "$mode" "$rep" \
				"$([ $pub = 1 ] && echo on || echo off)" "$cps" "$loss" "$cpu" "$sent" "$drops" "$summ"
			"$PY" - "$rep" "$pub" "$cps" "$sent" "$drops" "$summ" "$GEOM" "${CHIRP_TEST_BACKEND:-cpu}" \
				"$mode" "$rate" "$loss" "$cpu" >>"$T/publish.tsv" <<'EOF'
import json, sys
rep, pub, cps, sent, drops, summ, geom, backend, mode, rate, loss, cpu = sys.argv[1:]
det = gaps = ""
if pub == "1":
    try:
        s = json.loads(summ)
        det, gaps = s["messages"].get("det", 0), s["det_seq_gaps"]
    except ValueError:
        pass   # no summary: the subscriber's figures stay empty
print("\t".join(map(str, (rep, "on" if pub == "1" else "off", cps, sent, drops, det, gaps, geom,
                          backend, mode, rate, loss if mode == "paced" else "", cpu))))
EOF
		done
	done
done
if [ -n "$OUT" ]; then
	cp "$T/publish.tsv" "$OUT" && mv "${OUT%.tsv}.meta.tmp" "${OUT%.tsv}.meta" || e2e_fail "cannot write $OUT"
fi
"$PY" - "$T/publish.tsv" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
def med(mode, pub, key):
    v = [float(r[key]) for r in rows if r["mode"] == mode and r["publish"] == pub and r[key] != ""]
    return statistics.median(v) if v else float("nan")
if any(r["mode"] == "capacity" for r in rows):
    mo, mn = med("capacity", "off", "cpi_per_s"), med("capacity", "on", "cpi_per_s")
    print(f"median: off {mo:.1f} CPI/s, on {mn:.1f} CPI/s; cost {100 * (1 - mn / mo):.2f} % of capacity")
if any(r["mode"] == "paced" for r in rows):
    rate = rows[-1]["rate"]
    print("paced %s CPI/s, median: off %.1f CPI/s, loss %.5f, chirpd %.2f cores; on %.1f CPI/s, "
          "loss %.5f, chirpd %.2f cores" % (
              rate, med("paced", "off", "cpi_per_s"), med("paced", "off", "loss"),
              med("paced", "off", "chirpd_cpu"), med("paced", "on", "cpi_per_s"),
              med("paced", "on", "loss"), med("paced", "on", "chirpd_cpu")))
EOF
