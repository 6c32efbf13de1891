"""Making the pooling certificate: :func:`run_pooling` is every step of the result, each cross-checked: the pooled optimum, the
per-instance optimum under the committed routing, the sharing graph, the best routing any router
could pick, the capacitated cases, and the Lean wall file (kernel-checked through ``lean_check``
when one is given, reported as "not run" otherwise, never as agreed). The solving itself is in
:mod:`solvers`; ``pycert prove`` kernel-checks the wall file in its batch with every family's.
"""

from __future__ import annotations

import hashlib
import tempfile
import time
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from pycert.core.errors import Rejection
from pycert.core.files import atomic_write
from pycert.core.gate import named
from pycert.core.limits import MAX_JSON_BYTES
from pycert.core.memo import code_sha256, memo
from pycert.core.schema import Figure, SolverInfo
from pycert.families.base import Prepared, Producer, Progress, Setting
from pycert.families.pooling import CLAIM, LEAN_WALL, PoolingParams, instance_figures
from pycert.families.pooling import wall as pooling_wall
from pycert.solvers.capacitated import CapacitatedParams, capacitated_cases
from pycert.solvers.graphs import Sharing, sharing
from pycert.solvers.highs import highs_version
from pycert.solvers.instance import COMMITTED, Instance
from pycert.solvers.instance_io import load_instance
from pycert.solvers.model import SolverParams, ortools_version
from pycert.solvers.optima import (
    PagingOutcome,
    RoutingOutcome,
    capacitated_outcomes,
    solve_free_routing,
    solve_paging,
)
from pycert.solvers.per_instance import committed_model
from pycert.solvers.pooled import Cache


class LeanCheck(BaseModel):
    """What a Lean checker reports for one file (``pycert.prove.check``: the kernel and the audit)."""

    ok: bool
    detail: str = ""
    backend: str = ""
    seconds: float = 0.0


LeanChecker = Callable[[Path], LeanCheck]


class LeanOutcome(BaseModel):
    status: Literal["agreed", "failed", "not run"]
    file: str
    sha256: str
    theorems: list[str]
    backend: str = ""
    seconds: float = 0.0
    detail: str = ""


class Agreement(BaseModel):
    cpsat_highs: bool
    replay: bool
    belady: bool
    matching: bool | None
    lean: Literal["agreed", "failed", "not run"]
    published: bool
    """The published figures (pooled and per-instance misses) are reproduced exactly."""


class PoolingResult(BaseModel):
    instance: str
    instance_sha256: str
    hosts: int
    requests: int
    refs: int
    distinct: int
    pool_capacity: int
    pooled: PagingOutcome
    per_instance: PagingOutcome
    sharing: Sharing
    free_routing: RoutingOutcome
    family: list[PagingOutcome]
    """The capacitated cases (pool below the distinct count)."""
    lean: LeanOutcome
    figures: list[Figure]
    agreement: Agreement
    holds: bool
    """Every solver, replay, Belady and matching check agrees, the published figures are reproduced,
    the best routing's proven bound is above the pooled optimum, and Lean did not fail."""
    parameters: SolverParams
    solvers: dict[str, str]
    wall_s: float
    kept: bool = False
    """The solvers' answers were kept from an earlier run on the same bytes and code (:mod:`pycert.core.memo`)."""


# ---------------------------------------------------------------------------- the steps


def lean_stage(inst: Instance, lean_file: Path, lean_check: LeanChecker | None) -> LeanOutcome:
    text = pooling_wall.emit(inst)
    atomic_write(lean_file, text.encode("utf-8"))  # an InputError naming the path when it cannot be written
    base = dict(file=str(lean_file), sha256=hashlib.sha256(text.encode()).hexdigest(),
                theorems=pooling_wall.theorem_names())
    if lean_check is None:
        return LeanOutcome(status="not run", detail="no Lean checker was given", **base)
    res = lean_check(lean_file)
    return LeanOutcome(status="agreed" if res.ok else "failed", backend=res.backend, seconds=res.seconds,
                       detail=res.detail, **base)


