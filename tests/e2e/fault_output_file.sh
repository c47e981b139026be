#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fault_output_file.sh — the [output] file recording fails (disk full:
# /dev/full), then is fixed by a reload.
#
# Proves:
#   - a failing recording never stops or slows the data path: every CPI is
#     still delivered to the output ring and verifies;
#   - every failed write is counted (output_file_errors = CPIs written while
#     the file was /dev/full) and the log says so at once and sums up the
#     rest when the file is closed, not once per CPI;
#   - after a reload to a writable file, the file receives exactly the later
#     CPIs, byte for byte what the ring delivered.
# Environment: CHIRP_TEST_BACKEND (cpu|cuda|auto).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_fault.sh"
fault_init output_file

[ -w /dev/full ] || e2e_skip "no /dev/full"
N=20
fault_config input.slots=64 output.slots=64 cpi.pulses=4 output.file=/dev/full
e2e_start_chirpd
fault_skip_if_no_cuda
fault_tap "$T/tap1.log" --count $N --timeout 30
fault_feed "$T/feed1.log" --rate 100 --count $N
wait "$TAP_PID"; rc=$?
[ $rc -eq 0 ] || e2e_fail "with a failing recording: chirp-tap exit $rc: $(tail -3 "$T/tap1.log")"
fault_expect_eq "verified with a failing recording" "$(fault_tap_field "$T/tap1.log" verified)" $N
fault_expect_eq "output_file_errors" "$(fault_stat output_file_errors)" $N
fault_expect_eq "cpis_out" "$(fault_stat cpis_out)" $N
n=$(grep -c '\[output\] file' "$CHIRPD_LOG")
[ "$n" -ge 1 ] || e2e_fail "the failing recording is not in chirpd's log"
[ "$n" -le 2 ] || e2e_fail "the failing recording is logged $n times (once is enough)"
e2e_log "log: $(grep '\[output\] file' "$CHIRPD_LOG" | head -1)"

# Fix it with a reload: the next CPIs are recorded, byte for byte.
fault_config input.slots=64 output.slots=64 cpi.pulses=4 output.file="$T/rec.cf32"
e2e_ctl reload >/dev/null || e2e_fail "reload to a writable file failed"
"$CHIRP_TAP" --ring "$OUT_RING" -c "$CONF" --count $N --timeout 30 --out "$T/tap.cf32" -q >"$T/tap2.log" 2>&1 &
TAP_PID=$!
e2e_track "$TAP_PID"
fault_feed "$T/feed2.log" --rate 100 --count $N
wait "$TAP_PID" || e2e_fail "after the reload: chirp-tap: $(tail -3 "$T/tap2.log")"
fault_wait_stat cpis_out -ge $((2 * N)) 10 || e2e_fail "results missing"
fault_expect_eq "output_file_errors after the fix" "$(fault_stat output_file_errors)" $N
# The file is written by its own thread: wait until it has every result.
fault_wait_stat output_file_bytes -ge $((N * 2 * 4 * 1000 * 8)) 10 ||
	e2e_fail "output_file_bytes $(fault_stat output_file_bytes), drops $(fault_stat output_file_drops)"
cmp "$T/rec.cf32" "$T/tap.cf32" || e2e_fail "the recording differs from what the ring delivered"
e2e_log "recording: $(stat -c %s "$T/rec.cf32") bytes = the $N CPIs the ring delivered"
e2e_stop_chirpd || e2e_fail "chirpd exited $? on SIGTERM"
e2e_pass
