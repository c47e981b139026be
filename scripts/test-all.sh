#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# test-all.sh — everything `make test` runs, in four phases:
#   normal  unit (cmocka) and end-to-end tests on the normal build (build/)
#   asan    the same under AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/)
#   tsan    the threading tests listed in tests/tsan.list under ThreadSanitizer (build-tsan/)
#   fuzz    each libFuzzer target for a short bounded time (build-fuzz/)
# Prints one line per test and build ("ok   PHASE NAME: counts (wall s, CPU
# s)"), the slowest of them, and ends with one line "N passed, N failed, N
# skipped"; exits non-zero on any failure. GPU tests report themselves
# skipped where there is no GPU. Each test's output is in
# $TEST_LOGDIR/PHASE-NAME.log, every time in $TEST_LOGDIR/timings.tsv.
#
# Parallelism. The normal build comes first; the asan, tsan and fuzz trees
# then build in the background, one after the other, while tests run. Up to
# TEST_JOBS tests run at once (most end-to-end tests spend their time
# waiting on chirpd); a phase's tests start once its build is done, and a
# test never runs alongside its own run in an earlier phase. Every test
# names its rings, sockets and temp dirs after itself and its pid, so tests
# can share the machine. The fuzz targets start once the other tests are
# done, one per CPU (their effort is the CPU time they get). The tests
# matching `alone` below run last, one at a time with nothing else running.
# Lines print in a fixed order: the phases in order, each phase's tests in
# name order, then the lone tests.
#
# Environment: TEST_PHASES="normal asan tsan fuzz" to pick phases,
#              TEST_FILTER=regex to pick tests by file name,
#              TEST_JOBS=N tests at once (default 2 per CPU; 1: one at a time),
#              TEST_LOGDIR=dir for the logs (default build/test-logs),
#              FUZZ_SHORT_SECONDS=S per fuzz target (default 15).
set -uo pipefail
cd "$(dirname "$0")/.."

phases=${TEST_PHASES:-normal asan tsan fuzz}
filter=${TEST_FILTER:-.}
ncpu=$(nproc 2>/dev/null || echo 2)
jobs=${TEST_JOBS:-$((2 * ncpu))}
logdir=${TEST_LOGDIR:-build/test-logs}
fuzz_secs=${FUZZ_SHORT_SECONDS:-15}

# The tests that run alone: their verdict depends on timing, which a
# neighbour's load would disturb. tools_pacing: a paced feed's late ticks;
# fault_consumer_stall: the input rate behind a stalled consumer;
# fault_control_abuse: an answer within 2 s with 200 silent clients;
# daemon_straggler: every CPI of a 100 CPI/s feed delivered while a worker
# stalls (under ASan on a shared CPU it falls behind).
alone_re='^(tools_pacing|fault_consumer_stall|fault_control_abuse|daemon_straggler)\.sh$'
# The longest tests, started first so that the pool does not end waiting
# on one of them.
first_re='^(deb_package\.sh|bench_latency_smoke\.sh|bench_multi_smoke\.sh|fault_ring_corrupt\.sh|fault_reload_load\.sh|test_radar|test_hcopy)$'

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:halt_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp}

res=$logdir/results          # $res/PHASE-NAME: a finished test's or build's result
timings=$logdir/timings.tsv  # a row per test and build: phase, name, wall s, CPU s
passed=0 failed=0 skipped=0
failures=()
order=()       # what prints, in order: "PHASE NAME" (once its result is in) or "#TEXT"
next_print=0   # index into order of the next line to print
pending=()     # "PHASE-NAME" of the tests started and not known to be done
alone=()       # "PHASE KIND PATH BUILD" of the lone tests

# --- measuring and counting -------------------------------------------------

