#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fault_ring_corrupt.sh — random bytes written into a ring's shared memory.
#
# A. While chirpd runs with a producer and a consumer, the input ring's
#    header is scribbled on (modes: fields after the magic, producer/consumer
#    indices, the whole page; fault_tool.py corrupt). chirpd must not crash
#    (no signal, no sanitizer report). Either it exits non-zero with an error
#    naming the ring, or it keeps answering and then either reports the
#    corrupt input ring in its log or carries on with bad_blocks = 0 (a
#    scribble that its private copy of the layout makes harmless); counting
#    bad blocks without a word in the log is a failure, and so is staying
#    "running" while taking nothing from a producer that still commits (it
#    must resume, or declare its data path failed). SIGTERM must still stop
#    it within 2 s (x3 under sanitizers), exit 0, or 1 if it reported the
#    data path failed. The producer and consumer must not crash either.
#    Then a fresh chirpd on
#    the same names either starts and processes verified data, or refuses
#    with an error naming the ring; after the operator removes the object it
#    starts and works.
# B. Slot descriptors of queued blocks are scribbled on while chirpd is
#    paused: the bad blocks are skipped and counted (bad_blocks or
#    sequence_gaps), later blocks are processed and verify.
# C. Garbage objects exist before chirpd starts (empty, short, 1 MiB of
#    random bytes): chirpd starts or refuses with a clear error; chirp-feed
#    attaching to garbage fails with a message, not a crash.
# No run may produce a sanitizer report (CI runs this under ASan+UBSan).
# Environment: CHIRP_TEST_BACKEND (cpu|cuda|auto), FAULT_CORRUPT_MODES
# (default "fields indices indices all": one run per word, each its own seed).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_fault.sh"
fault_init ringhdr   # (a name without "corrupt": the logs are searched for that word)

sanitizer_clean() {   # sanitizer_clean FILE... — no ASan/UBSan/TSan report
	! grep -l 'AddressSanitizer\|runtime error:\|ThreadSanitizer\|LeakSanitizer' "$@" 2>/dev/null
}

not_signalled() {     # not_signalled WHAT RC
	[ "$2" -lt 128 ] || e2e_fail "$1 died by signal $(($2 - 128))"
}

# start_or_refuse TAG — start chirpd on $CONF; sets STARTED=1 if it answers,
# STARTED=0 if it refused (non-zero exit, not a signal, message naming the
# input ring). Leaves CHIRPD_PID set when started.
start_or_refuse() {
	local tag=$1 i rc
	: >"$T/start-$tag.log"
	"$CHIRPD" -c "$CONF" >>"$T/start-$tag.log" 2>&1 &
	CHIRPD_PID=$!
	for ((i = 0; i < 100 * E2E_SLOW; i++)); do
		if ! kill -0 "$CHIRPD_PID" 2>/dev/null; then
			wait "$CHIRPD_PID"; rc=$?
			CHIRPD_PID=
			not_signalled "chirpd ($tag)" $rc
			[ $rc -ne 0 ] || e2e_fail "chirpd ($tag) exited 0 at start"
			grep -q "$IN_RING" "$T/start-$tag.log" ||
				e2e_fail "chirpd ($tag) refused without naming $IN_RING: $(cat "$T/start-$tag.log")"
			e2e_log "$tag: chirpd refused: $(grep "$IN_RING" "$T/start-$tag.log" | head -1)"
			STARTED=0
			return 0
		fi
		if [ -S "$SOCK" ] && e2e_ctl ping >/dev/null 2>&1; then
			STARTED=1
			return 0
		fi
		sleep 0.1
	done
	e2e_fail "chirpd ($tag) neither started nor exited"
}

# verified_run TAG — 20 CPIs through the running chirpd, all verified (the
# output ring, 32 slots, holds them all however late the tap is scheduled).
verified_run() {
	local tag=$1 rc
	fault_tap "$T/tap-$tag-ok.log" --count 20 --timeout 30
	fault_feed "$T/feed-$tag-ok.log" --rate 100 --count 20 --wait 5
	wait "$TAP_PID"; rc=$?
	[ $rc -eq 0 ] || e2e_fail "$tag: verified run after recovery: chirp-tap exit $rc: $(tail -3 "$T/tap-$tag-ok.log")"
	fault_expect_eq "$tag: verified after recovery" "$(fault_tap_field "$T/tap-$tag-ok.log" verified)" 20
}

stop_any() {   # stop chirpd if it runs; it must not have died by a signal
	local rc
	[ -n "$CHIRPD_PID" ] || return 0
	e2e_stop_chirpd; rc=$?
	not_signalled chirpd $rc
}

