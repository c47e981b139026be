#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""test_chirpring.py — the chirpring Python package against libchirpring,
chirp-feed, chirp-tap and a running chirpd (CPU backend).

Run by tests/e2e/python_chirpring.sh, which builds the environment:
  PYTHONPATH          src/ring/python/ of this checkout
  CHIRPRING_LIBRARY   $BUILD/lib/libchirpring.so.3
  CHIRP_BIN           $BUILD/bin (chirp-feed, chirp-tap)
  CHIRP_UNIQ          prefix for ring names unique to this run
  CHIRPD_CONF, CHIRPD_OUT_RING   a chirpd already running on them (optional:
                      the tests that need it are skipped without)
Plain Python, no pytest: each test_* function runs in order; the last line
is "counts: N passed, N failed, N skipped" (scripts/test-all.sh adds it to
its total). Exit status 0 only if none failed.
"""

import ctypes
import errno
import fcntl
import gc
import os
import signal
import struct
import subprocess
import sys
import tempfile
import time
import traceback
import warnings

import numpy as np

import chirpring

BIN = os.environ.get("CHIRP_BIN", "build/bin")
UNIQ = os.environ.get("CHIRP_UNIQ", "chirp-pytest-%d" % os.getpid())
TMP = tempfile.mkdtemp(prefix="chirp-pytest.")
_rings = []


class Skip(Exception):
    pass


def ring_name(tag):
    n = "/%s-%s" % (UNIQ, tag)
    _rings.append(n)
    return n


def expect(exc, fn, *a, **kw):
    """fn(*a, **kw) raises exc; returns the exception."""
    try:
        fn(*a, **kw)
    except exc as e:
        return e
    raise AssertionError("%s did not raise %s" % (getattr(fn, "__name__", fn), exc.__name__))


def G(c, p, s, fmt="cf32", slots=4, rate=1e6):
    return chirpring.Geometry(c, p, s, fmt, slots, rate)


def wait_consumer(ring, proc, limit=20.0):
    """Until a consumer holds ring's role lock (byte 1 of /dev/shm/RING, an
    OFD write lock, as chirp_ring_attach takes it) — lib.sh's
    e2e_wait_consumer — failing if proc exits first."""
    path = "/dev/shm/" + ring.lstrip("/")
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise AssertionError("consumer exited %d before attaching: %s"
                                 % (proc.returncode, proc.stderr.read() if proc.stderr else ""))
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            time.sleep(0.02)
            continue
        try:
            fl = struct.pack("hh4xqqi4x", fcntl.F_WRLCK, os.SEEK_SET, 1, 1, 0)
            held = struct.unpack("hh4xqqi4x", fcntl.fcntl(fd, fcntl.F_OFD_GETLK, fl))[0] != fcntl.F_UNLCK
        finally:
            os.close(fd)
        if held:
            return
        time.sleep(0.02)
    raise AssertionError("no consumer attached to %s within %g s" % (ring, limit))


# ---- errors ---------------------------------------------------------------

def test_missing_ring():
    n = ring_name("none")
    e = expect(chirpring.RingError, chirpring.Consumer, n)
    assert e.errno == errno.ENOENT, e.errno
    assert str(e) == "[Errno 2] no ring %s: is its creator (chirpd) running?" % n, str(e)
    e = expect(chirpring.RingError, chirpring.Producer, n)
    assert e.errno == errno.ENOENT
    # timeout: waits that long for the ring, then says so.
    t0 = time.monotonic()
    e = expect(chirpring.RingError, chirpring.Consumer, n, timeout=0.3)
    dt = time.monotonic() - t0
    assert 0.28 <= dt < 2.0, dt
    assert "(waited 0.3 s)" in str(e), str(e)
    expect(ValueError, chirpring.Consumer, "no-slash")
    expect(ValueError, chirpring.Consumer, n, timeout=-1)


def test_attach_waits_for_the_ring():
    """Consumer(timeout=T) attaches to a ring created while it waits."""
    n = ring_name("late")
    prod = None

    def late():
        nonlocal prod
        prod = chirpring.Producer(n, geometry=G(1, 2, 8), create=True)
    signal.signal(signal.SIGALRM, lambda *a: late())
    signal.setitimer(signal.ITIMER_REAL, 0.3)
    try:
        t0 = time.monotonic()
        with chirpring.Consumer(n, timeout=5) as c:
            dt = time.monotonic() - t0
            assert 0.25 <= dt < 3, dt
            assert c.geometry == G(1, 2, 8), c.geometry
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        if prod:
            prod.close()


def test_wrong_geometry():
    n = ring_name("geom")
    with chirpring.Producer(n, geometry=G(2, 3, 5), create=True) as p:
        e = expect(chirpring.RingError, chirpring.Consumer, n,
                   geometry=dict(channels=2, pulses=3, samples=6, format=None, slots=None,
                                 sample_rate_hz=None))
        assert e.errno == errno.EINVAL
        assert "is 2x3x5 cf32, 4 slots, expected 2x3x6 *, * slots" in str(e) and "samples differ" in str(e), str(e)
        with chirpring.Consumer(n, geometry=dict(channels=2, samples=5, format="cf32")) as c:
            assert c.geometry.shape == (2, 3, 5)
        e = expect(ValueError, p.write, np.zeros((2, 3, 6), np.complex64))
        assert "shape (2, 3, 5) complex64; got shape (2, 3, 6) complex64" in str(e), str(e)
        expect(ValueError, p.write, np.zeros((2, 3, 5), np.complex128))
        assert p.stats().committed == 0 and p.drops == 0   # nothing reserved by a refusal
        e = expect(chirpring.RingError, p.commit)
        assert "commit without reserve" in str(e)
        buf = p.reserve()
        expect(ValueError, buf.__setitem__, Ellipsis, np.zeros((2, 3, 6), np.complex64))
        # A second producer is refused with the library's sentence.
        e = expect(chirpring.RingError, chirpring.Producer, n)
        assert e.errno == errno.EBUSY, (e.errno, str(e))


# ---- data path -------------------------------------------------------------

def test_roundtrip_zero_copy_flags_gaps():
    n = ring_name("rt")
    g = G(2, 3, 7, slots=4)
    rng = np.random.default_rng(1)
    with chirpring.Consumer(n, geometry=g, create=True, timeout=2) as c, \
            chirpring.Producer(n, timeout=2) as p:
        sent = []
        for k in range(6):          # 4 fit, 2 are dropped (ring full)
            x = (rng.standard_normal(g.shape) + 1j * rng.standard_normal(g.shape)).astype(np.complex64)
            buf = p.reserve()
            if buf is None:
                continue
            assert buf.flags.writeable and buf.shape == g.shape and buf.dtype == np.complex64
            buf[...] = x
            assert p.commit(first_sample=k * 21, timestamp_ns=1000 + k)
            sent.append((k, x))
        assert p.drops == 2 and p.stats().overruns == 2, (p.drops, p.stats())
        base, size = c._base, c._size
        got = []
        for cpi in c:
            d = cpi.data
            # Zero copy: the array is the ring slot itself, read-only.
            assert base <= d.ctypes.data and d.ctypes.data + d.nbytes <= base + size
            assert not d.flags.owndata and not d.flags.writeable
            got.append((cpi.seq, cpi.first_sample, cpi.timestamp_ns, cpi.gap, cpi.flags, d.copy()))
            if len(got) == 2:
                break
        # Room for 2 more: the producer commits again; that block carries the drop.
        y = np.full(g.shape, 7 + 7j, np.complex64)
        assert p.write(y, first_sample=6 * 21)
        for cpi in c:
            got.append((cpi.seq, cpi.first_sample, cpi.timestamp_ns, cpi.gap, cpi.flags, cpi.data.copy()))
            if len(got) == 5:
                break
        assert [s[0] for s in got] == [0, 1, 2, 3, 6], [s[0] for s in got]
        assert [s[3] for s in got] == [None, 0, 0, 0, 2], [s[3] for s in got]
        assert [bool(s[4] & chirpring.DISCONTINUITY) for s in got] == [False] * 4 + [True]
        for (k, x), s in zip(sent, got):
            assert s[1] == k * 21 and s[2] == 1000 + k and np.array_equal(s[5], x)
        assert got[4][1] == 126 and np.array_equal(got[4][5], y)
        assert cpi.discontinuity and not cpi.nonfinite and not cpi.redelivered
        # The producer's flags pass through (here NONFINITE, as chirpd sets it).
        buf = p.reserve()
        buf[...] = np.nan
        p.commit(first_sample=999, flags=chirpring.NONFINITE)
        cpi = c.read()
        assert cpi.nonfinite and cpi.gap == 0 and np.isnan(cpi.data).all()


C_CONSUMER = r"""
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "chirp/ring.h"
/* argv[1] ring, argv[2] blocks: one line "seq mode flags az el" per block. */
int main(int argc, char **argv)
{
	char err[256];
	struct chirp_ring *r = chirp_ring_attach(argv[1], CHIRP_RING_CONSUMER, NULL, err,
						 sizeof(err));
	struct chirp_ring_block b;
	int n = atoi(argv[2]);

	if (!r) {
		fprintf(stderr, "%s\n", err);
		return 2;
	}
	printf("ready\n");
	fflush(stdout);
	while (n > 0) {
		int rc = chirp_ring_peek(r, &b);

		if (rc == -EAGAIN) {
			if (chirp_ring_wait(r, 10000000000LL) != 0)
				return 3;
			continue;
		}
		if (rc != 0 || b.reserved != 0)
			return 4;
		printf("%llu %u %u %.9g %.9g\n", (unsigned long long)b.seq, b.mode, b.flags,
		       b.pointing_az_deg, b.pointing_el_deg);
		chirp_ring_release(r);
		n--;
	}
	chirp_ring_detach(r);
	return 0;
}
"""


def test_modes():
    """A block's mode set through Python reaches the Python consumer and a
    C consumer (chirp_ring_peek), on a ring of 5 slots (not a power of two);
    a mode outside 32 bits is refused before anything is committed."""
    n = ring_name("mode")
    g = G(1, 2, 8, slots=5)
    modes = [0, 5, 63, 0xffffffff, 0, 17, 1, 2, 3, 4, 63, 0]
    x = np.ones(g.shape, np.complex64)
    with chirpring.Consumer(n, geometry=g, create=True, timeout=2) as c, \
            chirpring.Producer(n, timeout=2) as p:
        for k, m in enumerate(modes):
            if k == 4:
                assert p.write(x, first_sample=k)                # no mode given: 0
            else:
                assert p.write(x, first_sample=k, mode=m)
            cpi = c.read()
            assert (cpi.seq, cpi.first_sample, cpi.mode, cpi.slot) == (k, k, m, k % 5), \
                (cpi.seq, cpi.mode, cpi.slot)
            assert ("mode %d" % m) in repr(cpi)
            cpi.release()
        buf = p.reserve()
        assert buf is not None
        e = expect(ValueError, p.commit, first_sample=1, mode=1 << 32)
        assert "mode" in str(e)
        expect(ValueError, p.commit, first_sample=1, mode=-1)
        assert p.commit(first_sample=99, mode=6, flags=chirpring.UNKNOWN_MODE)
        cpi = c.read()
        assert cpi.mode == 6 and cpi.unknown_mode and cpi.flags == chirpring.UNKNOWN_MODE
        cpi.release()

    # The C library's consumer sees the modes the Python producer committed.
    src = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    lib = os.environ.get("CHIRPRING_LIBRARY", "")
    cc = subprocess.run(["sh", "-c", "command -v cc"], capture_output=True, text=True).stdout.strip()
    if not cc or not os.path.isfile(lib) or os.environ.get("LD_PRELOAD"):
        raise Skip("no cc, no CHIRPRING_LIBRARY file, or a sanitizer build: C consumer not built")
    exe = os.path.join(TMP, "mode_consumer")
    with open(exe + ".c", "w") as f:
        f.write(C_CONSUMER)
    subprocess.run([cc, "-o", exe, exe + ".c", "-I", os.path.join(src, "include"), lib,
                    "-Wl,-rpath," + os.path.dirname(os.path.abspath(lib))],
                   check=True, capture_output=True)
    n = ring_name("cmode")
    with chirpring.Producer(n, geometry=g, create=True, timeout=2) as p:
        t = subprocess.Popen([exe, n, str(len(modes))], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        assert t.stdout.readline() == "ready\n", t.stderr.read()
        for k, m in enumerate(modes):
            assert p.write(x, first_sample=k, mode=m, block=True)
        out, err = t.communicate(timeout=20)
        assert t.returncode == 0, (t.returncode, err)
        got = [tuple(int(v) for v in line.split()[:3]) for line in out.splitlines()]
        assert got == [(k, m, 0) for k, m in enumerate(modes)], got


def test_pointing():
    """A CPI's pointing set through Python reaches the Python consumer and
    a C consumer (chirp_ring_peek) as the float32 given, with its mode and
    missing count; no pointing is boresight (0, 0); anything but a pair of
    numbers is refused before anything is committed."""
    n = ring_name("point")
    g = G(1, 2, 8, slots=3)
    pts = [(0.0, 0.0), (12.5, -3.25), (-60.0, 45.0), (0.1, 0.2), (float("nan"), 100.0)]
    f32 = [tuple(float(np.float32(v)) for v in pt) for pt in pts]
    x = np.ones(g.shape, np.complex64)
    with chirpring.Consumer(n, geometry=g, create=True, timeout=2) as c, \
            chirpring.Producer(n, timeout=2) as p:
        for k, pt in enumerate(pts):
            if k == 0:
                assert p.write(x, first_sample=k, mode=k)     # no pointing given
            else:
                assert p.reserve() is not None
                assert p.commit(first_sample=k, mode=k, pointing=pt, missing=k == 3)
            cpi = c.read()
            assert (cpi.seq, cpi.mode, cpi.missing) == (k, k, int(k == 3)), cpi
            assert np.array_equal(cpi.pointing, f32[k], equal_nan=True), (cpi.pointing, f32[k])
            assert cpi.pointing_az_deg == cpi.pointing[0] or k == 4
            assert "pointing" in repr(cpi)
            cpi.release()
        assert p.reserve() is not None
        for bad in (5.0, ("a", 1), (1, 2, 3)):
            e = expect(ValueError, p.commit, first_sample=1, pointing=bad)
            assert "pointing" in str(e)
        assert p.commit(first_sample=9, pointing=(95, 0), flags=chirpring.BAD_POINTING)
        cpi = c.read()
        assert cpi.bad_pointing and cpi.flags == chirpring.BAD_POINTING and "BAD_POINTING" in repr(cpi)
        cpi.release()

    src = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    lib = os.environ.get("CHIRPRING_LIBRARY", "")
    exe = os.path.join(TMP, "mode_consumer")
    if not os.path.isfile(exe) or os.environ.get("LD_PRELOAD"):
        raise Skip("the C consumer of test_modes was not built")
    n = ring_name("cpoint")
    with chirpring.Producer(n, geometry=g, create=True, timeout=2) as p:
        t = subprocess.Popen([exe, n, str(len(pts))], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        assert t.stdout.readline() == "ready\n", t.stderr.read()
        for k, pt in enumerate(pts):
            assert p.write(x, first_sample=k, mode=k, pointing=pt, block=True)
        out, err = t.communicate(timeout=20)
        assert t.returncode == 0, (t.returncode, err)
        got = [tuple(float(v) for v in line.split()[3:]) for line in out.splitlines()]
        assert np.array_equal(np.array(got, np.float32), np.array(f32, np.float32),
                              equal_nan=True), got


def test_incomplete():
    """A CPI committed with missing samples (a network producer's holes)
    reaches the consumer flagged INCOMPLETE with its count, in order with
    whole ones around it (their count 0); a count outside 32 bits is
    refused before anything is committed, and the flag is named in repr."""
    n = ring_name("inc")
    g = G(2, 4, 16, slots=3)
    x = np.zeros(g.shape, np.complex64)
    with chirpring.Consumer(n, geometry=g, create=True, timeout=2) as c, \
            chirpring.Producer(n, timeout=2) as p:
        for k, miss in enumerate([0, 37, 0, 0xffffffff, 1]):
            assert p.reserve() is not None
            assert p.commit(first_sample=k * 64, mode=k, missing=miss)
            cpi = c.read()
            assert (cpi.seq, cpi.first_sample, cpi.mode) == (k, k * 64, k)
            assert cpi.missing == miss and cpi.incomplete == (miss > 0), (k, cpi.missing, cpi.flags)
            assert cpi.flags == (chirpring.INCOMPLETE if miss else 0), cpi.flags
            assert ("INCOMPLETE" in repr(cpi)) == (miss > 0) and \
                (("missing %d" % miss) in repr(cpi)) == (miss > 0), repr(cpi)
            cpi.release()
        assert p.reserve() is not None
        e = expect(ValueError, p.commit, first_sample=1, missing=1 << 32)
        assert "missing" in str(e)
        expect(ValueError, p.commit, first_sample=1, missing=-1)
        assert c.stats().committed == 5
        # the flag given without a count: no count to read (ring.h)
        assert p.commit(first_sample=5 * 64, flags=chirpring.INCOMPLETE)
        cpi = c.read()
        assert cpi.missing == 0, (cpi.flags, cpi.missing)
        cpi.release()
    assert chirpring.INCOMPLETE == 1 << 4 and "INCOMPLETE" in chirpring.__all__


def test_abi_version_mismatch():
    """A ring whose header says ABI 2 (or 1) is refused with EPROTO and a
    sentence naming both versions, for either role."""
    n = ring_name("abi")
    g = G(1, 1, 4)
    with chirpring.Consumer(n, geometry=g, create=True, timeout=1, unlink=False):
        pass
    path = "/dev/shm/" + n.lstrip("/")
    with open(path, "r+b") as f:
        f.seek(8)                                  # struct ring_hdr.abi_version
        assert struct.unpack("<I", f.read(4))[0] == chirpring._lib.ABI_VERSION == 3
    for old in (2, 1):
        with open(path, "r+b") as f:
            f.seek(8)
            f.write(struct.pack("<I", old))
        for cls in (chirpring.Consumer, chirpring.Producer):
            e = expect(chirpring.RingError, cls, n, timeout=0)
            assert e.errno == errno.EPROTO, e
            assert "ABI version %d, this library speaks 3" % old in str(e), str(e)


def test_view_invalid_after_release():
    n = ring_name("rel")
    g = G(1, 2, 4, slots=2)
    with chirpring.Consumer(n, geometry=g, create=True, timeout=1) as c, chirpring.Producer(n) as p:
        for k in range(2):
            p.write(np.full(g.shape, k, np.complex64), first_sample=k)
        a = c.read()
        assert a.data[0, 0, 0] == 0
        a.release()
        assert a.released
        e = expect(chirpring.ReleasedError, getattr, a, "data")
        assert "CPI seq 0 was released" in str(e), str(e)
        a.release()                      # twice is harmless
        b = c.read()
        assert b.data[0, 0, 0] == 1
        c.release()                      # ring.release() releases the held CPI
        expect(chirpring.ReleasedError, getattr, b, "data")
        # The next iteration releases the previous CPI.
        p.write(np.full(g.shape, 2, np.complex64), first_sample=2)
        p.write(np.full(g.shape, 3, np.complex64), first_sample=3)
        d = c.read()
        e2 = c.read()
        expect(chirpring.ReleasedError, getattr, d, "data")
        assert e2.data[0, 0, 0] == 3
        kept = e2.data                   # an array kept past close: no crash
    expect(chirpring.ReleasedError, getattr, e2, "data")
    assert kept[0, 0, 0] == 3            # still mapped: reading it cannot crash
    expect(chirpring.RingError, c.read)  # a closed ring says so
    del kept
    gc.collect()


def test_close_with_live_view_defers_detach():
    n = ring_name("defer")
    g = G(1, 1, 4, slots=2)
    p = chirpring.Producer(n, geometry=g, create=True, unlink=False)
    try:
        c = chirpring.Consumer(n, timeout=1)
        p.write(np.ones(g.shape, np.complex64))
        kept = c.read().data
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            c.close()
        assert any(issubclass(x.category, ResourceWarning) and "still alive" in str(x.message)
                   for x in w), [str(x.message) for x in w]
        assert p.peer_attached()         # the mapping (and role) outlive close()
        e = expect(chirpring.RingError, chirpring.Consumer, n)
        assert e.errno == errno.EBUSY
        assert kept[0, 0, 0] == 1
        del kept
        gc.collect()
        assert not p.peer_attached()     # freed with the last array
        chirpring.Consumer(n).close()
    finally:
        p.close()
        chirpring.unlink(n)


def test_copy_mode():
    n = ring_name("copy")
    g = G(1, 2, 3, fmt="rf32", slots=2)
    with chirpring.Consumer(n, geometry=g, create=True, timeout=1, copy=True) as c, \
            chirpring.Producer(n) as p:
        for k in range(4):
            assert p.write(np.full(g.shape, k, np.float32), first_sample=k)
            cpi = c.read()
            assert cpi.data.dtype == np.float32 and cpi.data.shape == (1, 2, 3)
            assert cpi.data.flags.owndata or cpi.data.base is not None
            assert not (c._base <= cpi.data.ctypes.data < c._base + c._size)
            if k == 0:
                first = cpi
        assert p.stats().released == 4   # copied CPIs are released at once
    assert first.data[0, 0, 0] == 0 and not first.released   # valid after close


def test_spin():
    """spin= sets the handle's chirp_ring_set_spin (also after a re-attach
    would); bad values are refused before anything is attached; a read
    still times out as asked and data passes as without it."""
    n = ring_name("spin")
    g = G(1, 1, 4, slots=2)
    for bad in (-1, 1.5, "x"):
        expect(ValueError, chirpring.Consumer, n, geometry=g, create=True, spin=bad)
    with chirpring.Consumer(n, geometry=g, create=True, timeout=0.2, spin=0.05) as c, \
            chirpring.Producer(n) as p:
        assert c.spin == 0.05 and p.spin == 0.0
        assert c._L.chirp_ring_get_spin(c._handle()) == 50000000
        assert p._L.chirp_ring_get_spin(p._handle()) == 0
        t0 = time.monotonic()
        expect(chirpring.Timeout, c.read)
        assert 0.18 <= time.monotonic() - t0 < 1.5
        p.write(np.full(g.shape, 3, np.complex64), first_sample=7)
        cpi = c.read()
        assert cpi.first_sample == 7 and np.all(cpi.data == 3)


def test_sc16_layout():
    n = ring_name("sc16")
    g = G(2, 2, 5, fmt="sc16", slots=2)
    with chirpring.Consumer(n, geometry=g, create=True, timeout=1) as c, chirpring.Producer(n) as p:
        assert p.geometry.shape == (2, 2, 5, 2) and p.geometry.dtype == np.int16
        x = np.arange(40, dtype=np.int16).reshape(g.shape)
        p.write(x)
        assert np.array_equal(c.read().data, x)


def test_timeout_and_keyboard_interrupt():
    n = ring_name("intr")
    g = G(1, 1, 4, slots=2)
    with chirpring.Consumer(n, geometry=g, create=True, timeout=0.2) as c, chirpring.Producer(n) as p:
        t0 = time.monotonic()
        e = expect(chirpring.Timeout, c.read)
        assert isinstance(e, TimeoutError) and isinstance(e, chirpring.RingError)
        assert 0.18 <= time.monotonic() - t0 < 1.5
        assert "no CPI within 0.2 s" in str(e), str(e)
        expect(chirpring.Timeout, next, iter(c))
        # Ctrl-C during an unlimited wait: KeyboardInterrupt within ~0.1 s.
        signal.signal(signal.SIGALRM, lambda *a: os.kill(os.getpid(), signal.SIGINT))
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        t0 = time.monotonic()
        try:
            expect(KeyboardInterrupt, c.read, None)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
        assert 0.28 <= time.monotonic() - t0 < 0.8, time.monotonic() - t0
        # ... and the ring still works afterwards.
        p.write(np.ones(g.shape, np.complex64), first_sample=5)
        assert c.read().first_sample == 5
        # A producer that waits for room (block=True) times out, never drops.
        p.write(np.ones(g.shape, np.complex64))
        p.write(np.ones(g.shape, np.complex64))   # ring (2 slots, 1 held) is full now
        p.timeout = 0.2
        expect(chirpring.Timeout, p.reserve, True)
        assert p.drops == 1, p.drops          # the non-blocking write above found it full
        assert p.reserve() is None and p.drops == 2


def test_new_epoch_reattaches():
    n = ring_name("epoch")
    p = chirpring.Producer(n, geometry=G(1, 2, 4), create=True, unlink=False)
    c = chirpring.Consumer(n, timeout=3)
    try:
        p.write(np.ones((1, 2, 4), np.complex64), first_sample=1)
        a = c.read()
        e0 = c.epoch
        assert a.gap is None and a.epoch == e0
        p.close()
        # Re-created with another geometry (what chirpd does on a reload that
        # changes it): the consumer's next read re-attaches transparently.
        p = chirpring.Producer(n, geometry=G(2, 2, 8), create=True, unlink=False)
        assert p.epoch != e0
        p.write(np.full((2, 2, 8), 3, np.complex64), first_sample=2)
        b = c.read()
        assert c.reattached == 1 and c.epoch == p.epoch and b.epoch == p.epoch
        assert b.data.shape == (2, 2, 8) and b.data[1, 1, 7] == 3
        assert b.gap is None and b.first_sample == 2
        expect(chirpring.ReleasedError, getattr, a, "data")
    finally:
        c.close()
        p.close()
        chirpring.unlink(n)


# ---- with the C tools -------------------------------------------------------

def test_chirp_feed_to_python():
    """chirp-feed --file into a ring the Python consumer created: every byte."""
    n = ring_name("feed")
    g = G(3, 5, 333, slots=4)
    raw = os.path.join(TMP, "in.raw")
    x = (np.random.default_rng(2).standard_normal((7,) + g.shape) * (1 + 1j)).astype(np.complex64)
    x.tofile(raw)
    with chirpring.Consumer(n, geometry=g, create=True, timeout=20) as c:
        f = subprocess.Popen([os.path.join(BIN, "chirp-feed"), "-r", n, "--file", raw, "--block"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        got = [(cpi.seq, cpi.first_sample, cpi.gap, cpi.data.copy()) for _, cpi in zip(range(7), c)]
        _, err = f.communicate(timeout=60)
        assert f.returncode == 0, err
        assert "sent 7, dropped 0" in err, err
    for k, (seq, fs, gap, d) in enumerate(got):
        assert seq == k and fs == k * 5 * 333 and gap == (None if k == 0 else 0)
        assert np.array_equal(d, x[k]), k


def test_python_to_chirp_tap_with_drops():
    """Python producer -> chirp-tap --create: bytes equal, and the drops of a
    full ring reported as chirp-tap reports a C producer's ("gap: N CPIs
    missing before seq S"). The tap holds each CPI 150 ms, so the 4-slot
    ring fills and the producer, which never waits, drops."""
    n = ring_name("tap")
    out = os.path.join(TMP, "tap.raw")
    t = subprocess.Popen([os.path.join(BIN, "chirp-tap"), "-r", n, "--create", "--geometry", "2,3,50",
                          "--format", "cf32", "--slots", "4", "-n", "6", "--out", out,
                          "--timeout", "30", "--delay-ms", "150"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_consumer(n, t)
        sent = []
        with chirpring.Producer(n, timeout=10) as p:
            assert p.geometry.shape == (2, 3, 50) and p.geometry.slots == 4
            k = 0
            while len(sent) < 6:
                buf = p.reserve()
                if buf is None:          # full: dropped and counted by the ring
                    k += 1
                    time.sleep(0.02)
                    continue
                buf[...] = k + 1j * np.arange(50, dtype=np.float32)
                assert p.commit(first_sample=k * 300)
                sent.append(k)
                k += 1
            drops = p.drops
            assert p.stats().overruns == drops and drops == k - 6, (p.stats(), drops, k)
        _, err = t.communicate(timeout=30)
        assert t.returncode == 0, err
    finally:
        if t.poll() is None:
            t.kill()
    assert drops > 0, "the ring never filled: %s" % err
    d = np.fromfile(out, np.complex64).reshape(6, 2, 3, 50)
    for i, k in enumerate(sent):
        assert np.all(d[i].real == k) and np.array_equal(d[i][0, 0].imag, np.arange(50)), i
    missing = sum(int(m) for m in __import__("re").findall(r"gap: (\d+) CPIs? missing before seq", err))
    assert missing == drops, (missing, drops, err)
    assert "received 6, gaps" in err and "(%d CPIs missing)" % drops in err, err


def test_chirpd_output_equals_chirp_tap():
    """chirpd (CPU backend) output read by the package equals, CPI for CPI,
    what chirp-tap writes for the same synthetic input."""
    conf = os.environ.get("CHIRPD_CONF")
    out_ring = os.environ.get("CHIRPD_OUT_RING")
    if not conf or not out_ring:
        raise Skip("no chirpd running (CHIRPD_CONF/CHIRPD_OUT_RING unset)")
    N = 12
    feed = [os.path.join(BIN, "chirp-feed"), "-c", conf, "--target", "100,-6", "--target", "600,-20",
            "--snr-db", "10", "--seed", "5", "--count", str(N), "--block", "-q"]
    raw = os.path.join(TMP, "chirpd-tap.raw")
    t = subprocess.Popen([os.path.join(BIN, "chirp-tap"), "-c", conf, "-n", str(N), "--out", raw,
                          "--timeout", "60"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_consumer(out_ring, t)
    f = subprocess.run(feed, capture_output=True, text=True, timeout=60)
    assert f.returncode == 0, f.stderr
    _, err = t.communicate(timeout=60)
    assert t.returncode == 0, err
    with chirpring.Consumer(out_ring, timeout=30) as c:
        g = c.geometry
        assert g.format == "cf32"
        ref = np.fromfile(raw, np.complex64).reshape((N,) + g.shape)
        f = subprocess.Popen(feed, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        got = {}
        prev = None
        for cpi in c:
            got[cpi.first_sample] = cpi.data.copy()
            if prev is not None:
                assert cpi.seq == prev + 1 and cpi.gap == 0, (prev, cpi)
            prev = cpi.seq
            if len(got) == N:
                break
        assert f.wait(timeout=60) == 0, f.stderr.read()
    per = g.pulses * g.samples
    assert sorted(got) == [k * per for k in range(N)], sorted(got)[:3]
    for k in range(N):
        assert np.array_equal(got[k * per], ref[k]), "CPI %d differs from chirp-tap's" % k
    # Pulse compression really happened: the strongest gate is the target's.
    assert int(np.argmax(np.abs(ref[0][0, 0]))) == 100


# ---- detection rings and range-Doppler maps ------------------------------------

def det_records(rows):
    """Records without beams from version 1's eight fields: beam -1, angles NaN."""
    old = np.array(rows, dtype=chirpring.DET_RECORD_V1)
    rec = np.zeros(len(old), dtype=chirpring.DET_RECORD)
    for f in chirpring.DET_RECORD_V1.names:
        rec[f] = old[f]
    rec["beam"], rec["azimuth_deg"], rec["elevation_deg"] = -1, np.nan, np.nan
    return rec


