"""HiGHS (PyPI ``highspy``) on the same :class:`~pycert.solvers.model.LinearModel` CP-SAT solves, as a MIP.

The relative and absolute MIP gaps are set to zero: the objectives are integers and HiGHS's default
relative gap (1e-4) would let it stop above the optimum and still say "Optimal".
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator
from importlib.metadata import version

import highspy
import numpy as np

from pycert.solvers.model import (
    LinearModel,
    SolveResult,
    SolverParams,
    Status,
    relative_gap,
)


@contextlib.contextmanager
def _stdout_silenced() -> Iterator[None]:
    """highspy prints a banner on fd 1 when the first Highs() is made; it would corrupt ``--json``."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def highs_version() -> str:
    return version("highspy")


def _status(h, has_solution: bool) -> Status:
    s = h.getModelStatus()
    if s == highspy.HighsModelStatus.kOptimal:
        return "OPTIMAL"
    if s == highspy.HighsModelStatus.kInfeasible:
        return "INFEASIBLE"
    if s in (highspy.HighsModelStatus.kModelError, highspy.HighsModelStatus.kLoadError):
        return "MODEL_INVALID"
    return "FEASIBLE" if has_solution else "UNKNOWN"


def solve_highs(m: LinearModel, params: SolverParams) -> SolveResult:
    with _stdout_silenced():
        h = highspy.Highs()
    for name, value in (("output_flag", False), ("mip_rel_gap", 0.0), ("mip_abs_gap", 0.0),
                        ("time_limit", float(params.time_limit_s)), ("threads", params.workers),
                        ("random_seed", params.seed)):
        h.setOptionValue(name, value)
    n = len(m.var_names)
    cost = np.zeros(n)
    for j, c in m.objective.items():
        cost[j] = c
    h.addCols(n, cost, np.array(m.lb, dtype=float), np.array(m.ub, dtype=float), 0,
              np.array([], dtype=np.int32), np.array([], dtype=np.int32), np.array([], dtype=float))
    h.changeColsIntegrality(n, np.arange(n, dtype=np.int32), np.array([highspy.HighsVarType.kInteger] * n))
    inf = highspy.kHighsInf
    lo = np.array([inf * -1 if r[2] is None else r[2] for r in m.rows], dtype=float)
    hi = np.array([inf if r[3] is None else r[3] for r in m.rows], dtype=float)
    starts = np.cumsum([0] + [len(r[0]) for r in m.rows[:-1]]).astype(np.int32)
    index = np.array([j for r in m.rows for j in r[0]], dtype=np.int32)
    value = np.array([c for r in m.rows for c in r[1]], dtype=float)
    h.addRows(len(m.rows), lo, hi, len(index), starts, index, value)
    h.changeObjectiveOffset(float(m.offset))
    t0 = time.perf_counter()
    h.run()
    wall = time.perf_counter() - t0
    info = h.getInfo()
    has_solution = info.primal_solution_status == 2  # kSolutionStatusFeasible
    status = _status(h, has_solution)
    values = [round(v) for v in h.getSolution().col_value] if has_solution else []
    objective = m.evaluate(values) if has_solution else None
    bound = float(info.mip_dual_bound) if has_solution else None
    return SolveResult(
        model=m.name, solver="HiGHS", version=highs_version(), status=status, objective=objective,
        bound=bound, gap=0.0 if status == "OPTIMAL" else relative_gap(objective, bound), wall_s=wall,
        parameters=params, variables=n, constraints=len(m.rows), values=values,
    )
