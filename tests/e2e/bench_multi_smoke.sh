#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench_multi_smoke.sh — scripts/bench-multi-gpu.sh runs end to end with two
# CPU instances (tiny geometry, short windows: no GPU needed) and every
# phase (capacity, the host calibration, load, peak, independence) and
# produces well-formed per-instance and total rows for every phase, the
# calibration table (each instance's shared figure stored and reported by
# its status), the placement table, the kill -9/restart independence lines
# (the restart reused both rings and the cached capacity, no peer
# re-attached), criteria lines, a TSV and the log tarball. Timing values are not judged (a smoke test on a shared
# machine); that the restarted instance resumes and every verification
# matches is (I3, V): those are correctness, not timing.
. "$(dirname "$0")/lib.sh"
e2e_init bench_multi_smoke
e2e_need chirp-feed chirp-tap
[ -x "$BUILD/bench/latency_probe" ] || e2e_skip "$BUILD/bench/latency_probe is not built"
command -v python3 >/dev/null || e2e_skip "no python3"
out=$T/mg
timeout -k 5 150 "$(dirname "$0")/../../scripts/bench-multi-gpu.sh" --backend cpu --instances 2 \
	--modes "capacity calibrate load peak independence" --geometry 1x16x1000 --ref-len 64 --warmup 0.5 --cap-seconds 1 --duration 1 --ind-seconds 6 \
	--kill-at 1.5 --verify-count 5 --set processing.cpu_threads=1 --out "$out" >"$T/run.log" 2>&1
rc=$?
cat "$T/run.log"
[ $rc -eq 0 ] || e2e_fail "bench-multi-gpu.sh exited $rc"
num='[0-9]+(\.[0-9]+)?'
ms="($num|n/a)"
for ph in capacity load peak independence; do
	for inst in cpu0 cpu1 'total \(2\)'; do
		grep -Eq "^\| $ph \| $inst \| (-|) \| (saturated|$num) \| $num \| $num \| $ms \| $ms \| $ms \| $ms \| [0-9]+ \| [0-9]+ \| [0-9]+ \| [0-9]+ \| [0-9]+/[0-9]+ \|$" "$out/report.md" ||
			e2e_fail "no well-formed row for $ph $inst"
	done
	for inst in cpu0 cpu1; do
		grep -Eq "^\| $ph \| $inst \| - \| - \| (none|[0-9]+) \| [0-9,-]+|all \| .+ \| .+ \|$" "$out/report.md" ||
			e2e_fail "no placement row for $ph $inst"
	done
done
grep -q '^copy floor: none (CPU backend: no GPU, no copy floor)$' "$out/report.md" || e2e_fail "no 'no copy floor' line"
grep -Eq '^The host reports [0-9]+ NUMA node|^\| capacity \| cpu0 \| - \| - \| [0-9]+ ' "$out/report.md" ||
	e2e_fail "neither a one-NUMA-node line nor a bound node"
grep -Eq "^independence: survivor cpu0: lost [0-9]+ \(in_ovr [0-9]+, out_drop [0-9]+\); p99.9 before $ms ms \([0-9]+\), kill window $ms ms \([0-9]+\), after $ms ms \([0-9]+\)$" "$out/report.md" ||
	e2e_fail "no well-formed survivor line"
grep -Eq "^independence: restarted cpu1: killed -9 at $num s into its window, answering again $num s later; resumed: [0-9]+ CPIs delivered after the restart, [0-9]+ lost \(gaps by first_sample\), output ring re-attached [0-9]+ times, verify [0-9]+, [0-9]+ mismatches$" "$out/report.md" ||
	e2e_fail "no well-formed restarted-instance line"
grep -Eq '^(PASS|FAIL) I1 survivor cpu0 lost nothing: lost [0-9]+' "$out/report.md" || e2e_fail "no I1 line"
grep -Eq '^(PASS|FAIL) I2 survivor cpu0 tail unmoved: ' "$out/report.md" || e2e_fail "no I2 line"
grep -Eq '^(PASS|FAIL) M1 load 80 %: cpu[01] lost [0-9]+' "$out/report.md" || e2e_fail "no M1 line"
grep -Eq '^(PASS|FAIL) M2 peak 95 %: cpu[01] lost [0-9]+' "$out/report.md" || e2e_fail "no M2 line"
for inst in cpu0 cpu1; do
	grep -Eq "^\| $inst \| - \| $num \| $num \| [0-9]+ % \| - \| - \|$" "$out/report.md" ||
		e2e_fail "no calibration row for $inst (no shared figure stored?)"
done
grep -Eq "^\| (load|peak) \| cpu0 \| - \| $num \| " "$out/report.md" || e2e_fail "no rate from the status's capacity"
grep -Eq '^(PASS|FAIL) R1 restarted cpu1 processing again [0-9.]+ s after the kill' "$out/report.md" || e2e_fail "no R1 line"
grep -Eq '^PASS R2 restarted cpu1 kept its peers: rings reused 2 of 2, capacity cached, producer re-attached no, consumer re-attached 0$' "$out/report.md" ||
	e2e_fail "the restart did not keep its rings and cache, or a peer re-attached"
grep -Eq '^Beside the survivors in the kill window: cpu1 starting again, [0-9]+ ms \(backend [0-9]+, capacity [0-9]+, rings [0-9]+, pipeline [0-9]+, threads [0-9]+\)\.$' "$out/report.md" ||
	e2e_fail "no start-up phases beside the survivor's tail"
grep -Eq '^PASS I3 restarted cpu1 resumed its stream: [0-9]+ CPIs after the restart, verify 5/0 mismatches$' "$out/report.md" ||
	e2e_fail "the restarted instance did not resume (or its results did not verify)"
grep -Eq '^PASS V every verification: 40 results recomputed, 0 mismatches$' "$out/report.md" || e2e_fail "a verification failed"
for k in command date machine commit setup windows; do grep -q "^$k: " "$out/report.md" || e2e_fail "report lacks '$k'"; done
# TSV: a header and 5 phases x (2 instances + total), 19 columns each.
awk -F'\t' 'NF != 19 { bad = 1 } END { exit bad || NR != 16 }' "$out/results.tsv" ||
	{ cat "$out/results.tsv"; e2e_fail "results.tsv is not 16 rows of 19 columns"; }
tar -tzf "$out/logs.tar.gz" | grep -q 'work/independence-cpu1-chirpd.log' || e2e_fail "logs.tar.gz lacks the restarted chirpd's log"
[ "$(ls "$out" | wc -l)" -le 8 ] || e2e_fail "more than 8 files in $out"
ls /dev/shm | grep -q '^chirp-mg-' && e2e_fail "rings left in /dev/shm: $(ls /dev/shm | grep '^chirp-mg-')"
e2e_pass