def beam_records(rows):
    """Records of a list of beams: (beam, gate, bin, az, el, quality, snr)."""
    rec = np.zeros(len(rows), dtype=chirpring.DET_RECORD)
    for i, (b, gate, dbin, az, el, q, snr) in enumerate(rows):
        rec[i] = (b, gate, dbin, gate * 7.5, 0, 10 ** (snr / 10), 1, snr, b, az, el, q, 0)
    return rec


LISTS = [   # (records, found, flags, maps): chirpd's kinds of list
    (det_records([(0, 300, 5, 2248.4, 12.5, 1000, 1, 30), (0, 100, -8, 749.5, np.nan, 50, 1, 17),
                  (1, 301, 5, 2255.9, 12.5, 900, 1, 29.5)]), None, 0, 2),
    (det_records([]), None, 0, 2),                                            # nothing found
    (det_records([(c, g, 1, 0, 0, 9, 1, 9.5) for c in (0, 1) for g in (10, 20, 30)]), None,
     chirpring.DET_INCOMPLETE, 2),                                            # a CPI with holes
    (det_records([(-1, 42, -3, 314.7, -1.5, 77, 2, 15.8)]), None, chirpring.DET_INTEGRATED, 1),
    (beam_records([(0, 300, 5, -12.25, 0, 0, 30), (2, 300, 5, 3.5, 1.25, 0, 31),
                   (3, 80, -1, 9.75, 0, chirpring.DET_ANGLE_OUTSIDE | chirpring.DET_ANGLE_CLAMPED,
                    14)]), None, chirpring.DET_BEAMS, 4),
]
MAXDET = 4


