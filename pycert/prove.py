"""``pycert prove``: the whole pipeline, from data to written certificates, as a list of stages.

:data:`STAGES`, in order: build the Lean library; each family prepares its instance data and Lean
instance files (the pooling family runs its solvers and their independent checks here); the kernel
checks every instance file in one batch (library modules come from the cache); the audit reads what
the kernel accepted; the certificates and the manifest are written atomically. Each stage reads and
writes one explicit :class:`Run`. A rejecting stage makes the run fail (exit 1), but later stages
still run where they can, so one run reports every problem at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

from pycert.certify.documents import certificate
from pycert.certify.manifest import write_certificates
from pycert.certify.provenance import certificate_provenance, collect, write_run_record
from pycert.certify.schema import AuditInfo, BackendInfo, Certificate, Figure, Provenance, TheoremStatement
from pycert.core.errors import InputError, Rejection
from pycert.core.resources import default_certificate_dir, library_dir
from pycert.families import FAMILIES
from pycert.families.base import Family, Prepared, Progress, Setting
from pycert.lean import build
from pycert.lean.backend import Backend, resolve

if TYPE_CHECKING:
    from pycert.audit.axioms import AuditReport

StageStatus = Literal["ok", "rejected", "resources", "skipped"]


class Stage(BaseModel):
    name: str
    status: StageStatus
    seconds: float
    detail: str = ""


class Row(BaseModel):
    certificate: str
    claim: str
    figure: str
    status: Literal["holds", "rejected", "not checked"]


class ProveResult(BaseModel):
    ok: bool
    stages: list[Stage]
    rows: list[Row]
    written: list[str]
    rejected: bool = False
    """A checker refused something (exit 1)."""
    unchecked: list[str] = []
    """Why each claim whose check did not run to its end (out of memory, killed, timed out) was neither
    written nor rejected (exit 3 when nothing was rejected)."""


@dataclass
class Run:
    """Everything the stages share: what was asked, and what each stage has produced so far."""

    setting: Setting
    backend: Backend
    timeout: float = build.DEFAULT_TIMEOUT
    prepared: list[Prepared] = field(default_factory=list)
    library: build.BuildResult | None = None
    instances: build.BuildResult | None = None
    audit: AuditReport | None = None
    statements: dict[str, TheoremStatement] = field(default_factory=dict)
    written: list[str] = field(default_factory=list)
    unchecked: dict[str, str] = field(default_factory=dict)
    """Certificate id -> why its check did not run to its end: it is neither written nor rejected."""

    @property
    def out_dir(self) -> Path:
        return self.setting.out_dir

    def say(self, message: str) -> None:
        self.setting.progress(message)

    def reject(self, p: Prepared, subject: str, reason: str, detail: str) -> None:
        if p.rejection is None:
            p.rejection = Rejection(subject=subject, reason=reason, detail=detail)


StageFn = Callable[[Run], tuple[StageStatus, str]]


# ---------------------------------------------------------------------------- the stages


def build_library(run: Run) -> tuple[StageStatus, str]:
    res = build.build(library=library_dir(), backend=run.backend, timeout=run.timeout,
                      progress=lambda m: run.say("  " + m))
    run.library = res
    if res.ok:
        return "ok", f"{len(res.results)} modules, {sum(r.cached for r in res.results)} cached"
    return "rejected", "; ".join(f"{r.module}: {r.status}" for r in res.results if not r.ok)


def prepare(family: Family) -> StageFn:
    def stage(run: Run) -> tuple[StageStatus, str]:
        ready = family.prepare(run.setting)
        run.prepared += ready
        bad = [p for p in ready if p.rejection]
        if bad:
            return "rejected", "; ".join(p.rejection.render() for p in bad)
        return "ok", ", ".join(p.headline for p in ready)
    return stage


def check_instances(run: Run) -> tuple[StageStatus, str]:
    run.unchecked.update({p.id: p.unchecked for p in run.prepared if p.unchecked})
    files = [f for p in run.prepared for f in p.lean_files]
    if not files:
        return "skipped", "no instance files"
    res = build.build(library=library_dir(), files=files, backend=run.backend, timeout=run.timeout,
                      progress=lambda m: run.say("  " + m))
    run.instances = res
    by_file = {Path(r.file).resolve(): r for r in res.results}
    for p in run.prepared:
        for f in p.lean_files:
            r = by_file.get(f.resolve())
            if r is not None and r.status == "resources":
                run.unchecked.setdefault(p.id, f"{p.id} was not checked: {r.detail}")
            elif r is None or not r.ok:
                run.reject(p, f.name, "kernel", f"kernel: {f.name} {r.status if r else 'not checked'}")
    bad = [r for r in res.results if not r.ok]
    if bad:
        status = "resources" if all(r.status == "resources" for r in bad) else "rejected"
        return status, "; ".join(f"{Path(r.file).name}: {r.status}" + (f" ({r.cause})" if r.cause else "") for r in bad)
    return "ok", f"{len(files)} files"


def audit(run: Run) -> tuple[StageStatus, str]:
    from pycert.audit.axioms import audit_build

    res = run.instances or run.library
    if res is None or not any(r.ok for r in res.results):
        return "skipped", "kernel check failed"
    # What the kernel accepted is audited even when another file's check failed or did not run, so that
    # each certificate is judged on its own evidence.
    accepted = res.model_copy(update={"results": [r for r in res.results if r.ok], "ok": True})
    report = audit_build(accepted, run.backend, library_dir())
    run.audit = report
    if not report.ok:
        for p in run.prepared:
            run.reject(p, p.id, "audit", "audit failed")
    return ("ok" if report.ok else "rejected"), report.summary()


def pin_statements(run: Run) -> tuple[StageStatus, str]:
    """Every named theorem's source signature, printed statement and type digest (one Lean run)."""
    from pycert.lean.statements import pin

    if run.library is None or not run.library.ok:
        return "skipped", "the library did not build"
    names = sorted({t for p in run.prepared for t in p.derived().theorems})
    run.statements = pin(library_dir(), Path(run.library.olean_dir), [r.module for r in run.library.results],
                         names, run.backend)
    missing = [n for n in names if n not in run.statements]
    for p in run.prepared:
        if lost := [t for t in p.derived().theorems if t in missing]:
            run.reject(p, p.id, "statements", f"no pinned statement for {', '.join(lost)}")
    return ("rejected", f"not pinned: {', '.join(missing)}") if missing else ("ok", f"{len(names)} theorems")


