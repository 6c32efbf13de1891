"""A solver-neutral 0/1 linear model and the result every solver reports.

The pooled, per-instance and free-routing models are built once as a :class:`LinearModel` and then
handed to CP-SAT (:func:`solve_cpsat`, here) and to HiGHS (:func:`pycert.solvers.highs.solve_highs`), so the
two solvers provably solve the same model: same variables, same rows, same objective. What a wrong
formulation could hide is caught elsewhere (replay of every schedule, Belady on the capacitated
family, the networkx matching for the routing).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, Field

Status = Literal["OPTIMAL", "FEASIBLE", "INFEASIBLE", "UNKNOWN", "MODEL_INVALID"]


@dataclass
class LinearModel:
    """min offset + Σ objective[j]·x_j  s.t.  lo ≤ Σ coef·x ≤ hi per row, x_j ∈ {lb_j..ub_j} integer."""

    name: str
    var_names: list[str] = field(default_factory=list)
    lb: list[int] = field(default_factory=list)
    ub: list[int] = field(default_factory=list)
    rows: list[tuple[list[int], list[int], int | None, int | None]] = field(default_factory=list)
    objective: dict[int, int] = field(default_factory=dict)
    offset: int = 0

    def var(self, name: str, lb: int = 0, ub: int = 1) -> int:
        self.var_names.append(name)
        self.lb.append(lb)
        self.ub.append(ub)
        return len(self.var_names) - 1

    def row(self, idx: list[int], coef: list[int], lo: int | None = None, hi: int | None = None) -> None:
        self.rows.append((idx, coef, lo, hi))

    def evaluate(self, values: list[int]) -> int:
        return self.offset + sum(c * values[j] for j, c in self.objective.items())


class SolverParams(BaseModel):
    """The parameters that can change a run (recorded with every result)."""

    seed: int = 0
    workers: int = 2
    time_limit_s: float = 60.0


class SolveResult(BaseModel):
    model: str
    solver: str
    version: str
    status: Status
    objective: int | None = None
    bound: float | None = None
    gap: float | None = Field(None, description="(objective - bound) / max(1, |objective|); 0 when OPTIMAL")
    wall_s: float
    parameters: SolverParams
    variables: int
    constraints: int
    values: list[int] = Field(default_factory=list, exclude=True, repr=False)

    @property
    def optimal(self) -> bool:
        return self.status == "OPTIMAL"


def relative_gap(objective: int | None, bound: float | None) -> float | None:
    if objective is None or bound is None:
        return None
    return max(0.0, (objective - bound) / max(1.0, abs(objective)))


def ortools_version() -> str:
    from importlib.metadata import version  # not `import ortools`: see solve_cpsat

    return version("ortools")


def solve_cpsat(m: LinearModel, params: SolverParams) -> SolveResult:
    # OR-Tools (0.25 s of import) only when a model is solved: reading an instance or a kept answer needs none
    from ortools.sat.python import cp_model

    cp = cp_model.CpModel()
    xs = [cp.new_int_var(lo, hi, n) for n, lo, hi in zip(m.var_names, m.lb, m.ub)]
    for idx, coef, lo, hi in m.rows:
        expr = sum(c * xs[j] for j, c in zip(idx, coef))
        if lo is not None and hi is not None:
            cp.add_linear_constraint(expr, lo, hi)
        elif lo is not None:
            cp.add(expr >= lo)
        elif hi is not None:
            cp.add(expr <= hi)
    cp.minimize(m.offset + sum(c * xs[j] for j, c in m.objective.items()))
    solver = cp_model.CpSolver()
    solver.parameters.random_seed = params.seed
    solver.parameters.num_workers = params.workers
    solver.parameters.max_time_in_seconds = params.time_limit_s
    t0 = time.perf_counter()
    code = solver.solve(cp)
    wall = time.perf_counter() - t0
    status: Status = solver.status_name(code)  # type: ignore[assignment]
    has_solution = status in ("OPTIMAL", "FEASIBLE")
    objective = round(solver.objective_value) if has_solution else None
    bound = solver.best_objective_bound if has_solution else None
    return SolveResult(
        model=m.name, solver="OR-Tools CP-SAT", version=ortools_version(), status=status,
        objective=objective, bound=bound, gap=0.0 if status == "OPTIMAL" else relative_gap(objective, bound),
        wall_s=wall, parameters=params, variables=len(xs), constraints=len(m.rows),
        values=[solver.value(x) for x in xs] if has_solution else [],
    )