def pack(k, rows, found, flags, maps):
    return chirpring.pack_detections(rows, MAXDET, seq=100 + k, timestamp_ns=7 * k,
                                     first_sample=k * 4096, mode=k % 2, flags=flags, found=found,
                                     maps=maps, doppler_bins=16, range_gates=500, crossings=3 * k)


def check_list(k, hdr, rec):
    rows, found, flags, maps = LISTS[k]
    keep = rows[:MAXDET]
    assert hdr.seq == 100 + k and hdr.timestamp_ns == 7 * k and hdr.first_sample == k * 4096, hdr
    assert hdr.mode == k % 2 and hdr.maps == maps and hdr.doppler_bins == 16, hdr
    assert hdr.range_gates == 500 and hdr.crossings == 3 * k and hdr.cells == maps * 16 * 500, hdr
    assert hdr.count == len(keep) and hdr.found == len(rows), hdr
    assert hdr.overflow == (len(rows) > MAXDET) and hdr.integrated == bool(flags & 2), hdr
    assert hdr.incomplete == bool(flags & chirpring.DET_INCOMPLETE), hdr
    assert rec.dtype == chirpring.DET_RECORD and len(rec) == len(keep)
    assert hdr.beams == bool(flags & chirpring.DET_BEAMS), hdr
    for f in ("channel", "range_gate", "doppler_bin", "beam", "angle_quality"):
        assert np.array_equal(rec[f], keep[f]), (k, f)
    for f in ("range_m", "velocity_mps", "power", "noise", "snr_db", "azimuth_deg",
              "elevation_deg"):
        assert np.array_equal(rec[f], keep[f], equal_nan=True), (k, f)


