"""What a per-tenant salt costs (issue 38): the composition claiming the salt costs one hit more than the two
instances state (the kernel), the library's gap theorem claiming one hit more (the kernel), and the keyed
trace made with one tenant's key for two tenants (the kernel accepts it, being about the list it is given:
verify, which makes the keyed trace again from the trace and the tenant map, must refuse it)."""

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


def _gap_one_more(name: str) -> str:
    """The trace's and the keyed trace's instances and their composition, flattened into one batch snippet,
    the composition stating a keyed optimum one below the keyed instance's: a gap one hit larger."""
    trace = trace_from_bytes(_trace(), "tenants.jsonl")
    owner = salt.owners(trace, salt.tenant_map(trace, "field"))
    keyed = dataclasses.replace(trace, refs=salt.keyed_refs(trace.refs, owner))
    verdict, _ = derive.prefix_of(trace, CAPACITY)
    shared, plan = capacity.instance_text(trace, f"{name}_S", CAPACITY, CAPACITY_OPTIMA_ENCODING, verdict)
    salted, keyed_plan = capacity.instance_text(keyed, f"{name}_K", CAPACITY, CAPACITY_OPTIMA_ENCODING)
    cost = emit.cost_of(plan, keyed_plan)
    lie = cost.model_copy(update={"salted": cost.salted - 1})
    glue = emit.emit_cost(name, "0" * 64, "0" * 64, f"{name}_S", f"{name}_K", lie)
    return "\n\n".join("\n".join(line for line in strip_header(t).splitlines()
                                 if line != "module" and not line.startswith("public import "))
                       for t in (shared.decode(), salted.decode(), glue))


_real_keyed = salt.keyed_refs


def _one_key(refs: np.ndarray, owner: np.ndarray) -> np.ndarray:
    """The keyed trace with tenant 1's references keyed as tenant 0's: two tenants share one salt."""
    return _real_keyed(refs, np.where(owner == 1, 0, owner))


def _one_key_caught(ctx: Any) -> Verdict:
    """prove isolation-cost with the defect in place, on :func:`_trace`: the kernel accepts (its statement is
    about the list it was given), so prove writes; verify, without the defect, must refuse the keyed instance."""
    trace = ctx.repo / "tenants.jsonl"
    trace.write_bytes(_trace())
    opts = IsolationCostOptions(trace=[trace], capacity_blocks=[CAPACITY], wanted=True, required=True)
    with mock.patch.object(salt, "keyed_refs", _one_key):
        res = prove([(producer("isolation-cost"), opts)], backend=ctx.backend_name, out_dir=ctx.repo / "salted")
    if not res.ok:
        return "survived", "prove refused it before verify could: " + "; ".join(
            s.detail for s in res.stages if s.status != "ok")[:200]
    bad = verify_certificate(ctx.repo / "salted" / f"isolation-cost-tenants-field-c{CAPACITY}.json")
    said = [f.render() for f in bad.failures if "Keyed.lean" in f.render()]
    return ("killed", said[0][:300]) if bad.status == "rejected" and said else ("survived", f"verify: {bad.status}")


class IsolationCost(Operator):
    """Plant defects in what a per-tenant salt costs: in the composition of the two instances and in the
    library's gap theorem (the kernel must reject the declaration), and in the keyed trace (verify's
    regeneration must refuse what the kernel, checking the list it was given, accepted)."""

    name = "isolation-cost"

    def plan(self, ctx: Any) -> list[Planned]:
        self.add("iso-gap-plus-one", "lean-kernel", f"the composition states the keyed trace's optimum at {CAPACITY} "
                 "blocks one below what its instance proves (the salt's cost one hit larger)",
                 "kernel error in headline", TARGET,
                 instance=Snippet("iso-gap-plus-one", _gap_one_more("Mut_iso_gap"), "headline", KERNEL_REJECTS))
        self.add("iso-salt-gap-strong", "lean-kernel", "the gap theorem claims every salted cache hits y - x + 1 times "
                 "fewer than the best shared one (statement strengthened, proof kept)", "kernel error in salt_gap",
                 "lean/Pycert/IsolationCost.lean",
                 edit=LibraryEdit("iso-salt-gap-strong", "Pycert/IsolationCost.lean", "salt_gap",
                                  "∀ K', Run rk C K' → hits rk K' + (y - x) ≤ hits r K := by",
                                  "∀ K', Run rk C K' → hits rk K' + (y - x + 1) ≤ hits r K := by", KERNEL_REJECTS))
        self.add("iso-one-key-two-tenants", "verify", "the keyed trace made with tenant t0's key for tenant t1's requests "
                 "too (two tenants share one salt: fewer hits lost)", "verify refuses the keyed instance",
                 "pycert/analysis/salt.py", run=_one_key_caught)
        return self.plans

