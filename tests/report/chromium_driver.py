"""A minimal headless-Chromium driver over the DevTools protocol, standard library only.

Why not Playwright: it would add a ~40 MB package with its own Node driver, pinned to
Chromium builds of its own choosing, to check one static page; and the CLI route
(``chromium --headless --screenshot``) cannot tell which requests the page made.
Chromium speaks the DevTools protocol over a pair of pipes (``--remote-debugging-pipe``:
it reads NUL-terminated JSON commands on fd 3 and writes replies and events on fd 4), so a
hundred lines give us exactly what the test needs: every network request
(``Network.requestWillBeSent``), every console message, log entry and uncaught
exception, DOM queries (``Runtime.evaluate``) and screenshots.

Use::

    with Browser(find_chromium()) as b:
        page = b.open("file:///tmp/report.html")
        page.evaluate("document.title"), page.requests(), page.console()
        page.screenshot("/tmp/report.png", full_page=True)
"""
from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions", "--mute-audio", "--hide-scrollbars",
         "--remote-debugging-pipe")


def find_chromium() -> str | None:
    """``$DIFFCOMPARE_CHROMIUM``, /usr/bin/chromium, or a chromium/chrome on PATH."""
    env = os.environ.get("DIFFCOMPARE_CHROMIUM")
    if env:
        return env if os.access(env, os.X_OK) else None
    for name in ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class BrowserError(RuntimeError):
    pass


class Browser:
    """Chromium with a fresh profile, driven over its DevTools pipe."""

    def __init__(self, executable: str, width: int = 1280, height: int = 900, timeout_s: float = 30.0):
        self.executable, self.width, self.height, self.timeout_s = executable, width, height, timeout_s
        self._id = 0
        self._buf = b""
        self.events: list = []          # (session id, method, params) of every event seen

    # -- process ------------------------------------------------------------------------
    def __enter__(self):
        self.profile = tempfile.mkdtemp(prefix="diffcompare-chromium-")
        cmd_r, cmd_w = os.pipe()        # we write commands, chromium reads fd 3
        res_r, res_w = os.pipe()        # chromium writes fd 4, we read
        # park the child's ends above 10 so moving them to 3 and 4 cannot clobber one another
        child_r, child_w = fcntl.fcntl(cmd_r, fcntl.F_DUPFD, 10), fcntl.fcntl(res_w, fcntl.F_DUPFD, 10)
        for fd in (cmd_r, res_w):
            os.close(fd)
        args = [self.executable, *FLAGS, f"--user-data-dir={self.profile}",
                f"--window-size={self.width},{self.height}", "about:blank"]
        self.log = tempfile.TemporaryFile()
        common = dict(stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
                      pass_fds=(child_r, child_w), close_fds=True)
        bash = shutil.which("bash")
        if bash:
            # bash moves the pipe ends to fds 3 and 4 and execs Chromium: no Python runs in the
            # child (a preexec_fn would fork a multithreaded process, e.g. one that loaded JAX)
            wire = f'exec "$@" 3<&{child_r} 4>&{child_w} {child_r}<&- {child_w}>&-'
            self.proc = subprocess.Popen([bash, "-c", wire, "chromium", *args], **common)
        else:
            def wire_fds():
                os.dup2(child_r, 3)
                os.dup2(child_w, 4)

            self.proc = subprocess.Popen(args, preexec_fn=wire_fds, **{**common, "pass_fds": (3, 4)})
        os.close(child_r)
        os.close(child_w)
        self._w, self._r = cmd_w, res_r
        return self

    def __exit__(self, *exc):
        try:
            self.call("Browser.close")
        except Exception:
            pass
        for fd in (self._w, self._r):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)
        self.log.close()

    def stderr_tail(self, n: int = 4000) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-n:]

    # -- protocol -----------------------------------------------------------------------
    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no reply from Chromium in time")
            ready, _, _ = select.select([self._r], [], [], left)
            if ready:
                chunk = os.read(self._r, 1 << 20)
                if not chunk:
                    raise BrowserError("Chromium closed its DevTools pipe:\n" + self.stderr_tail())
                self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout_s
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append((reply.get("sessionId"), reply["method"], reply.get("params", {})))

    def wait_for(self, method: str, session: str | None, timeout_s: float | None = None) -> dict:
        """Wait for event ``method`` (events already seen count)."""
        deadline = time.monotonic() + (timeout_s or self.timeout_s)
        seen = 0
        while True:
            for s, m, params in self.events[seen:]:
                if m == method and (session is None or s == session):
                    return params
            seen = len(self.events)
            reply = self._read_message(deadline)
            if "method" in reply:
                self.events.append((reply.get("sessionId"), reply["method"], reply.get("params", {})))

    def drain(self, quiet_s: float = 0.5) -> None:
        """Collect events until none arrives for ``quiet_s`` seconds."""
        while True:
            ready, _, _ = select.select([self._r], [], [], quiet_s)
            if not ready and b"\0" not in self._buf:
                return
            reply = self._read_message(time.monotonic() + self.timeout_s)
            if "method" in reply:
                self.events.append((reply.get("sessionId"), reply["method"], reply.get("params", {})))

    # -- pages --------------------------------------------------------------------------
    def open(self, url: str) -> "Page":
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session=session)
        self.call("Emulation.setDeviceMetricsOverride", {"width": self.width, "height": self.height,
                                                         "deviceScaleFactor": 1, "mobile": False},
                  session=session)
        start = len(self.events)
        self.call("Page.navigate", {"url": url}, session=session)
        self.wait_for("Page.loadEventFired", session)
        self.drain()
        return Page(self, session, url, start)


