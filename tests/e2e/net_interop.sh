#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# net_interop.sh — chirp-send's packets decode in an implementation that is
# not ours: Wireshark's VITA 49 dissector (tshark) reads every data packet
# with the stream ID, packet count, class ID, size and integer and
# picosecond timestamps chirp-send means, and its context packets as
# context. The datagrams are received on loopback (127.0.0.1) by a small
# Python sink that writes them as a pcap file; no capture privileges needed.
# Exit 0 pass, 77 skipped (no tshark, or no VRT dissector), else fail.
. "$(dirname "$0")/tools_lib.inc"
tools_init net_interop
[ -x "$BIN/chirp-send" ] || e2e_skip "$BIN/chirp-send is not built"
command -v tshark >/dev/null || e2e_skip "tshark is not installed (apt-get install tshark)"
tshark -G protocols 2>/dev/null | grep -qw vrt || e2e_skip "tshark has no VRT dissector"
cd "$T" || exit 1

e2e_config input.format=sc16 cpi.channels=2 cpi.pulses=4 cpi.samples=300 \
	waveform.sample_rate_hz=1e6 waveform.bandwidth_hz=2e5 waveform.pulse_width_s=20e-6
N=3 C=2 P=4 R=300 FS=1000000 T0=7 SID=4096 MAXPL=800   # 200 samples per packet

# The sink: every datagram to 127.0.0.1:PORT into cap.pcap (Ethernet, IPv4,
# UDP headers around it), until 1 s without one.
"$PY" - <<'PYEOF' &
import socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 0))
open("port", "w").write(str(s.getsockname()[1]))
port = s.getsockname()[1]
s.settimeout(10)
frames = []
while True:
    try:
        d = s.recv(65536)
    except socket.timeout:
        break
    frames.append(d)
    s.settimeout(1)
with open("cap.pcap", "wb") as f:
    f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
    for i, d in enumerate(frames):
        udp = struct.pack(">HHHH", 40000, port, 8 + len(d), 0) + d
        ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), i & 0xffff, 0, 64, 17, 0,
                         bytes([127, 0, 0, 1]), bytes([127, 0, 0, 1])) + udp
        eth = b"\0" * 12 + b"\x08\x00" + ip
        f.write(struct.pack("<IIII", i, 0, len(eth), len(eth)) + eth)
PYEOF
SINK=$!
e2e_track $SINK
e2e_wait 10 test -s port || e2e_fail "the sink did not start"
PORT=$(cat port)
"$BIN/chirp-send" -c "$CONF" -d 127.0.0.1:"$PORT" -n $N --rate 200 --t0 $T0 --stream-base $SID \
	--max-payload $MAXPL --context-every 2 --bandwidth 2e5 >send.json 2>send.log ||
	{ cat send.log; e2e_fail "chirp-send failed"; }
wait_pid $SINK 20 || e2e_fail "the sink failed"

tshark -r cap.pcap -d udp.port=="$PORT",vrt -T fields -E separator=, \
	-e vrt.type -e vrt.sid -e vrt.seq -e vrt.len -e vrt.tsi -e vrt.tsf -e vrt.ts_int \
	-e vrt.ts_frac_picosecond -e vrt.oui -e vrt.pcc >fields.csv 2>tshark.log ||
	{ cat tshark.log; e2e_fail "tshark failed"; }
"$PY" - $N $C $P $R $FS $T0 $SID $MAXPL fields.csv <<'PYEOF' || e2e_fail "tshark's decoding differs"
import sys
n, c, p, r, fs, t0, sid, maxpl = map(int, sys.argv[1:9])
rows = [l.strip().split(",") for l in open(sys.argv[9]) if l.strip()]
per = maxpl // 4
want, ctx, seq = [], 0, [0] * c
for k in range(n):
    if k % 2 == 0:
        ctx += c
    for pulse in range(p):
        for ch in range(c):
            for off in range(0, r, per):
                m = min(per, r - off)
                s = t0 * fs + (k * p + pulse) * r + off
                want.append(("1", str(sid + ch), str(seq[ch] % 16), str(7 + m), "1", "2",
                             str(s // fs), str((s % fs) * 10**12 // fs)))
                seq[ch] += 1
data = [(x[0], str(int(x[1], 0))) + tuple(x[2:8]) for x in rows if x[0] == "1"]
ctxs = [x for x in rows if x[0] == "4"]
assert len(ctxs) == ctx, (len(ctxs), ctx)
assert all(int(x[8], 0) == 0x6A621E for x in rows), rows[0]   # the DIFI OUI
assert all(int(x[9], 0) == (0 if x[0] == "1" else 1) for x in rows), rows[0]
assert data == want, [(a, b) for a, b in zip(data, want) if a != b][:3] or (len(data), len(want))
print("tshark decoded %d data and %d context packets as sent" % (len(data), len(ctxs)))
PYEOF
e2e_pass
