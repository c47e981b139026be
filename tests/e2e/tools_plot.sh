#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# tools_plot.sh — scripts/chirp-plot on a synthetic compressed capture made
# with the tools (numpy writes compressed CPIs with targets at known gates,
# chirp-feed puts them in a ring, chirp-tap --sigmf records them): the
# picture is written and the annotated peaks are the targets, in gates and
# metres, for complex (cf32) and power_db (rf32) captures; maps of beams
# draw as a B-scope and per beam; a bad capture is refused.
. "$(dirname "$0")/tools_lib.inc"
tools_init tools_plot
"$PY" -c 'import numpy, matplotlib' 2>/dev/null || e2e_skip "/usr/bin/python3 lacks numpy/matplotlib"
PLOT=$(cd "$(dirname "$0")/../.." && pwd)/scripts/chirp-plot

cd "$T" || exit 1
RING=/$E2E_UNIQ-a
C=2 P=16 R=900 N=6 FS=20e6
# channel 1: targets at 120, 333, 701 (701 weakest); channel 0: one at 50.
"$PY" - $C $P $R $N <<'PYEOF' || e2e_fail "making the capture failed"
import sys
import numpy as np
C, P, R, N = map(int, sys.argv[1:])
rng = np.random.default_rng(7)
gates = np.arange(R)
def resp(g0, amp):   # a compressed point target: sinc mainlobe and sidelobes
    return amp * np.sinc((gates - g0) / 2.5)
y = (rng.normal(size=(N, C, P, R)) + 1j * rng.normal(size=(N, C, P, R))) * np.sqrt(0.5)
y[:, 1] += resp(120, 100) + resp(333, 40) + resp(701, 15)
y[:, 0] += resp(50, 100)
y.astype(np.complex64).tofile("c.raw")
(10 * np.log10(np.abs(y) ** 2)).astype(np.float32).tofile("p.raw")
PYEOF

record() {   # record FORMAT MODE RAW BASE
	"$CHIRP_TAP" -r "$RING" --create --geometry $C,$P,$R --format "$1" --mode "$2" --sample-rate $FS \
		-n $N --sigmf "$4" --timeout $((30 * E2E_SLOW)) >tap.log 2>&1 &
	local tp=$!
	e2e_track $tp
	wait_ring "$RING"
	"$CHIRP_FEED" -r "$RING" --file "$3" --block >feed.log 2>&1 || { cat feed.log; e2e_fail "feed failed"; }
	wait_pid $tp 30 || { cat tap.log; e2e_fail "tap failed"; }
}

check_peaks() {   # check_peaks JSON GATE... — the peaks are these gates, in order
	"$PY" - "$@" <<'PYEOF'
import json, sys
j = json.load(open(sys.argv[1]))
want = [int(g) for g in sys.argv[2:]]
got = [p["gate"] for p in j["peaks"]]
assert got == want, (got, want)
for p in j["peaks"]:
    m = p["gate"] * 299792458.0 / (2 * 20e6)
    assert abs(p["range_m"] - m) < 0.01, p
PYEOF
}

record cf32 complex c.raw cap
out=$("$PLOT" cap.sigmf-meta -o cap.png --channel 1 --peaks 3 --json peaks.json) ||
	e2e_fail "chirp-plot failed: $out"
