#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench_net_smoke.sh — scripts/bench-net.sh --quick runs end to end on
# loopback with the CPU backend (small datagrams and CPIs, a few seconds)
# and writes its raw results: net.tsv with its header and one row each for
# (a) the loopback ceiling (fed by (c)'s sender, unpaced), the same sink fed
# by the blaster, (b) the naive loop and (c) chirp-recv into chirpd, numbers where numbers belong, and net.meta (scripts/bench-meta.sh)
# beside it; the summary ends with the three criteria lines, and
# scripts/bench-report.py turns the results into table (i). The figures are
# not judged (a shared machine), only their form. Bad options are refused
# with status 2 before anything runs. The senders' --same-cpi (synthesis
# once, so that a sender is bounded by its packets) sends the first CPI's
# samples for every CPI, and only with it are noisy CPIs alike; with
# --threads 2 (a thread per channel) the ring receives the same bytes. The
# naive row (b) is chirp-recv's own work done one datagram at a time, fed
# by chirp-send; chirp-send --threads refuses per-CPI synthesis.
. "$(dirname "$0")/lib.sh"
e2e_init bench_net_smoke
e2e_need chirp-recv chirp-send chirp-tap
[ -x "$BUILD/bench/udp_sink" ] || e2e_skip "$BUILD/bench/udp_sink is not built"
src=$(cd "$(dirname "$0")/../.." && pwd)
bench=$src/scripts/bench-net.sh

"$BIN/chirp-send" -c /dev/null --threads 2 -q >"$T/bad.log" 2>&1
[ $? -eq 2 ] && grep -q -- "--threads 2: the threads share a recording or --same-cpi" "$T/bad.log" ||
	e2e_fail "chirp-send --threads 2 without --same-cpi: not refused: $(cat "$T/bad.log")"
for bad in "--bytes 1001" "--threads 0" "--threads 3 --senders 2" "--backend gpu" "--out x.txt" "--frobnicate"; do
	# shellcheck disable=SC2086
	"$bench" $bad >"$T/bad.log" 2>&1
	[ $? -eq 2 ] || e2e_fail "bench-net.sh $bad: not refused with status 2: $(cat "$T/bad.log")"
done

out=$T/perf/2000-01-03-smoke/net.tsv
CHIRP_BUILD=$BUILD timeout -k 5 60 "$bench" --quick --threads 2 --bytes 540 --out "$out" >"$T/run.log" 2>&1
rc=$?
cat "$T/run.log"
[ $rc -eq 0 ] || e2e_fail "bench-net.sh --quick exited $rc"
[ -s "$out" ] || e2e_fail "no $out"
"$PY" - "$out" <<'EOF' || e2e_fail "net.tsv is malformed"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
head = open(sys.argv[1]).readline().rstrip("\n").split("\t")
assert head == ["what", "threads", "datagram_bytes", "gbps", "gbps_per_core", "loss",
                "seconds", "sender", "backend"], head
assert [r["what"] for r in rows] == ["ceiling", "blaster", "naive", "chirp-recv"], rows
for r in rows:
    for c in ("gbps", "gbps_per_core", "seconds"):
        assert float(r[c]) >= 0, (c, r)
    assert int(r["datagram_bytes"]) == 540, r
    assert r["loss"] == "-" or 0 <= float(r["loss"]) <= 1, r
assert [int(r["threads"]) for r in rows] == [2, 2, 1, 2], rows
assert all(float(rows[i]["gbps"]) > 0 for i in (0, 1, 2)), rows
# like with like: (a) has (c)'s sender, unpaced; the blaster's row beside it
assert rows[0]["sender"] == "chirp-send x2 unpaced", rows[0]
assert rows[1]["sender"] == "udp_sink blast x2", rows[1]
assert rows[3]["backend"] == "cpu" and rows[3]["sender"] == "chirp-send x2", rows[3]
assert rows[2]["backend"] == "cpu" and rows[2]["sender"] == "chirp-send x2", rows[2]
EOF
meta=${out%.tsv}.meta
grep -qx $'kind\tnet' "$meta" || e2e_fail "net.meta has no kind net: $(cat "$meta")"
grep -q $'^command\tscripts/bench-net.sh --quick --threads 2 --bytes 540' "$meta" ||
	e2e_fail "net.meta does not name the command: $(cat "$meta")"
for c in '(c)/(a) = ' '(c)/(b) = ' '(c) = '; do
	grep -qF "$c" "$T/run.log" || e2e_fail "no criteria line '$c' in the summary"
