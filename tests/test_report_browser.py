"""The report page, in real headless Chromium: the in-page verifier says green for a good certificate,
red for a tampered copy, and the page makes no network request.

Chromium is driven by Playwright for Python (the ``browser`` extra), which launches Debian's ``chromium``
through ``executable_path``: no browser is downloaded.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from pathlib import Path

import pytest

from pycert.certify import browser as browser_module
from pycert.certify.browser import GREEN, RED, Browser, unavailable
from pycert.certify.manifest import MANIFEST_NAME, write_certificates
from pycert.cli import main
from pycert.core.console import plural
from pycert.lean.emit import capacity
from pycert.lean.emit.packed_trace import ENCODING
from tests.certs import make_cert, trace_input
from tests.test_verify import build_repo, tampered_copy

needs_chromium = pytest.mark.skipif(unavailable() is not None, reason=f"no browser to drive: {unavailable()}")


@pytest.fixture()
def site(tmp_path: Path) -> dict[str, Path]:
    root = tmp_path / "repo"
    cert_dir = build_repo(root)
    (root / "tiny.ids").write_text("1\n2\n1\n3\n1\n2\n4\n1\n")
    write_certificates([make_cert("ceiling-tiny", "ceiling", {"lean_encoding": ENCODING},
                                  [trace_input(root / "tiny.ids", root)], root=root)], cert_dir)
    out = tmp_path / "site" / "report.html"
    assert main(["report", "--certs", str(cert_dir), "--root", str(root), "--out", str(out)]) == 0
    good = cert_dir / "isolation-demo.json"
    tampered = tmp_path / "drop" / "isolation-demo.json"  # same name, one figure edited
    tampered.parent.mkdir()
    tampered.write_text(good.read_text().replace('"numerator": 12', '"numerator": 13', 1))
    assert tampered.read_text() != good.read_text()
    forged = tmp_path / "forged" / "isolation-demo.json"  # a theorem the library does not have
    forged.parent.mkdir()
    forged.write_text(good.read_text().replace('"Pycert.Isolation.floor"', '"Pycert.Isolation.floor_strong"', 1))
    assert forged.read_text() != good.read_text()
    return {"page": out, "good": good, "tampered": tampered, "forged": forged, "certs": cert_dir, "root": root}


def test_page_lists_every_certificate_and_stays_offline(site: dict[str, Path]) -> None:
    text = site["page"].read_text()
    for name in ("isolation-demo", "first-touch-demo", "ceiling-tiny"):
        cert = json.loads((site["certs"] / f"{name}.json").read_text())
        assert cert["claim"] in text
        for fig in cert["figures"]:
            assert fig["decimal"] in text
    assert "24/25" in text and "4096" in text
    assert text.count("data:image/png;base64,") == 1 and "Hit rate against cache capacity, tiny.ids" in text
    assert "default-src &#x27;none&#x27;" in text  # the CSP forbids every fetch
    assert not re.search(r"""(?:src|href|action)\s*=\s*["'](?!data:|#)""", text), "a reference that would load"
    manifest = (site["certs"] / MANIFEST_NAME).read_text()
    assert all(line.split()[0] in text for line in manifest.splitlines())


def test_page_shows_each_figures_evidence_state(site: dict[str, Path]) -> None:
    text = site["page"].read_text()
    assert "<th>evidence</th>" in text
    assert '<span class="evidence">kernel-checked</span>' in text and '<span class="evidence">computed</span>' in text


def test_embedded_json_cannot_end_the_script(site: dict[str, Path]) -> None:
    """A manifest entry and a certificate text holding both ``</script>`` and ``<!--`` leave the page whole."""
    from pycert.certify.report import load_directory, render_page

    manifest, certs = load_directory(site["certs"])
    evil = "x</script><!--<script>alert(1)</script>.json"
    manifest = {**manifest, evil: "0" * 64}
    cert, digest = certs[0]
    certs = [(cert.model_copy(update={"claim": "a </script> b <!-- c"}), digest), *certs[1:]]
    page = render_page(manifest, certs, verify="pycert verify certs/*.json", not_verified={})
    assert page.count("</script>") == 5 and "<!--" not in page  # manifest, unverified, library, headlines, the script
    blob = re.search(r'<script type="application/json" id="manifest">(.*?)</script>', page, re.S).group(1)
    assert json.loads(blob)[evil] == "0" * 64


def test_report_refuses_a_directory_that_disagrees_with_its_manifest(site: dict[str, Path], tmp_path: Path) -> None:
    shutil.copy(site["tampered"], site["certs"] / "isolation-demo.json")
    assert main(["report", "--certs", str(site["certs"]), "--out", str(tmp_path / "r.html")]) == 1
    assert not (tmp_path / "r.html").exists()
    assert main(["report", "--certs", str(tmp_path / "nowhere"), "--out", str(tmp_path / "r.html")]) == 2


