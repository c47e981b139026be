#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# daemon_modes.sh — radar modes per CPI, end to end:
#   A. chirpd with three modes ([waveform] = id 0 and two [mode NAME]
#      sections, each a waveform file of its own length); a producer commits
#      CPIs whose mode changes every CPI, with CPIs of a mode chirpd does
#      not have among them. Every result carries its input's mode and equals
#      a numpy correlation with THAT mode's reference; the unknown ones come
#      in their place, flagged UNKNOWN_MODE, every value NaN; counted per mode in
#      stats, status and metrics; logged; the flight recorder names modes.
#   B. while CPIs flow, a reload removes one mode and adds another (the
#      unknown one): none is lost or reordered, each CPI is processed with
#      the modes of the generation that took it, and the switch happens
#      once, between two CPIs.
#   Also: status reports the rings' memory (bytes, pinned bytes).
# The producer and the reader are one Python process on libchirpring's C
# API (ctypes), so the check does not depend on chirpd's own tools.
. "$(dirname "$0")/lib.sh"
e2e_init modes
[ -x "$PY" ] || e2e_skip "$PY not found"
"$PY" -c 'import numpy' 2>/dev/null || e2e_skip "numpy not available for $PY"
e2e_python_preload
LIB=$BUILD/lib/libchirpring.so.3
[ -f "$LIB" ] || e2e_skip "$LIB is not built"

N=$((600 / E2E_SLOW))
RATE=$((200 / E2E_SLOW))

# Waveform files: random complex pulses of 40, 97 and 13 samples.
"$PY" - "$T" <<'PYEOF' || e2e_fail "writing waveform files"
import numpy as np, sys
rng = np.random.default_rng(5)
for name, L in (("w0", 40), ("w5", 97), ("w9", 13), ("w7", 61)):
    h = (rng.standard_normal(L) + 1j * rng.standard_normal(L)).astype(np.complex64)
    h.tofile("%s/%s.cf32" % (sys.argv[1], name))
PYEOF

# write_conf "ID:NAME ..." — the base configuration with [waveform] as mode
# 0 (file w0) and one [mode NAME] section per ID:NAME (file wID).
write_conf() {
	e2e_config input.slots=64 output.slots=256 waveform.type=file waveform.file="$T/w0.cf32" \
		waveform.window=rect waveform.bandwidth_hz= waveform.pulse_width_s=
	local m
	for m in $1; do
		printf '\n[mode %s]\nid = %s\ntype = file\nfile = %s\nwindow = rect\n' \
			"${m#*:}" "${m%%:*}" "$T/w${m%%:*}.cf32" >>"$CONF"
	done
}
write_conf "5:long 9:short"
cp "$CONF" "$T/three.conf"
"$CHIRPD" --check -c "$CONF" >"$T/check.out" 2>&1 || e2e_fail "--check: $(cat "$T/check.out")"
e2e_start_chirpd

# --- status: the modes and the rings' memory -------------------------------------
e2e_ctl --json status | "$PY" -c '
import json, sys
s = json.load(sys.stdin)
modes = {m["id"]: m for m in s["modes"]}
assert sorted(modes) == [0, 5, 9], s["modes"]
assert modes[0]["name"] == "default" and modes[5]["name"] == "long" and modes[9]["name"] == "short", modes
assert [modes[i]["L"] for i in (0, 5, 9)] == [40, 97, 13], modes
assert all(m["type"] == "file" and m["cpis"] == 0 for m in modes.values()), modes
r = s["rings"]
cpi_in = 2 * 8 * 1000 * 8
assert r["input_memory"]["bytes"] >= r["input_slots"] * cpi_in, r
assert r["output_memory"]["bytes"] >= r["output_slots"] * cpi_in, r
for k in ("input_memory", "output_memory"):
    assert r[k]["pinned_bytes"] in (0, r[k]["bytes"]), r
assert r["pinned_bytes"] == r["input_memory"]["pinned_bytes"] + r["output_memory"]["pinned_bytes"], r
' || e2e_fail "status: $(e2e_ctl --json status)"
grep -q "3 radar modes: 0 default (file, L 40), 5 long (file, L 97), 9 short (file, L 13)" "$CHIRPD_LOG" ||
	e2e_fail "start log lacks the modes"
