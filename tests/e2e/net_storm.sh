#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# net_storm.sh — bad input on chirp-recv's port, on loopback (127.0.0.1):
#   1. while chirp-send sends a good VRT stream, a storm of random,
#      short, oversized (truncated), wrong-stream and unknown-type
#      datagrams hits the same port: every one is counted by its cause,
#      and the good stream's CPIs reach the ring bit for bit
#      (chirp-tap --verify-input); two receive threads share the port
#      (SO_REUSEPORT, pinned); the counters are served as Prometheus text
#      (--metrics) too;
#   2. context packets that disagree (bandwidth) are counted and, with
#      --refuse-mismatch, the stream's data is refused;
#   3. the kernel's own drops (a stopped receiver, a tiny socket buffer,
#      its size logged) are counted from SO_RXQ_OVFL, and every CPI still
#      goes out in order.
. "$(dirname "$0")/tools_lib.inc"
tools_init net_storm
[ -x "$BIN/chirp-recv" ] && [ -x "$BIN/chirp-send" ] || e2e_skip "chirp-recv/chirp-send are not built"
cd "$T" || exit 1
e2e_config input.format=sc16 cpi.channels=2 cpi.pulses=8 cpi.samples=200 \
	waveform.sample_rate_hz=1e6 waveform.bandwidth_hz=2e5 waveform.pulse_width_s=20e-6
N=40
SYN=(--target 30,-6 --target 120,-10 --seed 9 --snr-db 15)
MPORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

start_recv() {   # start_recv NAME ARGS...
	local name=$1
	shift
	"$BIN/chirp-recv" -c "$CONF" --listen 127.0.0.1:0 --wait 10 "$@" >"recv-$name.json" 2>"recv-$name.log" &
	RECV=$!
	e2e_track $RECV
	e2e_wait 10 grep -q "listening on port" "recv-$name.log" || { cat "recv-$name.log"; e2e_fail "chirp-recv did not start"; }
	PORT=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "recv-$name.log")
}

# 1. The storm beside a good stream.
"$CHIRP_TAP" -c "$CONF" --create -n $N --verify-input "${SYN[@]}" --timeout $((30 * E2E_SLOW)) >tap.log 2>&1 &
TAP=$!
e2e_track $TAP
wait_ring "$IN_RING"
start_recv storm --idle-exit 1.5 --expect-bandwidth 2e5 --metrics 127.0.0.1:"$MPORT" --threads 2 --cpus 0-1
"$PY" - "$PORT" >storm.json <<'PYEOF' &
import json, os, random, socket, struct, sys, time
port = int(sys.argv[1])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
rnd = random.Random(7)
n = {"malformed": 0, "wrong_stream": 0}
def send(b, cause):
    s.sendto(b, ("127.0.0.1", port)); n[cause] += 1
end = time.monotonic() + 0.6
while time.monotonic() < end:
    for _ in range(20):   # about 10 000 datagrams a second: a storm the
                          # kernel keeps (the good stream must lose nothing)
        k = rnd.randrange(5)
        if k == 0:    # random bytes, whatever their first word says
            b = bytearray(os.urandom(rnd.randrange(1, 200)))
            b[0] = (b[0] & 0x0f) | 0x60          # command packet type: never valid
            send(bytes(b), "malformed")
        elif k == 1:  # shorter than a header word
            send(os.urandom(rnd.randrange(1, 4)), "malformed")
        elif k == 2:  # size field says more than the datagram holds
            send(struct.pack(">II", 0x18600000 | 500, 0) + bytes(24), "malformed")
        elif k == 3:  # oversized: truncated by the receiver
            send(bytes(9300), "malformed")
        else:         # a valid DIFI packet of a stream nobody mapped
            pay = bytes(64)
            hdr = struct.pack(">IIIIIQ", (1 << 28) | (1 << 27) | (1 << 22) | (2 << 20) | (7 + 16),
                              99, 0x6A621E, 0, 1, 0)
            send(hdr + pay, "wrong_stream")
    time.sleep(0.002)
print(json.dumps(n))
PYEOF
STORM=$!
e2e_track $STORM
"$BIN/chirp-send" -c "$CONF" -d 127.0.0.1:"$PORT" -n $N --rate 80 --bandwidth 2e5 --context-every 4 \
	"${SYN[@]}" >send.json 2>send.log || { cat send.log; e2e_fail "chirp-send failed"; }
wait_pid $STORM 20 || e2e_fail "the storm sender failed"
curl -sf "http://127.0.0.1:$MPORT/metrics" >metrics.txt || e2e_fail "no /metrics"
wait_pid $RECV 20 || { cat recv-storm.log; e2e_fail "chirp-recv failed"; }
wait_pid $TAP 20 || { cat tap.log; e2e_fail "chirp-tap --verify-input failed"; }
grep -q "verified $N, mismatches 0" tap.log || e2e_fail "storm: $(cat tap.log)"
"$PY" - storm.json recv-storm.json metrics.txt <<'PYEOF' || e2e_fail "storm counters wrong"
import json, sys
sent = json.load(open(sys.argv[1]))
r = json.loads(open(sys.argv[2]).read().strip().splitlines()[-1])
d = r["drops"]
# the kernel may drop some of the storm (counted as kernel); none may be
# counted as anything else, and the good stream lost nothing
assert d["kernel"] == 0 or d["malformed"] + d["wrong_stream"] + d["kernel"] >= sum(sent.values()), (sent, r)
if d["kernel"] == 0:
    assert d["malformed"] == sent["malformed"] and d["wrong_stream"] == sent["wrong_stream"], (sent, r)
