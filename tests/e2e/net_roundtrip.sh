#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# net_roundtrip.sh — the network path, on loopback only (127.0.0.1), CPU
# backend: chirp-send -> VRT/UDP (or plain UDP) -> chirp-recv -> chirpd ->
# chirp-tap --verify, against the direct path (chirp-feed -> chirpd) with
# the same synthesis:
#   1. direct ring path: every CPI verified (the reference);
#   2. VRT, 1 % of packets reordered: every CPI verified, CPI for CPI,
#      nothing late, duplicate or malformed;
#   3. plain framing, 1 % lost and 1 % reordered: every CPI arrives, in
#      order, none lost; exactly the CPIs that lost packets are committed
#      INCOMPLETE with the right count of missing samples, chirpd passes
#      the flag on to its output (the tap's SigMF captures record it), and
#      exactly those fail --verify (noise fills every sample, so a zeroed
#      hole always shows);
#   4. chirp-send --same-cpi on two threads into chirp-recv's ring: the
#      input verified bit for bit.
# Stages 2 and 3 receive on two threads: one sender's one flow carries
# both channels, and each thread takes one channel's packets (chirp-recv
# steers by stream ID or channel, not by the kernel's flow hash).
. "$(dirname "$0")/lib.sh"
e2e_init net_roundtrip
e2e_need chirp-feed chirp-tap chirp-recv chirp-send
CHIRP_RECV=$BIN/chirp-recv
CHIRP_SEND=$BIN/chirp-send

cd "$T" || exit 1
N=120
SYN=(--target 40,-6 --target 100,-12,0.125/pulse --seed 5 --snr-db 20)
RATE=150     # CPIs per second: about 0.8 s per run

# stage NAME — a fresh chirpd on rings of its own (a first producer on a
# new ring: no DISCONTINUITY from a producer change), and a tap that
# verifies N CPIs of its output in the background ($TAP_PID, tap-NAME.log).
stage() {
	[ -n "$CHIRPD_PID" ] && { e2e_stop_chirpd || e2e_fail "chirpd exited $? after $PREV"; }
	IN_RING=/$E2E_UNIQ-in-$1
	OUT_RING=/$E2E_UNIQ-out-$1
	e2e_config input.ring="$IN_RING" output.ring="$OUT_RING" input.format=sc16 \
		input.slots=16 cpi.channels=2 cpi.pulses=16 cpi.samples=256 \
		waveform.sample_rate_hz=1e6 waveform.bandwidth_hz=2e5 waveform.pulse_width_s=20e-6
	e2e_start_chirpd
	"$CHIRP_TAP" -c "$CONF" -r "$OUT_RING" -n $N --verify "${SYN[@]}" --sigmf "out-$1" \
		--timeout $((30 * E2E_SLOW)) >"tap-$1.log" 2>&1 &
	TAP_PID=$!
	e2e_track $TAP_PID
	e2e_wait_consumer "$OUT_RING" $TAP_PID || e2e_fail "chirp-tap did not attach"
	PREV=$1
}

# recv NAME ARGS... — chirp-recv into this stage's input ring on a port of
# the kernel's choice ($PORT), committing N CPIs, in the background.
recv() {
	local name=$1
	shift
	"$CHIRP_RECV" -c "$CONF" --listen 127.0.0.1:0 --count $N --deadline-ms 250 \
		--cpi-log "cpi-$name.log" --wait 10 "$@" >"recv-$name.json" 2>"recv-$name.log" &
	RECV_PID=$!
	e2e_track $RECV_PID
	e2e_wait 10 grep -q "listening on port" "recv-$name.log" ||
		{ cat "recv-$name.log"; e2e_fail "chirp-recv did not start"; }
	PORT=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "recv-$name.log")
}

