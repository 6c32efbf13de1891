"""Solver results and schedules: what a solver reported, or the schedule it produced, doctored."""

from __future__ import annotations

from typing import Any

from pycert.mutation.operators.base import Operator, Planned, Verdict, expect_failure
from pycert.solvers.replay import replay_routing, replay_schedule


class Solver(Operator):
    """Doctor what a solver reported or the schedule it produced; the solvers' independent checks
    (bound versus objective, the wall, cross-solver agreement, the step-by-step replay) must object."""

    name = "solver"

    def plan(self, ctx: Any) -> list[Planned]:
        t = "pycert/solvers/optima.py"
        self.add("solver-objective-31", "solver-checks", "CP-SAT claims 31 misses on the committed pool",
                 "objective 31 below the wall", t, run=lambda c: c.paging_expect(
                     {"objective": 31}, r"CP-SAT objective 31 is below the wall"))
        self.add("solver-optimal-for-feasible", "solver-checks", "a FEASIBLE result (bound 3 below) reported OPTIMAL",
                 "OPTIMAL claimed with a bound below the objective", t, run=lambda c: c.paging_expect(
                     {"bound": float(c.pooled().cpsat.objective - 3)}, r"claims OPTIMAL but its proven bound"))
        self.add("solver-highs-disagrees", "solver-checks", "HiGHS reports one miss more than CP-SAT",
                 "objectives disagree", t, run=lambda c: c.paging_expect(
                     {"objective": c.pooled().highs.objective + 1}, r"objectives disagree", solver="highs"))
        r = "pycert/solvers/replay.py"
        self.add("solver-drop-fetch", "solver-checks", "remove one fetch from an optimal capacitated schedule",
                 "replay: referenced block not in the cache", r, run=_drop_fetch)
        self.add("solver-over-capacity", "solver-checks", "keep an evicted block: one over capacity",
                 "replay: capacity exceeded", r, run=_over_capacity)
        self.add("solver-unknown-host", "solver-checks", "route a request to a host that does not exist",
                 "routing check: unknown host", r, run=_unknown_host)
        return self.plans


def _drop_fetch(ctx: Any) -> Verdict:
    refs, cap, sched = ctx.family_schedule()
    t = next(i for i in range(1, len(refs)) if refs[i] not in sched[i - 1])
    bad = list(sched)
    bad[t] = sched[t] - {refs[t]}
    return expect_failure(replay_schedule("mutant", refs, cap, bad).violations, r"referenced block \d+ is not in the cache",
                          "the replay")


def _over_capacity(ctx: Any) -> Verdict:
    refs, cap, sched = ctx.family_schedule()
    # a full step at which some block seen before is out of the cache: keep it one step too long
    t = next(i for i in range(1, len(refs)) if len(sched[i]) == cap and set(refs[:i]) - sched[i])
    extra = min(set(refs[:t]) - sched[t])
    bad = list(sched)
    bad[t] = sched[t] | {extra}
    return expect_failure(replay_schedule("mutant", refs, cap, bad).violations, r"blocks cached, capacity", "the replay")


def _unknown_host(ctx: Any) -> Verdict:
    inst = ctx.instance()
    routing = dict(inst.routing)
    routing[inst.requests[0].id] = max(inst.host_ids) + 1
    return expect_failure(replay_routing(inst, routing).routing_violations, r"routed to unknown host", "the routing check")
