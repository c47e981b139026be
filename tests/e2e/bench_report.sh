#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench_report.sh — scripts/bench-report.py regenerates the performance
# page's tables and README's headline from raw results: on the checked-in
# fixture (tests/e2e/bench_report_fixture: two run folders of obviously
# synthetic figures) every table and the five headline rows come out
# between their markers, the prose around them is kept, the newest result
# of each kind wins, table (e) (radar modes) gives the switching cost and
# the modes run against the single-mode one with criteria M1..M3, an older
# throughput.tsv without the switching column still reads ("not measured"),
# (c) with its FFT engine and with cuFFT is held against (b0) (>= 1.5x) and
# CuPy (>= 3x), PASS and FAIL, while a throughput.tsv without those columns
# gives the tables without them, line for line as they were,
# the network table (i) holds chirp-recv against the loopback ceiling and
# the naive loop and (j) the cost of publishing, each with its criteria,
# (k) several GPUs (per instance and in total against the host's copy
# floor, the calibration's alone and shared figures, the run's criteria)
# and (l) the restarts (every one, the median, huge pages beside when the
# folder has them, the 2 s criterion) with README's sixth row naming its
# own folder,
# (m) the cost of the live view, (p) the daemon forming beams, with their criteria,
# a modes run without a single-mode one says so, and a missing or garbled
# raw file, or a README without the headline markers, fails with an error
# that names the file and writes nothing.
. "$(dirname "$0")/lib.sh"
e2e_init bench_report
command -v python3 >/dev/null || e2e_skip "no python3"
src=$(cd "$(dirname "$0")/../.." && pwd)
gen=$src/scripts/bench-report.py
cp -r "$src/tests/e2e/bench_report_fixture" "$T/perf" || e2e_fail "cannot copy the fixture"
page() {
	{
		echo "# Performance (test page)"
		echo "Prose before."
		for k in throughput latency cupy compare modes radar detect startup net publish multigpu restart live beams_cpu beam beams; do
			echo "<!-- perf-table: $k begin -->"; echo "stale $k"; echo "<!-- perf-table: $k end -->"
			echo "Prose after $k."
		done
	} >"$T/page.md"
	printf '# chirpd\nintro\n<!-- perf-headline: begin -->\nstale\n<!-- perf-headline: end -->\nrest\n' >"$T/README.md"
}
run() { (cd "$T" && python3 "$gen" --perf perf --page page.md --readme README.md) >"$T/out.log" 2>&1; }
page
run || e2e_fail "the generator failed on the fixture: $(cat "$T/out.log")"
cat "$T/page.md"
grep -q stale "$T/page.md" "$T/README.md" && e2e_fail "a stale block survived"
for p in "Prose before." "Prose after throughput." "Prose after compare."; do
	grep -qx "$p" "$T/page.md" || e2e_fail "the prose '$p' was lost"
done
# (a): the best depth (3: (c') 6 > 5) of 4x128x4096, median (min–max); x = (d) = 4
grep -qF '| 4x128x4096 | cf32 → complex | 3 | 10.000 (9.000–11.000) | 2.000 (1.500–2.500) | 8.000 (7.500–8.500) | 6.000 (5.500–6.500) | 4.000 | 40 % | 2.00× |' "$T/page.md" ||
	e2e_fail "no (a) row for 4x128x4096"
grep -qF '| 16x128x9000 | cf32 → complex | 2 |' "$T/page.md" || e2e_fail "no (a) row for 16x128x9000"
grep -qF 'Command: `build/bench/bench_gpu --fixture`' "$T/page.md" || e2e_fail "(a) does not name its command"
grep -qF 'Fixture CPU 9000, 99 CPUs; GPU Fixture GPU X, driver 000.00, CUDA 0.0' "$T/page.md" || e2e_fail "no machine line"
# (b): pooled figures, the windows' spread, the floor, host noise, criteria
grep -qF '| 80 % | chirpd | 3 | 2400 | 0.100 | 1.222 | 2.333 | 0.900 | 0 | 1.200 (1.100–1.300) | 2.200 (2.100–2.300) |' "$T/page.md" ||
	e2e_fail "no latency row for chirpd"