grep -Eq "running: .*3 modes, .*rings [0-9.]+ MiB \([0-9.]+ MiB pinned\)" "$CHIRPD_LOG" ||
	e2e_fail "start line lacks the modes or the rings' memory"

# The new configuration of part B: mode 9 removed, mode 7 added.
write_conf "5:long 7:mid"
cp "$CONF" "$T/swapped.conf"
cp "$T/three.conf" "$CONF"

# --- A and B: one producer/reader, a reload in the middle ----------------------------
t_start=$(date +%s)
env ${PRE:+LD_PRELOAD=$PRE} "$PY" - "$LIB" "$IN_RING" "$OUT_RING" "$T" "$N" "$RATE" "$CHIRPCTL" "$SOCK" "$CONF" \
	>"$T/modes.out" 2>&1 <<'PYEOF' || e2e_fail "modes check: $(tail -20 "$T/modes.out")"
import ctypes, numpy as np, os, subprocess, sys, time

lib_path, in_ring, out_ring, tdir, N, rate, ctl, sock, conf = sys.argv[1:]
N, rate = int(N), float(rate)
C, P, R = 2, 8, 1000
UNKNOWN_MODE, DISCONT = 1 << 3, 1 << 0
lib = ctypes.CDLL(lib_path, use_errno=True)

class Block(ctypes.Structure):
    _fields_ = [("seq", ctypes.c_uint64), ("timestamp_ns", ctypes.c_uint64),
                ("first_sample", ctypes.c_uint64), ("flags", ctypes.c_uint32),
                ("slot", ctypes.c_uint32), ("mode", ctypes.c_uint32),
                ("reserved", ctypes.c_uint32), ("pointing_az_deg", ctypes.c_float),
                ("pointing_el_deg", ctypes.c_float), ("len", ctypes.c_uint64),
                ("payload", ctypes.c_void_p)]

V = ctypes.c_void_p
lib.chirp_ring_attach.restype = V
lib.chirp_ring_attach.argtypes = [ctypes.c_char_p, ctypes.c_int, V, ctypes.c_char_p, ctypes.c_size_t]
lib.chirp_ring_reserve.argtypes = [V, ctypes.POINTER(V)]
lib.chirp_ring_commit_mode.argtypes = [V, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint32,
                                       ctypes.c_uint32]
lib.chirp_ring_peek.argtypes = [V, ctypes.POINTER(Block)]
lib.chirp_ring_release.argtypes = [V]
lib.chirp_ring_detach.argtypes = [V]

def attach(name, role):
    err = ctypes.create_string_buffer(256)
    r = lib.chirp_ring_attach(name.encode(), role, None, err, 256)
    if not r:
        sys.exit("attach %s: %s" % (name, err.value.decode()))
    return r

prod, cons = attach(in_ring, 1), attach(out_ring, 2)
refs = {m: np.fromfile("%s/w%d.cf32" % (tdir, m), dtype=np.complex64).astype(np.complex128)
        for m in (0, 5, 9, 7)}

def reference(x, h):
    """Direct correlation y[n] = sum_k x[n+k] conj(h[k]) / ||h||, per row."""
    y = np.empty((C * P, R), dtype=np.complex128)
    pad = np.zeros(R + len(h) - 1, dtype=np.complex128)
    for row in range(C * P):
        pad[:R] = x[row]
        y[row] = np.correlate(pad, h, "valid")
    return y / np.sqrt(np.sum(np.abs(h) ** 2))

# Modes change every CPI; 7 is unknown before the reload, 9 after it.
cycle = [0, 5, 9, 7, 5, 0, 9]
modes = [cycle[k % len(cycle)] for k in range(N)]
rng = np.random.default_rng(17)
inputs, got = {}, []
state = {"7": [], "9": []}          # (k, unknown) per CPI of the switched modes
reload_at, reloaded = N // 2, False

