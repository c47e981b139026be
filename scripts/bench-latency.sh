#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench-latency.sh — chirpd's latency under load and its losses, next to the
# host's noise floor, all measured in one run (`make bench-latency`).
#
# Method (one fresh chirpd per row, so a backlog or a degraded state of one
# load never leaks into the next, and each row's counters start at zero; with
# streams = auto the load rows run the depth the capacity row's chirpd chose,
# so that capacity and loads measure one pipeline):
#   chirpd      the shipped conf/chirpd.conf with only the backend, the
#               geometry (channels, pulses, samples, format, output mode, the
#               LFM pulse width giving L samples at 25 MHz), unique ring and
#               socket names overridden, plus any --set you give. Nothing is
#               pinned unless you --set it.
#   producer    chirp-feed --prefilled: every free slot written before the
#               clock starts, then only commits (a digitizer's DMA), with
#               two echoes (gate 300 at -6 dBFS, gate R/2 at -20 dBFS),
#               noiseless, or in white noise at --noise-dbfs N (a CFAR needs
#               noise to estimate: on a noiseless scene its threshold is the
#               float error, a large share of the cells cross it and every
#               list fills to max_detections; the report counts each
#               window's detections and full lists); --rate
#               on an absolute CLOCK_MONOTONIC schedule that never bursts (a
#               wake > period/2 late restarts the schedule and counts a late
#               tick); drops when the input ring is full (= chirpd's
#               input_overruns).
#   consumer    build/bench/latency_probe on the output ring (with --set
#               output.mode=none and the radar chain: on the --set
#               detections.ring, each list timed by its input CPI): latency =
#               CLOCK_REALTIME at peek − the block's timestamp_ns (chirpd
#               forwards the producer's commit time). Warm-up from the first
#               result, then the measured window. It sleeps on the ring's
#               futex (its wake-up is part of the latency); --probe-spin makes
#               it poll instead (one busy core beside chirpd);
#               --probe-spin-us N polls up to N µs before each sleep
#               (chirp_ring_set_spin: awake while results come closer
#               than N µs apart).
#   placement   nothing is pinned unless asked: --set numa.cpus=LIST gives
#               chirpd's data path its CPUs (its main loop then moves to the
#               others), --tools-cpus LIST runs the producer and the probe
#               there (taskset), as a site keeps its digitizer driver and
#               consumers off the data path's CPUs (doc/latency.md, *Where
#               the threads run*).
#   recorder    each load row's chirpd keeps every CPI of the window in its
#               flight recorder (trace.records = rate x (measured + 5 s),
#               4096..131072, unless you --set trace.records), saved
#               after the window (chirpctl --json trace N) with the probe's
#               first_fs/last_fs: chirpd's own latency (input commit -> output
#               commit) over the same CPIs. Capacity and --soak rows: 4096.
#
# Definitions (also printed with the results):
#   capacity    CPIs/s delivered to the output ring, over the measured window
#               (--cap-seconds), with the input ring kept full by a lossless
#               saturating producer (chirp-feed --prefilled --block: commits as
#               soon as a slot is free, sleeps on the ring's futex, never
#               spins). Loads are percentages of this figure, same run.
#   lost        CPIs lost inside the measured window, counted by the probe
#               from the producer's first_sample numbering (missing CPIs, which
#               includes producer drops on a full input ring, CPIs chirpd lost
#               and output-ring drops), plus blocks flagged DISCONTINUITY with
#               no countable gap. in_ovr / out_drop: chirpd's input_overruns /
#               output_drops over the window (chirpctl stats before/after it).
#               late: the producer's late ticks over its whole run (warm-up
#               included): a late tick means it produced less than asked.
#   host noise  build/bench/noise_floor on chirpd's data-thread CPUs (chirpctl
#               status: numa.cpus; all online CPUs when chirpd binds none),
#               with chirpd stopped: a ~250 µs fixed compute block timed
#               20 000 times; host noise at p99 (p99.9) = the block's p99
#               (p99.9) − its p50: the excess a fixed job suffers from the host.
#               Also the lateness of a 1 ms absolute sleep.
#   floor       (cuda) build/bench/copy_floor at each load's rate, in windows
#               interleaved with chirpd's (floor, chirpd, floor, chirpd ...
#               at one load: a phase of host noise hits both alike): the
#               lossless floor. Every CPI's input bytes H2D and output bytes
#               D2H (chirpd's byte counts), 4 chunks over 2 streams, from
#               cudaHostRegister'ed slots, as many as chirpd's input and
#               output rings have (chirpctl status of the capacity row),
#               completion polled; on an absolute schedule that never skips:
#               a late tick queues its CPI, timed from the tick it was due,
#               as a lossless pipeline pays it. No chirpd, no FFT.
#   windows     --windows N (default 3) per load, each with a fresh chirpd
#               (and a floor window before each, CUDA); percentiles are
#               over every CPI of a load's windows together.
# Criteria (PASS/FAIL per row; exit status 0 regardless):
#   C1  at 90 % of capacity: 0 CPIs lost (chirpd's lost + input_overruns +
#       output_drops, every window).
#   C2  (cuda) at 80 %: chirpd's p99 <= 1.25 x the floor's p99.
#   C3  (cuda) at 80 %: chirpd's p99.9 <= 1.25 x the floor's p99.9.
#   With --backend cpu there is no copy: the floor does not apply, C2 and C3
#   say n/a and only losses are judged.
#
# Usage:
#   scripts/bench-latency.sh [--backend cpu|cuda] [--geometry CxPxR] [--ref-len L]
#       [--format cf32|sc16] [--mode complex|magnitude|power_db] [--warmup S]
#       [--measure S] [--cap-seconds S] [--loads "80 90"] [--windows N]
#       [--soak SECONDS [--soak-load 90]] [--set section.key=value]...
#       [--noise-samples N] [--out DIR] [--no-copy-floor] [--floor-chunks 4] [--probe-spin]
#       [--probe-spin-us N] [--tools-cpus LIST] [--radar-modes 1|2|3] [--noise-dbfs N]
#   scripts/bench-latency.sh --plot DIR      (table and PNG again from DIR's files)
# Environment: CHIRP_BUILD (default build), PLOT_PY (a python3 with
# matplotlib). Output in DIR (default build/bench-latency/DATE): report.md
# (command, machine, date, tables, criteria), results.tsv (every window,
# each load pooled, the host's noise), lat-load<PCT>-<W>.txt and
# lat-floor<PCT>-<W>.txt (raw latencies, µs), floor-*.txt (copy_floor's
# line per window), latency.png, every log, chirpd configuration and stats,
# host-stat.txt and windows.tsv (the host's steal time through each window),
# and with the CUDA backend gpu-mon.csv (nvidia-smi once a second: clocks,
# power, temperature, clock-event reasons, PCIe link; the report sums it up).
# Exit 0 (whatever the criteria say), 1 when the bench itself broke, 2 usage.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$(pwd)
cmdline="scripts/bench-latency.sh $*"

