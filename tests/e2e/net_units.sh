#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# net_units.sh — chirp-recv@.service passes `systemd-analyze verify`, scores
# at most 4.0 ("OK") in `systemd-analyze security`, and keeps what the
# network producer depends on: chirpd's user (the ring's owner), no
# capability, the rings kept (RemoveIPC=no, no PrivateIPC), /dev/shm
# visible (no PrivateDevices), internet sockets allowed.
# Exit 0 pass, 77 skipped (no systemd-analyze), else fail.
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD=${CHIRP_BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$(pwd)/$BUILD;; esac
MAX_EXPOSURE=4.0
U=chirp-recv@.service

fail() { echo "FAIL: $*"; exit 1; }
command -v systemd-analyze >/dev/null || { echo "skipped: systemd-analyze is not installed"; exit 77; }
[ -x "$BUILD/bin/chirp-recv" ] || fail "$BUILD/bin/chirp-recv is not built"
[ -x "$BUILD/bin/chirpd" ] || fail "$BUILD/bin/chirpd is not built"

T=$(mktemp -d "${TMPDIR:-/tmp}/chirp-net-units.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/units" "$T/bin" "$T/man/man1" "$T/man/man5" "$T/man/man8"
for b in chirp-recv chirpd chirpctl; do ln -s "$BUILD/bin/$b" "$T/bin/$b"; done
grep -q '^ExecStart=/usr/local/bin/chirp-recv ' "systemd/$U" ||
	fail "$U: ExecStart is not /usr/local/bin/chirp-recv (install.mk rewrites that path)"
for u in "$U" chirpd@.service; do
	sed "s|/usr/local/bin/|$T/bin/|g" "systemd/$u" >"$T/units/$u"
done
ln -s "$U" "$T/units/chirp-recv@radar0.service"
ln -s chirpd@.service "$T/units/chirpd@radar0.service"
for m in doc/man/*.[158]; do
	ln -s "$(pwd)/$m" "$T/man/man${m##*.}/$(basename "$m")"
done

out=$(MANPATH="$T/man" SYSTEMD_LOG_LEVEL=notice systemd-analyze verify "$T/units/chirp-recv@radar0.service" 2>&1)
rc=$?
echo "verify $U: rc $rc${out:+, output:}"
[ -n "$out" ] && echo "$out" | sed 's/^/    /'
[ $rc -eq 0 ] || fail "systemd-analyze verify failed"
[ -z "$out" ] || fail "systemd-analyze verify printed warnings"
sec=$(systemd-analyze security --offline=yes "$T/units/chirp-recv@radar0.service" 2>&1)
line=$(echo "$sec" | grep 'Overall exposure level')
[ -n "$line" ] || { echo "$sec" | tail -20; fail "no 'Overall exposure level' line"; }
score=$(echo "$line" | sed -n 's/.*: \([0-9][0-9.]*\) .*/\1/p')
echo "security $U: ${line#→ }"
awk -v s="$score" -v m="$MAX_EXPOSURE" 'BEGIN { exit !(s <= m) }' || fail "exposure $score > $MAX_EXPOSURE"

need() { grep -Eq "^$1\$" "systemd/$U" || fail "$U: no line matching '$1' ($2)"; }
refuse() { ! grep -Eq "^$1" "systemd/$U" || fail "$U: has '$1' ($2)"; }
need 'User=chirpd' 'the ring belongs to chirpd'
need 'CapabilityBoundingSet=' 'no capabilities'
need 'NoNewPrivileges=yes' 'no privilege gain'
need 'ProtectSystem=strict' 'read-only file system'
need 'RemoveIPC=no' 'the rings survive a stop'
need 'BindsTo=chirpd@%i.service' 'stops with its chirpd'
need 'ExecStart=/usr/local/bin/chirp-recv -c /etc/chirpd/%i.conf .*' "the instance's configuration"
need 'RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6' 'UDP streams'
refuse 'PrivateDevices=(yes|true|1)' 'hides /dev/shm, where the rings are'
refuse 'PrivateIPC=(yes|true|1)' 'the rings are shared with chirpd'
refuse 'PrivateNetwork=(yes|true|1)' 'the streams come from the network'
refuse 'IPAddressDeny=' 'digitizers are on other hosts'
echo "PASS"
