#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# readme.sh — README's example producer is doc/example_producer.c verbatim
# (install.sh builds and runs that file), and every doc/*.md README links to
# exists. Fails if they drift apart.
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
echo "readme: example producer identical, links resolve"
