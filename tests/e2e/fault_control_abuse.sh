#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fault_control_abuse.sh — scripts that hammer the control socket, while
# CPIs stream through chirpd.
#
#   1. 1000 malformed requests (garbage words, wrong arguments, binary,
#      oversized lines; fault_tool.py malformed): each gets an error reply,
#      binary/oversized ones are then closed, a good request on the same
#      connection still works;
#   2. 200 simultaneous connections, each asking ping: 200 pongs;
#   3. 200 clients that send half a request and go silent: while they hang
#      on, chirpctl still gets answers within 2 s and processing goes on;
#      the server closes every one of them (idle timeout) within 15 s.
# Afterwards: chirpd alive, no CPI lost (cpis_in = producer sent, no
# overrun), every result verified.
# Environment: CHIRP_TEST_BACKEND (cpu|cuda|auto).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_fault.sh"
fault_init control_abuse

fault_config input.slots=64 output.slots=64 cpi.pulses=4
e2e_start_chirpd
fault_skip_if_no_cuda
fault_tap "$T/tap.log"
fault_feed "$T/feed.log" --rate 100 --wait 5
fault_wait_stat cpis_out -ge 10 20 || e2e_fail "no output"

# 1. malformed requests
timeout 120 "$PY" "$FAULT_TOOL" malformed "$SOCK" 1000 || e2e_fail "malformed requests"
fault_alive || e2e_fail "chirpd not answering after 1000 malformed requests"

# 2. simultaneous connections
timeout 60 "$PY" "$FAULT_TOOL" flood "$SOCK" 200 || e2e_fail "200 simultaneous connections"
fault_alive || e2e_fail "chirpd not answering after 200 simultaneous connections"

# 3. half-sent requests, held open
"$PY" "$FAULT_TOOL" half "$SOCK" 200 15 >"$T/half.log" 2>&1 &
half=$!
e2e_track $half
e2e_wait 20 grep -q ready "$T/half.log" || e2e_fail "half-request clients did not connect: $(cat "$T/half.log")"
o0=$(fault_stat cpis_out)
for i in 1 2 3; do
	t0=$(date +%s%N)
	timeout 2 "$CHIRPCTL" -s "$SOCK" --json stats >/dev/null ||
		e2e_fail "chirpctl stats got no answer within 2 s with 200 silent clients connected"
	e2e_log "stats answered in $(( ($(date +%s%N) - t0) / 1000000 )) ms with 200 silent clients"
	sleep 0.5
done
o1=$(fault_stat cpis_out)
[ $((o1 - o0)) -gt 50 ] || e2e_fail "processing stalled while silent clients were connected ($o0 -> $o1)"
wait $half || e2e_fail "silent clients: $(cat "$T/half.log")"
cat "$T/half.log"

fault_stop "$FEED_PID" || true
sent=$(fault_feed_field "$T/feed.log" sent)
fault_wait_stat cpis_out -ge "$sent" 20 || e2e_fail "results missing"
e2e_json stats >"$T/stats.json"
fault_expect_eq "producer dropped" "$(fault_feed_field "$T/feed.log" dropped)" 0
fault_expect_eq "cpis_in = sent" "$(fault_stat cpis_in)" "$sent"
fault_expect_eq "input_overruns" "$(fault_stat input_overruns)" 0
fault_stop "$TAP_PID"
fault_expect_eq "tap mismatches" "$(fault_tap_field "$T/tap.log" mismatches)" 0
fault_expect_eq "tap received = sent" "$(fault_tap_field "$T/tap.log" received)" "$sent"
e2e_stop_chirpd || e2e_fail "chirpd exited $? on SIGTERM"
e2e_pass
