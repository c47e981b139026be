#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# readme.sh — README's example producer is doc/example_producer.c verbatim
# (install.sh builds and runs that file), every doc/*.md README links to
# exists, README stays a front page (at most 250 lines, the perf-headline
# markers that make bench-report fills), and README and doc/ speak of the
# product, not of its development (no sessions, run names, machine kinds,
# issue numbers or dates of runs). Fails if they drift apart.
set -euo pipefail
cd "$(dirname "$0")/../.."
block=$(sed -n '/<!-- example_producer.c: begin/,/<!-- example_producer.c: end/p' README.md |
	sed '1,2d;$d' | sed '$d')
if [ "$block" != "$(cat doc/example_producer.c)" ]; then
	echo "README's example producer differs from doc/example_producer.c:"
	diff <(printf '%s\n' "$block") doc/example_producer.c || true
	exit 1
fi
for f in $(grep -o '(doc/[A-Za-z0-9_./-]*)' README.md | tr -d '()' | sort -u); do
	[ -e "$f" ] || { echo "README links to missing $f"; exit 1; }
done
grep -q PLACEHOLDER README.md && { echo "README still has a placeholder"; exit 1; }

lines=$(wc -l <README.md)
[ "$lines" -le 250 ] || { echo "README has $lines lines: a front page has at most 250"; exit 1; }
for m in begin end; do
	n=$(grep -c "^<!-- perf-headline: $m -->\$" README.md || true)
	[ "$n" = 1 ] || { echo "README needs exactly one '<!-- perf-headline: $m -->' line (has $n)"; exit 1; }
done
awk '/^<!-- perf-headline: begin -->$/ { b = NR } /^<!-- perf-headline: end -->$/ { e = NR }
     END { exit !(b && e > b) }' README.md ||
	{ echo "README: perf-headline begin must come before end"; exit 1; }

# Development talk. Case-insensitive: sessions, device time, machine kinds,
# issue numbers. Case-sensitive: run names (a lower-case letter and a digit:
# k1, j7, h1-h6; upper-case C1..C3 are the real-time criteria) and dates of
# runs (a man page's .TH date is the page's own, a SigMF core:datetime an
# example of the format). NEWS.md, a release history, may carry dates. The
# measured figures name their machine and date: doc/performance.md, the raw
# results under doc/perf/ and the
# perf-headline block that make bench-report fills from it are left out.
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir "$T/r"
sed '/^<!-- perf-headline: begin -->$/,/^<!-- perf-headline: end -->$/d' README.md >"$T/r/README.md"
mapfile -t docs < <(find doc \( -name '*.md' -o -path 'doc/man/*' \) -type f ! -path doc/performance.md ! -path 'doc/perf/*' | sort)
docs=("$T/r/README.md" "${docs[@]}")
talk=$(grep -nHiE '\bsessions?\b|device time|\bh[12]00\b|\bissue #?[0-9]+' "${docs[@]}" || true)
talk+=${talk:+$'\n'}$(grep -nHE '\b[a-z][0-9]-[a-z][0-9]\b|\b[kjrghic][0-9]\b|\b20[0-9]{2}-[01][0-9]-[0-3][0-9]\b' "${docs[@]}" |
	grep -vE '^[^:]+:[0-9]+:(\.TH |.*"core:datetime")' || true)
if [ -n "$talk" ]; then
	echo "development talk in README or doc/ (say what chirpd does, not how it got there):"
	printf '%s\n' "$talk" | sed "s|^$T/r/||"
	exit 1
fi
echo "readme: example producer identical, links resolve, front page, no development talk"
