#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# daemon_detect.sh — the radar chain end to end on the CPU backend:
#   A. Doppler + CFAR with the map on the output ring: chirp-feed sends CPIs
#      with a moving target in noise; every CPI's list reaches the detection
#      ring in order (read by chirp-tap --jsonl) and the [detections] file,
#      with the input's seq, timestamp and first sample, and holds the
#      target at its gate and Doppler bin; three reloads mid-stream
#      (pfa, method, mti) lose no CPI and no list; counters in stats,
#      status and the Prometheus text;
#   B. a CPI of a mode chirpd does not have gets an empty list flagged
#      skipped, in its place;
#   C. a reload to [output] mode none: noise only, detections are the only
#      result, every CPI is delivered with its list, and the observed
#      false-alarm rate is near the configured pfa;
#   D. a detection ring nobody reads fills: further lists are dropped from
#      it and counted, chirpd keeps taking CPIs and the file has them all.
. "$(dirname "$0")/lib.sh"
e2e_init detect
e2e_need chirp-feed chirp-tap

DET_RING=/$E2E_UNIQ-det
N=$((240 / E2E_SLOW))
RATE=$((120 / E2E_SLOW))
# 16 pulses at 10 kHz PRF, Nd = 16: 2500 Hz is Doppler bin +4; gate 100.
GATE=100 BIN=4 DOPPLER_HZ=2500
radar_config() {
	e2e_config cpi.pulses=16 cpi.samples=512 waveform.pulse_width_s=2e-6 \
		waveform.bandwidth_hz=5e6 input.slots=64 output.slots=64 \
		radar.prf_hz=10000 radar.carrier_hz=1e9 \
		doppler.enable=true doppler.fft=16 doppler.window=hann \
		cfar.enable=true cfar.pfa=1e-4 cfar.guard_range=3 cfar.train_range=8 \
		cfar.guard_doppler=1 cfar.train_doppler=3 cfar.max_detections=64 \
		detections.ring=$DET_RING detections.slots=64 detections.file="$T/det.jsonl" \
		output.mode=map_db "$@"
}
radar_config
e2e_start_chirpd

# det_file_done — the [detections] file holds a line for every list made
# (its own thread writes it, a moment after the list is counted).
det_file_done() {
	[ "$(wc -l <"$T/det.jsonl")" = $(($(e2e_stat detection_lists) - $(e2e_stat detection_file_drops))) ]
}

# --- A: a target through three reloads --------------------------------------------
"$CHIRP_TAP" -c "$CONF" -n $N --jsonl --verify-targets $GATE:$BIN --verify-tolerance 1,0 \
	--verify-min 0.99 --timeout $((60 * E2E_SLOW)) >"$T/tap.jsonl" 2>"$T/tap.log" &
TAP=$!
e2e_track $TAP
"$CHIRP_TAP" -c "$CONF" -n $N --drain --timeout $((60 * E2E_SLOW)) -q 2>"$T/drain.log" &
DRAIN=$!
e2e_track $DRAIN
e2e_wait_consumer "$DET_RING" $TAP
e2e_wait_consumer "$OUT_RING" $DRAIN
"$CHIRP_FEED" -c "$CONF" --target $GATE,-20,$DOPPLER_HZ --snr-db 10 --seed 5 -n $N \
	--rate $RATE --block -q 2>"$T/feed.log" &
FEED=$!
e2e_track $FEED
e2e_wait 10 e2e_stat_gt cpis_out 20 || e2e_fail "no CPIs before the reloads"
i=0
for change in cfar.pfa=1e-5 cfar.method=os doppler.mti=two_pulse; do
	i=$((i + 1))
	radar_config $change
	e2e_ctl reload >"$T/reload.out" 2>&1 || e2e_fail "reload $change: $(cat "$T/reload.out")"
	e2e_log "reloaded with $change at cpis_in $(e2e_stat cpis_in)"
	sleep 0.3
done
wait $FEED || e2e_fail "chirp-feed exited $?: $(cat "$T/feed.log")"
wait $TAP || e2e_fail "chirp-tap (det ring) exited $?: $(tail -5 "$T/tap.log")"
wait $DRAIN || e2e_fail "chirp-tap (output) exited $?: $(tail -5 "$T/drain.log")"
e2e_wait 5 e2e_stat_ge detection_lists $N || e2e_fail "detection_lists $(e2e_stat detection_lists) < $N"
e2e_wait 5 det_file_done || e2e_fail "the [detections] file: $(wc -l <"$T/det.jsonl") lines"
for k in cpis_in cpis_out detection_lists; do
	[ "$(e2e_stat $k)" = $N ] || e2e_fail "$k = $(e2e_stat $k), expected $N"
done
for k in output_drops detection_drops sequence_gaps input_overruns reload_failures \
	backend_errors detection_file_errors detection_file_drops; do
	[ "$(e2e_stat $k)" = 0 ] || e2e_fail "$k = $(e2e_stat $k)"
done
[ "$(e2e_stat reloads)" = 3 ] || e2e_fail "reloads = $(e2e_stat reloads)"

