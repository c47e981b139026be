#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench-compare.sh [BUILD] — chirpd's CPU backend against scipy's
# fftconvolve and GNU Radio's fft_filter_ccc on the same CPIs, same machine,
# one thread each, measured side by side in one run.
# GNU Radio is measured twice (bench/compare/gr_fft_filter.cc): "gnuradio"
# gives the same output as chirpd (each row followed by L-1 zeros in its
# stream, so rows do not bleed into each other: (R+L-1)/R times the
# samples), the chirpd/gnuradio ratio is taken against it; "gr-stream" pushes
# all rows back to back as one stream (rows bleed, gates R-L+1..R-1 of every
# row differ from chirpd's), shown for reference.
#
#   BUILD   build directory holding bench/bench_pc (default: build)
#   env     COMPARE_ROUNDS (default 3), COMPARE_SECONDS per measurement
#           (default 2), COMPARE_CPIS (default "4x128x4096:512 16x128x9000:1000"),
#           COMPARE_RAW=FILE: every measurement of every round as TSV (tool,
#           cpi, L, nfft, round, median_ms, wall_msps, cpu_msps; tools chirpd
#           (patient plans), chirpd-measure, scipy, gnuradio, gnuradio-stream,
#           and "skipped" rows naming a missing tool and why), for
#           scripts/bench-report.py
#
# The radar chain (bench_pc --chain against bench/compare/scipy_chain.py:
# compression, Doppler FFT, CA-CFAR, the detection list) runs in the same
# rounds unless COMPARE_CHAIN=0; raw tools chirpd-chain and scipy-chain.
#
# chirpd runs with FFTW_PATIENT plans (its fastest setting; the plans are
# kept in BUILD/fftw-wisdom, given to bench_pc and fft_floor with --wisdom,
# so only the first run spends about a minute per CPI shape planning) and,
# for reference, with FFTW_MEASURE.
# Each round runs chirpd, scipy and GNU Radio once per CPI, interleaved, so
# load from other processes hits all three alike; each measurement is the
# median CPI time over COMPARE_SECONDS; the table shows, per tool, the best
# of the rounds' medians. MS/s = input complex samples per second / 1e6.
# Two tables: from wall time, and from the process's CPU time (what one
# thread delivers while it has a CPU; on a shared, loaded machine the wall
# figures swing with other jobs, the CPU-time figures much less).
# A tool whose dependency is missing is reported "skipped: <why>"; the
# script still exits 0 (it is a report, not a test), non-zero only when
# bench_pc itself is missing or fails.
#   scipy:     /usr/bin/python3 with numpy + scipy (python3-scipy)
#   GNU Radio: g++ and gnuradio-dev (scripts/install-deps.sh --bench);
#              bench/compare/gr_fft_filter.cc is compiled into
#              BUILD/bench-compare/.
set -uo pipefail
cd "$(dirname "$0")/.."

build=${1:-build}
rounds=${COMPARE_ROUNDS:-3}
seconds=${COMPARE_SECONDS:-2}
cpis=${COMPARE_CPIS:-"4x128x4096:512 16x128x9000:1000"}
bench=$build/bench/bench_pc
floor=$build/bench/fft_floor
py=/usr/bin/python3
wisdom=$build/fftw-wisdom

if [ ! -x "$bench" ]; then
	echo "bench-compare: $bench not found: run make BUILD=$build first" >&2
	exit 1
fi

# --- which comparisons can run -------------------------------------------
scipy_ok=1 scipy_why=
if [ ! -x "$py" ]; then
	scipy_ok=0 scipy_why="no $py"
elif ! "$py" -c 'import numpy, scipy.signal' 2>/dev/null; then
	scipy_ok=0 scipy_why="$py lacks numpy/scipy (apt-get install python3-scipy)"
fi

gr_ok=1 gr_why=
gr_bin=$build/bench-compare/gr_fft_filter
if ! command -v g++ >/dev/null 2>&1; then
	gr_ok=0 gr_why="no g++"
elif ! pkg-config --exists gnuradio-filter 2>/dev/null; then
	gr_ok=0 gr_why="GNU Radio not installed (scripts/install-deps.sh --bench installs gnuradio-dev)"
else
	mkdir -p "$build/bench-compare"
	if [ ! -x "$gr_bin" ] || [ bench/compare/gr_fft_filter.cc -nt "$gr_bin" ]; then
		# shellcheck disable=SC2046
		if ! g++ -O2 -std=c++17 -o "$gr_bin" bench/compare/gr_fft_filter.cc \
			$(pkg-config --cflags --libs gnuradio-filter volk 2>/dev/null) -lfmt \
			>"$build/bench-compare/gr-build.log" 2>&1; then
			gr_ok=0 gr_why="gr_fft_filter does not build (see $build/bench-compare/gr-build.log)"
		fi
	fi
fi

