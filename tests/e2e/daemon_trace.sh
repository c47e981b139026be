#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# daemon_trace.sh — the flight recorder and the latency budget, end to end:
# `chirpctl trace [N]` returns the last N CPIs' stage timelines in order,
# with their stamps in time order and bad N refused; a CPI over
# [trace] latency_budget_ms is counted (stats over_budget, metrics
# chirpd_over_budget_total) and logged with its timeline at most once a
# second; a budget raised by reload stops the lines. Also buffer by time:
# status says what the input ring holds at the capacity measured at start,
# and a ring holding less than buffer_ms is warned about.
. "$(dirname "$0")/lib.sh"
e2e_init trace
e2e_need chirp-feed chirp-tap
[ -x "$PY" ] || e2e_skip "$PY not found"

# A budget no CPI can meet (1 us); 16 slots but 60 s of buffer_ms: warned.
# Two CPU threads (one worker) and no idle spin: the worker sleeps between
# CPIs and is woken for each (trace "woken"); a reload below changes that.
e2e_config trace.latency_budget_ms=0.001 trace.records=64 input.buffer_ms=60000 \
	processing.cpu_threads=2 processing.idle_spin_us=0
e2e_start_chirpd
"$CHIRP_TAP" -c "$CONF" --drain -q 2>"$T/tap.log" &
TAP=$!
e2e_track "$TAP"
grep -q "input ring $IN_RING: 16 slots = .* ms at the measured capacity of .* CPI/s (slots fixed, buffer_ms 60000)" "$CHIRPD_LOG" ||
	e2e_fail "no slack line at start: $(grep 'input ring' "$CHIRPD_LOG")"
grep -q "input ring $IN_RING holds only .* ms of CPIs at capacity, less than \[input\] buffer_ms = 60000" "$CHIRPD_LOG" ||
	e2e_fail "no warning for a ring shorter than buffer_ms"

"$CHIRP_FEED" -c "$CONF" --target 100,-10 --rate 100 --count 150 -q 2>"$T/feed.log" ||
	e2e_fail "chirp-feed: $(cat "$T/feed.log")"
e2e_wait 20 e2e_stat_ge cpis_out 150 || e2e_fail "only $(e2e_stat cpis_out) of 150 CPIs out"
e2e_wait 5 grep -q "CPI over the latency budget: seq" "$CHIRPD_LOG" || e2e_fail "no over-budget line"

e2e_ctl --json trace 50 >"$T/trace.json" || e2e_fail "trace 50: $(cat "$T/trace.json")"
e2e_ctl --json trace >"$T/trace_default.json" || e2e_fail "trace (default N)"
e2e_ctl --json status >"$T/status.json" || e2e_fail "status"
e2e_ctl --json stats >"$T/stats.json" || e2e_fail "stats"
e2e_ctl metrics >"$T/metrics.txt" || e2e_fail "metrics"
"$PY" - "$T" <<'PYEOF' || e2e_fail "trace/status/stats replies wrong"
import json, os, re, sys
d = sys.argv[1]
tr = json.load(open(os.path.join(d, "trace.json")))
assert tr["ok"] and tr["records"] == 64 and tr["total"] == 150, (tr["records"], tr["total"])
assert abs(tr["latency_budget_ms"] - 0.001) < 1e-9
cpis = tr["cpis"]
assert len(cpis) == 50, len(cpis)
dft = json.load(open(os.path.join(d, "trace_default.json")))["cpis"]
assert len(dft) == 64, len(dft)       # default 100, capped by the 64 records kept
order = ["peek", "submit", "submitted", "output_done", "out_commit"]
for i, c in enumerate(cpis):
    # the last 50 of 150, in order: first_sample k * P * R with P R = 8000
    assert c["first_sample"] == (100 + i) * 8 * 1000, (i, c["first_sample"])
    assert c["flags"][:1] == ["delivered"] and "over_budget" in c["flags"], c["flags"]
    t = c["t_us"]
    vals = [t[k] for k in order]
    assert all(v is not None and v >= 0 for v in vals), t
    assert vals == sorted(vals), t
    assert t["input_done"] <= t["release"] <= t["out_commit"], t
    assert abs(c["latency_us"] - t["out_commit"]) < 2000, (c["latency_us"], t)
    assert c["fill"] >= 1 and c["in_flight"] >= 0 and c["device_us"] > 0
    assert isinstance(c["recomputed"], int) and c["recomputed"] >= 0
    # CPU workers that were asleep when the CPI came (idle_spin_us 0 here:
    # CPIs 10 ms apart find them asleep); the CUDA backend has none
    assert isinstance(c["woken"], int) and c["woken"] >= 0, c["woken"]
    # CPU threads (of cpu_threads = 2) that computed none of its blocks
    assert isinstance(c["absent"], int), c["absent"]
    # the longest data-thread stall while it was in chirpd (a loaded machine may
    # have some): null, or how long, its CPU time, what, where
    st = c["stall"]
    if st is not None:
        assert set(st) == {"us", "cpu_us", "kind", "in"}, st
        assert st["us"] >= 200 and st["cpu_us"] >= 0, st
        assert st["kind"] in ("running", "blocked", "preempted", "stolen"), st
        assert st["in"] in ("take", "retire", "poll"), st
    if os.environ.get("CHIRP_TEST_BACKEND", "cpu") == "cuda":
        assert c["woken"] == 0, c["woken"]
        assert c["absent"] == 0, c["absent"]
    else:
        assert c["woken"] <= 1, c["woken"]
        assert 0 <= c["absent"] <= 1, c["absent"]
