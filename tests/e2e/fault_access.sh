#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fault_access.sh — who may touch chirpd's rings and control socket.
#
#   1. Default: both rings are created mode 0600 owned by chirpd's uid; the
#      control socket is 0660.
#   2. [daemon] control_group = nogroup: the rings are 0660 with that group,
#      and so is the socket.
#   3. Peer credentials on the socket: a user outside the socket's group
#      cannot connect at all; a user in the socket's group but not in the
#      control group (here: gid 0, no control_group) may read (ping, stats)
#      but every mutating command (pause, resume, reload, log-level) is
#      refused with "permission denied" and changes nothing; a member of
#      the configured control group may mutate.
#   4. Rings: another user cannot attach as producer to a 0600 ring (a clear
#      error, not a crash); chirpd refuses to adopt an existing ring object
#      owned by another uid (a squatted name) and says so; with
#      [input]/[output] allow_foreign_owner = true it adopts them.
#   5. Group deployment: with control_group set, a producer and a consumer
#      running as another user in that group are refused by default (the
#      message names the owner) and work with --allow-foreign-owner: 5 CPIs
#      fed by uid nobody, processed, and verified by a tap of uid nobody.
# Needs root (to act as other users via setpriv); skipped otherwise.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_fault.sh"
fault_init access

[ "$(id -u)" -eq 0 ] || e2e_skip "needs root to switch users"
command -v setpriv >/dev/null || e2e_skip "setpriv (util-linux) not installed"
getent passwd nobody >/dev/null && getent group nogroup >/dev/null ||
	e2e_skip "no user nobody / group nogroup"
NOBODY=$(id -u nobody) NOGROUP=$(getent group nogroup | cut -d: -f3)
as_nobody() { setpriv --reuid="$NOBODY" --regid="$NOGROUP" --clear-groups "$@"; }
as_nobody_gid0() { setpriv --reuid="$NOBODY" --regid=0 --clear-groups "$@"; }

mode_of() { stat -c '%a %U %G' "$1"; }
expect_mode() {   # expect_mode WHAT PATH "MODE USER GROUP"
	local got
	got=$(mode_of "$2") || e2e_fail "$1: $2 missing"
	[ "$got" = "$3" ] || e2e_fail "$1: $2 is '$got', want '$3'"
	e2e_log "$1: $2 is $got"
}

# ---- 1. default modes -------------------------------------------------------
fault_config
e2e_start_chirpd
expect_mode "input ring" "/dev/shm$IN_RING" "600 root root"
expect_mode "output ring" "/dev/shm$OUT_RING" "600 root root"
expect_mode "control socket" "$SOCK" "660 root root"

# ---- 3. peer credentials without a control group ---------------------------
out=$(as_nobody "$CHIRPCTL" -s "$SOCK" ping 2>&1); rc=$?
[ $rc -ne 0 ] || e2e_fail "a user outside the socket's group could connect"
e2e_log "outsider: chirpctl exit $rc: $out"
as_nobody_gid0 "$CHIRPCTL" -s "$SOCK" ping >/dev/null || e2e_fail "group member cannot ping"
as_nobody_gid0 "$CHIRPCTL" -s "$SOCK" --json stats >/dev/null || e2e_fail "group member cannot read stats"
for cmd in pause resume reload "log-level debug"; do
	out=$(as_nobody_gid0 "$CHIRPCTL" -s "$SOCK" $cmd 2>&1); rc=$?
	[ $rc -ne 0 ] || e2e_fail "uid $NOBODY (not in the control group) may run '$cmd'"
	grep -qi 'permission denied' <<<"$out" || e2e_fail "'$cmd' refused without saying why: $out"
done
e2e_log "non-member: mutating commands refused: $out"
fault_expect_eq "reloads after refused reload" "$(fault_stat reloads)" 0
e2e_ctl --json status >"$T/status.json" || e2e_fail "status"
state=$("$PY" -c 'import json,sys; print(json.load(sys.stdin)["state"])' <"$T/status.json")
fault_expect_eq "state is running after a refused pause (1 = yes)" "$([ "$state" = running ] && echo 1 || echo 0)" 1

# ---- 4a. another user as producer on a 0600 ring ---------------------------
out=$(as_nobody "$CHIRP_FEED" --ring "$IN_RING" -c "$CONF" --target 100,0 --snr-db 20 --count 5 --wait 0 2>&1); rc=$?
[ $rc -ne 0 ] && [ $rc -lt 128 ] || e2e_fail "uid $NOBODY on a 0600 ring: chirp-feed exit $rc: $out"
e2e_log "other user as producer: exit $rc: $(head -1 <<<"$out")"
fault_expect_eq "cpis_in after the refused producer" "$(fault_stat cpis_in)" 0
e2e_stop_chirpd || e2e_fail "chirpd exit $?"

