#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench-net.sh — the network producer's receive rate, against the host's
# own limits, side by side in one run on one host, on loopback only
# (127.0.0.1):
#   (a) ceiling   the host's loopback ceiling: build/bench/udp_sink's
#                 discard sink, THREADS sockets (SO_REUSEPORT), recvmmsg of
#                 64, socket buffers of RCVBUF, fed by chirp-send as (c)
#                 is (SENDERS threads, the same datagrams) but unpaced:
#                 what a receiver that does nothing with the bytes takes
#                 from the sender (c) has;
#   (b) naive     a naive receiver doing chirp-recv's whole job: chirp-recv
#                 --threads 1 --batch 1, one recvmsg per datagram on one
#                 thread, each datagram parsed and its samples placed into
#                 CPIs in chirpd's input ring (the same work as (c), without
#                 batching or threads), fed by chirp-send unpaced for as
#                 long as (a); its figure is the payload it placed per
#                 second under that load, whatever it lost: a bound above
#                 its loss-free rate, so (c)/(b) is if anything understated;
#   (c) chirp-recv  chirp-send (one process, SENDERS sending threads, one
#                 channel each, all paced from one start, VRT) ->
#                 chirp-recv (THREADS receive threads, the channels steered
#                 to them by stream ID) -> chirpd's input
#                 ring -> chirpd (--backend) consuming: the highest rate
#                 with nothing lost (no drop of any cause in chirp-recv,
#                 every CPI complete, no input overrun in chirpd; its
#                 --horizon the CPIs one socket buffer holds), found by
#                 a search of short trials (--search-s each, --steps of
#                 them, bisecting below (a)) and then held for --hold-s (a
#                 rate that does not hold is lowered to 95 %, then 90 %,
#                 of the search's; a hold ends at its first loss).
#   blaster       the same sink fed by udp_sink's sendmmsg blaster (SENDERS
#                 unpaced flows of the same datagrams, one buffer sent over
#                 and over), for reference: not a criterion's.
# (a) and (c) have the same sender, like with like: on loopback the
# sender's CPU carries most of the kernel's delivery work (the copy into
# the socket buffer too), so a faster sender would lift (a) by what it
# saves, not by anything a receiver does; where the sink takes all the
# blaster sends (its loss 0), the blaster row is that sender's limit too.
# chirp-send --same-cpi converts the CPI once and sends each payload from
# there, as the blaster sends its buffer. A discard sink's recvfrom loop is
# not a naive *receiver* (it places nothing), and on loopback it comes
# close to (a): (b) is chirp-recv's own work done naively instead. Every
# figure is a sender and receiver pair's, not a NIC's.
#
# The search's first trial is at 90 % of (a); below the first loss it
# halves until a trial passes, then bisects. Each trial's chirp-recv exits
# once it has committed every CPI sent (--count), or 3 s after the last
# datagram (--idle-exit) when some never come.
#
# A rate sent is over chirp-send's own sending time (its "seconds": from
# the first pulse's schedule to the end, start-up left out).
# Rates are Gb/s of payload: datagram bytes less the 28-byte VRT header
# (header, stream ID, class ID, integer and fractional timestamps) in every
# row, so the rows count the same bits; per core = over the receive
# threads (the naive receiver: one).
#
# usage: bench-net.sh [--quick] [--backend cpu|cuda] [--threads N] [--senders N]
#                     [--bytes B] [--hold-s S] [--search-s S] [--steps N]
#                     [--recv-cpus LIST] [--rcvbuf BYTES] [--out FILE.tsv]
#   --quick      a smoke test of a few seconds: 1 s (a) and (b), 4 trials
#                of 1 s, a 2 s hold, small CPIs
#   --backend    chirpd's backend (default cpu; cuda on a GPU host)
#   --threads    receive threads and sink sockets (default 2)
#   --senders    sending threads of the blaster and of chirp-send, and so
#                the CPI's channels (default: --threads; at least that).
#                On loopback the sender carries most of the kernel's work:
#                when (c) says "sender-limited", give more
#   --bytes      datagram bytes (default 8220: 8192 bytes of sc16 payload,
#                a jumbo-frame datagram; --quick: 1052); B - 28 must be a
#                multiple of 4
#   --hold-s     how long (c)'s rate must hold (default 60)
#   --search-s   each search trial (default 5), --steps trials (default 6)
#   --recv-cpus  pin chirp-recv's threads (its --cpus); default unpinned
#   --rcvbuf     socket buffer of the sink and of chirp-recv, bytes (default
#                268435456, chirp-recv's default; beyond net.core.rmem_max
#                as root)
#   --out        the TSV (default build/bench-net/net.tsv); FILE.meta
#                (scripts/bench-meta.sh, kind net) beside it
# Environment: CHIRP_BUILD (default build), EXTRA_CFG (more chirpd.conf
# section.key=value settings, e.g. processing.cpu_threads=4, or
# input.hugepages=true with a pool of 2 MiB pages on /dev/hugepages for
# the input ring: fewer TLB misses in chirp-recv's copies on a VM).
# The TSV: what (ceiling, blaster, naive, chirp-recv), threads,
# datagram_bytes, gbps, gbps_per_core, loss (the fraction of datagrams
# lost), seconds (measured over), sender, backend.
# The summary last: the rows, (c)/(a) against 90 %, (c)/(b) against 2x
# and (c) against 25 Gb/s. Exit 0 when the run measured all three (the
# criteria are figures, not the exit status; a (c) that held no rate
# without loss is a row of 0 Gb/s), 1 when it could not, 2 usage.
set -u
cd "$(dirname "$0")/.." || exit 1
ARGS=("$@")
QUICK=0 BACKEND=cpu THREADS=2 SENDERS= BYTES= HOLD_S= SEARCH_S= STEPS= RECV_CPUS= OUT=
RCVBUF=268435456
while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=1;;
	--backend) BACKEND=${2:?}; shift;;
	--threads) THREADS=${2:?}; shift;;
	--senders) SENDERS=${2:?}; shift;;
	--bytes) BYTES=${2:?}; shift;;
	--hold-s) HOLD_S=${2:?}; shift;;
	--search-s) SEARCH_S=${2:?}; shift;;
	--steps) STEPS=${2:?}; shift;;
	--recv-cpus) RECV_CPUS=${2:?}; shift;;
	--rcvbuf) RCVBUF=${2:?}; shift;;
	--out) OUT=${2:?}; shift;;
	-h|--help) sed -n '3,/^# and (c) against 25/p' "$0" | sed 's/^# \{0,1\}//'; exit 0;;
	*) echo "bench-net: unknown option '$1' (--help)" >&2; exit 2;;
	esac
	shift
