"""One static HTML page listing every certificate, with an in-page verifier.

The page is self-contained: styles and script inline, the trace engine's hit-rate curve of every trace
a certificate names as a ``data:`` PNG (``pycert.analysis.plot``, drawn at report time), and a
Content-Security-Policy of ``default-src 'none'`` (the script admitted by its own hash) so the browser
makes no network request at all. The verifier hashes a dropped or chosen file with WebCrypto
(``crypto.subtle.digest``) and shows green only when that sha256 is an entry of the manifest embedded
at generation time and every theorem the certificate names is a public theorem of the library the
page was made with, pinned with the signature its source declares (embedded beside the manifest), or
its instance's headline, stating its family's predicate (``pycert verify`` regenerates the instance).
Embedded JSON escapes every ``<``, so no ``</script>`` or ``<!--`` in it can end or bend the script.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING

from pycert.certify.documents import parse_certificate
from pycert.certify.hints import input_paths, verify_command
from pycert.certify.inputs import Locator
from pycert.certify.manifest import MANIFEST_NAME, manifest_rejection, read_manifest
from pycert.certify.verify import VerifyResult, own_library, verify_certificates
from pycert.core.console import plural
from pycert.core.errors import InputError, Rejected, Rejection
from pycert.core.files import atomic_write, certificate_root
from pycert.core.gate import Source, entries, inside
from pycert.core.limits import MAX_JSON_BYTES
from pycert.core.schema import Certificate
from pycert.families import FAMILIES
from pycert.lean.sources import library_signatures

if TYPE_CHECKING:  # numpy: the page imports the trace engine only when it draws a curve
    from pycert.analysis.cachesim import HitCurve

_SCRIPT = r"""
"use strict";
const manifest = JSON.parse(document.getElementById("manifest").textContent);
const library = JSON.parse(document.getElementById("library").textContent);
const headlines = JSON.parse(document.getElementById("headlines").textContent);
const headlineName = /^Pycert\.Instance\.[A-Za-z0-9_]+\.headline$/;
const nameOf = new Map(Object.entries(manifest).map(([name, hash]) => [hash, name]));
const verdict = document.getElementById("verdict");
const details = document.getElementById("verdict-details");

function hex(buffer) {
  return Array.from(new Uint8Array(buffer), b => b.toString(16).padStart(2, "0")).join("");
}

function theoremProblems(bytes) {
  let cert;
  try { cert = JSON.parse(new TextDecoder("utf-8", {fatal: true}).decode(bytes)); }
  catch (err) { return ["not a certificate (JSON)"]; }
  const names = Array.isArray(cert.theorems) ? cert.theorems : [];
  const pinned = (cert.statements && typeof cert.statements === "object") ? cert.statements : {};
  const out = names.length ? [] : ["names no theorem"];
  for (const name of names) {
    if (headlineName.test(name)) {  // the instance's headline: it states the family's predicate
      const predicates = Object.prototype.hasOwnProperty.call(headlines, cert.family) ? headlines[cert.family] : [];
      if (!pinned[name] || !predicates.some(p => String(pinned[name].signature).startsWith(`theorem headline : ${p} `)))
        out.push(`theorem ${name} does not state the family's headline predicate`);
      continue;
    }
    const sig = Object.prototype.hasOwnProperty.call(library, name) ? library[name] : undefined;
    if (sig === undefined) out.push(`theorem ${name} is not a public theorem of the library`);
    else if (!pinned[name] || pinned[name].signature !== sig) out.push(`theorem ${name}: statement differs from the library's`);
  }
  return out;
}

async function checkOne(file) {
  const bytes = await file.arrayBuffer();
  const digest = hex(await crypto.subtle.digest("SHA-256", bytes));
  const entry = nameOf.get(digest);
  const problems = theoremProblems(bytes);
  if (problems.length) {
    return {ok: false, text: `${file.name}: ${problems.join("; ")}`};
  }
  if (entry !== undefined) {
    return {ok: true, text: `${file.name}: sha256 ${digest} matches the manifest entry ${entry}; its theorems and statements are the library's`};
  }
  const expected = manifest[file.name];
  return {ok: false, text: expected === undefined
    ? `${file.name}: sha256 ${digest} is not in the manifest`
    : `${file.name}: sha256 ${digest} differs from the manifest's ${expected}`};
}

