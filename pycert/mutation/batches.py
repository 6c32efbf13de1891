"""Every Lean mutant in few builds (:mod:`pycert.mutation.lean_batch` composes the files): the mutated
scratch library plus two batch files, and one more scratch library per mutated module that a batch
file imports, since a rejected module blocks its importers. The audit batch is read back by the audit.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pycert.audit import axioms as au
from pycert.core.errors import PycertError
from pycert.lean import build
from pycert.lean.backend import Backend
from pycert.lean.diagnostics import CheckResult
from pycert.lean.sources import (
    declared_theorems,
    library_modules,
    module_name,
    parse_imports,
)
from pycert.mutation import operators as ops
from pycert.mutation.context import Context
from pycert.mutation.lean_batch import (
    Located,
    Snippet,
    apply_library_edits,
    compose,
    kernel_verdict,
)

INSTANCE_HEADER = "import Pycert.PackedTrace\nimport Pycert.Shards\nimport Pycert.Ceiling\nimport Pycert.Pooling\nimport Pycert.SortedTrace\nimport Pycert.SortedOptimum\nimport Pycert.SortedAdmission\nimport Pycert.Curve\nimport Pycert.IsolationCost\nimport Pycert.SortedJoints\nimport Pycert.Fleet\n"


BATCH_CHARS = 100_000
"""The most Lean text of instance mutants in one batch file: a file of 165 KB (the capacity mutants of issue 39)
overflowed the wasm Lean's JavaScript stack part way through, exiting 1 as after an error, and every
declaration after that point read as accepted. Smaller files are checked side by side, too."""


def chunks(snippets: list[Snippet]) -> list[list[Snippet]]:
    """``snippets`` in order, in groups of at most :data:`BATCH_CHARS` of text (a larger snippet alone)."""
    out: list[list[Snippet]] = []
    size = BATCH_CHARS
    for sn in snippets:
        if size + len(sn.text) > BATCH_CHARS:
            out.append([])
            size = 0
        out[-1].append(sn)
        size += len(sn.text)
    return out


def imported_library_modules(lean_dir: Path, texts: list[str]) -> set[str]:
    """The library modules the given Lean sources import, directly or through each other."""
    sources = library_modules(lean_dir)
    seen: set[str] = set()
    todo = [m for t in texts for m in parse_imports(t)]
    while todo:
        m = todo.pop()
        if m in seen or m not in sources:
            continue
        seen.add(m)
        todo += parse_imports(sources[m].read_text(encoding="utf-8"))
    return seen


class LeanBatches:
    """Every Lean mutant in few builds: the mutated scratch library plus two batch files, and one
    more scratch library per mutated module that a batch file imports (a rejected module blocks its
    importers, so its mutants cannot share the batches' build)."""

    def __init__(self, ctx: Context, plans: list[ops.Planned], backend: Backend, timeout: float) -> None:
        self.ctx, self.backend, self.timeout = ctx, backend, timeout
        self.dir = ctx.scratch / "kernel"
        shutil.copytree(ctx.root / "lean", self.dir / "lean")
        self.files: list[Path] = []
        self.located: dict[str, Located] = {}
        texts: list[str] = []
        for k, group in enumerate(chunks([p.instance for p in plans if p.instance])):
            module = f"MutInstances{k or ''}"
            text, loc = compose(INSTANCE_HEADER, group, module)
            self.located |= loc
            texts.append(text)
            self.files.append(self._write(f"{module}.lean", text))
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
            module = module_name(self.dir / "lean", self.dir / "lean" / e.module_path)
            by_build.setdefault(module if module in shared else "", []).append(e)
        for name, group in sorted(by_build.items()):
            if name:
                self.libraries[name] = self.dir / f"alone-{name}" / "lean"
                shutil.copytree(ctx.root / "lean", self.libraries[name])
            self.located |= apply_library_edits(self.libraries[name], group)
            self.build_of |= {e.mutant_id: name for e in group}
        self.builds: dict[str, build.BuildResult] = {}
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
                self.builds[name] = build.build(library=library, files=[] if name else self.files,
                                                backend=self.backend, timeout=self.timeout, progress=progress)
        except PycertError as exc:
            self.failure = str(exc)

    @property
    def main(self) -> build.BuildResult | None:
        """The batches' build (library mutants of modules no batch imports, and the batch files)."""
        return self.builds.get("")

    @property
    def kernel_runs(self) -> int:
        return sum(not r.cached for b in self.builds.values() for r in b.results)

    def verdicts(self, plans: list[ops.Planned]) -> dict[str, ops.Verdict]:
        out: dict[str, ops.Verdict] = {}
        if self.failure or self.main is None:
            return {p.mutant.id: ("error", self.failure or "the kernel did not run") for p in plans}
        for p in plans:
            if p.batch in ("library", "instances"):
                loc = self.located[p.mutant.id]
                built = self.builds.get(self.build_of.get(p.mutant.id, ""))
                out[p.mutant.id] = kernel_verdict(built.by_module().get(loc.module) if built else None, loc)
        audit_plans = [p for p in plans if p.batch == "audit"]
        if audit_plans:
            out |= self._audit_verdicts(audit_plans, self.main.by_module().get("MutAudit"))
        return out

    def _audit_verdicts(self, plans: list[ops.Planned], result: CheckResult | None) -> dict[str, ops.Verdict]:
        if result is None or not result.ok:
            why = "not built" if result is None else f"{result.status}: " + "; ".join(d.render() for d in result.failures[:3])
            return {p.mutant.id: ("error", f"the audit batch did not compile ({why})") for p in plans}
        lib = self.backend.toolchain_library()
        tree = Path(self.main.olean_dir)
        declared = {"MutAudit": declared_theorems(self.audit_text)}
        report = au.audit_modules(["MutAudit"], [tree, lib], declared_theorems=declared)
        out: dict[str, ops.Verdict] = {}
        for p in plans:
            if p.hidden_proof:
                out[p.mutant.id] = self._hidden_proof(tree, lib, declared)
                continue
            s = p.audit
            mine = [f for f in report.findings if f.subject.endswith("." + s.decl) and not f.auxiliary]
            hit = next((f for f in mine if f.reason == s.expect), None)
            if hit:
                out[p.mutant.id] = ("killed", f"{hit.subject} -> {hit.constant} ({hit.reason})")
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
            return "killed", f"{hit.subject} -> {hit.constant} ({hit.reason}); {len(report.findings)} findings"
        return "survived", "the audit passed a module whose proofs it could not read" if report.ok else \
            f"rejected, but not for a missing private part: {report.summary()}"