if os.environ.get("CHIRP_TEST_BACKEND", "cpu") != "cuda":
    woken = sum(c["woken"] for c in cpis)
    assert woken >= 25, "only %d of 50 CPIs woke the sleeping worker" % woken
    # row chunks: the CPU backend cuts nothing, the CUDA one at least one
    if os.environ.get("CHIRP_TEST_BACKEND", "cpu") == "cuda":
        assert isinstance(c["chunks"], int) and c["chunks"] >= 1, c["chunks"]
    else:
        assert c["chunks"] == 0, c["chunks"]
st = json.load(open(os.path.join(d, "status.json")))["rings"]
assert st["input_slots"] == 16 and st["input_slots_auto"] is False
assert st["capacity_cpi_per_s"] > 0
assert abs(st["input_ms_at_capacity"] - 16 / st["capacity_cpi_per_s"] * 1e3) < 1e-6 * st["input_ms_at_capacity"] + 1e-9
assert st["buffer_ms"] == 60000
stt = json.load(open(os.path.join(d, "status.json")))
assert stt["busy_poll"] is True and stt["idle_spin_us"] == 0, (stt["busy_poll"], stt["idle_spin_us"])
s = json.load(open(os.path.join(d, "stats.json")))
assert s["over_budget"] == 150, s["over_budget"]
stalled = sum(1 for c in tr["cpis"] if c["stall"] is not None)
assert isinstance(s["data_stalls"], int) and s["data_stalls"] >= (1 if stalled else 0), \
    (s["data_stalls"], stalled)
m = open(os.path.join(d, "metrics.txt")).read()
assert re.search(r"^chirpd_over_budget_total 150$", m, re.M), "metrics lack over_budget 150"
# (taken after stats: a count of its own, not compared)
assert re.search(r"^chirpd_data_stalls_total [0-9]+$", m, re.M), "metrics lack data_stalls"
print("trace, status and stats agree")
PYEOF

# For people: a header and one line per CPI, stages in ms, flags last.
e2e_ctl trace 3 >"$T/trace.txt" || e2e_fail "trace 3 (text)"
[ "$(wc -l <"$T/trace.txt")" = 5 ] || e2e_fail "trace 3 text: $(cat "$T/trace.txt")"
grep -q "^flight recorder: 64 records kept, 150 CPIs recorded, budget 0.001 ms" "$T/trace.txt" ||
	e2e_fail "trace text header: $(head -1 "$T/trace.txt")"
# seq, mode, the eight stage times, then the counters and flags.
tail -1 "$T/trace.txt" | grep -Eq "^ +[0-9]+ +[0-9]+( +[0-9]+\.[0-9]{3}){8} +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9]+  delivered,over_budget$" ||
	e2e_fail "trace text line: $(tail -1 "$T/trace.txt")"