def test_det_ring_python_roundtrip():
    """A det ring (1 x 1 x max) written with the package's producer API and
    read back: per CPI a checked header and a structured array, an
    overflowed list (6 found, 4 kept, OVERFLOW) and an integrated one."""
    n = ring_name("det")
    g = G(1, 1, MAXDET, "det", slots=8)
    assert g.shape == (80 + 48 * MAXDET,) and g.dtype == np.uint8
    with chirpring.Consumer(n, geometry=g, create=True, timeout=5) as c, \
            chirpring.Producer(n, timeout=5) as p:
        assert c.geometry.format == "det"
        for k, (rows, found, flags, maps) in enumerate(LISTS):
            assert p.write(pack(k, rows, found, flags, maps), first_sample=k * 4096)
        for k in range(len(LISTS)):
            cpi = c.read()
            check_list(k, cpi.header, cpi.detections)
            assert cpi.first_sample == k * 4096
        assert LISTS[2][0].size == 6 and c.available() == 0


def corrupt_slots():
    """(what the error must say, a slot) for each check of a list."""
    good = pack(0, *LISTS[0])
    out = []
    def mod(what, field, value, base=good):
        b = base.copy()
        h = b[:80].view(chirpring.DET_HEADER)
        h[field] = value
        out.append((what, b))
    mod("magic", "magic", 0x12345678)
    mod("version", "version", 0)
    mod("record", "record_bytes", 16)
    mod("record", "record_bytes", 32)        # version 2 has 48
    mod("exceeds", "count", MAXDET + 1)     # count past the slot: never read
    mod("disagree", "found", 1)
    mod("disagree", "flags", chirpring.DET_OVERFLOW)
    mod("channel", "maps", 1)                # record 2 is channel 1
    mod("beam", "flags", chirpring.DET_BEAMS)  # records without beams: beam -1
    v1 = pack(4, *LISTS[4])                   # version 1 has no beam
    h = v1[:80].view(chirpring.DET_HEADER)
    h["version"], h["record_bytes"] = 1, 32
    out.append(("beams flag", v1))
    bad = good.copy()
    bad[80 + 64:80 + 68] = np.frombuffer(np.int32(0).tobytes(), np.uint8)   # 0, 0, 0 ok
    bad[80:84] = np.frombuffer(np.int32(1).tobytes(), np.uint8)             # 1, 0, 0: order
    out.append(("ordered", bad))
    out.append(("header", good[:79].copy()))
    return out