def write(run: Run) -> tuple[StageStatus, str]:
    backend = BackendInfo.from_toolchain(run.backend.info())
    provenance = certificate_provenance()
    certs = [to_certificate(p, backend, run.audit, run.statements, provenance)
             for p in run.prepared if p.rejection is None and p.id not in run.unchecked]
    bad = [c.id for c in certs if c.audit.verdict != "pass"]
    if bad:
        return "rejected", f"the audit of their own theorems did not pass: {', '.join(bad)}"
    write_certificates(certs, run.out_dir)
    run.written += [str(run.out_dir / c.filename) for c in certs]
    return "ok", f"{len(certs)} written to {run.out_dir}"


def to_certificate(p: Prepared, backend: BackendInfo, report: AuditReport | None,
                   statements: dict[str, TheoremStatement], provenance: Provenance) -> Certificate:
    """Everything the certificate says about itself is derived (:meth:`Family.derive`), so verify can
    derive it again and compare."""
    from pycert.audit.per_theorem import certificate_audit

    d = p.derived()
    audit = (certificate_audit(report, d.theorems) if report is not None
             else AuditInfo(verdict="skipped", detail="the kernel did not accept every file"))
    return certificate(
        id=p.id, family=p.family.name, claim=d.claim, theorems=list(d.theorems),
        statements={t: statements[t] for t in d.theorems}, parameters=p.parameters,
        inputs=p.inputs, figures=[Figure.of(v, name=k, known_by=d.known_by[k], evidence=d.evidence[k])
                                      for k, v in p.figures.items()],
        backend=backend, solver=p.solver, audit=audit, provenance=provenance, does_not_prove=list(d.does_not_prove),
    )


def stages(families: list[Family]) -> list[tuple[str, StageFn]]:
    """The stages of a run over ``families``, in order."""
    return [("lean library", build_library), *((f"instances: {f.name}", prepare(f)) for f in families),
            ("kernel check", check_instances), ("axiom audit", audit), ("statements", pin_statements),
            ("certificates", write)]