grep -qF '| 80 % | floor | 3 | 2400 | 0.050 | 1.111 | 2.111 | 0.800 | 0 |' "$T/page.md" || e2e_fail "no latency row for the floor"
grep -qF '| noise (250 µs block − its p50) | 20000 | 0.044 | 0.055 | 0.066 |' "$T/page.md" || e2e_fail "no host noise row"
grep -qF '    FAIL C3 80 %: chirpd p99.9 2.333 ms' "$T/page.md" || e2e_fail "no criteria lines"
grep -qF 'Floor: 4 chunks over 2 streams' "$T/page.md" || e2e_fail "no floor description"
# (a), compute on the device: (c) at its own best depth with its engine
# and with cuFFT at its best; 8 / 4 = 2.00x PASS; 16x128x9000's (c') is
# best at depth 2 (7 > 6.5) but its (c) at depth 3 (9.6 > 9), its cuFFT
# at depth 2 (9 > 8): 9.6 / 7.5 = 1.28x FAIL against 1.5x
grep -qF '| (b0) naive, device data | (c) FFT engine | (c) depth | (c) backend, device data | (c) with cuFFT | (c) / (b0) | ≥ 1.5× |' "$T/page.md" ||
	e2e_fail "no engine table header"
grep -qF '| 4x128x4096 | cf32 → complex | 4.000 | fused (4608 = 9x8x8x8) | 3 | 8.000 | 6.000 | 2.00× | PASS | 5.400 | 90 % |' "$T/page.md" ||
	e2e_fail "no passing engine row"
grep -qF '| 16x128x9000 | cf32 → complex | 7.500 | cufft | 3 | 9.600 | 9.000 | 1.28× | FAIL | 6.300 | 90 % |' "$T/page.md" ||
	e2e_fail "no failing engine row"
grep -qF 'the same backend with `cuda_fused = off`, measured in the same run' "$T/page.md" ||
	e2e_fail "the engine table does not say what the cuFFT column is"
# (c): CuPy against (c) of the same folder: 8 / 1.0486 PASS, 9.6 / 4 FAIL against 3x
grep -qF '| chirpd / CuPy | ≥ 3× |' "$T/page.md" || e2e_fail "no CuPy criterion column"
grep -qF '| 4x128x4096 | 512 | 4608 | 2.000 (1.000–3.000) | 1.049 | fused (4608 = 9x8x8x8) | 8.000 (7.500–8.500) | 7.63× | PASS |' "$T/page.md" ||
	e2e_fail "no CuPy row"
grep -qF '| 16x128x9000 | 1000 | 10000 | 4.608 (4.500–5.000) | 4.000 | cufft | 9.600 (9.400–9.800) | 2.40× | FAIL |' "$T/page.md" ||
	e2e_fail "no failing CuPy row"
grep -qF "chirpd's default FFT engine (\`pc_info.fft_engine\`, \`[processing] cuda_fused\`)" "$T/page.md" ||
	e2e_fail "the CuPy table does not name (c)'s engine"
# (d): the newer folder (chirpd 402..403 MS/s, not the older 101..103), a dirty tree said so
grep -qF '| 4x128x4096 | 512 | 402.0 (401.0–403.0) | 102.0 (101.0–103.0) | – | 3.94× | – |' "$T/page.md" ||
	e2e_fail "no compare row from the newest folder"
grep -qF 'gnuradio: skipped: fixture: GNU Radio not installed' "$T/page.md" || e2e_fail "the skipped tool is not named"
grep -qF '**(uncommitted changes: dirty tree)**' "$T/page.md" || e2e_fail "a dirty tree is not flagged"
# (e): the switching cost at (a)'s best depth (3 for 4x128x4096), PASS at >= 0.98
grep -qF '| 4x128x4096 | cf32 → complex | 3 | 0.990 | PASS |' "$T/page.md" || e2e_fail "no switching row for 4x128x4096"
grep -qF '| 16x128x9000 | cf32 → complex | 2 | 0.950 | FAIL |' "$T/page.md" || e2e_fail "no failing switching row"
# (e): the modes run next to the single-mode run of its folder, each with its floor
grep -qF '| single mode | chirpd | 3 | 2400 | 0.100 | 1.222 | 2.333 | 0.900 | 0 | 2.200 (2.100–2.300) |' "$T/page.md" ||
	e2e_fail "no single-mode row in (e)"
