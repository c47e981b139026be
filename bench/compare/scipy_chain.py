#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""scipy_chain.py — the radar chain of bench_pc --chain in numpy/scipy, on
the same CPI, for scripts/bench-compare.sh.

    scipy_chain.py C P R L SECONDS

Pulse compression as scipy_pc.py (fftconvolve, complex64), then what
chirpd's chain does with detections only: a Hamming window over the P
pulses, scipy.fft.fft along pulses with 256 bins (single precision, one
worker), |.|^2, fftshift along Doppler, CA-CFAR on each channel's map with
guard 2 range x 1 Doppler and training 8 x 2 cells (box sums by
scipy.ndimage.uniform_filter, Doppler cyclic, range edges with only the
cells that exist and their own factor N (pfa^(-1/N) - 1)), pfa 1e-5, 3 x 3
local maxima by scipy.ndimage.maximum_filter, and the list (channel, bin,
gate, power, noise, SNR) by numpy.nonzero. Single thread. Prints one TSV
line like bench_pc --tsv (tool "scipy-chain").
"""
import sys
import time

import numpy as np
from scipy import fft as sfft
from scipy import ndimage, signal

ND, GR, GD, TR, TD, PFA = 256, 2, 1, 8, 2, 1e-5


def main():
    if len(sys.argv) != 6:
        sys.stderr.write("usage: scipy_chain.py C P R L SECONDS\n")
        return 2
    C, P, R, L = (int(v) for v in sys.argv[1:5])
    seconds = float(sys.argv[5])
    fs, B = 100e6, 40e6
    tau = L / fs
    t = np.arange(L) / fs - tau / 2
    w = np.hamming(L) if L > 1 else np.ones(1)
    h = (w * np.exp(1j * np.pi * (B / tau) * t * t)).astype(np.complex64)
    g = np.float32(1.0 / np.sqrt(np.sum(np.abs(h.astype(np.complex128)) ** 2)))
    taps = (np.conj(h[::-1]) * g).astype(np.complex64)[None, None, :]
    win = np.hamming(P).astype(np.float32)[None, :, None]
    rng = np.random.default_rng(12345)
    x = (rng.uniform(-0.5, 0.5, (C, P, R)) + 1j * rng.uniform(-0.5, 0.5, (C, P, R))).astype(np.complex64)

    # per range gate: training cells that exist and the CA factor for them
    outer, guard = (2 * (GD + TD) + 1, 2 * (GR + TR) + 1), (2 * GD + 1, 2 * GR + 1)
    modes = ("wrap", "constant")
    ones = np.ones((ND, R), np.float32)
    count = (ndimage.uniform_filter(ones, outer, mode=modes) * (outer[0] * outer[1]) -
             ndimage.uniform_filter(ones, guard, mode=modes) * (guard[0] * guard[1]))
    count = np.rint(count).astype(np.float64)
    alpha = (count * (PFA ** (-1.0 / count) - 1.0)).astype(np.float32)

    def run():
        y = signal.fftconvolve(x, taps, mode="full", axes=-1)[..., L - 1:L - 1 + R]
        d = sfft.fft(y * win, n=ND, axis=1, workers=1)
        pw = np.fft.fftshift((d.real * d.real + d.imag * d.imag), axes=1)
        dets = []
        for c in range(C):
            m = pw[c]
            s = (ndimage.uniform_filter(m, outer, mode=modes) * (outer[0] * outer[1]) -
                 ndimage.uniform_filter(m, guard, mode=modes) * (guard[0] * guard[1]))
            noise = s / count
            peak = ndimage.maximum_filter(m, (3, 3), mode=modes, cval=-np.inf)
            k, n = np.nonzero((m > alpha * noise) & (m >= peak))
            dets.append((np.full(k.size, c), k - ND // 2, n, m[k, n], noise[k, n],
                         10 * np.log10(m[k, n] / noise[k, n])))
        return dets

    run()
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
    print("scipy-chain\t%dx%dx%d\t%d\t-\t1\tcf32\tnone\t%.4f\t%.2f\t%.2f\t%.4f\t%.4f\t%.2f"
          % (C, P, R, L, med * 1e3, msps, msps, best * 1e3, cmed * 1e3, n / cmed / 1e6))
    return 0


if __name__ == "__main__":
    sys.exit(main())
