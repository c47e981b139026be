#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# gpu_fault.sh — a GPU failure in the middle of a run, on the CUDA backend.
#
# chirpd runs with tests/e2e/gpu_fault_shim.c preloaded: cufftExecC2C works
# until the test creates a file, then fails with CUFFT_EXEC_FAILED as a device
# fault would; [processing] cuda_fused = off, so that the CPIs call cuFFT
# at all (the fused kernel has no cuFFT call). cuda_graphs = 0: a CPI that runs as a CUDA
# graph calls cufftExecC2C only when its graph is made, so the shim needs
# the CPIs queued call by call; a failed graph launch goes through the same
# failure path (cu_fail) as any other failed call. Under a 100 CPI/s
# synthetic stream with a verifying consumer:
#   - before the fault every result verifies against the CPU recomputation;
#   - after it the data path is "failed" within seconds, status and the log
#     name the failing call and its error, backend_errors counts it;
#   - the watchdog pings stop (seen on a test-owned NOTIFY_SOCKET and in the
#     watchdog_pings counter) and STATUS says failed, so systemd restarts us;
#   - no CPU fallback, nothing delivered that was not computed: every result
#     the consumer got verifies, results delivered = cpis_out, and the CPIs
#     lost in flight are at most the depth;
#   - chirpd still answers its control socket, and exits non-zero on SIGTERM.
# Skipped (77) without a GPU, without a CUDA build, or without a C compiler.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_gpu.inc"
e2e_init gpu_fault
e2e_need chirp-feed chirp-tap
[ -x "$PY" ] || e2e_skip "$PY not found"
gpu_need
CC=${CC:-cc}
"$CC" -shared -fPIC -o "$T/shim.so" "$(dirname "$0")/gpu_fault_shim.c" -ldl 2>"$T/cc.log" ||
	e2e_skip "cannot build the fault shim: $(head -3 "$T/cc.log")"

TARGETS=(--target 100,-6 --target 517,-12 --target 901,-20)
SEED=5
gpu_state_is() { [ "$(gpu_status state)" = "$1" ]; }
DEPTH=3
FAULT=$T/gpu-fault
NSOCK=$T/notify.sock
NLOG=$T/notify.log

e2e_notify_listen "$NSOCK" "$NLOG" 300

e2e_config processing.backend=cuda processing.streams=$DEPTH processing.cuda_graphs=0 \
	processing.cuda_fused=off \
	cpi.channels=2 cpi.pulses=16 cpi.samples=1000 input.slots=64 output.slots=64
CHIRP_GPU_FAULT_FILE=$FAULT LD_PRELOAD=$T/shim.so NOTIFY_SOCKET=$NSOCK \
	WATCHDOG_USEC=300000 e2e_start_chirpd
[ "$(gpu_status backend)" = cuda ] || e2e_fail "backend $(gpu_status backend), not cuda"
e2e_log "device $(gpu_status device), staging $(gpu_status staging), depth $(gpu_status depth)"

"$CHIRP_TAP" -c "$CONF" --verify "${TARGETS[@]}" --snr-db 20 --seed $SEED -q 2>"$T/tap.log" &
TAP=$!
e2e_track $TAP
e2e_wait_consumer "$(e2e_conf_get output.ring)" $TAP
"$CHIRP_FEED" -c "$CONF" "${TARGETS[@]}" --snr-db 20 --seed $SEED --rate 100 -q 2>"$T/feed.log" &
FEED=$!
e2e_track $FEED

e2e_wait 20 e2e_stat_ge cpis_out 50 || e2e_fail "no steady flow before the fault: cpis_out $(e2e_stat cpis_out)"
e2e_wait 5 e2e_stat_gt watchdog_pings 2 || e2e_fail "no watchdog pings before the fault"
[ "$(gpu_status state)" = running ] || e2e_fail "state $(gpu_status state) before the fault"

e2e_log "injecting the GPU fault (cufftExecC2C -> CUFFT_EXEC_FAILED)"
: >"$FAULT"
e2e_wait 5 gpu_state_is failed ||
	e2e_fail "state is $(gpu_status state) 5 s after the fault, not failed"
