#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# tools_pointing.sh — each CPI's pointing, in band, end to end (CPU backend):
#   chirp-feed --pointing '0,0;10,-2.5;-20,5' commits every CPI with the
#   schedule's entry; chirpd hands each input block's pointing to its
#   output block, its detection list's block and its [detections] file
#   line; chirp-tap prints it per block (--blocks), in each list (--jsonl)
#   and counts the CPIs per pointing; a SigMF capture of the output carries
#   it (chirp:pointing) and chirp-feed --sigmf replays it. The lists are
#   version 2 without beams (beams false, no beam fields). A malformed
#   --pointing is refused naming the entry.
. "$(dirname "$0")/lib.sh"
e2e_init tools_pointing
e2e_need chirp-feed chirp-tap

DET_RING=/$E2E_UNIQ-det
N=$((30 / E2E_SLOW))
N=$((N - N % 3))
SCHED='0,0;10,-2.5;-20,5'
P=16 R=512
e2e_config cpi.pulses=$P cpi.samples=$R waveform.pulse_width_s=2e-6 \
	waveform.bandwidth_hz=5e6 input.slots=32 output.slots=64 \
	radar.prf_hz=10000 radar.carrier_hz=1e9 doppler.enable=true doppler.fft=16 \
	cfar.enable=true cfar.pfa=1e-4 cfar.max_detections=64 \
	detections.ring=$DET_RING detections.slots=64 detections.file="$T/det.jsonl" \
	output.mode=map_db
e2e_start_chirpd

# check_pointing FILE KIND — every line of FILE (KIND blocks: "block seq=..
# pointing=AZ,EL first_sample=.."; KIND jsonl: the lists) has the pointing
# of its CPI k = first_sample / (P*R) in the schedule.
check_pointing() {
	"$PY" - "$1" "$2" "$SCHED" $P $R $N <<'PYEOF' || e2e_fail "pointing per CPI in $1"
import json, re, sys
path, kind, sched, P, R, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
sched = [tuple(float(v) for v in e.split(",")) for e in sched.split(";")]
rows = []
for line in open(path):
    if kind == "blocks":
        m = re.match(r"block seq=\d+ mode=\d+ pointing=([-\d.e+]+),([-\d.e+]+) first_sample=(\d+) ", line)
        if m:
            rows.append((int(m.group(3)), float(m.group(1)), float(m.group(2))))
    else:
        j = json.loads(line)
        assert j["beams"] is False and all("beam" not in d for d in j["detections"]), j
        rows.append((j["first_sample"], j["pointing_az_deg"], j["pointing_el_deg"]))
assert len(rows) == n, (len(rows), n)
for fs, az, el in rows:
    k = fs // (P * R)
    assert (az, el) == sched[k % len(sched)], (k, az, el)
PYEOF
}

# 1. The schedule through chirpd: output blocks, lists and the file.
"$CHIRP_TAP" -c "$CONF" -n $N --blocks --sigmf "$T/cap" --timeout $((60 * E2E_SLOW)) -q \
	>"$T/blocks.txt" 2>"$T/tap.log" &
TAP=$!
e2e_track $TAP
"$CHIRP_TAP" -c "$CONF" -n $N --jsonl --timeout $((60 * E2E_SLOW)) >"$T/det-tap.jsonl" \
	2>"$T/det-tap.log" &
DTAP=$!
e2e_track $DTAP
e2e_wait_consumer "$OUT_RING" $TAP
e2e_wait_consumer "$DET_RING" $DTAP
"$CHIRP_FEED" -c "$CONF" --target 100,-20 --snr-db 10 --seed 3 -n $N --block -q \
	--pointing "$SCHED" 2>"$T/feed.log" || { cat "$T/feed.log"; e2e_fail "chirp-feed --pointing"; }