# ---------------------------------------------------------------------------- the run


def run_stages(run: Run, steps: list[tuple[str, StageFn]]) -> list[Stage]:
    done = []
    for name, fn in steps:
        run.say(f"{name} ...")
        t0 = time.monotonic()
        status, detail = fn(run)
        done.append(Stage(name=name, status=status, seconds=round(time.monotonic() - t0, 1), detail=detail))
        run.say(f"{name}: {status}" + (f" ({detail})" if detail else ""))
    return done


EMITTED = ("inputs", "lean")
"""The folders under ``--out`` that families emit into (certificates and the manifest are written whole
at the end, by :func:`write`, only when they hold)."""


def files_under(directory: Path) -> set[Path]:
    """Every file and folder of the emitted folders under ``directory`` (not the rest: ``--out`` may be a
    big working directory), and those folders themselves."""
    found: set[Path] = set()
    for sub in EMITTED:
        if (directory / sub).is_dir():
            found |= {directory / sub, *(directory / sub).rglob("*")}
    return found


def kept(run: Run) -> set[Path]:
    """What a run leaves in the emitted folders: the files its written certificates name."""
    written = {Path(w).name for w in run.written}
    return {run.out_dir / i.path for p in run.prepared if f"{p.id}.json" in written for i in p.inputs if not i.external}


def sweep(out: Path, before: set[Path], keep: set[Path]) -> None:
    """Remove what this run emitted under ``out`` that no written certificate names (the instance files
    of a rejected claim), and the folders it made that are left empty: a failed run adds only its record."""
    made = files_under(out) - before
    for path in sorted(p for p in made - {k.resolve() for k in keep} if p.is_file()):
        path.unlink(missing_ok=True)
    for d in sorted((d for d in made if d.is_dir()), key=lambda d: len(d.parts), reverse=True):
        if not any(d.iterdir()):
            d.rmdir()


def prove(families: list[str], traces: list[Path], *, backend: str | None = None, out_dir: Path | None = None,
          timeout: float = build.DEFAULT_TIMEOUT, shard_refs: int | None = None, ray_address: str | None = None,
          progress: Progress = lambda _m: None) -> ProveResult:
    """Prove ``families`` into ``out_dir`` (default :func:`default_certificate_dir`). Inputs are named
    relative to ``out_dir`` itself (:func:`certificate_root`), where the emitted instance files, the
    embedded default trace and the shipped pooling instance go (``lean/``, ``inputs/``); a trace from
    elsewhere is an external input, named by its file name."""
    for name in families:
        if name not in FAMILIES:
            raise InputError(f"unknown family {name!r}: expected one of {', '.join(FAMILIES)} or all")
    for t in traces:
        if not t.is_file():
            raise InputError("no such trace file", where=str(t))
    chosen = [FAMILIES[name] for name in FAMILIES if name in families]
    out = (out_dir or default_certificate_dir()).resolve()
    if out.exists() and not out.is_dir():
        raise InputError("is not a directory: --out names the certificate directory", where=str(out))
    setting = Setting(out_dir=out, traces=tuple(traces), progress=progress, backend=backend, timeout=timeout,
                      shard_refs=shard_refs, ray_address=ray_address)
    for family in chosen:
        family.check_setting(setting)
    run = Run(setting=setting, backend=resolve(backend), timeout=timeout)
    record = collect()
    before = files_under(out)
    try:
        done = run_stages(run, stages(chosen))
    finally:  # Ctrl-C too
        sweep(out, before, keep=kept(run))
    record.written, record.stages = run.written, [s.model_dump() for s in done]
    write_run_record(record, run.out_dir)
    rows = [Row(certificate=p.id, claim=p.derived().claim, figure=p.headline,
                status="rejected" if p.rejection else "not checked" if p.id in run.unchecked else "holds")
            for p in run.prepared]
    rejected = any(s.status == "rejected" for s in done) or any(p.rejection for p in run.prepared)
    return ProveResult(ok=not rejected and not run.unchecked, stages=done, rows=rows, written=run.written,
                       rejected=rejected, unchecked=list(run.unchecked.values()))