BUILD=${CHIRP_BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$root/$BUILD;; esac
backend=cpu geometry=4x128x4096 reflen=512 format=cf32 mode=complex
# Defaults: the loads the criteria judge, 3 windows each; at 4x128x4096
# on one GPU the whole run takes about 4-5 minutes (one 10-minute command).
warmup=3 measure=8 cap_s= loads="80 90" windows=3 soak= soak_load=90 floor_chunks=4
noise_n=20000 out= copy=1 plot_only= sets=() probe_spin= probe_spin_us= tools_cpus=
radar_modes=1 noise_dbfs=
START_TIMEOUT=${START_TIMEOUT:-60}   # chirpd start-up (FFT planning, CUDA init)

die() { echo "bench-latency: $*" >&2; exit 1; }
usage() { sed -n '/^# Usage:/,/^# Exit/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
	case $1 in
	--backend) backend=${2:?}; shift;;
	--geometry) geometry=${2:?}; shift;;
	--ref-len) reflen=${2:?}; shift;;
	--format) format=${2:?}; shift;;
	--mode) mode=${2:?}; shift;;
	--warmup) warmup=${2:?}; shift;;
	--measure) measure=${2:?}; shift;;
	--cap-seconds) cap_s=${2:?}; shift;;
	--loads) loads=${2:?}; shift;;
	--windows) windows=${2:?}; shift
		[[ $windows =~ ^[1-9][0-9]*$ ]] && [ "$windows" -le 20 ] ||
			{ echo "bench-latency: --windows wants 1..20" >&2; exit 2; };;
	--floor-chunks) floor_chunks=${2:?}; shift
		[[ $floor_chunks =~ ^[1-9][0-9]*$ ]] && [ "$floor_chunks" -le 64 ] ||
			{ echo "bench-latency: --floor-chunks wants 1..64" >&2; exit 2; };;
	--soak) soak=${2:?}; shift;;
	--soak-load) soak_load=${2:?}; shift;;
	--set) sets+=("${2:?}"); shift;;
	--radar-modes) radar_modes=${2:?}; shift
		[[ $radar_modes =~ ^[123]$ ]] || { echo "bench-latency: --radar-modes wants 1, 2 or 3" >&2; exit 2; };;
	--noise-samples) noise_n=${2:?}; shift;;
	--noise-dbfs) noise_dbfs=${2:?}; shift
		[[ $noise_dbfs =~ ^-?[0-9]+(\.[0-9]+)?$ ]] ||
			{ echo "bench-latency: --noise-dbfs wants a number of dB" >&2; exit 2; };;
	--out) out=${2:?}; shift;;
	--no-copy-floor) copy=0;;
	--probe-spin) probe_spin=1;;
	--probe-spin-us) probe_spin_us=${2:?}; shift
		[[ $probe_spin_us =~ ^[0-9]+$ ]] && [ "$probe_spin_us" -le 1000000 ] ||
			{ echo "bench-latency: --probe-spin-us wants 0..1000000 (µs)" >&2; exit 2; };;
	--tools-cpus) tools_cpus=${2:?}; shift
		[[ $tools_cpus =~ ^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$ ]] ||
			{ echo "bench-latency: --tools-cpus wants a cpu list like 8-15 or 8,10-11" >&2; exit 2; };;
	--plot) plot_only=${2:?}; shift;;
	-h|--help) usage;;
	*) echo "bench-latency: unknown argument '$1'" >&2; usage;;
	esac
	shift
