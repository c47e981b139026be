#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# deb_package.sh — `make deb` (CPU build) gives the four packages Debian
# users expect (chirpd, libchirpring3, libchirpring-dev, python3-chirpring),
# lintian finds no error and no warning that debian/ does not override with
# a comment saying why, the packages hold exactly what `make install` puts
# in place for the same paths (up to what Debian adds or moves, listed
# below), maintainer scripts create the user and enable the unit, apt can
# resolve their dependencies on this Debian 12 host, and the unpacked
# programs, library and Python package run: chirpd --check on the shipped
# conffile, chirpctl, a Python producer -> consumer round trip.
# Runs in the normal phase only (the packages are built without sanitizers).
# Exit 0 pass, 77 skipped, else fail.
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD=${CHIRP_BUILD:-build}
case $(basename "$BUILD") in *asan*|*tsan*)
	echo "skipped: the .deb is built without sanitizers; it is checked in the normal phase"; exit 77;; esac
fail() { echo "FAIL: $*"; exit 1; }
for p in dpkg-buildpackage dh lintian dpkg-deb; do
	command -v $p >/dev/null || { echo "skipped: $p is not installed (scripts/install-deps.sh installs it)"; exit 77; }
done
T=$(mktemp -d "${TMPDIR:-/tmp}/chirp-deb.XXXXXX") || exit 1
RING=/chirp-e2e-deb-$$
trap 'rm -rf "$T"; rm -f /dev/shm$RING' EXIT
MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
t0=$(date +%s)

# --- build --------------------------------------------------------------------
make --no-print-directory deb DEB_DIR="$T/deb" >"$T/make.log" 2>&1 || { cat "$T/make.log"; fail "make deb failed"; }
V=$(dpkg-parsechangelog -S Version)
ARCH=$(dpkg --print-architecture)
for d in chirpd_${V}_$ARCH libchirpring3_${V}_$ARCH libchirpring-dev_${V}_$ARCH python3-chirpring_${V}_all; do
	[ -f "$T/deb/$d.deb" ] || fail "make deb did not make $d.deb: $(ls "$T/deb")"
done
debs="$T/deb/chirpd_${V}_$ARCH.deb $T/deb/libchirpring3_${V}_$ARCH.deb $T/deb/libchirpring-dev_${V}_$ARCH.deb $T/deb/python3-chirpring_${V}_all.deb"
echo "built in $(( $(date +%s) - t0 )) s: $(cd "$T/deb" && ls *.deb | tr '\n' ' ')"

# --- lintian --------------------------------------------------------------------
# No E:, no W: left; every override in debian/ has a comment above it.
lintian --allow-root --display-level ">=warning" --show-overrides "$T/deb/chirpd_${V}_$ARCH.changes" >"$T/lintian.log" 2>&1
grep -v '^running with root' "$T/lintian.log" | sed 's/^/    lintian: /'
grep -q '^E: ' "$T/lintian.log" && fail "lintian reports errors"
grep -q '^W: ' "$T/lintian.log" && fail "lintian reports warnings that debian/ neither fixes nor overrides"
for f in debian/*lintian-overrides debian/source/lintian-overrides; do
	[ -f "$f" ] || continue
	awk -v f="$f" '/^[^#[:space:]]/ && prev !~ /^#/ { print f ": override without a comment: " $0; bad = 1 }
		{ prev = $0 } END { exit bad }' "$f" || fail "$f: every override needs a comment saying why"
done
echo "lintian: no errors, no unexplained warnings ($(( $(date +%s) - t0 )) s)"

# --- contents against make install -----------------------------------------
# The same paths debian/rules passes to make install.
make --no-print-directory -s install BUILD="$BUILD" DESTDIR="$T/mi" PREFIX=/usr LIBDIR=/usr/lib/$MA \
	UNITDIR=/lib/systemd/system SYSUSERSDIR=/usr/lib/sysusers.d \
	PYTHONDIR=/usr/lib/python3/dist-packages >"$T/mi.log" 2>&1 || { cat "$T/mi.log"; fail "make install failed"; }
# Files and links only (directories differ harmlessly), without what the
# packages deliberately leave out: _config.py (the .deb finds the library
# through the dynamic linker).
(cd "$T/mi" && find . \( -type f -o -type l \) | sed 's|^\./||' |
	grep -v '^usr/lib/python3/dist-packages/chirpring/_config.py$' | sort) >"$T/install.list"
for d in $debs; do
	dpkg-deb -c "$d" | awk '$1 ~ /^[-l]/ { p = $6; sub(/^\.\//, "", p); print p }'
done | sed -e 's|\.gz$||' \
	-e 's|^usr/share/doc/libchirpring-dev/examples/example_producer.c$|usr/share/doc/chirpd/example_producer.c|' |
	grep -Ev '^usr/share/doc/[^/]*/(copyright|changelog|changelog\.Debian|README\.Debian)$' | sort >"$T/deb.list"
