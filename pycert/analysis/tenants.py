"""Who sent a trace's references: the tenants of a trace whose layout names them, and how much of its
reuse crosses tenants.

A **cross-tenant reference** is one whose block another tenant referenced before it: in a cache shared
without per-tenant salts it could hit on what another tenant put there (the reuse a per-tenant salt
gives up, and the reuse a prefix-cache side channel observes). Computed exactly, in one pass of numpy
over the references: a reference is cross-tenant iff its tenant is not the one that first used its
block, or some reference by another tenant to its block came before it.
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel

from pycert.data.traces import Trace


class TenantFigures(BaseModel):
    tenant: str
    requests: int
    refs: int
    cross_tenant_refs: int
    """This tenant's references to a block another tenant used before."""


class TenantStats(BaseModel):
    """How many tenants, their requests and references, and the cross-tenant references in all."""

    count: int
    cross_tenant_refs: int
    per_tenant: list[TenantFigures]


def cross_tenant(refs: np.ndarray, owner: np.ndarray) -> np.ndarray:
    """For each reference, whether a reference by another tenant to its block came before it
    (``owner``: each reference's tenant)."""
    n = len(refs)
    index = np.arange(n)
    _, first, block = np.unique(refs, return_index=True, return_inverse=True)
    other = owner != owner[first][block]  # not the tenant that used the block first, which came before
    later = np.full(len(first), n)
    np.minimum.at(later, block[other], index[other])  # the first reference to each block by a second tenant
    return other | (later[block] < index)


def tenant_stats(trace: Trace) -> TenantStats | None:
    """The tenants of ``trace``, or None when its layout names none."""
    if trace.tenants is None or trace.requests is None:
        return None
    owner = np.repeat(trace.tenants, np.diff(trace.requests))
    cross = cross_tenant(trace.refs, owner)
    k = len(trace.tenant_names)
    requests = np.bincount(trace.tenants, minlength=k)
    refs = np.bincount(owner, minlength=k)
    crossed = np.bincount(owner[cross], minlength=k)
    return TenantStats(count=k, cross_tenant_refs=int(cross.sum()), per_tenant=[
        TenantFigures(tenant=name, requests=int(requests[i]), refs=int(refs[i]), cross_tenant_refs=int(crossed[i]))
        for i, name in enumerate(trace.tenant_names)])
