#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# metrics_scrape.sh — the Prometheus endpoint ([metrics] listen) scraped
# with curl while chirpd processes CPIs: every sample belongs to a family
# declared with # HELP and # TYPE (counter, gauge, summary), names follow
# the conventions (counters end in _total, chirpd_ prefix), the series an
# operator alerts on are present with sane values, and the counters agree
# with `chirpctl stats`.
. "$(dirname "$0")/lib.sh"
e2e_init metrics
e2e_need chirp-feed
command -v curl >/dev/null || e2e_skip "curl not installed"
[ -x "$PY" ] || e2e_skip "$PY not found"

# A port the kernel just handed out and released (free unless another
# process grabs it in the next milliseconds).
port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])') ||
	e2e_fail "no free local port"
e2e_config metrics.listen=127.0.0.1:$port
e2e_start_chirpd

"$CHIRP_FEED" -c "$CONF" --target 100,-10 --snr-db 20 -n 12 --block -q 2>"$T/feed.log" ||
	e2e_fail "chirp-feed: $(cat "$T/feed.log")"
e2e_wait $((10 * E2E_SLOW)) e2e_stat_ge cpis_in 12 || e2e_fail "chirpd took no CPIs"

curl -sS -f -D "$T/headers" "http://127.0.0.1:$port/metrics" >"$T/metrics.txt" ||
	e2e_fail "curl could not scrape http://127.0.0.1:$port/metrics"
e2e_json stats >"$T/stats.json" || e2e_fail "chirpctl stats"

"$PY" - "$T/metrics.txt" "$T/headers" "$T/stats.json" <<'PYEOF' || e2e_fail "metrics exposition wrong"
import json, re, sys
text = open(sys.argv[1]).read()
headers = open(sys.argv[2]).read().lower()
stats = json.load(open(sys.argv[3]))
assert "content-type: text/plain; version=0.0.4" in headers, headers
types, helps, samples = {}, set(), []
name_re = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
for line in text.splitlines():
    if not line:
        continue
    if line.startswith("# HELP "):
        helps.add(line.split()[2])
    elif line.startswith("# TYPE "):
        _, _, name, typ = line.split()
        assert typ in ("counter", "gauge", "summary", "histogram", "untyped"), line
        assert name not in types, "family declared twice: " + name
        types[name] = typ
    elif line.startswith("#"):
        continue
    else:
        m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$", line)
        assert m, "malformed sample line: %r" % line
        float(m.group(3))          # a number (NaN/+Inf are valid floats)
        samples.append((m.group(1), m.group(2) or "", float(m.group(3))))
assert samples, "no samples"
def family(n):
    if n in types:
        return n
    for suf in ("_sum", "_count", "_bucket"):
        if n.endswith(suf) and n[: -len(suf)] in types:
            return n[: -len(suf)]
    raise AssertionError("sample %s has no # TYPE" % n)
for n, labels, v in samples:
    f = family(n)
    assert f in helps, "family %s has no # HELP" % f
    assert n.startswith("chirpd_"), "not in the chirpd_ namespace: " + n
    if types[f] == "counter":
        assert f.endswith("_total"), "counter without _total: " + f
        assert v >= 0, (n, v)
    if types[f] == "summary" and n == f:
        assert 'quantile="' in labels, "summary sample without quantile: " + n + labels
vals = {n + l: v for n, l, v in samples}
need = {"chirpd_cpis_in_total": "counter", "chirpd_cpis_out_total": "counter",
        "chirpd_input_overruns_total": "counter", "chirpd_sequence_gaps_total": "counter",
        "chirpd_output_drops_total": "counter", "chirpd_cpi_latency_seconds": "summary"}
for n, t in need.items():
    assert types.get(n) == t, "%s: want %s, got %s" % (n, t, types.get(n))
assert vals["chirpd_cpis_in_total"] >= 12, vals["chirpd_cpis_in_total"]
# counters scraped before `stats` can only be <= the later stats values
for k in ("cpis_in", "cpis_out", "output_drops", "input_overruns", "sequence_gaps"):
    assert vals["chirpd_%s_total" % k] <= stats[k], (k, vals["chirpd_%s_total" % k], stats[k])
assert vals["chirpd_cpi_latency_seconds_count"] >= 1
# one radar mode ([waveform]: id 0, "default"): every CPI is its
assert types.get("chirpd_mode_cpis_total") == "counter", types.get("chirpd_mode_cpis_total")
modes = [(l, v) for n, l, v in samples if n == "chirpd_mode_cpis_total"]
assert [l for l, _ in modes] == ['{mode="0",name="default"}'], modes
assert modes[0][1] == vals["chirpd_cpis_in_total"], (modes, vals["chirpd_cpis_in_total"])
assert vals["chirpd_unknown_mode_cpis_total"] == 0, vals["chirpd_unknown_mode_cpis_total"]
print("metrics: %d families, %d samples, all typed" % (len(types), len(samples)))
PYEOF
e2e_stop_chirpd || e2e_fail "chirpd exited $? on SIGTERM"
e2e_pass
