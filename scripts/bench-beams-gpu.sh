#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench-beams-gpu.sh OUT.tsv — the daemon forming beams on the CUDA backend,
# detections only, against the host-to-device copy limit of the same CPI,
# and what steering every CPI costs; all in one run.
#
#   copy limit  build/bench/copy_floor --limit: this CPI's input bytes
#               host-to-device (and a detection list's worth back), as fast
#               as the GPU's copy engines take them (the most any daemon can
#               deliver with every CPI crossing PCIe).
#   fixed       scripts/bench-daemon-gpu.sh: chirp-feed --prefilled (as fast
#               as the ring frees slots) -> chirpd with BEAMS conventional
#               beams before compression, MTI, Doppler, CFAR (output mode
#               none: only the lists come back) -> chirp-tap --drain on the
#               detection ring; every CPI at boresight.
#   switching   the same with the pointing changing every CPI among three
#               (chirp-feed --pointing POINTINGS): each CPI's weights formed
#               on the device from its own pointing.
# Runs alternate fixed, switching, REPEATS times (the shared host's copy
# rate wanders; medians of interleaved runs compare like with like). After
# each run chirpd's bad_pointing_cpis must be 0: a CPI skipped for its
# pointing is cheaper and would flatter the switching figure.
#
# OUT.tsv: one row per run: run, pointing (copy_limit | fixed | switching),
# cpi_per_s, gsps, bad_pointing, geometry, beams. Criteria (bench-report):
# fixed >= 95 % of the copy limit; switching costs <= 2 % of fixed.
#
# `bench-beams-gpu.sh --print-config` prints the chain's settings and exits.
# Environment: CHIRP_BUILD (default build), GEOM (default 16x128x4096),
# BEAMS (default 16), REPEATS (default 2), MEASURE_S (default 5),
# POINTINGS (default "-10,0;0,0;10,0"), EXTRA_CFG (more settings).
# Exit 77 without a GPU or a CUDA build.
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${1:?usage: bench-beams-gpu.sh OUT.tsv}
case $OUT in /*) ;; *) OUT=$(pwd)/$OUT;; esac
export CHIRP_BUILD=${CHIRP_BUILD:-build}
BUILD=$CHIRP_BUILD
GEOM=${GEOM:-16x128x4096}
BEAMS=${BEAMS:-16}
REPEATS=${REPEATS:-2}
POINTINGS=${POINTINGS:--10,0;0,0;10,0}
export MEASURE_S=${MEASURE_S:-5}
IFS=x read -r C P R <<<"$GEOM"

# The chain of perf-run's detect step, with a fan of BEAMS beams 0.1 apart
# in u over a half-wave line of C elements (the fan spans +-0.75 in u, so
# +-10 degrees of pointing keeps every beam visible).
BEAM_CFG="doppler.enable=1 doppler.window=hamming doppler.fft=256 cfar.enable=1 cfar.method=ca
cfar.integrate=none cfar.pfa=1e-5 radar.carrier_hz=9.4e9 radar.prf_hz=5000 array.spacing_m=0.016
beams.mode=conventional beams.count=$BEAMS beams.spacing_u=0.1 ${EXTRA_CFG:-}"
BEAM_CFG=$(tr '\n' ' ' <<<"$BEAM_CFG")
# --print-config: the settings alone (perf-run's latency run takes them)
[ "$OUT" = "$(pwd)/--print-config" ] && { echo "$BEAM_CFG"; exit 0; }
[ -x "$BUILD/bench/copy_floor" ] || { echo "bench-beams-gpu: no $BUILD/bench/copy_floor (a CUDA build)"; exit 77; }
command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 || { echo "bench-beams-gpu: no GPU"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/bench-beams-gpu.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT

printf 'run\tpointing\tcpi_per_s\tgsps\tbad_pointing\tgeometry\tbeams\n' >"$OUT"
samples=$((C * P * R))

# copy limit: the input H2D, a detection list back (64 KiB)
if ! timeout -k 5 60 "$BUILD/bench/copy_floor" --limit --in-bytes $((samples * 8)) --out-bytes 65536 \
	--seconds 5 >"$work/floor.txt" 2>"$work/floor.log"; then
	cat "$work/floor.log"; echo "bench-beams-gpu: copy_floor --limit failed"; exit 1
fi
cps=$(sed -n 's/.* cpi_per_s=\([0-9.]*\) .*/\1/p' "$work/floor.txt")
[ -n "$cps" ] || { cat "$work/floor.txt"; echo "bench-beams-gpu: no cpi_per_s from copy_floor"; exit 1; }
printf '0\tcopy_limit\t%s\t%s\t0\t%s\t%s\n' "$cps" "$(awk -v c="$cps" -v s=$samples 'BEGIN { printf "%.3f", c * s / 1e9 }')" \
	"$GEOM" "$BEAMS" >>"$OUT"
echo "bench-beams-gpu: copy limit $cps CPI/s ($GEOM cf32 in)"

# one_run RUN NAME [chirp-feed options] — one daemon run, its row in OUT
one_run() {
	local run=$1 name=$2 raw=$work/run-$1-$2.tsv log=$work/run-$1-$2.log gsps
	shift 2
	if ! CONFIGS="$GEOM:cf32:none" DAEMON_STREAMS=auto EXTRA_CFG="$BEAM_CFG" FEED_EXTRA="$*" \
		timeout -k 5 150 scripts/bench-daemon-gpu.sh "$raw" >"$log" 2>&1; then
		tail -20 "$log"; echo "bench-beams-gpu: run $run $name failed"; exit 1
	fi
	gsps=$(awk 'NF >= 4 { print $4 }' "$raw" | tail -1)
	[ -n "$gsps" ] || { tail -20 "$log"; echo "bench-beams-gpu: run $run $name: no figure"; exit 1; }
	local bad
	bad=$(sed -n 's/.*: bad_pointing_cpis \([0-9?]*\)$/\1/p' "$log" | tail -1)
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$run" "$name" \
		"$(awk -v g="$gsps" -v s=$samples 'BEGIN { printf "%.1f", g * 1e9 / s }')" "$gsps" "${bad:-0}" \
		"$GEOM" "$BEAMS" >>"$OUT"
	echo "bench-beams-gpu: run $run $name: $gsps GS/s, bad pointings ${bad:-0}"
}

for ((i = 1; i <= REPEATS; i++)); do
	one_run "$i" fixed
	one_run "$i" switching --pointing "$POINTINGS"
done
column -t -s $'\t' "$OUT" 2>/dev/null || cat "$OUT"
