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

from pycert.core.errors import Rejected, Rejection
from pycert.core.limits import MAX_JSON_BYTES
from pycert.core.schema import Certificate, EvidenceState, InputFile, Params, SolverInfo
from pycert.families.base import Claim, Instance, Reader, input_path

LEAN_WALL = Path("lean/PoolingWall.lean")
"""Relative to the certificate directory."""
COMMITTED_SHA256 = "28249a79cf46330abd3fe15a17651658c090fc0fb4d7423ce604f27058292729"
"""The committed instance (``certificates/inputs/committed.json``): the one instance a pooling
certificate speaks of, so a certificate resting on any other file is rejected before anything reads it."""


class PoolingParams(Params):
    hosts: int = Field(ge=1)
    pool_capacity: int = Field(ge=1)
    load_limit: int = Field(ge=1)
    """Block references each host may serve: the best-routing figure holds under this limit only."""


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
    primary = ("instance",)
    input_limits = {"instance": MAX_JSON_BYTES}
    headline_predicate = "Pycert.Pooling.Walls"
    headline_figures = ("hosts", "refs", "distinct_blocks", "per_instance_wall")
    limits = (
        "OPT = 32 is for the committed instance only: other instances have other optima.",
        "The per-instance figure is for the committed routing; the free-routing optimum is a solver result with its bound.",
        "The any-routing figure assumes the instance's load limit (each host serves at most its limit of block "
        "references); without a limit one host could take every request and match the pooled optimum.",
        "Misses count block fetches; transfer latency, bandwidth and serving throughput are not modelled.",
        "It is an oracle bound, not a connector measurement.",
    )
    evidence_of = {
        "refs": ("kernel-checked", "Lean kernel: a literal of {headline} ((blocks trace).length)"),
        "distinct_blocks": ("kernel-checked", "Lean kernel: a literal of {headline} (distinct blocks, and every "
                                              "pooled policy misses at least that often)"),
        "per_instance_wall": ("kernel-checked", "Lean kernel: a literal of {headline} (the per-host distinct counts "
                                                "summed; per-instance caches miss at least that often)"),
        "pooled_misses": ("solver-certified", "OR-Tools CP-SAT OPTIMAL with its bound (the solver record), agreed "
                                              "by HiGHS and a replay; verify recomputes it by Belady"),
        "per_instance_misses": ("computed-cross-checked", "Belady per host cache, cross-checked against OR-Tools "
                                                          "CP-SAT and HiGHS when the certificate was made"),
        "free_routing_misses": ("computed-cross-checked", "networkx matching over the routings, cross-checked "
                                                          "against OR-Tools CP-SAT and HiGHS when the certificate was made"),
    }

    def evidence(self, name: str, solver: SolverInfo | None, params: Params | None = None) -> tuple[EvidenceState, str]:
        state, text = super().evidence(name, solver, params)
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
                f"routing and, by a solver's figure (a matching optimum cross-checked by CP-SAT and HiGHS, not "
                f"kernel-checked), at least {int(figures['free_routing_misses'])} under any routing of whole "
                f"requests to hosts that gives each host at most {params.load_limit} block references.")

    def instance(self, params: PoolingParams, primary: Sequence[InputFile]) -> Instance:
        return Instance(path=LEAN_WALL.as_posix(), derived_from="instance")

    def required(self, params: PoolingParams, inputs: Sequence[InputFile]) -> list[Rejection]:
        out = super().required(params, inputs)
        for inp in self.primary_inputs(inputs):
            if inp.sha256 != COMMITTED_SHA256:
                out.append(Rejection.mismatch(f"inputs[{inp.path}].sha256", f"{COMMITTED_SHA256} (the committed "
                                              "instance)", inp.sha256, reason="not-the-committed-instance"))
        return out

    def regenerate(self, params: PoolingParams, inputs: Sequence[InputFile], read: Reader) -> bytes:
        from pycert.families.pooling.wall import emit  # the instance model: only when a wall is written
        from pycert.solvers.instance_io import load_instance

        return emit(load_instance(input_path(inputs, "instance", read))).encode()

    def figures(self, params: PoolingParams, kernel: Mapping[str, int], inputs: Sequence[InputFile],
                read: Reader) -> dict[str, Fraction]:
        """The walls off the kernel's headline; the optima from the instance file alone, by Belady per
        cache and (for the best routing) the networkx matching or a fresh CP-SAT solve."""
        # numpy, networkx and (rarely) OR-Tools: only when a pooling certificate is verified
        from pycert.analysis.cachesim import belady_hits
        from pycert.solvers.graphs import matching_optimum
        from pycert.solvers.instance_io import load_instance
        from pycert.solvers.model import SolverParams
        from pycert.solvers.optima import solve_free_routing

        inst = load_instance(input_path(inputs, "instance", read))
        limits = {h.load_limit for h in inst.hosts}
        if (kernel["hosts"], len(inst.hosts), {params.load_limit}) != (params.hosts, params.hosts, limits):
            raise Rejected(Rejection.mismatch("parameters", f"hosts {len(inst.hosts)} (the headline: {kernel['hosts']}), "
                                              f"load limits {sorted(limits)}", f"hosts {params.hosts}, load limit "
                                              f"{params.load_limit}"))
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
        return instance_figures(kernel["refs"], kernel["distinct_blocks"], pooled, kernel["per_instance_wall"],
                                per_instance, free)

    def disagreements(self, figures: Mapping[str, Fraction], engine: Mapping[str, Fraction]) -> list[Rejection]:
        """Beyond the figures both computed: no optimum below the wall the kernel proved."""
        out = super().disagreements(figures, engine)
        for optimum, wall in (("pooled_misses", "distinct_blocks"), ("per_instance_misses", "per_instance_wall")):
            if optimum in engine and engine[optimum] < figures[wall]:
                out.append(Rejection.mismatch(f"figures.{optimum}", f"at least {figures[wall]} (the kernel's {wall})",
                                              f"{engine[optimum]} (the solvers)", reason="engine-disagrees"))
        return out


CLAIM = Pooling()
