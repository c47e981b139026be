#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# daemon_reload_restart.sh — keys that need a restart keep their running
# values on reload, and say so:
#   A. a reload that changes restart-only keys ([input] and [output]
#      allow_foreign_owner, [trace] records) next to a reloadable one
#      (trace.latency_budget_ms) is applied; the reply names the restart keys;
#      `chirpctl config` shows the running values of those, names them as
#      needing a restart, and shows the new value of the reloadable key; the flight recorder keeps its size
#      (`chirpctl trace N` takes N up to the running records only); the log
#      says "needs restart" and never "chirpd needs an update";
#   B. a second reload of the same file names the same keys again (they
#      still differ from what runs); a file back at the running values
#      leaves none pending;
#   C. after a restart the file's values run: the recorder holds the new
#      number of records.
. "$(dirname "$0")/lib.sh"
e2e_init reload_restart
e2e_need chirp-feed chirp-tap
[ -x "$PY" ] || e2e_skip "$PY not found"

e2e_config trace.records=64
e2e_start_chirpd
"$CHIRP_TAP" -c "$CONF" --drain -q 2>"$T/tap.log" &
TAP=$!
e2e_track "$TAP"
e2e_wait_consumer "$(e2e_conf_get output.ring)" $TAP
"$CHIRP_FEED" -c "$CONF" --target 100,-10 --rate 200 --count 100 -q 2>"$T/feed.log" ||
	e2e_fail "chirp-feed: $(cat "$T/feed.log")"
e2e_wait 20 e2e_stat_ge cpis_out 100 || e2e_fail "only $(e2e_stat cpis_out) of 100 CPIs out"

# check_running RECORDS BUDGET_MS FOREIGN PENDING — `chirpctl config` and
# `trace` show a recorder of RECORDS, the budget and allow_foreign_owner;
# config names the keys PENDING a restart ("a,b"; "" = none), in JSON and
# as a comment of the text form.
check_running() {
	e2e_ctl --json config >"$T/config.json" || e2e_fail "config: $(cat "$T/config.json")"
	"$PY" - "$T/config.json" "$1" "$2" "$3" "$4" <<'PYEOF' || e2e_fail "config reply: $(cat "$T/config.json")"
import json, sys
r = json.load(open(sys.argv[1]))
c = r["config"]
records, budget, foreign = int(sys.argv[2]), float(sys.argv[3]), sys.argv[4] == "true"
pending = [k for k in sys.argv[5].split(",") if k]
assert r["restart_keys"] == pending, r["restart_keys"]
assert c["trace"]["records"] == records, c["trace"]
assert c["trace"]["latency_budget_ms"] == budget, c["trace"]
assert c["input"]["allow_foreign_owner"] is foreign, c["input"]
assert c["output"]["allow_foreign_owner"] is foreign, c["output"]
PYEOF
	e2e_ctl config >"$T/config.txt" || e2e_fail "config (text)"
	if [ -n "$4" ]; then
		grep -q "^# needs a restart to apply the file's $(echo "$4" | sed 's/,/, /g') (running values below)$" \
			"$T/config.txt" || e2e_fail "config text does not name $4: $(head -3 "$T/config.txt")"
	else
		grep -q "needs a restart" "$T/config.txt" && e2e_fail "config text: $(head -3 "$T/config.txt")"
	fi
	grep -q "^records = $1$" "$T/config.txt" || e2e_fail "config text: records is not $1"
	e2e_ctl --json trace "$1" >"$T/trace.json" || e2e_fail "trace $1: $(cat "$T/trace.json")"
	"$PY" -c 'import json, sys; r = json.load(open(sys.argv[1])); assert r["records"] == int(sys.argv[2]), r["records"]' \
		"$T/trace.json" "$1" || e2e_fail "trace reply records != $1"
	local over=$(($1 + 1)) out
	out=$(e2e_ctl trace $over 2>&1) && e2e_fail "trace $over accepted with $1 records: $out"
	case $out in *"1..$1 (the recorder's size"*) ;; *) e2e_fail "trace $over: '$out'";; esac
}

check_running 64 20 false ""

# --- A: restart-only keys changed next to a reloadable one -------------------
e2e_config trace.records=128 trace.latency_budget_ms=7.5 \
	input.allow_foreign_owner=true output.allow_foreign_owner=true
e2e_ctl reload >"$T/reload.txt" 2>&1 || e2e_fail "reload: $(cat "$T/reload.txt")"
grep -Eq "^reloaded: +yes" "$T/reload.txt" || e2e_fail "reload text reply: $(cat "$T/reload.txt")"
for k in input.allow_foreign_owner output.allow_foreign_owner trace.records; do
	grep -q "$k" "$T/reload.txt" || e2e_fail "reload text reply does not name $k: $(cat "$T/reload.txt")"
done
check_running 64 7.5 false input.allow_foreign_owner,output.allow_foreign_owner,trace.records
e2e_log "A: restart keys named, running values kept, budget applied"

# --- B: the same file again names the same keys ----------------------------------
out=$(e2e_ctl --json reload) || e2e_fail "second reload: $out"
echo "$out" | "$PY" -c '
import json, sys
r = json.load(sys.stdin)
assert r["reloaded"] is True, r
assert sorted(r["restart_keys"]) == ["input.allow_foreign_owner", "output.allow_foreign_owner",
                                     "trace.records"], r["restart_keys"]
' || e2e_fail "second reload reply: $out"
check_running 64 7.5 false input.allow_foreign_owner,output.allow_foreign_owner,trace.records
[ "$(e2e_stat reloads)" = 2 ] || e2e_fail "reloads = $(e2e_stat reloads)"
[ "$(e2e_stat reload_failures)" = 0 ] || e2e_fail "reload_failures = $(e2e_stat reload_failures)"
grep -q "needs restart: .*trace.records" "$CHIRPD_LOG" || e2e_fail "log does not name the restart keys"
grep -q "needs an update" "$CHIRPD_LOG" && e2e_fail "log: $(grep 'needs an update' "$CHIRPD_LOG")"
e2e_log "B: a repeated reload names the same keys"
e2e_config trace.records=64 trace.latency_budget_ms=7.5
out=$(e2e_ctl --json reload) || e2e_fail "reload back to the running values: $out"
echo "$out" | "$PY" -c 'import json, sys; r = json.load(sys.stdin); assert r["restart_keys"] == [], r' ||
	e2e_fail "reload back to the running values: $out"
check_running 64 7.5 false ""
e2e_log "B: the file back at the running values: nothing pending"
e2e_config trace.records=128 trace.latency_budget_ms=7.5 \
	input.allow_foreign_owner=true output.allow_foreign_owner=true

# --- C: a restart runs the file's values ---------------------------------------
kill "$TAP"
wait "$TAP" 2>/dev/null
e2e_stop_chirpd || e2e_fail "chirpd exited $?"
# The rings are ours: the new allow_foreign_owner changes nothing here.
e2e_start_chirpd
check_running 128 7.5 true ""
e2e_stop_chirpd || e2e_fail "chirpd exited $? after the restart"
e2e_log "C: after a restart the recorder holds 128 records"
e2e_pass
