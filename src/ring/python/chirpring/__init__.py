# SPDX-License-Identifier: Apache-2.0
"""chirpring — chirpd's shared-memory CPI rings from Python, as numpy views.

    import chirpring

    with chirpring.Consumer("/chirpd-out", timeout=5.0) as ring:
        print(ring.geometry)            # channels, pulses, samples, format, slots
        for cpi in ring:                # waits up to timeout for each CPI
            x = cpi.data                # (channels, pulses, samples) numpy view, zero copy
            print(cpi.seq, cpi.mode, cpi.pointing, cpi.first_sample, cpi.flags, cpi.gap)

    with chirpring.Producer("/chirpd-in") as ring:
        buf = ring.reserve()            # writable view of the next slot; None when full
        if buf is not None:
            buf[...] = samples
            ring.commit(first_sample=n, mode=m, pointing=(az, el))
                                        # m: the CPI's radar mode; (az, el): its
                                        # pointing, degrees from boresight

A thin layer over libchirpring (ctypes, see _lib.py); the ring's contract
is the C library's (include/chirp/ring.h, doc/ring.md): one producer and
one consumer process per ring, no locks, the producer never blocks, every
loss is visible as a sequence gap and a DISCONTINUITY flag.

Views and their lifetime. cpi.data is a read-only numpy array over the ring
slot itself: no payload byte is copied. It is valid until the CPI is
released: by the next iteration, cpi.release() or ring.release(), or by
closing the ring. After that, cpi.data raises ReleasedError instead of
returning bytes the producer may already be overwriting. An array taken
from cpi.data and kept past the release still points into the slot (numpy
cannot revoke it): its contents are then undefined, but it can never crash
the interpreter, because the ring stays mapped while any such array lives
(closing then warns and defers the detach to when the last one is freed).
Pass copy=True to get arrays of your own, valid forever.

Payload dtypes: cf32 -> complex64 (channels, pulses, samples); rf32 (the
magnitude and power_db outputs) -> float32 (channels, pulses, samples);
sc16 -> int16 (channels, pulses, samples, 2), I and Q in the last axis
(value / 32768 is the sample, as chirpd reads it). A range-Doppler map
output (map_power, map_db) is an rf32 ring of geometry C x Nd x R, so its
data is float32 (channels, doppler_bins, range_gates), bin k holding
Doppler bin k - Nd // 2 (zero Doppler in the middle). When chirpd forms
beams, the maps are beams: data is (beams, doppler_bins, range_gates), map b
beam b (maps_by_beam() names the axes).

Detection rings (format det, include/chirp/detect.h): geometry 1 x 1 x
max_detections; cpi.data is the slot's bytes (uint8), and each CPI read
carries its list, checked (magic, version, record size, count within the
slot) before anything is taken from it:

    with chirpring.Consumer("/chirpd-det", timeout=5.0) as ring:
        for cpi in ring:
            h = cpi.header              # DetHeader: seq, mode, count, found, overflow, ...
            d = cpi.detections          # structured array, DET_RECORD fields
            print(h.seq, d["range_gate"], d["doppler_bin"], d["snr_db"])
            if h.beams:                 # the maps are beams: each record's angle
                print(d["beam"], d["azimuth_deg"], d["elevation_deg"], d["angle_quality"])

A list that fails its checks raises DetectionError (its slot is released
first, so the next read goes on). parse_detections() reads one list from
any buffer (a slot, a file), pack_detections() writes one (test
producers: Producer.write of its result).

Errors: every libchirpring error becomes a RingError (an OSError) carrying
the library's errno and sentence, e.g. "no ring /chirpd-out: is its
creator (chirpd) running?". A wait that runs out raises Timeout (also a TimeoutError).
Ctrl-C interrupts a wait within 0.1 s as KeyboardInterrupt.
"""

import errno as _errno
import os
import time
import warnings
import weakref
from collections import namedtuple

import ctypes
import numpy as np

from . import _lib

__all__ = ["Consumer", "Producer", "CPI", "Geometry", "Stats", "RingError", "Timeout",
           "ReleasedError", "DISCONTINUITY", "NONFINITE", "REDELIVERED", "UNKNOWN_MODE",
           "INCOMPLETE", "BAD_POINTING",
           "unlink", "DetHeader", "DetectionError", "DET_RECORD", "DET_HEADER",
           "DET_RECORD_V1", "DET_OVERFLOW", "DET_INTEGRATED", "DET_NO_VELOCITY", "DET_SKIPPED",
           "DET_BEAMS", "DET_CHANNEL_ALL", "DET_BEAM_NONE", "DET_ANGLE_OUTSIDE",
           "DET_ANGLE_CLAMPED", "DET_ANGLE_UNRESOLVED", "DET_ANGLE_NOT_PEAK",
           "DET_ANGLE_NO_NEIGHBOUR", "det_bytes", "parse_detections", "pack_detections",
           "maps_by_beam", "DET_INCOMPLETE"]

DISCONTINUITY = _lib.DISCONTINUITY   # blocks were lost before this one
NONFINITE = _lib.NONFINITE           # payload holds NaN/Inf (set by chirpd on output)
REDELIVERED = _lib.REDELIVERED       # a consumer that died had taken this block
UNKNOWN_MODE = _lib.UNKNOWN_MODE     # chirpd on output: the CPI's mode is not
                                     # configured; every payload value NaN
INCOMPLETE = _lib.INCOMPLETE         # samples never arrived (a network producer):
                                     # they read zero; CPI.missing counts them
BAD_POINTING = _lib.BAD_POINTING     # chirpd on output: the CPI's pointing is not
                                     # finite, beyond +-90 degrees or puts a beam
                                     # outside the visible region; every value NaN

