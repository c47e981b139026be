#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""demo-scene.py — the moving targets of `make run` (scripts/run-demo.sh):
raw CPIs in chirpd's input layout (cf32, [channel][pulse][range]) that
chirp-feed --file --loop replays.

    demo-scene.py OUT.cf32 --channels C --pulses P --samples R --fs HZ
        --bandwidth HZ --pulse-width S --prf HZ --carrier HZ --rate CPI_PER_S
        --seconds S --target RANGE_M:VELOCITY_MPS:AMP_DBFS ... [--noise-dbfs X]

Each target starts at RANGE_M and moves at VELOCITY_MPS (positive closing:
its range shrinks) in wall-clock time, CPI k at k / rate seconds: its echo
is the transmitted LFM pulse (chirpd's [waveform] type = lfm, unwindowed:
exp(j pi B/tau t^2), t = k/fs - tau/2, L = round(tau fs) samples) starting
at the gate of its range, with the Doppler phase 2 v f_c / c of its
velocity along the pulses, peak amplitude AMP_DBFS, in complex white noise
of power --noise-dbfs (default -40). The scene lasts --seconds and is
replayed from the start after that.
"""
import argparse
import sys

import numpy as np

C_MPS = 299792458.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    for k in ("channels", "pulses", "samples"):
        ap.add_argument("--" + k, type=int, required=True)
    for k in ("fs", "bandwidth", "pulse-width", "prf", "carrier", "rate", "seconds"):
        ap.add_argument("--" + k, type=float, required=True)
    ap.add_argument("--target", action="append", required=True)
    ap.add_argument("--noise-dbfs", type=float, default=-40.0)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()

    L = int(round(a.pulse_width * a.fs))
    t = np.arange(L) / a.fs - a.pulse_width / 2
    pulse = np.exp(1j * np.pi * (a.bandwidth / a.pulse_width) * t * t)
    targets = []
    for spec in a.target:
        try:
            r0, v, amp = (float(x) for x in spec.split(":"))
        except ValueError:
            sys.exit("demo-scene: --target %s: want RANGE_M:VELOCITY_MPS:AMP_DBFS" % spec)
        targets.append((r0, v, 10 ** (amp / 20)))
    ncpi = max(1, int(round(a.seconds * a.rate)))
    rng = np.random.default_rng(a.seed)
    sigma = np.sqrt(10 ** (a.noise_dbfs / 10) / 2)
    p = np.arange(a.pulses)
    with open(a.out, "wb") as f:
        for k in range(ncpi):
            x = (rng.standard_normal((a.channels, a.pulses, a.samples)) +
                 1j * rng.standard_normal((a.channels, a.pulses, a.samples))) * sigma
            for r0, v, amp in targets:
                r = r0 - v * k / a.rate
                gate = int(round(2 * r / C_MPS * a.fs))
                if gate < 0 or gate + L > a.samples:
                    continue
                fd = 2 * v * a.carrier / C_MPS
                ph = np.exp(2j * np.pi * fd * (k * a.pulses + p) / a.prf)
                x[:, :, gate:gate + L] += amp * ph[None, :, None] * pulse[None, None, :]
            f.write(x.astype(np.complex64).tobytes())
    print("demo-scene: %d CPIs (%.1f s at %g CPI/s), %d targets -> %s"
          % (ncpi, ncpi / a.rate, a.rate, len(targets), a.out))


if __name__ == "__main__":
    main()
