#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# chirpctl_cli.sh — chirpctl's command-line conventions against a running
# chirpd: options before or after the command give the same request
# (stats --json = --json stats, -s after the command), an unknown option is
# a usage error (2) that never reaches the daemon, a refusal names the
# command once, "--" passes a dash word to the daemon, watch takes its options on either side; --help shows both
# orders; status shows the radar modes as a table and trace a mode column;
# the bash completion (completion/chirpctl) offers the commands
# --help lists, the options wherever they stand and log-level's levels.
. "$(dirname "$0")/lib.sh"
e2e_init chirpctl_cli
[ -x "$PY" ] || e2e_skip "$PY not found"
command -v bash >/dev/null || e2e_skip "no bash"
SRC=$(cd "$(dirname "$0")/../.." && pwd)

e2e_config
e2e_start_chirpd

# is_ok_json FILE CMD — FILE is one JSON object {"ok": true, ...} of CMD's shape.
is_ok_json() {
	"$PY" - "$1" "$2" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["ok"] is True, r
want = {"stats": "cpis_in", "status": "state", "ping": "ok"}[sys.argv[2]]
assert want in r, (sys.argv[2], sorted(r))
PYEOF
}

# 1. Both orders, same reply shape; the socket option after the command too.
"$CHIRPCTL" -s "$SOCK" --json stats >"$T/a.json" || e2e_fail "--json stats"
"$CHIRPCTL" -s "$SOCK" stats --json >"$T/b.json" || e2e_fail "stats --json: $(cat "$T/b.json")"
"$CHIRPCTL" stats --json -s "$SOCK" >"$T/c.json" || e2e_fail "stats --json -s SOCK: $(cat "$T/c.json")"
"$CHIRPCTL" status -j --socket="$SOCK" --timeout 3 >"$T/d.json" || e2e_fail "status -j --socket=SOCK"
for f in a b c; do is_ok_json "$T/$f.json" stats || e2e_fail "$f.json: $(cat "$T/$f.json")"; done
is_ok_json "$T/d.json" status || e2e_fail "d.json: $(cat "$T/d.json")"
# Without --json the reply is printed for people, not as JSON.
"$CHIRPCTL" stats -s "$SOCK" >"$T/human.txt" || e2e_fail "stats -s SOCK"
grep -q '^{' "$T/human.txt" && e2e_fail "stats -s SOCK printed JSON"
grep -q 'cpis_in' "$T/human.txt" || e2e_fail "human stats: $(head -5 "$T/human.txt")"
e2e_log "options before and after the command agree"
# status for people: the modes as a table (the [waveform] section alone is
# mode 0, "default", L = 4 us at 25 MHz), not as a list of objects; trace
# has a mode column.
"$CHIRPCTL" -s "$SOCK" status >"$T/status.txt" || e2e_fail "status"
grep -qE '^ +id +name +type +L +cpis$' "$T/status.txt" || e2e_fail "status: no modes table: $(cat "$T/status.txt")"
grep -qE '^ +0  default +lfm +100 +[0-9]+$' "$T/status.txt" || e2e_fail "status: mode 0: $(cat "$T/status.txt")"
grep -qE '^ +\?  \(unknown mode\) ' "$T/status.txt" || e2e_fail "status: no unknown-mode line"
grep -q '^ *- *$' "$T/status.txt" && e2e_fail "status printed modes as a list: $(cat "$T/status.txt")"
"$CHIRPCTL" -s "$SOCK" trace 1 >"$T/trace.txt" || e2e_fail "trace 1"
grep -qE '^ +seq +mode +peek ' "$T/trace.txt" || e2e_fail "trace: no mode column: $(cat "$T/trace.txt")"

# 2. Errors: an unknown option is usage (2) with getopt's sentence; an extra
#    argument still reaches the daemon, which refuses it (1).
"$CHIRPCTL" -s "$SOCK" stats --jsno >"$T/out" 2>"$T/err"; rc=$?
[ $rc -eq 2 ] || e2e_fail "stats --jsno exited $rc, want 2"
grep -q "unrecognized option '--jsno'" "$T/err" || e2e_fail "stats --jsno said: $(cat "$T/err")"
"$CHIRPCTL" -s "$SOCK" stats extra --json >"$T/out" 2>&1; rc=$?
[ $rc -eq 1 ] || e2e_fail "stats extra --json exited $rc, want 1 (daemon refusal): $(cat "$T/out")"
grep -q '"ok": *false' "$T/out" || e2e_fail "stats extra --json: $(cat "$T/out")"
grep -q "takes no arguments" "$T/out" || e2e_fail "daemon's refusal: $(cat "$T/out")"
# "--" makes "-x" an argument, which the daemon then judges (a bad level).
"$CHIRPCTL" -s "$SOCK" --json log-level -- -x >"$T/out" 2>&1; rc=$?
[ $rc -eq 1 ] || e2e_fail "log-level -- -x exited $rc, want 1: $(cat "$T/out")"
grep -q -- '-x' "$T/out" || e2e_fail "log-level -- -x: the daemon did not see -x: $(cat "$T/out")"
"$CHIRPCTL" log-level debug -s "$SOCK" >/dev/null || e2e_fail "log-level debug -s SOCK"
"$CHIRPCTL" log-level info -s "$SOCK" >/dev/null || e2e_fail "log-level info -s SOCK"
# A refusal is named once: "chirpctl: trace: N must be ...", even where the
# daemon's reason names the command itself.
"$CHIRPCTL" -s "$SOCK" trace 0 >"$T/out" 2>"$T/err"; rc=$?
[ $rc -eq 1 ] || e2e_fail "trace 0 exited $rc, want 1: $(cat "$T/err")"
grep -q '^chirpctl: trace: N must be a number of CPIs 1\.\.' "$T/err" || e2e_fail "trace 0 said: $(cat "$T/err")"
grep -q 'trace: trace:' "$T/err" && e2e_fail "trace 0 names the command twice: $(cat "$T/err")"
"$CHIRPCTL" -s "$SOCK" stats extra 2>"$T/err" >/dev/null
grep -qx "chirpctl: stats: 'stats' takes no arguments" "$T/err" || e2e_fail "stats extra said: $(cat "$T/err")"
# No command at all is usage.
"$CHIRPCTL" -s "$SOCK" --json >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || e2e_fail "no command exited $rc, want 2"
e2e_log "errors: usage 2, daemon refusals 1"