def test_report_refuses_a_certificate_that_does_not_verify(site: dict[str, Path], tmp_path: Path, capsys) -> None:
    """A figure edited and the manifest forged to match: the bytes agree with the manifest, but verify
    rejects the certificate, so no page shows it as proved."""
    certs = tmp_path / "forged-dir"

    def edit(doc: dict) -> None:
        doc["figures"][0]["numerator"] += 1

    tampered_copy(site["certs"], certs, "isolation-demo.json", edit, forge_manifest=True)
    capsys.readouterr()
    out = tmp_path / "r.html"
    assert main(["report", "--certs", str(certs), "--root", str(site["root"]), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{certs / 'isolation-demo.json'}: does not verify, so no page shows it: figures." in err
    assert not out.exists()


def test_report_marks_a_certificate_it_could_not_verify(site: dict[str, Path], tmp_path: Path, capsys) -> None:
    """The trace is not where the certificate's directory says (no --root): the curve is left out, and the
    page and the command say that this certificate was not verified, and why; the others were."""
    out = tmp_path / "r.html"
    capsys.readouterr()
    assert main(["report", "--no-curves", "--certs", str(site["certs"]), "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "3 certificates: 2 verified offline, 1 shown marked NOT VERIFIED" in said
    assert "not verified: ceiling-tiny: missing input: inputs[0] (tiny.ids)" in said
    page = out.read_text()
    tiny = page[page.index('<section class="cert" id="cert-ceiling-tiny">'):]
    tiny = tiny[:tiny.index("</section>")]
    assert '<p class="unverified"><strong>NOT VERIFIED</strong> when this page was made: missing input' in tiny
    assert page.count('<p class="verified"><strong>Verified offline</strong>') == 2
    card = page[page.index('<section class="card" id="trace-1">'):]
    card = card[:card.index("</section>")]  # the trace's card: it names the certificate, and takes nothing from it
    assert '<strong>NOT VERIFIED</strong>: <a href="#cert-ceiling-tiny">ceiling-tiny</a>: missing input' in card
    assert "No certificate of this trace verified" in card and "kernel-checked" not in card
    assert "2 of them verified offline when this page was made, 1 <strong>not</strong>" in page
    assert main(["report", "--json", "--certs", str(site["certs"]), "--root", str(site["root"]), "--out", str(out)]) == 0
    assert json.loads(capsys.readouterr().out)["not_verified"] == {}
    assert out.read_text().count('<p class="verified"><strong>Verified offline</strong>') == 3


def test_report_needs_the_traces_unless_told_not_to(site: dict[str, Path], tmp_path: Path) -> None:
    (site["root"] / "tiny.ids").write_text("9\n")
    assert main(["report", "--certs", str(site["certs"]), "--root", str(site["root"]), "--out", str(tmp_path / "r.html")]) == 1
    (site["root"] / "tiny.ids").unlink()
    assert main(["report", "--certs", str(site["certs"]), "--root", str(site["root"]), "--out", str(tmp_path / "r.html")]) == 2
    assert main(["report", "--no-curves", "--certs", str(site["certs"]), "--out", str(tmp_path / "r.html")]) == 0
    assert "data:image/png" not in (tmp_path / "r.html").read_text()


def test_report_orders_capacities_by_value(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "certificates").mkdir(parents=True)
    (root / "t.ids").write_text("1\n2\n1\n3\n1\n2\n4\n1\n")
    write_certificates([make_cert(f"capacity-t-c{c}", "capacity", {"capacity_blocks": c, "lean_encoding": capacity.ENCODING},
                                  [trace_input(root / "t.ids", root)], root=root) for c in (1024, 2, 128, 16)],
                       root / "certificates")
    out = tmp_path / "r.html"
    assert main(["report", "--no-curves", "--certs", str(root / "certificates"), "--root", str(root),
                 "--out", str(out)]) == 0
    assert re.findall(r'<h3>(capacity-t-c\d+) ', out.read_text()) == [f"capacity-t-c{c}" for c in (2, 16, 128, 1024)]


def test_one_certificate_is_not_counted_as_several(tmp_path: Path, capsys) -> None:
    write_certificates([make_cert("isolation-t3-n4", "isolation", {"T": 3, "n": 4})], tmp_path / "certs")
    capsys.readouterr()
    assert main(["report", "--certs", str(tmp_path / "certs"), "--out", str(tmp_path / "r.html")]) == 0
    assert capsys.readouterr().out == f"wrote {tmp_path / 'r.html'} (1 certificate, verified offline)\n"
    assert "<p>1 certificate. It was verified offline when this page was made." in (tmp_path / "r.html").read_text()
    assert [plural(n, "certificate") for n in (0, 1, 2, 1024)] == ["0 certificates", "1 certificate", "2 certificates",
                                                                   "1,024 certificates"]
    assert plural(1, "operator class", "operator classes") == "1 operator class"
    assert plural(3, "operator class", "operator classes") == "3 operator classes"


def test_without_playwright_the_browser_names_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "playwright" else real(name, *a))
    monkeypatch.setattr(browser_module, "CHROMIUM", "/usr/bin/chromium")
    why = unavailable()
    assert why.startswith("the browser extra is not installed (playwright): pip install") and "[browser]" in why
    with pytest.raises(RuntimeError, match="the browser extra"):
        Browser()


@needs_chromium
@pytest.mark.slow
@pytest.mark.timeout(180)
def test_in_page_verifier_in_chromium(site: dict[str, Path]) -> None:
    with Browser() as browser:
        browser.open(site["page"].as_uri())
        assert browser.js("document.title") == "pycert certificates"
        assert browser.js("window.isSecureContext && !!crypto.subtle") is True

        state, colour, lines = browser.verdict_after(lambda: browser.choose_file(site["good"]))
        assert (state, colour) == ("match", GREEN), lines
        assert lines == [f"isolation-demo.json: sha256 {_sha(site['good'])} matches the manifest entry isolation-demo.json; "
                         "its theorems and statements are the library's"]

        state, colour, lines = browser.verdict_after(lambda: browser.choose_file(site["tampered"]))
        assert (state, colour) == ("mismatch", RED), lines
        assert "differs from the manifest's" in lines[0] and _sha(site["tampered"]) in lines[0]

        state, colour, lines = browser.verdict_after(lambda: browser.choose_file(site["forged"]))
        assert (state, colour) == ("mismatch", RED), lines
        assert "theorem Pycert.Isolation.floor_strong is not a public theorem of the library" in lines[0], lines

        # the same two files dropped on the drop zone, as a person would
        assert browser.verdict_after(lambda: browser.drop_file(site["good"]))[:2] == ("match", GREEN)
        assert browser.verdict_after(lambda: browser.drop_file(site["tampered"]))[:2] == ("mismatch", RED)

        requests = browser.requests
        assert requests and all(u == site["page"].as_uri() or u.startswith("data:") for u in requests), requests


def _sha(path: Path) -> str:
    from pycert.core.files import file_sha256

    return file_sha256(path)


BROKEN_WORDS = r"""(() => {
  const bad = [];
  const where = 'th, .tile .label, details.exact summary, h1, h2, h3, p.sentence, p.meta, figcaption';
  for (const el of document.querySelectorAll(where)) {
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const word = /[^\s-]+/g;  // a break at a hyphen or a space is no break within a word
      for (let m; (m = word.exec(n.data));) {
        const r = document.createRange();
        r.setStart(n, m.index);
        r.setEnd(n, m.index + m[0].length);
        if (new Set([...r.getClientRects()].map(x => Math.round(x.top))).size > 1) bad.push(m[0]);
      }
    }
  }
  return bad;
})()"""


@pytest.fixture(scope="module")
def committed_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The committed certificates' page (those whose trace is on this machine), made once: (page, certificates)."""
    from tests.test_install import _committed_certificates

    tmp = tmp_path_factory.mktemp("committed-page")
    certs = tmp / "certs"
    inputs = [f"--input={line}" for line in _committed_certificates(certs)["inputs"].splitlines()]
    out = tmp / "report.html"
    assert main(["report", "--certs", str(certs), "--out", str(out), *inputs]) == 0
    return out, certs


@needs_chromium
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_page_at_1400_pixels(tmp_path: Path, committed_page: tuple[Path, Path]) -> None:
    """The committed certificates' page, in Chromium at 1400 px wide: one card and one plot per trace, no
    word broken across lines in a header, a tile or a sentence, nothing wider than the window. The
    screenshot is left in the test's directory for a person to look at."""
    out, certs = committed_page
    page = out.read_text()
    traces = {i["sha256"] for c in certs.glob("*.json") for i in json.loads(c.read_text())["inputs"]
              if i["role"] == "trace"}
    fleets = {i["sha256"] for c in certs.glob("*.json") if json.loads(c.read_text())["family"] == "fleet"
              for i in json.loads(c.read_text())["inputs"] if i["role"] == "trace"}
    assert page.count('<section class="card" id="trace-') == len(traces)
    assert page.count("data:image/png;base64,") == len(traces) + len(fleets)  # and a fleet's waterfall per trace
    with Browser() as browser:
        browser.open(out.as_uri())
        shot = browser.screenshot(1400)
        (tmp_path / "report-1400.png").write_bytes(shot)
        assert browser.js("window.innerWidth") == 1400  # the page laid out 1400 px wide, its scroll bar included
        assert shot[:8] == b"\x89PNG\r\n\x1a\n" and 1380 <= int.from_bytes(shot[16:20], "big") <= 1400  # less the bar
        width = browser.js("document.documentElement.clientWidth")
        assert browser.js("document.documentElement.scrollWidth") == width  # nothing wider than the window
        assert browser.js(BROKEN_WORDS) == []
        heads = browser.js("[...document.querySelectorAll('table.capacities th')].map(th => th.textContent)")
        assert all("(" in h for h in heads), heads  # every column says its unit


@needs_chromium
@pytest.mark.slow
@pytest.mark.timeout(180)
def test_the_page_vouches_only_for_certificates_that_verified(site: dict[str, Path], tmp_path: Path) -> None:
    """A certificate the page marks NOT VERIFIED is listed in the manifest, but the in-page check does not turn
    green for its bytes, and its figures carry no evidence label of their own."""
    from pycert.certify.report import load_directory, render_page

    manifest, certs = load_directory(site["certs"])
    page = tmp_path / "unverified.html"
    page.write_text(render_page(manifest, certs, verify="pycert verify certs/*.json",
                                not_verified={"isolation-demo": "its inputs were not handed in"}))
    text = page.read_text()
    assert "claimed, not checked" in text
    blob = re.search(r'<script type="application/json" id="manifest">(.*?)</script>', text, re.S).group(1)
    assert "isolation-demo.json" not in blob and "ceiling-tiny.json" in blob
    with Browser() as browser:
        browser.open(page.as_uri())
        state, colour, lines = browser.verdict_after(lambda: browser.choose_file(site["good"]))
        assert (state, colour) == ("mismatch", RED), lines
        assert "did NOT verify when this page was made" in lines[0], lines
        state, colour, _ = browser.verdict_after(lambda: browser.choose_file(site["certs"] / "ceiling-tiny.json"))
        assert (state, colour) == ("match", GREEN)


FIRST_SCREEN = r"""(() => {
  const bottom = el => el.getBoundingClientRect().bottom + window.scrollY;
  const tables = [...document.querySelectorAll('section.decision')];
  const style = sel => { const el = document.querySelector(sel); if (!el) return null;
    const s = getComputedStyle(el); return [s.backgroundColor, s.fontWeight, s.fontStyle].join(' '); };
  return {decisions: tables.length, last: Math.max(...tables.map(bottom)),
          legend: bottom(document.querySelector('ul.legend')),
          firstCard: document.querySelector('section.card').getBoundingClientRect().top + window.scrollY,
          styles: ['proven', 'derived', 'computed', 'observed'].map(k => style(`table.decision td.ev-${k}`)),
          legendStyles: ['proven', 'derived', 'computed', 'observed'].map(k => style(`ul.legend .ev-${k}`))};
})()"""


@needs_chromium
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_first_screen_at_1280_pixels_is_the_decision(tmp_path: Path, committed_page: tuple[Path, Path]) -> None:
    """In Chromium at 1280 x 900, the page's first screen holds the legend and every traffic's table by cache
    size, whole, and nothing is wider than the window; proven, derived, computed and observed values look
    different from one another, each as the legend shows it. Both screenshots (the first screen, the whole
    page) are left in the test's directory for a person to look at."""
    out, certs = committed_page
    traces = {i["sha256"] for c in certs.glob("*.json") for i in json.loads(c.read_text())["inputs"]
              if i["role"] == "trace"}
    with Browser() as browser:
        browser.open(out.as_uri())
        (tmp_path / "report-1280.png").write_bytes(browser.screenshot(1280))
        (tmp_path / "report-1280-first-screen.png").write_bytes(browser.screenshot(1280, whole=False))
        width = browser.js("document.documentElement.clientWidth")
        assert browser.js("document.documentElement.scrollWidth") == width  # nothing wider than the window
        seen = browser.js(FIRST_SCREEN)
        assert seen["decisions"] == len(traces) and seen["legend"] < seen["last"] <= min(900, seen["firstCard"]), seen
        present = [s for s in seen["styles"] if s is not None]
        assert len(present) >= 3 and len(set(present)) == len(present), seen["styles"]  # each kind its own look
        for table, legend in zip(seen["styles"], seen["legendStyles"]):
            assert table is None or table == legend, (table, legend)  # as the legend shows it
        assert browser.js(BROKEN_WORDS) == []
