"""What the operators' checks run against: a scratch copy of the repository per mutant, the data the
operators start from (computed once), and the checks themselves (verify, the solvers' checks, the
trace engine, the report page in headless Chromium).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path, PurePosixPath
from typing import Any

from pycert.certify import browser
from pycert.certify.browser import Browser
from pycert.certify.manifest import MANIFEST_NAME, render_manifest
from pycert.certify.report import write_report
from pycert.certify.verify import verify_certificate
from pycert.core.errors import InputError
from pycert.core.extras import install_hint
from pycert.core.files import file_sha256
from pycert.data.traces import read_trace
from pycert.families.base import Setting
from pycert.families.ceiling import engine_figures
from pycert.families.leak import log_path
from pycert.families.leak.produce import PRODUCER as LEAK
from pycert.leak.log import render
from pycert.leak.run import Plan, run_arms
from pycert.mutation import operators as ops
from pycert.solvers.capacitated import capacitated_cases
from pycert.solvers.instance_io import load_instance
from pycert.solvers.model import SolverParams, solve_cpsat
from pycert.solvers.optima import solve_paging
from pycert.solvers.pooled import Cache, paging_model, schedules
from pycert.solvers.replay import replay_schedule

COPIED = ("lean", "certificates")
LEAK_PROMPTS = 2
"""Prompts per arm when a leak mutant runs the engine: each arm's verdict is all or nothing."""
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
        self.backend_name: str | None = None
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
        def make() -> tuple[list[int], str]:
            t = read_trace(self.root / ops.TRACE_INPUT)
            refs = [int(x) for x in t.refs[: 4 * ops.WINDOW]]
            # the first window of at least WINDOW references that ends on a repeat (room for a new block)
            w = next(k for k in range(ops.WINDOW, len(refs)) if refs.index(refs[k - 1]) < k - 1)
            return refs[:w], t.sha256
        return self._once("window", make)

    def instance(self) -> Any:
        return self._once("instance", lambda: load_instance(self.root / "certificates" / "inputs" / "committed.json"))

    def pooled(self) -> Any:
        inst = self.instance()
        return self._once("pooled", lambda: solve_paging(
            "pooled", [Cache("pool", tuple(inst.trace), inst.pool_capacity)], SolverParams()))

    def family_schedule(self) -> tuple[list[int], int, list[frozenset[int]]]:
        def make() -> tuple[list[int], int, list[frozenset[int]]]:
            case = capacitated_cases()[0]
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
        try:
            res = verify_certificate(self.repo / ops.CERT_DIR / cert)
        except InputError as exc:  # a missing input is not a rejection of the tampered figure
            return "error", str(exc)
        if res.ok:
            return "survived", "verify passed the tampered certificate"
        if res.status != "rejected":  # exit 2: the tamper went unreported behind an input problem
            return "survived", f"not rejected (exit 2, {res.status}): {(res.errors + res.missing)[:1]}"
        hit = next((f for f in res.failures if re.search(field, f.subject)), None)
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
        d = self.repo / ops.CERT_DIR
        (d / MANIFEST_NAME).write_text(render_manifest({p.name: file_sha256(p) for p in sorted(d.glob("*.json"))}))

    def trace_expect(self, transform: Callable[[list[bytes]], list[bytes]]) -> ops.Verdict:
        path = self.repo / ops.TRACE_INPUT
        before = engine_figures(read_trace(path))
        path.write_bytes(b"".join(transform(path.read_bytes().splitlines(keepends=True))))
        trace = read_trace(path)
        after = engine_figures(trace)
        if after == before:
            return "survived", f"the figures did not change ({_figs(after)})"
        cert = self.repo / ops.CERT_DIR / ops.CEILING_CERT
        doc = json.loads(cert.read_text())
        for i in doc["inputs"]:
            if i["path"] == PurePosixPath(ops.TRACE_INPUT).relative_to(ops.CERT_DIR).as_posix():
                i["sha256"] = trace.sha256  # forge the hash: the instance regenerated from it must object
        cert.write_text(json.dumps(doc, indent=2) + "\n")
        self.forge_manifest()
        status, detail = self.verify_expect(ops.CEILING_CERT, r"regenerated from the trace")
        return status, f"figures {_figs(before)} -> {_figs(after)}; {detail}"

    def leak_expect(self, admission: Callable[[bytes], Any], subject: str) -> ops.Verdict:
        """Run the arms on the real engine with a defective admission layer: killed when the family
        refuses the observation for ``subject`` (the arm that must catch the defect)."""
        try:  # torch and transformers: 8-10 s of import, only for the leak mutants (and optional: the extra)
            from pycert.leak.engines.transformers import TransformersEngine
        except ImportError as exc:
            return "error", f"the leak extra is not installed ({exc.name}): {install_hint('leak')}"
        engine = TransformersEngine()
        try:
            log = run_arms(engine, Plan(prompts=LEAK_PROMPTS), admission(os.urandom(32)))
        finally:
            engine.close()
        out = self.repo / ops.CERT_DIR
        path = log_path(out, "leak-mutant")
        path.write_bytes(render(log))
        [prepared] = [p for p in LEAK.prepare(Setting(out_dir=out)) if p.id == "leak-mutant"]
        if prepared.rejection is None:
            return "survived", f"the observation holds: {prepared.headline}"
        return ops.expect_failure([prepared.rejection], subject, "the leak family")

    def page_expect(self, cert: str, how: str) -> ops.Verdict:
        cert_dir = self.repo / ops.CERT_DIR
        page = self.repo / "site" / "report.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        write_report(cert_dir, page, curves=False)
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
            if how == "statement":  # a weaker pinned statement: only the page's theorem check names it
                first = doc["theorems"][0]
                doc["statements"][first]["signature"] += " ∨ True"
            else:
                doc["figures"][-1]["numerator"] += 1
            bad.write_text(json.dumps(doc, indent=2) + "\n")
        with Browser() as chromium:
            chromium.open(page.as_uri())
            control, _, _ = chromium.verdict_after(lambda: chromium.choose_file(good))
            if control != "match":
                return "error", f"the page did not accept the pristine {cert} ({control})"
            state, colour, lines = chromium.verdict_after(lambda: chromium.choose_file(bad))
        if how == "statement" and not any("statement differs from the library's" in line for line in lines):
            return "survived", f"the page said {state}, but not on the statement: {lines[:1]}"
        if state == "mismatch":
            return "killed", f"verdict {state} ({colour}): {lines[0] if lines else ''}"
        return "survived", f"the page said {state} for a tampered certificate"


def unavailable(checker: str) -> str | None:
    """Why ``checker`` cannot run on this machine (a tool it needs is missing), or None."""
    if checker == "report-verifier":
        return browser.unavailable()
    return None


def _figs(figs: dict[str, Fraction]) -> str:
    return ", ".join(f"{k}={v}" for k, v in figs.items())
