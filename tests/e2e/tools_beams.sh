#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# tools_beams.sh — the tools on chirpd's beams (CPU backend): 8 beams of a
# 16-element half-wave line ([array] spacing_m of the configuration, which
# chirp-feed reads too: no array option), a target at 4 degrees, the
# pointing changing every CPI among 0, 3 and 70 degrees (70 puts beams
# outside the visible region):
#   - chirp-tap --verify-targets --expect-angle 4 counts every processed
#     CPI's target within a degree of 4 and prints the RMS error; replayed,
#     the same lists fail --expect-angle 10 (exit 4);
#   - chirp-tap --blocks on the output: each block's pointing, the CPIs per
#     pointing, the blocks flagged BAD_POINTING reported and counted;
#   - chirp-plot --map --bscope of a recorded CPI: the peak in beam 4 (the
#     beam nearest 4 degrees) at the target's gate, the detection printed
#     with its azimuth; --per-beam draws every beam;
#   - chirp-tap --verify recomputes every CPI's beams on the CPU reference
#     at the block's pointing; the blocks pointed at 70 degrees are checked
#     flagged BAD_POINTING and all NaN.
. "$(dirname "$0")/lib.sh"
e2e_init tools_beams
e2e_need chirp-feed chirp-tap

DET_RING=/$E2E_UNIQ-det
N=$((90 / E2E_SLOW))
N=$((N - N % 3))
RATE=$((100 / E2E_SLOW))
GATE=200
e2e_config cpi.channels=16 cpi.pulses=8 cpi.samples=512 input.slots=64 output.slots=64 \
	waveform.pulse_width_s=2e-6 waveform.bandwidth_hz=5e6 \
	radar.carrier_hz=3e9 array.spacing_m=0.05 \
	beams.mode=conventional beams.count=8 beams.spacing_u=0.1 \
	doppler.enable=true cfar.enable=true cfar.integrate=none cfar.pfa=1e-6 \
	cfar.max_detections=64 detections.ring=$DET_RING detections.slots=64 \
	output.mode=map_db
e2e_start_chirpd

# 1. Through chirpd: the lists' angles, the blocks' pointing.
"$CHIRP_TAP" -c "$CONF" -n $N --jsonl --out "$T/det.raw" --verify-targets $GATE:0 \
	--verify-tolerance 1,0 --verify-min 0.6 --expect-angle 4 --angle-tolerance 1 \
	--timeout $((60 * E2E_SLOW)) >"$T/det.jsonl" 2>"$T/det.log" &
TAP=$!
e2e_track $TAP
"$CHIRP_TAP" -c "$CONF" -n $N --blocks --sigmf "$T/cap" --timeout $((60 * E2E_SLOW)) -q \
	>"$T/blocks.txt" 2>"$T/blocks.log" &
BTAP=$!
e2e_track $BTAP
e2e_wait_consumer "$DET_RING" $TAP
e2e_wait_consumer "$OUT_RING" $BTAP
"$CHIRP_FEED" -c "$CONF" --target $GATE,-30,0,az=4 --snr-db 0 --seed 3 \
	--pointing '0,0;3,0;70,0' -n $N --rate $RATE --block -q 2>"$T/feed.log" ||
	e2e_fail "chirp-feed: $(cat "$T/feed.log")"
wait $TAP || e2e_fail "chirp-tap --expect-angle 4 (rc $?): $(cat "$T/det.log")"
wait $BTAP || e2e_fail "chirp-tap --blocks: $(cat "$T/blocks.log")"
cat "$T/det.log"
good=$((N * 2 / 3))
"$PY" - "$T/det.log" $N $good <<'PYEOF' || e2e_fail "expect-angle summary: $(cat "$T/det.log")"
import re, sys
log, n, good = open(sys.argv[1]).read(), int(sys.argv[2]), int(sys.argv[3])
m = re.search(r"expect-angle: (\d+) of (\d+) CPIs .* within 1 deg of 4 .* azimuth RMS error ([\d.e-]+) deg over (\d+) detections", log)
assert m, log
hits, lists, rms, dets = int(m.group(1)), int(m.group(2)), float(m.group(3)), int(m.group(4))
assert lists == n and hits >= 0.97 * good and dets >= hits, (hits, lists, dets)
assert rms < 0.5, rms
PYEOF
k=$((N / 3))
grep -q "CPIs per pointing: 0,0: $k, 3,0: $k, 70,0: $k" "$T/blocks.log" ||
	e2e_fail "per-pointing counts: $(cat "$T/blocks.log")"
grep -q "chirp-tap: $k blocks not processed for their pointing (flagged BAD_POINTING)" "$T/blocks.log" ||
	e2e_fail "BAD_POINTING count: $(cat "$T/blocks.log")"
