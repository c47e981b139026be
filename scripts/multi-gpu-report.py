#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""multi-gpu-report.py OUT — report.md and results.tsv of a
scripts/bench-multi-gpu.sh run from the files in OUT/work (stdlib only).

Per phase and instance: delivered CPI/s and GS/s (C*P*R complex input samples
per CPI), latency p50/p99/p99.9/max (the probe's, nearest rank), CPIs lost
(the probe's first_sample gaps + flagged blocks), chirpd's input overruns and
output drops over the window, the producer's late ticks, the verification;
a total row per phase (sums; percentiles over every instance's samples
pooled). Placement from chirpctl status (numa.node, numa.cpus) and the rings'
pages in chirpd's /proc/PID/numa_maps. The copy floor (copy_floor --limit on
every GPU at once). The host calibration (each instance's capacity alone
and shared, from its status after chirpd-calibrate-host). The independence
test's lines: the survivors' tail and losses, the restarted instance's time
to processing again, whether it reused its rings and cached capacity, and
its start-up phases. Prints the report too."""
import glob, json, math, os, re, sys

out = sys.argv[1]
work = os.path.join(out, "work")


def kv(path):
    try:
        with open(path) as f:
            for line in f:
                if re.match(r"^(probe|copylimit) ", line):
                    return dict(re.findall(r"(\w+)=(\S+)", line))
    except OSError:
        pass
    return None


def js(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def get(o, dotted):
    for k in dotted.split("."):
        o = o.get(k) if isinstance(o, dict) else None
    return o


def text(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def raw(path):
    v = []
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    v.append(float(line))
    except (OSError, ValueError):
        pass
    return v


def pct(sorted_v, q):
    if not sorted_v:
        return float("nan")
    i = max(1, math.ceil(q * len(sorted_v))) - 1
    return sorted_v[min(i, len(sorted_v) - 1)]


def ms(us):
    return "n/a" if us is None or (isinstance(us, float) and math.isnan(us)) else "%.3f" % (float(us) / 1e3)


meta, instances = {}, []
for line in text(os.path.join(work, "meta.tsv")).splitlines():
    f = line.split("\t")
    if f[0] == "instance":
        instances.append(f[1:])
    elif len(f) >= 2:
        meta[f[0]] = f[1]
C, P, R = (int(x) for x in meta["geometry"].split())
spc = C * P * R   # complex input samples per CPI
gpu_node = {i[0]: i[2] for i in instances}
nodes = int(meta.get("numa_nodes", "0") or 0)
events = dict(l.split("\t", 1) for l in text(os.path.join(work, "events.tsv")).splitlines() if "\t" in l)

runs = []
for line in text(os.path.join(work, "runs.tsv")).splitlines():
    ph, inst, gpu, asked, secs = line.split("\t")
    b = os.path.join(work, "%s-%s" % (ph, inst))
    p = kv(b + "-probe.txt") or {}
    s0, s1 = js(b + "-stats0.json") or {}, js(b + "-stats1.json") or {}
    victim = ph == "independence" and events.get("victim") == inst
    d = {}
    for k in ("input_overruns", "output_drops", "cpis_out"):
        a, z = s0.get(k), s1.get(k)
        # the restarted chirpd's counters start at its restart: absolute
        d[k] = z if victim else (z - a if isinstance(a, int) and isinstance(z, int) else None)
    m = re.search(r"pacing .*?: (\d+) late ticks", text(b + "-feed.log"))
    vt = text(b + "-verify.log")
    vm = re.search(r"verified (\d+), mismatches (\d+)", vt)
    ve = re.search(r"^exit (\d+)", vt, re.M)
    st = js(b + "-status.json") or {}
    rings = {}
    for l in text(b + "-numa_maps-open.txt").splitlines():
        fm = re.search(r"file=/dev/shm/\S+-(in|out)\b", l)
        if fm:
            for n, c in re.findall(r"\bN(\d+)=(\d+)", l):
                rings.setdefault(fm.group(1), {}).setdefault(int(n), 0)
                rings[fm.group(1)][int(n)] += int(c)
    lat = raw(b + "-lat.txt")
    try:
        t_open = os.path.getmtime(b + "-open")
    except OSError:
        t_open = None
    runs.append(dict(ph=ph, inst=inst, gpu=gpu, asked=asked, p=p, d=d, victim=victim,
                     late=int(m.group(1)) if m else (0 if asked == "saturated" else None),
                     verified=int(vm.group(1)) if vm else 0, mism=int(vm.group(2)) if vm else None,
                     vexit=int(ve.group(1)) if ve else None, st=st, rings=rings, lat=lat, t_open=t_open,
                     stats1=s1))


def na(v):
    return "n/a" if v is None else str(v)


def ring_desc(rings):
    if not rings:
        return "?"
    parts = []
    for name in ("in", "out"):
        r = rings.get(name)
        if not r:
            continue
        tot = sum(r.values()) or 1
        parts.append("%s " % name + "+".join("N%d %d %%" % (n, round(100 * c / tot)) for n, c in sorted(r.items())))
    return ", ".join(parts) or "?"


rep, tsv, crit = [], [], []
tsv.append("\t".join(["phase", "instance", "gpu", "asked_cpi_s", "cpi_s", "gsps", "p50_us", "p99_us", "p999_us",
                      "max_us", "lost", "input_overruns", "output_drops", "late_ticks", "verified", "mismatches",
                      "numa_node", "cpus", "ring_nodes"]))
for k in ("command", "date", "machine", "commit", "setup", "windows"):
    rep.append("%s: %s" % (k, meta.get(k, "?")))
rep.append("")

# ---- floor ----
floors = {}
for path in sorted(glob.glob(os.path.join(work, "floor-gpu*.txt"))):
    c = kv(path)
    if c:
        floors[os.path.basename(path)[6:-4]] = c
if floors:
    rep.append("## Copy floor: every GPU at once (copy_floor --limit, both directions, this CPI's bytes)")
    rep.append("")
    rep.append("| GPU | bus | CPI/s | GS/s | H2D GB/s | D2H GB/s | late start |")
    rep.append("|---|---|---:|---:|---:|---:|---:|")
    tc = tg = 0.0
    for g, c in floors.items():
        cps = float(c["cpi_per_s"])
        tc += cps
        tg += cps * spc / 1e9
        rep.append("| %s | %s | %.1f | %.3f | %s | %s | %s |" % (g, c["bus"], cps, cps * spc / 1e9, c["in_gbps"],
                                                               c["out_gbps"], c["late_start"]))
        tsv.append("\t".join(["floor", g, c["bus"], "-", "%.2f" % cps, "%.4f" % (cps * spc / 1e9)] + ["-"] * 13))
    rep.append("| total (%d) | | %.1f | %.3f | | | |" % (len(floors), tc, tg))
    tsv.append("\t".join(["floor", "total", "-", "-", "%.2f" % tc, "%.4f" % tg] + ["-"] * 13))
    rep.append("")
else:
    rep.append("copy floor: none (%s)" % ("CPU backend: no GPU, no copy floor" if meta.get("backend") == "cpu"
                                          else "--no-copy-floor"))
    rep.append("")

# ---- host calibration ----
cal = []
for name, gpu, _node in instances:
    st = js(os.path.join(work, "calibrate-%s-status.json" % name))
    if st:
        cal.append((name, gpu, get(st, "capacity.alone.cpi_per_s"), get(st, "capacity.shared.cpi_per_s")))


def floor_of(gpu):
    return next((c for c in floors.values() if gpu != "-" and c["bus"].lower().endswith(gpu.lower()[-7:])), None)


if cal:
    rep.append("## Host calibration: every instance saturated at once (chirpd-calibrate-host)")
    rep.append("")
    rep.append("alone: the capacity chirpd measured at start with the host to itself; shared: delivered CPI/s "
               "with every instance saturated at once, stored in each capacity cache (status capacity.shared); "
               "floor: this GPU's copy limit while every GPU copies.")
    rep.append("")
    rep.append("| instance | GPU | alone CPI/s | shared CPI/s | shared / alone | floor CPI/s | shared / floor |")
    rep.append("|---|---|---:|---:|---:|---:|---:|")
    ta = tsh = tfl = 0.0
    for name, gpu, alone, shared in cal:
        fl = floor_of(gpu)
        flc = float(fl["cpi_per_s"]) if fl else None
        ta += alone or 0
        tsh += shared or 0
        tfl += flc or 0
        rep.append("| %s | %s | %.1f | %s | %s | %s | %s |" % (
            name, gpu, alone or 0, "%.1f" % shared if shared else "none",
            "%.0f %%" % (100 * shared / alone) if shared and alone else "n/a",
            "%.1f" % flc if flc else "-", "%.0f %%" % (100 * shared / flc) if shared and flc else "-"))
        tsv.append("\t".join(["calibrate", name, gpu, "saturated", "%.2f" % (shared or 0),
                              "%.4f" % ((shared or 0) * spc / 1e9)] + ["-"] * 13))
    rep.append("| total (%d) | - | %.1f | %.1f | %s | %s | %s |" % (
        len(cal), ta, tsh, "%.0f %%" % (100 * tsh / ta) if ta else "n/a", "%.1f" % tfl if tfl else "-",
        "%.0f %%" % (100 * tsh / tfl) if tfl else "-"))
    tsv.append("\t".join(["calibrate", "total", "-", "saturated", "%.2f" % tsh, "%.4f" % (tsh * spc / 1e9)] +
                         ["-"] * 13))
    rep.append("")

# ---- results ----
rep.append("## Results per instance and in total")
rep.append("")
rep.append("Latency = result peeked − the producer's commit stamp, ms. lost: CPIs missing in the window "
           "(first_sample gaps, flagged blocks); in_ovr / out_drop: chirpd's input overruns / output drops "
           "over the window%s; late: the producer's late ticks; verify: results recomputed on the CPU "
           "reference after the window / mismatches." %
           (" (the restarted instance: since its restart)" if events else ""))
rep.append("")
rep.append("| phase | instance | GPU | asked CPI/s | delivered CPI/s | GS/s | p50 | p99 | p99.9 | max | lost | in_ovr | out_drop | late | verify |")
rep.append("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
phases = []
for r in runs:
    if r["ph"] not in phases:
        phases.append(r["ph"])
totals = {}
for ph in phases:
    rs = [r for r in runs if r["ph"] == ph]
    for r in rs:
        p = r["p"]
        cps = float(p.get("rate", "nan"))
        gs = cps * spc / 1e9
        node, cpus = get(r["st"], "numa.node"), get(r["st"], "numa.cpus")
        rep.append("| %s | %s | %s | %s | %.1f | %.3f | %s | %s | %s | %s | %s | %s | %s | %s | %s/%s |" % (
            ph, r["inst"], r["gpu"], r["asked"], cps, gs, ms(p.get("p50_us")), ms(p.get("p99_us")),
            ms(p.get("p999_us")), ms(p.get("max_us")), p.get("lost", "n/a"), na(r["d"]["input_overruns"]),
            na(r["d"]["output_drops"]), na(r["late"]), r["verified"], na(r["mism"])))
        tsv.append("\t".join(str(x) for x in [
            ph, r["inst"], r["gpu"], r["asked"], "%.2f" % cps, "%.4f" % gs, p.get("p50_us", "-"),
            p.get("p99_us", "-"), p.get("p999_us", "-"), p.get("max_us", "-"), p.get("lost", "-"),
            na(r["d"]["input_overruns"]), na(r["d"]["output_drops"]), na(r["late"]), r["verified"],
            na(r["mism"]), na(node), cpus if cpus else "-", ring_desc(r["rings"]).replace(", ", ";")]))
    pooled = sorted(x for r in rs for x in r["lat"])
    tcps = sum(float(r["p"].get("rate", 0)) for r in rs)
    asked = "saturated" if rs[0]["asked"] == "saturated" else "%.1f" % sum(float(r["asked"]) for r in rs)

    def ssum(key):
        v = [r["d"][key] for r in rs]
        return None if None in v else sum(v)
    lost = sum(int(r["p"].get("lost", 0)) for r in rs)
    late = None if None in [r["late"] for r in rs] else sum(r["late"] for r in rs)
    mism = None if None in [r["mism"] for r in rs] else sum(r["mism"] for r in rs)
    totals[ph] = dict(lost=lost, in_ovr=ssum("input_overruns"), out_drop=ssum("output_drops"))
    rep.append("| %s | total (%d) | - | %s | %.1f | %.3f | %s | %s | %s | %s | %d | %s | %s | %s | %d/%s |" % (
        ph, len(rs), asked, tcps, tcps * spc / 1e9, ms(pct(pooled, 0.5)), ms(pct(pooled, 0.99)),
        ms(pct(pooled, 0.999)), ms(pooled[-1] if pooled else None), lost, na(totals[ph]["in_ovr"]),
        na(totals[ph]["out_drop"]), na(late), sum(r["verified"] for r in rs), na(mism)))
    tsv.append("\t".join(str(x) for x in [
        ph, "total", "-", asked, "%.2f" % tcps, "%.4f" % (tcps * spc / 1e9), "%.1f" % pct(pooled, 0.5),
        "%.1f" % pct(pooled, 0.99), "%.1f" % pct(pooled, 0.999), "%.1f" % (pooled[-1] if pooled else float("nan")),
        lost, na(totals[ph]["in_ovr"]), na(totals[ph]["out_drop"]), na(late),
        sum(r["verified"] for r in rs), na(mism), "-", "-", "-"]))
rep.append("")
if floors:
    for r in runs:
        if r["ph"] == "capacity":
            c = next((c for c in floors.values() if c["bus"].lower().endswith(r["gpu"].lower()[-7:])), None)
            if c:
                rep.append("capacity / floor: %s %.1f / %.1f CPI/s = %.0f %%" % (
                    r["inst"], float(r["p"].get("rate", 0)), float(c["cpi_per_s"]),
                    100 * float(r["p"].get("rate", 0)) / float(c["cpi_per_s"])))
    rep.append("")

# ---- placement ----
rep.append("## Placement (chirpctl status: numa.node, numa.cpus; ring pages from /proc/PID/numa_maps)")
rep.append("")
if nodes <= 1:
    rep.append("The host reports %d NUMA node: every instance's threads and rings are on it; "
               "placement cannot separate the instances." % nodes)
    rep.append("")
rep.append("| phase | instance | GPU | GPU's node (sysfs) | data-thread node | data-thread CPUs | source | ring memory |")
rep.append("|---|---|---|---|---|---|---|---|")
for r in runs:
    node = get(r["st"], "numa.node")
    rep.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
        r["ph"], r["inst"], r["gpu"], gpu_node.get(r["inst"], "-"),
        "none" if node is None or node < 0 else node, get(r["st"], "numa.cpus") or "all",
        get(r["st"], "numa.source") or "?", ring_desc(r["rings"])))
rep.append("")

# ---- criteria ----
for ph, tag, key in (("load", "M1", "load"), ("peak", "M2", "peak")):
    for r in [r for r in runs if r["ph"] == ph]:
        tot = int(r["p"].get("lost", 0)) + (r["d"]["input_overruns"] or 0) + (r["d"]["output_drops"] or 0)
        crit.append("%s %s %s %s %%: %s lost %s, in_ovr %s, out_drop %s (asked %s CPI/s)" % (
            "PASS" if tot == 0 else "FAIL", tag, ph, meta.get(key, "?"), r["inst"], r["p"].get("lost", "n/a"),
            na(r["d"]["input_overruns"]), na(r["d"]["output_drops"]), r["asked"]))
ind = [r for r in runs if r["ph"] == "independence"]
victim_startup = None
# the victim first: its start-up goes beside the survivors' lines
ind.sort(key=lambda r: not r["victim"])
if ind and events:
    t_kill, t_back = float(events["t_kill"]), float(events["t_back"])
    rep.append("## Independence: %s killed -9 and restarted" % events["victim"])
    rep.append("")
    for r in ind:
        p = r["p"]
        if r["victim"]:
            after = r["stats1"].get("cpis_out")
            ok = isinstance(after, int) and after > 0 and r["verified"] > 0 and r["mism"] == 0
            rep.append("independence: restarted %s: killed -9 at %.1f s into its window, answering again %.1f s "
                       "later; resumed: %s CPIs delivered after the restart, %s lost (gaps by first_sample), "
                       "output ring re-attached %s times, verify %d, %s mismatches" % (
                           r["inst"], t_kill - r["t_open"] if r["t_open"] else float("nan"), t_back - t_kill,
                           na(after), p.get("lost", "n/a"), p.get("reattached", "n/a"), r["verified"],
                           na(r["mism"])))
            crit.append("%s I3 restarted %s resumed its stream: %s CPIs after the restart, verify %d/%s mismatches" % (
                "PASS" if ok else "FAIL", r["inst"], na(after), r["verified"], na(r["mism"])))
            log = text(os.path.join(work, "independence-%s-chirpd.log" % r["inst"]))
            log = log.split("--- restarted after kill -9 ---", 1)[-1]
            reused = len(re.findall(r"ring \S+: reused", log))
            recreated = re.findall(r"ring \S+: [^\n]*re-created[^\n]*", log)
            cached = "from the capacity cache" in log and not re.search(r"measured with depth", log)
            feed_re = "re-attach" in text(os.path.join(work, "independence-%s-feed.log" % r["inst"]))
            probe_re = p.get("reattached", "n/a")
            t_out = float(events["t_out"]) if events.get("t_out") else None
            sm = get(js(os.path.join(work, "independence-%s-status-restarted.json" % r["inst"])), "startup_ms") or {}
            phases = ", ".join("%s %.0f" % (k, sm[k]) for k in ("backend", "capacity", "rings", "pipeline", "threads")
                               if isinstance(sm.get(k), (int, float)))
            rep.append("independence: restarted %s: processing again %s s after the kill (started %s s after it, "
                       "RestartSec); start-up %s ms: %s; rings reused %d%s; capacity %s; producer re-attached: %s, "
                       "consumer re-attached %s times" % (
                           r["inst"], "%.2f" % (t_out - t_kill) if t_out else "n/a", events.get("restart_sec", "?"),
                           "%.0f" % sm["total"] if isinstance(sm.get("total"), (int, float)) else "n/a",
                           phases or "n/a", reused, " (%s)" % "; ".join(recreated) if recreated else "",
                           "from the cache" if cached else "measured again", "yes" if feed_re else "no", probe_re))
            crit.append("%s R1 restarted %s processing again %s s after the kill (<= 2 s)" % (
                "PASS" if t_out and t_out - t_kill <= 2.0 else "FAIL", r["inst"],
                "%.2f" % (t_out - t_kill) if t_out else "n/a"))
            crit.append("%s R2 restarted %s kept its peers: rings reused %d of 2, capacity %s, producer re-attached %s, "
                        "consumer re-attached %s" % (
                            "PASS" if reused >= 2 and not recreated and cached and not feed_re and probe_re == "0"
                            else "FAIL", r["inst"], reused, "cached" if cached else "measured again",
                            "yes" if feed_re else "no", probe_re))
            victim_startup = "%s starting again, %s ms (%s)" % (
                r["inst"], "%.0f" % sm["total"] if isinstance(sm.get("total"), (int, float)) else "n/a",
                phases or "n/a")
            continue
        rate = float(p.get("rate", 0)) or 1.0
        lat = r["lat"]
        k0 = int(max(0.0, t_kill - r["t_open"]) * rate) if r["t_open"] else 0
        k1 = int(max(0.0, t_back + 2 - r["t_open"]) * rate) if r["t_open"] else 0
        seg = [sorted(lat[:k0]), sorted(lat[k0:k1]), sorted(lat[k1:])]
        p999 = [pct(s, 0.999) for s in seg]
        lost = int(p.get("lost", 0))
        io, od = r["d"]["input_overruns"], r["d"]["output_drops"]
        rep.append("independence: survivor %s: lost %d (in_ovr %s, out_drop %s); p99.9 before %s ms (%d), "
                   "kill window %s ms (%d), after %s ms (%d)" % (
                       r["inst"], lost, na(io), na(od), ms(p999[0]), len(seg[0]), ms(p999[1]), len(seg[1]),
                       ms(p999[2]), len(seg[2])))
        crit.append("%s I1 survivor %s lost nothing: lost %d, in_ovr %s, out_drop %s" % (
            "PASS" if lost == 0 and io == 0 and od == 0 else "FAIL", r["inst"], lost, na(io), na(od)))
        lim = 1.5 * p999[0] + 100 if not math.isnan(p999[0]) else float("nan")
        worst = max((x for x in p999[1:] if not math.isnan(x)), default=float("nan"))
        crit.append("%s I2 survivor %s tail unmoved: p99.9 kill window %s, after %s <= 1.5 x before %s + 0.1 = %s ms" % (
            "PASS" if not math.isnan(lim) and not math.isnan(worst) and worst <= lim else "FAIL", r["inst"],
            ms(p999[1]), ms(p999[2]), ms(p999[0]), ms(lim)))
    if victim_startup:
        rep.append("Beside the survivors in the kill window: %s." % victim_startup)
    rep.append("")
elif "independence" in meta.get("modes", "") and len(instances) < 2:
    rep.append("independence: skipped (one instance)")
    rep.append("")
for r in runs:
    if r["mism"] is None or r["mism"] > 0 or r["verified"] == 0:
        crit.append("FAIL V %s %s: verify %d, mismatches %s, chirp-tap exit %s" % (
            r["ph"], r["inst"], r["verified"], na(r["mism"]), na(r["vexit"])))
if all(r["mism"] == 0 and r["verified"] > 0 for r in runs):
    crit.append("PASS V every verification: %d results recomputed, 0 mismatches" % sum(r["verified"] for r in runs))
rep.append("## Criteria (information; see the script's header)")
rep.append("")
rep.extend(crit)

with open(os.path.join(out, "report.md"), "w") as f:
    f.write("\n".join(rep) + "\n")
with open(os.path.join(out, "results.tsv"), "w") as f:
    f.write("\n".join(tsv) + "\n")
print("\n".join(rep))
