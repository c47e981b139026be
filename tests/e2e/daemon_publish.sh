#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# daemon_publish.sh — [publish] end to end on the CPU backend: chirpd runs
# the radar chain (Doppler + CFAR, map output) on CPIs with a moving target
# from chirp-feed and publishes on ZeroMQ (tcp://127.0.0.1, a port the
# system picks). chirp-sub receives:
#   - every CPI's detection list, in order, equal to the detection ring's
#     (read by chirp-tap --jsonl), or as many fewer as counted drops;
#   - maps at maps_hz, reduced by max-hold to the configured size;
#   - status messages holding chirpctl status's JSON;
# through a reload (the [publish] keys themselves change on restart only),
# and the counters are in stats, status and the Prometheus text.
. "$(dirname "$0")/lib.sh"
e2e_init publish
e2e_need chirp-feed chirp-tap chirp-sub
CHIRP_SUB=$BIN/chirp-sub
DET_RING=/$E2E_UNIQ-det
N=$((200 / E2E_SLOW))
RATE=$((100 / E2E_SLOW))
GATE=100 BIN=4 DOPPLER_HZ=2500
e2e_config cpi.pulses=16 cpi.samples=512 waveform.pulse_width_s=2e-6 \
	waveform.bandwidth_hz=5e6 input.slots=64 output.slots=64 \
	radar.prf_hz=10000 radar.carrier_hz=1e9 \
	doppler.enable=true doppler.fft=16 doppler.window=hann \
	cfar.enable=true cfar.pfa=1e-4 cfar.guard_range=3 cfar.train_range=8 \
	cfar.guard_doppler=1 cfar.train_doppler=3 cfar.max_detections=64 \
	detections.ring=$DET_RING detections.slots=64 output.mode=map_db \
	publish.listen='tcp://127.0.0.1:*' publish.status_hz=10 publish.maps_hz=20 \
	publish.map_max_range=100 publish.map_max_doppler=8
e2e_start_chirpd

EP=$(e2e_ctl --json status | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["publish"]["endpoint"])')
case $EP in tcp://127.0.0.1:[0-9]*) ;; *) e2e_fail "status publish.endpoint: '$EP'";; esac
e2e_log "publishing on $EP"

"$CHIRP_SUB" "$EP" --topics det,map,status -n $N --timeout $((60 * E2E_SLOW)) --ready-file "$T/ready" \
	>"$T/sub.jsonl" 2>"$T/sub.log" &
SUB=$!
e2e_track $SUB
"$CHIRP_TAP" -c "$CONF" -n $N --jsonl --timeout $((60 * E2E_SLOW)) >"$T/tap.jsonl" 2>"$T/tap.log" &
TAP=$!
e2e_track $TAP
"$CHIRP_TAP" -c "$CONF" -n $N --drain --timeout $((60 * E2E_SLOW)) -q 2>"$T/drain.log" &
DRAIN=$!
e2e_track $DRAIN
e2e_wait_consumer "$DET_RING" $TAP
e2e_wait_consumer "$OUT_RING" $DRAIN
# The subscriber is in place once a status message reached it.
e2e_wait 10 test -e "$T/ready" || e2e_fail "no status message reached the subscriber: $(cat "$T/sub.log")"

"$CHIRP_FEED" -c "$CONF" --target $GATE,-20,$DOPPLER_HZ --snr-db 10 --seed 5 -n $N \
	--rate $RATE --block -q 2>"$T/feed.log" &
FEED=$!
e2e_track $FEED
# A reload mid-stream keeps the socket and its subscriber: no list lost.
e2e_wait 10 e2e_stat_gt cpis_out $((N / 3)) || e2e_fail "no CPIs before the reload"
sed -i 's/^pfa = .*/pfa = 1e-5/' "$CONF"
e2e_ctl reload >"$T/reload.out" 2>&1 || e2e_fail "reload: $(cat "$T/reload.out")"
e2e_log "reloaded at cpis_out $(e2e_stat cpis_out)"
# [publish] keys change on restart only: a reload reports, and keeps, them.
sed -i 's/^hwm = .*/hwm = 5/; t; s/^\[publish\]$/[publish]\nhwm = 5/' "$CONF"
e2e_ctl reload >"$T/reload2.out" 2>&1
grep -q "^restart_keys: *publish.hwm$" "$T/reload2.out" || e2e_fail "reload with publish.hwm changed: $(cat "$T/reload2.out")"
wait $FEED || e2e_fail "chirp-feed exited $?: $(cat "$T/feed.log")"
wait $TAP || e2e_fail "chirp-tap (det ring) exited $?: $(tail -5 "$T/tap.log")"
wait $DRAIN || e2e_fail "chirp-tap (output) exited $?: $(tail -5 "$T/drain.log")"
e2e_wait 5 e2e_stat_ge detection_lists $N || e2e_fail "detection_lists $(e2e_stat detection_lists) < $N"
drops=$(e2e_stat publish_det_drops)
if [ "$drops" = 0 ]; then
	wait $SUB || e2e_fail "subscriber exited $?: $(tail -5 "$T/sub.log")"
