#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fault_consumer_stall.sh — the output consumer is slow, is SIGKILLed while
# holding a block, stalls (attached, reading nothing), and goes away; then a
# new consumer attaches.
#
# Proves:
#   - processing continues whatever the consumer does: the input is never
#     back-pressured (input_overruns = sequence_gaps = 0, cpis_in keeps up
#     with the producer), chirpd keeps answering;
#   - every result that could not be delivered is counted: output_drops
#     equals the output ring's overruns (from its shared header), and
#     cpis_in = cpis_out + output_drops;
#   - a consumer that attaches later gets fresh, correct results (verified)
#     and sees the gap.
# Environment: CHIRP_TEST_BACKEND (cpu|cuda|auto).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_fault.sh"
fault_init consumer_stall

rate=50
fault_config input.slots=128 output.slots=8 cpi.pulses=4
e2e_start_chirpd
fault_skip_if_no_cuda
fault_feed "$T/feed.log" --rate "$rate" --wait 5

# 1. A slow consumer (holds each CPI 40 ms: 25 CPI/s < 50 CPI/s).
fault_tap "$T/tap1.log" --delay-ms 40
fault_wait_stat output_drops -ge 10 20 || e2e_fail "slow consumer: no output drops counted"
# 2. It dies while holding a block.
kill -KILL "$TAP_PID"; wait "$TAP_PID" 2>/dev/null
e2e_log "slow consumer killed; output_drops $(fault_stat output_drops)"
fault_alive || e2e_fail "chirpd died with its consumer"

# 3. A consumer that stalls after 10 CPIs, attached but reading nothing.
fault_tap "$T/tap2.log" --stall-after 10
sleep 1
d0=$(fault_stat output_drops)
in0=$(fault_stat cpis_in)
sleep 2
d1=$(fault_stat output_drops)
in1=$(fault_stat cpis_in)
e2e_log "stalled consumer: in 2 s cpis_in +$((in1 - in0)), output_drops +$((d1 - d0))"
[ $((in1 - in0)) -ge $((rate / 2)) ] || e2e_fail "processing slowed down behind a stalled consumer"
[ $((d1 - d0)) -ge $((rate / 2)) ] || e2e_fail "results for a stalled consumer were not counted as output drops"
fault_stop "$TAP_PID"

# 4. No consumer at all for a while.
sleep 1
fault_alive || e2e_fail "chirpd died without a consumer"

# 5. A new consumer gets correct results again.
fault_tap "$T/tap3.log" --count 40 --timeout 30
wait "$TAP_PID"; rc=$?
tail -3 "$T/tap3.log"
[ $rc -eq 0 ] || e2e_fail "new consumer: chirp-tap exit $rc"
fault_expect_eq "new consumer mismatches" "$(fault_tap_field "$T/tap3.log" mismatches)" 0
fault_expect_eq "new consumer verified" "$(fault_tap_field "$T/tap3.log" verified)" 40
[ "$(fault_tap_field "$T/tap3.log" gaps)" -ge 1 ] ||
	[ "$(fault_tap_field "$T/tap3.log" discontinuities)" -ge 1 ] ||
	e2e_fail "the new consumer was not told about the lost results"

# Accounting, once the producer has stopped and chirpd has taken everything.
fault_stop "$FEED_PID" || true
sent=$(fault_feed_field "$T/feed.log" sent)
fault_wait_stat cpis_in -ge "$sent" 20 || e2e_fail "chirpd did not take all $sent CPIs"
sleep 0.3
fault_alive || e2e_fail "chirpd died"
e2e_json stats >"$T/stats.json"
out_committed=$(fault_ring_field "$OUT_RING" committed)
out_overruns=$(fault_ring_field "$OUT_RING" overruns)
fault_expect_eq "producer dropped" "$(fault_feed_field "$T/feed.log" dropped)" 0
fault_expect_eq "input_overruns" "$(fault_stat input_overruns)" 0
fault_expect_eq "sequence_gaps" "$(fault_stat sequence_gaps)" 0
fault_expect_eq "cpis_in = producer sent" "$(fault_stat cpis_in)" "$sent"
fault_expect_eq "cpis_out = output ring committed" "$(fault_stat cpis_out)" "$out_committed"
fault_expect_eq "output_drops = output ring overruns" "$(fault_stat output_drops)" "$out_overruns"
fault_expect_eq "cpis_in = cpis_out + output_drops" "$(fault_stat cpis_in)" \
	"$(( $(fault_stat cpis_out) + $(fault_stat output_drops) ))"

e2e_stop_chirpd || e2e_fail "chirpd exited $? on SIGTERM"
e2e_pass