wait_job() {   # wait_job PID WHAT LOG...
	local pid=$1 what=$2 i
	shift 2
	for ((i = 0; i < 300 * E2E_SLOW; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$pid" 2>/dev/null && { kill -KILL "$pid"; cat "$@"; e2e_fail "$what hung"; }
	wait "$pid"
}

json() {   # json FILE EXPR — a field of the last JSON line of FILE
	"$PY" -c 'import json, sys
d = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
print(eval(sys.argv[2], {}, {"d": d}))' "$1" "$2"
}

# 1. The direct path.
stage direct
"$CHIRP_FEED" -c "$CONF" -n $N --rate $RATE "${SYN[@]}" >feed.log 2>&1 ||
	{ cat feed.log; e2e_fail "chirp-feed failed"; }
wait_job $TAP_PID "chirp-tap (direct)" tap-direct.log || { cat tap-direct.log; e2e_fail "direct path failed"; }
grep -q "verified $N, mismatches 0" tap-direct.log || e2e_fail "direct: $(cat tap-direct.log)"
e2e_log "direct path: $N CPIs verified"

# 2. VRT with 1 % reordered: the same CPIs, verified one by one.
stage vrt
recv vrt --threads 2
"$CHIRP_SEND" -c "$CONF" -d 127.0.0.1:"$PORT" -n $N --rate $RATE --reorder 0.01 \
	--net-seed 11 "${SYN[@]}" >send-vrt.json 2>send-vrt.log ||
	{ cat send-vrt.log; e2e_fail "chirp-send failed"; }
wait_job $RECV_PID "chirp-recv (vrt)" recv-vrt.log || { cat recv-vrt.log; e2e_fail "chirp-recv (vrt) failed"; }
wait_job $TAP_PID "chirp-tap (vrt)" tap-vrt.log || { cat tap-vrt.log recv-vrt.json; e2e_fail "VRT path failed"; }
grep -q "verified $N, mismatches 0" tap-vrt.log || e2e_fail "vrt: $(cat tap-vrt.log)"
grep -q "received $N, gaps 0" tap-vrt.log || e2e_fail "vrt gaps: $(cat tap-vrt.log)"
[ "$(json send-vrt.json 'd["reordered"] > 0 and d["dropped"] == 0 and d["refused"] == 0')" = True ] ||
	e2e_fail "sender: $(cat send-vrt.json)"
[ "$(json recv-vrt.json 'd["cpis"]["complete"]')" = $N ] || e2e_fail "receiver: $(cat recv-vrt.json)"
[ "$(json recv-vrt.json 'sum(d["drops"].values())')" = 0 ] || e2e_fail "receiver drops: $(cat recv-vrt.json)"
[ "$(json recv-vrt.json 'd["context_packets"] > 0')" = True ] || e2e_fail "no context packets seen"
[ "$(json recv-vrt.json 'len(d["thread_packets"]) == 2 and min(d["thread_packets"]) > 0 and abs(d["thread_packets"][0] - d["thread_packets"][1]) <= 1')" = True ] ||
	e2e_fail "the two receive threads did not take one channel each: $(cat recv-vrt.json)"
e2e_log "VRT path, 1 % reordered: $N CPIs verified, CPI for CPI"

# 3. Plain framing, 1 % lost and 1 % reordered.
stage lossy
recv lossy --framing plain --threads 2
"$CHIRP_SEND" -c "$CONF" -d 127.0.0.1:"$PORT" --framing plain -n $N --rate $RATE \
	--drop 0.01 --reorder 0.01 --net-seed 12 --drop-log drops.log "${SYN[@]}" \
	>send-lossy.json 2>send-lossy.log || { cat send-lossy.log; e2e_fail "chirp-send failed"; }
wait_job $RECV_PID "chirp-recv (lossy)" recv-lossy.log || { cat recv-lossy.log; e2e_fail "chirp-recv (lossy) failed"; }
wait_job $TAP_PID "chirp-tap (lossy)" tap-lossy.log   # exits 4: mismatches
grep -q "received $N, gaps 0 (0 CPIs missing)" tap-lossy.log || e2e_fail "lossy: $(cat tap-lossy.log)"
"$PY" - $N drops.log cpi-lossy.log recv-lossy.json tap-lossy.log <<'PYEOF' || e2e_fail "lossy run check failed"
import json, re, sys
n = int(sys.argv[1])
want = {d["cpi"]: d["missing"] for d in map(json.loads, open(sys.argv[2]))}
got = [json.loads(l) for l in open(sys.argv[3])]
assert want, "the sender lost nothing: raise --drop"
# every CPI committed once, in order
assert [c["cpi"] for c in got] == list(range(n)), [c["cpi"] for c in got][:20]
INCOMPLETE = 1 << 4
inc = {c["cpi"]: c["missing"] for c in got if c["flags"] & INCOMPLETE}
assert all((c["missing"] > 0) == bool(c["flags"] & INCOMPLETE) for c in got)
assert inc == want, (sorted(inc.items()), sorted(want.items()))
r = json.loads(open(sys.argv[4]).read().strip().splitlines()[-1])
assert r["cpis"] == {"complete": n - len(want), "partial": len(want), "dropped": 0}, r
assert r["missing_samples"] == sum(want.values()), r
assert r["drops"]["late"] == 0 and r["drops"]["duplicate"] == 0 and r["drops"]["malformed"] == 0, r
assert len(r["thread_packets"]) == 2 and min(r["thread_packets"]) > 0, r
out = json.load(open("out-lossy.sigmf-meta"))["captures"]
assert [c["chirp:first_sample"] for c in out] == [k * 16 * 256 for k in range(n)]
assert {c["chirp:first_sample"] // (16 * 256) for c in out if c["chirp:flags"] & INCOMPLETE} == set(want)
tap = open(sys.argv[5]).read()
m = re.search(r"verified (\d+), mismatches (\d+)", tap)
assert m and int(m.group(1)) == n - len(want) and int(m.group(2)) == len(want), (tap, len(want))
print("lossy: %d of %d CPIs incomplete, %d samples missing, each flagged and counted"
      % (len(want), n, sum(want.values())))
PYEOF
e2e_stop_chirpd || e2e_fail "chirpd exited $? at the end"

# 4. chirp-send --same-cpi (the benchmark's sender: the payload sent from
#    the CPI converted once, beside each header) on two threads, 1 %
#    reordered: chirp-recv's input ring holds the synthesized CPI, bit for
#    bit, every time (no noise, no Doppler: every CPI is the first).
IN_RING=/$E2E_UNIQ-in-same
SYN1=(--target 40,-6 --noiseless)
"$CHIRP_TAP" -c "$CONF" -r "$IN_RING" --create --verify-input "${SYN1[@]}" -n $N \
	--timeout $((30 * E2E_SLOW)) >tap-same.log 2>&1 &
TAP_PID=$!
e2e_track $TAP_PID
e2e_wait 10 test -e "/dev/shm$IN_RING" || e2e_fail "chirp-tap did not create $IN_RING"
recv same -r "$IN_RING" --threads 2
"$CHIRP_SEND" -c "$CONF" -d 127.0.0.1:"$PORT" -n $N --rate $RATE --same-cpi --threads 2 \
	--reorder 0.01 --net-seed 13 "${SYN1[@]}" >send-same.json 2>send-same.log ||
	{ cat send-same.log; e2e_fail "chirp-send --same-cpi failed"; }
wait_job $RECV_PID "chirp-recv (same)" recv-same.log || { cat recv-same.log; e2e_fail "chirp-recv (same) failed"; }
wait_job $TAP_PID "chirp-tap (same)" tap-same.log || { cat tap-same.log recv-same.json; e2e_fail "--same-cpi path failed"; }
grep -q "verified $N, mismatches 0" tap-same.log || e2e_fail "same: $(cat tap-same.log)"
[ "$(json send-same.json 'd["reordered"] > 0')" = True ] || e2e_fail "sender: $(cat send-same.json)"
e2e_log "chirp-send --same-cpi, two threads, 1 % reordered: $N CPIs verified"
e2e_pass
