#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench-cupy.py — CuPy's cupyx.signal.pulse_compression on chirpd's CPIs,
for the performance page's GPU comparison (table (c) of doc/performance.md).

    bench-cupy.py [--cpis "4x128x4096:512 16x128x9000:1000"] [--reps 20]
                  [--warmup 5] [--gpu 0] [--out FILE]

Per CPI shape CxPxR:L: C*P pulses of R complex64 samples, random (never
zeros), already on the device (as bench_gpu's (c) "device-resident": no
PCIe), and the reference chirpd builds for it: an LFM of L samples at
25 MHz sample rate, 10 MHz bandwidth, Hamming-windowed in time (the
shipped conf/chirpd.conf's waveform). pulse_compression(x, ref, nfft=N)
with N the smallest 2^a 3^b 5^c 7^d >= R + L - 1, so that the correlation
is linear (no wrap-around), as chirpd's is. Each repeat is one call timed
with CUDA events after --warmup calls (plan creation and first-use costs
excluded); min / median / max over --reps. GS/s = C*P*R input samples /
time. A check before timing: a copy of the reference placed at range gate
300 of pulse 0 must peak at gate 300 (the output is the correlation at
non-negative lags, the gate layout chirpd delivers).

--chain: the radar chain instead, as radar_gpu's (c) runs it on the same
CPIs: pulse_compression, then per channel pulse_doppler with a Hamming
window over the P pulses and nfft 256, |.|^2, fftshift along Doppler (bins
ordered as chirpd's), and ca_cfar with guard (1, 2), reference (2, 8) cells
(Doppler, range) and pfa 1e-5. Timed the same way, the whole chain per
repeat; the TSV's tool column reads "cupy-chain".

Output: a table on stdout and, with --out FILE, a TSV: tool, cpi, L, nfft,
reps, min_ms, median_ms, max_ms, gsps_median, gsps_min, gsps_max, cupy,
gpu. Exit 0; 1 when the check fails or CuPy errs; 2 usage; 77 (skipped)
when cupy cannot be imported or no GPU is usable.
"""
import argparse
import math
import re
import sys


def fast_size(n):
    """The smallest 2^a 3^b 5^c 7^d >= n (cuFFT's fast sizes)."""
    best = None
    p2 = 1
    while p2 < 2 * n:
        p3 = p2
        while p3 < 2 * n:
            p5 = p3
            while p5 < 2 * n:
                p7 = p5
                while p7 < 2 * n:
                    if p7 >= n and (best is None or p7 < best):
                        best = p7
                    p7 *= 7
                p5 *= 5
            p3 *= 3
        p2 *= 2
    return best


def parse_cpis(text):
    out = []
    for tok in text.split():
        m = re.fullmatch(r"(\d+)x(\d+)x(\d+):(\d+)", tok)
        if not m:
            raise ValueError("--cpis %r: want CxPxR:L, e.g. 4x128x4096:512" % tok)
        c, p, r, l = (int(x) for x in m.groups())
        if min(c, p, r, l) < 1 or l > r:
            raise ValueError("--cpis %r: want positive sizes and L <= R" % tok)
        out.append((c, p, r, l))
    if not out:
        raise ValueError("--cpis is empty")
    return out


def lfm(np, L, fs=25e6, bw=10e6):
    """An LFM of L samples sweeping bw around 0 Hz at fs, Hamming-windowed."""
    t = (np.arange(L) - (L - 1) / 2.0) / fs
    k = bw / (L / fs)
    ref = np.exp(1j * math.pi * k * t * t) * np.hamming(L)
    return ref.astype(np.complex64)


def one_cpi(cp, np, pulse_compression, shape, reps, warmup):
    """(nfft, [ms per call]) for one CPI shape; raises on a failed check."""
    c, p, r, l = shape
    nfft = fast_size(r + l - 1)
    rng = np.random.default_rng(12345)
    host = (rng.standard_normal((c * p, r)) + 1j * rng.standard_normal((c * p, r)))
    host = host.astype(np.complex64)
    ref = lfm(np, l)
    host[0, :] = 0
    host[0, 300:300 + l] = ref   # the check: a target at gate 300 of pulse 0
    x = cp.asarray(host)
    tmpl = cp.asarray(ref)
    y = pulse_compression(x, tmpl, nfft=nfft)
    peak = int(cp.argmax(cp.abs(y[0, :r])).get())
    if peak != 300:
        raise RuntimeError("%dx%dx%d: the reference at gate 300 peaks at gate %d" % (c, p, r, peak))
    x[0, :] = cp.asarray(host[1, :])   # every pulse random again for the timing
    for _ in range(warmup):
        pulse_compression(x, tmpl, nfft=nfft)
    start, end = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(reps):
        start.record()
        pulse_compression(x, tmpl, nfft=nfft)
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end))
    return nfft, times


ND = 256   # Doppler bins of the chain


def one_chain(cp, np, fns, shape, reps, warmup):
    """(nfft, [ms per chain]) for one CPI shape, as radar_gpu's (c)."""
    pulse_compression, pulse_doppler, ca_cfar = fns
    c, p, r, l = shape
    nfft = fast_size(r + l - 1)
    rng = np.random.default_rng(12345)
    host = (rng.standard_normal((c * p, r)) + 1j * rng.standard_normal((c * p, r)))
    x = cp.asarray(host.astype(np.complex64))
    tmpl = cp.asarray(lfm(np, l))
    win = cp.asarray(np.hamming(p).astype(np.float32))

    def chain():
        y = pulse_compression(x, tmpl, nfft=nfft)[:, :r].reshape(c, p, r)
        masks = []
        for ch in range(c):
            pd = pulse_doppler(y[ch], window=win, nfft=ND)
            pw = cp.fft.fftshift(cp.abs(pd) ** 2, axes=0)
            masks.append(ca_cfar(pw, (1, 2), (2, 8), 1e-5)[1])
        return masks

    m = chain()
    if len(m) != c or m[0].shape != (ND, r):
        raise RuntimeError("%dx%dx%d: the chain's mask has shape %s" % (c, p, r, m[0].shape))
    for _ in range(warmup):
        chain()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(reps):
        start.record()
        chain()
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end))
    return nfft, times


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cpis", default="4x128x4096:512 16x128x9000:1000")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--gpu", type=int, default=0)
    ap.add_argument("--out")
    ap.add_argument("--chain", action="store_true")
    a = ap.parse_args()
    if a.reps < 1 or a.warmup < 0 or a.gpu < 0:
        ap.error("--reps >= 1, --warmup >= 0, --gpu >= 0")
    try:
        shapes = parse_cpis(a.cpis)
    except ValueError as e:
        ap.error(str(e))
    try:
        import cupy as cp
        import numpy as np
        from cupyx.signal import pulse_compression
        if a.chain:
            from cupyx.signal import ca_cfar, pulse_doppler
    except ImportError as e:
        print("bench-cupy: cupy (with cupyx.signal) is not importable: skipped (%s)" % e)
        return 77
    try:
        if cp.cuda.runtime.getDeviceCount() <= a.gpu:
            print("bench-cupy: no CUDA device %d: skipped" % a.gpu)
            return 77
        cp.cuda.Device(a.gpu).use()
        gpu = cp.cuda.runtime.getDeviceProperties(a.gpu)["name"]
        gpu = gpu.decode() if isinstance(gpu, bytes) else str(gpu)
    except cp.cuda.runtime.CUDARuntimeError as e:
        print("bench-cupy: no usable CUDA device: skipped (%s)" % e)
        return 77
    rows = []
    print("bench-cupy: cupyx.signal." + ("pulse_compression + pulse_doppler + ca_cfar" if a.chain
                                         else "pulse_compression") + ", CuPy %s, %s, device-resident complex64, "
          "CUDA events, %d reps after %d warm-up calls" % (cp.__version__, gpu, a.reps, a.warmup))
    print("%-14s %5s %6s %9s %9s %9s %8s" % ("CPI", "L", "nfft", "min ms", "med ms", "max ms",
                                             "GS/s"))
    for shape in shapes:
        try:
            if a.chain:
                nfft, t = one_chain(cp, np, (pulse_compression, pulse_doppler, ca_cfar), shape,
                                    a.reps, a.warmup)
            else:
                nfft, t = one_cpi(cp, np, pulse_compression, shape, a.reps, a.warmup)
        except (RuntimeError, cp.cuda.runtime.CUDARuntimeError) as e:
            print("bench-cupy: FAILED: %s" % e, file=sys.stderr)
            return 1
        t.sort()
        h = len(t) // 2
        med = t[h] if len(t) % 2 else 0.5 * (t[h - 1] + t[h])
        s = shape[0] * shape[1] * shape[2]
        cpi = "%dx%dx%d" % shape[:3]
        rows.append((cpi, shape[3], nfft, len(t), t[0], med, t[-1], s / med / 1e6,
                     s / t[-1] / 1e6, s / t[0] / 1e6))
        print("%-14s %5d %6d %9.3f %9.3f %9.3f %8.3f" % (cpi, shape[3], nfft, t[0], med, t[-1],
                                                         s / med / 1e6))
    if a.out:
        with open(a.out, "w") as f:
            f.write("tool\tcpi\tL\tnfft\treps\tmin_ms\tmedian_ms\tmax_ms\tgsps_median\tgsps_min"
                    "\tgsps_max\tcupy\tgpu\n")
            for r in rows:
                f.write(("cupy-chain" if a.chain else "cupy") + "\t%s\t%d\t%d\t%d\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%s\t%s\n" % (
                    r + (cp.__version__, gpu)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
