#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench-report.py — doc/performance.md's tables and README.md's headline,
regenerated from the raw results under doc/perf (`make bench-report`).

    bench-report.py [--perf DIR] [--page FILE] [--readme FILE]

DIR (default doc/perf) holds one folder per run (scripts/perf-run.sh), each
with raw results KIND.tsv and their provenance KIND.meta
(scripts/bench-meta.sh: machine, UTC date, commit, command) for the kinds

    throughput  bench_gpu's TSV: (a) copy limits, (b) the naive loop, (c)
                the backend alone, (d) the daemon; where it has the column
                c_registered_mode_switch, the cost of changing the radar
                mode every CPI (table (e)); an older file without it reads
                as "not measured"; where it has c_device_cufft and
                fft_engine, (c) with its default FFT engine is set beside
                (c) with cuFFT and held against (b0) and CuPy (criteria
                "(c) / (b0) >= 1.5" and "chirpd / CuPy >= 3")
    latency     bench-latency's results.tsv, with latency-report.md (its
                criteria lines) and latency-run.tsv (its run's meta)
    modes       the same with --radar-modes 3 (modes.tsv, modes-report.md,
                modes-run.tsv), compared in table (e) with the same
                folder's latency.tsv: criteria M1..M3 computed here
    cupy        bench-cupy.py's TSV (compared with the same folder's
                throughput.tsv: (c) measured in the same run)
    compare     bench-compare.sh's COMPARE_RAW TSV: chirpd's CPU backend,
                scipy, GNU Radio; and the radar chain (chirpd-chain against
                scipy-chain) where the run measured it
    radar       radar_gpu's TSV: the chain against the host-to-device copy
                limit, with radar_cupy (bench-cupy.py --chain) of the same
                folder beside it
    detect      the daemon with the chain, detections only (perf-run's
                detect step), against radar.tsv's copy limit of the same
                folder; detect_latency its latency at 80 % (as latency)
    startup     bench-startup.sh's TSV: five starts' capacity and depth
    net         bench-net.sh's TSV: (a) the loopback ceiling, (b) a naive
                receiver (chirp-recv, one recvmsg per datagram, one thread;
                results fed by udp_sink: a discard recvfrom loop), (c)
                chirp-recv into chirpd, held against
                (c)/(a) >= 90 %, (c)/(b) >= 2x and 25 Gb/s
    publish     bench-publish.sh's OUT TSV: capacity with the detection
                lists published on ZeroMQ and without, the cost <= 1 %
    multigpu    bench-multi-gpu.sh --all's results.tsv, with
                multigpu-report.md (its criteria and independence lines,
                its calibration table) and multigpu-run.tsv (its run's
                meta): one chirpd per GPU, per instance and in total,
                against the host's N-GPU copy floor
    restart     bench-restart.sh's TSV: kill -9 to output again and the
                start-up phases of each restart; restart_hugepages, the
                same with both rings on huge pages, goes in the same table
                when the same folder has it
    beams       bench-beams-gpu.sh's OUT TSV: the daemon with beams,
                detections only, against the H2D copy limit, the pointing
                fixed and changing every CPI; beams_latency (as latency)
                its latency at 80 %
    live        bench-live.sh's OUT TSV: capacity with pages of the live
                view open and none (>= 99 %), and live_latency (as
                latency) the latency at 80 % with a page open, held to the
                latency benchmark's floor criterion (C2, C3)
    beams_cpu   bench-beams-cpu.sh's TSV: the CPU chain with beams against
                numpy's matmul and FFTs, one thread each: up to the maps
                (the same work) >= 3x in CPU time, the whole chain beside
    beam        beam_gpu's TSV: beamforming on device data, the fused
                kernel and cublasCgemm against a device-to-device copy
                (criterion: the default engine >= 70 % of cublasCgemm's
                rate), the per-CPI weights and MVDR steps

