"""Graph views of an instance (networkx): who serves whom, which blocks are shared, and a matching optimum.

* The request–host bipartite graph of a routing; a host's weighted degree is its load.
* The block–host sharing graph: an edge (b, h) when host h references block b. Its edge count is the
  per-instance wall Σ_h distinct(r|h), its block count the pooled wall distinct(r), and the
  difference Σ_b (deg b - 1) is exactly what sharing across hosts costs per-instance caching.
* When every host is the same and no three requests fit on one host, a routing is a matching of
  requests into pairs and singles, so the free-routing optimum of Σ_h distinct(r|h) is a
  minimum-weight perfect matching: an exact optimum by a different algorithm (Edmonds' blossom)
  from a different formulation than the CP-SAT/HiGHS model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel

from pycert.solvers.instance import Instance

if TYPE_CHECKING:
    import networkx as nx

# networkx is imported where a graph is built: the pooling family imports this module for its models
# whenever pycert starts, networkx alone takes longer to load than the rest of it, and it is the prove
# extra's (the slim install has none).


def request_host_graph(inst: Instance, routing: dict[int, int]) -> nx.Graph:
    import networkx as nx  # the prove extra, loaded where a graph is built: see above

    g = nx.Graph()
    g.add_nodes_from((("host", h.id) for h in inst.hosts), bipartite=0)
    g.add_nodes_from((("request", r.id) for r in inst.requests), bipartite=1)
    g.add_edges_from((("request", r.id), ("host", routing[r.id]), {"load": len(r.blocks)}) for r in inst.requests)
    return g


def block_host_graph(inst: Instance, routing: dict[int, int]) -> nx.Graph:
    import networkx as nx  # the prove extra, loaded where a graph is built: see above

    g = nx.Graph()
    g.add_nodes_from((("host", h.id) for h in inst.hosts), bipartite=0)
    g.add_nodes_from((("block", b) for b in set(inst.trace)), bipartite=1)
    g.add_edges_from((("block", b), ("host", routing[r.id])) for r in inst.requests for b in r.blocks)
    return g


class Sharing(BaseModel):
    """What the sharing graph says about a routing."""

    distinct_blocks: int
    per_host_distinct: dict[int, int]
    per_instance_wall: int
    shared_blocks: int
    max_hosts_per_block: int
    host_loads: dict[int, int]
    block_sharing_components: int

    @property
    def excess(self) -> int:
        """Σ_h distinct(r|h) - distinct(r): zero iff no block is referenced at two hosts."""
        return self.per_instance_wall - self.distinct_blocks


def sharing(inst: Instance, routing: dict[int, int]) -> Sharing:
    import networkx as nx  # the prove extra, loaded where a graph is built: see above

    bh = block_host_graph(inst, routing)
    rh = request_host_graph(inst, routing)
    blocks = [n for n in bh if n[0] == "block"]
    degrees = [bh.degree(b) for b in blocks]
    # Hosts that share a block are joined in the projection; its components are the groups of
    # hosts a pooled cache would merge for free.
    hosts_projection = nx.bipartite.projected_graph(bh, [("host", h.id) for h in inst.hosts])
    return Sharing(
        distinct_blocks=len(blocks),
        per_host_distinct={h.id: bh.degree(("host", h.id)) for h in inst.hosts},
        per_instance_wall=bh.number_of_edges(),
        shared_blocks=sum(d > 1 for d in degrees),
        max_hosts_per_block=max(degrees, default=0),
        host_loads={h.id: int(rh.degree(("host", h.id), weight="load")) for h in inst.hosts},
        block_sharing_components=nx.number_connected_components(hosts_projection),
    )


class MatchingOptimum(BaseModel):
    objective: int
    routing: dict[int, int]


def matching_applies(inst: Instance) -> bool:
    """Every host alike, at most two requests per host, and enough host slots for all requests."""
    if len({(h.capacity, h.load_limit) for h in inst.hosts}) != 1:
        return False
    limit = inst.hosts[0].load_limit
    sizes = sorted(len(r.blocks) for r in inst.requests)
    return (len(sizes) < 3 or sum(sizes[:3]) > limit) and len(sizes) <= 2 * len(inst.hosts)


def matching_optimum(inst: Instance) -> MatchingOptimum | None:
    """min Σ_h distinct(r|h) over routings, by minimum-weight perfect matching; ``None`` when the
    routing problem is not a matching (see :func:`matching_applies`) or no routing fits."""
    if not matching_applies(inst):
        return None
    import networkx as nx  # the prove extra, loaded where a graph is built: see above

    limit = inst.hosts[0].load_limit
    reqs = inst.requests
    sets = {r.id: set(r.blocks) for r in reqs}
    g = nx.Graph()
    # A request matched to a "spare" slot runs alone; two spares matched together are an empty host.
    spares = [("spare", k) for k in range(2 * len(inst.hosts) - len(reqs))]
    for i, a in enumerate(reqs):
        if len(a.blocks) > limit:
            return None
        for b in reqs[i + 1:]:
            if len(a.blocks) + len(b.blocks) <= limit:
                g.add_edge(("req", a.id), ("req", b.id), weight=len(sets[a.id] | sets[b.id]))
        for s in spares:
            g.add_edge(("req", a.id), s, weight=len(sets[a.id]))
    for i, s in enumerate(spares):
        for t in spares[i + 1:]:
            g.add_edge(s, t, weight=0)
    matching = nx.min_weight_matching(g)
    if 2 * len(matching) != len(reqs) + len(spares):
        return None
    routing: dict[int, int] = {}
    objective = 0
    hosts = iter(h.id for h in inst.hosts)
    for u, v in matching:
        members = [n[1] for n in (u, v) if n[0] == "req"]
        if not members:
            continue
        host = next(hosts)
        objective += g.edges[u, v]["weight"]
        routing.update({r: host for r in members})
    return MatchingOptimum(objective=objective, routing=routing)