async function checkFiles(files) {
  const list = Array.from(files);
  if (list.length === 0) return;
  details.replaceChildren();
  let results;
  try {
    if (!(globalThis.crypto && crypto.subtle)) throw new Error("WebCrypto is not available in this page");
    results = await Promise.all(list.map(checkOne));
  } catch (err) {
    results = [{ok: false, text: `could not hash: ${err.message}`}];
  }
  const ok = results.every(r => r.ok);
  verdict.dataset.state = ok ? "match" : "mismatch";
  verdict.textContent = ok ? "MATCH: every file is in the manifest" : "NO MATCH: see below";
  for (const r of results) {
    const li = document.createElement("li");
    li.className = r.ok ? "match" : "mismatch";
    li.textContent = r.text;
    details.append(li);
  }
}

const zone = document.getElementById("drop");
zone.addEventListener("dragover", e => { e.preventDefault(); zone.classList.add("over"); });
zone.addEventListener("dragleave", () => zone.classList.remove("over"));
zone.addEventListener("drop", e => {
  e.preventDefault();
  zone.classList.remove("over");
  checkFiles(e.dataTransfer.files);
});
document.getElementById("file").addEventListener("change", e => checkFiles(e.target.files));
// A file dropped outside the zone must not make the browser navigate away from the page.
window.addEventListener("dragover", e => e.preventDefault());
window.addEventListener("drop", e => e.preventDefault());
"""

_STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; max-width: 70rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
table { border-collapse: collapse; margin: .4rem 0 1rem; }
td, th { border: 1px solid #ccc; padding: .2rem .5rem; text-align: left; vertical-align: top; }
code, .hash { font-family: ui-monospace, monospace; font-size: 13px; word-break: break-all; }
section.cert { border-top: 2px solid #444; margin-top: 2rem; }
#drop { border: 3px dashed #888; padding: 2rem; text-align: center; margin: 1rem 0; }
#drop.over { background: #eef; }
#verdict { font-weight: bold; padding: .6rem; border-radius: .3rem; }
#verdict[data-state="idle"] { background: #eee; color: #333; }
#verdict[data-state="match"], li.match { background: #1a7f37; color: #fff; }
#verdict[data-state="mismatch"], li.mismatch { background: #c62828; color: #fff; }
#verdict-details li { margin: .2rem 0; padding: .2rem .4rem; }
p.verified { border-left: 4px solid #1a7f37; padding-left: .5rem; }
p.unverified { background: #c62828; color: #fff; padding: .4rem .6rem; }
figure { margin: .5rem 0; }
figure img { max-width: 100%; border: 1px solid #ddd; }
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _script_hash(script: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()


@dataclass(frozen=True)
class Curve:
    """One trace's figure for the page, and what its capacity certificates' headroom lines need."""

    png: bytes
    lru: HitCurve
    """The trace's LRU hit counts at every capacity, with its reference and distinct counts."""
    lru_tokens: Callable[[int], Fraction] | None = None
    """LRU's hit rate in tokens at a capacity (a partial block never reused); None: no prompt lengths."""
    ceiling_tokens: Fraction | None = None


def curve_png(trace_path: Source, sha256: str, label: str, proved: Sequence[tuple[int, int]] = (),
              fmt: str | None = None, block_tokens: int | None = None) -> Curve:
    """The trace engine's hit-rate figure for one trace (LRU and Belady at every capacity, the ceiling),
    read as its certificate's parameters say (``fmt``, ``block_tokens``), with the ``(capacity, hits)``
    that capacity certificates of the page prove marked on it."""
    # matplotlib and numba: only when a page draws a curve
    from pycert.analysis.cachesim import stack_distances
    from pycert.analysis.plot import hit_rate_png, trace_curves
    from pycert.analysis.requests import ref_tokens, reuse_tokens
    from pycert.data.traces import read_trace

    trace = read_trace(trace_path, fmt or "auto", block_tokens)
    if trace.sha256 != sha256:
        raise Rejected(Rejection.mismatch(f"inputs[{label}].sha256", trace.sha256, sha256))
    lru, opt = trace_curves(trace)
    png = hit_rate_png(lru, opt, f"{label} (sha256 {sha256[:12]}, {trace.n_refs:,} refs)", proved)
    if (weights := ref_tokens(trace)) is None:
        return Curve(png=png, lru=lru)
    d, (tokens, full) = stack_distances(trace.refs), weights

    def lru_tokens(c: int) -> Fraction:
        return Fraction(int(tokens[(d >= 1) & (d <= c) & full].sum()), int(tokens.sum()))
    return Curve(png=png, lru=lru, lru_tokens=lru_tokens, ceiling_tokens=reuse_tokens(trace))


