"""What a per-tenant salt costs (issue 38): the composition claiming the salt costs one hit more than the two
instances state (the kernel), the library's gap theorem claiming one hit more (the kernel), the keyed
trace made as if no tenant were keyed or with one reference moved to another tenant (the kernel: the
keyed instance carries each reference's tenant and keys the trace's own block numbers by it), and a whole
request moved to another tenant, consistently (the kernel accepts it, being about the tenants it is given:
verify, which applies the tenant rule again, must refuse it)."""

from __future__ import annotations

import dataclasses
import json
import random
from typing import Any
from unittest import mock

import numpy as np

from pycert.analysis import salt
from pycert.certify.verify import verify_certificate
from pycert.data.traces import trace_from_bytes
from pycert.families import producer
from pycert.families.capacity import derive as capacity
from pycert.families.isolation_cost import derive
from pycert.families.isolation_cost.produce import IsolationCostOptions
from pycert.lean.emit import CAPACITY_OPTIMA_ENCODING
from pycert.lean.emit import keyed as keyed_emit
from pycert.lean.emit import salt_cost as emit
from pycert.mutation.lean_batch import LibraryEdit, Snippet
from pycert.mutation.operators.base import KERNEL_REJECTS, Operator, Planned, Verdict, strip_header
from pycert.prove import prove

TARGET = "pycert/lean/emit/salt_cost.py"
CAPACITY = 3
"""Blocks of every mutant, on :func:`_trace`."""


def _trace() -> bytes:
    """A small seeded trace of 40 requests from 3 tenants: conversations of up to three turns that start with a
    block every request shares (a system prompt), so that the salt costs hits at :data:`CAPACITY` blocks."""
    rng = random.Random(38)
    lines = []
    for r in range(40):
        conv = rng.randrange(6)
        ids = [0, *(1000 * conv + k for k in range(1, 2 + rng.randrange(3)))]
        lines.append(json.dumps({"timestamp": r, "input_length": 512 * len(ids), "output_length": 1, "hash_ids": ids,
                                 "tenant": f"t{conv % 3}"}))
    return ("\n".join(lines) + "\n").encode()


def _files(name: str, lie: int = 0) -> str:
    """The trace's and the keyed trace's instances and their composition (stating a keyed optimum ``lie`` below the
    keyed instance's), made as prove makes them with whatever defect is patched in, flattened into one batch snippet."""
    trace = trace_from_bytes(_trace(), "tenants.jsonl")
    tenant_of = salt.tenant_map(trace, "field")
    owner = salt.owners(trace, tenant_of)
    keyed = derive.Salted(trace=trace, tenant_of=tenant_of, owner=owner, tenants=3,
                          keyed=dataclasses.replace(trace, refs=salt.keyed_refs(trace.refs, owner)))
    verdict, _ = derive.prefix_of(trace, CAPACITY)
    shared, plan = capacity.instance_text(trace, f"{name}_S", CAPACITY, CAPACITY_OPTIMA_ENCODING, verdict, as_module=True)
    salted, keyed_plan = derive.keyed_text(keyed, f"{name}_K", CAPACITY)
    cost = emit.cost_of(plan, keyed_plan)
    glue = emit.emit_cost(name, "0" * 64, "0" * 64, f"{name}_S", f"{name}_K",
                          cost.model_copy(update={"salted": cost.salted - lie}))
    return "\n\n".join("\n".join(line for line in strip_header(t).splitlines()
                                 if line != "module" and not line.startswith("public import "))
                       for t in (shared.decode(), salted.decode(), glue))


def _unkeyed(name: str) -> str:
    """The keyed instance made from the shared trace (its sort, cut lists and witness those of the trace: the salt
    made to cost nothing) while it carries the tenants of the map."""
    with mock.patch.object(salt, "keyed_refs", lambda refs, owner: refs.copy()), \
            mock.patch.object(keyed_emit, "codes", lambda x, owner, wx: np.asarray(x, dtype=np.int64)):
        return _files(name)


_real_owners, _real_map = salt.owners, salt.tenant_map


def _one_moved(trace: Any, tenant_of: np.ndarray) -> np.ndarray:
    """Each reference's tenant, with the second reference of the first request of two or more references moved to
    another tenant."""
    owner = _real_owners(trace, tenant_of).copy()
    starts = trace.requests
    r = next(i for i in range(len(starts) - 1) if starts[i + 1] - starts[i] >= 2)
    owner[starts[r] + 1] = (owner[starts[r] + 1] + 1) % (int(owner.max()) + 1)
    return owner