done

# Detections only (--set output.mode=none with the radar chain): no output
# ring; the probe times the detection ring's lists (each carries its input
# CPI's timestamp and first sample), and the floor moves a list's bytes
# back instead of a cube's.
det_only= det_base= det_max=1024
for s in "${sets[@]}"; do
	case $s in
	output.mode=none) det_only=1;;
	output.mode=*) det_only=;;
	detections.ring=*) det_base=${s#detections.ring=};;
	cfar.max_detections=*) det_max=${s#cfar.max_detections=};;
	esac
done
if [ -n "$det_only" ]; then
	[ -n "$det_base" ] || { echo "bench-latency: output.mode=none needs --set detections.ring=NAME" >&2; exit 2; }
	[[ $det_max =~ ^[0-9]+$ ]] || { echo "bench-latency: cfar.max_detections '$det_max': want a count" >&2; exit 2; }
	mode=none
fi

# A python3 for JSON (stdlib only), and one with matplotlib for the PNG.
PY=$(command -v python3) || die "python3 is needed (JSON of chirpctl, the report)"
tools=()   # the producer's and the probe's command prefix (--tools-cpus)
if [ -n "$tools_cpus" ]; then
	command -v taskset >/dev/null || die "--tools-cpus needs taskset (util-linux)"
	taskset -c "$tools_cpus" true 2>/dev/null || die "--tools-cpus $tools_cpus: not cpus this process may use"
	tools=(taskset -c "$tools_cpus")
fi
find_plot_py() {
	local p
	for p in ${PLOT_PY:-} /usr/bin/python3 /opt/torch/.venv/bin/python3 "$PY"; do
		[ -x "$p" ] && "$p" -c 'import matplotlib' 2>/dev/null && { echo "$p"; return 0; }
	done
	return 1
}
report() {   # report DIR — table, criteria, TSV, then the PNG
	"$PY" "$root/scripts/latency-report.py" "$1" || return 1
	local pp
	if pp=$(find_plot_py); then
		"$pp" "$root/scripts/latency-report.py" --plot "$1" || echo "no PNG: plotting failed"
	else
		echo "no PNG: matplotlib missing (raw latencies kept in $1/lat-*.txt;" \
			"draw it elsewhere with: python3 scripts/latency-report.py --plot DIR)"
	fi
}
if [ -n "$plot_only" ]; then
	report "$plot_only"
	exit $?
fi

num_re='^[0-9]+([.][0-9]+)?$'
case $backend in cpu|cuda) ;; *) die "--backend '$backend': want cpu or cuda";; esac
IFS=x read -r C P R <<<"$geometry"
for v in "$C" "$P" "$R" "$reflen" "$noise_n"; do
	[[ $v =~ ^[0-9]+$ ]] && [ "$v" -gt 0 ] || die "geometry '$geometry', --ref-len, --noise-samples: want positive integers"
