#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# daemon_capcache.sh — [processing] capacity_cache keeps the start-up
# decisions per machine and configuration:
#   A. the first start measures (status rings.capacity_source "measured")
#      and stores an entry; a second start with the same configuration
#      takes depth and capacity from the file ("cache", the same figures,
#      the log says so);
#   B. another geometry is another entry: measured, and both are kept; so
#      is another tuning (cuda_fused);
#   C. a file of garbage is not believed: measured, and rewritten whole;
#   D. auto is the unit's StateDirectory ($STATE_DIRECTORY) and none
#      outside systemd; a relative path is refused by --check at its line.
#   E. a reload that leaves the work alone keeps the capacity measured
#      before ("kept"); one that changes a key of the work's table
#      (src/workkey.c; here the tuning key cpu_block_kib) measures again.
. "$(dirname "$0")/lib.sh"
e2e_init capcache
[ -x "$PY" ] || e2e_skip "$PY not found"

# status_is SOURCE — status's capacity source; prints "capacity depth"
status_is() {
	e2e_json status >"$T/status.json" || e2e_fail "status: $(cat "$T/status.json")"
	"$PY" - "$T/status.json" "$1" <<'PYEOF' || e2e_fail "status: $(cat "$T/status.json")"
import json, sys
s = json.load(open(sys.argv[1]))
r = s["rings"]
assert r["capacity_source"] == sys.argv[2], (r["capacity_source"], sys.argv[2])
assert r["capacity_cpi_per_s"] > 0, r
assert r["capacity_measured_unix"] > 1.5e9, r
if sys.argv[2] == "cache":
    assert s["depth_choice"].endswith("from the capacity cache"), s["depth_choice"]
print("%.3f %d" % (r["capacity_cpi_per_s"], s["depth"]))
PYEOF
}

CACHE=$T/capacity
e2e_config processing.capacity_cache="$CACHE" processing.streams=auto
e2e_start_chirpd
first=$(status_is measured) || exit 1
e2e_stop_chirpd || e2e_fail "chirpd did not stop cleanly"
[ -s "$CACHE" ] || e2e_fail "no cache file after the first start"
head -1 "$CACHE" | grep -qx 'chirpd-capacity-cache 1' || e2e_fail "cache file: $(head -1 "$CACHE")"
[ "$(wc -l <"$CACHE")" -eq 2 ] || e2e_fail "cache file: not one entry: $(cat "$CACHE")"
e2e_log "A: first start measured: $first"

: >"$CHIRPD_LOG"
e2e_start_chirpd
second=$(status_is cache) || exit 1
[ "$second" = "$first" ] || e2e_fail "A: the cached start has $second, the first $first"
grep -q "from the capacity cache $CACHE" "$CHIRPD_LOG" || e2e_fail "A: the log does not say the cache: $(grep capacity "$CHIRPD_LOG")"
e2e_stop_chirpd || e2e_fail "chirpd did not stop cleanly"
e2e_log "A: second start from the cache: $second"

e2e_config processing.capacity_cache="$CACHE" cpi.samples=1200
e2e_start_chirpd
status_is measured >/dev/null || exit 1
e2e_stop_chirpd || e2e_fail "chirpd did not stop cleanly"
[ "$(wc -l <"$CACHE")" -eq 3 ] || e2e_fail "B: two entries expected: $(cat "$CACHE")"
e2e_log "B: another geometry measured, both kept"

# A tuning key is part of the entry's key too: another cuda_fused (which
# changes the CUDA backend's speed) is measured, not taken from B's entry.
e2e_config processing.capacity_cache="$CACHE" cpi.samples=1200 processing.cuda_fused=off
e2e_start_chirpd
status_is measured >/dev/null || exit 1
e2e_stop_chirpd || e2e_fail "chirpd did not stop cleanly"
[ "$(wc -l <"$CACHE")" -eq 4 ] || e2e_fail "B: three entries expected: $(cat "$CACHE")"
e2e_log "B: another cuda_fused measured, all kept"

printf 'garbage\nx\t2\t100\t5\n' >"$CACHE"
e2e_start_chirpd
status_is measured >/dev/null || exit 1
e2e_stop_chirpd || e2e_fail "chirpd did not stop cleanly"
head -1 "$CACHE" | grep -qx 'chirpd-capacity-cache 1' || e2e_fail "C: not rewritten: $(cat "$CACHE")"
grep -q '^x	' "$CACHE" && e2e_fail "C: the garbage entry was kept"
e2e_log "C: a garbage file is measured over and rewritten"

mkdir -p "$T/state"
e2e_config processing.capacity_cache=auto
STATE_DIRECTORY=$T/state e2e_start_chirpd
status_is measured >/dev/null || exit 1
cache_is() { "$PY" -c 'import json, sys; assert json.load(open(sys.argv[1]))["rings"]["capacity_cache"] == sys.argv[2]' "$T/status.json" "$1"; }
cache_is "$T/state/capacity" || e2e_fail "D: auto: $(cat "$T/status.json")"
e2e_stop_chirpd || e2e_fail "chirpd did not stop cleanly"
[ -s "$T/state/capacity" ] || e2e_fail "D: auto stored nothing in \$STATE_DIRECTORY"
(unset STATE_DIRECTORY; e2e_start_chirpd; status_is measured >/dev/null || exit 1
 cache_is "" || e2e_fail "D: auto outside systemd: $(cat "$T/status.json")"
 e2e_stop_chirpd) || exit 1
e2e_config processing.capacity_cache=relative/capacity
out=$("$CHIRPD" --check -c "$CONF" 2>&1) && e2e_fail "D: --check accepted a relative capacity_cache"
line=$(grep -n '^capacity_cache' "$CONF" | cut -d: -f1)
echo "$out" | grep -q "$(basename "$CONF"):$line: \[processing\] capacity_cache: 'relative/capacity': want auto" ||
	e2e_fail "D: --check: $out"
e2e_log "D: auto under and outside systemd; a relative path refused at its line"

e2e_config processing.capacity_cache=
e2e_start_chirpd
status_is measured >/dev/null || exit 1
# reload_to SOURCE KEY=VALUE... — reload with these keys; the capacity's source
reload_to() {
	local want=$1
	shift
	e2e_config processing.capacity_cache= "$@"
	e2e_ctl reload >"$T/reload.out" 2>&1 || e2e_fail "E: reload $*: $(cat "$T/reload.out")"
	status_is "$want" >/dev/null || e2e_fail "E: reload $*: capacity not $want"
}
reload_to kept daemon.log_level=debug
reload_to measured daemon.log_level=debug processing.cpu_block_kib=64
reload_to kept processing.cpu_block_kib=64
e2e_stop_chirpd || e2e_fail "chirpd did not stop cleanly"
e2e_log "E: a reload keeps the capacity for the same work and measures for another tuning"
e2e_pass