_FORMATS = {_lib.CF32: "cf32", _lib.SC16: "sc16", _lib.RF32: "rf32", _lib.DET: "det"}
_FORMAT_IDS = {v: k for k, v in _FORMATS.items()}

# A wait is cut into slices this long, so that Python sees Ctrl-C (and any
# other signal handler) within this time, whatever the timeout.
_WAIT_SLICE_S = 0.1
# How long a ring re-created by chirpd (new epoch) may take to come back
# when the ring has no timeout of its own.
_REATTACH_DEFAULT_S = 10.0


class RingError(OSError):
    """A libchirpring error: .errno is the library's errno, str() its sentence."""


class Timeout(RingError, TimeoutError):
    """Nothing arrived (or no slot came free) within the timeout."""


class ReleasedError(RingError):
    """A CPI's view was used after the CPI was released."""


def _error(code, msg):
    """RingError (or Timeout) for a negative or positive errno and a sentence."""
    code = abs(code)
    cls = Timeout if code == _errno.ETIMEDOUT else RingError
    return cls(code, msg)


class Geometry(namedtuple("Geometry", "channels pulses samples format slots sample_rate_hz")):
    """What the creator of a ring decides. format is 'cf32', 'sc16', 'rf32'
    or 'det' (detection lists: 1 x 1 x max_detections)."""
    __slots__ = ()

    @property
    def shape(self):
        """Shape of one CPI as numpy sees it (sc16 adds an I/Q axis of 2; a
        det slot is its bytes)."""
        if self.format == "det":
            return (det_bytes(self.samples),)
        s = (self.channels, self.pulses, self.samples)
        return s + (2,) if self.format == "sc16" else s

    @property
    def dtype(self):
        return {"cf32": np.dtype(np.complex64), "rf32": np.dtype(np.float32),
                "sc16": np.dtype(np.int16), "det": np.dtype(np.uint8)}[self.format]

    @property
    def cpi_bytes(self):
        return int(np.prod(self.shape)) * self.dtype.itemsize

    def _c(self):
        if self.format not in _FORMAT_IDS:
            raise ValueError("format %r: need one of cf32, sc16, rf32, det" % (self.format,))
        return _lib.Geometry(self.channels, self.pulses, self.samples,
                             _FORMAT_IDS[self.format], self.slots, self.sample_rate_hz)

    @classmethod
    def _from_c(cls, g):
        if g.format not in _FORMATS:
            raise RingError(_errno.EPROTO, "ring format %d is unknown to this module" % g.format)
        return cls(g.channels, g.pulses, g.samples, _FORMATS[g.format], g.slots, g.sample_rate_hz)

    def __str__(self):   # fields left None (expected geometries) print as *
        f = ["*" if v is None else v for v in self[:5]]
        return "%sx%sx%s %s, %s slots" % tuple(f)


# -- detection lists (include/chirp/detect.h) ---------------------------------

DET_MAGIC = 0x54454443          # "CDET" read as little-endian
DET_VERSION = 2
DET_OVERFLOW = 1 << 0           # found > count: the list was truncated
DET_INTEGRATED = 1 << 1         # CFAR on the channels' sum: channel is DET_CHANNEL_ALL
DET_NO_VELOCITY = 1 << 2        # no carrier or PRF: velocity_mps is NaN
DET_SKIPPED = 1 << 3            # the CPI was not processed (unknown mode): no
                                # records; its map or cube output is all NaN
DET_BEAMS = 1 << 4              # the maps are beams: records carry beam and angle
DET_INCOMPLETE = 1 << 5         # the input CPI arrived with holes (INCOMPLETE):
                                # a target may be missed or weaker
DET_CHANNEL_ALL = -1
DET_BEAM_NONE = -1              # beam of a record of a list without beams
# angle_quality bits (0 = good; doc/beams.md, "Monopulse")
DET_ANGLE_OUTSIDE = 1 << 0      # beyond the fan's first or last beam
DET_ANGLE_CLAMPED = 1 << 1      # at an end of the search interval
DET_ANGLE_UNRESOLVED = 1 << 2   # not one plane wave (two targets, a jammer)
DET_ANGLE_NOT_PEAK = 1 << 3     # a neighbouring beam is stronger
DET_ANGLE_NO_NEIGHBOUR = 1 << 4 # no neighbour: the angle is the beam's direction

DET_HEADER = np.dtype([("magic", "<u4"), ("version", "<u2"), ("record_bytes", "<u2"),
                       ("seq", "<u8"), ("timestamp_ns", "<u8"), ("first_sample", "<u8"),
                       ("mode", "<u4"), ("flags", "<u4"), ("count", "<u4"), ("found", "<u4"),
                       ("maps", "<u4"), ("doppler_bins", "<u4"), ("range_gates", "<u4"),
                       ("reserved", "<u4"), ("cells", "<u8"), ("crossings", "<u8")])
DET_RECORD_V1 = np.dtype([("channel", "<i4"), ("range_gate", "<u4"), ("doppler_bin", "<i4"),
                          ("range_m", "<f4"), ("velocity_mps", "<f4"), ("power", "<f4"),
                          ("noise", "<f4"), ("snr_db", "<f4")])
DET_RECORD = np.dtype(DET_RECORD_V1.descr + [
    ("beam", "<i4"), ("azimuth_deg", "<f4"), ("elevation_deg", "<f4"),
    ("angle_quality", "<u2"), ("reserved", "<u2")])
