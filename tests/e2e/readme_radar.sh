#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# readme_radar.sh — README's radar example, run as written: its two INI
# blocks ("Configure it for your radar's CPI" and "Detect targets") make the
# configuration (rings, socket and backend moved to this test's own: CPU,
# no NUMA binding, 4 input slots), and its chirp-feed and chirp-tap lines
# run against it. Every CPI must list the target at its range gate and
# Doppler bin, and the detections away from the target (false alarms) must
# stay within what [cfar] pfa predicts for the CPI's cells: a few, never
# the thousands a noiseless map gives (CFAR thresholding rounding residue).
. "$(dirname "$0")/lib.sh"
e2e_init readme_radar
e2e_need chirp-feed chirp-tap
[ -x "$PY" ] || e2e_skip "$PY not found"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
DET_RING=/$E2E_UNIQ-det
N=6

"$PY" - "$SRC/README.md" "$CONF" daemon.control_socket="$SOCK" daemon.log_level=info \
	input.ring="$IN_RING" input.slots=4 output.ring="$OUT_RING" detections.ring="$DET_RING" \
	processing.backend=cpu processing.cpu_threads=1 numa.node=none numa.realtime=off \
	numa.lock_memory=false <<'PYEOF' || e2e_fail "README's configuration blocks"
import sys
text = open(sys.argv[1]).read()
def block(heading, lang):   # the first ```lang block after the heading
    i = text.index("\n" + heading + "\n")
    j = text.index("```" + lang + "\n", i) + len(lang) + 4
    return text[j:text.index("```", j)]
secs, cur = {}, None
for raw in (block("## Configure it for your radar's CPI", "ini") +
            block("### Detect targets", "ini")).splitlines():
    line = raw.split(";", 1)[0].strip()
    if line.startswith("["):
        cur = secs.setdefault(line, {})
    elif line:
        k, v = (s.strip() for s in line.split("=", 1))
        assert k not in cur, "README sets %s twice" % k
        cur[k] = v
for kv in sys.argv[3:]:
    k, v = kv.split("=", 1)
    s, k = k.split(".", 1)
    secs.setdefault("[%s]" % s, {})[k] = v
with open(sys.argv[2], "w") as f:
    for s, kv in secs.items():
        f.write("%s\n%s\n" % (s, "".join("%s = %s\n" % i for i in kv.items())))
PYEOF
"$CHIRPD" --check -c "$CONF" >"$T/check.log" 2>&1 || e2e_fail "--check: $(cat "$T/check.log")"

# README's commands, with this build's programs and this test's file.
mapfile -t cmds < <(awk '/^### Detect targets$/ { f = 1 } f && /^```sh$/ { g = 1; next }
	g && /^```$/ { exit } g' "$SRC/README.md")
[ ${#cmds[@]} = 2 ] || e2e_fail "README's radar example is not two commands: ${cmds[*]}"
feed=${cmds[0]%%#*} tap=${cmds[1]%%#*}
case $feed in "chirp-feed -c chirpd.conf "*"&"*) ;; *) e2e_fail "README's feed line: $feed";; esac
case $tap in "chirp-tap -c chirpd.conf --list "*) ;; *) e2e_fail "README's tap line: $tap";; esac
feed=${feed/chirp-feed -c chirpd.conf/\"\$CHIRP_FEED\" -c \"\$CONF\" -q}
feed=${feed/&/2>\"\$T/feed.log\" &}
tap=${tap/chirp-tap -c chirpd.conf/timeout $((300 * E2E_SLOW)) \"\$CHIRP_TAP\" -c \"\$CONF\"}
tap=${tap/-n 10/-n $N}
read -r gate adb hz < <(echo "${cmds[0]}" | sed -n 's/.*--target \([0-9]*\),\([-0-9.]*\),\([-0-9.]*\).*/\1 \2 \3/p')
[ -n "$hz" ] || e2e_fail "no --target GATE,AMP_DB,DOPPLER_HZ in: ${cmds[0]}"

e2e_start_chirpd
eval "$tap >\"\$T/list.txt\" 2>\"\$T/tap.log\" &"
TAP=$!
e2e_track $TAP
e2e_wait_consumer "$DET_RING" $TAP
eval "$feed"
FEED=$!
e2e_track $FEED
wait $TAP || e2e_fail "chirp-tap exited $?: $(cat "$T/tap.log")"
kill $FEED 2>/dev/null
e2e_stop_chirpd || e2e_fail "chirpd exited $? on SIGTERM"

prf=$(e2e_conf_get radar.prf_hz) pfa=$(e2e_conf_get cfar.pfa)
"$PY" - "$T/list.txt" "$gate" "$hz" "$prf" "$pfa" $N <<'PYEOF' || e2e_fail "detections: $(head -c 2000 "$T/list.txt")"
import math, sys
path, gate, hz, prf, pfa, n = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
cpis = []
for line in open(path):
    f = dict(kv.split("=", 1) for kv in line.split()[1:])
    if line.startswith("cpi "):
        cpis.append(dict(h=f, dets=[]))
    elif line.startswith("det "):
        cpis[-1]["dets"].append((int(f["range_gate"]), int(f["doppler_bin"])))
assert len(cpis) == n, "%d lists, want %d" % (len(cpis), n)
nd = int(cpis[0]["h"]["doppler_bins"])
want = hz * nd / prf
assert abs(want - round(want)) < 0.25, "the target falls between Doppler bins (%.2f)" % want
want = int(round(want))
fa = 0
cells = 0
for k, c in enumerate(cpis):
    near = [d for d in c["dets"] if abs(d[0] - gate) <= 8 and abs(d[1] - want) <= 2]
    assert (gate, want) in c["dets"] or (gate + 1, want) in c["dets"] or (gate - 1, want) in c["dets"], \
        "CPI %d: no detection at gate %d bin %d: %s" % (k, gate, want, c["dets"][:20])
    assert c["h"]["overflow"] == "0", "CPI %d overflowed: %s" % (k, c["h"])
    fa += len(c["dets"]) - len(near)
    cells += int(c["h"]["cells"])
expect = pfa * cells
limit = expect + 6 * math.sqrt(expect) + 6
print("readme radar: target at gate %d bin %d in %d of %d CPIs; %d false alarms over %d cells "
      "(pfa %g predicts %.1f, limit %.0f)" % (gate, want, n, n, fa, cells, pfa, expect, limit))
assert fa <= limit, "%d false alarms over %d CPIs: pfa %g predicts %.1f" % (fa, n, pfa, expect)
PYEOF
e2e_log "$(tail -1 "$T/list.txt" >/dev/null; grep -c '^det ' "$T/list.txt") detections in $N CPIs"
e2e_pass
