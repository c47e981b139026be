#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# daemon_remove_rings.sh — chirpd --remove-rings removes the rings a
# configuration names, and only while no chirpd holds them:
#   A. after a clean stop the input, output and detection rings stay in
#      /dev/shm (a restart continues on them);
#   B. with chirpd running, --remove-rings is refused (exit 1, names the
#      ring and the role), and every ring is left in place;
#   C. --remove-rings --if-configured keeps them while [daemon]
#      remove_rings_on_stop is false (the default), exit 0;
#   D. with chirpd stopped, --remove-rings removes all three (exit 0);
#      again, each is reported not present (exit 0);
#   E. --if-configured with remove_rings_on_stop = true removes them.
. "$(dirname "$0")/lib.sh"
e2e_init remove_rings
DET_RING=/$E2E_UNIQ-det
conf_det() {   # conf_det [KEY=VALUE...] — a config with a detection ring
	e2e_config doppler.enable=yes cfar.enable=yes cfar.train_range=8 cfar.guard_range=2 \
		cfar.train_doppler=0 cfar.guard_doppler=0 output.mode=map_db detections.ring="$DET_RING" "$@"
}
present() { [ -e "/dev/shm/${IN_RING#/}" ] && [ -e "/dev/shm/${OUT_RING#/}" ] && [ -e "/dev/shm/${DET_RING#/}" ]; }
absent() { [ ! -e "/dev/shm/${IN_RING#/}" ] && [ ! -e "/dev/shm/${OUT_RING#/}" ] && [ ! -e "/dev/shm/${DET_RING#/}" ]; }

conf_det
"$CHIRPD" --check -c "$CONF" >"$T/check.log" 2>&1 || e2e_fail "--check: $(cat "$T/check.log")"
e2e_start_chirpd
present || e2e_fail "chirpd did not create its three rings: $(ls /dev/shm | grep "$E2E_UNIQ")"

# B. refused while chirpd runs
"$CHIRPD" --remove-rings -c "$CONF" >"$T/rm.out" 2>"$T/rm.err"; rc=$?
[ $rc = 1 ] || e2e_fail "--remove-rings with chirpd running exited $rc: $(cat "$T/rm.out" "$T/rm.err")"
grep -q "input ring $IN_RING: its consumer role is held by a live process (chirpd is running on it: stop it first)" "$T/rm.err" ||
	e2e_fail "refusal does not name the input ring: $(cat "$T/rm.err")"
grep -q "output ring $OUT_RING: its producer role is held" "$T/rm.err" || e2e_fail "refusal: $(cat "$T/rm.err")"
grep -q "no ring removed" "$T/rm.err" || e2e_fail "refusal: $(cat "$T/rm.err")"
present || e2e_fail "a refused --remove-rings removed a ring"
e2e_ctl ping >/dev/null || e2e_fail "chirpd stopped answering after a refused --remove-rings"

# A. a clean stop keeps them
e2e_stop_chirpd || e2e_fail "chirpd exited $? on SIGTERM"
present || e2e_fail "a clean stop removed a ring"

# C. --if-configured with the default (false) keeps them
"$CHIRPD" --remove-rings --if-configured -c "$CONF" >"$T/rm.out" 2>&1 ||
	e2e_fail "--if-configured exited $?: $(cat "$T/rm.out")"
grep -q "remove_rings_on_stop is false: rings kept" "$T/rm.out" || e2e_fail "--if-configured: $(cat "$T/rm.out")"
present || e2e_fail "--if-configured removed rings with remove_rings_on_stop = false"
"$CHIRPD" --if-configured -c "$CONF" >/dev/null 2>&1 && e2e_fail "--if-configured alone was accepted"

# D. removed once stopped; a second run finds nothing
"$CHIRPD" --remove-rings -c "$CONF" >"$T/rm.out" 2>&1 || e2e_fail "--remove-rings exited $?: $(cat "$T/rm.out")"
absent || e2e_fail "rings left after --remove-rings: $(ls /dev/shm | grep "$E2E_UNIQ")"
for w in "input ring $IN_RING" "output ring $OUT_RING" "detection ring $DET_RING"; do
	grep -qx "removed $w" "$T/rm.out" || e2e_fail "--remove-rings did not report $w: $(cat "$T/rm.out")"
done
"$CHIRPD" --remove-rings -c "$CONF" >"$T/rm.out" 2>&1 || e2e_fail "second --remove-rings exited $?"
grep -qx "input ring $IN_RING: not present" "$T/rm.out" || e2e_fail "second run: $(cat "$T/rm.out")"

# E. the key asks for it
conf_det daemon.remove_rings_on_stop=true
e2e_start_chirpd
e2e_stop_chirpd || e2e_fail "chirpd exited $? on SIGTERM"
present || e2e_fail "rings missing after the second stop"
"$CHIRPD" --remove-rings --if-configured -c "$CONF" >"$T/rm.out" 2>&1 ||
	e2e_fail "--if-configured exited $?: $(cat "$T/rm.out")"
absent || e2e_fail "--if-configured with remove_rings_on_stop = true left rings: $(cat "$T/rm.out")"
e2e_pass
