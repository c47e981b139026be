#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""fault_tool.py — helpers for chirpd's end-to-end fault tests (tests/e2e/fault_*.sh).

Subcommands (each exits 0 on success, 1 with a reason on stderr otherwise):

  malformed SOCK N      send N malformed control requests (of ~20 kinds, over
                        several connections); every one must get a one-line
                        JSON reply with "ok": false, or (for an oversized
                        request) an error reply and a close. Prints counts.
  flood SOCK N          open N connections at once, send "ping" on each, and
                        require a pong on every one.
  half SOCK N HOLD_S    open N connections, send half a request ("sta", no
                        newline) on each and go silent; print "ready" and
                        hold them HOLD_S seconds; then report how many the
                        server closed (it should close idle clients after its
                        idle timeout). Exit 0 if all were closed by then.
  corrupt SHM MODE SEED scribble on a ring's shared header (/dev/shm/NAME):
                        MODE all = random bytes over the whole 4096-byte
                        header page; fields = random bytes at 16 random
                        offsets after the magic; indices = random values in
                        the producer/consumer index lines; descs = random
                        bytes over the slot descriptors.
  ringstat SHM          print a ring's counters read from its shared header
                        (committed, overruns, consumed, held, queued, epoch).
  nanfile PATH C P R N  write N raw cf32 CPIs (C x P x R) of small noise,
                        (see cmd_nanfile: clean, 2 poisoned rows, all NaN);
                        prints the number of CPIs and rows with non-finite
                        values (CPIS ROWS).
  nancheck PATH C P R N check chirpd's complex results for that input.
"""
import json
import os
import random
import select
import socket
import struct
import sys
import time


def die(msg):
    print("fault_tool: " + msg, file=sys.stderr)
    sys.exit(1)


def connect(path, timeout=5.0):
    """A blocking connect, as chirpctl does (it waits while the listen backlog
    is full instead of failing with EAGAIN), then a timeout for I/O."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(None)
    s.connect(path)
    s.settimeout(timeout)
    return s


def read_line(s, buf):
    """Read one '\\n'-terminated line; returns (line or None at EOF, rest)."""
    while b"\n" not in buf:
        try:
            chunk = s.recv(65536)
        except (ConnectionResetError, BrokenPipeError):
            chunk = b""
        if not chunk:
            return None, buf
        buf += chunk
    line, _, rest = buf.partition(b"\n")
    return line, rest


TEXT_KINDS = [
    ("empty", b"\n"),
    ("blank", b"   \t  \n"),
    ("unknown", b"frobnicate\n"),
    ("unknown-long", b"x" * 300 + b"\n"),
    ("json", b'{"cmd":"ping"}\n'),
    ("args-to-ping", b"ping extra args\n"),
    ("args-to-stats", b"stats --all 1 2 3\n"),
    ("bad-level", b"log-level loudest\n"),
    ("level-empty", b"log-level\n"),
    ("level-twice", b"log-level info debug\n"),
    ("case", b"PING\n"),
    ("format", b"%s%s%s%n%n\n"),
    ("neg", b"log-level -1\n"),
]
# Requests that are not printable ASCII: the server answers once and hangs up.
BINARY_KINDS = [
    ("nul", b"pi\x00ng\n"),
    ("crlf-garbage", b"\r\r\r\n"),
    ("high-bytes", bytes([0x80, 0xff, 0xfe, 0xc3, 0x28]) + b"\n"),
    ("ctrl", b"\x1b[2Jstatus\x07\n"),
    ("utf8", "st\u00e4tus \u2713\n".encode()),
]


def random_text(rng):
    n = rng.randrange(1, 200)
    # "zz" prefix: never a real command word
    return "random", ("zz" + "".join(chr(rng.randrange(32, 127)) for _ in range(n)) + "\n").encode()


