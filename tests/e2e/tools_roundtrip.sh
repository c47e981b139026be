#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# tools_roundtrip.sh — chirp-feed -> ring -> chirp-tap without chirpd:
# raw replay byte for byte (cf32, sc16), SigMF capture and its metadata,
# SigMF replay (same format and ci16_le -> cf32 conversion), synthetic
# echoes regenerated exactly by --verify-input, and the clear refusals of
# bad recordings and files.
. "$(dirname "$0")/tools_lib.inc"
tools_init tools_roundtrip

cd "$T" || exit 1
RING=/$E2E_UNIQ-a
RING2=/$E2E_UNIQ-b

# feed_tap 'TAP ARGS' 'FEED ARGS' — tap --create on $RING in the background,
# then the feed; both must exit 0. Logs in tap.log / feed.log.
feed_tap() {
	# shellcheck disable=SC2086
	"$CHIRP_TAP" -r "$RING" --create --timeout $((30 * E2E_SLOW)) $1 >tap.log 2>&1 &
	local tp=$!
	e2e_track $tp
	wait_ring "$RING"
	# shellcheck disable=SC2086
	"$CHIRP_FEED" -r "$RING" --block $2 >feed.log 2>&1 || { cat feed.log tap.log; e2e_fail "chirp-feed $2 failed"; }
	wait_pid $tp 60 || { cat feed.log tap.log; e2e_fail "chirp-tap $1 failed ($?)"; }
}

# 1. raw cf32, odd geometry, 7 CPIs of random bytes (NaN patterns included:
#    the ring does not look at payloads).
head -c $((3 * 5 * 333 * 8 * 7)) /dev/urandom >in.raw
feed_tap "--geometry 3,5,333 --format cf32 --slots 4 -n 7 --out out.raw" "--file in.raw"
cmp in.raw out.raw || e2e_fail "raw cf32 round trip differs"
grep -q "sent 7, dropped 0" feed.log || e2e_fail "feed summary: $(cat feed.log)"
grep -q "received 7, gaps 0" tap.log || e2e_fail "tap summary: $(cat tap.log)"
e2e_log "raw cf32 round trip ok"
# ...and to standard output (--out -), progress and summary staying on stderr;
# this reader polls 2 ms after each CPI before it sleeps (--spin-us).
"$CHIRP_TAP" -r "$RING" --create --geometry 3,5,333 --format cf32 -n 7 --out - --spin-us 2000 \
	--timeout $((30 * E2E_SLOW)) >stdout.raw 2>tap.log &
tp=$!; e2e_track $tp
wait_ring "$RING"
"$CHIRP_FEED" -r "$RING" --file in.raw --block 2>feed.log || e2e_fail "feed to stdout tap"
wait_pid $tp 30 || { cat tap.log; e2e_fail "tap --out - failed"; }
cmp in.raw stdout.raw || e2e_fail "--out - differs"

# 2. raw sc16, with --loop and --count beyond the file: 3 CPIs replayed as 8.
head -c $((2 * 3 * 101 * 4 * 3)) /dev/urandom >in16.raw
feed_tap "--geometry 2,3,101 --format sc16 --slots 3 -n 8 --out out16.raw" "--file in16.raw --loop --count 8"
cat in16.raw in16.raw in16.raw | head -c $((2 * 3 * 101 * 4 * 8)) >want16.raw
cmp want16.raw out16.raw || e2e_fail "raw sc16 loop round trip differs"
e2e_log "raw sc16 --loop round trip ok"

# 3. SigMF capture of the cf32 stream; metadata checked independently. The
#    feed commits the CPIs with a mode schedule (any id: no -c to check it
#    against), which the captures record.
feed_tap "--geometry 3,5,333 --format cf32 --slots 4 --sample-rate 25e6 -n 7 --sigmf cap" \
	"--file in.raw --modes 4,0,4000000000"
cmp in.raw cap.sigmf-data || e2e_fail "SigMF data differs from the input"
"$PY" - cap.sigmf-meta <<'PYEOF' || e2e_fail "SigMF metadata check failed"
import json, sys
m = json.load(open(sys.argv[1]))
g = m["global"]
assert g["core:datatype"] == "cf32_le", g
assert g["core:sample_rate"] == 25e6, g
assert g["core:version"].startswith("1."), g
assert (g["chirp:channels"], g["chirp:pulses"], g["chirp:samples"]) == (3, 5, 333), g
caps = m["captures"]
assert len(caps) == 7, len(caps)
for i, c in enumerate(caps):
    assert c["core:sample_start"] == i * 3 * 5 * 333, c
    assert c["chirp:seq"] == i, c
    assert c["chirp:first_sample"] == i * 5 * 333, c
    assert c["core:datetime"].endswith("Z"), c
    assert c["chirp:mode"] == [4, 0, 4000000000][i % 3], c
