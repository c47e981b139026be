#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# gpu_copy_floor.sh — bench/copy_floor, the platform floor bench-latency
# holds chirpd's GPU tail against, moves the bytes it claims to: its
# self-check copies a pattern H2D, D2D, D2H through the chunked path and
# compares, once with one host buffer and once with --slots 3 (a different
# pattern per slot, every slot compared: the buffers taken in turn are the
# ones copied); and its paced lossless loop accounts for every CPI due in
# its window (due = delivered + lost; none lost at a rate far below the
# copy limit) with ordered percentiles. Bad arguments are refused (exit 2)
# on any host; the copies need a GPU and are skipped (77) without one.
. "$(dirname "$0")/lib.sh"
e2e_init gpu_copy_floor
CF=$BUILD/bench/copy_floor
[ -x "$CF" ] || e2e_skip "$CF is not built (no nvcc)"
for bad in "--self-check --slots 0" "--self-check --slots 1025" "--self-check --slots 2.5" \
	"--in-bytes 4096 --out-bytes 4096" "--in-bytes 4096 --out-bytes 4096 --rate 10 --out-slots 0" \
	"--in-bytes 4096 --out-bytes 4096 --rate 10 --row-bytes 64 --pitch 128" \
	"--in-bytes 4096 --out-bytes 4096 --rate -1" "--in-bytes 4096 --out-bytes 4096 --rate 10 --bogus 1"; do
	# shellcheck disable=SC2086
	"$CF" $bad >"$T/bad.log" 2>&1
	rc=$?
	[ $rc -eq 2 ] && grep -q "usage:" "$T/bad.log" || e2e_fail "$bad: exit $rc, $(cat "$T/bad.log")"
done
for slots in 1 3; do
	timeout -k 5 60 "$CF" --self-check --slots $slots >"$T/self.log" 2>&1
	rc=$?
	[ $rc -eq 77 ] && e2e_skip "no usable CUDA device"
	[ $rc -eq 0 ] || e2e_fail "self-check with $slots slot(s): exit $rc, $(cat "$T/self.log")"
	grep -q "^copy_floor: self-check ok (.*, $slots slots\?)$" "$T/self.log" ||
		e2e_fail "self-check with $slots slot(s): $(cat "$T/self.log")"
	e2e_log "$(cat "$T/self.log")"
done
timeout -k 5 60 "$CF" --in-bytes 1048576 --out-bytes 1048576 --rate 200 --seconds 1 --warmup 0.3 \
	--slots 4 --raw "$T/lat.txt" >"$T/paced.log" 2>&1 || e2e_fail "paced run: $(cat "$T/paced.log")"
e2e_log "$(cat "$T/paced.log")"
awk '/^copy / { for (i = 2; i <= NF; i++) { split($i, a, "="); v[a[1]] = a[2] }; ok = 1 }
     END { exit !(ok && v["due"] >= 190 && v["due"] == v["n"] + v["lost"] && v["lost"] == 0 &&
                  v["slots"] == 4 && v["max_inflight"] >= 1 && v["max_inflight"] <= 4 &&
                  v["p50_us"] > 0 && v["p50_us"] <= v["p99_us"] && v["p99_us"] <= v["p999_us"] &&
                  v["p999_us"] <= v["max_us"]) }' "$T/paced.log" ||
	e2e_fail "paced run: the copy line does not account for every CPI: $(cat "$T/paced.log")"
[ "$(grep -c . "$T/lat.txt")" = "$(sed -n 's/.* n=\([0-9]*\) .*/\1/p' "$T/paced.log")" ] ||
	e2e_fail "--raw does not hold one latency per delivered CPI"
e2e_pass
