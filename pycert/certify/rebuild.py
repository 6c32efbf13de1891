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
from pycert.core.console import plural
from pycert.core.errors import Rejected, Rejection
from pycert.core.schema import Certificate
from pycert.families import FAMILIES
from pycert.lean import build
from pycert.lean.diagnostics import CheckResult
from pycert.lean.resolve import resolve
from pycert.lean.scheduler import cache_note
from pycert.lean.sources import library_modules, library_signatures


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


def rebuild_all(items: list[tuple[Certificate, dict[str, bytes] | None]], library: Path, backend: str | None, timeout: float,
                progress: Callable[[str], None] = lambda _m: None) -> list[tuple[list[Rejection], str]]:
    """The kernel, the audit of every declaration built and the figures read off each rebuilt headline,
    for every certificate at once: one build of the library, every regenerated instance and one
    ``#check`` probe of the library theorems they name, and one read of the compiled files. Each
    instance is the bytes verify regenerated from the primary inputs, written here under the module name
    the family derives, so no code and no module name can come from a certificate's directory. Returns,
    per certificate, its rejections and a note saying whether Lean ran now or the build cache answered.
    (Two certificates whose Lean files share a module name with other bytes go to separate builds; the
    certificates of a curve, which name the same file, share one.)"""
    groups: list[list[int]] = []
    modules = [{Path(path).stem: data for path, data in (files or {}).items()} for _, files in items]

    def clash(a: dict[str, bytes], b: dict[str, bytes]) -> bool:
        return any(b[m] != data for m, data in a.items() if m in b)
    for k, mine in enumerate(modules):
        group = next((g for g in groups if all(not clash(modules[m], mine) for m in g)), None)
        if group is None:
            groups.append(group := [])
        group.append(k)
    out: dict[int, tuple[list[Rejection], str]] = {}
    for group in groups:
        for k, result in zip(group, _rebuild_group([items[k] for k in group], library, backend, timeout, progress)):
            out[k] = result
    return [out[k] for k in range(len(items))]


def _modules(files: dict[str, bytes] | None) -> list[str]:
    """The module names of a certificate's derived Lean files (its instance and the shards it imports)."""
    return [Path(path).stem for path in files or {}]


def _instance(cert: Certificate):  # noqa: ANN202
    claim = FAMILIES[cert.family]
    return claim.instance(cert.parameters, claim.primary_inputs(cert.inputs))


def _rebuild_group(items: list[tuple[Certificate, dict[str, bytes] | None]], library: Path, backend: str | None, timeout: float,
                   progress: Callable[[str], None]) -> list[tuple[list[Rejection], str]]:
    chosen = resolve(backend)
    signatures = library_signatures(library)
    # a name the library does not declare is already rejected offline; Lean is asked only about the rest
    known = sorted({t for cert, _ in items for t in cert.theorems if t in signatures})
    instances = [_instance(cert) for cert, _ in items]
    with tempfile.TemporaryDirectory(prefix="pycert-verify-") as scratch:  # the audit reads the sources too
        sources: list[Path] = []
        for _, files in items:
            for module, data in zip(_modules(files), (files or {}).values()):
                if (path := Path(scratch) / f"{module}.lean") not in sources:  # a curve's file: once
                    sources.append(path)
                    path.write_bytes(data)
        probe = Path(scratch) / "probe" / f"{STATEMENTS_MODULE}.lean"
        probe.parent.mkdir()
        probe.write_text(probe_source(known), encoding="utf-8")
        progress(f"rebuilding the library and {', '.join(dict.fromkeys(i.path for i in instances if i)) or 'no instance'}")
        res = build.build(library=library, files=[*sources, probe], backend=chosen, timeout=timeout,
                          progress=lambda m: progress("  " + m))
        note = kernel_note(res.results)
        by_module = res.by_module()
        lib_modules = set(library_modules(library))
        bad = {r.module: Rejection.mismatch(f"kernel[{r.module}]", "Lean accepts the file", f"{r.status}: " + (
               r.failures[0].render() if r.failures else (r.detail or r.status))) for r in res.results if not r.ok}
        if bad:  # each certificate by what it rests on: the library, the probe and its own instance
            return [([v for m, v in bad.items() if m in lib_modules or m == STATEMENTS_MODULE or m in _modules(files)],
                     note) for _, files in items]
        progress("axiom audit of every declaration built")
        heads = [inst.headline for inst in instances if inst is not None]
        report = audit_build(res, chosen, library, digests=[*known, *heads], headlines=heads, timeout=timeout)
    printed = printed_statements(res, known)
    out = []
    for (cert, files), inst in zip(items, instances):
        own = lib_modules | set(_modules(files))
        failures = [Rejection(subject=f.subject, reason=f.reason, detail=f"{f.module}: {f.detail} ({f.constant})")
                    for f in report.findings if f.module in own]
        failures += audit_rejections(cert.audit, certificate_audit(report, cert.theorems))
        mine = {**printed, **(printed_headline(by_module[inst.module], inst.headline) if inst else {})}
        failures += statement_rejections(cert, report.type_sha256, mine)
        if inst is not None:
            failures += _kernel_figures(cert, inst, report.headlines.get(inst.headline))
        out.append((failures, note))
    return out


def _kernel_figures(cert: Certificate, inst, stated) -> list[Rejection]:  # noqa: ANN001
    claim = FAMILIES[cert.family]
    predicate = claim.predicate(cert.parameters)
    if stated is None or stated.head != predicate:
        return [Rejection.mismatch(f"{inst.headline} (rebuilt)", f"a theorem stating {predicate}",
                                   stated.head if stated else "no such theorem built")]
    try:
        return kernel_rejections(cert, claim.kernel_figures(stated.literals, inst.headline, cert.parameters))
    except Rejected as err:
        return [err.rejection]


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
    return f"kernel: Lean checked {'all ' if len(results) > 1 else ''}{plural(len(results), 'file')} in this run"
