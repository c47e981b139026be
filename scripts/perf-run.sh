#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# perf-run.sh gpu|cpu OUTDIR [STEP...] — the benchmarks behind
# doc/performance.md, each writing its raw results and their provenance
# (KIND.tsv + KIND.meta, scripts/bench-meta.sh) into one dated folder,
# OUTDIR/YYYY-MM-DD-<host> (PERF_DIR=NAME picks another name: two commands
# of one run on either side of midnight), then a summary table last.
# `scripts/perf-run.sh gpu doc/perf` writes straight into the page's results;
# `make bench-report` then regenerates the page.
#
# gpu (a GPU host, after `source .deps/unpack.sh` where it is offline):
#   build       make -j all (the CUDA backend and benches)          <= 150 s
#   test        test_pc_cuda, test_pc, test_beam_cuda, test_pc_beams_cuda:
#               pass/fail on stdout                                 <= 180 s
#   e2e         the GPU end-to-end tests (tests/e2e/gpu_*.sh)   <= 90 s each
#   throughput  bench_gpu at 4x128x4096 and 16x128x9000: (a) copy limits,
#               (b) the naive 2-stream loop, (c) the backend alone; then
#               (d) the daemon at 4x128x4096 cf32->complex, or on every
#               row with DAEMON_ROWS=all (scripts/bench-daemon-gpu.sh)
#               -> throughput.tsv                   <= 60 (all: 260) + 300 s
#               (bench_gpu also times (c') with the radar mode changing
#               every CPI: the column c_registered_mode_switch)
#   cupy        scripts/bench-cupy.py on the same CPI shapes -> cupy.tsv
#               (compared with (c) of the throughput step, same run) <= 45 s
#   latency     scripts/bench-latency.sh --backend cuda, its defaults
#               (loads 80 and 90, 3 windows each, against the lossless
#               floor) at 4x128x4096 -> latency.tsv                  <= 480 s
#   modes       scripts/bench-latency.sh --backend cuda --radar-modes 3
#               --loads 80: the same at 80 %, the mode changing every CPI
#               among three (LFM of L, L/2, L/4 samples) -> modes.tsv
#               (compared with the same folder's latency.tsv)         <= 300 s
#   radar       build/bench/radar_gpu (the radar chain against the copy
#               limit and compression alone) -> radar.tsv, and
#               scripts/bench-cupy.py --chain on the same CPIs
#               -> radar_cupy.tsv                               <= 90 + 60 s
#   detect      the daemon with the chain, detections only (no output
#               ring: only the lists cross PCIe back), at 4x128x4096 and
#               16x128x9000 (scripts/bench-daemon-gpu.sh) -> detect.tsv
#               <= 150 s; then its latency at 80 % of capacity, detections
#               only, timed on the detection ring (scripts/bench-latency.sh)
#               -> detect_latency.tsv                                <= 300 s
#   startup     scripts/bench-startup.sh: five starts in a row, the
#               capacity and depth each decided -> startup.tsv   <= 150 s
#   net         scripts/bench-net.sh --backend cuda --senders 4 --threads 4
#               (a receive thread per sending thread; NET_ARGS: other
#               options instead of those two), 8220-byte datagrams, a 60 s
#               hold: chirp-recv into chirpd against the loopback ceiling
#               and a naive receiver (chirp-recv --batch 1 --threads 1),
#               one run -> net.tsv                                 <= 360 s
#   publish     scripts/bench-publish.sh, backend cuda: the chain's
#               detection lists published on ZeroMQ (chirp-sub subscribing)
#               and not, at capacity and paced at 2000 CPI/s, 2 x 2 runs
#               of 8 s each way -> publish.tsv                     <= 300 s
#   multigpu    scripts/bench-multi-gpu.sh --all: one chirpd per GPU, the
#               copy floor of all GPUs at once, the host calibration
#               (chirpd-calibrate-host), every instance at 80 % and at 95 %
#               of the capacity its status reports, kill -9 of one and its
#               restart -> multigpu.tsv, multigpu-report.md (criteria) and
#               multigpu-run.tsv (its run's meta); MULTI_GPU_ARGS: more
#               options (windows); the raw logs stay in
#               build/perf-run/multigpu/logs.tar.gz                 <= 420 s
#   restart     scripts/bench-restart.sh 3: kill -9 and restart under load,
#               time to output again and the start-up phases
#               -> restart.tsv; with PERF_HUGEPAGES=1 (as root: it mounts
#               /dev/hugepages and grows the huge page pool for the
#               rings, then gives the pages back) the same with both rings
#               on huge pages -> restart_hugepages.tsv         <= 120 + 120 s
#   live        scripts/bench-live.sh, backend cuda: capacity of the chain
#               detections only (output none, a detection ring; the pages'
#               maps are the GPU's snapshots) with [live] enable, no page
#               open and three (SSE clients, scripts/live-client.py),
#               2 x 2 runs of 10 s -> live.tsv                     <= 200 s;
#               then scripts/bench-latency.sh --backend cuda --loads 80 on
#               the same detections-only chain with one page open
#               throughout -> live_latency.tsv                     <= 300 s
#   live_latency  that latency run alone
#   beams_cpu   scripts/bench-beams-cpu.sh: the CPU chain with beams
#               (16 channels, 16 beams, 128 x 4096) against numpy's matmul
#               and FFTs, one thread each, 3 interleaved rounds
#               -> beams_cpu.tsv                                   <= 120 s
#   beams       scripts/bench-beams-gpu.sh: the daemon with 16 beams at
#               16x128x4096, detections only, against the H2D copy limit of
#               the same CPI, with the pointing fixed and changing every
#               CPI, 2 x 2 runs -> beams.tsv                         <= 240 s;
#               then its latency at 80 % of capacity (bench-latency.sh,
#               2 windows, the echoes in noise at -40 dBFS)
#               -> beams_latency.tsv                                 <= 300 s
#   beam        build/bench/beam_gpu: beamforming on device data at
#               C:B = 16:16, 64:8, 64:32 over 128 x 4096 columns, the fused
#               kernel (its default and other beam-group / column pairs)
#               against cublasCgemm and a device-to-device copy, with the
#               per-CPI weights and MVDR steps -> beam.tsv           <= 90 s
# One remote command may be limited to 10 minutes: the whole command has a
# budget (PERF_BUDGET_S, default 540 s; 0: none) that no step may overrun,
# and a step left without time is reported "not run". The steps' limits add
# up to more than that, so split them in three commands into the same folder:
#   scripts/perf-run.sh gpu OUTDIR build test e2e throughput cupy
#   scripts/perf-run.sh gpu OUTDIR latency
#   scripts/perf-run.sh gpu OUTDIR modes
#   scripts/perf-run.sh gpu OUTDIR net
#   scripts/perf-run.sh gpu OUTDIR publish beam
#   scripts/perf-run.sh gpu OUTDIR live
# (the later ones use the first one's build; on a fresh machine: build
# latency, build modes, build net, build publish)
# (no STEP: all of them, one after the other).
#
# cpu (a CPU host with scripts/install-deps.sh --bench: scipy, GNU Radio):
#   build       make -j all
#   compare     scripts/bench-compare.sh: chirpd's CPU backend against scipy
#               and GNU Radio, one thread each -> compare.tsv
#   latency     scripts/bench-latency.sh --backend cpu (losses judged only:
#               no copy, no floor) -> latency.tsv
#   beams_cpu   as on a GPU host (the CPU chain with beams against numpy)
#
# PERF_LAT_ARGS: more bench-latency.sh options for every latency run (they
# come last and win, e.g. "--windows 1 --measure 15" for a short command).
# Each step runs under its own `timeout`; a step that fails or times out is
# reported FAILED in the summary and the next one still runs. Exit 0 when
# every step passed (or was skipped for a missing tool), 1 otherwise, 2 usage.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
usage() { sed -n '3,/^# every step passed/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 2 ] || usage
host_kind=$1 outdir=$2
shift 2
case $host_kind in
gpu) all="build test e2e throughput cupy latency modes radar detect startup net publish live multigpu restart beams_cpu beam beams"
     parts="live_latency";;   # part of a step of all, runnable alone