# A record (include/chirp/detect.h): range_m = range_gate x c / (2 fs), c =
# 299792458 m/s, gate 0 at 0 m; velocity_mps = doppler_bin x prf / Nd x c /
# (2 carrier), positive closing; power the cell's, noise the CFAR's estimate
# from the training cells around it, snr_db = 10 log10(power / noise). With
# MTI the noise differs across Doppler bins (about 0 at zero Doppler to 2 s^2,
# three-pulse 8/3 s^2, at +-prf/2), and near the notch the estimate, drawn
# from noisier bins, reads snr_db low by 1 to 4 dB (doc/radar.md, "Noise").
# Version 2 appends, with beams (DET_BEAMS): beam (channel holds it too),
# azimuth_deg and elevation_deg (degrees from boresight, the monopulse
# estimate) and angle_quality (DET_ANGLE_* bits); without beams beam -1,
# the angles NaN, quality 0. A version-1 list reads the same way.
assert DET_HEADER.itemsize == 80 and DET_RECORD_V1.itemsize == 32 and DET_RECORD.itemsize == 48


def det_bytes(max_detections):
    """Bytes of a list slot with room for max_detections records."""
    return DET_HEADER.itemsize + int(max_detections) * DET_RECORD.itemsize


class DetectionError(RingError):
    """A detection list failed its checks (corrupt, or not a list)."""


class DetHeader(namedtuple("DetHeader", "seq timestamp_ns first_sample mode flags count found "
                                        "overflow maps doppler_bins range_gates cells crossings "
                                        "version record_bytes")):
    """A detection list's header: seq, timestamp_ns and first_sample are the
    input CPI's; count records follow of found detections (overflow: more
    were found than fit); maps x doppler_bins x range_gates = cells tested,
    crossings of them over threshold. ._asdict() gives a dict."""
    __slots__ = ()

    @property
    def integrated(self):
        return bool(self.flags & DET_INTEGRATED)

    @property
    def no_velocity(self):
        return bool(self.flags & DET_NO_VELOCITY)

    @property
    def skipped(self):
        """The CPI's mode is unknown: no records (count 0, maps 0)."""
        return bool(self.flags & DET_SKIPPED)

    @property
    def beams(self):
        """The maps are beams (maps = their count): records carry beam,
        azimuth_deg, elevation_deg and angle_quality."""
        return bool(self.flags & DET_BEAMS)

    @property
    def incomplete(self):
        """The input CPI was committed INCOMPLETE: samples never arrived."""
        return bool(self.flags & DET_INCOMPLETE)


def parse_detections(buf):
    """(DetHeader, records) of the list at the start of buf (bytes, a numpy
    array, any buffer: a det ring's slot is one). buf's length is the
    slot's: count must fit in it and nothing past it is read. records is a
    structured array of DET_RECORD, the caller's own copy. A version-1 list
    (32-byte records) reads as one without beams (beam -1, angles NaN); a
    later version's longer records are read by stepping record_bytes.
    Raises DetectionError naming what is wrong."""
    b = np.frombuffer(buf, dtype=np.uint8)
    n = b.size
    if n < DET_HEADER.itemsize:
        raise DetectionError(_errno.EBADMSG, "%d bytes cannot hold a %d-byte list header"
                             % (n, DET_HEADER.itemsize))
    h = b[:DET_HEADER.itemsize].view(DET_HEADER)[0]
    if h["magic"] != DET_MAGIC:
        raise DetectionError(_errno.EBADMSG, "magic %#010x is not a detection list's (%#010x)"
                             % (h["magic"], DET_MAGIC))
    ver, rb = int(h["version"]), int(h["record_bytes"])
    if ver < 1:
        raise DetectionError(_errno.EBADMSG, "version %d: want >= 1" % ver)
    if (ver == 1 and rb != DET_RECORD_V1.itemsize) or (ver >= 2 and rb < DET_RECORD.itemsize):
        raise DetectionError(_errno.EBADMSG, "version %d with %d-byte records (version 1 has "
                             "%d, version 2 %d, later ones at least as many)"
                             % (ver, rb, DET_RECORD_V1.itemsize, DET_RECORD.itemsize))
    cap = (n - DET_HEADER.itemsize) // rb
    count, found, flags = int(h["count"]), int(h["found"]), int(h["flags"])
    if count > cap:
        raise DetectionError(_errno.EBADMSG, "count %d exceeds the slot's %d records"
                             % (count, cap))
    if found < count or (found > count) != bool(flags & DET_OVERFLOW):
        raise DetectionError(_errno.EBADMSG, "found %d, count %d and the overflow flag (%s) "
                             "disagree" % (found, count, "set" if flags & DET_OVERFLOW else "clear"))
    if ver == 1 and flags & DET_BEAMS:
        raise DetectionError(_errno.EBADMSG, "version 1 with the beams flag (records of "
                             "version 1 carry no beam)")
    rec = _det_records(b[DET_HEADER.itemsize:DET_HEADER.itemsize + count * rb], count, rb)
    ch = rec["channel"]
    if flags & DET_INTEGRATED:
        bad = np.flatnonzero(ch != DET_CHANNEL_ALL)
    else:
        bad = np.flatnonzero((ch < 0) | (ch >= int(h["maps"])))
    if bad.size:
        raise DetectionError(_errno.EBADMSG, "record %d: channel %d is not %s" % (
            bad[0], ch[bad[0]], "-1 (an integrated list)" if flags & DET_INTEGRATED
            else "one of the list's %d maps" % int(h["maps"])))
    if flags & DET_BEAMS:
        bad = np.flatnonzero(rec["beam"] != ch)
    else:
        bad = np.flatnonzero(rec["beam"] != DET_BEAM_NONE)
    if bad.size:
        raise DetectionError(_errno.EBADMSG, "record %d: beam %d, channel %d (%s)" % (
            bad[0], rec["beam"][bad[0]], ch[bad[0]], "a list of beams has beam = channel"
            if flags & DET_BEAMS else "a list without beams has beam -1"))
    down = np.flatnonzero(np.diff(ch) < 0)
    if down.size:
        raise DetectionError(_errno.EBADMSG, "record %d: channel %d after %d (records are "
                             "ordered by channel)" % (down[0] + 1, ch[down[0] + 1], ch[down[0]]))
    hdr = DetHeader(int(h["seq"]), int(h["timestamp_ns"]), int(h["first_sample"]), int(h["mode"]),
                    flags, count, found, bool(flags & DET_OVERFLOW), int(h["maps"]),
                    int(h["doppler_bins"]), int(h["range_gates"]), int(h["cells"]),
                    int(h["crossings"]), ver, rb)
    return hdr, rec


