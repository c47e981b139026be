#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench-multi-gpu.sh — one chirpd per GPU, as the chirpd@ unit runs them,
# measured together in one run: the host's own N-GPU copy floor, every
# instance's capacity while the others are saturated too, a paced load on
# all of them, and an independence test (one instance killed -9 and
# restarted mid-run while the others keep going).
#
# Method (building blocks and conventions of scripts/bench-latency.sh):
#   instances   N = the GPUs nvidia-smi lists (--instances N to choose;
#               instance i uses GPU i mod the GPUs found). Each has its own
#               configuration (the shipped conf/chirpd.conf with the
#               backend, geometry, its own rings and control socket,
#               [processing] gpu = its PCI bus id, [numa] node = auto: what
#               /etc/chirpd/NAME.conf holds for chirpd@NAME), plus any --set.
#               --backend cpu: N CPU instances (default 2), no GPU, no floor.
#               A fresh set of chirpds per phase, all started together.
#   producer    one chirp-feed --prefilled per instance: --block (saturated,
#               lossless) for capacity, --rate (absolute schedule, no catch-up
#               bursts) for the load and independence phases.
#   consumer    one build/bench/latency_probe per instance (latency = peek
#               time − the producer's commit stamp; lost = first_sample gaps +
#               flagged blocks), then, after its window, a verifying consumer:
#               chirp-tap --verify --count K takes over the output ring and
#               recomputes K results on the CPU reference (the ring has one
#               consumer at a time, so verification samples the stream after
#               the measured window, never inside it). The feed sends targets
#               without noise or Doppler, so every CPI is the same and the
#               prefilled payloads verify against any CPI index.
#   floor       (cuda) build/bench/copy_floor --limit on every GPU at once,
#               aligned by --start-at: each GPU's copy limit, both directions
#               at once, for the CPI's input and output bytes, while the
#               others copy too. The N-GPU floor is their sum.
#               Every instance keeps a capacity cache of its own across the
#               phases (what chirpd@NAME's StateDirectory holds): the first
#               start measures, the later ones read it.
# Phases (--modes, default "capacity load independence"; they run in this
# order, capacity and calibrate first):
#   capacity      all instances saturated for --cap-seconds: delivered CPI/s
#                 per instance; loads are percentages of each instance's own
#                 figure (not of the copy floor: chirpd may be FFT-bound below
#                 it; the report gives capacity / floor).
#   calibrate     the host calibration: scripts/chirpd-calibrate-host on all
#                 instances at once (--cap-seconds window) stores each one's
#                 shared capacity in its cache; with it, loads are
#                 percentages of the capacity each instance's status reports
#                 (capacity.sustainable_cpi_per_s: the shared figure).
#   load          all instances at --load % for --duration seconds.
#   peak          all instances at --peak % (95) for --duration seconds.
#   independence  all at --load % for --ind-seconds; --kill-at seconds into
#                 the window the last instance is killed -9, and restarted
#                 after 2 s with the same configuration (chirpd@'s
#                 Restart=on-failure, RestartSec=2s). The others must lose
#                 nothing and keep their tail: p99.9 before the kill, in the
#                 kill window (kill → restarted instance answering + 2 s) and
#                 after (from the survivor's raw latencies in arrival order,
#                 sample i at i / delivered rate into its window: exact while
#                 it loses nothing, which is what is checked). The restarted
#                 one must resume its stream: its probe keeps reading the same
#                 ring and counts the CPIs dropped while it was down as gaps.
#                 The restart is timed to the first CPI the new chirpd
#                 delivers (chirpctl stats cpis_out), and its log says
#                 whether it reused both rings and its cached capacity.
# Criteria (information: PASS/FAIL lines; exit 0 regardless):
#   M1  load: 0 CPIs lost on every instance (lost + in_ovr + out_drop).
#   M2  peak: the same at --peak %.
#   R1  the restarted instance processes again <= 2 s after the kill.
#   R2  it reused both rings and its cached capacity; its producer and
#       consumer never re-attached.
#   I1  each survivor: 0 lost, 0 input overruns, 0 output drops.
#   I2  each survivor: p99.9 in the kill window and after <= 1.5 x before + 0.1 ms
#       (the report gives the restarted chirpd's start-up phases beside it:
#       what ran on the host while the survivor's tail moved).
#   I3  the restarted instance delivers again and its results verify.
#   V   every verification: 0 mismatches.
#
# Usage:
#   scripts/bench-multi-gpu.sh [--backend cuda|cpu] [--instances N]
#       [--geometry CxPxR] [--ref-len L] [--format cf32|sc16]
#       [--mode complex|magnitude|power_db] [--modes "capacity calibrate load peak independence"]
#       [--all] [--warmup S] [--cap-seconds S] [--load PCT] [--peak PCT] [--duration S]
#       [--restart-sec S]
#       [--ind-seconds S] [--kill-at S] [--verify-count K] [--floor-seconds S]
#       [--set section.key=value]... [--out DIR] [--no-copy-floor]
# Defaults: cuda, 4x128x4096 L 512 cf32 -> complex, warm-up 4 s, capacity 15 s,
# load 80 % for 120 s, peak 95 %, independence 60 s with the kill at 20 s,
# restart 0.1 s after the kill (chirpd@'s RestartSec), verify 20 CPIs, floor
# 10 s: about 5 minutes for 2 GPUs (printed at start). --all: the modes
# "calibrate load peak independence" (the issue's whole run: loads of the
# shared capacity).
# Environment: CHIRP_BUILD (default build), START_TIMEOUT (60 s).
# Output in DIR (default build/bench-multi-gpu/DATE): report.md, results.tsv
# and logs.tar.gz (every configuration, log, status/stats JSON, raw latency
# file, numa_maps excerpt). Exit 0 (whatever the criteria say), 1 when the
# bench itself broke, 2 usage.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$(pwd)
cmdline="scripts/bench-multi-gpu.sh $*"

