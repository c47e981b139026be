#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# daemon_restart_rings.sh — chirpd killed (SIGKILL) and restarted with
# slots = auto and a capacity cache keeps the rings its producer and
# consumer hold:
#   A. the restart takes the capacity from the cache without measuring
#      again, re-attaches both rings (their epochs are unchanged; the log
#      says "reused"), the same chirp-feed and chirp-tap run on without ever
#      re-attaching, the consumer sees the restart flagged
#      (DISCONTINUITY), and the start-up line gives its breakdown;
#   B. a cached capacity 10 % higher (slots = auto would give more slots)
#      still adopts the ring that is there: within 7/8..2x of the rule;
#   C. a configuration whose ring geometry differs (a fixed slot count)
#      re-creates the ring and the log says why ("slots N, want M").
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_fault.sh"
fault_init restart_rings

CACHE=$T/capacity
fault_config input.slots=auto output.slots=auto cpi.pulses=4 \
	processing.capacity_cache="$CACHE" processing.streams=auto
e2e_start_chirpd
grep -q "input ring $IN_RING: created" "$CHIRPD_LOG" || e2e_fail "first start: $(grep ring "$CHIRPD_LOG")"
[ -s "$CACHE" ] || e2e_fail "no capacity cache after the first start"
fault_tap "$T/tap.log"
fault_feed "$T/feed.log" --rate 80 --wait 5
fault_wait_stat cpis_out -ge 20 20 || e2e_fail "no output before the kill"

in_epoch=$(fault_ring_field "$IN_RING" epoch)
out_epoch=$(fault_ring_field "$OUT_RING" epoch)

# restart_after_kill TAG — SIGKILL chirpd, start it again on a fresh log,
# wait for output from the new instance.
restart_after_kill() {
	kill -KILL "$CHIRPD_PID"
	wait "$CHIRPD_PID" 2>/dev/null
	CHIRPD_PID=
	sleep 0.3
	: >"$CHIRPD_LOG"
	e2e_start_chirpd
	fault_wait_stat cpis_out -ge 10 20 || e2e_fail "$1: no output after the restart"
}

restart_after_kill A
grep -q "input ring $IN_RING: reused" "$CHIRPD_LOG" || e2e_fail "A: input ring not reused: $(grep ring "$CHIRPD_LOG")"
grep -q "output ring $OUT_RING: reused" "$CHIRPD_LOG" || e2e_fail "A: output ring not reused: $(grep ring "$CHIRPD_LOG")"
grep -q "from the capacity cache $CACHE (not measured again)" "$CHIRPD_LOG" ||
	e2e_fail "A: capacity not from the cache: $(grep capacity "$CHIRPD_LOG")"
grep -q "capacity measured\|measured with depth" "$CHIRPD_LOG" && e2e_fail "A: the restart measured again"
line=$(grep -o "start-up [0-9.]* ms: config+plan .*" "$CHIRPD_LOG") || e2e_fail "A: no start-up line"
case $line in *"capacity "*" (cache), rings "*" (2 of 2 reused)"*) ;; *) e2e_fail "A: start-up line: $line";; esac
e2e_log "A: $line"
[ "$(fault_ring_field "$IN_RING" epoch)" = "$in_epoch" ] || e2e_fail "A: the input ring's epoch changed"
[ "$(fault_ring_field "$OUT_RING" epoch)" = "$out_epoch" ] || e2e_fail "A: the output ring's epoch changed"
e2e_json status | "$PY" -c '
import json, sys
s = json.load(sys.stdin)
assert s["rings"]["capacity_source"] == "cache", s["rings"]
m = s["startup_ms"]
parts = sum(m[k] for k in ("config_plan", "backend", "capacity", "rings", "pipeline", "threads"))
assert m["total"] > 0 and abs(parts - m["total"]) < 0.5, m
' || e2e_fail "A: status: $(e2e_json status)"

# B: the cached capacity 10 % higher: the rule's count moves, the ring stays.
"$PY" - "$CACHE" <<'EOF' || e2e_fail "B: cannot edit the cache"
import sys
p = sys.argv[1]
lines = open(p).read().split("\n")
out = [lines[0]]
for l in lines[1:]:
    f = l.split("\t")
    if len(f) == 4:
        f[2] = "%.3f" % (float(f[2]) * 1.1)
        l = "\t".join(f)
    out.append(l)
open(p, "w").write("\n".join(out))
EOF
restart_after_kill B
grep -q "input ring $IN_RING: reused ([0-9]* slots; slots = auto gives [0-9]*, within 7/8..2x of it)" "$CHIRPD_LOG" ||
	e2e_fail "B: input ring not adopted: $(grep ring "$CHIRPD_LOG")"
[ "$(fault_ring_field "$IN_RING" epoch)" = "$in_epoch" ] || e2e_fail "B: the input ring's epoch changed"
e2e_log "B: $(grep -o "input ring $IN_RING: reused.*" "$CHIRPD_LOG")"

# The producer and the consumer never re-attached; the consumer saw the
# restarts flagged.
kill -0 "$FEED_PID" 2>/dev/null || e2e_fail "chirp-feed died: $(tail -3 "$T/feed.log")"
kill -0 "$TAP_PID" 2>/dev/null || e2e_fail "chirp-tap died: $(tail -3 "$T/tap.log")"
grep -q "re-attach" "$T/feed.log" && e2e_fail "chirp-feed re-attached: $(cat "$T/feed.log")"
grep -q "re-attach" "$T/tap.log" && e2e_fail "chirp-tap re-attached: $(cat "$T/tap.log")"
fault_stop "$TAP_PID"
disc=$(fault_tap_field "$T/tap.log" discontinuities)
[ "$disc" -ge 2 ] || e2e_fail "the consumer saw $disc flagged discontinuities after 2 kills: $(tail -4 "$T/tap.log")"
fault_expect_eq "tap mismatches" "$(fault_tap_field "$T/tap.log" mismatches)" 0
e2e_log "consumer: $disc discontinuities flagged, never re-attached"

# C: another geometry (a fixed slot count the ring does not have).
slots=$(grep -o "input ring $IN_RING: reused ([0-9]*" "$CHIRPD_LOG" | grep -o "[0-9]*$")
fault_config input.slots=$((slots + 8)) output.slots=auto cpi.pulses=4 \
	processing.capacity_cache="$CACHE" processing.streams=auto
restart_after_kill C
grep -q "input ring $IN_RING: slots $slots, want $((slots + 8)): re-created" "$CHIRPD_LOG" ||
	e2e_fail "C: no reason for the re-creation: $(grep ring "$CHIRPD_LOG")"
grep -q "output ring $OUT_RING: reused" "$CHIRPD_LOG" || e2e_fail "C: output ring not reused: $(grep ring "$CHIRPD_LOG")"
grep -q "re-attach" "$T/feed.log" || e2e_fail "C: chirp-feed did not follow the re-created ring"
e2e_log "C: $(grep -o "input ring $IN_RING: slots.*" "$CHIRPD_LOG")"

e2e_stop_chirpd || e2e_fail "chirpd exited $? on SIGTERM"
e2e_pass
