#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# tools_verify.sh — chirp-tap --verify, the check end-to-end tests use to
# prove chirpd processed every CPI correctly, tested without chirpd: an
# independent numpy reference (direct correlation in double precision of
# the synthetic echoes with the Hamming-windowed LFM) is fed raw into an
# output ring; the tap must accept it for complex, magnitude and power_db
# output, and must reject a CPI changed by 0.1 %; blocks flagged
# UNKNOWN_MODE are counted when right and caught when wrong.
. "$(dirname "$0")/tools_lib.inc"
tools_init tools_verify
SRC=$(cd "$(dirname "$0")/../.." && pwd)

cd "$T" || exit 1
TGT=(--target 100,-6 --target 437,-20,0.125/pulse --target 990,-12 --noiseless)   # the reference has no noise
N=5

for mode in complex magnitude power_db; do
	e2e_config output.ring="$OUT_RING" output.mode=$mode output.slots=4
	"$PY" - "$mode" $N <<'PYEOF' || e2e_fail "reference failed"
import sys
import numpy as np
mode, N = sys.argv[1], int(sys.argv[2])
C, P, R = 2, 8, 1000
fs, B, tau = 25e6, 10e6, 4e-6
L = int(round(tau * fs))
t = np.arange(L) / fs - tau / 2
s = np.exp(1j * np.pi * (B / tau) * t * t)               # transmitted pulse
w = 0.54 - 0.46 * np.cos(2 * np.pi * np.arange(L) / (L - 1))
h = w * s                                                 # windowed reference
g = 1 / np.linalg.norm(h)                                 # normalize = noise
targets = [(100, -6, 0.0), (437, -20, 0.125), (990, -12, 0.0)]
out = []
for k in range(N):
    x = np.zeros((C, P, R), complex)
    for p in range(P):
        n = k * P + p
        for gate, adb, dop in targets:
            a = 10 ** (adb / 20) * np.exp(2j * np.pi * dop * n)
            m = min(L, R - gate)
            x[:, p, gate:gate + m] += a * s[:m]
    y = np.zeros_like(x)
    for d in range(R):                                    # direct correlation
        m = min(L, R - d)
        y[..., d] = g * (x[..., d:d + m] * np.conj(h[:m])).sum(-1)
    if mode == "complex":
        out.append(y.astype(np.complex64).view(np.float32))
    elif mode == "magnitude":
        out.append(np.abs(y).astype(np.float32))
    else:
        out.append((10 * np.log10(np.maximum(np.abs(y) ** 2, 1e-30))).astype(np.float32))
    if k == 0:
        # peaks where the targets are
        prof = np.abs(y[0, 0])
        for gate, _, _ in targets[:2]:   # 990 is truncated at the row end
            assert prof[gate] == prof[max(gate - 3, 0):gate + 4].max(), gate
np.concatenate([o.ravel() for o in out]).tofile("ref.raw")
bad = np.concatenate([o.ravel() for o in out])
cpi = bad.size // N
if mode == "power_db":
    bad[3 * cpi:4 * cpi] += np.float32(10 * np.log10(1.001 ** 2))
else:
    bad[3 * cpi:4 * cpi] *= np.float32(1.001)
bad.tofile("bad.raw")
PYEOF
	fmt=cf32; [ $mode = complex ] || fmt=rf32
	# The tap creates the output ring from the configuration (as chirpd would).
	"$CHIRP_TAP" -c "$CONF" --create -n $N --verify "${TGT[@]}" --timeout $((60 * E2E_SLOW)) >tap.log 2>&1 &
	tp=$!; e2e_track $tp
	wait_ring "$OUT_RING"
	"$CHIRP_FEED" -r "$OUT_RING" --file ref.raw --block >feed.log 2>&1 || { cat feed.log; e2e_fail "feed failed"; }
	wait_pid $tp 60 || { cat tap.log; e2e_fail "$mode: --verify rejected the reference"; }
	grep -q "verified $N, mismatches 0" tap.log || e2e_fail "$mode: $(cat tap.log)"

	"$CHIRP_TAP" -c "$CONF" --create -n $N --verify "${TGT[@]}" --timeout $((60 * E2E_SLOW)) >tap.log 2>&1 &
	tp=$!; e2e_track $tp
	wait_ring "$OUT_RING"
	"$CHIRP_FEED" -r "$OUT_RING" --file bad.raw --block >feed.log 2>&1 || e2e_fail "feed failed"
	wait_pid $tp 60; rc=$?
	[ $rc -eq 4 ] || { cat tap.log; e2e_fail "$mode: a CPI off by 0.1 % verified (rc $rc)"; }
	grep -q "verified 4, mismatches 1" tap.log || e2e_fail "$mode: $(cat tap.log)"
	grep -q "seq 3 (CPI 3, mode 0): relative L2 error" tap.log || e2e_fail "$mode: $(cat tap.log)"
	e2e_log "$mode: reference verified, corrupted CPI caught"