def _moved(name: str) -> str:
    """One reference moved to another tenant inside its request, the keyed instance (its tenants, sort, cut lists
    and witness) made consistently from that."""
    with mock.patch.object(salt, "owners", _one_moved):
        return _files(name)


def _request_moved(trace: Any, rule: Any, tenants: Any = None, prefix_blocks: Any = None) -> np.ndarray:
    """The tenant map with the first request moved to another tenant, consistently: another map."""
    out = _real_map(trace, rule, tenants, prefix_blocks).copy()
    out[0] = (out[0] + 1) % (int(out.max()) + 1)
    return out


def _request_moved_caught(ctx: Any) -> Verdict:
    """prove isolation-cost with the defect in place, on :func:`_trace`: the kernel accepts (its statement is about
    the tenants it was given), so prove writes; verify, without the defect, must refuse the tenant map."""
    trace = ctx.repo / "tenants.jsonl"
    trace.write_bytes(_trace())
    opts = IsolationCostOptions(trace=[trace], capacity_blocks=[CAPACITY], wanted=True, required=True)
    with mock.patch.object(salt, "tenant_map", _request_moved):
        res = prove([(producer("isolation-cost"), opts)], backend=ctx.backend_name, out_dir=ctx.repo / "salted")
    if not res.ok:
        return "survived", "prove refused it before verify could: " + "; ".join(
            s.detail for s in res.stages if s.status != "ok")[:200]
    bad = verify_certificate(ctx.repo / "salted" / f"isolation-cost-tenants-field-c{CAPACITY}.json")
    said = [f.render() for f in bad.failures if "tenant_map_sha256" in f.render()]
    return ("killed", said[0][:300]) if bad.status == "rejected" and said else ("survived", f"verify: {bad.status}")


class IsolationCost(Operator):
    """Plant defects in what a per-tenant salt costs: in the composition of the two instances, in the library's
    gap theorem and in the keyed trace (the kernel must reject the declaration), and in the tenant map (verify,
    applying the rule again, must refuse what the kernel, checking the tenants it was given, accepted)."""

    name = "isolation-cost"

    def plan(self, ctx: Any) -> list[Planned]:
        self.add("iso-gap-plus-one", "lean-kernel", f"the composition states the keyed trace's optimum at {CAPACITY} "
                 "blocks one below what its instance proves (the salt's cost one hit larger)",
                 "kernel error in headline", TARGET,
                 instance=Snippet("iso-gap-plus-one", _files("Mut_iso_gap", lie=1), "headline", KERNEL_REJECTS))
        self.add("iso-salt-gap-strong", "lean-kernel", "the gap theorem claims every salted cache hits y - x + 1 times "
                 "fewer than the best shared one (statement strengthened, proof kept)", "kernel error in salt_gap",
                 "lean/Pycert/IsolationCost.lean",
                 edit=LibraryEdit("iso-salt-gap-strong", "Pycert/IsolationCost.lean", "salt_gap",
                                  "∀ K', Run rk C K' → hits rk K' + (y - x) ≤ hits r K := by",
                                  "∀ K', Run rk C K' → hits rk K' + (y - x + 1) ≤ hits r K := by", KERNEL_REJECTS))
        self.add("iso-keyed-equals-shared", "lean-kernel", "the keyed trace equal to the shared one (its sort, cut lists "
                 "and witness the trace's: the salt made to cost nothing) while the keyed instance carries the map's "
                 "tenants", "kernel error in sort_ok", "pycert/lean/emit/keyed.py",
                 instance=Snippet("iso-keyed-equals-shared", _unkeyed("Mut_iso_unkeyed"), "sort_ok", KERNEL_REJECTS))
        self.add("iso-tenant-moved", "lean-kernel", "one reference moved to another tenant inside its request, the keyed "
                 "instance (its tenants, sort, cut lists and witness) made consistently from that",
                 "kernel error in requests_ok", "pycert/analysis/salt.py",
                 instance=Snippet("iso-tenant-moved", _moved("Mut_iso_moved"), "requests_ok", KERNEL_REJECTS))
        self.add("iso-request-moved", "verify", "a whole request moved to another tenant, consistently: another tenant "
                 "map, which the kernel cannot tell from the rule's", "verify refuses parameters.tenant_map_sha256",
                 "pycert/analysis/salt.py", run=_request_moved_caught)
        return self.plans

