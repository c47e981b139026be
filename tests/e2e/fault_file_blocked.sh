#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fault_file_blocked.sh — the [output] file blocks: a FIFO this test holds
# open (read and write, so chirpd's open does not wait for a reader) and
# never reads, so its pipe fills after the first result and every later
# write would wait forever. Then the same for the [detections] file, with
# the detection lists as the only result ([output] mode none).
#
# Proves:
#   - a blocked file never stalls the data path: at the feeder's full rate
#     every CPI is delivered to the output ring and verifies, with no
#     output drop and no input overrun;
#   - the file's sink drops whole results and counts them
#     (output_file_drops, output_file_dropped_bytes; in stats, status and
#     the Prometheus text), and the bytes add up:
#     written + dropped = every result once the file is read again;
#   - what reaches the file is whole results, in input order, byte for
#     byte what the ring delivered;
#   - [detections] file: every CPI is taken and its list made; lines the
#     queue has no room for are dropped whole and counted
#     (detection_file_drops), their CPIs not delivered (cpis_out = lists
#     queued); what reaches the file is whole JSON lines (range_gate), in
#     input order.
# Environment: CHIRP_TEST_BACKEND (cpu|cuda|auto).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_fault.sh"
fault_init file_blocked

N=200
CPI_BYTES=$((2 * 4 * 1000 * 8))   # channels x pulses x samples x cf32
mkfifo "$T/out.fifo" || e2e_fail "mkfifo"
exec {HOLD}<>"$T/out.fifo"        # a reader that never reads
fault_config input.slots=64 output.slots=64 cpi.pulses=4 output.file="$T/out.fifo"
e2e_start_chirpd
fault_skip_if_no_cuda
fault_tap "$T/tap.log" --count $N --timeout $((30 * E2E_SLOW)) --out "$T/tap.cf32"
fault_feed "$T/feed.log" --rate 200 --count $N
wait "$TAP_PID"; rc=$?
[ $rc -eq 0 ] || e2e_fail "with a blocked file: chirp-tap exit $rc: $(tail -3 "$T/tap.log")"
fault_expect_eq "verified with a blocked file" "$(fault_tap_field "$T/tap.log" verified)" $N
fault_wait_stat cpis_out -ge $N 10 || e2e_fail "cpis_out $(fault_stat cpis_out) < $N"
for k in output_drops input_overruns sequence_gaps output_file_errors; do
	fault_expect_eq "$k" "$(fault_stat $k)" 0
done
drops=$(fault_stat output_file_drops)
[ "$drops" -ge $((N - 16)) ] || e2e_fail "output_file_drops $drops: a blocked file should drop nearly all of $N"
fault_expect_eq "output_file_dropped_bytes" "$(fault_stat output_file_dropped_bytes)" $((drops * CPI_BYTES))
e2e_log "blocked file: $N CPIs delivered, $drops dropped from the file, $(fault_stat output_file_bytes) bytes in the pipe"
# The same counters in status and in the Prometheus text.
e2e_ctl --json status >"$T/status.json" || e2e_fail "chirpctl status failed"
"$PY" - "$T/status.json" "$T/out.fifo" "$drops" $CPI_BYTES <<'EOF' || e2e_fail "status files: $(cat "$T/status.json")"
import json, sys
f = json.load(open(sys.argv[1]))["files"]
o = f["output"]
assert o["path"] == sys.argv[2] and o["drops"] == int(sys.argv[3]) and o["errors"] == 0, o
assert o["dropped_bytes"] == o["drops"] * int(sys.argv[4]) and o["bytes"] > 0, o
assert f["detections"]["path"] == "" and f["detections"]["drops"] == 0, f
EOF
e2e_ctl metrics >"$T/metrics.txt" || e2e_fail "chirpctl metrics failed"
grep -q "^chirpd_output_file_drops_total $drops\$" "$T/metrics.txt" ||
	e2e_fail "metrics: $(grep output_file "$T/metrics.txt")"
grep -q "^# HELP chirpd_output_file_dropped_bytes_total " "$T/metrics.txt" || e2e_fail "metrics: no HELP"

# Read the FIFO again: what the sink held arrives, and the bytes add up.
read_fifo() {
	"$PY" - "$1" "$2" <<'EOF'
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_NONBLOCK)
with open(sys.argv[2], "ab") as out:
    while True:
        try:
            b = os.read(fd, 1 << 20)
        except BlockingIOError:
            break
        if not b:
            break
        out.write(b)
EOF
}
: >"$T/file.cf32"
for ((i = 0; i < 100 * E2E_SLOW; i++)); do
	read_fifo "$T/out.fifo" "$T/file.cf32"
	w=$(fault_stat output_file_bytes)
	[ $((w + $(fault_stat output_file_dropped_bytes))) -eq $((N * CPI_BYTES)) ] &&
		[ "$(stat -c %s "$T/file.cf32")" -eq "$w" ] && break
	sleep 0.1
