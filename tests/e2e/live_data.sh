#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# live_data.sh — the live view's data without a browser (curl):
#   A. /live/frame.json while chirp-feed sends a moving target: the map of
#      each channel (uint8, base64) has its brightest cell at the target's
#      gate and Doppler bin after the max-hold reduction, the detection list
#      holds it at its range and velocity, the state counts CPIs and no
#      loss; /live/events delivers at least 10 frames a second;
#   B. bad requests: ?map=abc (400), a POST (405), a map index past the
#      last (map null), an unknown /live URL (404); /live is the page;
#   C. nothing is sampled while nobody watches (chirpd_live_frames_total
#      stands still), and the configuration rules: [live] enable needs
#      [metrics] listen, a non-loopback listen needs allow_remote;
#   D. detections only ([output] mode none, a detection ring): no map
#      leaves chirpd as a result, yet each frame has the map, reduced on
#      the backend (a snapshot of its own maps), with the target at its
#      cell and in the list at its range and velocity.
. "$(dirname "$0")/lib.sh"
e2e_init live_data
e2e_need chirp-feed chirp-tap
command -v curl >/dev/null || e2e_skip "no curl"
. "$(dirname "$0")/lib_live.inc"

live_config
e2e_start_chirpd
live_feed $((150 / E2E_SLOW))
e2e_wait 10 e2e_stat_gt cpis_out 30 || e2e_fail "no CPIs"

# --- A ----------------------------------------------------------------------
for m in 0 1; do
	curl -sS -f -m 5 "$LIVE_URL/live/frame.json?map=$m" >"$T/frame$m.json" ||
		e2e_fail "GET /live/frame.json?map=$m failed"
