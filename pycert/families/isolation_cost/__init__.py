"""What a per-tenant salt costs at a capacity (``lean/Pycert/IsolationCost.lean``): on a trace with a tenant
map, the optimum at ``C`` blocks of a cache shared by every tenant and of a salted cache, each kernel-checked
both ways in both cache models of the capacity family, and the gap between them.

A salted cache is a cache on the **keyed trace** (:mod:`pycert.analysis.salt`): every block id keyed by its
request's tenant, as a per-tenant salt makes it. The certificate rests on three Lean files: the trace's
capacity instance (:mod:`pycert.lean.emit.capacity`), the keyed trace's instance, which carries each
reference's tenant and keys the trace's own block numbers by it (:mod:`pycert.lean.emit.keyed`), and a
composition whose headline, ``Pycert.IsolationCost.SaltCost`` (``PrefixSaltCost`` when a prefix cache reaches
the shared optimum), joins their headlines and states, kernel-checked, that two references share a keyed
block exactly when they share the block and the tenant (``Keyed``). Which tenant each request has is the
tenant rule's, applied by Python; verify makes the tenant map and all three files again from the trace.

This module is the claim; :mod:`pycert.families.isolation_cost.produce` makes the certificates, and
:mod:`pycert.families.isolation_cost.derive` computes what both derive from a trace.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import PurePosixPath
from typing import Literal

from pydantic import Field

from pycert.core.errors import Rejected, Rejection
from pycert.core.limits import MAX_PARAM, MAX_TENANTS
from pycert.core.schema import Certificate, EvidenceState, InputFile, SolverInfo
from pycert.families.base import Claim, Instance, Reader
from pycert.families.capacity import ADMISSION_THEOREMS, PREFIX_THEOREMS, WITNESS_THEOREMS
from pycert.families.capacity import CLAIM as CAPACITY
from pycert.families.traces import (BLOCK_IDENTITY, LEAN_DERIVED, LEAN_OUT, TraceReading, block_identity, certified,
                                    lean_ident, reading, slug)
from pycert.families.isolation_cost.text import EVIDENCE, PREFIX_SALT_COST, SALT_COST, limits, rule_text, sentence

ENCODING = "salt-cost-keyed/2"
"""The layout: the trace's capacity instance and the keyed trace's instance over the same block numbers and
each reference's tenant (:mod:`pycert.lean.emit.keyed`), both models both ways, and their composition
(:mod:`pycert.lean.emit.salt_cost`)."""
LITERALS = ("refs", "capacity_blocks", "shared_demand_hits", "shared_hits", "salted_demand_hits", "salted_hits")
"""The headline's literals, in order, by figure name (the same for both predicates)."""


KEYED_THEOREMS = ("Pycert.SortedTrace.adjacent_of_planes", "Pycert.SortedOptimum.linked_of_planes",
                  "Pycert.SortedOptimum.optimum_of_facts", "Pycert.KeyedTrace.keyed_iff",
                  "Pycert.KeyedTrace.adjacent_of_sortOK", "Pycert.KeyedTrace.linked_facts",
                  "Pycert.KeyedTrace.tenant_of_requestsOK", "Pycert.KeyedTrace.keyed_facts",
                  "Pycert.IsolationCost.keyed_of")
"""What the keyed trace's instance and the composition rest on beside the capacity family's theorems."""


class IsolationCostParams(TraceReading):
    capacity_blocks: int = Field(ge=1, le=MAX_PARAM)
    """``C``: every cache it speaks of holds at most this many blocks."""
    tenant_rule: Literal["field", "prefix", "round-robin"]
    """How requests get their tenants (:mod:`pycert.analysis.salt`): the trace's ``tenant`` field, the sha256 of
    a request's first ``prefix_blocks`` block ids modulo ``tenants``, or requests dealt in turn."""
    tenants: int = Field(ge=1, le=MAX_TENANTS)
    """``T``: the tenants of the map."""
    prefix_blocks: int | None = Field(None, ge=1, le=MAX_PARAM)
    """``K`` of rule ``prefix``; None for the other rules."""
    tenant_map_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    """sha256 of the map: each request's tenant index in decimal, a newline after each."""
    shared_prefix_cache: Literal["attained", "no-requests", "not-prefix-closed", "not-a-prefix"]
    """Whether the certificate claims that a prefix cache reaches the shared optimum, else why not."""
    lean_encoding: str
    """:data:`ENCODING`."""


class IsolationCostCertificate(Certificate):
    """A certificate of the isolation-cost family."""

    family: Literal["isolation-cost"]
    parameters: IsolationCostParams


def rule_tag(rule: str, tenants: int, prefix_blocks: int | None) -> str:
    """The tenant map in a certificate's name: ``field``, ``prefix2-t8``, ``round-robin-t8``."""
    return "field" if rule == "field" else f"{'prefix' + str(prefix_blocks) if rule == 'prefix' else rule}-t{tenants}"


def names(trace: PurePosixPath, tag: str, capacity: int) -> tuple[str, str]:
    """The certificate id and the composition's Lean module for a trace, a tenant map (:func:`rule_tag`) and a
    capacity."""
    name = f"{slug(trace.stem)}-{tag}"
    return f"isolation-cost-{name}-c{capacity}", f"IsolationCost{lean_ident(name)}C{capacity}"