done
if [ $QUICK = 1 ]; then
	: "${BYTES:=1052}" "${HOLD_S:=2}" "${SEARCH_S:=1}" "${STEPS:=4}"
	SINK_S=1 P=16 IDLE_S=1
else
	: "${BYTES:=8220}" "${HOLD_S:=60}" "${SEARCH_S:=5}" "${STEPS:=6}"
	SINK_S=5 P=128 IDLE_S=3
fi
: "${OUT:=build/bench-net/net.tsv}"
HDR=28
bad() { echo "bench-net: $*" >&2; exit 2; }
case $BACKEND in cpu|cuda) ;; *) bad "--backend '$BACKEND': want cpu or cuda";; esac
: "${SENDERS:=$THREADS}"
for v in THREADS SENDERS BYTES HOLD_S SEARCH_S STEPS RCVBUF; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || bad "${v,,} '${!v}': want a positive integer"
done
[ "$RCVBUF" -ge 4096 ] && [ "$RCVBUF" -le 1073741824 ] || bad "--rcvbuf $RCVBUF: want 4096..1073741824"
[ "$THREADS" -le 16 ] || bad "--threads $THREADS: at most 16"
[ "$SENDERS" -ge "$THREADS" ] && [ "$SENDERS" -le 16 ] || bad "--senders $SENDERS: want --threads ($THREADS) to 16"
[ $(((BYTES - HDR) % 4)) = 0 ] && [ "$BYTES" -gt $((HDR + 4)) ] && [ "$BYTES" -le 9000 ] ||
	bad "--bytes $BYTES: want 28 + a multiple of 4 bytes of sc16 payload, at most 9000"