cpu) all="build compare latency beams_cpu" parts=;;
*) echo "perf-run: '$host_kind': want gpu or cpu" >&2; usage;;
esac
steps=${*:-$all}
for s in $steps; do
	case " $all $parts " in *" $s "*) ;; *) echo "perf-run: no step '$s' on a $host_kind host (steps: $all $parts)" >&2; exit 2;; esac
done
budget=${PERF_BUDGET_S:-540}
[[ $budget =~ ^[0-9]+$ ]] || { echo "perf-run: PERF_BUDGET_S '$budget': want seconds (0: none)" >&2; exit 2; }
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
BUILD=build
export CHIRP_BUILD=$BUILD

# nvcc may live elsewhere than /usr/local/cuda on a GPU host.
if [ -z "${CUDA_HOME:-}" ] && [ ! -x /usr/local/cuda/bin/nvcc ] && command -v nvcc >/dev/null; then
	CUDA_HOME=$(dirname "$(dirname "$(command -v nvcc)")")
	export CUDA_HOME
fi

# The folder: the UTC date and a short description of the machine (its GPU,
# else its CPU model, and its CPU count), lowercase, dashes only.
slug() { tr 'A-Z' 'a-z' | sed 's/([^)]*)//g; s/[^a-z0-9]\{1,\}/-/g; s/^-//; s/-$//' | cut -c1-40 | sed 's/-$//'; }
if [ -z "${PERF_DIR:-}" ]; then
	desc=
	if [ "$host_kind" = gpu ] && command -v nvidia-smi >/dev/null; then
		desc=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | slug)
		ngpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | grep -c .)
		[ -n "$desc" ] && [ "$ngpu" -gt 1 ] && desc=$desc-x$ngpu   # a host of N GPUs
	fi
	[ -n "$desc" ] || desc=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1 | slug)
	PERF_DIR=$(date -u +%Y-%m-%d)-${desc:-host}-$(nproc)cpu
