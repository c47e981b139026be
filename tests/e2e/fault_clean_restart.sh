#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fault_clean_restart.sh — chirpd is stopped cleanly (SIGTERM) and started
# again twice, then SIGKILLed and started again, while one producer and
# one verifying consumer run through all of it.
#
# Proves:
#   - after a clean stop the restarted chirpd continues the output stream:
#     the consumer sees no DISCONTINUITY and no sequence gap for it (the
#     output ring's opt-in continuity, doc/ring.md), and chirpd says so;
#   - after a kill it does not: the first result after the restart carries
#     DISCONTINUITY (exactly one at the consumer), and chirpd says why;
#   - nothing is lost or corrupted either way: the producer dropped nothing,
#     every result verifies against the CPU reference.
# Environment: CHIRP_TEST_BACKEND (cpu|cuda|auto).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_fault.sh"
fault_init clean_restart

# 64 input slots at 10 CPI/s: 6 s of downtime before the producer would
# drop, so every discontinuity the consumer sees is chirpd's.
fault_config input.slots=64 output.slots=64 cpi.pulses=4
e2e_start_chirpd
fault_skip_if_no_cuda
fault_tap "$T/tap.log"
fault_feed "$T/feed.log" --rate 10 --wait 5
fault_wait_stat cpis_out -ge 5 20 || e2e_fail "no output before the first stop"

for i in 1 2; do
	e2e_stop_chirpd || e2e_fail "clean stop $i: chirpd exited $? on SIGTERM"
	grep -q "no clean mark\|gap not yet carried" "$CHIRPD_LOG" &&
		e2e_fail "clean stop $i: chirpd left no clean mark: $(grep 'clean mark\|not yet carried' "$CHIRPD_LOG")"
	sleep 0.5
	e2e_start_chirpd
	fault_wait_stat cpis_out -ge 5 20 || e2e_fail "clean restart $i: no output"
	n=$(grep -c "the previous chirpd stopped cleanly; continuing its stream" "$CHIRPD_LOG")
	[ "$n" -eq "$i" ] || e2e_fail "clean restart $i: chirpd did not say it continues the stream ($n times)"
	e2e_log "clean restart $i: chirpd continues the stream"
done
[ "$(fault_tap_field "$T/tap.log" discontinuities)" -eq 0 ] 2>/dev/null ||
	e2e_fail "the consumer saw a discontinuity at a clean restart"
grep -q '^discontinuity:' "$T/tap.log" && e2e_fail "the consumer reported: $(grep '^discontinuity:' "$T/tap.log")"

kill -KILL "$CHIRPD_PID"
wait "$CHIRPD_PID" 2>/dev/null
CHIRPD_PID=
e2e_start_chirpd
fault_wait_stat cpis_out -ge 5 20 || e2e_fail "restart after the kill: no output"
grep -q "the previous producer did not stop cleanly; the first record carries DISCONTINUITY" "$CHIRPD_LOG" ||
	e2e_fail "chirpd did not say the kill breaks the stream"

fault_stop "$FEED_PID" || true
e2e_wait 20 test "$(fault_ring_field "$IN_RING" queued)" = 0 || e2e_fail "input ring not drained"
sleep 0.5
fault_stop "$TAP_PID"
tail -4 "$T/tap.log"
fault_expect_eq "producer dropped" "$(fault_feed_field "$T/feed.log" dropped)" 0
fault_expect_eq "tap mismatches" "$(fault_tap_field "$T/tap.log" mismatches)" 0
[ "$(fault_tap_field "$T/tap.log" verified)" -ge 20 ] || e2e_fail "too few results verified"
# The kill: one flagged result (chirp-tap counts a flag with a seq jump as
# a gap rather than an upstream discontinuity, so take the two together).
d=$(fault_tap_field "$T/tap.log" discontinuities) g=$(fault_tap_field "$T/tap.log" gaps)
[ $((d + g)) -eq 1 ] || e2e_fail "after one kill: $d upstream discontinuities, $g gaps; want 1 in all"
fault_expect_eq "tap missing" "$(fault_tap_field "$T/tap.log" missing)" 0
e2e_stop_chirpd || e2e_fail "chirpd exited $? on SIGTERM"
e2e_pass
