#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# daemon_beams.sh — beams end to end on the CPU backend:
#   A. chirpd --check refuses bad arrays and beams with FILE:LINE errors: an
#      array file with a line too many, a NaN in it, a zero-gain
#      calibration, a fan with a beam outside the visible region, more beams
#      than the memory holds; the array's files keep their own FILE:LINE;
#   B. chirpd forms 8 beams of a 16-element half-wave line; chirp-feed sends
#      a target at 4 degrees with the pointing changing every CPI among
#      0, 3 and 70 degrees (70 puts the fan's last beams outside the
#      visible region). Every CPI pointed at 0 or 3 has its list with the
#      target's detection at a monopulse azimuth within 1 degree of 4;
#      every CPI pointed at 70 is skipped: its list empty and flagged, its
#      blocks flagged BAD_POINTING, counted in stats, status and metrics,
#      logged;
#      status shows the fan and the newest pointing;
#   C. a reload changes the fan's direction and count (status follows); a
#      reload with an array file of the wrong length is refused, naming the
#      file, and the running beams stay.
. "$(dirname "$0")/lib.sh"
e2e_init beams
e2e_need chirp-feed chirp-tap

# --- A: bad input, --check -------------------------------------------------------
# check_fails WANT [section.key=value ...] — --check exits 1 and says WANT.
check_fails() {
	local want=$1
	shift
	e2e_config "$@"
	if "$CHIRPD" --check -c "$CONF" >"$T/check.out" 2>&1; then
		e2e_fail "--check accepted $*"
	fi
	grep -qF -- "$want" "$T/check.out" || e2e_fail "--check of $*: want '$want', got: $(cat "$T/check.out")"
}
BEAMS="cpi.channels=4 radar.carrier_hz=3e9 beams.mode=conventional"
# shellcheck disable=SC2086
{
	printf '0 0 0\n0.05 0 0\n0.1 0 0\n0.15 0 0\n0.2 0 0\n' >"$T/five.txt"
	check_fails "[array] file: $T/five.txt:5: more lines than the 4 channels" \
		$BEAMS array.geometry=file array.file="$T/five.txt"
	printf '0 0 0\n0.05 nan 0\n0.1 0 0\n0.15 0 0\n' >"$T/nan.txt"
	check_fails "[array] file: $T/nan.txt:2: y_m: nan is not finite" \
		$BEAMS array.geometry=file array.file="$T/nan.txt"
	printf '1 0\n1 0\n0 30   # a dead channel\n1 0\n' >"$T/cal.txt"
	check_fails "[array] calibration: $T/cal.txt:3: gain 0: must be > 0" \
		$BEAMS array.spacing_m=0.05 array.calibration="$T/cal.txt"
	check_fails "[beams] spacing_u: fan: beam 2 at u 1.03481, v 0: outside the visible region" \
		$BEAMS array.spacing_m=0.05 beams.count=4 beams.spacing_u=0.1 beams.azimuth_deg=80
	check_fails "[beams] count: 256 beams of 128 x 1048576 samples need" \
		$BEAMS array.spacing_m=0.05 cpi.pulses=128 cpi.samples=1048576 input.format=sc16 \
		beams.count=256 beams.spacing_u=0.001 output.mode=none doppler.enable=true cfar.enable=true \
		cfar.integrate=none detections.file="$T/d.jsonl"
	check_fails "[beams] mode: beams need the carrier frequency" \
		cpi.channels=4 beams.mode=conventional array.spacing_m=0.05
}
# the errors carry the configuration's FILE:LINE too
grep -qE "^$CONF:[0-9]+: \[beams\] mode: " "$T/check.out" || e2e_fail "no FILE:LINE: $(cat "$T/check.out")"

