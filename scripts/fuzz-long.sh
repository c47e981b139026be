#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fuzz-long.sh [SECONDS] — run every libFuzzer target (tests/fuzz/fuzz_*.c)
# for SECONDS (default 3600) of wall-clock time, all targets at once, each
# under `nice -n 19` so a shared machine stays usable. This is the "each
# fuzz target for at least one hour" measurement recorded in
# doc/reliability.md; it is not part of `make test`.
#
# Targets are built by scripts/fuzz.sh (same flags: clang, libFuzzer, ASan,
# UBSan) with a 1-second run, then each runs in build-fuzz-long/ with its
# own working corpus seeded from tests/fuzz/corpus/<target>/. Logs:
# build-fuzz-long/<target>.log; crash reproducers: build-fuzz-long/crash-*.
# A crash ends a libFuzzer run; the script keeps the reproducer and starts
# the target again for the rest of the hour (execs are summed over runs).
# When all targets have finished, build-fuzz-long/summary.txt holds one
# line per target: "NAME execs=N secs=S runs=K crashes=C rc=R".
#
# Environment: FUZZ_LONG_DIR (default build-fuzz-long), FUZZ_TARGETS
# (space-separated names, default all).
set -uo pipefail
cd "$(dirname "$0")/.."
secs=${1:-3600}
out=${FUZZ_LONG_DIR:-build-fuzz-long}
mkdir -p "$out"

# Build (and smoke-run for 1 s) with the lead's runner, so flags stay in one place.
if ! scripts/fuzz.sh 1 >"$out/build.log" 2>&1; then
	echo "fuzz-long: build or 1-second smoke run failed — see $out/build.log"
	tail -30 "$out/build.log"
	exit 1
fi

shopt -s nullglob
if [ -n "${FUZZ_TARGETS:-}" ]; then
	names=($FUZZ_TARGETS)
else
	names=()
	for t in tests/fuzz/fuzz_*.c; do names+=("$(basename "$t" .c)"); done
fi
[ ${#names[@]} -gt 0 ] || { echo "fuzz-long: no targets"; exit 0; }

pids=()
for name in "${names[@]}"; do
	bin=build-fuzz/$name
	[ -x "$bin" ] || { echo "fuzz-long: $bin missing"; exit 1; }
	cp -f "$bin" "$out/$name"
	work=$out/corpus-$name
	mkdir -p "$work"
	[ -d "tests/fuzz/corpus/$name" ] && cp -n "tests/fuzz/corpus/$name"/* "$work"/ 2>/dev/null
	[ -d "build-fuzz/corpus-$name" ] && cp -n "build-fuzz/corpus-$name"/* "$work"/ 2>/dev/null
	(
		cd "$out" || exit 1
		start=$(date +%s)
		deadline=$((start + secs))
		execs=0 runs=0 rc=0
		: >"$name.log"
		# libFuzzer stops at the first crash (the reproducer is kept as
		# $name-crash-*); the hour goes on with a new run for the time that
		# is left, so one finding does not end the measurement.
		while [ $(( left = deadline - $(date +%s) )) -gt 5 ]; do
			runs=$((runs + 1))
			echo "=== run $runs, ${left}s left" >>"$name.log"
			ASAN_OPTIONS=detect_leaks=1 nice -n 19 "./$name" -max_total_time="$left" \
				-timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
				-artifact_prefix="./$name-" "corpus-$name" >"$name.run.log" 2>&1
			r=$?
			cat "$name.run.log" >>"$name.log"
			n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$name.run.log" | tail -1)
			execs=$((execs + ${n:-0}))
			[ $r -eq 0 ] || rc=$r
			[ $r -eq 0 ] && break
		done
		end=$(date +%s)
		arts=("$name"-crash-* "$name"-leak-* "$name"-timeout-* "$name"-oom-*)   # nullglob is on
		crashes=${#arts[@]}
		echo "$name execs=$execs secs=$((end - start)) runs=$runs crashes=$crashes rc=$rc" >"$name.result"
	) &
	pids+=($!)
	echo "fuzz-long: started $name (pid $!) for ${secs}s, log $out/$name.log"
done
for p in "${pids[@]}"; do wait "$p"; done
cat "$out"/*.result >"$out/summary.txt"
cat "$out/summary.txt"
! grep -qv 'crashes=0 rc=0' "$out/summary.txt"
