"""Emit the statement of a fleet certificate (``lean/Pycert/Fleet.lean``): a module importing the pooled
instance (the whole trace at ``H · C`` blocks, a capacity instance or the composition of its pieces) and one
instance per host that receives a reference (its sub-trace at ``C`` blocks), whose headline joins their
headlines: ``Pycert.Fleet.CertifiedCeiling`` (``Certified`` when the pooled trace is checked in pieces and
states no capacity-free ceiling).

The routing is written per reference, as a packed vector ``G`` (``Pycert.Fleet.route G b H``): the
headline's last clause says that **if** each host's list is the sub-trace ``routing`` gives it, the hosts'
optima sum to the fleet's optimum under that routing. The kernel does not check that condition; pycert
writes the host instances from the trace and the routing, and verify writes them again. The cost is an
import's and the routing's literal: the instances' data stays in their own modules.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel

from pycert.core.errors import PycertError
from pycert.lean.emit import INSTANCE_NAMESPACE, packed_trace
from pycert.lean.emit.capacity import closing

Kind = Literal["optima", "joint", "empty"]
"""What a part's module states: ``Optima`` (one capacity instance, both models), ``OptimumA`` (a trace in
pieces both ways), or nothing (a host that receives no reference: ``optimumA_nil``)."""


class Part(BaseModel):
    """The pooled instance or one host's, as the composition uses it."""

    module: str | None
    kind: Kind
    refs: int
    hits: int
    """The optimum with bypass its headline states."""


class Statement(BaseModel):
    """What the composition states, in the headline's order."""

    refs: int
    distinct: int | None
    """With the capacity-free ceiling (the pooled trace in one instance); None otherwise."""
    hosts: int
    capacity: int
    pooled: int
    host_refs: list[int]
    host_hits: list[int]

    @property
    def routed(self) -> int:
        return sum(self.host_hits)

    def literals(self) -> list[int]:
        """The headline's literals in order (what the kernel's type gives back)."""
        ceiling = [] if self.distinct is None else [self.distinct, self.refs - self.distinct]
        return [self.refs, *ceiling, self.hosts, self.capacity, self.pooled, *self.host_refs, *self.host_hits,
                self.routed]


def route_bits(hosts: int) -> int:
    """Bits per reference of the packed routing: enough for host ``hosts - 1``."""
    return max(1, (hosts - 1).bit_length())


def _optimum(part: Part, capacity: int) -> str:
    ns = f"{INSTANCE_NAMESPACE}.{part.module}"
    if part.kind == "empty":
        return f"(Pycert.Fleet.optimumA_nil {capacity})"
    return f"{ns}.headline.2" if part.kind == "optima" else f"{ns}.headline"


def emit_fleet(name: str, sha256: str, routing: np.ndarray, hosts: int, capacity: int, pooled: Part,
               host_parts: Sequence[Part], distinct: int | None) -> tuple[str, Statement]:
    """Lean source of the composition ``name`` and what it states. ``routing``: each reference's host;
    ``distinct``: the trace's distinct blocks when the pooled instance states its ceiling (``workload``)."""
    packed_trace.check_module(name)
    if len(host_parts) != hosts or len(routing) != pooled.refs or pooled.kind == "empty":
        raise PycertError(f"{name}: {len(host_parts)} host parts for {hosts} hosts, a routing of {len(routing)} for "
                          f"{pooled.refs} references (an emitter bug)")
    counts = np.bincount(routing.astype(np.int64), minlength=hosts)
    if len(counts) != hosts or [int(c) for c in counts] != [h.refs for h in host_parts]:
        raise PycertError(f"{name}: the hosts' references {[h.refs for h in host_parts]} are not the routing's "
                          f"{counts.tolist()} (an emitter bug)")
    if any((h.kind == "empty") != (h.refs == 0) for h in host_parts):
        raise PycertError(f"{name}: a host with references and no instance, or the reverse (an emitter bug)")
    statement = Statement(refs=pooled.refs, distinct=distinct, hosts=hosts, capacity=capacity, pooled=pooled.hits,
                          host_refs=[h.refs for h in host_parts], host_hits=[h.hits for h in host_parts])
    if statement.routed > statement.pooled:
        raise PycertError(f"{name}: the hosts' optima sum to {statement.routed}, above the pooled optimum "
                          f"{statement.pooled}: the union bound says that cannot be (an engine or emitter bug)")
    b = route_bits(hosts)
    pool = f"{INSTANCE_NAMESPACE}.{pooled.module}"
    subs = ", ".join("[]" if h.kind == "empty" else f"{INSTANCE_NAMESPACE}.{h.module}.trace" for h in host_parts)
    hosts_term = f"(Pycert.Fleet.hosts_nil {capacity})"
    for h in reversed(host_parts):
        hosts_term = f"(Pycert.Fleet.hosts_cons {_optimum(h, capacity)}\n      {hosts_term})"
    n, p, q = statement.refs, statement.pooled, statement.routed
    lists = f"[{', '.join(map(str, statement.host_refs))}] [{', '.join(map(str, statement.host_hits))}] {q}"
    certified = (f"Pycert.Fleet.certified_of (fun j _ => Pycert.Fleet.route_lt (by decide) j) {_optimum(pooled, capacity)}"
                 f"\n    {hosts_term}\n    (by decide +kernel) (by decide)")
    if distinct is None:
        statement_text = f"Pycert.Fleet.Certified {pool}.trace routing [{subs}] {n} {hosts} {capacity} {p} {lists}"
        proof = f"  {certified}"
    else:
        statement_text = (f"Pycert.Fleet.CertifiedCeiling {pool}.trace routing [{subs}] {n} {distinct} {n - distinct} "
                          f"{hosts} {capacity} {p} {lists}")
        proof = f"  ⟨{pool}.workload, {certified}⟩"
    imports = [pooled.module, *(h.module for h in host_parts if h.module)]
    ns = f"{INSTANCE_NAMESPACE}.{name}"
    lines = [
        "module",
        "",
        f"-- Generated by pycert.lean.emit.fleet: {n} references, {hosts} hosts of {capacity} blocks.",
        "-- Checked by the kernel from the instances' headlines; nothing here is an assumption.",
        "public import Pycert.Fleet",
        *(f"public import {m}" for m in dict.fromkeys(imports)),
        "",
        *packed_trace.ASYNC_OFF,
        f"namespace {ns}",
        "",
        "/-- sha256 of the trace file. -/",
        f'public def sha256 : String := "{sha256}"',
        "",
        *packed_trace.nat_defs("G", f"Reference `j` goes to host `fld {b} G j`, {b}-bit fields.",
                               packed_trace.pack(routing.tolist(), b)),
        f"/-- The routing: reference `j` goes to host `routing j`, below {hosts}. -/",
        f"public noncomputable def routing : Nat → Nat := Pycert.Fleet.route G {b} {hosts}",
        "",
        f"/-- **Headline.** One cache of {hosts * capacity} blocks with bypass hits at most {p} times on the trace and "
        f"one hits {p}, so no fleet of {hosts} hosts of {capacity} blocks hits more under any routing; the hosts' "
        f"sub-traces' optima at {capacity} blocks sum to {q}, the optimum under `routing` if each list is the "
        "sub-trace `routing` gives its host." + ("" if distinct is None else f" No cache hits more than {n - distinct} "
                                                 "times on the trace.") + " -/",
        f"public theorem headline : {statement_text} :=",
        proof,
        *closing(ns),
    ]
    return "\n".join(lines), statement