done
[ "$(grep -cE '^(PASS|FAIL) \(c\)' "$T/run.log")" -eq 3 ] || e2e_fail "not three criteria lines"
grep -q '^like with like: (a), (b) and (c) fed by one sender, chirp-send x2' "$T/run.log" ||
	e2e_fail "the summary does not say (a) and (c) share their sender"

# The report reads what the benchmark wrote.
{
	# every table the real page has (the report fills each one)
	for k in $(sed -n 's/^<!-- perf-table: \([a-z_]*\) begin -->$/\1/p' "$src/doc/performance.md"); do
		echo "<!-- perf-table: $k begin -->"; echo "<!-- perf-table: $k end -->"
	done
} >"$T/page.md"
printf '<!-- perf-headline: begin -->\n<!-- perf-headline: end -->\n' >"$T/README.md"
(cd "$T" && python3 "$src/scripts/bench-report.py" --perf perf --page page.md --readme README.md) >"$T/report.log" 2>&1 ||
	e2e_fail "bench-report.py failed on bench-net's results: $(cat "$T/report.log")"
grep -qF '| (c) chirp-recv into chirpd, loss-free, held | 2 | 540 |' "$T/page.md" ||
	e2e_fail "table (i) lacks the chirp-recv row: $(cat "$T/page.md")"
grep -qE '^    (PASS|FAIL) \(c\) / \(a\) = ' "$T/page.md" || e2e_fail "table (i) lacks its criteria"
# chirp-send --same-cpi: chirp-send -> chirp-recv -> a ring chirp-tap
# records raw; noise makes every CPI differ unless the samples are made once.
e2e_config input.format=sc16 cpi.channels=2 cpi.pulses=4 cpi.samples=128 \
	waveform.sample_rate_hz=1e6 waveform.bandwidth_hz=2e5 waveform.pulse_width_s=20e-6
for same in 0 1 2; do
	ring=$IN_RING-$same
	"$CHIRP_TAP" -c "$CONF" -r "$ring" --create -n 3 --out "$T/cpis-$same.raw" --timeout 20 >"$T/tap-$same.log" 2>&1 &
	tap=$!
	e2e_track $tap
	e2e_wait 10 test -e "/dev/shm$ring" || e2e_fail "chirp-tap did not create $ring: $(cat "$T/tap-$same.log")"
	"$BIN/chirp-recv" -c "$CONF" -r "$ring" --listen 127.0.0.1:0 --count 3 --wait 10 >"$T/recv-$same.json" 2>"$T/recv-$same.log" &
	recv=$!
	e2e_track $recv
	e2e_wait 10 grep -q "listening on port" "$T/recv-$same.log" || e2e_fail "chirp-recv did not start: $(cat "$T/recv-$same.log")"
	port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$T/recv-$same.log")
	opt=()
	[ $same = 1 ] && opt=(--same-cpi)
	[ $same = 2 ] && opt=(--same-cpi --threads 2)
	"$BIN/chirp-send" -c "$CONF" -d 127.0.0.1:"$port" -n 3 --rate 50 --target 40,-6 --snr-db 10 \
		"${opt[@]}" -q >"$T/send-$same.json" 2>&1 || e2e_fail "chirp-send failed: $(cat "$T/send-$same.json")"
	wait $recv || e2e_fail "chirp-recv exited $?: $(cat "$T/recv-$same.log")"
	wait $tap || e2e_fail "chirp-tap exited $?: $(cat "$T/tap-$same.log")"
done
"$PY" - "$T/cpis-0.raw" "$T/cpis-1.raw" "$T/cpis-2.raw" <<'EOF' || e2e_fail "--same-cpi does not send the first CPI's samples every time, or --threads 2 not the same"
import sys
assert open(sys.argv[2], "rb").read() == open(sys.argv[3], "rb").read(), "--threads 2 differs"
for path, alike in ((sys.argv[1], False), (sys.argv[2], True)):
    b = open(path, "rb").read()
    n = len(b) // 3   # one CPI of 2 x 4 x 128 samples, in the ring's format
    assert len(b) == 3 * n and n % 1024 == 0, (path, len(b))
    cpis = [b[k * n:(k + 1) * n] for k in range(3)]
    assert any(cpis[0]), path
    assert (cpis[0] == cpis[1] == cpis[2]) == alike, (path, alike)
EOF
e2e_pass
