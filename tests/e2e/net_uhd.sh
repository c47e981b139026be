#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# net_uhd.sh — packets packed by UHD's VRT packer (Debian's libuhd-dev,
# uhd::transport::vrt::if_hdr_pack_be, in the test-only program
# net_uhd_send.cpp) are received by chirp-recv on loopback (127.0.0.1): the
# ring (made by chirp-tap --create) holds exactly the samples sent, each
# where its sample-count timestamp puts it, packets reordered in pairs and
# crossing pulse boundaries. Exit 0 pass, 77 skipped (no libuhd-dev or
# g++), else fail.
. "$(dirname "$0")/tools_lib.inc"
tools_init net_uhd
[ -x "$BIN/chirp-recv" ] || e2e_skip "$BIN/chirp-recv is not built"
[ -f /usr/include/uhd/transport/vrt_if_packet.hpp ] || e2e_skip "libuhd-dev is not installed"
command -v g++ >/dev/null || e2e_skip "g++ is not installed"
SRC=$(cd "$(dirname "$0")" && pwd)/net_uhd_send.cpp
cd "$T" || exit 1
g++ -O1 -o uhd_send "$SRC" -luhd >build.log 2>&1 || { cat build.log; e2e_fail "building net_uhd_send failed"; }

RING=/$E2E_UNIQ-a
N=3 P=4 R=250 SID=0x1234 CHUNK=96
"$CHIRP_TAP" -r "$RING" --create --geometry 1,$P,$R --format sc16 --slots 8 --sample-rate 1e6 \
	-n $N --out out.raw --timeout $((30 * E2E_SLOW)) >tap.log 2>&1 &
TAP=$!
e2e_track $TAP
wait_ring "$RING"
"$BIN/chirp-recv" -r "$RING" --listen 127.0.0.1:0 --stream $SID:0 -n $N --deadline-ms 200 \
	--cpi-log cpi.log >recv.json 2>recv.log &
RECV=$!
e2e_track $RECV
e2e_wait 10 grep -q "listening on port" recv.log || { cat recv.log; e2e_fail "chirp-recv did not start"; }
PORT=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' recv.log)
./uhd_send "$PORT" $N $P $R $SID $CHUNK >send.log 2>&1 || { cat send.log; e2e_fail "net_uhd_send failed"; }
wait_pid $RECV 20 || { cat recv.log recv.json; e2e_fail "chirp-recv failed"; }
wait_pid $TAP 20 || { cat tap.log; e2e_fail "chirp-tap failed"; }
"$PY" - $((N * P * R)) recv.json cpi.log <<'PYEOF' || e2e_fail "the ring differs from what UHD's packets carried"
import json, struct, sys
n = int(sys.argv[1])
want = b"".join(struct.pack("<hh", s % 30011 - 15000, -(s % 30011 - 15000)) for s in range(n))
got = open("out.raw", "rb").read()
assert got == want, next(i for i in range(min(len(got), len(want))) if got[i] != want[i]) if len(got) == len(want) else (len(got), len(want))
r = json.loads(open(sys.argv[2]).read().strip().splitlines()[-1])
assert r["cpis"]["complete"] == 3 and r["cpis"]["partial"] == 0, r
assert sum(r["drops"].values()) == 0, r
print("UHD-packed packets: %d samples placed exactly, %d packets" % (n, r["packets"]))
PYEOF
e2e_pass