BUILD=${CHIRP_BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$root/$BUILD;; esac
backend=cuda ninst= geometry=4x128x4096 reflen=512 format=cf32 mode=complex
modes="capacity load independence" warmup=4 cap_s=15 load=80 duration=120
ind_s=60 kill_at=20 verify_k=20 floor_s=10 out= copy=1 sets=() peak=95
START_TIMEOUT=${START_TIMEOUT:-60}   # chirpd start-up (FFT planning, CUDA init)
RESTART_SEC=0.1                      # chirpd@.service: RestartSec=100ms

die() { echo "bench-multi-gpu: $*" >&2; exit 1; }
usage() { sed -n '/^# Usage:/,/^# Exit/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
	case $1 in
	--backend) backend=${2:?}; shift;;
	--instances) ninst=${2:?}; shift;;
	--geometry) geometry=${2:?}; shift;;
	--ref-len) reflen=${2:?}; shift;;
	--format) format=${2:?}; shift;;
	--mode) mode=${2:?}; shift;;
	--modes) modes=${2:?}; shift;;
	--warmup) warmup=${2:?}; shift;;
	--cap-seconds) cap_s=${2:?}; shift;;
	--load) load=${2:?}; shift;;
	--peak) peak=${2:?}; shift;;
	--all) modes="calibrate load peak independence";;
	--restart-sec) RESTART_SEC=${2:?}; shift;;
	--duration) duration=${2:?}; shift;;
	--ind-seconds) ind_s=${2:?}; shift;;
	--kill-at) kill_at=${2:?}; shift;;
	--verify-count) verify_k=${2:?}; shift;;
	--floor-seconds) floor_s=${2:?}; shift;;
	--set) sets+=("${2:?}"); shift;;
	--out) out=${2:?}; shift;;
	--no-copy-floor) copy=0;;
	-h|--help) usage;;
	*) echo "bench-multi-gpu: unknown argument '$1'" >&2; usage;;
	esac
	shift
done

PY=$(command -v python3) || die "python3 is needed (JSON of chirpctl, the report)"
num_re='^[0-9]+([.][0-9]+)?$'
case $backend in cpu|cuda) ;; *) die "--backend '$backend': want cpu or cuda";; esac
IFS=x read -r C P R <<<"$geometry"
for v in "$C" "$P" "$R" "$reflen" "$verify_k" ${ninst:+"$ninst"}; do
	[[ $v =~ ^[0-9]+$ ]] && [ "$v" -gt 0 ] || die "geometry '$geometry', --ref-len, --verify-count, --instances: want positive integers"