done

# Wrong targets: every CPI mismatches.
"$CHIRP_TAP" -c "$CONF" --create -n $N --verify --target 101,-6 --noiseless --timeout $((60 * E2E_SLOW)) >tap.log 2>&1 &
tp=$!; e2e_track $tp
wait_ring "$OUT_RING"
"$CHIRP_FEED" -r "$OUT_RING" --file ref.raw --block >feed.log 2>&1
wait_pid $tp 60; rc=$?
[ $rc -eq 4 ] && grep -q "mismatches $N" tap.log || { cat tap.log; e2e_fail "wrong targets verified (rc $rc)"; }

# Blocks of an unknown radar mode (made by a Python producer with the
# chirpring package, as chirpd would make them, and wrongly): a flagged
# block of an undeclared mode with an all-NaN payload is counted, not a
# mismatch; one whose payload is not all NaN (zeros), one flagged although its mode
# (0, [waveform]) is configured, and an unflagged one of an undeclared
# mode are mismatches.
if "$PY" -c 'import numpy' 2>/dev/null && [ -f "$BUILD/lib/libchirpring.so.3" ]; then
	PRE=
	case $BUILD in
	*asan*)
		for r in libasan.so libubsan.so; do
			f=$(cc -print-file-name=$r) && [ -f "$f" ] && PRE="$PRE${PRE:+:}$f"
		done
		export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0";;
	esac
	e2e_config output.ring="$OUT_RING" output.mode=complex output.slots=4
	"$CHIRP_TAP" -c "$CONF" --create -n 4 --verify "${TGT[@]}" --timeout $((60 * E2E_SLOW)) >tap.log 2>&1 &
	tp=$!; e2e_track $tp
	wait_ring "$OUT_RING"
	case $BUILD in *tsan*) PRE=skip;; esac
	if [ "$PRE" != skip ]; then
		env ${PRE:+LD_PRELOAD=$PRE} PYTHONPATH="$SRC/src/ring/python" \
			CHIRPRING_LIBRARY="$BUILD/lib/libchirpring.so.3" "$PY" - "$OUT_RING" <<'PYEOF' ||
import sys
import chirpring
U = chirpring.UNKNOWN_MODE
with chirpring.Producer(sys.argv[1]) as ring:
    g = ring.geometry
    for k, (mode, flags, val) in enumerate([(7, U, float('nan')), (7, U, 0), (0, U, float('nan')), (7, 0, float('nan'))]):
        buf = ring.reserve(block=True)
        buf.view('<f4')[...] = val   # every float32: a payload as chirpd writes it
        ring.commit(first_sample=k * g.pulses * g.samples, flags=flags, mode=mode)
PYEOF
			e2e_fail "python producer failed"
		wait_pid $tp 60; rc=$?
		[ $rc -eq 4 ] || { cat tap.log; e2e_fail "unknown-mode blocks: rc $rc, want 4"; }
		for pat in "verified 0, mismatches 3, unknown mode 3" \
			"unknown mode: seq 0 is of mode 7" \
			"seq 1 (mode 7, UNKNOWN_MODE): payload is not all NaN" \
			"seq 2 is flagged UNKNOWN_MODE but its mode 0 is 'default'" \
			"seq 3 (CPI 3): mode 7 is not in .* but the block is not flagged UNKNOWN_MODE"; do
			grep -q "$pat" tap.log || { cat tap.log; e2e_fail "no '$pat'"; }
		done
		e2e_log "unknown-mode blocks: counted when right, caught when wrong"
	else
		e2e_log "unknown-mode blocks not checked: python cannot load this build's library"
	fi
else
	e2e_log "unknown-mode blocks not checked: no numpy or no $BUILD/lib/libchirpring.so.3"
fi

e2e_pass
