#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# systemd_sandbox.sh — chirpd does what the unit's hardening allows, checked
# without systemd:
#  1. MemoryDenyWriteExecute: chirpd runs a verified feed -> chirpd -> tap
#     round trip and every control command under the same restriction
#     (tests/e2e/mdwe_exec.c); with a GPU, test_pc_cuda gives the same
#     results with and without it (cuFFT, PTX JIT).
#  2. SystemCallFilter: every system call chirpd makes in that workload
#     (strace -f) is in the unit's filter, @system-service minus
#     @privileged plus @chown, as this host's systemd expands them.
# With a GPU (/dev/nvidiactl and a CUDA build) chirpd runs the cuda backend,
# so CUDA's own calls are audited too. CHIRP_SYSCALL_ALLOWED=FILE gives the
# allowed list (one name a line) on a host without systemd-analyze, and
# CHIRP_MDWE_EXEC a prebuilt mdwe_exec on one without a compiler.
# Production build only (sanitizer runtimes make their own calls): skipped
# (77) on build-asan/build-tsan, and without a C compiler or x86-64.
. "$(dirname "$0")/lib.sh"
e2e_init sandbox
e2e_need chirp-feed chirp-tap
case $(basename "$BUILD") in *asan*|*tsan*) e2e_skip "audits the production build only (sanitizer runtimes make extra calls)";; esac
[ "$(uname -m)" = x86_64 ] || e2e_skip "mdwe_exec's filter is x86-64 only"
SRC=$(cd "$(dirname "$0")" && pwd)
if [ -n "${CHIRP_MDWE_EXEC:-}" ]; then   # prebuilt, for a host without a compiler
	cp "$CHIRP_MDWE_EXEC" "$T/mdwe_exec" || e2e_fail "cannot copy $CHIRP_MDWE_EXEC"
else
	command -v cc >/dev/null || e2e_skip "no C compiler for mdwe_exec"
	cc -std=gnu11 -O2 -Wall -Wextra -Werror -o "$T/mdwe_exec" "$SRC/mdwe_exec.c" || e2e_fail "mdwe_exec does not build"
fi
"$T/mdwe_exec" both --selftest || e2e_fail "the restriction is not in force"

REAL_CHIRPD=$CHIRPD
PORT=$((20000 + $$ % 20000))
BACKEND=cpu
[ -e /dev/nvidiactl ] && [ -x "$BUILD/tests/test_pc_cuda" ] && BACKEND=cuda
TARGETS=(--target 150,-6 --target 600,-18,0.0625/pulse)
N=20
slots_for() { local s=2; while [ $s -lt "$1" ]; do s=$((s * 2)); done; echo $s; }

# workload — round trip checked by chirp-tap --verify, then every command,
# a reload, the metrics endpoint.
workload() {
	"$CHIRP_TAP" -c "$CONF" -n $N --verify "${TARGETS[@]}" --snr-db 25 --seed 5 \
		--timeout $((30 * E2E_SLOW)) --fail-on-gap -q 2>"$T/tap.log" &
	local tap=$!
	e2e_track $tap
	e2e_wait_consumer "$(e2e_conf_get output.ring)" $tap
	"$CHIRP_FEED" -c "$CONF" "${TARGETS[@]}" --snr-db 25 --seed 5 -n $N --block -q \
		2>"$T/feed.log" || e2e_fail "chirp-feed failed: $(cat "$T/feed.log")"
	wait $tap || e2e_fail "chirp-tap --verify exited $?: $(cat "$T/tap.log")"
	grep -q "verified $N, mismatches 0" "$T/tap.log" || e2e_fail "tap: $(cat "$T/tap.log")"
	local c
	for c in ping version status stats config metrics help "log-level debug" pause resume reload; do
		# shellcheck disable=SC2086
		e2e_ctl $c >"$T/ctl.log" 2>&1 || e2e_fail "chirpctl $c: $(cat "$T/ctl.log")"
	done
	if command -v curl >/dev/null; then
		curl -sf "http://127.0.0.1:$PORT/metrics" >"$T/metrics.txt" || e2e_fail "metrics endpoint did not answer"
		grep -q '^chirpd_' "$T/metrics.txt" || e2e_fail "metrics: no chirpd_ series"
	fi
}

# The settings that make chirpd use the calls the unit grants: NUMA
# binding, SCHED_FIFO (preferred: a refusal is a warning), mlockall, the
# metrics listener. The output ring holds all N results: chirpd (SCHED_FIFO)
# turns the feed's burst into results faster than the verifying tap may be
# scheduled on a loaded 2-core box, and the producer never blocks, so a
# 16-slot ring lost the last results there ("16 of 20 CPIs arrived").
e2e_config processing.backend=$BACKEND numa.node=auto numa.realtime=preferred numa.lock_memory=true daemon.control_group="$(id -gn)" \
	output.slots="$(slots_for $N)" metrics.listen=127.0.0.1:$PORT