# 3. watch with its options on either side; an extra word is refused.
"$CHIRPCTL" -s "$SOCK" watch --count 1 --interval 0.1 >"$T/w1" 2>&1 || e2e_fail "watch --count 1: $(cat "$T/w1")"
"$CHIRPCTL" --count 1 watch -s "$SOCK" >"$T/w2" 2>&1 || e2e_fail "--count 1 watch -s: $(cat "$T/w2")"
grep -q 'running' "$T/w1" || e2e_fail "watch output: $(cat "$T/w1")"
"$CHIRPCTL" -s "$SOCK" watch now >/dev/null 2>"$T/err"; rc=$?
[ $rc -eq 2 ] || e2e_fail "watch now exited $rc, want 2"
grep -q "watch: unexpected 'now'" "$T/err" || e2e_fail "watch now said: $(cat "$T/err")"

# 4. --help shows both orders, and is the same wherever --help stands.
"$CHIRPCTL" --help >"$T/help" || e2e_fail "--help"
grep -q 'chirpctl \[-s SOCKET\] \[--json\] \[--timeout SEC\] COMMAND' "$T/help" || e2e_fail "--help lacks options-first: $(cat "$T/help")"
grep -q 'chirpctl COMMAND \[ARGS...\] \[-s SOCKET\] \[--json\]' "$T/help" || e2e_fail "--help lacks command-first"
"$CHIRPCTL" stats --help | cmp -s - "$T/help" || e2e_fail "stats --help differs from --help"
e2e_log "--help shows both orders"

# 5. Bash completion, driven as bash-completion would: COMP_WORDS/COMP_CWORD,
#    then the function complete -p names. Without bash-completion's helpers
#    (plain bash) and, where installed, with them.
comp() {   # comp WORDS... — the candidates for the last word (may be empty)
	bash --norc --noprofile -c '
		[ "$USE_BC" = 1 ] && . /usr/share/bash-completion/bash_completion
		. "$1"; shift
		f=$(complete -p chirpctl | sed -n "s/.*-F \([^ ]*\) chirpctl$/\1/p")
		[ -n "$f" ] || { echo "no complete -F for chirpctl" >&2; exit 1; }
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
		COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
		"$f" chirpctl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
		[ ${#COMPREPLY[@]} -eq 0 ] || printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " "' comp "$SRC/completion/chirpctl" "$@"
}
modes=0
[ -f /usr/share/bash-completion/bash_completion ] && modes="0 1"
# The commands --help lists: first column of its "Commands" block.
help_cmds=$(sed -n '/^Commands/,/^$/{/^  [a-z]/p}' "$T/help" | sed 's/^  //; s/   .*//; s/ LEVEL//; s/ \[N\]//; s/ CPS|clear//' |
	tr ',' '\n' | tr -d ' ' | grep -v '^$' | sort | tr '\n' ' ')
[ "$(echo $help_cmds | wc -w)" -ge 12 ] || e2e_fail "--help lists only '$help_cmds'"
for USE_BC in $modes; do
	export USE_BC
	got=$(comp chirpctl '') || e2e_fail "completion failed (bash-completion $USE_BC)"
	[ "$got" = "$help_cmds" ] || e2e_fail "completing a command: '$got', --help lists '$help_cmds'"
	[ "$(comp chirpctl st)" = "stats status " ] || e2e_fail "chirpctl st<TAB>: '$(comp chirpctl st)'"
	[ "$(comp chirpctl stats --j)" = "--json " ] || e2e_fail "stats --j<TAB>: '$(comp chirpctl stats --j)'"
	[ "$(comp chirpctl --j)" = "--json " ] || e2e_fail "--j<TAB>: '$(comp chirpctl --j)'"
	[ "$(comp chirpctl -s /x st)" = "stats status " ] || e2e_fail "-s /x st<TAB>: '$(comp chirpctl -s /x st)'"
	[ "$(comp chirpctl --json log-level d)" = "debug " ] || e2e_fail "log-level d<TAB>: '$(comp chirpctl --json log-level d)'"
	[ -z "$(comp chirpctl stats '')" ] || e2e_fail "stats <TAB> offered '$(comp chirpctl stats '')'"
	[ -z "$(comp chirpctl log-level debug '')" ] || e2e_fail "log-level debug <TAB> offered more"
	(cd "$T" && [ "$(comp chirpctl -s chirpd.c)" = "chirpd.conf " ]) || e2e_fail "-s <TAB> does not complete files"
	e2e_log "completion ok (bash-completion loaded: $USE_BC)"
done

e2e_stop_chirpd || e2e_fail "chirpd exited $?"
e2e_pass
