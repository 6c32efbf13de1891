"""``run_pooling``: every stage of the pooling result, with the cross-checks, as one pydantic model.

Stages: load and validate the instance; the pooled optimum (CP-SAT, HiGHS, replay, Belady); the
per-instance optimum under the committed routing (same, per host); the sharing graph; the best
routing (CP-SAT, HiGHS, replay, networkx matching where it applies); the capacitated family
(CP-SAT = HiGHS = Belady = replay on every case); the Lean wall file, kernel-checked through the
``lean_check`` callable when one is given and reported as "not run" otherwise, never as agreed.
"""

from __future__ import annotations

import hashlib
import math
import tempfile
import time
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from pycert.certify.schema import Figure, atomic_write
from pycert.lean.emit import pooling_wall as lean_wall
from solvers.graphs import Sharing, matching_optimum, sharing
from solvers.highs import highs_version, solve_highs
from solvers.instance import COMMITTED, FamilyCase, FamilyParams, Instance, capacitated_family, load_instance
from solvers.model import SolveResult, SolverParams, ortools_version, solve_cpsat
from solvers.per_instance import committed_model, free_routing_model, routing_from
from solvers.pooled import Cache, PagingModel, paging_model, schedules
from solvers.replay import Replay, RoutingReplay, replay_routing, replay_schedule

Progress = Callable[[str], None]


class LeanCheck(BaseModel):
    """What a Lean checker reports for one file."""

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


class PagingOutcome(BaseModel):
    """One exact paging optimum (one cache, or several solved as one), checked three ways."""

    name: str
    refs: int
    distinct: int
    """The wall: Σ over the caches of their distinct blocks."""
    capacity: int
    cpsat: SolveResult
    highs: SolveResult
    replay_misses: int | None
    replay_ok: bool
    belady_misses: int
    """Σ over the caches of Belady's MIN misses (``pycert.analysis.cachesim``), optimal for each cache."""

    @property
    def optimum(self) -> int | None:
        return self.cpsat.objective if self.agree else None

    @property
    def agree(self) -> bool:
        return not self.disagreements()

    def disagreements(self) -> list[str]:
        """Why this optimum cannot be trusted; empty when every independent check agrees."""
        out = []
        for r in (self.cpsat, self.highs):
            if not r.optimal:
                out.append(f"{r.solver} status {r.status}, not OPTIMAL")
            elif r.objective is None or r.bound is None or math.ceil(r.bound - 1e-6) < r.objective:
                out.append(f"{r.solver} claims OPTIMAL but its proven bound {r.bound} is below its objective {r.objective}")
            if r.objective is not None and r.objective < self.distinct:
                out.append(f"{r.solver} objective {r.objective} is below the wall (distinct = {self.distinct})")
        if not self.replay_ok:
            out.append("the replayed schedule is infeasible")
        figures = {"CP-SAT": self.cpsat.objective, "HiGHS": self.highs.objective, "replay": self.replay_misses,
                   "Belady": self.belady_misses}
        if len(set(figures.values())) != 1:
            out.append("objectives disagree: " + ", ".join(f"{k} {v}" for k, v in figures.items()))
        return out


class RoutingOutcome(BaseModel):
    cpsat: SolveResult
    highs: SolveResult
    proven_bound: int | None
    """The best lower bound either solver proved on Σ_h distinct(r|h) over all routings."""
    replay: RoutingReplay | None
    attained: bool
    """The optimal routing fits every host's cache, so its bound is realised misses (replayed)."""
    matching_objective: int | None
    """networkx minimum-weight matching optimum, when the routing problem is a matching."""
    routing: dict[int, int]

    @property
    def agree(self) -> bool:
        ok = (self.cpsat.optimal and self.highs.optimal and self.cpsat.objective == self.highs.objective
              and self.replay is not None and self.replay.ok and self.attained
              and self.replay.misses == self.cpsat.objective)
        return ok and self.matching_objective in (None, self.cpsat.objective)


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
    lean: LeanOutcome
    figures: list[Figure]
    agreement: Agreement
    holds: bool
    """Every solver, replay, Belady and matching check agrees, the published figures are reproduced,
    the best routing's proven bound is above the pooled optimum, and Lean did not fail."""
    parameters: SolverParams
    solvers: dict[str, str]
    wall_s: float


