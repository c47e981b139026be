#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# build-deb.sh OUTDIR [CUDA] — `make deb`: build chirpd's Debian binary
# packages (debian/) with dpkg-buildpackage on a copy of this tree, so
# nothing is written next to the checkout or into debian/ here. CUDA is 0
# (CPU backend only, the default) or 1 (cuFFT backend; debian/README.Debian
# says what the packages then need). The .deb, .changes and .buildinfo end
# up in OUTDIR; the last line names the .changes file.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: build-deb.sh OUTDIR [CUDA]}
cuda=${2:-0}
for p in dpkg-buildpackage dh; do
	command -v $p >/dev/null || { echo "build-deb: $p is missing (apt-get install dpkg-dev debhelper)" >&2; exit 1; }
done
version=$(dpkg-parsechangelog -S Version)
src=$out/src/chirpd-$version
rm -rf "$out"
mkdir -p "$src"
# The tree as git sees it (tracked plus untracked, not ignored), else all
# but the build outputs.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$src"
else
	tar --exclude='./build*' --exclude=./.git -cf - . | tar -xf - -C "$src"
fi
echo "build-deb: building chirpd $version (CUDA=$cuda) in $src"
(cd "$src" && CHIRP_CUDA=$cuda dpkg-buildpackage -b --no-sign -j"$(nproc 2>/dev/null || echo 2)") \
	>"$out/build.log" 2>&1 || { tail -40 "$out/build.log" >&2; echo "build-deb: failed, log $out/build.log" >&2; exit 1; }
mv "$out"/src/*.deb "$out"/src/*.changes "$out"/src/*.buildinfo "$out"/
rm -rf "$out/src"
ls -1 "$out"/*.deb
ls -1 "$out"/*.changes