grep -qF '| 3 modes | chirpd | 3 | 2400 | 0.110 | 1.255 | 2.290 | 0.990 | 0 | 2.250 (2.150–2.350) |' "$T/page.md" ||
	e2e_fail "no modes row in (e)"
grep -qF '| 3 modes | floor | 3 | 2400 | 0.055 | 1.022 | 2.000 | 0.880 | 0 |' "$T/page.md" || e2e_fail "no modes floor row"
grep -qF 'Setup: backend cuda, fixture, 3 radar modes.' "$T/page.md" || e2e_fail "(e) does not give the modes run's setup"
# M1 counts a window's input overrun; M2 against 1.25 x its floor; M3 against the worst single-mode window
grep -qF '    FAIL M1 80 %: the modes run lost 1 (lost 0, input_overruns and output_drops 1) over 3 windows, 2400 CPIs' "$T/page.md" ||
	e2e_fail "no M1 line"
grep -qF '    PASS M2 80 %: modes chirpd p99.9 2.290 ms <= 1.25 x its floor p99.9 2.000 = 2.500 ms' "$T/page.md" ||
	e2e_fail "no M2 line"
grep -qF "    PASS M3 80 %: modes chirpd p99.9 2.290 ms <= the single-mode run's highest window p99.9 2.300 ms (3 windows)" "$T/page.md" ||
	e2e_fail "no M3 line"
grep -qF '    PASS C2 80 %: fixture modes line' "$T/page.md" || e2e_fail "no criteria from the modes report"
# (f): the chain against CuPy's (20 / 5 = 4x, PASS) and the copy limit (95 %, PASS; 80 %, FAIL)
grep -qF '| 4x128x4096 | 3 | 10.000 | 30.000 | 20.000 | 5.000 | 4.00× | PASS | 9.500 | 95 % | PASS |' "$T/page.md" ||
	e2e_fail "no radar chain row"
grep -qF '| 16x128x9000 | 3 | 10.000 | 30.000 | 12.000 | – | – | – | 8.000 | 80 % | FAIL |' "$T/page.md" ||
	e2e_fail "no radar chain row without a CuPy figure"
grep -qF '| 4 × 256 × 4096 | 22.0 (20.0–25.0) | 44.0 (40.0–50.0) | 2.00× |' "$T/page.md" || e2e_fail "no corner-turn row"
grep -qF '| 4x128x4096 | cf32 | 9.200 | 10.000 | 92 % | PASS |' "$T/page.md" || e2e_fail "no detect row"
grep -qF '| 16x128x9000 | cf32 | 8.500 | 10.000 | 85 % | FAIL |' "$T/page.md" || e2e_fail "no failing detect row"
# start-ups: median 1000, the farthest +10 % (FAIL), depth 3 in 4 of 5 (PASS)
grep -qF '| 4 | 1100 | +10.0 % | 2 | 110 | measured |' "$T/page.md" || e2e_fail "no start-up row"
grep -qF '    FAIL capacity within ±5 % of the median (1000 CPI/s): farthest 10.0 %' "$T/page.md" || e2e_fail "no start-up capacity line"
grep -qF '    PASS the same depth in at least 4 of 5 starts: depth 3 in 4' "$T/page.md" || e2e_fail "no start-up depth line"
# (i): the three receivers and the criteria: 30 / 40 = 75 % FAIL, 3x PASS, 30 >= 25 PASS
grep -qF '| (a) loopback ceiling: discard sink, recvmmsg | 2 | 8220 | 40.00 | 20.00 | 0.0000 | 5 | udp_sink blast x2 | - |' "$T/page.md" ||
	e2e_fail "no net ceiling row"
grep -qF '| (b) naive receiver: chirp-recv, one recvmsg per datagram, one thread | 1 | 8220 | 10.00 | 10.00 | 0.5000 | 5 | chirp-send x2 | cuda |' "$T/page.md" || e2e_fail "no net naive row"
grep -qF '| (c) chirp-recv into chirpd, loss-free, held | 2 | 8220 | 30.00 | 15.00 | 0.000000 | 60 | chirp-send x2 | cuda |' "$T/page.md" ||
	e2e_fail "no chirp-recv row"
