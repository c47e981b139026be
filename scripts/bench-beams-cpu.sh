#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench-beams-cpu.sh [BUILD] OUT.tsv — the CPU chain with beams against
# numpy on one thread, the same CPIs, measured side by side in one run:
# build/bench/bench_beams --maps (B beams formed before compression,
# compression, Doppler, the B maps out: the work numpy does; FFTW measured
# plans, one thread), build/bench/bench_beams (the whole chain: the maps,
# CA-CFAR per beam, the local maximum across beams, monopulse on each
# detection, detections only) and bench/compare/numpy_beams.py
# (numpy.matmul for the beams, numpy.fft for compression and Doppler, the
# maps), each round running all three once per CPI, interleaved, so other
# load hits them alike.
#
#   env  BEAMS_ROUNDS (default 3), BEAMS_SECONDS per measurement (default
#        2), BEAMS_CPIS (default "16x128x4096:512:16": CxPxR:L:B, space-separated)
# OUT.tsv, for scripts/bench-report.py (kind beams_cpu):
#   tool cpi L B mode round median_ms cpu_ms
# (tools chirpd-beams-maps, chirpd-beams and numpy-beams; a "skipped" row
# names a missing numpy). Exit 0 with results, 1 when bench_beams is missing or fails.
set -uo pipefail
cd "$(dirname "$0")/.."

if [ $# -eq 2 ]; then build=$1; out=$2; elif [ $# -eq 1 ]; then build=build; out=$1; else
	echo "usage: bench-beams-cpu.sh [BUILD] OUT.tsv" >&2
	exit 2
fi
rounds=${BEAMS_ROUNDS:-3}
seconds=${BEAMS_SECONDS:-2}
cpis=${BEAMS_CPIS:-"16x128x4096:512:16"}
bench=$build/bench/bench_beams
py=/usr/bin/python3
[ -x "$bench" ] || { echo "bench-beams-cpu: $bench not found: run make first" >&2; exit 1; }
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1

printf 'tool\tcpi\tL\tB\tmode\tround\tmedian_ms\tcpu_ms\n' >"$out"
have_numpy=1
"$py" -c 'import numpy' 2>/dev/null || {
	have_numpy=0
	printf 'skipped\tnumpy-beams\t%s has no numpy (python3-numpy)\n' "$py" >>"$out"
}
# row TOOL_LINE ROUND — bench_beams' / numpy_beams' TSV line as a raw row
row() {
	awk -F'\t' -v r="$2" '{ printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", $1, $2, $3, $4, $5, r, $6, $7 }' <<<"$1"
}
for ((r = 1; r <= rounds; r++)); do
	for s in $cpis; do
		IFS=':x' read -r C P R L B <<<"$s"
		for maps in --maps ""; do
			# shellcheck disable=SC2086
			line=$("$bench" --cpi "$s" --seconds "$seconds" $maps) ||
				{ echo "bench-beams-cpu: bench_beams --cpi $s $maps failed" >&2; exit 1; }
			row "$line" $r >>"$out"
			echo "round $r: $line"
		done
		if [ $have_numpy = 1 ]; then
			line=$("$py" bench/compare/numpy_beams.py "$C" "$P" "$R" "$L" "$B" "$seconds") ||
				{ echo "bench-beams-cpu: numpy_beams.py failed" >&2; exit 1; }
			row "$line" $r >>"$out"
			echo "round $r: $line"
		fi
	done
done
# the summary: the best round's median per tool, and the ratio
awk -F'\t' 'NR > 1 && $1 != "skipped" { k = $2 ":" $4; t = $1
	if (!((t, k) in w) || $7 < w[t, k]) w[t, k] = $7
	if (!((t, k) in c) || $8 < c[t, k]) c[t, k] = $8; keys[k] = 1 }
	END { for (k in keys) if (("numpy-beams", k) in w)
		printf "bench-beams-cpu: %s beams: maps chirpd %.1f ms, numpy %.1f ms: %.2fx wall, %.2fx CPU time; the chain %.2fx CPU time\n",
			k, w["chirpd-beams-maps", k], w["numpy-beams", k], w["numpy-beams", k] / w["chirpd-beams-maps", k],
			c["numpy-beams", k] / c["chirpd-beams-maps", k], c["numpy-beams", k] / c["chirpd-beams", k] }' "$out"
exit 0