def drain():
    b = Block()
    while lib.chirp_ring_peek(cons, ctypes.byref(b)) == 0:
        k = b.first_sample // (P * R)
        out = np.ctypeslib.as_array((ctypes.c_float * (2 * C * P * R)).from_address(b.payload))
        out = out.view(np.complex64).reshape(C * P, R)
        if b.mode != modes[k]:
            sys.exit("CPI %d: output mode %d, input mode %d" % (k, b.mode, modes[k]))
        if b.flags & DISCONT:
            sys.exit("CPI %d: DISCONTINUITY" % k)
        unknown = bool(b.flags & UNKNOWN_MODE)
        if unknown:
            if not np.all(np.isnan(out.view(np.float32))):
                sys.exit("CPI %d (unknown mode %d): payload not all NaN" % (k, b.mode))
        else:
            y = reference(inputs[k], refs[b.mode])
            e = np.linalg.norm(out - y) / np.linalg.norm(y)
            if not e < 1e-4:
                sys.exit("CPI %d mode %d: relative error %g" % (k, b.mode, e))
            # and not what another mode's filter would have made
            other = 5 if b.mode != 5 else 0
            e2 = np.linalg.norm(out - reference(inputs[k], refs[other])) / np.linalg.norm(y)
            if not e2 > 0.1:
                sys.exit("CPI %d mode %d: output matches mode %d's filter" % (k, b.mode, other))
        if b.mode in (7, 9):
            state[str(b.mode)].append((k, unknown))
        elif unknown:
            sys.exit("CPI %d: mode %d flagged unknown" % (k, b.mode))
        got.append(k)
        del inputs[k]
        lib.chirp_ring_release(cons)

t0 = time.monotonic()
for k in range(N):
    if k == reload_at and not reloaded:
        # In the background: CPIs keep coming while chirpd reloads.
        os.replace(tdir + "/swapped.conf", conf)
        reloader = subprocess.Popen([ctl, "-s", sock, "reload"], stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True)
        reloaded = True
    x = (rng.standard_normal((C * P, R)) + 1j * rng.standard_normal((C * P, R))).astype(np.complex64)
    pl = V()
    while lib.chirp_ring_reserve(prod, ctypes.byref(pl)) != 0:
        drain()
        time.sleep(0.001)
    ctypes.memmove(pl, x.ctypes.data, x.nbytes)
    inputs[k] = x.astype(np.complex128)
    if lib.chirp_ring_commit_mode(prod, time.time_ns(), k * P * R, 0, modes[k]) != 0:
        sys.exit("commit %d failed" % k)
    drain()
    delay = t0 + (k + 1) / rate - time.monotonic()
    if delay > 0:
        time.sleep(delay)
deadline = time.monotonic() + 30
while len(got) < N and time.monotonic() < deadline:
    drain()
    time.sleep(0.005)
out, _ = reloader.communicate(timeout=30)
if reloader.returncode:
    sys.exit("reload: %s" % out)
if got != list(range(N)):
    sys.exit("results: %d of %d, in order: %s" % (len(got), N, got == sorted(got)))
# 7: unknown, then known from one CPI on; 9 the other way round; each
# switches once (a generation swap between two CPIs).
def switches(seq, before, after):
    flags = [u for _, u in seq]
    i = flags.index(after) if after in flags else len(flags)
    return len(flags) > 0 and all(f == before for f in flags[:i]) and all(f == after for f in flags[i:])
if not switches(state["7"], True, False) or not switches(state["9"], False, True):
    sys.exit("mode switch not clean: 7 %s / 9 %s" % (state["7"], state["9"]))
n7u = sum(u for _, u in state["7"])
n9u = sum(u for _, u in state["9"])
if n7u == 0 or n9u == 0 or n7u == len(state["7"]) or n9u == len(state["9"]):
    sys.exit("the reload did not fall between CPIs of both modes: 7 %d/%d unknown, 9 %d/%d"
             % (n7u, len(state["7"]), n9u, len(state["9"])))
per_mode = {m: sum(1 for k in range(N) if modes[k] == m) for m in (0, 5, 7, 9)}
print("ok %d %d %d %d %d %d %d" % (N, n7u + n9u, per_mode[0], per_mode[5],
                                   per_mode[7] - n7u, per_mode[9] - n9u, 0))
PYEOF
read -r ok n unknown m0 m5 m7 m9 _ <"$T/modes.out"
[ "$ok" = ok ] || e2e_fail "modes check: $(cat "$T/modes.out")"
e2e_log "A/B: $N CPIs, modes changing every CPI, $unknown of unknown modes, a reload in the middle"

