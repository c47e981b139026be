#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fault_daemon_restart.sh — chirpd is SIGKILLed and restarted (3 times)
# while the producer keeps writing and a consumer keeps reading.
#
# Proves:
#   - the restarted chirpd re-attaches to both rings and resumes: the same
#     chirp-feed and chirp-tap processes run through every restart;
#   - what was dropped meanwhile is accounted for: the producer's own count
#     of blocks dropped on a full ring (chirp-feed summary) equals the ring's
#     overruns and the restarted chirpd's input_overruns;
#   - no committed CPI is lost: every CPI the producer committed (each a
#     distinct first_sample) arrives at the consumer, verified against the
#     CPU reference, or is counted missing by the consumer (an output drop
#     when the verifying consumer is slower than chirpd, e.g. under ASan);
#     a CPI in flight at the kill may arrive twice (at most the pipeline
#     depth per restart), never zero times.
# Environment: CHIRP_TEST_BACKEND (cpu|cuda|auto).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_fault.sh"
fault_init daemon_restart

restarts=3
rate=80
fault_config input.slots=16 output.slots=256 cpi.pulses=4
e2e_start_chirpd
fault_skip_if_no_cuda
# The consumer records every CPI's first_sample (SigMF captures) and verifies it.
fault_tap "$T/tap.log" --sigmf "$T/out"
fault_feed "$T/feed.log" --rate "$rate" --wait 5
fault_wait_stat cpis_out -ge 20 20 || e2e_fail "no output before the first kill"

for ((i = 1; i <= restarts; i++)); do
	before=$(fault_stat cpis_out)
	kill -KILL "$CHIRPD_PID"
	wait "$CHIRPD_PID" 2>/dev/null
	CHIRPD_PID=
	e2e_log "chirpd killed after $before results (this run); producer keeps writing"
	# 16 slots at 80 CPI/s fill in 0.2 s: the producer drops for ~1 s.
	sleep 1.2
	kill -0 "$FEED_PID" 2>/dev/null || e2e_fail "chirp-feed died with chirpd: $(tail -3 "$T/feed.log")"
	kill -0 "$TAP_PID" 2>/dev/null || e2e_fail "chirp-tap died with chirpd: $(tail -3 "$T/tap.log")"
	e2e_start_chirpd
	fault_wait_stat cpis_out -ge 20 20 || e2e_fail "restart $i: no output after the restart"
	# input_overruns covers blocks dropped while no chirpd was running.
	[ "$(fault_stat input_overruns)" -gt 0 ] || e2e_fail "restart $i: input_overruns is 0 after chirpd was down for 1.2 s"
done

fault_stop "$FEED_PID" || true
sent=$(fault_feed_field "$T/feed.log" sent)
dropped=$(fault_feed_field "$T/feed.log" dropped)
committed=$(fault_ring_field "$IN_RING" committed)
overruns=$(fault_ring_field "$IN_RING" overruns)
e2e_log "producer: sent $sent, dropped $dropped; ring: committed $committed, overruns $overruns"
[ "$sent" -gt 0 ] || e2e_fail "no chirp-feed summary: $(tail -3 "$T/feed.log")"
fault_expect_eq "ring committed = producer sent" "$committed" "$sent"
fault_expect_eq "ring overruns = producer dropped" "$overruns" "$dropped"
fault_expect_eq "chirpd input_overruns = producer dropped" "$(fault_stat input_overruns)" "$dropped"

# Let the last chirpd drain the ring, then stop the consumer.
e2e_wait 20 test "$(fault_ring_field "$IN_RING" queued)" = 0 || e2e_fail "input ring not drained"
sleep 0.5
e2e_json stats >"$T/stats.json"
out_drops=$(fault_stat output_drops)
fault_stop "$TAP_PID"
tail -4 "$T/tap.log"
[ -f "$T/out.sigmf-meta" ] || e2e_fail "chirp-tap wrote no SigMF metadata"
fault_expect_eq "tap mismatches" "$(fault_tap_field "$T/tap.log" mismatches)" 0
e2e_log "output drops: last run $out_drops, all runs (missing at the consumer) $(fault_tap_field "$T/tap.log" missing)"

# Every committed CPI delivered at least once; duplicates only around kills.
# (A result the consumer was too slow for is an output drop: chirp-tap
# counts it as missing by sequence number, so delivered + missing = committed.)
tap_missing=$(fault_tap_field "$T/tap.log" missing)
"$PY" - "$T/out.sigmf-meta" "$committed" "$((sent + dropped))" "$restarts" "$(e2e_conf_get cpi.pulses)" \
	"$(e2e_conf_get cpi.samples)" "$tap_missing" <<'EOF' || e2e_fail "delivery check failed"
import json, sys
meta, committed, total, restarts, P, R, missing = sys.argv[1], *map(int, sys.argv[2:])
caps = json.load(open(meta))["captures"]
ks = []
for c in caps:
    fs = int(c["chirp:first_sample"])
    if fs % (P * R):
        sys.exit("first_sample %d is not a CPI boundary" % fs)
    ks.append(fs // (P * R))
distinct = set(ks)
dups = len(ks) - len(distinct)
bad = [k for k in distinct if k >= total]
print("delivered %d CPIs, %d distinct, %d duplicates, %d counted missing (output drops); "
      "producer committed %d of k = 0..%d" % (len(ks), len(distinct), dups, missing, committed, total - 1))
if bad:
    sys.exit("CPIs the producer never made: %s" % bad[:5])
if len(distinct) + missing != committed:
    sys.exit("%d committed CPIs neither delivered nor counted missing"
             % (committed - len(distinct) - missing))
if dups > 4 * restarts:
    sys.exit("%d duplicates: more than the in-flight CPIs at %d kills" % (dups, restarts))
EOF

e2e_stop_chirpd || e2e_fail "chirpd exited $? on SIGTERM"
e2e_pass
