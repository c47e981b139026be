# SPDX-License-Identifier: Apache-2.0
# tests/e2e/lib.sh — shared helpers for chirpd end-to-end tests.
#
# Source it from a test script:
#
#     . "$(dirname "$0")/lib.sh"
#     e2e_init reload            # temp dir, unique names, cleanup trap
#     e2e_config processing.cpu_threads=1 cpi.samples=1000
#     e2e_start_chirpd           # starts chirpd, waits until it answers ping
#     e2e_ctl stats              # chirpctl against this test's socket
#     e2e_stop_chirpd || e2e_fail "chirpd exited $?"
#     e2e_pass
#
# Exit codes follow scripts/test-all.sh: 0 pass, 77 skipped, else fail.
# Every name a test creates (shm rings, socket, files) is unique to the test
# and its pid, so tests can run in parallel. Everything started through these
# helpers (or registered with e2e_track) is killed by the EXIT trap, and the
# shm objects are unlinked. E2E_KEEP=1 keeps the temp dir for debugging.
#
# Variables set by e2e_init:
#   E2E_NAME      test name
#   BUILD         build dir ($CHIRP_BUILD, default build)
#   BIN           $BUILD/bin
#   CHIRPD CHIRPCTL CHIRP_FEED CHIRP_TAP   program paths
#   T             temp dir (config, logs, socket)
#   CONF          $T/chirpd.conf
#   SOCK          $T/control.sock
#   IN_RING OUT_RING   unique shm names ("/chirp-e2e-NAME-PID-in")
#   CHIRPD_LOG    $T/chirpd.log (chirpd's stderr)
#   CHIRPD_PID    pid of the running chirpd (after e2e_start_chirpd)
#   PY            $CHIRP_TEST_PY or /usr/bin/python3 (needs numpy)

E2E_PIDS=()
CHIRPD_PID=

e2e_log() { echo "[$(date +%H:%M:%S.%N | cut -c1-12)] $E2E_NAME: $*"; }

e2e_skip() {
	e2e_log "SKIP: $*"
	echo "skipped: $*"
	exit 77
}

# e2e_fail MSG — print MSG and the tail of chirpd's log, exit 1.
e2e_fail() {
	e2e_log "FAIL: $*"
	if [ -n "${CHIRPD_LOG:-}" ] && [ -f "$CHIRPD_LOG" ]; then
		echo "--- chirpd log (tail) ---"
		tail -n 40 "$CHIRPD_LOG"
	fi
	exit 1
}

e2e_pass() {
	e2e_log "PASS"
	exit 0
}

# e2e_track PID... — kill these on exit.
e2e_track() { E2E_PIDS+=("$@"); }

_e2e_cleanup() {
	local rc=$? p
	trap - EXIT INT TERM
	for p in "${E2E_PIDS[@]}" $CHIRPD_PID; do
		[ -n "$p" ] && kill -TERM "$p" 2>/dev/null
	done
	for p in "${E2E_PIDS[@]}" $CHIRPD_PID; do
		[ -n "$p" ] || continue
		for _ in $(seq 1 30); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	# "-*": the test's own objects, not those of a run whose pid starts with
	# this one's (chirp-e2e-NAME-12 against chirp-e2e-NAME-123-in).
	rm -f /dev/shm/"${E2E_UNIQ:-none}"-* 2>/dev/null
	if [ -n "${T:-}" ] && [ -d "$T" ]; then
		if [ "${E2E_KEEP:-0}" = 1 ] || { [ $rc -ne 0 ] && [ $rc -ne 77 ] && [ "${E2E_KEEP_ON_FAIL:-0}" = 1 ]; }; then
			echo "kept $T"
		else
			rm -rf "$T"
		fi
	fi
	exit $rc
}