# ---- 4b. a squatted ring name owned by another uid --------------------------
chown "$NOBODY" "/dev/shm$IN_RING" || e2e_fail "chown"
"$CHIRPD" -c "$CONF" >"$T/squat.log" 2>&1 &
pid=$!
e2e_track $pid
e2e_wait 10 sh -c "! kill -0 $pid" || e2e_fail "chirpd adopted an input ring owned by uid $NOBODY"
wait $pid; rc=$?
[ $rc -ne 0 ] && [ $rc -lt 128 ] || e2e_fail "squatted ring: chirpd exit $rc"
grep -q "$IN_RING.*owned by uid $NOBODY\|owned by uid $NOBODY.*$IN_RING" "$T/squat.log" ||
	e2e_fail "squatted ring: no clear message: $(cat "$T/squat.log")"
e2e_log "squatted ring refused: $(grep owned "$T/squat.log" | head -1)"

# ---- 4c. ... adopted when configured ---------------------------------------
chown "$NOBODY" "/dev/shm$OUT_RING" || e2e_fail "chown"
fault_config input.allow_foreign_owner=true output.allow_foreign_owner=true
e2e_start_chirpd || e2e_fail "chirpd with allow_foreign_owner did not adopt rings owned by uid $NOBODY"
e2e_ctl ping >/dev/null || e2e_fail "chirpd with adopted rings does not answer"
e2e_log "rings owned by uid $NOBODY adopted with allow_foreign_owner = true"
e2e_stop_chirpd || e2e_fail "chirpd exit $?"
rm -f "/dev/shm$IN_RING" "/dev/shm$OUT_RING"

# ---- 2 + 3. with a control group -------------------------------------------
fault_config daemon.control_group=nogroup
e2e_start_chirpd
expect_mode "input ring (control_group)" "/dev/shm$IN_RING" "660 root nogroup"
expect_mode "output ring (control_group)" "/dev/shm$OUT_RING" "660 root nogroup"
expect_mode "control socket (control_group)" "$SOCK" "660 root nogroup"
as_nobody "$CHIRPCTL" -s "$SOCK" pause >/dev/null || e2e_fail "control group member cannot pause"
as_nobody "$CHIRPCTL" -s "$SOCK" resume >/dev/null || e2e_fail "control group member cannot resume"
out=$(as_nobody_gid0 "$CHIRPCTL" -s "$SOCK" ping 2>&1) && e2e_fail "gid 0 (not nogroup) could connect to a nogroup socket"

# ---- 5. producer and consumer of another user in the control group ---------
for prog in "$CHIRP_FEED --ring $IN_RING --target 100,0 --snr-db 20 --count 5" \
	    "$CHIRP_TAP --ring $OUT_RING --drain --count 5"; do
	out=$(as_nobody $prog -c "$CONF" --wait 0 2>&1); rc=$?
	[ $rc -ne 0 ] && [ $rc -lt 128 ] || e2e_fail "${prog%% *}: a ring owned by uid 0 was used without --allow-foreign-owner (exit $rc)"
	grep -q "owned by uid 0" <<<"$out" || e2e_fail "${prog%% *}: refusal does not name the owner: $out"
	e2e_log "default refusal: $(grep 'owned by' <<<"$out" | head -1)"
done
fault_expect_eq "cpis_in after the refused producer (group)" "$(fault_stat cpis_in)" 0
as_nobody "$CHIRP_TAP" --ring "$OUT_RING" -c "$CONF" --allow-foreign-owner --verify \
	--target 100,0 --snr-db 20 --seed 7 -n 5 --timeout $((30 * ${E2E_SLOW:-1})) -q \
	>"$T/tap-foreign.log" 2>&1 &
TAP_PID=$!
e2e_track "$TAP_PID"
e2e_wait_consumer "$OUT_RING" "$TAP_PID"
as_nobody "$CHIRP_FEED" --ring "$IN_RING" -c "$CONF" --allow-foreign-owner \
	--target 100,0 --snr-db 20 --seed 7 --count 5 --block --wait 0 -q >"$T/feed-foreign.log" 2>&1 ||
	e2e_fail "uid $NOBODY in the control group with --allow-foreign-owner: chirp-feed failed: $(cat "$T/feed-foreign.log")"
wait "$TAP_PID"; rc=$?
[ $rc -eq 0 ] || e2e_fail "uid $NOBODY in the control group with --allow-foreign-owner: chirp-tap exit $rc: $(cat "$T/tap-foreign.log")"
fault_expect_eq "cpis_in from the group member's producer" "$(fault_stat cpis_in)" 5
fault_expect_eq "results verified by the group member's tap" "$(fault_tap_field "$T/tap-foreign.log" verified)" 5
e2e_log "group member as producer and consumer with --allow-foreign-owner: 5 CPIs in, 5 verified"
e2e_stop_chirpd || e2e_fail "chirpd exit $?"
e2e_pass
