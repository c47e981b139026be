#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# daemon_rate_warning.sh — the input rate against the sustainable capacity:
# with a capacity forced low through the capacity cache (an entry whose
# figure is edited to 40 CPI/s; chirpd believes its cache and does not
# measure again),
#   A. status shows the capacity alone, from the cache, with no shared
#      figure, and a feed at 20 CPI/s raises nothing;
#   B. a feed at 80 CPI/s raises input_over_capacity (stats, status,
#      metrics) and one log warning within ~1-2 s, before any input overrun
#      (chirpd itself keeps up: only the figure is low);
#   C. when the feed stops, the state clears with one log line, and the
#      episode counts once (input_over_capacity_events);
#   D. the host calibration (scripts/chirpd-calibrate-host, this one
#      instance saturated) stores a shared figure: status shows it, the
#      cache entry holds it; one set lower (chirpctl capacity-shared 20)
#      survives a restart through the cache, and a feed at 30 CPI/s, under
#      the figure alone (40) but over the shared one, raises the warning
#      naming the shared figure, before any overrun; clear forgets it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_fault.sh"
fault_init rate_warning

CACHE=$T/capacity
CAP=40
fault_config processing.capacity_cache="$CACHE" processing.streams=auto
e2e_start_chirpd
e2e_stop_chirpd || e2e_fail "chirpd did not stop cleanly"
[ -s "$CACHE" ] || e2e_fail "no capacity cache after the first start"
"$PY" - "$CACHE" "$CAP" <<'PYEOF' || e2e_fail "cannot edit the cache"
import sys
p, cap = sys.argv[1], sys.argv[2]
lines = open(p).read().split("\n")
out = [lines[0]]
for l in lines[1:]:
    f = l.split("\t")
    if len(f) == 4:
        f[2] = cap
        l = "\t".join(f)
    out.append(l)
open(p, "w").write("\n".join(out))
PYEOF
: >"$CHIRPD_LOG"
e2e_start_chirpd

# over_state — "OVER EVENTS OVERRUNS" from stats
over_state() {
	e2e_json stats | "$PY" -c '
import json, sys
s = json.load(sys.stdin)
print(int(s["input_over_capacity"]), s["input_over_capacity_events"], s["input_overruns"])'
}

e2e_json status | "$PY" -c '
import json, sys
c = json.load(sys.stdin)["capacity"]
assert c["alone"]["cpi_per_s"] == '"$CAP"' and c["alone"]["source"] == "cache", c
assert c["shared"] is None and c["sustainable_cpi_per_s"] == '"$CAP"', c
assert c["input_over_capacity"] is False and c["input_over_capacity_events"] == 0, c
' || e2e_fail "A: status capacity: $(e2e_json status)"

# A: below the capacity for 3 s: nothing.
fault_feed "$T/feed.log" --rate 20
sleep 3
read -r over events overruns < <(over_state)
[ "$over" = 0 ] && [ "$events" = 0 ] || e2e_fail "A: at 20 CPI/s: over $over, events $events"
grep -q "above the capacity" "$CHIRPD_LOG" && e2e_fail "A: warned at 20 CPI/s: $(grep capacity "$CHIRPD_LOG")"
rate=$(e2e_stat input_offered_cpi_per_s)
e2e_log "A: 20 CPI/s offered (measured $rate): no warning"
fault_stop "$FEED_PID"

# B: twice the capacity: the warning within ~1-2 s, before an overrun.
fault_feed "$T/feed.log" --rate 80
t0=$(date +%s%N)
n=$((40 * E2E_SLOW))
for ((i = 0; i < n; i++)); do
	read -r over events overruns < <(over_state)
	[ "$over" = 1 ] && break
	sleep 0.1
done
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$over" = 1 ] || e2e_fail "B: no input_over_capacity after ${ms} ms at 80 CPI/s"
[ "$overruns" = 0 ] || e2e_fail "B: $overruns input overruns before the warning"
[ "$events" = 1 ] || e2e_fail "B: input_over_capacity_events $events"
grep -q "input rate [0-9]* CPI/s has stayed above the capacity of $CAP CPI/s (cache) for a second" "$CHIRPD_LOG" ||
	e2e_fail "B: no warning in the log: $(tail -5 "$CHIRPD_LOG")"
e2e_ctl metrics >"$T/metrics.txt" || e2e_fail "B: metrics"
grep -qx "chirpd_input_over_capacity 1" "$T/metrics.txt" || e2e_fail "B: metrics: $(grep over_capacity "$T/metrics.txt")"
grep -qx "chirpd_input_over_capacity_events_total 1" "$T/metrics.txt" || e2e_fail "B: metrics events"
e2e_log "B: over capacity after $ms ms at 80 CPI/s, 0 overruns"