done
[ "$reflen" -le "$R" ] || die "--ref-len $reflen is longer than a range line ($R samples)"
for v in "$warmup" "$measure" ${cap_s:+"$cap_s"} ${soak:+"$soak"} "$soak_load" $loads; do
	[[ $v =~ $num_re ]] || die "'$v': want a number"
done
cap_s=${cap_s:-$measure}
if [ -n "$soak" ]; then loads=$soak_load; measure=$soak; windows=1; fi
for b in bin/chirpd bin/chirpctl bin/chirp-feed bench/latency_probe bench/noise_floor; do
	[ -x "$BUILD/$b" ] || die "$BUILD/$b is not built (make)"
done
if [ "$backend" = cuda ] && [ $copy = 1 ] && [ ! -x "$BUILD/bench/copy_floor" ]; then
	die "$BUILD/bench/copy_floor is not built (a CUDA build: nvcc at \$CUDA_HOME), or --no-copy-floor"
fi

out=${out:-$BUILD/bench-latency/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out" || die "cannot create $out"
out=$(cd "$out" && pwd)
rm -f "$out"/cases.tsv "$out"/windows.tsv "$out"/host-stat.txt "$out"/gpu-mon.csv "$out"/lat-*.txt "$out"/probe-*.txt "$out"/floor-*.txt "$out"/noise.txt "$out"/trace-*.json "$out"/trace-*.err
tmp=$(mktemp -d /tmp/chirp-bl.XXXXXX) || die "mktemp failed"   # short socket paths
uniq=chirp-bl-$$
pids=()

cleanup() {
	local p
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	pids=()
	rm -f /dev/shm/"$uniq"-* 2>/dev/null
}
trap 'cleanup; rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# wait_until SECONDS CMD... — run CMD every 0.1 s until it succeeds.
wait_until() {
	local n i
	n=$(awk -v t="$1" 'BEGIN { printf "%d", t * 10 }')
	shift
	for ((i = 0; i < n; i++)); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
	return 1
}
# wait_pid PID SECONDS — its exit status, or 124 after killing it.
wait_pid() {
	local i n=$(($2 * 10))
	for ((i = 0; i < n; i++)); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$1" 2>/dev/null; then kill -KILL "$1" 2>/dev/null; wait "$1" 2>/dev/null; return 124; fi
	wait "$1"
}
# forget PID — drop it from pids (it has been waited for).
forget() {
	local keep=() q
	for q in "${pids[@]}"; do [ "$q" = "$1" ] || keep+=("$q"); done
	pids=("${keep[@]}")
}
# stop PID — TERM, 10 s, then KILL; forgets it.
stop() {
	kill -TERM "$1" 2>/dev/null
	wait_pid "$1" 10 >/dev/null 2>&1
	forget "$1"
}

# write_conf FILE SOCK IN OUT [KEY=VALUE...] — conf/chirpd.conf with the
# overrides: the script's, then the row's extra ones, then every --set (a
# later one wins, so the user's --set beats the row's). Every key exists in
# the shipped file; an override that matches no line is an error.
write_conf() {
	local pw f=$1 s=$2 i=$3 o=$4
	shift 4
	pw=$(awk -v l="$reflen" 'BEGIN { printf "%.9g", l / 25e6 }')   # L samples at 25 MHz
	"$PY" - "$root/conf/chirpd.conf" "$f" \
		daemon.control_socket="$s" input.ring="$i" output.ring="$o" \
		processing.backend="$backend" cpi.channels="$C" cpi.pulses="$P" cpi.samples="$R" \
		input.format="$format" output.mode="$mode" waveform.type=lfm \
		waveform.sample_rate_hz=25e6 waveform.pulse_width_s="$pw" "$@" "${sets[@]}" <<'PYEOF'
import re, sys
src, dst, kv = sys.argv[1], sys.argv[2], {}
for a in sys.argv[3:]:
    k, _, v = a.partition("=")
    if "." not in k or not _:
        sys.exit("--set %r: want section.key=value" % a)
    kv[k] = v
lines, sec, used = [], None, set()
for line in open(src):
    m = re.match(r"\s*\[(\w+)\]", line)
    if m:
        sec = m.group(1)
    m = re.match(r"\s*(\w+)\s*=", line)
    if m and sec and "%s.%s" % (sec, m.group(1)) in kv:
        k = "%s.%s" % (sec, m.group(1))
        line = "%s = %s\n" % (m.group(1), kv[k])
        used.add(k)
    lines.append(line)
if set(kv) - used:
    sys.exit("no such key in %s: %s" % (src, ", ".join(sorted(set(kv) - used))))
open(dst, "w").write("".join(lines))
PYEOF
	[ "$radar_modes" -gt 1 ] || return 0
	# Radar modes 1 and 2: LFM pulses of L/2 and L/4 samples with other
	# windows ([waveform] is mode 0); chirp-feed then changes the mode
	# every CPI (--modes 0,1[,2]).
	awk -v l="$reflen" -v n="$radar_modes" 'BEGIN {
		split("hann blackman", win, " ")
		for (i = 1; i < n; i++)
			printf "\n[mode lfm_l%d]\nid = %d\ntype = lfm\npulse_width_s = %.9g\nwindow = %s\n",
				2 ^ i, i, int(l / 2 ^ i) / 25e6, win[i]
	}' >>"$f"
}