fi
case $PERF_DIR in */*|.*|'') echo "perf-run: PERF_DIR '$PERF_DIR': a plain folder name" >&2; exit 2;; esac
# Paths stay relative to the tree's root (the commands recorded in the
# metas then read the same on any checkout).
dir=${outdir%/}/$PERF_DIR
mkdir -p "$dir" || { echo "perf-run: cannot create $dir" >&2; exit 1; }
work=$BUILD/perf-run   # bulky outputs that stay out of the results folder
mkdir -p "$work"
echo "perf-run: $host_kind steps: $steps -> $dir"
# runs.tsv: every perf-run command that wrote into this folder (the
# performance page's headline names them)
printf '%s\t%s\n' "$(date -u '+%Y-%m-%d %H:%M:%S UTC')" "scripts/perf-run.sh $host_kind $outdir $steps" >>"$dir/runs.tsv"
results=()   # "step<TAB>status<TAB>figures" for the summary
status=0
note() { results+=("$1	$2	$3"); case $2 in ok|skipped) ;; *) status=1;; esac; }
# drop KIND — a failed step publishes nothing: its meta and any partial
# results go, so that the page never shows figures of a run that broke.
drop() { rm -f "$dir/$1.meta" "$dir/$1.tsv"; }

# meta KIND COMMAND... — KIND.meta beside KIND.tsv.
meta() { local k=$1; shift; scripts/bench-meta.sh "$dir/$k.meta" "$k" "$@"; }
# The whole command's budget (PERF_BUDGET_S, default 540 s: one remote
# command may be limited to 10 minutes, and the summary must come out
# before that): no step is given more than what is left, and a step that
# would start with less than 30 s left is not run (said so in the summary,
# status 1: run it in the next command).
t_end=$((SECONDS + budget))
left() { if [ "$budget" -eq 0 ]; then echo 100000; else echo $((t_end - SECONDS)); fi; }
# run_step LIMIT_S LOG COMMAND... — COMMAND under timeout (LIMIT_S, or what
# is left of the budget if less), output in LOG; its exit status (124:
# timed out).
run_step() {
	local lim=$1 log=$2 l
	shift 2
	l=$(left)
	[ "$l" -lt "$lim" ] && lim=$l
	[ "$lim" -ge 1 ] || { echo "out of time budget" >"$log"; return 124; }
	timeout -k 10 "$lim" "$@" >"$log" 2>&1
}

step_build() {
	local log=$work/build.log
	if run_step 150 "$log" make -j"$JOBS" all; then
		note build ok "$(tail -1 "$log")"
	else
		tail -20 "$log"
		note build FAILED "see $log"
	fi
}

step_test() {
	local t rc line
	for t in test_pc_cuda test_pc test_beam_cuda test_pc_beams_cuda; do
		if [ ! -x "$BUILD/tests/$t" ]; then note "$t" FAILED "not built"; continue; fi
		run_step 45 "$work/$t.log" "$BUILD/tests/$t"
		rc=$?
		line=$(grep -E '^\[ *(PASSED|FAILED) *\] [0-9]' "$work/$t.log" | tr '\n' ' ')
		echo "$t: exit $rc ${line:-(no cmocka summary)}"
		if [ $rc -eq 0 ]; then note "$t" ok "$line"; else note "$t" FAILED "exit $rc $line"; fi
	done
}

step_e2e() {
	local f rc n=0 bad=0 skip=0 name
	for f in tests/e2e/gpu_*.sh; do
		name=$(basename "$f" .sh)
		CHIRP_BUILD=$BUILD run_step 90 "$work/e2e-$name.log" bash "$f"
		rc=$?
		n=$((n + 1))
		case $rc in
		0) echo "ok    $name";;
		77) echo "skip  $name: $(tail -1 "$work/e2e-$name.log")"; skip=$((skip + 1));;
		*) echo "FAIL  $name (exit $rc, $work/e2e-$name.log)"; tail -5 "$work/e2e-$name.log"; bad=$((bad + 1));;
		esac
	done
	if [ $bad -eq 0 ]; then note e2e ok "$n GPU tests, $skip skipped"; else note e2e FAILED "$bad of $n failed"; fi
}

step_throughput() {
	local cmd=("$BUILD/bench/bench_gpu" --depths "${DEPTHS:-2,3,4}" --reps 5
		--daemon-tsv "$dir/daemon.tsv" --tsv "$dir/throughput.tsv")
	# (d) first, so that the bench_gpu table carries it and its ratios:
	# the headline row, or every row of the table with DAEMON_ROWS=all
	# (about 25 s a row)
	local dcfg=4x128x4096:cf32:complex dlim=60
	[ "${DAEMON_ROWS:-}" = all ] && dcfg= dlim=260
	CONFIGS=$dcfg DAEMON_STREAMS=auto MEASURE_S=5 \
		run_step $dlim "$work/daemon.log" scripts/bench-daemon-gpu.sh "$dir/daemon.tsv" ||
		{ tail -5 "$work/daemon.log"; echo "(d) failed: the table goes without the daemon"; : >"$dir/daemon.tsv"; }
	meta throughput "${cmd[@]}"
	if run_step 300 "$dir/throughput.log" "${cmd[@]}"; then
		note throughput ok "$(awk -F'\t' '$1 == "4x128x4096" && $2 == "cf32" && $3 == "complex" { if ($10 > b) { b = $10; l = sprintf("4x128x4096 cf32: (c) %.2f GS/s, (a) both %.2f, (b) %.2f, (d) %.2f", $10, $6, $7, $11) } } END { print l }' "$dir/throughput.tsv")"
	else
		tail -5 "$dir/throughput.log"
		drop throughput
		note throughput FAILED "see $dir/throughput.log"
	fi
}

step_cupy() {
	local py=python3 rc
	for p in ${CHIRP_TEST_PY:-} /opt/torch/.venv/bin/python3 /usr/bin/python3 python3; do
		command -v "$p" >/dev/null && "$p" -c 'import cupy' 2>/dev/null && { py=$p; break; }
	done
	meta cupy "$py" scripts/bench-cupy.py --out "$dir/cupy.tsv"
	run_step 45 "$dir/cupy.log" "$py" scripts/bench-cupy.py --out "$dir/cupy.tsv"
	rc=$?
	case $rc in
	0) note cupy ok "$(awk -F'\t' 'NR > 1 { printf "%s %.3f ms  ", $2, $7 }' "$dir/cupy.tsv")";;
	77) drop cupy; note cupy skipped "$(tail -1 "$dir/cupy.log")";;
	*) tail -5 "$dir/cupy.log"; drop cupy; note cupy FAILED "exit $rc";;
	esac
}

# step_latency KIND LIMIT_S ARG... — scripts/bench-latency.sh ARG... into
# KIND.tsv, KIND-report.md (its criteria lines) and KIND-run.tsv (its run's
# meta: capacity, setup, floor).
step_latency() {
	local kind=$1 lim=$2 raw=$work/$1 cmd
	shift 2
	cmd=(scripts/bench-latency.sh "$@" ${PERF_LAT_ARGS:-} --out "$raw")
	meta "$kind" "${cmd[@]}"
	if run_step "$lim" "$work/$kind.log" "${cmd[@]}" && [ -s "$raw/results.tsv" ]; then
		cp "$raw/results.tsv" "$dir/$kind.tsv" && cp "$raw/report.md" "$dir/$kind-report.md" &&
			cp "$raw/meta.tsv" "$dir/$kind-run.tsv" || { drop "$kind"; note "$kind" FAILED "cannot copy its results"; return; }
		note "$kind" ok "$(grep -E '^(PASS|FAIL|n/a ) C[123]' "$raw/report.md" | cut -c1-60 | tr '\n' ';')"
	else
		tail -5 "$work/$kind.log"
		drop "$kind"
		note "$kind" FAILED "see $work/$kind.log"
	fi
}

step_radar() {
	local py=python3 rc cmd=("$BUILD/bench/radar_gpu" --reps 5 --tsv "$dir/radar.tsv")
	meta radar "${cmd[@]}"
	if run_step 90 "$dir/radar.log" "${cmd[@]}"; then
		note radar ok "$(awk -F'\t' 'NR > 1 { printf "%s chain %.2f GS/s, e2e %.0f %% of H2D; ", $1, $6, 100 * $8 }' "$dir/radar.tsv")"
	else
		tail -5 "$dir/radar.log"
		drop radar
		note radar FAILED "see $dir/radar.log"
	fi
	# the Doppler FFT's corner turn both ways (the strided plan is what
	# chirpd runs; bench/corner_turn.cu)
	meta corner "for C:R in 4:4096 16:9000:" "$BUILD/bench/corner_turn" --channels C --pulses 256 --gates R
	if ( printf 'variant\tC\tNd\tR\trepeats\tmin_us\tmedian_us\tmax_us\n'
		for cr in 4:4096 16:9000; do
			run_step 30 "$work/corner.log" "$BUILD/bench/corner_turn" --channels "${cr%%:*}" \
				--pulses 256 --gates "${cr##*:}" || exit 1   # (the subshell)
			sed -n 's/^corner_turn variant=\([a-z]*\) C=\([0-9]*\) Nd=\([0-9]*\) R=\([0-9]*\) repeats=\([0-9]*\) min_us=\([0-9.]*\) median_us=\([0-9.]*\) max_us=\([0-9.]*\).*/\1\t\2\t\3\t\4\t\5\t\6\t\7\t\8/p' "$work/corner.log"
		done ) >"$dir/corner.tsv"; then
		note corner ok "$(awk -F'\t' 'NR > 1 { printf "%sx%s %s %.0f us; ", $2, $4, $1, $7 }' "$dir/corner.tsv")"
	else
		drop corner
		note corner FAILED "see $work/corner.log"
	fi
	for p in ${CHIRP_TEST_PY:-} /opt/torch/.venv/bin/python3 /usr/bin/python3 python3; do
		command -v "$p" >/dev/null && "$p" -c 'import cupy' 2>/dev/null && { py=$p; break; }
	done
	meta radar_cupy "$py" scripts/bench-cupy.py --chain --out "$dir/radar_cupy.tsv"
	run_step 60 "$dir/radar_cupy.log" "$py" scripts/bench-cupy.py --chain --out "$dir/radar_cupy.tsv"
	rc=$?
	case $rc in
	0) note radar_cupy ok "$(awk -F'\t' 'NR > 1 { printf "%s %.3f ms  ", $2, $7 }' "$dir/radar_cupy.tsv")";;
	77) drop radar_cupy; note radar_cupy skipped "$(tail -1 "$dir/radar_cupy.log")";;
	*) tail -5 "$dir/radar_cupy.log"; drop radar_cupy; note radar_cupy FAILED "exit $rc";;
	esac
}

