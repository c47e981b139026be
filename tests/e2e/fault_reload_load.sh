#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fault_reload_load.sh — 100 reloads while CPIs stream through.
#
# The configuration file is replaced (atomically, as editors do) before each
# reload (every 4th by SIGHUP, the others by chirpctl reload), alternating settings that rebuild the pulse compressor without
# changing its result (cpu_threads 1/2, nfft auto/1536, log level); after
# every 10th reload comes one of a broken file, which must be refused with
# the running configuration kept (100 good + 10 broken).
# Proves:
#   - zero lost or duplicated CPIs: every CPI the producer committed comes
#     out exactly once (distinct first_sample, SigMF captures) and verifies;
#     no input overrun, sequence gap or output drop;
#   - reloads / reload_failures count exactly;
#   - no memory growth: chirpd's VmRSS after 100 reloads is within 10 MiB of
#     its value after the first 5 (under ASan the quarantine is capped and the
#     bound is 30 MiB; LeakSanitizer checks for leaks at exit).
# Environment: FAULT_RELOADS (default 100), CHIRP_TEST_BACKEND.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_fault.sh"
fault_init reload_load

reloads=${FAULT_RELOADS:-100}
rate=100
# Freed memory otherwise sits in ASan's quarantine (256 MiB by default) and
# would read as growth.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=8:malloc_context_size=5"

variant() {   # variant N [broken] — write configuration N into $CONF atomically
	local n=$1 c=$CONF
	CONF=$T/next.conf
	fault_config input.slots=256 output.slots=256 cpi.pulses=4 \
		processing.cpu_threads=$((n % 2 + 1)) \
		processing.nfft=$([ $((n % 3)) -eq 0 ] && echo 1536 || echo auto) \
		daemon.log_level=$([ $((n % 2)) -eq 0 ] && echo info || echo notice)
	if [ "${2:-}" = broken ]; then
		echo "pulses = many   # a hurried edit" >>"$CONF"   # lands in the last section
	fi
	CONF=$c
	mv -f "$T/next.conf" "$CONF"
}

variant 0
e2e_start_chirpd
fault_skip_if_no_cuda
fault_tap "$T/tap.log" --sigmf "$T/out"
fault_feed "$T/feed.log" --rate "$rate" --wait 5
fault_wait_stat cpis_out -ge 10 20 || e2e_fail "no output"

ok=0 bad=0 t0=$(date +%s.%N)
for ((i = 1; i <= reloads + reloads / 10; i++)); do
	broken=$([ $((i % 11)) -eq 0 ] && echo broken)
	variant "$i" $broken
	if [ $((i % 4)) -eq 0 ]; then
		# Every 4th by SIGHUP (no reply): wait until chirpd has counted it,
		# then check it counted it the right way.
		kill -HUP "$CHIRPD_PID"
		if [ -n "$broken" ]; then bad=$((bad + 1)); else ok=$((ok + 1)); fi
		for ((w = 0; w < 100 * E2E_SLOW; w++)); do
			counts=$(e2e_ctl --json stats | "$PY" -c 'import json,sys; s=json.load(sys.stdin); print(s["reloads"], s["reload_failures"])')
			[ "$counts" = "$ok $bad" ] && break
			sleep 0.05
		done
		[ "$counts" = "$ok $bad" ] || e2e_fail "SIGHUP reload $i: reloads/failures are '$counts', want '$ok $bad'"
	elif e2e_ctl reload >"$T/reload.out" 2>&1; then
		ok=$((ok + 1))
		[ -z "$broken" ] || e2e_fail "reload $i of a broken file succeeded"
	else
		bad=$((bad + 1))
		[ -n "$broken" ] || e2e_fail "reload $i failed: $(cat "$T/reload.out")"
		grep -q 'next.conf\|chirpd.conf' "$T/reload.out" ||
			e2e_fail "reload $i: the error does not name the file: $(cat "$T/reload.out")"
	fi
	if [ "$i" -eq 5 ]; then
		sleep 0.5
		rss0=$(fault_rss_kb "$CHIRPD_PID")
	fi
	kill -0 "$FEED_PID" 2>/dev/null || e2e_fail "chirp-feed died at reload $i: $(tail -3 "$T/feed.log")"
done
t1=$(date +%s.%N)
sleep 0.5
rss1=$(fault_rss_kb "$CHIRPD_PID")
e2e_log "$ok reloads + $bad refused in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s; VmRSS after 5: $rss0 kB, after $reloads: $rss1 kB"

fault_stop "$FEED_PID" || true
sent=$(fault_feed_field "$T/feed.log" sent)
fault_wait_stat cpis_in -ge "$sent" 20 || e2e_fail "chirpd did not take all $sent CPIs"
fault_wait_stat cpis_out -ge "$sent" 20 || e2e_fail "chirpd did not deliver all $sent CPIs"
sleep 0.3
e2e_json stats >"$T/stats.json"
fault_expect_eq "reloads" "$(fault_stat reloads)" "$ok"
fault_expect_eq "successful reloads" "$ok" "$reloads"
fault_expect_eq "reload_failures" "$(fault_stat reload_failures)" "$bad"
fault_expect_eq "producer dropped" "$(fault_feed_field "$T/feed.log" dropped)" 0
fault_expect_eq "input_overruns" "$(fault_stat input_overruns)" 0
fault_expect_eq "sequence_gaps" "$(fault_stat sequence_gaps)" 0
fault_expect_eq "output_drops" "$(fault_stat output_drops)" 0
fault_expect_eq "cpis_in = sent" "$(fault_stat cpis_in)" "$sent"
fault_expect_eq "cpis_out = sent" "$(fault_stat cpis_out)" "$sent"
fault_stop "$TAP_PID"
tail -3 "$T/tap.log"
fault_expect_eq "tap mismatches" "$(fault_tap_field "$T/tap.log" mismatches)" 0
fault_expect_eq "tap gaps" "$(fault_tap_field "$T/tap.log" gaps)" 0
"$PY" - "$T/out.sigmf-meta" "$sent" "$(e2e_conf_get cpi.pulses)" "$(e2e_conf_get cpi.samples)" <<'PYEOF' ||
import json, sys
meta, sent, P, R = sys.argv[1], *map(int, sys.argv[2:])
ks = [int(c["chirp:first_sample"]) // (P * R) for c in json.load(open(meta))["captures"]]
print("delivered %d CPIs, %d distinct; producer sent %d" % (len(ks), len(set(ks)), sent))
if sorted(ks) != list(range(sent)):
    missing = sorted(set(range(sent)) - set(ks))
    sys.exit("lost %s, duplicated %d" % (missing[:10], len(ks) - len(set(ks))))
PYEOF
	e2e_fail "lost or duplicated CPIs across reloads"

# 10 MiB on a normal build; under sanitizers the allocator keeps more (a
# bound 3x as large still catches a leak of ~300 kB per reload, and
# LeakSanitizer checks chirpd's exit).
growth=$((rss1 - rss0)) bound=$((10240 * E2E_SLOW))
[ "$growth" -lt "$bound" ] || e2e_fail "VmRSS grew by $growth kB over $((reloads - 5)) reloads (bound $bound kB)"
e2e_log "VmRSS growth over $((reloads - 5)) reloads: $growth kB (bound $bound kB)"
e2e_stop_chirpd || e2e_fail "chirpd exited $? on SIGTERM"
e2e_pass