case $OUT in *.tsv) ;; *) bad "--out '$OUT': want a FILE.tsv";; esac
mkdir -p "$(dirname "$OUT")" || exit 1
rm -f "${OUT%.tsv}"-hold*.jsonl   # an earlier run's holds are not this run's
META=${OUT%.tsv}.meta

export CHIRP_TEST_BACKEND=$BACKEND
. tests/e2e/lib.sh
e2e_init bench_net
e2e_need chirp-recv chirp-send chirp-tap
SINK=$BUILD/bench/udp_sink
[ -x "$SINK" ] || e2e_skip "$SINK is not built"
RECV=$BIN/chirp-recv SEND=$BIN/chirp-send

# The CPI: one channel per sender and receive thread, each pulse's window
# two datagrams.
C=$SENDERS R=$(((BYTES - HDR) / 4 * 2))
CPI_BYTES=$((C * P * R * 4))
# chirp-recv's horizon: the CPIs one socket's buffer holds (a receive
# thread may lag that much without losing a datagram, and its CPIs stay
# open as long), 256 at most; the ring has 64 slots more for chirpd.
HORIZON=$(((RCVBUF * THREADS + CPI_BYTES - 1) / CPI_BYTES))
[ "$HORIZON" -le 256 ] || HORIZON=256
[ "$HORIZON" -ge 4 ] || HORIZON=4
SLOTS=$((HORIZON + 64))
TSV=$T/net.tsv
printf 'what\tthreads\tdatagram_bytes\tgbps\tgbps_per_core\tloss\tseconds\tsender\tbackend\n' >"$TSV"
row() { printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$TSV"; }
calc() { "$PY" -c "import sys; print($1)" "${@:2}"; }
kv() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" "$2"; }   # kv KEY FILE

# sink_run WHAT FEEDER — the sink (THREADS sockets) fed for SINK_S seconds
# by FEEDER: send (chirp-send as (c) has it, unpaced) or blast (udp_sink's
# blaster); one TSV row.
sink_run() {
	local what=$1 feeder=$2 nt=$THREADS port pid sent got gbps s by
	"$SINK" sink --header $HDR --threads "$nt" --rcvbuf "$RCVBUF" >"$T/$what.out" 2>"$T/$what.err" &
	pid=$!
	e2e_track $pid
	e2e_wait 5 grep -q "listening on port" "$T/$what.err" || e2e_fail "udp_sink ($what) did not start: $(cat "$T/$what.err")"
	port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$T/$what.err")
	if [ "$feeder" = blast ]; then
		by="udp_sink blast x$SENDERS"
		"$SINK" blast --dest 127.0.0.1:"$port" --bytes "$BYTES" --threads "$SENDERS" \
			--seconds "$SINK_S" >"$T/$what.feed" 2>&1 || e2e_fail "the blaster failed: $(cat "$T/$what.feed")"
		sent=$(kv datagrams "$T/$what.feed")
	else   # until SIGINT; its totals then
		by="chirp-send x$SENDERS unpaced"
		timeout --preserve-status -s INT "$SINK_S" "$SEND" "${SEND_ARGS[@]}" -d 127.0.0.1:"$port" \
			-n 0 --rate 1e7 >"$T/$what.feed" 2>"$T/$what.feed.err" ||
			e2e_fail "chirp-send (unpaced) failed: $(cat "$T/$what.feed.err")"
		sent=$("$PY" -c 'import json, sys; print(json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])["packets"])' "$T/$what.feed")
	fi
	wait $pid || e2e_fail "udp_sink ($what) failed: $(cat "$T/$what.err")"
	got=$(kv datagrams "$T/$what.out") gbps=$(kv gbps "$T/$what.out") s=$(kv seconds "$T/$what.out")
	[ -n "$gbps" ] && [ "${got:-0}" -gt 0 ] || e2e_fail "udp_sink ($what) received nothing: $(cat "$T/$what.out" "$T/$what.err")"
	row "$what" "$nt" "$BYTES" "$gbps" "$(calc "'%.3f' % (float(sys.argv[1]) / int(sys.argv[2]))" "$gbps" "$nt")" \
		"$(calc "'%.4f' % max(0, 1 - int(sys.argv[1]) / int(sys.argv[2]))" "$got" "$sent")" "$s" "$by" -
	e2e_log "($what) $gbps Gb/s ($nt thread(s)), $got of $sent datagrams received, fed by $by"
}

# trial GBPS SECONDS [CHIRP-RECV ARGS...] — chirp-send (SENDERS threads)
# at GBPS of payload for SECONDS into chirp-recv (default: THREADS receive
# threads) into chirpd. Sets res (ok or lost), got (Gb/s sent), sent_s
# (chirp-send's sending seconds), placed
# (Gb/s of payload chirp-recv placed into CPIs, over the sender's time),
# loss (the fraction of datagrams lost) and why. (Not in a subshell:
# e2e_fail and e2e_track work on the script itself.)
trial() {
	local want=$1 secs=$2 cps n port rpid spid t0 t1 ov0 ov1 rargs=("${@:3}")
	[ ${#rargs[@]} -gt 0 ] || rargs=(--threads "$THREADS" ${RECV_CPUS:+--cpus "$RECV_CPUS"})
	cps=$(calc "'%.4f' % (float(sys.argv[1]) * 1e9 / 8 / int(sys.argv[2]))" "$want" "$CPI_BYTES")
	n=$(calc "max(4, int(float(sys.argv[1]) * float(sys.argv[2]) + 0.5))" "$cps" "$secs")
	rm -f "$T/recv.err"
	"$RECV" -c "$CONF" --listen 127.0.0.1:0 --horizon "$HORIZON" --epoch-jump 256 --deadline-ms 200 \
		--count "$n" --idle-exit "$IDLE_S" --rcvbuf "$RCVBUF" --wait 10 --stats 1 "${rargs[@]}" \
		>"$T/recv.json" 2>"$T/recv.err" &
	rpid=$!
	e2e_track $rpid
	e2e_wait 10 grep -q "listening on port" "$T/recv.err" ||
		e2e_fail "chirp-recv did not start: $(cat "$T/recv.err")"
	port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$T/recv.err" | head -1)
	ov0=$(e2e_stat input_overruns)
	t0=$(date +%s.%N)
	"$SEND" "${SEND_ARGS[@]}" -d 127.0.0.1:"$port" -n "$n" --rate "$cps" \
		>"$T/send.json" 2>"$T/send.err" &
	spid=$!
	e2e_track $spid
	# STOP_ON_LOSS: end the sending at chirp-recv's first loss (its
	# counters each second): the trial has failed, and a minute of a
	# receiver far behind proves nothing more
	while [ -n "${STOP_ON_LOSS:-}" ] && kill -0 $spid 2>/dev/null; do
		sleep 1
		tail -1 "$T/recv.json" 2>/dev/null | grep -Eq '"(kernel|late)":[1-9]' && kill -INT $spid
	done
	wait $spid || e2e_fail "chirp-send failed: $(cat "$T/send.err")"
	t1=$(date +%s.%N)
	wait $rpid || e2e_fail "chirp-recv failed: $(cat "$T/recv.err")"
	grep -h "socket receive buffer\|SO_ATTACH_REUSEPORT_CBPF" "$T/recv.err" >>"$T/recv.notes"
	ov1=$(e2e_stat input_overruns)
	( "$PY" - "$T/recv.json" "$n" "$CPI_BYTES" "$t0" "$t1" "$want" "$((ov1 - ov0))" "$T/send.json" \
		"$((BYTES - HDR))" <<'EOF'
import json, sys
r = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
n, cpi_bytes, t0, t1, want, ov = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), \
    float(sys.argv[5]), float(sys.argv[6]), int(sys.argv[7])
s = json.loads(open(sys.argv[8]).read().strip().splitlines()[-1])
sent = s["packets"]
payload = int(sys.argv[9])
got = r["packets"] + r.get("context_packets", 0)   # data and context
# over chirp-send's own sending time (its start-up and synthesis left
# out), else the process's
secs = s.get("seconds") or (t1 - t0)
gbps = min(s["cpis"], n) * cpi_bytes * 8 / secs / 1e9
d = r["drops"]
placed = r["packets"] - sum(d[k] for k in ("late", "duplicate", "ring_full", "bad_channel", "before_t0"))
placed_gbps = placed * payload * 8 / secs / 1e9
why = [k + "=" + str(v) for k, v in r["drops"].items() if v]
c = r["cpis"]
if c["complete"] != n:
    why.append("complete=%d/%d partial=%d dropped=%d" % (c["complete"], n, c["partial"], c["dropped"]))
if ov:
    why.append("input_overruns=%d" % ov)
if got < sent:
    why.append("unreceived=%d" % (sent - got))
loss = max(sent - got, 0) + sum(r["drops"].values())
print("%s %.3f %.3f %.6f %.3f %s%s" % ("lost" if why else "ok", gbps, placed_gbps, loss / max(sent, 1), secs,
                             ",".join(why) or "-",
                             " (sender-limited: %.3f of %.3f Gb/s)" % (gbps, want)
                             if gbps < 0.95 * want else ""))
EOF
	) >"$T/trial.res" || e2e_fail "cannot read the trial's counters: $(cat "$T/recv.json")"
	read -r res got placed loss sent_s why <"$T/trial.res"
}

e2e_log "bench-net: $THREADS receive thread(s), $SENDERS sending, datagrams of $BYTES bytes ($((BYTES - HDR)) of payload), CPI ${C}x${P}x${R} sc16, backend $BACKEND, hold ${HOLD_S} s; net.core.rmem_max $(cat /proc/sys/net/core/rmem_max 2>/dev/null || echo '?')"
scripts/bench-meta.sh "$META.tmp" net scripts/bench-net.sh "${ARGS[@]}" || exit 1

# The sender of (a), (b) and (c): one chirp-send paces every channel from
# one start, so a pulse's channels arrive together; --same-cpi keeps
# synthesis and conversion out of its rate.
e2e_config input.format=sc16 input.slots="$SLOTS" cpi.channels="$C" cpi.pulses="$P" cpi.samples="$R" \
	waveform.sample_rate_hz=100e6 waveform.bandwidth_hz=20e6 waveform.pulse_width_s=2e-6 \
	output.mode=complex output.slots=16 ${EXTRA_CFG:-}
SEND_ARGS=(-c "$CONF" --threads "$SENDERS" --max-payload $((BYTES - HDR)) --target $((R / 2)),-6
	--noiseless --same-cpi -q)

# (a), and the blaster's row beside it
sink_run ceiling send
CEIL=$(awk -F'\t' '$1 == "ceiling" { print $4 }' "$TSV")
sink_run blaster blast

# (b) and (c): one chirpd; each trial a fresh chirp-recv (its own
# counters).
E2E_SLOW=4 e2e_start_chirpd
# chirpd's output is drained (read and let go) by chirp-tap, so that
# chirpd never waits on it.
"$CHIRP_TAP" -c "$CONF" --drain -q >"$T/tap.log" 2>&1 &
e2e_track $!
# (b): asked for (a)'s rate, for as long as (a) ran.
trial "$CEIL" "$SINK_S" --threads 1 --batch 1
e2e_log "(b) naive: $CEIL Gb/s asked, $got sent, $placed placed: $res $why"
row naive 1 "$BYTES" "$placed" "$placed" "$loss" "$SINK_S" "chirp-send x$SENDERS" "$BACKEND"

lo=0 hi=$CEIL sender_limited=
for ((k = 1; k <= STEPS; k++)); do
	if [ "$k" = 1 ]; then g=$(calc "'%.3f' % (0.9 * float(sys.argv[1]))" "$hi")
	elif [ "$lo" = 0 ]; then g=$(calc "'%.3f' % (float(sys.argv[1]) / 2)" "$hi")
	else g=$(calc "'%.3f' % ((float(sys.argv[1]) + float(sys.argv[2])) / 2)" "$lo" "$hi"); fi
	trial "$g" "$SEARCH_S"
	e2e_log "(c) search $k/$STEPS: $g Gb/s asked, $got sent: $res $why"
	case $why in *sender-limited*) sender_limited="chirp-send reached $got of $g Gb/s asked";; esac
	if [ "$res" = ok ]; then lo=$got; else hi=$g; fi
done
# The hold: the search's best rate, else 95 % and 90 % of it (a trial of
# seconds finds the edge; a minute meets the host's slow stretches too).
# Each hold's counters, a JSON line a second, go beside the TSV.
held=0 hloss=- hsecs=0
if [ "$lo" != 0 ]; then
	for try in 1 2 3; do
		g=$(calc "'%.3f' % ((1.05 - 0.05 * int(sys.argv[2])) * float(sys.argv[1]))" "$lo" "$try")
		STOP_ON_LOSS=1 trial "$g" "$HOLD_S"
		cp "$T/recv.json" "${OUT%.tsv}-hold$try.jsonl"
		e2e_log "(c) hold $try: $g Gb/s asked for $HOLD_S s, $got sent: $res $why"
		# over what it sent for: a hold stopped at a loss, less
		hloss=$loss hsecs=$(printf '%.0f' "$sent_s")
		if [ "$res" = ok ]; then held=$got; break; fi
	done
fi
e2e_stop_chirpd >/dev/null 2>&1
[ -s "$T/recv.notes" ] && sort -u "$T/recv.notes" | while read -r l; do e2e_log "chirp-recv said: $l"; done
row chirp-recv "$THREADS" "$BYTES" "$held" "$(calc "'%.3f' % (float(sys.argv[1]) / int(sys.argv[2]))" "$held" "$THREADS")" \
	"$hloss" "$hsecs" "chirp-send x$SENDERS" "$BACKEND"
cp "$TSV" "$OUT" && mv "$META.tmp" "$META" || e2e_fail "cannot write $OUT"

echo
echo "---- bench-net: $OUT ----"
if command -v column >/dev/null; then column -t -s $'\t' "$TSV"; else cat "$TSV"; fi
"$PY" - "$TSV" "${sender_limited:-}" <<'EOF'
import csv, sys
rows = {r["what"]: r for r in csv.DictReader(open(sys.argv[1]), delimiter="\t")}
a, b, c = (float(rows[k]["gbps"]) for k in ("ceiling", "naive", "chirp-recv"))
def crit(ok, text):
    print("%-4s %s" % ("PASS" if ok else "FAIL", text))
crit(a > 0 and c / a >= 0.90, "(c)/(a) = %.0f %% >= 90 %% of the loopback ceiling (%.2f of %.2f Gb/s)" % (100 * c / a if a else 0, c, a))
crit(b > 0 and c / b >= 2.0, "(c)/(b) = %.2fx >= 2x the naive loop (%.2f Gb/s)" % (c / b if b else 0, b))
crit(c >= 25.0, "(c) = %.2f Gb/s >= 25 Gb/s (%.2f Gb/s per receive core)" % (c, float(rows["chirp-recv"]["gbps_per_core"])))
x = rows.get("blaster")
print("like with like: (a), (b) and (c) fed by one sender, %s (unpaced for (a))%s"
      % (rows["ceiling"]["sender"].replace(" unpaced", ""), ": " + sys.argv[2] if sys.argv[2] else ""))
if x:
    print("for reference, the sink fed by %s: %.2f Gb/s, loss %s (loss 0: that sender's limit)"
          % (x["sender"], float(x["gbps"]), x["loss"]))
EOF
[ "$held" != 0 ] || echo "(c): no rate held without loss: its row says 0"
exit 0
