#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# gen-conf-man.sh [--check] — regenerate the key reference in
# doc/man/chirpd.conf.5 (between the BEGIN KEYS / END KEYS markers) from
# conf/chirpd.conf, which src/config_table.c's table generates. --check changes
# nothing and exits 1 if the page is out of date (tests/e2e/manpages.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
conf=conf/chirpd.conf page=doc/man/chirpd.conf.5

gen() {
	awk '
	function esc(s) { gsub(/\\/, "\\e", s); return s }
	function line(s) { s = esc(s); if (s ~ /^[.\047]/) s = "\\&" s; print s }
	function para() { if (n) { print ".PP"; for (i = 1; i <= n; i++) line(desc[i]) } n = 0 }
	# The commented [mode NAME] block: a section of its own, whose
	# paragraphs ("#" lines between them), "#key =" entries and example
	# ("#[mode ...]" to the end of the block) the page shows uncommented.
	/^#\[mode NAME\]$/ { sec = "[mode NAME]"; print ".SS \\fB" sec "\\fR"; mode = 1; ex = 0; n = 0; next }
	mode && /^\[.*\]$/ { para(); if (ex) print ".EE"; mode = 0; ex = 0 }
	mode && ex && /^#$/ { print ".sp"; next }
	mode && ex && /^#/ { line(substr($0, 2)); next }
	mode && /^#$/ { para(); next }
	mode && /^#\[/ { para(); print ".PP"; print ".EX"; ex = 1; line(substr($0, 2)); next }
	mode && /^#[a-z_0-9]+ *=/ {
		k = substr($0, 2); sub(/ *=.*/, "", k); v = $0; sub(/^[^=]*= */, "", v)
		print ".TP"
		if (v == "") print "\\fB" k "\\fR = (" (meta ~ /required/ ? "required" : "empty") ")"
		else print "\\fB" k "\\fR = \\fI" esc(v) "\\fR"
		for (i = 1; i <= n; i++) line(desc[i])
		split(meta, m, /; */)
		print ".br"
		line("Values: " m[1] ". Changes take effect on " (m[2] == "reload" ? "reload" : "restart") ".")
		n = 0; meta = ""; next
	}
	/^\[.*\]$/ { sec = $0; print ".SS \\fB" sec "\\fR"; n = 0; next }
	sec == "" { next }
	/^# \(.*\)$/ { meta = substr($0, 4, length($0) - 4); next }
	/^#/ { t = substr($0, 2); sub(/^ /, "", t); desc[++n] = t; next }
	/^[a-z_0-9]+ *=/ {
		k = $0; sub(/ *=.*/, "", k); v = $0; sub(/^[^=]*= */, "", v)
		print ".TP"
		if (v == "") print "\\fB" k "\\fR = (empty)"
		else print "\\fB" k "\\fR = \\fI" esc(v) "\\fR"
		for (i = 1; i <= n; i++) line(desc[i])
		split(meta, m, /; */)
		print ".br"
		line("Values: " m[1] ". Changes take effect on " (m[2] == "reload" ? "reload" : "restart") ".")
		n = 0; meta = ""; next
	}
	/^$/ { next }
	{ printf "gen-conf-man: %s:%d: cannot parse: %s\n", FILENAME, FNR, $0 > "/dev/stderr"; bad = 1 }
	END { if (ex) print ".EE"; exit bad }
	' "$conf"
}

keys=$(mktemp) new=$(mktemp)
trap 'rm -f "$keys" "$new"' EXIT
gen >"$keys"
grep -q '^\.\\" BEGIN KEYS' "$page" && grep -q '^\.\\" END KEYS' "$page" ||
	{ echo "gen-conf-man: $page has no BEGIN KEYS / END KEYS markers" >&2; exit 2; }
awk -v keys="$keys" '
	/^\.\\" BEGIN KEYS/ { print; while ((getline l < keys) > 0) print l; skip = 1; next }
	/^\.\\" END KEYS/ { skip = 0 }
	!skip { print }
' "$page" >"$new"
if [ "${1:-}" = "--check" ]; then
	if ! cmp -s "$page" "$new"; then
		echo "gen-conf-man: $page is out of date with $conf; run scripts/gen-conf-man.sh" >&2
		diff -u "$page" "$new" | head -40 >&2
		exit 1
	fi
	exit 0
fi
cmp -s "$page" "$new" || cat "$new" >"$page"
