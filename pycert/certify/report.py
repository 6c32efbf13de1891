"""One static HTML page listing every certificate, with an in-page verifier.

First a summary card per trace (:mod:`pycert.certify.cards`: a plain sentence, the headline numbers
rounded with the exact value a click away, a table by certified capacity, one plot), then every
certificate in full. The page is self-contained: styles and script inline, the trace engine's hit-rate
curve of every trace a certificate names as a ``data:`` PNG (``pycert.analysis.plot``, drawn at report
time, once per trace), and a
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
from collections.abc import Callable, Sequence
from pathlib import Path

from pycert.certify.card import Card, escape, exact_of, rounded, unit_of
from pycert.certify.cards import TraceFacts, admitted, certificate_card, figures, stored, trace_card
from pycert.certify.documents import parse_certificate
from pycert.certify.fleet_card import fleet_cards
from pycert.certify.hints import input_paths, verify_command
from pycert.certify.inputs import Locator
from pycert.certify.manifest import MANIFEST_NAME, manifest_rejection, read_manifest
from pycert.certify.sections import curve_png, table
from pycert.certify.verify import VerifyResult, own_library, verify_certificates
from pycert.core.console import plural
from pycert.core.errors import InputError, Rejected, Rejection
from pycert.core.files import atomic_write, certificate_root
from pycert.core.gate import entries, inside
from pycert.core.limits import MAX_JSON_BYTES
from pycert.core.schema import Certificate
from pycert.families import FAMILIES
from pycert.families.traces import TraceReading
from pycert.lean.sources import library_signatures

_SCRIPT = r"""
"use strict";
const manifest = JSON.parse(document.getElementById("manifest").textContent);
const library = JSON.parse(document.getElementById("library").textContent);
const headlines = JSON.parse(document.getElementById("headlines").textContent);
const headlineName = /^Pycert\.Instance\.[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)?\.headline$/;
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
body { font: 15px/1.45 system-ui, sans-serif; max-width: 76rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
table { border-collapse: collapse; margin: .4rem 0 1rem; }
td, th { border: 1px solid #ccc; padding: .25rem .55rem; text-align: left; vertical-align: top; }
th { background: #f4f4f4; word-break: normal; overflow-wrap: normal; hyphens: none; }
code { font-family: ui-monospace, monospace; font-size: 13px; }
.hash { font-family: ui-monospace, monospace; font-size: 12px; word-break: break-all; }
td .hash { display: block; max-height: 6rem; overflow: auto; }
.num, .evidence, td:first-child a { white-space: nowrap; }
section.card { border: 1px solid #bbb; border-radius: .5rem; padding: .4rem 1.2rem 1rem; margin: 1.5rem 0;
  box-shadow: 0 1px 3px rgba(0,0,0,.08); }
section.card h2 { margin: .6rem 0 .1rem; }
p.meta { color: #555; margin-top: 0; font-size: 13px; }
p.sentence { font-size: 17px; }
.tiles { display: flex; flex-wrap: wrap; gap: .8rem; margin: .8rem 0; }
.tile { border: 1px solid #ddd; border-radius: .4rem; padding: .5rem .8rem; min-width: 11rem; max-width: 22rem; background: #fafafa; }
.tile .big { font-size: 24px; font-weight: 600; }
.tile .label { color: #444; font-size: 13px; }
details.exact summary { cursor: pointer; list-style: none; text-decoration: underline dotted; }
details.exact summary::-webkit-details-marker { display: none; }
details.exact[open] span { display: block; font-size: 12px; font-weight: normal; color: #333; max-width: 30rem;
  overflow-wrap: anywhere; }
table.capacities td { text-align: right; }
table.capacities td details span { text-align: left; }
ul.contents { columns: 2; }
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
p.unverified a { color: #fff; }
figure { margin: .5rem 0; }
p.note { font-size: .9rem; color: #1b5e20; }
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


def render_certificate(cert: Certificate, file_hash: str, why_not: str | None = "not checked") -> str:
    """A certificate's own section: every figure (rounded, exact, unit, evidence), what it rests on and does
    not prove, its inputs and backend."""
    figures = table(
        [(f'<code class="name">{escape(f.name)}</code>', escape(rounded(f)),
          f'<span class="{"hash" if len(exact_of(f)) > 40 else "num"}">{escape(exact_of(f))}</span>',
          escape(unit_of(f)), f'<span class="evidence">{escape(f.evidence)}</span>', escape(f.known_by))
         for f in cert.figures],
        ("figure", "value", "exact", "unit", "evidence", "known by"),
    )
    inputs = table([(escape(i.role), f"<code>{escape(i.path)}</code>", f'<span class="hash">{escape(i.sha256)}</span>')
                    for i in cert.inputs], ("role", "path", "sha256")) if cert.inputs else "<p>none</p>"
    b = cert.backend
    solver = (f"{escape(cert.solver.name)} {escape(cert.solver.version)}: {escape(cert.solver.status)}, objective "
              f"{escape(cert.solver.objective)}, bound {escape(cert.solver.bound)}") if cert.solver else "none"
    limits = "".join(f"<li>{escape(x)}</li>" for x in cert.does_not_prove)
    theorems = ", ".join(f"<code>{escape(t)}</code>" for t in cert.theorems)
    return f"""
<section class="cert" id="cert-{escape(cert.id)}">
<h3>{escape(cert.id)} <small>({escape(cert.family)})</small></h3>
{verdict_line(why_not)}
<p class="claim"><strong>Claim.</strong> {escape(cert.claim)}</p>
{figures}
<p><strong>Rests on:</strong> {theorems}</p>
<h4>Inputs</h4>
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


def render_page(manifest: dict[str, str], certs: list[tuple[Certificate, str]], cards: Sequence[Card] = (),
                library: dict[str, str] | None = None, *, verify: str, not_verified: dict[str, str]) -> str:
    """``cards``: the summary cards, first on the page; ``library``: theorem -> source signature of the
    library the page's verifier checks against (default: pycert's own); ``verify``: the command that re-checks
    the certificates offline; ``not_verified``: certificate id -> why it was not verified when the page was
    made (every other one was)."""
    if library is None:
        library = library_signatures(own_library())
    index = table([(f'<a href="#cert-{escape(c.id)}">{escape(c.id)}</a>', escape(c.family),
                    "yes" if c.id not in not_verified else "<strong>NO</strong> (why: in its section)", escape(c.claim))
                   for c, _ in certs], ("certificate", "family", "verified offline", "claim"))
    unchecked = sum(c.id in not_verified for c, _ in certs)
    verified = (f"{len(certs) - unchecked} of them verified offline when this page was made, {unchecked} "
                "<strong>not</strong> (marked below)") if unchecked else \
        f"{'Each' if len(certs) > 1 else 'It was'} verified offline when this page was made"
    contents = "".join(f'<li><a href="#{escape(c.anchor)}">{escape(c.title)}</a></li>' for c in cards)
    csp = (f"default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src '{_script_hash(_SCRIPT)}'; "
           "connect-src 'none'; form-action 'none'; base-uri 'none'")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{escape(csp)}">
<title>pycert certificates</title><style>{_STYLE}</style></head>
<body>
<h1>pycert certificates</h1>
<p>{plural(len(certs), "certificate")}. {verified}. Re-check them offline with <code>{escape(verify)}</code>
(add <code>--kernel</code> to re-run Lean), or their bytes with <code>sha256sum -c {MANIFEST_NAME}</code>.
Each number below is rounded for reading: click it for the exact value and how it is known.</p>
<nav><ul class="contents">{contents}<li><a href="#check">Check a certificate file</a></li>
<li><a href="#certificates">Every certificate in full</a></li></ul></nav>
{"".join(c.html() for c in cards)}
<h2 id="check">Check a certificate file here</h2>
<div id="drop">Drop certificate files here, or <input type="file" id="file" multiple accept=".json,application/json">
<p>Hashed in this page with the browser's WebCrypto; nothing is sent anywhere.</p></div>
<div id="verdict" data-state="idle" role="status" aria-live="polite">no file checked yet</div>
<ul id="verdict-details"></ul>
<h2 id="certificates">Every certificate in full</h2>
{index}
{"".join(render_certificate(c, h, not_verified.get(c.id)) for c, h in certs)}
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
    where = Locator(root=root or certificate_root(cert_dir), external=dict(inputs or {}))
    facts = trace_facts([c for c, _ in certs], not_verified)
    for fact in facts.values() if curves else ():
        assert fact.source is not None
        path = where.locate(fact.source)
        if not path.exists():
            raise InputError("trace named by a certificate is missing (or pass --no-curves)", where=str(path))
        progress(f"hit-rate curve of {fact.source.path}")
        marks = [(c, h) for c, cert in sorted(fact.capacity.items()) if (h := stored(cert)) is not None]
        optima = {c: ha for c, cert in fact.capacity.items() if (ha := admitted(cert)) is not None}
        seen = [(s.capacity_blocks, s.engine_hits) for _, s in fact.beside()]
        trace_format, block_tokens = fact.reading or (None, None)  # as the card's certificates read the file
        fact.curve = curve_png(path, fact.sha256, fact.source.path, marks, trace_format, block_tokens,
                               admission=optima, observed=seen)
    cards = [trace_card(f, f"trace-{n}") for n, f in enumerate(facts.values(), 1)]
    cards += fleet_cards([c for c, _ in certs], not_verified, figure=curves)
    cards += [certificate_card(c, not_verified.get(c.id)) for c, _ in certs
              if not any(i.role == "trace" for i in c.inputs)]
    externals = {i.path: i.sha256 for cert, _ in certs for i in cert.inputs if i.external}
    verify = verify_command(cert_dir, None, input_paths(externals, cert_dir, inputs), root=root)
    atomic_write(out, render_page(manifest, certs, cards, verify=verify, not_verified=not_verified).encode("utf-8"))
    return out, len(certs), not_verified


def reading_of(cert: Certificate) -> tuple[str | None, int | None] | None:
    """How a certificate read its trace file into block references (the layout and the tokens a block), for a
    family that records it; None for one that does not (an engine's replay log, the first-touch cut)."""
    p = cert.parameters
    return (p.trace_format, p.block_tokens) if isinstance(p, TraceReading) else None


def trace_facts(certs: list[Certificate], not_verified: dict[str, str]) -> dict[tuple[str, object], TraceFacts]:
    """Every trace the certificates name, read one way (by sha256 and :func:`reading_of`, in the order first
    named), and what its certificates that verified in this run prove of it: nothing that did not verify lends
    a figure (it is named, with why), and no certificate lends one to a card of the same file read another way
    (at another block size the references are other ones). A certificate that records no reading (an engine's)
    joins the first card of its trace with as many references as it counts, else a card of its own."""
    facts: dict[tuple[str, object], TraceFacts] = {}
    recorded = [c for c in certs if reading_of(c) is not None]
    for cert in recorded + [c for c in certs if reading_of(c) is None]:
        figs, reading = figures(cert), reading_of(cert)
        for i in cert.inputs:
            if i.role != "trace":
                continue
            key: tuple[str, object] = (i.sha256, reading)
            if reading is None:
                refs = figs["refs"].value if "refs" in figs else None
                key = next((k for k, f in facts.items() if k[0] == i.sha256 and f.refs in (None, refs)), key)
            fact = facts.setdefault(key, TraceFacts(name=i.path, sha256=i.sha256, reading=reading, source=i))
            if cert.id in not_verified:
                fact.unverified[cert.id] = not_verified[cert.id]
            elif cert.family == "ceiling" and {"refs", "distinct", "max_hits"} <= set(figs):
                fact.ceiling = cert
            elif cert.family == "capacity" and {"refs", "capacity_blocks"} <= set(figs) and (
                    "max_hits" in figs or "bypass_hits" in figs):
                fact.capacity[figs["capacity_blocks"].numerator] = cert
            elif cert.family == "engine" and {"refs", "engine_hits", "bypass_hits"} <= set(figs):
                fact.engines.append(cert)
            elif cert.family == "isolation-cost" and {"capacity_blocks", "shared_hits", "salted_hits"} <= set(figs):
                fact.salts.append(cert)
    return facts
