#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# gpu-run.sh [STEP...] — everything chirpd does on a GPU host, in one command,
# with logs under $OUT (default build/gpu-run). Steps, in this order:
#
#   build   make -j all (the CUDA backend is built when nvcc is found)
#   test    test_pc_cuda (GPU vs CPU), then test_pc
#   e2e     the GPU end-to-end tests (tests/e2e/gpu_*.sh) through test-all.sh
#   all     every unit and e2e test of the normal build (test-all.sh normal)
#   bench   bench_gpu: (a) copy limits, (b) naive baseline, (c) backend alone
#   daemon  scripts/bench-daemon-gpu.sh: (d) the whole daemon, then the bench
#           table again with (d) filled in and its ratios
#   latency scripts/bench-latency.sh --backend cuda (LAT_ARGS, e.g.
#           "--geometry 16x128x9000 --ref-len 1000" or "--soak 300"), into
#           $OUT/latency: latency per load against the lossless copy floor,
#           losses, host noise
#   soak    SOAK_S seconds (default 300) at 90 % of the measured daemon
#           capacity, zero drops expected
#
# Default steps: build test bench. Environment: OUT (log dir), JOBS (make -j),
# DEPTHS (bench depths, default 2,3,4), DAEMON_TSV (earlier (d) results for
# the bench table), SOAK_S.
# Offline GPU hosts: the caller sources .deps/unpack.sh first (see doc/cuda.md).
# The performance page's results come from scripts/perf-run.sh, which runs
# these benchmarks with raw results and their provenance kept.
set -uo pipefail
cd "$(dirname "$0")/.."

OUT=${OUT:-build/gpu-run}
mkdir -p "$OUT"
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
DEPTHS=${DEPTHS:-2,3,4}
steps=${*:-build test bench}
summary=$OUT/summary.txt
status=0

say() { echo "== $*" | tee -a "$summary"; }

# nvcc may live elsewhere than /usr/local/cuda on a GPU host.
if [ -z "${CUDA_HOME:-}" ] && [ ! -x /usr/local/cuda/bin/nvcc ] && command -v nvcc >/dev/null; then
	CUDA_HOME=$(dirname "$(dirname "$(command -v nvcc)")")
	export CUDA_HOME
fi

# The e2e tests need a python3 with numpy; the GPU image's /usr/bin/python3
# has none, its torch venv has.
if [ -z "${CHIRP_TEST_PY:-}" ] && ! /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
	for py in /opt/torch/.venv/bin/python3 "$(command -v python3)"; do
		if [ -x "$py" ] && "$py" -c 'import numpy' 2>/dev/null; then
			export CHIRP_TEST_PY=$py
			break
		fi
	done
fi

{
	echo "gpu-run.sh $steps — $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(hostname)"
	nvidia-smi --query-gpu=name,pci.bus_id,driver_version,pcie.link.gen.current,pcie.link.width.current,memory.total,clocks.sm,clocks.max.sm --format=csv 2>&1
	nvidia-smi topo -m 2>/dev/null | head -5
	echo "cpus: $(nproc), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
	"${CUDA_HOME:-/usr/local/cuda}"/bin/nvcc --version 2>&1 | tail -1
} >>"$summary" 2>&1

