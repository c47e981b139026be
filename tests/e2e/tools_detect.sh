#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# tools_detect.sh — the tools of the radar chain, end to end.
#
# Without chirpd: detection lists written by an independent encoder
# (Python's struct, not the chirpring package) are replayed into a det ring
# by chirp-feed --file and read by chirp-tap --list, --jsonl and
# --verify-targets (fractions and exit status), a corrupt list is refused
# (exit 1, nothing past the slot); chirp-plot --map draws a synthetic
# range-Doppler capture and circles its detections.
#
# With chirpd (CPU backend, [doppler] and per-channel [cfar], map_db output
# and a [detections] ring): chirp-feed --target puts two targets at known
# gates and Doppler shifts, chirp-tap --verify-targets finds both in every
# channel of >= 99% of the CPIs, chirp-tap --verify recomputes every map
# (pulse compression, Doppler window and FFT) on the CPU from the same
# --target options and finds it equal, the chirpring package reads both rings
# (map shape and peak, lists, range and velocity), and chirp-plot --map
# draws a CPI from the recording and one straight from the two rings.
# The chirp-plot parts are skipped (and say so) without matplotlib.
. "$(dirname "$0")/tools_lib.inc"
tools_init tools_detect
[ -x "$PY" ] || e2e_skip "$PY not found"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
PLOT=$SRC/scripts/chirp-plot
HAVE_NP=0 HAVE_MPL=0
"$PY" -c 'import numpy' 2>/dev/null && HAVE_NP=1
[ $HAVE_NP = 1 ] && "$PY" -c 'import matplotlib' 2>/dev/null && HAVE_MPL=1
# The package loads this build's libchirpring: an ASan one needs the
# sanitizer runtimes preloaded into python (leak checks off: CPython keeps
# its allocations to exit), a TSan one cannot be loaded at all.
PYLIB=1 PRE=
case $BUILD in
*asan*)
	for r in libasan.so libubsan.so; do
		f=$(cc -print-file-name=$r) && [ -f "$f" ] || PYLIB=0
		PRE="$PRE${PRE:+:}$f"
	done;;
*tsan*) PYLIB=0;;
esac
pylib() {   # pylib CMD... — CMD with the package and this build's library
	env ${PRE:+LD_PRELOAD=$PRE ASAN_OPTIONS=detect_leaks=0} PYTHONPATH="$SRC/src/ring/python" \
		CHIRPRING_LIBRARY="$BUILD/lib/libchirpring.so.3" PYTHONDONTWRITEBYTECODE=1 "$@"
}
cd "$T" || exit 1

# ---- det ring without chirpd ---------------------------------------------------
DET=/$E2E_UNIQ-det
MAXD=4
# Five lists of up to 4 records: the header and records of chirp/detect.h,
# packed with struct. List 3 overflowed (6 found), list 4 is integrated.
"$PY" - $MAXD <<'PYEOF' || e2e_fail "making the lists failed"
import struct, sys
M = int(sys.argv[1])
NAN = float("nan")
def slot(k, recs, found=None, flags=0, maps=2, magic=0x54454443, count=None):
    found = len(recs) if found is None else found
    keep = recs[:M]
    if found > len(keep):
        flags |= 1
    n = len(keep) if count is None else count
    h = struct.pack("<IHHQQQIIIIIIIIQQ", magic, 1, 32, 100 + k, 5 * k, 4096 * k, 0, flags, n,
                    found, maps, 16, 500, 0, maps * 16 * 500, 7)
    body = b"".join(struct.pack("<iIifffff", *r) for r in keep)
    # version-1 lists (32-byte records, as an older chirpd wrote them) in
    # slots sized for version 2's 48-byte records: still read
    return h + body + b"\0" * (48 * M - len(body))