def cmd_malformed(path, n):
    """n malformed requests: blocks of 50 pipelined text requests on one
    connection (followed by a good ping that must still work), then one
    binary request and one oversized request, each on its own connection,
    which must get an error reply and be closed."""
    rng = random.Random(12345)
    sent = replies = closes = 0
    by_kind = {}

    def count(label):
        by_kind[label] = by_kind.get(label, 0) + 1

    while sent < n:
        s = connect(path)
        batch = []
        for _ in range(min(48, n - sent)):
            if rng.random() < 0.3:
                batch.append(random_text(rng))
            else:
                batch.append(TEXT_KINDS[rng.randrange(len(TEXT_KINDS))])
        s.sendall(b"".join(r for _, r in batch))
        buf = b""
        for label, req in batch:
            line, buf = read_line(s, buf)
            if line is None:
                die("connection closed after %d replies; request %r got none" % (replies, req))
            check_error_reply(line, label, req)
            replies += 1
            sent += 1
            count(label)
        # the server must still answer a good request on the same connection
        s.sendall(b"ping\n")
        line, buf = read_line(s, buf)
        if line is None or not json.loads(line).get("ok"):
            die("ping after a malformed batch failed: %r" % (line,))
        s.close()
        for label, req in (BINARY_KINDS[rng.randrange(len(BINARY_KINDS))],
                           ("oversized", b"a" * 5000)):
            if sent >= n:
                break
            s = connect(path)
            try:
                s.sendall(req)
            except (BrokenPipeError, ConnectionResetError):
                pass
            line, rest = read_line(s, b"")
            sent += 1
            count(label)
            if line is None:
                die("%s request: closed without an error reply" % label)
            check_error_reply(line, label, req)
            replies += 1
            # then the server hangs up
            line, rest = read_line(s, rest)
            if line is not None:
                die("%s request: connection still open, got %r" % (label, line[:100]))
            closes += 1
            s.close()
    print("malformed: sent %d, error replies %d, closed after binary/oversized %d; %s" %
          (sent, replies, closes, ",".join("%s=%d" % kv for kv in sorted(by_kind.items()))))


def check_error_reply(line, label, req=None):
    try:
        o = json.loads(line)
    except ValueError:
        die("%s request %r: reply is not JSON: %r" % (label, req, line[:200]))
    if not isinstance(o, dict) or o.get("ok") is not False or not o.get("error"):
        die("%s request %r: expected an error reply, got %r" % (label, req, line[:200]))


def cmd_flood(path, n):
    socks = []
    t0 = time.monotonic()
    for i in range(n):
        socks.append(connect(path, timeout=20.0))
    for s in socks:
        s.sendall(b"ping\n")
    ok = 0
    for i, s in enumerate(socks):
        line, _ = read_line(s, b"")
        if line is None:
            die("connection %d of %d closed without a reply" % (i, n))
        o = json.loads(line)
        if not o.get("ok"):
            die("connection %d of %d: %r" % (i, n, line[:200]))
        ok += 1
    for s in socks:
        s.close()
    print("flood: %d simultaneous connections, %d pongs in %.2f s" % (n, ok, time.monotonic() - t0))


def cmd_half(path, n, hold):
    socks = []
    for _ in range(n):
        s = connect(path)
        s.sendall(b"sta")
        socks.append(s)
    print("ready", flush=True)
    t0 = time.monotonic()
    closed = set()
    while time.monotonic() - t0 < hold and len(closed) < n:
        live = [s for s in socks if s.fileno() not in closed]
        r, _, _ = select.select(live, [], [], 0.5)
        for s in r:
            try:
                data = s.recv(4096)
            except (ConnectionResetError, OSError):
                data = b""
            if not data:
                closed.add(s.fileno())
            # a reply (e.g. a timeout notice) is fine; keep waiting for the close
    el = time.monotonic() - t0
    print("half: %d half-sent clients, %d closed by the server within %.1f s" % (n, len(closed), el))
    for s in socks:
        s.close()
    if len(closed) != n:
        die("%d of %d silent clients were still open after %.0f s" % (n - len(closed), n, hold))


