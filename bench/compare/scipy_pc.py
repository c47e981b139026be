#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""scipy_pc.py — scipy.signal.fftconvolve on the same CPI as bench_pc, for
scripts/bench-compare.sh.

    scipy_pc.py C P R L SECONDS

Same reference as bench_pc (LFM, fs 100 MHz, B 40 MHz, tau = L/fs, Hamming
window), same layout [channel][pulse][range], complex64 throughout (scipy.fft
keeps single precision). The correlation y[n] = g sum_k x[n+k] conj(h[k]) is
fftconvolve(x, conj(h[::-1]), axes=-1) sliced at [L-1 : L-1+R], times g.
Single thread (scipy's default workers). Prints one TSV line like
bench_pc --tsv; on stderr, the relative error of row 0 against a direct
double-precision correlation (so the slice is known to be the right one).
"""
import sys
import time

import numpy as np
from scipy import signal


def main():
    if len(sys.argv) != 6:
        sys.stderr.write("usage: scipy_pc.py C P R L SECONDS\n")
        return 2
    C, P, R, L = (int(v) for v in sys.argv[1:5])
    seconds = float(sys.argv[5])
    fs, B = 100e6, 40e6
    tau = L / fs
    k = np.arange(L)
    t = k / fs - tau / 2
    w = np.hamming(L) if L > 1 else np.ones(1)
    h = (w * np.exp(1j * np.pi * (B / tau) * t * t)).astype(np.complex64)
    g = np.float32(1.0 / np.sqrt(np.sum(np.abs(h.astype(np.complex128)) ** 2)))
    taps = (np.conj(h[::-1]) * g).astype(np.complex64)[None, None, :]

    rng = np.random.default_rng(12345)
    x = (rng.uniform(-0.5, 0.5, (C, P, R)) + 1j * rng.uniform(-0.5, 0.5, (C, P, R))).astype(np.complex64)

    def run():
        return signal.fftconvolve(x, taps, mode="full", axes=-1)[..., L - 1:L - 1 + R]

    y = run()
    assert y.dtype == np.complex64, y.dtype
    run()
    times, cpu = [], []
    end = time.perf_counter() + seconds
    while len(times) < 5 or time.perf_counter() < end:
        t0, c0 = time.perf_counter(), time.process_time()
        run()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    times.sort()
    cpu.sort()
    med, best, cmed = times[len(times) // 2], times[0], cpu[len(cpu) // 2]
    n = C * P * R
    msps = n / med / 1e6

    # check row 0 against the definition, in double precision
    x0 = np.concatenate([x[0, 0].astype(np.complex128), np.zeros(L, np.complex128)])
    hd = h.astype(np.complex128)
    ref = np.array([np.sum(x0[i:i + L] * np.conj(hd)) for i in range(R)]) * float(g)
    err = np.sqrt(np.sum(np.abs(y[0, 0] - ref) ** 2) / np.sum(np.abs(ref) ** 2))
    sys.stderr.write("scipy_pc: scipy %s, row-0 relative error vs direct correlation %.2e\n"
                     % (signal.__name__ and __import__("scipy").__version__, err))
    print("scipy\t%dx%dx%d\t%d\t-\t1\tcf32\tcomplex\t%.4f\t%.2f\t%.2f\t%.4f\t%.4f\t%.2f"
          % (C, P, R, L, med * 1e3, msps, msps, best * 1e3, cmed * 1e3, n / cmed / 1e6))
    return 0


if __name__ == "__main__":
    sys.exit(main())