grep -q "^bad pointing: seq 2 (mode 0) is pointed at 70,0, which chirpd cannot steer" "$T/blocks.log" ||
	e2e_fail "BAD_POINTING line: $(head -5 "$T/blocks.log")"
grep -q "^block seq=2 mode=0 pointing=70,0 first_sample=[0-9]* flags=0x2[0-9a-f]$" "$T/blocks.txt" ||
	grep -q "^block seq=2 mode=0 pointing=70,0 first_sample=[0-9]* flags=0x20$" "$T/blocks.txt" ||
	e2e_fail "block line: $(sed -n 3p "$T/blocks.txt")"
e2e_log "expect-angle 4: $(grep -o 'expect-angle: [0-9]* of [0-9]* CPIs' "$T/det.log"), pointing per block and BAD_POINTING reported"

# 2. The same lists against a wrong angle: exit 4.
"$CHIRP_TAP" -r /$E2E_UNIQ-rep --create --geometry 1,1,64 --format det -n $N \
	--verify-targets $GATE:0 --verify-tolerance 1,0 --verify-min 0.6 --expect-angle 10 \
	--timeout $((30 * E2E_SLOW)) 2>"$T/wrong.log" &
RTAP=$!
e2e_track $RTAP
e2e_wait_consumer /$E2E_UNIQ-rep $RTAP
"$CHIRP_FEED" -r /$E2E_UNIQ-rep --file "$T/det.raw" --block -q 2>"$T/feed2.log" ||
	e2e_fail "replay of the lists: $(cat "$T/feed2.log")"
wait $RTAP
rc=$?
[ $rc = 4 ] || e2e_fail "--expect-angle 10 exited $rc, want 4: $(cat "$T/wrong.log")"
grep -q "expect-angle: 0 of $N CPIs" "$T/wrong.log" || e2e_fail "wrong angle: $(cat "$T/wrong.log")"
e2e_log "expect-angle 10: refused (exit 4)"

# 3. chirp-plot's B-scope of CPI 0 (pointed at boresight): beams at
#    u = (b - 3.5) 0.1, so 4 degrees (u 0.070) is nearest beam 4 (u 0.05).
if "$PY" -c 'import numpy, matplotlib' 2>/dev/null; then
	PLOT=$(cd "$(dirname "$0")/../.." && pwd)/scripts/chirp-plot
	AZ=$("$PY" -c 'import math; print(",".join("%.4f" % math.degrees(math.asin((b - 3.5) * 0.1)) for b in range(8)))')
	out=$("$PLOT" --map "$T/cap" --cpi 0 --bscope --beam-az="$AZ" --detections "$T/det.jsonl" \
		-o "$T/bscope.png" --json "$T/bscope.json") || e2e_fail "chirp-plot --bscope: $out"
	echo "$out" | grep -qE "^peak: beam 4 gate (199|200|201) " || e2e_fail "B-scope peak: $out"
	echo "$out" | grep -qE "^detection: beam 4 gate (199|200|201) bin 0 .* az [34]\.[0-9]+ " ||
		e2e_fail "B-scope detection: $out"
	"$PLOT" --map "$T/cap" --cpi 0 --per-beam -o "$T/beams.png" >/dev/null ||
		e2e_fail "chirp-plot --per-beam"
	[ -s "$T/bscope.png" ] && [ -s "$T/beams.png" ] || e2e_fail "no PNG"
	e2e_log "chirp-plot: B-scope peak in beam 4 at gate $GATE, per-beam maps"
else
	e2e_log "chirp-plot not run: $PY lacks numpy/matplotlib"
fi

# 4. chirp-tap --verify: every CPI's beams recomputed by the CPU reference
#    at that CPI's pointing (the array of [array], as chirpd forms them);
#    a CPI pointed at 70 degrees must come flagged BAD_POINTING, all NaN.
"$CHIRP_TAP" -c "$CONF" -n $N --verify --target $GATE,-30,0,az=4 --snr-db 0 --seed 3 \
	--timeout $((60 * E2E_SLOW)) -q >"$T/verify.txt" 2>"$T/verify.log" &
VTAP=$!
e2e_track $VTAP
e2e_wait_consumer "$OUT_RING" $VTAP
"$CHIRP_FEED" -c "$CONF" --target $GATE,-30,0,az=4 --snr-db 0 --seed 3 \
	--pointing '0,0;3,0;70,0' -n $N --rate $RATE --block -q 2>"$T/feed3.log" ||
	e2e_fail "chirp-feed: $(cat "$T/feed3.log")"
wait $VTAP || e2e_fail "chirp-tap --verify with beams (rc $?): $(cat "$T/verify.log")"
grep -q "verified $N, mismatches 0" "$T/verify.log" ||
	e2e_fail "verify summary: $(cat "$T/verify.log")"
e2e_log "verify: $(grep -i verif "$T/verify.log" | head -1)"
e2e_pass