# --- B: beams, a target, the pointing per CPI -----------------------------------
DET_RING=/$E2E_UNIQ-det
# with pyzmq, the published maps too: B maps of 8 beams, not the 16 channels
PUB=
"$PY" -c 'import zmq' 2>/dev/null && PUB=1
N=$((150 / E2E_SLOW))
RATE=$((100 / E2E_SLOW))
GATE=200
e2e_config cpi.channels=16 cpi.pulses=8 cpi.samples=512 input.slots=64 output.slots=64 \
	waveform.pulse_width_s=2e-6 waveform.bandwidth_hz=5e6 \
	radar.carrier_hz=3e9 array.spacing_m=0.05 \
	beams.mode=conventional beams.count=8 beams.spacing_u=0.1 \
	doppler.enable=true cfar.enable=true cfar.integrate=none cfar.pfa=1e-6 \
	cfar.max_detections=64 detections.ring=$DET_RING detections.slots=64 \
	output.mode=map_power ${PUB:+publish.listen=tcp://127.0.0.1:* publish.maps_hz=20}
"$CHIRPD" --check -c "$CONF" >"$T/check.out" 2>&1 || e2e_fail "--check: $(cat "$T/check.out")"
e2e_start_chirpd
e2e_ctl --json status | "$PY" -c '
import json, sys
b = json.load(sys.stdin)["beams"]
assert b["mode"] == "conventional" and b["count"] == 8 and b["layout"] == "fan", b
assert abs(b["spacing_u"] - 0.1) < 1e-12 and b["monopulse"], b
assert len(b["directions_deg"]) == 8, b
assert abs(b["directions_deg"][0][0] + 20.487) < 0.01, b   # asin(-0.35)
assert b["bad_pointing_cpis"] == 0, b
' || e2e_fail "status beams: $(e2e_ctl --json status)"

"$CHIRP_TAP" -c "$CONF" -n $N --jsonl --timeout $((60 * E2E_SLOW)) >"$T/tap.jsonl" 2>"$T/tap.log" &
TAP=$!
e2e_track $TAP
"$CHIRP_TAP" -c "$CONF" -n $N --drain --timeout $((60 * E2E_SLOW)) -q 2>"$T/drain.log" &
DRAIN=$!
e2e_track $DRAIN
e2e_wait_consumer "$DET_RING" $TAP
e2e_wait_consumer "$OUT_RING" $DRAIN
if [ -n "$PUB" ]; then
	EP=$(e2e_ctl --json status | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["publish"]["endpoint"])')
	"$PY" "$(dirname "$0")/../../doc/example_subscriber.py" "$EP" --topics map,status \
		--timeout $((30 * E2E_SLOW)) --ready-file "$T/ready" >"$T/sub.jsonl" 2>"$T/sub.log" &
	SUB=$!
	e2e_track $SUB
	e2e_wait 10 test -e "$T/ready" || e2e_fail "the subscriber: $(cat "$T/sub.log")"
fi
"$CHIRP_FEED" -c "$CONF" --array-spacing 0.05 --target $GATE,-30,0,az=4 --snr-db 0 --seed 3 \
	--pointing '0,0;3,0;70,0' -n $N --rate $RATE --block -q 2>"$T/feed.log" ||
	e2e_fail "chirp-feed: $(cat "$T/feed.log")"
wait $TAP || e2e_fail "chirp-tap: $(cat "$T/tap.log")"
wait $DRAIN || e2e_fail "chirp-tap --drain: $(cat "$T/drain.log")"

BAD=$((N / 3))
if [ -n "$PUB" ]; then
	kill $SUB 2>/dev/null
	wait $SUB 2>/dev/null
	"$PY" - "$T/sub.jsonl" <<'PYEOF' || e2e_fail "published maps: $(head -c 1500 "$T/sub.jsonl")"
import json, math, sys
maps = [m for m in map(json.loads, open(sys.argv[1])) if m["topic"] == "map"]
assert maps, "no map message"
for m in maps:
    assert m["channels"] == 8 and m["doppler_bins"] == 8 and math.isfinite(m["max"]), m
print("%d maps of 8 beams published" % len(maps))
PYEOF
fi
"$PY" - "$T/tap.jsonl" $N $GATE <<'PYEOF' || e2e_fail "the lists: $(head -c 2000 "$T/tap.jsonl")"
import json, sys
path, n, gate = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lists = [json.loads(l) for l in open(path)]
assert len(lists) == n, len(lists)
found = bad = 0
err = []
for k, L in enumerate(lists):
    if k % 3 == 2:                      # pointed at 70: skipped
        assert L["skipped"] and L["count"] == 0, L
        bad += 1
        continue
    assert not L["skipped"], L
    hits = [d for d in L["detections"] if abs(d["range_gate"] - gate) <= 1]
    if not hits:
        continue
    d = max(hits, key=lambda d: d["power"])
    assert 0 <= d["beam"] < 8 and d["channel"] == d["beam"], d
    err.append(d["azimuth_deg"] - 4.0)
    found += 1
good = n - bad
assert found >= 0.99 * good, (found, good)
rms = (sum(e * e for e in err) / len(err)) ** 0.5
print("target found in %d of %d pointed CPIs, RMS azimuth error %.3f deg" % (found, good, rms))
assert rms < 1.0, rms
PYEOF
[ "$(e2e_stat bad_pointing_cpis)" = $BAD ] || e2e_fail "bad_pointing_cpis $(e2e_stat bad_pointing_cpis), want $BAD"
e2e_wait 5 grep -q "CPIs pointed where the beams cannot steer" "$CHIRPD_LOG" || e2e_fail "no log line of the bad pointings"
e2e_ctl --json status | "$PY" -c '
import json, sys
b = json.load(sys.stdin)["beams"]
assert b["bad_pointing_cpis"] == int(sys.argv[1]), b
p = b["pointing_deg"]
assert p["elevation"] == 0 and p["azimuth"] in (0.0, 3.0), p   # the newest submitted
' $BAD || e2e_fail "status beams after: $(e2e_ctl --json status)"
e2e_ctl metrics >"$T/metrics.txt" 2>&1 || e2e_fail "chirpctl metrics: $(cat "$T/metrics.txt")"
grep -q "^chirpd_bad_pointing_cpis_total $BAD\$" "$T/metrics.txt" || e2e_fail "metrics: $(grep -i point "$T/metrics.txt")"
grep -q '^chirpd_beams 8$' "$T/metrics.txt" || e2e_fail "metrics: no chirpd_beams 8"

# --- C: a reload changes the fan and the count; a bad array file is refused ---------
e2e_config cpi.channels=16 cpi.pulses=8 cpi.samples=512 input.slots=64 output.slots=64 \
	waveform.pulse_width_s=2e-6 waveform.bandwidth_hz=5e6 \
	radar.carrier_hz=3e9 array.spacing_m=0.05 \
	beams.mode=conventional beams.count=4 beams.spacing_u=0.2 beams.azimuth_deg=10 \
	doppler.enable=true cfar.enable=true cfar.integrate=none cfar.pfa=1e-6 \
	cfar.max_detections=64 detections.ring=$DET_RING detections.slots=64 \
	output.mode=map_power
e2e_ctl reload >"$T/reload.out" 2>&1 || e2e_fail "reload: $(cat "$T/reload.out")"
e2e_ctl --json status | "$PY" -c '
import json, math, sys
b = json.load(sys.stdin)["beams"]
assert b["count"] == 4 and abs(b["spacing_u"] - 0.2) < 1e-12, b
u = [math.sin(math.radians(az)) for az, el in b["directions_deg"]]
u0 = math.sin(math.radians(10))
assert all(abs(x - (u0 + (i - 1.5) * 0.2)) < 1e-9 for i, x in enumerate(u)), b
' || e2e_fail "status after the reload: $(e2e_ctl --json status)"
printf '0 0 0\n' >"$T/one.txt"
e2e_config cpi.channels=16 cpi.pulses=8 cpi.samples=512 input.slots=64 output.slots=64 \
	waveform.pulse_width_s=2e-6 waveform.bandwidth_hz=5e6 \
	radar.carrier_hz=3e9 array.geometry=file array.file="$T/one.txt" \
	beams.mode=conventional beams.count=4 beams.spacing_u=0.2 \
	doppler.enable=true cfar.enable=true cfar.integrate=none \
	cfar.max_detections=64 detections.ring=$DET_RING detections.slots=64 \
	output.mode=map_power
if e2e_ctl reload >"$T/reload.out" 2>&1; then e2e_fail "a reload with a one-line array file for 16 channels passed"; fi
grep -qF "$T/one.txt" "$T/reload.out" || e2e_fail "the refused reload does not name the file: $(cat "$T/reload.out")"
[ "$(e2e_state)" = running ] || e2e_fail "not running after a refused reload"
e2e_ctl --json status | "$PY" -c '
import json, sys
assert json.load(sys.stdin)["beams"]["count"] == 4
' || e2e_fail "the refused reload changed the beams"
e2e_pass