def headroom(cert: Certificate, curve: Curve, ceilings: dict[str, tuple[int, str]]) -> str:
    """A capacity certificate's two headrooms at its capacity: what a better eviction policy can still win
    (OPT(C) - LRU(C)) and what only an extra tier can win (ceiling - OPT(C)), each figure with how it
    is known. ``ceilings``: trace sha256 -> (max hits, certificate id) of a ceiling certificate on the page."""
    figs = {f.name: f.numerator for f in cert.figures if f.denominator == 1}
    [trace] = [i for i in cert.inputs if i.role == "trace"]
    c, opt, n = figs["capacity_blocks"], figs["max_hits"], curve.lru.refs
    lru = curve.lru.hits(c)
    ceiling, by = ceilings.get(trace.sha256, (n - curve.lru.distinct, ""))
    known = (f"kernel-checked in <a href=\"#cert-{_e(by)}\">{_e(by)}</a>" if by
             else "computed by pycert's trace engine: no ceiling certificate of this trace verified for this page")

    both = any(f.name == "belady_hits" and f.evidence == "kernel-checked" for f in cert.figures)
    how = ("this certificate's kernel-checked optimum for caches that admit every missed block: none hits more, and "
           "one hits exactly that" if both else "this certificate's kernel-checked bound, attained as computed")

    def pct(hits: int | Fraction) -> str:
        return f"{float(100 * hits / n):.2f}%"

    admitted = (f" With admission control (a missed block may be left out) the optimum is {figs['admission_hits']:,} "
                f"({pct(figs['admission_hits'])}, kernel-checked both ways"
                + (", reached by a prefix cache" if "prefix_cache_hits" in figs else "") + ")."
                if "admission_hits" in figs else "")
    return (f"<p><strong>Headroom at {c:,} blocks.</strong> LRU {lru:,} hits ({pct(lru)}, computed by pycert's "
            f"trace engine); Belady's MIN {opt:,} ({pct(opt)}, {how}); the capacity-free ceiling {ceiling:,} "
            f"({pct(ceiling)}, {known}). A better eviction "
            f"policy can win at most <strong>{100 * (opt - lru) / n:.2f} points</strong> (OPT - LRU); only an extra "
            f"tier can win the other <strong>{100 * (ceiling - opt) / n:.2f}</strong> (ceiling - OPT).{admitted}</p>"
            + in_tokens(cert, curve, c))


def in_tokens(cert: Certificate, curve: Curve, c: int) -> str:
    """The same headroom in tokens, the unit vLLM and SGLang report (every figure computed or derived)."""
    rates = {f.name: Fraction(f.numerator, f.denominator) for f in cert.figures}
    if curve.lru_tokens is None or "ceiling_tokens" not in rates:
        return ""

    def pct(rate: Fraction) -> str:
        return f"{float(100 * rate):.2f}%"

    bounds = f"at most {pct(rates['ceiling_tokens'])} for caches that admit every missed block" + (
        f" and {pct(rates['admission_ceiling_tokens'])} with admission control" if "admission_ceiling_tokens" in rates
        else "")
    reached = (f"; the prefix cache reaching the optimum hits {pct(rates['prefix_cache_hit_rate_tokens'])} (the "
               "kernel-checked witness's full blocks, computed)" if "prefix_cache_hit_rate_tokens" in rates else "")
    ceiling = f"; the capacity-free ceiling {pct(curve.ceiling_tokens)} (computed)" if curve.ceiling_tokens else ""
    return (f"<p><strong>In tokens</strong> (vLLM and SGLang report hit rates in tokens; a request's partial last "
            f"block is never reused): LRU {pct(curve.lru_tokens(c))} (computed); {bounds} (block_tokens × the "
            f"kernel-checked block bounds, derived){reached}{ceiling}.</p>")


