#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# daemon_lifecycle.sh — chirpd as a service: --check (valid config printed
# and round-trips, every error as FILE:LINE: [section] key: reason, exit
# non-zero), a second instance on the same socket refused, realtime
# preferred/required report the truth, SIGTERM and SIGINT under load drain
# and exit 0 within 2 s with every CPI taken accounted for.
. "$(dirname "$0")/lib.sh"
e2e_init lifecycle
e2e_need chirp-feed chirp-tap

# --- --check ----------------------------------------------------------------------
e2e_config
"$CHIRPD" --check -c "$CONF" >"$T/eff.conf" 2>"$T/check.err" || e2e_fail "--check of a good config: $(cat "$T/check.err")"
grep -q '^\[cpi\]' "$T/eff.conf" && grep -q '^samples = 1000' "$T/eff.conf" || e2e_fail "--check output: $(head "$T/eff.conf")"
"$CHIRPD" --check -c "$T/eff.conf" >"$T/eff2.conf" || e2e_fail "--check of its own output failed"
diff -u <(grep -v '^control_socket\|^#' "$T/eff.conf") <(grep -v '^control_socket\|^#' "$T/eff2.conf") ||
	e2e_fail "effective configuration does not round-trip"
e2e_config cpi.samples=-5 waveform.window=triangle
lines=$(grep -n '^samples = \|^window = ' "$CONF" | cut -d: -f1 | paste -sd' ')
"$CHIRPD" --check -c "$CONF" >/dev/null 2>"$T/check.err" && e2e_fail "--check accepted a bad config"
for l in $lines; do
	grep -q "^$CONF:$l: \[" "$T/check.err" || e2e_fail "--check: no error for line $l: $(cat "$T/check.err")"
done
"$CHIRPD" --check -c "$T/does-not-exist.conf" >/dev/null 2>&1 && e2e_fail "--check of a missing file passed"
"$CHIRPD" -c "$CONF" >/dev/null 2>&1
rc=$?
[ $rc -eq 78 ] || e2e_fail "chirpd on a bad config exited $rc, want 78 (EX_CONFIG)"
"$CHIRPD" -c "$T/does-not-exist.conf" >/dev/null 2>&1
rc=$?
[ $rc -eq 78 ] || e2e_fail "chirpd on a missing config exited $rc, want 78 (EX_CONFIG)"
e2e_log "--check ok"

# --- second instance, realtime ------------------------------------------------------
e2e_config numa.realtime=preferred numa.rt_priority=10
e2e_start_chirpd
"$CHIRPD" -c "$CONF" >"$T/second.log" 2>&1 && e2e_fail "a second chirpd started on the same socket"
grep -qi "another chirpd\|running\|in use" "$T/second.log" || e2e_fail "second instance: $(cat "$T/second.log")"
e2e_ctl ping >/dev/null || e2e_fail "first instance disturbed by the second"
applied=$(e2e_ctl --json status | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["realtime"]["applied"])')
fifo=0
for task in /proc/$CHIRPD_PID/task/*; do
	pol=$(awk '{print $41}' "$task/stat" 2>/dev/null)   # field 41: policy (1 = SCHED_FIFO)
	[ "$pol" = 1 ] && fifo=1
done
if [ "$applied" = True ]; then
	[ $fifo = 1 ] || e2e_fail "status says SCHED_FIFO but no thread has it"
else
	[ $fifo = 0 ] || e2e_fail "a thread is SCHED_FIFO but status says not applied"
fi
e2e_stop_chirpd || e2e_fail "stop"
e2e_config numa.realtime=required numa.rt_priority=10
if "$CHIRPD" -c "$CONF" >"$T/rt.log" 2>&1 & pid=$!; e2e_track $pid; sleep $((1 * E2E_SLOW)); kill -0 $pid 2>/dev/null; then
	[ "$applied" = True ] || e2e_fail "realtime=required started although preferred could not apply it"
	kill -TERM $pid; wait $pid
else
	wait $pid && e2e_fail "realtime=required exited 0"
	grep -q "realtime = required" "$T/rt.log" || e2e_fail "realtime=required: unclear error: $(cat "$T/rt.log")"
fi
e2e_log "realtime reported as applied=$applied, consistent with the threads"

# --- SIGTERM / SIGINT under load ------------------------------------------------------
for sig in TERM INT; do
	e2e_config input.slots=16 output.slots=16
	: >"$CHIRPD_LOG"
	e2e_start_chirpd
	"$CHIRP_TAP" -c "$CONF" --drain -q 2>/dev/null &
	e2e_track $!
	"$CHIRP_FEED" -c "$CONF" --target 100,-10 --rate 3000 -q 2>/dev/null &   # above what 1 FFTW thread keeps up with
	e2e_track $!
	e2e_wait 10 e2e_stat_gt cpis_in 50 || e2e_fail "no load"
	t0=$(date +%s%N)
	e2e_stop_chirpd $sig
	rc=$?
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	[ $rc = 0 ] || e2e_fail "SIG$sig under load: exit $rc"
	[ $ms -lt $((2000 * E2E_SLOW)) ] || e2e_fail "SIG$sig: took $ms ms"
	grep -q "draining" "$CHIRPD_LOG" || e2e_fail "no drain message"
	line=$(grep "stopped:" "$CHIRPD_LOG") || e2e_fail "no final counts"
	read -r cin cout drops <<<"$(echo "$line" | sed -E 's/.*stopped: ([0-9]+) CPIs in, ([0-9]+) out, ([0-9]+) output drops.*/\1 \2 \3/')"
	[ $((cout + drops)) = "$cin" ] || e2e_fail "SIG$sig: $cin taken but $cout out + $drops dropped: $line"
	e2e_log "SIG$sig under load: exit 0 after $ms ms; $line"
done
e2e_pass
