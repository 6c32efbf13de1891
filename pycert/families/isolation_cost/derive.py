"""What the isolation-cost claim derives from a trace and its parameters: the tenant map, the keyed trace,
the three Lean files (the trace and the keyed trace as capacity instances, the composition) and the
engines' figures. Prove and verify call the same functions; the claim imports this module only when it
has a trace to read (numpy, numba)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from fractions import Fraction
from pathlib import PurePosixPath

import numpy as np

from pycert.analysis import salt
from pycert.analysis.requests import prefix_verdict
from pycert.analysis.tenants import cross_tenant
from pycert.core.errors import InputError, Rejected, Rejection
from pycert.core.limits import MAX_PIECE_REFS
from pycert.data.traces import Trace
from pycert.families.capacity import check_optimum
from pycert.families.capacity import derive as capacity
from pycert.families.isolation_cost import IsolationCostParams, part_names
from pycert.lean.emit import CAPACITY_OPTIMA_ENCODING
from pycert.lean.emit import salt_cost as emit


@dataclass(frozen=True)
class Salted:
    """A trace under a tenant map: each request's tenant, each reference's, and the keyed trace."""

    trace: Trace
    tenant_of: np.ndarray
    owner: np.ndarray
    keyed: Trace
    tenants: int


def salted(trace: Trace, params: IsolationCostParams) -> Salted:
    """The tenant map the parameters name, made again from the trace and checked against the parameters (its
    sha256, the number of tenants), and the keyed trace. The trace's sha256 was checked before, so a map
    that cannot be made is a rejection of the parameters, and so is a trace longer than one instance holds
    (refused before any engine runs on it)."""
    if trace.n_refs > MAX_PIECE_REFS:
        raise Rejected(Rejection.mismatch("inputs[trace]", f"at most {MAX_PIECE_REFS:,} references (one instance a "
                                          "capacity)", f"{trace.n_refs:,}"))
    try:
        tenant_of = salt.tenant_map(trace, params.tenant_rule, params.tenants, params.prefix_blocks)
    except InputError as err:
        raise Rejected(Rejection.mismatch("parameters.tenant_rule", "a rule that assigns this trace's requests",
                                          f"{params.tenant_rule!r} ({err.message})")) from None
    count = salt.tenant_count(trace, params.tenant_rule, params.tenants)
    if count != params.tenants:
        raise Rejected(Rejection.mismatch("parameters.tenants", f"{count} (the tenants the trace names)", str(params.tenants)))
    if (found := salt.map_sha256(tenant_of)) != params.tenant_map_sha256:
        raise Rejected(Rejection.mismatch("parameters.tenant_map_sha256", f"{found} (the map the rule makes of the "
                                          "trace)", params.tenant_map_sha256))
    owner = salt.owners(trace, tenant_of)
    keyed = dataclasses.replace(trace, refs=salt.keyed_refs(trace.refs, owner))
    return Salted(trace=trace, tenant_of=tenant_of, owner=owner, keyed=keyed, tenants=count)


def files(s: Salted, params: IsolationCostParams, instance: str) -> tuple[dict[str, bytes], emit.Cost]:
    """The three Lean files by path (``instance``: the composition's path; the two instances beside it) and
    what the composition states."""
    where = PurePosixPath(instance).parent
    shared_mod, keyed_mod = part_names(PurePosixPath(instance).stem)
    c = params.capacity_blocks
    shared, shared_plan = capacity.instance_text(s.trace, shared_mod, c, CAPACITY_OPTIMA_ENCODING,
                                                 params.shared_prefix_cache, as_module=True)
    keyed, keyed_plan = capacity.instance_text(s.keyed, keyed_mod, c, CAPACITY_OPTIMA_ENCODING, None, as_module=True)
    cost = emit.cost_of(shared_plan, keyed_plan)
    text = emit.emit_cost(PurePosixPath(instance).stem, s.trace.sha256, params.tenant_map_sha256, shared_mod, keyed_mod,
                          cost)
    return {instance: text.encode(), (where / f"{shared_mod}.lean").as_posix(): shared,
            (where / f"{keyed_mod}.lean").as_posix(): keyed}, cost


def prefix_of(trace: Trace, capacity_blocks: int) -> tuple[str, str]:
    """Whether a prefix cache reaches the shared optimum with bypass, and why not."""
    return prefix_verdict(trace, capacity.model(trace.refs, capacity_blocks, admission=True).ends)


def figures(s: Salted, params: IsolationCostParams, kernel: dict[str, int]) -> dict[str, Fraction]:
    """The kernel's literals checked against pycert's engines (two each, both traces, both models), whether a
    prefix cache reaches the shared optimum as the parameters say, and the computed figures: the gap, the
    partitioned arm, the tenants' reuse."""
    refs, c = kernel["refs"], kernel["capacity_blocks"]
    if refs != s.trace.n_refs:  # the headline's N against the file's, end to end
        raise Rejected(Rejection.mismatch("figures.refs", f"{s.trace.n_refs} (the references of the trace file)", str(refs)))
    for name, trace, admission, what in (("shared_demand_hits", s.trace, False, "Belady's MIN"),
                                         ("shared_hits", s.trace, True, "Belady's MIN with bypass"),
                                         ("salted_demand_hits", s.keyed, False, "Belady's MIN on the keyed trace"),
                                         ("salted_hits", s.keyed, True, "Belady's MIN with bypass on the keyed trace")):
        check_optimum(name, kernel[name], capacity.engines(trace.refs, c, admission=admission), c, what)
    verdict, why = prefix_of(s.trace, c)
    if verdict != params.shared_prefix_cache:
        raise Rejected(Rejection.mismatch("parameters.shared_prefix_cache", f"{verdict!r} ({why})",
                                          repr(params.shared_prefix_cache)))
    y, x = kernel["shared_hits"], kernel["salted_hits"]
    part = salt.partitioned_hits(s.trace.refs, s.owner, s.tenants, c)
    if part > x:
        raise Rejected(Rejection(subject="figures.partitioned_hits", reason="engine-disagrees", expected=f"at most {x}",
                                 found=str(part), detail=f"the partitioned cache hits {part} times, more than the {x} the "
                                 "kernel proved possible for every salted cache of the capacity: a defect in an engine"))
    out = {name: Fraction(v) for name, v in kernel.items()}
    return out | {
        "gap": Fraction(y - x), "gap_share": Fraction(y - x, y) if y else Fraction(0),
        "demand_gap": Fraction(kernel["shared_demand_hits"] - kernel["salted_demand_hits"]),
        "shared_hit_rate": Fraction(y, refs), "salted_hit_rate": Fraction(x, refs),
        "partitioned_hits": Fraction(part), "partitioned_hit_rate": Fraction(part, refs),
        "tenants": Fraction(s.tenants), "requests": Fraction(s.trace.n_requests or 0),
        "distinct": Fraction(len(np.unique(s.trace.refs))), "salted_distinct": Fraction(len(np.unique(s.keyed.refs))),
        "cross_tenant_refs": Fraction(int(cross_tenant(s.trace.refs, s.owner).sum())),
    }
