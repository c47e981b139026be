#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench_latency_smoke.sh — scripts/bench-latency.sh runs end to end on the CPU
# backend (tiny geometry, two loads, 1 s windows) and produces a well-formed
# table, TSV, raw latency files and criteria lines. Timing values are not
# judged here (this is a smoke test on a shared machine), only their form.
# --tools-cpus is given every cpu this test may use (nothing moves, the
# taskset path runs) and must be named in the report; a bad list is refused.
. "$(dirname "$0")/lib.sh"
e2e_init bench_latency_smoke
e2e_need chirp-feed
for b in latency_probe noise_floor; do
	[ -x "$BUILD/bench/$b" ] || e2e_skip "$BUILD/bench/$b is not built"
done
command -v python3 >/dev/null || e2e_skip "no python3"
out=$T/bl
bench="$(dirname "$0")/../../scripts/bench-latency.sh"
"$bench" --tools-cpus 1-x >"$T/bad.log" 2>&1
[ $? -eq 2 ] && grep -q "cpu list" "$T/bad.log" || e2e_fail "--tools-cpus 1-x not refused: $(cat "$T/bad.log")"
tools=()
if command -v taskset >/dev/null; then
	cpus=$(python3 -c 'import os; print(",".join(map(str, sorted(os.sched_getaffinity(0)))))')
	tools=(--tools-cpus "$cpus")
fi
timeout -k 5 120 "$bench" --backend cpu --geometry 1x16x1000 --ref-len 64 \
	--loads "80 90" --warmup 1 --measure 1 --noise-samples 2000 "${tools[@]}" --out "$out" >"$T/run.log" 2>&1