ctl() { "$BUILD/bin/chirpctl" -s "$sock" "$@"; }
json_get() {   # json_get FILE a.b.c — one value, "" when absent
	"$PY" -c '
import json, sys
o = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    o = o.get(k) if isinstance(o, dict) else None
print("" if o is None else o)' "$1" "$2" 2>/dev/null
}

have_trace=
case_no=0
# run_case NAME PCT RATE [WINDOW] — one fresh chirpd, producer at RATE CPI/s
# ("" = saturating, lossless), the probe's window; files NAME-* in $out.
run_case() {
	local name=$1 pct=$2 rate=$3 win=${4:-} conf in outr chirpd probe feed maxn secs=$measure
	local trn=4096 extra=() s
	case_no=$((case_no + 1))
	[ "$name" = capacity ] && secs=$cap_s
	conf=$out/chirpd-$name.conf sock=$tmp/c$case_no.sock
	in=/$uniq-$case_no-in outr=/$uniq-$case_no-out
	local probe_ring=$outr probe_step=()
	if [ -n "$det_only" ]; then   # the --set detection ring (one chirpd at a time)
		probe_ring=$det_base
		probe_step=(--fs-step $((P * R)))
	fi
	if [ -n "$rate" ] && [ -z "$soak" ]; then
		# A flight recorder that holds the whole run, so that chirpd's own
		# latency can be read over every CPI of the probe's window.
		# The window, plus 5 s for the time from its close to the fetch.
		trn=$(awk -v r="$rate" -v t="$(awk -v m="$secs" 'BEGIN { print m + 5 }')" \
			'BEGIN { n = r * t; i = int(n); if (i < n) i++; if (i < 4096) i = 4096;
				 if (i > 131072) i = 131072; print i }')
		extra=(trace.records="$trn")
		for s in "${sets[@]}"; do   # the user's --set trace.records wins
			case $s in trace.records=*) trn=${s#trace.records=}; extra=();; esac
		done
	fi
	write_conf "$conf" "$sock" "$in" "$outr" "${extra[@]}" || die "cannot write $conf"
	"$BUILD/bin/chirpd" -c "$conf" >"$out/chirpd-$name.log" 2>&1 &
	chirpd=$!; pids+=($chirpd)
	wait_until "$START_TIMEOUT" ctl ping ||
		{ tail -5 "$out/chirpd-$name.log" >&2; die "$name: chirpd did not answer ping within $START_TIMEOUT s"; }
	ctl --json status >"$out/status-$name.json" || die "$name: chirpctl status failed"
	# room for every sample of the window (capacity: unknown rate, 4 M)
	maxn=$(awk -v r="${rate:-0}" -v s="$secs" 'BEGIN { n = (r > 0) ? r * s * 1.5 + 100000 : 4000000; printf "%d", n }')
	"${tools[@]}" "$BUILD/bench/latency_probe" --ring "$probe_ring" "${probe_step[@]}" --warmup "$warmup" --measure "$secs" --wait 10 \
		--first-timeout "$START_TIMEOUT" --max-samples "$maxn" --raw "$out/lat-$name.txt" \
		--marker "$tmp/open-$case_no" --linger ${soak:+--progress 30} ${probe_spin:+--spin} ${probe_spin_us:+--spin-us $probe_spin_us} >"$out/probe-$name.txt" 2>"$out/probe-$name.log" &
	probe=$!; pids+=($probe)
	wait_until 15 grep -q attached "$out/probe-$name.log" ||
		{ cat "$out/probe-$name.log" >&2; die "$name: the probe did not attach to $outr"; }
	local pace=(--block)
	[ -n "$rate" ] && pace=(--rate "$rate")
	local sched=()
	[ "$radar_modes" -gt 1 ] && [ "$name" != capacity ] && sched=(--modes "$(seq -s, 0 $((radar_modes - 1)))")
	local noise=(--noiseless)
	[ -n "$noise_dbfs" ] && noise=(--noise-dbfs "$noise_dbfs")
	"${tools[@]}" "$BUILD/bin/chirp-feed" --ring "$in" -c "$conf" --target 300,-6 --target $((R / 2)),-20 "${noise[@]}" --prefilled \
		"${pace[@]}" "${sched[@]}" -q --wait 10 >"$out/feed-$name.log" 2>&1 &
	feed=$!; pids+=($feed)
	wait_until "$(awk -v w="$warmup" -v t="$START_TIMEOUT" 'BEGIN { print w + t }')" test -e "$tmp/open-$case_no" ||
		{ cat "$out/probe-$name.log" "$out/feed-$name.log" >&2; die "$name: the measured window never opened"; }
	local w_open=$EPOCHREALTIME
	ctl --json stats >"$out/stats0-$name.json" || die "$name: chirpctl stats failed"
	[ -n "$soak" ] && echo "  $name: window open, $secs s (progress every 30 s in $out/probe-$name.log)"
	# The summary line closes the window (the probe keeps draining after it).
	wait_until "$(awk -v s="$secs" 'BEGIN { printf "%d", s + 60 }')" grep -q '^probe ' "$out/probe-$name.txt" ||
		{ cat "$out/probe-$name.log" >&2; die "$name: no summary from the probe $secs s after its window opened"; }
	printf '%s\t%s\t%s\n' "$name" "$w_open" "$EPOCHREALTIME" >>"$out/windows.tsv"
	ctl --json stats >"$out/stats1-$name.json" || die "$name: chirpctl stats failed"
	if [ "$have_trace" != 0 ]; then   # `chirpctl trace` is new; tolerate its absence
		if ctl --json trace "$trn" >"$out/trace-$name.json" 2>"$tmp/trace.err"; then
			have_trace=1
		elif cat "$out/trace-$name.json" >>"$tmp/trace.err" 2>/dev/null &&   # --json: the reply
			[ "$trn" != 4096 ] && ctl --json trace 4096 >"$out/trace-$name.json" 2>/dev/null; then
			# chirpd (or chirpctl) cannot reply with N records: its last
			# 4096 are saved instead, and the report says "partial".
			have_trace=1
			echo "  $name: chirpctl trace $trn failed ($(head -c 200 "$tmp/trace.err" | tr -s '\n' ' '));" \
				"saved the last 4096 records" | tee "$out/trace-$name.err"
		else
			rm -f "$out/trace-$name.json"
			[ -n "$have_trace" ] || have_trace=0
		fi
	fi
	stop "$feed"
	kill -TERM "$probe" 2>/dev/null
	wait_pid "$probe" 30
	local prc=$?
	forget "$probe"
	stop "$chirpd"
	rm -f /dev/shm"$in" /dev/shm"$outr"
	[ $prc -eq 0 ] || { cat "$out/probe-$name.log" >&2; die "$name: the probe failed (exit $prc)"; }
	printf '%s\t%s\t%s\tchirpd\t%s\n' "$name" "$pct" "${rate:-saturated}" "$win" >>"$out/cases.tsv"
}