# The chain's configuration of the detect step (chirpd.conf keys).
DETECT_CFG="doppler.enable=1 doppler.window=hamming doppler.fft=256 cfar.enable=1 cfar.method=ca cfar.integrate=none cfar.pfa=1e-5"

step_detect() {
	local cmd=(scripts/bench-daemon-gpu.sh "$work/detect.raw")
	meta detect CONFIGS="4x128x4096:cf32:none 16x128x9000:cf32:none" DAEMON_STREAMS=auto MEASURE_S=5 \
		EXTRA_CFG="$DETECT_CFG" "${cmd[@]}"
	if CONFIGS="4x128x4096:cf32:none 16x128x9000:cf32:none" DAEMON_STREAMS=auto MEASURE_S=5 \
		EXTRA_CFG="$DETECT_CFG" run_step 150 "$work/detect.log" "${cmd[@]}"; then
		cp "$work/detect.log" "$dir/detect.log"
		# bench-daemon-gpu writes "geometry format output gsps" lines
		{ printf 'geometry\tformat\toutput\tgsps\n'; tr ' ' '\t' <"$work/detect.raw"; } >"$dir/detect.tsv"
		note detect ok "$(tr '\n' ';' <"$dir/detect.tsv")"
	else
		tail -5 "$work/detect.log"
		drop detect
		note detect FAILED "see $work/detect.log"
	fi
	local sets=() kv
	for kv in $DETECT_CFG output.mode=none detections.ring=/chirp-perf-det; do sets+=(--set "$kv"); done
	step_latency detect_latency 300 --backend cuda --loads 80 "${sets[@]}"
}

