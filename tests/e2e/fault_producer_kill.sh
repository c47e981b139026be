#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fault_producer_kill.sh — the digitizer driver (producer) is SIGKILLed at
# random points, many times, while chirpd runs.
#
# Proves:
#   - no torn or corrupt CPI is ever processed: chirp-tap --verify recomputes
#     every result chirpd delivers from the synthetic input named by its
#     first_sample and compares (a half-written slot would not match);
#   - every missing CPI is counted: some rounds pause chirpd so the ring
#     fills and the producer drops blocks; at the end chirpd's input_overruns
#     and sequence_gaps equal the overruns derived from the ring's own shared
#     header, and cpis_in equals the blocks the ring says were committed;
#   - chirpd keeps running and answering throughout.
# Environment: FAULT_ROUNDS (default 30), FAULT_RANDOM_SEED (replay),
# CHIRP_TEST_BACKEND (cpu|cuda|auto).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_fault.sh"
fault_init producer_kill

rounds=${FAULT_ROUNDS:-30}
rate=200
fault_config input.slots=8 output.slots=64
e2e_start_chirpd
fault_skip_if_no_cuda
fault_tap "$T/tap.log"
kill -0 "$TAP_PID" 2>/dev/null || e2e_fail "chirp-tap exited early: $(tail -3 "$T/tap.log")"

kills=0 paused_rounds=0
for ((i = 1; i <= rounds; i++)); do
	pause=0
	if ((i % 5 == 0)); then
		e2e_ctl pause >/dev/null || e2e_fail "chirpctl pause failed"
		pause=1
		paused_rounds=$((paused_rounds + 1))
	fi
	fault_feed "$T/feed.log" --rate "$rate" --wait 5
	# Random lifetime 20..400 ms: kills land during attach, between
	# commits, and in the middle of writing a slot.
	ms=$(fault_rand 20 400)
	# Paused rounds live long enough to fill the 8 slots and drop (the
	# producer's start takes ~0.1 s, more under ASan).
	((pause)) && ms=$(fault_rand 300 600)
	sleep "$(awk -v m="$ms" 'BEGIN { printf "%.3f", m / 1000 }')"
	kill -KILL "$FEED_PID" 2>/dev/null && kills=$((kills + 1))
	wait "$FEED_PID" 2>/dev/null
	if ((pause)); then
		e2e_ctl resume >/dev/null || e2e_fail "chirpctl resume failed"
	fi
	if ((i % 5 == 0)); then
		fault_alive || e2e_fail "chirpd not answering after round $i"
	fi
done
e2e_log "$kills producers killed ($paused_rounds rounds with chirpd paused)"

# A last, well-behaved producer: its commits follow every earlier drop, so
# chirpd sees every gap by sequence number.
"$CHIRP_FEED" --ring "$IN_RING" -c "$CONF" "${FAULT_TARGET_ARGS[@]}" --snr-db "$FAULT_SNR" \
	--seed "$FAULT_SEED" -q --rate "$rate" --count 20 --wait 5 >>"$T/feed.log" 2>&1 ||
	e2e_fail "final chirp-feed failed: $(tail -3 "$T/feed.log")"

committed=$(fault_ring_field "$IN_RING" committed)
overruns=$(fault_ring_field "$IN_RING" overruns)
e2e_log "input ring header: committed $committed, overruns $overruns"
fault_wait_stat cpis_in -ge "$committed" 20 || e2e_fail "chirpd did not take every committed CPI"
out_expected=$(( $(fault_stat cpis_in) - $(fault_stat output_drops) ))
fault_wait_stat cpis_out -ge "$out_expected" 10 || e2e_fail "results missing"
sleep 0.5
fault_alive || e2e_fail "chirpd died"
e2e_json stats >"$T/stats.json"

fault_expect_eq "cpis_in = committed (ring header)" "$(fault_stat cpis_in)" "$committed"
fault_expect_eq "input_overruns = overruns (ring header)" "$(fault_stat input_overruns)" "$overruns"
fault_expect_eq "sequence_gaps = overruns (ring header)" "$(fault_stat sequence_gaps)" "$overruns"
fault_expect_eq "bad_blocks" "$(fault_stat bad_blocks)" 0
[ "$paused_rounds" -eq 0 ] || [ "$overruns" -gt 0 ] ||
	e2e_fail "no overruns although chirpd was paused $paused_rounds times: the test did not exercise drops"

cpis_out=$(fault_stat cpis_out)
drops=$(fault_stat output_drops)
fault_stop "$TAP_PID"
cat "$T/tap.log" | grep -v '^discontinuity:' | tail -5
fault_expect_eq "tap mismatches" "$(fault_tap_field "$T/tap.log" mismatches)" 0
fault_expect_eq "tap received = chirpd cpis_out" "$(fault_tap_field "$T/tap.log" received)" "$cpis_out"
fault_expect_eq "tap verified = received" "$(fault_tap_field "$T/tap.log" verified)" "$cpis_out"
fault_expect_eq "tap missing = output_drops" "$(fault_tap_field "$T/tap.log" missing)" "$drops"
[ "$cpis_out" -gt 0 ] || e2e_fail "no CPI was processed"

e2e_stop_chirpd || e2e_fail "chirpd exited $? on SIGTERM"
e2e_pass
