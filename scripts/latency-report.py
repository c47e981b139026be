#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""latency-report.py — the table, the criteria and the PNG of a
scripts/bench-latency.sh run, from the files it left in DIR.

    latency-report.py DIR          markdown table + PASS/FAIL lines on stdout,
                                   DIR/report.md and DIR/results.tsv (stdlib only)
    latency-report.py --plot DIR   DIR/latency.png: the latency distribution of
                                   every load, chirpd's and the lossless
                                   floor's (CUDA), every window together
                                   (CCDF, log axes; needs matplotlib)

The definitions (capacity, lost, host noise, criteria) are in the header of
scripts/bench-latency.sh and repeated under the table.
"""
import functools
import json
import math
import os
import re
import sys


def kv(line):
    return {k: v for k, v in re.findall(r"(\w+)=(\S+)", line)}


def first_line(path, prefix):
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(prefix):
                    return kv(line)
    except OSError:
        pass
    return None


def stat(path, key):
    try:
        with open(path) as f:
            v = json.load(f).get(key)
        return int(v) if v is not None else None
    except (OSError, ValueError):
        return None


def feed_late(path):
    try:
        with open(path) as f:
            m = re.search(r"pacing .*?: (\d+) late ticks", f.read())
        return int(m.group(1)) if m else None
    except OSError:
        return None


def ms(us):
    return "%.3f" % (float(us) / 1e3)


def nearest_rank(v, q):
    """Nearest-rank percentile q (0 < q <= 1) of the sorted list v, as the
    probe computes its own (p99.9 of 10 000 values is the 9 990th)."""
    i = int(math.ceil(q * len(v)))
    return v[min(len(v), max(i, 1)) - 1]


@functools.lru_cache(maxsize=None)
def read_trace(d, name):
    """The records of trace-NAME.json, or None when there is none. Parsed
    once per report (a trace is ~13 MB of JSON at 80 %); the recorder, own
    latency and stage tables all read it, none changes it."""
    try:
        with open(os.path.join(d, "trace-%s.json" % name)) as f:
            cpis = json.load(f).get("cpis")
    except (OSError, ValueError, AttributeError):
        return None
    return cpis if isinstance(cpis, list) else None


def load(d):
    """meta, chirpd rows (capacity first, then every load window), floor
    rows (CUDA), the host's noise and sleep lines. cases.tsv: name, load %,
    rate, who (chirpd | floor), window number."""
    meta = {}
    with open(os.path.join(d, "meta.tsv")) as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition("\t")
            meta[k] = v
    rows, floors = [], []
    with open(os.path.join(d, "cases.tsv")) as f:
        for line in f:
            x = line.rstrip("\n").split("\t")
            if len(x) != 5:
                raise SystemExit("%s: want 5 tab-separated fields per line, got %r" % (
                    os.path.join(d, "cases.tsv"), line))
            name, pct, rate, who, win = x
            label = "capacity" if name == "capacity" else "%s %% #%s" % (pct, win)
            if who == "floor":
                c = first_line(os.path.join(d, "floor-%s.txt" % name), "copy ")
                if not c:
                    raise SystemExit("%s: no 'copy ' line" % os.path.join(d, "floor-%s.txt" % name))
                floors.append(dict(name=name, pct=pct, rate=rate, win=win, label=label, copy=c))
                continue
            p = first_line(os.path.join(d, "probe-%s.txt" % name), "probe ")
            if not p:
                raise SystemExit("%s: no 'probe ' line" % os.path.join(d, "probe-%s.txt" % name))
            s0, s1 = (os.path.join(d, "stats%d-%s.json" % (i, name)) for i in (0, 1))
            delta = {}
            for k in ("input_overruns", "output_drops", "data_stalls", "detection_lists",
                      "detections", "detection_overflows"):
                a, b = stat(s0, k), stat(s1, k)
                delta[k] = b - a if a is not None and b is not None else None
            rows.append(dict(name=name, pct=pct, rate=rate, win=win, label=label, probe=p,
                             d=delta, late=feed_late(os.path.join(d, "feed-%s.log" % name))))
    noise = first_line(os.path.join(d, "noise.txt"), "noise ")
    sleep = first_line(os.path.join(d, "noise.txt"), "sleep ")
    return meta, rows, floors, noise, sleep


def raw_latencies(d, name):
    """The raw latencies (µs) of lat-NAME.txt, sorted."""
    path = os.path.join(d, "lat-%s.txt" % name)
    try:
        with open(path) as f:
            return sorted(float(x) for x in f if x.strip())
    except OSError as e:
        raise SystemExit("%s: %s" % (path, e.strerror))
    except ValueError:
        raise SystemExit("%s: not one number per line" % path)


def pooled(d, names):
    """Nearest-rank p50/p90/p99/p99.9/max (µs) over every CPI of the named
    windows together; None when they hold none."""
    v = sorted(x for n in names for x in raw_latencies(d, n))
    if not v:
        return None
    return dict(n=len(v), p50=nearest_rank(v, 0.5), p90=nearest_rank(v, 0.9),
                p99=nearest_rank(v, 0.99), p999=nearest_rank(v, 0.999), max=v[-1])


def recorder(d, rows):
    """Per row, what chirpd's flight recorder saw (trace-NAME.json: the
    last records of the window): the backend's time per CPI (device),
    the longest run of CPIs whose device time exceeded 1.3 x the capacity
    row's median (the host slowing chirpd's compute down for a while, not
    queueing inside chirpd), the deepest input backlog (fill), the
    blocks the CPU backend recomputed for stalled workers, the share of
    CPIs on which one of its threads computed nothing (absent: late to the
    hand-off) and, for the CPU backend (one CPI at a time), how busy its
    compute was: the sum of the recorded CPIs' device times over the span
    of their input commits (busy: a load row's share of what the backend
    could do in its own window, whatever the host's speed then; the
    capacity row's is ~100 %). None when no trace was saved."""
    traces = {}
    for r in rows:
        cpis = read_trace(d, r["name"])
        if cpis is None:
            continue
        dev = sorted(c["device_us"] for c in cpis if c.get("device_us"))
        if not dev:
            continue
        traces[r["name"]] = (cpis, dev)
    if not traces:
        return None
    base = traces.get("capacity")
    ref = base[1][len(base[1]) // 2] if base else None
    out = []
    for r in rows:
        if r["name"] not in traces:
            continue
        cpis, dev = traces[r["name"]]
        pick = lambda q: dev[min(len(dev) - 1, int(q * (len(dev) - 1) + 0.5))]
        run = best = 0
        for c in cpis:
            if ref and c.get("device_us") and c["device_us"] > 1.3 * ref:
                run += 1
                best = max(best, run)
            else:
                run = 0
        # chunks: row chunks the CUDA backend cut the CPI into (newer
        # chirpd; absent or 0 on the CPU backend).
        ch = [c["chunks"] for c in cpis if isinstance(c.get("chunks"), int)]
        # absent: CPU threads that computed none of the CPI's blocks (newer
        # chirpd; always 0 on the CUDA backend, whose CPIs have chunks).
        ab = [c["absent"] for c in cpis if isinstance(c.get("absent"), int)]
        cuda = any(x > 0 for x in ch)
        t = [c["in_commit_mono_ns"] for c in cpis if isinstance(c.get("in_commit_mono_ns"), int)]
        span = (max(t) - min(t)) if len(t) > 1 else 0
        busy = (100.0 * sum(dev) * 1e3 / span if span > 0 and not cuda else None)
        out.append(dict(name=r["name"], pct=r["pct"], label=r["label"], n=len(cpis),
                        p50=pick(0.5), p99=pick(0.99),
                        max=dev[-1], run=best if ref else None, busy=busy,
                        fill=max(c.get("fill", 0) for c in cpis),
                        recomputed=sum(c.get("recomputed", 0) for c in cpis),
                        chunked=100.0 * sum(1 for x in ch if x > 1) / len(ch) if ch else None,
                        absent=(100.0 * sum(1 for x in ab if x > 0) / len(ab)
                                if ab and not cuda else None)))
    return out


def in_window(cpis, lo, hi):
    """The recorder's records whose first_sample lies in [lo, hi]: the
    CPIs of the probe's window (its first_fs/last_fs)."""
    return [c for c in cpis if isinstance(c.get("first_sample"), int)
            and lo <= c["first_sample"] <= hi]


def own_latency(d, rows):
    """Per load row, chirpd's own latency (latency_us: input commit ->
    output commit, from its flight recorder) over the CPIs of the probe's
    window: the records whose first_sample lies in [first_fs, last_fs] of
    the probe's summary. covered: "yes" when the trace reaches back to
    first_fs and forward to last_fs and holds at least the probe's n CPIs
    in between (every block the probe counted passed through chirpd's
    recorder; CPIs lost before chirpd are in neither); "partial" otherwise
    (percentiles then over the CPIs present); "no window" for a probe that
    predates first_fs/last_fs; "no trace" without a saved trace."""
    out = []
    for r in rows:
        if r["name"] == "capacity":
            continue
        x = dict(name=r["name"], pct=r["pct"], label=r["label"], n=0, lat=None,
                 covered="no trace")
        out.append(x)
        cpis = read_trace(d, r["name"])
        if cpis is None:
            continue
        p = r["probe"] or {}
        try:
            n, lo, hi = int(p["n"]), int(p["first_fs"]), int(p["last_fs"])
        except (KeyError, ValueError):
            x["covered"] = "no window"
            continue
        fs = [c["first_sample"] for c in cpis if isinstance(c.get("first_sample"), int)]
        win = in_window(cpis, lo, hi)
        lat = sorted(c["latency_us"] for c in win if isinstance(c.get("latency_us"), (int, float)))
        x["n"] = len(win)
        x["lat"] = lat or None
        x["covered"] = "yes" if (n > 0 and fs and min(fs) <= lo and max(fs) >= hi
                                 and len(win) >= n and len(lat) >= n) else "partial"
    return out


# Stages of one CPI inside chirpd, from its flight-recorder stamps (t_us:
# µs after the input commit): (label, stamp it starts at or None = the
# input commit, stamp it ends at). The input commit → peek span is "wake"
# when the CPI arrived with every earlier CPI already out of chirpd (the
# data thread was idle: polling, or asleep on the input ring's futex, so
# this is its reaction time) and "behind" otherwise (queued behind earlier
# CPIs still in chirpd).
STAGES = [("wake", None, "peek"),             # idle data thread: its reaction
          ("behind", None, "peek"),           # queued behind earlier CPIs
          ("set", "peek", "submit"),          # waiting for a free set/slot
          ("submit", "submit", "submitted"),  # host cost of pc_submit
          ("backend", "submitted", "output_done"),  # GPU/workers, to result
          ("deliver", "output_done", "out_commit")]  # reported -> committed


def stage_breakdown(d, rows):
    """Per load row, where chirpd's own latency went: each stage's p50,
    p99.9 and max over the CPIs of the probe's window (as own_latency
    picks them), and for the tail (the CPIs at or above chirpd's own
    p99.9) the stage that took the most of each one's latency, counted.
    None when no row has a trace with stamps."""
    out = []
    for r in rows:
        if r["name"] == "capacity":
            continue
        cpis = read_trace(d, r["name"])
        p = r["probe"] or {}
        if cpis is None or "first_fs" not in p:
            continue
        idle = idle_arrivals(cpis)
        win = [c for c in in_window(cpis, int(p["first_fs"]), int(p["last_fs"]))
               if isinstance(c.get("t_us"), dict)
               and isinstance(c.get("latency_us"), (int, float)) and c["latency_us"] > 0]
        if not win:
            continue
        per = {lab: [] for lab, _, _ in STAGES}
        spans = []
        nidle = 0
        for c in win:
            t = c["t_us"]
            sp = {}
            woke = idle.get(c.get("seq"))
            nidle += woke is True
            for lab, a, b in STAGES:
                if (lab == "wake" and woke is not True) or (lab == "behind" and woke is not False):
                    continue
                ta = 0.0 if a is None else t.get(a)
                tb = t.get(b)
                if isinstance(ta, (int, float)) and isinstance(tb, (int, float)):
                    sp[lab] = tb - ta
                    per[lab].append(tb - ta)
            spans.append((c["latency_us"], sp))
        lat = sorted(x[0] for x in spans)
        cut = nearest_rank(lat, 0.999)
        tail = [sp for l, sp in spans if l >= cut]
        most = {lab: 0 for lab, _, _ in STAGES}
        for sp in tail:
            if sp:
                most[max(sp, key=sp.get)] += 1
        st = {}
        for lab, v in per.items():
            v.sort()
            st[lab] = (nearest_rank(v, 0.5), nearest_rank(v, 0.999), v[-1]) if v else None
        # The data thread's stalls (the recorder's "stall", newer chirpd):
        # how many CPIs one delayed, the longest, and the tail's by kind.
        has = [c for c in win if "stall" in c]
        stalled = [c["stall"] for c in has if isinstance(c.get("stall"), dict)]
        tail_st = {}
        for c in win:
            if c["latency_us"] >= cut and isinstance(c.get("stall"), dict):
                k = c["stall"].get("kind", "?")
                tail_st[k] = tail_st.get(k, 0) + 1
        longest = max(stalled, key=lambda x: x.get("us", 0)) if stalled else None
        out.append(dict(pct=r["pct"], label=r["label"], n=len(win), cut=cut, ntail=len(tail), st=st, most=most,
                        nidle=nidle, stall=dict(known=bool(has), n=len(stalled), tail=tail_st,
                                                longest=longest,
                                                count=r["d"].get("data_stalls"))))
    return out or None


def idle_arrivals(cpis):
    """{seq: True if the CPI was committed after every earlier CPI had left
    chirpd (its last stamp, absolute CLOCK_MONOTONIC from in_commit_mono_ns
    + t_us), i.e. the data thread was idle when it came; False if earlier
    ones were still in chirpd; None (absent) when stamps are missing}."""
    out = {}
    busy_until = None
    for c in sorted((c for c in cpis if isinstance(c.get("seq"), int)), key=lambda c: c["seq"]):
        t0 = c.get("in_commit_mono_ns")
        t = c.get("t_us")
        if not isinstance(t0, (int, float)) or not isinstance(t, dict):
            busy_until = None
            continue
        if busy_until is not None:
            out[c["seq"]] = busy_until < t0
        ends = [v for v in (t.get("out_commit"), t.get("release")) if isinstance(v, (int, float))]
        if ends:
            e = t0 + max(ends) * 1e3
            busy_until = e if busy_until is None else max(busy_until, e)
    return out


# nvidia-smi's clocks_event_reasons bits (nvml.h, nvmlClocksEventReason*)
GPU_REASONS = [(0x1, "idle"), (0x2, "app clocks"), (0x4, "sw power cap"),
               (0x8, "hw slowdown"), (0x10, "sync boost"), (0x20, "sw thermal"),
               (0x40, "hw thermal"), (0x80, "hw power brake"), (0x100, "display clocks")]


def gpu_monitor(d):
    """One line summing up gpu-mon.csv (bench-latency.sh, CUDA), or None."""
    path = os.path.join(d, "gpu-mon.csv")
    try:
        with open(path) as f:
            lines = [l.strip() for l in f if l.strip()]
    except OSError:
        return None
    if len(lines) < 2:
        return None
    cols = lines[0].split(",")
    rows = [dict(zip(cols, [x.strip() for x in l.split(",")])) for l in lines[1:]]

    def nums(key):
        v = []
        for r in rows:
            try:
                v.append(float(r.get(key, "")))
            except ValueError:
                pass
        return v
    sm, mem, pw, tc = (nums(k) for k in ("clocks.sm", "clocks.mem", "power.draw", "temperature.gpu"))
    rk = next((k for k in cols if k.startswith("clocks_")), None)
    seen = {}
    if rk:
        for r in rows:
            try:
                bits = int(r.get(rk, ""), 16)
            except ValueError:
                continue
            for b, name in GPU_REASONS:
                if bits & b:
                    seen[name] = seen.get(name, 0) + 1
    links = sorted({"gen%s x%s" % (r.get("pcie.link.gen.current", "?"),
                                   r.get("pcie.link.width.current", "?")) for r in rows})
    parts = ["%d samples" % len(rows)]
    if sm:
        parts.append("SM clock %d–%d MHz (median %d)" % (min(sm), max(sm), sorted(sm)[len(sm) // 2]))
    if mem:
        parts.append("memory clock %d–%d MHz" % (min(mem), max(mem)))
    if pw:
        parts.append("power max %.0f W" % max(pw))
    if tc:
        parts.append("temperature max %d °C" % max(tc))
    parts.append("PCIe %s" % ", ".join(links))
    if rk:
        parts.append("clock-event reasons: %s" % (", ".join(
            "%s in %d" % (k, v) for k, v in sorted(seen.items())) or "none"))
    return "GPU through the run (nvidia-smi, 1 s samples, gpu-mon.csv): " + "; ".join(parts) + "."


def host_steal(d):
    """Per row: the share of all CPUs' time the hypervisor took (steal) over
    the row's window, and the largest share in one ~100 ms sample interval,
    from host-stat.txt (/proc/stat, 10 Hz) and windows.tsv; [] without them."""
    try:
        with open(os.path.join(d, "host-stat.txt")) as f:
            samples = []
            for line in f:
                x = line.split()
                if len(x) >= 10 and x[1] == "cpu":
                    v = [int(t) for t in x[2:]]
                    samples.append((float(x[0]), sum(v[:8]), v[7]))   # total, steal
        with open(os.path.join(d, "windows.tsv")) as f:
            wins = [l.rstrip("\n").split("\t") for l in f if l.strip()]
    except (OSError, ValueError):
        return []
    res = []
    for w in wins:
        if len(w) < 3:
            continue
        a, b = float(w[1]), float(w[2])
        inside = [s for s in samples if a <= s[0] <= b]
        if len(inside) < 2:
            continue
        tot = inside[-1][1] - inside[0][1]
        st = inside[-1][2] - inside[0][2]
        worst = 0.0
        for p0, p1 in zip(inside, inside[1:]):
            dt = p1[1] - p0[1]
            if dt > 0:
                worst = max(worst, (p1[2] - p0[2]) / dt)
        res.append(dict(name=w[0], seconds=b - a, mean=st / tot if tot > 0 else 0.0, worst=worst,
                        n=len(inside)))
    return res


def by_count(counts):
    """'a 3, b 1': the non-zero counts of a dict, largest first."""
    return ", ".join("%s %d" % (k, v) for k, v in sorted(counts.items(), key=lambda kv: -kv[1])
                     if v)


def stall_table(sb):
    """The data thread's stalls per load row (stage_breakdown's "stall"), as
    report lines; none when no row's trace has the recorder's "stall"."""
    out = []
    if not sb or not any(x["stall"]["known"] for x in sb):
        return out
    out.append("")
    out.append("The data thread's stalls (flight recorder `stall`; chirpd's `data_stalls`): "
               "gaps of 200 us or more in its polling loop, which never sleeps on purpose "
               "while CPIs are in flight; per CPI the longest that overlapped its time in "
               "chirpd, with what the thread's own counters say it was doing: running (CPU "
               "time over half the gap), blocked (slept in a call), preempted (another "
               "thread took its CPU), stolen (neither: its vCPU did not run). stalls: "
               "data_stalls over the window; CPIs: the window's CPIs one delayed; tail: "
               "the CPIs at or above chirpd's own p99.9 that one delayed, by kind.")
    out.append("")
    out.append("| row | stalls | CPIs delayed | longest ms (kind, where, CPU ms) | tail (≥ p99.9) with a stall |")
    out.append("|---|---:|---:|---|---|")
    for x in sb:
        s_ = x["stall"]
        if not s_["known"]:
            continue
        lg = s_["longest"]
        lgs = "–" if lg is None else "%s (%s, in %s, CPU %s)" % (
            ms(lg.get("us", 0)), lg.get("kind", "?"), lg.get("in", "?"), ms(lg.get("cpu_us", 0)))
        tl = by_count(s_["tail"])
        out.append("| %s | %s | %d of %d | %s | %s of %d%s |" % (
            x["label"], "?" if s_["count"] is None else s_["count"], s_["n"], x["n"], lgs,
            sum(s_["tail"].values()), x["ntail"], (": " + tl) if tl else ""))
    return out


TSV_HEAD = ("kind\tload_pct\twindow\trate\tdelivered\tn\tp50_us\tp90_us\tp99_us\tp999_us"
            "\tmax_us\tlost\tinput_overruns\toutput_drops\tlate_ticks")
FACTOR = 1.25   # C2, C3: chirpd's p99 and p99.9 against the floor's


def chirpd_lost(r):
    """CPIs a chirpd window lost: the probe's count (gaps in first_sample,
    which include producer drops on a full input ring) plus the output
    ring's drops; None when chirpctl stats were missing."""
    od = r["d"]["output_drops"]
    return None if od is None else int(r["probe"]["lost"]) + od


def summary(d, rows, floors):
    """Per load: chirpd's and the floor's latency over all its windows,
    with CPIs lost and the windows' spread of p99 and p99.9."""
    out = []
    loads = []
    for r in rows:
        if r["name"] != "capacity" and r["pct"] not in loads:
            loads.append(r["pct"])
    for pct in loads:
        for who, ws in (("chirpd", [r for r in rows if r["pct"] == pct and r["name"] != "capacity"]),
                        ("floor", [f for f in floors if f["pct"] == pct])):
            if not ws:
                continue
            pl = pooled(d, [w["name"] for w in ws])
            if who == "chirpd":
                lost = [chirpd_lost(w) for w in ws]
                per = [(float(w["probe"]["p99_us"]), float(w["probe"]["p999_us"])) for w in ws]
            else:
                lost = [int(w["copy"]["lost"]) for w in ws]
                per = [(float(w["copy"]["p99_us"]), float(w["copy"]["p999_us"])) for w in ws]
            out.append(dict(pct=pct, who=who, rate=float(ws[0]["rate"]), windows=len(ws), pl=pl,
                            lost=None if None in lost else sum(lost), per=per))
    return out


def spread(v):
    """'min / median / max' of a list of µs values, in ms."""
    v = sorted(v)
    h = len(v) // 2
    med = v[h] if len(v) % 2 else 0.5 * (v[h - 1] + v[h])
    return "%s / %s / %s" % (ms(v[0]), ms(med), ms(v[-1]))


def report(d):
    meta, rows, floors, noise, sleep = load(d)
    cuda = "backend cuda" in meta.get("setup", "")
    out = []
    for k in ("command", "date", "machine", "commit", "setup", "modes", "tools", "windows", "floor"):
        if k in meta:
            out.append("%s: %s  " % (k, meta[k]))
    out.append("capacity: %s CPI/s (same run); chirpd's data-path CPUs: %s  " %
               (meta.get("capacity", "?"), meta.get("cpus", "?")))
    if "depth" in meta:   # the pipeline depth the capacity row ran (CUDA)
        out.append("depth: %s" % meta["depth"])
    out.append("")
    sm = summary(d, rows, floors)
    out.append("Per load, every CPI of its windows together (nearest rank); p99 and p99.9 "
               "spread: min / median / max over the windows.")
    out.append("")
    out.append("| load | rate CPI/s | who | windows | n | p50 ms | p99 ms | p99.9 ms | max ms "
               "| lost | p99 spread ms | p99.9 spread ms |")
    out.append("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---|")
    na = lambda v: "?" if v is None else str(v)
    for x in sm:
        pl = x["pl"]
        cells = ["–"] * 5 if not pl else [str(pl["n"])] + [ms(pl[k]) for k in
                                                            ("p50", "p99", "p999", "max")]
        out.append("| %s %% | %.1f | %s | %d | %s | %s | %s | %s |" % (
            x["pct"], x["rate"], x["who"], x["windows"], " | ".join(cells), na(x["lost"]),
            spread([p[0] for p in x["per"]]), spread([p[1] for p in x["per"]])))
    if not cuda:
        out.append("")
        out.append("floor: not applicable with the CPU backend (no copy to make); "
                   "only losses are judged.")
    out.append("")
    out.append("Each window (chirpd: the probe's own figures; lost: its count plus output "
               "drops; in_ovr / out_drop: chirpd's counters over the window; late: the "
               "producer's late ticks over its run):")
    out.append("")
    out.append("| window | who | rate CPI/s | delivered CPI/s | n | p50 ms | p99 ms | p99.9 ms "
               "| max ms | lost | in_ovr | out_drop | late |")
    out.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    tsv = [TSV_HEAD]
    for r in rows:
        p = r["probe"]
        cap = r["name"] == "capacity"
        out.append("| %s | chirpd | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["label"], "saturated" if cap else "%.1f" % float(r["rate"]), p["rate"], p["n"],
            ms(p["p50_us"]), ms(p["p99_us"]), ms(p["p999_us"]), ms(p["max_us"]),
            na(chirpd_lost(r)), na(r["d"]["input_overruns"]), na(r["d"]["output_drops"]),
            na(r["late"])))
        tsv.append("\t".join(str(v) for v in (
            "capacity" if cap else "chirpd", "" if cap else r["pct"], r["win"], r["rate"],
            p["rate"], p["n"], p["p50_us"], p["p90_us"], p["p99_us"], p["p999_us"], p["max_us"],
            na(chirpd_lost(r)), na(r["d"]["input_overruns"]), na(r["d"]["output_drops"]),
            "" if cap else na(r["late"]))))
    for f_ in floors:
        c = f_["copy"]
        out.append("| %s | floor | %.1f | | %s | %s | %s | %s | %s | %s | | | |" % (
            f_["label"], float(c["rate"]), c["n"], ms(c["p50_us"]), ms(c["p99_us"]),
            ms(c["p999_us"]), ms(c["max_us"]), c["lost"]))
        tsv.append("\t".join(str(v) for v in (
            "floor", f_["pct"], f_["win"], c["rate"], "", c["n"], c["p50_us"], c["p90_us"],
            c["p99_us"], c["p999_us"], c["max_us"], c["lost"], "", "", "")))
    for x in sm:
        pl = x["pl"] or dict(n=0, p50="", p90="", p99="", p999="", max="")
        tsv.append("\t".join(str(v) for v in (
            x["who"] + "_all", x["pct"], "all", "%.3f" % x["rate"], "", pl["n"], pl["p50"],
            pl["p90"], pl["p99"], pl["p999"], pl["max"], na(x["lost"]), "", "", "")))
    det = [r for r in rows if r["d"].get("detection_lists")]
    if det:   # the detector's load: what the chain's list stages had to do
        out.append("")
        out.append("The detector in each window (chirpctl stats over the window): lists made, "
                   "detections per list, lists that filled to max_detections.")
        out.append("")
        out.append("| window | lists | detections per list | full lists |")
        out.append("|---|---:|---:|---:|")
        for r in det:
            n = r["d"]["detection_lists"]
            out.append("| %s | %d | %s | %s |" % (
                r["label"], n, "%.1f" % (r["d"]["detections"] / n)
                if r["d"]["detections"] is not None else "?",
                na(r["d"]["detection_overflows"])))
    out.append("")
    out.append("Host noise on chirpd's CPUs, chirpd stopped (for reading the tails above):")
    out.append("")
    out.append("| host | n | p50 ms | p99 ms | p99.9 ms | max ms |")
    out.append("|---|---:|---:|---:|---:|---:|")
    if noise:
        out.append("| host: %s us block, raw | %s | %s | %s | %s | %s |" % (
            noise["block_us"], noise["n"], ms(noise["p50_us"]), ms(noise["p99_us"]),
            ms(noise["p999_us"]), ms(noise["max_us"])))
        out.append("| host noise (block − its p50) | %s | 0 | %s | %s | %s |" % (
            noise["n"], ms(noise["ex_p99_us"]), ms(noise["ex_p999_us"]), ms(noise["ex_max_us"])))
        tsv.append("host_block\t\t\t\t\t%s\t%s\t\t%s\t%s\t%s\t\t\t\t" % (
            noise["n"], noise["p50_us"], noise["p99_us"], noise["p999_us"], noise["max_us"]))
        tsv.append("host_noise\t\t\t\t\t%s\t0\t\t%s\t%s\t%s\t\t\t\t" % (
            noise["n"], noise["ex_p99_us"], noise["ex_p999_us"], noise["ex_max_us"]))
    if sleep:
        out.append("| host: 1 ms sleep lateness | %s | %s | %s | %s | %s |" % (
            sleep["n"], ms(sleep["p50_us"]), ms(sleep["p99_us"]), ms(sleep["p999_us"]),
            ms(sleep["max_us"])))
        tsv.append("sleep_lateness\t\t\t\t\t%s\t%s\t\t%s\t%s\t%s\t\t\t\t" % (
            sleep["n"], sleep["p50_us"], sleep["p99_us"], sleep["p999_us"], sleep["max_us"]))
    hs = host_steal(d)
    if hs:
        out.append("")
        out.append("Host CPU time taken by the hypervisor (steal, /proc/stat 10 times a second, "
                   "all CPUs) in each window: its share over the window and the largest share in "
                   "one ~100 ms interval. A slow stretch in the recorder that coincides with steal "
                   "is the VM's host taking the CPUs, not chirpd.")
        out.append("")
        out.append("| row | window s | samples | steal % | worst 100 ms steal % |")
        out.append("|---|---:|---:|---:|---:|")
        for x in hs:
            out.append("| %s | %.1f | %d | %.2f | %.1f |" % (
                x["name"], x["seconds"], x["n"], 100 * x["mean"], 100 * x["worst"]))
    gm = gpu_monitor(d)
    if gm:
        out.append("")
        out.append(gm)
    out.append("")
    rec = recorder(d, rows)
    if rec:
        out.append("Flight recorder (`chirpctl trace`, the last records of each window): the "
                   "backend's time per CPI (device), the longest run of CPIs whose device time "
                   "exceeded 1.3 x the capacity row's median (the host slowing the compute down, "
                   "not queueing in chirpd), the deepest input backlog, blocks recomputed for "
                   "stalled CPU workers, CPIs that the CUDA backend cut into chunks, and CPIs "
                   "on which a CPU thread computed none of the blocks (*short-handed*: late to "
                   "the hand-off); *busy* (CPU backend): the recorded CPIs' compute time over the "
                   "span of their input commits, i.e. the load as a share of what the backend "
                   "could do at the host's speed in that window (the capacity row's ~100 %).")
        out.append("")
        out.append("| row | CPIs | device p50 ms | device p99 ms | device max ms | slow run (CPIs) "
                   "| max fill | recomputed | chunked | short-handed | busy |")
        out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for x in rec:
            out.append("| %s | %d | %s | %s | %s | %s | %d | %d | %s | %s | %s |" % (
                x["label"], x["n"],
                ms(x["p50"]), ms(x["p99"]), ms(x["max"]),
                "?" if x["run"] is None else str(x["run"]), x["fill"], x["recomputed"],
                "–" if x["chunked"] is None else "%.1f %%" % x["chunked"],
                "–" if x["absent"] is None else "%.1f %%" % x["absent"],
                "–" if x["busy"] is None else "%.1f %%" % x["busy"]))
    own = own_latency(d, rows)
    if own:
        out.append("")
        out.append("chirpd's own latency (flight recorder: input commit → output commit, every "
                   "CPI of the window): the CPIs whose first_sample lies between the first and "
                   "the last the probe counted, without the probe's wake-up; covered: the "
                   "recorder held the whole window (else the percentiles are over what it held).")
        out.append("")
        out.append("| row | CPIs | p50 ms | p99 ms | p99.9 ms | max ms | covered |")
        out.append("|---|---:|---:|---:|---:|---:|---|")
        for x in own:
            v = x["lat"]
            out.append("| %s | %d | %s | %s | %s | %s | %s |" % (
                x["label"], x["n"], *(["–"] * 4 if not v else
                                    [ms(nearest_rank(v, q)) for q in (0.5, 0.99, 0.999, 1.0)]),
                x["covered"]))
    sb = stage_breakdown(d, rows)
    if sb:
        out.append("")
        out.append("Where chirpd's own latency went (flight-recorder stamps, the same CPIs): "
                   "wake / behind = input commit → the data thread's peek, for a CPI that came "
                   "when no earlier CPI was left in chirpd (the idle data thread's reaction: "
                   "polling, or woken from the input ring's futex) / while earlier ones were "
                   "(queued behind them), set = peek → submit (waiting "
                   "for a free pipeline set or output slot), submit = the host's time in "
                   "pc_submit, backend = submitted → result reported (copies and compute), "
                   "deliver = reported → output commit; p50 / p99.9 / max ms of each. tail: "
                   "the CPIs at or above chirpd's own p99.9, counted by the stage that took "
                   "the most of their latency.")
        out.append("")
        out.append("| row | CPIs (idle arrivals) | " + " | ".join("%s ms" % lab for lab, _, _ in STAGES) +
                   " | tail (≥ p99.9) by largest stage |")
        out.append("|---|---:|" + "---|" * len(STAGES) + "---|")
        for x in sb:
            cells = ["–" if x["st"][lab] is None else " / ".join(ms(v) for v in x["st"][lab])
                     for lab, _, _ in STAGES]
            tl = by_count(x["most"])
            out.append("| %s | %d (%d) | %s | %d CPIs ≥ %s ms: %s |" % (
                x["label"], x["n"], x["nidle"], " | ".join(cells), x["ntail"], ms(x["cut"]),
                tl or "–"))
    out.extend(stall_table(sb))
    out.append("")
    out.append("Latency: CLOCK_REALTIME when the probe peeks the result − the producer's commit "
               "time (forwarded by chirpd). lost: CPIs missing (producer first_sample numbering) "
               "or flagged DISCONTINUITY without a countable gap, inside the window; in_ovr/out_drop: "
               "chirpd's input_overruns/output_drops over the window; late: producer late ticks "
               "over its whole run. Host noise at pX = the 250 us compute block's pX − its p50, "
               "measured on chirpd's CPUs with chirpd stopped. Capacity: CPIs/s delivered with "
               "the input ring kept full by a lossless producer. Floor (CUDA): every CPI's "
               "bytes H2D and D2H through registered slots, chunked over 2 streams, on an "
               "absolute schedule that never skips, each CPI timed from its due tick to its "
               "polled completion; lost: CPIs that fell due with every slot taken.")
    out.append("Criteria: C1 0 CPIs lost at 90 %%; C2 chirpd p99 <= %.2f x the floor's p99 "
               "and C3 chirpd p99.9 <= %.2f x the floor's p99.9, at 80 %% (CUDA)." % (
                   FACTOR, FACTOR))
    out.append("")

    out.extend(criteria(sm, rows, cuda, rec))
    text = "\n".join(out) + "\n"
    sys.stdout.write(text)
    with open(os.path.join(d, "report.md"), "w") as f:
        f.write(text)
    with open(os.path.join(d, "results.tsv"), "w") as f:
        f.write("\n".join(tsv) + "\n")
    return 0


def criteria(sm, rows, cuda, rec):
    """The PASS/FAIL lines: C1 losses at 90 %, C2/C3 chirpd's tail against
    the lossless floor's at 80 % (n/a on the CPU backend: no copy)."""
    by = {(x["pct"], x["who"]): x for x in sm}
    crit = []
    c90 = by.get(("90", "chirpd"))
    if c90:
        ws = [r for r in rows if r["pct"] == "90" and r["name"] != "capacity"]
        ovr = [r["d"]["input_overruns"] for r in ws]
        tot = None if c90["lost"] is None or None in ovr else c90["lost"] + sum(ovr)
        fl = by.get(("90", "floor"))
        crit.append("%s C1 90 %%: lost %s (input_overruns %s) over %d windows, %d CPIs%s" % (
            "PASS" if tot == 0 else "FAIL", "?" if c90["lost"] is None else c90["lost"],
            "?" if None in ovr else sum(ovr), c90["windows"],
            c90["pl"]["n"] if c90["pl"] else 0,
            "; the floor lost %d" % fl["lost"] if fl else ""))
    else:
        crit.append("n/a  C1: no 90 % load in this run")
    c80, f80 = by.get(("80", "chirpd")), by.get(("80", "floor"))
    for tag, key, what in (("C2", "p99", "p99"), ("C3", "p999", "p99.9")):
        if not cuda:
            crit.append("n/a  %s 80 %%: %s against the floor: not applicable with the CPU "
                        "backend (no copy)" % (tag, what))
        elif not c80 or not c80["pl"]:
            crit.append("n/a  %s: no 80 %% load in this run" % tag)
        elif not f80 or not f80["pl"]:
            crit.append("n/a  %s 80 %%: no floor at 80 %% in this run" % tag)
        else:
            a, fl = c80["pl"][key], f80["pl"][key]
            crit.append("%s %s 80 %%: chirpd %s %s ms <= %.2f x floor %s %s = %s ms" % (
                "PASS" if a <= FACTOR * fl else "FAIL", tag, what, ms(a), FACTOR, what, ms(fl),
                ms(FACTOR * fl)))
    # What "80 %" was in the windows themselves (CPU backend): the capacity
    # is the compute's speed when it was measured, and a shared host's
    # speed changes in steps of seconds.
    b80 = [x for x in (rec or []) if x["pct"] == "80" and x["busy"] is not None]
    cap = [c for c in (rec or []) if c["name"] == "capacity"]
    for x in b80:
        against = " against %s in the capacity window" % ms(cap[0]["p50"]) if cap else ""
        run = ("; %d CPIs in a row computed over 1.3 x that median" % x["run"]
               if x["run"] is not None else "")
        if x["busy"] > 82:
            verdict = "heavier than the 80 % asked for, at the host's speed then"
        elif x["busy"] < 78:
            verdict = "lighter than the 80 % asked for, at the host's speed then"
        else:
            verdict = "about the 80 % asked for"
        crit.append("note %s: the backend was busy %.1f %% of its window (compute p50 %s ms%s%s): "
                    "%s" % (x["label"], x["busy"], ms(x["p50"]), against, run, verdict))
    return crit


def plot(d):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    meta, rows, floors, noise, _ = load(d)
    fig, ax = plt.subplots(figsize=(9, 6))
    series = []
    for x in summary(d, rows, floors):
        names = [w["name"] for w in (rows if x["who"] == "chirpd" else floors)
                 if w["pct"] == x["pct"] and w["name"] != "capacity"]
        series.append((names, "%s %s %% (%.0f CPI/s)" % (x["who"], x["pct"], x["rate"]),
                       "-" if x["who"] == "chirpd" else ":"))
    drawn = 0
    for names, label, style in series:
        v = sorted(x / 1e3 for n in names for x in raw_latencies(d, n))
        if not v:
            continue
        n = len(v)
        ccdf = [1.0 - i / n for i in range(n)]   # P(latency >= v[i])
        ax.step(v, ccdf, where="post", linestyle=style, label=label)
        drawn += 1
    if noise:
        ax.axvline(float(noise["ex_p999_us"]) / 1e3, color="grey", linewidth=0.8,
                   label="host noise p99.9 (block − p50)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("latency, ms (producer commit → result peeked)")
    ax.set_ylabel("fraction of CPIs with latency ≥ x")
    ax.set_title("chirpd latency per load — %s\n%s, %s" % (
        meta.get("setup", ""), meta.get("machine", ""), meta.get("date", "")), fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    if drawn:
        ax.legend(fontsize=8)
    path = os.path.join(d, "latency.png")
    fig.savefig(path, dpi=120, bbox_inches="tight")
    print("PNG: %s" % path)
    return 0


def main():
    args = sys.argv[1:]
    if len(args) == 2 and args[0] == "--plot":
        return plot(args[1])
    if len(args) == 1 and not args[0].startswith("-"):
        return report(args[0])
    sys.stderr.write("usage: latency-report.py DIR | --plot DIR\n")
    return 2


if __name__ == "__main__":
    sys.exit(main())
