#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""bench_py_ring.py — per-CPI overhead of reading a ring through the
chirpring Python package, against the C consumer, in one run.

    PYTHONPATH=python CHIRPRING_LIBRARY=build/lib/libchirpring.so.3 \\
        /usr/bin/python3 bench/bench_py_ring.py [BUILD] [-r ROUNDS] [-k REPEATS]

The same loop on both sides, on a ring of 64 slots of 4x128x4096 cf32
(16 MiB CPIs, 1 GiB of shared memory): one process holds both roles; each
round the producer fills every slot (reserve + commit, payload untouched,
untimed), then the consumer takes them all, timed. C: build/bench/
bench_consume (peek, read one sample, release). Python: `for cpi in ring`
reading cpi.seq, cpi.gap and cpi.data[0, 0, 0] (so the zero-copy numpy view
is built and used), one Consumer.read() per CPI, which also releases the
previous one. No other process runs and nothing waits, so the figures are
the consumers' own costs. Each side reports the median over ROUNDS rounds;
C and Python alternate REPEATS times (default 3), and the median of those
is printed, with the spread.
"""

import os
import statistics
import subprocess
import sys
import time

import numpy as np

import chirpring

args = sys.argv[1:]
ROUNDS, REPEATS, BUILD = 200, 3, "build"
while args:
    a = args.pop(0)
    if a == "-r":
        ROUNDS = int(args.pop(0))
    elif a == "-k":
        REPEATS = int(args.pop(0))
    else:
        BUILD = a
GEOM, SLOTS = (4, 128, 4096), 64


def run_c():
    out = subprocess.run([os.path.join(BUILD, "bench", "bench_consume"), "-r", str(ROUNDS),
                          "-s", str(SLOTS), "%d,%d,%d" % GEOM],
                         capture_output=True, text=True, check=True).stdout
    return float(out.split()[1])


def run_py():
    name = "/chirp-bench-py-%d" % os.getpid()
    g = chirpring.Geometry(*GEOM, "cf32", SLOTS, 1e6)
    per = []
    with chirpring.Producer(name, geometry=g, create=True) as p, \
            chirpring.Consumer(name, timeout=1) as c:
        it = iter(c)
        sink = 0j
        for _ in range(ROUNDS):
            for _ in range(SLOTS):
                p.reserve()
                p.commit()
            t0 = time.perf_counter()
            for _ in range(SLOTS):
                cpi = next(it)
                sink += cpi.data[0, 0, 0]
                if cpi.gap:
                    sys.exit("unexpected gap")
            c.release()
            per.append((time.perf_counter() - t0) * 1e9 / SLOTS)
            del cpi
    return statistics.median(per)


c_ns, py_ns = [], []
for _ in range(REPEATS):
    c_ns.append(run_c())
    py_ns.append(run_py())
C, P = statistics.median(c_ns), statistics.median(py_ns)
print("ring %dx%dx%d cf32 (%d MiB CPIs), %d slots; %d rounds x %d CPIs, median of %d repeats "
      "(range in brackets):" % (GEOM + (np.prod(GEOM) * 8 >> 20, SLOTS, ROUNDS, SLOTS, REPEATS)))
print("  C consumer (peek, one sample, release):  %8.0f ns/CPI  [%.0f-%.0f]" % (C, min(c_ns), max(c_ns)))
print("  Python (for cpi in ring: cpi.data[0,0,0]): %6.0f ns/CPI  [%.0f-%.0f]" % (P, min(py_ns), max(py_ns)))
print("  Python overhead: %.1f us per CPI (%.2f %% of a 1 kHz CPI rate's budget); payload copies: none"
      % ((P - C) / 1e3, (P - C) / 1e6 * 100))
