"""Headless Chromium for the report page's in-page verifier, driven by Playwright for Python (the ``browser``
extra). Playwright launches the Chromium installed on this machine (Debian's ``chromium``, found on PATH) through
``executable_path``: no browser is downloaded. The tests and ``pycert mutate``'s report-verifier checker use it.
"""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pycert.core.extras import install_hint

CHROMIUM = shutil.which("chromium")
GREEN, RED = "rgb(26, 127, 55)", "rgb(198, 40, 40)"
VERDICT_SECONDS = 20
"""How long the page's verifier may take to answer one file."""
PAINT_SECONDS = 180
"""A tall page on a loaded machine takes Chromium more than Playwright's default 30 s to paint whole."""


def unavailable() -> str | None:
    """Why no browser can be driven here (Chromium or Playwright missing), or None."""
    if CHROMIUM is None:
        return "chromium is not installed (Debian: apt-get install chromium; or put a chromium on PATH)"
    if importlib.util.find_spec("playwright") is None:
        return f"the browser extra is not installed (playwright): {install_hint('browser')}"
    return None


class Browser:
    """One page in headless Chromium. ``requests`` lists the URL of every request the page made."""

    def __init__(self) -> None:
        if (why := unavailable()) is not None:
            raise RuntimeError(why)
        from playwright.sync_api import sync_playwright  # the browser extra: only the browser's users load it

        self._playwright = sync_playwright().start()
        try:
            self._browser = self._playwright.chromium.launch(
                executable_path=CHROMIUM, headless=True,
                args=["--no-sandbox", "--disable-gpu", "--disable-quic", "--disable-dev-shm-usage"])
            self.page = self._browser.new_page()
        except BaseException:
            self._playwright.stop()
            raise
        self.requests: list[str] = []
        self.page.on("request", lambda request: self.requests.append(request.url))

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def js(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (a promise awaited)."""
        return self.page.evaluate(expression)

    def open(self, url: str) -> None:
        self.page.goto(url, wait_until="load")

    def verdict_after(self, action: Callable[[], None]) -> tuple[str, str, list[str]]:
        """Run ``action`` and wait for the verifier's answer: (state, background colour, detail lines)."""
        self.js("document.getElementById('verdict').dataset.state = 'idle'")
        action()
        # a selector, not wait_for_function: Playwright evaluates a predicate with eval, which the page's CSP refuses
        self.page.wait_for_selector("#verdict:not([data-state='idle'])", state="attached",
                                    timeout=VERDICT_SECONDS * 1000)
        state = self.js("document.getElementById('verdict').dataset.state")
        colour = self.js("getComputedStyle(document.getElementById('verdict')).backgroundColor")
        lines = self.js("[...document.querySelectorAll('#verdict-details li')].map(li => li.textContent)")
        return state, colour, lines

    def screenshot(self, width: int, height: int = 900, whole: bool = True) -> bytes:
        """The page as PNG in a window ``width`` x ``height`` CSS pixels: the whole page (what a reader's screen
        shows, scrolled through), or with ``whole=False`` its first screen."""
        self.page.set_viewport_size({"width": width, "height": height})
        return self.page.screenshot(full_page=whole, timeout=PAINT_SECONDS * 1000)

    def choose_file(self, path: Path) -> None:
        """``path`` chosen in the page's file input, as its file dialog would."""
        self.page.set_input_files("#file", path)

    def drop_file(self, path: Path) -> None:
        """``path`` dropped on the page's drop zone, as if dragged from outside the browser."""
        self.page.locator("#drop").drop({"files": path})

    def close(self) -> None:
        try:
            self._browser.close()
        finally:
            self._playwright.stop()