# timed PHASE NAME CMD... — run CMD; its exit status in $rc, "W s, C s CPU"
# (wall, and user + sys of it and its waited-for descendants) in $took,
# and a row in $timings.
timed() {
	local phase=$1 name=$2 t0 tf=$logdir/.times-$1-$2
	shift 2
	t0=$EPOCHREALTIME
	( "$@"; r=$?; times >"$tf"; exit $r )
	rc=$?
	took=$(awk -v t0="$t0" -v t1="$EPOCHREALTIME" -v phase="$phase" -v name="$name" -v tsv="$timings" '
		function s(w) { split(w, a, /[ms]/); return a[1] * 60 + a[2] }
		NR == 2 { cpu = s($1) + s($2) }
		END { w = t1 - t0; printf "%s\t%s\t%.1f\t%.1f\n", phase, name, w, cpu >>tsv
		      printf "%.1f s, %.1f s CPU", w, cpu }' "$tf")
	rm -f "$tf"
}

# result PHASE NAME P F S LINES — a test's outcome as $res/PHASE-NAME: its
# counts, then the lines to print. Written whole (rename).
result() {
	local f=$res/$1-$2
	printf '%s %s %s\n%s\n' "$3" "$4" "$5" "$6" >"$f.tmp" && mv "$f.tmp" "$f"
}

# tally PHASE NAME — print a finished test's lines and add its counts.
tally() {
	local p f s lines
	{ read -r p f s; lines=$(cat); } <"$res/$1-$2"
	echo "$lines"
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
	[ "$f" -eq 0 ] || failures+=("$1 $2")
}

# fail_lines PHASE NAME LOG HOW — the lines of a failure: what, then the
# log's tail.
fail_lines() {
	echo "FAIL $1 $2 $4 — log:"
	tail -n 60 "$3" | sed 's/^/    /'
}

# --- one test ---------------------------------------------------------------

# run_cmocka PHASE BINARY — one cmocka suite; its counts are its own.
run_cmocka() {
	local phase=$1 bin=$2 name log p f s
	name=$(basename "$bin")
	log=$logdir/$phase-$name.log
	timed "$phase" "$name" timeout -k 10 900 "$bin" >"$log" 2>&1
	p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
	f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
	s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
	p=${p:-0} f=${f:-0} s=${s:-0}
	if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1   # crashed, sanitizer report, or timeout
	fi
	if [ "$f" -ne 0 ]; then
		result "$phase" "$name" "$p" "$f" "$s" \
			"$(fail_lines "$phase" "$name" "$log" "(rc $rc): $p passed, $f failed, $s skipped ($took)")"
	else
		result "$phase" "$name" "$p" 0 "$s" "ok   $phase $name: $p passed, $s skipped ($took)"
	fi
}

# run_script PHASE SCRIPT BUILD — one end-to-end test: exit 0 pass, 77 skip.
# A script that runs a suite of its own (tests/python) ends with
# "counts: N passed, N failed, N skipped"; those count instead of 1.
run_script() {
	local phase=$1 sh=$2 build=$3 name log cp=1 cf=1 cs=0 counts
	name=$(basename "$sh")
	log=$logdir/$phase-$name.log
	CHIRP_BUILD=$build timed "$phase" "$name" timeout -k 10 900 bash "$sh" >"$log" 2>&1
	counts=$(sed -n 's/^counts: \([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\1 \2 \3/p' "$log" | tail -1)
	[ -n "$counts" ] && read -r cp cf cs <<<"$counts"
	[ "$cf" -gt 0 ] || cf=1
	case $rc in
	0)  result "$phase" "$name" "$cp" 0 "$cs" "ok   $phase $name${counts:+: $cp passed, $cs skipped} ($took)";;
	77) result "$phase" "$name" 0 0 1 "skip $phase $name: $(tail -n 1 "$log") ($took)";;
	*)  [ -n "$counts" ] || cp=0
	    result "$phase" "$name" "$cp" "$cf" 0 "$(fail_lines "$phase" "$name" "$log" "(rc $rc) ($took)")";;
	esac
}