step_startup() {
	local cmd=(scripts/bench-startup.sh 5 "$dir/startup.tsv")
	meta startup "${cmd[@]}"
	if run_step 150 "$dir/startup.log" "${cmd[@]}"; then
		note startup ok "$(grep '^bench-startup:' "$dir/startup.log" | tail -1)"
	else
		tail -5 "$dir/startup.log"
		drop startup
		note startup FAILED "see $dir/startup.log"
	fi
}

step_net() {
	local rc cmd=(scripts/bench-net.sh --backend cuda ${NET_ARGS:---senders 4 --threads 4} --out "$dir/net.tsv")
	# bench-net writes net.meta itself (the same bench-meta.sh)
	run_step 360 "$dir/net.log" "${cmd[@]}"
	rc=$?
	case $rc in
	0) note net ok "$(grep -E '^(PASS|FAIL) ' "$dir/net.log" | cut -c1-70 | tr '\n' ';')";;
	77) drop net; note net skipped "$(tail -1 "$dir/net.log")";;
	*) tail -5 "$dir/net.log"; drop net; note net FAILED "exit $rc, see $dir/net.log";;
	esac
}

# The chain of the live step (chirpd.conf keys): detections only, as
# operators run it; the view's maps are the backend's snapshots.
LIVE_CFG="doppler.enable=1 doppler.window=hamming cfar.enable=1 cfar.pfa=1e-5 output.mode=none detections.ring=/chirp-perf-live-det live.enable=true"

