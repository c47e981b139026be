# SPDX-License-Identifier: Apache-2.0
# tests/e2e/lib_fault.sh — helpers for the fault tests (tests/e2e/fault_*.sh),
# on top of lib.sh. Source after lib.sh:
#
#     . "$(dirname "$0")/lib.sh"
#     . "$(dirname "$0")/lib_fault.sh"
#     fault_init producer_kill       # e2e_init + backend + feed/tap defaults
#
# Backend: CHIRP_TEST_BACKEND=cpu|cuda|auto (default cpu) is written into
# [processing] backend by fault_config, so the same scripts run against the
# CUDA backend on a machine with a CUDA device
# (CHIRP_TEST_BACKEND=cuda scripts/test-all.sh).
#
# Every background process started here is registered with e2e_track, so
# lib.sh's EXIT trap kills it; shm rings carry the test's unique prefix and
# are unlinked by the same trap.

FAULT_TOOL=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/fault_tool.py
# Synthetic source shared by chirp-feed and chirp-tap --verify: FAULT_TARGETS
# holds one --target GATE,AMP_DB[,DOPPLER] each, space-separated.
FAULT_TARGETS=${FAULT_TARGETS:-100,0 517,-12 901,-20}
FAULT_TARGET_ARGS=()
for t in $FAULT_TARGETS; do FAULT_TARGET_ARGS+=(--target "$t"); done
FAULT_SNR=${FAULT_SNR:-20}
FAULT_SEED=${FAULT_SEED:-42}

# fault_init NAME — e2e_init, plus the tools every fault test needs.
fault_init() {
	e2e_init "$1"
	e2e_need chirp-feed chirp-tap
	[ -x "$PY" ] || e2e_skip "$PY not found"
	FAULT_BACKEND=${CHIRP_TEST_BACKEND:-cpu}
	case $FAULT_BACKEND in cpu|cuda|auto) ;; *) e2e_fail "CHIRP_TEST_BACKEND=$FAULT_BACKEND: want cpu, cuda or auto";; esac
	if [ "$FAULT_BACKEND" = cuda ] && ! { command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; }; then
		e2e_skip "CHIRP_TEST_BACKEND=cuda but no NVIDIA GPU here"
	fi
}

# fault_config [section.key=value ...] — e2e_config with the test backend.
fault_config() {
	e2e_config processing.backend="$FAULT_BACKEND" "$@"
}

# fault_skip_if_no_cuda — with CHIRP_TEST_BACKEND=cuda, skip (exit 77) on
# a machine without an NVIDIA GPU, or when the running chirpd did not come
# up on the CUDA backend (a CPU-only build). Call after e2e_start_chirpd.
fault_skip_if_no_cuda() {
	[ "$FAULT_BACKEND" = cuda ] || return 0
	e2e_json status | grep -q '"backend": *"cuda"' || e2e_skip "chirpd is not running the CUDA backend"
}

# fault_feed LOG [chirp-feed ARGS...] — start a synthetic feeder on the
# input ring in the background (stderr to LOG); sets FEED_PID.
fault_feed() {
	local log=$1
	shift
	"$CHIRP_FEED" --ring "$IN_RING" -c "$CONF" "${FAULT_TARGET_ARGS[@]}" \
		--snr-db "$FAULT_SNR" --seed "$FAULT_SEED" -q "$@" >>"$log" 2>&1 &
	FEED_PID=$!
	e2e_track "$FEED_PID"
}

# fault_tap LOG [chirp-tap ARGS...] — start a verifying consumer on the
# output ring in the background (stderr to LOG); sets TAP_PID. Every CPI it
# receives is recomputed on the CPU from the synthetic input and compared.
# Returns once the tap holds the consumer role (e2e_wait_consumer), so a
# producer started next cannot overflow the output ring before the tap is
# there (--verify setup takes a while on a loaded machine); needs chirpd
# (the output ring's creator) running.
fault_tap() {
	local log=$1
	shift
	"$CHIRP_TAP" --ring "$OUT_RING" -c "$CONF" --verify "${FAULT_TARGET_ARGS[@]}" \
		--snr-db "$FAULT_SNR" --seed "$FAULT_SEED" -q "$@" >>"$log" 2>&1 &
	TAP_PID=$!
	e2e_track "$TAP_PID"
	e2e_wait_consumer "$OUT_RING" "$TAP_PID"
}