# e2e_init NAME — set up names, temp dir and the cleanup trap; skip if the
# programs are not built.
e2e_init() {
	E2E_NAME=${1:-$(basename "$0" .sh)}
	BUILD=${CHIRP_BUILD:-build}
	case $BUILD in /*) ;; *) BUILD=$(pwd)/$BUILD;; esac
	BIN=$BUILD/bin
	CHIRPD=$BIN/chirpd
	CHIRPCTL=$BIN/chirpctl
	CHIRP_FEED=$BIN/chirp-feed
	CHIRP_TAP=$BIN/chirp-tap
	PY=${CHIRP_TEST_PY:-/usr/bin/python3}   # needs numpy; override on hosts without it
	E2E_UNIQ=chirp-e2e-$E2E_NAME-$$
	IN_RING=/$E2E_UNIQ-in
	OUT_RING=/$E2E_UNIQ-out
	T=$(mktemp -d "${TMPDIR:-/tmp}/chirp-e2e-$E2E_NAME.XXXXXX") || exit 1
	chmod 755 "$T"
	CONF=$T/chirpd.conf
	SOCK=$T/control.sock
	CHIRPD_LOG=$T/chirpd.log
	trap _e2e_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	local b
	for b in "$CHIRPD" "$CHIRPCTL"; do
		[ -x "$b" ] || e2e_skip "$b is not built"
	done
	# Under ASan the daemon is slower; tests scale waits by this factor.
	E2E_SLOW=1
	case $BUILD in *asan*|*tsan*) E2E_SLOW=3;; esac
	export CHIRP_LOG_PREFIX=0
}

# e2e_need PROGRAM... — skip unless these chirp programs are built.
e2e_need() {
	local b
	for b in "$@"; do
		[ -x "$BIN/$b" ] || e2e_skip "$BIN/$b is not built"
	done
}

# e2e_config [section.key=value ...] — write $CONF: a small CPU-backend
# configuration on this test's rings and socket, with overrides.
# Defaults: 2 channels x 8 pulses x 1000 samples cf32, LFM 10 MHz at
# 25 MHz, 4 us, hamming, complex output, 1 FFTW thread, no NUMA/RT; backend
# $CHIRP_TEST_BACKEND (default cpu; cuda on a machine with a CUDA device).
e2e_config() {
	local -A kv=(
		[daemon.control_socket]=$SOCK
		[daemon.log_level]=info
		[numa.node]=none
		[numa.realtime]=off
		[numa.lock_memory]=false
		[input.ring]=$IN_RING
		[input.slots]=16
		[input.format]=cf32
		[cpi.channels]=2
		[cpi.pulses]=8
		[cpi.samples]=1000
		[waveform.type]=lfm
		[waveform.sample_rate_hz]=25e6
		[waveform.bandwidth_hz]=10e6
		[waveform.pulse_width_s]=4e-6
		[waveform.window]=hamming
		[processing.backend]=${CHIRP_TEST_BACKEND:-cpu}
		[processing.cpu_threads]=1
		[processing.normalize]=noise
		[output.mode]=complex
		[output.ring]=$OUT_RING
		[output.slots]=16
	)
	local a k
	for a in "$@"; do
		k=${a%%=*}
		kv[$k]=${a#*=}
	done
	: >"$CONF"
	local sec last=
	for k in $(printf '%s\n' "${!kv[@]}" | sort); do
		sec=${k%%.*}
		if [ "$sec" != "$last" ]; then
			[ -n "$last" ] && echo >>"$CONF"
			echo "[$sec]" >>"$CONF"
			last=$sec
		fi
		# An empty value writes no line (key left at its default).
		[ -n "${kv[$k]}" ] && echo "${k#*.} = ${kv[$k]}" >>"$CONF"
	done
	return 0
}

# e2e_conf_get section.key — value last written by e2e_config (from $CONF).
e2e_conf_get() {
	local sec=${1%%.*} key=${1#*.}
	awk -v s="[$sec]" -v k="$key" '
		/^\[/ { in_s = ($0 == s); next }
		in_s { split($0, a, "="); gsub(/ /, "", a[1]); if (a[1] == k) { sub(/^[^=]*= */, ""); print; exit } }' "$CONF"
}

# e2e_ctl ARGS... — chirpctl against this test's socket.
e2e_ctl() { "$CHIRPCTL" -s "$SOCK" "$@"; }

