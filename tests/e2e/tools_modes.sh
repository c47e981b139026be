#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# tools_modes.sh — radar modes per CPI through chirpd, end to end:
#   chirpd (CPU backend) with three [mode] sections of different pulse
#   lengths and windows; chirp-feed --modes 0,1,2 (a new mode every CPI)
#   with synthetic echoes, for cf32 and sc16 input; chirp-tap --verify finds
#   every output CPI equal to the CPU reference of its own mode, and the
#   mode of each CPI on the output and in a SigMF capture follows the
#   schedule. Then:
#   - a tap that verifies with two modes' waveforms swapped fails on
#     exactly those CPIs (the check tells the modes apart);
#   - the SigMF capture replays with its modes (chirp-feed --sigmf) and
#     verifies again;
#   - a mode the configuration does not declare (--modes 0,1,2,7
#     --allow-unknown-modes) comes out flagged UNKNOWN_MODE, all NaN and
#     counted, not a verification failure; without the option the feed
#     refuses it; chirpctl status lists the modes and their CPIs.
. "$(dirname "$0")/lib.sh"
e2e_init tools_modes
e2e_need chirp-feed chirp-tap

TG=(--target 60,-8 --target 333,-16,0.125/pulse --target 590,-12)
SEED=5
N=$((60 / E2E_SLOW))
N=$((N - N % 12))   # whole rounds of every schedule below
P=4 R=600

# modes_config FORMAT [SWAP] — three modes on a 2x4x600 CPI; [waveform]
# keeps only the sample rate (a [mode] section takes id 0). SWAP=1 gives
# modes 1 and 2 each other's waveform (a wrong configuration to verify with).
modes_config() {
	local fmt=$1 swap=${2:-0} id1=1 id2=2
	[ "$swap" = 1 ] && { id1=2; id2=1; }
	e2e_config input.format="$fmt" cpi.pulses=$P cpi.samples=$R input.slots=32 \
		output.slots=64 waveform.type= waveform.bandwidth_hz= waveform.pulse_width_s= \
		waveform.window=
	cat >>"$CONF" <<EOF

[mode search]
id = 0
type = lfm
bandwidth_hz = 10e6
pulse_width_s = 8e-6
window = hamming

[mode track]
id = $id1
type = lfm
bandwidth_hz = 5e6
pulse_width_s = 2e-6
window = taylor

[mode code]
id = $id2
type = barker13
chip_samples = 3
window = blackman
EOF
}

# check_capture META N SCHEDULE — the recording names the three modes
# (chirp:modes) and every capture's chirp:mode is SCHEDULE[k mod n] for its
# CPI k = first_sample / (P*R).
check_capture() {
	"$PY" - "$1" "$2" "$3" $P $R <<'PYEOF' || e2e_fail "SigMF modes: $1"
import json, sys
m = json.load(open(sys.argv[1]))
n, sched, P, R = int(sys.argv[2]), [int(x) for x in sys.argv[3].split(",")], int(sys.argv[4]), int(sys.argv[5])
assert m["global"]["chirp:modes"] == [{"id": 0, "name": "search"}, {"id": 1, "name": "track"},
                                      {"id": 2, "name": "code"}], m["global"]
caps = m["captures"]
assert len(caps) == n, (len(caps), n)
for c in caps:
    k = c["chirp:first_sample"] // (P * R)
    assert c["chirp:mode"] == sched[k % len(sched)], (k, c)
PYEOF
}

# run_tap_feed LOG TAPARGS -- FEEDARGS: a verifying tap on chirpd's output,
# then the feed; waits for both (the tap's exit status in TAP_RC).
run_tap_feed() {
	local log=$1 tap_args=() feed_args=()
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do tap_args+=("$1"); shift; done
	shift
	feed_args=("$@")
	"$CHIRP_TAP" -c "$CONF" -n $N --verify "${TG[@]}" --snr-db 30 --seed $SEED \
		--timeout $((60 * E2E_SLOW)) -q "${tap_args[@]}" >"$T/$log" 2>&1 &
	local tp=$!
	e2e_track $tp
	e2e_wait_consumer "$OUT_RING" $tp
	"$CHIRP_FEED" -c "$CONF" "${TG[@]}" --snr-db 30 --seed $SEED -n $N --block -q \
		"${feed_args[@]}" >"$T/feed.log" 2>&1 || { cat "$T/feed.log"; e2e_fail "chirp-feed ${feed_args[*]} failed"; }
	wait $tp
	TAP_RC=$?
}