grep -qF '    FAIL (c) / (a) = 75 % ≥ 90 % of the loopback ceiling' "$T/page.md" || e2e_fail "no (c)/(a) line"
grep -qF '    PASS (c) / (b) = 3.00× ≥ 2× the naive loop' "$T/page.md" || e2e_fail "no (c)/(b) line"
grep -qF '    PASS (c) = 30.00 Gb/s ≥ 25 Gb/s (15.00 Gb/s per receive core)' "$T/page.md" || e2e_fail "no 25 Gb/s line"
# (j): every run, the medians (off 1000, on 995) and the cost: 0.50 % PASS
grep -qF '| capacity | 1 | on | 996.0 | – | 1.55 | 9950 | 2 | 20000 | 2 |' "$T/page.md" || e2e_fail "no publish row"
grep -qF '| capacity | 2 | off | 1000.0 | – | 1.50 | – | – | – | – |' "$T/page.md" || e2e_fail "no publish-off row"
grep -qF '| paced, 800 CPI/s | 1 | on | 800.0 | 0.00000 | 1.25 | 8000 | 0 | 16000 | 0 |' "$T/page.md" ||
	e2e_fail "no paced publish row"
grep -qF '    PASS publishing costs 0.50 % ≤ 1 % of capacity (median off 1000.0, on 995.0 CPI/s)' "$T/page.md" ||
	e2e_fail "no publishing cost line"
grep -qF '    PASS paced at 800 CPI/s: publishing loses 0.00000 of the CPIs, without 0.00000 (median)' "$T/page.md" ||
	e2e_fail "no paced publishing line"
grep -qF '    FAIL the subscriber on the same host saw every list: 2 seq gaps over 3 runs without input loss' "$T/page.md" ||
	e2e_fail "no subscriber line"
# (k): the floor, alone and shared per instance and in total; the phases
grep -qF '| gpu0 | 0000:01:00.0 | 100.0 | 120.0 | 90.0 | 0.180 | 90 % |' "$T/page.md" || e2e_fail "no (k) capacity row"
grep -qF '| total (2) | - | 200.0 | 230.0 | 170.0 | 0.340 | 85 % |' "$T/page.md" || e2e_fail "no (k) total capacity row"
grep -qF '| peak 95 % | gpu1 | 76.000 | 76.0 | 0.100 | 76 % | 1.000 | 2.000 | 3.000 | 4.000 | 3 | 3 | 0 |' "$T/page.md" ||
	e2e_fail "no (k) peak row"
grep -qF '| independence 80 % | gpu1 | 64.000 | 60.0 | 0.100 | 60 % | 1.000 | 2.000 | 3.000 | 4.000 | 90 | – | 0 |' "$T/page.md" ||
	e2e_fail "no (k) independence row (n/a as –)"
grep -qF '    FAIL M2 peak 95 %: gpu1 lost 3 (fixture)' "$T/page.md" || e2e_fail "no (k) criteria"
grep -qF '    PASS V every verification: fixture' "$T/page.md" || e2e_fail "no (k) V line"
grep -qF '    independence: restarted gpu1: processing again 1.25 s after the kill (fixture line)' "$T/page.md" ||
	e2e_fail "no (k) independence lines"
# (l): every restart, the median, huge pages, the 2 s criterion (2100 ms: FAIL)
grep -qF '| ordinary pages | 3 | 2100 | 1100 | 0.2 | 450 | 30 | 280 | 320 | 1.0 | 2 | cache |' "$T/page.md" || e2e_fail "no (l) row"
grep -qF '| ordinary pages | **median** | **1700** | 1100 |' "$T/page.md" || e2e_fail "no (l) median"
grep -qF '| huge pages | 1 | 1000 | 600 | 0.2 | 400 | 30 | 50 | 100 | 1.0 | 2 | cache |' "$T/page.md" || e2e_fail "no (l) huge pages row"
grep -qF '    FAIL every restart processing again within 2 s of the kill: the longest 2100 ms' "$T/page.md" ||
	e2e_fail "no (l) criterion"
