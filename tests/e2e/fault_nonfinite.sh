#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fault_nonfinite.sh — NaN and Inf in input samples.
#
# Input: 40 CPIs; even ones are one clean CPI A, k % 4 == 1 is A with a NaN
# and an Inf in two rows, k % 4 == 3 is all NaN (fault_tool.py nanfile).
# Proves:
#   - processing continues: all 40 CPIs in and out, chirpd answering;
#   - the nonfinite_cpis / nonfinite_rows counters rise by exactly the
#     poisoned CPIs / rows, and those results carry the NONFINITE flag;
#   - NaN never leaks: clean rows of a poisoned CPI, and every later clean
#     CPI, are finite and equal to A's result (fault_tool.py nancheck).
# Environment: CHIRP_TEST_BACKEND (cpu|cuda|auto).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_fault.sh"
fault_init nonfinite

C=2 P=4 R=1000 N=40
fault_config cpi.channels=$C cpi.pulses=$P cpi.samples=$R input.slots=64 output.slots=64 output.mode=complex
read -r want_cpis want_rows < <("$PY" "$FAULT_TOOL" nanfile "$T/in.cf32" $C $P $R $N) ||
	e2e_fail "could not write the input file"
e2e_start_chirpd
fault_skip_if_no_cuda
"$CHIRP_TAP" --ring "$OUT_RING" -c "$CONF" --count $N --timeout 30 --out "$T/out.cf32" -q \
	>"$T/tap.log" 2>&1 &
TAP_PID=$!
e2e_track $TAP_PID
e2e_wait_consumer "$OUT_RING" $TAP_PID
"$CHIRP_FEED" --ring "$IN_RING" --file "$T/in.cf32" --rate 100 -q >"$T/feed.log" 2>&1 ||
	e2e_fail "chirp-feed: $(tail -3 "$T/feed.log")"
wait $TAP_PID; rc=$?
tail -3 "$T/tap.log"
[ $rc -eq 0 ] || e2e_fail "chirp-tap exit $rc"
fault_alive || e2e_fail "chirpd died"
e2e_json stats >"$T/stats.json"
fault_expect_eq "cpis_in" "$(fault_stat cpis_in)" $N
fault_expect_eq "cpis_out" "$(fault_stat cpis_out)" $N
fault_expect_eq "nonfinite_cpis" "$(fault_stat nonfinite_cpis)" "$want_cpis"
fault_expect_eq "nonfinite_rows" "$(fault_stat nonfinite_rows)" "$want_rows"
fault_expect_eq "results flagged NONFINITE (chirp-tap)" "$(fault_tap_field "$T/tap.log" nonfinite)" "$want_cpis"
fault_expect_eq "backend_errors" "$(fault_stat backend_errors)" 0
"$PY" "$FAULT_TOOL" nancheck "$T/out.cf32" $C $P $R $N || e2e_fail "results after NaN input are wrong"

# Still processing normally afterwards: a clean synthetic run verifies.
fault_tap "$T/tap2.log" --count 20 --timeout 30
fault_feed "$T/feed2.log" --rate 100 --count 20
wait "$TAP_PID"; rc=$?
[ $rc -eq 0 ] || e2e_fail "clean run after NaN input: chirp-tap exit $rc: $(tail -3 "$T/tap2.log")"
fault_expect_eq "clean run mismatches" "$(fault_tap_field "$T/tap2.log" mismatches)" 0

e2e_stop_chirpd || e2e_fail "chirpd exited $? on SIGTERM"
e2e_pass
