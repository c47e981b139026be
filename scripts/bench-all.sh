#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench-all.sh [BUILD] — what `make bench` runs: every benchmark program in
# BUILD/bench/ (each prints its own table), then scripts/bench-compare.sh
# (chirpd against scipy and GNU Radio). Benchmarks are reports, not tests:
# a comparison whose dependency is missing prints "skipped: <why>". Exits
# non-zero only if a benchmark program itself fails.
# Environment: BENCH_FILTER=regex picks programs by name; BENCH_COMPARE=0
# leaves the comparison out.
set -uo pipefail
cd "$(dirname "$0")/.."

build=${1:-build}
filter=${BENCH_FILTER:-.}
# FFTW plans found by the patient searches of bench_pc and fft_floor are
# kept here between runs (their --wisdom option).
wisdom=$build/fftw-wisdom
failed=0
found=0

echo "bench-all: $(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -n): $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
for b in "$build"/bench/*; do
	[ -f "$b" ] && [ -x "$b" ] || continue
	name=$(basename "$b")
	[[ $name =~ $filter ]] || continue
	found=1
	echo
	echo "=== $name"
	args=()
	case $name in bench_pc|fft_floor) args=(--wisdom "$wisdom");; esac
	"$b" "${args[@]}"
	rc=$?
	if [ $rc -eq 77 ]; then
		echo "$name: skipped"
	elif [ $rc -ne 0 ]; then
		echo "$name: FAILED (exit $rc)"
		failed=1
	fi
done
[ $found = 1 ] || echo "bench-all: no benchmark programs in $build/bench (run make BUILD=$build first)"

if [ "${BENCH_COMPARE:-1}" != 0 ]; then
	echo
	echo "=== bench-compare (chirpd vs scipy vs GNU Radio)"
	if [ -x "$build/bench/bench_pc" ]; then
		scripts/bench-compare.sh "$build" || failed=1
	else
		echo "bench-compare: skipped: $build/bench/bench_pc not built"
	fi
fi
exit $failed