# ---- A. header scribbled while running -------------------------------
seed=1
for mode in ${FAULT_CORRUPT_MODES:-fields indices indices all}; do
	{
		seed=$((seed + 1))
		tag=$mode-$seed
		IN_RING=/$E2E_UNIQ-$tag-in OUT_RING=/$E2E_UNIQ-$tag-out
		CHIRPD_LOG=$T/chirpd-$tag.log
		fault_config input.slots=16 output.slots=32 cpi.pulses=4
		e2e_start_chirpd
		fault_skip_if_no_cuda
		fault_tap "$T/tap-$tag.log"
		tap=$TAP_PID
		fault_feed "$T/feed-$tag.log" --rate 100 --wait 5
		feed=$FEED_PID
		fault_wait_stat cpis_in -ge 20 20 || e2e_fail "$tag: no input"
		"$PY" "$FAULT_TOOL" corrupt "$IN_RING" "$mode" "$seed" || e2e_fail "$tag: could not corrupt"
		sleep 2
		if kill -0 "$CHIRPD_PID" 2>/dev/null; then
			fault_alive || e2e_fail "$tag: chirpd runs but does not answer"
			e2e_json stats >"$T/stats-$tag.json"
			bad=$(fault_stat bad_blocks)
			said=$(grep -i "$IN_RING\|input ring" "$CHIRPD_LOG" | grep -i 'corrupt\|invalid\|bad\|magic' | head -1)
			e2e_log "$tag: chirpd still running; bad_blocks $bad; log: ${said:-(nothing about the ring)}"
			# Silence is acceptable only if the scribble really was harmless.
			[ -n "$said" ] || [ "$bad" -eq 0 ] ||
				e2e_fail "$tag: chirpd counts $bad bad blocks in 2 s on the corrupt ring $IN_RING and logs nothing about it"
			# A "running" chirpd must be processing again while the producer
			# still commits; otherwise it must have declared its data path
			# failed (so the watchdog restarts it). Running and discarding
			# everything forever is the failure.
			if kill -0 "$feed" 2>/dev/null; then
				in0=$(fault_stat cpis_in)
				sleep 2
				in1=$(fault_stat cpis_in)
				state=$(e2e_json status | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["state"])')
				e2e_log "$tag: producer still running; chirpd state $state, cpis_in $in0 -> $in1, bad_blocks $(fault_stat bad_blocks)"
				[ "$state" = failed ] || [ "$in1" -gt "$in0" ] ||
					e2e_fail "$tag: chirpd says '$state' but has taken nothing for 2 s while the producer commits (bad_blocks $(fault_stat bad_blocks))"
			fi
			t0=$(date +%s%N)
			e2e_stop_chirpd; rc=$?
			ms=$(( ($(date +%s%N) - t0) / 1000000 ))
			e2e_log "$tag: SIGTERM: exit $rc after $ms ms"
			not_signalled "$tag: chirpd" $rc
			[ $rc -eq 0 ] || { [ $rc -eq 1 ] && [ -n "$said" ]; } ||
				e2e_fail "$tag: chirpd exited $rc on SIGTERM: $(tail -3 "$CHIRPD_LOG")"
			[ $ms -le $((2000 * E2E_SLOW)) ] || e2e_fail "$tag: SIGTERM took $ms ms: $(tail -3 "$CHIRPD_LOG")"
		else
			wait "$CHIRPD_PID"; rc=$?
			CHIRPD_PID=
			not_signalled "$tag: chirpd" $rc
			[ $rc -ne 0 ] || e2e_fail "$tag: chirpd exited 0 after its ring was corrupted"
			grep -q "$IN_RING" "$CHIRPD_LOG" || e2e_fail "$tag: chirpd exited $rc without naming $IN_RING"
			e2e_log "$tag: chirpd exited $rc: $(grep "$IN_RING" "$CHIRPD_LOG" | tail -1)"
		fi
		for p in "$feed" "$tap"; do
			if kill -0 "$p" 2>/dev/null; then
				fault_stop "$p"; rc=$?
			else
				wait "$p"; rc=$?
			fi
			not_signalled "$tag: chirp-feed/chirp-tap" $rc
		done
		sanitizer_clean "$CHIRPD_LOG" "$T/feed-$tag.log" "$T/tap-$tag.log" ||
			e2e_fail "$tag: sanitizer report"
		# Recovery on the same names.
		CHIRPD_LOG=$T/chirpd-$tag-recover.log
		start_or_refuse "$tag"
		if [ "$STARTED" = 0 ]; then
			rm -f "/dev/shm$IN_RING"
			e2e_start_chirpd
		fi
		verified_run "$tag"
		stop_any
		sanitizer_clean "$T"/*.log || e2e_fail "$tag: sanitizer report"
	}
done

# ---- B. descriptors of queued blocks scribbled --------------------------
tag=descs
IN_RING=/$E2E_UNIQ-$tag-in OUT_RING=/$E2E_UNIQ-$tag-out
CHIRPD_LOG=$T/chirpd-$tag.log
fault_config input.slots=16 output.slots=64 cpi.pulses=4
e2e_start_chirpd
e2e_ctl pause >/dev/null || e2e_fail "pause"
"$CHIRP_FEED" --ring "$IN_RING" -c "$CONF" "${FAULT_TARGET_ARGS[@]}" --snr-db "$FAULT_SNR" \
	--seed "$FAULT_SEED" -q --count 10 --wait 5 >"$T/feed-$tag.log" 2>&1 || e2e_fail "$tag: feed"
"$PY" "$FAULT_TOOL" corrupt "$IN_RING" descs 99 || e2e_fail "$tag: could not corrupt"
fault_tap "$T/tap-$tag.log"
e2e_ctl resume >/dev/null || e2e_fail "resume"
sleep 1
# --block: the 20 later blocks are all committed however late chirpd gets
# the CPU on a loaded machine (at --rate 100 a 16-slot ring overflows after
# 160 ms without it), so "20 processed" below tests chirpd, not the
# scheduler; then wait for them (not a fixed sleep).
fault_feed "$T/feed-$tag-2.log" --rate 100 --count 20 --wait 5 --block
wait "$FEED_PID" || e2e_fail "$tag: second feed: $(tail -3 "$T/feed-$tag-2.log")"
fault_expect_eq "$tag: second feed dropped" "$(fault_feed_field "$T/feed-$tag-2.log" dropped)" 0
# Settled when each of the 30 blocks was processed or skipped as bad.
settled() { [ $(($(e2e_stat cpis_in) + $(e2e_stat bad_blocks))) -ge 30 ]; }
e2e_wait 20 settled || e2e_log "$tag: not settled after 20 s (x$E2E_SLOW)"   # judged below
fault_alive || e2e_fail "$tag: chirpd died on corrupt descriptors"
bad=$(fault_stat bad_blocks) gaps=$(fault_stat sequence_gaps) in=$(fault_stat cpis_in)
e2e_log "$tag: cpis_in $in, bad_blocks $bad, sequence_gaps $gaps, cpis_out $(fault_stat cpis_out)"
[ $((bad + gaps)) -gt 0 ] || [ "$in" -eq 30 ] ||
	e2e_fail "$tag: corrupt descriptors neither counted nor processed as sent"
[ "$in" -ge 20 ] || e2e_fail "$tag: later blocks were not processed"
fault_stop "$TAP_PID"
fault_expect_eq "$tag: mismatches (a corrupt block must never be processed as data)" \
	"$(fault_tap_field "$T/tap-$tag.log" mismatches)" 0
stop_any
sanitizer_clean "$T"/*.log || e2e_fail "$tag: sanitizer report"

# ---- C. garbage objects before start -----------------------------------
for kind in empty short random; do
	tag=garbage-$kind
	IN_RING=/$E2E_UNIQ-$tag-in OUT_RING=/$E2E_UNIQ-$tag-out
	CHIRPD_LOG=$T/chirpd-$tag.log
	fault_config input.slots=16 output.slots=32 cpi.pulses=4
	case $kind in
	empty)  : >"/dev/shm$IN_RING";;
	short)  head -c 100 /dev/urandom >"/dev/shm$IN_RING";;
	random) head -c 1048576 /dev/urandom >"/dev/shm$IN_RING";;
	esac
	chmod 600 "/dev/shm$IN_RING"
	# A producer attaching to garbage: an error, not a crash.
	"$CHIRP_FEED" --ring "$IN_RING" -c "$CONF" "${FAULT_TARGET_ARGS[@]}" --snr-db "$FAULT_SNR" \
		--count 1 --wait 0 >"$T/feed-$tag.log" 2>&1
	rc=$?
	not_signalled "$tag: chirp-feed" $rc
	[ $rc -ne 0 ] || e2e_fail "$tag: chirp-feed attached to garbage"
	grep -q 'error' "$T/feed-$tag.log" || e2e_fail "$tag: chirp-feed failed without an error message"
	grep -q "$IN_RING" "$T/feed-$tag.log" || e2e_log "note: $tag: chirp-feed's error does not name the ring"
	e2e_log "$tag: chirp-feed: $(head -1 "$T/feed-$tag.log")"
	start_or_refuse "$tag"
	if [ "$STARTED" = 0 ]; then
		rm -f "/dev/shm$IN_RING"
		e2e_start_chirpd
	fi
	verified_run "$tag"
	stop_any
done
sanitizer_clean "$T"/*.log || e2e_fail "sanitizer report"
e2e_pass