for fmt in cf32 sc16; do
	modes_config $fmt
	"$CHIRPD" --check -c "$CONF" >"$T/check.log" 2>&1 || { cat "$T/check.log"; e2e_fail "--check: three modes"; }
	e2e_start_chirpd

	# 1. A new mode every CPI: each output equals its own mode's reference.
	run_tap_feed tap.log --sigmf "$T/cap-$fmt" --fail-on-gap -- --modes 0,1,2
	[ $TAP_RC = 0 ] || { cat "$T/tap.log"; e2e_fail "$fmt: --verify with modes 0,1,2 (rc $TAP_RC)"; }
	grep -q "verified $N, mismatches 0, unknown mode 0" "$T/tap.log" || e2e_fail "$fmt: $(cat "$T/tap.log")"
	grep -q "CPIs per mode: 0: $((N / 3)), 1: $((N / 3)), 2: $((N / 3))" "$T/tap.log" ||
		e2e_fail "$fmt: per-mode counts: $(cat "$T/tap.log")"
	check_capture "$T/cap-$fmt.sigmf-meta" $N 0,1,2
	e2e_log "$fmt: modes 0,1,2 verified, each CPI with its own mode"

	# 2. An unknown mode: refused without the option, flagged and counted with it.
	"$CHIRP_FEED" -c "$CONF" "${TG[@]}" -n 4 --modes 0,7 >"$T/feed.log" 2>&1 &&
		e2e_fail "$fmt: --modes 0,7 accepted an undeclared mode"
	grep -q "mode 7 is not declared in" "$T/feed.log" || e2e_fail "$fmt: $(cat "$T/feed.log")"
	# (a second producer restarts first_sample: one upstream discontinuity)
	run_tap_feed tap.log -- --modes 0,1,2,7 --allow-unknown-modes
	[ $TAP_RC = 0 ] || { cat "$T/tap.log"; e2e_fail "$fmt: unknown mode made --verify fail (rc $TAP_RC)"; }
	grep -q "verified $((N * 3 / 4)), mismatches 0, unknown mode $((N / 4))" "$T/tap.log" ||
		e2e_fail "$fmt: unknown mode not counted: $(cat "$T/tap.log")"
	grep -q "unknown mode: seq [0-9]* is of mode 7" "$T/tap.log" || e2e_fail "$fmt: $(cat "$T/tap.log")"
	grep -q "mode 7 is not declared" "$T/feed.log" || e2e_fail "$fmt: no warning: $(cat "$T/feed.log")"

	# 3. chirpctl status: the three modes and their CPIs.
	#    (waited for: the counters may trail the last output by a moment)
	want=$((N / 3 + N / 4))   # modes 0..2: N/3 each in 1, N/4 each in 2
	status_ok() {
		e2e_ctl status >"$T/status.txt" &&
			grep -qE "^ +0  search +lfm +200 +$want\$" "$T/status.txt" &&
			grep -qE "^ +1  track +lfm +50 +$want\$" "$T/status.txt" &&
			grep -qE "^ +2  code +barker13 +39 +$want\$" "$T/status.txt" &&
			grep -qE "^ +\?  \(unknown mode\) .* $((N / 4))\$" "$T/status.txt"
	}
	e2e_wait 5 status_ok || { cat "$T/status.txt"; e2e_fail "status: modes, L and $want CPIs each, $((N / 4)) unknown"; }
	e2e_stop_chirpd || e2e_fail "chirpd exited $?"
	e2e_log "$fmt: unknown mode flagged and counted; status lists the modes"
done

# 4. Verifying with modes 1 and 2 swapped fails on exactly their CPIs: the
#    capture of step 1 (complex output, cf32) replayed into an output ring
#    with its recorded modes; the feed, given that configuration, notes
#    that the recording named modes 1 and 2 the other way round.
modes_config sc16 1
"$CHIRP_TAP" -c "$CONF" --create -n $N --verify "${TG[@]}" --snr-db 30 --seed $SEED \
	--timeout $((60 * E2E_SLOW)) -q >"$T/tap.log" 2>&1 &
tp=$!; e2e_track $tp
e2e_wait 10 test -e "/dev/shm$OUT_RING" || e2e_fail "no output ring"
"$CHIRP_FEED" -c "$CONF" -r "$OUT_RING" --sigmf "$T/cap-sc16" --block -q >"$T/feed.log" 2>&1 ||
	{ cat "$T/feed.log"; e2e_fail "replay of the capture"; }
grep -q "mode 1 was 'track' when recorded, .* calls it 'code'" "$T/feed.log" ||
	e2e_fail "no note of the renamed mode: $(cat "$T/feed.log")"
wait $tp; rc=$?
[ $rc = 4 ] || { cat "$T/tap.log"; e2e_fail "swapped modes verified (rc $rc)"; }
grep -q "verified $((N / 3)), mismatches $((N * 2 / 3))" "$T/tap.log" || e2e_fail "swapped: $(cat "$T/tap.log")"

# 5. ...and with the right configuration the replayed capture verifies:
#    the recording kept every CPI's mode.
modes_config sc16
"$CHIRP_TAP" -c "$CONF" --create -n $N --verify "${TG[@]}" --snr-db 30 --seed $SEED \
	--timeout $((60 * E2E_SLOW)) -q --sigmf "$T/again" >"$T/tap.log" 2>&1 &
tp=$!; e2e_track $tp
e2e_wait 10 test -e "/dev/shm$OUT_RING" || e2e_fail "no output ring"
"$CHIRP_FEED" -r "$OUT_RING" --sigmf "$T/cap-sc16" --block -q >"$T/feed.log" 2>&1 ||
	{ cat "$T/feed.log"; e2e_fail "replay of the capture"; }
wait $tp || { cat "$T/tap.log"; e2e_fail "replayed capture did not verify"; }
grep -q "verified $N, mismatches 0" "$T/tap.log" || e2e_fail "replay: $(cat "$T/tap.log")"
check_capture "$T/again.sigmf-meta" $N 0,1,2
cmp "$T/cap-sc16.sigmf-data" "$T/again.sigmf-data" || e2e_fail "replayed data differs"
e2e_log "SigMF capture replays with its modes; swapped modes are caught"

e2e_pass