# ---------------------------------------------------------------------------- stages


def solve_paging(name: str, caches: list[Cache], params: SolverParams, pm: PagingModel | None = None) -> PagingOutcome:
    from pycert.analysis.cachesim import belady_hits

    pm = pm or paging_model(caches, name=name)
    cp = solve_cpsat(pm.model, params)
    hi = solve_highs(pm.model, params)
    replays: list[Replay] = []
    if cp.values:
        replays = [replay_schedule(c.name, c.refs, c.capacity, s) for c, s in zip(caches, schedules(pm, cp.values))]
    return PagingOutcome(
        name=name, refs=sum(len(c.refs) for c in caches), distinct=sum(len(set(c.refs)) for c in caches),
        capacity=max(c.capacity for c in caches), cpsat=cp, highs=hi,
        replay_misses=sum(r.misses for r in replays) if replays else None,
        replay_ok=bool(replays) and all(r.ok for r in replays),
        belady_misses=sum(len(c.refs) - belady_hits(list(c.refs), c.capacity) for c in caches),
    )


def solve_free_routing(inst: Instance, params: SolverParams) -> RoutingOutcome:
    rm = free_routing_model(inst)
    cp = solve_cpsat(rm.model, params)
    hi = solve_highs(rm.model, params)
    bounds = [math.ceil(r.bound - 1e-6) for r in (cp, hi) if r.bound is not None]
    routing = routing_from(rm, cp.values) if cp.values else {}
    replay = replay_routing(inst, routing) if routing else None
    match = matching_optimum(inst)
    return RoutingOutcome(
        cpsat=cp, highs=hi, proven_bound=max(bounds) if bounds else None, replay=replay,
        attained=replay is not None and replay.ok, matching_objective=match.objective if match else None,
        routing=routing,
    )


def family_outcomes(cases: list[FamilyCase], params: SolverParams) -> list[PagingOutcome]:
    return [solve_paging(c.name, [Cache(c.name, tuple(c.refs), c.capacity)], params) for c in cases]


def lean_stage(inst: Instance, lean_file: Path, lean_check: LeanChecker | None) -> LeanOutcome:
    text = lean_wall.emit(inst)
    atomic_write(lean_file, text.encode("utf-8"))  # an InputError naming the path when it cannot be written
    base = dict(file=str(lean_file), sha256=hashlib.sha256(text.encode()).hexdigest(), theorems=lean_wall.theorem_names())
    if lean_check is None:
        return LeanOutcome(status="not run", detail="no Lean checker was given", **base)
    res = lean_check(lean_file)
    return LeanOutcome(status="agreed" if res.ok else "failed", backend=res.backend, seconds=res.seconds,
                       detail=res.detail, **base)


def kernel_checker(backend: str | None = None, timeout: float = 1800.0) -> LeanChecker:
    """A :data:`LeanChecker` on the project runner (``pycert.lean.build``), building the library as needed."""
    def check(path: Path) -> LeanCheck:
        from pycert.lean import build as kernel

        res = kernel.check_files([path], backend=backend, timeout=timeout)
        failures = [d.render() for r in res.results for d in r.failures] + [r.detail for r in res.results if r.detail]
        return LeanCheck(ok=res.ok, detail="; ".join(failures)[:2000], backend=res.backend, seconds=res.seconds)
    return check


# ---------------------------------------------------------------------------- figures


def instance_figures(refs: int, distinct: int, pooled: int, per_instance_wall: int, per_instance: int,
                     free_routing: int) -> dict[str, Fraction]:
    """The certificate's figures, from the counts (the same function serves ``recompute``)."""
    return {
        "refs": Fraction(refs),
        "distinct_blocks": Fraction(distinct),
        "pooled_misses": Fraction(pooled),
        "pooled_hit_rate": Fraction(refs - pooled, refs),
        "per_instance_wall": Fraction(per_instance_wall),
        "per_instance_misses": Fraction(per_instance),
        "per_instance_hit_rate": Fraction(refs - per_instance, refs),
        "free_routing_misses": Fraction(free_routing),
    }


