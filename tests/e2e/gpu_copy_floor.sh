#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# gpu_copy_floor.sh — bench/copy_floor, the platform floor bench-latency
# holds chirpd's GPU tail against, moves the bytes it claims to: its
# self-check copies a pattern H2D, D2D, D2H through the chunked path and
# compares, once with one host buffer and once with --slots 3 (a different
# pattern per slot, every slot compared: the buffers taken in turn are the
# ones copied). Bad --slots values are refused (exit 2) on any host; the
# copies need a GPU and are skipped (77) without one.
. "$(dirname "$0")/lib.sh"
e2e_init gpu_copy_floor
CF=$BUILD/bench/copy_floor
[ -x "$CF" ] || e2e_skip "$CF is not built (no nvcc)"
for bad in 0 1025; do
	"$CF" --self-check --slots $bad >"$T/bad.log" 2>&1
	rc=$?
	[ $rc -eq 2 ] && grep -q "usage:" "$T/bad.log" || e2e_fail "--slots $bad: exit $rc, $(cat "$T/bad.log")"
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
e2e_pass
