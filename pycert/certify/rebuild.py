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
from pycert.audit.statements import STATEMENTS_MODULE, printed_statements, probe_source
from pycert.certify.inputs import Locator
from pycert.core.errors import Rejection
from pycert.core.schema import Certificate
from pycert.lean import build
from pycert.lean.backend import resolve
from pycert.lean.build import cache_note
from pycert.lean.diagnostics import CheckResult
from pycert.lean.sources import library_signatures


def _kernel_files(cert: Certificate, where: Locator, regenerated: dict[str, bytes], scratch: Path) -> list[Path]:
    """The certificate's Lean files: on disk (inside the root), or as regenerated when nobody kept one."""
    files = []
    for inp in cert.inputs:
        if inp.role != "lean":
            continue
        if inp.path in regenerated:
            path = scratch / Path(inp.path).name
            path.write_bytes(regenerated[inp.path])
        else:
            path = where.locate(inp)
            if not path.is_file() and inp.derived_from:
                continue  # it did not regenerate to its hash: already a failure, nothing to check
        files.append(path)
    return files


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


def rebuild(cert: Certificate, where: Locator, library: Path, regenerated: dict[str, bytes],
            backend: str | None, timeout: float, progress: Callable[[str], None] = lambda _m: None,
            notes: list[str] | None = None) -> list[Rejection]:
    """The rejections; ``notes`` gets one line saying whether Lean ran now or the build cache answered."""
    chosen = resolve(backend)
    # a name the library does not declare is already rejected offline; Lean is asked only about the rest
    known = [t for t in cert.theorems if t in library_signatures(library)]
    with tempfile.TemporaryDirectory(prefix="pycert-verify-") as scratch:  # the audit reads the sources too
        files = _kernel_files(cert, where, regenerated, Path(scratch))
        probe = Path(scratch) / "probe" / f"{STATEMENTS_MODULE}.lean"
        probe.parent.mkdir()
        probe.write_text(probe_source(known), encoding="utf-8")
        progress(f"{cert.id}: rebuilding the library and {len(files)} instance file(s)")
        res = build.build(library=library, files=[*files, probe], backend=chosen, timeout=timeout,
                          progress=lambda m: progress("  " + m))
        failures = [Rejection.mismatch(f"kernel[{r.module}]", "Lean accepts the file", f"{r.status}: " + (
                    r.failures[0].render() if r.failures else (r.detail or r.status))) for r in res.results if not r.ok]
        if not res.ok:
            return failures
        progress(f"{cert.id}: axiom audit")
        report = audit_build(res, chosen, library, digests=known, timeout=timeout)
    failures += audit_rejections(cert.audit, certificate_audit(report, cert.theorems))
    if notes is not None:
        notes.append(kernel_note(res.results))
    return failures + statement_rejections(cert, report.type_sha256, printed_statements(res, known))


def kernel_note(results: list[CheckResult]) -> str:
    """Whether Lean checked the files in this run or the build cache answered for some."""
    if note := cache_note(results):
        return f"kernel: {note}; verify --kernel --fresh runs Lean on every one"
    return f"kernel: Lean checked all {len(results)} files in this run"