# (m): every run, the ratio (994 of 1000: 99.40 % PASS) and the latency
# with a page open from the same folder, with its criteria
grep -qF '| 1 | 3 | 995.0 | 14.9 | 150 | 2 |' "$T/page.md" || e2e_fail "no live row"
grep -qF '| 2 | 0 | 1000.0 | – | 0 | 0 |' "$T/page.md" || e2e_fail "no live no-page row"
grep -qF '    PASS capacity with 3 pages open is 99.40 % ≥ 99 % of capacity with none (median 994.0 against 1000.0 CPI/s)' "$T/page.md" ||
	e2e_fail "no live capacity line"
grep -qF 'Latency at 80 % of capacity with a page open' "$T/page.md" || e2e_fail "no live latency table"
[ "$(grep -c '    PASS C2 80 %: chirpd p99 1.222 ms' "$T/page.md")" -ge 2 ] || e2e_fail "no live latency criteria"
# (o): each tool's best round, wall and CPU, the criterion on CPU time
grep -qF '| 16x128x4096 | 512 | 16 conventional | chirpd, up to the maps (numpy'"'"'s work) | 100.0 | 80.0 | 4.00× | 2.50× |' "$T/page.md" ||
	e2e_fail "no beams_cpu row"
grep -qF '| 16x128x4096 | 512 | 16 conventional | chirpd, the chain (+ CFAR, maxima, monopulse) | 150.0 | 140.0 | 2.67× | 1.43× |' "$T/page.md" ||
	e2e_fail "no beams_cpu chain row"
grep -qF '    FAIL 16x128x4096, 16 beams, the same work: chirpd 2.50× numpy'"'"'s speed in CPU time (≥ 3×)' "$T/page.md" ||
	e2e_fail "no beams_cpu criterion"
# (p): the beams' runs against the copy limit (median 0.965 of 1.000: PASS)
# and the switching cost (0.940 against 0.965: 2.59 %, FAIL); no latency
grep -qF '| 1 | switching | 93.0 | 0.930 | 93 % | 0 |' "$T/page.md" || e2e_fail "no beams row"
grep -qF '    PASS with beams, detections only: 96 % ≥ 95 % of the host-to-device copy limit (median 0.965 of 1.000 GS/s)' "$T/page.md" ||
	e2e_fail "no beams copy-limit criterion"
grep -qF '    FAIL the pointing changing every CPI costs 2.59 % ≤ 2 % (median 0.940 against 0.965 GS/s)' "$T/page.md" ||
	e2e_fail "no beams switching criterion"
grep -qF 'Latency with beams: not measured in this folder' "$T/page.md" || e2e_fail "no beams latency line"
# README: five rows from one run, and its command; a sixth for several GPUs
sed -n '/perf-headline: begin/,/perf-headline: end/p' "$T/README.md" >"$T/head.md"
cat "$T/head.md"
[ "$(grep -c '^| [A-Z0-9]' "$T/head.md")" -eq 7 ] || e2e_fail "the headline is not a header and six rows"
grep -qF '| 2 GPUs, one chirpd each, 4×128×4096 | shared capacity 170 CPI/s in total = 85 % of the host'"'"'s 2-GPU copy floor; at 95 % of it CPIs lost; kill -9 of one: processing again after 1.25 s, the other'"'"'s tail unmoved (`doc/perf/2000-01-03-fixture-gpu-x2/`) |' "$T/head.md" ||
	e2e_fail "no several-GPU headline"
grep -qF '| Throughput, 4×128×4096 cf32 → complex | the daemon: 4.00 GS/s = 40 % of the copy limit (10.00 GS/s) |' "$T/head.md" ||
	e2e_fail "no throughput headline"
grep -qF '| Against a naive 2-stream loop, same CPI | 2.00× (2.00 GS/s) |' "$T/head.md" || e2e_fail "no naive-loop headline"
grep -qF '| Losses at 90 % of capacity (backend cuda, fixture) | FAIL C1 90 %: fixture line |' "$T/head.md" || e2e_fail "no losses headline"
grep -qF 'PASS C2 80 %' "$T/head.md" || e2e_fail "no latency headline"
grep -qF 'chirpd 402 MS/s per thread: 3.94× scipy, no GNU Radio' "$T/head.md" || e2e_fail "no CPU headline"
grep -qF '`scripts/perf-run.sh gpu fixture`' "$T/head.md" || e2e_fail "the headline does not name the run's command"
grep -qx 'rest' "$T/README.md" && grep -qx 'intro' "$T/README.md" || e2e_fail "README around the block changed"