# --- counters ---------------------------------------------------------------------------
e2e_wait 5 e2e_stat_ge cpis_out "$N" || e2e_fail "cpis_out $(e2e_stat cpis_out) < $N"
for k in cpis_in cpis_out; do
	[ "$(e2e_stat $k)" = "$N" ] || e2e_fail "$k = $(e2e_stat $k), expected $N"
done
for k in output_drops sequence_gaps input_overruns reload_failures backend_errors; do
	[ "$(e2e_stat $k)" = 0 ] || e2e_fail "$k = $(e2e_stat $k)"
done
[ "$(e2e_stat unknown_mode_cpis)" = "$unknown" ] ||
	e2e_fail "unknown_mode_cpis = $(e2e_stat unknown_mode_cpis), expected $unknown"
[ "$(e2e_stat reloads)" = 1 ] || e2e_fail "reloads = $(e2e_stat reloads)"
e2e_ctl --json stats | "$PY" -c "
import json, sys
s = json.load(sys.stdin)['modes']
want = {'0': ('default', $m0), '5': ('long', $m5), '7': ('mid', $m7), '9': (None, $m9)}
got = {k: (v['name'], v['cpis']) for k, v in s.items()}
assert got == want, (got, want)
" || e2e_fail "stats modes: $(e2e_ctl --json stats)"
e2e_ctl --json status | "$PY" -c "
import json, sys
s = json.load(sys.stdin)
modes = {m['id']: (m['name'], m['L'], m['cpis']) for m in s['modes']}
assert modes == {0: ('default', 40, $m0), 5: ('long', 97, $m5), 7: ('mid', 61, $m7)}, modes
assert s['unknown_mode_cpis'] == $unknown, s['unknown_mode_cpis']
# the summary line (refreshed once a second) names unknown-mode CPIs
assert ', unknown mode ' in s['summary'], s['summary']
" || e2e_fail "status modes after the reload: $(e2e_ctl --json status)"
e2e_ctl metrics >"$T/metrics.txt" || e2e_fail "metrics"
for want in "chirpd_mode_cpis_total{mode=\"0\",name=\"default\"} $m0" \
	"chirpd_mode_cpis_total{mode=\"5\",name=\"long\"} $m5" \
	"chirpd_mode_cpis_total{mode=\"7\",name=\"mid\"} $m7" \
	"chirpd_mode_cpis_total{mode=\"9\",name=\"\"} $m9" \
	"chirpd_unknown_mode_cpis_total $unknown"; do
	grep -qxF "$want" "$T/metrics.txt" || e2e_fail "metrics lack '$want': $(grep mode "$T/metrics.txt")"
done
e2e_ctl --json trace 14 | "$PY" -c "
import json, sys
cycle = [0, 5, 9, 7, 5, 0, 9]
cpis = json.load(sys.stdin)['cpis']
assert len(cpis) == 14, len(cpis)
for c in cpis:
    k = c['first_sample'] // 8000
    assert c['mode'] == cycle[k % 7], c
    assert ('unknown_mode' in c['flags']) == (c['mode'] == 9), c   # after the reload
" || e2e_fail "trace modes: $(e2e_ctl --json trace 14)"
grep -Eq "CPIs of an unknown radar mode: [0-9]+ since the last such line \([0-9]+ since start\), the newest of mode (7|9)" \
	"$CHIRPD_LOG" || e2e_fail "no unknown-mode log line"
# chirpd may log once more after the producer stopped: bound the lines
# by the time up to the count, not up to the producer's end
lines=$(grep -c "CPIs of an unknown radar mode" "$CHIRPD_LOG")
secs=$(($(date +%s) - t_start + 1))
[ "$lines" -le "$secs" ] || e2e_fail "$lines unknown-mode log lines in $secs s (at most one a second)"
[ "$lines" -ge 2 ] || e2e_fail "$lines unknown-mode log lines: want one per second with news"
grep -q "3 radar modes: 0 default (file, L 40), 5 long (file, L 97), 7 mid (file, L 61)" "$CHIRPD_LOG" ||
	e2e_fail "reload did not log the new modes"
e2e_log "counters: per mode in stats, status and metrics; unknown $unknown; trace and log name modes"

e2e_stop_chirpd || e2e_fail "chirpd exited $?"
e2e_pass
