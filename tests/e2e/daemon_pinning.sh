#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# daemon_pinning.sh — the backend's own threads run where the data path
# runs: with [numa] cpus = 0 the CPU backend's FFTW workers (pc-cpu/N),
# made by the main thread before the data thread is pinned, are pinned to
# cpu 0 like the data thread, at start and after a reload that builds a new
# pc (cpu_threads 2 -> 3), and the log says so. Everything else of chirpd's
# (the main loop: the process's first thread) moves off cpu 0 to the cpus
# left (status numa.housekeeping_cpus); without [numa] cpus it stays put.
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
# The main loop: every cpu chirp may use but 0 (in the order taskset -c
# prints them), in status and in the log.
main_cpus=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/"$CHIRPD_PID"/status)
want=$("$PY" -c 'import os; c = sorted(os.sched_getaffinity(0) - {0}); print(",".join(map(str, c)))')
got=$("$PY" -c '
import sys
out = set()
for part in sys.argv[1].split(","):
    a, _, b = part.partition("-")
    out.update(range(int(a), int(b or a) + 1))
print(",".join(map(str, sorted(out))))' "$main_cpus")
[ -n "$want" ] && [ "$got" = "$want" ] || e2e_fail "main thread on cpus '$main_cpus', want $want"
hk=$(e2e_json status | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["numa"]["housekeeping_cpus"])')
[ "$hk" = "$main_cpus" ] || e2e_fail "status numa.housekeeping_cpus '$hk', the main thread has '$main_cpus'"
grep -q "numa: main loop, control and metrics on cpus $main_cpus (the data path has 0)" "$CHIRPD_LOG" ||
	e2e_fail "no housekeeping line in the log: $(grep numa: "$CHIRPD_LOG")"

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
"$CHIRP_FEED" -c "$CONF" --target 100,-10 --rate 200 --count 20 -q 2>"$T/feed.log" ||
	e2e_fail "chirp-feed: $(cat "$T/feed.log")"
e2e_wait 10 e2e_stat_ge cpis_out 20 || e2e_fail "only $(e2e_stat cpis_out) of 20 CPIs out: $(e2e_json stats) $(cat "$T/feed.log")"
e2e_stop_chirpd || e2e_fail "chirpd exited $?"
kill "$TAP" 2>/dev/null
wait "$TAP" 2>/dev/null

# Without [numa] cpus the main thread keeps the cpus it was started with.
e2e_config processing.cpu_threads=2
before=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
e2e_start_chirpd
[ "$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/"$CHIRPD_PID"/status)" = "$before" ] ||
	e2e_fail "main thread moved without [numa] cpus: $(grep Cpus_allowed_list /proc/"$CHIRPD_PID"/status)"
[ -z "$(e2e_json status | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["numa"]["housekeeping_cpus"])')" ] ||
	e2e_fail "housekeeping_cpus set without [numa] cpus"
e2e_stop_chirpd || e2e_fail "chirpd exited $?"
e2e_pass
