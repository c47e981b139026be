#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# license.sh — chirpd is Apache-2.0: LICENSE holds the license's text,
# debian/copyright names it for every file, and every source file (C, CUDA,
# headers, shell, Python, make, man pages, systemd units) carries the SPDX
# line within its first two lines. Fails on the first file without it.
set -euo pipefail
cd "$(dirname "$0")/../.."
grep -q 'Apache License' LICENSE && grep -q 'Version 2.0, January 2004' LICENSE ||
	{ echo "LICENSE is not the Apache License 2.0"; exit 1; }
grep -q '^License: Apache-2.0$' debian/copyright || { echo "debian/copyright does not name Apache-2.0"; exit 1; }
grep -q 'none-yet' debian/copyright && { echo "debian/copyright still says none-yet"; exit 1; }
missing=0 n=0
if git rev-parse --git-dir >/dev/null 2>&1; then
	list=$(git ls-files --cached --others --exclude-standard)
else
	list=$(find . -type f -not -path './build*' | sed 's|^\./||')
fi
while IFS= read -r f; do
	case $f in
	*.c|*.h|*.cu|*.cc|*.sh|*.py|*.inc|*.mk|*.service|*.sysusers|*.[158]|Makefile|\
	scripts/chirp-plot|completion/chirpctl|debian/rules|.ci/run) ;;
	*) continue;;
	esac
	case $f in tests/fuzz/corpus/*|tests/configs/*) continue;; esac
	[ -f "$f" ] || continue
	n=$((n + 1))
	if ! head -n 2 "$f" | grep -q 'SPDX-License-Identifier: Apache-2.0'; then
		echo "no SPDX line: $f"; missing=$((missing + 1))
	fi
done <<<"$list"
[ "$missing" -eq 0 ] || { echo "$missing of $n source files lack the SPDX line"; exit 1; }
[ "$n" -gt 100 ] || { echo "only $n source files found: the listing is wrong"; exit 1; }
echo "license: LICENSE, debian/copyright and $n source files say Apache-2.0"