else
	# fewer lists than CPIs: the subscriber runs to its timeout
	kill $SUB 2>/dev/null
	wait $SUB 2>/dev/null
fi
sent=$(e2e_stat publish_det_messages)
[ $((sent + drops)) = $N ] || e2e_fail "publish_det_messages $sent + publish_det_drops $drops != $N"
[ "$(e2e_stat publish_errors)" = 0 ] || e2e_fail "publish_errors $(e2e_stat publish_errors)"

# The subscriber's lists and the ring's: CPI for CPI the same, counted drops aside.
"$PY" - "$T/tap.jsonl" "$T/sub.jsonl" $N "$drops" <<'EOF' || e2e_fail "published lists: see above"
import json, math, sys
tap, sub, n, drops = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
def load(p):
    with open(p) as f:
        return [json.loads(l) for l in f if l.strip()]
ring = load(tap)
msgs = load(sub)
dets = [m for m in msgs if m["topic"] == "det"]
assert len(ring) == n, f"ring: {len(ring)} lists, expected {n}"
assert len(dets) + drops == n, f"subscriber: {len(dets)} lists + {drops} drops != {n}"
by_seq = {x["seq"]: x for x in ring}
last = -1
for m in dets:
    x = by_seq.get(m["seq"])
    assert x is not None, f"published seq {m['seq']} is not on the ring"
    assert m["seq"] > last, f"seq {m['seq']} after {last}: out of order"
    last = m["seq"]
    l = m["list"]
    for key in ("seq", "timestamp_ns", "first_sample", "mode", "count", "found"):
        assert m[key] == x[key] == l[key], f"seq {m['seq']}: {key} header {m[key]} list {l[key]} ring {x[key]}"
    assert m["overflow"] == x["overflow"] and m["skipped"] == x["skipped"]
    assert m["incomplete"] is l["incomplete"] is x["incomplete"] is False, (m, x)
    assert x["ring_flags"] & 16 == 0 and x["ring_missing"] == 0, x
    assert m["channels"] == 2 and m["pulses"] == 16 and m["samples"] == 512, m
    assert m["bytes"] == 80 + 48 * m["count"] and m["record_bytes"] == 48, m
    assert m["version"] == 2 and m["beams"] is False, m
    assert m["pointing_az_deg"] == 0 and m["pointing_el_deg"] == 0, m
    assert len(m["detections"]) == len(x["detections"]) == m["count"]
    for a, b in zip(m["detections"], x["detections"]):
        for k in ("channel", "range_gate", "doppler_bin"):
            assert a[k] == b[k], (k, a, b)
        for k in ("range_m", "velocity_mps", "power", "noise", "snr_db"):
            assert (a[k] is None) == (b[k] is None), (k, a, b)
            if a[k] is not None:
                assert math.isclose(a[k], b[k], rel_tol=1e-6, abs_tol=1e-30), (k, a, b)
if drops == 0:
    assert [m["seq"] for m in dets] == [x["seq"] for x in ring], "lists missing or reordered"
maps = [m for m in msgs if m["topic"] == "map"]
assert maps, "no map message"
for m in maps:
    # 16 Doppler bins into at most 8 rows, 512 gates into at most 100 columns
    assert (m["rows"], m["cols"], m["doppler_decimation"], m["range_decimation"]) == (8, 86, 2, 6), m
    assert m["bytes"] == 8 * 86 * 4 and m["channels"] == 2 and m["doppler_bins"] == 16, m
    assert m["seq"] in by_seq and math.isfinite(m["max"]), m
st = [m for m in msgs if m["topic"] == "status"]
assert st and st[-1]["status"]["state"] in ("running", "idle"), st[-1:]
assert st[-1]["status"]["publish"]["endpoint"].startswith("tcp://127.0.0.1:")
assert all(a["seq"] < b["seq"] for a, b in zip(st, st[1:])), "status messages out of order"
print(f"{len(dets)} lists (+{drops} dropped), {len(maps)} maps, {len(st)} status messages")
EOF
e2e_log "$N CPIs: the subscriber's lists equal the ring's ($drops counted drops)"

# Counters in status and the Prometheus text.
e2e_ctl --json status >"$T/status.json"
"$PY" - "$T/status.json" "$sent" <<'EOF' || e2e_fail "status publish: $(cat "$T/status.json")"
import json, sys
p = json.load(open(sys.argv[1]))["publish"]
assert p["det"]["messages"] == int(sys.argv[2]), p
assert p["map"]["messages"] >= 1 and p["status"]["messages"] >= 1 and p["bytes"] > 0, p
EOF
e2e_ctl metrics >"$T/metrics.txt" || e2e_fail "chirpctl metrics failed"
for m in publish_det_messages_total publish_det_drops_total publish_map_messages_total \
	publish_status_messages_total publish_bytes_total publish_errors_total; do
	grep -q "^# HELP chirpd_$m " "$T/metrics.txt" || e2e_fail "metrics: no HELP for chirpd_$m"
	grep -q "^chirpd_$m " "$T/metrics.txt" || e2e_fail "metrics: no chirpd_$m"
done
e2e_stop_chirpd || e2e_fail "chirpd exited $?"
e2e_pass
