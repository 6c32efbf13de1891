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
import json
import re
from collections.abc import Callable
from pathlib import Path

from pycert.certify.documents import parse_certificate
from pycert.certify.hints import input_paths, verify_command
from pycert.certify.inputs import Locator
from pycert.certify.manifest import MANIFEST_NAME, manifest_rejection, read_manifest
from pycert.certify.sections import Curve, curve_png, engine_beside, escape, headroom, table
from pycert.certify.verify import VerifyResult, own_library, verify_certificates
from pycert.core.console import plural
from pycert.core.errors import InputError, Rejected, Rejection
from pycert.core.files import atomic_write, certificate_root
from pycert.core.gate import entries, inside
from pycert.core.limits import MAX_JSON_BYTES
from pycert.core.schema import Certificate
from pycert.families import FAMILIES
from pycert.lean.sources import library_signatures

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


def _script_hash(script: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()


def verdict_line(why_not: str | None) -> str:
    """What the page says of a certificate's own check: verified offline when the page was made, or why not."""
    if why_not is None:
        return ('<p class="verified"><strong>Verified offline</strong> when this page was made (pycert verify: '
                "inputs hashed, instance regenerated, every figure and sentence derived again; the kernel and the "
                "axiom audit were not re-run).</p>")
    return (f'<p class="unverified"><strong>NOT VERIFIED</strong> when this page was made: {escape(why_not)}. What '
            "follows is what the certificate says, unchecked.</p>")


def render_certificate(cert: Certificate, file_hash: str, curves: dict[str, bytes], extra: str = "",
                       why_not: str | None = "not checked") -> str:
    figures = table(
        [(f"<code>{escape(f.name)}</code>", escape(f"{f.numerator}/{f.denominator}" if f.denominator != 1 else f.numerator),
          escape(f.decimal), escape(f.unit), f'<span class="evidence">{escape(f.evidence)}</span>', escape(f.known_by))
         for f in cert.figures],
        ("figure", "exact", "decimal", "unit", "evidence", "known by"),
    )
    inputs = table([(escape(i.role), f"<code>{escape(i.path)}</code>", f'<span class="hash">{escape(i.sha256)}</span>')
                    for i in cert.inputs], ("role", "path", "sha256")) if cert.inputs else "<p>none</p>"
    b = cert.backend
    solver = (f"{escape(cert.solver.name)} {escape(cert.solver.version)}: {escape(cert.solver.status)}, objective "
              f"{escape(cert.solver.objective)}, bound {escape(cert.solver.bound)}") if cert.solver else "none"
    limits = "".join(f"<li>{escape(x)}</li>" for x in cert.does_not_prove)
    theorems = ", ".join(f"<code>{escape(t)}</code>" for t in cert.theorems)
    images = "".join(
        f'<figure><img alt="hit rate against capacity for {escape(i.path)}" '
        f'src="data:image/png;base64,{base64.b64encode(curves[i.sha256]).decode()}">'
        f"<figcaption>Hit rate against capacity: {escape(i.path)}</figcaption></figure>"
        for i in cert.inputs if i.sha256 in curves
    )
    return f"""
<section class="cert" id="cert-{escape(cert.id)}">
<h2>{escape(cert.id)} <small>({escape(cert.family)})</small></h2>
{verdict_line(why_not)}
<p class="claim"><strong>Claim.</strong> {escape(cert.claim)}</p>
{figures}
<p><strong>Rests on:</strong> {theorems}</p>
{extra}
{images}
<h3>Inputs</h3>
{inputs}
<p><strong>Backend:</strong> {escape(b.kind)}, Lean {escape(b.lean_version)} ({escape(b.lean_commit or "commit unknown")}){
    f", Node {escape(b.node_version)}" if b.node_version else ""}.
<strong>Solver:</strong> {solver}. <strong>Audit:</strong> {escape(cert.audit.verdict)}.</p>
<p><strong>File sha256:</strong> <span class="hash">{escape(file_hash)}</span></p>
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
    index = table([(f'<a href="#cert-{escape(c.id)}">{escape(c.id)}</a>', escape(c.family),
                    "yes" if c.id not in not_verified else "<strong>NO</strong> (why: in its section)", escape(c.claim))
                   for c, _ in certs], ("certificate", "family", "verified offline", "claim"))
    unchecked = sum(c.id in not_verified for c, _ in certs)
    verified = (f"{len(certs) - unchecked} of them verified offline when this page was made, {unchecked} "
                "<strong>not</strong> (marked below)") if unchecked else \
        f"{'Each' if len(certs) > 1 else 'It was'} verified offline when this page was made"
    csp = (f"default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src '{_script_hash(_SCRIPT)}'; "
           "connect-src 'none'; form-action 'none'; base-uri 'none'")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{escape(csp)}">
<title>pycert certificates</title><style>{_STYLE}</style></head>
<body>
<h1>pycert certificates</h1>
<p>{plural(len(certs), "certificate")}. {verified}. Re-check them offline with <code>{escape(verify)}</code>
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
    extras |= {cert.id: engine_beside(cert, [c for c, _ in certs], not_verified) for cert, _ in certs
               if cert.family == "engine" and cert.id not in not_verified}
    externals = {i.path: i.sha256 for cert, _ in certs for i in cert.inputs if i.external}
    verify = verify_command(cert_dir, None, input_paths(externals, cert_dir, inputs), root=root)
    pngs = {sha: curve.png for sha, curve in drawn.items()}
    atomic_write(out, render_page(manifest, certs, pngs, verify=verify, not_verified=not_verified,
                                  extras=extras).encode("utf-8"))
    return out, len(certs), not_verified
