#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fault_config_corpus.sh — configs edited in a hurry: every broken file in
# tests/configs/bad/ (the config corpus, at least 30) is rejected by
# `chirpd --check -c FILE` with a non-zero exit and, for each of its
# "# expect: LINE: message" header lines, an error "FILE:LINE: message";
# every file in tests/configs/good/ passes with exit 0. chirpd must never
# crash on one (under ASan+UBSan in CI).
. "$(dirname "$0")/lib.sh"
e2e_init config_corpus

shopt -s nullglob
bad=(tests/configs/bad/*.conf)
good=(tests/configs/good/*.conf)
[ ${#bad[@]} -gt 0 ] || e2e_skip "no tests/configs/bad corpus yet"
[ ${#bad[@]} -ge 30 ] || e2e_fail "only ${#bad[@]} broken configs in tests/configs/bad (want >= 30)"

failures=0 checked=0
for f in "${bad[@]}"; do
	out=$(timeout 20 "$CHIRPD" --check -c "$f" 2>&1)
	rc=$?
	if [ $rc -eq 0 ]; then
		echo "ACCEPTED: $f"; failures=$((failures + 1)); continue
	fi
	if [ $rc -ge 124 ]; then
		echo "CRASH/TIMEOUT (exit $rc): $f"; echo "$out" | tail -5; failures=$((failures + 1)); continue
	fi
	n=0
	while IFS= read -r exp; do
		n=$((n + 1))
		if ! grep -qF -- "$f:$exp" <<<"$out"; then
			echo "MISSING in $f: \"$f:$exp\"; chirpd --check said:"
			echo "$out" | head -5 | sed 's/^/    /'
			failures=$((failures + 1))
		fi
	done < <(sed -n 's/^# expect: //p' "$f")
	[ $n -gt 0 ] || { echo "NO '# expect:' line in $f"; failures=$((failures + 1)); }
	checked=$((checked + 1))
done
for f in "${good[@]}"; do
	out=$(timeout 20 "$CHIRPD" --check -c "$f" 2>&1) ||
		{ echo "REJECTED good config $f:"; echo "$out" | head -5; failures=$((failures + 1)); }
done
e2e_log "${#bad[@]} broken configs checked ($checked rejected with exit != 0), ${#good[@]} good ones"
[ $failures -eq 0 ] || e2e_fail "$failures config corpus failures"
e2e_pass
