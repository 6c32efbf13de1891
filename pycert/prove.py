"""``pycert prove``: the whole pipeline, from data to published certificates, as a list of stages.

:func:`stages`, in order: each family's producer prepares its instance data and Lean instance files
(the pooling producer runs its solvers and their independent checks here); one build compiles the
library, every instance file and the statement probe (``#check`` of every named theorem) in one
dependency graph; the audit reads the compiled files once, for the axioms and the type digests; the
statements are pinned; the certificates are assembled and published. Each stage reads and writes one
explicit :class:`Run`. A rejecting stage makes the run fail (exit 1), but later stages still run where
they can, so one run reports every problem at once.

Everything a run emits goes to a staging directory beside ``--out``; only the files of certificates
that hold are moved into ``--out``, with the certificates and the manifest, in one batch of renames
(:func:`pycert.core.files.publish_files`). A failure or Ctrl-C leaves the old output or the new one.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Literal, TypeVar

from pydantic import BaseModel

from pycert.audit.axioms import AuditReport, audit_build, library_preload
from pycert.audit.graph import Environment
from pycert.audit.per_theorem import certificate_audit
from pycert.audit.statements import STATEMENTS_MODULE, printed_headline, printed_statements, probe_source
from pycert.certify.assemble import assemble
from pycert.certify.manifest import MANIFEST_NAME, certificate_files
from pycert.certify.provenance import certificate_provenance, collect, write_run_record
from pycert.core.console import plural
from pycert.core.errors import InputError, Rejected, Rejection
from pycert.core.files import publish_files
from pycert.core.gate import confined, entries
from pycert.core.memo import code_sha256, memo, session
from pycert.core.resources import default_certificate_dir, library_dir
from pycert.core.schema import AuditInfo, BackendInfo, Certificate, TheoremStatement, declared_inputs
from pycert.families.base import Options, Prepared, Producer, Progress, Setting
from pycert.lean import batch as batching
from pycert.lean import build, daemon
from pycert.lean.backend import Backend
from pycert.lean.diagnostics import DID_NOT_RUN
from pycert.lean.resolve import resolve
from pycert.lean.sources import library_modules, library_signatures, theorem_signatures

StageStatus = Literal["ok", "rejected", "resources", "skipped"]
T = TypeVar("T")
WRITTEN_DIRS = ("lean", "lean/derived", "inputs", "runs", MANIFEST_NAME)
"""Where prove writes in ``--out`` (besides the certificates): none of them may be a symbolic link."""


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

    out_dir: Path
    stage_dir: Path
    jobs: list[tuple[Producer, Options]]
    backend: Backend
    progress: Progress
    timeout: float = build.DEFAULT_TIMEOUT
    prepared: list[Prepared] = field(default_factory=list)
    built: build.BuildResult | None = None
    audit: AuditReport | None = None
    statements: dict[str, TheoremStatement] = field(default_factory=dict)
    preloaded: Future[Environment | None] | None = None
    """The audit's read of the library, started with the kernel stage (:func:`pycert.audit.axioms.preload`)."""
    written: list[str] = field(default_factory=list)
    unchecked: dict[str, str] = field(default_factory=dict)
    """Certificate id -> why its check did not run to its end: it is neither written nor rejected."""

    def setting(self, options: Options) -> Setting:
        return Setting(out_dir=self.out_dir, stage=self.stage_dir, options=options,
                       progress=lambda m: self.progress("  " + m), backend=self.backend.kind, timeout=self.timeout)

    def say(self, message: str) -> None:
        self.progress(message)

    def reject(self, p: Prepared, subject: str, reason: str, detail: str) -> None:
        if p.rejection is None:
            p.rejection = Rejection(subject=subject, reason=reason, detail=detail)

    def library_theorems(self) -> list[str]:
        return sorted({t for p in self.prepared for t in p.claim.library_theorems(p.parameters)})

    def headlines(self) -> list[str]:
        return [p.instance.headline for p in self.prepared if p.instance is not None and p.id not in self.unchecked]