def _det_records(body, count, rb):
    """count DET_RECORDs from body, records of rb bytes: version 1's 32
    (beam -1, angles NaN), version 2's 48, or longer (fields beyond DET_RECORD
    ignored)."""
    rows = np.ascontiguousarray(body.reshape(count, rb)[:, :min(rb, DET_RECORD.itemsize)])
    if rb >= DET_RECORD.itemsize:
        return rows.view(DET_RECORD).reshape(count).copy()
    rec = np.zeros(count, dtype=DET_RECORD)
    old = rows.view(DET_RECORD_V1).reshape(count)
    for name in DET_RECORD_V1.names:
        rec[name] = old[name]
    rec["beam"] = DET_BEAM_NONE
    rec["azimuth_deg"] = np.nan
    rec["elevation_deg"] = np.nan
    return rec


def maps_by_beam(cpi_or_array):
    """A map output's data (a CPI or its array) as a (beams, doppler_bins,
    range_gates) array: with beams, a map ring's channels are its beams,
    so this is the data itself, checked to be three-dimensional."""
    a = cpi_or_array.data if isinstance(cpi_or_array, CPI) else np.asarray(cpi_or_array)
    if a.ndim != 3:
        raise ValueError("a map is (beams, doppler_bins, range_gates); got shape %s" % (a.shape,))
    return a


def pack_detections(records, max_detections, seq=0, timestamp_ns=0, first_sample=0, mode=0,
                    flags=0, found=None, maps=1, doppler_bins=0, range_gates=0, cells=None,
                    crossings=0, version=DET_VERSION):
    """One list slot (uint8 array of det_bytes(max_detections)) holding
    records (anything numpy turns into DET_RECORD) as chirpd writes it:
    found defaults to len(records); when records do not fit, the first
    max_detections are kept and DET_OVERFLOW is set, as chirpd does.
    Records given without beam fields get beam -1 and NaN angles.
    version=1 writes a version-1 list (32-byte records, as an older
    chirpd): a reader's compatibility test."""
    rec = _as_det_records(records)
    found = len(rec) if found is None else int(found)
    if found < len(rec):
        raise ValueError("found %d < %d records" % (found, len(rec)))
    rec = rec[:max_detections]
    if found > len(rec):
        flags |= DET_OVERFLOW
    if version not in (1, DET_VERSION):
        raise ValueError("version %r: 1 or %d" % (version, DET_VERSION))
    if version == 1:
        old = np.zeros(len(rec), dtype=DET_RECORD_V1)
        for name in DET_RECORD_V1.names:
            old[name] = rec[name]
        rec = old
    out = np.zeros(det_bytes(max_detections), dtype=np.uint8)
    h = np.zeros(1, dtype=DET_HEADER)
    h[0] = (DET_MAGIC, version, rec.dtype.itemsize, seq, timestamp_ns, first_sample, mode,
            flags, len(rec), found, maps, doppler_bins, range_gates, 0,
            maps * doppler_bins * range_gates if cells is None else cells, crossings)
    out[:DET_HEADER.itemsize] = h.view(np.uint8)
    out[DET_HEADER.itemsize:DET_HEADER.itemsize + rec.nbytes] = rec.view(np.uint8)
    return out


def _as_det_records(records):
    """records as DET_RECORD; a structured array without the version-2
    fields (DET_RECORD_V1, or a subset) gets beam -1 and NaN angles."""
    a = np.asarray(records)
    if a.dtype.names is None or set(DET_RECORD.names) <= set(a.dtype.names):
        return np.asarray(records, dtype=DET_RECORD).reshape(-1)
    a = a.reshape(-1)
    rec = np.zeros(len(a), dtype=DET_RECORD)
    rec["beam"] = DET_BEAM_NONE
    rec["azimuth_deg"] = np.nan
    rec["elevation_deg"] = np.nan
    for name in a.dtype.names:
        rec[name] = a[name]
    return rec


Stats = namedtuple("Stats", "committed released overruns skipped epoch")
Stats.__doc__ = ("The ring's shared counters: blocks committed, released, dropped by the "
                 "producer (overruns), skipped by a (re)attaching consumer, and the epoch.")


def unlink(name):
    """Remove a ring's name (its memory lives until every mapping is gone)."""
    rc = _lib.lib().chirp_ring_unlink(name.encode())
    if rc < 0:
        raise _error(rc, "unlink %s: %s" % (name, os.strerror(-rc)))


def _deadline(timeout):
    return None if timeout is None else time.monotonic() + max(0.0, float(timeout))