def part_names(module: str) -> tuple[str, str]:
    """The modules of the trace's and the keyed trace's instances, beside the composition ``module``."""
    return f"{module}Shared", f"{module}Keyed"


def prefix_claimed(params: IsolationCostParams) -> bool:
    return params.shared_prefix_cache == "attained"


class IsolationCost(Claim):
    name = "isolation-cost"
    params = IsolationCostParams
    certificate = IsolationCostCertificate
    lean_module = "Pycert.IsolationCost"
    theorem_names = (*CAPACITY.theorem_names, *WITNESS_THEOREMS, *ADMISSION_THEOREMS, *KEYED_THEOREMS,
                     "Pycert.IsolationCost.salt_gap")
    primary = ("trace",)
    headline_predicate = SALT_COST
    headline_figures = LITERALS
    limits = limits("field")

    def predicate(self, params: IsolationCostParams) -> str:  # type: ignore[override]
        return PREFIX_SALT_COST if prefix_claimed(params) else SALT_COST

    def predicates(self) -> tuple[str, ...]:
        return SALT_COST, PREFIX_SALT_COST

    def library_theorems(self, params: IsolationCostParams) -> tuple[str, ...]:
        return self.theorem_names + ((*PREFIX_THEOREMS, "Pycert.IsolationCost.prefix_salt_gap")
                                     if prefix_claimed(params) else ())

    def does_not_prove(self, params: IsolationCostParams, figures: Mapping[str, Fraction],
                       inputs: Sequence[InputFile]) -> tuple[str, ...]:
        return tuple(block_identity(params) if line == BLOCK_IDENTITY else line for line in limits(params.tenant_rule))

    def evidence(self, name: str, solver: SolverInfo | None,
                 params: IsolationCostParams | None = None) -> tuple[EvidenceState, str]:  # type: ignore[override]
        return EVIDENCE.get(name, ("computed", ""))

    def sentence(self, params: IsolationCostParams, figures: Mapping[str, Fraction], inputs: Sequence[InputFile]) -> str:
        trace = next((PurePosixPath(i.path).name for i in inputs if i.role == "trace"), "(none)")
        return sentence(trace, self.predicate(params), figures,
                        rule_text(params.tenant_rule, params.tenants, params.prefix_blocks), reading(params))

    def instance(self, params: IsolationCostParams, primary: Sequence[InputFile]) -> Instance:
        """``lean/IsolationCost<Name><Rule>C<C>.lean``, or ``lean/derived/`` for a trace from outside the
        certificate directory (full-resolution data derived from it, which verify regenerates)."""
        [trace] = primary
        tag = rule_tag(params.tenant_rule, params.tenants, params.prefix_blocks)
        module = names(PurePosixPath(trace.path), tag, params.capacity_blocks)[1]
        return Instance(path=((LEAN_DERIVED if trace.external else LEAN_OUT) / f"{module}.lean").as_posix(),
                        derived_from="trace")

    def parts(self, params: IsolationCostParams, instance: Instance) -> list[str]:
        """The two instances the composition imports, beside it: the trace's and the keyed trace's."""
        where = PurePosixPath(instance.path).parent
        return [(where / f"{m}.lean").as_posix() for m in part_names(instance.module)]

    def derived_files(self, params: IsolationCostParams, inputs: Sequence[InputFile], read: Reader) -> dict[str, bytes]:
        """The composition and the two instances, made again from the trace and the tenant map."""
        from pycert.families.isolation_cost import derive  # numpy, numba: only for a claim with a trace

        if params.lean_encoding != ENCODING:
            raise Rejected(Rejection.mismatch("parameters.lean_encoding", repr(ENCODING), repr(params.lean_encoding)))
        if (params.tenant_rule == "prefix") != (params.prefix_blocks is not None):
            raise Rejected(Rejection.mismatch("parameters.prefix_blocks", "the number of blocks exactly when the rule "
                                              "is prefix", repr(params.prefix_blocks)))
        inst = self.instance(params, self.primary_inputs(inputs))
        trace = certified(inputs, read, params)
        return derive.files(derive.sortable(derive.salted(trace, params)), params, inst.path)[0]

    def regenerate(self, params: IsolationCostParams, inputs: Sequence[InputFile], read: Reader) -> bytes:
        inst = self.instance(params, self.primary_inputs(inputs))
        return self.derived_files(params, inputs, read)[inst.path]

    def figures(self, params: IsolationCostParams, kernel: Mapping[str, int], inputs: Sequence[InputFile],
                read: Reader) -> dict[str, Fraction]:
        """The kernel's literals, each optimum equal to Belady's MIN on its trace (two engines), and the computed
        figures: the gap, the partitioned arm, the tenants (:func:`pycert.families.isolation_cost.derive.figures`)."""
        from pycert.families.isolation_cost import derive  # numpy, numba: see derived_files

        if kernel["capacity_blocks"] != params.capacity_blocks:
            raise Rejected(Rejection.mismatch("headline (capacity_blocks)", str(params.capacity_blocks),
                                              str(kernel["capacity_blocks"])))
        if kernel["refs"] == 0:
            raise Rejected(Rejection.mismatch("inputs[trace]", "a trace with at least one block reference", "an empty trace"))
        trace = certified(inputs, read, params)
        return derive.figures(derive.sortable(derive.salted(trace, params)), params, dict(kernel))


CLAIM = IsolationCost()
