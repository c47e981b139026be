#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# live_browser.sh — the live view in a real browser: headless Chromium
# (Debian's chromium; skipped without it) opens http://HOST:PORT/live while
# chirp-feed sends a moving target in noise, waits for frames, and
#   - the page's own probe (?probe=RANGE_M,VELOCITY_MPS) reads the map
#     canvas's pixels at the target's cell: bright against the median;
#   - the detection table lists the target at its range and velocity;
#   - a screenshot (PNG, decoded here with zlib) is bright at the target's
#     place on the map and dark around it: what a person would see.
. "$(dirname "$0")/lib.sh"
e2e_init live_browser
e2e_need chirp-feed chirp-tap
CHROMIUM=${CHIRP_CHROMIUM:-$(command -v chromium || command -v chromium-browser)}
[ -n "$CHROMIUM" ] || e2e_skip "no chromium (Debian's chromium package; scripts/install-deps.sh installs it)"
. "$(dirname "$0")/lib_live.inc"

live_config
e2e_start_chirpd
live_feed $((100 / E2E_SLOW))
e2e_wait 10 e2e_stat_gt cpis_out 20 || e2e_fail "no CPIs"

UNTIL="(() => { const t = document.getElementById('probe').textContent;
	return t && JSON.parse(t).seq >= 5 ? t : ''; })()"
"$PY" "$(dirname "$0")/../../scripts/live-browser.py" --chromium "$CHROMIUM" --timeout $((40 * E2E_SLOW)) \
	--screenshot "$T/live.png" --until "$UNTIL" \
	"$LIVE_URL/live?probe=$LIVE_RANGE_M,$LIVE_VELOCITY_MPS" >"$T/probe.json" 2>"$T/browser.log" ||
	e2e_fail "the page showed no frame: $(cat "$T/browser.log")"
e2e_log "probe: $(cut -c1-300 "$T/probe.json")"

"$PY" - "$T/probe.json" "$T/live.png" "$LIVE_RANGE_M" "$LIVE_VELOCITY_MPS" <<'PYEOF' || e2e_fail "the page does not show the target"
import json, struct, sys, zlib
p = json.load(open(sys.argv[1]))
rng, vel = float(sys.argv[3]), float(sys.argv[4])
# 1. the canvas at the target's cell, read by the page before it marks it
assert p["peak"] >= 200 and p["peak"] - p["median"] >= 120, \
    "map canvas at the target: peak %.0f, median %.0f" % (p["peak"], p["median"])
# 2. the table: range within a gate (30 m), velocity within 1 m/s
rows = [(float(r[0]), float(r[1])) for r in p["table"] if r[0] != "–" and r[1] != "–"]
assert any(abs(r - rng) <= 30 and abs(v - vel) <= 1 for r, v in rows), \
    "no table row at %.1f m, %.2f m/s: %s" % (rng, vel, p["table"])
# 3. the screenshot: decode the PNG (8-bit RGB/RGBA, non-interlaced)
data = open(sys.argv[2], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, ihdr = 8, b"", None
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        ihdr = struct.unpack(">IIBBBBB", body)
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
w, h, depth, ctype, _, _, interlace = ihdr
assert depth == 8 and ctype in (2, 6) and not interlace, "PNG kind %s" % (ihdr,)
bpp = 3 if ctype == 2 else 4
raw = zlib.decompress(idat)
stride = w * bpp
img = bytearray(h * stride)
prev = bytearray(stride)
for y in range(h):
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b = prev[i]
        c = prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    img[y * stride:(y + 1) * stride] = line
    prev = line
def lum(x, y):
    o = y * stride + x * bpp
    return 0.299 * img[o] + 0.587 * img[o + 1] + 0.114 * img[o + 2]
tx, ty = (int(round(v)) for v in p["target_css"])
spot = max(lum(x, y) for x in range(tx - 2, tx + 3) for y in range(ty - 2, ty + 3))
mx, my, mw, mh = (int(v) for v in p["map_css"])
field = sorted(lum(x, y) for x in range(mx + 2, mx + mw - 2, 7) for y in range(my + 2, my + mh - 2, 7))
median = field[len(field) // 2]
assert spot >= 180 and spot - median >= 100, \
    "screenshot at the target (%d, %d): %.0f, map median %.0f" % (tx, ty, spot, median)
print("target: canvas %.0f over %.0f; screenshot %.0f over %.0f at (%d, %d); table %s" %
      (p["peak"], p["median"], spot, median, tx, ty, p["table"][:2]))
PYEOF
[ "$(e2e_stat input_overruns)" = 0 ] || e2e_fail "input overruns $(e2e_stat input_overruns)"
e2e_pass
