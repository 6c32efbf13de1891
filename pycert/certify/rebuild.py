"""``verify --kernel``: rebuild the verifier's own library and the certificate's instance files, then
re-run the axiom audit on the named theorems, recompute each theorem's type digest from the oleans
just built and have Lean print each statement again, all from one build (the library, the instance
files and the statement probe in one graph) and one read of its compiled files. Nothing is taken from
the certificate but the names it asks about and the values it is compared with.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

from pycert.audit.axioms import audit_build
from pycert.audit.per_theorem import audit_rejections, certificate_audit
from pycert.audit.statements import STATEMENTS_MODULE, printed_headline, printed_statements, probe_source
from pycert.core.errors import Rejected, Rejection
from pycert.core.schema import Certificate
from pycert.families import FAMILIES
from pycert.lean import build
from pycert.lean.backend import resolve
from pycert.lean.build import cache_note
from pycert.lean.diagnostics import CheckResult
from pycert.lean.sources import library_signatures


def statement_rejections(cert: Certificate, digests: dict[str, str], printed: dict[str, str]) -> list[Rejection]:
    """Each pinned digest and printed statement against what the verifier's own build gives."""
    out = []
    for name in cert.theorems:
        pinned = cert.statements.get(name)
        if pinned is None:
            continue  # already rejected offline (statements must name every theorem)
        if pinned.type_sha256 != digests.get(name):
            out.append(Rejection.mismatch(f"statements[{name}].type_sha256", digests.get(name, "no such theorem built"),
                                          pinned.type_sha256))
        if pinned.statement != printed.get(name):
            out.append(Rejection.mismatch(f"statements[{name}].statement", repr(printed.get(name)),
                                          repr(pinned.statement)))
    return out


def rebuild(cert: Certificate, library: Path, instance: bytes, backend: str | None, timeout: float,
            progress: Callable[[str], None] = lambda _m: None, notes: list[str] | None = None) -> list[Rejection]:
    """The kernel, the audit of every declaration built and the figures read off the rebuilt headline.
    The one Lean file from outside the library is ``instance``: the bytes verify regenerated from the
    primary inputs, written here under the module name the family derives, so no code and no module name
    can come from a certificate's directory. ``notes`` gets one line saying whether Lean ran now or the
    build cache answered."""
    claim = FAMILIES[cert.family]
    inst = claim.instance(cert.parameters, claim.primary_inputs(cert.inputs))
    chosen = resolve(backend)
    # a name the library does not declare is already rejected offline; Lean is asked only about the rest
    known = [t for t in cert.theorems if t in library_signatures(library)]
    with tempfile.TemporaryDirectory(prefix="pycert-verify-") as scratch:  # the audit reads the sources too
        source = Path(scratch) / f"{inst.module}.lean"
        source.write_bytes(instance)
        probe = Path(scratch) / "probe" / f"{STATEMENTS_MODULE}.lean"
        probe.parent.mkdir()
        probe.write_text(probe_source(known), encoding="utf-8")
        progress(f"{cert.id}: rebuilding the library and {inst.path}")
        res = build.build(library=library, files=[source, probe], backend=chosen, timeout=timeout,
                          progress=lambda m: progress("  " + m))
        failures = [Rejection.mismatch(f"kernel[{r.module}]", "Lean accepts the file", f"{r.status}: " + (
                    r.failures[0].render() if r.failures else (r.detail or r.status))) for r in res.results if not r.ok]
        if not res.ok:
            return failures
        progress(f"{cert.id}: axiom audit of every declaration built")
        report = audit_build(res, chosen, library, digests=[*known, inst.headline], headlines=[inst.headline],
                             timeout=timeout)
    failures += [Rejection(subject=f.subject, reason=f.reason, detail=f"{f.module}: {f.detail} ({f.constant})")
                 for f in report.findings]
    failures += audit_rejections(cert.audit, certificate_audit(report, cert.theorems))
    printed = {**printed_statements(res, known), **printed_headline(res.by_module()[inst.module], inst.headline)}
    failures += statement_rejections(cert, report.type_sha256, printed)
    if notes is not None:
        notes.append(kernel_note(res.results))
    stated = report.headlines.get(inst.headline)
    if stated is None or stated.head != claim.headline_predicate:
        return failures + [Rejection.mismatch(f"{inst.headline} (rebuilt)", f"a theorem stating {claim.headline_predicate}",
                                              stated.head if stated else "no such theorem built")]
    try:
        kernel = claim.kernel_figures(stated.literals, inst.headline)
    except Rejected as err:
        return failures + [err.rejection]
    return failures + kernel_rejections(cert, kernel)


def kernel_rejections(cert: Certificate, kernel: dict[str, int]) -> list[Rejection]:
    """Each literal of the rebuilt headline against the certificate's figure or parameter of that name."""
    out = []
    figures, params = cert.figure_map(), cert.parameters.model_dump()
    for name, value in kernel.items():
        if name in figures and figures[name].value != value:
            out.append(Rejection.mismatch(f"figures.{name} (off the rebuilt kernel type)", str(value), figures[name].render()))
        elif name not in figures and params.get(name, value) != value:
            out.append(Rejection.mismatch(f"parameters.{name} (off the rebuilt kernel type)", str(value), str(params[name])))
    return out


def kernel_note(results: list[CheckResult]) -> str:
    """Whether Lean checked the files in this run or the build cache answered for some."""
    if note := cache_note(results):
        return f"kernel: {note}; verify --kernel --fresh runs Lean on every one"
    return f"kernel: Lean checked all {len(results)} files in this run"
