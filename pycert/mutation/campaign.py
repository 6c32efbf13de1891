"""Run the campaign: plan every operator's mutants, apply each to a scratch copy, run its checker,
and score the answers. The real tree is only ever read; everything is written under one scratch
directory that is removed at the end (an interrupted run leaves at most that directory behind).
The Lean batches build in a thread while the Python-checked mutants run.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from pycert.core.errors import InputError
from pycert.lean.resolve import resolve
from pycert.mutation import operators as ops
from pycert.mutation.batches import LeanBatches
from pycert.mutation.context import Context, unavailable
from pycert.mutation.report import CampaignReport, Outcome

Progress = Callable[[str], None]


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


def _run_python(ctx: Context, chosen: list[ops.Planned], progress: Progress) -> list[Outcome]:
    """Every mutant a Python check answers, each on its own fresh scratch copy."""
    outcomes = []
    for p in chosen:
        if p.run is None:
            continue
        if why := unavailable(p.mutant.checker):
            outcomes.append(_outcome(p, "not-run", why, 0.0))
            continue
        s0 = time.monotonic()
        ctx.fresh(p.mutant.id)
        try:
            status, detail = p.run(ctx)
        except Exception as exc:  # a checker that crashes on a mutant is an error, never a kill
            status, detail = "error", f"{type(exc).__name__}: {exc}"
        outcomes.append(_outcome(p, status, detail, time.monotonic() - s0))
        progress(f"{outcomes[-1].status:10} {p.mutant.id}")
    return outcomes


LATE_CHECKERS = frozenset({"verify-kernel"})


def run_campaign(root: Path, *, backend: str | None = None, only: set[str] | None = None, timeout: float = 900.0,
                 progress: Progress = lambda _m: None) -> CampaignReport:
    t0 = time.monotonic()
    lean = resolve(backend)  # fail early, with the one-line install hint, when there is no kernel
    scratch = Path(tempfile.mkdtemp(prefix="pycert-mutate-", dir="/tmp"))
    try:
        ctx = Context(root, scratch)
        ctx.backend_name = lean.kind
        plans = plan_all(ctx, only)
        # A batch is built whole (so an unchanged batch is a cache hit) whenever one of its mutants is selected.
        chosen = [p for p in plans if only is None or p.mutant.operator in only]
        need = {p.batch for p in chosen} - {None}
        batch_plans = [p for p in plans if p.batch in need]
        batches = LeanBatches(ctx, batch_plans, lean, timeout) if batch_plans else None
        thread = None
        if batches:
            progress(f"kernel: {len(batches.files)} batch files and the mutated library "
                     f"({sum(1 for p in batch_plans if p in chosen)} Lean mutants)")
            thread = threading.Thread(target=batches.run, args=(lambda m: progress("  " + m),), daemon=True)
            thread.start()
        # checks that run Lean themselves wait for the batches, so no more than one build runs at a time
        late = [p for p in chosen if p.mutant.checker in LATE_CHECKERS]
        outcomes = _run_python(ctx, [p for p in chosen if p not in late], progress)
        if thread:
            thread.join()
            verdicts = batches.verdicts([p for p in batch_plans if p in chosen])
            for p in chosen:
                if p.mutant.id in verdicts:
                    outcomes.append(_outcome(p, *verdicts[p.mutant.id], 0.0))
                    progress(f"{outcomes[-1].status:10} {p.mutant.id}")
        outcomes += _run_python(ctx, late, progress)
        order = {p.mutant.id: i for i, p in enumerate(plans)}
        outcomes.sort(key=lambda o: order[o.mutant.id])
        return CampaignReport(outcomes=outcomes, wall_s=time.monotonic() - t0, backend=lean.kind,
                              kernel_runs=batches.kernel_runs if batches else 0)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _outcome(p: ops.Planned, status: str, detail: str, seconds: float) -> Outcome:
    if p.mutant.equivalent:
        return Outcome(mutant=p.mutant, status="equivalent", detail=f"(checker said: {status}) {detail}", seconds=seconds)
    return Outcome(mutant=p.mutant, status=status, detail=detail, seconds=seconds)