# What Debian adds (copyright, changelogs, README.Debian) is dropped above;
# what it compresses (man pages) is compared by name without .gz; the
# example moves to libchirpring-dev's examples/.
if ! diff -u "$T/install.list" "$T/deb.list" >"$T/list.diff"; then
	cat "$T/list.diff"; fail "the packages' files differ from make install's (- make install only, + .deb only)"
fi
echo "contents: the packages hold make install's $(wc -l <"$T/install.list") files"

# --- which package holds what, and its metadata --------------------------------
in_pkg() {   # in_pkg PKG PATH — PATH is in PKG's .deb
	dpkg-deb -c "$T/deb/$1" | awk '{ print $6 }' | grep -qx "./$2" || fail "$1 lacks /$2"
}
in_pkg chirpd_${V}_$ARCH.deb usr/bin/chirpd
in_pkg chirpd_${V}_$ARCH.deb usr/share/bash-completion/completions/chirpctl
in_pkg chirpd_${V}_$ARCH.deb lib/systemd/system/chirpd.service
in_pkg libchirpring3_${V}_$ARCH.deb usr/lib/$MA/libchirpring.so.3
in_pkg libchirpring-dev_${V}_$ARCH.deb usr/include/chirp/ring.h
in_pkg libchirpring-dev_${V}_$ARCH.deb usr/lib/$MA/pkgconfig/chirpring.pc
in_pkg python3-chirpring_${V}_all.deb usr/lib/python3/dist-packages/chirpring/__init__.py
grep -q "^libdir=/usr/lib/$MA\$\|^libdir=.*lib/$MA" <(dpkg-deb --fsys-tarfile "$T/deb/libchirpring-dev_${V}_$ARCH.deb" |
	tar -xOf - ./usr/lib/$MA/pkgconfig/chirpring.pc) || fail "chirpring.pc does not name the multiarch libdir"
mkdir -p "$T/ctl"
dpkg-deb -e "$T/deb/chirpd_${V}_$ARCH.deb" "$T/ctl"
grep -qx /etc/chirpd/chirpd.conf "$T/ctl/conffiles" || fail "chirpd.conf is not a conffile: $(cat "$T/ctl/conffiles")"
grep -q 'systemd-sysusers .*chirpd.conf' "$T/ctl/postinst" || fail "postinst does not create the chirpd user"
grep -q "deb-systemd-helper enable 'chirpd.service'" "$T/ctl/postinst" || fail "postinst does not enable chirpd.service"
grep -q 'chirpd@' "$T/ctl/postinst" && fail "postinst enables the template unit"
dep=$(dpkg-deb -f "$T/deb/chirpd_${V}_$ARCH.deb" Depends)
case $dep in *cufft*|*cuda*) fail "the CPU build depends on CUDA: $dep";; esac
case $dep in *libfftw3-single3*) ;; *) fail "chirpd does not depend on FFTW: $dep";; esac
dpkg-deb -f "$T/deb/libchirpring3_${V}_$ARCH.deb" Multi-Arch | grep -qx same || fail "libchirpring3 is not Multi-Arch: same"
readelf -d "$T/mi/usr/bin/chirpd" | grep -q 'RPATH\|RUNPATH' && echo "note: make install's chirpd has an RPATH (CUDA build)"
dpkg-deb --fsys-tarfile "$T/deb/chirpd_${V}_$ARCH.deb" | tar -xOf - ./usr/bin/chirpd >"$T/chirpd.bin"
readelf -d "$T/chirpd.bin" | grep -q 'RPATH\|RUNPATH' && fail "the packaged chirpd has an RPATH"
readelf -d "$T/chirpd.bin" | grep -q 'BIND_NOW' || fail "the packaged chirpd is not linked with -z now (hardening)"