done
w=$(fault_stat output_file_bytes)
fault_expect_eq "written + dropped bytes" $((w + $(fault_stat output_file_dropped_bytes))) $((N * CPI_BYTES))
fault_expect_eq "bytes read from the FIFO" "$(stat -c %s "$T/file.cf32")" "$w"
fault_expect_eq "whole results written" "$w" $(((N - drops) * CPI_BYTES))
"$PY" - "$T/file.cf32" "$T/tap.cf32" $CPI_BYTES <<'EOF' || e2e_fail "the file's results are not the ring's, in order"
import sys
f, t, n = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read(), int(sys.argv[3])
ring = [t[i:i + n] for i in range(0, len(t), n)]
k = 0
for i in range(0, len(f), n):
    rec = f[i:i + n]
    while k < len(ring) and ring[k] != rec:
        k += 1
    assert k < len(ring), f"file result {i // n} is none of the ring's later results"
    k += 1
print(f"{len(f) // n} whole results, in order")
EOF
e2e_stop_chirpd || e2e_fail "chirpd exited $? on SIGTERM"
exec {HOLD}>&-

# --- [detections] file blocked, detections the only result ---------------------
# A FIFO of one page held open and never read; [output] mode none and no
# detection ring, so a CPI is delivered when its list's line is queued;
# lists of at most 4 detections keep the queue small (4 lines of the
# longest).
mkfifo "$T/det.fifo" || e2e_fail "mkfifo"
"$PY" -c '
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR)
fcntl.fcntl(fd, 1031, 4096)          # F_SETPIPE_SZ: one page
print("held", flush=True)
time.sleep(3600)
' "$T/det.fifo" >"$T/holder.log" 2>&1 &
HOLDER=$!
e2e_track $HOLDER
e2e_wait 10 grep -q held "$T/holder.log" || e2e_fail "FIFO holder: $(cat "$T/holder.log")"
fault_config input.slots=64 cpi.pulses=16 cpi.samples=512 waveform.pulse_width_s=2e-6 \
	waveform.bandwidth_hz=5e6 radar.prf_hz=10000 radar.carrier_hz=1e9 \
	doppler.enable=true doppler.fft=16 cfar.enable=true cfar.pfa=1e-4 \
	cfar.max_detections=4 detections.file="$T/det.fifo" output.mode=none
e2e_start_chirpd
"$CHIRP_FEED" -c "$CONF" --target 100,-20,2500 --snr-db 10 --seed 5 -n $N --rate 200 --block -q \
	2>"$T/feed2.log" || e2e_fail "chirp-feed: $(cat "$T/feed2.log")"
fault_wait_stat detection_lists -ge $N 10 || e2e_fail "detection_lists $(fault_stat detection_lists) < $N"
fault_expect_eq "cpis_in" "$(fault_stat cpis_in)" $N
fault_expect_eq "input_overruns" "$(fault_stat input_overruns)" 0
ddrops=$(fault_stat detection_file_drops)
[ "$ddrops" -ge $((N / 2)) ] || e2e_fail "detection_file_drops $ddrops: a blocked file should drop most of $N"
fault_expect_eq "cpis_out (lists queued for the file)" "$(fault_stat cpis_out)" $((N - ddrops))
[ "$(fault_stat detection_file_dropped_bytes)" -gt 0 ] || e2e_fail "detection_file_dropped_bytes 0"
: >"$T/det.jsonl"
for ((i = 0; i < 100 * E2E_SLOW; i++)); do
	read_fifo "$T/det.fifo" "$T/det.jsonl"
	[ "$(stat -c %s "$T/det.jsonl")" -eq "$(fault_stat detection_file_bytes)" ] &&
		[ "$(wc -l <"$T/det.jsonl")" -eq $((N - ddrops)) ] && break
	sleep 0.1
done
"$PY" - "$T/det.jsonl" $((N - ddrops)) <<'EOF' || e2e_fail "the file's lines: $(head -c 300 "$T/det.jsonl")"
import json, sys
lines = open(sys.argv[1]).read().split("\n")
assert lines[-1] == "", "the file ends inside a line"
recs = [json.loads(l) for l in lines[:-1]]
assert len(recs) == int(sys.argv[2]), (len(recs), sys.argv[2])
seqs = [r["seq"] for r in recs]
assert all(b > a for a, b in zip(seqs, seqs[1:])), seqs
assert all("range_gate" in d and "gate" not in d for r in recs for d in r["detections"])
print(f"{len(recs)} whole lines, in order")
EOF
e2e_log "blocked [detections] file: $N CPIs taken, $ddrops lines dropped and counted, the rest whole and in order"
e2e_stop_chirpd || e2e_fail "chirpd exited $? on SIGTERM"
e2e_pass