def cmd_corrupt(shm, mode, seed):
    rng = random.Random(seed)
    path = shm if shm.startswith("/dev/shm/") else "/dev/shm/" + shm.lstrip("/")
    with open(path, "r+b") as f:
        hdr = bytearray(f.read(4096))
        if len(hdr) < 4096:
            die("%s: only %d bytes" % (path, len(hdr)))
        if mode == "all":
            hdr = bytearray(rng.getrandbits(8) for _ in range(4096))
        elif mode == "fields":
            # line 0 after the magic: identity, geometry, layout, state
            for _ in range(16):
                off = rng.randrange(8, 128)
                hdr[off] = rng.getrandbits(8)
        elif mode == "indices":
            # producer line (256: prod, next_seq) and consumer line (384: cons, taken)
            for off in (256, 264, 384, 392):
                struct.pack_into("<Q", hdr, off, rng.getrandbits(64))
        elif mode == "descs":
            f.seek(4096)
            descs = bytearray(f.read(128 * 16))
            for i in range(len(descs)):
                descs[i] = rng.getrandbits(8)
            f.seek(4096)
            f.write(descs)
            f.flush()
            print("corrupt: %s descriptors scribbled (seed %d)" % (path, seed))
            return
        else:
            die("unknown mode " + mode)
        f.seek(0)
        f.write(hdr)
        f.flush()
    print("corrupt: %s header mode %s (seed %d)" % (path, mode, seed))


# Offsets in struct ring_hdr (src/ring/ring_private.h, ABI version 3: the
# header is ABI 1's; each descriptor is 128 bytes, the block's mode at
# offset 44, its pointing at 56).
RING_ABI = 3
HDR = {"magic": 0, "abi": 8, "epoch": 16, "slots": 64, "state": 104, "pos_base": 120,
       "seq_base": 128, "prod": 256, "next_seq": 264, "cons": 384, "taken": 392,
       "released": 400, "skipped": 408}


def cmd_ringstat(shm):
    """Print the ring's counters, read directly from shared memory:
    committed = prod - pos_base, overruns = next_seq - seq_base - committed
    (the derivation in ring_private.h), consumed = cons - pos_base (positions
    handed back by the consumer), held = taken - cons, queued = prod - cons.
    The offsets follow struct ring_hdr; a layout change is caught by the
    magic/version/state/slots checks below (then update HDR)."""
    path = shm if shm.startswith("/dev/shm/") else "/dev/shm/" + shm.lstrip("/")
    with open(path, "rb") as f:
        h = f.read(4096)
    q = lambda k: struct.unpack_from("<Q", h, HDR[k])[0]
    d = lambda k: struct.unpack_from("<I", h, HDR[k])[0]
    if q("magic") != 0x474e525052494843 or d("abi") != RING_ABI:
        die("%s: not a chirp ring of ABI %d (magic %#x, version %d)"
            % (path, RING_ABI, q("magic"), d("abi")))
    slots = d("slots")
    if d("state") != 0x59444552 or not 2 <= slots <= 65536:
        die("%s: state %#x slots %d: not READY, or fault_tool.py's header offsets are stale"
            % (path, d("state"), slots))
    pb = q("pos_base")
    committed = (q("prod") - pb) % 2**64
    overruns = (q("next_seq") - q("seq_base") - committed) % 2**64
    queued = (q("prod") - q("cons")) % 2**64
    if queued > slots:
        die("%s: prod - cons = %d > slots %d: header offsets are stale" % (path, queued, slots))
    print("committed=%d overruns=%d consumed=%d held=%d queued=%d epoch=%d" %
          (committed, overruns, (q("cons") - pb) % 2**64, (q("taken") - q("cons")) % 2**64,
           queued, q("epoch")))