# step_live — the view's cost on capacity (bench-live.sh), then the latency
# at 80 % with one page open throughout: every fresh chirpd of the latency
# run serves the view on one loopback port, and the page (live-client.py)
# reconnects to each as a browser's EventSource does.
step_live() {
	local rc
	OUT=$dir/live.tsv CHIRP_TEST_BACKEND=cuda OUTPUT=none EXTRA_CFG="doppler.window=hamming" \
		run_step 200 "$dir/live.log" scripts/bench-live.sh
	rc=$?
	case $rc in
	0) note live ok "$(grep '^median:' "$dir/live.log")";;
	77) drop live; note live skipped "$(tail -1 "$dir/live.log")"; return;;
	*) tail -5 "$dir/live.log"; drop live; note live FAILED "exit $rc, see $dir/live.log"; return;;
	esac
	step_live_latency
}

# step_live_latency — the latency half of step_live alone.
step_live_latency() {
	local port cl sets=() kv
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	for kv in $LIVE_CFG metrics.listen=127.0.0.1:$port; do sets+=(--set "$kv"); done
	python3 scripts/live-client.py "http://127.0.0.1:$port/live/events" >"$work/live-page.json" 2>&1 &
	cl=$!
	step_latency live_latency 300 --backend cuda --loads 80 "${sets[@]}"
	kill -TERM $cl 2>/dev/null
	wait $cl 2>/dev/null
	[ -f "$dir/live_latency.tsv" ] && cp "$work/live-page.json" "$dir/live_latency-page.json"
}

