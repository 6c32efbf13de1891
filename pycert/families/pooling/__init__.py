"""Pooling optimum (``lean/Pycert/Pooling.lean``): on the committed serving instance the pooled cache
reaches the proven minimum number of misses (the wall) and per-instance caching cannot.

This module is the claim; :mod:`pycert.families.pooling.produce` runs the solvers and their
independent checks and :mod:`pycert.families.pooling.wall` writes the Lean wall file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Literal

from pydantic import Field

from pycert.core.schema import Certificate, EvidenceState, InputFile, Params, SolverInfo
from pycert.families.base import Claim, Reader, input_path

LEAN_WALL = Path("lean/PoolingWall.lean")
"""Relative to the certificate directory."""


class PoolingParams(Params):
    hosts: int = Field(ge=1)
    pool_capacity: int = Field(ge=1)


class PoolingCertificate(Certificate):
    """A certificate of the pooling family."""

    family: Literal["pooling"]
    parameters: PoolingParams


def instance_figures(refs: int, distinct: int, pooled: int, per_instance_wall: int, per_instance: int,
                     free_routing: int) -> dict[str, Fraction]:
    """The certificate's figures, from the counts (prove's solvers and verify's recomputation both end here)."""
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


class Pooling(Claim):
    name = "pooling"
    params = PoolingParams
    certificate = PoolingCertificate
    lean_module = "Pycert.Pooling"
    theorem_names = (
        "Pycert.Pooling.distinct_le_pooledMisses",
        "Pycert.Pooling.sumDistinct_le_perInstanceMisses",
        "Pycert.Pooling.distinct_le_sumDistinct",
        "Pycert.Pooling.sumDistinct_eq_iff",
    )
    limits = (
        "OPT = 32 is for the committed instance only: other instances have other optima.",
        "The per-instance figure is for the committed routing; the free-routing optimum is a solver result with its bound.",
        "Misses count block fetches; transfer latency, bandwidth and serving throughput are not modelled.",
        "It is an oracle bound, not a connector measurement.",
    )
    evidence_of = {
        "pooled_misses": ("solver-certified", "OR-Tools CP-SAT OPTIMAL with its bound (the solver record), agreed "
                                              "by HiGHS and a replay; verify recomputes it by Belady"),
        "per_instance_misses": ("computed-cross-checked", "Belady per host cache, cross-checked against OR-Tools "
                                                          "CP-SAT and HiGHS when the certificate was made"),
        "free_routing_misses": ("computed-cross-checked", "networkx matching over the routings, cross-checked "
                                                          "against OR-Tools CP-SAT and HiGHS when the certificate was made"),
    }

    def evidence(self, name: str, solver: SolverInfo | None) -> tuple[EvidenceState, str]:
        state, text = super().evidence(name, solver)
        certified = (solver is not None and solver.status == "OPTIMAL" and solver.bound is not None
                     and solver.objective == solver.bound and "cross_check" in solver.parameters)
        if state == "solver-certified" and not certified:
            return "computed", "Belady (the solver record does not show OPTIMAL with its bound, cross-checked)"
        return state, text

    def sentence(self, params: PoolingParams, figures: Mapping[str, Fraction], inputs: Sequence[InputFile]) -> str:
        # the best routing's figure is its CP-SAT optimum, which produce.holds() requires to equal its proven bound
        refs, distinct = int(figures["refs"]), int(figures["distinct_blocks"])
        return (f"On the committed {params.hosts}-host instance ({refs} block references over {distinct} "
                f"blocks), the pooled cache reaches the proven minimum of {int(figures['pooled_misses'])} misses "
                f"while per-instance caching needs {int(figures['per_instance_misses'])} under the committed "
                f"routing and at least {int(figures['free_routing_misses'])} under any routing.")

    def figures(self, params: PoolingParams, inputs: Sequence[InputFile], read: Reader) -> dict[str, Fraction]:
        """The figures from the instance file alone, by Belady per cache and (for the best routing) the
        networkx matching or a fresh CP-SAT solve."""
        # numpy, networkx and (rarely) OR-Tools: only when a pooling certificate is verified
        from pycert.analysis.cachesim import belady_hits
        from pycert.solvers.graphs import matching_optimum
        from pycert.solvers.instance_io import load_instance
        from pycert.solvers.model import SolverParams
        from pycert.solvers.optima import solve_free_routing

        inst = load_instance(input_path(inputs, "instance", read))
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
        return instance_figures(len(trace), len(set(trace)), pooled, sum(len(set(t)) for t in per_host),
                                per_instance, free)


CLAIM = Pooling()
