"""Headless Chromium spoken to over ``--remote-debugging-pipe`` (CDP as NUL-separated JSON on fds 3
and 4): no driver package and no downloaded browser, only Debian's ``chromium``. The report page's
in-page verifier is exercised through it by the tests and by ``pycert mutate``.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium")
GREEN, RED = "rgb(26, 127, 55)", "rgb(198, 40, 40)"


class Browser:
    """Headless Chromium with one page, spoken to over the DevTools pipe."""

    def __init__(self, profile: Path) -> None:
        to_chrome_r, self._w = os.pipe()
        self._r, from_chrome_w = os.pipe()

        def wire_fds() -> None:  # Chromium reads commands on fd 3 and writes replies on fd 4
            # via fds >= 10 first: the pipes themselves may sit on 3 or 4 (dup2 onto itself keeps CLOEXEC)
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_chrome_r, from_chrome_w)]
            os.dup2(high[0], 3)
            os.dup2(high[1], 4)

        self.proc = subprocess.Popen(
            [CHROMIUM or "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            preexec_fn=wire_fds, close_fds=False,
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buf = b""
        self._id = 0
        self.events: list[dict[str, Any]] = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Network", "Runtime", "DOM"):
            self.page(f"{domain}.enable")

    def _next(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._r], [], [], left)[0]:
                raise TimeoutError("no reply from chromium")
            chunk = os.read(self._r, 1 << 16)
            if not chunk:
                raise RuntimeError(f"chromium exited: {self.proc.stderr.read().decode()[-2000:]}")
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method: str, session: str | None = None, timeout: float = 30.0, **params: Any) -> dict[str, Any]:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._next(deadline)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
            self.events.append(reply)

    def page(self, method: str, **params: Any) -> dict[str, Any]:
        return self.call(method, session=self.session, **params)

    def wait_event(self, method: str, timeout: float = 30.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            for i, e in enumerate(self.events):
                if e.get("method") == method:
                    return self.events.pop(i)
            self.events.append(self._next(deadline))

    def js(self, expression: str) -> Any:
        out = self.page("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in out:
            raise RuntimeError(out["exceptionDetails"])
        return out["result"].get("value")

    def open(self, url: str) -> None:
        self.page("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired")

    def verdict_after(self, action) -> tuple[str, str, list[str]]:
        """Run ``action`` and wait for the verifier's answer: (state, background colour, detail lines)."""
        self.js("document.getElementById('verdict').dataset.state = 'idle'")
        action()
        deadline = time.monotonic() + 20
        while (state := self.js("document.getElementById('verdict').dataset.state")) == "idle":
            if time.monotonic() > deadline:
                raise TimeoutError("the verifier never answered")
            time.sleep(0.05)
        colour = self.js("getComputedStyle(document.getElementById('verdict')).backgroundColor")
        lines = self.js("[...document.querySelectorAll('#verdict-details li')].map(li => li.textContent)")
        return state, colour, lines

    def screenshot(self, width: int, height: int = 900) -> bytes:
        """The whole page as PNG, laid out in a window ``width`` CSS pixels wide (what a reader's screen shows,
        scrolled through)."""
        import base64  # only the screenshot tests need it

        self.page("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)
        # a tall page on a loaded machine takes Chromium more than the default 30 s to paint whole
        shot = self.call("Page.captureScreenshot", session=self.session, timeout=180, format="png",
                         captureBeyondViewport=True)
        return base64.b64decode(shot["data"])

    def choose_file(self, path: Path) -> None:
        root = self.page("DOM.getDocument")["root"]["nodeId"]
        node = self.page("DOM.querySelector", nodeId=root, selector="#file")["nodeId"]
        self.page("DOM.setFileInputFiles", nodeId=node, files=[str(path)])

    def drop_file(self, path: Path) -> None:
        box = self.js("(() => { const zone = document.getElementById('drop'); zone.scrollIntoView();"
                      " const r = zone.getBoundingClientRect();"
                      " return [r.x + r.width / 2, r.y + 10]; })()")
        data = {"items": [], "files": [str(path)], "dragOperationsMask": 1}
        for kind in ("dragEnter", "dragOver", "drop"):
            self.page("Input.dispatchDragEvent", type=kind, x=box[0], y=box[1], data=data)

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=10)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._w)
        os.close(self._r)