def _rows(rows: list[tuple[object, ...]], headers: tuple[str, ...]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def verdict_line(why_not: str | None) -> str:
    """What the page says of a certificate's own check: verified offline when the page was made, or why not."""
    if why_not is None:
        return ('<p class="verified"><strong>Verified offline</strong> when this page was made (pycert verify: '
                "inputs hashed, instance regenerated, every figure and sentence derived again; the kernel and the "
                "axiom audit were not re-run).</p>")
    return (f'<p class="unverified"><strong>NOT VERIFIED</strong> when this page was made: {_e(why_not)}. What '
            "follows is what the certificate says, unchecked.</p>")


def render_certificate(cert: Certificate, file_hash: str, curves: dict[str, bytes], extra: str = "",
                       why_not: str | None = "not checked") -> str:
    figures = _rows(
        [(f"<code>{_e(f.name)}</code>", _e(f"{f.numerator}/{f.denominator}" if f.denominator != 1 else f.numerator),
          _e(f.decimal), _e(f.unit), f'<span class="evidence">{_e(f.evidence)}</span>', _e(f.known_by))
         for f in cert.figures],
        ("figure", "exact", "decimal", "unit", "evidence", "known by"),
    )
    inputs = _rows([(_e(i.role), f"<code>{_e(i.path)}</code>", f'<span class="hash">{_e(i.sha256)}</span>')
                    for i in cert.inputs], ("role", "path", "sha256")) if cert.inputs else "<p>none</p>"
    b = cert.backend
    solver = (f"{_e(cert.solver.name)} {_e(cert.solver.version)}: {_e(cert.solver.status)}, objective "
              f"{_e(cert.solver.objective)}, bound {_e(cert.solver.bound)}") if cert.solver else "none"
    limits = "".join(f"<li>{_e(x)}</li>" for x in cert.does_not_prove)
    theorems = ", ".join(f"<code>{_e(t)}</code>" for t in cert.theorems)
    images = "".join(
        f'<figure><img alt="hit rate against capacity for {_e(i.path)}" '
        f'src="data:image/png;base64,{base64.b64encode(curves[i.sha256]).decode()}">'
        f"<figcaption>Hit rate against capacity: {_e(i.path)}</figcaption></figure>"
        for i in cert.inputs if i.sha256 in curves
    )
    return f"""
<section class="cert" id="cert-{_e(cert.id)}">
<h2>{_e(cert.id)} <small>({_e(cert.family)})</small></h2>
{verdict_line(why_not)}
<p class="claim"><strong>Claim.</strong> {_e(cert.claim)}</p>
{figures}
<p><strong>Rests on:</strong> {theorems}</p>
{extra}
{images}
<h3>Inputs</h3>
{inputs}
<p><strong>Backend:</strong> {_e(b.kind)}, Lean {_e(b.lean_version)} ({_e(b.lean_commit or "commit unknown")}){
    f", Node {_e(b.node_version)}" if b.node_version else ""}.
<strong>Solver:</strong> {solver}. <strong>Audit:</strong> {_e(cert.audit.verdict)}.</p>
<p><strong>File sha256:</strong> <span class="hash">{_e(file_hash)}</span></p>
<p><strong>Does not prove:</strong></p><ul>{limits}</ul>
</section>"""


def in_reading_order(name: str) -> tuple[tuple[int, int, str], ...]:
    """A sort key that orders the numbers inside a name by value: ``capacity-t-c128`` before
    ``capacity-t-c1024`` (as text, ``1024`` sorts first); by length, then digits, so that no number
    is converted (a name of 5,000 digits sorts too)."""
    return tuple((0, len(part.lstrip("0")), part.lstrip("0")) if part.isdigit() else (1, 0, part)
                 for part in re.split(r"(\d+)", name) if part)


def load_directory(cert_dir: Path) -> tuple[dict[str, str], list[tuple[Certificate, str]]]:
    """The manifest and every certificate it lists, in reading order; a certificate that disagrees with
    it is rejected. Every error names the file it is about."""
    if not cert_dir.is_dir():
        raise InputError("no such directory" if not cert_dir.exists() else "not a directory of certificates",
                         where=str(cert_dir))
    manifest = read_manifest(cert_dir / MANIFEST_NAME)
    for stray in (e.name for e in entries(cert_dir, ".json") if e.name not in manifest):
        raise Rejected(manifest_rejection(manifest, stray, b"", cert_dir / MANIFEST_NAME))
    certs = []
    for name in sorted(manifest, key=in_reading_order):
        path = inside(cert_dir, name)
        if not path.exists():
            raise InputError("listed in the manifest but absent", where=str(path))
        data = path.read("a certificate file (the manifest lists it)", MAX_JSON_BYTES)
        if rejection := manifest_rejection(manifest, name, data, cert_dir / MANIFEST_NAME):
            raise Rejected(rejection)
        try:
            certs.append((parse_certificate(data, where=str(path)), hashlib.sha256(data).hexdigest()))
        except Rejected as err:
            raise Rejected(err.rejection.model_copy(update={"subject": f"{path}: {err.rejection.subject}"})) from None
    return manifest, certs


def embedded_json(value: object) -> str:
    """JSON for a ``<script type="application/json">``: every ``<`` escaped (JSON reads ``\\u003c`` as
    ``<``), so neither ``</script>`` nor ``<!--`` can appear in it."""
    return json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False).replace("<", "\\u003c")


