#!/bin/bash
# python_chirpring.sh — the chirpring Python package (python/chirpring) on
# this build's libchirpring: tests/python/test_chirpring.py, with a chirpd
# (CPU backend) running for the test that compares the package's view of
# chirpd's output with what chirp-tap writes. The Python file's closing
# "counts: N passed, N failed, N skipped" line is what scripts/test-all.sh
# adds to its total. In the ASan build the instrumented library is loaded
# into python3 with the sanitizer runtimes preloaded (leak checks off:
# CPython keeps its allocations to exit).
. "$(dirname "$0")/lib.sh"
e2e_init python_chirpring
e2e_need chirp-feed chirp-tap
[ -x "$PY" ] || e2e_skip "$PY not found"
"$PY" -c 'import numpy' 2>/dev/null || e2e_skip "$PY has no numpy (apt-get install python3-numpy)"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
LIB=$BUILD/lib/libchirpring.so.1
[ -f "$LIB" ] || e2e_fail "$LIB was not built"

PRE=
case $BUILD in
*asan*)
	for r in libasan.so libubsan.so; do
		f=$(cc -print-file-name=$r) && [ -f "$f" ] || e2e_skip "no $r to preload into python"
		PRE="$PRE${PRE:+:}$f"
	done
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0";;
*tsan*) e2e_skip "python3 cannot load a ThreadSanitizer library";;
esac

e2e_config output.slots=32
e2e_start_chirpd

env ${PRE:+LD_PRELOAD=$PRE} PYTHONPATH="$SRC/python" CHIRPRING_LIBRARY="$LIB" CHIRP_BIN="$BIN" \
	CHIRP_UNIQ="$E2E_UNIQ-py" CHIRPD_CONF="$CONF" CHIRPD_OUT_RING="$OUT_RING" \
	PYTHONDONTWRITEBYTECODE=1 "$PY" "$SRC/tests/python/test_chirpring.py"
rc=$?
[ $rc -eq 0 ] || e2e_fail "test_chirpring.py exited $rc"
e2e_stop_chirpd || e2e_fail "chirpd exited $?"
e2e_pass
