"""Per-instance caching: the committed routing, and the best routing any router could pick.

Committed routing. Each host runs its own demand-fetch cache on its share of the trace; the exact
optimum is the paging model of :mod:`pycert.solvers.pooled` per host (disjoint union, one solve).

Free routing. Assign every request to a host within the hosts' load limits to minimise total
misses. Whatever the routing and the eviction policy, host h misses at least once per distinct block
it sees (the Lean wall), so

    min over routings of Σ_h distinct(r|h)

is a lower bound on per-instance misses under *every* routing and policy. This model computes that
minimum exactly, with a set-cover shape instead of per-host caches over time:

    z[r,h] ∈ {0,1}   request r runs on host h          Σ_h z[r,h] = 1
    y[b,h] ∈ {0,1}   block b is fetched on h at least once   y[b,h] ≥ z[r,h]  for b ∈ r
    load:   Σ_r |r|·z[r,h] ≤ load_limit(h)
    minimise Σ_{b,h} y[b,h]

It leaves the per-host capacity out on purpose: adding it would make the optimum a bound only for
routings whose hosts fit, and the claim "per-instance cannot reach the pooled figure" must cover all
routings. Whether the bound is *attained* is then a separate, checked fact: if every host of the
optimal routing holds no more distinct blocks than its capacity, keeping everything on each host
realises exactly Σ y misses (the replay confirms it), so the bound is the free-routing optimum.

Two families of valid rows tighten the LP without cutting off any routing:
  * block b sits in requests of total load W_b and each host carries at most L = max load_limit,
    so b is on at least ceil(W_b / L) hosts: Σ_h y[b,h] ≥ ceil(W_b / L);
  * when all hosts are interchangeable (same capacity and load limit), hosts are numbered by the
    first request they hold, so request i may only use hosts 0..i (symmetry breaking).
"""

from __future__ import annotations

from dataclasses import dataclass

from pycert.solvers.instance import Instance
from pycert.solvers.model import LinearModel
from pycert.solvers.pooled import Cache, PagingModel, paging_model


def committed_model(inst: Instance) -> PagingModel:
    caches = [Cache(f"h{h.id}", tuple(inst.host_trace(h.id)), h.capacity) for h in inst.hosts]
    return paging_model(caches, name="per-instance (committed routing)")


@dataclass
class RoutingModel:
    model: LinearModel
    z: dict[tuple[int, int], int]  # (request id, host id) -> variable
    y: dict[tuple[int, int], int]  # (block, host id) -> variable


def free_routing_model(inst: Instance) -> RoutingModel:
    m = LinearModel(name="per-instance (free routing)")
    hosts = inst.hosts
    identical = len({(h.capacity, h.load_limit) for h in hosts}) == 1
    z = {}
    for i, r in enumerate(inst.requests):
        for k, h in enumerate(hosts):
            z[r.id, h.id] = m.var(f"z[{r.id},{h.id}]", ub=0 if identical and k > i else 1)
    blocks = sorted(set(inst.trace))
    y = {(b, h.id): m.var(f"y[{b},{h.id}]") for b in blocks for h in hosts}
    for j in y.values():
        m.objective[j] = 1
    for r in inst.requests:
        m.row([z[r.id, h.id] for h in hosts], [1] * len(hosts), lo=1, hi=1)
        for b in set(r.blocks):
            for h in hosts:
                m.row([y[b, h.id], z[r.id, h.id]], [1, -1], lo=0)
    for h in hosts:
        m.row([z[r.id, h.id] for r in inst.requests], [len(r.blocks) for r in inst.requests], hi=h.load_limit)
    widest = max(h.load_limit for h in hosts)
    for b in blocks:
        load = sum(len(r.blocks) for r in inst.requests if b in r.blocks)
        m.row([y[b, h.id] for h in hosts], [1] * len(hosts), lo=-(-load // widest))
    return RoutingModel(model=m, z=z, y=y)


def routing_from(rm: RoutingModel, values: list[int]) -> dict[int, int]:
    return {r: h for (r, h), j in rm.z.items() if values[j]}