step_publish() {
	local rc
	OUT=$dir/publish.tsv CHIRP_TEST_BACKEND=cuda run_step 300 "$dir/publish.log" scripts/bench-publish.sh
	rc=$?
	case $rc in
	0) note publish ok "$(grep -E '^(median|paced)' "$dir/publish.log" | tr '\n' ';')";;
	77) drop publish; note publish skipped "$(tail -1 "$dir/publish.log")";;
	*) tail -5 "$dir/publish.log"; drop publish; note publish FAILED "exit $rc, see $dir/publish.log";;
	esac
}

step_multigpu() {
	local raw=$work/multigpu
	local cmd=(scripts/bench-multi-gpu.sh --all ${MULTI_GPU_ARGS:-} --out "$raw")
	meta multigpu "${cmd[@]}"
	if run_step 420 "$work/multigpu.log" "${cmd[@]}" && [ -s "$raw/results.tsv" ]; then
		cp "$raw/results.tsv" "$dir/multigpu.tsv" && cp "$raw/report.md" "$dir/multigpu-report.md" &&
			tar -xzf "$raw/logs.tar.gz" -O work/meta.tsv >"$dir/multigpu-run.tsv" ||
			{ drop multigpu; note multigpu FAILED "cannot copy its results"; return; }
		note multigpu ok "$(grep -E '^(PASS|FAIL) ' "$raw/report.md" | cut -c1-24 | tr '\n' ';')"
	else
		tail -5 "$work/multigpu.log"
		drop multigpu
		note multigpu FAILED "see $work/multigpu.log"
	fi
}

# huge_pool PAGES — /dev/hugepages mounted with PAGES free 2 MiB pages (as
# root: mounts it and grows the pool; huge_pool_restore gives them back).
# 0 when ready.
huge_pages0=
huge_pool() {
	local free total
	mkdir -p /dev/hugepages 2>/dev/null
	grep -q ' /dev/hugepages hugetlbfs ' /proc/mounts ||
		mount -t hugetlbfs -o pagesize=2M none /dev/hugepages 2>/dev/null || return 1
	free=$(awk '/^HugePages_Free:/ { print $2 }' /proc/meminfo)
	total=$(awk '/^HugePages_Total:/ { print $2 }' /proc/meminfo)
	huge_pages0=$total
	[ "$free" -ge "$1" ] && return 0
	echo $((total + $1 - free)) >/proc/sys/vm/nr_hugepages 2>/dev/null || return 1
	free=$(awk '/^HugePages_Free:/ { print $2 }' /proc/meminfo)
	[ "$free" -ge "$1" ]
}
huge_pool_restore() { [ -n "$huge_pages0" ] && echo "$huge_pages0" >/proc/sys/vm/nr_hugepages 2>/dev/null; }

step_restart() {
	local kind cfg cmd
	for kind in restart restart_hugepages; do
		cfg=
		if [ $kind = restart_hugepages ]; then
			[ "${PERF_HUGEPAGES:-0}" = 1 ] || { note $kind skipped "PERF_HUGEPAGES=1 to run it"; continue; }
			# both rings of 4x128x4096 cf32 at slots = auto: ~10 GiB
			huge_pool "${HUGE_PAGES:-6000}" ||
				{ note $kind skipped "no hugetlbfs with ${HUGE_PAGES:-6000} free 2 MiB pages"; huge_pool_restore; continue; }
			cfg="input.hugepages=true output.hugepages=true"
		fi
		cmd=(scripts/bench-restart.sh 3 "$dir/$kind.tsv")
		meta $kind ${cfg:+EXTRA_CFG="$cfg"} "${cmd[@]}"
		EXTRA_CFG=$cfg run_step 120 "$dir/$kind.log" "${cmd[@]}"
		case $? in
		0) note $kind ok "$(grep '^bench-restart:' "$dir/$kind.log" | tail -1 | cut -c1-90)";;
		77) drop $kind; rm -f "$dir/$kind.log"; note $kind skipped "no GPU";;
		*) tail -5 "$dir/$kind.log"; drop $kind; note $kind FAILED "see $dir/$kind.log";;
		esac
		[ $kind = restart_hugepages ] && huge_pool_restore
	done
}