class _Ring:
    """What Consumer and Producer share: attach/create, geometry, the mapped
    data region as numpy, re-attach after a new epoch, close."""

    _role = None

    def __init__(self, name, timeout=None, geometry=None, create=False, hugepages=False,
                 mode=0, group=None, allow_foreign_owner=False, unlink=None, spin=0.0):
        if not isinstance(name, str) or not name.startswith("/"):
            raise ValueError("ring name %r: need a string like '/chirpd-out'" % (name,))
        if not (isinstance(spin, (int, float)) and 0 <= spin <= 1.0):
            raise ValueError("spin %r: need seconds in 0..1" % (spin,))
        if timeout is not None and not timeout >= 0:
            raise ValueError("timeout %r: need seconds >= 0, or None" % (timeout,))
        if create and geometry is None:
            raise ValueError("create=True needs a geometry")
        if geometry is not None and not isinstance(geometry, Geometry):
            if isinstance(geometry, dict):   # fields left out: any value
                geometry = Geometry(**{**dict.fromkeys(Geometry._fields), **geometry})
            else:
                geometry = Geometry(*geometry)
        self.name = name
        self.timeout = timeout
        self._want = geometry
        self._create = bool(create)
        self._unlink = self._create if unlink is None else bool(unlink)
        self._opts = _lib.Opts(1 if hugepages else 0, mode,
                               0xFFFFFFFF if group is None else group,
                               1 if allow_foreign_owner else 0)
        self._L = _lib.lib()
        self._r = None
        self._errbuf = ctypes.create_string_buffer(_lib.ERRLEN)
        self.reattached = 0   # times the ring was found re-created and attached again
        self.spin = float(spin)
        self._attach(_deadline(timeout), first=True)

    # -- attach -------------------------------------------------------------

    def _attach(self, deadline, first):
        """Attach (or create) by name, waiting until deadline (None: one try
        on the first attach) while the ring is absent, being created, or
        retired; then map the data region for numpy."""
        L = self._L
        while True:
            if self._create and first:
                g = self._want._c()
                r = L.chirp_ring_create(self.name.encode(), ctypes.byref(g), self._role,
                                        ctypes.byref(self._opts), self._errbuf, _lib.ERRLEN)
            else:
                r = L.chirp_ring_attach(self.name.encode(), self._role, ctypes.byref(self._opts),
                                        self._errbuf, _lib.ERRLEN)
            if r:
                break
            e = ctypes.get_errno()
            msg = self._errbuf.value.decode(errors="replace") or os.strerror(e)
            waitable = e in (_errno.ENOENT, _errno.EAGAIN, _errno.ESTALE)
            if not waitable or deadline is None or time.monotonic() >= deadline:
                if waitable and deadline is not None:
                    msg += " (waited %g s)" % (self.timeout if first and self.timeout is not None
                                               else _REATTACH_DEFAULT_S)
                raise _error(e, msg)
            time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
        self._r = r
        if self.spin > 0:   # chirp_ring_set_spin: checked in __init__, cannot fail
            L.chirp_ring_set_spin(r, int(self.spin * 1e9))
        g = _lib.Geometry()
        L.chirp_ring_geometry(r, ctypes.byref(g))
        try:
            self.geometry = Geometry._from_c(g)
            self._check_expected()
            self._map()
        except BaseException:
            L.chirp_ring_detach(r)
            self._r = None
            raise
        st = self.stats()
        self.epoch = st.epoch

    def _check_expected(self):
        w, g = self._want, self.geometry
        if w is None or self._create:
            return
        bad = [f for f in ("channels", "pulses", "samples", "format", "slots")
               if getattr(w, f) is not None and getattr(w, f) != getattr(g, f)]
        if bad:
            raise RingError(_errno.EINVAL, "ring %s is %s, expected %s (%s differ)"
                            % (self.name, g, w, ", ".join(bad)))

    def _map(self):
        """One numpy view per slot over the ring's data region (no copy).
        The region object holds the C handle: it is detached when the region
        is collected, i.e. after close() and once no array over it lives."""
        L, r = self._L, self._r
        base, size = ctypes.c_void_p(), ctypes.c_size_t()
        L.chirp_ring_data(r, ctypes.byref(base), ctypes.byref(size))
        stride = L.chirp_ring_slot_bytes(r)
        g = self.geometry
        nbytes = g.cpi_bytes
        if not base.value or stride < nbytes or stride * g.slots > size.value:
            raise RingError(_errno.EBADMSG, "ring %s: data region %d bytes at %#x, slot stride %d, "
                            "does not hold %d slots of %d bytes"
                            % (self.name, size.value, base.value or 0, stride, g.slots, nbytes))
        region = (ctypes.c_char * size.value).from_address(base.value)
        self._fin = weakref.finalize(region, L.chirp_ring_detach, r)
        flat = np.frombuffer(region, dtype=np.uint8)
        if self._role == _lib.CONSUMER:
            flat.flags.writeable = False
        self._flat = flat
        self._base, self._stride, self._size, self._nbytes = base.value, stride, size.value, nbytes
        self._slots = [flat[i * stride:i * stride + nbytes].view(g.dtype).reshape(g.shape)
                       for i in range(g.slots)]

    def _view(self, payload, length, slot):
        """The numpy view for a block's payload, checked against the region."""
        off = (payload or 0) - self._base
        if slot < len(self._slots) and off == slot * self._stride and length == self._nbytes:
            return self._slots[slot][...]   # a fresh view object, same memory
        g = self.geometry
        if length != self._nbytes or off < 0 or off + length > self._size:
            raise RingError(_errno.EBADMSG, "ring %s: block of %d bytes at offset %d does not fit "
                            "a %d-byte CPI in the %d-byte data region"
                            % (self.name, length, off, self._nbytes, self._size))
        # Not where the slot index says (not so with today's layout, payload
        # = base + slot * stride, but the header does not promise it).
        return self._flat[off:off + length].view(g.dtype).reshape(g.shape)

    def _drop_handle(self):
        """Forget the C handle; detach now if no view outlives it, else later."""
        self._slots = []
        self._flat = None
        self._r = None
        fin = self._fin
        self._fin = None
        if fin is not None and fin.alive:
            import gc
            gc.collect()   # views held only by cycles
            if fin.alive:
                warnings.warn("ring %s: an array taken from a view is still alive; the ring stays "
                              "mapped (and attached) until it is freed (use copy=True to keep "
                              "arrays)" % self.name, ResourceWarning, stacklevel=3)

    def _reattach(self):
        """After -ESTALE: the ring was re-created (new epoch) or removed.
        Attach again by name, waiting up to timeout (10 s without one)."""
        self._drop_handle()
        self._attach(_deadline(self.timeout if self.timeout is not None else _REATTACH_DEFAULT_S),
                     first=False)
        self.reattached += 1

    def _sentence(self, rc, call):
        """The library's sentence for rc from call (chirp_ring_check knows why
        a ring is stale or corrupt), else strerror."""
        if rc in (-_errno.ESTALE, -_errno.EBADMSG) and self._r:
            if self._L.chirp_ring_check(self._r, self._errbuf, _lib.ERRLEN) < 0 and self._errbuf.value:
                return self._errbuf.value.decode(errors="replace")
        return "%s(%s): %s" % (call, self.name, os.strerror(-rc))

    def _handle(self):
        if self._r is None:
            raise RingError(_errno.EBADF, "ring %s is closed" % self.name)
        return self._r

    # -- common API ------------------------------------------------------------

    def stats(self):
        """The ring's shared counters (Stats)."""
        st = _lib.Stats()
        rc = self._L.chirp_ring_stats(self._handle(), ctypes.byref(st))
        if rc < 0:
            raise _error(rc, self._sentence(rc, "chirp_ring_stats"))
        return Stats(st.committed, st.released, st.overruns, st.skipped, st.epoch)

    def peer_attached(self):
        """True while the other role is held by a live process."""
        rc = self._L.chirp_ring_peer_attached(self._handle())
        if rc < 0:
            raise _error(rc, self._sentence(rc, "chirp_ring_peer_attached"))
        return bool(rc)

    def _wait(self, deadline, what):
        """chirp_ring_wait in slices until ready or deadline (None: forever)."""
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise Timeout(_errno.ETIMEDOUT, "ring %s: %s within %g s"
                              % (self.name, what, self.timeout if self.timeout is not None else 0))
            s = _WAIT_SLICE_S if left is None else min(left, _WAIT_SLICE_S)
            rc = self._L.chirp_ring_wait(self._handle(), int(s * 1e9))
            if rc == 0:
                return
            if rc not in (-_errno.ETIMEDOUT, -_errno.EINTR):
                raise _error(rc, self._sentence(rc, "chirp_ring_wait"))
            # -EINTR: a signal; Python runs its handler (KeyboardInterrupt)
            # as soon as this frame executes again.

    def close(self):
        """Release what is held and detach (unlinking a ring we created
        unless unlink=False). Idempotent."""
        if self._r is None:
            return
        self._close_role()
        self._drop_handle()
        if self._unlink:
            self._L.chirp_ring_unlink(self.name.encode())
            self._unlink = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        return "<chirpring.%s %s %s%s>" % (type(self).__name__, self.name, self.geometry,
                                           "" if self._r else " closed")


