#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# live-screenshot.sh [OUT.png] — the live view's picture in the docs
# (doc/img/live.png by default), made from what `make run` shows: the demo
# (scripts/run-demo.sh) runs, headless Chromium (scripts/live-browser.py)
# opens its live view and, once the range-time view has about ten seconds of
# tracks, takes the screenshot. `make live-screenshot` runs it.
# Environment: BUILD (default build), RUN_PY (python3 with numpy).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-doc/img/live.png}
BUILD=${BUILD:-build}
PY=${RUN_PY:-/usr/bin/python3}
CHROMIUM=${CHIRP_CHROMIUM:-$(command -v chromium || command -v chromium-browser)}
[ -n "$CHROMIUM" ] || { echo "live-screenshot: needs chromium (scripts/install-deps.sh)" >&2; exit 1; }
port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])') || exit 1
log=$(mktemp "${TMPDIR:-/tmp}/chirpd-live-shot.XXXXXX")
RUN_SECONDS=40 RUN_PORT=$port RUN_PLOT= RUN_PY="$PY" scripts/run-demo.sh "$BUILD" </dev/null >"$log" 2>&1 &
demo=$!
trap 'kill -TERM $demo 2>/dev/null; wait $demo 2>/dev/null; rm -f "$log"' EXIT
for _ in $(seq 200); do
	grep -q "^live view:" "$log" && break
	kill -0 $demo 2>/dev/null || { echo "live-screenshot: the demo failed:"; cat "$log"; exit 1; } >&2
	sleep 0.1
done
mkdir -p "$(dirname "$OUT")"
"$PY" scripts/live-browser.py --chromium "$CHROMIUM" --size 1400x860 --timeout 60 --screenshot "$OUT" \
	--until "(() => { const m = /frame (\d+)/.exec(document.title); return m && +m[1] >= 150 ? document.title : ''; })()" \
	"http://127.0.0.1:$port/live" >/dev/null || exit 1
echo "live-screenshot: $OUT"