step_beams_cpu() {
	local cmd=(scripts/bench-beams-cpu.sh "$BUILD" "$dir/beams_cpu.tsv")
	meta beams_cpu "${cmd[@]}"
	if run_step 120 "$dir/beams_cpu.log" "${cmd[@]}"; then
		note beams_cpu ok "$(grep '^bench-beams-cpu:' "$dir/beams_cpu.log" | tr '\n' ';')"
	else
		tail -5 "$dir/beams_cpu.log"
		drop beams_cpu
		note beams_cpu FAILED "see $dir/beams_cpu.log"
	fi
}

step_beams() {
	local cmd=(scripts/bench-beams-gpu.sh "$dir/beams.tsv") sets=() kv
	meta beams "${cmd[@]}"
	run_step 240 "$dir/beams.log" "${cmd[@]}"
	case $? in
	0) note beams ok "$(grep '^bench-beams-gpu:' "$dir/beams.log" | cut -c17-60 | tr '\n' ';')";;
	77) drop beams; note beams skipped "$(tail -1 "$dir/beams.log")"; return;;
	*) tail -5 "$dir/beams.log"; drop beams; note beams FAILED "see $dir/beams.log"; return;;
	esac
	for kv in $(scripts/bench-beams-gpu.sh --print-config) output.mode=none \
		detections.ring=/chirp-perf-beams-det; do sets+=(--set "$kv"); done
	# the echoes in noise: the CFAR at its false-alarm rate (noiseless, its
	# threshold is the float error and every list fills)
	step_latency beams_latency 300 --backend cuda --geometry "${GEOM_BEAMS:-16x128x4096}" \
		--loads 80 --windows 2 --measure 20 --noise-dbfs -40 "${sets[@]}"
}

step_beam() {
	local cmd=("$BUILD/bench/beam_gpu" --reps 20 --tsv "$dir/beam.tsv")
	meta beam "${cmd[@]}"
	if run_step 90 "$dir/beam.log" "${cmd[@]}"; then
		note beam ok "$(awk -F'\t' '$1 == "fused" || $1 == "cublas" { printf "%s:%s %s %.0f GB/s; ", $2, $3, $1, $9 }' "$dir/beam.tsv")"
	else
		tail -5 "$dir/beam.log"
		drop beam
		note beam FAILED "see $dir/beam.log"
	fi
}

step_compare() {
	meta compare COMPARE_RAW="$dir/compare.tsv" scripts/bench-compare.sh "$BUILD"
	if COMPARE_RAW=$dir/compare.tsv run_step 900 "$dir/compare.log" scripts/bench-compare.sh "$BUILD"; then
		note compare ok "$(awk -F'\t' '$1 == "skipped" { printf "%s skipped; ", $2 }' "$dir/compare.tsv")"
	else
		tail -5 "$dir/compare.log"
		drop compare
		note compare FAILED "see $dir/compare.log"
	fi
}

# CPU-time-hungry steps on a CPU host make the GPU ones meaningless and
# vice versa: one step at a time, in the order given.
for s in $steps; do
	if [ "$(left)" -lt 30 ]; then
		note "$s" "not run" "the time budget (PERF_BUDGET_S=$budget s) is spent: run this step in another command"
		continue
	fi
	echo "== $s ($(left) s of the budget left)"
	case $host_kind:$s in
	*:build) step_build;;
	gpu:test) step_test;;
	gpu:e2e) step_e2e;;
	gpu:throughput) step_throughput;;
	gpu:cupy) step_cupy;;
	gpu:latency) step_latency latency 480 --backend cuda;;
	gpu:modes) step_latency modes 300 --backend cuda --radar-modes 3 --loads 80;;
	gpu:radar) step_radar;;
	gpu:detect) step_detect;;
	gpu:startup) step_startup;;
	gpu:net) step_net;;
	gpu:publish) step_publish;;
	gpu:multigpu) step_multigpu;;
	gpu:restart) step_restart;;
	gpu:live) step_live;;
	gpu:live_latency) step_live_latency;;
	gpu:beam) step_beam;;
	gpu:beams) step_beams;;
	cpu:latency) step_latency latency 480 --backend cpu;;
	cpu:compare) step_compare;;
	*:beams_cpu) step_beams_cpu;;
	esac
done

echo
echo "---- perf-run summary: $dir ----"
printf '%-12s %-8s %s\n' step status figures
for r in "${results[@]}"; do
	IFS=$'\t' read -r a b c <<<"$r"
	printf '%-12s %-8s %s\n' "$a" "$b" "$c"
done
exit $status