# run_floor PCT RATE WINDOW — one window of the lossless copy floor at RATE.
run_floor() {
	local pct=$1 rate=$2 win=$3 inb outb name=floor$1-$3
	if [ "$format" = cf32 ]; then inb=$((C * P * R * 8)); else inb=$((C * P * R * 4)); fi
	case $mode in
	complex) outb=$((C * P * R * 8));;
	none) outb=$((80 + 32 * det_max));;   # a detection list's slot (chirp/detect.h)
	*) outb=$((C * P * R * 4));;
	esac
	# registering the slots and 20 warm-up CPIs, then the windows
	timeout -k 5 $((${measure%.*} + ${warmup%.*} + 90)) "$BUILD/bench/copy_floor" \
		--in-bytes "$inb" --out-bytes "$outb" --rate "$rate" --seconds "$measure" --warmup "$warmup" \
		--chunks "$floor_chunks" --streams 2 --slots "$in_slots" --out-slots "$out_slots" \
		--raw "$out/lat-$name.txt" >"$out/floor-$name.txt" 2>"$out/floor-$name.log" ||
		{ cat "$out/floor-$name.log" >&2; die "copy_floor at $rate CPI/s failed"; }
	printf '%s\t%s\t%s\tfloor\t%s\n' "$name" "$pct" "$rate" "$win" >>"$out/cases.tsv"
}