StageFn = Callable[[Run], tuple[StageStatus, str]]


# ---------------------------------------------------------------------------- the stages


def prepare(producer: Producer, options: Options) -> StageFn:
    def stage(run: Run) -> tuple[StageStatus, str]:
        ready = producer.prepare(run.setting(options))
        run.prepared += ready
        bad = [p for p in ready if p.rejection]
        if bad:
            return "rejected", "; ".join(p.rejection.render() for p in bad)
        return "ok", ", ".join(p.headline for p in ready)
    return stage


def kernel(run: Run) -> tuple[StageStatus, str]:
    """One build: the library, every instance file and the statement probe, in one dependency graph."""
    run.unchecked.update({p.id: p.unchecked for p in run.prepared if p.unchecked})
    # a module may state several certificates' headlines (a curve's capacities, a dataset's rows): built once
    files = list(dict.fromkeys(f for p in run.prepared if p.lean_file is not None for f in [*p.parts, p.lean_file]))
    probe = run.stage_dir / ".probe" / f"{STATEMENTS_MODULE}.lean"
    probe.parent.mkdir(parents=True, exist_ok=True)
    probe.write_text(probe_source(run.library_theorems()), encoding="utf-8")
    # the audit reads the library (most of its 2 s) while Lean checks the instances: a warm checker's jobs
    # leave a core free for it
    run.preloaded = in_background(library_preload, run.backend, library_dir())
    res = build.build(library=library_dir(), files=[*files, probe], backend=run.backend, timeout=run.timeout,
                      batch=True, daemon=daemon.enabled(), progress=lambda m: run.say("  " + m))
    run.built = res
    by_file = {Path(r.file).resolve(): r for r in res.results}
    for p in run.prepared:
        if p.lean_file is None:
            if p.instance is not None and p.id not in run.unchecked:
                run.reject(p, p.id, "kernel", f"kernel: {p.instance.path} was not written")
            continue
        for f in [*p.parts, p.lean_file]:
            r = by_file.get(f.resolve())
            if r is not None and r.status in DID_NOT_RUN:
                run.unchecked.setdefault(p.id, f"{p.id} was not checked: {r.detail}")
            elif r is None or not r.ok:
                run.reject(p, f.name, "kernel", f"kernel: {f.name} {r.status if r else 'not checked'}")
    if bad := [r for r in res.results if not r.ok]:
        status = "resources" if all(r.status in DID_NOT_RUN for r in bad) else "rejected"
        return status, "; ".join(f"{r.module}: {r.status}" + (f" ({r.cause})" if r.cause else "") for r in bad)
    return "ok", (f"{plural(len(res.results), 'module')} ({sum(r.cached for r in res.results)} cached), "
                  f"{plural(len(files), 'instance file')}")


def olean_sha256(built: build.BuildResult) -> str:
    """sha256 of every compiled file of a build, by path: what the audit reads besides the toolchain."""
    h = hashlib.sha256()
    for path in sorted(Path(built.olean_dir).rglob("*")):
        if path.is_file():
            h.update(f"{path.relative_to(built.olean_dir)}\n".encode())
            h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def audit(run: Run) -> tuple[StageStatus, str]:
    """The axioms of every declaration built, and the type digest of every named theorem, from one read
    of the compiled files (kept by the files' content, the toolchain and the audit's code)."""
    if run.built is None or not any(r.ok for r in run.built.results):
        return "skipped", "the kernel accepted no file"
    # What the kernel accepted is audited even when another file was refused or its check did not run,
    # so that each certificate is judged on its own evidence.
    built = run.built.model_copy(update={"results": [r for r in run.built.results if r.ok], "ok": True})
    accepted = {r.module for r in built.results}
    headlines = [p.instance.headline for p in run.prepared if p.instance is not None and p.instance.module in accepted]
    names = run.library_theorems() + headlines
    key = [olean_sha256(built), run.backend.info().model_dump_json(), code_sha256("pycert.audit", "pycert.lean"),
           "\n".join(names)]
    report, kept = memo("audit", key, AuditReport,
                        lambda: audit_build(built, run.backend, library_dir(), digests=names, headlines=headlines,
                                            preloaded=_preloaded(run)))
    run.audit = report
    library = set(library_modules(library_dir()))
    by_module = run.built.by_module()
    for p in run.prepared:  # each certificate by what it rests on: the library and its own instance
        own = {p.instance.module, *(f.stem for f in p.parts)} if p.instance is not None else set()
        homes = {r.compiled_as for m in own if (r := by_module.get(m)) is not None and r.compiled_as}
        if found := [f for f in report.findings if f.module in library or f.module in own
                     or f.module in homes and batching.member_of(f.subject) in (own | {None})]:
            run.reject(p, p.id, "audit", "; ".join(f"{f.subject}: {f.reason} ({f.constant})" for f in found[:3]))
    return ("ok" if report.ok else "rejected"), report.summary() + (" (kept: same compiled files)" if kept else "")