rc=$?
cat "$T/run.log"
[ $rc -eq 0 ] || e2e_fail "bench-latency.sh exited $rc"
[ ${#tools[@]} -eq 0 ] || grep -q "^tools: producer and probe on cpus $cpus (--tools-cpus)" "$out/report.md" ||
	e2e_fail "the report does not name --tools-cpus $cpus"
num='[0-9]+(\.[0-9]+)?'
for pct in 80 90; do
	grep -Eq "^\| $pct % \| $num \| $num \| [0-9]+ \| $num \| $num \| $num \| $num \| [0-9]+ \| [0-9]+ \| [0-9]+ \| [0-9]+ \|$" "$out/report.md" ||
		e2e_fail "no well-formed table row for $pct %"
	[ -s "$out/lat-load$pct.txt" ] || e2e_fail "no raw latencies for $pct %"
	grep -Evq "^$num$" "$out/lat-load$pct.txt" && e2e_fail "lat-load$pct.txt: not one number per line"
done
grep -q '^| host noise (block − its p50) |' "$out/report.md" || e2e_fail "no host noise row"
grep -q '^| host: 1 ms sleep lateness |' "$out/report.md" || e2e_fail "no sleep lateness row"
grep -Eq '^(PASS|FAIL) C1 90 %: lost [0-9]+' "$out/report.md" || e2e_fail "no C1 line"
[ "$(grep -Ec '^(PASS|FAIL) C2 80 %: p99(\.9)? ' "$out/report.md")" -eq 2 ] || e2e_fail "no C2 lines"
grep -q '^capacity: [0-9.]* CPI/s' "$out/report.md" || e2e_fail "no capacity line"
# The CPU backend's load in its own window (recorder: compute time / span).
grep -Eq '^note C2 80 %: the backend was busy [0-9]+\.[0-9] % of its window \(compute p50 [0-9.]+ ms against [0-9.]+ in the capacity window; [0-9]+ CPIs in a row computed over 1\.3 x that median\): (heavier|lighter|about)' "$out/report.md" ||
	e2e_fail "no note of how busy the backend was at 80 %"
# What the flight recorder saw per row (chirpctl trace saved by the bench).
grep -q '^| row | CPIs | device p50 ms | device p99 ms | device max ms | slow run (CPIs) | max fill | recomputed | chunked | short-handed | busy |$' "$out/report.md" ||
	e2e_fail "no flight recorder table"
for row in capacity "80 %" "90 %"; do
	# chunked: "–" without a chunks field in the trace (older chirpd), else a
	# percentage; short-handed and busy: percentages on the CPU backend, "–" on CUDA
	grep -Eq "^\| $row \| [0-9]+ \| $num \| $num \| $num \| [0-9]+ \| [0-9]+ \| [0-9]+ \| (–|$num %) \| (–|$num %) \| (–|$num %) \|$" "$out/report.md" ||
		e2e_fail "no well-formed recorder row for $row"
done
# The probe's window, in first_sample numbers, and chirpd's own latency over it.
for pct in 80 90; do
	grep -Eq '^probe n=[0-9]+ .* reattached=[0-9]+ first_fs=[0-9]+ last_fs=[0-9]+$' "$out/probe-load$pct.txt" ||
		e2e_fail "probe-load$pct.txt: no first_fs/last_fs at the end of the summary"
	awk '{ for (i = 1; i <= NF; i++) { split($i, a, "="); v[a[1]] = a[2] } }
	     END { exit !(v["n"] > 0 && v["last_fs"] + 0 >= v["first_fs"] + 0) }' "$out/probe-load$pct.txt" ||
		e2e_fail "probe-load$pct.txt: last_fs before first_fs"
done
grep -q "^| row | CPIs | p50 ms | p99 ms | p99.9 ms | max ms | covered |$" "$out/report.md" ||
	e2e_fail "no table of chirpd's own latency"
for pct in 80 90; do
	grep -Eq "^\| $pct % \| [0-9]+ \| $num \| $num \| $num \| $num \| (yes|partial) \|$" "$out/report.md" ||
		e2e_fail "no well-formed own-latency row for $pct %"
	grep -Eq "^\| $pct % \| .* \| yes \|$" "$out/report.md" ||
		echo "note: chirpd's flight recorder did not cover the $pct % window (partial)"
done
# Where the time went: six stages, each "p50 / p99.9 / max" ("–" for wake
# or behind when no CPI of the window came that way), and the tail counted.
st="$num / $num / $num"
grep -q '^| row | CPIs (idle arrivals) | wake ms | behind ms | set ms | submit ms | backend ms | deliver ms | tail (≥ p99.9) by largest stage |$' "$out/report.md" ||
	e2e_fail "no stage table"
for pct in 80 90; do
	grep -Eq "^\| $pct % \| [0-9]+ \([0-9]+\) \| ($st|–) \| ($st|–) \| $st \| $st \| $st \| $st \| [0-9]+ CPIs ≥ $num ms: [a-z]+ [0-9]+.* \|$" "$out/report.md" ||
		e2e_fail "no well-formed stage row for $pct %"
done
# C3 and C3' compare with the copy floor: CUDA only, absent here.
# The data thread's stalls: a row per load, the window's stall count, the
# CPIs one delayed out of the window's, the longest (or "–"), the tail's.
grep -q '^| row | stalls | CPIs delayed | longest ms (kind, where, CPU ms) | tail (≥ p99.9) with a stall |$' "$out/report.md" ||
	e2e_fail "no stall table"
for pct in 80 90; do
	grep -Eq "^\| $pct % \| [0-9]+ \| [0-9]+ of [0-9]+ \| (–|$num \((running|blocked|preempted|stolen), in (take|retire|poll), CPU $num\)) \| [0-9]+ of [0-9]+(: .*)? \|$" "$out/report.md" ||
		e2e_fail "no well-formed stall row for $pct %: $(grep "^| $pct % |" "$out/report.md" | tail -1)"
done
grep -Eq "^(PASS|FAIL|n/a ) C3" "$out/report.md" && e2e_fail "a C3 line on the CPU backend"
for k in command date machine; do grep -q "^$k: " "$out/report.md" || e2e_fail "report lacks '$k'"; done
# TSV: a header and capacity, two loads, host block, host noise, sleep; 16 columns each.
awk -F'\t' 'NF != 16 { bad = 1 } END { exit bad || NR != 7 }' "$out/results.tsv" ||
	{ cat "$out/results.tsv"; e2e_fail "results.tsv is not 7 rows of 16 columns"; }
grep -Eq '^(PNG: |no PNG: )' "$T/run.log" || e2e_fail "neither a PNG nor why not"
e2e_pass