# ---- run ----
{
	echo "command	$cmdline"
	echo "date	$(date -u '+%Y-%m-%d %H:%M:%S UTC')"
	echo "machine	$(hostname), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))$(command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | sed 's/^/, /')"
	echo "commit	$(scripts/bench-meta.sh /dev/stdout latency - | sed -n 's/^commit\t//p')"
	echo "setup	backend $backend, ${C}x${P}x${R} $format -> $mode, L = $reflen$([ "$radar_modes" -gt 1 ] && echo ", $radar_modes radar modes (L, L/2$([ "$radar_modes" -gt 2 ] && echo ", L/4")), the mode changing every CPI"); shipped conf/chirpd.conf otherwise${sets[*]:+, plus ${sets[*]}}; echoes at gate 300 (-6 dBFS) and $((R / 2)) (-20 dBFS), $([ -n "$noise_dbfs" ] && echo "noise at $noise_dbfs dBFS" || echo "noiseless"); probe $([ -n "$probe_spin" ] && echo "polls (--probe-spin)" || { [ -n "$probe_spin_us" ] && echo "polls ${probe_spin_us} µs, then sleeps on the ring's futex (--probe-spin-us)"; } || echo "sleeps on the ring's futex")"
	[ -n "$tools_cpus" ] && echo "tools	producer and probe on cpus $tools_cpus (--tools-cpus)"
	echo "windows	$windows per load$([ "$backend" = cuda ] && [ $copy = 1 ] && echo ", each after a floor window"), warm-up $warmup s, measured $measure s each, capacity over $cap_s s$([ -n "$soak" ] && echo ", soak")"
} >"$out/meta.tsv"
sed 's/\t/: /' "$out/meta.tsv"

# The host's own CPU accounting through the run: /proc/stat's aggregate cpu
# line 10 times a second (bash builtins only: no process per sample), so the
# report can say how much of each window the hypervisor took (steal) -- a
# VM-wide slowdown that a 5-second noise measurement with chirpd stopped
# cannot see. host-stat.txt: "EPOCHREALTIME cpu user nice system idle
# iowait irq softirq steal ..."; windows.tsv: each row's window open/close.
stat_sampler() {
	local line fd
	exec {fd}<> <(:)   # a pipe nobody writes: read -t below is the sleep
	while :; do
		read -r line </proc/stat || return
		echo "$EPOCHREALTIME $line"
		read -r -t 0.1 -u "$fd" _
	done
}
stat_sampler >"$out/host-stat.txt" 2>/dev/null &
pids+=($!)

# The GPU's own state through the run (CUDA): clocks, power, temperature,
# the driver's clock-event reasons, PCIe link, once a second, so that a
# stretch of slow GPU time in the flight recorder can be matched with (or
# ruled out as) a clock or power event. Killed with everything else.
if [ "$backend" = cuda ] && command -v nvidia-smi >/dev/null; then
	q=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu,pcie.link.gen.current,pcie.link.width.current
	if nvidia-smi --query-gpu=clocks_event_reasons.active --format=csv,noheader >/dev/null 2>&1; then
		q=$q,clocks_event_reasons.active
	elif nvidia-smi --query-gpu=clocks_throttle_reasons.active --format=csv,noheader >/dev/null 2>&1; then
		q=$q,clocks_throttle_reasons.active
	fi
	echo "$q" >"$out/gpu-mon.csv"
	nvidia-smi --query-gpu="$q" --format=csv,noheader,nounits -lms 1000 >>"$out/gpu-mon.csv" 2>"$tmp/gpu-mon.err" &
	pids+=($!)
fi