def in_background(fn: Callable[..., T], *args: object) -> Future[T]:
    """``fn(*args)`` on a daemon thread (Ctrl-C does not wait for it), its result or error in the future."""
    fut: Future[T] = Future()

    def work() -> None:
        try:
            fut.set_result(fn(*args))
        except BaseException as exc:  # noqa: BLE001 - handed to whoever asks for the result
            fut.set_exception(exc)

    threading.Thread(target=work, daemon=True, name=getattr(fn, "__name__", "background")).start()
    return fut


def _preloaded(run: Run) -> Environment | None:
    """The library's read, if it was made: one that failed is set aside (the audit reads the files itself and
    says what is wrong with them)."""
    try:
        return run.preloaded.result() if run.preloaded is not None else None
    except Exception:  # noqa: BLE001 - the audit's own read reports it
        return None


def figures(run: Run) -> tuple[StageStatus, str]:
    """Every certificate's figures off its headline's kernel type; pycert's own engines are a cross-check,
    and where they differ the kernel has caught a defect in an engine: the claim is not written."""
    if run.audit is None:
        return "skipped", "the audit did not run"
    caught = []
    for p in run.prepared:
        if p.id in run.unchecked or p.rejection is not None and p.rejection.reason in ("kernel", "audit"):
            continue  # no kernel answer to read (a claim another check refused is still compared: see below)
        try:
            kernel_figures: dict[str, int] = {}
            if p.instance is not None:
                name = p.instance.headline
                stated = run.audit.headlines.get(name)
                predicate = p.claim.predicate(p.parameters)
                if stated is None or stated.head != predicate:
                    raise Rejected(Rejection.mismatch(name, f"a theorem stating {predicate}",
                                                      stated.head if stated else "no such theorem built"))
                kernel_figures = p.claim.kernel_figures(stated.literals, name, p.parameters)
            p.figures = p.claim.figures(p.parameters, kernel_figures, p.inputs, p)
        except Rejected as err:
            run.reject(p, err.rejection.subject, err.rejection.reason, err.rejection.render())
            continue
        if disagree := p.claim.disagreements(p.figures, p.engine):
            caught += [f"{p.id}: {d.render()}" for d in disagree]
            run.reject(p, p.id, "engine-disagrees", "; ".join(d.render() for d in disagree))
    if caught:
        return "rejected", "the kernel caught an engine defect: " + "; ".join(caught)
    if any(p.rejection is not None for p in run.prepared):
        held = sum(p.rejection is None for p in run.prepared)
        return "rejected", f"{held} of {plural(len(run.prepared), 'certificate')} {'holds' if held == 1 else 'hold'}"
    return "ok", f"{plural(len(run.prepared), 'certificate')}, figures from their headlines"