# --- apt can install them on this Debian host -----------------------------------
# (--simulate: resolves dependencies from this host's packages and lists
# without installing anything.)
if command -v apt-get >/dev/null; then
	# shellcheck disable=SC2086
	apt-get install --simulate -o Debug::NoLocking=1 $debs >"$T/apt.log" 2>&1 ||
		{ cat "$T/apt.log"; fail "apt-get cannot install the packages"; }
	grep -q '^Inst chirpd ' "$T/apt.log" || { cat "$T/apt.log"; fail "apt-get would not install chirpd"; }
	echo "apt: $(grep -c '^Inst ' "$T/apt.log") packages would be installed"
fi

# --- the unpacked packages run --------------------------------------------------
R=$T/root
for d in $debs; do dpkg-deb -x "$d" "$R"; done
export LD_LIBRARY_PATH=$R/usr/lib/$MA
"$R/usr/bin/chirpd" --check -c "$R/etc/chirpd/chirpd.conf" >"$T/check.log" 2>&1 ||
	{ cat "$T/check.log"; fail "packaged chirpd --check of the packaged chirpd.conf failed"; }
"$R/usr/bin/chirpctl" --help | grep -q 'chirpctl COMMAND \[ARGS...\] \[-s SOCKET\]' || fail "packaged chirpctl --help"
env -u CHIRPRING_LIBRARY PYTHONPATH="$R/usr/lib/python3/dist-packages" PYTHONDONTWRITEBYTECODE=1 \
	/usr/bin/python3 - "$RING" "$R" <<'PYEOF' || fail "the packaged Python package does not run on the packaged library"
import sys, numpy as np, chirpring
from chirpring import _lib
assert chirpring.__file__.startswith(sys.argv[2]), chirpring.__file__
g = chirpring.Geometry(2, 4, 100, "cf32", 4, 1e6)
with chirpring.Consumer(sys.argv[1], geometry=g, create=True, timeout=2) as c, chirpring.Producer(sys.argv[1]) as p:
    x = (np.arange(800) * (1 + 2j)).astype(np.complex64).reshape(g.shape)
    assert p.write(x, first_sample=42)
    cpi = c.read()
    assert cpi.first_sample == 42 and np.array_equal(cpi.data, x)
print("python3-chirpring on libchirpring3: round trip ok")
PYEOF
# --- the CUDA build, where the toolkit is here -----------------------------------
# Static CUDA runtime, dynamic cuFFT from NVIDIA's package (README.Debian):
# no libcudart NEEDED, libcufft.so.12 NEEDED, the cuFFT package in Depends,
# no RPATH, lintian as clean as the CPU build.
NVCC=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
if [ -x "$NVCC" ]; then
	make --no-print-directory deb DEB_CUDA=1 DEB_DIR="$T/deb-cuda" >"$T/make-cuda.log" 2>&1 ||
		{ tail -40 "$T/make-cuda.log"; fail "make deb DEB_CUDA=1 failed"; }
	c=$T/deb-cuda/chirpd_${V}_$ARCH.deb
	dep=$(dpkg-deb -f "$c" Depends)
	case ", $dep," in *", libcufft-13-0,"*) ;; *) fail "the CUDA build does not depend on libcufft-13-0: $dep";; esac
	dpkg-deb --fsys-tarfile "$c" | tar -xOf - ./usr/bin/chirpd >"$T/chirpd-cuda.bin"
	readelf -d "$T/chirpd-cuda.bin" >"$T/cuda.dyn"
	grep -q 'NEEDED.*\[libcufft\.so\.' "$T/cuda.dyn" || fail "the CUDA build's chirpd does not link cuFFT"
	grep -q 'NEEDED.*libcudart' "$T/cuda.dyn" && fail "the CUDA build's chirpd needs libcudart.so (not static)"
	grep -q 'RPATH\|RUNPATH' "$T/cuda.dyn" && fail "the CUDA build's chirpd has an RPATH"
	lintian --allow-root --display-level ">=warning" "$T/deb-cuda/chirpd_${V}_$ARCH.changes" >"$T/lintian-cuda.log" 2>&1
	grep -E '^(E|W): ' "$T/lintian-cuda.log" && fail "lintian on the CUDA build"
	echo "CUDA build: cudart static, cuFFT from libcufft-13-0, lintian clean ($(( $(date +%s) - t0 )) s)"
else
	echo "note: no $NVCC: the CUDA build (make deb DEB_CUDA=1) is not checked here"
fi

echo "PASS ($(( $(date +%s) - t0 )) s)"