lists = [
    slot(0, [(0, 300, 3, 1798.8, 11.96, 1e3, 1, 30), (1, 300, 3, 1798.8, 11.96, 9e2, 1, 29.5)]),
    slot(1, [(0, 300, 3, 1798.8, 11.96, 1e3, 1, 30), (0, 700, -4, 4197.2, NAN, 50, 1, 17)]),
    slot(2, [(0, 301, 3, 1804.8, 11.96, 1e3, 1, 30), (1, 300, 2, 1798.8, 7.97, 9e2, 1, 29.5)]),
    slot(3, [(c, g, 3, 0, 0, 9, 1, 9.5) for c in (0, 1) for g in (290, 300, 310)]),
    slot(4, [(-1, 300, 3, 1798.8, 11.96, 2e3, 2, 30)], flags=2, maps=1),
]
open("lists.raw", "wb").write(b"".join(lists))
# The same lists with list 2's count past the slot (one more 32-byte
# record than its 48 * M bytes hold).
bad = list(lists)
bad[2] = slot(2, [(0, 1, 0, 0, 0, 1, 1, 0)], count=48 * M // 32 + 1, found=48 * M // 32 + 1)
open("bad.raw", "wb").write(b"".join(bad))
PYEOF

tap_det() {   # tap_det RAW OUT N TAP-OPTIONS... — status of chirp-tap
	"$CHIRP_TAP" -r "$DET" --create --geometry 1,1,$MAXD --format det -n "$3" --timeout $((20 * E2E_SLOW)) \
		-q "${@:4}" >"$2" 2>tap.err &
	local tp=$!
	e2e_track $tp
	e2e_wait_consumer "$DET" $tp
	"$CHIRP_FEED" -r "$DET" --file "$1" --block -q 2>feed.err || { cat feed.err; e2e_fail "feed of $1 failed"; }
	wait_pid $tp 30
}

tap_det lists.raw list.txt 5 --list || e2e_fail "chirp-tap --list: $(cat tap.err)"
[ "$(grep -c '^cpi ' list.txt)" = 5 ] || e2e_fail "--list: not 5 cpi lines: $(cat list.txt)"
[ "$(grep -c '^det ' list.txt)" = 11 ] || e2e_fail "--list: not 11 det lines: $(cat list.txt)"
grep -q '^cpi seq=103 mode=0 pointing=0,0 first_sample=12288 count=4 found=6 overflow=1 maps=2 doppler_bins=16 range_gates=500 ' list.txt ||
	e2e_fail "--list: the overflowed list's header: $(grep seq=103 list.txt)"
grep -q '^det channel=0 range_gate=700 doppler_bin=-4 range_m=4197.200 velocity_mps=nan power=50 noise=1 snr_db=17.00$' list.txt ||
	e2e_fail "--list: a record: $(cat list.txt)"
grep -q '^det channel=-1 range_gate=300 doppler_bin=3 ' list.txt || e2e_fail "--list: the integrated record"
grep -q "detection lists 5 (11 detections, 1 overflowed, 0 rejected)" tap.err || e2e_fail "summary: $(cat tap.err)"

# --jsonl: one object per CPI, NaN as null; and --verify-targets: 300:3 is
# in every map of lists 0 and 4 (the integrated one), of list 2 one gate or
# bin off, and in channel 0 only of lists 1 and 3 (3 lost channel 1's to
# the overflow).
tap_det lists.raw list.jsonl 5 --jsonl --verify-targets 300:3 --verify-min 0.4 ||
	e2e_fail "chirp-tap --jsonl --verify-targets: $(cat tap.err)"
"$PY" - <<'PYEOF' || e2e_fail "--jsonl lines: $(cat list.jsonl)"
import json
L = [json.loads(l) for l in open("list.jsonl")]
assert [j["seq"] for j in L] == [100, 101, 102, 103, 104], L
assert [j["ring_seq"] for j in L] == [0, 1, 2, 3, 4], L
assert L[3]["overflow"] is True and L[3]["found"] == 6 and L[3]["count"] == 4, L[3]
assert L[4]["integrated"] is True and L[4]["detections"][0]["channel"] == -1, L[4]
d = L[1]["detections"][1]
assert d == {"channel": 0, "range_gate": 700, "doppler_bin": -4, "range_m": d["range_m"],
             "velocity_mps": None, "power": 50, "noise": 1, "snr_db": 17}, d
assert abs(d["range_m"] - 4197.2) < 1e-3, d
PYEOF
grep -q "verify-targets: 2 of 5 CPIs (40.00%) hold every target" tap.err || e2e_fail "exact: $(cat tap.err)"
tap_det lists.raw /dev/null 5 --verify-targets 300:3 --verify-tolerance 1,1 --verify-min 0.6 ||
	e2e_fail "with tolerance 1,1 three CPIs should pass: $(cat tap.err)"
grep -q "verify-targets: 3 of 5 CPIs (60.00%)" tap.err || e2e_fail "tolerance: $(cat tap.err)"
tap_det lists.raw /dev/null 5 --verify-targets 300:3,700:-4
rc=$?
[ $rc = 4 ] || e2e_fail "--verify-targets under the threshold exited $rc, want 4: $(cat tap.err)"
grep -q "700:-4 0.00%" tap.err || e2e_fail "per-target fraction: $(cat tap.err)"
e2e_log "det ring: --list, --jsonl, --verify-targets ok"

# A list whose count runs past the slot: refused, named, counted; exit 1.
tap_det bad.raw list.txt 5 --list
rc=$?
[ $rc = 1 ] || e2e_fail "a corrupt list: exit $rc, want 1: $(cat tap.err)"
grep -q "seq 2: detection list rejected: count 7 exceeds the slot's 6 records" tap.err ||
	e2e_fail "corrupt list message: $(cat tap.err)"
[ "$(grep -c '^cpi ' list.txt)" = 4 ] || e2e_fail "the other lists should print: $(cat list.txt)"
# Det options on a ring of samples, and --sigmf on a det ring, are refused.
"$CHIRP_TAP" -r "$DET" --create --geometry 1,1,8 --format rf32 -n 1 --list --timeout 1 2>err.log &&
	e2e_fail "--list on an rf32 ring accepted"
grep -q "not detection lists" err.log || e2e_fail "message: $(cat err.log)"
"$CHIRP_TAP" -r "$DET" --create --geometry 1,1,8 --format det -n 1 --sigmf x --timeout 1 2>err.log &&
	e2e_fail "--sigmf on a det ring accepted"
grep -q "holds detection lists" err.log || e2e_fail "message: $(cat err.log)"
e2e_log "corrupt list and misuse refused"

# ---- chirp-plot --map on a synthetic map capture --------------------------------
MAPR=/$E2E_UNIQ-map
if [ $HAVE_MPL = 1 ]; then
	"$PY" - <<'PYEOF' || e2e_fail "making the map failed"
import json
import numpy as np
rng = np.random.default_rng(3)
m = rng.exponential(1.0, size=(3, 2, 16, 200)).astype(np.float32)   # CPIs x C x Nd x R
m[1, :, 8 + 3, 120] = 5e4      # CPI 1: a target at gate 120, bin +3
m[1, :, 8 - 5, 40] = 2e3       # and a weaker one at gate 40, bin -5
m.tofile("map.raw")
recs = [dict(channel=c, range_gate=g, doppler_bin=b, range_m=g * 299792458.0 / 40e6,
             velocity_mps=b * 1000 / 16 * 299792458.0 / 2 / 9.4e9, power=float(m[1, c, 8 + b, g]),
             noise=1.0, snr_db=10 * np.log10(float(m[1, c, 8 + b, g])))
        for c in (0, 1) for b, g in ((-5, 40), (3, 120))]
with open("map.jsonl", "w") as f:
    for k in range(3):
        f.write(json.dumps(dict(first_sample=k * 16 * 200, seq=k, count=len(recs) if k == 1 else 0,
                                found=len(recs) if k == 1 else 0, overflow=False,
                                detections=recs if k == 1 else [])) + "\n")
PYEOF
	"$CHIRP_TAP" -r "$MAPR" --create --geometry 2,16,200 --format rf32 --sample-rate 20e6 --mode map_power \
		-n 3 --sigmf map --timeout $((20 * E2E_SLOW)) -q 2>tap.err &
	tp=$!; e2e_track $tp
	e2e_wait_consumer "$MAPR" $tp
	"$CHIRP_FEED" -r "$MAPR" --file map.raw --block -q 2>feed.err || e2e_fail "map feed: $(cat feed.err)"
	wait_pid $tp 30 || e2e_fail "map capture: $(cat tap.err)"
	"$PLOT" --map map --cpi 1 --detections map.jsonl --prf 1000 --carrier 9.4e9 --channel 1 \
		-o map.png --json map.json >plot.log 2>&1 || e2e_fail "chirp-plot --map: $(cat plot.log)"
	[ "$(head -c 8 map.png | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || e2e_fail "map.png is not a PNG"
	grep -q "^peak: gate 120 bin 3 " plot.log || e2e_fail "peak: $(cat plot.log)"
	grep -q "^detection: channel 1 gate 40 bin -5 (299.8 m, -4.98 m/s)" plot.log ||
		e2e_fail "detection line: $(cat plot.log)"
	[ "$(grep -c '^detection: channel 1 ' plot.log)" = 2 ] || e2e_fail "channel 1's detections: $(cat plot.log)"
	"$PY" -c 'import json, sys; j = json.load(open("map.json")); assert j["doppler_bins"] == 16 and j["range_gates"] == 200 and j["units"] == "power" and abs(j["velocity_per_bin"] - 0.996650) < 1e-5 and len(j["detections"]) == 2, j' ||
		e2e_fail "map.json: $(cat map.json)"
	# A bad CPI index, and a power map read as dB, are told apart.
	"$PLOT" --map map --cpi 3 -o x.png 2>err.log && e2e_fail "--cpi 3 of 3 accepted"
	grep -q "holds CPIs 0..2" err.log || e2e_fail "message: $(cat err.log)"
	e2e_log "chirp-plot --map: peak and detections of the synthetic map"
else
	e2e_log "chirp-plot --map on a synthetic map: skipped ($PY lacks numpy or matplotlib)"
fi

# ---- chirpd: Doppler, CFAR, map output and detection ring ---------------------
[ -x "$CHIRPD" ] || e2e_fail "$CHIRPD is not built"
DRING=/$E2E_UNIQ-dets
N=60   # <= the rings' slots: a slow tap (--verify) never makes chirpd drop
e2e_config cpi.channels=2 cpi.pulses=16 cpi.samples=1000 \
	radar.prf_hz=4000 radar.carrier_hz=9.4e9 \
	doppler.enable=true doppler.window=hann \
	cfar.enable=true cfar.method=ca cfar.integrate=none cfar.pfa=1e-6 \
	detections.ring="$DRING" detections.slots=64 detections.file=chirpd-dets.jsonl \
	output.mode=map_db output.slots=64
e2e_start_chirpd
# Targets: gate 300 at +750 Hz (Doppler bin +3 of 16 at 4 kHz PRF), gate
# 700 at -1000 Hz (bin -4); 250 Hz per bin.
FEED=("$CHIRP_FEED" -c "$CONF" --target 300,-20,750 --target 700,-26,-1000 --noise-dbfs -30 --block -q)
"$CHIRP_TAP" -c "$CONF" --jsonl --verify-targets 300:3,700:-4 -n $N --timeout $((60 * E2E_SLOW)) -q \
	>dets.jsonl 2>vt.err &
vt=$!; e2e_track $vt
"$CHIRP_TAP" -c "$CONF" --sigmf rd -n $N --timeout $((60 * E2E_SLOW)) -q --verify \
	--target 300,-20,750 --target 700,-26,-1000 --noise-dbfs -30 2>rd.err &
rd=$!; e2e_track $rd
e2e_wait_consumer "$DRING" $vt
e2e_wait_consumer "$OUT_RING" $rd
"${FEED[@]}" -n $N 2>feed.err || e2e_fail "feed: $(cat feed.err)"
wait_pid $vt 60; rc=$?
[ $rc = 0 ] || e2e_fail "chirp-tap --verify-targets exited $rc: $(cat vt.err)"
grep -q "verify-targets: .* hold every target (min 99.00%" vt.err || e2e_fail "summary: $(cat vt.err)"
e2e_log "$(grep verify-targets: vt.err)"
wait_pid $rd 60 || e2e_fail "map recording and --verify: $(cat rd.err)"
grep -q "verified $N, mismatches 0" rd.err || e2e_fail "--verify of the maps: $(cat rd.err)"
grep -q '"chirp:output": *"map_db"' rd.sigmf-meta || e2e_fail "the recording is not labelled map_db"

# The chirpring package on both rings: each map is (C, Nd, R) float32 dB
# with its maximum on a target, each list holds both targets in both
# channels with their range and velocity.
if [ $HAVE_NP = 1 ] && [ $PYLIB = 1 ]; then
	pylib "$PY" - "$OUT_RING" "$DRING" >py.log 2>&1 <<'PYEOF' &
import sys
import numpy as np
import chirpring
C0 = 299792458.0
out, det = sys.argv[1:]
with chirpring.Consumer(out, timeout=60) as mr, chirpring.Consumer(det, timeout=60) as dr:
    print("attached", flush=True)
    maps = {}
    lists = {}
    while len(maps) < 5 or len(lists) < 5:
        if len(maps) < 5:
            c = mr.read(); maps[c.first_sample] = c.data.copy()
        if len(lists) < 5:
            c = dr.read(); lists[c.header.first_sample] = (c.header, c.detections)
assert sorted(maps) == sorted(lists), (sorted(maps), sorted(lists))
for fs, m in maps.items():
    assert m.shape == (2, 16, 1000) and m.dtype == np.float32, m.shape
    for ch in range(2):
        k, n = np.unravel_index(int(np.argmax(m[ch])), m[ch].shape)
        assert (k - 8, n) == (3, 300), (fs, ch, k - 8, n)
    h, d = lists[fs]
    assert h.maps == 2 and h.doppler_bins == 16 and h.range_gates == 1000 and not h.integrated, h
    for g, b in ((300, 3), (700, -4)):
        hit = d[(d["range_gate"] == g) & (d["doppler_bin"] == b)]
        assert sorted(hit["channel"]) == [0, 1], (fs, g, b, d)
        assert np.allclose(hit["range_m"], g * C0 / (2 * 25e6), rtol=1e-5), hit
        assert np.allclose(hit["velocity_mps"], b * 250 * C0 / (2 * 9.4e9), rtol=1e-4), hit
        assert np.all(hit["snr_db"] > 20), hit
print("ok", len(maps))
PYEOF
	pp=$!; e2e_track $pp
	e2e_wait 30 grep -q attached py.log || e2e_fail "python did not attach: $(cat py.log)"
	"${FEED[@]}" -n 5 --seed 9 2>feed.err || e2e_fail "feed: $(cat feed.err)"
	wait_pid $pp 60 || e2e_fail "chirpring on the map and det rings: $(cat py.log)"
	grep -q "^ok 5" py.log || e2e_fail "python: $(cat py.log)"
	e2e_log "chirpring: maps (2, 16, 1000) and lists agree, targets at 300:+3 and 700:-4"
else
	e2e_log "chirpring on both rings: skipped ($PY lacks numpy, or $BUILD's library cannot be loaded into it)"
fi

if [ $HAVE_MPL = 1 ]; then
	# From the recording and chirp-tap's lines.
	"$PLOT" --map rd --cpi 7 --detections dets.jsonl --channel sum -o rd.png --json rd.json >plot.log 2>&1 ||
		e2e_fail "chirp-plot --map of the recording: $(cat plot.log)"
	grep -q "^peak: gate 300 bin 3 " plot.log || e2e_fail "recording peak: $(cat plot.log)"
	grep -q "^detection: channel 0 gate 700 bin -4 (4197.1 m, -15.95 m/s)" plot.log ||
		e2e_fail "recording detections: $(cat plot.log)"
	[ -s rd.png ] || e2e_fail "no rd.png"
	# chirpd's own [detections] file has the same keys.
	"$PLOT" --map rd --cpi 7 --detections chirpd-dets.jsonl --channel sum -o rd2.png >plot2.log 2>&1 ||
		e2e_fail "chirp-plot --map with chirpd's [detections] file: $(cat plot2.log)"
	diff <(grep '^detection:' plot.log) <(grep '^detection:' plot2.log) >/dev/null ||
		e2e_fail "chirpd's file and chirp-tap --jsonl disagree: $(cat plot.log plot2.log)"
	e2e_log "chirp-plot --map from the recording ok (chirp-tap's lines and chirpd's file)"
else
	e2e_log "chirp-plot --map of the recording: skipped ($PY lacks numpy or matplotlib)"
fi
# Straight from the rings (normal build only: matplotlib's python does not
# get a sanitizer runtime, and the picture adds nothing under one).
if [ $HAVE_MPL = 1 ] && [ $PYLIB = 1 ] && [ -z "$PRE" ]; then
	pylib "$PLOT" --map --ring "$OUT_RING" --det-ring "$DRING" --channel 1 --timeout 60 -o live.png >plot.log 2>&1 &
	pp=$!; e2e_track $pp
	e2e_wait_consumer "$OUT_RING" $pp
	e2e_wait_consumer "$DRING" $pp
	"${FEED[@]}" -n 3 --seed 11 2>feed.err || e2e_fail "feed: $(cat feed.err)"
	wait_pid $pp 60 || e2e_fail "chirp-plot --map --ring: $(cat plot.log)"
	grep -q "^detection: channel 1 gate 300 bin 3 (1798.8 m, 11.96 m/s)" plot.log ||
		e2e_fail "ring detections: $(cat plot.log)"
	[ "$(head -c 8 live.png | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || e2e_fail "live.png is not a PNG"
	e2e_log "chirp-plot --map from the rings ok"
else
	e2e_log "chirp-plot --map from the rings: skipped ($PY lacks numpy or matplotlib, or a sanitizer build)"
fi
e2e_stop_chirpd || e2e_fail "chirpd exited $?"
[ "${E2E_KEEP:-0}" = 1 ] && e2e_log "pictures in $T"
e2e_pass
