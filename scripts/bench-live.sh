#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench-live.sh — what the live view costs: chirpd's capacity with the radar
# chain run detections only, as operators run it, with no page open and
# with PAGES pages open, side by side in one run. Each run: chirp-feed
# --prefilled --block (as fast as the input ring frees slots) -> chirpd
# (the chain, [output] mode none, CFAR lists into a detection ring, [live]
# enable on a loopback port: the pages' maps are the backend's snapshots of
# its own maps, no map leaves as a result) -> chirp-tap --drain on the
# detection ring; OUTPUT=map_power instead runs the chain with its map
# output drained from the output ring; with pages, scripts/live-client.py reads
# /live/events as PAGES browsers would (every frame parsed, its map
# decoded). Delivered CPIs are counted over MEASURE_S seconds after the
# feeder's first pass (and, with pages, once every page has a frame); runs
# alternate none, PAGES, REPEATS times, and the table shows each run, the
# median of each side and their ratio (the criterion: >= 0.99).
#
# Environment: CHIRP_BUILD (default build), CHIRP_TEST_BACKEND (cpu or
# cuda; default cpu), GEOM (default 4x128x4096), MEASURE_S (default 10),
# REPEATS (default 2), PAGES (default 3), OUTPUT (none or map_power; default
# none), EXTRA_CFG (more section.key=value
# settings), OUT (a FILE.tsv: the runs as raw results, one row each — run,
# pages, cpi_per_s, page_fps (frames a second each page received),
# live_frames (frames chirpd sampled in the window), skipped (frames the
# pages skipped), geometry, backend — and FILE.meta beside it
# (scripts/bench-meta.sh, kind live); default none).
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-}
case $OUT in ''|*.tsv) ;; *) echo "bench-live: OUT '$OUT': want a FILE.tsv" >&2; exit 2;; esac
export CHIRP_BUILD=${CHIRP_BUILD:-build}
. tests/e2e/lib.sh
e2e_init bench_live
e2e_need chirp-feed chirp-tap

GEOM=${GEOM:-4x128x4096}
MEASURE_S=${MEASURE_S:-10}
REPEATS=${REPEATS:-2}
PAGES=${PAGES:-3}
OUTPUT=${OUTPUT:-none}
case $OUTPUT in none|map_power) ;; *) echo "bench-live: OUTPUT '$OUTPUT': want none or map_power" >&2; exit 2;; esac
IFS=x read -r C P R <<<"$GEOM"
now() { date +%s.%N; }
# metric NAME — its value from chirpd's /metrics (python: no curl on a bare GPU host).
metric() {
	"$PY" -c 'import sys, urllib.request
for l in urllib.request.urlopen(sys.argv[1], timeout=5).read().decode().splitlines():
    if l.split(" ")[0] == sys.argv[2]:
        print(l.split(" ")[1])' "http://127.0.0.1:$port/metrics" "$1"
}

