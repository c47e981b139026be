#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# daemon_reload.sh — reload without losing data:
#   A. 20 good reloads (SIGHUP and chirpctl) while chirp-feed streams: every
#      CPI comes out exactly once (counts on both ends, no gaps, no drops)
#      and verifies against the CPU recomputation;
#   B. a bad reload keeps the old configuration and reports FILE:LINE (control
#      reply, stats, SIGHUP too);
#   C. a geometry change re-creates the input ring with a new epoch and the
#      new geometry works end to end; a restart-only key is named as such.
. "$(dirname "$0")/lib.sh"
e2e_init reload
e2e_need chirp-feed chirp-tap

TG=(--target 150,-6 --target 610,-16)
SEED=11
N=$((900 / E2E_SLOW))
RATE=$((150 / E2E_SLOW))

# Output ring deep enough (2 s of results) that a verifying reader starved
# on a loaded machine does not turn into output drops: this test is about
# reloads.
e2e_config input.slots=64 output.slots=256
cp "$CONF" "$T/base.conf"
e2e_start_chirpd

# --- A: 20 reloads under load -------------------------------------------------
"$CHIRP_TAP" -c "$CONF" -n $N --verify "${TG[@]}" --snr-db 20 --seed $SEED --fail-on-gap \
	--timeout $((60 * E2E_SLOW)) -q 2>"$T/tap.log" &
TAP=$!
e2e_track $TAP
e2e_wait_consumer "$(e2e_conf_get output.ring)" $TAP
"$CHIRP_FEED" -c "$CONF" "${TG[@]}" --snr-db 20 --seed $SEED -n $N --rate $RATE --block -q \
	2>"$T/feed.log" &
FEED=$!
e2e_track $FEED
e2e_wait 10 e2e_stat_gt cpis_out 10 || e2e_fail "no CPIs before the reloads"
for i in $(seq 1 20); do
	# Alternate things that rebuild the pc and the output file handling but
	# leave the results bit-compatible with --verify.
	if [ $((i % 2)) = 0 ]; then
		e2e_config input.slots=64 output.slots=256 processing.cpu_threads=2 output.file="$T/results.raw"
	else
		e2e_config input.slots=64 output.slots=256 processing.cpu_threads=1 daemon.log_level=debug
	fi
	if [ $((i % 4)) = 0 ]; then
		kill -HUP "$CHIRPD_PID"
		e2e_wait 5 e2e_stat_ge reloads $i || e2e_fail "SIGHUP reload $i not applied"
	else
		e2e_ctl reload >"$T/reload.out" 2>&1 || e2e_fail "reload $i: $(cat "$T/reload.out")"
	fi
	sleep 0.1
done
in_mid=$(e2e_stat cpis_in)
[ "$in_mid" -lt $N ] || echo "note: the feed finished before the last reload"
wait $FEED || e2e_fail "chirp-feed exited $?: $(cat "$T/feed.log")"
wait $TAP || e2e_fail "chirp-tap exited $? (verify/gap): $(tail -5 "$T/tap.log")"
grep -q "received $N, gaps 0" "$T/tap.log" || e2e_fail "tap: $(cat "$T/tap.log")"
e2e_wait 5 e2e_stat_ge cpis_out $N || e2e_fail "cpis_out $(e2e_stat cpis_out) < $N"
for k in cpis_in cpis_out; do
	[ "$(e2e_stat $k)" = $N ] || e2e_fail "$k = $(e2e_stat $k), expected $N (lost or duplicated CPIs)"
done
for k in output_drops sequence_gaps input_overruns reload_failures backend_errors; do
	[ "$(e2e_stat $k)" = 0 ] || e2e_fail "$k = $(e2e_stat $k) after reloads under load"
done
[ "$(e2e_stat reloads)" = 20 ] || e2e_fail "reloads = $(e2e_stat reloads)"
grep -q "feed: sent $N, dropped 0" "$T/feed.log" || e2e_fail "feed: $(cat "$T/feed.log")"
e2e_log "A: $N CPIs through 20 reloads, none lost or duplicated"

# --- B: bad reloads ------------------------------------------------------------
cp "$T/base.conf" "$CONF"
line=$(grep -n '^samples = ' "$CONF" | cut -d: -f1)
sed -i 's/^samples = .*/samples = banana/' "$CONF"
out=$(e2e_ctl --json reload) && e2e_fail "bad reload accepted: $out"
echo "$out" | grep -q "chirpd.conf:$line: \[cpi\] samples" || e2e_fail "reply lacks FILE:LINE: $out"
echo "$out" | "$PY" -c 'import json,sys; r=json.load(sys.stdin); assert r["ok"] is False and r["errors"], r' ||
	e2e_fail "reply has no errors list: $out"
[ "$(e2e_state)" = running ] || e2e_fail "state after bad reload: $(e2e_state)"
e2e_ctl --json config | grep -q '"samples": *1000' || e2e_fail "configuration changed by a bad reload"
[ "$(e2e_stat reload_failures)" = 1 ] || e2e_fail "reload_failures"
grep -q "chirpd.conf:$line: \[cpi\] samples" "$CHIRPD_LOG" || e2e_fail "log lacks FILE:LINE"
kill -HUP "$CHIRPD_PID"
e2e_wait 5 e2e_stat_ge reload_failures 2 || e2e_fail "SIGHUP bad reload not counted"
e2e_ctl --json status | grep -q '"last_reload_error"' || e2e_fail "status lacks last_reload_error"
e2e_ctl ping >/dev/null || e2e_fail "chirpd gone after bad reloads"
e2e_log "B: bad reloads rejected with $CONF:$line, old configuration kept"

# --- C: geometry change and a restart-only key ------------------------------------
epoch0=$(e2e_ctl --json status | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["rings"]["input_epoch"])')
e2e_config input.slots=64 output.slots=256 cpi.samples=800 input.ring="$IN_RING-renamed"
out=$(e2e_ctl --json reload) || e2e_fail "geometry reload: $out"
echo "$out" | "$PY" -c '
import json, sys
r = json.load(sys.stdin)
assert r["input_ring_recreated"] is True, r
assert "input.ring" in r["restart_keys"], r
' || e2e_fail "geometry reload reply: $out"
st=$(e2e_ctl --json status)
echo "$st" | "$PY" -c "
import json, sys
s = json.load(sys.stdin)
assert s['geometry']['samples'] == 800, s['geometry']
assert s['rings']['input'] == '$IN_RING', s['rings']          # restart key kept
assert s['rings']['input_epoch'] != $epoch0, 'epoch unchanged'
" || e2e_fail "status after geometry reload: $st"
# chirp-feed/tap use the effective ring name (restart keys stay as running)
e2e_config input.slots=64 output.slots=256 cpi.samples=800
"$CHIRP_TAP" -c "$CONF" -n 20 --verify "${TG[@]}" --snr-db 20 --seed $SEED --fail-on-gap \
	--timeout $((30 * E2E_SLOW)) -q 2>"$T/tap2.log" &
TAP=$!
e2e_track $TAP
e2e_wait_consumer "$(e2e_conf_get output.ring)" $TAP
"$CHIRP_FEED" -c "$CONF" "${TG[@]}" --snr-db 20 --seed $SEED -n 20 --rate 100 --block -q 2>"$T/feed2.log" ||
	e2e_fail "feed on the new geometry: $(cat "$T/feed2.log")"
wait $TAP || e2e_fail "tap on the new geometry exited $?: $(tail -5 "$T/tap2.log")"
e2e_log "C: geometry change applied with a new input ring epoch"

e2e_stop_chirpd || e2e_fail "chirpd exited $?"
e2e_pass
