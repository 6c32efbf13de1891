"""One static HTML page listing every certificate, with an in-page verifier.

First the decision (:mod:`pycert.certify.decision`): per traffic, one table by cache size, in prompt tokens and
in block references, each value styled by how it is known (a legend says how); then a summary card per trace
(:mod:`pycert.certify.cards`: a plain sentence, the headline numbers rounded with the exact value a click away,
a table by certified capacity, one plot), under it the trace's fleet and its waterfall
(:mod:`pycert.certify.fleet_card`), then
every certificate in full. The page is self-contained: styles and script inline, the trace engine's hit-rate
curve of every trace a certificate names as a ``data:`` PNG (``pycert.analysis.plot``, drawn at report
time, once per trace), and a
Content-Security-Policy of ``default-src 'none'`` (the script admitted by its own hash) so the browser
makes no network request at all. The verifier hashes a dropped or chosen file with WebCrypto
(``crypto.subtle.digest``) and shows green only when that sha256 is the manifest's entry for a certificate
that verified offline when the page was made (a listed certificate that did not verify is named as such,
and its figures are shown as "claimed, not checked", whatever evidence it claims) and every theorem the
certificate names is a public theorem of the library the page was made with, pinned with the signature its source declares (embedded beside the manifest), or
its instance's headline, stating its family's predicate (``pycert verify`` regenerates the instance).
Embedded JSON escapes every ``<``, so no ``</script>`` or ``<!--`` in it can end or bend the script.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pycert.certify.card import Card, escape, exact_of, legend, rounded, unchecked_label, unit_of
from pycert.certify.cards import TraceFacts, admitted, certificate_card, stored, trace_card
from pycert.certify.decision import CSV_HEADERS, Decision, csv_rows, decision, decision_html
from pycert.certify.documents import parse_certificate
from pycert.certify.fleet_card import fleet_cards
from pycert.certify.hints import input_paths, verify_command
from pycert.certify.inputs import Locator
from pycert.certify.manifest import MANIFEST_NAME, manifest_rejection, read_manifest
from pycert.certify.sections import curve_png, table
from pycert.certify.traffic import one_traffic, trace_facts
from pycert.certify.verify import VerifyResult, own_library, verify_certificates
from pycert.core.console import csv_text, plural
from pycert.core.errors import InputError, NotHere, Rejected, Rejection
from pycert.core.files import atomic_write, certificate_root
from pycert.core.gate import entries, inside
from pycert.core.limits import MAX_JSON_BYTES
from pycert.core.schema import Certificate
from pycert.families import FAMILIES
from pycert.lean.sources import library_signatures

_SCRIPT = r"""
"use strict";
const manifest = JSON.parse(document.getElementById("manifest").textContent);
const unverified = JSON.parse(document.getElementById("unverified").textContent);
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
  const unchecked = Object.keys(unverified).find(name => unverified[name] === digest);
  if (unchecked !== undefined) {
    return {ok: false, text: `${file.name}: sha256 ${digest} is the manifest's entry ${unchecked}, a certificate that did NOT verify when this page was made: the page does not vouch for it`};
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
body { font: 15px/1.45 system-ui, sans-serif; max-width: 76rem; margin: .8rem auto 2rem; padding: 0 1rem; color: #222; }
h1 { margin: .2rem 0 .3rem; font-size: 1.7rem; }
p.lede { margin: .2rem 0 .4rem; }
ul.legend { list-style: none; display: flex; flex-wrap: wrap; gap: .3rem 1.2rem; padding: 0; margin: .3rem 0 .6rem;
  font-size: 13px; color: #333; }
.ev { padding: 0 .25rem; border-radius: .2rem; }
.ev-proven, td.ev-proven { background: #dff3e3; font-weight: 700; color: #0f3d1c; }
.ev-derived, td.ev-derived { background: #f1f8f2; color: #1b4d2a; text-decoration: underline dotted #1a7f37; }
.ev-computed, td.ev-computed { background: #f3f3f3; color: #555; font-style: italic; }
.ev-observed, td.ev-observed { background: #e3eefb; color: #0b3d73; }
td.ev-proven summary, td.ev-derived summary, td.ev-computed summary, td.ev-observed summary { text-decoration: none; }
.tile-proven { border-left: 4px solid #1a7f37; }
.tile-derived { border-left: 4px dotted #1a7f37; }
.tile-computed { border-left: 4px solid #aaa; }
.tile-observed { border-left: 4px solid #2b6cb0; }
section.decision { margin: .5rem 0 .9rem; }
section.decision h2 { font-size: 1.15rem; margin: .4rem 0 0; }
section.decision p.meta, section.decision p.note { margin: 0 0 .2rem; }
table.decision { margin: .2rem 0 .4rem; font-size: 14px; }
table.decision td { text-align: right; white-space: nowrap; }
table.decision td details span { text-align: left; white-space: normal; }
table.decision th { font-size: 13px; font-weight: 600; }
table.decision th.unit { text-align: center; background: #e9e9e9; }
table.decision th.size { white-space: nowrap; background: #fafafa; }
table.decision td.na { color: #888; }
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
section.cert td { overflow-wrap: anywhere; }
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


UNCHECKED = "claimed, not checked"
"""The evidence a page shows for every figure of a certificate that did not verify when it was made."""


def verdict_line(why_not: str | None) -> str:
    """What the page says of a certificate's own check: verified offline when the page was made, or why not."""
    if why_not is None:
        return ('<p class="verified"><strong>Verified offline</strong> when this page was made (pycert verify: '
                "inputs hashed, instance regenerated, every figure and sentence derived again; the kernel and the "
                "axiom audit were not re-run).</p>")
    return (f'<p class="unverified"><strong>{unchecked_label(why_not)}</strong> when this page was made: '
            f"{escape(why_not)}. What follows is what the certificate says, unchecked.</p>")


def render_certificate(cert: Certificate, file_hash: str, why_not: str | None = "not checked") -> str:
    """A certificate's own section: every figure (rounded, exact, unit, evidence), what it rests on and does
    not prove, its inputs and backend."""
    # an unverified certificate's evidence labels are its own word: the page lends them no standing
    evidence = (lambda f: f.evidence) if why_not is None else (lambda f: UNCHECKED)
    known_by = (lambda f: f.known_by) if why_not is None else \
        (lambda f: f"the certificate says: {f.known_by}" if f.known_by else "")
    figures = table(
        [(f'<code class="name">{escape(f.name)}</code>', escape(rounded(f)),
          f'<span class="{"hash" if len(exact_of(f)) > 40 else "num"}">{escape(exact_of(f))}</span>',
          escape(unit_of(f)), f'<span class="evidence">{escape(evidence(f))}</span>', escape(known_by(f)))
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
                library: dict[str, str] | None = None, *, verify: str, not_verified: dict[str, str],
                decisions: Sequence[Decision] = ()) -> str:
    """``decisions``: the tables by cache size, first on the page; ``cards``: the summary cards after them;
    ``library``: theorem -> source signature of the library the page's verifier checks against (default:
    pycert's own); ``verify``: the command that re-checks the certificates offline; ``not_verified``:
    certificate id -> why it was not verified when the page was made (every other one was)."""
    if library is None:
        library = library_signatures(own_library())
    index = table([(f'<a href="#cert-{escape(c.id)}">{escape(c.id)}</a>', escape(c.family),
                    "yes" if c.id not in not_verified else "<strong>NO</strong> (why: in its section)", escape(c.claim))
                   for c, _ in certs], ("certificate", "family", "verified offline", "claim"))
    unchecked = sum(c.id in not_verified for c, _ in certs)
    # the in-page check turns green only for the bytes of a certificate that verified when the page was made
    failed = {c.filename for c, _ in certs if c.id in not_verified}
    vouched = {name: h for name, h in manifest.items() if name not in failed}
    unvouched = {name: h for name, h in manifest.items() if name in failed}
    verified = (f"{len(certs) - unchecked} of them verified offline when this page was made, {unchecked} "
                "<strong>not</strong> (marked below)") if unchecked else \
        f"{'Each' if len(certs) > 1 else 'It was'} verified offline when this page was made"
    contents = "".join(f'<li><a href="#{escape(c.anchor)}">{escape(c.title)}</a></li>' for c in cards)
    first = (" For each traffic, what a cache of each size gets: in prompt tokens first (the unit vLLM and SGLang "
             "report), then in block references (what the kernel checks). Click a value for its count and how it is "
             "known." if decisions else "")
    csp = (f"default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src '{_script_hash(_SCRIPT)}'; "
           "connect-src 'none'; form-action 'none'; base-uri 'none'")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{escape(csp)}">
<title>pycert certificates</title><style>{_STYLE}</style></head>
<body>
<h1>pycert certificates</h1>
<p>{plural(len(certs), "certificate")}. {verified}.{first}</p>
{legend() if decisions else ""}
{"".join(decision_html(d) for d in decisions)}
<nav><ul class="contents">{contents}<li><a href="#check">Check a certificate file</a></li>
<li><a href="#certificates">Every certificate in full</a></li></ul></nav>
{"".join(c.html() for c in cards)}
<h2 id="check">Check a certificate file here</h2>
<div id="drop">Drop certificate files here, or <input type="file" id="file" multiple accept=".json,application/json">
<p>Hashed in this page with the browser's WebCrypto; nothing is sent anywhere.</p></div>
<div id="verdict" data-state="idle" role="status" aria-live="polite">no file checked yet</div>
<ul id="verdict-details"></ul>
<h2 id="certificates">Every certificate in full</h2>
<p>Re-check them offline with <code>{escape(verify)}</code> (add <code>--kernel</code> to re-run Lean), or their
bytes with <code>sha256sum -c {MANIFEST_NAME}</code>. Each number on this page is rounded for reading: click it
for the exact value and how it is known.</p>
{index}
{"".join(render_certificate(c, h, not_verified.get(c.id)) for c, h in certs)}
<script type="application/json" id="manifest">{embedded_json(vouched)}</script>
<script type="application/json" id="unverified">{embedded_json(unvouched)}</script>
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


@dataclass
class Gathered:
    """What a page (or its CSV) shows: the certificates, which did not verify and why, each traffic's facts
    (:func:`pycert.certify.cards.one_traffic`) and the command that re-checks them."""

    manifest: dict[str, str]
    certs: list[tuple[Certificate, str]]
    not_verified: dict[str, str]
    traffic: list[TraceFacts]
    verify: str

    def decisions(self) -> list[Decision]:
        return [decision(f, f"traffic-{n}", f.notes) for n, f in enumerate(self.traffic, 1)]


def write_report(cert_dir: Path, out: Path, root: Path | None = None, curves: bool = True,
                 progress: Callable[[str], None] = lambda _m: None,
                 inputs: dict[str, Path] | None = None) -> tuple[Path, int, dict[str, str]]:
    """Render the page for ``cert_dir`` (:func:`gather`). The page, the number of certificates on it, and those
    not verified (id -> why)."""
    g = gather(cert_dir, root, curves, progress, inputs)
    cards = []
    fleets = fleet_cards([c for c, _ in g.certs], g.not_verified, figure=curves)
    for n, f in enumerate(g.traffic, 1):
        cards.append(trace_card(f, f"trace-{n}"))
        if (fleet := fleets.pop(f.sha256, None)) is not None:  # the trace's fleet, under its card
            cards.append(fleet)
    cards += fleets.values()
    cards += [certificate_card(c, g.not_verified.get(c.id)) for c, _ in g.certs
              if not any(i.role == "trace" for i in c.inputs)]
    page = render_page(g.manifest, g.certs, cards, verify=g.verify, not_verified=g.not_verified,
                       decisions=g.decisions())
    atomic_write(out, page.encode("utf-8"))
    return out, len(g.certs), g.not_verified


def report_csv(cert_dir: Path, root: Path | None = None, curves: bool = True,
               progress: Callable[[str], None] = lambda _m: None,
               inputs: dict[str, Path] | None = None) -> tuple[str, int, dict[str, str]]:
    """The page's tables by cache size as CSV (:data:`pycert.certify.decision.CSV_HEADERS`, one row per cell),
    gathered as the page is; with the number of certificates and those not verified."""
    g = gather(cert_dir, root, curves, progress, inputs)
    return csv_text(CSV_HEADERS, csv_rows(list(zip(g.traffic, g.decisions())))), len(g.certs), g.not_verified


def gather(cert_dir: Path, root: Path | None = None, curves: bool = True,
           progress: Callable[[str], None] = lambda _m: None, inputs: dict[str, Path] | None = None) -> Gathered:
    """Every certificate of ``cert_dir`` verified offline first (a rejected one is refused; one whose inputs are
    not found is shown marked as not verified, with why); with ``curves``, every trace a certificate names read
    and plotted (found like verify finds it: inside ``root``, by default the certificates' directory, an
    external trace where ``inputs`` hands it in or beside that directory; one found nowhere is an input error
    naming ``--input``), once per trace and reading."""
    manifest, certs = load_directory(cert_dir)
    progress(f"verifying {plural(len(certs), 'certificate')} offline")
    results = verify_certificates([cert_dir / c.filename for c, _ in certs], root=root, inputs=inputs)
    not_verified = {c.id: why for (c, _), r in zip(certs, results) if (why := why_not_verified(r)) is not None}
    where = Locator(root=root or certificate_root(cert_dir), external=dict(inputs or {}))
    facts = trace_facts([c for c, _ in certs], not_verified)
    for fact in facts.values() if curves else ():
        assert fact.source is not None
        try:
            path = where.locate(fact.source)
        except NotHere:  # its certificates say so, each marked NOT CHECKED: the page has no curve of it
            continue
        if not path.exists():
            raise InputError("trace named by a certificate is missing (or pass --no-curves)", where=str(path))
        progress(f"hit-rate curve of {fact.source.path}")
        marks = [(c, h) for c, cert in sorted(fact.capacity.items()) if (h := stored(cert)) is not None]
        optima = {c: ha for c, cert in fact.capacity.items() if (ha := admitted(cert)) is not None}
        seen = [(s.capacity_blocks, s.engine_hits) for _, s in fact.beside()]
        trace_format, block_tokens, by_time = fact.reading or (None, None, False)  # as its certificates read it
        fact.curve = curve_png(path, fact.sha256, fact.source.path, marks, trace_format, block_tokens,
                               admission=optima, observed=seen, sort=by_time)
    externals = {i.path: i for cert, _ in certs for i in cert.inputs if i.external}
    verify = verify_command(cert_dir, None, input_paths(externals, cert_dir, inputs), root=root)
    return Gathered(manifest, certs, not_verified, one_traffic(list(facts.values())), verify)