# Failures name the file and leave both files as they were.
expect_fail() {   # expect_fail WHAT PATTERN
	cp "$T/page.md" "$T/page.before"
	run && e2e_fail "$1: the generator succeeded"
	grep -q "^bench-report: .*$2" "$T/out.log" || e2e_fail "$1: error does not name $2: $(cat "$T/out.log")"
	cmp -s "$T/page.md" "$T/page.before" || e2e_fail "$1: the page was written anyway"
	e2e_log "$1: $(cat "$T/out.log")"
}
g=$T/perf/2000-01-02-fixture-gpu
cp "$g/throughput.tsv" "$T/keep.tsv"

# An older throughput.tsv (no switching column) still reads: (a) as before,
# (e) "not measured"; a row without a figure is "not measured" alone.
cut -f1-21 "$T/keep.tsv" >"$g/throughput.tsv"
page
run || e2e_fail "the generator failed on a throughput.tsv without the switching column: $(cat "$T/out.log")"
grep -qF '| 4x128x4096 | cf32 → complex | 3 | 10.000 (9.000–11.000) |' "$T/page.md" || e2e_fail "(a) lost without the switching column"
grep -qF 'Switching cost: not measured yet: the newest throughput results' "$T/page.md" ||
	e2e_fail "no 'not measured' for a throughput.tsv without the switching column"
grep -qF '| 4x128x4096 | cf32 → complex | 3 | 0.990 |' "$T/page.md" && e2e_fail "a switching figure out of nothing"
sed '4s/\t0\.9500\t/\t\t/' "$T/keep.tsv" >"$g/throughput.tsv"
page
run || e2e_fail "the generator failed on an empty switching figure: $(cat "$T/out.log")"
grep -qF '| 16x128x9000 | cf32 → complex | 2 | not measured | – |' "$T/page.md" || e2e_fail "an empty switching figure is not 'not measured'"
grep -qF '| 4x128x4096 | cf32 → complex | 3 | 0.990 | PASS |' "$T/page.md" || e2e_fail "the other switching rows went"
# A throughput.tsv with (b0) and (c'') but without c_device_cufft and
# fft_engine: the tables as they were, without engine or criteria columns.
cut -f1-24 "$T/keep.tsv" >"$g/throughput.tsv"
page
run || e2e_fail "the generator failed without the engine columns: $(cat "$T/out.log")"
grep -qxF "| CPI | in → out | (b0) naive, device data | (c) / (b0) | (c'') copy staging | (c'') / (c') |" "$T/page.md" ||
	e2e_fail "no (b0) table without the engine columns"
grep -qxF '| 4x128x4096 | cf32 → complex | 4.000 | 2.00× | 5.400 | 90 % |' "$T/page.md" ||
	e2e_fail "no (b0) row without the engine columns"
grep -qxF '| 4x128x4096 | 512 | 4608 | 2.000 (1.000–3.000) | 1.049 | 8.000 (7.500–8.500) | 7.63× |' "$T/page.md" ||
	e2e_fail "no CuPy row without the engine columns"
grep -qE '≥ 1\.5×|chirpd / CuPy \| ≥|cuda_fused|fft_engine' "$T/page.md" && e2e_fail "engine or criteria out of nothing"
# An engine named without a cuFFT figure: the criteria still, cuFFT "–".
cut -f1-24,26 "$T/keep.tsv" >"$g/throughput.tsv"
page
run || e2e_fail "the generator failed without c_device_cufft: $(cat "$T/out.log")"
grep -qF '| 16x128x9000 | cf32 → complex | 7.500 | cufft | 3 | 9.600 | – | 1.28× | FAIL | 6.300 | 90 % |' "$T/page.md" ||
	e2e_fail "a missing cuFFT figure is not '–'"