assert m["annotations"] == []
PYEOF
grep -q "CPIs per mode: 0: 2, 4: 3, >= 64: 2" tap.log || e2e_fail "tap's modes: $(cat tap.log)"
e2e_log "SigMF capture ok"

# 4. Replay the SigMF recording into another ring: same bytes again.
RING_SAVE=$RING; RING=$RING2
feed_tap "--geometry 3,5,333 --format cf32 --slots 4 --sample-rate 25e6 -n 7 --out replay.raw --sigmf replay" "--sigmf cap"
cmp in.raw replay.raw || e2e_fail "SigMF replay differs"
# ...each CPI committed with its recorded mode.
"$PY" -c 'import json, sys
caps = json.load(open(sys.argv[1]))["captures"]
assert [c["chirp:mode"] for c in caps] == [4, 0, 4000000000] * 2 + [4], caps' replay.sigmf-meta ||
	e2e_fail "SigMF replay lost the modes"
RING=$RING_SAVE
e2e_log "SigMF replay ok"

# 5. ci16_le capture replayed into a cf32 ring: converted exactly (v/32768).
feed_tap "--geometry 2,3,101 --format sc16 --slots 2 --sample-rate 1e6 -n 3 --sigmf cap16" "--file in16.raw"
grep -q '"core:datatype": "ci16_le"' cap16.sigmf-meta || e2e_fail "sc16 capture is not ci16_le"
RING=$RING2
feed_tap "--geometry 2,3,101 --format cf32 --slots 2 --sample-rate 1e6 -n 3 --out conv.raw" "--sigmf cap16"
RING=$RING_SAVE
"$PY" -c '
import numpy as np, sys
a = np.fromfile("in16.raw", dtype="<i2").astype(np.float64) / 32768
b = np.fromfile("conv.raw", dtype="<f4")
sys.exit(0 if a.shape == b.shape and np.array_equal(a, b) else "ci16 -> cf32 conversion differs")
' || e2e_fail "conversion check"
e2e_log "ci16_le -> cf32 replay ok"

# 5b. A foreign single-stream ci16_le recording (no chirp: keys, extra
#     core: keys and annotations) is cut into CPIs of the ring's geometry.
"$PY" - <<'PYEOF' || e2e_fail "writing the foreign recording"
import json
import numpy as np
x = np.random.default_rng(3).integers(-32768, 32767, size=2 * 3 * 101 * 2 * 4, dtype=np.int16)
x.astype("<i2").tofile("sdr.sigmf-data")
json.dump({"global": {"core:datatype": "ci16_le", "core:sample_rate": 1e6, "core:version": "1.0.0",
                      "core:hw": "some SDR", "core:author": "x"},
           "captures": [{"core:sample_start": 0, "core:frequency": 9.4e9,
                         "core:datetime": "2026-11-21T08:00:00Z"}],
           "annotations": [{"core:sample_start": 10, "core:sample_count": 5, "core:label": "x"}]},
          open("sdr.sigmf-meta", "w"))
PYEOF
RING=$RING2
feed_tap "--geometry 2,3,101 --format sc16 --slots 2 --sample-rate 1e6 -n 4 --out sdr.raw" "--sigmf sdr.sigmf-meta"
RING=$RING_SAVE
cmp sdr.sigmf-data sdr.raw || e2e_fail "foreign recording replay differs"
e2e_log "foreign ci16_le recording replayed"

# 5c. Progress: a line updated in place on a terminal, nothing when piped.
if command -v script >/dev/null 2>&1; then
	"$CHIRP_TAP" -r "$RING" --create --geometry 2,3,101 --format sc16 --slots 2 --drain -n 300 \
		--timeout $((30 * E2E_SLOW)) >tap.log 2>&1 &
	tp=$!; e2e_track $tp
	wait_ring "$RING"
	script -qec "$CHIRP_FEED -r $RING --file in16.raw --loop --count 300 --rate 1000 --block" /dev/null >tty.log 2>&1 ||
		{ cat tty.log; e2e_fail "feed under script failed"; }
	wait_pid $tp 30 || e2e_fail "tap for the progress test"
	grep -q $'\rsent [0-9]*/300  dropped 0  ' tty.log || { od -c tty.log | head; e2e_fail "no progress line on a terminal"; }
	grep -q $'\r' feed.log tap.log && e2e_fail "progress written to a file"
	e2e_log "progress line on a terminal only"
fi

