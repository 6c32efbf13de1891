"""Run the campaign: plan every operator's mutants, apply each to a scratch copy, run its checker,
and score the answers. The real tree is only ever read; everything is written under one scratch
directory that is removed at the end (an interrupted run leaves at most that directory behind).
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

from mutation import operators as ops
from mutation.lean_batch import Located, apply_library_edits, compose, kernel_verdict
from mutation.report import CampaignReport, Outcome
from pycert.audit import axioms as au
from pycert.lean import build as kernel
from pycert.lean import wasm as tc
from pycert.core.errors import InputError, PycertError

COPIED = ("lean", "certificates", "solvers/instances")
INSTANCE_HEADER = "import Pycert.PackedTrace\nimport Pycert.Ceiling\nimport Pycert.Pooling\n"
PAGE_TIMEOUT_S = 60.0


class Context:
    """What the operators' checks need: the real root (read only), a fresh scratch copy per mutant
    (``repo``), and the solver results every solver mutant starts from (computed once)."""

    def __init__(self, root: Path, scratch: Path) -> None:
        self.root = root
        self.scratch = scratch
        self.base = scratch / "base"
        for rel in COPIED:
            shutil.copytree(root / rel, self.base / rel)
        self.repo = self.base
        self._memo: dict[str, Any] = {}

    def fresh(self, mid: str) -> None:
        self.repo = self.scratch / "mutants" / re.sub(r"[^A-Za-z0-9_.-]", "_", mid)
        shutil.copytree(self.base, self.repo)

    def _once(self, key: str, make: Callable[[], Any]) -> Any:
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]

    # -- data the operators start from
    def window(self) -> tuple[list[int], str]:
        from pycert.data.traces import read_trace

        def make() -> tuple[list[int], str]:
            t = read_trace(self.root / ops.TRACE_INPUT)
            refs = [int(x) for x in t.refs[: 4 * ops.WINDOW]]
            # the first window of at least WINDOW references that ends on a repeat (room for a new block)
            w = next(k for k in range(ops.WINDOW, len(refs)) if refs.index(refs[k - 1]) < k - 1)
            return refs[:w], t.sha256
        return self._once("window", make)

    def instance(self) -> Any:
        from solvers.instance import load_instance

        return self._once("instance", lambda: load_instance(self.root / "solvers" / "instances" / "committed.json"))

    def pooled(self) -> Any:
        from solvers.model import SolverParams
        from solvers.pipeline import solve_paging
        from solvers.pooled import Cache

        inst = self.instance()
        return self._once("pooled", lambda: solve_paging(
            "pooled", [Cache("pool", tuple(inst.trace), inst.pool_capacity)], SolverParams()))

    def family_schedule(self) -> tuple[list[int], int, list[frozenset[int]]]:
        from solvers.instance import capacitated_family
        from solvers.model import SolverParams, solve_cpsat
        from solvers.pooled import Cache, paging_model, schedules
        from solvers.replay import replay_schedule

        def make() -> tuple[list[int], int, list[frozenset[int]]]:
            case = capacitated_family()[0]
            pm = paging_model([Cache(case.name, tuple(case.refs), case.capacity)], name=case.name)
            sched = schedules(pm, solve_cpsat(pm.model, SolverParams()).values)[0]
            if not replay_schedule(case.name, case.refs, case.capacity, sched).ok:
                raise RuntimeError("the unmutated optimal schedule does not replay")
            return list(case.refs), case.capacity, list(sched)
        return self._once("family", make)

    # -- the checks
    def paging_expect(self, changes: dict[str, Any], pattern: str, solver: str = "cpsat") -> ops.Verdict:
        out = self.pooled()
        if out.disagreements():
            return "error", f"the unmutated result already disagrees: {out.disagreements()}"
        mutated = out.model_copy(update={solver: getattr(out, solver).model_copy(update=changes)})
        return ops.expect_failure(mutated.disagreements(), pattern, "the solver checks")

    def verify_expect(self, cert: str, field: str) -> ops.Verdict:
        from pycert.certify.verify import verify_certificate

        try:
            res = verify_certificate(self.repo / ops.CERT_DIR / cert, root=self.repo)
        except InputError as exc:  # a missing input is not a rejection of the tampered figure
            return "error", str(exc)
        if res.ok:
            return "survived", "verify passed the tampered certificate"
        hit = next((f for f in res.failures if re.search(field, f.field)), None)
        if hit:
            return "killed", hit.render()
        return "survived", f"rejected, but not on {field}: {res.failures[0].render() if res.failures else res.status}"

    def tamper(self, cert: str, *, flip: bool = False, edit: Callable[[dict], None] | None = None,
               forge: bool = False, field: str) -> ops.Verdict:
        path = self.repo / ops.CERT_DIR / cert
        if flip:
            data = bytearray(path.read_bytes())
            i = next(k for k in range(len(data) // 2, len(data)) if chr(data[k]).isdigit())
            data[i] = ord("0") + (data[i] - ord("0") + 1) % 10
            path.write_bytes(bytes(data))
        if edit:
            doc = json.loads(path.read_text())
            edit(doc)
            path.write_text(json.dumps(doc, indent=2) + "\n")
        if forge:
            self.forge_manifest()
        return self.verify_expect(cert, field)

    def forge_manifest(self) -> None:
        from pycert.certify.schema import MANIFEST_NAME, render_manifest
        from pycert.data.traces import file_sha256

        d = self.repo / ops.CERT_DIR
        (d / MANIFEST_NAME).write_text(render_manifest({p.name: file_sha256(p) for p in sorted(d.glob("*.json"))}))

    def trace_expect(self, transform: Callable[[list[bytes]], list[bytes]]) -> ops.Verdict:
        from pycert.data.traces import read_trace
        from pycert.certify.verify import ceiling_figures

        path = self.repo / ops.TRACE_INPUT
        before = ceiling_figures(read_trace(path))
        path.write_bytes(b"".join(transform(path.read_bytes().splitlines(keepends=True))))
        trace = read_trace(path)
        after = ceiling_figures(trace)
        if after == before:
            return "survived", f"the figures did not change ({_figs(after)})"
        cert = self.repo / ops.CERT_DIR / ops.CEILING_CERT
        doc = json.loads(cert.read_text())
        for i in doc["inputs"]:
            if i["path"] == ops.TRACE_INPUT:
                i["sha256"] = trace.sha256  # forge the hash: only the recomputed figures can object
        cert.write_text(json.dumps(doc, indent=2) + "\n")
        self.forge_manifest()
        status, detail = self.verify_expect(ops.CEILING_CERT, r"^figures")
        return status, f"figures {_figs(before)} -> {_figs(after)}; {detail}"

    def page_expect(self, cert: str, how: str) -> ops.Verdict:
        from pycert.certify.browser import CHROMIUM, Browser
        from pycert.certify.report import write_report

        if CHROMIUM is None:
            return "error", "chromium is not installed: the report verifier cannot be run"
        cert_dir = self.repo / ops.CERT_DIR
        page = self.repo / "site" / "report.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        write_report(cert_dir, page, root=self.repo, curves=False)
        drop = self.repo / "drop"
        drop.mkdir()
        good = cert_dir / cert
        bad = drop / cert
        if how == "flip":
            data = bytearray(good.read_bytes())
            data[len(data) // 2] ^= 0x01
            bad.write_bytes(bytes(data))
        else:
            doc = json.loads(good.read_text())
            doc["figures"][-1]["numerator"] += 1
            bad.write_text(json.dumps(doc, indent=2) + "\n")
        browser = Browser(self.repo / "profile")
        try:
            browser.open(page.as_uri())
            control, _, _ = browser.verdict_after(lambda: browser.choose_file(good))
            if control != "match":
                return "error", f"the page did not accept the pristine {cert} ({control})"
            state, colour, lines = browser.verdict_after(lambda: browser.choose_file(bad))
        finally:
            browser.close()
        if state == "mismatch":
            return "killed", f"verdict {state} ({colour}): {lines[0] if lines else ''}"
        return "survived", f"the page said {state} for a tampered certificate"


def _figs(figs: dict[str, Fraction]) -> str:
    return ", ".join(f"{k}={v}" for k, v in figs.items())


# ---------------------------------------------------------------------------- the Lean batches


def imported_library_modules(lean_dir: Path, texts: list[str]) -> set[str]:
    """The library modules the given Lean sources import, directly or through each other."""
    sources = au.module_sources(lean_dir)
    seen: set[str] = set()
    todo = [m for t in texts for m in kernel.parse_imports(t)]
    while todo:
        m = todo.pop()
        if m in seen or m not in sources:
            continue
        seen.add(m)
        todo += kernel.parse_imports(sources[m].read_text(encoding="utf-8"))
    return seen


class LeanBatches:
    """Every Lean mutant in few builds: the mutated scratch library plus two batch files, and one
    more scratch library per mutated module that a batch file imports (a rejected module blocks its
    importers, so its mutants cannot share the batches' build)."""

    def __init__(self, ctx: Context, plans: list[ops.Planned], backend: str | None, timeout: float) -> None:
        self.ctx, self.backend, self.timeout = ctx, backend, timeout
        self.dir = ctx.scratch / "kernel"
        shutil.copytree(ctx.root / "lean", self.dir / "lean")
        self.files: list[Path] = []
        self.located: dict[str, Located] = {}
        texts: list[str] = []
        inst = [p.instance for p in plans if p.instance]
        if inst:
            text, loc = compose(INSTANCE_HEADER, inst, "MutInstances")
            self.located |= loc
            texts.append(text)
            self.files.append(self._write("MutInstances.lean", text))
        audit = [p.audit for p in plans if p.audit]
        self.audit_text = ""
        if audit:
            text, loc = compose(ops.AUDIT_HEADER, audit, "MutAudit")
            self.audit_text = text + "\nend Pycert.Mutants\n"
            self.located |= loc
            texts.append(self.audit_text)
            self.files.append(self._write("MutAudit.lean", self.audit_text))
        shared = imported_library_modules(self.dir / "lean", texts)
        edits = [p.edit for p in plans if p.edit]
        self.libraries: dict[str, Path] = {"": self.dir / "lean"}
        """Build name ("" for the batches' own) -> its scratch library."""
        self.build_of: dict[str, str] = {}
        by_build: dict[str, list[Any]] = {}
        for e in edits:
            module = ".".join(Path(e.module_path).with_suffix("").parts)
            by_build.setdefault(module if module in shared else "", []).append(e)
        for name, group in sorted(by_build.items()):
            if name:
                self.libraries[name] = self.dir / f"alone-{name}" / "lean"
                shutil.copytree(ctx.root / "lean", self.libraries[name])
            self.located |= apply_library_edits(self.libraries[name], group)
            self.build_of |= {e.mutant_id: name for e in group}
        self.builds: dict[str, kernel.BuildResult] = {}
        self.failure: str | None = None

    def _write(self, name: str, text: str) -> Path:
        path = self.dir / name
        path.write_text(text, encoding="utf-8")
        return path

    def run(self, progress: Callable[[str], None]) -> None:
        try:
            for name, library in self.libraries.items():
                if name:
                    progress(f"scratch library with {name} mutated (its importers are not checked there)")
                self.builds[name] = kernel.build(library=library, files=[] if name else self.files,
                                                 backend=self.backend, timeout=self.timeout, progress=progress)
        except PycertError as exc:
            self.failure = str(exc)

    @property
    def build(self) -> kernel.BuildResult | None:
        """The batches' build (library mutants of modules no batch imports, and the batch files)."""
        return self.builds.get("")

    @property
    def kernel_runs(self) -> int:
        return sum(not r.cached for b in self.builds.values() for r in b.results)

    def verdicts(self, plans: list[ops.Planned]) -> dict[str, ops.Verdict]:
        out: dict[str, ops.Verdict] = {}
        if self.failure or self.build is None:
            return {p.mutant.id: ("error", self.failure or "the kernel did not run") for p in plans}
        for p in plans:
            if p.batch in ("library", "instances"):
                loc = self.located[p.mutant.id]
                build = self.builds.get(self.build_of.get(p.mutant.id, ""))
                out[p.mutant.id] = kernel_verdict(build.by_module().get(loc.module) if build else None, loc)
        audit_plans = [p for p in plans if p.batch == "audit"]
        if audit_plans:
            out |= self._audit_verdicts(audit_plans, self.build.by_module().get("MutAudit"))
        return out

    def _audit_verdicts(self, plans: list[ops.Planned], result: kernel.CheckResult | None) -> dict[str, ops.Verdict]:
        if result is None or not result.ok:
            why = "not built" if result is None else f"{result.status}: " + "; ".join(d.render() for d in result.failures[:3])
            return {p.mutant.id: ("error", f"the audit batch did not compile ({why})") for p in plans}
        lib = au.toolchain_lib(tc.resolve(self.backend))
        tree = Path(self.build.olean_dir)
        declared = {"MutAudit": au.scan_declared_theorems(self.audit_text)}
        report = au.audit_modules(["MutAudit"], [tree, lib], declared_theorems=declared)
        out: dict[str, ops.Verdict] = {}
        for p in plans:
            if p.hidden_proof:
                out[p.mutant.id] = self._hidden_proof(tree, lib, declared)
                continue
            s = p.audit
            mine = [f for f in report.findings if f.declaration.endswith("." + s.decl) and not f.auxiliary]
            hit = next((f for f in mine if f.reason == s.expect), None)
            if hit:
                out[p.mutant.id] = ("killed", f"{hit.declaration} -> {hit.constant} ({hit.reason})")
            elif mine:
                out[p.mutant.id] = ("survived", f"flagged, but as {mine[0].reason}, not {s.expect}")
            else:
                out[p.mutant.id] = ("survived", f"the audit passed {s.decl}")
        return out

    def _hidden_proof(self, tree: Path, lib: Path, declared: dict[str, list[str]]) -> ops.Verdict:
        public_only = self.dir / "public-only"
        public_only.mkdir(exist_ok=True)
        shutil.copy(tree / "MutAudit.olean", public_only / "MutAudit.olean")
        report = au.audit_modules(["MutAudit"], [public_only, tree, lib], declared_theorems=declared)
        # The public part holds each theorem as a bodiless stand-in: "not-a-theorem" or "hidden-proof".
        hit = next((f for f in report.findings if f.reason in ("hidden-proof", "not-a-theorem")), None)
        if hit:
            return "killed", f"{hit.declaration} -> {hit.constant} ({hit.reason}); {len(report.findings)} findings"
        return "survived", "the audit passed a module whose proofs it could not read" if report.ok else \
            f"rejected, but not for a missing private part: {report.summary()}"


# ---------------------------------------------------------------------------- the campaign


def plan_all(ctx: Context, only: set[str] | None = None) -> list[ops.Planned]:
    names = {o.name for o in ops.OPERATORS}
    unknown = (only or set()) - names
    if unknown:
        raise InputError(f"unknown operator class {', '.join(sorted(unknown))} (known: {', '.join(sorted(names))})")
    plans = []
    for op in ops.OPERATORS:
        plans += op().plan(ctx)
    ids = [p.mutant.id for p in plans]
    dup = {i for i in ids if ids.count(i) > 1}
    if dup:
        raise RuntimeError(f"duplicate mutant ids: {sorted(dup)}")
    return plans


def run_campaign(root: Path, *, backend: str | None = None, only: set[str] | None = None, timeout: float = 900.0,
                 progress: Callable[[str], None] = lambda _m: None) -> CampaignReport:
    t0 = time.monotonic()
    t = tc.resolve(backend)  # fail early, with the one-line install hint, when there is no kernel
    backend_name = "native" if isinstance(t, tc.NativeToolchain) else "wasm"
    scratch = Path(tempfile.mkdtemp(prefix="pycert-mutate-", dir="/tmp"))
    try:
        ctx = Context(root, scratch)
        plans = plan_all(ctx, only)
        # A batch is built whole (so an unchanged batch is a cache hit) whenever one of its mutants is selected.
        chosen = [p for p in plans if only is None or p.mutant.operator in only]
        need = {p.batch for p in chosen} - {None}
        batch_plans = [p for p in plans if p.batch in need]
        batches = LeanBatches(ctx, batch_plans, backend, timeout) if batch_plans else None
        thread = None
        if batches:
            progress(f"kernel: {len(batches.files)} batch files and the mutated library "
                     f"({sum(1 for p in batch_plans if p in chosen)} Lean mutants)")
            thread = threading.Thread(target=batches.run, args=(lambda m: progress("  " + m),), daemon=True)
            thread.start()
        outcomes: list[Outcome] = []
        for p in chosen:
            if p.run is None:
                continue
            s0 = time.monotonic()
            ctx.fresh(p.mutant.id)
            try:
                status, detail = p.run(ctx)
            except Exception as exc:  # a checker that crashes on a mutant is an error, never a kill
                status, detail = "error", f"{type(exc).__name__}: {exc}"
            outcomes.append(_outcome(p, status, detail, time.monotonic() - s0))
            progress(f"{outcomes[-1].status:10} {p.mutant.id}")
        if thread:
            thread.join()
            verdicts = batches.verdicts([p for p in batch_plans if p in chosen])
            for p in chosen:
                if p.mutant.id in verdicts:
                    outcomes.append(_outcome(p, *verdicts[p.mutant.id], 0.0))
                    progress(f"{outcomes[-1].status:10} {p.mutant.id}")
        order = {p.mutant.id: i for i, p in enumerate(plans)}
        outcomes.sort(key=lambda o: order[o.mutant.id])
        return CampaignReport(outcomes=outcomes, wall_s=time.monotonic() - t0, backend=backend_name,
                              kernel_runs=batches.kernel_runs if batches else 0)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _outcome(p: ops.Planned, status: str, detail: str, seconds: float) -> Outcome:
    if p.mutant.equivalent:
        return Outcome(mutant=p.mutant, status="equivalent", detail=f"(checker said: {status}) {detail}", seconds=seconds)
    return Outcome(mutant=p.mutant, status=status, detail=detail, seconds=seconds)
