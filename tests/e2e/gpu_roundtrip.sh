#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# gpu_roundtrip.sh — the whole daemon on the CUDA backend: chirp-feed sends
# synthetic echoes, chirpd (backend = cuda) compresses them, chirp-tap
# --verify recomputes every result on the CPU from the same synthetic input
# and compares. Cases: cf32->complex at depth 3, sc16->magnitude at R = 9000
# (rows whose byte length is not a multiple of 256) at depth 2, cf32->power_db
# at depth 1 with staging = copy. Also: status names the backend, the device
# and the staging actually used; no drops, gaps or backend errors.
# Skipped (77) without a GPU or without a CUDA build.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_gpu.inc"
e2e_init gpu_roundtrip
e2e_need chirp-feed chirp-tap
[ -x "$PY" ] || e2e_skip "$PY not found"
gpu_need

TARGETS=(--target 100,-6 --target 517,-12,0.125/pulse --target 901,-20)
SEED=11

# run_case NAME FORMAT MODE C P R L STREAMS STAGING N WANT_STAGING
run_case() {
	local name=$1 fmt=$2 mode=$3 c=$4 p=$5 r=$6 l=$7 streams=$8 staging=$9 n=${10} want=${11}
	local tlog=$T/tap-$name.log flog=$T/feed-$name.log v
	e2e_config processing.backend=cuda processing.streams="$streams" processing.staging="$staging" \
		input.format="$fmt" output.mode="$mode" cpi.channels="$c" cpi.pulses="$p" cpi.samples="$r" \
		waveform.pulse_width_s="$(gpu_pw "$l")" input.slots=8 output.slots="$(slots_for "$n")" \
		input.ring="$IN_RING-$name" output.ring="$OUT_RING-$name"
	e2e_start_chirpd
	[ "$(gpu_status backend)" = cuda ] || e2e_fail "$name: backend is $(gpu_status backend), not cuda"
	v=$(gpu_status device); e2e_log "$name: device $v"
	case $v in *"("*")"*) ;; *) e2e_fail "$name: device \"$v\" does not name the GPU and its bus id";; esac
	[ "$(gpu_status depth)" = "$streams" ] || e2e_fail "$name: depth $(gpu_status depth), want $streams"
	"$CHIRP_TAP" -c "$CONF" --verify "${TARGETS[@]}" --snr-db 20 --seed $SEED -n "$n" \
		--timeout $((60 * E2E_SLOW)) --fail-on-gap -q 2>"$tlog" &
	local tap=$!
	e2e_track $tap
	e2e_wait_consumer "$(e2e_conf_get output.ring)" $tap
	"$CHIRP_FEED" -c "$CONF" "${TARGETS[@]}" --snr-db 20 --seed $SEED -n "$n" --block -q \
		2>"$flog" || e2e_fail "$name: chirp-feed failed: $(cat "$flog")"
	wait $tap || e2e_fail "$name: chirp-tap exited $?: $(tail -5 "$tlog")"
	tail -n 2 "$tlog"
	[ "$(fault_tap_field_verified "$tlog")" = "$n" ] || e2e_fail "$name: tap verified $(fault_tap_field_verified "$tlog") of $n"
	e2e_wait 5 e2e_stat_ge cpis_out "$n" || e2e_fail "$name: cpis_out $(e2e_stat cpis_out) < $n"
	for v in output_drops sequence_gaps backend_errors input_overruns; do
		[ "$(e2e_stat $v)" = 0 ] || e2e_fail "$name: $v = $(e2e_stat $v)"
	done
	v=$(gpu_status staging)
	e2e_log "$name: staging \"$v\" (want \"$want\"), state $(gpu_status state)"
	[ "$v" = "$want" ] || e2e_fail "$name: staging \"$v\", want \"$want\""
	e2e_stop_chirpd || e2e_fail "$name: chirpd exited $? on SIGTERM"
}

# The output ring holds every result: the verifying tap (a CPU recomputation)
# may be slower than the GPU, and chirpd never waits for a consumer.
slots_for() { local s=2; while [ $s -lt "$1" ]; do s=$((s * 2)); done; echo $s; }

fault_tap_field_verified() {
	sed -n 's/^chirp-tap: verified \([0-9]*\),.*/\1/p' "$1" | tail -n 1
}

run_case cf32c  cf32 complex   2 16 1000 200  3 auto 30 registered
run_case sc16m  sc16 magnitude 2 4  9000 1000 2 auto 8  registered
run_case cf32db cf32 power_db  2 8  1000 100  1 copy 16 copy
grep -E "cuda:|backend cuda" "$CHIRPD_LOG" | sort | uniq -c | head -20
e2e_pass