# The ring's lists and the file's lines: one per CPI, in order, the same.
"$PY" - "$T/tap.jsonl" "$T/det.jsonl" $N $GATE $BIN <<'EOF' || e2e_fail "detection lists: see above"
import json, sys
tap, fil, n, gate, dbin = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
def load(p):
    with open(p) as f:
        return [json.loads(l) for l in f if l.strip()]
a, b = load(tap), load(fil)
assert len(a) == n, f"ring: {len(a)} lists, expected {n}"
assert len(b) == n, f"file: {len(b)} lines, expected {n}"
seq0 = b[0]["seq"]
hits = 0
for k, (x, y) in enumerate(zip(a, b)):
    assert y["seq"] == seq0 + k, f"file line {k}: seq {y['seq']}, expected {seq0 + k}"
    for key in ("seq", "timestamp_ns", "first_sample", "mode", "count", "found"):
        assert x[key] == y[key], f"list {k}: {key} ring {x[key]} file {y[key]}"
    assert y["timestamp_ns"] > 0 and y["mode"] == 0 and not y["skipped"]
    assert y["count"] == len(y["detections"]) <= y["found"]
    assert y["overflow"] == (y["found"] > y["count"])
    for d in y["detections"]:
        assert d["channel"] == -1, d          # integrated (noncoherent)
        assert d["velocity_mps"] is not None  # prf and carrier are set
        assert d["snr_db"] > 0 and d["power"] > d["noise"] > 0, d
    hit = [d for d in y["detections"] if abs(d["range_gate"] - gate) <= 1 and d["doppler_bin"] == dbin]
    if hit:
        hits += 1
        # bin 4 of 16 at 10 kHz: 2500 Hz, x c / (2 x 1 GHz) = 374.7 m/s
        assert abs(hit[0]["velocity_mps"] - 374.74) < 0.5, hit[0]
        assert abs(hit[0]["range_m"] - hit[0]["range_gate"] * 299792458 / 2 / 25e6) < 0.01, hit[0]
    if k > 0:
        assert y["first_sample"] > b[k - 1]["first_sample"], f"line {k}: first_sample not increasing"
assert hits >= 0.99 * n, f"target in {hits} of {n} lists"
print(f"{n} lists, target in {hits}")
EOF
e2e_log "A: $N CPIs, $N lists on the ring and in the file through 3 reloads; target found"

# Counters in status and the Prometheus text.
e2e_ctl --json status >"$T/status.json"
"$PY" - "$T/status.json" $N <<'EOF' || e2e_fail "status radar: $(cat "$T/status.json")"
import json, sys
r = json.load(open(sys.argv[1]))["radar"]
n = int(sys.argv[2])
assert r["doppler"] and r["cfar"] and r["doppler_bins"] == 16 and r["pulses_mti"] == 15, r
assert r["lists"] == n and r["detections"] >= n and r["ring_drops"] == 0, r
assert r["cfar_cells"] == n * 16 * 512 and 0 < r["cfar_crossings"] < r["cfar_cells"], r
assert abs(r["false_alarm_rate"] - r["cfar_crossings"] / r["cfar_cells"]) < 1e-12, r
EOF
e2e_ctl status | grep -q "lists $N (detections" || e2e_fail "chirpctl status: no radar lines"
e2e_ctl metrics >"$T/metrics.txt" || e2e_fail "chirpctl metrics failed"
for m in detections_total detection_lists_total detection_overflows_total detection_drops_total \
	cfar_cells_total cfar_crossings_total cfar_false_alarm_rate; do
	grep -q "^# HELP chirpd_$m " "$T/metrics.txt" || e2e_fail "metrics: no HELP for chirpd_$m"
	grep -q "^chirpd_$m " "$T/metrics.txt" || e2e_fail "metrics: no chirpd_$m"
done
grep -q "^chirpd_detection_lists_total $N\$" "$T/metrics.txt" ||
	e2e_fail "metrics: $(grep detection_lists_total "$T/metrics.txt")"

# --- B: an unknown mode gets an empty, skipped list in its place -------------------
lines0=$(wc -l <"$T/det.jsonl")
"$CHIRP_FEED" -c "$CONF" --modes 0,7,0 --allow-unknown-modes --target $GATE,-20,$DOPPLER_HZ \
	--snr-db 10 -n 3 --block -q \
	2>"$T/feed.log" || e2e_fail "chirp-feed (modes): $(cat "$T/feed.log")"
e2e_wait 5 e2e_stat_ge detection_lists $((N + 3)) || e2e_fail "no lists for the mode CPIs"
e2e_wait 5 det_file_done || e2e_fail "the [detections] file: $(wc -l <"$T/det.jsonl") lines"
tail -n 3 "$T/det.jsonl" | "$PY" -c '
import json, sys
l = [json.loads(x) for x in sys.stdin]
assert [x["mode"] for x in l] == [0, 7, 0], l
assert l[1]["skipped"] and l[1]["count"] == 0 and l[1]["detections"] == [], l[1]
assert not l[0]["skipped"] and not l[2]["skipped"]
assert l[0]["seq"] + 1 == l[1]["seq"] == l[2]["seq"] - 1
' || e2e_fail "unknown mode's list: $(tail -n 3 "$T/det.jsonl")"
[ "$(wc -l <"$T/det.jsonl")" = $((lines0 + 3)) ] || e2e_fail "JSON lines for the mode CPIs"
e2e_log "B: a CPI of an unknown mode has an empty list flagged skipped"