wait $TAP || { cat "$T/tap.log"; e2e_fail "chirp-tap --blocks"; }
wait $DTAP || { cat "$T/det-tap.log"; e2e_fail "chirp-tap --jsonl"; }
check_pointing "$T/blocks.txt" blocks
check_pointing "$T/det-tap.jsonl" jsonl
e2e_wait 10 eval '[ "$(wc -l <"$T/det.jsonl")" -ge $N ]' || e2e_fail "[detections] file: $(wc -l <"$T/det.jsonl") lines"
head -n $N "$T/det.jsonl" >"$T/det-file.jsonl"
"$PY" - "$T/det-file.jsonl" "$T/det-tap.jsonl" <<'PYEOF' || e2e_fail "[detections] file pointing"
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = {j["seq"]: j for j in map(json.loads, open(sys.argv[2]))}
for j in a:
    t = b[j["seq"]]
    assert (j["pointing_az_deg"], j["pointing_el_deg"]) == (t["pointing_az_deg"], t["pointing_el_deg"]), (j, t)
    assert j["beams"] is False
PYEOF
k=$((N / 3))
grep -q "CPIs per pointing: 0,0: $k, 10,-2.5: $k, -20,5: $k" "$T/tap.log" ||
	e2e_fail "per-pointing counts: $(cat "$T/tap.log")"
e2e_log "pointing $SCHED carried to $N output blocks, lists and file lines"

# 2. A SigMF capture carries it (chirp:pointing, where it changes), and
#    chirp-feed --sigmf replays it: feed -> ring A -> capture; capture ->
#    ring B -> blocks.
GEO=(--geometry 2,$P,$R --format cf32)
"$CHIRP_TAP" -r /$E2E_UNIQ-a --create "${GEO[@]}" -n $N --sigmf "$T/cap" \
	--timeout $((60 * E2E_SLOW)) -q 2>"$T/tapa.log" &
TAP=$!
e2e_track $TAP
e2e_wait_consumer /$E2E_UNIQ-a $TAP
"$CHIRP_FEED" -c "$CONF" -r /$E2E_UNIQ-a --target 100,-20 --seed 3 -n $N --block -q \
	--pointing "$SCHED" 2>"$T/feeda.log" || { cat "$T/feeda.log"; e2e_fail "feed into ring A"; }
wait $TAP || { cat "$T/tapa.log"; e2e_fail "capture of ring A"; }
"$PY" - "$T/cap.sigmf-meta" <<'PYEOF' || e2e_fail "chirp:pointing in the capture"
import json, sys
caps = json.load(open(sys.argv[1]))["captures"]
have = [c["chirp:pointing"] for c in caps if "chirp:pointing" in c]
assert have[:3] == [[10, -2.5], [-20, 5], [0, 0]], have[:3]
assert len(have) == len(caps) - 1, (len(have), len(caps))   # every change, none at first
PYEOF
"$CHIRP_TAP" -r /$E2E_UNIQ-b --create "${GEO[@]}" -n $N --blocks \
	--timeout $((60 * E2E_SLOW)) -q >"$T/blocks-b.txt" 2>"$T/tapb.log" &
TAP=$!
e2e_track $TAP
e2e_wait_consumer /$E2E_UNIQ-b $TAP
"$CHIRP_FEED" -r /$E2E_UNIQ-b --sigmf "$T/cap" --block -q 2>"$T/feedb.log" ||
	{ cat "$T/feedb.log"; e2e_fail "chirp-feed --sigmf"; }
wait $TAP || { cat "$T/tapb.log"; e2e_fail "tap of the replay"; }
check_pointing "$T/blocks-b.txt" blocks
e2e_log "SigMF: chirp:pointing recorded and replayed"

# 3. A malformed schedule is refused, naming the entry.
for bad in '10' '10,0;x,1' '10,0;;' '400,0' '1,2,3'; do
	"$CHIRP_FEED" -c "$CONF" --target 100,-20 -n 1 --pointing "$bad" >"$T/bad.log" 2>&1 &&
		e2e_fail "--pointing '$bad' accepted"
	grep -q -- "--pointing: entry [0-9]* .*: want AZ_DEG,EL_DEG" "$T/bad.log" ||
		e2e_fail "--pointing '$bad': $(cat "$T/bad.log")"
done
e2e_log "malformed --pointing refused"
e2e_pass