def agreement(inst: Instance, pooled: PagingOutcome, per_instance: PagingOutcome, free: RoutingOutcome,
              cases: list[PagingOutcome], lean: LeanOutcome) -> Agreement:
    """Which independent checks agree, and whether the published figures are reproduced."""
    published = inst.published
    paging = [pooled, per_instance, *cases]
    return Agreement(
        cpsat_highs=all(p.cpsat.optimal and p.highs.optimal and p.cpsat.objective == p.highs.objective for p in paging)
        and free.cpsat.optimal and free.highs.optimal and free.cpsat.objective == free.highs.objective,
        replay=all(p.replay_ok and p.replay_misses == p.cpsat.objective for p in paging)
        and free.replay is not None and free.replay.ok and free.replay.misses == free.cpsat.objective,
        belady=all(p.belady_misses == p.cpsat.objective for p in paging),
        matching=None if free.matching_objective is None else free.matching_objective == free.cpsat.objective,
        lean=lean.status,
        published=(published.pooled_misses in (None, pooled.optimum)
                   and published.per_instance_misses in (None, per_instance.optimum)
                   and (published.pooled_misses, published.per_instance_misses) != (None, None)),
    )


def holds(a: Agreement, pooled: PagingOutcome, per_instance: PagingOutcome, shared: Sharing, free: RoutingOutcome,
          cases: list[PagingOutcome]) -> bool:
    """The pooling claim: every check agrees, both walls are reached, and no routing reaches the pool."""
    return (all(p.agree for p in (pooled, per_instance, *cases)) and free.agree and a.published
            and a.lean != "failed" and pooled.optimum == pooled.distinct
            and per_instance.optimum == shared.per_instance_wall
            and all(c.optimum is not None and c.optimum > c.distinct for c in cases)
            and free.proven_bound is not None and pooled.optimum is not None
            and free.proven_bound > pooled.optimum)


class Solved(BaseModel):
    """What the solvers and their independent checks found on one instance (kept by :mod:`pycert.core.memo`)."""

    pooled: PagingOutcome
    per_instance: PagingOutcome
    sharing: Sharing
    free_routing: RoutingOutcome
    family: list[PagingOutcome]
    solvers: dict[str, str]


def solve(inst: Instance, params: SolverParams, cases: CapacitatedParams | None, say: Progress) -> Solved:
    trace = inst.trace
    say(f"pooled: {len(trace)} references, pool capacity {inst.pool_capacity} (CP-SAT, HiGHS, replay, Belady)")
    pooled = solve_paging("pooled", [Cache("pool", tuple(trace), inst.pool_capacity)], params)
    say("per-instance, committed routing: one cache per host")
    pm = committed_model(inst)
    per_instance = solve_paging("per-instance", pm.caches, params, pm=pm)
    say("per-instance, free routing: best Σ_h distinct over all routings (CP-SAT, HiGHS, matching)")
    free = solve_free_routing(inst, params)
    case_list = capacitated_cases(cases)
    say(f"capacitated family: {len(case_list)} cases, pool below the distinct count")
    return Solved(pooled=pooled, per_instance=per_instance, sharing=sharing(inst, inst.routing), free_routing=free,
                  family=capacitated_outcomes(case_list, params),
                  solvers={"OR-Tools CP-SAT": ortools_version(), "HiGHS": highs_version()})