echo "capacity: saturating lossless producer, $cap_s s ..."
run_case capacity "" ""
cap=$("$PY" -c 'import re,sys; print(re.search(r"rate=([0-9.]+)", open(sys.argv[1]).read()).group(1))' "$out/probe-capacity.txt")
awk -v c="$cap" 'BEGIN { exit !(c > 0) }' || die "capacity measured as $cap CPI/s"
cpus=$(json_get "$out/status-capacity.json" numa.cpus)
[ -n "$cpus" ] || cpus=$(cat /sys/devices/system/cpu/online 2>/dev/null)
echo "capacity: $cap CPI/s; chirpd's data-path CPUs: ${cpus:-all}"
printf 'capacity\t%s\ncpus\t%s\n' "$cap" "$cpus" >>"$out/meta.tsv"
# streams = auto measures depths 2-4 at every start and may choose another
# one for another chirpd: the load rows would then run a pipeline other than
# the one the capacity (their 100 %) was measured with. So the depth the
# capacity row's chirpd chose is the load rows' `streams` (one start's
# choice, held for the run, as an operator's chirpd holds it), unless a
# --set gives streams.
user_streams=
for s in "${sets[@]}"; do case $s in processing.streams=*) user_streams=1;; esac; done
depth=$(json_get "$out/status-capacity.json" depth)
choice=$(json_get "$out/status-capacity.json" depth_choice)
if [ -z "$user_streams" ] && [ -n "$depth" ] && [ "$depth" -gt 0 ] 2>/dev/null; then
	case $choice in
	auto*)
		sets+=("processing.streams=$depth")
		echo "capacity: streams = auto chose depth $depth ($choice); the load rows run streams = $depth"
		printf 'depth\t%s (%s); load rows: streams = %s\n' "$depth" "$choice" "$depth" >>"$out/meta.tsv";;
	*)
		printf 'depth\t%s (%s)\n' "$depth" "${choice:-fixed}" >>"$out/meta.tsv";;
	esac
fi

echo "noise floor on CPUs ${cpus:-all} ($noise_n x 250 us block, 2000 x 1 ms sleep) ..."
"$BUILD/bench/noise_floor" ${cpus:+--cpus "$cpus"} --samples "$noise_n" >"$out/noise.txt" ||
	die "noise_floor failed"

# Radar modes: a prefilled producer keeps each slot's payload only while
# the slot always carries the same mode, i.e. while the mode schedule's
# length divides the slot count; otherwise it must write every CPI anew
# and cannot keep up. So the capacity row runs mode 0 only (the same
# pipeline and filters), and the load rows fix the input ring at the
# capacity row's auto size rounded up to a multiple of the schedule.
mode_slots=
if [ "$radar_modes" -gt 1 ]; then
	mode_slots=$(json_get "$out/status-capacity.json" rings.input_slots)
	[[ $mode_slots =~ ^[0-9]+$ ]] || die "chirpctl status has no rings.input_slots"
	mode_slots=$(( (mode_slots + radar_modes - 1) / radar_modes * radar_modes ))
	sets+=("input.slots=$mode_slots")
	printf 'modes	capacity with mode 0 only; load rows: the mode changing every CPI, input.slots = %s (a multiple of the %s-mode schedule)\n' \
		"$mode_slots" "$radar_modes" >>"$out/meta.tsv"
fi

# The floor's slots: as many as chirpd's rings have (the capacity row's
# chirpd; slots = auto sizes them from the capacity it measures at start).
floor=
if [ "$backend" = cuda ] && [ $copy = 1 ] && [ -z "$soak" ]; then
	floor=1
	in_slots=$(json_get "$out/status-capacity.json" rings.input_slots)
	if [ -n "$det_only" ]; then
		out_slots=$(json_get "$out/status-capacity.json" radar.ring_slots)
	else
		out_slots=$(json_get "$out/status-capacity.json" rings.output_slots)
	fi
	[[ $in_slots =~ ^[0-9]+$ ]] && [[ $out_slots =~ ^[0-9]+$ ]] ||
		die "chirpctl status has no rings.input_slots/output_slots for the floor"
	[ -n "$mode_slots" ] && in_slots=$mode_slots
	[ "$in_slots" -gt 1024 ] && in_slots=1024   # copy_floor's most
	[ "$out_slots" -gt 1024 ] && out_slots=1024
	printf 'floor\t%s chunks over 2 streams, %s input and %s output slots\n' \
		"$floor_chunks" "$in_slots" "$out_slots" >>"$out/meta.tsv"
fi
for pct in $loads; do
	rate=$(awk -v c="$cap" -v p="$pct" 'BEGIN { printf "%.3f", c * p / 100 }')
	for ((w = 1; w <= windows; w++)); do
		if [ -n "$floor" ]; then
			echo "load $pct %, window $w/$windows: floor at $rate CPI/s ..."
			run_floor "$pct" "$rate" "$w"
		fi
		echo "load $pct %, window $w/$windows: chirpd at $rate CPI/s, warm-up $warmup s, measured $measure s ..."
		run_case "load$pct-$w" "$pct" "$rate" "$w"
	done
done
cleanup
echo
report "$out" || die "the report failed"
echo "files in $out"
exit 0