done
[ "$reflen" -le "$R" ] || die "--ref-len $reflen is longer than a range line ($R samples)"
for v in "$warmup" "$cap_s" "$load" "$peak" "$duration" "$ind_s" "$kill_at" "$floor_s" "$RESTART_SEC"; do
	[[ $v =~ $num_re ]] || die "'$v': want a number"
done
awk -v k="$kill_at" -v s="$ind_s" 'BEGIN { exit !(k > 0 && k < s) }' || die "--kill-at $kill_at: want 0 < S < --ind-seconds $ind_s"
for m in $modes; do
	case $m in capacity|calibrate|load|peak|independence) ;; *) die "--modes: '$m' is not capacity, calibrate, load, peak or independence";; esac
done
CALIBRATE=$root/scripts/chirpd-calibrate-host
for b in bin/chirpd bin/chirpctl bin/chirp-feed bin/chirp-tap bench/latency_probe; do
	[ -x "$BUILD/$b" ] || die "$BUILD/$b is not built (make)"
done

# ---- the GPUs, by PCI bus id (nvidia-smi's order; CUDA's may differ) ----
# nvidia-smi writes 00000000:41:00.0; sysfs names it 0000:41:00.0 (chirpd
# accepts both; the report and configs use sysfs's form).
norm_bus() {
	local d b rest
	IFS=: read -r d b rest <<<"$1"
	printf '%04x:%s:%s' "$((16#$d))" "${b,,}" "${rest,,}"
}
buses=()
if [ "$backend" = cuda ]; then
	command -v nvidia-smi >/dev/null || die "--backend cuda: nvidia-smi not found (no GPU here? try --backend cpu)"
	while read -r b; do
		[ -n "$b" ] && buses+=("$(norm_bus "$b")")
	done < <(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader 2>/dev/null)
	[ ${#buses[@]} -gt 0 ] || die "nvidia-smi lists no GPU"
	ninst=${ninst:-${#buses[@]}}
	[ "$ninst" -gt ${#buses[@]} ] && echo "note: $ninst instances on ${#buses[@]} GPUs: instance i uses GPU i mod ${#buses[@]}"
	if [ $copy = 1 ] && [ ! -x "$BUILD/bench/copy_floor" ]; then
		die "$BUILD/bench/copy_floor is not built (a CUDA build: nvcc at \$CUDA_HOME), or --no-copy-floor"
	fi
else
	ninst=${ninst:-2}
	copy=0
fi
[ "$ninst" -ge 2 ] || echo "note: one instance: nothing to be independent of; the independence phase is skipped"
names=() gpus=()
for ((i = 0; i < ninst; i++)); do
	if [ "$backend" = cuda ]; then
		names+=("gpu$i") gpus+=("${buses[$((i % ${#buses[@]}))]}")
	else
		names+=("cpu$i") gpus+=("-")
	fi
done

out=${out:-$BUILD/bench-multi-gpu/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out" || die "cannot create $out"
out=$(cd "$out" && pwd)
work=$out/work
rm -rf "$work" "$out/report.md" "$out/results.tsv" "$out/logs.tar.gz"
mkdir -p "$work" || die "cannot create $work"
tmp=$(mktemp -d /tmp/chirp-mg.XXXXXX) || die "mktemp failed"   # short socket paths
uniq=chirp-mg-$$
pids=()

cleanup() {
	local p
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	pids=()
	rm -f /dev/shm/"$uniq"-* 2>/dev/null
}
trap 'cleanup; rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# wait_until SECONDS CMD... — run CMD every 0.1 s until it succeeds.
wait_until() {
	local n i
	n=$(awk -v t="$1" 'BEGIN { printf "%d", t * 10 }')
	shift
	for ((i = 0; i < n; i++)); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
	return 1
}
# wait_pid PID SECONDS — its exit status, or 124 after killing it.
wait_pid() {
	local i n=$(($2 * 10))
	for ((i = 0; i < n; i++)); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$1" 2>/dev/null; then kill -KILL "$1" 2>/dev/null; wait "$1" 2>/dev/null; return 124; fi
	wait "$1"
}
forget() {
	local keep=() q
	for q in "${pids[@]}"; do [ "$q" = "$1" ] || keep+=("$q"); done
	pids=("${keep[@]}")
}
stop() {
	kill -TERM "$1" 2>/dev/null
	wait_pid "$1" 10 >/dev/null 2>&1
	forget "$1"
}
now() { date +%s.%N; }
all_exist() { local f; for f in "$@"; do [ -e "$f" ] || return 1; done; }
# all_summaries FILE... — every probe has printed its summary; a probe that
# died without one ends the wait at once (exit 2 from the check).
all_summaries() {
	local i=0 f
	for f in "$@"; do
		if ! grep -q '^probe ' "$f" 2>/dev/null; then
			kill -0 "${PROBE[$i]}" 2>/dev/null || { probe_dead=$i; return 0; }
			return 1
		fi
		i=$((i + 1))
	done
}

# write_conf FILE SOCK IN OUT GPU CACHE — conf/chirpd.conf with the overrides
# (as bench-latency.sh: every key must exist in the shipped file).
write_conf() {
	local pw gpu=()
	pw=$(awk -v l="$reflen" 'BEGIN { printf "%.9g", l / 25e6 }')   # L samples at 25 MHz
	[ "$5" != - ] && gpu=(processing.gpu="$5")
	"$PY" - "$root/conf/chirpd.conf" "$1" \
		daemon.control_socket="$2" input.ring="$3" output.ring="$4" numa.node=auto "${gpu[@]}" \
		processing.capacity_cache="$6" \
		processing.backend="$backend" cpi.channels="$C" cpi.pulses="$P" cpi.samples="$R" \
		input.format="$format" output.mode="$mode" waveform.type=lfm \
		waveform.sample_rate_hz=25e6 waveform.pulse_width_s="$pw" "${sets[@]}" <<'PYEOF'
import re, sys
src, dst, kv = sys.argv[1], sys.argv[2], {}
for a in sys.argv[3:]:
    k, _, v = a.partition("=")
    if "." not in k or not _:
        sys.exit("--set %r: want section.key=value" % a)
    kv[k] = v
lines, sec, used = [], None, set()
for line in open(src):
    m = re.match(r"\s*\[(\w+)\]", line)
    if m:
        sec = m.group(1)
    m = re.match(r"\s*(\w+)\s*=", line)
    if m and sec and "%s.%s" % (sec, m.group(1)) in kv:
        k = "%s.%s" % (sec, m.group(1))
        line = "%s = %s\n" % (m.group(1), kv[k])
        used.add(k)
    lines.append(line)
if set(kv) - used:
    sys.exit("no such key in %s: %s" % (src, ", ".join(sorted(set(kv) - used))))
open(dst, "w").write("".join(lines))
PYEOF
}

gate2=$((R / 2)); [ "$gate2" -eq 300 ] && gate2=301
targets=(--target "$((300 < R ? 300 : 0)),-6" --target "$gate2,-20" --noiseless)   # no Doppler: every CPI alike

# Per-phase state, indexed by instance.
declare -a CHIRPD PROBE FEED SOCK INR OUTR CONF
ctl() { local i=$1; shift; "$BUILD/bin/chirpctl" -s "${SOCK[$i]}" "$@"; }

# start_chirpd PHASE I — (re)start instance I's chirpd, append to its log.
start_chirpd() {
	local ph=$1 i=$2 f=$work/$1-${names[$2]}
	"$BUILD/bin/chirpd" -c "${CONF[$i]}" >>"$f-chirpd.log" 2>&1 &
	CHIRPD[$i]=$!; pids+=(${CHIRPD[$i]})
}
wait_ping() {   # wait_ping PHASE I
	local f=$work/$1-${names[$2]}
	wait_until "$START_TIMEOUT" ctl "$2" ping ||
		{ tail -5 "$f-chirpd.log" >&2; die "$1 ${names[$2]}: chirpd did not answer ping within $START_TIMEOUT s"; }
}
# ring_numa PHASE I TAG — the rings' lines of chirpd's numa_maps (where their pages are).
ring_numa() {
	local f=$work/$1-${names[$2]}
	grep -E "/dev/shm/$uniq-" "/proc/${CHIRPD[$2]}/numa_maps" >"$f-numa_maps-$3.txt" 2>/dev/null || true
}

# start_all PHASE — a fresh chirpd per instance (fresh rings, the
# instance's own capacity cache), all started together; each one's status
# once it answers.
start_all() {
	local ph=$1 i f
	for ((i = 0; i < ninst; i++)); do
		f=$work/$ph-${names[$i]}
		SOCK[$i]=$tmp/$ph$i.sock INR[$i]=/$uniq-$ph-$i-in OUTR[$i]=/$uniq-$ph-$i-out CONF[$i]=$f.conf
		write_conf "${CONF[$i]}" "${SOCK[$i]}" "${INR[$i]}" "${OUTR[$i]}" "${gpus[$i]}" \
			"$work/${names[$i]}.capacity" || die "cannot write ${CONF[$i]}"
		: >"$f-chirpd.log"
		start_chirpd "$ph" "$i"
	done
	for ((i = 0; i < ninst; i++)); do
		f=$work/$ph-${names[$i]}
		wait_ping "$ph" "$i"
		ctl "$i" --json status >"$f-status.json" || die "$ph ${names[$i]}: chirpctl status failed"
	done
}
stop_all() {
	local i
	for ((i = 0; i < ninst; i++)); do
		stop "${CHIRPD[$i]}"
		rm -f /dev/shm"${INR[$i]}" /dev/shm"${OUTR[$i]}"
	done
}
# sustainable I — capacity.sustainable_cpi_per_s of instance I's status.
sustainable() {
	"$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["capacity"]["sustainable_cpi_per_s"])' \
		"$work/$2-${names[$1]}-status.json"
}

# run_calibrate — the host calibration on every instance at once: each
# one's shared capacity into its cache (calibrate.tsv: socket, alone, shared).
run_calibrate() {
	local i s
	echo "calibrate: chirpd-calibrate-host on $ninst instances, window $cap_s s ..."
	start_all calibrate
	: >"$work/calibrate.tsv"
	CALIBRATE_TSV=$work/calibrate.tsv PATH="$BUILD/bin:$PATH" "$CALIBRATE" --seconds "$cap_s" \
		--warmup "$warmup" "${SOCK[@]}" >"$work/calibrate.log" 2>&1 ||
		{ cat "$work/calibrate.log" >&2; die "the host calibration failed"; }
	sed 's/^/  /' "$work/calibrate.log"
	for ((i = 0; i < ninst; i++)); do
		ctl "$i" --json status >"$work/calibrate-${names[$i]}-status.json" ||
			die "calibrate ${names[$i]}: chirpctl status failed"
		s=$(sustainable "$i" calibrate)
		printf '%s\t%s\n' "${names[$i]}" "$s" >>"$work/calibrated.tsv"
	done
	stop_all
}

# out_again I — wait (20 s at most) until instance I's chirpd delivered a
# CPI; prints the time it saw it at (date +%s.%N).
out_again() {
	local k v
	for k in $(seq 1 2000); do
		v=$(ctl "$1" --json stats 2>/dev/null | grep -o '"cpis_out": *[0-9]*' | grep -o '[0-9]*$')
		[ "${v:-0}" -ge 1 ] 2>/dev/null && { now; return 0; }
		sleep 0.01
	done
	return 1
}

# run_phase PHASE SECONDS RATE... — all instances at once (RATE "" =
# saturated, "status:PCT" = PCT % of the capacity the instance's status
# reports), the probes' windows, optional kill/restart, verification.
run_phase() {
	local ph=$1 secs=$2 i f maxn rate markers=() sums=() pace
	shift 2
	local rates=("$@")
	echo "$ph: $ninst instances, warm-up $warmup s, window $secs s ..."
	start_all "$ph"
	for ((i = 0; i < ninst; i++)); do
		f=$work/$ph-${names[$i]}
		rate=${rates[$i]:-}
		case $rate in status:*)
			local pc=${rate#status:} sc
			sc=$(sustainable "$i" "$ph")
			rate=$(awk -v c="$sc" -v p="$pc" 'BEGIN { printf "%.3f", c * p / 100 }')
			rates[$i]=$rate
			echo "  ${names[$i]}: $rate CPI/s = $pc % of the $sc CPI/s its status reports";;
		esac
		awk -v r="${rate:-1}" 'BEGIN { exit !(r > 0) }' || die "$ph ${names[$i]}: rate $rate CPI/s"
		maxn=$(awk -v r="${rate:-0}" -v s="$secs" 'BEGIN { n = (r > 0) ? r * s * 1.5 + 100000 : 4000000; printf "%d", n }')
		"$BUILD/bench/latency_probe" --ring "${OUTR[$i]}" --warmup "$warmup" --measure "$secs" --wait 10 \
			--first-timeout "$START_TIMEOUT" --max-samples "$maxn" --raw "$f-lat.txt" \
			--marker "$f-open" --linger --reattach >"$f-probe.txt" 2>"$f-probe.log" &
		PROBE[$i]=$!; pids+=(${PROBE[$i]})
		markers+=("$f-open") sums+=("$f-probe.txt")
	done
	for ((i = 0; i < ninst; i++)); do
		f=$work/$ph-${names[$i]}
		wait_until 15 grep -q attached "$f-probe.log" ||
			{ cat "$f-probe.log" >&2; die "$ph ${names[$i]}: the probe did not attach to ${OUTR[$i]}"; }
	done
	for ((i = 0; i < ninst; i++)); do
		f=$work/$ph-${names[$i]}
		rate=${rates[$i]:-}
		pace=(--block)
		[ -n "$rate" ] && pace=(--rate "$rate")
		"$BUILD/bin/chirp-feed" --ring "${INR[$i]}" -c "${CONF[$i]}" "${targets[@]}" --prefilled \
			"${pace[@]}" -q --wait 10 >"$f-feed.log" 2>&1 &
		FEED[$i]=$!; pids+=(${FEED[$i]})
		printf '%s\t%s\t%s\t%s\t%s\n' "$ph" "${names[$i]}" "${gpus[$i]}" "${rate:-saturated}" "$secs" >>"$work/runs.tsv"
	done
	wait_until "$(awk -v w="$warmup" -v t="$START_TIMEOUT" 'BEGIN { print w + t }')" all_exist "${markers[@]}" ||
		{ tail -n 3 "$work/$ph"-*-probe.log "$work/$ph"-*-feed.log >&2; die "$ph: a measured window never opened"; }
	for ((i = 0; i < ninst; i++)); do
		f=$work/$ph-${names[$i]}
		ctl "$i" --json stats >"$f-stats0.json" || die "$ph ${names[$i]}: chirpctl stats failed"
		ring_numa "$ph" "$i" open
	done
	if [ "$ph" = independence ]; then
		local v=$((ninst - 1)) t_kill t_back t_out
		f=$work/$ph-${names[$v]}
		sleep "$kill_at"
		t_kill=$(now)
		kill -KILL "${CHIRPD[$v]}"
		wait_pid "${CHIRPD[$v]}" 10 >/dev/null 2>&1
		forget "${CHIRPD[$v]}"
		sleep "$RESTART_SEC"
		echo "--- restarted after kill -9 ---" >>"$f-chirpd.log"
		start_chirpd "$ph" "$v"
		wait_ping "$ph" "$v"
		t_back=$(now)
		t_out=$(out_again "$v") || t_out=
		echo "  ${names[$v]}: chirpd killed -9 $kill_at s into the window, started again $RESTART_SEC s later (RestartSec): answering $(awk -v a="$t_kill" -v b="$t_back" 'BEGIN { printf "%.2f", b - a }') s, processing $( [ -n "$t_out" ] && awk -v a="$t_kill" -v b="$t_out" 'BEGIN { printf "%.2f s", b - a }' || echo "not within 20 s") after the kill"
		printf 'victim\t%s\nt_kill\t%s\nt_back\t%s\nt_out\t%s\nrestart_sec\t%s\n' "${names[$v]}" "$t_kill" "$t_back" "$t_out" "$RESTART_SEC" >"$work/events.tsv"
		ctl "$v" --json status >"$f-status-restarted.json" || true
	fi
	probe_dead=
	wait_until "$(awk -v s="$secs" 'BEGIN { printf "%d", s + 60 }')" all_summaries "${sums[@]}" ||
		{ tail -n 3 "$work/$ph"-*-probe.log >&2; die "$ph: no summary from every probe $secs s after the windows opened"; }
	[ -z "$probe_dead" ] ||
		{ cat "$work/$ph-${names[$probe_dead]}-probe.log" >&2; die "$ph ${names[$probe_dead]}: the probe exited without a summary"; }
	for ((i = 0; i < ninst; i++)); do
		f=$work/$ph-${names[$i]}
		ctl "$i" --json stats >"$f-stats1.json" || die "$ph ${names[$i]}: chirpctl stats failed"
		ring_numa "$ph" "$i" close
	done
	# Hand each output ring to a verifying consumer (the feeds keep going).
	local taps=() prc
	for ((i = 0; i < ninst; i++)); do
		f=$work/$ph-${names[$i]}
		kill -TERM "${PROBE[$i]}" 2>/dev/null
		wait_pid "${PROBE[$i]}" 30
		prc=$?
		forget "${PROBE[$i]}"
		[ $prc -eq 0 ] || { cat "$f-probe.log" >&2; die "$ph ${names[$i]}: the probe failed (exit $prc)"; }
		"$BUILD/bin/chirp-tap" --ring "${OUTR[$i]}" -c "${CONF[$i]}" --verify "${targets[@]}" \
			--count "$verify_k" --timeout 30 --wait 10 >"$f-verify.log" 2>&1 &
		taps[$i]=$!; pids+=(${taps[$i]})
	done
	for ((i = 0; i < ninst; i++)); do
		wait_pid "${taps[$i]}" 45
		echo "exit $?" >>"$work/$ph-${names[$i]}-verify.log"
		forget "${taps[$i]}"
	done
	for ((i = 0; i < ninst; i++)); do stop "${FEED[$i]}"; done
	stop_all
}

# copy_floor on every GPU at once, aligned on one start instant.
run_floor() {
	local inb outb start i fl=() rc bad=0
	if [ "$format" = cf32 ]; then inb=$((C * P * R * 8)); else inb=$((C * P * R * 4)); fi
	case $mode in complex) outb=$((C * P * R * 8));; *) outb=$((C * P * R * 4));; esac
	start=$(awk -v t="$(date +%s)" 'BEGIN { print t + 15 }')   # CUDA init + warm-up first
	echo "floor: copy_floor --limit on ${#buses[@]} GPUs at once, $floor_s s from $(date -d "@$start" +%T) ..."
	for ((i = 0; i < ${#buses[@]}; i++)); do
		timeout -k 5 $((${floor_s%.*} + 60)) "$BUILD/bench/copy_floor" --limit --gpu "${buses[$i]}" \
			--in-bytes "$inb" --out-bytes "$outb" --seconds "$floor_s" --start-at "$start" \
			>"$work/floor-gpu$i.txt" 2>"$work/floor-gpu$i.log" &
		fl+=($!); pids+=($!)
	done
	for ((i = 0; i < ${#fl[@]}; i++)); do
		wait_pid "${fl[$i]}" $((${floor_s%.*} + 70))
		rc=$?
		forget "${fl[$i]}"
		[ $rc -eq 0 ] || { cat "$work/floor-gpu$i.log" >&2; bad=1; }
	done
	[ $bad = 0 ] || die "copy_floor --limit failed"
}

# ---- run ----
est=$(awk -v n="$ninst" -v m="$modes" -v w="$warmup" -v c="$cap_s" -v d="$duration" -v s="$ind_s" \
	-v f="$([ $copy = 1 ] && echo "$floor_s" || echo 0)" 'BEGIN {
	t = 0; if (f > 0) t += f + 20
	if (m ~ /capacity/) t += 20 + c + w
	if (m ~ /calibrate/) t += 20 + c + w
	if (m ~ /load/) t += 20 + d + w
	if (m ~ /peak/) t += 20 + d + w
	if (m ~ /independence/ && n > 1) t += 25 + s + w
	printf "%d", t }')
nodes=$(ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null | wc -l)
{
	echo "command	$cmdline"
	echo "date	$(date -u '+%Y-%m-%d %H:%M:%S UTC')"
	echo "machine	$(hostname), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $nodes NUMA node(s)$( [ "$backend" = cuda ] && nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sort | uniq -c | awk '{ $1 = $1 "x"; printf ", %s", $0 }')"
	# a copy of the tree sent to a benchmark host names its commit in
	# .source-commit (scripts/bench-meta.sh); else git's own
	echo "commit	$(head -n 1 .source-commit 2>/dev/null || { git rev-parse --short HEAD 2>/dev/null; git diff --quiet HEAD 2>/dev/null || echo '+dirty'; } | tr -d '\n')"
	echo "setup	backend $backend, $ninst instances, ${C}x${P}x${R} $format -> $mode, L = $reflen; shipped conf/chirpd.conf with [numa] node = auto${sets[*]:+, plus ${sets[*]}}"
	echo "windows	warm-up $warmup s; capacity $cap_s s; load $load % and peak $peak % for $duration s; independence $ind_s s, kill -9 at $kill_at s, restart after $RESTART_SEC s; verify $verify_k CPIs per instance and phase"
	echo "numa_nodes	$nodes"
	echo "geometry	$C $P $R"
	echo "modes	$modes"
	echo "load	$load"
	echo "peak	$peak"
	echo "backend	$backend"
	for ((i = 0; i < ninst; i++)); do
		gn=-
		[ "${gpus[$i]}" != - ] && gn=$(cat "/sys/bus/pci/devices/${gpus[$i]}/numa_node" 2>/dev/null || echo '?')
		echo "instance	${names[$i]}	${gpus[$i]}	$gn"
	done
} >"$work/meta.tsv"
grep -v '^\(numa_nodes\|geometry\|modes\|load\|peak\|backend\|instance\)	' "$work/meta.tsv" | sed 's/\t/: /'
echo "estimated run time: about $est s"
[ "$nodes" -le 1 ] && echo "the host reports $nodes NUMA node: every instance's threads and rings are on it"

if [ $copy = 1 ]; then
	run_floor
else
	echo "floor: none ($([ "$backend" = cpu ] && echo "CPU backend: no GPU, no copy floor" || echo "--no-copy-floor"))"
fi

# rates_of PCT — every instance's rate at PCT %: of the shared capacity its
# status reports after a calibration, else of the capacity phase's figure.
rates_of() {
	local i c
	for ((i = 0; i < ninst; i++)); do
		if [ "$calibrated" = 1 ]; then
			echo "status:$1"
		else
			c=$("$PY" -c 'import re,sys; print(re.search(r"rate=([0-9.]+)", open(sys.argv[1]).read()).group(1))' "$work/capacity-${names[$i]}-probe.txt")
			awk -v c="$c" -v p="$1" 'BEGIN { printf "%.3f\n", c * p / 100 }'
		fi
	done
}
calibrated=0
case " $modes " in *" capacity "*)
	run_phase capacity "$cap_s"
	for ((i = 0; i < ninst; i++)); do
		c=$("$PY" -c 'import re,sys; print(re.search(r"rate=([0-9.]+)", open(sys.argv[1]).read()).group(1))' "$work/capacity-${names[$i]}-probe.txt")
		awk -v c="$c" 'BEGIN { exit !(c > 0) }' || die "${names[$i]}: capacity measured as $c CPI/s"
		echo "  ${names[$i]}: capacity $c CPI/s (all saturated together)"
	done;;
esac
case " $modes " in *" calibrate "*) run_calibrate; calibrated=1;; esac
case " $modes " in *capacity*|*calibrate*) ;; *) die "--modes: capacity or calibrate is needed (the loads are percentages of it)";; esac
case " $modes " in *" load "*) mapfile -t r < <(rates_of "$load"); run_phase load "$duration" "${r[@]}";; esac
case " $modes " in *" peak "*) mapfile -t r < <(rates_of "$peak"); run_phase peak "$duration" "${r[@]}";; esac
if [ "$ninst" -ge 2 ]; then
	case " $modes " in *" independence "*) mapfile -t r < <(rates_of "$load"); run_phase independence "$ind_s" "${r[@]}";; esac
fi
cleanup
echo
"$PY" "$root/scripts/multi-gpu-report.py" "$out" || die "the report failed"
tar -C "$out" -czf "$out/logs.tar.gz" work && rm -rf "$work" || die "cannot pack $work"
echo "files in $out: report.md, results.tsv, logs.tar.gz"
exit 0
