#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# tools_pacing.sh — chirp-feed --rate holds an absolute schedule and never
# bursts to catch up. The feed is stopped (SIGSTOP) for 1 s in the middle of
# a paced run, a forced late wake far longer than its period; afterwards
#   - the commit timestamps (the tap's SigMF captures) never crowd: at most
#     MAX_IN_WIN commits inside any window of 5 periods (a catching-up feed
#     commits the ~50 CPIs it "owes" back to back, within milliseconds);
#   - the run lasts count/rate + the stop (a catching-up feed makes up the
#     stop and ends at count/rate);
#   - the feed reports the late tick(s).
# Both raw replay (fill per CPI) and --prefilled (slots written before the
# clock starts) are checked, and --prefilled --block (a lossless saturating
# source) delivers every CPI.
. "$(dirname "$0")/tools_lib.inc"
tools_init tools_pacing

cd "$T" || exit 1
RING=/$E2E_UNIQ-a
RATE=50 COUNT=100 MAX_IN_WIN=10
head -c $((1 * 4 * 100 * 4 * 5)) /dev/urandom >in.raw

# run_stopped NAME FEED_ARGS... — tap --sigmf NAME on a fresh ring, a paced
# feed of COUNT CPIs that is stopped for 1 s after 0.5 s.
run_stopped() {
	local name=$1 tp fd
	shift
	rm -f "$name".sigmf-*
	"$CHIRP_TAP" -r "$RING" --create --geometry 1,4,100 --format sc16 --slots 16 \
		-n $COUNT --sigmf "$name" --timeout 30 >"$name-tap.log" 2>&1 &
	tp=$!; e2e_track $tp
	wait_ring "$RING"
	"$CHIRP_FEED" -r "$RING" --rate $RATE --count $COUNT "$@" >"$name-feed.log" 2>&1 &
	fd=$!; e2e_track $fd
	sleep 0.5
	kill -STOP $fd
	sleep 1
	kill -CONT $fd
	wait_pid $fd 30 || { cat "$name-feed.log"; e2e_fail "$name: feed failed"; }
	wait_pid $tp 30 || { cat "$name-tap.log"; e2e_fail "$name: tap did not get $COUNT CPIs"; }
	cat "$name-feed.log"
}

# check NAME — the three properties above, from the feed's log and the capture.
check() {
	local name=$1 secs late crowd
	secs=$(sed -n 's/^chirp-feed: sent [0-9]*, dropped 0 (ring full), .* over \([0-9.]*\) s$/\1/p' "$name-feed.log")
	[ -n "$secs" ] || e2e_fail "$name: no summary with 0 drops: $(cat "$name-feed.log")"
	late=$(sed -n 's/^chirp-feed: pacing .*: \([0-9]*\) late ticks .*/\1/p' "$name-feed.log")
	[ "${late:-0}" -ge 1 ] || e2e_fail "$name: the 1 s stop was not counted as a late tick"
	# count/rate = 2 s; + 1 s stopped; a feed that catches up ends near 2.0 s.
	awk -v s="$secs" 'BEGIN { exit !(s >= 2.6) }' || e2e_fail "$name: $COUNT CPIs took only $secs s: the feed caught up"
	crowd=$("$PY" - "$name.sigmf-meta" "$RATE" <<'PYEOF'
import json, sys, datetime
caps = json.load(open(sys.argv[1]))["captures"]
def ns(d):   # "2026-11-21T09:44:36.183012345Z"
    head, frac = d.rstrip("Z").split(".")
    t = datetime.datetime.strptime(head, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
    return int(t.timestamp()) * 10**9 + int(frac.ljust(9, "0"))
t = [ns(c["core:datetime"]) for c in caps]
win = 5 * 1e9 / float(sys.argv[2])
j, worst = 0, 0
for i in range(len(t)):
    while t[i] - t[j] > win:
        j += 1
    worst = max(worst, i - j + 1)
print(worst)
PYEOF
) || e2e_fail "$name: cannot read the capture's timestamps"
	[ "$crowd" -le $MAX_IN_WIN ] || e2e_fail "$name: $crowd commits within 5 periods (burst; at most $MAX_IN_WIN)"
	e2e_log "$name: $secs s for $COUNT CPIs at $RATE/s with a 1 s stop, $late late tick(s), at most $crowd commits per 5 periods"
}

run_stopped replay --file in.raw --loop
check replay
run_stopped prefilled --file in.raw --loop --prefilled
check prefilled

# --prefilled --block: lossless and saturating (no rate): every CPI arrives.
"$CHIRP_TAP" -r "$RING" --create --geometry 1,4,100 --format sc16 --slots 4 -n 500 --drain \
	--delay-ms 1 --fail-on-gap --timeout 30 >block-tap.log 2>&1 &
tp=$!; e2e_track $tp
wait_ring "$RING"
"$CHIRP_FEED" -r "$RING" --file in.raw --loop --count 500 --prefilled --block >block-feed.log 2>&1 ||
	{ cat block-feed.log; e2e_fail "--prefilled --block failed"; }
wait_pid $tp 30 || { cat block-tap.log; e2e_fail "--prefilled --block: the tap saw a gap or too few CPIs"; }
grep -q '^chirp-feed: sent 500, dropped 0 ' block-feed.log || e2e_fail "--prefilled --block: $(cat block-feed.log)"

e2e_pass
