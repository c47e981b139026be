#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# tools_gaps.sh — a slow chirp-tap on a small ring: the feed drops CPIs
# when the ring is full, and the tap reports every gap on stderr with
# counts that add up; a stalled tap (--stall-after) stops consumption.
. "$(dirname "$0")/tools_lib.inc"
tools_init tools_gaps

cd "$T" || exit 1
RING=/$E2E_UNIQ-a
head -c $((1 * 4 * 100 * 4 * 5)) /dev/urandom >in.raw

# 1. Slow consumer (20 ms per CPI, 4 slots), fast producer: 200 CPIs.
"$CHIRP_TAP" -r "$RING" --create --geometry 1,4,100 --format sc16 --slots 4 --drain --delay-ms 20 >tap.log 2>&1 &
tp=$!; e2e_track $tp
wait_ring "$RING"
"$CHIRP_FEED" -r "$RING" --file in.raw --loop --count 200 --rate 500 >feed.log 2>&1 || { cat feed.log; e2e_fail "feed failed"; }
sleep "$(awk -v s="$E2E_SLOW" "BEGIN { print 0.5 * s }")"   # let the tap drain the ring (4 x 20 ms)
kill -INT $tp
wait_pid $tp 10 || { cat tap.log; e2e_fail "tap did not exit 0 on SIGINT"; }
cat feed.log tap.log
read -r sent dropped < <(sed -n 's/^chirp-feed: sent \([0-9]*\), dropped \([0-9]*\) .*/\1 \2/p' feed.log)
read -r recv gaps missing < <(sed -n 's/^chirp-tap: received \([0-9]*\), gaps \([0-9]*\) (\([0-9]*\) CPIs missing).*/\1 \2 \3/p' tap.log)
[ -n "$sent" ] && [ -n "$recv" ] || e2e_fail "no summaries"
[ $((sent + dropped)) -eq 200 ] || e2e_fail "feed: sent $sent + dropped $dropped != 200"
[ "$dropped" -gt 0 ] || e2e_fail "the feed never found the ring full"
[ "$recv" -eq "$sent" ] || e2e_fail "tap received $recv of $sent committed"
[ "$gaps" -gt 0 ] || e2e_fail "no gap reported"
# Drops after the last committed CPI are invisible to the consumer.
[ "$missing" -le "$dropped" ] && [ $((recv + missing)) -le 200 ] || e2e_fail "missing $missing vs dropped $dropped"
n=$(grep -c '^gap: [0-9]* CPIs\? missing before seq [0-9]*$' tap.log)
[ "$n" -eq "$gaps" ] || e2e_fail "$n gap lines for $gaps gaps"
sum=$(sed -n 's/^gap: \([0-9]*\) CPIs\? missing.*/\1/p' tap.log | awk "{ s += \$1 } END { print s + 0 }")
[ "$sum" -eq "$missing" ] || e2e_fail "gap lines add up to $sum, summary says $missing"
e2e_log "gaps: sent $sent dropped $dropped, received $recv, $gaps gaps ($missing missing)"

# 2. --fail-on-gap turns a gap into exit status 5.
"$CHIRP_TAP" -r "$RING" --create --geometry 1,4,100 --format sc16 --slots 2 -n 3 --drain --delay-ms 50 --fail-on-gap >tap.log 2>&1 &
tp=$!; e2e_track $tp
wait_ring "$RING"
"$CHIRP_FEED" -r "$RING" --file in.raw --loop --count 40 --rate 200 --wait 0 >feed.log 2>&1
wait_pid $tp 20; rc=$?
[ $rc -eq 5 ] || { cat tap.log; e2e_fail "--fail-on-gap exit $rc, want 5"; }

# 3. A tap that stalls after 5 CPIs: the 4-slot ring fills, the rest drops.
"$CHIRP_TAP" -r "$RING" --create --geometry 1,4,100 --format sc16 --slots 4 --drain --stall-after 5 >tap.log 2>&1 &
tp=$!; e2e_track $tp
wait_ring "$RING"
"$CHIRP_FEED" -r "$RING" --file in.raw --loop --count 50 --rate 50 >feed.log 2>&1 || e2e_fail "feed failed"
read -r sent dropped < <(sed -n 's/^chirp-feed: sent \([0-9]*\), dropped \([0-9]*\) .*/\1 \2/p' feed.log)
[ $((sent + dropped)) -eq 50 ] && [ "$sent" -le 9 ] || e2e_fail "stalled tap: feed sent $sent dropped $dropped"
kill -TERM $tp
wait_pid $tp 10 || e2e_fail "stalled tap did not exit 0 on SIGTERM"
grep -q "received 5," tap.log || e2e_fail "stalled tap: $(cat tap.log)"
e2e_log "stall: sent $sent dropped $dropped"

e2e_pass
