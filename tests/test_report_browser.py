"""The report page, in real headless Chromium: the in-page verifier says green for a good certificate,
red for a tampered copy, and the page makes no network request.

Chromium is driven over ``--remote-debugging-pipe`` (CDP as NUL-separated JSON on fds 3 and 4), so
no driver package and no downloaded browser are needed, only Debian's ``chromium``.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from pycert.certificate import MANIFEST_NAME
from pycert.cli import main
from pycert.certificate import InputFile, write_certificates
from pycert.traces import read_trace
from pycert.verify import ceiling_figures
from tests.test_verify import build_repo, make_cert

CHROMIUM = shutil.which("chromium")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="Debian's chromium is not installed (as root: apt-get install -y chromium)")

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
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
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

    def choose_file(self, path: Path) -> None:
        root = self.page("DOM.getDocument")["root"]["nodeId"]
        node = self.page("DOM.querySelector", nodeId=root, selector="#file")["nodeId"]
        self.page("DOM.setFileInputFiles", nodeId=node, files=[str(path)])

    def drop_file(self, path: Path) -> None:
        box = self.js("(() => { const r = document.getElementById('drop').getBoundingClientRect();"
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


@pytest.fixture()
def site(tmp_path: Path) -> dict[str, Path]:
    root = tmp_path / "repo"
    cert_dir = build_repo(root)
    (root / "tiny.ids").write_text("1\n2\n1\n3\n1\n2\n4\n1\n")
    trace = read_trace(root / "tiny.ids")
    write_certificates([make_cert("ceiling-tiny", "ceiling", ceiling_figures(trace), theorems=["Pycert.Demo.ceiling_le"],
                                  inputs=[InputFile(role="trace", path="tiny.ids", sha256=trace.sha256)])], cert_dir)
    out = tmp_path / "site" / "report.html"
    assert main(["report", "--certs", str(cert_dir), "--root", str(root), "--out", str(out)]) == 0
    good = cert_dir / "isolation-demo.json"
    tampered = tmp_path / "drop" / "isolation-demo.json"  # same name, one figure edited
    tampered.parent.mkdir()
    tampered.write_text(good.read_text().replace('"numerator": 12', '"numerator": 13', 1))
    assert tampered.read_text() != good.read_text()
    return {"page": out, "good": good, "tampered": tampered, "certs": cert_dir, "root": root}


def test_page_lists_every_certificate_and_stays_offline(site: dict[str, Path]) -> None:
    text = site["page"].read_text()
    for name in ("isolation-demo", "first-touch-demo", "ceiling-tiny"):
        cert = json.loads((site["certs"] / f"{name}.json").read_text())
        assert cert["claim"] in text
        for fig in cert["figures"]:
            assert fig["decimal"] in text
    assert "24/25" in text and "4096" in text
    assert text.count("data:image/png;base64,") == 1 and "Hit rate against capacity: tiny.ids" in text
    assert "default-src &#x27;none&#x27;" in text  # the CSP forbids every fetch
    assert not re.search(r"""(?:src|href|action)\s*=\s*["'](?!data:|#)""", text), "a reference that would load"
    manifest = (site["certs"] / MANIFEST_NAME).read_text()
    assert all(line.split()[0] in text for line in manifest.splitlines())


def test_report_refuses_a_directory_that_disagrees_with_its_manifest(site: dict[str, Path], tmp_path: Path) -> None:
    shutil.copy(site["tampered"], site["certs"] / "isolation-demo.json")
    assert main(["report", "--certs", str(site["certs"]), "--out", str(tmp_path / "r.html")]) == 1
    assert not (tmp_path / "r.html").exists()
    assert main(["report", "--certs", str(tmp_path / "nowhere"), "--out", str(tmp_path / "r.html")]) == 2


def test_report_needs_the_traces_unless_told_not_to(site: dict[str, Path], tmp_path: Path) -> None:
    (site["root"] / "tiny.ids").write_text("9\n")
    assert main(["report", "--certs", str(site["certs"]), "--root", str(site["root"]), "--out", str(tmp_path / "r.html")]) == 1
    (site["root"] / "tiny.ids").unlink()
    assert main(["report", "--certs", str(site["certs"]), "--root", str(site["root"]), "--out", str(tmp_path / "r.html")]) == 2
    assert main(["report", "--no-curves", "--certs", str(site["certs"]), "--out", str(tmp_path / "r.html")]) == 0
    assert "data:image/png" not in (tmp_path / "r.html").read_text()


@needs_chromium
@pytest.mark.slow
@pytest.mark.timeout(180)
def test_in_page_verifier_in_chromium(site: dict[str, Path], tmp_path: Path) -> None:
    browser = Browser(tmp_path / "profile")
    try:
        browser.open(site["page"].as_uri())
        assert browser.js("document.title") == "pycert certificates"
        assert browser.js("window.isSecureContext && !!crypto.subtle") is True

        state, colour, lines = browser.verdict_after(lambda: browser.choose_file(site["good"]))
        assert (state, colour) == ("match", GREEN), lines
        assert lines == [f"isolation-demo.json: sha256 {_sha(site['good'])} matches the manifest entry isolation-demo.json"]

        state, colour, lines = browser.verdict_after(lambda: browser.choose_file(site["tampered"]))
        assert (state, colour) == ("mismatch", RED), lines
        assert "differs from the manifest's" in lines[0] and _sha(site["tampered"]) in lines[0]

        # the same two files dropped on the drop zone, as a person would
        assert browser.verdict_after(lambda: browser.drop_file(site["good"]))[:2] == ("match", GREEN)
        assert browser.verdict_after(lambda: browser.drop_file(site["tampered"]))[:2] == ("mismatch", RED)

        requests = [e["params"]["request"]["url"] for e in browser.events if e.get("method") == "Network.requestWillBeSent"]
        assert requests and all(u == site["page"].as_uri() or u.startswith("data:") for u in requests), requests
    finally:
        browser.close()


def _sha(path: Path) -> str:
    from pycert.traces import file_sha256

    return file_sha256(path)
