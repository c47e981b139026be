#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench-meta.sh FILE KIND COMMAND... — the provenance of one benchmark's raw
# results, written beside them as "key<TAB>value" lines: what a table of
# doc/performance.md says about where its figures came from
# (scripts/bench-report.py reads it). Keys: kind, date (UTC), commit
# (git describe --always --dirty), dirty (yes/no: the tree had uncommitted
# changes, so the commit alone does not name the code that ran), command
# (the exact benchmark command line), host, cpu, cpus, memory_gib, kernel,
# gpu, driver, cuda (nvcc's release, else the driver's CUDA version; "none"
# on a host without them). It runs nothing but the queries. A copy of the
# tree sent to a benchmark host (whose .git may be missing or stale) names
# its commit in .source-commit, written where the copy was made with
# `git describe --always --dirty`: when that file exists it is the commit;
# otherwise git's own; without either, "unknown".
set -uo pipefail
[ $# -ge 3 ] || { echo "usage: bench-meta.sh FILE KIND COMMAND..." >&2; exit 2; }
file=$1 kind=$2
shift 2
cd "$(dirname "$0")/.." || exit 1
commit=$(head -n 1 .source-commit 2>/dev/null | grep -E '^[0-9a-zA-Z._-]+$') ||
	commit=$(git describe --always --dirty 2>/dev/null) || commit=unknown
case $commit in *-dirty) dirty=yes;; unknown) dirty=unknown;; *) dirty=no;; esac
gpu=none driver=none cuda=none
if command -v nvidia-smi >/dev/null 2>&1 &&
	q=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1) && [ -n "$q" ]; then
	gpu=${q%%,*} driver=${q##*, }
	cuda=$(nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1 (driver)/p' | head -1)
fi
nvcc=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
[ -x "$nvcc" ] || nvcc=$(command -v nvcc 2>/dev/null)
if [ -n "$nvcc" ] && [ -x "$nvcc" ]; then
	r=$("$nvcc" --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p' | head -1)
	[ -n "$r" ] && cuda="$r (nvcc)${cuda:+; ${cuda#none}}" && cuda=${cuda%; }
fi
{
	printf 'kind\t%s\n' "$kind"
	printf 'date\t%s\n' "$(date -u '+%Y-%m-%d %H:%M:%S UTC')"
	printf 'commit\t%s\n' "$commit"
	printf 'dirty\t%s\n' "$dirty"
	printf 'command\t%s\n' "$*"
	printf 'host\t%s\n' "$(hostname)"
	printf 'cpu\t%s\n' "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
	printf 'cpus\t%s\n' "$(nproc)"
	printf 'memory_gib\t%s\n' "$(awk '/^MemTotal:/ { printf "%.0f", $2 / 1048576 }' /proc/meminfo)"
	printf 'kernel\t%s\n' "$(uname -r)"
	printf 'gpu\t%s\n' "$gpu"
	printf 'driver\t%s\n' "$driver"
	printf 'cuda\t%s\n' "${cuda:-none}"
} >"$file" || { echo "bench-meta: cannot write $file" >&2; exit 1; }