def test_parse_detections_refusals():
    """Each check of parse_detections names what is wrong; a count beyond
    the slot is refused before a record is read (the buffer is exactly the
    slot, so numpy could not read past it anyway), and a later version's
    longer records are read by stepping record_bytes."""
    for what, b in corrupt_slots():
        e = expect(chirpring.DetectionError, chirpring.parse_detections, bytes(b))
        assert e.errno == errno.EBADMSG and what in str(e), (what, e)
    # a later version with 56-byte records: the first 48 bytes of each are read
    rows = LISTS[4][0]
    slot = np.zeros(80 + 56 * MAXDET, np.uint8)
    slot[:80] = pack(4, rows, None, chirpring.DET_BEAMS, 4)[:80]
    h = slot[:80].view(chirpring.DET_HEADER)
    h["version"], h["record_bytes"] = 3, 56
    for i, r in enumerate(rows):
        slot[80 + 56 * i:80 + 56 * i + 48] = np.frombuffer(r.tobytes(), np.uint8)
        slot[80 + 56 * i + 48:80 + 56 * i + 56] = 0xee
    hdr, rec = chirpring.parse_detections(slot)
    assert hdr.version == 3 and hdr.record_bytes == 56 and hdr.beams
    assert np.array_equal(rec["range_gate"], rows["range_gate"])
    assert np.array_equal(rec["azimuth_deg"], rows["azimuth_deg"])
    assert np.array_equal(rec["angle_quality"], rows["angle_quality"])
    # a version-1 list (an older chirpd's) reads as one without beams
    for k in (0, 3):
        v1 = chirpring.pack_detections(LISTS[k][0], MAXDET, flags=LISTS[k][2], maps=LISTS[k][3],
                                       version=1)
        hdr, rec = chirpring.parse_detections(v1)
        assert hdr.version == 1 and hdr.record_bytes == 32 and not hdr.beams
        for f in ("channel", "range_gate", "doppler_bin", "beam"):
            assert np.array_equal(rec[f], LISTS[k][0][:MAXDET][f]), (k, f)
        assert np.isnan(rec["azimuth_deg"]).all() and (rec["angle_quality"] == 0).all()
    # Random slots (valid magic, random fields): a DetectionError or a list
    # inside the slot, never another exception.
    rng = np.random.default_rng(8)
    ok = 0
    for _ in range(3000):
        b = rng.integers(0, 256, size=int(rng.integers(0, 80 + 6 * 40)), dtype=np.uint8)
        if b.size >= 80:
            h = b[:80].view(chirpring.DET_HEADER)
            h["magic"], h["version"] = chirpring.DET_MAGIC, rng.integers(1, 3)
            h["record_bytes"] = (32 if h["version"][0] == 1 else 48) if rng.integers(2) \
                else rng.integers(24, 56)
            h["count"] = rng.integers(0, 8)
            h["found"] = h["count"] + rng.integers(0, 2)
            h["flags"] = chirpring.DET_OVERFLOW if h["found"] > h["count"] else 0
            h["maps"] = 2
            for i in range(int(h["count"][0])):   # channel 0, beam -1: lists get through
                o = 80 + i * int(h["record_bytes"][0])
                b[o:o + 4] = 0
                b[o + 32:o + 36] = 0xff
        try:
            hdr, rec = chirpring.parse_detections(bytes(b))
        except chirpring.DetectionError:
            continue
        assert 80 + hdr.count * hdr.record_bytes <= b.size and len(rec) == hdr.count
        ok += hdr.count > 0
    assert ok > 50, ok


