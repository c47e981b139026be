#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fault_sigterm_drain.sh — SIGTERM under load, 3 times, with the producer
# and the consumer running throughout.
#
# Proves, for each stop:
#   - chirpd exits 0 within 2 s of SIGTERM (scaled by 3 under sanitizers);
#   - it drains what it had taken: its final "stopped: N CPIs in, M out, D
#     output drops" has N = M + D, the input ring's header shows every
#     block taken so far handed back (none held), the output ring every
#     result committed;
#   - nothing committed is lost across stop/start: the next chirpd resumes
#     with the CPIs still queued, and at the end every CPI the producer sent
#     was delivered exactly once and verifies.
# Environment: CHIRP_TEST_BACKEND (cpu|cuda|auto).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_fault.sh"
fault_init sigterm_drain

stops=3
rate=$((250 / E2E_SLOW))
limit_ms=$((2000 * E2E_SLOW))
# The producer keeps committing while chirpd is down and the checks below
# run; on a loaded box that can fill the input ring (its drops are
# accounted). The restarted chirpd then turns that whole backlog into
# results at once, faster than the verifying tap reads them: an output ring
# twice the input ring holds a full backlog with as much consumer lag to
# spare, so "output drops 0" tests chirpd, not how long the checks took.
fault_config input.slots=1024 output.slots=2048 cpi.pulses=4
e2e_start_chirpd
fault_skip_if_no_cuda
fault_tap "$T/tap.log" --sigmf "$T/out"
fault_feed "$T/feed.log" --rate "$rate" --wait 5

total_in=0 total_out=0
for ((i = 1; i <= stops; i++)); do
	fault_wait_stat cpis_in -ge 100 20 || e2e_fail "stop $i: no input"
	t0=$(date +%s%N)
	kill -TERM "$CHIRPD_PID"
	rc=0
	while kill -0 "$CHIRPD_PID" 2>/dev/null; do
		[ $(( ($(date +%s%N) - t0) / 1000000 )) -lt $((limit_ms + 3000)) ] || break
		sleep 0.01
	done
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	e2e_stop_chirpd; rc=$?
	e2e_log "stop $i: exit $rc after $ms ms"
	[ $rc -eq 0 ] || e2e_fail "stop $i: chirpd exited $rc on SIGTERM"
	[ $ms -le $limit_ms ] || e2e_fail "stop $i: took $ms ms (limit $limit_ms)"
	line=$(grep 'stopped:' "$CHIRPD_LOG" | tail -1)
	[ -n "$line" ] || e2e_fail "stop $i: no 'stopped:' summary in chirpd's log"
	read -r n m d < <(sed -n 's/.*stopped: \([0-9]*\) CPIs in, \([0-9]*\) out, \([0-9]*\) output drops.*/\1 \2 \3/p' <<<"$line")
	e2e_log "stop $i: $line"
	fault_expect_eq "stop $i: CPIs in = out + output drops" "$n" $((m + d))
	fault_expect_eq "stop $i: output drops" "$d" 0
	total_in=$((total_in + n))
	total_out=$((total_out + m))
	# chirpd is the only consumer of the input ring and the only producer
	# of the output ring: their headers must agree with its summaries.
	fault_expect_eq "stop $i: input blocks handed back = CPIs in, all runs" \
		"$(fault_ring_field "$IN_RING" consumed)" "$total_in"
	fault_expect_eq "stop $i: input blocks still held" "$(fault_ring_field "$IN_RING" held)" 0
	fault_expect_eq "stop $i: results committed = CPIs out, all runs" \
		"$(fault_ring_field "$OUT_RING" committed)" "$total_out"
	sleep 0.2
	e2e_start_chirpd
done

fault_stop "$FEED_PID" || true
sent=$(fault_feed_field "$T/feed.log" sent)
dropped=$(fault_feed_field "$T/feed.log" dropped)
e2e_log "producer: sent $sent, dropped $dropped (ring full: not committed, counted as overruns)"
fault_wait_stat cpis_in -ge $((sent - total_in)) 20 || e2e_fail "the last chirpd did not resume the queued CPIs"
fault_wait_stat cpis_out -ge $((sent - total_in)) 20 || e2e_fail "results missing"
e2e_stop_chirpd || e2e_fail "final stop: exit $?"
# The tap verifies every result (slower than chirpd computes them), so a
# backlog can take a while on a loaded box: fail when it stops draining for
# 10 s (x E2E_SLOW), not after a fixed total time.
q_last=-1 since=$SECONDS
while q=$(fault_ring_field "$OUT_RING" queued) && [ "$q" != 0 ]; do
	[ "$q" = "$q_last" ] || { q_last=$q; since=$SECONDS; }
	[ $((SECONDS - since)) -lt $((10 * E2E_SLOW)) ] ||
		e2e_fail "consumer did not drain the output ring: $q results queued, none taken for $((10 * E2E_SLOW)) s"
	sleep 0.2
done
[ "$q" = 0 ] || e2e_fail "cannot read the output ring's header"
fault_stop "$TAP_PID"
tail -3 "$T/tap.log"
fault_expect_eq "tap mismatches" "$(fault_tap_field "$T/tap.log" mismatches)" 0
fault_expect_eq "results missing at the consumer" "$(fault_tap_field "$T/tap.log" missing)" 0
"$PY" - "$T/out.sigmf-meta" "$sent" "$dropped" "$(e2e_conf_get cpi.pulses)" "$(e2e_conf_get cpi.samples)" <<'PYEOF' ||
import json, sys
meta, sent, dropped, P, R = sys.argv[1], *map(int, sys.argv[2:])
ks = [int(c["chirp:first_sample"]) // (P * R) for c in json.load(open(meta))["captures"]]
print("delivered %d CPIs, %d distinct; producer sent %d (dropped %d)" % (len(ks), len(set(ks)), sent, dropped))
dups = len(ks) - len(set(ks))
bad = [k for k in ks if k >= sent + dropped]
if dups or bad or len(set(ks)) != sent:
    sys.exit("%d of %d sent CPIs delivered, %d duplicated, %d never made" % (len(set(ks)), sent, dups, len(bad)))
PYEOF
	e2e_fail "CPIs lost or duplicated across SIGTERM/restart"
e2e_pass