# 6. Synthetic echoes (sc16, noise, Doppler) regenerated bit for bit by the tap.
e2e_config input.ring="$RING" input.format=sc16 input.slots=4 cpi.channels=2 cpi.pulses=4 cpi.samples=500
TGT=(--target 40,-6,0.1/pulse --target 300,-30)
"$CHIRP_TAP" -c "$CONF" -r "$RING" --create --geometry 2,4,500 --format sc16 --slots 4 -n 25 \
	--verify-input "${TGT[@]}" --snr-db 12 --seed 99 --timeout $((30 * E2E_SLOW)) >tap.log 2>&1 &
tp=$!; e2e_track $tp
wait_ring "$RING"
"$CHIRP_FEED" -c "$CONF" "${TGT[@]}" --snr-db 12 --seed 99 --count 25 --block >feed.log 2>&1 ||
	{ cat feed.log; e2e_fail "synthetic feed failed"; }
wait_pid $tp 60 || { cat tap.log; e2e_fail "verify-input failed"; }
grep -q "verified 25, mismatches 0" tap.log || e2e_fail "verify summary: $(cat tap.log)"
# Another seed must NOT verify (the check can fail).
"$CHIRP_TAP" -c "$CONF" -r "$RING" --create --geometry 2,4,500 --format sc16 --slots 4 -n 3 \
	--verify-input "${TGT[@]}" --snr-db 12 --seed 98 --timeout $((30 * E2E_SLOW)) >tap.log 2>&1 &
tp=$!; e2e_track $tp
wait_ring "$RING"
"$CHIRP_FEED" -c "$CONF" "${TGT[@]}" --snr-db 12 --seed 99 --count 3 --block >feed.log 2>&1
wait_pid $tp 60; rc=$?
[ $rc -eq 4 ] || { cat tap.log; e2e_fail "a wrong seed verified (rc $rc)"; }
grep -q "mismatches 3" tap.log || e2e_fail "mismatch count: $(cat tap.log)"
e2e_log "synthetic echoes regenerated exactly"
# Two more modes of other pulse lengths: with --modes each CPI is the
# synthetic CPI of its own mode (--verify-input regenerates it from the
# block's mode), and a tap that knows only mode 0 finds the others differ.
cp "$CONF" one-mode.conf
printf '\n[mode short]\nid = 1\npulse_width_s = 1e-6\n\n[mode code]\nid = 2\ntype = barker13\nchip_samples = 5\n' >>"$CONF"
for tapconf in "$CONF" one-mode.conf; do
	"$CHIRP_TAP" -c "$tapconf" -r "$RING" --create --geometry 2,4,500 --format sc16 --slots 4 -n 12 \
		--verify-input "${TGT[@]}" --seed 3 --timeout $((30 * E2E_SLOW)) >tap.log 2>&1 &
	tp=$!; e2e_track $tp
	wait_ring "$RING"
	"$CHIRP_FEED" -c "$CONF" "${TGT[@]}" --seed 3 --count 12 --block --modes 2,0,1,1 >feed.log 2>&1 ||
		{ cat feed.log; e2e_fail "synthetic feed with modes failed"; }
	wait_pid $tp 60; rc=$?
	if [ "$tapconf" = "$CONF" ]; then
		[ $rc -eq 0 ] && grep -q "verified 12, mismatches 0" tap.log ||
			{ cat tap.log; e2e_fail "per-mode synthetic CPIs did not verify (rc $rc)"; }
		grep -q "CPIs per mode: 0: 3, 1: 6, 2: 3" tap.log || e2e_fail "modes: $(cat tap.log)"
	else
		[ $rc -eq 4 ] && grep -q "verified 3, mismatches 9" tap.log ||
			{ cat tap.log; e2e_fail "modes 1 and 2 verified against mode 0 (rc $rc)"; }
	fi
done
# --prefilled writes a slot again when its next CPI is of another mode:
# without noise or Doppler every CPI of a mode is the same, so a 4-slot
# ring under a 3-mode schedule still verifies.
"$CHIRP_TAP" -c "$CONF" -r "$RING" --create --geometry 2,4,500 --format sc16 --slots 4 -n 14 \
	--verify-input --target 40,-6 --noiseless --timeout $((30 * E2E_SLOW)) >tap.log 2>&1 &
tp=$!; e2e_track $tp
wait_ring "$RING"
"$CHIRP_FEED" -c "$CONF" --target 40,-6 --noiseless --count 14 --block --prefilled --modes 0,1,2 >feed.log 2>&1 ||
	{ cat feed.log; e2e_fail "--prefilled --modes failed"; }