echo "$out"
[ -s cap.png ] || e2e_fail "no PNG"
[ "$(head -c 8 cap.png | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || e2e_fail "cap.png is not a PNG"
check_peaks peaks.json 120 333 701 || e2e_fail "complex: peaks not at the targets"
echo "$out" | grep -q "^peak 1: gate 120 (899.4 m)" || e2e_fail "stdout peak line"
# Channel 0 has its own target.
"$PLOT" cap --channel 0 --peaks 1 --json p0.json -o p0.png >/dev/null || e2e_fail "channel 0"
check_peaks p0.json 50 || e2e_fail "channel 0 peak"
e2e_log "complex capture: peaks at 120, 333, 701"

record rf32 power_db p.raw capdb
"$PLOT" capdb.sigmf-data --channel 1 --peaks 3 --profile max --json pdb.json >/dev/null ||
	e2e_fail "chirp-plot power_db failed"
[ -s capdb.png ] || e2e_fail "default output name capdb.png missing"
check_peaks pdb.json 120 333 701 || e2e_fail "power_db: peaks not at the targets"
e2e_log "power_db capture: peaks at 120, 333, 701"

# Maps of beams: a B-scope (range x azimuth) and every beam's map. 4 beams
# of a map_db capture, 8 Doppler bins; a target in beam 2 at gate 300, bin
# +1, its detection refined to 7.25 degrees.
B=4 ND=8 RB=400
"$PY" - $B $ND $RB <<'PYEOF' || e2e_fail "making the beam capture failed"
import json, sys
import numpy as np
B, ND, R = map(int, sys.argv[1:])
rng = np.random.default_rng(3)
m = rng.exponential(size=(2, B, ND, R))
m[:, 2, ND // 2 + 1, 300] = 1e4
m[:, 1, ND // 2 + 1, 300] = 1e2
(10 * np.log10(m)).astype(np.float32).tofile("beams.raw")
det = lambda fs: dict(seq=0, first_sample=fs, beams=True, count=1, detections=[dict(
    channel=2, range_gate=300, doppler_bin=1, range_m=2248.4, velocity_mps=None, power=1e4,
    noise=1, snr_db=40, beam=2, azimuth_deg=7.25, elevation_deg=0, angle_quality=0)])
with open("beams.jsonl", "w") as f:
    for k in range(2):
        f.write(json.dumps(det(k * ND * R)) + "\n")
PYEOF
"$CHIRP_TAP" -r "$RING" --create --geometry $B,$ND,$RB --format rf32 --mode map_db \
	--sample-rate $FS -n 2 --sigmf beams --timeout $((30 * E2E_SLOW)) >tap.log 2>&1 &
tp=$!
e2e_track $tp
wait_ring "$RING"
"$CHIRP_FEED" -r "$RING" --file beams.raw --block >feed.log 2>&1 || { cat feed.log; e2e_fail "feed failed"; }
wait_pid $tp 30 || { cat tap.log; e2e_fail "tap failed"; }
out=$("$PLOT" --map beams --bscope --beam-az=-15,-5,5,15 --detections beams.jsonl -o bs.png \
	--json bs.json) || e2e_fail "chirp-plot --bscope failed: $out"
[ -s bs.png ] || e2e_fail "no B-scope PNG"
echo "$out" | grep -q "^peak: beam 2 gate 300 " || e2e_fail "B-scope peak: $out"
echo "$out" | grep -q "^detection: beam 2 gate 300 bin 1 (2248.4 m, - m/s) snr 40.0 dB az 7.25 el 0.00 q 0x0" ||
	e2e_fail "B-scope detection line: $out"
"$PY" - <<'PYEOF' || e2e_fail "B-scope JSON"
import json
j = json.load(open("bs.json"))
assert j["beams"] == 4 and j["peak"]["beam"] == 2 and j["beam_az"] == [-15, -5, 5, 15], j
assert j["detections"][0]["azimuth_deg"] == 7.25
PYEOF
"$PLOT" --map beams --per-beam --detections beams.jsonl -o pb.png >/dev/null ||
	e2e_fail "chirp-plot --per-beam failed"
[ -s pb.png ] || e2e_fail "no per-beam PNG"
"$PLOT" --map beams --bscope --beam-az=1,2 -o x.png 2>err.log && e2e_fail "--beam-az of 2 beams accepted"
grep -q "gives 2 azimuths, the map has 4 beams" err.log || e2e_fail "message: $(cat err.log)"
"$PLOT" beams --bscope 2>err.log && e2e_fail "--bscope without --map accepted"
e2e_log "beams: B-scope peak in beam 2 at gate 300, detection at 7.25 deg; per-beam maps"

# Refusals: truncated data, bad JSON, channel out of range.
head -c 1000 cap.sigmf-data >bad.sigmf-data
cp cap.sigmf-meta bad.sigmf-meta
"$PLOT" bad -o bad.png 2>err.log && e2e_fail "truncated data accepted"
grep -q "not a whole number of CPIs" err.log || e2e_fail "message: $(cat err.log)"
echo '{"global": ' >bad.sigmf-meta
"$PLOT" bad -o bad.png 2>err.log && e2e_fail "bad JSON accepted"
grep -q "bad.sigmf-meta:2:1: invalid JSON" err.log || e2e_fail "message: $(cat err.log)"
"$PLOT" cap --channel 2 2>err.log && e2e_fail "channel 2 accepted"
grep -q "channels 0..1" err.log || e2e_fail "message: $(cat err.log)"
[ "${E2E_KEEP:-0}" = 1 ] && e2e_log "pictures in $T"
e2e_pass