cp "$T/keep.tsv" "$g/throughput.tsv"
# A modes run without a single-mode one in its folder: said, M3 n/a.
mkdir "$T/away" && mv "$g/latency.tsv" "$g/latency.meta" "$T/away/"
page
run || e2e_fail "the generator failed without latency.tsv: $(cat "$T/out.log")"
grep -qF 'has modes.tsv but no latency.tsv: no single-mode run to compare with' "$T/page.md" ||
	e2e_fail "a missing latency.tsv is not named"
grep -qF '    n/a  M3 80 %: no single-mode run (latency.tsv) in this folder' "$T/page.md" || e2e_fail "M3 is not n/a without latency.tsv"
grep -qF '    PASS M2 80 %' "$T/page.md" || e2e_fail "M2 went with latency.tsv"
mv "$T/away/latency.tsv" "$T/away/latency.meta" "$g/"
# No modes results at all: (e)'s latency part says not measured.
mv "$g/modes.tsv" "$g/modes.meta" "$T/away/"
page
run || e2e_fail "the generator failed without modes.tsv: $(cat "$T/out.log")"
grep -qF 'Latency with modes: not measured yet: no folder under `perf/` has modes.tsv' "$T/page.md" ||
	e2e_fail "a missing modes.tsv is not said"
mv "$T/away/modes.tsv" "$T/away/modes.meta" "$g/"
page
run || e2e_fail "the restored fixture fails: $(cat "$T/out.log")"
sed -i '2s/\t10\.0000\t/\tten\t/' "$g/throughput.tsv"
expect_fail "garbled number" "2000-01-02-fixture-gpu/throughput.tsv:2: a_both = 'ten' is not a number"
cut -f1-5 "$T/keep.tsv" >"$g/throughput.tsv"
expect_fail "missing columns" "throughput.tsv: header lacks column"
cp "$T/keep.tsv" "$g/throughput.tsv"
mv "$g/latency-report.md" "$T/"
expect_fail "missing report" "2000-01-02-fixture-gpu/latency-report.md: No such file"
mv "$T/latency-report.md" "$g/"
mv "$g/modes-report.md" "$T/"
expect_fail "missing modes report" "2000-01-02-fixture-gpu/modes-report.md: No such file"
mv "$T/modes-report.md" "$g/"
mv "$T/perf/2000-01-03-fixture-gpu-x2/multigpu-report.md" "$T/"
expect_fail "missing multi-GPU report" "2000-01-03-fixture-gpu-x2/multigpu-report.md: No such file"
mv "$T/multigpu-report.md" "$T/perf/2000-01-03-fixture-gpu-x2/"
sed -i '2s/\t0\.5000\t/\tfast\t/' "$g/throughput.tsv"
expect_fail "garbled switching figure" "throughput.tsv:2: c_registered_mode_switch = 'fast' is not a number"
cp "$T/keep.tsv" "$g/throughput.tsv"
sed -i '3s/\t6\.0000\tfused/\tsix\tfused/' "$g/throughput.tsv"
expect_fail "garbled cuFFT figure" "throughput.tsv:3: c_device_cufft = 'six' is not a number"
cp "$T/keep.tsv" "$g/throughput.tsv"
mv "$g/cupy.tsv" "$T/"
expect_fail "meta without results" "2000-01-02-fixture-gpu/cupy.meta: no cupy.tsv beside it"
mv "$T/cupy.tsv" "$g/"
cp "$g/net.tsv" "$T/net.keep"
grep -v '^naive' "$T/net.keep" >"$g/net.tsv"
expect_fail "net without the naive row" "2000-01-02-fixture-gpu/net.tsv: no row(s) naive"
cp "$T/net.keep" "$g/net.tsv"
sed -i '/^date/d' "$g/latency.meta"
expect_fail "meta without date" "latency.meta: no date"
cp "$src/tests/e2e/bench_report_fixture/2000-01-02-fixture-gpu/latency.meta" "$g/"
printf '# chirpd\nno markers\n' >"$T/README.md"
expect_fail "README without markers" "README.md: lacks the markers <!-- perf-headline: begin -->"
page
run || e2e_fail "the restored fixture fails: $(cat "$T/out.log")"
e2e_pass
