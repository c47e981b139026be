#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# manpages.sh — every man page renders without a single groff/man warning,
# has the standard sections, refers only to pages that exist; chirpd.conf(5)
# lists every key of conf/chirpd.conf under its section (the commented
# [mode NAME] section's too) and is up to date
# with it (scripts/gen-conf-man.sh --check); each program's long options in
# its --help output appear in its page and the page's options in --help;
# chirpd(8)'s ENVIRONMENT lists exactly the variables chirpd reads.
# Exit 0 pass, 77 skipped (no groff), else fail.
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD=${CHIRP_BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$(pwd)/$BUILD;; esac

errors=0
fail() { echo "FAIL: $*"; errors=$((errors + 1)); }
command -v groff >/dev/null || { echo "skipped: groff is not installed (apt-get install groff-base)"; exit 77; }

T=$(mktemp -d "${TMPDIR:-/tmp}/chirp-man.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT

pages="chirpd.8 chirpd.conf.5 chirpctl.1 chirp-feed.1 chirp-tap.1 chirp-plot.1 chirp-recv.1 chirp-send.1 chirp-sub.1 chirpd-calibrate-host.8"
export LC_ALL=C.UTF-8 MANWIDTH=80
for p in $pages; do
	f=doc/man/$p
	[ -f "$f" ] || { fail "$f is missing"; continue; }
	# groff: -ww all warnings, -k preconv (UTF-8 input), -z no output.
	groff -k -man -Tutf8 -ww -z "$f" >"$T/groff.log" 2>&1 ||
		fail "$f: groff exited non-zero"
	[ -s "$T/groff.log" ] && { sed 's/^/    /' "$T/groff.log"; fail "$f: groff warnings"; }
	if command -v man >/dev/null; then
		man --warnings -l "$f" >"$T/$p.txt" 2>"$T/man.log" || fail "$f: man -l exited non-zero"
		[ -s "$T/man.log" ] && { sed 's/^/    /' "$T/man.log"; fail "$f: man --warnings output"; }
	else
		groff -k -man -Tutf8 "$f" 2>/dev/null | sed 's/.\x08//g' >"$T/$p.txt"
	fi
	# .TH names the page and its section.
	name=${p%.*} sect=${p##*.}
	grep -q "^\.TH $(echo "$name" | tr 'a-z' 'A-Z') $sect " "$f" || fail "$f: .TH does not say ${name^^} $sect"
	for s in NAME SYNOPSIS DESCRIPTION "SEE ALSO"; do
		grep -q "^$s\$" "$T/$p.txt" || fail "$f: no $s section"
	done
	# Cross references to our own pages must point at pages we ship.
	for ref in $(grep -o 'chirp[a-z.-]*\\\?-\?[a-z.]* *([158])' "$f" | tr -d ' \\' | sort -u); do
		target=$(echo "$ref" | sed 's/(\([158]\))$/.\1/')
		[ -f "doc/man/$target" ] || fail "$f refers to $ref, which is not in doc/man"
	done
done

# chirpd.conf(5) against conf/chirpd.conf.
if [ -f conf/chirpd.conf ] && [ -f doc/man/chirpd.conf.5 ]; then
	scripts/gen-conf-man.sh --check || fail "doc/man/chirpd.conf.5 is out of date"
	sect= nkeys=0 inmode=0
	while IFS= read -r l; do
		# The commented [mode NAME] block documents the keys of its own
		# ("#id =") up to its example ("#[mode short]").
		case $l in
		'#[mode NAME]') sect='[mode NAME]' inmode=1; continue;;
		'#['*) inmode=0; continue;;
		\#[a-z]*=*) [ $inmode = 1 ] || continue; l=${l#\#};;
		esac
		case $l in
		\[*\]) sect=$l inmode=0;;
		[a-z]*=*)
			key=${l%%=*}; key=${key% }
			nkeys=$((nkeys + 1))
			# The key must appear, as "key =", after the section's heading
			# and before the next one in the rendered page.
			awk -v s="   $sect" -v k="$key" '
				index($0, s) == 1 && length($0) == length(s) { in_s = 1; next }
				/^   \[/ { in_s = 0 }
				in_s && index($0, "       " k " = ") == 1 { found = 1 }
				END { exit !found }' "$T/chirpd.conf.5.txt" ||
				fail "chirpd.conf(5) does not document $sect $key";;
		esac
	done <conf/chirpd.conf
	echo "chirpd.conf(5): checked $nkeys keys"
	[ "$nkeys" -gt 10 ] || fail "found only $nkeys keys in conf/chirpd.conf"
else
	echo "note: conf/chirpd.conf missing; key reference not checked"
fi

# chirpd(8)'s ENVIRONMENT names exactly the variables chirpd's code reads:
# getenv("NAME") and every "CHIRP_..." string in src/ and src/ring/ (the
# tools' variables belong in their own pages), without the test hooks of
# fault-injection builds (*_TEST_*), plus NOTIFY_SOCKET and WATCHDOG_USEC,
# which libsystemd reads for it. A tuning variable left in the code or a
# variable documented but no longer read fails here.
code_src=$(ls src/*.c src/cuda/*.cu src/ring/*.c 2>/dev/null)
code_env=$({ grep -ohE 'getenv\("[A-Za-z_][A-Za-z0-9_]*"' $code_src |
		sed 's/getenv("//; s/"$//'
	     grep -ohE '"CHIRP_[A-Z0-9_]+' $code_src | tr -d '"'
	     printf 'NOTIFY_SOCKET\nWATCHDOG_USEC\n'; } | grep -v '_TEST_' | sort -u)
page_env=$(sed -n '/^\.SH ENVIRONMENT/,/^\.SH /p' doc/man/chirpd.8 | awk '/^\.TP/ { getline; print }' |
	grep -oE '[A-Z][A-Z0-9_]{3,}' | sort -u)
undocumented=$(comm -23 <(echo "$code_env") <(echo "$page_env") | tr '\n' ' ')
stale=$(comm -13 <(echo "$code_env") <(echo "$page_env") | tr '\n' ' ')
[ -z "$undocumented" ] || fail "chirpd reads environment variables that chirpd(8) ENVIRONMENT does not list: $undocumented(make them chirpd.conf keys, or document them)"
[ -z "$stale" ] || fail "chirpd(8) ENVIRONMENT lists variables chirpd does not read: $stale"
echo "chirpd(8) ENVIRONMENT: $(echo $page_env)"
# The test hooks exist in test builds only: never in the chirpd that ships.
if [ -x "$BUILD/bin/chirpd" ]; then
	hooks=$(grep -aoE 'CHIRP_[A-Z0-9_]*_TEST_[A-Z0-9_]*' "$BUILD/bin/chirpd" | sort -u | tr '\n' ' ')
	[ -z "$hooks" ] || fail "$BUILD/bin/chirpd holds test hooks: $hooks"
fi

# Options: --help against the page. --help's options are the -x/--xyz words
# of its usage lines ("usage: PROG ..." and the lines continuing it) and of
# the lines that start with an option; the page's are its bold "-x"/"--xyz"
# words (SYNOPSIS, OPTIONS).
opts_help() {
	"$1" --help 2>&1 | awk -v prog="$(basename "$1")" '
		/^usage:/ { print; next }
		$1 == prog { print; next }
		/^[ \t]*-/ { print }' |
	grep -oE '(^|[][ (|,])--?[a-zA-Z][a-zA-Z0-9-]*' | grep -oE -- '--?[a-zA-Z][a-zA-Z0-9-]*' | sort -u
}
opts_page() { grep -oE '^\.(B|BR|BI|RB) .*' "$1" | sed 's/\\-/-/g' | grep -oE '(^|[ "])--?[a-zA-Z][a-zA-Z0-9-]*' | grep -oE -- '--?[a-zA-Z][a-zA-Z0-9-]*' | sort -u; }
checked=0
for b in chirpd chirpctl chirp-feed chirp-tap chirp-recv chirp-send chirp-sub; do
	page=$(ls doc/man/$b.[18] 2>/dev/null | head -1)
	if [ ! -x "$BUILD/bin/$b" ]; then
		[ -f "src/$b.c" ] || [ -f "src/tools/$b.c" ] && fail "$BUILD/bin/$b is not built"
		echo "note: $b not written yet; its options not checked"
		continue
	fi
	opts_help "$BUILD/bin/$b" >"$T/help.opts"
	opts_page "$page" >"$T/page.opts"
	[ -s "$T/help.opts" ] || { fail "$b --help lists no options"; continue; }
	missing=$(comm -23 "$T/help.opts" "$T/page.opts" | tr '\n' ' ')
	extra=$(comm -13 "$T/help.opts" "$T/page.opts" | tr '\n' ' ')
	[ -z "$missing" ] || fail "$page lacks options that $b --help shows: $missing"
	[ -z "$extra" ] || fail "$page shows options that $b --help does not: $extra"
	checked=$((checked + 1))
done
echo "options checked for $checked programs"

[ $errors -eq 0 ] || { echo "$errors problems"; exit 1; }
echo "PASS"
