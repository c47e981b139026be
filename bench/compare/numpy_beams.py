#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""numpy_beams.py — the CPU chain with beams of bench_beams in numpy, on the
same CPI, for scripts/bench-beams-cpu.sh.

    numpy_beams.py C P R L B SECONDS

The beams as one complex matrix product, numpy.matmul of the B x C weights
(a Taylor-tapered fan of a half-wave line, complex64) and the C x (P R)
input, then pulse compression by numpy.fft (forward FFT of each beam row
padded to nfft, multiply by the filter's spectrum, inverse FFT, the first
R gates), a Hamming window over the P pulses and numpy.fft.fft along them
(Nd = P), |.|^2 with zero Doppler in the middle: the B maps. No CFAR and
no detection list (bench_beams does both on top): numpy's share is the
matmul and the FFTs. One thread (the caller sets OPENBLAS_NUM_THREADS,
OMP_NUM_THREADS and MKL_NUM_THREADS to 1). Prints one TSV line like
bench_beams (tool "numpy-beams").
"""
import sys
import time

import numpy as np


def good_size(n):
    """The smallest 2^a 3^b 5^c 7^d >= n (pc_good_fft_size)."""
    m = n
    while True:
        k = m
        for f in (2, 3, 5, 7):
            while k % f == 0:
                k //= f
        if k == 1:
            return m
        m += 1


def main():
    if len(sys.argv) != 7:
        sys.stderr.write("usage: numpy_beams.py C P R L B SECONDS\n")
        return 2
    C, P, R, L, B = (int(v) for v in sys.argv[1:6])
    seconds = float(sys.argv[6])
    fs, bw = 100e6, 40e6
    tau = L / fs
    t = np.arange(L) / fs - tau / 2
    w = np.hamming(L) if L > 1 else np.ones(1)
    h = (w * np.exp(1j * np.pi * (bw / tau) * t * t)).astype(np.complex64)
    nfft = good_size(R + L - 1)
    filt = (np.conj(np.fft.fft(h, nfft)) / np.sqrt(np.sum(np.abs(h) ** 2))).astype(np.complex64)
    x_c = (np.arange(C) - (C - 1) / 2) * 0.5          # positions in wavelengths
    u = (np.arange(B) - (B - 1) / 2) * (1.6 / B)
    taper = np.kaiser(C, 5.0)
    W = (taper[None, :] * np.exp(-2j * np.pi * u[:, None] * x_c[None, :]) /
         taper.sum()).astype(np.complex64)
    win = np.hamming(P).astype(np.float32)[None, :, None] / np.float32(np.sqrt(P))
    rng = np.random.default_rng(12345)
    x = (rng.uniform(-0.5, 0.5, (C, P * R)) +
         1j * rng.uniform(-0.5, 0.5, (C, P * R))).astype(np.complex64)

    def run():
        y = np.matmul(W, x).reshape(B, P, R)
        spec = np.fft.fft(y, nfft, axis=-1)
        spec *= filt
        z = np.fft.ifft(spec, axis=-1)[..., :R]
        d = np.fft.fft(z * win, axis=1)
        return np.fft.fftshift(d.real * d.real + d.imag * d.imag, axes=1)

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
    print("numpy-beams\t%dx%dx%d\t%d\t%d\tconventional\t%.4f\t%.4f\t%.4f\t%d"
          % (C, P, R, L, B, times[len(times) // 2] * 1e3, cpu[len(cpu) // 2] * 1e3,
             times[0] * 1e3, len(times)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
