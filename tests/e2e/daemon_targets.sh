#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# daemon_targets.sh — the whole path: the real chirpd on a generated config,
# chirp-feed sending synthetic targets, chirp-tap reading the results; every
# target must peak at its gate in every channel and pulse of every CPI, for
# complex and power_db output and for cf32 and sc16 input.
. "$(dirname "$0")/lib.sh"
e2e_init targets
e2e_need chirp-feed chirp-tap
[ -x "$PY" ] || e2e_skip "$PY not found"

TARGETS=(--target 120,-6 --target 400,-14 --target 777,-20)
N=24   # results a case makes; its output ring (32 slots) holds them all, so a tap
       # descheduled for a while on a loaded box loses none (chirpd never blocks)
C=2 P=8 R=1000

# run_case FORMAT MODE — fresh rings per case: a producer re-attaching to a
# used ring marks its first block DISCONTINUITY (ring.c), which --fail-on-gap
# would count.
run_case() {
	local fmt=$1 mode=$2 raw=$T/out-$1-$2.raw
	shift 2
	e2e_config "$@" output.slots=32 input.format="$fmt" output.mode="$mode" input.ring="$IN_RING-$fmt-$mode" output.ring="$OUT_RING-$fmt-$mode" cpi.channels=$C cpi.pulses=$P cpi.samples=$R
	e2e_start_chirpd
	# Consumer first, so no result meets an empty output ring.
	"$CHIRP_TAP" -c "$CONF" -n $N --out "$raw" --timeout $((30 * E2E_SLOW)) -q --fail-on-gap \
		2>"$T/tap.log" &
	local tap=$!
	e2e_track $tap
	e2e_wait_consumer "$(e2e_conf_get output.ring)" $tap
	"$CHIRP_FEED" -c "$CONF" "${TARGETS[@]}" --snr-db 30 --seed 7 -n $N --rate 100 --block -q \
		2>"$T/feed.log" || e2e_fail "chirp-feed failed: $(cat "$T/feed.log")"
	wait $tap || e2e_fail "chirp-tap exited $?: $(cat "$T/tap.log")"
	e2e_wait 5 e2e_stat_ge cpis_out $N || e2e_fail "chirpd cpis_out $(e2e_stat cpis_out) < $N"
	[ "$(e2e_stat sequence_gaps)" = 0 ] || e2e_fail "sequence gaps"
	[ "$(e2e_stat output_drops)" = 0 ] || e2e_fail "output drops"
	e2e_stop_chirpd || e2e_fail "chirpd exited $? on SIGTERM"
	"$PY" - "$raw" "$mode" $N $C $P $R "${TARGETS[*]}" <<'PYEOF' || e2e_fail "peak check ($fmt, $mode)"
import sys
import numpy as np
raw, mode, n, c, p, r, targets = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:7]), sys.argv[7]
gates = [int(t.split(',')[0]) for t in targets.split() if t != '--target']
if mode == 'complex':
    y = np.fromfile(raw, dtype=np.complex64)
    mag_db = 20 * np.log10(np.abs(y) + 1e-30)
elif mode == 'magnitude':
    mag_db = 20 * np.log10(np.fromfile(raw, dtype=np.float32) + 1e-30)
else:
    mag_db = np.fromfile(raw, dtype=np.float32).astype(np.float64)
assert mag_db.size == n * c * p * r, f"{mag_db.size} values, expected {n*c*p*r}"
rows = mag_db.reshape(n * c * p, r)
bad = 0
for g in gates:
    lo, hi = max(0, g - 25), min(r, g + 26)
    arg = lo + np.argmax(rows[:, lo:hi], axis=1)
    floor = np.median(rows, axis=1)
    miss = np.nonzero((arg != g) | (rows[:, g] - floor < 20))[0]
    if miss.size:
        bad += miss.size
        k = miss[0]
        print(f"gate {g}: {miss.size} of {rows.shape[0]} rows wrong; row {k} peaks at {arg[k]}, "
              f"{rows[k, g] - floor[k]:.1f} dB over the median")
print(f"{rows.shape[0]} rows x {len(gates)} targets checked, {bad} wrong")
sys.exit(1 if bad else 0)
PYEOF
	if [ -n "$(e2e_conf_get output.file)" ]; then
		# [output] file holds exactly what the ring delivered
		cmp "$raw" "$(e2e_conf_get output.file)" || e2e_fail "[output] file differs from the ring's results"
		e2e_log "[output] file identical to the $N results read from the ring"
	fi
	rm -f "$raw"
}

run_case cf32 complex output.file="$T/file.raw"
run_case sc16 power_db
run_case cf32 magnitude
e2e_pass
