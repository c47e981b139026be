# SPDX-License-Identifier: Apache-2.0
"""ctypes declarations of libchirpring's public ABI (include/chirp/ring.h).

Only the structs and functions of chirp/ring.h, declared once with their
argument and result types so every call is checked by ctypes. The library
is loaded on first use, from (in this order):

  1. $CHIRPRING_LIBRARY, a path (tests use the build tree's .so);
  2. the LIBDIR `make install` wrote into chirpring/_config.py;
  3. the soname libchirpring.so.3 through the dynamic linker (a .deb, or
     ldconfig after `make install`).

A library of another ABI is refused when it is loaded (it lacks a function
of this one: chirp_ring_commit_mode is new in ABI 2), and a ring of another
ABI when it is attached (EPROTO, naming both versions).

ctypes rather than cffi: no build step and no dependency beyond the
standard library; a ctypes call with declared argtypes costs a few hundred
nanoseconds, far below one CPI (README, "From Python", has the figures).
"""

import ctypes
import os

ABI_VERSION = 2   # CHIRP_RING_ABI_VERSION this module was written against

CF32, SC16, RF32, DET = 0, 1, 2, 3
PRODUCER, CONSUMER = 1, 2
DISCONTINUITY = 1 << 0
NONFINITE = 1 << 1
REDELIVERED = 1 << 2
UNKNOWN_MODE = 1 << 3
INCOMPLETE = 1 << 4

ERRLEN = 512


class Geometry(ctypes.Structure):
    _fields_ = [("channels", ctypes.c_uint32), ("pulses", ctypes.c_uint32),
                ("samples", ctypes.c_uint32), ("format", ctypes.c_uint32),
                ("slots", ctypes.c_uint32), ("sample_rate_hz", ctypes.c_double)]


class Opts(ctypes.Structure):
    # mode_t and gid_t are 32-bit unsigned on every Linux ABI chirpd builds for.
    _fields_ = [("hugepages", ctypes.c_int), ("mode", ctypes.c_uint32),
                ("group", ctypes.c_uint32), ("allow_foreign_owner", ctypes.c_int)]


class Block(ctypes.Structure):
    _fields_ = [("seq", ctypes.c_uint64), ("timestamp_ns", ctypes.c_uint64),
                ("first_sample", ctypes.c_uint64), ("flags", ctypes.c_uint32),
                ("slot", ctypes.c_uint32), ("mode", ctypes.c_uint32),
                ("missing", ctypes.c_uint32), ("len", ctypes.c_uint64),
                ("payload", ctypes.c_void_p)]


class Stats(ctypes.Structure):
    _fields_ = [("committed", ctypes.c_uint64), ("released", ctypes.c_uint64),
                ("overruns", ctypes.c_uint64), ("skipped", ctypes.c_uint64),
                ("epoch", ctypes.c_uint64)]


_P = ctypes.c_void_p
_PROTOS = {
    # name: (restype, argtypes)
    "chirp_ring_cpi_bytes": (ctypes.c_uint64, [ctypes.POINTER(Geometry)]),
    "chirp_ring_create": (_P, [ctypes.c_char_p, ctypes.POINTER(Geometry), ctypes.c_int,
                               ctypes.POINTER(Opts), ctypes.c_char_p, ctypes.c_size_t]),
    "chirp_ring_attach": (_P, [ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(Opts),
                               ctypes.c_char_p, ctypes.c_size_t]),
    "chirp_ring_detach": (None, [_P]),
    "chirp_ring_unlink": (ctypes.c_int, [ctypes.c_char_p]),
    "chirp_ring_peer_attached": (ctypes.c_int, [_P]),
    "chirp_ring_geometry": (None, [_P, ctypes.POINTER(Geometry)]),
    "chirp_ring_data": (None, [_P, ctypes.POINTER(_P), ctypes.POINTER(ctypes.c_size_t)]),
    "chirp_ring_slot_bytes": (ctypes.c_uint64, [_P]),
    "chirp_ring_stats": (ctypes.c_int, [_P, ctypes.POINTER(Stats)]),
    "chirp_ring_check": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_size_t]),
    "chirp_ring_reserve": (ctypes.c_int, [_P, ctypes.POINTER(_P)]),
    "chirp_ring_reserved": (ctypes.c_uint32, [_P]),
    "chirp_ring_commit": (ctypes.c_int, [_P, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint32]),
    "chirp_ring_commit_mode": (ctypes.c_int, [_P, ctypes.c_uint64, ctypes.c_uint64,
                                              ctypes.c_uint32, ctypes.c_uint32]),
    "chirp_ring_peek": (ctypes.c_int, [_P, ctypes.POINTER(Block)]),
    "chirp_ring_release": (ctypes.c_int, [_P]),
    "chirp_ring_available": (ctypes.c_uint64, [_P]),
    "chirp_ring_wait": (ctypes.c_int, [_P, ctypes.c_int64]),
    "chirp_ring_set_spin": (ctypes.c_int, [_P, ctypes.c_int64]),
    "chirp_ring_get_spin": (ctypes.c_int64, [_P]),
}

# Functions a version-2 library may lack (it predates them): bound when
# present; the Python call that needs one says so when it is not.
_OPTIONAL = {
    "chirp_ring_commit_partial": (ctypes.c_int, [_P, ctypes.c_uint64, ctypes.c_uint64,
                                                 ctypes.c_uint32, ctypes.c_uint32,
                                                 ctypes.c_uint32]),
}

_lib = None


def _candidates():
    env = os.environ.get("CHIRPRING_LIBRARY")
    if env:
        return [env]   # explicit: no silent fallback to another copy
    out = []
    try:
        from . import _config   # written by `make install`
        out.append(os.path.join(_config.LIBDIR, "libchirpring.so.3"))
    except ImportError:
        pass
    out.append("libchirpring.so.3")
    return out


def lib():
    """The loaded library with every function declared; raises OSError
    naming each place tried when it cannot be loaded."""
    global _lib
    if _lib is not None:
        return _lib
    tried = []
    for path in _candidates():
        try:
            L = ctypes.CDLL(path, use_errno=True)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
            continue
        for name, (res, args) in _PROTOS.items():
            try:
                f = getattr(L, name)
            except AttributeError:
                raise OSError("%s lacks %s: it is not libchirpring ABI %d"
                              % (path, name, ABI_VERSION)) from None
            f.restype = res
            f.argtypes = args
        for name, (res, args) in _OPTIONAL.items():
            f = getattr(L, name, None)
            if f is not None:
                f.restype = res
                f.argtypes = args
        _lib = L
        return L
    raise OSError("cannot load libchirpring: tried " + "; ".join(tried)
                  + " (install chirpd's library, or set CHIRPRING_LIBRARY to its path)")