for step in $steps; do
	case $step in
	build)
		say "build (make -j$JOBS)"
		# What the GPU steps need must build; the rest is best effort (a
		# half-finished file elsewhere in the tree must not cost the run).
		if ! make -j"$JOBS" libs build/tests/test_pc_cuda build/tests/test_pc \
			build/bench/bench_gpu >"$OUT/build.log" 2>&1; then
			tail -30 "$OUT/build.log" | tee -a "$summary"
			echo "build FAILED" | tee -a "$summary"
			exit 1
		fi
		make -k -j"$JOBS" all >>"$OUT/build.log" 2>&1 ||
			{ grep -E 'error|Error' "$OUT/build.log" | head -10 | tee -a "$summary"; }
		tail -1 "$OUT/build.log" | tee -a "$summary";;
	test)
		say "test_pc_cuda"
		for t in test_pc_cuda test_pc; do
			[ -x build/tests/$t ] || { echo "$t: not built" | tee -a "$summary"; status=1; continue; }
			timeout -k 10 600 build/tests/$t >"$OUT/$t.log" 2>&1
			rc=$?
			grep -E '^\[ *(PASSED|FAILED|SKIPPED) *\]|rel L2|device|fault|staging' "$OUT/$t.log" |
				grep -v '^\[  SKIPPED \] test_' | head -40 >>"$summary"
			grep -E '^\[  (FAILED|PASSED|SKIPPED) \] [0-9]' "$OUT/$t.log" | sed "s/^/$t: /"
			[ $rc -eq 0 ] || { echo "$t: rc $rc" | tee -a "$summary"; tail -30 "$OUT/$t.log"; status=1; }
		done
		cat "$OUT"/test_pc_cuda.log "$OUT"/test_pc.log >"$OUT/tests.log" 2>/dev/null
		rm -f "$OUT"/test_pc_cuda.log "$OUT"/test_pc.log;;
	e2e)
		say "GPU end-to-end tests, and the fault tests against the CUDA backend"
		CHIRP_TEST_BACKEND=cuda TEST_PHASES=normal TEST_FILTER="${E2E_FILTER:-^(gpu_|fault_)}" \
			TEST_LOGDIR=$OUT/e2e-logs timeout -k 5 "${E2E_TIMEOUT:-240}" scripts/test-all.sh >"$OUT/e2e-run.log" 2>&1 || status=1
		grep -E '^(ok|FAIL|skip)|passed,' "$OUT/e2e-run.log" | tee -a "$summary"
		for f in "$OUT"/e2e-logs/*.sh.log; do echo "=== $f"; cat "$f"; done >"$OUT/e2e.log" 2>/dev/null
		cat "$OUT/e2e-run.log" >>"$OUT/e2e.log"; rm -f "$OUT/e2e-run.log"
		rm -rf "$OUT/e2e-logs";;
	all)
		say "all unit and e2e tests (normal build)"
		TEST_PHASES=normal TEST_LOGDIR=$OUT/all-logs scripts/test-all.sh >"$OUT/all.log" 2>&1 || status=1
		grep -E '^(ok|FAIL|skip)|passed,' "$OUT/all.log" | tee -a "$summary" | grep -E 'FAIL|passed,'
		rm -rf "$OUT/all-logs";;
	bench)
		say "bench_gpu (a) (b) (c)"
		build/bench/bench_gpu --depths "$DEPTHS" --tsv "$OUT/bench.tsv" \
			${DAEMON_TSV:+--daemon-tsv "$DAEMON_TSV"} 2>&1 | tee "$OUT/bench.log" || status=1
		sed -n '/^GS\/s/,$p' "$OUT/bench.log" >>"$summary";;
	daemon)
		say "bench (d): the whole daemon"
		if [ -x scripts/bench-daemon-gpu.sh ]; then
			scripts/bench-daemon-gpu.sh "$OUT/daemon.tsv" 2>&1 | tee "$OUT/daemon.log" | tail -30 || status=1
			build/bench/bench_gpu --quick --depths "$DEPTHS" --daemon-tsv "$OUT/daemon.tsv" \
				--tsv "$OUT/bench.tsv" >"$OUT/bench.log" 2>&1 || status=1
			sed -n '/^GS\/s/,$p' "$OUT/bench.log" | tee -a "$summary"
		else
			echo "scripts/bench-daemon-gpu.sh missing" | tee -a "$summary"; status=1
		fi;;
	soak)
		say "soak ${SOAK_S:-300} s at 90 % of capacity"
		if [ -x scripts/bench-daemon-gpu.sh ]; then
			SOAK_S=${SOAK_S:-300} scripts/bench-daemon-gpu.sh --soak "$OUT/daemon.tsv" 2>&1 |
				tee "$OUT/soak.log" | tail -15 || status=1
			tail -5 "$OUT/soak.log" >>"$summary"
		fi;;
	latency)
		say "bench-latency (cuda) ${LAT_ARGS:-}"
		timeout -k 10 590 scripts/bench-latency.sh --backend cuda --out "$OUT/latency" ${LAT_ARGS:-} \
			>"$OUT/latency.log" 2>&1 || status=1
		sed -n '/^| load/,$p' "$OUT/latency.log" | grep -E '^\| [0-9]+ %|^(PASS|FAIL|n/a )' | tee -a "$summary";;
	*)
		echo "gpu-run.sh: unknown step $step" >&2; exit 2;;
	esac
done
say "done, status $status"
echo; echo "---- summary ----"; cat "$summary"
exit $status