def test_det_ring_from_chirp_feed_with_corrupt_list():
    """Lists written by the C library (chirp-feed --file replays raw slots
    into a det ring): read back equal; a corrupt one raises DetectionError
    naming the ring and seq, its slot is released, and the next read goes on."""
    n = ring_name("detfeed")
    slots = [pack(k, *LISTS[k]) for k in range(len(LISTS))]
    slots.insert(2, [b for what, b in corrupt_slots() if what == "exceeds"][0])
    raw = os.path.join(TMP, "det.raw")
    np.concatenate(slots).tofile(raw)
    with chirpring.Consumer(n, geometry=G(1, 1, MAXDET, "det", slots=8), create=True,
                            timeout=20) as c:
        f = subprocess.run([os.path.join(BIN, "chirp-feed"), "-r", n, "--file", raw, "--block",
                            "-q"], capture_output=True, text=True, timeout=60)
        assert f.returncode == 0, f.stderr
        got = []
        for i in range(len(slots)):
            try:
                cpi = c.read()
            except chirpring.DetectionError as e:
                assert i == 2 and "seq 2" in str(e) and "exceeds the slot" in str(e), (i, e)
                assert e.errno == errno.EBADMSG
                continue
            got.append((cpi.header, cpi.detections))
        assert c.available() == 0
    for k, (hdr, rec) in enumerate(got):
        check_list(k, hdr, rec)


