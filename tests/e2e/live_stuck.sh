#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# live_stuck.sh — clients that never read cost chirpd a bounded amount and
# never a CPI: while chirp-feed sends at a steady rate,
#   - three event streams are opened and never read (small receive buffers,
#     no recv()), and two raw connections send nothing at all;
#   - a well-behaved client is still served at least 10 frames a second;
#   - with [live] max_clients = 4 taken, one more stream is refused (503,
#     chirpd_live_clients_refused_total);
#   - the stuck streams are disconnected (chirpd_live_clients_dropped_total
#     >= 3) and a new client is served again afterwards;
#   - no CPI is lost (input overruns, sequence gaps, output drops all 0) and
#     chirpd's resident memory grows by less than 16 MiB (not checked under
#     a sanitizer, whose quarantine holds freed memory).
. "$(dirname "$0")/lib.sh"
e2e_init live_stuck
e2e_need chirp-feed chirp-tap
command -v curl >/dev/null || e2e_skip "no curl"
. "$(dirname "$0")/lib_live.inc"

live_config live.max_clients=4
e2e_start_chirpd
live_feed $((150 / E2E_SLOW))
e2e_wait 10 e2e_stat_gt cpis_out 30 || e2e_fail "no CPIs"
rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$CHIRPD_PID/status"; }
metric() { curl -sS -m 5 "$LIVE_URL/metrics" | awk -v k="$1" '$1 == k { print $2 }'; }
rss0=$(rss)

# Three streams that never read, two connections that never ask.
"$PY" - "$LIVE_PORT" 20 >"$T/stuck.log" 2>&1 <<'PYEOF' &
import socket, sys, time
port, hold = int(sys.argv[1]), float(sys.argv[2])
held = []
for i in range(5):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    if i < 3:
        s.sendall(b"GET /live/events?map=0 HTTP/1.1\r\nHost: x\r\n\r\n")
    held.append(s)
print("holding %d connections" % len(held), flush=True)
time.sleep(hold)      # never recv()
PYEOF
STUCK=$!
e2e_track $STUCK
e2e_wait 5 grep -q holding "$T/stuck.log" || e2e_fail "stuck clients: $(cat "$T/stuck.log")"
e2e_wait 5 eval '[ "$(metric chirpd_live_clients)" = 3 ]' || e2e_fail "clients $(metric chirpd_live_clients), expected 3"

# A good client beside them, and one too many.
curl -sS -N -m 4 "$LIVE_URL/live/events?map=1" >"$T/good.txt" 2>/dev/null &
GOOD=$!
e2e_track $GOOD
sleep 1
[ "$(curl -s -o /dev/null -w '%{http_code}' -m 5 "$LIVE_URL/live/events")" = 503 ] ||
	e2e_fail "a fifth stream was not refused"
wait $GOOD
n=$(grep -c '^event: frame' "$T/good.txt")
[ "$n" -ge 40 ] || e2e_fail "the good client got $n frames in 4 s beside stuck ones (want >= 10 a second)"
[ "$(metric chirpd_live_clients_refused_total)" = 1 ] || e2e_fail "refused $(metric chirpd_live_clients_refused_total)"
e2e_log "good client: $n frames in 4 s; rss $rss0 -> $(rss) KiB"

# The stuck streams are cut after the listener's 5 s without progress.
e2e_wait 20 eval '[ "$(metric chirpd_live_clients_dropped_total)" -ge 3 ]' ||
	e2e_fail "stuck clients not dropped: $(metric chirpd_live_clients_dropped_total), clients $(metric chirpd_live_clients)"
curl -sS -N -m 2 "$LIVE_URL/live/events" 2>/dev/null | grep -q '^event: frame' ||
	e2e_fail "no frame for a new client after the drop"
rss1=$(rss)
for k in input_overruns sequence_gaps output_drops; do
	[ "$(e2e_stat $k)" = 0 ] || e2e_fail "$k = $(e2e_stat $k) with stuck clients"
done
# (a sanitizer's quarantine keeps what is freed: RSS says nothing there)
[ "$E2E_SLOW" != 1 ] || [ $((rss1 - rss0)) -lt 16384 ] || e2e_fail "rss grew from $rss0 to $rss1 KiB"
e2e_log "dropped $(metric chirpd_live_clients_dropped_total), skipped $(metric chirpd_live_frames_skipped_total) frames; rss $rss0 -> $rss1 KiB; cpis_in $(e2e_stat cpis_in), none lost"
kill $STUCK 2>/dev/null
e2e_pass