For each kind the NEWEST result (by the date in its meta) fills the table
between `<!-- perf-table: KIND begin -->` and `<!-- perf-table: KIND end -->`
in FILE (default doc/performance.md); the prose around them is left alone.
README's block between `<!-- perf-headline: begin -->` and
`<!-- perf-headline: end -->` gets five headline rows (none from modes),
all from ONE run: the newest folder with GPU throughput results (else the
newest folder), and the commands of that run, and a sixth from the newest multigpu results
(naming their own folder). Section (e)'s block,
`<!-- perf-table: modes ... -->`, holds the switching cost (from the newest
throughput results) and the latency with modes (from the newest modes
results); either says "not measured yet" where its results are missing. A
marker missing from either file, or a raw file missing or garbled, is an
error that names the file (exit 1); nothing is written then.
"""
import argparse
import os
import re
import sys

KINDS = ("throughput", "latency", "cupy", "compare", "modes", "radar", "radar_cupy", "corner",
         "detect", "detect_latency", "startup", "net", "publish", "live", "live_latency",
         "multigpu", "restart", "restart_hugepages", "beams_cpu", "beam", "beams",
         "beams_latency")
HEAD = ("<!-- perf-headline: begin -->", "<!-- perf-headline: end -->")
META_KEYS = ("kind", "date", "commit", "dirty", "command", "cpu", "cpus", "gpu", "driver", "cuda")
COLS = {
    "throughput": ("geometry", "format", "output", "a_both", "b_naive", "depth", "c_device",
                   "c_registered", "d_daemon", "reps", "a_both_min", "a_both_max", "b_naive_min",
                   "b_naive_max", "c_device_min", "c_device_max", "c_registered_min",
                   "c_registered_max"),
    "latency": ("kind", "load_pct", "window", "rate", "n", "p50_us", "p99_us", "p999_us",
                "max_us", "lost", "input_overruns"),
    "cupy": ("cpi", "L", "nfft", "reps", "min_ms", "median_ms", "max_ms", "gsps_median"),
    "compare": ("tool", "cpi", "L", "round", "wall_msps", "cpu_msps"),
}
COLS["modes"] = COLS["latency"]
COLS["detect_latency"] = COLS["latency"]
COLS["beams"] = ("run", "pointing", "cpi_per_s", "gsps", "bad_pointing", "geometry", "beams")
COLS["beams_latency"] = COLS["latency"]
COLS["radar"] = ("geometry", "depth", "reps", "a_h2d_gsps", "p_pc_gsps", "c_chain_gsps",
                 "e_chain_gsps", "e_over_a", "detections")
COLS["radar_cupy"] = COLS["cupy"]
COLS["detect"] = ("geometry", "format", "output", "gsps")
COLS["corner"] = ("variant", "C", "Nd", "R", "repeats", "min_us", "median_us", "max_us")
COLS["startup"] = ("start", "capacity_cpi_per_s", "depth", "input_slots", "source")
COLS["net"] = ("what", "threads", "datagram_bytes", "gbps", "gbps_per_core", "loss", "seconds",
               "sender", "backend")
COLS["publish"] = ("run", "publish", "cpi_per_s", "sent", "drops", "sub_det", "sub_gaps",
                   "geometry", "backend")
COLS["multigpu"] = ("phase", "instance", "gpu", "asked_cpi_s", "cpi_s", "gsps", "p50_us", "p99_us",
                    "p999_us", "max_us", "lost", "input_overruns", "output_drops")
COLS["restart"] = ("restart", "gone_ms", "startup_ms", "config_plan", "backend", "capacity",
                   "rings", "pipeline", "threads", "reused", "capacity_source")
COLS["restart_hugepages"] = COLS["restart"]
COLS["live"] = ("run", "pages", "cpi_per_s", "page_fps", "live_frames", "skipped", "geometry",
                "backend")
COLS["live_latency"] = COLS["latency"]
COLS["beams_cpu"] = ("tool", "cpi", "L", "B", "mode", "round", "median_ms", "cpu_ms")
COLS["beam"] = ("variant", "C", "B", "N", "reps", "min_us", "median_us", "max_us", "gbps")
# Columns a newer benchmark writes and an older file lacks: None where
# absent or empty ("not measured"), else a number.
OPTIONAL = {"throughput": ("c_registered_mode_switch", "b0_naive_device", "c_copy",
                           "c_device_cufft"),
            "publish": ("rate", "loss", "chirpd_cpu"),
            # per-window figures: none ("-") on the floor and calibration rows
            "multigpu": ("p50_us", "p99_us", "p999_us", "max_us", "lost", "input_overruns",
                         "output_drops")}
# Text columns a newer benchmark writes: None where absent or empty.
OPTIONAL_TEXT = {"throughput": ("fft_engine",), "publish": ("mode",)}
CHAIN_VS_CUPY = 3.0      # the chain on the device against CuPy's chain
PC_VS_CUPY = 3.0         # (c) on device data against CuPy's pulse_compression
PC_VS_NAIVE = 1.5        # (c) on device data against the naive loop's (b0)
CHAIN_OF_H2D = 0.90      # detections only: share of the host-to-device limit
CHAIN_VS_SCIPY = 3.0     # the CPU chain against numpy/scipy's
STARTUP_SPREAD = 0.05    # start-ups: capacity within +-5 % of the median
NET_OF_CEILING = 0.90    # chirp-recv's loss-free rate: share of the loopback ceiling
NET_VS_NAIVE = 2.0       # ... against the naive recvfrom loop
NET_TARGET_GBPS = 25.0   # ... and the rate kernel-socket receivers are known to reach
BEAM_OF_GEMM = 0.70     # beamforming on device data against cublasCgemm's rate
PUBLISH_COST = 0.01      # publishing the detections: at most 1 % of capacity
LIVE_MIN = 0.99          # capacity with live pages open: at least 99 % of none
BEAMS_VS_NUMPY = 3.0     # the CPU chain with beams against numpy (matmul + FFT), one thread

SWITCH = "c_registered_mode_switch"
SWITCH_MIN = 0.98   # switching may cost at most 2 % of the one-mode rate
FLOOR_FACTOR = 1.25   # the latency benchmark's floor criterion (C2, C3)
NUMERIC = {
    "throughput": COLS["throughput"][3:],
    "latency": ("n", "p50_us", "p99_us", "p999_us", "max_us"),
    "cupy": COLS["cupy"][1:],
    "compare": ("round", "wall_msps", "cpu_msps"),
}
NUMERIC["modes"] = NUMERIC["latency"]
NUMERIC["detect_latency"] = NUMERIC["latency"]
NUMERIC["beams"] = ("cpi_per_s", "gsps")
NUMERIC["beams_latency"] = NUMERIC["latency"]
NUMERIC["radar"] = COLS["radar"][1:]
NUMERIC["radar_cupy"] = NUMERIC["cupy"]
NUMERIC["detect"] = ("gsps",)
NUMERIC["corner"] = COLS["corner"][1:]
NUMERIC["startup"] = ("capacity_cpi_per_s", "depth", "input_slots")
NUMERIC["net"] = ("threads", "datagram_bytes", "gbps", "gbps_per_core", "seconds")
NUMERIC["publish"] = ("cpi_per_s", "sent", "drops")
NUMERIC["multigpu"] = ("cpi_s", "gsps")
NUMERIC["restart"] = COLS["restart"][1:10]
NUMERIC["restart_hugepages"] = NUMERIC["restart"]
NUMERIC["live"] = ("pages", "cpi_per_s", "live_frames", "skipped")
NUMERIC["live_latency"] = NUMERIC["latency"]
NUMERIC["beams_cpu"] = ("L", "B", "round", "median_ms", "cpu_ms")
NUMERIC["beam"] = COLS["beam"][1:]


class Bad(Exception):
    """A raw file or a target file that cannot be used; the message names it."""


def rel(path):
    return os.path.relpath(path)


def read_meta(path):
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise Bad("%s: %s" % (rel(path), e.strerror))
    meta = {}
    for i, line in enumerate(lines, 1):
        k, tab, v = line.partition("\t")
        if not tab or not k:
            raise Bad("%s:%d: want KEY<TAB>VALUE, got %r" % (rel(path), i, line))
        meta[k] = v
    miss = [k for k in META_KEYS if k not in meta]
    if miss:
        raise Bad("%s: no %s (written by scripts/bench-meta.sh)" % (rel(path), ", ".join(miss)))
    if not re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", meta["date"]):
        raise Bad("%s: date %r: want YYYY-MM-DD HH:MM:SS UTC" % (rel(path), meta["date"]))
    return meta


def read_tsv(path, kind):
    """Rows of a raw TSV as dicts, its required columns present and numeric
    where they must be; rows whose first field is "skipped" (compare) kept
    as they are."""
    try:
        with open(path) as f:
            lines = [l.rstrip("\n") for l in f if l.strip()]
    except OSError as e:
        raise Bad("%s: %s" % (rel(path), e.strerror))
    if not lines:
        raise Bad("%s: empty" % rel(path))
    head = lines[0].split("\t")
    miss = [c for c in COLS[kind] if c not in head]
    if miss:
        raise Bad("%s: header lacks column(s) %s" % (rel(path), ", ".join(miss)))
    rows = []
    for i, line in enumerate(lines[1:], 2):
        x = line.split("\t")
        if kind in ("compare", "beams_cpu") and x[0] == "skipped":
            rows.append(dict(tool="skipped", cpi=x[1] if len(x) > 1 else "?",
                             why=x[-1] if len(x) > 2 else ""))
            continue
        if len(x) != len(head):
            raise Bad("%s:%d: %d fields, the header has %d" % (rel(path), i, len(x), len(head)))
        r = dict(zip(head, x))
        for c in NUMERIC[kind]:
            if r[c] == "" and kind in ("latency", "modes", "detect_latency", "beams_latency"):
                continue
            try:
                r[c] = float(r[c])
            except ValueError:
                raise Bad("%s:%d: %s = %r is not a number" % (rel(path), i, c, r[c]))
        for c in OPTIONAL.get(kind, ()):
            v = r.get(c, "")
            try:
                f = None if v in ("", "-", "n/a") else float(v)
            except ValueError:
                raise Bad("%s:%d: %s = %r is not a number" % (rel(path), i, c, v))
            r[c] = None if f is None or f != f else f   # NaN: not measured either
        for c in OPTIONAL_TEXT.get(kind, ()):
            v = r.get(c, "")
            r[c] = None if v in ("", "-") else v
        rows.append(r)
    if not [r for r in rows if r.get("tool") != "skipped"]:
        raise Bad("%s: no results in it" % rel(path))
    return rows


def scan(perf):
    """{kind: [(date, folder), ...]} newest first, for every KIND.tsv."""
    if not os.path.isdir(perf):
        raise Bad("%s: no such folder" % rel(perf))
    found = {k: [] for k in KINDS}
    for name in sorted(os.listdir(perf)):
        d = os.path.join(perf, name)
        if not os.path.isdir(d):
            continue
        for k in KINDS:
            t, m = os.path.join(d, k + ".tsv"), os.path.join(d, k + ".meta")
            if os.path.exists(m) and not os.path.exists(t):
                raise Bad("%s: no %s beside it (a run that did not finish?)" % (rel(m), k + ".tsv"))
            if os.path.exists(t):
                found[k].append((read_meta(m)["date"], name))
    for k in KINDS:
        found[k].sort(reverse=True)
    return found


def load_kind(perf, folder, kind):
    d = os.path.join(perf, folder)
    res = dict(folder=folder, dir=d, meta=read_meta(os.path.join(d, kind + ".meta")),
               rows=read_tsv(os.path.join(d, kind + ".tsv"), kind))
    if kind == "multigpu":
        load_multigpu_report(res, d)
    if kind in ("latency", "modes", "detect_latency", "live_latency", "beams_latency"):
        rep = os.path.join(d, kind + "-report.md")
        try:
            with open(rep) as f:
                res["criteria"] = [l.rstrip() for l in f
                                   if re.match(r"(PASS|FAIL|n/a ) +C\d", l)]
        except OSError as e:
            raise Bad("%s: %s" % (rel(rep), e.strerror))
        if not res["criteria"]:
            raise Bad("%s: no criteria lines (PASS/FAIL/n/a C1..)" % rel(rep))
        run = os.path.join(d, kind + "-run.tsv")
        res["run"] = {}
        if os.path.exists(run):
            with open(run) as f:
                for line in f:
                    k, _, v = line.rstrip("\n").partition("\t")
                    res["run"][k] = v
    return res


def load_multigpu_report(res, d):
    """multigpu-report.md's criteria, independence and calibration lines,
    and multigpu-run.tsv's meta, into res."""
    rep = os.path.join(d, "multigpu-report.md")
    try:
        with open(rep) as f:
            lines = [l.rstrip("\n") for l in f]
    except OSError as e:
        raise Bad("%s: %s" % (rel(rep), e.strerror))
    res["criteria"] = [l for l in lines if re.match(r"(PASS|FAIL) [A-Z]\d* ", l)]
    if not res["criteria"]:
        raise Bad("%s: no criteria lines (PASS/FAIL M1..)" % rel(rep))
    res["independence"] = [l for l in lines if l.startswith(("independence: ", "Beside the "))]
    # the calibration table: | instance | GPU | alone | shared | ...
    res["alone"] = {}
    cal = False
    for l in lines:
        if l.startswith("## "):
            cal = l.startswith("## Host calibration")
        m = cal and re.match(r"\| (\w+) \| \S+ \| ([\d.]+) \| ", l)
        if m:
            res["alone"][m.group(1)] = float(m.group(2))
    res["run"] = {}
    run = os.path.join(d, "multigpu-run.tsv")
    if os.path.exists(run):
        with open(run) as f:
            for line in f:
                k, _, v = line.rstrip("\n").partition("\t")
                res["run"].setdefault(k, v)


# ---- formatting ----------------------------------------------------------

def med(v):
    v = sorted(v)
    h = len(v) // 2
    return v[h] if len(v) % 2 else 0.5 * (v[h - 1] + v[h])


def mmm(lo, mid, hi, fmt="%.3f"):
    """'median (min–max)'."""
    return (fmt + " (" + fmt + "–" + fmt + ")") % (mid, lo, hi)


def ms(us):
    return "%.3f" % (us / 1e3)


def provenance(r, extra=""):
    m = r["meta"]
    gpu = "" if m["gpu"] == "none" else "; GPU %s, driver %s, CUDA %s" % (
        m["gpu"], m["driver"], m["cuda"])
    dirty = " **(uncommitted changes: dirty tree)**" if m["dirty"] != "no" else ""
    return ("Machine: %s, %s CPUs%s. Date: %s. Commit: `%s`%s. Command: `%s`. "
            "Raw results: `%s/`.%s" % (m["cpu"], m["cpus"], gpu, m["date"], m["commit"],
                                               dirty, m["command"], rel(r["dir"]), extra))


def best_rows(rows):
    """Per (geometry, format, output): the depth with the best (c'), its
    (c) columns replaced by (c)'s own best depth (c_device_depth): on device
    data nothing waits for PCIe, so the depth that serves (c') best need
    not serve (c) best, and chirpd's streams = auto picks by what runs."""
    best, dev, cuf = {}, {}, {}
    for r in rows:
        k = (r["geometry"], r["format"], r["output"])
        if k not in best or r["c_registered"] > best[k]["c_registered"]:
            best[k] = r
        if k not in dev or r["c_device"] > dev[k]["c_device"]:
            dev[k] = r
        c = r.get("c_device_cufft")
        if c is not None and (k not in cuf or c > cuf[k]):
            cuf[k] = c
    out = []
    for k in sorted(best, key=lambda k: (k[0] != "4x128x4096", k)):
        x = dict(best[k])
        for col in ("c_device", "c_device_min", "c_device_max"):
            x[col] = dev[k][col]
        x["c_device_depth"] = dev[k]["depth"]
        if k in cuf:
            x["c_device_cufft"] = cuf[k]
        out.append(x)
    return out


