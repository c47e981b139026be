#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# test-all.sh — everything `make test` runs, in order:
#   1. unit (cmocka) and end-to-end tests on the normal build (build/)
#   2. the same under AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/)
#   3. the threading tests listed in tests/tsan.list under ThreadSanitizer (build-tsan/)
#   4. each libFuzzer target for a short bounded time (build-fuzz/)
# Ends with one line "N passed, N failed, N skipped" and exits non-zero on
# any failure. GPU tests report themselves skipped where there is no GPU.
# Environment: TEST_PHASES="normal asan tsan fuzz" to pick phases,
#              TEST_FILTER=regex to pick tests by name.
set -uo pipefail
cd "$(dirname "$0")/.."

phases=${TEST_PHASES:-normal asan tsan fuzz}
filter=${TEST_FILTER:-.}
jobs=$(nproc 2>/dev/null || echo 2)
passed=0 failed=0 skipped=0
failures=()
logdir=${TEST_LOGDIR:-build/test-logs}
mkdir -p "$logdir"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:halt_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp}

# run_cmocka LABEL BINARY — run one cmocka suite and add its counts.
run_cmocka() {
	local label=$1 bin=$2 log rc p f s
	log="$logdir/$label-$(basename "$bin").log"
	timeout -k 10 900 "$bin" >"$log" 2>&1
	rc=$?
	p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
	f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
	s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
	p=${p:-0} f=${f:-0} s=${s:-0}
	if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1   # crashed, sanitizer report, or timeout
	fi
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
	if [ "$f" -ne 0 ]; then
		failures+=("$label $(basename "$bin")")
		echo "FAIL $label $(basename "$bin") (rc $rc): $p passed, $f failed, $s skipped — log:"
		tail -n 60 "$log" | sed 's/^/    /'
	else
		echo "ok   $label $(basename "$bin"): $p passed, $s skipped"
	fi
}

# run_script LABEL SCRIPT BUILD — one end-to-end test: exit 0 pass, 77 skip.
run_script() {
	local label=$1 sh=$2 build=$3 log rc
	log="$logdir/$label-$(basename "$sh").log"
	CHIRP_BUILD=$build timeout -k 10 900 bash "$sh" >"$log" 2>&1
	rc=$?
	# A script that runs a suite of its own (tests/python) ends with
	# "counts: N passed, N failed, N skipped"; those count instead of 1.
	local cp=1 cf=1 cs=0 counts
	counts=$(sed -n 's/^counts: \([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\1 \2 \3/p' "$log" | tail -1)
	[ -n "$counts" ] && read -r cp cf cs <<<"$counts"
	[ "$cf" -gt 0 ] || cf=1
	case $rc in
	0)  passed=$((passed + cp)) skipped=$((skipped + cs)); echo "ok   $label $(basename "$sh")${counts:+ ($cp passed, $cs skipped)}";;
	77) skipped=$((skipped + 1)); echo "skip $label $(basename "$sh"): $(tail -n 1 "$log")";;
	*)  [ -n "$counts" ] && passed=$((passed + cp))
	    failed=$((failed + cf)); failures+=("$label $(basename "$sh")")
	    echo "FAIL $label $(basename "$sh") (rc $rc) — log:"; tail -n 60 "$log" | sed 's/^/    /';;
	esac
}

run_suite() {   # run_suite LABEL BUILD [LIST]
	local label=$1 build=$2 list=${3:-} t
	for t in "$build"/tests/test_*; do
		[ -x "$t" ] || continue
		[[ $(basename "$t") =~ $filter ]] || continue
		if [ -n "$list" ] && ! grep -qx "$(basename "$t")" "$list"; then continue; fi
		run_cmocka "$label" "$t"
	done
	[ -n "$list" ] && return
	for t in tests/e2e/*.sh; do
		[ -f "$t" ] || continue
		case $(basename "$t") in lib*.sh) continue;; esac   # sourced helpers, not tests
		[[ $(basename "$t") =~ $filter ]] || continue
		run_script "$label" "$t" "$build"
	done
}

for phase in $phases; do
	echo "== $phase"
	case $phase in
	normal)
		make --no-print-directory -j"$jobs" all >"$logdir/build-normal.log" 2>&1 ||
			{ tail -40 "$logdir/build-normal.log"; failed=$((failed + 1)); failures+=("build normal"); continue; }
		run_suite normal build;;
	asan)
		make --no-print-directory -j"$jobs" SAN=asan BUILD=build-asan libs bins tests >"$logdir/build-asan.log" 2>&1 ||
			{ tail -40 "$logdir/build-asan.log"; failed=$((failed + 1)); failures+=("build asan"); continue; }
		run_suite asan build-asan;;
	tsan)
		make --no-print-directory -j"$jobs" SAN=tsan BUILD=build-tsan libs bins tests >"$logdir/build-tsan.log" 2>&1 ||
			{ tail -40 "$logdir/build-tsan.log"; failed=$((failed + 1)); failures+=("build tsan"); continue; }
		run_suite tsan build-tsan tests/tsan.list;;
	fuzz)
		if scripts/fuzz.sh "${FUZZ_SHORT_SECONDS:-15}" >"$logdir/fuzz.log" 2>&1; then
			n=$(grep -c '^fuzz ok' "$logdir/fuzz.log"); passed=$((passed + n))
			grep '^fuzz' "$logdir/fuzz.log"
		else
			failed=$((failed + 1)); failures+=("fuzz")
			tail -60 "$logdir/fuzz.log"
		fi;;
	*) echo "unknown phase $phase"; failed=$((failed + 1));;
	esac
done

echo
if [ ${#failures[@]} -gt 0 ]; then
	echo "failed:"; printf '  %s\n' "${failures[@]}"
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