def recompute(cert, root: Path) -> dict[str, Fraction]:
    """``pycert verify``'s recomputer for the pooling family: the figures from the instance file alone,
    by Belady per cache and (for the best routing) the networkx matching or a fresh CP-SAT solve."""
    from pycert.analysis.cachesim import belady_hits
    from pycert.certify.verify import input_path

    inst = load_instance(input_path(cert, "instance", root))
    trace = inst.trace
    per_host = [inst.host_trace(h.id) for h in inst.hosts]
    pooled = len(trace) - belady_hits(trace, inst.pool_capacity)
    per_instance = sum(len(t) - belady_hits(t, h.capacity) for t, h in zip(per_host, inst.hosts))
    match = matching_optimum(inst)
    if match is not None:
        free = match.objective
    else:
        free_res = solve_free_routing(inst, SolverParams())
        free = free_res.cpsat.objective if free_res.agree else -1
    return instance_figures(len(trace), len(set(trace)), pooled, sum(len(set(t)) for t in per_host), per_instance, free)


# ---------------------------------------------------------------------------- the whole run


def run_pooling(
    instance_path: Path | str = COMMITTED,
    *,
    params: SolverParams | None = None,
    family: FamilyParams | None = None,
    lean_check: LeanChecker | None = None,
    lean_file: Path | None = None,
    progress: Progress | None = None,
) -> PoolingResult:
    """Every stage on the instance at ``instance_path`` (default: the committed one).

    ``lean_file`` is where the emitted wall file goes (default: a fresh temporary directory); the
    ``lean_check`` callable kernel-checks it (e.g. :func:`kernel_checker`).
    """
    say = progress or (lambda _m: None)
    params = params or SolverParams()
    t0 = time.perf_counter()
    path = Path(instance_path)
    inst = load_instance(path)
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    trace = inst.trace

    say(f"pooled: {len(trace)} references, pool capacity {inst.pool_capacity} (CP-SAT, HiGHS, replay, Belady)")
    pooled = solve_paging("pooled", [Cache("pool", tuple(trace), inst.pool_capacity)], params)
    say("per-instance, committed routing: one cache per host")
    pm = committed_model(inst)
    per_instance = solve_paging("per-instance", pm.caches, params, pm=pm)
    shared = sharing(inst, inst.routing)
    say("per-instance, free routing: best Σ_h distinct over all routings (CP-SAT, HiGHS, matching)")
    free = solve_free_routing(inst, params)
    fam_cases = capacitated_family(family)
    say(f"capacitated family: {len(fam_cases)} cases, pool below the distinct count")
    fam = family_outcomes(fam_cases, params)
    out = lean_file or Path(tempfile.mkdtemp(prefix="pycert-pooling-")) / "PoolingWall.lean"
    say(f"Lean wall: {out}" + ("" if lean_check else " (no checker: not run)"))
    lean = lean_stage(inst, out, lean_check)

    published = inst.published
    reproduced = (published.pooled_misses in (None, pooled.optimum)
                  and published.per_instance_misses in (None, per_instance.optimum)
                  and (published.pooled_misses, published.per_instance_misses) != (None, None))
    paging = [pooled, per_instance, *fam]
    agreement = Agreement(
        cpsat_highs=all(p.cpsat.optimal and p.highs.optimal and p.cpsat.objective == p.highs.objective for p in paging)
        and free.cpsat.optimal and free.highs.optimal and free.cpsat.objective == free.highs.objective,
        replay=all(p.replay_ok and p.replay_misses == p.cpsat.objective for p in paging)
        and free.replay is not None and free.replay.ok and free.replay.misses == free.cpsat.objective,
        belady=all(p.belady_misses == p.cpsat.objective for p in paging),
        matching=None if free.matching_objective is None else free.matching_objective == free.cpsat.objective,
        lean=lean.status,
        published=reproduced,
    )
    holds = (all(p.agree for p in paging) and free.agree and reproduced and lean.status != "failed"
             and pooled.optimum == pooled.distinct and per_instance.optimum == shared.per_instance_wall
             and all(f.optimum is not None and f.optimum > f.distinct for f in fam)
             and free.proven_bound is not None and pooled.optimum is not None and free.proven_bound > pooled.optimum)
    figures = []
    if pooled.optimum is not None and per_instance.optimum is not None and free.agree:
        figures = [Figure.from_fraction(k, v) for k, v in instance_figures(
            len(trace), len(set(trace)), pooled.optimum, shared.per_instance_wall, per_instance.optimum,
            free.cpsat.objective).items()]
    return PoolingResult(
        instance=str(path), instance_sha256=sha, hosts=len(inst.hosts), requests=len(inst.requests),
        refs=len(trace), distinct=len(set(trace)), pool_capacity=inst.pool_capacity, pooled=pooled,
        per_instance=per_instance, sharing=shared, free_routing=free, family=fam, lean=lean, figures=figures,
        agreement=agreement, holds=holds, parameters=params,
        solvers={"OR-Tools CP-SAT": ortools_version(), "HiGHS": highs_version()}, wall_s=time.perf_counter() - t0,
    )