class Page:
    def __init__(self, browser: Browser, session: str, url: str, first_event: int):
        self.browser, self.session, self.url, self._first = browser, session, url, first_event

    def _events(self):
        return [(m, p) for s, m, p in self.browser.events[self._first:] if s == self.session]

    def requests(self) -> list:
        """URLs of every request the page made (the document itself included)."""
        return [p["request"]["url"] for m, p in self._events() if m == "Network.requestWillBeSent"]

    def console(self) -> list:
        """``(level, text)`` of console calls, log entries and uncaught exceptions."""
        out = []
        for m, p in self._events():
            if m == "Runtime.consoleAPICalled":
                text = " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
                out.append((p.get("type", "log"), text))
            elif m == "Log.entryAdded":
                e = p.get("entry", {})
                out.append((e.get("level", "info"), f"{e.get('source')}: {e.get('text')} {e.get('url', '')}"))
            elif m == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                out.append(("error", f"uncaught: {d.get('text')} {d.get('exception', {}).get('description', '')}"))
        return out

    def evaluate(self, expression: str):
        r = self.browser.call("Runtime.evaluate", {"expression": expression, "returnByValue": True},
                              session=self.session)
        if "exceptionDetails" in r:
            raise BrowserError(f"evaluate failed: {r['exceptionDetails']}")
        return r["result"].get("value")

    def screenshot(self, path, clip: dict | None = None, full_page: bool = False) -> str:
        """Save a PNG: the viewport, a ``clip`` {x, y, width, height} in page pixels, or the
        whole page."""
        b = self.browser
        params = {"format": "png"}
        size = b.call("Page.getLayoutMetrics", session=self.session)["cssContentSize"]
        if full_page:
            clip = {"x": 0, "y": 0, "width": size["width"], "height": size["height"]}
        if clip:
            params["clip"] = {**clip, "scale": 1}
            # a viewport as tall as the page, so that every part of the clip is painted
            # (scrolling boxes outside the viewport may otherwise come out blank)
            b.call("Emulation.setDeviceMetricsOverride",
                   {"width": b.width, "height": int(size["height"]) + 1, "deviceScaleFactor": 1,
                    "mobile": False}, session=self.session)
        try:
            data = b.call("Page.captureScreenshot", params, session=self.session)["data"]
        finally:
            if clip:
                b.call("Emulation.setDeviceMetricsOverride",
                       {"width": b.width, "height": b.height, "deviceScaleFactor": 1, "mobile": False},
                       session=self.session)
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        return str(path)
