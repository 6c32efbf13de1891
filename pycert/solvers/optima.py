"""Exact optima, each solved twice and checked: what the pooling family (:mod:`pycert.families.pooling`)
asks of the solvers.

A paging optimum (one cache, or several solved as one) is solved by CP-SAT and by HiGHS on the same
model, its schedule replayed step by step, and its value compared with Belady's MIN; the best routing
is solved by both solvers, replayed, and compared with the networkx matching optimum where the
routing problem is a matching. No single solver is trusted: :meth:`PagingOutcome.disagreements`
names every check that disagrees.
"""

from __future__ import annotations

import math

from pydantic import BaseModel

from pycert.analysis.cachesim import belady_hits
from pycert.core.errors import Rejection
from pycert.solvers.capacitated import CapacitatedCase
from pycert.solvers.graphs import matching_optimum
from pycert.solvers.highs import solve_highs
from pycert.solvers.instance import Instance
from pycert.solvers.model import SolveResult, SolverParams, solve_cpsat
from pycert.solvers.per_instance import free_routing_model, routing_from
from pycert.solvers.pooled import Cache, PagingModel, paging_model, schedules
from pycert.solvers.replay import Replay, RoutingReplay, replay_routing, replay_schedule


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

    def disagreements(self) -> list[Rejection]:
        """Why this optimum cannot be trusted; empty when every independent check agrees."""
        out = []
        for r in (self.cpsat, self.highs):
            if not r.optimal:
                out.append(Rejection(subject=r.solver, reason="not-optimal",
                                     detail=f"{r.solver} status {r.status}, not OPTIMAL"))
            elif r.objective is None or r.bound is None or math.ceil(r.bound - 1e-6) < r.objective:
                out.append(Rejection(subject=r.solver, reason="bound-below-objective", detail=(
                    f"{r.solver} claims OPTIMAL but its proven bound {r.bound} is below its objective {r.objective}")))
            if r.objective is not None and r.objective < self.distinct:
                out.append(Rejection(subject=r.solver, reason="below-wall", detail=(
                    f"{r.solver} objective {r.objective} is below the wall (distinct = {self.distinct})")))
        if not self.replay_ok:
            out.append(Rejection(subject="replay", reason="infeasible", detail="the replayed schedule is infeasible"))
        figures = {"CP-SAT": self.cpsat.objective, "HiGHS": self.highs.objective, "replay": self.replay_misses,
                   "Belady": self.belady_misses}
        if len(set(figures.values())) != 1:
            out.append(Rejection(subject=self.name, reason="objectives-disagree",
                                 detail="objectives disagree: " + ", ".join(f"{k} {v}" for k, v in figures.items())))
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


def solve_paging(name: str, caches: list[Cache], params: SolverParams, pm: PagingModel | None = None) -> PagingOutcome:
    """The exact optimum of ``caches`` (one model), solved by both solvers, replayed, and Belady's count."""

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
    """The best Σ_h distinct over all routings: both solvers, the replay, and the matching where it applies."""
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


def capacitated_outcomes(cases: list[CapacitatedCase], params: SolverParams) -> list[PagingOutcome]:
    """Each capacitated case solved and checked on its own."""
    return [solve_paging(c.name, [Cache(c.name, tuple(c.refs), c.capacity)], params) for c in cases]
