#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""example_subscriber.py — receive chirpd's [publish] messages with pyzmq.

    python3 example_subscriber.py tcp://127.0.0.1:5556 --topics det,status

prints one JSON object per message on stdout: the message's JSON header,
its topic, and the payload decoded:
  det     "detections": the list's records (chirp/detect.h), and the
          list's own header fields under "list";
  map     "min", "max" of the float32 map (numpy: see map_array);
  status  "status": chirpd's status (what chirpctl --json status says).

Options: --topics (default det,map,status), -n N (exit after N det
messages), --timeout S (exit after S seconds), --ready-file PATH (created
once the first message has arrived, i.e. the subscription is in place),
--summary (decode nothing, print one line at the end: messages per topic
and the det seq gaps seen, for benchmarks).
Needs python3-zmq (pyzmq); numpy only for map_array.
"""
import argparse
import json
import signal
import struct
import sys
import time

import zmq

# chirp/detect.h: struct chirp_det_header (80 bytes), chirp_det_record (32
# bytes in version 1; version 2 appends beam and angle, 48 bytes).
DET_HEADER = struct.Struct("<IHHQQQIIIIIIIIQQ")
DET_HEADER_KEYS = ("magic", "version", "record_bytes", "seq", "timestamp_ns",
                   "first_sample", "mode", "flags", "count", "found", "maps",
                   "doppler_bins", "range_gates", "reserved", "cells", "crossings")
DET_RECORD = struct.Struct("<iIifffff")
DET_RECORD_KEYS = ("channel", "range_gate", "doppler_bin", "range_m",
                   "velocity_mps", "power", "noise", "snr_db")
DET_RECORD_V2 = struct.Struct("<iffHH")      # at offset 32, version >= 2
DET_RECORD_V2_KEYS = ("beam", "azimuth_deg", "elevation_deg", "angle_quality", "reserved")
DET_MAGIC = 0x54454443


def decode_det(payload):
    """A detection list's bytes -> (its header as a dict, its records)."""
    if len(payload) < DET_HEADER.size:
        raise ValueError(f"list of {len(payload)} bytes is shorter than its header")
    h = dict(zip(DET_HEADER_KEYS, DET_HEADER.unpack_from(payload)))
    if h["magic"] != DET_MAGIC:
        raise ValueError(f"bad magic {h['magic']:#x}")
    step = h["record_bytes"]
    if step < DET_RECORD.size or DET_HEADER.size + h["count"] * step > len(payload):
        raise ValueError("records do not fit the payload")
    recs = []
    for i in range(h["count"]):
        v = DET_RECORD.unpack_from(payload, DET_HEADER.size + i * step)
        r = dict(zip(DET_RECORD_KEYS, v))
        if h["version"] >= 2 and step >= DET_RECORD.size + DET_RECORD_V2.size:
            r.update(zip(DET_RECORD_V2_KEYS, DET_RECORD_V2.unpack_from(
                payload, DET_HEADER.size + i * step + DET_RECORD.size)))
            del r["reserved"]
        for k in ("velocity_mps", "azimuth_deg", "elevation_deg"):
            if k in r and r[k] != r[k]:   # NaN: no carrier/PRF, no beams
                r[k] = None
        recs.append(r)
    return h, recs


def map_array(header, payload):
    """A map's payload as a numpy array of rows x cols (Doppler x range)."""
    import numpy as np
    return np.frombuffer(payload, dtype="<f4").reshape(header["rows"], header["cols"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("endpoint")
    ap.add_argument("--topics", default="det,map,status")
    ap.add_argument("-n", type=int, default=0, help="exit after N det messages")
    ap.add_argument("--timeout", type=float, default=0, help="exit after S seconds")
    ap.add_argument("--ready-file")
    ap.add_argument("--summary", action="store_true")
    a = ap.parse_args()

    def interrupt(signum, frame):
        raise KeyboardInterrupt
    # SIGINT or SIGTERM: stop and print what was received (--summary); a
    # background job's SIGINT starts out ignored, hence both set here.
    signal.signal(signal.SIGINT, interrupt)
    signal.signal(signal.SIGTERM, interrupt)

    ctx = zmq.Context()
    sub = ctx.socket(zmq.SUB)
    sub.connect(a.endpoint)
    for t in a.topics.split(","):
        # A topic is a prefix: subscribe to the whole frame's name.
        sub.setsockopt(zmq.SUBSCRIBE, t.encode())
    end = time.monotonic() + a.timeout if a.timeout else None
    ndet = 0
    ready = False
    counts, gaps, last_seq = {}, 0, None
    while not (a.n and ndet >= a.n):
        left = None if end is None else end - time.monotonic()
        if left is not None and left <= 0:
            break
        try:
            if not sub.poll(int(left * 1000) if left is not None else None):
                continue
            topic, header, payload = sub.recv_multipart()
        except KeyboardInterrupt:     # SIGINT: stop, say what was received
            break
        if a.ready_file and not ready:
            open(a.ready_file, "w").close()
            ready = True
        if a.summary:
            t = topic.decode()
            counts[t] = counts.get(t, 0) + 1
            if t == "det":
                ndet += 1
                seq = json.loads(header)["seq"]
                if last_seq is not None and seq != last_seq + 1:
                    gaps += seq - last_seq - 1
                last_seq = seq
            continue
        out = json.loads(header)
        out["topic"] = topic.decode()
        if out["topic"] == "det":
            out["list"], out["detections"] = decode_det(payload)
            ndet += 1
        elif out["topic"] == "map":
            m = struct.unpack(f"<{len(payload) // 4}f", payload)
            out["min"], out["max"] = min(m), max(m)
        elif out["topic"] == "status":
            out["status"] = json.loads(payload)
        print(json.dumps(out), flush=True)
    if a.summary:
        print(json.dumps({"messages": counts, "det_seq_gaps": gaps}), flush=True)
    sub.close(linger=0)
    ctx.term()
    return 0 if not a.n or ndet >= a.n else 1


if __name__ == "__main__":
    sys.exit(main())