class CPI:
    """One CPI as the consumer took it. data is valid until release().
    mode is the CPI's radar mode as its producer committed it (0 from a
    producer that gives none). From a det ring, header (DetHeader) and
    detections (a DET_RECORD array of header.count records) are the
    checked list, the CPI's own copies (valid after release); None from
    other rings. missing: with INCOMPLETE, the complex samples (all
    channels) that never arrived and read zero; 0 otherwise. pointing:
    (azimuth, elevation), degrees from boresight, the direction the
    producer steered this CPI's beams to ((0.0, 0.0) from a producer that
    gives none); chirpd hands its input's on to every output."""

    __slots__ = ("seq", "timestamp_ns", "first_sample", "flags", "mode", "slot", "gap", "missing",
                 "pointing", "epoch", "header", "detections", "_data", "_ring", "_copied",
                 "__weakref__")

    def __init__(self, ring, blk, data, gap, copied, det=(None, None)):
        self.seq = blk.seq
        self.timestamp_ns = blk.timestamp_ns
        self.first_sample = blk.first_sample
        self.flags = blk.flags
        self.mode = blk.mode
        self.slot = blk.slot
        # the count is defined only with the flag (ring.h)
        self.missing = blk.missing if blk.flags & INCOMPLETE else 0
        self.pointing = (float(blk.pointing_az_deg), float(blk.pointing_el_deg))
        self.gap = gap
        self.epoch = ring.epoch
        self._data = data
        self._ring = None if copied else ring
        self._copied = copied
        # det rings: the list's DetHeader and its records (the CPI's own
        # copy, valid after release); None for other rings
        self.header, self.detections = det

    @property
    def data(self):
        """numpy array (channels, pulses, samples); a view of the ring slot
        until released (then ReleasedError), or the CPI's own copy."""
        if self._data is None:
            raise ReleasedError(_errno.EINVAL, "CPI seq %d was released: its slot belongs to "
                                "the producer again (use copy=True, or .copy() the array "
                                "before the next one)" % self.seq)
        return self._data

    @property
    def released(self):
        return self._data is None

    @property
    def discontinuity(self):
        return bool(self.flags & DISCONTINUITY)

    @property
    def nonfinite(self):
        return bool(self.flags & NONFINITE)

    @property
    def redelivered(self):
        return bool(self.flags & REDELIVERED)

    @property
    def unknown_mode(self):
        """chirpd had no filter for this CPI's mode: every value of data is
        NaN (never 0, which would pass for a result)."""
        return bool(self.flags & UNKNOWN_MODE)

    @property
    def pointing_az_deg(self):
        return self.pointing[0]

    @property
    def pointing_el_deg(self):
        return self.pointing[1]

    @property
    def bad_pointing(self):
        """chirpd did not process this CPI: its pointing is not finite, beyond
        +-90 degrees, or puts a beam outside the visible region; every
        value of data is NaN."""
        return bool(self.flags & BAD_POINTING)

    @property
    def incomplete(self):
        """Samples of this CPI never arrived (a network producer committed
        it on time with holes): they read zero; missing counts them."""
        return bool(self.flags & INCOMPLETE)

    def release(self):
        """Give the slot back to the producer (a copied CPI keeps its data)."""
        if self._ring is not None:
            self._ring._release_cpi(self)

    def __repr__(self):
        f = [n for n, b in (("DISCONTINUITY", DISCONTINUITY), ("NONFINITE", NONFINITE),
                            ("REDELIVERED", REDELIVERED), ("UNKNOWN_MODE", UNKNOWN_MODE),
                            ("INCOMPLETE", INCOMPLETE), ("BAD_POINTING", BAD_POINTING))
             if self.flags & b]
        return "<CPI seq %d mode %d pointing %g,%g first_sample %d gap %s flags %s%s%s>" % (
            self.seq, self.mode, self.pointing[0], self.pointing[1], self.first_sample,
            self.gap, "|".join(f) or "0",
            " missing %d" % self.missing if self.missing else "",
            " released" if self.released else "")