done
curl -sS -N -m 3 "$LIVE_URL/live/events?map=0" >"$T/events.txt" 2>/dev/null
"$PY" - "$T" "$LIVE_GATE" "$LIVE_BIN" "$LIVE_RANGE_M" "$LIVE_VELOCITY_MPS" <<'PYEOF' || e2e_fail "frame content wrong"
import base64, json, sys
T, gate, binno, rng, vel = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
for m in (0, 1):
    f = json.load(open("%s/frame%d.json" % (T, m)))
    mp = f["map"]
    assert f["maps"] == 2 and mp["index"] == m, (f["maps"], mp["index"])
    assert (mp["doppler_bins"], mp["range_gates"]) == (16, 1024), mp
    assert (mp["rows"], mp["cols"], mp["dec_doppler"], mp["dec_range"]) == (16, 512, 1, 2), mp
    q = base64.b64decode(mp["b64"])
    assert len(q) == mp["rows"] * mp["cols"], len(q)
    top = max(range(len(q)), key=lambda i: q[i])
    r, c = divmod(top, mp["cols"])
    assert q[top] == 255 and c == gate // mp["dec_range"] and r == binno + 16 // 2, \
        "brightest cell of map %d at row %d col %d (%d), expected row %d col %d" % (m, r, c, q[top], binno + 8, gate // 2)
    assert abs(f["range_m_per_gate"] * gate - rng) < 0.05 and abs(f["mps_per_bin"] * binno - vel) < 0.01, f
    d = f["det"]
    assert d and d["version"] >= 1 and not d["beams"], d
    hits = [x for x in d["list"] if x["gate"] == gate and x["bin"] == binno]
    assert hits and abs(hits[0]["range_m"] - rng) < 0.05 and abs(hits[0]["velocity_mps"] - vel) < 0.01 \
        and hits[0]["snr_db"] > 15, d["list"]
    s = f["state"]
    assert s["state"] == "running" and s["cpis_in"] > 0 and s["lost"] == 0, s
    assert "0" in s["modes"] and s["modes"]["0"]["cpis"] > 0, s["modes"]
frames = [json.loads(l[6:]) for l in open(T + "/events.txt") if l.startswith("data: ")]
seqs = [f["seq"] for f in frames]
assert len(frames) >= 30 and seqs == sorted(seqs), "%d frames in 3 s (want >= 10 a second): %s" % (len(frames), seqs)
print("maps ok; %d frames in 3 s over SSE" % len(frames))
PYEOF

# --- B ----------------------------------------------------------------------
code() { curl -s -o /dev/null -w '%{http_code}' -m 5 "$@"; }
[ "$(code "$LIVE_URL/live/frame.json?map=abc")" = 400 ] || e2e_fail "?map=abc not 400"
[ "$(code -X POST "$LIVE_URL/live/frame.json")" = 405 ] || e2e_fail "POST not 405"
[ "$(code "$LIVE_URL/live/nothing")" = 404 ] || e2e_fail "/live/nothing not 404"
curl -sS -f -m 5 "$LIVE_URL/live/frame.json?map=9" | grep -q '"map":null' || e2e_fail "map 9 of 2 not null"
curl -sS -f -m 5 -D "$T/page.h" "$LIVE_URL/live" >"$T/page.html" || e2e_fail "GET /live failed"
grep -qi '^content-type: text/html' "$T/page.h" && grep -q 'EventSource' "$T/page.html" &&
	! grep -Eq '(src|href)="https?:' "$T/page.html" || e2e_fail "/live is not the self-contained page"

# --- C ----------------------------------------------------------------------
frames() { curl -sS -m 5 "$LIVE_URL/metrics" | awk '$1 == "chirpd_live_frames_total" { print $2 }'; }
sleep 2    # past the watch's end (1.5 s after the last request)
a=$(frames); sleep 1; b=$(frames)
[ -n "$a" ] && [ "$a" = "$b" ] || e2e_fail "frames sampled while nobody watched: $a -> $b"
[ "$(e2e_stat input_overruns)" = 0 ] && [ "$(e2e_stat output_drops)" = 0 ] ||
	e2e_fail "lost CPIs: overruns $(e2e_stat input_overruns), drops $(e2e_stat output_drops)"

cp "$CONF" "$T/base.conf"
e2e_config metrics.listen=0.0.0.0:9464
"$CHIRPD" --check -c "$CONF" >"$T/check.out" 2>&1 && e2e_fail "a non-loopback listen accepted"
grep -q "0.0.0.0:9464 is not a loopback address" "$T/check.out" || e2e_fail "wrong reason: $(cat "$T/check.out")"
e2e_config metrics.listen=0.0.0.0:9464 metrics.allow_remote=true
"$CHIRPD" --check -c "$CONF" >"$T/check.out" 2>&1 || e2e_fail "allow_remote refused: $(cat "$T/check.out")"
cp "$T/base.conf" "$CONF"

# --- D ----------------------------------------------------------------------
kill "$LIVE_FEEDER" "$LIVE_DRAIN" 2>/dev/null
wait "$LIVE_FEEDER" "$LIVE_DRAIN" 2>/dev/null
e2e_stop_chirpd || e2e_fail "chirpd exited $?"
live_config output.mode=none detections.ring=/$E2E_UNIQ-det detections.slots=64
e2e_start_chirpd
"$CHIRP_FEED" -c "$CONF" --target $LIVE_GATE,-20,$LIVE_DOPPLER_HZ --seed 7 \
	--rate $((150 / E2E_SLOW)) -q 2>"$T/feed-none.log" &
LIVE_FEEDER=$!
e2e_track $LIVE_FEEDER
e2e_wait 10 e2e_stat_gt cpis_out 30 || e2e_fail "no CPIs in mode none"
for m in 0 1; do
	curl -sS -f -m 5 "$LIVE_URL/live/frame.json?map=$m" >"$T/none$m.json" ||
		e2e_fail "GET /live/frame.json?map=$m failed (mode none)"
done
curl -sS -N -m 2 "$LIVE_URL/live/events?map=1" >"$T/events-none.txt" 2>/dev/null
"$PY" - "$T" "$LIVE_GATE" "$LIVE_BIN" "$LIVE_RANGE_M" "$LIVE_VELOCITY_MPS" <<'PYEOF' || e2e_fail "mode none: frame content wrong"
import base64, json, sys
T, gate, binno, rng, vel = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
for m in (0, 1):
    f = json.load(open("%s/none%d.json" % (T, m)))
    mp = f["map"]
    assert mp is not None, "mode none: frame of map %d has no map" % m
    assert f["maps"] == 2 and mp["index"] == m and mp["units"] == "map_power", (f["maps"], mp["index"], mp["units"])
    assert (mp["rows"], mp["cols"], mp["dec_doppler"], mp["dec_range"]) == (16, 512, 1, 2), mp
    q = base64.b64decode(mp["b64"])
    top = max(range(len(q)), key=lambda i: q[i])
    r, c = divmod(top, mp["cols"])
    assert q[top] == 255 and c == gate // 2 and r == binno + 8, \
        "mode none: brightest cell of map %d at row %d col %d, expected row %d col %d" % (m, r, c, binno + 8, gate // 2)
    hits = [x for x in f["det"]["list"] if x["gate"] == gate and x["bin"] == binno]
    assert hits and abs(hits[0]["range_m"] - rng) < 0.05 and abs(hits[0]["velocity_mps"] - vel) < 0.01, f["det"]
    assert f["state"]["state"] == "running", f["state"]
frames = [json.loads(l[6:]) for l in open(T + "/events-none.txt") if l.startswith("data: ")]
assert len(frames) >= 20 and all(x["map"] for x in frames), "%d frames in 2 s" % len(frames)
print("mode none: maps ok; %d frames in 2 s over SSE" % len(frames))
PYEOF
e2e_pass