for k in ("late", "duplicate", "context_mismatch", "ring_full", "bad_channel", "before_t0"):
    assert d[k] == 0, (k, r)
assert r["cpis"]["complete"] == 40 and r["cpis"]["partial"] == 0, r
m = open(sys.argv[3]).read()
assert 'chirp_recv_drops_total{cause="malformed"}' in m and "chirp_recv_packets_total" in m, m
print("storm: %d malformed and %d wrong-stream datagrams counted; %d CPIs intact"
      % (d["malformed"], d["wrong_stream"], r["cpis"]["complete"]))
PYEOF
e2e_log "storm counted, good stream intact"

# 2. Context mismatch: counted, and with --refuse-mismatch the data refused.
IN_RING=/$E2E_UNIQ-b
e2e_config input.ring="$IN_RING" input.format=sc16 cpi.channels=2 cpi.pulses=8 cpi.samples=200 \
	waveform.sample_rate_hz=1e6 waveform.bandwidth_hz=2e5 waveform.pulse_width_s=20e-6
"$CHIRP_TAP" -r "$IN_RING" --create --geometry 2,8,200 --format sc16 -n 1 --drain --timeout 10 >tap2.log 2>&1 &
TAP=$!
e2e_track $TAP
wait_ring "$IN_RING"
start_recv ctx --expect-bandwidth 2e5 --refuse-mismatch --idle-exit 0.5
"$BIN/chirp-send" -c "$CONF" -d 127.0.0.1:"$PORT" -n 4 --rate 100 --bandwidth 3e5 --context-every 1 \
	>send2.json 2>send2.log || { cat send2.log; e2e_fail "chirp-send failed"; }
wait_pid $RECV 20 || { cat recv-ctx.log; e2e_fail "chirp-recv failed"; }
grep -q "context says bandwidth 300000 Hz, expected 200000; refusing the stream" recv-ctx.log ||
	e2e_fail "no mismatch logged: $(cat recv-ctx.log)"
"$PY" - recv-ctx.json <<'PYEOF' || e2e_fail "context counters wrong"
import json, sys
r = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
assert r["packets"] == 0 and r["cpis"]["complete"] + r["cpis"]["partial"] == 0, r
assert r["context_packets"] == 8 and r["drops"]["context_mismatch"] == 8 + 4 * 8 * 2, r
PYEOF
kill $TAP 2>/dev/null
e2e_log "context mismatch counted and refused"

# 3. The kernel's drops: a receiver stopped (SIGSTOP) while a burst fills
#    its tiny socket buffer; the rest of the burst is dropped by the kernel,
#    counted from SO_RXQ_OVFL once it runs again, and every CPI still goes
#    out, in order, the lost samples flagged and counted.
IN_RING=/$E2E_UNIQ-c
"$CHIRP_TAP" -r "$IN_RING" --create --geometry 2,8,200 --format sc16 --slots 64 -n 100000 --drain \
	--timeout 20 >tap3.log 2>&1 &
TAP=$!
e2e_track $TAP
wait_ring "$IN_RING"
start_recv kern -r "$IN_RING" --sample-rate 1e6 --rcvbuf 4096 --idle-exit 1 --horizon 8 --cpi-log cpi-kern.log
kill -STOP $RECV
"$BIN/chirp-send" -c "$CONF" -d 127.0.0.1:"$PORT" -n 20 --rate 100000 --context-every 0 \
	>send3.json 2>send3.log || { kill -CONT $RECV; cat send3.log; e2e_fail "chirp-send failed"; }
kill -CONT $RECV
"$BIN/chirp-send" -c "$CONF" -d 127.0.0.1:"$PORT" --start 20 -n 4 --rate 200 --context-every 0 \
	>send4.json 2>send4.log || { cat send4.log; e2e_fail "chirp-send failed"; }
wait_pid $RECV 20 || { cat recv-kern.log; e2e_fail "chirp-recv failed"; }
kill $TAP 2>/dev/null
"$PY" - recv-kern.json cpi-kern.log <<'PYEOF' || e2e_fail "kernel drops not counted"
import json, sys
r = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
assert r["drops"]["kernel"] > 0, r
cpis = [json.loads(l) for l in open(sys.argv[2])]
idx = [c["cpi"] for c in cpis]
assert idx == list(range(idx[0], idx[0] + len(idx))) and 20 <= idx[-1] <= 23, idx
assert all(bool(c["flags"] & 16) == (c["missing"] > 0) for c in cpis), cpis
assert r["cpis"]["partial"] > 0 and r["cpis"]["dropped"] == 0, r
print("kernel drops: %d counted; %d CPIs out in order, %d incomplete"
      % (r["drops"]["kernel"], len(idx), r["cpis"]["partial"]))
PYEOF
grep -q "socket receive buffer 4096 bytes" recv-kern.log ||
	e2e_fail "the receive buffer obtained is not logged: $(cat recv-kern.log)"
e2e_pass