def cmd_nanfile(path, c, p, r, n):
    """CPI k: k even = the same clean CPI A (small noise); k % 4 == 1 = A with
    NaN at [0][0][5] and +Inf (imaginary) at [C-1][P-1][R-1] (2 bad rows, or 1
    if C*P == 1); k % 4 == 3 = all NaN. Prints "CPIS ROWS" with non-finite input."""
    import numpy as np
    rng = np.random.default_rng(7)
    a = ((rng.standard_normal((c, p, r)) + 1j * rng.standard_normal((c, p, r))) * 0.01).astype(np.complex64)
    cpis = rows = 0
    with open(path, "wb") as f:
        for k in range(n):
            x = a.copy()
            if k % 4 == 1:
                x[0, 0, 5] = complex(float("nan"), 0)
                x[c - 1, p - 1, r - 1] = complex(0, float("inf"))
                cpis += 1
                rows += 2 if c * p > 1 else 1
            elif k % 4 == 3:
                x[:] = complex(float("nan"), float("nan"))
                cpis += 1
                rows += c * p
            f.write(x.tobytes())
    print(cpis, rows)


def cmd_nancheck(path, c, p, r, n):
    """Check chirpd's complex results for a nanfile input (tap --out PATH):
    every clean CPI (k even) is finite and identical to the first; in a
    partly poisoned CPI (k % 4 == 1) only the two poisoned rows are
    non-finite and every other row equals the clean result's row; an all-NaN
    CPI (k % 4 == 3) holds no finite garbage that could pass for data. So NaN
    never leaks into other rows or later CPIs."""
    import numpy as np
    y = np.fromfile(path, dtype=np.complex64)
    if y.size != n * c * p * r:
        die("%s: %d samples, expected %d CPIs of %d" % (path, y.size, n, c * p * r))
    y = y.reshape(n, c * p, r)
    ref = y[0]
    if not np.all(np.isfinite(ref)):
        die("clean CPI 0 has non-finite output")
    scale = np.max(np.abs(ref))
    tol = 1e-5 * scale
    bad_rows = {0, c * p - 1}
    for k in range(n):
        fin = np.isfinite(y[k]).all(axis=1)
        if k % 4 in (0, 2):
            if not fin.all():
                die("clean CPI %d (after poisoned ones) has non-finite rows %s" % (k, np.where(~fin)[0][:5]))
            err = np.max(np.abs(y[k] - ref))
            if err > tol:
                die("clean CPI %d differs from CPI 0 by %g (tolerance %g)" % (k, err, tol))
        elif k % 4 == 1:
            for row in range(c * p):
                if row in bad_rows:
                    if fin[row]:
                        die("CPI %d row %d: poisoned input row has a finite output" % (k, row))
                else:
                    if not fin[row]:
                        die("CPI %d row %d: NaN leaked into a clean row" % (k, row))
                    err = np.max(np.abs(y[k][row] - ref[row]))
                    if err > tol:
                        die("CPI %d row %d differs from the clean row by %g" % (k, row, err))
        else:
            if fin.any():
                die("all-NaN CPI %d has finite rows %s" % (k, np.where(fin)[0][:5]))
    print("nancheck: %d CPIs ok: NaN/Inf confined to its rows" % n)


def main(argv):
    if len(argv) < 2:
        die(__doc__)
    cmd = argv[1]
    if cmd == "malformed":
        cmd_malformed(argv[2], int(argv[3]))
    elif cmd == "flood":
        cmd_flood(argv[2], int(argv[3]))
    elif cmd == "half":
        cmd_half(argv[2], int(argv[3]), float(argv[4]))
    elif cmd == "corrupt":
        cmd_corrupt(argv[2], argv[3], int(argv[4]))
    elif cmd == "ringstat":
        cmd_ringstat(argv[2])
    elif cmd == "nanfile":
        cmd_nanfile(argv[2], *(int(a) for a in argv[3:7]))
    elif cmd == "nancheck":
        cmd_nancheck(argv[2], *(int(a) for a in argv[3:7]))
    else:
        die("unknown subcommand " + cmd)


if __name__ == "__main__":
    main(sys.argv)
