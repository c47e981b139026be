#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""live-client.py — pages of chirpd's live view without a browser, for the
benchmarks (scripts/bench-live.sh, perf-run step live): N clients that each
read /live/events as the page does (every event, each frame's JSON parsed
and its map decoded), reconnecting a second after the stream ends, as a
browser's EventSource does, until stopped (SIGTERM/SIGINT) or --seconds.

    live-client.py URL [--clients N] [--seconds S] [--ready-file F]

URL: http://HOST:PORT/live/events[?map=I]. At the end one JSON line on
stdout: {"clients", "frames", "bytes", "connects", "seconds",
"frames_per_s_per_client"}. --ready-file is created once every client has
had its first frame.
"""
import argparse
import base64
import http.client
import json
import os
import signal
import sys
import threading
import time
import urllib.parse

stop = threading.Event()


class Page(threading.Thread):
    def __init__(self, url):
        super().__init__(daemon=True)
        self.url = urllib.parse.urlsplit(url)
        self.frames = self.bytes = self.connects = 0
        self.first = threading.Event()

    def read_stream(self):
        c = http.client.HTTPConnection(self.url.hostname, self.url.port, timeout=5)
        path = self.url.path + ("?" + self.url.query if self.url.query else "")
        c.request("GET", path, headers={"Accept": "text/event-stream"})
        r = c.getresponse()
        if r.status != 200:
            c.close()
            return
        self.connects += 1
        event = None
        while not stop.is_set():
            line = r.readline()   # the response decodes the chunked body
            if not line:
                break
            self.bytes += len(line)
            if line.startswith(b"event: "):
                event = line[7:].strip()
            elif line.startswith(b"data: ") and event == b"frame":
                f = json.loads(line[6:])
                if f.get("map"):
                    base64.b64decode(f["map"]["b64"])   # what the page draws from
                self.frames += 1
                self.first.set()
        c.close()

    def run(self):
        while not stop.is_set():
            try:
                self.read_stream()
            except (OSError, http.client.HTTPException, ValueError):
                pass
            stop.wait(1.0)   # EventSource's retry


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--clients", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=0)
    ap.add_argument("--ready-file")
    a = ap.parse_args()
    for s in (signal.SIGTERM, signal.SIGINT):
        signal.signal(s, lambda *_: stop.set())
    pages = [Page(a.url) for _ in range(a.clients)]
    t0 = time.monotonic()
    for p in pages:
        p.start()
    ready = False
    while not stop.is_set():
        if not ready and a.ready_file and all(p.first.is_set() for p in pages):
            open(a.ready_file, "w").close()
            ready = True
        if a.seconds and time.monotonic() - t0 >= a.seconds:
            stop.set()
        stop.wait(0.2)
    dt = time.monotonic() - t0
    frames = sum(p.frames for p in pages)
    print(json.dumps({"clients": a.clients, "frames": frames, "bytes": sum(p.bytes for p in pages),
                      "connects": sum(p.connects for p in pages), "seconds": round(dt, 2),
                      "frames_per_s_per_client": round(frames / dt / a.clients, 2) if dt else 0}))
    sys.stdout.flush()
    os._exit(0)   # the readers may sit in a blocking read


if __name__ == "__main__":
    main()
