#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# net_publish.sh — the network in and out, on loopback only (127.0.0.1),
# CPU backend: chirpd runs the radar chain (Doppler + CFAR) and publishes
# its detection lists on ZeroMQ; chirp-sub subscribes. Three runs, each on
# a fresh chirpd with the same synthesis:
#   1. direct: chirp-feed -> chirpd's input ring -> chirp-sub (reference);
#   2. chirp-send -> VRT/UDP, 1 % of packets reordered -> chirp-recv (two
#      receive threads) -> chirpd -> chirp-sub: the same detection lists as
#      run 1, CPI for CPI (cf32 samples cross the network bit for bit);
#   3. the plain framing with 1 % of packets lost and 1 % reordered: a list
#      for every CPI, in order, none lost; exactly the CPIs that lost
#      packets have lists flagged incomplete, in the ZeroMQ header and the
#      list (CHIRP_DET_INCOMPLETE), and on the detection ring's descriptor
#      (CHIRP_RING_INCOMPLETE with the missing count, read by chirp-tap).
# A second subscriber, chirp-sub --summary, counts the same lists, no seq
# gap, and the incomplete ones.
. "$(dirname "$0")/lib.sh"
e2e_init net_publish
e2e_need chirp-feed chirp-tap chirp-recv chirp-send chirp-sub
CHIRP_RECV=$BIN/chirp-recv CHIRP_SEND=$BIN/chirp-send CHIRP_SUB=$BIN/chirp-sub

cd "$T" || exit 1
N=100
RATE=$((100 / E2E_SLOW))
SYN=(--target 100,-20,2500 --target 300,-26,-1250 --snr-db 10 --seed 5)

# stage NAME — a fresh chirpd on rings of its own, a subscriber in place
# (a status message reached it) and a tap on the detection ring, both in
# the background until N lists ($SUB_PID, sub-NAME.jsonl, $TAP_PID,
# ring-NAME.jsonl).
stage() {
	[ -n "$CHIRPD_PID" ] && { e2e_stop_chirpd || e2e_fail "chirpd exited $? after $PREV"; }
	IN_RING=/$E2E_UNIQ-in-$1
	OUT_RING=/$E2E_UNIQ-out-$1
	DET_RING=/$E2E_UNIQ-det-$1
	e2e_config input.ring="$IN_RING" output.ring="$OUT_RING" cpi.channels=2 cpi.pulses=16 \
		cpi.samples=512 waveform.pulse_width_s=2e-6 waveform.bandwidth_hz=5e6 \
		input.slots=32 radar.prf_hz=10000 radar.carrier_hz=1e9 \
		doppler.enable=true doppler.fft=16 doppler.window=hann \
		cfar.enable=true cfar.pfa=1e-4 cfar.max_detections=64 output.mode=none \
		detections.ring="$DET_RING" detections.slots=64 \
		publish.listen='tcp://127.0.0.1:*' publish.status_hz=10 publish.maps_hz=0
	e2e_start_chirpd
	local ep
	ep=$(e2e_ctl --json status | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["publish"]["endpoint"])')
	"$CHIRP_SUB" "$ep" --topics det,status -n $N --timeout $((60 * E2E_SLOW)) \
		--ready-file "ready-$1" >"sub-$1.jsonl" 2>"sub-$1.log" &
	SUB_PID=$!
	e2e_track $SUB_PID
	"$CHIRP_SUB" "$ep" --topics det,status --summary -n $N --timeout $((60 * E2E_SLOW)) \
		--ready-file "ready2-$1" >"sum-$1.json" 2>"sum-$1.log" &
	SUM_PID=$!
	e2e_track $SUM_PID
	"$CHIRP_TAP" -c "$CONF" -r "$DET_RING" -n $N --jsonl --timeout $((60 * E2E_SLOW)) \
		>"ring-$1.jsonl" 2>"ring-$1.log" &
	TAP_PID=$!
	e2e_track $TAP_PID
	e2e_wait_consumer "$DET_RING" $TAP_PID || e2e_fail "chirp-tap did not attach"
	e2e_wait 10 test -e "ready-$1" || e2e_fail "no status message reached chirp-sub: $(cat "sub-$1.log")"
	e2e_wait 10 test -e "ready2-$1" || e2e_fail "no status message reached chirp-sub --summary"
	PREV=$1
}

# recv NAME ARGS... — chirp-recv into this stage's input ring ($PORT).
recv() {
	local name=$1
	shift
	"$CHIRP_RECV" -c "$CONF" --listen 127.0.0.1:0 --count $N --deadline-ms 250 --threads 2 \
		--wait 10 "$@" >"recv-$name.json" 2>"recv-$name.log" &
	RECV_PID=$!
	e2e_track $RECV_PID
	e2e_wait 10 grep -q "listening on port" "recv-$name.log" ||
		{ cat "recv-$name.log"; e2e_fail "chirp-recv did not start"; }
	PORT=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "recv-$name.log")
}