def run_pooling(
    instance_path: Path | str = COMMITTED,
    *,
    params: SolverParams | None = None,
    cases: CapacitatedParams | None = None,
    lean_check: LeanChecker | None = None,
    lean_file: Path | None = None,
    progress: Progress | None = None,
) -> PoolingResult:
    """Every step on the instance at ``instance_path`` (default: the committed one).

    ``lean_file`` is where the emitted wall file goes (default: a fresh temporary directory); the
    ``lean_check`` callable kernel-checks it (``pycert.prove.check``). The solvers' answers for the same
    instance bytes, parameters, solver versions and code are kept (:mod:`pycert.core.memo`).
    """
    say = progress or (lambda _m: None)
    params = params or SolverParams()
    t0 = time.perf_counter()
    path = Path(instance_path)
    inst = load_instance(path)  # a one-line error for a missing or malformed file, before anything reads it
    data = named(path).read("an instance file", MAX_JSON_BYTES)
    trace = inst.trace
    key = [hashlib.sha256(data).hexdigest(), params.model_dump_json(), (cases or CapacitatedParams()).model_dump_json(),
           ortools_version(), highs_version(), code_sha256("pycert.solvers", "pycert.analysis", __name__)]
    found, kept = memo("pooling", key, Solved, lambda: solve(inst, params, cases, say))
    if kept:
        say("solvers: the answers for these instance bytes, parameters and code are kept (PYCERT_MEMO=0 re-solves)")
    pooled, per_instance, free, capacitated = found.pooled, found.per_instance, found.free_routing, found.family
    out = lean_file or Path(tempfile.mkdtemp(prefix="pycert-pooling-")) / "PoolingWall.lean"
    say(f"Lean wall: {out}" + ("" if lean_check else " (no checker: not run)"))
    lean = lean_stage(inst, out, lean_check)
    agreed = agreement(inst, pooled, per_instance, free, capacitated, lean)
    figures = []
    if pooled.optimum is not None and per_instance.optimum is not None and free.agree:
        figures = [Figure.of(v, name=k) for k, v in instance_figures(
            len(trace), len(set(trace)), pooled.optimum, found.sharing.per_instance_wall, per_instance.optimum,
            free.cpsat.objective).items()]
    return PoolingResult(
        instance=str(path), instance_sha256=hashlib.sha256(data).hexdigest(), hosts=len(inst.hosts),
        requests=len(inst.requests), refs=len(trace), distinct=len(set(trace)), pool_capacity=inst.pool_capacity,
        pooled=pooled, per_instance=per_instance, sharing=found.sharing, free_routing=free, family=capacitated,
        lean=lean, figures=figures, agreement=agreed,
        holds=holds(agreed, pooled, per_instance, found.sharing, free, capacitated), parameters=params,
        solvers=found.solvers, wall_s=time.perf_counter() - t0, kept=kept,
    )


# ---------------------------------------------------------------------------- the producer


class PoolingProducer(Producer):
    summary = ("Prove the pooling optimum of the committed serving instance: a cache pooled across hosts reaches the "
               "fewest misses any routing allows (the wall, kernel-checked), which per-instance caching cannot; the "
               "optimum solved by CP-SAT and HiGHS and checked by a third method.")
    claim = CLAIM

    def prepare(self, setting: Setting) -> list[Prepared]:
        """The solvers and their independent checks now; the emitted wall file joins the one build. The
        committed instance travels with the certificate (``inputs/``), never named by its place in a
        checkout or in site-packages."""
        instance = setting.emit(Path("inputs") / COMMITTED.name, named(COMMITTED).read("an instance file", MAX_JSON_BYTES))
        lean_path = (setting.stage or setting.out_dir) / LEAN_WALL
        res = run_pooling(instance, lean_file=lean_path, progress=lambda m: setting.progress("  " + m))
        pooled, per = res.pooled, res.per_instance
        solver = SolverInfo(
            name="OR-Tools CP-SAT", version=res.solvers["OR-Tools CP-SAT"], status=pooled.cpsat.status,
            objective=pooled.cpsat.objective, bound=pooled.cpsat.bound,
            parameters={**res.parameters.model_dump(mode="json"), "cross_check": f"HiGHS {res.solvers['HiGHS']}"},
        )
        failed = [k for k, v in res.agreement.model_dump().items() if v is False or v == "failed"]
        rejection = None if res.holds else Rejection(
            subject="pooling-committed", reason="solvers-disagree",
            detail=f"solver checks disagree ({', '.join(failed) or 'a wall or the best routing'}): pooled "
                   f"{pooled.optimum}, per-instance {per.optimum} against the wall {res.sharing.per_instance_wall}")
        limits = sorted({h.load_limit for h in load_instance(instance).hosts})
        return [Prepared(
            claim=CLAIM, id="pooling-committed",
            parameters=PoolingParams(hosts=res.hosts, pool_capacity=res.pool_capacity, load_limit=limits[-1]),
            engine={"hosts": Fraction(res.hosts), **{f.name: f.value for f in res.figures}},
            headline=f"OPT {pooled.optimum} vs {per.optimum}",
            inputs=[setting.emitted("instance", Path("inputs") / COMMITTED.name, sha256=res.instance_sha256),
                    setting.emitted("lean", LEAN_WALL, derived_from="instance")],
            lean_file=lean_path, solver=solver, rejection=rejection,
            located={f"inputs/{COMMITTED.name}": instance, LEAN_WALL.as_posix(): lean_path},
        )]


PRODUCER = PoolingProducer()