# --- C: output mode none, noise only: detections are the result ------------------
cells0=$(e2e_stat cfar_cells) cross0=$(e2e_stat cfar_crossings) out0=$(e2e_stat cpis_out)
lists0=$(e2e_stat detection_lists)
M=$((200 / E2E_SLOW))
radar_config output.mode=none cfar.pfa=1e-3 cfar.method=ca
e2e_ctl reload >"$T/reload.out" 2>&1 || e2e_fail "reload to mode none: $(cat "$T/reload.out")"
e2e_ctl --json status | grep -q '"output": *""' || e2e_fail "status still names an output ring"
"$CHIRP_TAP" -c "$CONF" -n $M --list --timeout $((60 * E2E_SLOW)) >"$T/tap.txt" 2>"$T/tap.log" &
TAP=$!
e2e_track $TAP
e2e_wait_consumer "$DET_RING" $TAP
# chirp-feed needs an echo: one 170 dB under the noise is none.
"$CHIRP_FEED" -c "$CONF" --target $GATE,-200 --noise-dbfs -30 --seed 9 -n $M --rate $RATE --block -q \
	2>"$T/feed.log" || e2e_fail "chirp-feed (noise): $(cat "$T/feed.log")"
wait $TAP || e2e_fail "chirp-tap --list exited $?: $(tail -5 "$T/tap.log")"
[ "$(grep -c '^cpi ' "$T/tap.txt")" = $M ] || e2e_fail "tap --list: $(grep -c '^cpi ' "$T/tap.txt") lists"
e2e_wait 5 e2e_stat_ge detection_lists $((lists0 + M)) || e2e_fail "lists in mode none"
[ $(($(e2e_stat cpis_out) - out0)) = $M ] || e2e_fail "mode none: cpis_out +$(($(e2e_stat cpis_out) - out0)), expected +$M"
[ "$(e2e_stat detection_drops)" = 0 ] || e2e_fail "detection_drops in mode none"
# Compressed noise is correlated over a pulse length along range, which
# widens the spread of the CA estimate: the rate is near pfa, not exact.
"$PY" -c '
import sys
cells, cross = int(sys.argv[1]), int(sys.argv[2])
rate = cross / cells
print(f"observed false-alarm rate {rate:.3g} over {cells} cells (pfa 1e-3)")
assert 1e-3 / 4 < rate < 1e-3 * 4, rate
' $(($(e2e_stat cfar_cells) - cells0)) $(($(e2e_stat cfar_crossings) - cross0)) ||
	e2e_fail "false-alarm rate far from pfa"
e2e_log "C: mode none, $M CPIs delivered as detection lists only"

# --- D: a full detection ring drops lists, counted, and never holds chirpd up -----
e2e_wait 5 det_file_done || e2e_fail "the [detections] file: $(wc -l <"$T/det.jsonl") lines"
in0=$(e2e_stat cpis_in) lines0=$(wc -l <"$T/det.jsonl") drops0=$(e2e_stat detection_drops)
radar_config output.mode=none detections.slots=4
e2e_ctl --json reload >"$T/reload.out" 2>&1 || e2e_fail "reload (slots 4): $(cat "$T/reload.out")"
grep -q '"detection_ring_recreated": *true' "$T/reload.out" || e2e_fail "reload reply: $(cat "$T/reload.out")"
"$CHIRP_FEED" -c "$CONF" --target $GATE,-20,$DOPPLER_HZ --snr-db 10 -n 40 --block -q \
	2>"$T/feed.log" || e2e_fail "chirp-feed (no detection consumer): $(cat "$T/feed.log")"
e2e_wait 5 e2e_stat_ge cpis_in $((in0 + 40)) || e2e_fail "chirpd held up by a full detection ring"
e2e_wait 5 e2e_stat_ge detection_drops $((drops0 + 36)) || e2e_fail "detection_drops $(e2e_stat detection_drops), expected +36"
[ "$(e2e_stat detection_drops)" = $((drops0 + 36)) ] || e2e_fail "detection_drops $(e2e_stat detection_drops), expected +36"
e2e_wait 5 det_file_done || e2e_fail "the [detections] file: $(wc -l <"$T/det.jsonl") lines"
[ "$(e2e_stat detection_file_drops)" = 0 ] || e2e_fail "detection_file_drops $(e2e_stat detection_file_drops)"
[ "$(wc -l <"$T/det.jsonl")" = $((lines0 + 40)) ] || e2e_fail "the file misses lists the ring dropped"
e2e_log "D: a detection ring of 4 slots without a reader: 36 of 40 lists dropped and counted, all 40 in the file"
[ "$(e2e_state)" = running ] || e2e_fail "state: $(e2e_state)"
e2e_pass