finish() {   # finish NAME — every list reached the subscriber and the ring
	wait $SUB_PID || e2e_fail "chirp-sub ($1) exited $?: $(tail -3 "sub-$1.log")"
	wait $SUM_PID || e2e_fail "chirp-sub --summary ($1) exited $?: $(tail -3 "sum-$1.log")"
	wait $TAP_PID || e2e_fail "chirp-tap ($1) exited $?: $(tail -3 "ring-$1.log")"
	[ "$(e2e_stat publish_det_drops)" = 0 ] || e2e_fail "$1: publish_det_drops $(e2e_stat publish_det_drops)"
}

# 1. The direct path.
stage direct
"$CHIRP_FEED" -c "$CONF" -n $N --rate $RATE "${SYN[@]}" -q 2>feed.log ||
	e2e_fail "chirp-feed failed: $(cat feed.log)"
finish direct

# 2. VRT, 1 % reordered.
stage vrt
recv vrt --payload cf32
"$CHIRP_SEND" -c "$CONF" -d 127.0.0.1:"$PORT" -n $N --rate $RATE --reorder 0.01 --net-seed 11 \
	"${SYN[@]}" >send-vrt.json 2>send-vrt.log || e2e_fail "chirp-send failed: $(cat send-vrt.log)"
wait $RECV_PID || e2e_fail "chirp-recv (vrt) failed: $(cat recv-vrt.log)"
finish vrt

# 3. Plain framing, 1 % lost and 1 % reordered.
stage lossy
recv lossy --framing plain
"$CHIRP_SEND" -c "$CONF" -d 127.0.0.1:"$PORT" --framing plain -n $N --rate $RATE --drop 0.01 \
	--reorder 0.01 --net-seed 12 --drop-log drops.log "${SYN[@]}" >send-lossy.json 2>send-lossy.log ||
	e2e_fail "chirp-send failed: $(cat send-lossy.log)"
wait $RECV_PID || e2e_fail "chirp-recv (lossy) failed: $(cat recv-lossy.log)"
finish lossy
e2e_stop_chirpd || e2e_fail "chirpd exited $? at the end"

"$PY" - $N <<'EOF' || e2e_fail "the published lists: see above"
import json, math, sys
n = int(sys.argv[1])
def dets(name):
    return [m for m in map(json.loads, open("sub-%s.jsonl" % name)) if m["topic"] == "det"]
def same(a, b, what):
    for k in ("seq", "first_sample", "mode", "count", "found", "flags", "incomplete"):
        assert a[k] == b[k], (what, k, a[k], b[k])
    assert len(a["detections"]) == len(b["detections"]), what
    for x, y in zip(a["detections"], b["detections"]):
        for k in ("channel", "range_gate", "doppler_bin"):
            assert x[k] == y[k], (what, k, x, y)
        for k in ("range_m", "velocity_mps", "power", "noise", "snr_db"):
            assert math.isclose(x[k], y[k], rel_tol=1e-6, abs_tol=1e-30), (what, k, x, y)

direct, vrt, lossy = dets("direct"), dets("vrt"), dets("lossy")
per = 16 * 512
for name, L in (("direct", direct), ("vrt", vrt), ("lossy", lossy)):
    assert [m["first_sample"] for m in L] == [k * per for k in range(n)], (name, "CPIs lost or reordered")
    for m in L:
        assert m["list"]["count"] == m["count"] and m["list"]["incomplete"] == m["incomplete"], m
assert sum(m["count"] for m in direct) >= n, "the targets were not detected"
for a, b in zip(direct, vrt):
    same(a, b, "vrt CPI %d" % (a["first_sample"] // per))

want = {d["cpi"]: d["missing"] for d in map(json.loads, open("drops.log"))}
assert want, "the sender lost nothing: raise --drop"
inc = {m["first_sample"] // per for m in lossy if m["incomplete"]}
assert inc == set(want), (sorted(inc), sorted(want))
for m in lossy:
    assert bool(m["flags"] & 32) == m["incomplete"], m
ring = list(map(json.loads, open("ring-lossy.jsonl")))
assert len(ring) == n
got = {r["first_sample"] // per: r["ring_missing"] for r in ring if r["ring_flags"] & 16}
assert got == want, (sorted(got.items()), sorted(want.items()))
assert all(r["incomplete"] == (r["first_sample"] // per in want) for r in ring)
for a, b in zip(direct, lossy):   # the CPIs that lost nothing: the same lists
    if not b["incomplete"]:
        same(a, b, "lossy CPI %d" % (a["first_sample"] // per))
for name, inc_n in (("direct", 0), ("vrt", 0), ("lossy", len(want))):
    m = json.loads(open("sum-%s.json" % name).read())
    assert m["messages"]["det"] == n and m["det_seq_gaps"] == 0, (name, m)
    assert m["incomplete"] == inc_n and m["malformed"] == 0, (name, m)
print("%d CPIs: network lists equal the direct ones; %d incomplete, flagged in header, list and ring"
      % (n, len(want)))
EOF
e2e_pass