wait_pid $tp 60 || { cat tap.log; e2e_fail "--prefilled kept a slot of another mode"; }
grep -q "verified 14, mismatches 0" tap.log || e2e_fail "prefilled modes: $(cat tap.log)"
cp one-mode.conf "$CONF"
e2e_log "synthetic echoes of each CPI's own mode"

# 7. Refusals, each with a message that says what is wrong.
expect_fail() {   # expect_fail PATTERN CMD... — CMD exits non-zero and says PATTERN
	local pat=$1; shift
	if "$@" >err.log 2>&1; then e2e_fail "accepted: $*"; fi
	grep -q -- "$pat" err.log || { cat err.log; e2e_fail "no '$pat' from: $*"; }
}
cp cap.sigmf-data bad.sigmf-data
head -c 200 cap.sigmf-meta >bad.sigmf-meta
expect_fail "bad.sigmf-meta:[0-9]*:[0-9]*: invalid JSON" "$CHIRP_FEED" --sigmf bad --create -r "$RING2" --wait 0
sed 's/cf32_le/cu8/' cap.sigmf-meta >bad.sigmf-meta
expect_fail "core:datatype 'cu8' is not supported" "$CHIRP_FEED" --sigmf bad --create -r "$RING2" --wait 0
grep -v core:sample_rate cap.sigmf-meta >bad.sigmf-meta
expect_fail "core:sample_rate is missing" "$CHIRP_FEED" --sigmf bad --create -r "$RING2" --wait 0
cp cap.sigmf-meta bad.sigmf-meta
head -c $((3 * 5 * 333 * 8 * 6 + 16)) cap.sigmf-data >bad.sigmf-data
expect_fail "not a whole number of CPIs" "$CHIRP_FEED" --sigmf bad --create -r "$RING2" --wait 0
cp cap.sigmf-data bad.sigmf-data
expect_fail "recorded at 2.5e+07 Hz but ring" "$CHIRP_FEED" --sigmf bad --create -r "$RING2" --sample-rate 20e6 --wait 0
expect_fail "recording geometry 3x5x333 does not match" "$CHIRP_FEED" --sigmf bad --create -r "$RING2" --geometry 3,5,334 --wait 0
head -c 1000 in.raw >short.raw
expect_fail "not a whole number of CPIs" "$CHIRP_FEED" --file short.raw --create -r "$RING2" --geometry 3,5,333 --format cf32 --wait 0
expect_fail "no ring" "$CHIRP_FEED" --file in.raw -r "/$E2E_UNIQ-none" --wait 0.2
expect_fail "no ring" "$CHIRP_TAP" --drain -r "/$E2E_UNIQ-none" --wait 0.2
expect_fail "want microseconds 0..1000000" "$CHIRP_TAP" --drain --spin-us 1000001
expect_fail "give exactly one source" "$CHIRP_FEED" --file in.raw --sigmf cap
expect_fail "GATE" "$CHIRP_FEED" -c "$CONF" --target x,3
expect_fail "not an option; give each echo as --target GATE,AMP_DB" "$CHIRP_FEED" -c "$CONF" --targets 100:-6
expect_fail "separated by commas" "$CHIRP_FEED" -c "$CONF" --target 100:-6:0.1
expect_fail "not an option; give each echo as --target" "$CHIRP_TAP" -c "$CONF" --verify --targets 100:-6
expect_fail "gate 600 is outside" "$CHIRP_FEED" -c "$CONF" --target 600,-6 --create -r "$RING2"
expect_fail "mode 5 is not declared in" "$CHIRP_FEED" -c "$CONF" --target 60,-6 --modes 0,5 --create -r "$RING2"
expect_fail "entry 2 'x' is not a mode id" "$CHIRP_FEED" -c "$CONF" --target 60,-6 --modes 0,x
expect_fail "entry 1 '4294967296' is not a mode id" "$CHIRP_FEED" --file in.raw --modes 4294967296
expect_fail "want mode ids" "$CHIRP_FEED" --file in.raw --modes 0,,1
expect_fail "allow-unknown-modes applies to --modes" "$CHIRP_FEED" --file in.raw --allow-unknown-modes
e2e_log "refusals ok"

# 8. tap --timeout: nothing arrives -> exit 3.
"$CHIRP_TAP" -r "$RING" --create --geometry 1,1,16 --format cf32 -n 1 --drain --timeout 0.5 >tap.log 2>&1
rc=$?
[ $rc -eq 3 ] || { cat tap.log; e2e_fail "timeout exit $rc, want 3"; }
grep -q "timeout: 0 of 1 CPIs" tap.log || e2e_fail "timeout message: $(cat tap.log)"

e2e_pass
