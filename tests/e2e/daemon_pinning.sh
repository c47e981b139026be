#!/bin/bash
# daemon_pinning.sh — the backend's own threads run where the data path
# runs: with [numa] cpus = 0 the CPU backend's FFTW workers (pc-cpu/N),
# made by the main thread before the data thread is pinned, are pinned to
# cpu 0 like the data thread, at start and after a reload that builds a new
# pc (cpu_threads 2 -> 3), and the log says so.
. "$(dirname "$0")/lib.sh"
e2e_init pinning
e2e_need chirp-feed chirp-tap

# The cpus every pc-cpu/N thread of chirpd may run on, one line each.
worker_cpus() {
	local t
	for t in /proc/"$CHIRPD_PID"/task/*; do
		[ "$(cat "$t/comm" 2>/dev/null)" = "${1:-pc-cpu}/$2" ] || continue
		sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "$t/status"
	done
}

[ "$(nproc)" -ge 2 ] || e2e_skip "needs 2 cpus to tell pinned from not"
e2e_config numa.cpus=0 processing.cpu_threads=2
e2e_start_chirpd
[ "$(e2e_json status | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["numa"]["cpus"])')" = 0 ] ||
	e2e_fail "data thread not on cpu 0: $(e2e_json status)"
[ "$(worker_cpus pc-cpu 1)" = 0 ] || e2e_fail "FFTW worker 1 on cpus '$(worker_cpus pc-cpu 1)', not 0"
grep -q "numa: 1 backend thread pinned to cpus 0" "$CHIRPD_LOG" || e2e_fail "no pinning line in the log"

# A reload with a new pc: its workers are pinned before it runs a CPI.
e2e_config numa.cpus=0 processing.cpu_threads=3
e2e_ctl reload >/dev/null || e2e_fail "reload"
e2e_wait 10 grep -q "numa: 2 backend threads pinned to cpus 0" "$CHIRPD_LOG" ||
	e2e_fail "no pinning line after the reload: $(grep numa: "$CHIRPD_LOG")"
for w in 1 2; do
	[ "$(worker_cpus pc-cpu $w)" = 0 ] || e2e_fail "after reload, worker $w on cpus '$(worker_cpus pc-cpu $w)'"
done
# Results still flow.
"$CHIRP_TAP" -c "$CONF" --drain -q 2>"$T/tap.log" &
TAP=$!
e2e_track $TAP
e2e_wait_consumer "$(e2e_conf_get output.ring)" $TAP
"$CHIRP_FEED" -c "$CONF" --targets 100:-10 --rate 200 --count 20 -q 2>"$T/feed.log" ||
	e2e_fail "chirp-feed: $(cat "$T/feed.log")"
e2e_wait 10 e2e_stat_ge cpis_out 20 || e2e_fail "only $(e2e_stat cpis_out) of 20 CPIs out: $(e2e_json stats) $(cat "$T/feed.log")"
e2e_stop_chirpd || e2e_fail "chirpd exited $?"
kill "$TAP" 2>/dev/null
wait "$TAP" 2>/dev/null
e2e_pass
