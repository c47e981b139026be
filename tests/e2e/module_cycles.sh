#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# module_cycles.sh — no two of chirpd's modules depend on each other, even
# through others (scripts/check-cycles.py reads which module's object calls
# which from the build's objects: daemon.h and the pc headers are shared, so
# the #include lines cannot show it). First the check must find a cycle
# planted in two small objects, so a check that reads nothing cannot pass.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${CHIRP_BUILD:-build}
command -v nm >/dev/null && command -v python3 >/dev/null ||
	{ echo "skipped: needs nm and python3"; exit 77; }
[ -e "$build/obj/pc.o" ] || { echo "skipped: $build/obj has no objects (build first)"; exit 77; }

t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/obj"
printf 'int b(int);\nint a(int x) { return x ? b(x - 1) : 0; }\n' >"$t/a.c"
printf 'int a(int);\nint b(int x) { return x ? a(x - 1) : 1; }\n' >"$t/b.c"
printf 'int a(int);\nint c(void) { return a(3); }\n' >"$t/c.c"
for m in a b c; do "${CC:-cc}" -c "$t/$m.c" -o "$t/obj/$m.o"; done
if python3 scripts/check-cycles.py "$t/obj" >"$t/planted.out"; then
	echo "check-cycles.py missed a planted cycle:"; cat "$t/planted.out"; exit 1
fi
grep -qx 'cycle: a b' "$t/planted.out" && grep -q '^  a -> b: b$' "$t/planted.out" &&
	! grep -q 'cycle: .*c' "$t/planted.out" ||
	{ echo "check-cycles.py reported the planted cycle wrongly:"; cat "$t/planted.out"; exit 1; }

python3 scripts/check-cycles.py "$build/obj" | tee "$t/build.out"
grep -q '^no cycle among [0-9]* modules' "$t/build.out"
n=$(sed -n 's/^no cycle among \([0-9]*\) modules.*/\1/p' "$t/build.out")
[ "$n" -ge 25 ] || { echo "only $n modules under $build/obj: the listing is wrong"; exit 1; }
echo "module_cycles: planted cycle found; none among chirpd's $n modules"