# fault_stop PID [TIMEOUT_S] — SIGTERM, wait (default 10 s, scaled by
# E2E_SLOW), SIGKILL if needed; returns the exit status (137 if killed).
fault_stop() {
	local pid=$1 t=${2:-10} i n
	n=$((t * 10 * ${E2E_SLOW:-1}))
	kill -TERM "$pid" 2>/dev/null
	for ((i = 0; i < n; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
}

# fault_tap_field LOG FIELD — a number from chirp-tap's summary lines:
# received, gaps, missing, verified, mismatches, discontinuities, nonfinite,
# redelivered (the last summary in LOG).
fault_tap_field() {
	local log=$1 f=$2
	case $f in
	received)   sed -n 's/^chirp-tap: received \([0-9]*\),.*/\1/p' "$log";;
	gaps)       sed -n 's/^chirp-tap: received [0-9]*, gaps \([0-9]*\) .*/\1/p' "$log";;
	missing)    sed -n 's/^chirp-tap: received .*(\([0-9]*\) CPIs missing).*/\1/p' "$log";;
	verified)   sed -n 's/^chirp-tap: verified \([0-9]*\),.*/\1/p' "$log";;
	mismatches) sed -n 's/^chirp-tap: verified [0-9]*, mismatches \([0-9]*\).*/\1/p' "$log";;
	discontinuities) sed -n 's/^chirp-tap: \([0-9]*\) upstream discontinuities.*/\1/p' "$log";;
	nonfinite)  sed -n 's/^chirp-tap: .*discontinuities, \([0-9]*\) non-finite.*/\1/p' "$log";;
	redelivered) sed -n 's/^chirp-tap: .* non-finite CPIs, \([0-9]*\) redelivered.*/\1/p' "$log";;
	*) echo "fault_tap_field: unknown field $f" >&2; return 1;;
	esac | tail -n 1 | { read -r v; echo "${v:-0}"; }
}

# fault_feed_field LOG FIELD — sent or dropped, summed over every
# chirp-feed summary line in LOG (several feeders may share a log).
fault_feed_field() {
	local log=$1 f=$2
	case $f in
	sent)    sed -n 's/^chirp-feed: sent \([0-9]*\),.*/\1/p' "$log";;
	dropped) sed -n 's/^chirp-feed: sent [0-9]*, dropped \([0-9]*\) .*/\1/p' "$log";;
	esac | awk '{ s += $1 } END { print s + 0 }'
}

# fault_stat NAME — e2e_stat, but fail the test (with the reason) if chirpd
# does not answer or has no such field.
fault_stat() {
	local v
	v=$(e2e_stat "$1") || e2e_fail "chirpctl --json stats: no field '$1' (or no answer)"
	echo "$v"
}

# fault_wait_stat NAME OP VALUE TIMEOUT_S — wait until stat NAME OP VALUE
# (OP: -ge -gt -eq -le), e.g. fault_wait_stat cpis_out -ge 200 20.
fault_wait_stat() {
	local name=$1 op=$2 want=$3 t=$4 i n v
	n=$((t * 10 * ${E2E_SLOW:-1}))
	for ((i = 0; i < n; i++)); do
		v=$(e2e_stat "$name" 2>/dev/null) && [ "${v%.*}" "$op" "$want" ] && return 0
		sleep 0.1
	done
	e2e_log "stat $name is ${v:-?}, wanted $op $want after ${t}s (x${E2E_SLOW:-1})"
	return 1
}

# fault_alive — chirpd's process exists and it answers ping.
fault_alive() {
	[ -n "$CHIRPD_PID" ] && kill -0 "$CHIRPD_PID" 2>/dev/null || return 1
	timeout 10 "$CHIRPCTL" -s "$SOCK" ping >/dev/null 2>&1
}

# fault_rss_kb PID — resident set size in kB (VmRSS).
fault_rss_kb() {
	awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"
}

# fault_expect_eq WHAT A B — fail unless A = B (integers).
fault_expect_eq() {
	[ "$2" -eq "$3" ] 2>/dev/null || e2e_fail "$1: $2 != $3"
	e2e_log "$1: $2 = $3"
}

# fault_rand LO HI — a random integer in [LO, HI] from $RANDOM (seeded by
# FAULT_RANDOM_SEED when set, so a failing sequence can be replayed).
fault_rand() {
	echo $(($1 + RANDOM % ($2 - $1 + 1)))
}
if [ -n "${FAULT_RANDOM_SEED:-}" ]; then
	RANDOM=$FAULT_RANDOM_SEED
fi

# fault_ring_field RING FIELD — committed, overruns, consumed, held,
# queued or epoch of a ring, read from its shared header by fault_tool.py
# (independent of chirpd's own counters).
fault_ring_field() {
	"$PY" "$FAULT_TOOL" ringstat "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"
}
