#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# daemon_notify.sh — the systemd notify protocol, seen from a test-owned
# NOTIFY_SOCKET: READY=1, then WATCHDOG=1 pings (WATCHDOG_USEC set), then
# around a reload RELOADING=1 with MONOTONIC_USEC followed by READY=1, more
# pings, and STOPPING=1 on SIGTERM, in this order; STATUS= lines carry the
# one-line summary; a failed reload says so in STATUS; when the data path
# fails (its input ring header scribbled on) STATUS says failed and the
# WATCHDOG pings stop, so systemd would restart it.
. "$(dirname "$0")/lib.sh"
e2e_init notify
[ -x "$PY" ] || e2e_skip "$PY not found"

NSOCK=$T/notify.sock
NLOG=$T/notify.log
e2e_notify_listen "$NSOCK" "$NLOG" 120

e2e_config
# WATCHDOG_PID unset: sd_watchdog_enabled() accepts WATCHDOG_USEC for any pid.
NOTIFY_SOCKET=$NSOCK WATCHDOG_USEC=300000 e2e_start_chirpd
e2e_wait 5 grep -q READY=1 "$NLOG" || e2e_fail "no READY=1"
e2e_wait 5 grep -q WATCHDOG=1 "$NLOG" || e2e_fail "no WATCHDOG=1 after READY"
sleep 0.5
e2e_ctl reload >/dev/null || e2e_fail "reload failed"
sleep 0.7
# a bad reload: keeps running, STATUS names the failure
cp "$CONF" "$T/good.conf"
echo "samples = banana" >>"$CONF"   # appended to the last section
e2e_ctl reload >/dev/null 2>&1 && e2e_fail "bad reload succeeded"
cp "$T/good.conf" "$CONF"
e2e_wait 5 grep -q "STATUS=.*last reload failed" "$NLOG" || e2e_fail "STATUS does not report the failed reload"
sleep 0.5
# The data path fails: STATUS=failed, no more pings.
FAULT_TOOL=$(dirname "$0")/fault_tool.py
"$PY" "$FAULT_TOOL" corrupt "$IN_RING" all 5 || e2e_fail "could not corrupt the input ring"
e2e_wait 10 grep -q "STATUS=failed" "$NLOG" || e2e_fail "no STATUS=failed after the input ring was destroyed"
sleep 1                      # > 3 watchdog intervals without pings
[ "$(e2e_state)" = failed ] || e2e_fail "state $(e2e_state), expected failed"
e2e_stop_chirpd
rc=$?
[ $rc = 1 ] || e2e_fail "chirpd exited $rc on SIGTERM with a failed data path (expected 1)"
wait $NOTIFY_LISTENER 2>/dev/null

echo "--- notify log"
cut -c1-160 "$NLOG"
"$PY" - "$NLOG" <<'PYEOF' || e2e_fail "notify sequence wrong"
import sys
events = []
for line in open(sys.argv[1]):
    t, msg = line.rstrip("\n").split(" ", 1)
    fields = dict(kv.split("=", 1) for kv in msg.split("|") if "=" in kv)
    events.append((int(t), fields))
def idx(pred, start=0):
    for i in range(start, len(events)):
        if pred(events[i][1]):
            return i
    sys.exit("missing event after %d" % start)
ready = idx(lambda f: f.get("READY") == "1")
wd1 = idx(lambda f: f.get("WATCHDOG") == "1", ready)
rel = idx(lambda f: f.get("RELOADING") == "1", wd1)
f = events[rel][1]
assert "MONOTONIC_USEC" in f, "RELOADING=1 without MONOTONIC_USEC"
mu = int(f["MONOTONIC_USEC"])
assert abs(mu - events[rel][0]) < 5_000_000, "MONOTONIC_USEC %d far from CLOCK_MONOTONIC %d" % (mu, events[rel][0])
ready2 = idx(lambda f: f.get("READY") == "1", rel + 1)
wd2 = idx(lambda f: f.get("WATCHDOG") == "1", ready2)
failed = idx(lambda f: f.get("STATUS", "").startswith("failed"), wd2)
assert not any(e[1].get("WATCHDOG") for e in events[failed + 1:]), "WATCHDOG=1 after STATUS=failed"
stop = idx(lambda f: f.get("STOPPING") == "1", failed)
# nothing but STATUS after STOPPING: no more pings, no READY
assert not any(e[1].get("WATCHDOG") or e[1].get("READY") for e in events[stop + 1:]), "pings after STOPPING"
# pings are spaced about WATCHDOG_USEC/2 (150 ms) apart, never later than WATCHDOG_USEC
pings = [t for t, f in events[:failed] if f.get("WATCHDOG") == "1"]
gaps = [b - a for a, b in zip(pings, pings[1:])]
assert max(gaps) < 300_000 * 3, "pings %d us apart" % max(gaps)   # generous bound (loaded CI)
assert any("STATUS" in f and "CPI/s" in f["STATUS"] for _, f in events), "no summary in STATUS"
print("order ok: READY %d, WATCHDOG %d, RELOADING %d, READY %d, WATCHDOG %d, STATUS=failed %d "
      "(no pings after it), STOPPING %d; %d pings" % (ready, wd1, rel, ready2, wd2, failed, stop, len(pings)))
PYEOF
e2e_pass
