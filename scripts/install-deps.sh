#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# install-deps.sh [--bench] — install the Debian/Ubuntu packages chirpd's build
# and tests need; --bench adds what the comparison benchmarks need (scipy,
# GNU Radio). Idempotent: does nothing when everything is present. Uses
# apt-get as root, through sudo otherwise.
set -euo pipefail

pkgs=(gcc make pkg-config libc6-dev
      libinih-dev libcmocka-dev libnuma-dev libsystemd-dev libfftw3-dev
      libjansson-dev libmicrohttpd-dev libzmq3-dev   # libzmq: [publish]
      clang libclang-rt-dev               # libFuzzer targets, sanitizer runtimes
      curl procps psmisc util-linux       # tests: scrape metrics, pgrep/ps, setpriv
      strace                              # tests/e2e/systemd_sandbox.sh: system-call audit
      systemd groff-base man-db           # systemd-analyze verify, man page checks
      python3 python3-numpy python3-matplotlib   # scripts/chirp-plot, python/chirpring
      python3-zmq                         # doc/example_subscriber.py, tests/e2e/daemon_publish.sh
      dpkg-dev debhelper lintian          # make deb, tests/e2e/deb_package.sh
      tshark                              # tests/e2e/net_interop.sh: Wireshark's VRT dissector
      g++ libuhd-dev                      # tests/e2e/net_uhd.sh: UHD's VRT packer
      bash-completion                     # tests/e2e/chirpctl_cli.sh: completion as bash-completion loads it
      chromium)                           # tests/e2e/live_browser.sh, make live-screenshot: the live view in a browser
if [ "${1:-}" = "--bench" ]; then
	pkgs+=(python3-scipy gnuradio-dev libgnuradio-filter3.10.5 libspdlog-dev libfmt-dev g++ libboost-dev)
fi

missing=()
for p in "${pkgs[@]}"; do
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	[ "$st" = "install ok installed" ] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then
	SUDO=
elif command -v sudo >/dev/null 2>&1; then
	SUDO=sudo
else
	echo "install-deps: need root or sudo to install: ${missing[*]}" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