# run_fuzz PHASE TARGET — one libFuzzer target for $fuzz_secs seconds.
run_fuzz() {
	local phase=$1 name=$2 log
	log=$logdir/$phase-$name.log
	timed "$phase" "$name" timeout -k 10 $((fuzz_secs + 300)) scripts/fuzz.sh --run "$fuzz_secs" "$name" >"$log" 2>&1
	if [ $rc -eq 0 ]; then
		result "$phase" "$name" 1 0 0 "$(grep '^fuzz ok' "$log") ($took)"
	else
		result "$phase" "$name" 0 1 0 "$(fail_lines "$phase" "$name" "$log" "(rc $rc) ($took)")"
	fi
}

# run_one PHASE KIND PATH BUILD — one test of any kind.
run_one() {
	case $2 in
	cmocka) run_cmocka "$1" "$3";;
	script) run_script "$1" "$3" "$4";;
	fuzz)   run_fuzz "$1" "$3";;
	esac
}

# --- the pool ---------------------------------------------------------------

# flush — print, in order, the results that have come in.
flush() {
	local e
	while [ $next_print -lt ${#order[@]} ]; do
		e=${order[$next_print]}
		if [ "${e:0:1}" = "#" ]; then
			echo "${e:1}"
		else
			[ -f "$res/${e/ /-}" ] || break
			tally $e
		fi
		next_print=$((next_print + 1))
	done
}

# wait_for FILE — print results as they come until FILE exists.
wait_for() {
	until [ -e "$1" ]; do flush; sleep 0.2; done
}

# wait_slot — until fewer than $jobs started tests lack a result.
wait_slot() {
	local e left
	while :; do
		left=()
		for e in "${pending[@]}"; do [ -f "$res/$e" ] || left+=("$e"); done
		pending=("${left[@]}")
		[ ${#pending[@]} -lt "$jobs" ] && return
		flush; sleep 0.2
	done
}

# wait_all — until every queued line has printed.
wait_all() {
	until [ $next_print -ge ${#order[@]} ]; do flush; sleep 0.2; done
}

# start PHASE KIND PATH BUILD — start a queued test in the background once
# a slot is free and its run in an earlier phase is done.
start() {
	local phase=$1 name p
	name=$(basename "$3")
	wait_slot
	for p in $phases; do
		[ "$p" = "$phase" ] && break
		[[ " ${order[*]} " == *" $p $name "* ]] && wait_for "$res/$p-$name"
	done
	pending+=("$phase-$name")
	run_one "$@" &
}

# --- builds -----------------------------------------------------------------

# build PHASE — build the phase's tree; its result (ok, or FAIL with the
# log's tail) as $res/build-PHASE, the log in $logdir/build-PHASE.log.
build() {
	local log=$logdir/build-$1.log
	case $1 in
	normal) timed build normal make --no-print-directory -j"$ncpu" all >"$log" 2>&1;;
	asan)   timed build asan make --no-print-directory -j"$ncpu" SAN=asan BUILD=build-asan libs bins tests >"$log" 2>&1;;
	tsan)   timed build tsan make --no-print-directory -j"$ncpu" SAN=tsan BUILD=build-tsan libs bins tests >"$log" 2>&1;;
	fuzz)   timed build fuzz scripts/fuzz.sh --build >"$log" 2>&1;;
	*)      echo "unknown phase $1" >"$log"; rc=1 took=;;
	esac
	if [ $rc -eq 0 ]; then
		result build "$1" 0 0 0 "ok   build $1 ($took)"
	else
		result build "$1" 0 1 0 "$(fail_lines build "$1" "$log" "(rc $rc)")"
	fi
}

# build_each PHASE... — build each tree in turn.
build_each() {
	local p
	for p in "$@"; do build "$p"; done
}

# phase_ready PHASE — wait for the phase's build; 0 when it succeeded.
phase_ready() {
	order+=("build $1")
	wait_for "$res/build-$1"
	[ "$(head -c 5 "$res/build-$1")" = "0 0 0" ]
}

# --- the phases -------------------------------------------------------------

# phase_tests PHASE — the phase's tests that the filter picks, one
# "PHASE KIND PATH BUILD" a line, in name order (cmocka suites first).
phase_tests() {
	local phase=$1 build=build-$1 t
	case $phase in
	normal) build=build;;
	fuzz)
		for t in tests/fuzz/fuzz_*.c; do
			t=$(basename "$t" .c)
			[[ $t =~ $filter ]] && echo "fuzz fuzz $t -"
		done
		return;;
	esac
	for t in "$build"/tests/test_*; do
		[ -x "$t" ] || continue
		[[ $(basename "$t") =~ $filter ]] || continue
		[ "$phase" = tsan ] && ! grep -qx "$(basename "$t")" tests/tsan.list && continue
		echo "$phase cmocka $t $build"
	done
	[ "$phase" = tsan ] && return
	for t in tests/e2e/*.sh; do
		case $(basename "$t") in lib*.sh) continue;; esac   # sourced helpers, not tests
		[[ $(basename "$t") =~ $filter ]] && echo "$phase script $t $build"
	done
}

# wait_idle — until every started test is done.
wait_idle() {
	local saved=$jobs
	jobs=1; wait_slot; jobs=$saved
	pending=()
}

# queue_phase PHASE — queue the phase's tests: each prints in name order;
# the long ones start first; the lone ones wait for the end. The fuzz
# targets start once the other tests are done and run one per CPU: their
# effort is the CPU time they get in their FUZZ_SHORT_SECONDS.
queue_phase() {
	local t phase kind path build tests=() first=() rest=() saved=$jobs
	mapfile -t tests < <(phase_tests "$1")
	for t in "${tests[@]}"; do
		read -r phase kind path build <<<"$t"
		if [[ $(basename "$path") =~ $alone_re ]]; then
			alone+=("$t")
			continue
		fi
		order+=("$phase $(basename "$path")")
		if [[ $(basename "$path") =~ $first_re ]]; then first+=("$t"); else rest+=("$t"); fi
	done
	[ "$1" = fuzz ] && { wait_idle; jobs=$ncpu; }
	for t in "${first[@]}" "${rest[@]}"; do
		start $t
	done
	[ "$1" = fuzz ] && { wait_idle; jobs=$saved; }
	return 0
}

# run_alone — the lone tests, one at a time, once everything else is done.
run_alone() {
	local t phase name
	[ ${#alone[@]} -gt 0 ] || return 0
	wait_all
	order+=("#== alone (timing-sensitive)")
	for t in "${alone[@]}"; do
		read -r phase _ name _ <<<"$t"
		order+=("$phase $(basename "$name")")
		run_one $t
		flush
	done
}

# slowest — the fifteen longest tests and builds, from $timings.
slowest() {
	echo "slowest (wall s, CPU s):"
	sort -t$'\t' -k3,3 -rn "$timings" | head -15 |
		awk -F'\t' '{ printf "  %7.1f %7.1f  %s %s\n", $3, $4, $1, $2 }'
}

# cleanup — on an early exit, stop the tests and builds still running.
cleanup() {
	local p
	for p in $(jobs -p); do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
}

main() {
	local phase t0=$EPOCHREALTIME
	mkdir -p "$logdir"
	rm -rf "$res"
	mkdir -p "$res"
	: >"$timings"
	trap cleanup EXIT
	# The normal build first (under `make test` it is done already), the
	# others in the background while tests run.
	[[ " $phases " == *" normal "* ]] && build normal
	build_each $(printf '%s\n' $phases | grep -vx normal) &
	for phase in $phases; do
		order+=("#== $phase")
		phase_ready "$phase" && queue_phase "$phase"
	done
	wait_all
	run_alone
	wait
	echo
	slowest
	awk -v t0="$t0" -v t1="$EPOCHREALTIME" 'BEGIN { printf "total %.0f s\n", t1 - t0 }'
	if [ ${#failures[@]} -gt 0 ]; then
		echo "failed:"; printf '  %s\n' "${failures[@]}"
	fi
	echo "$passed passed, $failed failed, $skipped skipped"
	[ "$failed" -eq 0 ]
}

main