def pin_statements(run: Run) -> tuple[StageStatus, str]:
    """Every named theorem's source signature, printed statement (from the probe the build ran, and each
    instance's own ``#check`` of its headline) and type digest (from the audit's read)."""
    if run.built is None or run.audit is None:
        return "skipped", "the kernel or the audit did not run"
    names = run.library_theorems() + run.headlines()
    signatures = library_signatures(library_dir())
    printed = printed_statements(run.built, run.library_theorems())
    read: set[Path] = set()
    for p in run.prepared:
        if p.lean_file is not None and p.instance is not None:
            if p.lean_file not in read:  # once per file: a curve's certificates share one
                read.add(p.lean_file)
                signatures.update(theorem_signatures(p.lean_file.read_text(encoding="utf-8")))
            if r := run.built.by_module().get(p.instance.module):
                printed.update(printed_headline(r, p.instance.headline))
    digests = run.audit.type_sha256
    run.statements = {n: TheoremStatement(signature=signatures[n], statement=printed[n], type_sha256=digests[n])
                      for n in names if n in signatures and n in printed and n in digests}
    missing = [n for n in names if n not in run.statements]
    for p in run.prepared:
        if lost := [t for t in p.claim.theorems(p.parameters, p.inputs) if t in missing]:
            run.reject(p, p.id, "statements", f"no pinned statement for {', '.join(lost)}")
    return ("rejected", f"not pinned: {', '.join(missing)}") if missing else ("ok", plural(len(names), "theorem"))


def replaced_parts(certs: list[Certificate], out_dir: Path) -> list[Path]:
    """The Lean files derived from a trace that an earlier certificate of the same id in ``out_dir``
    names and its replacement does not (a trace re-proved in fewer pieces or shards): left behind, they
    would look like part of the new certificate. A file another certificate of ``out_dir`` still names
    stays (the capacities of a curve share one). Only plain ``lean/…/*.lean`` paths are taken from the
    old file, which may be anyone's."""
    out = []
    keep = {i.path for cert in certs for i in cert.inputs}
    replaced = {cert.filename for cert in certs}
    for other in (e.name for e in (entries(out_dir, ".json") if out_dir.is_dir() else []) if e.name not in replaced):
        keep |= {str(i.get("path")) for i in declared_inputs(out_dir / other) or []}
    for cert in certs:
        for old in declared_inputs(out_dir / cert.filename) or []:
            path = PurePosixPath(old["path"])
            if (old.get("role") == "lean" and old.get("derived_from") and old["path"] not in keep
                    and not path.is_absolute() and ".." not in path.parts and path.parts[0] == "lean"
                    and path.suffix == ".lean"):
                out.append(out_dir / path)
    return out


def write(run: Run) -> tuple[StageStatus, str]:
    """Assemble every certificate that holds and publish it, with the files it names, in one batch."""
    backend = BackendInfo.from_toolchain(run.backend.info())
    provenance = certificate_provenance()
    holding = [p for p in run.prepared if p.rejection is None and p.id not in run.unchecked]
    certs = [assemble(p, backend, audit_of(run.audit, p), run.statements, provenance) for p in holding]
    if bad := [c.id for c in certs if c.audit.verdict != "pass"]:
        return "rejected", f"the audit of their own theorems did not pass: {', '.join(bad)}"
    if not certs:
        return "skipped", "no certificate holds"
    emitted = {run.stage_dir / i.path: confined(run.out_dir, run.out_dir / i.path) for p in holding
               for i in p.inputs if not i.external and (run.stage_dir / i.path).is_file()}
    stale = [confined(run.out_dir, path) for path in replaced_parts(certs, run.out_dir)]
    publish_files(emitted, {confined(run.out_dir, path): data for path, data in certificate_files(certs, run.out_dir).items()})
    for path in stale:  # after the batch: an interruption in between leaves a file no certificate names
        path.unlink(missing_ok=True)
    run.written += [str(run.out_dir / c.filename) for c in certs]
    return "ok", f"{len(certs)} written to {run.out_dir}"


def audit_of(report: AuditReport | None, p: Prepared) -> AuditInfo:
    if report is None:
        return AuditInfo(verdict="skipped", detail="the kernel did not accept every file")
    return certificate_audit(report, p.derived().theorems)