# Bad N: a clear error, chirpd keeps running.
# ("--": chirpctl would take -3 for an option of its own)
for bad in 0 -3 abc 65 "1 2"; do
	out=$(e2e_ctl trace -- $bad 2>&1) && e2e_fail "trace $bad accepted"
	case $out in *"N must be a number of CPIs 1..64 (the recorder's size"*|*"takes"*) ;; *) e2e_fail "trace $bad: '$out'";; esac
done
[ "$(e2e_state)" = running ] || e2e_fail "not running after bad trace requests"

# At most one over-budget line a second (150 CPIs in 1.5 s over budget).
lines=$(grep -c "CPI over the latency budget" "$CHIRPD_LOG")
[ "$lines" -ge 1 ] && [ "$lines" -le 4 ] || e2e_fail "$lines over-budget lines for 1.5 s of CPIs"
grep "CPI over the latency budget" "$CHIRPD_LOG" | tail -1 |
	grep -Eq "seq [0-9]+ mode 0 latency [0-9.]+ ms \(budget 0.001 ms\): peek \+[0-9.]+ submit \+[0-9.]+ .* out_commit \+[0-9.]+ ms; input ring fill [0-9]+, in flight [0-9]+, device [0-9.]+ ms(, [0-9]+ workers? woken)?(, [0-9]+ threads? computed nothing)?(, data thread stalled [0-9.]+ ms \((running|blocked|preempted|stolen), in (take|retire|poll)\))? \([0-9]+ over budget since start, [0-9]+ since the last such line\)" ||
	e2e_fail "over-budget line format: $(grep 'over the latency budget' "$CHIRPD_LOG" | tail -1)"

# A generous budget by reload: no more over-budget CPIs. With it a 200 ms
# idle spin: CPIs 10 ms apart then find the CPU workers polling, none woken.
sed -i 's/^latency_budget_ms = .*/latency_budget_ms = 60000/; s/^idle_spin_us = .*/idle_spin_us = 200000/' "$CONF"
grep -q "^idle_spin_us = 200000$" "$CONF" || e2e_fail "no idle_spin_us key in $CONF"
e2e_ctl reload >/dev/null || e2e_fail "reload"
before=$(e2e_stat over_budget)
"$CHIRP_FEED" -c "$CONF" --target 100,-10 --rate 100 --count 50 -q 2>"$T/feed2.log" ||
	e2e_fail "chirp-feed 2"
e2e_wait 20 e2e_stat_ge cpis_out 200 || e2e_fail "second feed not delivered"
[ "$(e2e_stat over_budget)" = "$before" ] || e2e_fail "over_budget grew under a 60 s budget"
e2e_ctl --json status >"$T/status2.json" || e2e_fail "status after reload"
e2e_ctl --json trace 40 >"$T/trace2.json" || e2e_fail "trace 40 after reload"
"$PY" - "$T" <<'PYEOF' || e2e_fail "idle_spin_us after reload"
import json, os, sys
d = sys.argv[1]
st = json.load(open(os.path.join(d, "status2.json")))
assert st["idle_spin_us"] == 200000, st["idle_spin_us"]
woken = [c["woken"] for c in json.load(open(os.path.join(d, "trace2.json")))["cpis"]]
assert len(woken) == 40 and not any(woken), woken
print("idle spin 200 ms: no worker woken in the last 40 CPIs")
PYEOF
[ "$(e2e_stat output_drops)" = 0 ] || e2e_fail "output drops with a draining consumer"
# Idle, the spinning threads go to sleep: chirpd (200 ms spin, the tap
# sleeping on the output ring) uses well under a tenth of a core over 2 s
# once the input has stopped (a loose bound, not a timing measurement).
sleep 1
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$CHIRPD_PID/stat"; }
t0=$(cpu_ticks); sleep 2; t1=$(cpu_ticks)
hz=$(getconf CLK_TCK)
[ $((t1 - t0)) -le $((hz / 5)) ] || e2e_fail "idle chirpd used $((t1 - t0)) of $((2 * hz)) CPU ticks in 2 s"
e2e_log "idle chirpd: $((t1 - t0)) CPU ticks in 2 s (bound $((hz / 5)))"
e2e_stop_chirpd || e2e_fail "chirpd exited $?"
kill "$TAP" 2>/dev/null
wait "$TAP" 2>/dev/null
e2e_pass