def render_page(manifest: dict[str, str], certs: list[tuple[Certificate, str]], curves: dict[str, bytes],
                library: dict[str, str] | None = None, *, verify: str, not_verified: dict[str, str],
                extras: dict[str, str] | None = None) -> str:
    """``library``: theorem -> source signature of the library the page's verifier checks against
    (default: pycert's own); ``verify``: the command that re-checks the certificates offline;
    ``not_verified``: certificate id -> why it was not verified when the page was made (every other one was)."""
    if library is None:
        library = library_signatures(own_library())
    index = _rows([(f'<a href="#cert-{_e(c.id)}">{_e(c.id)}</a>', _e(c.family),
                    "yes" if c.id not in not_verified else "<strong>NO</strong> (why: in its section)", _e(c.claim))
                   for c, _ in certs], ("certificate", "family", "verified offline", "claim"))
    unchecked = sum(c.id in not_verified for c, _ in certs)
    verified = (f"{len(certs) - unchecked} of them verified offline when this page was made, {unchecked} "
                "<strong>not</strong> (marked below)") if unchecked else \
        f"{'Each' if len(certs) > 1 else 'It was'} verified offline when this page was made"
    csp = (f"default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src '{_script_hash(_SCRIPT)}'; "
           "connect-src 'none'; form-action 'none'; base-uri 'none'")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{_e(csp)}">
