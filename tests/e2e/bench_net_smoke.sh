#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench_net_smoke.sh — scripts/bench-net.sh --quick runs end to end on
# loopback with the CPU backend (small datagrams and CPIs, a few seconds)
# and writes its raw results: net.tsv with its header and one row each for
# (a) the loopback ceiling, (b) the naive loop and (c) chirp-recv into
# chirpd, numbers where numbers belong, and net.meta (scripts/bench-meta.sh)
# beside it; the summary ends with the three criteria lines, and
# scripts/bench-report.py turns the results into table (i). The figures are
# not judged (a shared machine), only their form. Bad options are refused
# with status 2 before anything runs.
. "$(dirname "$0")/lib.sh"
e2e_init bench_net_smoke
e2e_need chirp-recv chirp-send chirp-tap
[ -x "$BUILD/bench/udp_sink" ] || e2e_skip "$BUILD/bench/udp_sink is not built"
src=$(cd "$(dirname "$0")/../.." && pwd)
bench=$src/scripts/bench-net.sh

for bad in "--bytes 1001" "--threads 0" "--backend gpu" "--out x.txt" "--frobnicate"; do
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
assert [r["what"] for r in rows] == ["ceiling", "naive", "chirp-recv"], rows
for r in rows:
    for c in ("gbps", "gbps_per_core", "seconds"):
        assert float(r[c]) >= 0, (c, r)
    assert int(r["datagram_bytes"]) == 540, r
    assert r["loss"] == "-" or 0 <= float(r["loss"]) <= 1, r
assert [int(r["threads"]) for r in rows] == [2, 1, 2], rows
assert float(rows[0]["gbps"]) > 0 and float(rows[1]["gbps"]) > 0, rows
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

# The report reads what the benchmark wrote.
{
	for k in throughput latency cupy compare modes radar detect startup net publish; do
		echo "<!-- perf-table: $k begin -->"; echo "<!-- perf-table: $k end -->"
	done
} >"$T/page.md"
printf '<!-- perf-headline: begin -->\n<!-- perf-headline: end -->\n' >"$T/README.md"
(cd "$T" && python3 "$src/scripts/bench-report.py" --perf perf --page page.md --readme README.md) >"$T/report.log" 2>&1 ||
	e2e_fail "bench-report.py failed on bench-net's results: $(cat "$T/report.log")"
grep -qF '| (c) chirp-recv into chirpd, loss-free, held | 2 | 540 |' "$T/page.md" ||
	e2e_fail "table (i) lacks the chirp-recv row: $(cat "$T/page.md")"
grep -qE '^    (PASS|FAIL) \(c\) / \(a\) = ' "$T/page.md" || e2e_fail "table (i) lacks its criteria"
e2e_pass