class Consumer(_Ring):
    """The consumer of a ring (chirpd's output, normally /chirpd-out).

    Consumer(name, timeout=None, copy=False, geometry=None, create=False, ...)

    timeout: seconds to wait for the ring at attach and for each CPI
    (None: attach once, wait for CPIs without limit). copy: hand out arrays
    of your own instead of views. geometry: a Geometry (or dict, fields
    None = any) the ring must have, else RingError; with create=True, make
    the ring with it (test harnesses without chirpd; removed at close unless
    unlink=False). allow_foreign_owner, hugepages, mode, group: as
    struct chirp_ring_opts. spin: seconds (0..1, default 0) each wait keeps
    polling before it sleeps (chirp_ring_set_spin): a little more than the
    gap between CPIs keeps a waiting reader awake while CPIs flow, so it
    does not pay a sleeping thread's wake-up (1-2 ms on a busy VM).

    Iterating yields CPIs and releases each one when the next is asked
    for. A ring that chirpd re-creates (new geometry, new epoch) is
    attached again transparently: the next CPI has gap None, a new
    .epoch, and maybe a new shape (ring.geometry).
    """

    _role = _lib.CONSUMER

    def __init__(self, name, timeout=None, copy=False, **kw):
        self.copy = bool(copy)
        self._held = None      # the CPI whose slot we hold (views only)
        self._prev_seq = None  # seq of the last CPI taken, for gaps
        self._blk = _lib.Block()
        self._blkref = ctypes.byref(self._blk)
        super().__init__(name, timeout=timeout, **kw)

    def read(self, timeout=-1):
        """The next CPI, waiting up to timeout seconds (default: the ring's;
        None: forever). Releases the CPI held before. Raises Timeout."""
        if self._held is not None:
            self._release_cpi(self._held)
        L, blk = self._L, self._blk
        # Fast path: a CPI is waiting (no clock read, no wait).
        rc = L.chirp_ring_peek(self._handle(), self._blkref)
        t = deadline = None
        if rc == -_errno.EAGAIN:
            t = self.timeout if timeout == -1 else timeout
            deadline = _deadline(t)
        while rc != 0:
            if rc == -_errno.EAGAIN:
                if deadline is None and t is None:
                    t = self.timeout if timeout == -1 else timeout
                    deadline = _deadline(t)
                try:
                    self._wait(deadline, "no CPI")
                except Timeout as e:
                    e.strerror = "ring %s: no CPI within %g s" % (self.name, t)
                    e.args = (e.errno, e.strerror)
                    raise
            elif rc == -_errno.ESTALE:
                self._reattach()
                self._prev_seq = None
            elif rc == -_errno.EBADMSG:
                # One descriptor failed validation and was skipped (and
                # counted), unless the ring itself is corrupt.
                rc2 = L.chirp_ring_check(self._r, self._errbuf, _lib.ERRLEN)
                if rc2 == -_errno.ESTALE:
                    self._reattach()
                    self._prev_seq = None
                elif rc2 != 0:
                    raise _error(rc2, self._errbuf.value.decode(errors="replace")
                                 or self._sentence(rc2, "chirp_ring_peek"))
            else:
                raise _error(rc, self._sentence(rc, "chirp_ring_peek"))
            rc = L.chirp_ring_peek(self._handle(), self._blkref)
        gap = None if self._prev_seq is None else blk.seq - self._prev_seq - 1
        self._prev_seq = blk.seq
        det = (None, None)
        try:
            view = self._view(blk.payload, blk.len, blk.slot)
            if self.geometry.format == "det":
                det = self._detections(view, blk.seq)
        except RingError:
            L.chirp_ring_release(self._r)
            raise
        if self.copy:
            cpi = CPI(self, blk, view.copy(), gap, True, det)
            del view
            rc = L.chirp_ring_release(self._r)
            if rc < 0:
                raise _error(rc, self._sentence(rc, "chirp_ring_release"))
            return cpi
        cpi = CPI(self, blk, view, gap, False, det)
        self._held = cpi
        return cpi

    def _detections(self, view, seq):
        """The checked list of a det ring's slot (parse_detections), its
        errors named by ring and block."""
        try:
            return parse_detections(view)
        except DetectionError as e:
            raise DetectionError(e.errno, "ring %s seq %d: detection list rejected: %s"
                                 % (self.name, seq, e.strerror)) from None

    def _release_cpi(self, cpi):
        if cpi is not self._held:
            return   # already released (or from before a re-attach: its ring is gone)
        cpi._data = None
        self._held = None
        rc = self._L.chirp_ring_release(self._handle())
        if rc < 0:
            raise _error(rc, self._sentence(rc, "chirp_ring_release"))

    def release(self):
        """Release the CPI held (if any) now rather than at the next one."""
        if self._held is not None:
            self._release_cpi(self._held)

    def available(self):
        """Committed CPIs not yet taken."""
        return int(self._L.chirp_ring_available(self._handle()))

    def _drop_handle(self):
        if self._held is not None:   # its slot is gone with the handle
            self._held._data = None
            self._held = None
        super()._drop_handle()

    def _close_role(self):
        self.release()

    def __iter__(self):
        return self

    def __next__(self):
        return self.read()


