"""A trace as a per-tenant salt makes it: which tenant each request belongs to (a tenant map), the trace
with every block id keyed by its request's tenant, and the partitioned cache's hits.

A per-tenant salt (vLLM's ``cache_salt``) enters the hash of a request's first block, and every later
block's hash chains it: every block of a salted request is a block of its tenant alone. So a salted
cache is a cache over the **keyed trace**, in which reference ``j``'s block is the pair (its request's
tenant, its block id). The keyed ids are dense: the pairs numbered in the order they first occur, from
0 (so that the emitter needs no network to place them, and equal pairs get equal ids exactly).

**Tenant maps.** A trace whose layout names tenants (the ``tenant`` field, :mod:`pycert.data.formats`)
gives its own (``field``). A trace without one gets a documented rule over ``T`` tenants:

* ``prefix:K``: a request's tenant is the first 8 bytes of sha256 of its first ``K`` block ids (decimal,
  joined by commas; fewer when the request is shorter), big-endian, modulo ``T``. In a prefix-closed trace
  a request's first blocks name its conversation, so every conversation stays with one tenant and what
  tenants share is what conversations share (on Mooncake's conversation trace, ``K = 2``: the first
  block is a system prompt every request starts with, the second starts a conversation).
* ``round-robin``: request ``r`` (in trace order) goes to tenant ``r mod T``: a conversation's turns are
  spread over tenants, the most a salt can cost for a given ``T``.
"""

from __future__ import annotations

import hashlib
from typing import Literal

import numpy as np

from pycert.analysis.optcurve import admission_hit_curve
from pycert.core.errors import InputError
from pycert.data.traces import Trace

TenantRule = Literal["field", "prefix", "round-robin"]


def tenant_map(trace: Trace, rule: TenantRule, tenants: int | None = None, prefix_blocks: int | None = None) -> np.ndarray:
    """Each request's tenant, an index below the number of tenants (:func:`tenant_count`), by ``rule``."""
    if trace.requests is None:
        raise InputError("the trace has no requests (a file of block ids), so no tenant can be assigned to them: "
                         "give a trace in a layout with requests (docs/formats.md)", where=trace.name)
    n_requests = len(trace.requests) - 1
    if rule == "field":
        if trace.tenants is None:
            raise InputError("the trace names no tenants (no `tenant` field): give --tenants T --tenant-rule "
                             "prefix:K or round-robin (docs/isolation-cost.md)", where=trace.name)
        return np.asarray(trace.tenants, dtype=np.int64)
    if tenants is None:
        raise InputError(f"--tenant-rule {rule} needs --tenants T", where=trace.name)
    if rule == "round-robin":
        return np.arange(n_requests, dtype=np.int64) % tenants
    if prefix_blocks is None:
        raise InputError("--tenant-rule prefix needs its number of blocks (prefix:K)", where=trace.name)
    starts = trace.requests[:-1]
    ends = np.minimum(trace.requests[1:], starts + prefix_blocks)
    out = np.empty(n_requests, dtype=np.int64)
    for r, (a, b) in enumerate(zip(starts.tolist(), ends.tolist())):
        key = ",".join(map(str, trace.refs[a:b].tolist())).encode()
        out[r] = int.from_bytes(hashlib.sha256(key).digest()[:8], "big") % tenants
    return out


def tenant_count(trace: Trace, rule: TenantRule, tenants: int | None) -> int:
    """``T``: the trace's own tenants under ``field``, else the number the rule hashes or deals into."""
    return len(trace.tenant_names) if rule == "field" else int(tenants or 0)


def map_sha256(tenant_of: np.ndarray) -> str:
    """sha256 of the tenant map as text: each request's tenant index in decimal, a newline after each."""
    return hashlib.sha256("".join(f"{t}\n" for t in tenant_of.tolist()).encode()).hexdigest()


def owners(trace: Trace, tenant_of: np.ndarray) -> np.ndarray:
    """Each reference's tenant: its request's."""
    assert trace.requests is not None
    return np.repeat(tenant_of, np.diff(trace.requests))


def keyed_refs(refs: np.ndarray, owner: np.ndarray) -> np.ndarray:
    """The keyed trace: reference ``j``'s block is the pair (``owner[j]``, ``refs[j]``), numbered densely in
    the order the pairs first occur."""
    if not len(refs):
        return np.zeros(0, dtype=np.uint64)
    _, block = np.unique(refs, return_inverse=True)
    pair = block.astype(np.int64) * (int(owner.max()) + 1) + owner
    _, first, which = np.unique(pair, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[which].astype(np.uint64)


def shares(capacity: int, tenants: int) -> list[int]:
    """Each tenant's blocks when ``capacity`` is split evenly: ``C // T`` each, one more for the first ``C mod T``."""
    return [capacity // tenants + (t < capacity % tenants) for t in range(tenants)]


def partitioned_hits(refs: np.ndarray, owner: np.ndarray, tenants: int, capacity: int) -> int:
    """The partitioned cache: each tenant its own :func:`shares` of ``capacity`` blocks, Belady's MIN with
    bypass on its own references (the optimum with bypass there), the hits summed. A tenant
    with no block of its own hits nothing."""
    order = np.argsort(owner, kind="stable")  # each tenant's references in trace order, grouped once
    bounds = np.concatenate([[0], np.cumsum(np.bincount(owner, minlength=tenants))])
    total = 0
    for t, c in enumerate(shares(capacity, tenants)):
        if c and bounds[t + 1] > bounds[t]:
            total += admission_hit_curve(refs[order[bounds[t]:bounds[t + 1]]]).hits(c)
    return total