def table_throughput(r):
    out = [provenance(r, " GS/s = complex input samples per second / 1e9; each figure is the "
                         "median (min–max) of %d repeats." % int(r["rows"][0]["reps"])), "",
           "| CPI | in → out | depth | (a) copy limit | (b) naive loop | (c) backend, device "
           "data | (c') backend, registered host | (d) daemon | x / (a) | x / (b) |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for x in best_rows(r["rows"]):
        y = x["d_daemon"] if x["d_daemon"] > 0 else x["c_registered"]
        out.append("| %s | %s → %s | %d | %s | %s | %s | %s | %s | %.0f %% | %.2f× |" % (
            x["geometry"], x["format"], x["output"], x["depth"],
            mmm(x["a_both_min"], x["a_both"], x["a_both_max"]),
            mmm(x["b_naive_min"], x["b_naive"], x["b_naive_max"]),
            mmm(x["c_device_min"], x["c_device"], x["c_device_max"]),
            mmm(x["c_registered_min"], x["c_registered"], x["c_registered_max"]),
            "%.3f" % x["d_daemon"] if x["d_daemon"] > 0 else "–", 100 * y / x["a_both"],
            y / x["b_naive"]))
    out += ["", "x = (d) where the daemon was measured, else (c'). (b) always moves cf32 in and "
            "complex out. depth is (c')'s best; (c) is at its own best depth (next table)."]
    if has_engines(r["rows"]):
        return out + table_engines(best_rows(r["rows"]))
    extra = [x for x in best_rows(r["rows"]) if x.get("b0_naive_device") or x.get("c_copy")]
    if extra:
        out += ["", "Compute on the device and copy staging, same run: (b0) the naive loop's "
                "three launches (FFT, multiply, inverse FFT) on device data; (c'') copy staging "
                "(`staging = copy`) at (c')'s depth with chirpd's default copy threads "
                "(`staging_threads = auto`).", "",
                "| CPI | in → out | (b0) naive, device data | (c) / (b0) | (c'') copy staging "
                "| (c'') / (c') |", "|---|---|---:|---:|---:|---:|"]
        for x in extra:
            b0 = x.get("b0_naive_device")
            out.append("| %s | %s → %s | %s | %s | %s | %s |" % ((
                x["geometry"], x["format"], x["output"], "%.3f" % b0 if b0 else "–",
                "%.2f×" % (x["c_device"] / b0) if b0 else "–") + staging_cells(x)))
    return out


def has_engines(rows):
    """Whether a throughput run names (c)'s FFT engine or measured cuFFT beside it."""
    return any(x.get("fft_engine") or x.get("c_device_cufft") is not None for x in rows)


def engine_cell(x):
    """(c)'s FFT engine as a table cell ('|' would end the cell)."""
    return x["fft_engine"].replace("|", "\\|") if x.get("fft_engine") else "–"


def staging_cells(x):
    """(c'') copy staging and its share of (c'), or dashes."""
    c3 = x.get("c_copy")
    if not c3:
        return ("–", "–")
    return ("%.3f" % c3, "%.0f %%" % (100 * c3 / x["c_registered"]))


def table_engines(rows):
    """(c) with its default FFT engine against (b0) and (c) with cuFFT,
    then copy staging; rows: best_rows of one run that has the engine columns."""
    out = ["", "Compute on the device and copy staging, same run: (b0) the naive loop's three "
           "launches (FFT, multiply, inverse FFT) on device data; (c) runs chirpd's default FFT "
           "engine, named per row as `pc_info.fft_engine` reports it (`[processing] "
           "cuda_fused`), and (c) with cuFFT is the same backend with `cuda_fused = off`, "
           "measured in the same run; each (c) at the depth it did best ((c) depth); (c'') copy "
           "staging (`staging = copy`) at the depth it did best, with chirpd's default copy "
           "threads (`staging_threads = auto`).", "",
           "| CPI | in → out | (b0) naive, device data | (c) FFT engine | (c) depth | (c) backend, "
           "device data | (c) with cuFFT | (c) / (b0) | ≥ %.1f× | (c'') copy staging | (c'') / (c') |"
           % PC_VS_NAIVE, "|---|---|---:|---|---:|---:|---:|---:|---|---:|---:|"]
    for x in rows:
        b0, cf = x.get("b0_naive_device"), x.get("c_device_cufft")
        q = x["c_device"] / b0 if b0 else None
        out.append("| %s | %s → %s | %s | %s | %d | %.3f | %s | %s | %s | %s | %s |" % ((
            x["geometry"], x["format"], x["output"], "%.3f" % b0 if b0 else "–", engine_cell(x),
            x["c_device_depth"], x["c_device"], "%.3f" % cf if cf is not None else "–",
            "%.2f×" % q if q else "–",
            "–" if q is None else "PASS" if q >= PC_VS_NAIVE else "FAIL") + staging_cells(x)))
    return out


def latency_summary(rows):
    """Per (load, who): the pooled row and the windows' p99/p99.9 spread."""
    out = []
    for p in [r for r in rows if r["kind"] in ("chirpd_all", "floor_all")]:
        who = p["kind"][:-4]
        ws = [w for w in rows if w["kind"] == who and w["load_pct"] == p["load_pct"]]
        out.append((p, who, ws))
    return out


def run_extra(run):
    """The run's capacity, setup and floor, from its KIND-run.tsv."""
    extra = ""
    if "capacity" in run:
        extra += " Capacity %s CPI/s (same run)." % run["capacity"]
    if "setup" in run:
        extra += " Setup: %s." % run["setup"]
    if "floor" in run:
        extra += " Floor: %s." % run["floor"]
    return extra


def table_latency(r):
    out = [provenance(r, run_extra(r["run"])), "",
           "| load | who | windows | CPIs | p50 ms | p99 ms | p99.9 ms | max ms | lost | p99 ms "
           "over windows | p99.9 ms over windows |",
           "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for p, who, ws in latency_summary(r["rows"]):
        p99 = [w["p99_us"] / 1e3 for w in ws]
        p999 = [w["p999_us"] / 1e3 for w in ws]
        out.append("| %s %% | %s | %d | %d | %s | %s | %s | %s | %s | %s | %s |" % (
            p["load_pct"], who, len(ws), p["n"], ms(p["p50_us"]), ms(p["p99_us"]),
            ms(p["p999_us"]), ms(p["max_us"]), p["lost"],
            mmm(min(p99), med(p99), max(p99)) if ws else "–",
            mmm(min(p999), med(p999), max(p999)) if ws else "–"))
    noise = [x for x in r["rows"] if x["kind"] in ("host_noise", "sleep_lateness")]
    if noise:
        out += ["", "| host, chirpd stopped | n | p99 ms | p99.9 ms | max ms |",
                "|---|---:|---:|---:|---:|"]
        for x in noise:
            out.append("| %s | %d | %s | %s | %s |" % (
                "noise (250 µs block − its p50)" if x["kind"] == "host_noise"
                else "1 ms sleep lateness", x["n"], ms(x["p99_us"]), ms(x["p999_us"]),
                ms(x["max_us"])))
    out += ["", "Criteria (from the run's report):", ""]
    out += ["    " + c for c in r["criteria"]]
    return out


def cupy_vs_backend(r, thr):
    """(cupy row, chirpd's best (c) row for cf32 -> complex at that CPI or None)."""
    best = {x["geometry"]: x for x in best_rows(thr["rows"])
            if x["format"] == "cf32" and x["output"] == "complex"} if thr else {}
    return [(c, best.get(c["cpi"])) for c in r["rows"]]


def table_cupy(r, thr):
    same = thr is not None
    out = [provenance(r, "" if same else " No bench_gpu results in this folder: no backend "
                      "figure to compare with."), ""]
    if same and has_engines(thr["rows"]):
        return out + table_cupy_engines(r, thr)
    out += ["| CPI | L | CuPy nfft | CuPy ms per CPI | CuPy GS/s | chirpd (c) GS/s, device data "
            "| chirpd / CuPy |", "|---|---:|---:|---:|---:|---:|---:|"]
    for c, b in cupy_vs_backend(r, thr):
        out.append("| %s | %d | %d | %s | %.3f | %s | %s |" % (
            c["cpi"], c["L"], c["nfft"], mmm(c["min_ms"], c["median_ms"], c["max_ms"]),
            c["gsps_median"], mmm(b["c_device_min"], b["c_device"], b["c_device_max"]) if b
            else "–", "%.2f×" % (b["c_device"] / c["gsps_median"]) if b else "–"))
    out += ["", "Both on data already on the GPU (no PCIe), cf32 in, complex out; chirpd's (c) "
            "is bench_gpu's figure from the same folder (throughput.tsv, the same run)."]
    return out


def table_cupy_engines(r, thr):
    """The CuPy table for a throughput run that names (c)'s FFT engine:
    that engine per row and the criterion chirpd / CuPy >= PC_VS_CUPY."""
    out = ["| CPI | L | CuPy nfft | CuPy ms per CPI | CuPy GS/s | chirpd (c) FFT engine | chirpd "
           "(c) GS/s, device data | chirpd / CuPy | ≥ %.0f× |" % PC_VS_CUPY,
           "|---|---:|---:|---:|---:|---|---:|---:|---|"]
    for c, b in cupy_vs_backend(r, thr):
        q = b["c_device"] / c["gsps_median"] if b else None
        out.append("| %s | %d | %d | %s | %.3f | %s | %s | %s | %s |" % (
            c["cpi"], c["L"], c["nfft"], mmm(c["min_ms"], c["median_ms"], c["max_ms"]),
            c["gsps_median"], engine_cell(b) if b else "–",
            mmm(b["c_device_min"], b["c_device"], b["c_device_max"]) if b else "–",
            "%.2f×" % q if q else "–", "–" if q is None else "PASS" if q >= PC_VS_CUPY
            else "FAIL"))
    out += ["", "Both on data already on the GPU (no PCIe), cf32 in, complex out; chirpd's (c) "
            "is bench_gpu's figure from the same folder (throughput.tsv, the same run), with "
            "chirpd's default FFT engine (`pc_info.fft_engine`, `[processing] cuda_fused`); "
            "table (a) has the same backend with cuFFT (`cuda_fused = off`) beside it."]
    return out


def compare_cells(rows, cpi, tool, col):
    v = [x[col] for x in rows if x.get("tool") == tool and x["cpi"] == cpi]
    return (min(v), med(v), max(v)) if v else None


def table_compare(r):
    rows = r["rows"]
    cpis = []
    for x in rows:
        if x.get("tool") != "skipped" and x["cpi"] not in cpis:
            cpis.append(x["cpi"])
    nr = max(int(x["round"]) for x in rows if x.get("tool") != "skipped")
    out = [provenance(r, " MS/s = input complex samples per second / 1e6, one thread each, "
                         "median (min–max) over %d rounds." % nr), ""]
    for col, title in (("cpu_msps", "CPU time (what one thread delivers while it has a CPU)"),
                       ("wall_msps", "wall time")):
        out += ["%s:" % title, "",
                "| CPI | L | chirpd MS/s | scipy MS/s | GNU Radio MS/s | chirpd / scipy | "
                "chirpd / GNU Radio |", "|---|---:|---:|---:|---:|---:|---:|"]
        for cpi in cpis:
            L = next(int(x["L"]) for x in rows if x.get("cpi") == cpi and "L" in x)
            c, s, g = (compare_cells(rows, cpi, t, col) for t in ("chirpd", "scipy", "gnuradio"))
            f = lambda v: mmm(*v, fmt="%.1f") if v else "–"
            q = lambda a, b: "%.2f×" % (a[1] / b[1]) if a and b else "–"
            out.append("| %s | %d | %s | %s | %s | %s | %s |" % (cpi, L, f(c), f(s), f(g),
                                                             q(c, s), q(c, g)))
        out.append("")
    for x in rows:
        if x.get("tool") == "skipped":
            out.append("%s: skipped: %s  " % (x["cpi"], x["why"]))
    return out


def table_switch(thr):
    """(e) first table: per CPI shape and format, at (a)'s best depth, the
    rate with the mode changing every CPI over the rate with one mode."""
    if thr is None:
        return ["Switching cost: not measured yet: no throughput results "
                "(`scripts/perf-run.sh gpu doc/perf throughput`)."]
    where = "`%s/throughput.tsv`" % rel(thr["dir"])
    rows = best_rows(thr["rows"])
    if all(x[SWITCH] is None for x in rows):
        return ["Switching cost: not measured yet: the newest throughput results (%s) have no "
                "`%s` figures (a bench_gpu that did not measure it)." % (where, SWITCH)]
    m = thr["meta"]
    out = ["Switching cost, from the throughput results of table (a) (%s: %s, commit `%s`%s): "
           "(c') with the radar mode changing every CPI among three over (c') with one mode, "
           "median of 5 alternating pairs." % (where, m["date"], m["commit"],
                                                " **(dirty tree)**" if m["dirty"] != "no" else ""),
           "", "| CPI | in → out | depth | switching rate / one-mode rate | ≥ %.2f |" % SWITCH_MIN,
           "|---|---|---:|---:|---|"]
    for x in rows:
        v = x[SWITCH]
        out.append("| %s | %s → %s | %d | %s | %s |" % (
            x["geometry"], x["format"], x["output"], x["depth"],
            "not measured" if v is None else "%.3f" % v,
            "–" if v is None else "PASS" if v >= SWITCH_MIN else "FAIL"))
    return out


def count(v):
    """A counter field as an int, None where the run could not count it."""
    try:
        return int(float(v))
    except (TypeError, ValueError):
        return None


def at80(rows, who):
    """(the pooled row at 80 % or None, that load's windows) of chirpd or the floor."""
    p = next((r for r in rows if r["kind"] == who + "_all" and r["load_pct"] == "80"), None)
    return p, [w for w in rows if w["kind"] == who and w["load_pct"] == "80"]


def modes_criteria(mo, lat):
    """M1..M3: the modes run at 80 % against its own floor and the
    single-mode run of the same folder (lat, None when it has none)."""
    (c, cw), (f, _) = at80(mo["rows"], "chirpd"), at80(mo["rows"], "floor")
    if c is None:
        return ["n/a  M1..M3: the modes run has no 80 % load"]
    parts = [count(c["lost"])] + [count(w.get(k)) for w in cw
                                  for k in ("input_overruns", "output_drops")]
    tot = None if None in parts else sum(parts)
    crit = ["%s M1 80 %%: the modes run lost %s (lost %s, input_overruns and output_drops "
            "%s) over %d windows, %d CPIs" % (
                "PASS" if tot == 0 else "FAIL", "?" if tot is None else tot,
                c["lost"] or "?", "?" if None in parts[1:] else sum(parts[1:]), len(cw), c["n"])]
    a = c["p999_us"]
    if f is None:
        crit.append("n/a  M2 80 %: no floor in the modes run")
    else:
        crit.append("%s M2 80 %%: modes chirpd p99.9 %s ms <= %.2f x its floor p99.9 %s = %s ms" % (
            "PASS" if a <= FLOOR_FACTOR * f["p999_us"] else "FAIL", ms(a), FLOOR_FACTOR,
            ms(f["p999_us"]), ms(FLOOR_FACTOR * f["p999_us"])))
    sw = at80(lat["rows"], "chirpd")[1] if lat else []
    if not lat:
        crit.append("n/a  M3 80 %: no single-mode run (latency.tsv) in this folder")
    elif not sw:
        crit.append("n/a  M3 80 %: the single-mode run has no 80 % window")
    else:
        hi = max(w["p999_us"] for w in sw)
        crit.append("%s M3 80 %%: modes chirpd p99.9 %s ms <= the single-mode run's highest "
                    "window p99.9 %s ms (%d windows)" % ("PASS" if a <= hi else "FAIL", ms(a),
                                                         ms(hi), len(sw)))
    return crit


def table_modes(perf, mo):
    """(e) second table: the modes run at 80 % next to the single-mode run
    of the same folder, each with its floor; M1..M3."""
    if mo is None:
        return ["Latency with modes: not measured yet: no folder under `%s/` has modes.tsv "
                "(`scripts/perf-run.sh gpu doc/perf modes`, into the folder of the latency "
                "step)." % rel(perf)]
    t = os.path.join(mo["dir"], "latency.tsv")
    lat = load_kind(perf, mo["folder"], "latency") if os.path.exists(t) else None
    out = ["Latency with modes: " + provenance(mo, run_extra(mo["run"])), ""]
    if lat is None:
        out += ["`%s/` has modes.tsv but no latency.tsv: no single-mode run to compare with "
                "(run the latency step into this folder)." % rel(mo["dir"]), ""]
    out += ["| run at 80 % | who | windows | CPIs | p50 ms | p99 ms | p99.9 ms | max ms | lost | "
            "p99.9 ms over windows |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, r in (("single mode", lat), ("3 modes", mo)):
        if r is None:
            continue
        for who in ("chirpd", "floor"):
            p, ws = at80(r["rows"], who)
            if p is None:
                out.append("| %s | %s | – | – | – | – | – | – | – | no 80 %% load |" % (name, who))
                continue
            p999 = [w["p999_us"] / 1e3 for w in ws]
            out.append("| %s | %s | %d | %d | %s | %s | %s | %s | %s | %s |" % (
                name, who, len(ws), p["n"], ms(p["p50_us"]), ms(p["p99_us"]), ms(p["p999_us"]),
                ms(p["max_us"]), p["lost"],
                mmm(min(p999), med(p999), max(p999)) if ws else "–"))
    out += ["", "Criteria (computed from these results):", ""]
    out += ["    " + c for c in modes_criteria(mo, lat)]
    out += ["", "The modes run's own report:", ""]
    out += ["    " + c for c in mo["criteria"]]
    return out


def same_folder(perf, r, kind):
    """The same folder's results of another kind, or None."""
    t = os.path.join(r["dir"], kind + ".tsv")
    return load_kind(perf, r["folder"], kind) if os.path.exists(t) else None


def table_radar(perf, r):
    cup = same_folder(perf, r, "radar_cupy")
    cupy = {c["cpi"]: c for c in cup["rows"]} if cup else {}
    out = [provenance(r, " GS/s = complex input samples per second / 1e9, median of %d "
                         "repeats." % int(r["rows"][0]["reps"])), ""]
    if cup:
        out += ["CuPy's chain: " + provenance(cup), ""]
    out += ["| CPI | depth | (a) H2D copy limit | (p) compression alone, device data | (c) chain, "
            "device data | CuPy chain | (c) / CuPy | ≥ %.0f× | (e) chain from registered host, "
            "detections only | (e) / (a) | ≥ %.0f %% |" % (CHAIN_VS_CUPY, 100 * CHAIN_OF_H2D),
            "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---|"]
    for x in r["rows"]:
        c = cupy.get(x["geometry"])
        q = x["c_chain_gsps"] / c["gsps_median"] if c else None
        out.append("| %s | %d | %.3f | %.3f | %.3f | %s | %s | %s | %.3f | %.0f %% | %s |" % (
            x["geometry"], x["depth"], x["a_h2d_gsps"], x["p_pc_gsps"], x["c_chain_gsps"],
            "%.3f" % c["gsps_median"] if c else "–", "%.2f×" % q if q else "–",
            "–" if q is None else "PASS" if q >= CHAIN_VS_CUPY else "FAIL", x["e_chain_gsps"],
            100 * x["e_over_a"], "PASS" if x["e_over_a"] >= CHAIN_OF_H2D else "FAIL"))
    cor = same_folder(perf, r, "corner")
    if cor:
        out += ["", "The Doppler FFT's corner turn, both ways (`bench/corner_turn.cu`; chirpd runs "
                "the strided plan): " + provenance(cor), "",
                "| C × Nd × R | strided plan µs | transpose + contiguous plan µs | transpose / "
                "strided |", "|---|---:|---:|---:|"]
        shapes = sorted({(x["C"], x["Nd"], x["R"]) for x in cor["rows"]})
        for c, nd, rr in shapes:
            v = {x["variant"]: x for x in cor["rows"] if (x["C"], x["Nd"], x["R"]) == (c, nd, rr)}
            st, tr = v.get("strided"), v.get("transpose")
            out.append("| %d × %d × %d | %s | %s | %s |" % (
                c, nd, rr, mmm(st["min_us"], st["median_us"], st["max_us"], "%.1f") if st else "–",
                mmm(tr["min_us"], tr["median_us"], tr["max_us"], "%.1f") if tr else "–",
                "%.2f×" % (tr["median_us"] / st["median_us"]) if st and tr else "–"))
    out += ["", "The chain: no MTI, Hamming window over the pulses, 256 Doppler bins, CA-CFAR on "
            "each channel's map (guard 2 range × 1 Doppler, training 8 × 2, pfa 1e-5), 3 × 3 "
            "local maxima, up to 4096 detections per CPI; CuPy runs pulse_compression, "
            "pulse_doppler, |·|², fftshift and ca_cfar on the same CPIs."]
    return out


def table_detect(perf, r):
    rad = same_folder(perf, r, "radar")
    lim = {x["geometry"]: x["a_h2d_gsps"] for x in rad["rows"]} if rad else {}
    out = [provenance(r), "", "| CPI | in | daemon, detections only GS/s | H2D copy limit ((f), "
           "this folder) | share | ≥ %.0f %% |" % (100 * CHAIN_OF_H2D), "|---|---|---:|---:|---:|---|"]
    for x in r["rows"]:
        a = lim.get(x["geometry"])
        out.append("| %s | %s | %.3f | %s | %s | %s |" % (
            x["geometry"], x["format"], x["gsps"], "%.3f" % a if a else "–",
            "%.0f %%" % (100 * x["gsps"] / a) if a else "–",
            "–" if not a else "PASS" if x["gsps"] >= CHAIN_OF_H2D * a else "FAIL"))
    lat = same_folder(perf, r, "detect_latency")
    if lat:
        out += ["", "Latency with the chain at 80 % of its capacity, detections only (the "
                "probe times the detection lists; the floor moves a CPI in and a list back): " +
                provenance(lat, run_extra(lat["run"])), ""]
        out += table_latency(lat)[2:]
    return out


BEAMS_OF_H2D = 0.95      # the daemon with beams, detections only, against the copy limit
BEAMS_SWITCH_COST = 0.02  # the pointing changing every CPI against a fixed one


def table_beams(perf, r):
    """(p): the daemon forming beams, detections only, against the H2D copy
    limit of the same CPI, pointing fixed and changing every CPI; then its
    latency at 80 % (beams_latency of the same folder)."""
    rows = r["rows"]
    lim = [x["gsps"] for x in rows if x["pointing"] == "copy_limit"]
    fixed = [x["gsps"] for x in rows if x["pointing"] == "fixed"]
    sw = [x["gsps"] for x in rows if x["pointing"] == "switching"]
    if not lim or not fixed or not sw:
        raise Bad("%s/beams.tsv: want a copy_limit row and fixed and switching runs" % rel(r["dir"]))
    x0 = rows[0]
    out = [provenance(r, " CPI %s cf32, %s conventional beams before compression, MTI, "
                         "Doppler, CA-CFAR; output mode none (only the lists come back)."
                         % (x0["geometry"], x0["beams"])), "",
           "| run | pointing | CPI/s | GS/s | of the copy limit | CPIs skipped for their pointing |",
           "|---:|---|---:|---:|---:|---:|"]
    for x in rows:
        out.append("| %s | %s | %.1f | %.3f | %s | %s |" % (
            x["run"], x["pointing"].replace("_", " "), x["cpi_per_s"], x["gsps"],
            "–" if x["pointing"] == "copy_limit" else "%.0f %%" % (100 * x["gsps"] / lim[0]),
            "–" if x["pointing"] == "copy_limit" else x["bad_pointing"]))
    mf, ms = med(fixed), med(sw)
    share = mf / lim[0] if lim[0] > 0 else 0.0
    cost = 1 - ms / mf if mf > 0 else float("inf")
    out += ["", "    %s with beams, detections only: %.0f %% ≥ %.0f %% of the host-to-device copy "
            "limit (median %.3f of %.3f GS/s)" % ("PASS" if share >= BEAMS_OF_H2D else "FAIL",
                                                  100 * share, 100 * BEAMS_OF_H2D, mf, lim[0]),
            "    %s the pointing changing every CPI costs %.2f %% ≤ %.0f %% (median %.3f against "
            "%.3f GS/s)" % ("PASS" if cost <= BEAMS_SWITCH_COST + 1e-9 else "FAIL", 100 * cost,
                            100 * BEAMS_SWITCH_COST, ms, mf)]
    lat = same_folder(perf, r, "beams_latency")
    if lat:
        out += ["", "Latency with beams at 80 % of capacity, detections only (the probe times "
                "the detection lists; the floor moves a CPI in and a list back): " +
                provenance(lat, run_extra(lat["run"])), ""]
        out += table_latency(lat)[2:]
    else:
        out += ["", "Latency with beams: not measured in this folder (beams_latency.tsv)."]
    return out


def table_beam(r):
    """Per shape: the fused kernel's default, cublasCgemm and the copy
    (GB/s: bytes read and written / median time), the criterion, the best
    fused pair; then every fused variant; the per-CPI steps in us."""
    shapes = []
    for x in r["rows"]:
        k = (int(x["C"]), int(x["B"]), int(x["N"]))
        if k not in shapes:
            shapes.append(k)
    out = [provenance(r, " GB/s = (C + B) N x 8 bytes (each input read once, each output "
                         "written once; the copy: the same bytes read and written) / the median "
                         "of %d repeats." % int(r["rows"][0]["reps"])), "",
           "| C | B | N | fused (default) GB/s | cublasCgemm GB/s | copy GB/s | fused / cublas "
           "| ≥ %.0f %% | fused / copy | best fused pair | weights µs | MVDR µs | monopulse, "
           "256 detections µs |" % (100 * BEAM_OF_GEMM),
           "|---:|---:|---:|---:|---:|---:|---:|---|---:|---|---:|---:|---:|"]
    for c, b, n in shapes:
        v = {x["variant"]: x for x in r["rows"] if (int(x["C"]), int(x["B"]), int(x["N"])) ==
             (c, b, n)}
        f, g, cp = v.get("fused"), v.get("cublas"), v.get("copy")
        fv = [x for k, x in v.items() if k.startswith("fused")]
        best = max(fv, key=lambda x: x["gbps"]) if fv else None
        q = f["gbps"] / g["gbps"] if f and g and g["gbps"] > 0 else None
        out.append("| %d | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            c, b, n, "%.0f" % f["gbps"] if f else "–", "%.0f" % g["gbps"] if g else "–",
            "%.0f" % cp["gbps"] if cp else "–", "%.0f %%" % (100 * q) if q else "–",
            "–" if q is None else "PASS" if q >= BEAM_OF_GEMM else "FAIL",
            "%.0f %%" % (100 * f["gbps"] / cp["gbps"]) if f and cp and cp["gbps"] > 0 else "–",
            "%s (%.0f GB/s)" % (best["variant"], best["gbps"]) if best else "–",
            "%.1f" % v["weights"]["median_us"] if "weights" in v else "–",
            "%.1f" % v["mvdr"]["median_us"] if "mvdr" in v else "–",
            "%.1f" % v["mono256"]["median_us"] if "mono256" in v else "–"))
    out += ["", "Every variant, µs: median (min–max):", "",
            "| variant | C | B | N | µs | GB/s |", "|---|---:|---:|---:|---:|---:|"]
    for x in r["rows"]:
        out.append("| %s | %d | %d | %d | %s | %s |" % (
            x["variant"], x["C"], x["B"], x["N"],
            mmm(x["min_us"], x["median_us"], x["max_us"], "%.1f"),
            "%.0f" % x["gbps"] if x["gbps"] > 0 else "–"))
    return out


def table_startup(r):
    rows = r["rows"]
    caps = [x["capacity_cpi_per_s"] for x in rows]
    m = med(caps)
    depths = [int(x["depth"]) for x in rows]
    common = max(set(depths), key=depths.count)
    spread = max(abs(c - m) / m for c in caps) if m > 0 else float("inf")
    out = [provenance(r), "", "| start | capacity CPI/s | from the median | depth | input slots "
           "| capacity from |", "|---:|---:|---:|---:|---:|---|"]
    for x in rows:
        out.append("| %s | %.0f | %+.1f %% | %d | %d | %s |" % (
            x["start"], x["capacity_cpi_per_s"], 100 * (x["capacity_cpi_per_s"] - m) / m if m
            else 0, x["depth"], x["input_slots"], x["source"]))
    n = len(rows)
    out += ["", "    %s capacity within ±%.0f %% of the median (%.0f CPI/s): farthest %.1f %%" % (
        "PASS" if spread <= STARTUP_SPREAD else "FAIL", 100 * STARTUP_SPREAD, m, 100 * spread),
        "    %s the same depth in at least %d of %d starts: depth %d in %d" % (
            "PASS" if depths.count(common) >= n - 1 else "FAIL", n - 1, n, common,
            depths.count(common))]
    return out


def table_net(r):
    rows = {x["what"]: x for x in r["rows"]}
    miss = [k for k in ("ceiling", "naive", "chirp-recv") if k not in rows]
    if miss:
        raise Bad("%s/net.tsv: no row(s) %s" % (rel(r["dir"]), ", ".join(miss)))
    label = {"ceiling": "(a) loopback ceiling: discard sink, recvmmsg",
             "blaster": "the same sink fed by the blaster (reference)",
             "naive": "(b) naive receiver: chirp-recv, one recvmsg per datagram, one thread",
             "chirp-recv": "(c) chirp-recv into chirpd, loss-free, held"}
    if rows["naive"]["sender"].startswith("udp_sink"):   # a discard loop, not a receiver
        label["naive"] = "(b) naive loop: one recvfrom per datagram"
    out = [provenance(r, " Gb/s of payload (datagram bytes less the 28-byte VRT header), "
                         "loopback (127.0.0.1), all three in one run."), "",
           "| receiver | threads | datagram bytes | Gb/s | Gb/s per core | loss | over s "
           "| fed by | backend |", "|---|---:|---:|---:|---:|---:|---:|---|---|"]
    for k in ("ceiling", "blaster", "naive", "chirp-recv"):
        if k not in rows:   # blaster: a row of later runs
            continue
        x = rows[k]
        out.append("| %s | %d | %d | %.2f | %.2f | %s | %.0f | %s | %s |" % (
            label[k], x["threads"], x["datagram_bytes"], x["gbps"], x["gbps_per_core"],
            x["loss"], x["seconds"], x["sender"], x["backend"]))
    a, b, c = (rows[k]["gbps"] for k in ("ceiling", "naive", "chirp-recv"))
    pf = lambda ok: "PASS" if ok else "FAIL"
    out += ["",
            "    %s (c) / (a) = %.0f %% ≥ %.0f %% of the loopback ceiling" % (
                pf(a > 0 and c / a >= NET_OF_CEILING), 100 * c / a if a > 0 else 0,
                100 * NET_OF_CEILING),
            "    %s (c) / (b) = %.2f× ≥ %.0f× the naive loop" % (
                pf(b > 0 and c / b >= NET_VS_NAIVE), c / b if b > 0 else 0, NET_VS_NAIVE),
            "    %s (c) = %.2f Gb/s ≥ %.0f Gb/s (%.2f Gb/s per receive core)" % (
                pf(c >= NET_TARGET_GBPS), c, NET_TARGET_GBPS, rows["chirp-recv"]["gbps_per_core"])]
    return out


def table_publish(r):
    rows = r["rows"]
    for x in rows:   # an older file: capacity runs only
        x["mode"] = x.get("mode") or "capacity"
    cap = [x for x in rows if x["mode"] == "capacity"]
    paced = [x for x in rows if x["mode"] == "paced"]
    off = [x["cpi_per_s"] for x in cap if x["publish"] == "off"]
    on = [x["cpi_per_s"] for x in cap if x["publish"] == "on"]
    if not off or not on:
        raise Bad("%s/publish.tsv: want capacity runs with publish off and on" % rel(r["dir"]))
    x0 = rows[0]
    num = lambda v, f: "–" if v is None else f % v
    out = [provenance(r, " CPI %s, backend %s; CPIs delivered per second over the "
                         "measurement window (capacity: the feeder waits for free slots; "
                         "paced: it does not, and a CPI finding the ring full is lost); the "
                         "subscriber's lists and seq gaps over the whole run."
                      % (x0["geometry"], x0["backend"])), "",
           "| runs | run | publish | CPI/s | lost | chirpd cores | lists sent | drops "
           "| subscriber lists | seq gaps |",
           "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for x in cap + paced:
        on_ = x["publish"] == "on"
        out.append("| %s | %s | %s | %.1f | %s | %s | %s | %s | %s | %s |" % (
            "capacity" if x["mode"] == "capacity" else "paced, %.0f CPI/s" % (x["rate"] or 0),
            x["run"], x["publish"], x["cpi_per_s"], num(x.get("loss"), "%.5f"),
            num(x.get("chirpd_cpu"), "%.2f"), "%d" % x["sent"] if on_ else "–",
            "%d" % x["drops"] if on_ else "–", x["sub_det"] or "–", x["sub_gaps"] or "–"))
    mo, mn = med(off), med(on)
    cost = 1 - mn / mo if mo > 0 else float("inf")
    out += ["", "    %s publishing costs %.2f %% ≤ %.0f %% of capacity (median off %.1f, on "
            "%.1f CPI/s)" % ("PASS" if cost <= PUBLISH_COST + 1e-9 else "FAIL", 100 * cost,
                             100 * PUBLISH_COST, mo, mn)]
    if paced:
        po = [x for x in paced if x["publish"] == "off"]
        pn = [x for x in paced if x["publish"] == "on"]
        lo = med([x["loss"] or 0 for x in po]) if po else 0
        ln = med([x["loss"] or 0 for x in pn]) if pn else 0
        out.append("    %s paced at %.0f CPI/s: publishing loses %.5f of the CPIs, without %.5f "
                   "(median)" % ("PASS" if pn and ln <= lo + 1e-9 else "FAIL",
                                 paced[0]["rate"] or 0, ln, lo))
    # A paced run that lost CPIs at the input has seq gaps for them: only
    # the runs without input loss must show none.
    seen = [x for x in cap + paced if x["publish"] == "on"]
    judged = [x for x in seen if not (x.get("loss") or 0) > 0]
    gaps = sum(int(x["sub_gaps"] or 0) for x in judged)
    out.append("    %s the subscriber on the same host saw every list: %d seq gaps over %d "
               "runs without input loss" % (
                   "PASS" if judged and gaps == 0 and all(x["sub_det"] for x in judged)
                   else "FAIL", gaps, len(judged)))
    return out


def table_live(perf, r):
    """(m): capacity with pages open against none, then the latency at 80 %
    with a page open (live_latency of the same folder) and its criteria."""
    rows = r["rows"]
    none = [x["cpi_per_s"] for x in rows if x["pages"] == 0]
    some = [x["cpi_per_s"] for x in rows if x["pages"] > 0]
    if not none or not some:
        raise Bad("%s/live.tsv: want runs with no page and with pages" % rel(r["dir"]))
    x0 = rows[0]
    out = [provenance(r, " CPI %s, backend %s; CPIs delivered per second over the "
                         "measurement window; frames a second each page received." % (
                             x0["geometry"], x0["backend"])), "",
           "| run | pages | CPI/s | frames/s per page | frames sampled | frames skipped |",
           "|---:|---:|---:|---:|---:|---:|"]
    for x in rows:
        out.append("| %s | %d | %.1f | %s | %d | %d |" % (
            x["run"], x["pages"], x["cpi_per_s"], x["page_fps"] if x["pages"] else "–",
            x["live_frames"], x["skipped"]))
    mo, mn = med(none), med(some)
    ratio = mn / mo if mo > 0 else 0.0
    out += ["", "    %s capacity with %d pages open is %.2f %% ≥ %.0f %% of capacity with none "
            "(median %.1f against %.1f CPI/s)" % (
                "PASS" if ratio >= LIVE_MIN - 1e-9 else "FAIL", max(x["pages"] for x in rows),
                100 * ratio, 100 * LIVE_MIN, mn, mo)]
    lat = same_folder(perf, r, "live_latency")
    if lat:
        out += ["", "Latency at 80 % of capacity with a page open (the chain, detections "
                "only, `[live] enable`: the view's maps reduced by the backend when a frame is "
                "due; one SSE client reading every frame): " +
                provenance(lat, run_extra(lat["run"])), ""]
        out += table_latency(lat)[2:]
    else:
        out += ["", "Latency with a page open: not measured in this folder (live_latency.tsv)."]
    return out


def table_beams_cpu(r):
    """chirpd's CPU chain with beams against numpy, per CPI and B: each
    tool's best round (the least median), wall and CPU time, the ratios;
    the criterion on the same work (the maps: chirpd-beams-maps), in CPU
    time (wall swings with other load); the whole chain's ratio beside."""
    rows = [x for x in r["rows"] if x.get("tool") != "skipped"]
    skipped = [x for x in r["rows"] if x.get("tool") == "skipped"]
    keys = []
    for x in rows:
        k = (x["cpi"], int(x["B"]), int(x["L"]), x["mode"])
        if k not in keys:
            keys.append(k)
    label = {"chirpd-beams-maps": "chirpd, up to the maps (numpy's work)",
             "chirpd-beams": "chirpd, the chain (+ CFAR, maxima, monopulse)",
             "numpy-beams": "numpy: matmul + FFT, up to the maps"}
    out = [provenance(r, " One thread each; ms per CPI, the best round's median; the "
                         "ratio is numpy's time over chirpd's."), "",
           "| CPI CxPxR | L | beams | tool | ms | CPU ms | numpy / it, wall | numpy / it, CPU |",
           "|---|---:|---:|---|---:|---:|---:|---:|"]
    verdicts = []
    for cpi, B, L, mode in keys:
        best = {}
        for x in rows:
            if (x["cpi"], int(x["B"]), int(x["L"]), x["mode"]) != (cpi, B, L, mode):
                continue
            w, c = best.get(x["tool"], (float("inf"), float("inf")))
            best[x["tool"]] = (min(w, x["median_ms"]), min(c, x["cpu_ms"]))
        nu = best.get("numpy-beams")
        for t in ("chirpd-beams-maps", "chirpd-beams", "numpy-beams"):
            if t not in best:
                continue
            w, c = best[t]
            ratio = ("%.2f× | %.2f×" % (nu[0] / w, nu[1] / c) if nu and t != "numpy-beams"
                     else "– | –")
            out.append("| %s | %d | %d %s | %s | %.1f | %.1f | %s |" % (cpi, L, B, mode,
                                                                       label[t], w, c, ratio))
        same = best.get("chirpd-beams-maps")
        if not same:
            raise Bad("%s/beams_cpu.tsv: no chirpd-beams-maps row for %s" % (rel(r["dir"]), cpi))
        if nu:
            rc = nu[1] / same[1]
            verdicts.append("    %s %s, %d beams, the same work: chirpd %.2f× numpy's speed in "
                            "CPU time (≥ %.0f×)" % ("PASS" if rc >= BEAMS_VS_NUMPY else "FAIL",
                                                   cpi, B, rc, BEAMS_VS_NUMPY))
    for x in skipped:
        verdicts.append("    n/a  numpy skipped: %s" % x.get("why", ""))
    return out + [""] + verdicts


def table_chain_compare(r):
    rows = r["rows"]
    if not any(x.get("tool") == "chirpd-chain" for x in rows):
        return []
    out = ["", "The radar chain (compression, Doppler FFT, CA-CFAR, the detection list; "
           "bench_pc --chain against bench/compare/scipy_chain.py), same rounds:", "",
           "| CPI | chirpd chain MS/s (CPU time) | numpy/scipy chain MS/s | chirpd / scipy | "
           "≥ %.0f× |" % CHAIN_VS_SCIPY, "|---|---:|---:|---:|---|"]
    for cpi in sorted({x["cpi"] for x in rows if x.get("tool") == "chirpd-chain"}):
        c = compare_cells(rows, cpi, "chirpd-chain", "cpu_msps")
        s = compare_cells(rows, cpi, "scipy-chain", "cpu_msps")
        q = c[1] / s[1] if c and s else None
        out.append("| %s | %s | %s | %s | %s |" % (
            cpi, mmm(*c, fmt="%.1f"), mmm(*s, fmt="%.1f") if s else "–",
            "%.2f×" % q if q else "–", "–" if q is None else "PASS" if q >= CHAIN_VS_SCIPY
            else "FAIL"))
    return out


def mg_rows(r, phase):
    """The rows of one phase: the instances, then the total."""
    rows = [x for x in r["rows"] if x["phase"] == phase]
    return [x for x in rows if x["instance"] != "total"] + [x for x in rows if x["instance"] == "total"]


def mg_floor(r):
    """{instance or "total": the copy floor in CPI/s} (instance i on GPU i)."""
    fl = {x["gpu"]: x["cpi_s"] for x in mg_rows(r, "floor") if x["instance"] != "total"}
    out = {x["instance"]: fl.get(x["gpu"]) for x in r["rows"] if x["instance"] != "total"}
    tot = [x["cpi_s"] for x in mg_rows(r, "floor") if x["instance"] == "total"]
    out["total"] = tot[0] if tot else None
    return out


def opt(v, fmt):
    return "–" if v is None else fmt % v


def table_multigpu(r):
    run = r["run"]
    fl = mg_floor(r)
    ninst = len([x for x in mg_rows(r, "calibrate") if x["instance"] != "total"])
    out = [provenance(r, " Setup: %s. Windows: %s." % (run.get("setup", "?"), run.get("windows", "?"))),
           "", "Capacity: the copy floor is each GPU's copy limit for this CPI while every GPU "
           "copies at once (`copy_floor --limit`); alone is what each chirpd measured at its "
           "start; shared is what each delivered with all %d instances saturated at once "
           "(`chirpd-calibrate-host`), the figure its status reports." % ninst, "",
           "| instance | GPU | copy floor CPI/s | alone CPI/s | shared CPI/s | shared GS/s | shared / floor |",
           "|---|---|---:|---:|---:|---:|---:|"]
    for x in mg_rows(r, "calibrate"):
        tot = x["instance"] == "total"
        f = fl.get(x["instance"])
        a = sum(r["alone"].values()) if tot and r["alone"] else r["alone"].get(x["instance"])
        out.append("| %s | %s | %s | %s | %.1f | %.3f | %s |" % (
            "total (%d)" % ninst if tot else x["instance"], x["gpu"], opt(f, "%.1f"), opt(a, "%.1f"),
            x["cpi_s"], x["gsps"], "%.0f %%" % (100 * x["cpi_s"] / f) if f else "–"))
    out += ["", "Load: every instance at the same time, paced by its producer at the percentage of "
            "the capacity its status reports; latency = result peeked − the producer's commit "
            "stamp; lost = CPIs missing in the window (the restarted instance's outage "
            "included); in_ovr / out_drop: chirpd's input overruns and output drops.", "",
            "| phase | instance | asked CPI/s | delivered CPI/s | GS/s | of the floor | p50 ms | "
            "p99 ms | p99.9 ms | max ms | lost | in_ovr | out_drop |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    pct = {"load": run.get("load", "?"), "peak": run.get("peak", "?"), "independence": run.get("load", "?")}
    for ph in ("load", "peak", "independence"):
        for x in mg_rows(r, ph):
            tot = x["instance"] == "total"
            f = fl.get(x["instance"])
            out.append("| %s %s %% | %s | %s | %.1f | %.3f | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                ph, pct[ph], "total (%d)" % ninst if tot else x["instance"], x["asked_cpi_s"],
                x["cpi_s"], x["gsps"], "%.0f %%" % (100 * x["cpi_s"] / f) if f else "–",
                opt(x["p50_us"] and x["p50_us"] / 1e3, "%.3f"), opt(x["p99_us"] and x["p99_us"] / 1e3, "%.3f"),
                opt(x["p999_us"] and x["p999_us"] / 1e3, "%.3f"), opt(x["max_us"] and x["max_us"] / 1e3, "%.3f"),
                opt(x["lost"], "%.0f"), opt(x["input_overruns"], "%.0f"), opt(x["output_drops"], "%.0f")))
    out += ["", "Kill -9 and restart (from the run's report):", ""]
    out += ["    " + l for l in r["independence"]]
    out += ["", "Criteria (from the run's report):", ""]
    out += ["    " + c for c in r["criteria"]]
    return out


def restart_rows(r, label):
    rows = r["rows"]
    out = []
    for x in rows:
        out.append("| %s | %s | %.0f | %.0f | %.1f | %.0f | %.0f | %.0f | %.0f | %.1f | %d | %s |" % (
            label, x["restart"], x["gone_ms"], x["startup_ms"], x["config_plan"], x["backend"],
            x["capacity"], x["rings"], x["pipeline"], x["threads"], x["reused"], x["capacity_source"]))
    m = {k: med([x[k] for x in rows]) for k in NUMERIC["restart"]}
    out.append("| %s | **median** | **%.0f** | %.0f | %.1f | %.0f | %.0f | %.0f | %.0f | %.1f | | |" % (
        label, m["gone_ms"], m["startup_ms"], m["config_plan"], m["backend"], m["capacity"],
        m["rings"], m["pipeline"], m["threads"]))
    return out


def table_restart(perf, r):
    out = [provenance(r, " All times in ms: kill → output again from the kill to the first CPI the "
                         "new chirpd delivers; the rest chirpd's own start-up phases "
                         "(`chirpctl status` startup_ms)."), "",
           "| rings | restart | kill → output again | start-up | config+plan | backend | capacity "
           "| rings | pipeline | threads | rings reused | capacity from |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    out += restart_rows(r, "ordinary pages")
    huge = same_folder(perf, r, "restart_hugepages")
    if huge:
        out += restart_rows(huge, "huge pages")
    else:
        out += ["", "Both rings on huge pages (`[input] hugepages`, `[output] hugepages`): not "
                "measured in this run."]
    gone = max(x["gone_ms"] for x in r["rows"])
    out += ["", "    %s every restart processing again within 2 s of the kill: the longest %.0f ms" % (
        "PASS" if gone <= 2000 else "FAIL", gone),
            "    %s every restart reused both rings and the cached capacity" % (
        "PASS" if all(x["reused"] >= 2 and x["capacity_source"] == "cache" for x in r["rows"])
        else "FAIL")]
    return out


def multigpu_headline(r):
    """README's row for N GPUs, from the newest multigpu results."""
    cal = [x for x in mg_rows(r, "calibrate") if x["instance"] == "total"]
    fl = mg_floor(r).get("total")
    n = len([x for x in mg_rows(r, "calibrate") if x["instance"] != "total"])
    peak = [c for c in r["criteria"] if c.split()[1] == "M2"]
    r1 = next((c for c in r["criteria"] if c.split()[1] == "R1"), None)
    i2 = next((c for c in r["criteria"] if c.split()[1] == "I2"), None)
    geo = "×".join(r["run"].get("geometry", "? ? ?").split())
    cells = []
    if cal and fl:
        cells.append("shared capacity %.0f CPI/s in total = %.0f %% of the host's %d-GPU copy floor" % (
            cal[0]["cpi_s"], 100 * cal[0]["cpi_s"] / fl, n))
    if peak:
        cells.append("at %s %% of it %s" % (r["run"].get("peak", "?"), "0 lost" if all(
            c.startswith("PASS") for c in peak) else "CPIs lost"))
    if r1:
        m = re.search(r"processing again ([\d.]+) s", r1)
        cells.append("kill -9 of one: processing again after %s s%s" % (
            m.group(1) if m else "?", ", the other's tail unmoved" if i2 and i2.startswith("PASS")
            else ", the other's tail moved" if i2 else ""))
    return "| %d GPUs, one chirpd each, %s | %s (`doc/perf/%s/`) |" % (
        n, geo, "; ".join(cells) or "no results", r["folder"])


# ---- the headline --------------------------------------------------------

def headline(perf, found):
    """Five rows from one run: the newest folder with GPU throughput,
    else the newest folder with any result."""
    if found["throughput"]:
        folder = found["throughput"][0][1]
    else:
        allf = sorted((d, f) for k in KINDS for d, f in found[k])
        if not allf:
            return ["No benchmark results yet (doc/perf is empty)."]
        folder = allf[-1][1]
    got = {k: load_kind(perf, folder, k) for k in KINDS
           if os.path.exists(os.path.join(perf, folder, k + ".tsv"))}
    none = "not measured in this run (doc/performance.md has the newest of each)"
    rows = []
    thr = got.get("throughput")
    x = None
    if thr:
        x = next((b for b in best_rows(thr["rows"]) if b["geometry"] == "4x128x4096"
                  and b["format"] == "cf32" and b["output"] == "complex"), None)
    if x:
        y, what = (x["d_daemon"], "the daemon") if x["d_daemon"] > 0 else (
            x["c_registered"], "the backend from registered host memory")
        rows.append("| Throughput, 4×128×4096 cf32 → complex | %s: %.2f GS/s = %.0f %% of the "
                    "copy limit (%.2f GS/s) |" % (what, y, 100 * y / x["a_both"], x["a_both"]))
        rows.append("| Against a naive 2-stream loop, same CPI | %.2f× (%.2f GS/s) |" % (
            y / x["b_naive"], x["b_naive"]))
    else:
        rows.append("| Throughput, 4×128×4096 cf32 → complex | %s |" % none)
        rows.append("| Against a naive 2-stream loop | %s |" % none)
    lat = got.get("latency")
    if lat:
        c1 = next((c for c in lat["criteria"] if re.match(r"\S+ +C1", c)), None)
        c23 = [c for c in lat["criteria"] if re.match(r"\S+ +C[23]", c)]
        setup = lat["run"].get("setup", "").split(";")[0]
        rows.append("| Losses at 90 %% of capacity%s | %s |" % (
            " (%s)" % setup if setup else "", c1 or "no 90 % load in this run"))
        rows.append("| Latency at 80 %% against the lossless floor | %s |" % (
            "; ".join(c23) if c23 else "no 80 % load in this run"))
    else:
        rows.append("| Losses at 90 %% of capacity | %s |" % none)
        rows.append("| Latency at 80 %% against the lossless floor | %s |" % none)
    cmp_ = got.get("compare")
    cup = got.get("cupy")
    pairs = [(c, b) for c, b in cupy_vs_backend(cup, thr) if b and c["cpi"] == "4x128x4096"] \
        if cup and not cmp_ else []
    if pairs:
        # A GPU run has no CPU comparison: its fifth row is the GPU one.
        c, b = pairs[0]
        rows.append("| On the GPU against CuPy's pulse_compression, 4×128×4096 | %.2f× "
                    "(chirpd %.1f GS/s, CuPy %.1f GS/s, data on the device) |" % (
                        b["c_device"] / c["gsps_median"], b["c_device"], c["gsps_median"]))
    elif cmp_:
        c, s, g = (compare_cells(cmp_["rows"], "4x128x4096", t, "cpu_msps")
                   for t in ("chirpd", "scipy", "gnuradio"))
        cell = ("chirpd %.0f MS/s per thread: %s scipy, %s GNU Radio (CPU time, medians)" % (
            c[1], "%.2f×" % (c[1] / s[1]) if s else "no", "%.2f×" % (c[1] / g[1]) if g else "no")
            if c else "no 4×128×4096 row in this run")
        rows.append("| CPU backend against scipy and GNU Radio, 4×128×4096 | %s |" % cell)
    else:
        rows.append("| CPU backend against scipy and GNU Radio | %s |" % none)
    d = os.path.join(perf, folder)
    cmds = []
    try:
        with open(os.path.join(d, "runs.tsv")) as f:
            cmds = [l.rstrip("\n").partition("\t")[2] for l in f if l.strip()]
    except OSError:
        cmds = [got[k]["meta"]["command"] for k in KINDS if k in got]
    mg = [f for _, f in found["multigpu"]]
    rows.append(multigpu_headline(load_kind(perf, mg[0], "multigpu")) if mg else
                "| Several GPUs, one chirpd each | not measured yet |")
    m = next(iter(got.values()))["meta"]
    dirty = any(g["meta"]["dirty"] != "no" for g in got.values())
    commits = sorted({g["meta"]["commit"] for g in got.values()})
    machine = m["cpu"] + ("" if m["gpu"] == "none" else ", " + m["gpu"])
    return (["| Headline | Result |", "|---|---|"] + rows +
            ["", "The first five rows are one run: %s, %s, commit %s%s; `doc/perf/%s/`, made with "
             "%s; the last names its own. Method, criteria "
             "and every table: [doc/performance.md](doc/performance.md)." % (
                 machine, m["date"][:10], ", ".join("`%s`" % c for c in commits),
                 " (dirty tree)" if dirty else "", folder,
                 " then ".join("`%s`" % c for c in cmds))])


# ---- writing -------------------------------------------------------------

def replace_block(text, begin, end, lines, path):
    a, b = text.find(begin), text.find(end)
    if a < 0 or b < 0 or b < a:
        raise Bad("%s: lacks the markers %s ... %s" % (rel(path), begin, end))
    return text[:a + len(begin)] + "\n" + "\n".join(lines) + "\n" + text[b:]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--perf", default="doc/perf")
    ap.add_argument("--page", default="doc/performance.md")
    ap.add_argument("--readme", default="README.md")
    a = ap.parse_args()
    try:
        found = scan(a.perf)
        newest = {k: load_kind(a.perf, found[k][0][1], k) for k in KINDS if found[k]}
        tables = {}
        for k in KINDS:
            if k in ("modes", "radar_cupy", "detect_latency", "corner", "restart_hugepages",
                     "live_latency", "beams_latency"):
                continue
            if k not in newest:
                tables[k] = ["No results yet: run `%s` (doc/performance.md, *How to "
                             "reproduce*)." % ("scripts/perf-run.sh cpu doc/perf"
                                               if k == "compare" else
                                               "scripts/perf-run.sh gpu doc/perf" +
                                               (" " + k if k in ("radar", "detect", "startup",
                                                                 "net", "publish", "multigpu",
                                                                 "restart", "live", "beams_cpu",
                                                                 "beam", "beams")
                                                else ""))]
                continue
            r = newest[k]
            if k == "throughput":
                tables[k] = table_throughput(r)
            elif k == "latency":
                tables[k] = table_latency(r)
            elif k == "cupy":
                t = os.path.join(r["dir"], "throughput.tsv")
                thr = load_kind(a.perf, r["folder"], "throughput") if os.path.exists(t) else None
                tables[k] = table_cupy(r, thr)
            elif k == "radar":
                tables[k] = table_radar(a.perf, r)
            elif k == "detect":
                tables[k] = table_detect(a.perf, r)
            elif k == "startup":
                tables[k] = table_startup(r)
            elif k == "net":
                tables[k] = table_net(r)
            elif k == "publish":
                tables[k] = table_publish(r)
            elif k == "multigpu":
                tables[k] = table_multigpu(r)
            elif k == "restart":
                tables[k] = table_restart(a.perf, r)
            elif k == "live":
                tables[k] = table_live(a.perf, r)
            elif k == "beams_cpu":
                tables[k] = table_beams_cpu(r)
            elif k == "beam":
                tables[k] = table_beam(r)
            elif k == "beams":
                tables[k] = table_beams(a.perf, r)
            else:
                tables[k] = table_compare(r) + table_chain_compare(r)
        # (e): the switching cost from the newest throughput results, the
        # latency with modes from the newest modes results; each says
        # "not measured yet" where its results are missing.
        tables["modes"] = (table_switch(newest.get("throughput")) + [""] +
                           table_modes(a.perf, newest.get("modes")))
        try:
            page = open(a.page).read()
            readme = open(a.readme).read()
        except OSError as e:
            raise Bad("%s: %s" % (rel(e.filename), e.strerror))
        for k in KINDS:
            if k in ("radar_cupy", "detect_latency", "corner", "restart_hugepages",
                     "live_latency", "beams_latency"):
                continue
            page = replace_block(page, "<!-- perf-table: %s begin -->" % k,
                                 "<!-- perf-table: %s end -->" % k, [""] + tables[k] + [""],
                                 a.page)
        readme = replace_block(readme, HEAD[0], HEAD[1], headline(a.perf, found), a.readme)
    except Bad as e:
        sys.stderr.write("bench-report: %s\n" % e)
        return 1
    with open(a.page, "w") as f:
        f.write(page)
    with open(a.readme, "w") as f:
        f.write(readme)
    print("bench-report: %s and %s regenerated from %s (%s)" % (
        a.page, a.readme, a.perf, ", ".join("%s: %s" % (k, newest[k]["folder"]) if k in newest
                                            else "%s: none" % k for k in KINDS)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
