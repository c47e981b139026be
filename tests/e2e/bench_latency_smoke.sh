#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench_latency_smoke.sh — scripts/bench-latency.sh runs end to end on the CPU
# backend (tiny geometry, two loads of two 1 s windows each) and produces a
# well-formed summary per load (every window's CPIs together), a row per
# window, TSV, raw latency files and criteria lines: C1 judged, the floor's
# C2/C3 "not applicable" on the CPU backend (no copy). Timing values are not
# judged here (this is a smoke test on a shared machine), only their form.
# --tools-cpus is given every cpu this test may use (nothing moves, the
# taskset path runs) and must be named in the report; a bad list is refused.
# The echoes are in noise (--noise-dbfs) with the CFAR on: the setup line
# names the noise and the detector's table has a row per window.
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
	--loads "80 90" --windows 2 --warmup 1 --measure 1 --noise-samples 2000 "${tools[@]}" \
	--noise-dbfs -30 --set doppler.enable=1 --set cfar.enable=1 --out "$out" >"$T/run.log" 2>&1
rc=$?
cat "$T/run.log"
[ $rc -eq 0 ] || e2e_fail "bench-latency.sh exited $rc"
[ ${#tools[@]} -eq 0 ] || grep -q "^tools: producer and probe on cpus $cpus (--tools-cpus)" "$out/report.md" ||
	e2e_fail "the report does not name --tools-cpus $cpus"
num='[0-9]+(\.[0-9]+)?'
sp="$num / $num / $num"
for pct in 80 90; do
	grep -Eq "^\| $pct % \| $num \| chirpd \| 2 \| [0-9]+ \| $num \| $num \| $num \| $num \| [0-9]+ \| $sp \| $sp \|$" "$out/report.md" ||
		e2e_fail "no well-formed summary row for $pct %"
	grep -Eq "^\| $pct % \| .* \| floor \|" "$out/report.md" && e2e_fail "a floor row on the CPU backend"
	for w in 1 2; do
		grep -Eq "^\| $pct % #$w \| chirpd \| $num \| $num \| [0-9]+ \| $num \| $num \| $num \| $num \| [0-9]+ \| [0-9]+ \| [0-9]+ \| [0-9]+ \|$" "$out/report.md" ||
			e2e_fail "no well-formed window row for $pct % #$w"
		[ -s "$out/lat-load$pct-$w.txt" ] || e2e_fail "no raw latencies for $pct % #$w"
		grep -Evq "^$num$" "$out/lat-load$pct-$w.txt" && e2e_fail "lat-load$pct-$w.txt: not one number per line"
	done
done
# The pooled p99.9 of a load is one of its windows' raw latencies.
p999=$(awk -F'\t' '$1 == "chirpd_all" && $2 == 80 { print $10 }' "$out/results.tsv")
[ -n "$p999" ] && cat "$out"/lat-load80-*.txt | awk -v x="$p999" '$1 + 0 == x + 0 { f = 1 } END { exit !f }' ||
	e2e_fail "chirpd_all 80 % p99.9 '$p999' is not one of its windows' latencies"
grep -q '^floor: not applicable with the CPU backend' "$out/report.md" || e2e_fail "no 'floor: not applicable' line"
grep -q '^| host noise (block − its p50) |' "$out/report.md" || e2e_fail "no host noise row"
grep -q '^| host: 1 ms sleep lateness |' "$out/report.md" || e2e_fail "no sleep lateness row"
grep -Eq '^(PASS|FAIL) C1 90 %: lost [0-9]+ \(input_overruns [0-9]+\) over 2 windows, [0-9]+ CPIs$' "$out/report.md" ||
	e2e_fail "no C1 line"
for c in C2 C3; do
	grep -Eq "^n/a  $c 80 %: p99(\.9)? against the floor: not applicable with the CPU backend" "$out/report.md" ||
		e2e_fail "no 'not applicable' $c line on the CPU backend"
done
grep -Eq '^(PASS|FAIL) C[23]' "$out/report.md" && e2e_fail "a judged C2/C3 line on the CPU backend"
grep -q '^capacity: [0-9.]* CPI/s' "$out/report.md" || e2e_fail "no capacity line"
# The CPU backend's load in its own window (recorder: compute time / span).
grep -Eq '^note 80 % #1: the backend was busy [0-9]+\.[0-9] % of its window \(compute p50 [0-9.]+ ms against [0-9.]+ in the capacity window; [0-9]+ CPIs in a row computed over 1\.3 x that median\): (heavier|lighter|about)' "$out/report.md" ||
	e2e_fail "no note of how busy the backend was at 80 %"
# What the flight recorder saw per row (chirpctl trace saved by the bench).
grep -q '^| row | CPIs | device p50 ms | device p99 ms | device max ms | slow run (CPIs) | max fill | recomputed | chunked | short-handed | busy |$' "$out/report.md" ||
	e2e_fail "no flight recorder table"
for row in capacity "80 % #1" "80 % #2" "90 % #1" "90 % #2"; do
	# chunked: "–" without a chunks field in the trace (older chirpd), else a
	# percentage; short-handed and busy: percentages on the CPU backend, "–" on CUDA
	grep -Eq "^\| $row \| [0-9]+ \| $num \| $num \| $num \| [0-9]+ \| [0-9]+ \| [0-9]+ \| (–|$num %) \| (–|$num %) \| (–|$num %) \|$" "$out/report.md" ||
		e2e_fail "no well-formed recorder row for $row"
done
# The probe's window, in first_sample numbers, and chirpd's own latency over it.
for pct in 80 90; do
	f=$out/probe-load$pct-1.txt
	grep -Eq '^probe n=[0-9]+ .* reattached=[0-9]+ first_fs=[0-9]+ last_fs=[0-9]+$' "$f" ||
		e2e_fail "$f: no first_fs/last_fs at the end of the summary"
	awk '{ for (i = 1; i <= NF; i++) { split($i, a, "="); v[a[1]] = a[2] } }
	     END { exit !(v["n"] > 0 && v["last_fs"] + 0 >= v["first_fs"] + 0) }' "$f" ||
		e2e_fail "$f: last_fs before first_fs"
done
grep -q "^| row | CPIs | p50 ms | p99 ms | p99.9 ms | max ms | covered |$" "$out/report.md" ||
	e2e_fail "no table of chirpd's own latency"
for pct in 80 90; do
	grep -Eq "^\| $pct % #1 \| [0-9]+ \| $num \| $num \| $num \| $num \| (yes|partial) \|$" "$out/report.md" ||
		e2e_fail "no well-formed own-latency row for $pct %"
	grep -Eq "^\| $pct % #1 \| .* \| yes \|$" "$out/report.md" ||
		echo "note: chirpd's flight recorder did not cover the $pct % window (partial)"
done
# Where the time went: six stages, each "p50 / p99.9 / max" ("–" for wake
# or behind when no CPI of the window came that way), and the tail counted.
st="$num / $num / $num"
grep -q '^| row | CPIs (idle arrivals) | wake ms | behind ms | set ms | submit ms | backend ms | deliver ms | tail (≥ p99.9) by largest stage |$' "$out/report.md" ||
	e2e_fail "no stage table"
for pct in 80 90; do
	grep -Eq "^\| $pct % #1 \| [0-9]+ \([0-9]+\) \| ($st|–) \| ($st|–) \| $st \| $st \| $st \| $st \| [0-9]+ CPIs ≥ $num ms: [a-z]+ [0-9]+.* \|$" "$out/report.md" ||
		e2e_fail "no well-formed stage row for $pct %"
done
# The data thread's stalls: a row per load, the window's stall count, the
# CPIs one delayed out of the window's, the longest (or "–"), the tail's.
grep -q '^| row | stalls | CPIs delayed | longest ms (kind, where, CPU ms) | tail (≥ p99.9) with a stall |$' "$out/report.md" ||
	e2e_fail "no stall table"
for pct in 80 90; do
	grep -Eq "^\| $pct % #1 \| [0-9]+ \| [0-9]+ of [0-9]+ \| (–|$num \((running|blocked|preempted|stolen), in (take|retire|poll), CPU $num\)) \| [0-9]+ of [0-9]+(: .*)? \|$" "$out/report.md" ||
		e2e_fail "no well-formed stall row for $pct %: $(grep "^| $pct % #1 |" "$out/report.md" | tail -1)"
done
for k in command date machine; do grep -q "^$k: " "$out/report.md" || e2e_fail "report lacks '$k'"; done
grep -q '^setup: .*, noise at -30 dBFS; probe ' "$out/report.md" || e2e_fail "the setup line does not name the noise"
grep -q '^| window | lists | detections per list | full lists |$' "$out/report.md" || e2e_fail "no detector table"
for row in capacity "80 % #1" "80 % #2" "90 % #1" "90 % #2"; do
	grep -Eq "^\| $row \| [1-9][0-9]* \| $num \| [0-9]+ \|$" "$out/report.md" ||
		e2e_fail "no well-formed detector row for $row"
done
"$bench" --noise-dbfs loud >"$T/bad.log" 2>&1
[ $? -eq 2 ] && grep -q -- "--noise-dbfs wants" "$T/bad.log" || e2e_fail "--noise-dbfs loud not refused"
# TSV: a header, capacity, four windows, two loads pooled, host block, host
# noise, sleep; 15 columns each.
awk -F'\t' 'NF != 15 { bad = 1 } END { exit bad || NR != 11 }' "$out/results.tsv" ||
	{ cat "$out/results.tsv"; e2e_fail "results.tsv is not 11 rows of 15 columns"; }
"$bench" --windows 0 >"$T/bad.log" 2>&1
[ $? -eq 2 ] && grep -q -- "--windows wants" "$T/bad.log" || e2e_fail "--windows 0 not refused"
grep -Eq '^(PNG: |no PNG: )' "$T/run.log" || e2e_fail "neither a PNG nor why not"
e2e_pass
