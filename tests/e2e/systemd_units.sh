#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# systemd_units.sh — the systemd units pass `systemd-analyze verify`, score
# at most 4.0 ("OK") in `systemd-analyze security`, keep the settings the
# service depends on, and chirpd.service and chirpd@.service share one
# hardening block; the units pass chirpd no settings through the
# environment; the sysusers.d entry creates the chirpd user.
# Exit 0 pass, 77 skipped (no systemd-analyze), else fail.
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD=${CHIRP_BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$(pwd)/$BUILD;; esac
MAX_EXPOSURE=4.0

fail() { echo "FAIL: $*"; exit 1; }
command -v systemd-analyze >/dev/null || { echo "skipped: systemd-analyze is not installed"; exit 77; }

T=$(mktemp -d "${TMPDIR:-/tmp}/chirp-units.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT

# The units name /usr/local/bin (make install rewrites it); verify needs the
# programs to exist, so point a copy at the build. A program whose source
# exists must be built; one not written yet is stood in for by /bin/true
# (only the unit's syntax is under test then), and said so.
mkdir -p "$T/units" "$T/bin" "$T/man/man1" "$T/man/man5" "$T/man/man8"
for b in chirpd chirpctl; do
	if [ -x "$BUILD/bin/$b" ]; then
		ln -s "$BUILD/bin/$b" "$T/bin/$b"
	elif [ -f "src/$b.c" ]; then
		fail "$BUILD/bin/$b is not built"
	else
		echo "note: src/$b.c does not exist yet; verifying with /bin/true in its place"
		ln -s /bin/true "$T/bin/$b"
	fi
done
for u in chirpd.service chirpd@.service; do
	[ -f "systemd/$u" ] || fail "systemd/$u is missing"
	grep -q '/usr/local/bin/chirpd ' "systemd/$u" || fail "$u: ExecStart is not /usr/local/bin/chirpd (install.mk rewrites that path)"
	sed "s|/usr/local/bin/|$T/bin/|g" "systemd/$u" >"$T/units/$u"
done
ln -s chirpd@.service "$T/units/chirpd@gpu0.service"
# Documentation=man:... is checked by running man: give it our pages.
for m in doc/man/*.[158]; do
	ln -s "$(pwd)/$m" "$T/man/man${m##*.}/$(basename "$m")"
done

for u in chirpd.service chirpd@gpu0.service; do
	out=$(MANPATH="$T/man" SYSTEMD_LOG_LEVEL=notice systemd-analyze verify "$T/units/$u" 2>&1)
	rc=$?
	echo "verify $u: rc $rc${out:+, output:}"
	[ -n "$out" ] && echo "$out" | sed 's/^/    /'
	[ $rc -eq 0 ] || fail "systemd-analyze verify $u failed"
	[ -z "$out" ] || fail "systemd-analyze verify $u printed warnings"

	sec=$(systemd-analyze security --offline=yes "$T/units/$u" 2>&1)
	line=$(echo "$sec" | grep 'Overall exposure level')
	[ -n "$line" ] || { echo "$sec" | tail -20; fail "no 'Overall exposure level' line for $u"; }
	score=$(echo "$line" | sed -n 's/.*: \([0-9][0-9.]*\) .*/\1/p')
	echo "security $u: ${line#→ }"
	[ -n "$score" ] || fail "cannot parse the score in: $line"
	awk -v s="$score" -v m="$MAX_EXPOSURE" 'BEGIN { exit !(s <= m) }' ||
		fail "$u: exposure $score > $MAX_EXPOSURE"
done

# Settings chirpd depends on (a "more secure" edit must not drop them).
need() {   # need UNIT REGEX REASON
	grep -Eq "^$2\$" "systemd/$1" || fail "$1: no line matching '$2' ($3)"
}
refuse() { # refuse UNIT REGEX REASON
	! grep -Eq "^$2" "systemd/$1" || fail "$1: has '$2' ($3)"
}
for u in chirpd.service chirpd@.service; do
	need "$u" 'Type=notify' 'chirpd signals READY=1 once the pipeline is live'
	need "$u" 'WatchdogSec=[0-9]+s?' 'the data path heartbeat'
	need "$u" 'Restart=on-failure' 'restart after a crash or a watchdog kill'
	need "$u" 'ExecReload=/usr/local/bin/chirpctl .*reload' 'synchronous reload'
	need "$u" 'User=chirpd' 'own user'
	need "$u" 'CapabilityBoundingSet=' 'no capabilities'
	need "$u" 'NoNewPrivileges=yes' 'no privilege gain'
	need "$u" 'ProtectSystem=strict' 'read-only file system'
	need "$u" 'ProtectHome=yes' 'no home directories'
	need "$u" 'LimitMEMLOCK=infinity' 'mlockall and pinned ring memory'
	need "$u" 'LimitRTPRIO=[0-9]+' 'SCHED_FIFO without capabilities'
	need "$u" 'RestrictRealtime=no' 'SCHED_FIFO data thread'
	need "$u" 'DevicePolicy=closed' 'only the listed devices'
	need "$u" 'DeviceAllow=/dev/nvidia-uvm rw' 'CUDA needs nvidia-uvm'
	need "$u" 'DeviceAllow=char-nvidiactl rw' 'CUDA needs nvidiactl'
	need "$u" 'RemoveIPC=no' 'rings survive a restart'
	need "$u" 'RuntimeDirectory=chirpd(/%i)?' 'the control socket directory'
	refuse "$u" 'PrivateDevices=(yes|true|1)' 'hides /dev/nvidia*'
	refuse "$u" 'PrivateIPC=(yes|true|1)' 'the digitizer driver shares the rings'
	refuse "$u" 'ProcSubset=pid' 'libcuda reads /proc/driver/nvidia'
	# chirpd takes its settings from chirpd.conf only: the environment may
	# carry the CUDA driver's own settings, nothing chirpd reads.
	env=$(grep -E '^(Environment|EnvironmentFile|PassEnvironment)=' "systemd/$u" | grep -Ev '^Environment=CUDA_[A-Z_]+=')
	[ -z "$env" ] || fail "$u: sets environment for chirpd ($env): use a chirpd.conf key"
done
need chirpd@.service 'ExecStart=/usr/local/bin/chirpd -c /etc/chirpd/%i.conf' 'one config per instance'
need chirpd.service 'ExecStopPost=/usr/local/bin/chirpd --remove-rings --if-configured -c /etc/chirpd/chirpd.conf' 'rings removed on stop when the configuration asks'
need chirpd@.service 'ExecStopPost=/usr/local/bin/chirpd --remove-rings --if-configured -c /etc/chirpd/%i.conf' 'the instance config decides'
need chirpd@.service 'ExecReload=/usr/local/bin/chirpctl -s /run/chirpd/%i/control.sock .*reload' 'the instance socket'

# One hardening block for both units.
block() { sed -n '/^# --- hardening/,/^\[Install\]/p' "systemd/$1"; }
[ -n "$(block chirpd.service)" ] || fail "chirpd.service has no '# --- hardening' block"
if ! diff <(block chirpd.service) <(block chirpd@.service) >"$T/diff"; then
	cat "$T/diff"; fail "the hardening blocks of chirpd.service and chirpd@.service differ"
fi

# sysusers.d: creates user and group chirpd in an empty root.
if command -v systemd-sysusers >/dev/null; then
	mkdir -p "$T/root/etc" "$T/root/usr/lib/sysusers.d"
	cp systemd/chirpd.sysusers "$T/root/usr/lib/sysusers.d/chirpd.conf"
	systemd-sysusers --root="$T/root" >"$T/sysusers.log" 2>&1 || { cat "$T/sysusers.log"; fail "systemd-sysusers failed"; }
	grep -q '^chirpd:x:[0-9]*:[0-9]*:.*:/var/lib/chirpd:/usr/sbin/nologin$' "$T/root/etc/passwd" ||
		{ cat "$T/root/etc/passwd"; fail "sysusers did not create user chirpd"; }
	grep -q '^chirpd:x:' "$T/root/etc/group" || fail "sysusers did not create group chirpd"
	echo "sysusers: user and group chirpd created"
else
	echo "note: systemd-sysusers missing; sysusers entry not checked"
fi
echo "PASS"