def test_det_ring_to_chirp_tap():
    """Lists from the package's producer read by chirp-tap: --jsonl gives
    them back field for field, and --verify-targets counts the CPIs that
    hold a target in every map."""
    n = ring_name("dettap")
    cmd = [os.path.join(BIN, "chirp-tap"), "-r", n, "--create", "--geometry", "1,1,%d" % MAXDET,
           "--format", "det", "-n", str(len(LISTS)), "--timeout", "30", "--jsonl",
           "--verify-targets", "300:5", "--verify-tolerance", "1,0", "--verify-min", "0.25"]
    t = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_consumer(n, t)
        with chirpring.Producer(n, timeout=10) as p:
            for k in range(len(LISTS)):
                assert p.write(pack(k, *LISTS[k]), block=True)
        out, err = t.communicate(timeout=30)
    finally:
        if t.poll() is None:
            t.kill()
    assert t.returncode == 0, err
    import json
    lines = out.splitlines()
    assert len(lines) == len(LISTS), out
    for k, line in enumerate(lines):
        j = json.loads(line)
        rows = LISTS[k][0][:MAXDET]
        assert j["seq"] == 100 + k and j["ring_seq"] == k and j["found"] == len(LISTS[k][0]), j
        assert j["overflow"] == (len(LISTS[k][0]) > MAXDET) and j["count"] == len(rows), j
        assert j["incomplete"] == bool(LISTS[k][2] & chirpring.DET_INCOMPLETE), j
        assert [d["range_gate"] for d in j["detections"]] == rows["range_gate"].tolist()
        assert [d["doppler_bin"] for d in j["detections"]] == rows["doppler_bin"].tolist()
        for d, r in zip(j["detections"], rows):
            v = float(r["velocity_mps"])
            assert (d["velocity_mps"] is None) if np.isnan(v) else abs(d["velocity_mps"] - v) < 1e-6
    # List 0 holds 300:5 in both of its maps (channel 1 at 301), list 4 in a
    # beam (a list of beams reports a target in one beam).
    assert "verify-targets: 2 of 5 CPIs (40.00%)" in err, err
    for d, r in zip(json.loads(lines[4])["detections"], LISTS[4][0]):
        assert d["beam"] == r["beam"] and d["azimuth_deg"] == float(r["azimuth_deg"]), d
        assert d["angle_quality"] == r["angle_quality"], d