<title>pycert certificates</title><style>{_STYLE}</style></head>
<body>
<h1>pycert certificates</h1>
<p>{plural(len(certs), "certificate")}. {verified}. Re-check them offline with <code>{_e(verify)}</code>
(add <code>--kernel</code> to re-run Lean), or their bytes with <code>sha256sum -c {MANIFEST_NAME}</code>.</p>
<h2>Check a certificate file here</h2>
<div id="drop">Drop certificate files here, or <input type="file" id="file" multiple accept=".json,application/json">
<p>Hashed in this page with the browser's WebCrypto; nothing is sent anywhere.</p></div>
<div id="verdict" data-state="idle" role="status" aria-live="polite">no file checked yet</div>
<ul id="verdict-details"></ul>
<h2>Index</h2>
{index}
{"".join(render_certificate(c, h, curves, (extras or {}).get(c.id, ""), not_verified.get(c.id)) for c, h in certs)}
<script type="application/json" id="manifest">{embedded_json(manifest)}</script>
<script type="application/json" id="library">{embedded_json(library)}</script>
<script type="application/json" id="headlines">{embedded_json({n: c.predicates() for n, c in FAMILIES.items()})}</script>
<script>{_SCRIPT}</script>
</body></html>
"""


def why_not_verified(result: VerifyResult) -> str | None:
    """None for a certificate that verified, else one line saying what stopped it; a rejected one raises
    :class:`Rejected`: a page shows no certificate that verify rejects."""
    why = result.first_problem()
    if result.failures:
        raise Rejected(Rejection(subject=result.certificate, reason="does-not-verify",
                                 detail=f"does not verify, so no page shows it: {why}"))
    return why


def write_report(cert_dir: Path, out: Path, root: Path | None = None, curves: bool = True,
                 progress: Callable[[str], None] = lambda _m: None,
                 inputs: dict[str, Path] | None = None) -> tuple[Path, int, dict[str, str]]:
    """Render the page for ``cert_dir``: every certificate verified offline first (a rejected one is
    refused; one whose inputs are not found is shown marked as not verified, with why); with ``curves``,
    plot every trace a certificate names (found like verify finds it: inside ``root``, by default the
    certificates' directory, an external trace where ``inputs`` hands it in or beside that directory; one
    found nowhere is an input error naming ``--input``), once per trace. The page, the number of
    certificates on it, and those not verified (id -> why)."""

    manifest, certs = load_directory(cert_dir)
    progress(f"verifying {plural(len(certs), 'certificate')} offline")
    results = verify_certificates([cert_dir / c.filename for c, _ in certs], root=root, inputs=inputs)
    not_verified = {c.id: why for (c, _), r in zip(certs, results) if (why := why_not_verified(r)) is not None}
    verified = [c for c, _ in certs if c.id not in not_verified]  # only these lend a figure to another's line
    where = Locator(root=root or certificate_root(cert_dir), external=dict(inputs or {}))
    drawn: dict[str, Curve] = {}
    proved: dict[str, list[tuple[int, int]]] = {}  # trace sha256 -> (capacity, hits) its capacity certificates prove
    # Nothing that did not verify in this run lends a figure: an unverified capacity certificate gets no mark
    # and no headroom line, and an unverified ceiling certificate's bound is not shown as kernel-checked.
    capacity = [c for c in verified if c.family == "capacity"]
    for cert in capacity:
        figs = {f.name: f.numerator for f in cert.figures if f.denominator == 1}
        for i in cert.inputs:
            if i.role == "trace":
                proved.setdefault(i.sha256, []).append((figs["capacity_blocks"], figs["max_hits"]))
    for cert, _ in certs:
        for i in cert.inputs:
            if curves and i.role == "trace" and i.sha256 not in drawn:
                path = where.locate(i)
                if not path.exists():
                    raise InputError("trace named by a certificate is missing (or pass --no-curves)", where=str(path))
                progress(f"hit-rate curve of {i.path}")
                # one trace file makes one certificate id in a directory, so it is read one way here
                drawn[i.sha256] = curve_png(path, i.sha256, i.path, sorted(proved.get(i.sha256, [])),
                                            getattr(cert.parameters, "trace_format", None),
                                            getattr(cert.parameters, "block_tokens", None))
    ceilings = {i.sha256: (f.numerator, cert.id) for cert in verified if cert.family == "ceiling"
                for i in cert.inputs if i.role == "trace" for f in cert.figures if f.name == "max_hits"}
    extras = {cert.id: headroom(cert, drawn[i.sha256], ceilings) for cert in capacity
              for i in cert.inputs if i.role == "trace" and i.sha256 in drawn}
    externals = {i.path: i.sha256 for cert, _ in certs for i in cert.inputs if i.external}
    verify = verify_command(cert_dir, None, input_paths(externals, cert_dir, inputs), root=root)
    pngs = {sha: curve.png for sha, curve in drawn.items()}
    atomic_write(out, render_page(manifest, certs, pngs, verify=verify, not_verified=not_verified,
                                  extras=extras).encode("utf-8"))
    return out, len(certs), not_verified