err=$(gpu_status error)
e2e_log "status error: $err"
case $err in *cufftExecC2C*CUFFT_EXEC_FAILED*) ;; *) e2e_fail "status error does not name the call and its error: $err";; esac
grep -q "cuda: cufftExecC2C: CUFFT_EXEC_FAILED" "$CHIRPD_LOG" || e2e_fail "the log does not name the failing call"
grep -q "data path failed" "$CHIRPD_LOG" || e2e_fail "the log does not say the data path failed"
[ "$(e2e_stat backend_errors)" -ge 1 ] || e2e_fail "backend_errors not counted"

# The watchdog stops: no pings from now on (counter and socket).
p1=$(e2e_stat watchdog_pings)
t1=$("$PY" -c 'import time; print(time.monotonic_ns() // 1000)')
sleep 1.5
p2=$(e2e_stat watchdog_pings)
[ "$p1" = "$p2" ] || e2e_fail "watchdog pings went on after the failure: $p1 -> $p2"
"$PY" - "$NLOG" "$t1" <<'PYEOF' || e2e_fail "notify messages wrong after the failure"
import sys
t1 = int(sys.argv[2])
ev = [(int(l.split(" ", 1)[0]), l.split(" ", 1)[1]) for l in open(sys.argv[1]) if " " in l]
late = [m for t, m in ev if t > t1 and "WATCHDOG=1" in m]
assert not late, "WATCHDOG=1 after the failure: %r" % late[:2]
assert any("STATUS=failed" in m for _, m in ev), "no STATUS=failed"
print("notify: %d messages, %d pings, STATUS=failed sent, no ping after the failure"
      % (len(ev), sum("WATCHDOG=1" in m for _, m in ev)))
PYEOF

# Still a well-behaved service: answers, reports, does not fall back to the CPU.
e2e_ctl ping >/dev/null || e2e_fail "chirpd does not answer after the failure"
[ "$(gpu_status backend)" = cuda ] || e2e_fail "backend changed to $(gpu_status backend)"
out1=$(e2e_stat cpis_out)
sleep 0.5
[ "$(e2e_stat cpis_out)" = "$out1" ] || e2e_fail "results still delivered after the failure"

kill -TERM $FEED 2>/dev/null; wait $FEED 2>/dev/null
sleep 0.5
kill -TERM $TAP 2>/dev/null; wait $TAP 2>/dev/null
tail -n 3 "$T/tap.log"
received=$(sed -n 's/^chirp-tap: received \([0-9]*\),.*/\1/p' "$T/tap.log" | tail -n 1)
verified=$(sed -n 's/^chirp-tap: verified \([0-9]*\),.*/\1/p' "$T/tap.log" | tail -n 1)
mism=$(sed -n 's/^chirp-tap: verified [0-9]*, mismatches \([0-9]*\).*/\1/p' "$T/tap.log" | tail -n 1)
cin=$(e2e_stat cpis_in) cout=$(e2e_stat cpis_out)
e2e_log "cpis_in $cin, cpis_out $cout, tap received ${received:-?} verified ${verified:-?} mismatches ${mism:-?}"
[ "${mism:-x}" = 0 ] || e2e_fail "a delivered result did not verify"
[ "${received:-x}" = "$cout" ] || e2e_fail "tap received ${received:-?}, chirpd delivered $cout"
[ "${verified:-x}" = "$received" ] || e2e_fail "tap verified ${verified:-?} of ${received:-?}"
lost=$((cin - cout))
[ $lost -ge 0 ] && [ $lost -le $DEPTH ] || e2e_fail "$lost CPIs taken and not delivered (depth $DEPTH)"
e2e_log "$lost CPIs were in flight at the failure: reported by the failed state, not delivered"

e2e_stop_chirpd; rc=$?
[ $rc -ne 124 ] || e2e_fail "chirpd did not stop on SIGTERM"
[ $rc -ne 0 ] || e2e_fail "chirpd exited 0 with a failed data path"
e2e_log "chirpd exited $rc"
e2e_pass