class Producer(_Ring):
    """The producer of a ring (chirpd's input, normally /chirpd-in): a
    digitizer prototype or a test harness.

    Producer(name, timeout=None, geometry=None, create=False, ...) — the
    options are Consumer's. chirpd creates its input ring and owns the
    geometry; create=True makes one without chirpd.

    reserve() gives the next slot as a writable numpy view, or None when the
    ring is full: the block is then dropped and counted by the ring (its
    overruns; ring.drops counts this handle's), and the next CPI committed
    carries DISCONTINUITY and a sequence gap, exactly as with the C library.
    commit() publishes it. The producer never waits unless asked
    (reserve(block=True)).
    """

    _role = _lib.PRODUCER

    def __init__(self, name, timeout=None, **kw):
        self.drops = 0          # reserve() calls that found the ring full
        self._reserved = None   # the view handed out by reserve()
        self._pp = ctypes.c_void_p()
        super().__init__(name, timeout=timeout, **kw)

    def reserve(self, block=False):
        """Writable view of the next slot, or None when the ring is full (a
        counted drop). block=True waits for a free slot instead (up to the
        ring's timeout, then Timeout) and never drops. Reserving again
        before commit returns the same slot."""
        L = self._L
        deadline = _deadline(self.timeout)
        while True:
            if block and self._reserved is None:
                self._wait(deadline, "no free slot")   # single producer: stays free
            rc = L.chirp_ring_reserve(self._handle(), ctypes.byref(self._pp))
            if rc == 0:
                break
            if rc == -_errno.ENOBUFS:
                self.drops += 1
                return None
            if rc == -_errno.ESTALE:
                self._reattach()
                continue
            raise _error(rc, self._sentence(rc, "chirp_ring_reserve"))
        g = self.geometry
        off = self._pp.value - self._base
        v = self._view(self._pp.value, self._nbytes, off // self._stride)
        self._reserved = v
        return v

    def commit(self, first_sample=0, timestamp_ns=0, flags=0, mode=0, missing=0,
               pointing=(0.0, 0.0)):
        """Publish the reserved slot. timestamp_ns 0 = now (CLOCK_REALTIME).
        mode: the CPI's radar mode (an id of chirpd's [mode] configuration,
        0..2**32-1; chirp_ring_commit_mode). missing: complex samples (all
        channels) that never arrived and were zeroed, 0..2**32-1; > 0 adds
        INCOMPLETE (chirp_ring_commit_partial). pointing: (azimuth,
        elevation) in degrees from boresight, the direction this CPI's
        beams are steered to, carried as float32 (chirp_ring_commit_cpi).
        Returns True; False if the ring was re-created meanwhile (the block
        is lost, counted in drops, and the ring attached again)."""
        if self._reserved is None:
            raise RingError(_errno.EINVAL, "ring %s: commit without reserve" % self.name)
        if not 0 <= mode <= 0xffffffff:
            raise ValueError("mode %r: must be 0..%d" % (mode, 0xffffffff))
        if not 0 <= missing <= 0xffffffff:
            raise ValueError("missing %r: must be 0..%d" % (missing, 0xffffffff))
        try:
            az, el = (float(v) for v in pointing)
        except (TypeError, ValueError):
            raise ValueError("pointing %r: want (azimuth_deg, elevation_deg)" % (pointing,)) \
                from None
        cpi = _lib.Cpi(timestamp_ns, first_sample, flags, mode, az, el, missing, 0)
        rc = self._L.chirp_ring_commit_cpi(self._handle(), ctypes.byref(cpi))
        if rc == -_errno.ESTALE:
            self._reserved = None
            self.drops += 1
            self._reattach()
            return False
        if rc < 0:
            raise _error(rc, self._sentence(rc, "chirp_ring_commit"))
        self._reserved = None
        return True

    def write(self, data, first_sample=0, timestamp_ns=0, block=False, mode=0,
              pointing=(0.0, 0.0)):
        """Copy one CPI (an array of the ring's shape and dtype) into the
        next slot and commit it (with mode and pointing, as commit). Returns True, or
        False when it was dropped
        (ring full, block=False). A wrong shape or dtype is a ValueError
        naming both geometries, raised before anything is reserved."""
        g = self.geometry
        a = np.asarray(data)
        if a.shape != g.shape or a.dtype != g.dtype:
            raise ValueError("ring %s takes %s CPIs of shape %s %s; got shape %s %s"
                             % (self.name, g.format, g.shape, g.dtype, a.shape, a.dtype))
        buf = self.reserve(block=block)
        if buf is None:
            return False
        buf[...] = a
        del buf
        return self.commit(first_sample=first_sample, timestamp_ns=timestamp_ns, mode=mode,
                           pointing=pointing)

    def _drop_handle(self):
        self._reserved = None
        super()._drop_handle()

    def _close_role(self):
        # An uncommitted reservation is never delivered (ring.h); drop our view.
        self._reserved = None