# run PAGES N — one daemon run; prints "cps page_fps live_frames skipped".
run() {
	local pages=$1 n=$2 c0 c1 t0 t1 f0 f1 s0 s1 tap feed cl= islots fps=-
	# detections only: no output ring, the lists drained from the detection ring
	local ring=$OUT_RING-$n res=(output.mode=map_power)
	if [ "$OUTPUT" = none ]; then
		ring=$OUT_RING-det-$n
		res=(output.mode=none detections.ring="$ring" detections.slots=)
	fi
	port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	e2e_config cpi.channels="$C" cpi.pulses="$P" cpi.samples="$R" \
		waveform.pulse_width_s=2e-6 waveform.bandwidth_hz=5e6 \
		input.ring="$IN_RING-$n" output.ring="$OUT_RING-$n" input.slots= output.slots= \
		"${res[@]}" radar.prf_hz=10000 radar.carrier_hz=1e9 doppler.enable=true \
		cfar.enable=true cfar.pfa=1e-5 metrics.listen=127.0.0.1:$port live.enable=true \
		${EXTRA_CFG:-}
	: >"$CHIRPD_LOG"
	E2E_SLOW=4 e2e_start_chirpd
	"$CHIRP_TAP" -c "$CONF" -r "$ring" --drain -q 2>"$T/tap.log" &
	tap=$!
	e2e_track $tap
	e2e_wait_consumer "$ring" $tap
	"$CHIRP_FEED" -c "$CONF" --target 300,-6,2500 --snr-db 10 --prefilled --block -q 2>"$T/feed.log" &
	feed=$!
	e2e_track $feed
	e2e_wait 60 e2e_stat_ge cpis_out 10 || e2e_fail "no output after 60 s"
	islots=$(e2e_json status | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["rings"]["input_slots"])')
	e2e_wait 120 e2e_stat_ge cpis_out $((2 * islots)) || e2e_log "feeder's first pass not over after 120 s" >&2
	if [ "$pages" -gt 0 ]; then
		rm -f "$T/ready"
		"$PY" scripts/live-client.py "http://127.0.0.1:$port/live/events" --clients "$pages" \
			--ready-file "$T/ready" >"$T/pages-$n.json" 2>"$T/pages-$n.log" &
		cl=$!
		e2e_track $cl
		# (stderr: run's stdout is its figures)
		e2e_wait 30 test -e "$T/ready" || e2e_log "not every page had a frame after 30 s" >&2
	fi
	c0=$(e2e_stat cpis_out); f0=$(metric chirpd_live_frames_total); s0=$(metric chirpd_live_frames_skipped_total); t0=$(now)
	sleep "$MEASURE_S"
	c1=$(e2e_stat cpis_out); f1=$(metric chirpd_live_frames_total); s1=$(metric chirpd_live_frames_skipped_total); t1=$(now)
	if [ -n "$cl" ]; then
		kill -TERM $cl 2>/dev/null; wait $cl 2>/dev/null
		fps=$("$PY" -c 'import json, sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])["frames_per_s_per_client"])' \
			"$T/pages-$n.json" 2>/dev/null || echo -)
	fi
	kill $feed 2>/dev/null; wait $feed 2>/dev/null
	e2e_stop_chirpd >/dev/null 2>&1
	kill $tap 2>/dev/null; wait $tap 2>/dev/null
	"$PY" -c "import sys; print('%.1f' % ((int(sys.argv[2]) - int(sys.argv[1])) / (float(sys.argv[4]) - float(sys.argv[3]))))" \
		"$c0" "$c1" "$t0" "$t1" | tr -d '\n'
	echo " $fps $((f1 - f0)) $((s1 - s0))"
}

e2e_log "bench-live: $GEOM, output $OUTPUT, backend ${CHIRP_TEST_BACKEND:-cpu}, ${MEASURE_S} s per run, $REPEATS repeats, 0 and $PAGES pages"
none=() some=()
if [ -n "$OUT" ]; then
	mkdir -p "$(dirname "$OUT")" &&
		scripts/bench-meta.sh "${OUT%.tsv}.meta.tmp" live GEOM="$GEOM" MEASURE_S="$MEASURE_S" \
			REPEATS="$REPEATS" PAGES="$PAGES" OUTPUT="$OUTPUT" ${EXTRA_CFG:+EXTRA_CFG="$EXTRA_CFG"} \
			CHIRP_TEST_BACKEND="${CHIRP_TEST_BACKEND:-cpu}" scripts/bench-live.sh || exit 1
	printf 'run\tpages\tcpi_per_s\tpage_fps\tlive_frames\tskipped\tgeometry\tbackend\n' >"$T/live.tsv"
fi
printf '%-6s %-6s %12s %9s %12s %8s\n' run pages cpi_per_s page_fps live_frames skipped
k=0
for rep in $(seq 1 "$REPEATS"); do
	for pages in 0 "$PAGES"; do
		k=$((k + 1))
		read -r cps fps frames skipped <<<"$(run "$pages" $k)"
		printf '%-6s %-6s %12s %9s %12s %8s\n' "$rep" "$pages" "$cps" "$fps" "$frames" "$skipped"
		if [ "$pages" = 0 ]; then none+=("$cps"); else some+=("$cps"); fi
		[ -n "$OUT" ] && printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rep" "$pages" "$cps" "$fps" \
			"$frames" "$skipped" "$GEOM" "${CHIRP_TEST_BACKEND:-cpu}" >>"$T/live.tsv"
	done
done
if [ -n "$OUT" ]; then
	cp "$T/live.tsv" "$OUT" && mv "${OUT%.tsv}.meta.tmp" "${OUT%.tsv}.meta" || e2e_fail "cannot write $OUT"
fi
"$PY" - "${none[*]}" "${some[*]}" "$PAGES" <<'EOF'
import statistics, sys
none = [float(x) for x in sys.argv[1].split()]
some = [float(x) for x in sys.argv[2].split()]
mo, mn = statistics.median(none), statistics.median(some)
r = mn / mo if mo else 0
print(f"median: no page {mo:.1f} CPI/s (min {min(none):.1f} max {max(none):.1f}), "
      f"{sys.argv[3]} pages {mn:.1f} CPI/s (min {min(some):.1f} max {max(some):.1f}); "
      f"ratio {r:.4f}: {'PASS' if r >= 0.99 else 'FAIL'} (>= 0.99)")
EOF