def test_det_ring_expect_angle():
    """chirp-tap --expect-angle on lists of beams: each CPI's strongest
    detection of the target is at its monopulse azimuth; within the
    tolerance every CPI counts (exit 0, the RMS error printed), outside it
    none (exit 4); a list without beams has no angle."""
    n = ring_name("angle")
    azs = [7.0, 7.4, 7.6, 8.0, 7.2, 7.5]
    def lists():
        for k, az in enumerate(azs):
            # the target in beams 1 (weaker) and 2, another at 80:-1
            rec = beam_records([(1, 300, 5, az - 3, 0, chirpring.DET_ANGLE_NOT_PEAK, 20),
                                (2, 300, 5, az, 0.5, 0, 31), (3, 80, -1, 20, 0, 0, 14)])
            yield chirpring.pack_detections(rec, MAXDET, seq=k, flags=chirpring.DET_BEAMS,
                                            maps=4, doppler_bins=16, range_gates=500)
        # a list without beams: the target found, no angle
        yield pack(0, *LISTS[0])
    rms = np.sqrt(np.mean((np.array(azs, np.float32) - 7.5) ** 2))
    for want, tol, rc in ((7.5, 0.6, 0), (10, 0.6, 4)):
        cmd = [os.path.join(BIN, "chirp-tap"), "-r", n, "--create", "--geometry",
               "1,1,%d" % MAXDET, "--format", "det", "-n", str(len(azs) + 1), "--timeout", "30",
               "--verify-targets", "300:5", "--verify-min", "0.8", "--expect-angle", str(want),
               "--angle-tolerance", str(tol)]
        t = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_consumer(n, t)
            with chirpring.Producer(n, timeout=10) as p:
                for slot in lists():
                    assert p.write(slot, block=True)
            out, err = t.communicate(timeout=30)
        finally:
            if t.poll() is None:
                t.kill()
        assert t.returncode == rc, (t.returncode, err)
        hits = len(azs) if want == 7.5 else 0
        line = [l for l in err.splitlines() if "expect-angle:" in l and "hold" in l]
        assert line and line[0].startswith("chirp-tap: expect-angle: %d of %d CPIs" % (
            hits, len(azs) + 1)), err
        got = float(line[0].split("azimuth RMS error ")[1].split()[0])
        want_rms = rms if want == 7.5 else np.sqrt(np.mean((np.array(azs, np.float32) - want) ** 2))
        assert abs(got - want_rms) < 1e-3, (got, want_rms)
        assert "over %d detections" % len(azs) in line[0], line


def test_maps_by_beam():
    """A map of beams reads as (beams, doppler_bins, range_gates)."""
    m = np.zeros((3, 8, 50), np.float32)
    assert chirpring.maps_by_beam(m).shape == (3, 8, 50)
    expect(ValueError, chirpring.maps_by_beam, np.zeros((8, 50), np.float32))


def test_map_ring_shape():
    """A range-Doppler map ring (rf32, C x Nd x R) reads as float32
    (channels, doppler_bins, range_gates)."""
    n = ring_name("map")
    m = np.random.default_rng(4).random((2, 15, 101), dtype=np.float32)
    with chirpring.Consumer(n, geometry=G(2, 15, 101, "rf32"), create=True, timeout=5) as c, \
            chirpring.Producer(n, timeout=5) as p:
        assert p.write(m)
        cpi = c.read()
        assert cpi.data.shape == (2, 15, 101) and cpi.data.dtype == np.float32
        assert np.array_equal(cpi.data, m) and cpi.header is None and cpi.detections is None


# ---- runner -------------------------------------------------------------------

def main():
    passed = failed = skipped = 0
    tests = [(k, v) for k, v in globals().items() if k.startswith("test_") and callable(v)]
    only = sys.argv[1:]
    for name, fn in tests:
        if only and name not in only:
            continue
        t0 = time.monotonic()
        try:
            fn()
        except Skip as e:
            skipped += 1
            print("skip %s: %s" % (name, e))
        except BaseException:
            failed += 1
            print("FAIL %s (%.2f s)" % (name, time.monotonic() - t0))
            traceback.print_exc(file=sys.stdout)
        else:
            passed += 1
            print("ok   %s (%.2f s)" % (name, time.monotonic() - t0))
        gc.collect()
        sys.stdout.flush()
    for n in _rings:
        try:
            chirpring.unlink(n)
        except OSError:
            pass
    subprocess.run(["rm", "-rf", TMP])
    print("counts: %d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