def stages(jobs: list[tuple[Producer, Options]]) -> list[tuple[str, StageFn]]:
    """The stages of a run over ``jobs`` (a producer and its options each), in order."""
    return [*((f"instances: {p.claim.name}", prepare(p, o)) for p, o in jobs), ("kernel", kernel),
            ("axiom audit", audit), ("figures", figures), ("statements", pin_statements), ("certificates", write)]


# ---------------------------------------------------------------------------- a check without certificates


class Checked(BaseModel):
    """The kernel and the audit on standalone files: what a run's kernel and audit stages say of them."""

    ok: bool
    backend: str
    seconds: float
    detail: str = ""


def check(files: list[Path], backend: str | Backend | None = None, progress: Progress = lambda _m: None) -> Checked:
    """The build and the audit of :func:`kernel` and :func:`audit` for ``files`` against the library, for a
    command that checks instance files without writing certificates (``pycert pooling solve --kernel``)."""
    t0 = time.monotonic()
    chosen = resolve(backend)
    res = build.build(library=library_dir(), files=files, backend=chosen, progress=progress)
    if not res.ok:
        bad = [f"{r.module}: " + (r.failures[0].render() if r.failures else (r.detail or r.status))
               for r in res.results if not r.ok]
        return Checked(ok=False, backend=res.backend, seconds=time.monotonic() - t0, detail="; ".join(bad)[:2000])
    report = audit_build(res, chosen, library_dir())
    return Checked(ok=report.ok, backend=res.backend, seconds=time.monotonic() - t0,
                   detail="" if report.ok else report.summary())


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


def prove(jobs: list[tuple[Producer, Options]], *, backend: str | None = None, out_dir: Path | None = None,
          timeout: float = build.DEFAULT_TIMEOUT, progress: Progress = lambda _m: None) -> ProveResult:
    """Run ``jobs`` (each a family's producer with its options) into ``out_dir`` (default
    :func:`default_certificate_dir`). Inputs are named relative to ``out_dir`` itself, where the emitted
    instance files, the embedded default trace and the shipped pooling instance go (``lean/``,
    ``inputs/``); a trace from elsewhere is an external input, named by its file name."""
    out = (out_dir or default_certificate_dir()).resolve()
    if out.exists() and not out.is_dir():
        raise InputError("is not a directory: --out names the certificate directory", where=str(out))
    for rel in WRITTEN_DIRS:  # before anything runs: a received --out may have a link where prove writes
        confined(out, out / rel)
    chosen = resolve(backend)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        stage_dir = Path(tempfile.mkdtemp(prefix=f".{out.name}.stage-", dir=out.parent))
    except OSError as exc:
        raise InputError(f"cannot write beside the certificate directory: {exc.strerror or exc}",
                         where=str(out.parent)) from None
    run = Run(out_dir=out, stage_dir=stage_dir, jobs=jobs, backend=chosen, progress=progress, timeout=timeout)
    record = collect()
    try:
        for producer, options in jobs:
            producer.check(run.setting(options))
        with session():  # what several certificates derive alike (a curve's instance file) is computed once
            done = run_stages(run, stages(jobs))
    finally:  # Ctrl-C too: nothing of a run that did not publish is left
        shutil.rmtree(stage_dir, ignore_errors=True)
    record.written, record.stages = run.written, [s.model_dump() for s in done]
    write_run_record(record, out)
    rows = [Row(certificate=p.id, figure=p.headline, status="rejected", claim=p.rejection.render()) if p.rejection else
            Row(certificate=p.id, figure=p.headline, status="not checked", claim=run.unchecked[p.id])
            if p.id in run.unchecked else
            Row(certificate=p.id, figure=p.headline, status="holds", claim=p.derived().claim) for p in run.prepared]
    rejected = any(s.status == "rejected" for s in done) or any(p.rejection for p in run.prepared)
    return ProveResult(ok=not rejected and not run.unchecked, stages=done, rows=rows, written=run.written,
                       rejected=rejected, unchecked=list(run.unchecked.values()))