echo "bench-compare: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
echo "bench-compare: 1 thread each, cf32 in, complex out, LFM reference with Hamming window;"
echo "               best of $rounds rounds of the median over ${seconds}s; MS/s = input samples/s / 1e6"
[ $scipy_ok = 1 ] || echo "scipy: skipped: $scipy_why"
[ $gr_ok = 1 ] || echo "gnuradio: skipped: $gr_why"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rc=0

for cpi in $cpis; do
	geom=${cpi%%:*} L=${cpi##*:}
	IFS=x read -r C P R <<<"$geom"
	for ((r = 1; r <= rounds; r++)); do
		for pl in patient measure; do
			# FFTW uses patient wisdom for measure requests too: keep them apart
			wis=$wisdom
			[ $pl = measure ] && wis=$wisdom.measure
			if ! "$bench" --planner $pl --wisdom "$wis" --threads 1 --tsv --seconds "$seconds" --cpi "$cpi" \
				>>"$tmp/chirpd-$pl.$geom" 2>"$tmp/err"; then
				echo "bench-compare: bench_pc failed: $(tail -1 "$tmp/err")" >&2
				rc=1
			fi
		done
		# the FFTs alone (bench/fft_floor.c): chirpd's and GNU Radio's
		if [ -x "$floor" ] && ! "$floor" --wisdom "$wisdom" --tsv --seconds "$seconds" --cpi "$cpi" \
			>>"$tmp/floor.$geom" 2>>"$tmp/floor.err"; then
			echo "fft_floor: failed on $cpi: $(tail -1 "$tmp/floor.err")"
		fi
		if [ "${COMPARE_CHAIN:-1}" = 1 ]; then
			"$bench" --chain --planner patient --wisdom "$wisdom" --threads 1 --tsv --seconds "$seconds" \
				--cpi "$cpi" >>"$tmp/chirpd-chain.$geom" 2>"$tmp/err" ||
				{ echo "bench-compare: bench_pc --chain failed: $(tail -1 "$tmp/err")" >&2; rc=1; }
			[ $scipy_ok = 1 ] && { "$py" bench/compare/scipy_chain.py "$C" "$P" "$R" "$L" "$seconds" \
				>>"$tmp/scipy-chain.$geom" 2>>"$tmp/scipy.check" ||
				echo "scipy: the chain failed on $cpi: $(tail -1 "$tmp/scipy.check")"; }
		fi
		if [ $scipy_ok = 1 ]; then
			"$py" bench/compare/scipy_pc.py "$C" "$P" "$R" "$L" "$seconds" >>"$tmp/scipy.$geom" 2>>"$tmp/scipy.check" ||
				echo "scipy: failed on $cpi: $(tail -1 "$tmp/scipy.check")"
		fi
		if [ $gr_ok = 1 ]; then
			# two TSV lines: gnuradio (same output) and gnuradio-stream
			if "$gr_bin" "$C" "$P" "$R" "$L" "$seconds" >"$tmp/gr.out" 2>>"$tmp/gr.check"; then
				awk -F'\t' -v a="$tmp/gnuradio.$geom" -v b="$tmp/gnuradio-stream.$geom" \
					'$1 == "gnuradio" { print >>a } $1 == "gnuradio-stream" { print >>b }' "$tmp/gr.out"
			else
				echo "gnuradio: failed on $cpi: $(tail -1 "$tmp/gr.check")"
			fi
		fi
	done
done

# best (highest) of a tool's rounds in TSV column $2, or "-"
best() {
	[ -s "$1" ] || { echo -; return; }
	sort -t$'\t' -k"$2,$2" -g "$1" | tail -1 | cut -f"$2"
}
ratio() {
	if [ "$1" = - ] || [ "$2" = - ]; then echo -; else awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; fi
}

# table TITLE COLUMN
table() {
	echo
	echo "$1"
	printf '%-14s %5s %6s %12s %10s %11s %14s %15s %13s %16s %17s\n' "CPI CxPxR" "L" "nfft" "chirpd MS/s" \
		"(measure)" "scipy MS/s" "gnuradio MS/s" "gr-stream MS/s" "chirpd/scipy" "chirpd/gnuradio" "chirpd/gr-stream"
	for cpi in $cpis; do
		geom=${cpi%%:*} L=${cpi##*:}
		c=$(best "$tmp/chirpd-patient.$geom" "$2") cm=$(best "$tmp/chirpd-measure.$geom" "$2")
		s=$(best "$tmp/scipy.$geom" "$2") g=$(best "$tmp/gnuradio.$geom" "$2")
		gs=$(best "$tmp/gnuradio-stream.$geom" "$2")
		nfft=$(cut -f4 "$tmp/chirpd-patient.$geom" 2>/dev/null | head -1)
		printf '%-14s %5s %6s %12s %10s %11s %14s %15s %13s %16s %17s\n' "$geom" "$L" "${nfft:--}" "$c" "$cm" \
			"$s" "$g" "$gs" "$(ratio "$c" "$s")" "$(ratio "$c" "$g")" "$(ratio "$c" "$gs")"
	done
}

table "Wall time: MS/s from the median CPI time (best of $rounds rounds)" 10
if [ "${COMPARE_CHAIN:-1}" = 1 ]; then
	echo
	echo "The radar chain (compression, Doppler, CA-CFAR, detections only), wall time, best of $rounds rounds"
	printf '%-14s %5s %18s %17s %18s\n' "CPI CxPxR" "L" "chirpd chain MS/s" "scipy chain MS/s" "chirpd/scipy chain"
	for cpi in $cpis; do
		geom=${cpi%%:*} L=${cpi##*:}
		c=$(best "$tmp/chirpd-chain.$geom" 10) s=$(best "$tmp/scipy-chain.$geom" 10)
		printf '%-14s %5s %18s %17s %18s\n' "$geom" "$L" "$c" "$s" "$(ratio "$c" "$s")"
	done
fi
table "CPU time: MS/s per CPU-second of the process (median, best of $rounds rounds) -- steadier when other jobs share the machine" 13

# FFTs alone: the most any work around FFTW can give (see bench/fft_floor.c)
echo
echo "FFTs alone (bench/fft_floor.c, CPU time, best of $rounds rounds): what chirpd and GNU Radio would"
echo "deliver if everything but their FFTW calls cost nothing. ceiling = chirpd floor / GNU Radio as measured"
echo "above (same output, CPU time): no change to chirpd's own code can take chirpd/gnuradio past it."
echo "+ copies: chirpd's FFTs plus only copying each row in and out (vector copy, streaming stores out), the bytes"
echo "any implementation moves. +copies vs gr: the most chirpd/gnuradio can reach without avoiding those copies."
printf '%-14s %5s %6s %13s %9s %6s %15s %15s %12s %14s %14s\n' "CPI CxPxR" "L" "nfft" "chirpd floor" \
	"+ copies" "F" "gr floor (msr)" "gr floor (pat)" "floor ratio" "ceiling vs gr" "+copies vs gr"
for cpi in $cpis; do
	geom=${cpi%%:*} L=${cpi##*:}
	if [ ! -s "$tmp/floor.$geom" ]; then
		printf '%-14s %5s  skipped: no %s\n' "$geom" "$L" "$floor"
		continue
	fi
	cf=$(best "$tmp/floor.$geom" 5) cm=$(best "$tmp/floor.$geom" 6)
	gm=$(best "$tmp/floor.$geom" 8) gp=$(best "$tmp/floor.$geom" 9)
	nfft=$(cut -f4 "$tmp/floor.$geom" | head -1) F=$(cut -f7 "$tmp/floor.$geom" | head -1)
	g=$(best "$tmp/gnuradio.$geom" 13)
	printf '%-14s %5s %6s %13s %9s %6s %15s %15s %12s %14s %14s\n' "$geom" "$L" "$nfft" "$cf" "$cm" "$F" \
		"$gm" "$gp" "$(ratio "$cf" "$gm")" "$(ratio "$cf" "$g")" "$(ratio "$cm" "$g")"
done
# raw results: one row per tool, CPI and round (bench_pc --tsv columns: 8
# median ms, 10 MS/s per thread from wall time, 13 MS/s from CPU time)
if [ -n "${COMPARE_RAW:-}" ]; then
	{
		printf 'tool\tcpi\tL\tnfft\tround\tmedian_ms\twall_msps\tcpu_msps\n'
		for cpi in $cpis; do
			geom=${cpi%%:*} L=${cpi##*:}
			for t in chirpd-patient chirpd-measure scipy gnuradio gnuradio-stream chirpd-chain scipy-chain; do
				[ -s "$tmp/$t.$geom" ] || continue
				name=$t
				[ $t = chirpd-patient ] && name=chirpd
				awk -F'\t' -v n="$name" -v g="$geom" -v l="$L" \
					'{ printf "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", n, g, l, $4, NR, $8, $10, $13 }' "$tmp/$t.$geom"
			done
		done
		[ $scipy_ok = 1 ] || printf 'skipped\tscipy\t\t\t\t\t\t%s\n' "$scipy_why"
		[ $gr_ok = 1 ] || printf 'skipped\tgnuradio\t\t\t\t\t\t%s\n' "$gr_why"
	} >"$COMPARE_RAW" || { echo "bench-compare: cannot write $COMPARE_RAW" >&2; rc=1; }
fi
echo
[ -s "$tmp/scipy.check" ] && sed -n '1p' "$tmp/scipy.check"
[ -s "$tmp/gr.check" ] && awk '$1 == "gr_fft_filter:" && !seen[$2]++' "$tmp/gr.check"
echo "(chirpd: FFTW patient plans; \"(measure)\": FFTW_MEASURE plans. gnuradio: fft_filter_ccc (overlap-add,"
echo " FFTW_MEASURE plans) fed each row followed by L-1 zeros, i.e. chirpd's output, (R+L-1)/R times the"
echo " samples; gr-stream: all C*P rows back to back as one stream, rows bleed into each other (not"
echo " chirpd's output). MS/s counts C*P*R input samples for every tool)"
exit $rc