# ---------------------------------------------------------------------------- terminal


def _status(r: SolveResult) -> str:
    if r.optimal:
        return "OPTIMAL"
    gap = "" if r.gap is None else f" gap {100 * r.gap:.2f}%"
    return f"{r.status}{gap}"


def _bound(r: SolveResult) -> str:
    return "-" if r.bound is None else f"{r.bound:g}"


def _yes(flag: bool | None) -> str:
    return {True: "yes", False: "NO", None: "n/a"}[flag]


def render_table(res: PoolingResult) -> str:
    from pycert.core.console import table

    def hit_rate(misses: int | None, refs: int) -> str:
        return "-" if misses is None else f"{100 * (refs - misses) / refs:.2f}%"

    rows = []
    for label, p in (("pooled", res.pooled), ("per-instance (committed routing)", res.per_instance)):
        rows.append((label, p.cpsat.objective, _bound(p.cpsat), _status(p.cpsat), p.highs.objective, _status(p.highs),
                     p.replay_misses, p.belady_misses, p.distinct, hit_rate(p.optimum, p.refs)))
    f = res.free_routing
    rows.append(("per-instance (best routing)", f.cpsat.objective, _bound(f.cpsat), _status(f.cpsat), f.highs.objective,
                 _status(f.highs), f.replay.misses if f.replay else "-",
                 f"match {f.matching_objective}" if f.matching_objective is not None else "-", "-",
                 hit_rate(f.cpsat.objective if f.agree else None, res.refs)))
    lines = [f"instance {res.instance}: {res.hosts} hosts, {res.requests} requests, {res.refs} references, "
             f"{res.distinct} distinct blocks, pool capacity {res.pool_capacity}", ""]
    lines.append(table(["model", "CP-SAT", "bound", "status", "HiGHS", "status", "replay", "Belady", "wall", "hit rate"],
                       rows))
    lines += ["", f"capacitated family (pool below the distinct count): {len(res.family)} cases"]
    lines.append(table(["case", "distinct", "capacity", "CP-SAT", "HiGHS", "replay", "Belady", "CP-SAT s", "HiGHS s"],
                       [(c.name, c.distinct, c.capacity, c.cpsat.objective, c.highs.objective, c.replay_misses,
                         c.belady_misses, f"{c.cpsat.wall_s:.3f}", f"{c.highs.wall_s:.3f}") for c in res.family]))
    a = res.agreement
    lines += ["", table(["check", "agrees"], [
        ("CP-SAT = HiGHS (all models OPTIMAL)", _yes(a.cpsat_highs)),
        ("replay recounts every schedule", _yes(a.replay)),
        ("Belady's MIN = CP-SAT (every cache)", _yes(a.belady)),
        ("networkx matching = best routing", _yes(a.matching)),
        (f"Lean kernel: {len(res.lean.theorems)} wall theorems", res.lean.status),
        ("published figures reproduced", _yes(a.published)),
    ])]
    bound = res.free_routing.proven_bound
    lines += ["", f"sharing: {res.sharing.shared_blocks} of {res.distinct} blocks are referenced at more than one host "
                  f"(per-instance wall {res.sharing.per_instance_wall} = pooled wall {res.distinct} + {res.sharing.excess})",
              f"no routing gets per-instance caching below {bound} misses (proven bound) against {res.pooled.optimum} pooled",
              f"{'HOLDS' if res.holds else 'DOES NOT HOLD'} in {res.wall_s:.1f} s"]
    return "\n".join(lines)
