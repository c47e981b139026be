#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# tools_reattach.sh — chirp-feed follows its ring when it is re-created
# with another geometry (what chirpd does on a reload that changes [cpi]):
# it re-attaches, re-reads its configuration, and the CPIs it then
# produces are the synthetic CPIs of the new configuration, bit for bit.
# Also: the feed may start before the ring exists (--wait).
. "$(dirname "$0")/tools_lib.inc"
tools_init tools_reattach

cd "$T" || exit 1
TGT=(--target 30,-6 --target 200,-20)
e2e_config input.ring="$IN_RING" input.slots=4 cpi.channels=2 cpi.pulses=4 cpi.samples=400

# The feed starts first and waits for the ring.
"$CHIRP_FEED" -c "$CONF" "${TGT[@]}" --snr-db 15 --seed 3 --rate 200 --wait $((20 * E2E_SLOW)) >feed.log 2>&1 &
fp=$!; e2e_track $fp
sleep 0.5
kill -0 $fp 2>/dev/null || { cat feed.log; e2e_fail "feed did not wait for the ring"; }

# Geometry A: 2x4x400. The tap keeps the ring at exit (as chirpd's ring stays).
"$CHIRP_TAP" -c "$CONF" -r "$IN_RING" --create --keep -n 20 --verify-input "${TGT[@]}" \
	--snr-db 15 --seed 3 --timeout $((30 * E2E_SLOW)) >tapA.log 2>&1 ||
	{ cat tapA.log feed.log; e2e_fail "geometry A: tap failed"; }
grep -q "verified 20, mismatches 0" tapA.log || e2e_fail "geometry A: $(cat tapA.log)"
e2e_log "geometry A verified"

# Geometry B: the configuration changes, the ring is re-created.
e2e_config input.ring="$IN_RING" input.slots=8 cpi.channels=1 cpi.pulses=3 cpi.samples=700
"$CHIRP_TAP" -c "$CONF" -r "$IN_RING" --create -n 20 --verify-input "${TGT[@]}" \
	--snr-db 15 --seed 3 --timeout $((30 * E2E_SLOW)) >tapB.log 2>&1 ||
	{ cat tapB.log feed.log; e2e_fail "geometry B: tap failed"; }
grep -q "verified 20, mismatches 0" tapB.log || e2e_fail "geometry B: $(cat tapB.log)"
kill -0 $fp 2>/dev/null || { cat feed.log; e2e_fail "the feed died at the re-creation"; }
kill -TERM $fp
wait_pid $fp 10 || { cat feed.log; e2e_fail "feed exit status on SIGTERM"; }
cat feed.log
grep -q "re-attaching" feed.log || e2e_fail "no re-attach reported"
grep -q "re-reading" feed.log || e2e_fail "configuration not re-read"
grep -q "^chirp-feed: sent [0-9]*, dropped [0-9]* (ring full).*(interrupted)" feed.log || e2e_fail "summary"
e2e_log "geometry B verified after re-attach"

# A ring that no longer matches the configuration: the feed says so and exits 1.
"$CHIRP_TAP" -r "$IN_RING" --create --geometry 1,3,701 --format cf32 --drain >tapC.log 2>&1 &
tp=$!; e2e_track $tp
wait_ring "$IN_RING"
"$CHIRP_FEED" -c "$CONF" "${TGT[@]}" --rate 100 --wait 5 >feed.log 2>&1
rc=$?
[ $rc -eq 1 ] || e2e_fail "mismatched ring: feed exit $rc"
grep -q "is 1x3x701 cf32 but .*chirpd.conf describes 1x3x700 cf32" feed.log || e2e_fail "message: $(cat feed.log)"
e2e_pass