# e2e_wait TIMEOUT_S CMD... — run CMD every 0.1 s until it succeeds.
e2e_wait() {
	local t=$1 i n
	shift
	n=$(awk -v t="$t" -v s="${E2E_SLOW:-1}" 'BEGIN { printf "%d", t * s * 10 }')
	for ((i = 0; i < n; i++)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}

# e2e_notify_listen SOCKET LOG [SECONDS] — a test-owned NOTIFY_SOCKET: binds
# SOCKET (a unix datagram socket) in the background and writes one line per
# message to LOG, "<monotonic usec at receipt> <fields joined by |>", until
# STOPPING=1 (plus 0.5 s for trailing messages) or SECONDS (default 120).
# Sets NOTIFY_LISTENER to its pid (tracked); returns once SOCKET is bound.
e2e_notify_listen() {
	"$PY" - "$1" "$2" "${3:-120}" <<'PYEOF' &
import socket, sys, time
path, log, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
s.settimeout(0.2)
with open(log, "w", buffering=1) as f:
    deadline = time.monotonic() + secs
    while time.monotonic() < deadline:
        try:
            msg = s.recv(4096).decode()
        except socket.timeout:
            continue
        f.write("%d %s\n" % (time.monotonic_ns() // 1000, msg.replace("\n", "|")))
        if "STOPPING=1" in msg:
            time.sleep(0.5)   # a few trailing messages, if any
            break
PYEOF
	NOTIFY_LISTENER=$!
	e2e_track $NOTIFY_LISTENER
	e2e_wait 5 test -S "$1" || e2e_fail "notify listener did not bind $1"
}

# e2e_wait_consumer RING PID [TIMEOUT_S] — wait until a consumer holds RING
# (its kernel-held role lock: byte 1 of /dev/shm/RING, an OFD write lock,
# as chirp_ring_attach takes it), failing the test if PID (the consumer we
# started) exits first or TIMEOUT_S (default 20, scaled by E2E_SLOW) passes.
# Start the consumer, call this, then the producer: a consumer that attaches
# late on a loaded machine finds its ring already overflowed (the producer
# never blocks), and a fixed sleep cannot know how late it will be.
e2e_wait_consumer() {
	local ring=$1 pid=$2 t=${3:-20} why
	local path=/dev/shm/${ring#/} huge=${CHIRP_HUGETLBFS:-/dev/hugepages}/${ring#/}
	[ ! -e "$path" ] && [ -e "$huge" ] && path=$huge   # a ring on huge pages
	why=$("$PY" - "$path" "$pid" "$((t * ${E2E_SLOW:-1}))" 2>&1 <<'PYEOF'
import fcntl, os, struct, sys, time
path, pid, limit = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
end = time.monotonic() + limit
while time.monotonic() < end:
    try:   # gone, or a zombie its shell has not reaped yet
        with open("/proc/%d/stat" % pid) as f:
            dead = f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        dead = True
    if dead:
        sys.exit("the consumer (pid %d) exited before it attached to %s" % (pid, path))
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        fd = -1
    if fd >= 0:
        try:   # struct flock (x86-64/aarch64): type, whence, start, len, pid
            fl = struct.pack("hh4xqqi4x", fcntl.F_WRLCK, os.SEEK_SET, 1, 1, 0)
            held = struct.unpack("hh4xqqi4x", fcntl.fcntl(fd, fcntl.F_OFD_GETLK, fl))[0] != fcntl.F_UNLCK
        finally:
            os.close(fd)
        if held:
            sys.exit(0)
    time.sleep(0.02)
sys.exit("no consumer attached to %s within %.0f s" % (path, limit))
PYEOF
) || e2e_fail "waiting for the consumer of $ring: $why"
}

# e2e_start_chirpd [ARGS...] — start chirpd -c $CONF in the background
# (stderr+stdout to $CHIRPD_LOG), wait until it answers ping. Extra
# environment can be passed via `env` in E2E_CHIRPD_ENV (array).
e2e_start_chirpd() {
	"$CHIRPD" -c "$CONF" "$@" >>"$CHIRPD_LOG" 2>&1 &
	CHIRPD_PID=$!
	e2e_wait_ready
}

# e2e_wait_ready — wait for chirpd's socket and a ping reply (10 s).
e2e_wait_ready() {
	local i n=$((100 * ${E2E_SLOW:-1}))
	for ((i = 0; i < n; i++)); do
		if [ -n "$CHIRPD_PID" ] && ! kill -0 "$CHIRPD_PID" 2>/dev/null; then
			wait "$CHIRPD_PID"
			e2e_fail "chirpd exited ($?) before it was ready"
		fi
		if [ -S "$SOCK" ] && e2e_ctl ping >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.1
	done
	e2e_fail "chirpd did not answer ping within $((n / 10)) s"
}

# e2e_stop_chirpd [SIGNAL] — signal chirpd (TERM), wait up to 10 s; returns
# its exit status (124 if it had to be killed).
e2e_stop_chirpd() {
	local sig=${1:-TERM} rc i pid=$CHIRPD_PID
	[ -n "$pid" ] || return 0
	kill -"$sig" "$pid" 2>/dev/null
	for ((i = 0; i < 100 * ${E2E_SLOW:-1}; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		CHIRPD_PID=
		return 124
	fi
	wait "$pid"
	rc=$?
	CHIRPD_PID=
	return $rc
}

# e2e_stat NAME — one numeric field of `chirpctl stats` (JSON, --json),
# searched anywhere in the reply by key name.
e2e_stat() {
	e2e_ctl --json stats | "$PY" -c '
import json, sys
want = sys.argv[1]
def find(o):
    if isinstance(o, dict):
        for k, v in o.items():
            if k == want and not isinstance(v, (dict, list)):
                return v
            r = find(v)
            if r is not None:
                return r
    elif isinstance(o, list):
        for v in o:
            r = find(v)
            if r is not None:
                return r
    return None
v = find(json.load(sys.stdin))
if v is None:
    sys.exit("no field " + want)
print(v)' "$1"
}

# e2e_json CMD [ARGS] — chirpctl --json CMD, pretty for logs.
e2e_json() { e2e_ctl --json "$@"; }

# e2e_stat_ge NAME N / e2e_stat_gt NAME N — for e2e_wait (which re-runs its
# command, so the stat must be read inside it, not expanded by the caller):
#     e2e_wait 10 e2e_stat_ge cpis_out 100
e2e_stat_ge() { local v; v=$(e2e_stat "$1") && [ "$v" -ge "$2" ]; }
e2e_stat_gt() { local v; v=$(e2e_stat "$1") && [ "$v" -gt "$2" ]; }

# e2e_state — the daemon's state from `status` ("running", "paused", ...).
e2e_state() { e2e_ctl --json status | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["state"])'; }

# e2e_python_preload — python3 loading this build's libchirpring through
# ctypes: an AddressSanitizer build needs its runtimes preloaded into the
# interpreter (PRE, for LD_PRELOAD; leak checks off, python's own
# allocations are not ours); a ThreadSanitizer library cannot be loaded
# into python at all (skip).
e2e_python_preload() {
	local r f
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
}
