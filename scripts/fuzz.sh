#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fuzz.sh [SECONDS] [TARGET...]   build, then run each for SECONDS (default 20)
# fuzz.sh --build [TARGET...]      build only
# fuzz.sh --run SECONDS [TARGET...]  run (building only what is out of date)
# The libFuzzer targets are tests/fuzz/fuzz_*.c, built with clang, ASan and
# UBSan into build-fuzz/; TARGETs name some (fuzz_config ...), default every
# one. Each runs with its seed corpus (tests/fuzz/corpus/TARGET/). Prints
# "fuzz ok NAME: N execs" per target; exits non-zero on the first crash
# (the reproducer is kept in build-fuzz/).
#
# The core and ring libraries' sources (as the Makefile names them; the
# daemon's and the tools' own files are not fuzzed through here) compile
# once into build-fuzz/obj/, in parallel, and every target links them.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=all secs=20
case ${1:-} in
--build) mode=build; shift;;
--run)   mode=run; secs=${2:?usage: fuzz.sh --run SECONDS [TARGET...]}; shift 2;;
*)       [[ ${1:-} =~ ^[0-9]+$ ]] && { secs=$1; shift; };;
esac
out=build-fuzz
CC=${FUZZ_CC:-clang}
san="address,undefined -fno-sanitize-recover=undefined"
cflags="-std=gnu11 -g -O1 -D_GNU_SOURCE -Iinclude -Isrc -pthread $(pkg-config --cflags jansson inih libzmq 2>/dev/null || true)"
libs="$(pkg-config --libs inih jansson fftw3f libsystemd libmicrohttpd libzmq 2>/dev/null || echo -linih -ljansson -lfftw3f -lsystemd -lmicrohttpd -lzmq) -lfftw3f_threads -lnuma -lm -lrt"

# stale OUT SRC — true when OUT is missing or older than SRC or any header.
stale() {
	[ ! -e "$1" ] || [ -n "$(find "$2" src include -newer "$1" -name '*.[ch]' | head -1)" ]
}

# build_objs — the libraries' objects, built with the fuzzer's
# instrumentation but not its main(); their paths in $objs.
build_objs() {
	local srcs s o todo=()
	read -r -a srcs <<<"$(make -s --no-print-directory CUDA=0 print-lib-srcs)"
	[ ${#srcs[@]} -gt 0 ] || { echo "fuzz: make print-lib-srcs named no sources"; exit 1; }
	mkdir -p "$out/obj"
	objs=()
	for s in "${srcs[@]}"; do
		o=$out/obj/$(echo "${s%.c}" | tr / _).o
		objs+=("$o")
		stale "$o" "$s" && todo+=("$s" "$o")
	done
	[ ${#todo[@]} -eq 0 ] && return
	printf '%s\0%s\0' "${todo[@]}" |
		xargs -0 -n 2 -P "$(nproc 2>/dev/null || echo 2)" \
			sh -c "$CC $cflags -fsanitize=fuzzer-no-link,$san -c -o \"\$2\" \"\$1\"" sh
}

# build_target NAME — build-fuzz/NAME, when out of date.
build_target() {
	local bin=$out/$1
	stale "$bin" "tests/fuzz/$1.c" || return 0
	$CC $cflags -fsanitize=fuzzer,$san -o "$bin" "tests/fuzz/$1.c" "${objs[@]}" $libs
}

# run_target NAME — run it for $secs seconds on a copy of its seed corpus.
run_target() {
	local name=$1 corpus=tests/fuzz/corpus/$1 work=$out/corpus-$1 log=$out/$1.log execs
	mkdir -p "$work"
	[ -d "$corpus" ] && cp -n "$corpus"/* "$work"/ 2>/dev/null || true
	if ! (cd "$out" && ASAN_OPTIONS=detect_leaks=1 "./$name" -max_total_time="$secs" -timeout=10 \
	      -rss_limit_mb=2048 -print_final_stats=1 "corpus-$name" >"$name.log" 2>&1); then
		echo "fuzz CRASH $name — see $log"; tail -40 "$log"; exit 1
	fi
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	echo "fuzz ok $name: ${execs:-?} execs in ${secs}s, 0 crashes"
}

main() {
	local targets=("$@") t
	if [ ${#targets[@]} -eq 0 ]; then
		shopt -s nullglob
		for t in tests/fuzz/fuzz_*.c; do targets+=("$(basename "$t" .c)"); done
		[ ${#targets[@]} -gt 0 ] || { echo "fuzz: no targets"; exit 0; }
	fi
	for t in "${targets[@]}"; do
		[ -f "tests/fuzz/$t.c" ] || { echo "fuzz: no target tests/fuzz/$t.c"; exit 1; }
	done
	mkdir -p "$out"
	build_objs
	for t in "${targets[@]}"; do build_target "$t"; done
	[ $mode = build ] && return
	for t in "${targets[@]}"; do run_target "$t"; done
}

main "$@"
