#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fuzz.sh SECONDS — build every libFuzzer target (tests/fuzz/fuzz_*.c, with
# clang, ASan and UBSan) into build-fuzz/ and run each for SECONDS with its
# seed corpus (tests/fuzz/corpus/<target>/). Prints "fuzz ok NAME: N execs"
# per target; exits non-zero on the first crash (the reproducer is kept in
# build-fuzz/).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-20}
out=build-fuzz
mkdir -p "$out"
CC=${FUZZ_CC:-clang}
cflags="-std=gnu11 -g -O1 -D_GNU_SOURCE -Iinclude -Isrc -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -pthread"
deps="$(pkg-config --cflags jansson inih 2>/dev/null || true)"
libs="$(pkg-config --libs inih jansson fftw3f libsystemd libmicrohttpd 2>/dev/null || echo -linih -ljansson -lfftw3f -lsystemd -lmicrohttpd) -lfftw3f_threads -lnuma -lm -lrt"
shopt -s nullglob
targets=(tests/fuzz/fuzz_*.c)
[ ${#targets[@]} -gt 0 ] || { echo "fuzz: no targets"; exit 0; }
# The core and ring libraries' sources, as the Makefile names them (the
# daemon's and the tools' own files are not fuzzed through here).
read -r -a srcs <<<"$(make -s --no-print-directory CUDA=0 print-lib-srcs)"
[ ${#srcs[@]} -gt 0 ] || { echo "fuzz: make print-lib-srcs named no sources"; exit 1; }
for t in "${targets[@]}"; do
	name=$(basename "$t" .c)
	bin=$out/$name
	if [ ! -x "$bin" ] || [ -n "$(find "$t" src include -newer "$bin" -name '*.[ch]' | head -1)" ]; then
		$CC $cflags $deps -o "$bin" "$t" "${srcs[@]}" $libs
	fi
	corpus=tests/fuzz/corpus/$name
	work=$out/corpus-$name
	mkdir -p "$work"
	[ -d "$corpus" ] && cp -n "$corpus"/* "$work"/ 2>/dev/null || true
	log=$out/$name.log
	if ! (cd "$out" && ASAN_OPTIONS=detect_leaks=1 "./$name" -max_total_time="$secs" -timeout=10 \
	      -rss_limit_mb=2048 -print_final_stats=1 "corpus-$name" >"$name.log" 2>&1); then
		echo "fuzz CRASH $name — see $log"; tail -40 "$log"; exit 1
	fi
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	echo "fuzz ok $name: ${execs:-?} execs in ${secs}s, 0 crashes"
done
