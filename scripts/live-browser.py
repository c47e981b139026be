#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""live-browser.py — open a page in headless Chromium and drive it over the
DevTools protocol on a pipe (--remote-debugging-pipe: no port, no
WebSocket library): wait until a JavaScript expression yields a non-empty
string, print that string, and save a PNG screenshot.

usage: live-browser.py URL --until EXPR [--timeout S] [--screenshot FILE]
                       [--size WxH] [--chromium PATH]
Exit 0 with the expression's value on stdout; 1 on timeout or a browser
failure (the reason on stderr). Also used by scripts/live-screenshot.sh and tests/e2e/live_browser.sh.
"""
import argparse
import base64
import fcntl
import json
import os
import select
import subprocess
import sys
import tempfile
import time


class Browser:
    def __init__(self, chromium, url, size):
        self.profile = tempfile.TemporaryDirectory(prefix="chirp-live-chromium.")
        to_r, self.to_w = os.pipe()         # we write commands, it reads fd 3
        self.from_r, from_w = os.pipe()     # it writes replies on fd 4
        # above 4, so that the shell's moves below never close what they open
        to_r, from_w = (self._high(fd) for fd in (to_r, from_w))

        # The shell puts the pipes at fds 3 and 4, where Chromium expects them.
        self.proc = subprocess.Popen(
            ["bash", "-c", 'exec "$0" "$@" 3<&%d 4>&%d %d<&- %d>&-' % (to_r, from_w, to_r, from_w),
             chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--no-first-run", "--no-default-browser-check", "--disable-extensions",
             "--user-data-dir=" + self.profile.name, "--remote-debugging-pipe",
             "--window-size=%s" % size.replace("x", ","), url],
            pass_fds=(to_r, from_w),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_r)
        os.close(from_w)
        self.buf = b""
        self.next_id = 0

    @staticmethod
    def _high(fd):
        hi = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
        os.close(fd)
        return hi

    def call(self, method, params=None, session=None, timeout=10.0):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.to_w, json.dumps(msg).encode() + b"\0")
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            while b"\0" in self.buf:
                raw, self.buf = self.buf.split(b"\0", 1)
                reply = json.loads(raw)
                if reply.get("id") == self.next_id:
                    if "error" in reply:
                        raise RuntimeError("%s: %s" % (method, reply["error"]))
                    return reply.get("result", {})
            if not select.select([self.from_r], [], [], max(0.0, end - time.monotonic()))[0]:
                continue   # nothing before the deadline: the loop ends
            chunk = os.read(self.from_r, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the pipe")
            self.buf += chunk
        raise RuntimeError("%s: no reply in %.0f s" % (method, timeout))

    def close(self):
        try:
            self.call("Browser.close", timeout=3)
        except (RuntimeError, OSError):
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.profile.cleanup()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--until", required=True, help="JS expression; done when it is a non-empty string")
    ap.add_argument("--timeout", type=float, default=30)
    ap.add_argument("--screenshot")
    ap.add_argument("--size", default="1400x1000")
    ap.add_argument("--chromium", default="chromium")
    a = ap.parse_args()

    b = Browser(a.chromium, a.url, a.size)
    try:
        end = time.monotonic() + a.timeout
        left = lambda: max(1.0, end - time.monotonic())
        session = None
        while session is None and time.monotonic() < end:
            # the first reply waits for Chromium to start: on a loaded host
            # that takes seconds, so every call may use what is left of --timeout
            pages = [t for t in b.call("Target.getTargets", timeout=left())["targetInfos"]
                     if t["type"] == "page"]
            if pages:
                session = b.call("Target.attachToTarget",
                                 {"targetId": pages[0]["targetId"], "flatten": True},
                                 timeout=left())["sessionId"]
            else:
                time.sleep(0.2)
        value = ""
        while time.monotonic() < end:
            r = b.call("Runtime.evaluate", {"expression": a.until, "returnByValue": True},
                       session=session, timeout=left())
            value = r.get("result", {}).get("value")
            if isinstance(value, str) and value:
                break
            time.sleep(0.25)
        else:
            print("live-browser: '%s' still empty after %.0f s" % (a.until, a.timeout), file=sys.stderr)
            return 1
        if a.screenshot:
            png = b.call("Page.captureScreenshot", {"format": "png"}, session=session,
                         timeout=max(10.0, end - time.monotonic()))["data"]
            with open(a.screenshot, "wb") as f:
                f.write(base64.b64decode(png))
        print(value)
        return 0
    except (RuntimeError, OSError, KeyError, ValueError) as e:
        print("live-browser: %s" % e, file=sys.stderr)
        return 1
    finally:
        b.close()


if __name__ == "__main__":
    sys.exit(main())