# --- 1. MemoryDenyWriteExecute ------------------------------------------------
printf '#!/bin/sh\nexec "%s" both "%s" "$@"\n' "$T/mdwe_exec" "$REAL_CHIRPD" >"$T/chirpd-mdwe"
chmod +x "$T/chirpd-mdwe"
CHIRPD=$T/chirpd-mdwe
e2e_start_chirpd
workload
e2e_stop_chirpd || e2e_fail "chirpd under MemoryDenyWriteExecute exited $? on SIGTERM"
e2e_log "MemoryDenyWriteExecute: $BACKEND backend: round trip verified, all commands ok"
CHIRPD=$REAL_CHIRPD

gpu=0
if [ -x "$BUILD/tests/test_pc_cuda" ] && [ -e /dev/nvidiactl ]; then
	"$BUILD/tests/test_pc_cuda" >"$T/cuda-plain.log" 2>&1
	"$T/mdwe_exec" both "$BUILD/tests/test_pc_cuda" >"$T/cuda-mdwe.log" 2>&1
	res() { grep -E '^\[ +(OK|FAILED|SKIPPED) +\] test_' "$1" | sort -u; }
	diff <(res "$T/cuda-plain.log") <(res "$T/cuda-mdwe.log") ||
		e2e_fail "test_pc_cuda differs under MemoryDenyWriteExecute"
	grep -q '^\[       OK \]' "$T/cuda-mdwe.log" || e2e_fail "test_pc_cuda passed nothing under MemoryDenyWriteExecute"
	gpu=1
	e2e_log "MemoryDenyWriteExecute: test_pc_cuda results identical ($(res "$T/cuda-mdwe.log" | grep -c OK) ok)"
else
	e2e_log "no GPU: CUDA under MemoryDenyWriteExecute not checked here"
fi

# --- 2. system calls -------------------------------------------------------------
command -v strace >/dev/null || { [ $gpu = 1 ] && e2e_pass; e2e_skip "system-call audit needs strace (MemoryDenyWriteExecute part passed)"; }
if [ -n "${CHIRP_SYSCALL_ALLOWED:-}" ]; then
	sort -u "$CHIRP_SYSCALL_ALLOWED" >"$T/allowed.list"
else
	command -v systemd-analyze >/dev/null || { [ $gpu = 1 ] && e2e_pass; e2e_skip "system-call audit needs systemd-analyze (MemoryDenyWriteExecute part passed)"; }
	expand() {   # expand @group — its system calls, nested groups expanded
		systemd-analyze syscall-filter "$1" | awk 'NR > 1 && NF && $1 !~ /^#/ { print $1 }' |
		while read -r s; do
			case $s in @*) expand "$s";; *) echo "$s";; esac
		done
	}
	expand @system-service | sort -u >"$T/service.list"
	expand @privileged | sort -u >"$T/privileged.list"
	expand @chown | sort -u >"$T/chown.list"
	{ comm -23 "$T/service.list" "$T/privileged.list"; cat "$T/chown.list"; } | sort -u >"$T/allowed.list"
fi
[ "$(wc -l <"$T/allowed.list")" -gt 100 ] || e2e_fail "could not expand the filter ($(wc -l <"$T/allowed.list") calls)"

# Fresh rings: a producer re-attaching to a used ring marks a discontinuity.
e2e_config processing.backend=$BACKEND numa.node=auto numa.realtime=preferred numa.lock_memory=true daemon.control_group="$(id -gn)" \
	output.slots="$(slots_for $N)" metrics.listen=127.0.0.1:$PORT input.ring="$IN_RING-2" output.ring="$OUT_RING-2"
strace -f -qq -o "$T/trace" "$REAL_CHIRPD" -c "$CONF" >>"$CHIRPD_LOG" 2>&1 &
CHIRPD_PID=$!
e2e_wait_ready
workload
real=$(pgrep -P "$CHIRPD_PID" | head -1)
[ -n "$real" ] || e2e_fail "cannot find chirpd under strace"
kill -TERM "$real"
wait "$CHIRPD_PID"; rc=$?
CHIRPD_PID=
[ $rc -eq 0 ] || e2e_fail "chirpd under strace exited $rc"
sed -nE 's/^[0-9]+ +([a-z0-9_]+)\(.*/\1/p' "$T/trace" | sort -u >"$T/used.list"
[ "$(wc -l <"$T/used.list")" -gt 20 ] || e2e_fail "strace recorded only $(wc -l <"$T/used.list") distinct calls"
denied=$(comm -23 "$T/used.list" "$T/allowed.list" | tr '\n' ' ')
e2e_log "$BACKEND backend: chirpd made $(wc -l <"$T/used.list") distinct system calls; the unit's filter allows $(wc -l <"$T/allowed.list")"
[ -z "$denied" ] || e2e_fail "calls outside SystemCallFilter (they would fail with EPERM): $denied"
e2e_pass