# C: the feed stops: cleared once, the event stays counted.
fault_stop "$FEED_PID"
e2e_wait 10 grep -q "is back below the capacity of $CAP CPI/s" "$CHIRPD_LOG" ||
	e2e_fail "C: not cleared: $(tail -5 "$CHIRPD_LOG")"
read -r over events overruns < <(over_state)
[ "$over" = 0 ] && [ "$events" = 1 ] || e2e_fail "C: over $over, events $events"
[ "$(grep -c "above the capacity" "$CHIRPD_LOG")" = 1 ] || e2e_fail "C: more than one warning"
[ "$(grep -c "back below the capacity" "$CHIRPD_LOG")" = 1 ] || e2e_fail "C: more than one clear line"
e2e_log "C: cleared, one event"

# D: the shared figure.
# shared_state — "SHARED SUSTAINABLE ALONE" from status (SHARED: none)
shared_state() {
	e2e_json status | "$PY" -c '
import json, sys
c = json.load(sys.stdin)["capacity"]
print("none" if c["shared"] is None else "%g" % c["shared"]["cpi_per_s"], "%g" % c["sustainable_cpi_per_s"],
      "%g" % c["alone"]["cpi_per_s"])'
}
# cache_fields — the number of fields of the cache's entry
cache_fields() { awk -F'\t' 'NR == 2 { print NF }' "$CACHE"; }
PATH="$BUILD/bin:$PATH" "$(dirname "$0")/../../scripts/chirpd-calibrate-host" --seconds 1 --warmup 0.5 "$SOCK" \
	>"$T/calibrate.log" 2>&1 || e2e_fail "D: chirpd-calibrate-host failed: $(cat "$T/calibrate.log")"
grep -q "^$SOCK: alone $CAP CPI/s, shared [0-9]* CPI/s" "$T/calibrate.log" ||
	e2e_fail "D: calibration line: $(cat "$T/calibrate.log")"
read -r shared sust alone < <(shared_state)
[ "$shared" != none ] && [ "$sust" = "$shared" ] && [ "$alone" = "$CAP" ] ||
	e2e_fail "D: after the calibration: shared $shared, sustainable $sust, alone $alone"
[ "$(cache_fields)" = 6 ] || e2e_fail "D: the cache entry has no shared figure: $(cat "$CACHE")"
e2e_log "D: calibrated: $(cat "$T/calibrate.log")"
e2e_ctl capacity-shared abc >"$T/out" 2>&1 && e2e_fail "D: capacity-shared abc accepted"
grep -q "want CPS" "$T/out" || e2e_fail "D: capacity-shared abc: $(cat "$T/out")"
e2e_ctl capacity-shared 20 >/dev/null || e2e_fail "D: capacity-shared 20 failed"
e2e_stop_chirpd || e2e_fail "D: chirpd did not stop cleanly"
: >"$CHIRPD_LOG"
e2e_start_chirpd
read -r shared sust alone < <(shared_state)
[ "$shared $sust $alone" = "20 20 $CAP" ] || e2e_fail "D: after a restart: shared $shared, sustainable $sust, alone $alone"
grep -q "capacity shared with the host's other instances: 20 CPI/s (host calibration, from the capacity cache)" \
	"$CHIRPD_LOG" || e2e_fail "D: no start-up line for the shared figure: $(grep capacity "$CHIRPD_LOG")"
fault_feed "$T/feed.log" --rate 30
e2e_wait $((4 * E2E_SLOW)) grep -q "input rate [0-9]* CPI/s has stayed above the capacity of 20 CPI/s (shared with the host's other instances) for a second" "$CHIRPD_LOG" ||
	e2e_fail "D: no warning at 30 CPI/s against the shared 20: $(tail -5 "$CHIRPD_LOG")"
read -r over events overruns < <(over_state)
[ "$over" = 1 ] && [ "$events" = 1 ] && [ "$overruns" = 0 ] ||
	e2e_fail "D: over $over, events $events, overruns $overruns"
e2e_ctl metrics | grep -qx "chirpd_capacity_cpis_per_second 20.000" || e2e_fail "D: metrics: $(e2e_ctl metrics | grep capacity_cpis)"
fault_stop "$FEED_PID"
e2e_log "D: shared 20 CPI/s kept across a restart; warned at 30 CPI/s, 0 overruns"
e2e_ctl capacity-shared clear >/dev/null || e2e_fail "D: capacity-shared clear failed"
read -r shared sust alone < <(shared_state)
[ "$shared $sust" = "none $CAP" ] || e2e_fail "D: after clear: shared $shared, sustainable $sust"
[ "$(cache_fields)" = 4 ] || e2e_fail "D: clear left the shared figure in the cache: $(cat "$CACHE")"

e2e_stop_chirpd || e2e_fail "chirpd exited $? on SIGTERM"
e2e_pass
